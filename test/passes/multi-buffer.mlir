// RUN: aitc-opt %s --split-input-file -p "multi-buffer{target=tiny}" | filecheck %s
// RUN: aitc-opt %s --split-input-file -p "multi-buffer{depth=3 target=tiny}" | filecheck %s --check-prefix=D3
// RUN: aitc-opt %s --split-input-file -p "multi-buffer{depth=1}" | filecheck %s --check-prefix=D1
// RUN: aitc-opt %s --split-input-file -p "multi-buffer{target=tiny},multi-buffer" | filecheck %s --check-prefix=TWICE

// Trip count 7, depth 2: one extra copy of the loaded tile %a and of the output tile %b (written
// by the vector engine, stored by DMA), the loop unrolled by 2 (step 8 -> 16, copy 1 on %a_1 and
// %b_1 at %i + 8) over 6 iterations, the 7th as an epilogue at the constant index 48.
// Depth 3: two extra buffers, step 24 over 6 iterations, epilogue at 48.
// Depth 1 changes nothing; a second run leaves the already multi-buffered loop alone.
func.func @trip7(%x: memref<56x16xf32, "dram"> {graph.name = "x"}, %y: memref<56x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c56 = arith.constant 56 : index
  tile.kernel "relu" {
    %a = tile.alloc : memref<8x16xf32, "sram">
    %b = tile.alloc : memref<8x16xf32, "sram">
    scf.for %i = %c0 to %c56 step %c8 {
      tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [8, 16] : memref<56x16xf32, "dram">, memref<8x16xf32, "sram">
      tile.binary_imm %a[%c0, %c0] to %b[%c0, %c0] sizes [8, 16] {op = "max", imm = 0.0 : f64} : memref<8x16xf32, "sram">, memref<8x16xf32, "sram">
      tile.copy %b[%c0, %c0] to %y[%i, %c0] sizes [8, 16] : memref<8x16xf32, "sram">, memref<56x16xf32, "dram">
    }
  }
  func.return
}
// CHECK-LABEL: func.func @trip7
// CHECK:         tile.kernel "relu" {buffer_depth = 2 : i64} {
// CHECK-NEXT:      %a = tile.alloc : memref<8x16xf32, "sram">
// CHECK-NEXT:      %a_1 = tile.alloc : memref<8x16xf32, "sram">
// CHECK-NEXT:      %b = tile.alloc : memref<8x16xf32, "sram">
// CHECK-NEXT:      %b_1 = tile.alloc : memref<8x16xf32, "sram">
// CHECK-NEXT:      %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT:      %[[UB:.*]] = arith.constant 48 : index
// CHECK-NEXT:      %[[STEP:.*]] = arith.constant 16 : index
// CHECK-NEXT:      scf.for %i = %c0 to %[[UB]] step %[[STEP]] {
// CHECK-NEXT:        tile.copy %x[%i, %c0] to %a[%c0, %c0]
// CHECK-NEXT:        tile.binary_imm %a[%c0, %c0] to %b[%c0, %c0]
// CHECK-NEXT:        tile.copy %b[%c0, %c0] to %y[%i, %c0]
// CHECK-NEXT:        %[[I1:.*]] = arith.addi %i, %[[C8]] : index
// CHECK-NEXT:        tile.copy %x[%[[I1]], %c0] to %a_1[%c0, %c0]
// CHECK-NEXT:        tile.binary_imm %a_1[%c0, %c0] to %b_1[%c0, %c0]
// CHECK-NEXT:        tile.copy %b_1[%c0, %c0] to %y[%[[I1]], %c0]
// CHECK-NEXT:      } {buffer_depth = 2 : i64, buffer_depth_reason = "depth 2: 2 x 1 KiB of SRAM"}
// CHECK-NEXT:      %[[LAST:.*]] = arith.constant 48 : index
// CHECK-NEXT:      tile.copy %x[%[[LAST]], %c0] to %a[%c0, %c0]
// CHECK-NEXT:      tile.binary_imm %a[%c0, %c0] to %b[%c0, %c0]
// CHECK-NEXT:      tile.copy %b[%c0, %c0] to %y[%[[LAST]], %c0]
// CHECK-NEXT:    }

// D3-LABEL: func.func @trip7
// D3:         %a = tile.alloc
// D3-NEXT:    %a_1 = tile.alloc
// D3-NEXT:    %a_2 = tile.alloc
// D3:         arith.constant 48 : index
// D3-NEXT:    %[[STEP:.*]] = arith.constant 24 : index
// D3-NEXT:    scf.for %i = %c0 to %{{.*}} step %[[STEP]] {
// D3:           tile.copy %x[%{{.*}}, %c0] to %a_2[%c0, %c0]
// D3:         } {buffer_depth = 3 : i64, buffer_depth_reason = "depth 3: 3 x 1 KiB of SRAM"}
// D3-NEXT:    %[[LAST:.*]] = arith.constant 48 : index
// D3-NEXT:    tile.copy %x[%[[LAST]], %c0] to %a[%c0, %c0]

// D1-LABEL: func.func @trip7
// D1:         tile.kernel "relu" {
// D1-NEXT:      %a = tile.alloc
// D1-NEXT:      %b = tile.alloc
// D1-NEXT:      scf.for %i = %c0 to %c56 step %c8 {

// TWICE-LABEL: func.func @trip7
// TWICE:         %a_1 = tile.alloc
// TWICE-NOT:     %a_2 = tile.alloc
// TWICE:         scf.for
// TWICE-NOT:     scf.for
// TWICE:         } {buffer_depth = 2 : i64

// -----

// Depth 3 on a loop of 2 iterations: the depth shrinks to the trip count; no epilogue.
func.func @trip2(%x: memref<16x16xf32, "dram"> {graph.name = "x"}, %y: memref<16x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  tile.kernel "relu" {
    %a = tile.alloc : memref<8x16xf32, "sram">
    %b = tile.alloc : memref<8x16xf32, "sram">
    scf.for %i = %c0 to %c16 step %c8 {
      tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [8, 16] : memref<16x16xf32, "dram">, memref<8x16xf32, "sram">
      tile.binary_imm %a[%c0, %c0] to %b[%c0, %c0] sizes [8, 16] {op = "max", imm = 0.0 : f64} : memref<8x16xf32, "sram">, memref<8x16xf32, "sram">
      tile.copy %b[%c0, %c0] to %y[%i, %c0] sizes [8, 16] : memref<8x16xf32, "sram">, memref<16x16xf32, "dram">
    }
  }
  func.return
}
// D3-LABEL: func.func @trip2
// D3:         %a_1 = tile.alloc
// D3-NOT:     %a_2 = tile.alloc
// D3:         } {buffer_depth = 2 : i64, buffer_depth_reason = "depth 2: 2 x 1 KiB of SRAM (trip count 2)"}
// D3-NEXT:  }
// D3-NEXT:  func.return

// -----

// A single iteration leaves nothing to overlap: the loop stays, with the reason recorded.
func.func @trip1(%x: memref<8x16xf32, "dram"> {graph.name = "x"}, %y: memref<8x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  tile.kernel "relu" {
    %a = tile.alloc : memref<8x16xf32, "sram">
    scf.for %i = %c0 to %c8 step %c8 {
      tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [8, 16] : memref<8x16xf32, "dram">, memref<8x16xf32, "sram">
      tile.copy %a[%c0, %c0] to %y[%i, %c0] sizes [8, 16] : memref<8x16xf32, "sram">, memref<8x16xf32, "dram">
    }
  }
  func.return
}
// CHECK-LABEL: func.func @trip1
// CHECK:         tile.kernel "relu" {buffer_depth = 1 : i64} {
// CHECK-NEXT:      %a = tile.alloc
// CHECK-NEXT:      scf.for %i = %c0 to %c8 step %c8 {
// CHECK:           } {buffer_depth = 1 : i64, buffer_depth_reason = "depth 1: trip count 1, nothing to overlap"}

// -----

// Negative: bounds that are not arith.constant (here computed) cannot be unrolled statically.
func.func @dynamic_bounds(%x: memref<16x16xf32, "dram"> {graph.name = "x"}, %y: memref<16x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %ub = arith.addi %c8, %c8 : index
  %a = tile.alloc : memref<8x16xf32, "sram">
  scf.for %i = %c0 to %ub step %c8 {
    tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [8, 16] : memref<16x16xf32, "dram">, memref<8x16xf32, "sram">
    tile.copy %a[%c0, %c0] to %y[%i, %c0] sizes [8, 16] : memref<8x16xf32, "sram">, memref<16x16xf32, "dram">
  }
  func.return
}
// CHECK-LABEL: func.func @dynamic_bounds
// CHECK-NOT:     %a_1
// CHECK:         scf.for %i = %c0 to %ub step %c8 {
// CHECK:         } {buffer_depth = 1 : i64, buffer_depth_reason = "depth 1: bounds or step not constant (index); unrolling needs a known trip count"}

// -----

// Negative: the load writes only half of %a but the store reads all of it, so the other half
// carries over between iterations; rotating buffers would change what is read.
func.func @partial_load(%x: memref<32x16xf32, "dram"> {graph.name = "x"}, %y: memref<64x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %a = tile.alloc : memref<8x16xf32, "sram">
  scf.for %i = %c0 to %c32 step %c4 {
    tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [4, 16] : memref<32x16xf32, "dram">, memref<8x16xf32, "sram">
    %r = arith.muli %i, %c4 : index
    tile.copy %a[%c0, %c0] to %y[%i, %c0] sizes [8, 16] : memref<8x16xf32, "sram">, memref<64x16xf32, "dram">
  }
  func.return
}
// CHECK-LABEL: func.func @partial_load
// CHECK-NOT:     %a_1
// CHECK:         } {buffer_depth = 1 : i64, buffer_depth_reason = "depth 1: %a is read before the loop body rewrites all of it"}

// -----

// A load that writes part of %a rotates when the iteration reads only what it wrote (a
// remainder tile in a buffer sized for full tiles).
func.func @partial_load_read_within(%x: memref<32x16xf32, "dram"> {graph.name = "x"}, %y: memref<32x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %a = tile.alloc : memref<8x16xf32, "sram">
  scf.for %i = %c0 to %c32 step %c4 {
    tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [4, 16] : memref<32x16xf32, "dram">, memref<8x16xf32, "sram">
    tile.copy %a[%c0, %c0] to %y[%i, %c0] sizes [4, 16] : memref<8x16xf32, "sram">, memref<32x16xf32, "dram">
  }
  func.return
}
// CHECK-LABEL: func.func @partial_load_read_within
// CHECK:         %a_1 = tile.alloc
// CHECK:         tile.copy %x[%{{.*}}, %c0] to %a_1[%c0, %c0] sizes [4, 16]
// CHECK:         } {buffer_depth = 2 : i64, buffer_depth_reason = "depth 2: 2 x 512 B of SRAM"}

// -----

// Negative: %a is read after the loop (its last tile), so which copy holds it would depend on
// the trip count.
func.func @read_after_loop(%x: memref<32x16xf32, "dram"> {graph.name = "x"}, %y: memref<32x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %a = tile.alloc : memref<8x16xf32, "sram">
  scf.for %i = %c0 to %c32 step %c8 {
    tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [8, 16] : memref<32x16xf32, "dram">, memref<8x16xf32, "sram">
  }
  tile.copy %a[%c0, %c0] to %y[%c0, %c0] sizes [8, 16] : memref<8x16xf32, "sram">, memref<32x16xf32, "dram">
  func.return
}
// CHECK-LABEL: func.func @read_after_loop
// CHECK-NOT:     %a_1
// CHECK:         } {buffer_depth = 1 : i64, buffer_depth_reason = "depth 1: %a is used outside the loop"}

// -----

// A peeled first iteration before the loop and a remainder tile after it use %a too: each
// writes %a before reading it, so %a rotates; the peel takes copy 1 (as iteration -1 would)
// and the remainder after 3 iterations copy 3 mod 2 = 1, so their loads need not wait for
// the loop's reads of %a.
func.func @peel_and_remainder(%x: memref<44x16xf32, "dram"> {graph.name = "x"}, %y: memref<44x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c40 = arith.constant 40 : index
  tile.kernel "neg" {
    %a = tile.alloc : memref<8x16xf32, "sram">
    %b = tile.alloc : memref<8x16xf32, "sram">
    tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [8, 16] : memref<44x16xf32, "dram">, memref<8x16xf32, "sram">
    tile.unary %a[%c0, %c0] to %b[%c0, %c0] sizes [8, 16] {op = "neg"} : memref<8x16xf32, "sram">, memref<8x16xf32, "sram">
    tile.copy %b[%c0, %c0] to %y[%c0, %c0] sizes [8, 16] : memref<8x16xf32, "sram">, memref<44x16xf32, "dram">
    scf.for %i = %c8 to %c32 step %c8 {
      tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [8, 16] : memref<44x16xf32, "dram">, memref<8x16xf32, "sram">
      tile.unary %a[%c0, %c0] to %b[%c0, %c0] sizes [8, 16] {op = "neg"} : memref<8x16xf32, "sram">, memref<8x16xf32, "sram">
      tile.copy %b[%c0, %c0] to %y[%i, %c0] sizes [8, 16] : memref<8x16xf32, "sram">, memref<44x16xf32, "dram">
    }
    tile.copy %x[%c32, %c0] to %a[%c0, %c0] sizes [4, 16] : memref<44x16xf32, "dram">, memref<8x16xf32, "sram">
    tile.unary %a[%c0, %c0] to %b[%c0, %c0] sizes [4, 16] {op = "neg"} : memref<8x16xf32, "sram">, memref<8x16xf32, "sram">
    tile.copy %b[%c0, %c0] to %y[%c32, %c0] sizes [4, 16] : memref<8x16xf32, "sram">, memref<44x16xf32, "dram">
  }
  func.return
}
// CHECK-LABEL: func.func @peel_and_remainder
// CHECK:         tile.copy %x[%c0, %c0] to %a_1[%c0, %c0] sizes [8, 16]
// CHECK-NEXT:    tile.unary %a_1[%c0, %c0] to %b_1[%c0, %c0]
// CHECK-NEXT:    tile.copy %b_1[%c0, %c0] to %y[%c0, %c0]
// CHECK:         scf.for %i = %c8 to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      tile.copy %x[%i, %c0] to %a[%c0, %c0]
// CHECK:         } {buffer_depth = 2 : i64, buffer_depth_reason = "depth 2: 2 x 1 KiB of SRAM"}
// CHECK-NEXT:    %[[LAST:.*]] = arith.constant 24 : index
// CHECK-NEXT:    tile.copy %x[%[[LAST]], %c0] to %a[%c0, %c0]
// CHECK:         tile.copy %x[%c32, %c0] to %a_1[%c0, %c0] sizes [4, 16]
// CHECK-NEXT:    tile.unary %a_1[%c0, %c0] to %b_1[%c0, %c0] sizes [4, 16]

// -----

// Negative: inside an outer loop, %a is read at the start of the next outer iteration before
// anything rewrites it, i.e. it reads what the inner loop's last iteration loaded.
func.func @read_next_outer_iteration(%x: memref<16x16xf32, "dram"> {graph.name = "x"}, %y: memref<16x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  tile.kernel "carry" {
    %a = tile.alloc : memref<4x16xf32, "sram">
    tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 16] : memref<16x16xf32, "dram">, memref<4x16xf32, "sram">
    scf.for %j = %c0 to %c16 step %c8 {
      tile.copy %a[%c0, %c0] to %y[%j, %c0] sizes [4, 16] : memref<4x16xf32, "sram">, memref<16x16xf32, "dram">
      scf.for %i = %c0 to %c8 step %c4 {
        tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [4, 16] : memref<16x16xf32, "dram">, memref<4x16xf32, "sram">
        %r = arith.addi %i, %c4 : index
        tile.copy %a[%c0, %c0] to %y[%r, %c0] sizes [4, 16] : memref<4x16xf32, "sram">, memref<16x16xf32, "dram">
      }
    }
  }
  func.return
}
// CHECK-LABEL: func.func @read_next_outer_iteration
// CHECK-NOT:     %a_1
// CHECK:         } {buffer_depth = 1 : i64, buffer_depth_reason = "depth 1: %a is used outside the loop"}

// -----

// An accumulator tile written by the matrix engine and read by the vector engine rotates in a
// loop without loads, so the next matmul need not wait for the acc_read of the previous one;
// the output tile (vector -> DMA) rotates too. An accumulator summed across iterations does
// not (see @matmul_k_loop).
func.func @acc_tiles(%y: memref<8x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  tile.kernel "fc" {
    %lhs = tile.alloc : memref<8x4xf32, "sram">
    %rhs = tile.alloc : memref<4x16xf32, "sram">
    %acc = tile.alloc : memref<8x4xf32, "acc">
    %out = tile.alloc : memref<8x4xf32, "sram">
    scf.for %j = %c0 to %c16 step %c4 {
      tile.matmul %lhs[%c0, %c0], %rhs[%c0, %j] to %acc[%c0, %c0] sizes [8, 4, 4] : memref<8x4xf32, "sram">, memref<4x16xf32, "sram">, memref<8x4xf32, "acc">
      tile.acc_read %acc[%c0, %c0] to %out[%c0, %c0] sizes [8, 4] : memref<8x4xf32, "acc">, memref<8x4xf32, "sram">
      tile.copy %out[%c0, %c0] to %y[%c0, %j] sizes [8, 4] : memref<8x4xf32, "sram">, memref<8x16xf32, "dram">
    }
  }
  func.return
}
// CHECK-LABEL: func.func @acc_tiles
// CHECK:         tile.kernel "fc" {buffer_depth = 2 : i64} {
// CHECK:           %acc_1 = tile.alloc : memref<8x4xf32, "acc">
// CHECK:           %out_1 = tile.alloc : memref<8x4xf32, "sram">
// CHECK:             tile.matmul %lhs[%c0, %c0], %rhs[%c0, %{{.*}}] to %acc_1[%c0, %c0]
// CHECK-NEXT:        tile.acc_read %acc_1[%c0, %c0] to %out_1[%c0, %c0]
// CHECK:           } {buffer_depth = 2 : i64, buffer_depth_reason = "depth 2: 2 x 128 B of SRAM + 2 x 128 B of ACC"}

// -----

// An accumulator filled column block by column block in an inner loop (a conv's or GEMM's
// positions): each block's first matmul writes it, the next ones accumulate at the same %n,
// so an iteration of the outer loop reads nothing of it that it did not write: it rotates,
// and the next output tile's matmuls need not wait for the previous acc_read. Negative: a
// read wider than the write at the same index may see bytes from before
// (@acc_blocks_wider_read: at %n = 0 the accumulating matmul reads columns 4 .. 7 first).
func.func @acc_blocks(%y: memref<32x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  tile.kernel "fc" {
    %lhs = tile.alloc : memref<8x8xf32, "sram">
    %rhs = tile.alloc : memref<8x16xf32, "sram">
    %acc = tile.alloc : memref<8x16xf32, "acc">
    %out = tile.alloc : memref<8x16xf32, "sram">
    scf.for %m = %c0 to %c32 step %c8 {
      scf.for %n = %c0 to %c16 step %c4 {
        tile.matmul %lhs[%c0, %c0], %rhs[%c0, %n] to %acc[%c0, %n] sizes [8, 4, 4] : memref<8x8xf32, "sram">, memref<8x16xf32, "sram">, memref<8x16xf32, "acc">
        tile.matmul %lhs[%c0, %c4], %rhs[%c4, %n] to %acc[%c0, %n] sizes [8, 4, 4] {accumulate} : memref<8x8xf32, "sram">, memref<8x16xf32, "sram">, memref<8x16xf32, "acc">
      }
      tile.acc_read %acc[%c0, %c0] to %out[%c0, %c0] sizes [8, 16] : memref<8x16xf32, "acc">, memref<8x16xf32, "sram">
      tile.copy %out[%c0, %c0] to %y[%m, %c0] sizes [8, 16] : memref<8x16xf32, "sram">, memref<32x16xf32, "dram">
    }
  }
  func.return
}
// CHECK-LABEL: func.func @acc_blocks
// CHECK:           %acc_1 = tile.alloc : memref<8x16xf32, "acc">
// CHECK:               tile.matmul %lhs[%c0, %c0], %rhs[%c0, %{{.*}}] to %acc_1[%c0, %{{.*}}]
// CHECK:             tile.acc_read %acc_1[%c0, %c0] to %out_1[%c0, %c0]
// CHECK:           } {buffer_depth = 2 : i64, buffer_depth_reason = "depth 2: 2 x 512 B of SRAM + 2 x 512 B of ACC"}

// -----

func.func @acc_blocks_wider_read(%y: memref<32x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  tile.kernel "fc" {
    %lhs = tile.alloc : memref<8x8xf32, "sram">
    %rhs = tile.alloc : memref<8x16xf32, "sram">
    %acc = tile.alloc : memref<8x16xf32, "acc">
    %out = tile.alloc : memref<8x16xf32, "sram">
    scf.for %m = %c0 to %c32 step %c8 {
      scf.for %n = %c0 to %c8 step %c4 {
        tile.matmul %lhs[%c0, %c0], %rhs[%c0, %n] to %acc[%c0, %n] sizes [8, 4, 4] : memref<8x8xf32, "sram">, memref<8x16xf32, "sram">, memref<8x16xf32, "acc">
        tile.matmul %lhs[%c0, %c4], %rhs[%c4, %n] to %acc[%c0, %n] sizes [8, 4, 8] {accumulate} : memref<8x8xf32, "sram">, memref<8x16xf32, "sram">, memref<8x16xf32, "acc">
      }
      tile.acc_read %acc[%c0, %c0] to %out[%c0, %c0] sizes [8, 16] : memref<8x16xf32, "acc">, memref<8x16xf32, "sram">
      tile.copy %out[%c0, %c0] to %y[%m, %c0] sizes [8, 16] : memref<8x16xf32, "sram">, memref<32x16xf32, "dram">
    }
  }
  func.return
}
// CHECK-LABEL: func.func @acc_blocks_wider_read
// CHECK-NOT:       %acc_1
// CHECK:           } {buffer_depth = 2 : i64, buffer_depth_reason = "depth 2: 2 x 512 B of SRAM"}

// -----

// Negative: a loop that loads nothing from DRAM is not a pipelining candidate: no attribute.
func.func @no_loads(%y: memref<32x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %a = tile.alloc : memref<8x16xf32, "sram">
  scf.for %i = %c0 to %c32 step %c8 {
    tile.copy %a[%c0, %c0] to %y[%i, %c0] sizes [8, 16] : memref<8x16xf32, "sram">, memref<32x16xf32, "dram">
  }
  func.return
}
// CHECK-LABEL: func.func @no_loads
// CHECK:         scf.for %i = %c0 to %c32 step %c8 {
// CHECK-NEXT:      tile.copy
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// -----

// Negative: a loop that carries values (iter_args) is left as it is.
func.func @carried(%x: memref<32x16xf32, "dram"> {graph.name = "x"}, %y: memref<32x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %a = tile.alloc : memref<8x16xf32, "sram">
  %r = scf.for %i = %c0 to %c32 step %c8 iter_args(%row = %c0) -> (index) {
    tile.copy %x[%row, %c0] to %a[%c0, %c0] sizes [8, 16] : memref<32x16xf32, "dram">, memref<8x16xf32, "sram">
    tile.copy %a[%c0, %c0] to %y[%row, %c0] sizes [8, 16] : memref<8x16xf32, "sram">, memref<32x16xf32, "dram">
    %next = arith.addi %row, %c8 : index
    scf.yield %next : index
  }
  func.return
}
// CHECK-LABEL: func.func @carried
// CHECK-NOT:     %a_1
// CHECK:         } {buffer_depth = 1 : i64, buffer_depth_reason = "depth 1: loop-carried values; unrolling needs a known trip count"}

// -----

// SRAM budget: 8 KiB loaded + 8 KiB stored fill the tiny target's 16 KiB; a second 8 KiB copy
// does not fit, so the loop keeps depth 1 and says why.
func.func @sram_budget(%x: memref<64x128xf32, "dram"> {graph.name = "x"}, %y: memref<64x128xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  tile.kernel "big" {
    %a = tile.alloc : memref<16x128xf32, "sram">
    %b = tile.alloc : memref<16x128xf32, "sram">
    scf.for %i = %c0 to %c64 step %c16 {
      tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [16, 128] : memref<64x128xf32, "dram">, memref<16x128xf32, "sram">
      tile.unary %a[%c0, %c0] to %b[%c0, %c0] sizes [16, 128] {op = "exp"} : memref<16x128xf32, "sram">, memref<16x128xf32, "sram">
      tile.copy %b[%c0, %c0] to %y[%i, %c0] sizes [16, 128] : memref<16x128xf32, "sram">, memref<64x128xf32, "dram">
    }
  }
  func.return
}
// CHECK-LABEL: func.func @sram_budget
// CHECK:         tile.kernel "big" {buffer_depth = 1 : i64} {
// CHECK-NOT:       %a_1
// CHECK:           } {buffer_depth = 1 : i64, buffer_depth_reason = "depth 1: SRAM budget: depth 2 needs 24 KiB of 16 KiB"}

// -----

// SRAM budget with depth 3: 4 + 4 + 4 KiB in use, a third copy of %a would need 20 KiB of 16,
// so the depth falls back to 2.
func.func @budget_shrinks(%x: memref<32x128xf32, "dram"> {graph.name = "x"}, %y: memref<32x128xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  tile.kernel "mid" {
    %a = tile.alloc : memref<8x128xf32, "sram">
    %b = tile.alloc : memref<8x128xf32, "sram">
    %t = tile.alloc : memref<8x128xf32, "sram">
    scf.for %i = %c0 to %c32 step %c8 {
      tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [8, 128] : memref<32x128xf32, "dram">, memref<8x128xf32, "sram">
      tile.unary %a[%c0, %c0] to %t[%c0, %c0] sizes [8, 128] {op = "exp"} : memref<8x128xf32, "sram">, memref<8x128xf32, "sram">
      tile.unary %t[%c0, %c0] to %b[%c0, %c0] sizes [8, 128] {op = "neg"} : memref<8x128xf32, "sram">, memref<8x128xf32, "sram">
      tile.copy %b[%c0, %c0] to %y[%i, %c0] sizes [8, 128] : memref<8x128xf32, "sram">, memref<32x128xf32, "dram">
    }
  }
  func.return
}
// D3-LABEL: func.func @budget_shrinks
// D3:         %a_1 = tile.alloc
// D3-NOT:     %a_2 = tile.alloc
// D3:         } {buffer_depth = 2 : i64, buffer_depth_reason = "depth 2: 2 x 4 KiB of SRAM (SRAM budget: depth 3 needs 20 KiB of 16 KiB)"}

// -----

// Nested loops, innermost first: the inner loop rotates the x tile %a and the output tile %b;
// then the outer loop rotates the bias row %w it loads once per column block, and (while
// SRAM holds them) the inner loop's tiles as whole families, so the inner loop of the next
// column block does not wait for all of the previous one: 4 copies of %a and %b. The kernel
// records the largest depth.
func.func @nested(%x: memref<16x16xf32, "dram"> {graph.name = "x"}, %bias: memref<1x16xf32, "dram"> {graph.name = "bias"}, %y: memref<16x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  tile.kernel "add" {
    %w = tile.alloc : memref<1x8xf32, "sram">
    %a = tile.alloc : memref<4x8xf32, "sram">
    %b = tile.alloc : memref<4x8xf32, "sram">
    scf.for %j = %c0 to %c16 step %c8 {
      tile.copy %bias[%c0, %j] to %w[%c0, %c0] sizes [1, 8] : memref<1x16xf32, "dram">, memref<1x8xf32, "sram">
      scf.for %i = %c0 to %c16 step %c4 {
        tile.copy %x[%i, %j] to %a[%c0, %c0] sizes [4, 8] : memref<16x16xf32, "dram">, memref<4x8xf32, "sram">
        tile.binary %a[%c0, %c0], %w[%c0, %c0] to %b[%c0, %c0] sizes [4, 8] {op = "add", broadcast = "row"} : memref<4x8xf32, "sram">, memref<1x8xf32, "sram">, memref<4x8xf32, "sram">
        tile.copy %b[%c0, %c0] to %y[%i, %j] sizes [4, 8] : memref<4x8xf32, "sram">, memref<16x16xf32, "dram">
      }
    }
  }
  func.return
}
// CHECK-LABEL: func.func @nested
// CHECK:         tile.kernel "add" {buffer_depth = 2 : i64} {
// CHECK-NEXT:      %w = tile.alloc
// CHECK-NEXT:      %w_1 = tile.alloc
// CHECK-NEXT:      %a = tile.alloc
// CHECK-NEXT:      %a_1 = tile.alloc
// CHECK-NEXT:      %a_2 = tile.alloc
// CHECK-NEXT:      %a_3 = tile.alloc
// CHECK:           scf.for %j = %c0 to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        tile.copy %bias[%c0, %j] to %w[%c0, %c0]
// CHECK:             scf.for %i = %c0 to %{{.*}} step %{{.*}} {
// CHECK:               tile.binary %a[%c0, %c0], %w[%c0, %c0] to %b[%c0, %c0]
// CHECK:               tile.binary %a_2[%c0, %c0], %w[%c0, %c0] to %b_2[%c0, %c0]
// CHECK:             } {buffer_depth = 2 : i64, buffer_depth_reason = "depth 2: 2 x 256 B of SRAM"}
// CHECK-NEXT:        %[[J1:.*]] = arith.addi %j, %{{.*}} : index
// CHECK-NEXT:        tile.copy %bias[%c0, %[[J1]]] to %w_1[%c0, %c0]
// CHECK:             scf.for %{{.*}} = %c0 to %{{.*}} step %{{.*}} {
// CHECK:               tile.binary %a_1[%c0, %c0], %w_1[%c0, %c0] to %b_1[%c0, %c0]
// CHECK:               tile.binary %a_3[%c0, %c0], %w_1[%c0, %c0] to %b_3[%c0, %c0]
// CHECK:             } {buffer_depth = 2 : i64, buffer_depth_reason = "depth 2: 2 x 256 B of SRAM"}
// CHECK-NEXT:      } {buffer_depth = 2 : i64, buffer_depth_reason = "depth 2: 2 x 576 B of SRAM"}

// -----

// A K loop of a matmul loads both operands: both rotate; the accumulator (not loaded, and
// accumulated across iterations) does not.
func.func @matmul_k_loop(%x: memref<4x12xf32, "dram"> {graph.name = "x"}, %w: memref<12x4xf32, "dram"> {graph.name = "w"}, %y: memref<4x4xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c12 = arith.constant 12 : index
  tile.kernel "fc" {
    %lhs = tile.alloc : memref<4x4xf32, "sram">
    %rhs = tile.alloc : memref<4x4xf32, "sram">
    %acc = tile.alloc : memref<4x4xf32, "acc">
    %out = tile.alloc : memref<4x4xf32, "sram">
    scf.for %k = %c0 to %c12 step %c4 {
      tile.copy %x[%c0, %k] to %lhs[%c0, %c0] sizes [4, 4] : memref<4x12xf32, "dram">, memref<4x4xf32, "sram">
      tile.copy %w[%k, %c0] to %rhs[%c0, %c0] sizes [4, 4] : memref<12x4xf32, "dram">, memref<4x4xf32, "sram">
      tile.matmul %lhs[%c0, %c0], %rhs[%c0, %c0] to %acc[%c0, %c0] sizes [4, 4, 4] {accumulate} : memref<4x4xf32, "sram">, memref<4x4xf32, "sram">, memref<4x4xf32, "acc">
    }
    tile.acc_read %acc[%c0, %c0] to %out[%c0, %c0] sizes [4, 4] : memref<4x4xf32, "acc">, memref<4x4xf32, "sram">
    tile.copy %out[%c0, %c0] to %y[%c0, %c0] sizes [4, 4] : memref<4x4xf32, "sram">, memref<4x4xf32, "dram">
  }
  func.return
}
// CHECK-LABEL: func.func @matmul_k_loop
// CHECK:         %lhs = tile.alloc : memref<4x4xf32, "sram">
// CHECK-NEXT:    %lhs_1 = tile.alloc : memref<4x4xf32, "sram">
// CHECK-NEXT:    %rhs = tile.alloc : memref<4x4xf32, "sram">
// CHECK-NEXT:    %rhs_1 = tile.alloc : memref<4x4xf32, "sram">
// CHECK-NEXT:    %acc = tile.alloc : memref<4x4xf32, "acc">
// CHECK-NOT:     %acc_1
// CHECK:         tile.matmul %lhs_1[%c0, %c0], %rhs_1[%c0, %c0] to %acc[%c0, %c0]
// CHECK:         } {buffer_depth = 2 : i64, buffer_depth_reason = "depth 2: 2 x 128 B of SRAM"}
// CHECK-NEXT:    %[[LAST:.*]] = arith.constant 8 : index
// CHECK-NEXT:    tile.copy %x[%c0, %[[LAST]]] to %lhs[%c0, %c0]

// -----

// A buffer loaded through a view made before the loop rotates together with its view: the
// extra buffer gets its own tile.reshape, and copy 1 of the body loads through it.
func.func @through_view(%x: memref<3x4x8xf32, "dram"> {graph.name = "x"}, %y: memref<12x8xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %a = tile.alloc : memref<4x8xf32, "sram">
  %v = tile.reshape %a : memref<4x8xf32, "sram"> -> memref<1x4x8xf32, "sram">
  scf.for %i = %c0 to %c3 step %c1 {
    tile.copy %x[%i, %c0, %c0] to %v[%c0, %c0, %c0] sizes [1, 4, 8] : memref<3x4x8xf32, "dram">, memref<1x4x8xf32, "sram">
    %row = arith.muli %i, %c4 : index
    tile.copy %a[%c0, %c0] to %y[%row, %c0] sizes [4, 8] : memref<4x8xf32, "sram">, memref<12x8xf32, "dram">
  }
  func.return
}
// CHECK-LABEL: func.func @through_view
// CHECK:         %a = tile.alloc : memref<4x8xf32, "sram">
// CHECK-NEXT:    %a_1 = tile.alloc : memref<4x8xf32, "sram">
// CHECK-NEXT:    %v = tile.reshape %a
// CHECK-NEXT:    %[[V1:.*]] = tile.reshape %a_1
// CHECK:         scf.for
// CHECK:           tile.copy %x[%i, %c0, %c0] to %v[%c0, %c0, %c0]
// CHECK:           tile.copy %x[%{{.*}}, %c0, %c0] to %[[V1]][%c0, %c0, %c0]
// CHECK-NEXT:      %{{.*}} = arith.muli
// CHECK-NEXT:      tile.copy %a_1[%c0, %c0] to %y
// CHECK:         } {buffer_depth = 2 : i64

// -----

// Negative: a view of %a read after the loop keeps %a from rotating.
func.func @view_read_after_loop(%x: memref<8x8xf32, "dram"> {graph.name = "x"}, %y: memref<32xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %a = tile.alloc : memref<4x8xf32, "sram">
  scf.for %i = %c0 to %c8 step %c4 {
    tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [4, 8] : memref<8x8xf32, "dram">, memref<4x8xf32, "sram">
  }
  %flat = tile.reshape %a : memref<4x8xf32, "sram"> -> memref<32xf32, "sram">
  tile.copy %flat[%c0] to %y[%c0] sizes [32] : memref<32xf32, "sram">, memref<32xf32, "dram">
  func.return
}
// CHECK-LABEL: func.func @view_read_after_loop
// CHECK-NOT:     %a_1
// CHECK:         } {buffer_depth = 1 : i64, buffer_depth_reason = "depth 1: %a is used outside the loop"}
