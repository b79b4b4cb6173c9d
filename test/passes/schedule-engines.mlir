// RUN: aitc-opt %s --split-input-file --verify-diagnostics -p "schedule-engines{target=tiny}" | filecheck %s

// Two independent tiles emitted one after the other: the scheduled run loads tile b while
// tile a is on the matrix engine, and multiplies it before a's result is stored; every op
// keeps its order with the ops it shares bytes with (a's chain, b's chain, the weight first).
func.func @two_tiles(%x: memref<16x8xf32, "dram">, %w: memref<8x8xf32, "dram">, %out: memref<16x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %wt = tile.alloc : memref<8x8xf32, "sram">
  %a = tile.alloc : memref<8x8xf32, "sram">
  %b = tile.alloc : memref<8x8xf32, "sram">
  %acc_a = tile.alloc : memref<8x8xf32, "acc">
  %acc_b = tile.alloc : memref<8x8xf32, "acc">
  %ya = tile.alloc : memref<8x8xf32, "sram">
  %yb = tile.alloc : memref<8x8xf32, "sram">
  tile.copy %w[%c0, %c0] to %wt[%c0, %c0] sizes [8, 8] {sync.engine = "dma1"} : memref<8x8xf32, "dram">, memref<8x8xf32, "sram">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [8, 8] {sync.engine = "dma0"} : memref<16x8xf32, "dram">, memref<8x8xf32, "sram">
  tile.matmul %a[%c0, %c0], %wt[%c0, %c0] to %acc_a[%c0, %c0] sizes [8, 8, 8] {sync.engine = "matrix"} : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">, memref<8x8xf32, "acc">
  tile.acc_read %acc_a[%c0, %c0] to %ya[%c0, %c0] sizes [8, 8] {sync.engine = "vector"} : memref<8x8xf32, "acc">, memref<8x8xf32, "sram">
  tile.unary %ya[%c0, %c0] to %ya[%c0, %c0] sizes [8, 8] {op = "exp", sync.engine = "vector"} : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">
  tile.copy %ya[%c0, %c0] to %out[%c0, %c0] sizes [8, 8] {sync.engine = "dma1"} : memref<8x8xf32, "sram">, memref<16x8xf32, "dram">
  tile.copy %x[%c8, %c0] to %b[%c0, %c0] sizes [8, 8] {sync.engine = "dma0"} : memref<16x8xf32, "dram">, memref<8x8xf32, "sram">
  tile.matmul %b[%c0, %c0], %wt[%c0, %c0] to %acc_b[%c0, %c0] sizes [8, 8, 8] {sync.engine = "matrix"} : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">, memref<8x8xf32, "acc">
  tile.acc_read %acc_b[%c0, %c0] to %yb[%c0, %c0] sizes [8, 8] {sync.engine = "vector"} : memref<8x8xf32, "acc">, memref<8x8xf32, "sram">
  tile.unary %yb[%c0, %c0] to %yb[%c0, %c0] sizes [8, 8] {op = "exp", sync.engine = "vector"} : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">
  tile.copy %yb[%c0, %c0] to %out[%c8, %c0] sizes [8, 8] {sync.engine = "dma1"} : memref<8x8xf32, "sram">, memref<16x8xf32, "dram">
  func.return
}
// CHECK-LABEL: func.func @two_tiles
// CHECK:         tile.copy %w[%c0, %c0] to %wt
// CHECK-NEXT:    tile.copy %x[%c0, %c0] to %a
// CHECK-NEXT:    tile.matmul %a
// CHECK-NEXT:    tile.copy %x[%c8, %c0] to %b
// CHECK-NEXT:    tile.acc_read %acc_a
// CHECK-NEXT:    tile.unary %ya
// CHECK-NEXT:    tile.matmul %b
// CHECK-NEXT:    tile.copy %ya[%c0, %c0] to %out
// CHECK-NEXT:    tile.acc_read %acc_b
// CHECK-NEXT:    tile.unary %yb
// CHECK-NEXT:    tile.copy %yb[%c0, %c0] to %out

// -----

// A loop that runs once is its body: its ops join the run around it (the induction variable
// becomes the lower bound) and the index op it held goes first; the load into %b could start
// with the vector op, and ties keep program order. A loop of two trips stays a loop, and
// nothing moves across it.
func.func @single_trip(%x: memref<16x8xf32, "dram">, %out: memref<16x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %a = tile.alloc : memref<8x8xf32, "sram">
  %b = tile.alloc : memref<8x8xf32, "sram">
  scf.for %i = %c0 to %c8 step %c8 {
    tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [8, 8] {sync.engine = "dma0"} : memref<16x8xf32, "dram">, memref<8x8xf32, "sram">
    tile.unary %a[%c0, %c0] to %a[%c0, %c0] sizes [8, 8] {op = "exp", sync.engine = "vector"} : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">
    %j = arith.addi %i, %c8 : index
    tile.copy %x[%j, %c0] to %b[%c0, %c0] sizes [8, 8] {sync.engine = "dma0"} : memref<16x8xf32, "dram">, memref<8x8xf32, "sram">
  }
  scf.for %k = %c0 to %c16 step %c8 {
    tile.copy %a[%c0, %c0] to %out[%k, %c0] sizes [8, 8] {sync.engine = "dma1"} : memref<8x8xf32, "sram">, memref<16x8xf32, "dram">
  }
  tile.unary %b[%c0, %c0] to %b[%c0, %c0] sizes [8, 8] {op = "abs", sync.engine = "vector"} : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">
  func.return
}
// CHECK-LABEL: func.func @single_trip
// CHECK-NOT:     scf.for %i
// CHECK:         %j = arith.addi %c0, %c8 : index
// CHECK-NEXT:    tile.copy %x[%c0, %c0] to %a
// CHECK-NEXT:    tile.unary %a
// CHECK-NEXT:    tile.copy %x[%j, %c0] to %b
// CHECK-NEXT:    scf.for %k
// CHECK-NEXT:      tile.copy %a[%c0, %c0] to %out[%k, %c0]
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.unary %b

// -----

// A loop body with two rotated copies %a and %b (as multi-buffer leaves them): each copy's
// padding column, then its load over the whole copy (after the padding: both write column 0), then
// its product. Scheduled as one run, %b's padding could take dma0 first (it is ready at the
// start, %a's load is not); across the back edge it would then wait for the previous trip's
// product of %b, the last op, and hold up %a's load behind it on the in-order queue. Released
// when the previous trip lets it start, %b's padding goes after %a's load.
func.func @rotated_copies(%x: memref<64x8xf32, "dram">, %z: memref<8x1xf32, "sram">, %w: memref<8x8xf32, "sram">, %acc: memref<8x8xf32, "acc">) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %a = tile.alloc : memref<8x8xf32, "sram">
  %b = tile.alloc : memref<8x8xf32, "sram">
  scf.for %i = %c0 to %c64 step %c16 {
    %j = arith.addi %i, %c8 : index
    tile.copy %z[%c0, %c0] to %a[%c0, %c0] sizes [8, 1] {sync.engine = "dma1"} : memref<8x1xf32, "sram">, memref<8x8xf32, "sram">
    tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [8, 8] {sync.engine = "dma0"} : memref<64x8xf32, "dram">, memref<8x8xf32, "sram">
    tile.matmul %w[%c0, %c0], %a[%c0, %c0] to %acc[%c0, %c0] sizes [8, 8, 8] {accumulate, sync.engine = "matrix"} : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">, memref<8x8xf32, "acc">
    tile.copy %z[%c0, %c0] to %b[%c0, %c0] sizes [8, 1] {sync.engine = "dma0"} : memref<8x1xf32, "sram">, memref<8x8xf32, "sram">
    tile.copy %x[%j, %c0] to %b[%c0, %c0] sizes [8, 8] {sync.engine = "dma1"} : memref<64x8xf32, "dram">, memref<8x8xf32, "sram">
    tile.matmul %w[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [8, 8, 8] {accumulate, sync.engine = "matrix"} : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">, memref<8x8xf32, "acc">
  }
  func.return
}
// CHECK-LABEL: func.func @rotated_copies
// CHECK:         scf.for %i
// CHECK:           tile.copy %z[%c0, %c0] to %a
// CHECK-NEXT:      tile.copy %x[%i, %c0] to %a
// CHECK-NEXT:      tile.matmul %w[%c0, %c0], %a
// CHECK-NEXT:      tile.copy %z[%c0, %c0] to %b
// CHECK-NEXT:      tile.copy %x[%j, %c0] to %b
// CHECK-NEXT:      tile.matmul %w[%c0, %c0], %b

// -----

// A vector-bound loop body (as a fused attention head): query tile q loaded twice (the second
// load after the first product read it), the value tile vb read by the trip's last matmul.
// Trips overlap once the loop runs, one every period (the busiest engine's work per trip, here
// dma0's), not one every makespan: the next trip may load vb only about the matmul's end less
// that period after it starts, later than the second load of q, which its softmax needs first.
// Released by the makespan, vb's load took dma0 before that second load and held it up behind
// the previous trip's matmul on the in-order queue.
func.func @trips_overlap(%x: memref<128x8xf32, "dram">, %v: memref<8x8xf32, "dram">, %acc: memref<400x8xf32, "acc">) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %q = tile.alloc : memref<64x8xf32, "sram">
  %vb = tile.alloc : memref<8x8xf32, "sram">
  %s = tile.alloc : memref<2x8xf32, "sram">
  %s2 = tile.alloc : memref<400x8xf32, "sram">
  %y = tile.alloc : memref<8x8xf32, "sram">
  scf.for %i = %c0 to %c128 step %c64 {
    tile.copy %x[%i, %c0] to %q[%c0, %c0] sizes [64, 8] {sync.engine = "dma0"} : memref<128x8xf32, "dram">, memref<64x8xf32, "sram">
    tile.copy %v[%c0, %c0] to %vb[%c0, %c0] sizes [8, 8] {sync.engine = "dma0"} : memref<8x8xf32, "dram">, memref<8x8xf32, "sram">
    tile.unary %q[%c0, %c0] to %s[%c0, %c0] sizes [2, 8] {op = "exp", sync.engine = "vector"} : memref<64x8xf32, "sram">, memref<2x8xf32, "sram">
    tile.copy %x[%i, %c0] to %q[%c0, %c0] sizes [64, 8] {sync.engine = "dma0"} : memref<128x8xf32, "dram">, memref<64x8xf32, "sram">
    tile.unary %q[%c0, %c0] to %s2[%c0, %c0] sizes [64, 8] {op = "exp", sync.engine = "vector"} : memref<64x8xf32, "sram">, memref<400x8xf32, "sram">
    tile.matmul %s2[%c0, %c0], %vb[%c0, %c0] to %acc[%c0, %c0] sizes [400, 8, 8] {sync.engine = "matrix"} : memref<400x8xf32, "sram">, memref<8x8xf32, "sram">, memref<400x8xf32, "acc">
    tile.acc_read %acc[%c0, %c0] to %y[%c0, %c0] sizes [8, 8] {sync.engine = "vector"} : memref<400x8xf32, "acc">, memref<8x8xf32, "sram">
  }
  func.return
}
// CHECK-LABEL: func.func @trips_overlap
// CHECK:         scf.for %i
// CHECK:           tile.copy %x[%i, %c0] to %q
// CHECK-NEXT:      tile.unary %q[%c0, %c0] to %s
// CHECK-NEXT:      tile.copy %x[%i, %c0] to %q
// CHECK-NEXT:      tile.copy %v[%c0, %c0] to %vb

// -----

// Schedule-engines needs engines: an unbound compute op is an error naming the pass to run.
func.func @unbound(%x: memref<4x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<4x8xf32, "sram">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 8] : memref<4x8xf32, "dram">, memref<4x8xf32, "sram">
  func.return
}
// CHECK: schedule-engines: 1 tile compute op(s) not bound to an engine (tile.copy x1); run convert-tile-to-sync first
