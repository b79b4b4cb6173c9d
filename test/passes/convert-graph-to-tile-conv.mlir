// RUN: aitc-opt %s --split-input-file -p 'convert-graph-to-tile{target=tiny}' | filecheck %s
// RUN: aitc-opt %s --split-input-file -p 'convert-graph-to-tile{target=edge}' | filecheck %s --check-prefix=EDGE

// Implicit GEMM: the weight is the lhs as it lies in DRAM ([C_out, C*kh*kw] view, no transpose);
// the im2col patch is built by one stage load and one copy per tap; the padding is zeroed once,
// before any load (a single block per dim; the whole stage is cheaper than strips). Positions
// are wide: output (oh, ow) is patch column 8*oh + ow (the stage's row pitch), so a tap of all
// 3 channels is ONE window [3, 46, 1] of the stage viewed [3, 64, 1] (46 = 5*8 + 6; the 2
// columns between rows are computed, never stored: y is [4, 6 x 8], stored as [4, 6, 6]).
// The 7 k chunks of 4 of a column tile follow one another (up to MAX_UNROLL, no scf.for), so
// insert-semaphores orders them one by one.
func.func @conv3x3_pad1(%x: tensor<1x3x6x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32> loc("/conv1/Conv")
  func.return %y : tensor<1x4x6x6xf32>
}
// CHECK-LABEL: func.func @conv3x3_pad1
// CHECK:         tile.reshape %w : memref<4x3x3x3xf32, "dram"> -> memref<4x27xf32, "dram">
// CHECK:         tile.kernel "/conv1/Conv" {op = "graph.conv", tiles = array<i64: 6, 6, 3, 4>, dma_bytes = {{[0-9]+}} : i64, est_cycles = {{[0-9]+}} : i64, sram_bytes = {{[0-9]+}} : i64, acc_bytes = 736 : i64, reason = "implicit GEMM: W [C_out, 27] as lhs (no transpose), im2col patch by DMA as rhs;
// CHECK-DAG:       [[STAGE:%.+]] = tile.alloc : memref<3x8x8xf32, "sram">
// CHECK-DAG:       [[PATCH:%.+]] = tile.alloc : memref<27x46xf32, "sram">
// CHECK-DAG:       [[W:%.+]] = tile.alloc : memref<4x27xf32, "sram">
// CHECK-DAG:       [[ACC:%.+]] = tile.alloc : memref<4x46xf32, "acc">
// CHECK:           [[TAPS:%.+]] = tile.reshape [[STAGE]] : memref<3x8x8xf32, "sram"> -> memref<3x64x1xf32, "sram">
// CHECK:           [[ROWS:%.+]] = tile.reshape [[PATCH]] : memref<27x46xf32, "sram"> -> memref<3x414x1xf32, "sram">
// CHECK:           tile.binary_imm {{.*}} sizes [24, 8] {op = "mul", imm = 0.000000e+00 : f64}
// CHECK:           tile.copy %{{.*}} to [[W]]{{.*}} sizes [4, 27]
// CHECK:           tile.copy %{{.*}} to [[STAGE]][%{{.*}}] sizes [3, 6, 6] : memref<3x6x6xf32, "dram">
// CHECK-COUNT-9:   tile.copy [[TAPS]][{{.*}}] to [[ROWS]][{{.*}}] sizes [3, 46, 1]
// CHECK:           scf.for
// CHECK-NEXT:        tile.matmul [[W]][{{.*}}], [[PATCH]][{{.*}}] to [[ACC]][{{.*}}] sizes [4, 4, 4] :
// CHECK-COUNT-5:     tile.matmul {{.*}} sizes [4, 4, 4] {accumulate}
// CHECK-NEXT:        tile.matmul {{.*}} sizes [4, 3, 4] {accumulate}
// CHECK:           tile.acc_read [[ACC]]{{.*}} sizes [4, 46]
// CHECK-NEXT:      tile.copy {{.*}} sizes [4, 6, 6] : memref<4x6x8xf32, "sram">, memref<4x6x6xf32, "dram">
// EDGE-LABEL:  func.func @conv3x3_pad1
// EDGE:          tile.kernel "/conv1/Conv" {op = "graph.conv", tiles = array<i64: 6, 6, 3, 4>
// EDGE:            tile.matmul {{.*}} sizes [4, 27, 32] :
// EDGE:            tile.matmul {{.*}} sizes [4, 27, 14] :

// -----

// Stride 2 is a window offset: on tiny the plan takes blocks of one output row (its taps run
// on both DMA queues, so small blocks pay off), whose stage [2, 4, 10] is viewed [2, 20, 2]
// (pairs of a plane); tap (i, j) starts at element 10*i + j, i.e. pair (10*i + j) // 2, phase
// j % 2; position p is pair start + p (4 positions per channel).
func.func @conv_stride2(%x: tensor<1x2x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<1x2x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x4x4xf32>
  func.return %y : tensor<1x4x4x4xf32>
}
// CHECK-LABEL: func.func @conv_stride2
// CHECK-DAG:     [[C0:%.+]] = arith.constant 0 : index
// CHECK-DAG:     [[C1:%.+]] = arith.constant 1 : index
// CHECK:         [[STAGE:%.+]] = tile.alloc : memref<2x4x10xf32, "sram">
// CHECK:         [[CELLS:%.+]] = tile.reshape [[STAGE]] : memref<2x4x10xf32, "sram"> -> memref<2x20x2xf32, "sram">
// CHECK:         tile.copy [[CELLS]][[[C0]], [[C0]], [[C0]]] to {{.*}} sizes [2, 4, 1]
// CHECK-NEXT:    tile.copy [[CELLS]][[[C0]], [[C0]], [[C1]]] to {{.*}} sizes [2, 4, 1]
// CHECK-NEXT:    tile.copy [[CELLS]][[[C0]], [[C1]], [[C0]]] to {{.*}} sizes [2, 4, 1]

// -----

// A 1x1 stride-1 conv needs no im2col: the stage is the patch (no 5-d tap copies); the weights
// are loaded once, before the loops over the batch and the blocks of one output row (its stage
// is loaded whole by one copy, so multi-buffer rotates it: the rows are estimated pipelined).
func.func @conv1x1(%x: tensor<2x8x4x4xf32>, %w: tensor<6x8x1x1xf32>) -> tensor<2x6x4x4xf32> {
  %y = graph.conv %x, %w : tensor<2x8x4x4xf32>, tensor<6x8x1x1xf32> -> tensor<2x6x4x4xf32>
  func.return %y : tensor<2x6x4x4xf32>
}
// CHECK-LABEL: func.func @conv1x1
// CHECK:         tile.kernel "graph.conv" {op = "graph.conv", tiles = array<i64: 1, 4, 8, 6>
// CHECK:           [[STAGE:%.+]] = tile.alloc : memref<8x1x4xf32, "sram">
// CHECK-NOT:       x1xf32, "sram">
// CHECK:           [[PATCH:%.+]] = tile.reshape [[STAGE]] : memref<8x1x4xf32, "sram"> -> memref<8x4xf32, "sram">
// CHECK:           tile.copy {{.*}} sizes [6, 8] : memref<6x8xf32, "dram">
// CHECK-NEXT:      scf.for
// CHECK:             scf.for
// CHECK-NEXT:          tile.copy {{.*}} to [[STAGE]]{{.*}} sizes [8, 1, 4]
// CHECK-NEXT:          tile.matmul {{.*}}, [[PATCH]]{{.*}} sizes [6, 4, 4] :
// CHECK-NEXT:          tile.matmul {{.*}}, [[PATCH]]{{.*}} sizes [6, 4, 4] {accumulate}
// CHECK-NEXT:          tile.acc_read
// CHECK-NEXT:          tile.copy {{.*}} sizes [6, 1, 4]
// CHECK-NEXT:        }

// -----

// Depthwise: the cost model picks the engine and says why. The vector engine wins on both
// targets (per tap: the tap's rows times the weight column, added up; one output channel per
// matmul would pay the matrix engine's latency for each of them).
func.func @depthwise(%x: tensor<1x8x6x6xf32>, %w: tensor<8x1x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x8x6x6xf32> {
  %y = graph.conv %x, %w, %b {group = 8 : i64, pads = array<i64: 1, 1, 1, 1>, activation = "relu6"} : tensor<1x8x6x6xf32>, tensor<8x1x3x3xf32>, tensor<8xf32> -> tensor<1x8x6x6xf32>
  func.return %y : tensor<1x8x6x6xf32>
}
// CHECK-LABEL: func.func @depthwise
// CHECK:         tile.kernel "graph.conv" {op = "graph.conv", tiles = array<i64: 6, 6, 3>, {{.*}}reason = "depthwise on the vector engine: 9 tap multiply-adds per chunk; {{.*}}; chose the vector engine (est. {{[0-9]+}} vector vs {{[0-9]+}} matrix cycles)", est_fill_drain = array<i64: {{[0-9]+, [0-9]+, [0-9]+, [0-9]+}}>}
// CHECK-NOT:       tile.matmul
// CHECK:           scf.for
// CHECK:             tile.binary {{.*}} sizes [3, 46] {op = "mul", broadcast = "col"}
// CHECK-COUNT-8:     tile.binary {{.*}} sizes [3, 46] {op = "add"}
// CHECK-NEXT:        tile.binary {{.*}} sizes [3, 46] {op = "add", broadcast = "col"}
// CHECK-NEXT:        tile.binary_imm {{.*}} {op = "max", imm = 0.000000e+00 : f64}
// CHECK-NEXT:        tile.binary_imm {{.*}} {op = "min", imm = 6.000000e+00 : f64}
// CHECK-NEXT:        tile.copy
// CHECK-NEXT:      }
// EDGE-LABEL:  func.func @depthwise
// EDGE:          tile.kernel "graph.conv" {{.*}}chose the vector engine (est. {{[0-9]+}} vector vs {{[0-9]+}} matrix cycles)", est_fill_drain = array<i64: {{[0-9]+, [0-9]+, [0-9]+, [0-9]+}}>}
// EDGE-NOT:        tile.matmul
// EDGE:            tile.binary {{.*}} sizes [8, 46] {op = "mul", broadcast = "col"}

// -----

// Groups are an scf.for around everything; each loads its weight rows and bias column, and
// the bias (broadcast col) and relu follow the contraction (no window is entirely in bounds
// without padding, so there is no fill). On tiny the 3 x 3 outputs are one block: its 9 tap
// copies into the patch, the contraction, then the bias and relu over the block's positions
// (row pitch 5: the garbage columns between rows go along) and one store of its 3 x 3 window.
func.func @grouped_bias_relu(%x: tensor<1x4x5x5xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>) -> tensor<1x6x3x3xf32> {
  %y = graph.conv %x, %w, %b {group = 2 : i64, activation = "relu"} : tensor<1x4x5x5xf32>, tensor<6x2x3x3xf32>, tensor<6xf32> -> tensor<1x6x3x3xf32>
  func.return %y : tensor<1x6x3x3xf32>
}
// CHECK-LABEL: func.func @grouped_bias_relu
// CHECK:         tile.kernel "graph.conv" {op = "graph.conv", tiles = array<i64: 3, 3, 2, 3>
// CHECK-NOT:       tile.binary_imm
// CHECK:           scf.for
// CHECK-NEXT:        arith.muli
// CHECK-NEXT:        tile.copy {{.*}} sizes [3, 18] : memref<6x18xf32, "dram">
// CHECK-NEXT:        tile.copy {{.*}} sizes [3, 1] : memref<6x1xf32, "dram">
// CHECK-NEXT:        arith.muli
// CHECK-NEXT:        tile.copy {{.*}} sizes [2, 5, 5] : memref<4x5x5xf32, "dram">
// CHECK-COUNT-9:     tile.copy {{.*}} sizes [2, 13, 1] : memref<2x25x1xf32, "sram">, memref<2x117x1xf32, "sram">
// CHECK:             tile.binary {{.*}} sizes [3, 13] {op = "add", broadcast = "col"} : memref<3x13xf32, "acc">
// CHECK-NEXT:        tile.unary {{.*}} sizes [3, 13] {op = "relu"}
// CHECK-NEXT:        tile.copy {{.*}} sizes [3, 3, 3] : memref<3x3x5xf32, "sram">, memref<6x3x3xf32, "dram">
// CHECK-NEXT:      }

// -----

// A larger grouped conv on tiny: blocks of 5 output rows whose positions are compact (row
// pitch 10, the output's width), so the bias, read from the accumulator's rows of pitch 12,
// goes one output row at a time; the relu then takes the whole block.
func.func @grouped_compact_rows(%x: tensor<1x4x12x12xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>) -> tensor<1x6x10x10xf32> {
  %y = graph.conv %x, %w, %b {group = 2 : i64, activation = "relu"} : tensor<1x4x12x12xf32>, tensor<6x2x3x3xf32>, tensor<6xf32> -> tensor<1x6x10x10xf32>
  func.return %y : tensor<1x6x10x10xf32>
}
// CHECK-LABEL: func.func @grouped_compact_rows
// CHECK:         tile.kernel "graph.conv" {op = "graph.conv", tiles = array<i64: 5, 10, 2, 3>
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK-NEXT:          tile.copy {{.*}} sizes [2, 7, 12] : memref<4x12x12xf32, "dram">, memref<2x7x12xf32, "sram">
// CHECK-COUNT-9:       tile.copy {{.*}} sizes [2, 58, 1] : memref<2x84x1xf32, "sram">, memref<2x522x1xf32, "sram">
// CHECK:               tile.matmul
// CHECK:               scf.for
// CHECK-NEXT:            arith.muli
// CHECK-NEXT:            arith.muli
// CHECK-NEXT:            tile.binary {{.*}} sizes [3, 10] {op = "add", broadcast = "col"} : memref<3x58xf32, "acc">, memref<3x1xf32, "sram">, memref<3x50xf32, "sram">
// CHECK-NEXT:          }
// CHECK-NEXT:          tile.unary {{.*}} sizes [3, 50] {op = "relu"}
// CHECK-NEXT:          tile.copy {{.*}} sizes [3, 5, 10] : memref<3x5x10xf32, "sram">, memref<6x10x10xf32, "dram">

// -----

// conv1d is a 2-d conv of height 1: input [N*C, 1, W], kernel 1 x 3.
func.func @conv1d(%x: tensor<2x3x10xf32>, %w: tensor<4x3x3xf32>) -> tensor<2x4x10xf32> {
  %y = graph.conv %x, %w {pads = array<i64: 1, 1>} : tensor<2x3x10xf32>, tensor<4x3x3xf32> -> tensor<2x4x10xf32>
  func.return %y : tensor<2x4x10xf32>
}
// CHECK-LABEL: func.func @conv1d
// CHECK:         tile.reshape %x : memref<2x3x10xf32, "dram"> -> memref<6x1x10xf32, "dram">
// CHECK:         tile.kernel "graph.conv" {op = "graph.conv", tiles = array<i64: 1, 10, 3, 4>
// CHECK:           tile.alloc : memref<3x1x12xf32, "sram">
// CHECK:           scf.for
// CHECK:             tile.copy {{.*}} sizes [3, 1, 10] : memref<6x1x10xf32, "dram">, memref<3x1x12xf32, "sram">
// CHECK-COUNT-3:     tile.copy {{.*}} sizes [3, 10, 1]

// -----

// Blocks are peeled: on tiny a block is one output row; the first and last rows read padding
// (constant offsets), the 22 rows between are one scf.for whose stage load starts at row o0 - 1.
// On edge the whole image is one block: one stage load, 9 tap copies of 622 wide positions
// (23 rows of pitch 26, then 24), a loop over 19 tiles of 32 columns and a remainder of 14.
func.func @interior_rows(%x: tensor<1x4x24x24xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x24x24xf32> {
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x4x24x24xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x24x24xf32>
  func.return %y : tensor<1x8x24x24xf32>
}
// CHECK-LABEL: func.func @interior_rows
// CHECK:         tile.kernel "graph.conv" {op = "graph.conv", tiles = array<i64: 1, 24, 4, 8>
// CHECK-DAG:       [[C1:%.+]] = arith.constant 1 : index
// CHECK-DAG:       [[C23:%.+]] = arith.constant 23 : index
// CHECK-DAG:       [[CM1:%.+]] = arith.constant -1 : index
// CHECK:           tile.copy {{.*}} sizes [4, 2, 24] : memref<4x24x24xf32, "dram">
// CHECK:           scf.for [[ROW:%.+]] = [[C1]] to [[C23]] step [[C1]] {
// CHECK-NEXT:        [[START:%.+]] = arith.addi [[ROW]], [[CM1]] : index
// CHECK-NEXT:        tile.copy %{{.*}}[%{{.*}}, [[START]], %{{.*}}] to {{.*}} sizes [4, 3, 24] : memref<4x24x24xf32, "dram">
// CHECK:           }
// CHECK:           tile.binary_imm {{.*}} {op = "cmp_eq"
// CHECK:           tile.copy {{.*}} sizes [4, 2, 24] : memref<4x24x24xf32, "dram">
// EDGE-LABEL:  func.func @interior_rows
// EDGE:          tile.kernel "graph.conv" {op = "graph.conv", tiles = array<i64: 24, 24, 4, 8>
// EDGE:            tile.copy {{.*}} sizes [4, 24, 24] : memref<4x24x24xf32, "dram">, memref<4x26x26xf32, "sram">
// EDGE-COUNT-9:    tile.copy {{.*}} sizes [4, 622, 1]
// EDGE-NEXT:       scf.for
// EDGE-NEXT:         tile.matmul {{.*}} sizes [8, 32, 32] :
// EDGE-NEXT:         tile.matmul {{.*}} sizes [8, 4, 32] {accumulate}
// EDGE-NEXT:       }
// EDGE-NEXT:       tile.matmul {{.*}} sizes [8, 32, 14] :

// -----

// Max pooling: the stage is filled with -inf, so padding never wins; 8 tile.binary max.
func.func @max_pool_pad(%x: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %y = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xf32>
  func.return %y : tensor<1x4x6x6xf32>
}
// CHECK-LABEL: func.func @max_pool_pad
// CHECK:         tile.kernel "graph.max_pool" {op = "graph.max_pool", tiles = array<i64: 6, 6, 2>, {{.*}}reason = "max over the taps, padding read as -inf;
// CHECK:           tile.binary_imm {{.*}} {op = "add", imm = 0xfff0000000000000 : f64}
// CHECK:           tile.copy {{.*}} sizes [2, 6, 6] : memref<4x6x6xf32, "dram">, memref<2x8x8xf32, "sram">
// CHECK-COUNT-9:   tile.copy {{.*}} sizes [2, 46, 1]
// CHECK-COUNT-8:   tile.binary {{.*}} sizes [2, 46] {op = "max"}
// CHECK-NEXT:      tile.copy {{.*}} sizes [2, 6, 6] : memref<2x6x8xf32, "sram">, memref<4x6x6xf32, "dram">

// -----

// An int8 max pool (graph-quantized-matmul pools quantized values): the same kernel on 1-byte
// tiles, its padding filled with -128, the int8 minimum, which never wins a max.
func.func @int8_max_pool_pad(%x: tensor<1x4x6x6xi8>) -> tensor<1x4x6x6xi8> {
  %y = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x4x6x6xi8> -> tensor<1x4x6x6xi8>
  func.return %y : tensor<1x4x6x6xi8>
}
// CHECK-LABEL: func.func @int8_max_pool_pad
// CHECK:         tile.kernel "graph.max_pool" {op = "graph.max_pool", tiles = array<i64: 6, 6, 2>, {{.*}}reason = "max over the taps in int8, padding read as -128;
// CHECK:           tile.binary_imm {{.*}} {op = "add", imm = -1.280000e+02 : f64} : memref<16x8xi8, "sram">, memref<16x8xi8, "sram">
// CHECK:           tile.copy {{.*}} sizes [2, 6, 6] : memref<4x6x6xi8, "dram">, memref<2x8x8xi8, "sram">
// CHECK-COUNT-9:   tile.copy {{.*}} sizes [2, 46, 1] : memref<2x64x1xi8, "sram">
// CHECK-COUNT-8:   tile.binary {{.*}} sizes [2, 46] {op = "max"} : memref<{{.*}}xi8, "sram">
// CHECK-NEXT:      tile.copy {{.*}} sizes [2, 6, 6] : memref<2x6x8xi8, "sram">, memref<4x6x6xi8, "dram">

// -----

// Average pooling without count_include_pad divides by the per-position count of in-bounds
// taps: a tile.const row in the patch's wide layout ([1, OH*8], row pitch 8, the columns between
// rows hold 1), loaded per block, broadcast over the channels.
func.func @avg_pool_exclude_pad(%x: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %y = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xf32>
  func.return %y : tensor<1x4x6x6xf32>
}
// CHECK-LABEL: func.func @avg_pool_exclude_pad
// CHECK:         tile.kernel "graph.avg_pool" {{.*}}reason = "sum over the taps, padding read as 0, divided by a per-position count row (tile.const);
// CHECK-COUNT-8:   tile.binary {{.*}} sizes [[[C:[0-9]+]], [[P:[0-9]+]]] {op = "add"}
// CHECK-NEXT:      tile.copy [[COUNTS:%.+]][{{.*}}] to [[ROW:%.+]][{{.*}}] sizes [1, [[P]]] : memref<1x48xf32, "dram">
// CHECK-NEXT:      tile.binary {{.*}}, [[ROW]]{{.*}} sizes [[[C]], [[P]]] {op = "div", broadcast = "row"}

// -----

// Without padding every window counts kh*kw = 4: one tile.binary_imm div, no constant, no fill.
// Stride 2 with a tap-major patch: every tap of all channels is ONE strided copy over whole
// stage planes (flattened, [4*8*8/2, 1]); on tiny a block is the whole 4 x 4 output of 4
// channels, then of the other 2 (644 cycles simulated; 749 with blocks of one output row of 4).
func.func @avg_pool_uniform(%x: tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32> {
  %y = graph.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<2x3x8x8xf32> -> tensor<2x3x4x4xf32>
  func.return %y : tensor<2x3x4x4xf32>
}
// CHECK-LABEL: func.func @avg_pool_uniform
// CHECK-NOT:     tile.const
// CHECK:         tile.kernel "graph.avg_pool" {op = "graph.avg_pool", tiles = array<i64: 4, 4, 4>
// CHECK-NOT:       {op = "cmp_eq"
// CHECK-COUNT-4:   tile.copy {{.*}} sizes [128, 1] : memref<160x2xf32, "sram">, memref<512x1xf32, "sram">
// CHECK-COUNT-3:   tile.binary {{.*}} sizes [4, 28] {op = "add"}
// CHECK-NEXT:      tile.binary_imm {{.*}} sizes [4, 28] {op = "div", imm = 4.000000e+00 : f64}

// -----

// ceil_mode: the last window of each dim overhangs the input by one; the overhang is a -inf
// strip (row 7 of every channel, column 7 of every row) filled before the loads. (On tiny one
// channel per chunk: the stage has a spare second plane that the strided taps' garbage
// columns run into.)
func.func @max_pool_ceil(%x: tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32> {
  %y = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode} : tensor<1x2x7x7xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
// CHECK-LABEL: func.func @max_pool_ceil
// CHECK:         tile.kernel "graph.max_pool" {op = "graph.max_pool", tiles = array<i64: 4, 4, 1>
// CHECK-DAG:       [[C7:%.+]] = arith.constant 7 : index
// CHECK-DAG:       [[C56:%.+]] = arith.constant 56 : index
// CHECK:           [[PLANES:%.+]] = tile.reshape {{.*}} -> memref<2x64xf32, "sram">
// CHECK:           [[LINES:%.+]] = tile.reshape {{.*}} -> memref<16x8xf32, "sram">
// CHECK:           tile.binary_imm [[PLANES]][%{{.*}}, [[C56]]] {{.*}} sizes [1, 8] {op = "add", imm = 0xfff0000000000000 : f64}
// CHECK:           tile.binary_imm [[LINES]][%{{.*}}, [[C7]]] {{.*}} sizes [8, 1] {op = "add", imm = 0xfff0000000000000 : f64}
// CHECK:           tile.copy {{.*}} sizes [1, 7, 7] : memref<2x7x7xf32, "dram">, memref<2x8x8xf32, "sram">

// -----

// An unfolded batch_norm: inv = scale / sqrt(var + eps) once per channel tile, then
// (x - mean) * inv + bias with column broadcasts, per image.
func.func @batch_norm(%x: tensor<2x5x3x4xf32>, %s: tensor<5xf32>, %b: tensor<5xf32>, %m: tensor<5xf32>, %v: tensor<5xf32>) -> tensor<2x5x3x4xf32> {
  %y = graph.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-03 : f64} : tensor<2x5x3x4xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32> -> tensor<2x5x3x4xf32>
  func.return %y : tensor<2x5x3x4xf32>
}
// CHECK-LABEL: func.func @batch_norm
// CHECK:         tile.kernel "graph.batch_norm" {op = "graph.batch_norm", tiles = array<i64: 5, 12>
// CHECK:           tile.binary_imm {{.*}} sizes [5, 1] {op = "add", imm = 1.000000e-03 : f64}
// CHECK-NEXT:      tile.unary {{.*}} sizes [5, 1] {op = "sqrt"}
// CHECK-NEXT:      tile.binary {{.*}} sizes [5, 1] {op = "div"}
// CHECK-NEXT:      scf.for
// CHECK:             tile.copy {{.*}} sizes [5, 12] : memref<10x12xf32, "dram">
// CHECK-NEXT:        tile.binary {{.*}} {op = "sub", broadcast = "col"}
// CHECK-NEXT:        tile.binary {{.*}} {op = "mul", broadcast = "col"}
// CHECK-NEXT:        tile.binary {{.*}} {op = "add", broadcast = "col"}
// CHECK-NEXT:        tile.copy {{.*}} sizes [5, 12] : memref<5x12xf32, "sram">, memref<10x12xf32, "dram">

// -----

// A ResNet block's tail: conv + bias, the residual add and the relu are one kernel on edge
// (named after the relu): after the bias add, the residual's window of the block is loaded in
// the output tile's layout (pitch 8 for rows of 6), added, the relu applied, and the tile stored.
func.func @conv_residual_relu(%x: tensor<1x4x6x6xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<8xf32>, %r: tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32> {
  %y = graph.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : tensor<1x4x6x6xf32>, tensor<8x4x3x3xf32>, tensor<8xf32> -> tensor<1x8x6x6xf32> loc("/conv3/Conv")
  %s = graph.add %y, %r : tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32> -> tensor<1x8x6x6xf32> loc("/add/Add")
  %z = graph.relu %s : tensor<1x8x6x6xf32> loc("/relu/Relu")
  func.return %z : tensor<1x8x6x6xf32>
}
// EDGE-LABEL:  func.func @conv_residual_relu
// EDGE:          %[[R:[0-9]+]] = tile.reshape %r : memref<1x8x6x6xf32, "dram"> -> memref<8x6x6xf32, "dram">
// EDGE-NEXT:     tile.kernel "/relu/Relu" {op = "graph.conv,graph.add,graph.relu", {{.*}}reason = "{{.*}}; the residual add and relu fused (est. {{[0-9]+}} cycles against {{[0-9]+}} for the conv and the add apart): each output tile adds its window of the residual before its store", est_fill_drain = array<i64: {{[0-9]+, [0-9]+, [0-9]+, [0-9]+}}>}
// EDGE:            tile.reshape %{{[0-9]+}} : memref<8x48xf32, "sram"> -> memref<8x6x8xf32, "sram">
// EDGE-NEXT:       %[[R3:[0-9]+]] = tile.reshape %[[RT:[0-9]+]] : memref<8x48xf32, "sram"> -> memref<8x6x8xf32, "sram">
// EDGE:            tile.binary %{{[0-9]+}}[{{.*}}], %{{[0-9]+}}[{{.*}}] to %[[Y:[0-9]+]][{{.*}}] sizes [8, 46] {op = "add", broadcast = "col"}
// EDGE-NEXT:       tile.copy %[[R]][{{.*}}] to %[[R3]][{{.*}}] sizes [8, 6, 6]
// EDGE-NEXT:       tile.binary %[[Y]][{{.*}}], %[[RT]][{{.*}}] to %[[Y]][{{.*}}] sizes [8, 46] {op = "add"}
// EDGE-NEXT:       tile.unary %[[Y]][{{.*}}] to %[[Y]][{{.*}}] sizes [8, 46] {op = "relu"}
// EDGE-NEXT:       tile.copy {{.*}} sizes [8, 6, 6] : memref<8x6x8xf32, "sram">, memref<8x6x6xf32, "dram">

// -----

// A constant weight is laid out tap-major [C_out, kh, kw, C] at compile time (a tile.const of
// its own), so each tap's weight columns are contiguous: with stride 1 there is no im2col patch,
// each tap's product reads the stage itself, viewed flat per channel ([4, 24]) from the tap's
// first element. Each chunk copies the stage's padding from tiles of zeros (filled once), so a
// load writes the whole stage and multi-buffer can rotate it.
func.func @conv3x3_constant_weight(%x: tensor<1x8x6x6xf32>) -> tensor<1x3x6x6xf32> {
  %w = graph.constant dense<[[[[-1.5, -1.0, -0.5], [0.0, 0.5, 1.0], [1.5, -1.5, -1.0]], [[-0.5, 0.0, 0.5], [1.0, 1.5, -1.5], [-1.0, -0.5, 0.0]], [[0.5, 1.0, 1.5], [-1.5, -1.0, -0.5], [0.0, 0.5, 1.0]], [[1.5, -1.5, -1.0], [-0.5, 0.0, 0.5], [1.0, 1.5, -1.5]], [[-1.0, -0.5, 0.0], [0.5, 1.0, 1.5], [-1.5, -1.0, -0.5]], [[0.0, 0.5, 1.0], [1.5, -1.5, -1.0], [-0.5, 0.0, 0.5]], [[1.0, 1.5, -1.5], [-1.0, -0.5, 0.0], [0.5, 1.0, 1.5]], [[-1.5, -1.0, -0.5], [0.0, 0.5, 1.0], [1.5, -1.5, -1.0]]], [[[-0.5, 0.0, 0.5], [1.0, 1.5, -1.5], [-1.0, -0.5, 0.0]], [[0.5, 1.0, 1.5], [-1.5, -1.0, -0.5], [0.0, 0.5, 1.0]], [[1.5, -1.5, -1.0], [-0.5, 0.0, 0.5], [1.0, 1.5, -1.5]], [[-1.0, -0.5, 0.0], [0.5, 1.0, 1.5], [-1.5, -1.0, -0.5]], [[0.0, 0.5, 1.0], [1.5, -1.5, -1.0], [-0.5, 0.0, 0.5]], [[1.0, 1.5, -1.5], [-1.0, -0.5, 0.0], [0.5, 1.0, 1.5]], [[-1.5, -1.0, -0.5], [0.0, 0.5, 1.0], [1.5, -1.5, -1.0]], [[-0.5, 0.0, 0.5], [1.0, 1.5, -1.5], [-1.0, -0.5, 0.0]]], [[[0.5, 1.0, 1.5], [-1.5, -1.0, -0.5], [0.0, 0.5, 1.0]], [[1.5, -1.5, -1.0], [-0.5, 0.0, 0.5], [1.0, 1.5, -1.5]], [[-1.0, -0.5, 0.0], [0.5, 1.0, 1.5], [-1.5, -1.0, -0.5]], [[0.0, 0.5, 1.0], [1.5, -1.5, -1.0], [-0.5, 0.0, 0.5]], [[1.0, 1.5, -1.5], [-1.0, -0.5, 0.0], [0.5, 1.0, 1.5]], [[-1.5, -1.0, -0.5], [0.0, 0.5, 1.0], [1.5, -1.5, -1.0]], [[-0.5, 0.0, 0.5], [1.0, 1.5, -1.5], [-1.0, -0.5, 0.0]], [[0.5, 1.0, 1.5], [-1.5, -1.0, -0.5], [0.0, 0.5, 1.0]]]]> : tensor<3x8x3x3xf32>
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<3x8x3x3xf32> -> tensor<1x3x6x6xf32> loc("/conv/Conv")
  func.return %y : tensor<1x3x6x6xf32>
}
// On tiny (16 semaphores, too few for per-tap kernels) it stays an implicit GEMM.
// CHECK-LABEL: func.func @conv3x3_constant_weight
// CHECK:         tile.kernel "/conv/Conv" {{.*}}reason = "implicit GEMM:
// EDGE-LABEL:  func.func @conv3x3_constant_weight
// EDGE:          %[[W:[0-9]+]] = tile.const dense_resource<w_tap_major_{{[0-9a-f]+}}> : tensor<3x3x3x8xf32>
// EDGE:          %[[W2:[0-9]+]] = tile.reshape %[[W]] : memref<3x3x3x8xf32, "dram"> -> memref<3x72xf32, "dram">
// EDGE:          tile.kernel "/conv/Conv" {op = "graph.conv", tiles = array<i64: 6, 6, 8, 3>, {{.*}}reason = "per-tap GEMM: W laid out [C_out, kh, kw, C/g] at compile time, one product per tap with the stage itself (shifted per tap, no im2col patch) as rhs;
// EDGE:            %[[STAGE:[0-9]+]] = tile.alloc : memref<8x8x8xf32, "sram">
// EDGE:            %[[WT:[0-9]+]] = tile.alloc : memref<3x72xf32, "sram">
// EDGE:            %[[FLAT:[0-9]+]] = tile.reshape %[[STAGE]] : memref<8x8x8xf32, "sram"> -> memref<8x64xf32, "sram">
// EDGE:            tile.copy %[[W2]][{{.*}}] to %[[WT]][{{.*}}] sizes [3, 72]
// EDGE:            tile.copy {{.*}} to %[[FLAT]][{{.*}}] sizes [8, 8]
// EDGE:            tile.copy {{.*}} to %[[STAGE]][{{.*}}] sizes [8, 6, 6] : memref<8x6x6xf32, "dram">, memref<8x8x8xf32, "sram">
// EDGE-NEXT:       tile.matmul %[[WT]][{{.*}}], %[[FLAT]][{{.*}}] to {{.*}} sizes [3, 8, 32] :
// EDGE-NEXT:       tile.matmul %[[WT]][{{.*}}], %[[FLAT]][{{.*}}] to {{.*}} sizes [3, 8, 14] :
// EDGE-COUNT-16:   tile.matmul %[[WT]][{{.*}}], %[[FLAT]][{{.*}}] to {{.*}} sizes [3, 8, {{32|14}}] {accumulate}

// -----

// ResNet-50's layer4 3x3 conv (512 -> 512 on 7 x 7) streams its tap-major weights per output
// tile and chunk of 32 channels: each chunk's tile W'[171, 9, 32] (197 KB) loads in two parts
// by taps (0-4 and 5-8), each into a buffer of its own, so convert-tile-to-sync can load them
// side by side on both DMA queues; the products of taps 0-4 read the first part, those of taps
// 5-8 the second.
func.func @streamed_weight_parts(%x: tensor<1x512x7x7xf32>) -> tensor<1x512x7x7xf32> {
  %w = graph.constant dense<0.5> : tensor<512x512x3x3xf32>
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x512x7x7xf32>, tensor<512x512x3x3xf32> -> tensor<1x512x7x7xf32>
  func.return %y : tensor<1x512x7x7xf32>
}
// EDGE-LABEL:  func.func @streamed_weight_parts
// EDGE:          tile.kernel "graph.conv" {op = "graph.conv", tiles = array<i64: 7, 7, 32, 171>, {{.*}}weights streamed per tile
// EDGE:            %[[A:[0-9]+]] = tile.alloc : memref<171x160xf32, "sram">
// EDGE-NEXT:       %[[B:[0-9]+]] = tile.alloc : memref<171x128xf32, "sram">
// EDGE:            %[[A3:[0-9]+]] = tile.reshape %[[A]] : memref<171x160xf32, "sram"> -> memref<171x5x32xf32, "sram">
// EDGE-NEXT:       %[[B3:[0-9]+]] = tile.reshape %[[B]] : memref<171x128xf32, "sram"> -> memref<171x4x32xf32, "sram">
// EDGE:            scf.for
// EDGE:              tile.copy {{.*}} sizes [32, 7, 7] : memref<512x7x7xf32, "dram">, memref<32x9x9xf32, "sram">
// EDGE-NEXT:         tile.copy %{{[0-9]+}}[%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}] to %[[A3]]{{.*}} sizes [171, 5, 32] : memref<512x9x512xf32, "dram">
// EDGE-NEXT:         tile.copy %{{[0-9]+}}[%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}] to %[[B3]]{{.*}} sizes [171, 4, 32] : memref<512x9x512xf32, "dram">
// EDGE-COUNT-10:     tile.matmul %[[A]]
// EDGE-COUNT-8:      tile.matmul %[[B]]
// EDGE-NEXT:         scf.for

// -----

// A 1x1 stride-2 conv (any weight: one tap is already tap-major) gathers its strided inputs
// with one DMA per chunk (the tap-major patch, `PatchLayout.flat`), not one per channel. The
// stage's spare plane is never written, so multi-buffer cannot rotate it: the plan is
// estimated serial, which takes one block of all 4 x 4 outputs (estimated 709 cycles,
// simulated 713; blocks of two rows, which a pipelined estimate chose, ran 719). Blocks of one
// row ran 696: each block's stage load starts once its tap copy has read the last one, beside
// that block's matmul, which the serial estimate (799) does not see.
func.func @conv1x1_stride2(%x: tensor<1x8x8x8xf32>, %w: tensor<6x8x1x1xf32>) -> tensor<1x6x4x4xf32> {
  %y = graph.conv %x, %w {strides = array<i64: 2, 2>} : tensor<1x8x8x8xf32>, tensor<6x8x1x1xf32> -> tensor<1x6x4x4xf32>
  func.return %y : tensor<1x6x4x4xf32>
}
// EDGE-LABEL:  func.func @conv1x1_stride2
// EDGE:          tile.kernel "graph.conv" {op = "graph.conv", tiles = array<i64: 4, 4, 8, 6>, {{.*}}reason = "per-tap GEMM: one product per tap with a tap-major patch (one DMA per tap) as rhs;
// EDGE-NOT:        scf.for
// EDGE:            tile.copy {{.*}} sizes [8, 7, 7] : memref<8x8x8xf32, "dram">, memref<9x8x8xf32, "sram">
// EDGE-NEXT:       tile.copy {{.*}} sizes [256, 1] : memref<288x2xf32, "sram">, memref<256x1xf32, "sram">
// EDGE-NEXT:       tile.matmul {{.*}} sizes [6, 8, 28]

// -----

// Channels last: the positions stream. The stage [S, Wp, C] holds the block's input rows at the
// padded width (the padding copied from a tile of zeros), read flat [S*Wp, C]; one matmul per
// tap with m = positions of the block (the dropped columns included), k = channels, n = output
// channels, the tap-major weight as the transposed rhs; the epilogue reads each output row.
func.func @conv_channels_last(%x: tensor<1x6x6x8xf32>) -> tensor<1x6x6x4xf32> {
  %w = graph.constant dense<0.5> : tensor<4x8x3x3xf32>
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, activation = "relu", channels_last} : tensor<1x6x6x8xf32>, tensor<4x8x3x3xf32> -> tensor<1x6x6x4xf32>
  func.return %y : tensor<1x6x6x4xf32>
}
// CHECK-LABEL: func.func @conv_channels_last
// CHECK:         tile.kernel "graph.conv" {{.*}}reason = "channels-last per-tap GEMM: W laid out [C_out, kh, kw, C] at compile time, the positions stream
// CHECK:           %[[STAGE:[0-9]+]] = tile.alloc : memref<{{[0-9]+}}x8x8xf32, "sram">
// CHECK:           %[[FLAT:[0-9]+]] = tile.reshape %[[STAGE]]
// CHECK:           tile.copy {{.*}} to %[[STAGE]][{{.*}}] sizes [{{[0-9]+}}, 6, 8] : memref<6x6x8xf32, "dram">
// CHECK:           tile.matmul %[[FLAT]][{{.*}}], {{.*}} sizes [{{[0-9]+}}, 4, 4] {transpose_rhs}
// CHECK:           tile.acc_read {{.*}} sizes [6, 4] {activation = "relu"}
// EDGE-LABEL:  func.func @conv_channels_last
// EDGE:          tile.kernel "graph.conv" {{.*}}tiles = array<i64: 6, 8, 4>{{.*}}reason = "channels-last per-tap GEMM: W laid out [C_out, kh, kw, C] at compile time, the positions stream (m = 46 of 6 output row(s) of padded width 8)
// EDGE-COUNT-9:    tile.matmul {{.*}} sizes [46, 8, 4] {{{.*}}transpose_rhs}

// -----

// Channels last with fewer channels than matrix rows: a row of the kernel's taps is merged into
// one contraction. Per block, three copies of the flat stage shifted by one tap each fill the
// column blocks of a patch [rows, 3 taps x 3 channels]; one matmul per kernel row (k = 9, its
// first row 18 patch rows, one padded width, below the previous one) instead of one per tap.
func.func @conv_channels_last_merged(%x: tensor<1x16x16x3xf32>) -> tensor<1x16x16x8xf32> {
  %w = graph.constant dense<0.5> : tensor<8x3x3x3xf32>
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, channels_last} : tensor<1x16x16x3xf32>, tensor<8x3x3x3xf32> -> tensor<1x16x16x8xf32>
  func.return %y : tensor<1x16x16x8xf32>
}
// EDGE-LABEL:  func.func @conv_channels_last_merged
// EDGE:          tile.kernel "graph.conv" {{.*}}reason = "channels-last per-tap GEMM: {{.*}}one product per kernel row (its 3 taps merged: shifted stage copies)
// On edge the whole 16 x 16 image is one block (2,320 cycles simulated; 2,712 in blocks of 6
// rows).
// EDGE:            %[[PATCH:[0-9]+]] = tile.alloc : memref<322x9xf32, "sram">
// EDGE:            tile.copy %[[FLAT:[0-9]+]][%{{.*}}, %{{.*}}] to %[[PATCH]][%{{.*}}, %{{.*}}] sizes [322, 3] : memref<324x3xf32, "sram">, memref<322x9xf32, "sram">
// EDGE-NEXT:       tile.copy %[[FLAT]][%{{.*}}, %{{.*}}] to %[[PATCH]][%{{.*}}, %{{.*}}] sizes [322, 3]
// EDGE-NEXT:       tile.copy %[[FLAT]][%{{.*}}, %{{.*}}] to %[[PATCH]][%{{.*}}, %{{.*}}] sizes [322, 3]
// EDGE-NEXT:       tile.matmul %[[PATCH]][%{{.*}}, %{{.*}}], %{{.*}} sizes [286, 9, 8] {transpose_rhs}
// EDGE-NEXT:       tile.matmul %[[PATCH]][%{{.*}}, %{{.*}}], %{{.*}} sizes [286, 9, 8] {accumulate, transpose_rhs}
// EDGE-NEXT:       tile.matmul %[[PATCH]][%{{.*}}, %{{.*}}], %{{.*}} sizes [286, 9, 8] {accumulate, transpose_rhs}

// -----

// A channels-last max pool: the stage [S, Wp, C] (padding copied from a tile of -inf) is read
// through a view [S * Wp / 2, 2 * C], in which a tap's outputs along a row are a plain window;
// per output row the nine taps fold with max into y, no tap copies. On edge all 4 output rows
// are one block (707 cycles simulated; 906 in blocks of 2 rows).
func.func @max_pool_channels_last(%x: tensor<1x8x8x16xf32>) -> tensor<1x4x4x16xf32> {
  %y = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, channels_last} : tensor<1x8x8x16xf32> -> tensor<1x4x4x16xf32>
  func.return %y : tensor<1x4x4x16xf32>
}
// EDGE-LABEL:  func.func @max_pool_channels_last
// EDGE:          tile.kernel "graph.max_pool" {{.*}}reason = "channels-last max pool on the vector engine: 9 taps read in place from the stage
// EDGE:            %[[STAGE:[0-9]+]] = tile.alloc : memref<9x10x16xf32, "sram">
// EDGE:            %[[TAPS:[0-9]+]] = tile.reshape %[[STAGE]] : memref<9x10x16xf32, "sram"> -> memref<45x32xf32, "sram">
// EDGE-NOT:        tile.copy {{.*}} to %[[TAPS]]
// EDGE-COUNT-8:    tile.binary {{.*}} sizes [4, 16] {op = "max"}

// -----

// An int8 conv with an input zero point of -5: the stage, patch and weight tiles are i8, the
// accumulator and output i32. The padding is filled with the zero point (cmp_eq, mul, add -5),
// so every tap reads x or the zero point, and the epilogue adds -(-5) * (each output channel's
// weight sum) = [15, 135, 30, -5] (a compile-time i32 column) instead of reading ACC alone.
func.func @int8_conv_zero_point(%x: tensor<1x3x6x6xi8>) -> tensor<1x4x6x6xi32> {
  %w = graph.constant dense<[[[[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[-1, -2, -3], [-4, -5, -6], [-7, -8, -9]], [[0, 0, 1], [0, 0, 1], [0, 0, 1]]], [[[1, 1, 1], [1, 1, 1], [1, 1, 1]], [[1, 1, 1], [1, 1, 1], [1, 1, 1]], [[1, 1, 1], [1, 1, 1], [1, 1, 1]]], [[[0, 0, 0], [0, 1, 0], [0, 0, 0]], [[0, 0, 0], [0, 2, 0], [0, 0, 0]], [[0, 0, 0], [0, 3, 0], [0, 0, 0]]], [[[-128, 127, 0], [0, 0, 0], [0, 0, 0]], [[0, 0, 0], [0, 0, 0], [0, 0, 0]], [[0, 0, 0], [0, 0, 0], [0, 0, 0]]]]> : tensor<4x3x3x3xi8>
  %y = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, input_zero = -5 : i64} : tensor<1x3x6x6xi8>, tensor<4x3x3x3xi8> -> tensor<1x4x6x6xi32> loc("/conv1/Conv")
  func.return %y : tensor<1x4x6x6xi32>
}
// CHECK-LABEL: func.func @int8_conv_zero_point
// CHECK:         [[SUMS:%.+]] = tile.const dense<{{\[\[}}15], [135], [30], [-5]]> : tensor<4x1xi32>
// CHECK:         tile.kernel "/conv1/Conv" {{.*}} reason = "implicit GEMM: {{.*}}; i8 x i8 -> i32 on the matrix engine, the padding filled with the input zero point -5 and each output channel's sum of it times its weights subtracted in the epilogue", est_fill_drain = array<i64: {{[0-9]+, [0-9]+, [0-9]+, [0-9]+}}>}
// CHECK-DAG:       [[STAGE:%.+]] = tile.alloc : memref<3x8x8xi8, "sram">
// CHECK-DAG:       [[PATCH:%.+]] = tile.alloc : memref<27x46xi8, "sram">
// CHECK-DAG:       [[W:%.+]] = tile.alloc : memref<4x27xi8, "sram">
// CHECK-DAG:       [[ACC:%.+]] = tile.alloc : memref<4x46xi32, "acc">
// CHECK-DAG:       [[Y:%.+]] = tile.alloc : memref<4x48xi32, "sram">
// CHECK-DAG:       [[COLUMN:%.+]] = tile.alloc : memref<4x1xi32, "sram">
// CHECK:           tile.binary_imm {{.*}} {op = "add", imm = -5.000000e+00 : f64} : memref<24x8xi8, "sram">, memref<24x8xi8, "sram">
// CHECK:           tile.copy [[SUMS]]{{.*}} to [[COLUMN]]
// CHECK:           tile.matmul [[W]]{{.*}}, [[PATCH]]{{.*}} to [[ACC]]{{.*}} : memref<4x27xi8, "sram">, memref<27x46xi8, "sram">, memref<4x46xi32, "acc">
// CHECK:           tile.binary [[ACC]]{{.*}}, [[COLUMN]]{{.*}} to [[Y]]{{.*}} {op = "add", broadcast = "col"}
// CHECK:           tile.copy {{.*}} : memref<4x6x8xi32, "sram">, memref<4x6x6xi32, "dram">

// -----

// An int8 conv layer: conv, its scaling back per channel, bias, relu and requantization are
// one kernel. Each output tile is cast from ACC (i32) to f32 (no acc_read first: no input zero
// point to correct, a layout that is not compact), scaled and shifted by the per-channel
// columns (loaded once, broadcast "col"), relu'd, divided by the output scale and cast to int8
// with its zero point; only the int8 result goes to DRAM.
func.func @int8_conv_layer(%x: tensor<1x2x4x4xi8>) -> tensor<1x3x4x4xi8> {
  %w = graph.constant dense<[[[[1]], [[2]]], [[[3]], [[-4]]], [[[5]], [[6]]]]> : tensor<3x2x1x1xi8>
  %acc = graph.conv %x, %w : tensor<1x2x4x4xi8>, tensor<3x2x1x1xi8> -> tensor<1x3x4x4xi32> loc("conv")
  %s = graph.constant dense<[[[0.5]], [[0.25]], [[2.0]]]> : tensor<3x1x1xf32>
  %z = graph.constant dense<0> : tensor<1xi32>
  %d = graph.dequantize %acc, %s, %z : tensor<1x3x4x4xi32>, tensor<3x1x1xf32>, tensor<1xi32> -> tensor<1x3x4x4xf32> loc("conv")
  %b = graph.constant dense<[[[1.0]], [[-2.0]], [[3.0]]]> : tensor<3x1x1xf32>
  %y = graph.add %d, %b : tensor<1x3x4x4xf32>, tensor<3x1x1xf32> -> tensor<1x3x4x4xf32> loc("conv")
  %r = graph.relu %y : tensor<1x3x4x4xf32> loc("relu")
  %qs = graph.constant dense<0.1> : tensor<f32>
  %qz = graph.constant dense<-128> : tensor<i8>
  %q = graph.quantize %r, %qs, %qz : tensor<1x3x4x4xf32>, tensor<f32>, tensor<i8> -> tensor<1x3x4x4xi8> loc("quantize")
  func.return %q : tensor<1x3x4x4xi8>
}
// CHECK-LABEL: func.func @int8_conv_layer
// CHECK:         tile.kernel "quantize" {op = "graph.conv,graph.dequantize,graph.add,graph.relu,graph.quantize", {{.*}} the epilogue runs the 4-op elementwise chain on each output tile (dequantize, add, relu, quantize); the i32 sum stays on chip", est_fill_drain = array<i64: {{[0-9]+, [0-9]+, [0-9]+, [0-9]+}}>}
// CHECK-NOT:       memref<3x8xi32, "sram">
// CHECK-DAG:       [[ACC:%.+]] = tile.alloc : memref<3x8xi32, "acc">
// CHECK-DAG:       [[SCALE:%.+]] = tile.alloc : memref<3x1xf32, "sram">
// CHECK-DAG:       [[BIAS:%.+]] = tile.alloc : memref<3x1xf32, "sram">
// CHECK-DAG:       [[F:%.+]] = tile.alloc : memref<3x8xf32, "sram">
// CHECK-DAG:       [[Q:%.+]] = tile.alloc : memref<3x8xi8, "sram">
// CHECK:           [[Q3:%.+]] = tile.reshape [[Q]] : memref<3x8xi8, "sram"> -> memref<3x2x4xi8, "sram">
// CHECK:           tile.matmul
// CHECK-NOT:       tile.acc_read
// CHECK:           tile.cast [[ACC]]{{.*}} to [[F]]{{.*}} : memref<3x8xi32, "acc">, memref<3x8xf32, "sram">
// CHECK-NEXT:      tile.binary [[F]]{{.*}}, [[SCALE]]{{.*}} {op = "mul", broadcast = "col"}
// CHECK-NEXT:      tile.binary {{.*}}, [[BIAS]]{{.*}} {op = "add", broadcast = "col"}
// CHECK-NEXT:      tile.unary {{.*}} {op = "relu"}
// CHECK-NEXT:      tile.binary_imm {{.*}} {op = "div", imm = 0.10000000149011612 : f64}
// CHECK-NEXT:      tile.cast {{.*}} to [[Q]]{{.*}} {zero = -128 : i64}
// CHECK-NEXT:      tile.copy [[Q3]]{{.*}} : memref<3x2x4xi8, "sram">, memref<3x4x4xi8, "dram">
