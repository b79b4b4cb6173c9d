// RUN: aitc-opt %s --split-input-file --verify-diagnostics -p 'convert-graph-to-tile{target=tiny}' | filecheck %s
// RUN: aitc-opt %s --split-input-file --verify-diagnostics -p 'convert-graph-to-tile{target=edge}' | filecheck %s --check-prefix=EDGE
// RUN: aitc-opt %s --split-input-file --verify-diagnostics --print-debuginfo -p 'convert-graph-to-tile{target=tiny}' | filecheck %s --check-prefix=LOC

// A 32x48 @ 48x20 matmul on tiny (4x4 engine): blocks of 32 x 12 (then 32 x 8) summed in SRAM
// over K steps of 4. The first step writes the block (acc_read of each column group), the steps between are
// one scf.for adding into it, the last step adds and stores each group as soon as it is done.
// The first and last steps load into tiles of their own (the last one's before the loop), and
// the column groups of a step are emitted one after the other, taking turns on two ACC tiles,
// so insert-semaphores orders them op by op. The choice (tiles, block) and its cost are
// recorded on the kernel. On edge (32x32 engine) the whole K fits one step: the 48 x 20 weight
// panel is loaded once and reused by two blocks of 16 rows (loop order n).
func.func @matmul(%x: tensor<32x48xf32> {graph.name = "x"}, %w: tensor<48x20xf32> {graph.name = "w"}) -> (tensor<32x20xf32> {graph.name = "y"}) {
  %y = graph.matmul %x, %w : tensor<32x48xf32>, tensor<48x20xf32> -> tensor<32x20xf32> loc("/fc/MatMul")
  func.return %y : tensor<32x20xf32>
}
// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    (%x: memref<32x48xf32, "dram"> {graph.name = "x"}, %w: memref<48x20xf32, "dram"> {graph.name = "w"}, %y: memref<32x20xf32, "dram"> {graph.name = "y", tile.output})
// CHECK-NEXT:    tile.kernel "/fc/MatMul" {op = "graph.matmul", tiles = array<i64: 32, 4, 4>, block = array<i64: 32, 12>, dma_bytes = 18688 : i64, est_cycles = {{[0-9]+}} : i64, sram_bytes = 3648 : i64, acc_bytes = 1536 : i64, reason = "{{.*}}blocks of 32 x 12 summed in SRAM (vector adds) over K steps of 4; streams K tiles; loop order m; pipelined at depth 2{{.*}}", est_fill_drain = array<i64: {{[0-9]+, [0-9]+, [0-9]+, [0-9]+}}>}
// CHECK-DAG:       %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-DAG:       %[[C4:[a-z0-9_]+]] = arith.constant 4 : index
// CHECK-DAG:       %[[C44:[a-z0-9_]+]] = arith.constant 44 : index
// CHECK-DAG:       %[[C:[a-z0-9_]+]] = tile.alloc : memref<32x12xf32, "sram">
// CHECK-DAG:       %[[ACC0:[a-z0-9_]+]] = tile.alloc : memref<32x4xf32, "acc">
// CHECK-DAG:       %[[ACC1:[a-z0-9_]+]] = tile.alloc : memref<32x4xf32, "acc">
// CHECK:           tile.copy %x[%[[C0]], %[[C0]]] to %[[A0:[a-z0-9_]+]][%[[C0]], %[[C0]]] sizes [32, 4]
// CHECK-NEXT:      tile.copy %w[%[[C0]], %[[C0]]] to %[[B0:[a-z0-9_]+]][%[[C0]], %[[C0]]] sizes [4, 12]
// CHECK-NEXT:      tile.matmul %[[A0]][{{.*}}], %[[B0]][%[[C0]], %[[C0]]] to %[[ACC0]][{{.*}}] sizes [32, 4, 4] :
// CHECK-NEXT:      tile.acc_read %[[ACC0]][{{.*}}] to %[[C]][%[[C0]], %[[C0]]] sizes [32, 4]
// CHECK-NEXT:      tile.matmul %[[A0]][{{.*}}], %[[B0]][%[[C0]], %[[C4]]] to %[[ACC1]][{{.*}}] sizes [32, 4, 4] :
// CHECK-NEXT:      tile.acc_read %[[ACC1]][{{.*}}] to %[[C]][%[[C0]], %[[C4]]] sizes [32, 4]
// CHECK:           tile.copy %x[%[[C0]], %[[C44]]] to %[[AL:[a-z0-9_]+]][%[[C0]], %[[C0]]] sizes [32, 4]
// CHECK-NEXT:      tile.copy %w[%[[C44]], %[[C0]]] to %[[BL:[a-z0-9_]+]][%[[C0]], %[[C0]]] sizes [4, 12]
// CHECK-NEXT:      scf.for %[[K:[a-z0-9_]+]] = %[[C4]] to %[[C44]] step %[[C4]] {
// CHECK-NEXT:        tile.copy %x[%[[C0]], %[[K]]] to %[[A:[a-z0-9_]+]][%[[C0]], %[[C0]]] sizes [32, 4]
// CHECK-NEXT:        tile.copy %w[%[[K]], %[[C0]]] to %[[B:[a-z0-9_]+]][%[[C0]], %[[C0]]] sizes [4, 12]
// CHECK-NEXT:        tile.matmul %[[A]][{{.*}}], %[[B]][%[[C0]], %[[C0]]] to %[[ACC0]][{{.*}}] sizes [32, 4, 4] :
// CHECK-NEXT:        tile.binary %[[ACC0]][{{.*}}], %[[C]][%[[C0]], %[[C0]]] to %[[C]][%[[C0]], %[[C0]]] sizes [32, 4] {op = "add"}
// CHECK:           {{^ *}}}{{$}}
// CHECK-NEXT:      tile.matmul %[[AL]][{{.*}}], %[[BL]][%[[C0]], %[[C0]]] to %[[ACC0]][{{.*}}] sizes [32, 4, 4] :
// CHECK-NEXT:      tile.binary %[[ACC0]][{{.*}}], %[[C]][%[[C0]], %[[C0]]] to %[[C]][%[[C0]], %[[C0]]] sizes [32, 4] {op = "add"}
// CHECK-NEXT:      tile.copy %[[C]][%[[C0]], %[[C0]]] to %y[%[[C0]], %[[C0]]] sizes [32, 4]
// CHECK-NEXT:      tile.matmul %[[AL]][{{.*}}], %[[BL]][%[[C0]], %[[C4]]] to %[[ACC1]][{{.*}}] sizes [32, 4, 4] :
// CHECK:           func.return
// EDGE-LABEL: func.func @matmul
// EDGE:         tile.kernel "/fc/MatMul" {op = "graph.matmul", tiles = array<i64: 16, 48, 20>, block = array<i64: 16, 20>, dma_bytes = 12544 : i64, est_cycles = {{[0-9]+}} : i64, sram_bytes = 8192 : i64, acc_bytes = 1280 : i64, reason = "{{.*}}keeps the rhs column panel in SRAM; loop order n{{.*}}", est_fill_drain = array<i64: {{[0-9]+, [0-9]+, [0-9]+, [0-9]+}}>}
// EDGE:           tile.copy %w[%[[Z:[a-z0-9_]+]], %[[Z]]] to {{.*}} sizes [48, 20]
// EDGE-NEXT:      scf.for %[[M:[a-z0-9_]+]] = {{.*}} {
// EDGE-NEXT:        tile.copy %x[%[[M]], %[[Z]]] to {{.*}} sizes [16, 48]
// EDGE-NEXT:        tile.matmul {{.*}} sizes [16, 32, 20] :
// EDGE-NEXT:        tile.matmul {{.*}} sizes [16, 16, 20] {accumulate}
// EDGE-NEXT:        tile.acc_read {{.*}} sizes [16, 20] :
// EDGE-NEXT:        tile.copy {{.*}} to %y[%[[M]], %[[Z]]] sizes [16, 20]
// EDGE:         func.return
// LOC-LABEL: func.func @matmul
// LOC:         tile.matmul {{.*}} loc("/fc/MatMul")
// LOC:         } loc("/fc/MatMul")

// -----

// Bias + relu: acc_read cannot add a bias before its activation, so the bias row (loaded once
// for all of N) is added from ACC with broadcast = row and the relu follows as tile.unary.
func.func @bias_relu(%x: tensor<8x16xf32>, %w: tensor<16x12xf32>, %b: tensor<12xf32>) -> tensor<8x12xf32> {
  %y = graph.matmul %x, %w, %b {activation = "relu"} : tensor<8x16xf32>, tensor<16x12xf32>, tensor<12xf32> -> tensor<8x12xf32> loc("/fc1/Relu")
  func.return %y : tensor<8x12xf32>
}
// CHECK-LABEL: func.func @bias_relu
// CHECK-SAME:    %[[OUT:[a-z0-9_]+]]: memref<8x12xf32, "dram"> {tile.output})
// CHECK:         %[[BIAS:[a-z0-9_]+]] = tile.reshape %b : memref<12xf32, "dram"> -> memref<1x12xf32, "dram">
// CHECK-NEXT:    tile.kernel "/fc1/Relu" {op = "graph.matmul"
// CHECK:           tile.copy %[[BIAS]][%{{.*}}, %{{.*}}] to %[[BT:[a-z0-9_]+]][{{.*}}] sizes [1, 12]
// CHECK:           tile.binary %[[ACC:[a-z0-9_]+]][{{.*}}], %[[BT]][{{.*}}] to %[[Y:[a-z0-9_]+]][{{.*}}] sizes [8, 4] {op = "add", broadcast = "row"} : memref<8x4xf32, "acc">, memref<1x12xf32, "sram">
// CHECK:           tile.unary %[[Y]][{{.*}}] to %[[Y]][{{.*}}] sizes [8, 4] {op = "relu"}
// CHECK-NEXT:      tile.copy %[[Y]][{{.*}}] to %[[OUT]][{{.*}}] sizes [8, 4]
// CHECK-NOT:     tile.acc_read

// -----

// Without a bias the activation is fused into acc_read (K is one step: the product is whole in
// ACC; a sum over several steps in SRAM would apply it in place after the last one).
func.func @matmul_gelu(%x: tensor<8x4xf32>, %w: tensor<4x4xf32>) -> tensor<8x4xf32> {
  %y = graph.matmul %x, %w {activation = "gelu"} : tensor<8x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
  func.return %y : tensor<8x4xf32>
}
// CHECK-LABEL: func.func @matmul_gelu
// CHECK:         tile.acc_read {{.*}} sizes [{{[0-9]+}}, 4] {activation = "gelu"} : memref<{{[0-9]+}}x4xf32, "acc">, memref<{{[0-9]+}}x4xf32, "sram">
// CHECK-NOT:     tile.unary

// -----

// Batched matmul with batch dims on both sides: one scf.for per batch dim, row offsets
// computed with arith on index.
func.func @batched(%a: tensor<2x3x8x16xf32>, %b: tensor<2x3x16x8xf32>) -> tensor<2x3x8x8xf32> {
  %y = graph.matmul %a, %b : tensor<2x3x8x16xf32>, tensor<2x3x16x8xf32> -> tensor<2x3x8x8xf32> loc("/attn/MatMul")
  func.return %y : tensor<2x3x8x8xf32>
}
// CHECK-LABEL: func.func @batched
// CHECK-DAG:     %[[L:[a-z0-9_]+]] = tile.reshape %a : memref<2x3x8x16xf32, "dram"> -> memref<48x16xf32, "dram">
// CHECK-DAG:     %[[R:[a-z0-9_]+]] = tile.reshape %b : memref<2x3x16x8xf32, "dram"> -> memref<96x8xf32, "dram">
// CHECK-DAG:     %[[O:[a-z0-9_]+]] = tile.reshape %result0 : memref<2x3x8x8xf32, "dram"> -> memref<48x8xf32, "dram">
// CHECK:         tile.kernel "/attn/MatMul" {op = "graph.matmul", tiles = array<i64: 8, 16, 4>
// CHECK:           scf.for %[[B0:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        scf.for %[[B1:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:          %[[T0:[a-z0-9_]+]] = arith.muli %[[B1]], %{{.*}} : index
// CHECK-NEXT:          %[[T1:[a-z0-9_]+]] = arith.muli %[[B0]], %{{.*}} : index
// CHECK-NEXT:          %[[LROW:[a-z0-9_]+]] = arith.addi %[[T0]], %[[T1]] : index
// CHECK:               tile.copy %[[L]][%[[LROW]], %{{.*}}] to
// CHECK:               tile.copy %[[R]][%{{.*}}, %{{.*}}] to
// CHECK:               tile.copy %{{.*}} to %[[O]][%[[LROW]], %{{.*}}] sizes [8, 4]

// -----

// A chain of single-use elementwise ops is one kernel: each input loaded once per tile, the
// intermediates stay in SRAM, one store; the splat constant becomes an immediate. The tile
// height is the fastest estimate among the most rows that fit and their halvings (short tiles
// start and drain the pipeline sooner: simulated 1130 cycles at 2 rows, 1704 at all 16).
func.func @chain(%x: tensor<16x32xf32>, %y: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %c = graph.constant dense<5.000000e-01> : tensor<f32>
  %0 = graph.mul %x, %y : tensor<16x32xf32>, tensor<16x32xf32> -> tensor<16x32xf32> loc("/Mul")
  %1 = graph.mul %0, %c : tensor<16x32xf32>, tensor<f32> -> tensor<16x32xf32> loc("/Scale")
  %2 = graph.tanh %1 : tensor<16x32xf32> loc("/Tanh")
  %3 = graph.sub %2, %x : tensor<16x32xf32>, tensor<16x32xf32> -> tensor<16x32xf32> loc("/Sub")
  func.return %3 : tensor<16x32xf32>
}
// CHECK-LABEL: func.func @chain
// CHECK-COUNT-1: tile.kernel
// CHECK-SAME:      "/Sub" {op = "graph.mul,graph.tanh,graph.sub", tiles = array<i64: 2, 32>
// CHECK-SAME:      reason = "4 elementwise op(s) in one kernel: {{.*}} per 2 x 32 tile of 16 x 32 {{.*}}(the fastest estimate of the heights that fit: 16 rows {{[0-9]+}}, 8 rows
// CHECK-COUNT-2:   tile.copy %{{x|y}}[
// CHECK-NEXT:      tile.binary {{.*}} {op = "mul"}
// CHECK-NEXT:      tile.binary_imm {{.*}} {op = "mul", imm = 5.000000e-01 : f64}
// CHECK-NEXT:      tile.unary {{.*}} {op = "tanh"}
// CHECK-NEXT:      tile.binary {{.*}} {op = "sub"}
// CHECK-NEXT:      tile.copy {{.*}} to %result0[
// CHECK-NEXT:    }
// CHECK-NOT:     tile.kernel
// CHECK:         func.return
// LOC-LABEL: func.func @chain
// LOC:         tile.binary {{.*}} {op = "mul"} {{.*}} loc("/Mul")
// LOC-NEXT:    tile.binary_imm {{.*}} loc("/Scale")
// LOC-NEXT:    tile.unary {{.*}} loc("/Tanh")

// -----

// A bias row [32] added to a 4x8x32 tensor: leading dims fold into rows, the bias is a
// 1 x cols window (broadcast = row).
func.func @row_broadcast(%x: tensor<4x8x32xf32>, %b: tensor<32xf32>) -> tensor<4x8x32xf32> {
  %y = graph.add %x, %b : tensor<4x8x32xf32>, tensor<32xf32> -> tensor<4x8x32xf32>
  func.return %y : tensor<4x8x32xf32>
}
// CHECK-LABEL: func.func @row_broadcast
// CHECK-DAG:     %[[X:[a-z0-9_]+]] = tile.reshape %x : memref<4x8x32xf32, "dram"> -> memref<32x32xf32, "dram">
// CHECK-DAG:     %[[B:[a-z0-9_]+]] = tile.reshape %b : memref<32xf32, "dram"> -> memref<1x32xf32, "dram">
// CHECK:         tile.kernel "graph.add" {op = "graph.add", tiles = array<i64: 16, 32>
// CHECK:           tile.copy %[[B]][{{.*}}] to %[[BT:[a-z0-9_]+]][{{.*}}] sizes [1, 32]
// CHECK-NEXT:      scf.for %[[R:[a-z0-9_]+]] = {{.*}} {
// CHECK-NEXT:        tile.copy %[[X]][%[[R]], %{{.*}}] to %[[XT:[a-z0-9_]+]][{{.*}}] sizes [16, 32]
// CHECK-NEXT:        tile.binary %[[XT]][{{.*}}], %[[BT]][{{.*}}] to {{.*}} sizes [16, 32] {op = "add", broadcast = "row"}

// -----

// An attention mask [2,1,1,8] on scores [2,2,8,8] is neither a row nor a column of the whole
// 32 x 8 view: the batch dim, which the mask follows, is looped; within it the mask is a row.
func.func @mask_broadcast(%s: tensor<2x2x8x8xf32>, %m: tensor<2x1x1x8xf32>) -> tensor<2x2x8x8xf32> {
  %y = graph.add %s, %m : tensor<2x2x8x8xf32>, tensor<2x1x1x8xf32> -> tensor<2x2x8x8xf32>
  func.return %y : tensor<2x2x8x8xf32>
}
// CHECK-LABEL: func.func @mask_broadcast
// CHECK-DAG:     %[[M:[a-z0-9_]+]] = tile.reshape %m : memref<2x1x1x8xf32, "dram"> -> memref<2x8xf32, "dram">
// CHECK:         tile.kernel "graph.add" {op = "graph.add", tiles = array<i64: 16, 8>
// CHECK:           scf.for %[[N:[a-z0-9_]+]] = {{.*}} {
// CHECK:             tile.copy %[[M]][%[[N]], %{{.*}}] to {{.*}} sizes [1, 8]
// CHECK-NEXT:        tile.binary {{.*}} sizes [16, 8] {op = "add", broadcast = "row"}

// -----

// Softmax over the last axis: whole rows per tile, row max and sum as tr x 1 columns that
// broadcast back (broadcast = col). Tiles of 2 rows: the fewest estimated cycles of the tile
// heights up to the 16 rows that fit (simulated on tiny: 1,284 cycles; one tile of 16: 1,834).
func.func @softmax(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %y = graph.softmax %x {axis = -1 : i64} : tensor<16x64xf32> loc("/Softmax")
  func.return %y : tensor<16x64xf32>
}
// CHECK-LABEL: func.func @softmax
// CHECK:         tile.kernel "/Softmax" {op = "graph.softmax", tiles = array<i64: 2, 64>{{.*}}2 row(s) per tile, the fewest est. cycles of 5 tile heights up to 16
// CHECK:           tile.reduce %[[T:[a-z0-9_]+]][{{.*}}] to %[[S:[a-z0-9_]+]][{{.*}}] sizes [2, 64] {op = "max"}
// CHECK-NEXT:      tile.binary %[[T]][{{.*}}], %[[S]][{{.*}}] to %[[T]][{{.*}}] sizes [2, 64] {op = "sub", broadcast = "col"}
// CHECK-NEXT:      tile.unary %[[T]][{{.*}}] to %[[T]][{{.*}}] sizes [2, 64] {op = "exp"}
// CHECK-NEXT:      tile.reduce %[[T]][{{.*}}] to %[[S]][{{.*}}] sizes [2, 64] {op = "sum"}
// CHECK-NEXT:      tile.unary %[[S]][{{.*}}] to %[[S]][{{.*}}] sizes [2, 1] {op = "recip"}
// CHECK-NEXT:      tile.binary %[[T]][{{.*}}], %[[S]][{{.*}}] to %[[T]][{{.*}}] sizes [2, 64] {op = "mul", broadcast = "col"}

// -----

// Layer norm: scale and bias rows loaded once, mean and variance per row; tiles of 4 rows, the
// fewest estimated cycles of the heights up to 16 (simulated on tiny: 1,395 cycles; 16: 1,693).
func.func @layer_norm(%x: tensor<2x8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<2x8x32xf32> {
  %y = graph.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<2x8x32xf32>
  func.return %y : tensor<2x8x32xf32>
}
// CHECK-LABEL: func.func @layer_norm
// CHECK:         tile.kernel "graph.layer_norm" {op = "graph.layer_norm", tiles = array<i64: 4, 32>
// CHECK:           tile.copy %{{.*}} to %[[G:[a-z0-9_]+]][{{.*}}] sizes [1, 32]
// CHECK-NEXT:      tile.copy %{{.*}} to %[[BT:[a-z0-9_]+]][{{.*}}] sizes [1, 32]
// CHECK:           tile.reduce {{.*}} {op = "sum"}
// CHECK-NEXT:      tile.binary_imm {{.*}} sizes [4, 1] {op = "div", imm = 3.200000e+01 : f64}
// CHECK-NEXT:      tile.binary {{.*}} {op = "sub", broadcast = "col"}
// CHECK:           tile.binary_imm {{.*}} sizes [4, 1] {op = "add", imm = 1.000000e-05 : f64}
// CHECK-NEXT:      tile.unary {{.*}} sizes [4, 1] {op = "rsqrt"}
// CHECK-NEXT:      tile.binary {{.*}} {op = "mul", broadcast = "col"}
// CHECK-NEXT:      tile.binary {{.*}}, %[[G]][{{.*}}] to {{.*}} {op = "mul", broadcast = "row"}
// CHECK-NEXT:      tile.binary {{.*}}, %[[BT]][{{.*}}] to {{.*}} {op = "add", broadcast = "row"}

// -----

// A residual add feeding a layer norm runs inside the layer norm's kernel (prologue fusion):
// each row tile loads both addends, adds them in SRAM and normalises the sum; the sum never
// goes to DRAM (no dram tile.alloc, one store per tile).
func.func @residual_layer_norm(%x: tensor<2x8x32xf32>, %r: tensor<2x8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<2x8x32xf32> {
  %s = graph.add %x, %r : tensor<2x8x32xf32>, tensor<2x8x32xf32> -> tensor<2x8x32xf32>
  %y = graph.layer_norm %s, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<2x8x32xf32>
  func.return %y : tensor<2x8x32xf32>
}
// CHECK-LABEL: func.func @residual_layer_norm
// CHECK-NOT:     tile.alloc : memref<{{.*}}"dram">
// CHECK:         tile.kernel "graph.layer_norm" {op = "graph.add,graph.layer_norm", tiles = array<i64: 4, 32>
// CHECK-SAME:      the 1 elementwise op(s) producing its input run in SRAM on each row tile
// CHECK:           scf.for
// CHECK-NEXT:        tile.copy %{{.*}} to %[[X:[a-z0-9_]+]][{{.*}}] sizes [4, 32] : memref<16x32xf32, "dram">
// CHECK-NEXT:        tile.copy %{{.*}} to %[[R:[a-z0-9_]+]][{{.*}}] sizes [4, 32] : memref<16x32xf32, "dram">
// CHECK-NEXT:        tile.binary %[[X]][{{.*}}], %[[R]][{{.*}}] to %[[S:[a-z0-9_]+]][{{.*}}] sizes [4, 32] {op = "add"}
// CHECK-NEXT:        tile.reduce %[[S]][{{.*}}] to {{.*}} {op = "sum"}
// CHECK:             tile.copy %[[S]][{{.*}}] to %{{.*}} sizes [4, 32] : memref<4x32xf32, "sram">, memref<16x32xf32, "dram">
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NOT:     tile.kernel

// -----

// A reshape is a view of its input's buffer: no kernel, no copy; the consumer reads the view.
func.func @reshape_view(%x: tensor<2x8x32xf32>) -> tensor<16x32xf32> {
  %r = graph.reshape %x : tensor<2x8x32xf32> -> tensor<16x32xf32>
  %y = graph.relu %r : tensor<16x32xf32>
  func.return %y : tensor<16x32xf32>
}
// CHECK-LABEL: func.func @reshape_view
// CHECK-NEXT:    %[[V:[a-z0-9_]+]] = tile.reshape %x : memref<2x8x32xf32, "dram"> -> memref<16x32xf32, "dram">
// CHECK-NEXT:    tile.kernel "graph.relu"
// CHECK:           tile.copy %[[V]][{{.*}}] to
// CHECK-NOT:     tile.kernel
// CHECK:         func.return

// -----

// Swapping the last two dims reads each output block column-major and writes it with
// tile.transpose.
func.func @transpose(%x: tensor<2x8x16xf32>) -> tensor<2x16x8xf32> {
  %y = graph.transpose %x {perm = array<i64: 0, 2, 1>} : tensor<2x8x16xf32> -> tensor<2x16x8xf32>
  func.return %y : tensor<2x16x8xf32>
}
// CHECK-LABEL: func.func @transpose
// CHECK:         %[[OUT:[a-z0-9_]+]] = tile.reshape %result0 : memref<2x16x8xf32, "dram"> -> memref<32x8xf32, "dram">
// CHECK:         tile.kernel "graph.transpose" {op = "graph.transpose", tiles = array<i64: 16, 8>
// CHECK:           %[[FLAT:[a-z0-9_]+]] = tile.alloc : memref<8x16xf32, "sram">
// CHECK-NEXT:      %[[STAGE:[a-z0-9_]+]] = tile.reshape %[[FLAT]] : memref<8x16xf32, "sram"> -> memref<1x8x16xf32, "sram">
// CHECK-NEXT:      scf.for %[[B:[a-z0-9_]+]] = {{.*}} {
// CHECK-NEXT:        tile.copy %x[%[[B]], {{.*}}] to %[[STAGE]][{{.*}}] sizes [1, 8, 16]
// CHECK-NEXT:        %[[ROW:[a-z0-9_]+]] = arith.muli %[[B]], %{{.*}} : index
// CHECK-NEXT:        tile.transpose %[[FLAT]][{{.*}}] to %[[OUT]][%[[ROW]], %{{.*}}] sizes [8, 16]

// -----

// A head split of K, [1, 16, 4, 16] -> [1, 4, 16, 16] with perm (0, 2, 3, 1): heads and head
// dims stay together and in order, so it is the 2-D transpose [16, 64] -> [64, 16]: one load
// and one tile.transpose (one DMA per input row, of 64 elements) instead of one per row and head.
func.func @transpose_merged(%x: tensor<1x16x4x16xf32>) -> tensor<1x4x16x16xf32> {
  %y = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : tensor<1x16x4x16xf32> -> tensor<1x4x16x16xf32>
  func.return %y : tensor<1x4x16x16xf32>
}
// EDGE-LABEL: func.func @transpose_merged
// EDGE-DAG:     %[[IN:[a-z0-9_]+]] = tile.reshape %x : memref<1x16x4x16xf32, "dram"> -> memref<16x64xf32, "dram">
// EDGE-DAG:     %[[OUT:[a-z0-9_]+]] = tile.reshape %result0 : memref<1x4x16x16xf32, "dram"> -> memref<64x16xf32, "dram">
// EDGE:         tile.kernel "graph.transpose" {op = "graph.transpose", tiles = array<i64: 64, 16>
// EDGE:           tile.copy %[[IN]][{{.*}}] to {{.*}} sizes [16, 64]
// EDGE-NEXT:      tile.transpose {{.*}} to %[[OUT]][{{.*}}] sizes [16, 64]
// EDGE-NOT:       tile.copy

// -----

// Heads back together, [1, 4, 16, 16] -> [1, 16, 4, 16] with perm (0, 2, 1, 3): the last dim stays
// last, so blocks are whole rows over the longest other output dim (16 tokens) per head: one
// DMA in (a head's 16 x 16 slab) and one out (16 rows of 64 bytes, 256 apart) per head.
func.func @transpose_rows(%x: tensor<1x4x16x16xf32>) -> tensor<1x16x4x16xf32> {
  %y = graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x16x16xf32> -> tensor<1x16x4x16xf32>
  func.return %y : tensor<1x16x4x16xf32>
}
// EDGE-LABEL: func.func @transpose_rows
// EDGE:         tile.kernel "graph.transpose" {op = "graph.transpose", tiles = array<i64: 16, 16>
// EDGE:           scf.for %[[H:[a-z0-9_]+]] = {{.*}} {
// EDGE-NEXT:        tile.copy %{{.*}}[%[[H]], %{{.*}}, %{{.*}}] to {{.*}} sizes [1, 16, 16] : memref<4x16x16xf32, "dram">
// EDGE-NEXT:        tile.copy {{.*}} to %{{.*}}[%{{.*}}, %[[H]], %{{.*}}] sizes [16, 1, 16] : {{.*}}, memref<16x4x16xf32, "dram">
// EDGE-NEXT:      }

// -----

// Concat: each input is copied into its slice of the output through one staging buffer.
func.func @concat(%a: tensor<2x3x16xf32>, %b: tensor<2x5x16xf32>) -> tensor<2x8x16xf32> {
  %y = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3x16xf32>, tensor<2x5x16xf32>) -> tensor<2x8x16xf32>
  func.return %y : tensor<2x8x16xf32>
}
// CHECK-LABEL: func.func @concat
// CHECK:         tile.kernel "graph.concat" {op = "graph.concat", tiles = array<i64: 2, 5, 16>
// CHECK-DAG:       %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-DAG:       %[[C3:[a-z0-9_]+]] = arith.constant 3 : index
// CHECK:           tile.copy %a[{{.*}}] to %[[S:[a-z0-9_]+]][{{.*}}] sizes [2, 3, 16]
// CHECK-NEXT:      tile.copy %[[S]][{{.*}}] to %result0[%[[C0]], %[[C0]], %[[C0]]] sizes [2, 3, 16]
// CHECK-NEXT:      tile.copy %b[{{.*}}] to %[[S]][{{.*}}] sizes [2, 5, 16]
// CHECK-NEXT:      tile.copy %[[S]][{{.*}}] to %result0[%[[C0]], %[[C3]], %[[C0]]] sizes [2, 5, 16]

// -----

// Embedding lookup: i64 ids are narrowed to i32 by tile.cast in SRAM, negative ids wrapped,
// then tile.gather fetches the table rows.
func.func @gather(%ids: tensor<2x5xi64>) -> tensor<2x5x8xf32> {
  %t = graph.constant dense<1.000000e+00> : tensor<10x8xf32>
  %e = graph.gather %t, %ids {axis = 0 : i64} : tensor<10x8xf32>, tensor<2x5xi64> -> tensor<2x5x8xf32> loc("/embeddings/Gather")
  func.return %e : tensor<2x5x8xf32>
}
// CHECK-LABEL: func.func @gather
// CHECK-DAG:     %[[IDS:[a-z0-9_]+]] = tile.reshape %ids : memref<2x5xi64, "dram"> -> memref<10x1xi64, "dram">
// CHECK-DAG:     %[[TABLE:[a-z0-9_]+]] = tile.const dense<1.000000e+00> : tensor<10x8xf32>
// CHECK:         tile.kernel "/embeddings/Gather" {op = "graph.gather", tiles = array<i64: 10, 8>
// CHECK:           tile.copy %[[IDS]][{{.*}}] to %[[WIDE:[a-z0-9_]+]][{{.*}}] sizes [10, 1] : memref<10x1xi64, "dram">, memref<10x1xi64, "sram">
// CHECK-NEXT:      tile.cast %[[WIDE]][{{.*}}] to %[[IDX:[a-z0-9_]+]][{{.*}}] sizes [10, 1] : memref<10x1xi64, "sram">, memref<10x1xi32, "sram">
// CHECK-NEXT:      tile.binary_imm %[[IDX]][{{.*}}] to %[[NEG:[a-z0-9_]+]][{{.*}}] sizes [10, 1] {op = "cmp_lt", imm = 0.000000e+00 : f64}
// CHECK-NEXT:      tile.binary_imm %[[NEG]][{{.*}}] to %[[NEG]][{{.*}}] sizes [10, 1] {op = "mul", imm = 1.000000e+01 : f64}
// CHECK-NEXT:      tile.binary %[[IDX]][{{.*}}], %[[NEG]][{{.*}}] to %[[IDX]][{{.*}}] sizes [10, 1] {op = "add"}
// CHECK-NEXT:      tile.gather %[[TABLE]][{{.*}}], %[[IDX]][{{.*}}] to %[[ROWS:[a-z0-9_]+]][{{.*}}] sizes [10, 8]

// -----

// An output that is an input is copied through SRAM into its output buffer.
func.func @output_is_input(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  func.return %x : tensor<4x4xf32>
}
// CHECK-LABEL: func.func @output_is_input
// CHECK-SAME:    (%x: memref<4x4xf32, "dram">, %result0: memref<4x4xf32, "dram"> {tile.output}) {
// CHECK-NEXT:    tile.kernel "copy to output result0" {op = "copy"
// CHECK:           tile.copy %x[{{.*}}] to %[[S:[a-z0-9_]+]][{{.*}}] sizes [4, 4]
// CHECK-NEXT:      tile.copy %[[S]][{{.*}}] to %result0[{{.*}}] sizes [4, 4]

// -----

// A softmax row that does not fit half of tiny's SRAM: the diagnostic names the node, the
// bytes needed and available, and a fix.
func.func @too_wide(%x: tensor<2x4096xf32>) -> tensor<2x4096xf32> {
  %y = graph.softmax %x {axis = -1 : i64} : tensor<2x4096xf32> loc("/head/Softmax")
  func.return %y : tensor<2x4096xf32>
}
// CHECK: convert-graph-to-tile: '/head/Softmax' (graph.softmax): a whole row of 4096 elements (with its working copies) needs 16.0 KiB of SRAM per tile, but target 'tiny' allows 8.0 KiB (half of its 16.0 KiB SRAM; the other half is kept for double buffering). Fix: use a target with >= 33 KiB SRAM, or make the tensor smaller
// EDGE-LABEL: func.func @too_wide
// EDGE:         tile.kernel "/head/Softmax" {op = "graph.softmax", tiles = array<i64: 1, 4096>

// -----

// Ops that cannot be lowered yet are all listed at once, with their nodes and what is missing.
func.func @unsupported(%x: tensor<4x8xf32>) -> (tensor<4xi64>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %a = graph.argmax %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xi64> loc("/ArgMax")
  %s = graph.sin %x : tensor<4x8xf32> loc("/Sin")
  %p = graph.softmax %x {axis = 0 : i64} : tensor<4x8xf32> loc("/Softmax")
  func.return %a, %s, %p : tensor<4xi64>, tensor<4x8xf32>, tensor<4x8xf32>
}
// CHECK:      convert-graph-to-tile: 3 op(s) cannot be lowered for target 'tiny':
// CHECK-NEXT:   graph.argmax '/ArgMax': the vector engine has no arg-reduction
// CHECK-NEXT:   graph.sin '/Sin': no tile lowering for graph.sin: the vector engine has no such function
// CHECK-NEXT:   graph.softmax '/Softmax': graph.softmax over axis 0, not the last one: transpose it to the last axis first
// CHECK:        | cannot lower to tile: the vector engine has no arg-reduction

// -----

// A residual connection: the add is the matmul's only use and adds a tensor of its shape, and
// the cost model expects fusing it to pay, so it joins the matmul's kernel (named after the
// add): each block loads its residual window after its first tiles, and each output tile adds
// its part before its store; the matmul's result never goes to DRAM.
func.func @matmul_residual(%x: tensor<8x8xf32> {graph.name = "x"}, %w: tensor<8x4xf32> {graph.name = "w"}, %r: tensor<8x4xf32> {graph.name = "r"}) -> (tensor<8x4xf32> {graph.name = "y"}) {
  %m = graph.matmul %x, %w : tensor<8x8xf32>, tensor<8x4xf32> -> tensor<8x4xf32> loc("/fc/MatMul")
  %y = graph.add %m, %r : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32> loc("/residual/Add")
  func.return %y : tensor<8x4xf32>
}
// CHECK-LABEL: func.func @matmul_residual
// CHECK-NOT:     tile.alloc {{.*}}"dram"
// CHECK:         tile.kernel "/residual/Add" {op = "graph.matmul,graph.add", {{.*}}reason = "{{.*}}; the residual add is fused (est. {{[0-9]+}} cycles against {{[0-9]+}} for the matmul and the add apart): each block loads its residual window, each tile adds its part", est_fill_drain = array<i64: {{[0-9]+, [0-9]+, [0-9]+, [0-9]+}}>}
// CHECK:           tile.copy %x[{{.*}}] to {{.*}} sizes [[[M:[0-9]+]], {{[0-9]+}}]
// CHECK:           tile.copy %r[{{.*}}] to %[[R:[0-9]+]][{{.*}}] sizes [[[M]], 4]
// CHECK:           tile.acc_read %{{[0-9]+}}[{{.*}}] to %[[T:[0-9]+]][{{.*}}] sizes [[[M]], 4]
// CHECK:           tile.binary %[[T]][{{.*}}], %[[R]][{{.*}}] to %[[T]][{{.*}}] sizes [[[M]], 4] {op = "add"}
// CHECK-NEXT:      tile.copy %[[T]][{{.*}}] to %y[{{.*}}] sizes [[[M]], 4]
// CHECK-NOT:     tile.kernel

// -----

// A block summed in SRAM with one column group: its K steps take turns on two ACC tiles, so
// the matrix engine starts the last step while the vector engine reads the first one's sum.
func.func @matmul_steps_alternate(%x: tensor<16x64xf32> {graph.name = "x"}, %w: tensor<64x4xf32> {graph.name = "w"}) -> (tensor<16x4xf32> {graph.name = "y"}) {
  %y = graph.matmul %x, %w : tensor<16x64xf32>, tensor<64x4xf32> -> tensor<16x4xf32>
  func.return %y : tensor<16x4xf32>
}
// CHECK-LABEL: func.func @matmul_steps_alternate
// CHECK:         tile.kernel "graph.matmul" {op = "graph.matmul", tiles = array<i64: [[M:[0-9]+]], {{[0-9]+}}, 4>, block = array<i64: [[M]], 4>
// CHECK:           tile.matmul %{{[0-9]+}}[{{.*}}], %{{[0-9]+}}[{{.*}}] to %[[FIRST:[0-9]+]][{{.*}}] sizes [[[M]], 4, 4] :
// CHECK:           tile.acc_read %[[FIRST]][{{.*}}] to %[[C:[0-9]+]]
// CHECK:           tile.matmul %{{[0-9]+}}[{{.*}}], %{{[0-9]+}}[{{.*}}] to %[[LAST:[0-9]+]][{{.*}}] sizes [[[M]], 4, 4] :
// CHECK-NOT:       %[[FIRST]]
// CHECK:           tile.binary %[[LAST]][{{.*}}], %[[C]][{{.*}}] to %[[C]]

// -----

// A strided slice: a dim of 8 read every 2nd element is viewed [4, 2] (the step divides it), so
// the 4 elements read are a unit-step range of the first dim at one index of the second and the
// box is copied whole (one DMA per row of 16 channels, 2 x 16 apart), not element by element.
func.func @slice_every_second(%x: tensor<1x8x8x16xf32>) -> tensor<1x4x4x16xf32> {
  %y = graph.slice %x {starts = array<i64: 0, 1, 0, 0>, steps = array<i64: 1, 2, 2, 1>} : tensor<1x8x8x16xf32> -> tensor<1x4x4x16xf32>
  func.return %y : tensor<1x4x4x16xf32>
}
// EDGE-LABEL:  func.func @slice_every_second
// EDGE:          %[[SRC:[0-9]+]] = tile.reshape %{{.*}} : memref<1x8x8x16xf32, "dram"> -> memref<1x4x2x4x2x16xf32, "dram">
// EDGE:          %[[DST:[0-9]+]] = tile.reshape %{{.*}} : memref<1x4x4x16xf32, "dram"> -> memref<1x4x1x4x1x16xf32, "dram">
// EDGE:          tile.kernel {{.*}}reason = "strided dims viewed [n / step, step] and tiled where the step divides them, else looped"
// EDGE-NOT:        scf.for
// EDGE:            tile.copy %[[SRC]][%{{.*}}, %{{.*}}, %[[ONE:[a-z0-9_]+]], %{{.*}}, %{{.*}}, %{{.*}}] to %{{.*}} sizes [1, 4, 1, 4, 1, 16]
// EDGE-NEXT:       tile.copy {{.*}} to %[[DST]]{{.*}} sizes [1, 4, 1, 4, 1, 16]
