// RUN: aitc-opt %s --split-input-file --verify-diagnostics -p "insert-semaphores{target=tiny}" | filecheck %s

// A load, a vector op and a store in straight-line code: each consumer waits for its producer
// on another engine (RAW), the signal right after the producer, the wait right before the
// consumer.
func.func @straight_line(%x: memref<4x8xf32, "dram">, %out: memref<4x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<4x8xf32, "sram">
  %b = tile.alloc : memref<4x8xf32, "sram">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 8] {sync.engine = "dma0"} : memref<4x8xf32, "dram">, memref<4x8xf32, "sram">
  tile.unary %a[%c0, %c0] to %b[%c0, %c0] sizes [4, 8] {op = "exp", sync.engine = "vector"} : memref<4x8xf32, "sram">, memref<4x8xf32, "sram">
  tile.copy %b[%c0, %c0] to %out[%c0, %c0] sizes [4, 8] {sync.engine = "dma1"} : memref<4x8xf32, "sram">, memref<4x8xf32, "dram">
  func.return
}
// CHECK-LABEL: func.func @straight_line
// CHECK:         tile.copy %x{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:    sync.signal [[LOAD:[0-9]+]] on "dma0"
// CHECK-NEXT:    sync.wait [[LOAD]] on "vector"
// CHECK-NEXT:    tile.unary
// CHECK-NEXT:    sync.signal [[EXP:[0-9]+]] on "vector"
// CHECK-NEXT:    sync.wait [[EXP]] on "dma1"
// CHECK-NEXT:    tile.copy %b
// CHECK-NEXT:    func.return

// -----

// Ops on one engine run in order: a chain of vector ops needs no semaphore.
func.func @same_engine() {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<4x8xf32, "sram">
  %b = tile.alloc : memref<4x8xf32, "sram">
  tile.unary %a[%c0, %c0] to %b[%c0, %c0] sizes [4, 8] {op = "exp", sync.engine = "vector"} : memref<4x8xf32, "sram">, memref<4x8xf32, "sram">
  tile.unary %b[%c0, %c0] to %a[%c0, %c0] sizes [4, 8] {op = "neg", sync.engine = "vector"} : memref<4x8xf32, "sram">, memref<4x8xf32, "sram">
  func.return
}
// CHECK-LABEL: func.func @same_engine
// CHECK-NOT:     sync.{{signal|wait}}
// CHECK:         func.return

// -----

// Windows of one buffer that share no byte do not depend on each other: the load fills rows
// 0-3, the vector op reads rows 4-7.
func.func @disjoint_windows(%x: memref<4x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %a = tile.alloc : memref<8x8xf32, "sram">
  %b = tile.alloc : memref<4x8xf32, "sram">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 8] {sync.engine = "dma0"} : memref<4x8xf32, "dram">, memref<8x8xf32, "sram">
  tile.unary %a[%c4, %c0] to %b[%c0, %c0] sizes [4, 8] {op = "exp", sync.engine = "vector"} : memref<8x8xf32, "sram">, memref<4x8xf32, "sram">
  func.return
}
// CHECK-LABEL: func.func @disjoint_windows
// CHECK-NOT:     sync.{{signal|wait}}
// CHECK:         func.return

// -----

// A tiled matmul over k: the matmul waits for both loads of its iteration (one edge covers
// both), the load of iteration i+1 waits until the matmul of iteration i has read the tiles
// (WAR, a credit primed before the loop), and the accumulator read after the loop waits once
// for the last matmul. Nothing after the loop on dma0 reads or writes the tiles, so the
// credit drains at the end of the function, not right after the loop.
func.func @tiled_matmul(%x: memref<8x16xf32, "dram">, %w: memref<16x4xf32, "dram">, %out: memref<8x4xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %a = tile.alloc : memref<8x4xf32, "sram">
  %b = tile.alloc : memref<4x4xf32, "sram">
  %acc = tile.alloc : memref<8x4xf32, "acc">
  %y = tile.alloc : memref<8x4xf32, "sram">
  scf.for %k = %c0 to %c16 step %c4 {
    tile.copy %x[%c0, %k] to %a[%c0, %c0] sizes [8, 4] {sync.engine = "dma0"} : memref<8x16xf32, "dram">, memref<8x4xf32, "sram">
    tile.copy %w[%k, %c0] to %b[%c0, %c0] sizes [4, 4] {sync.engine = "dma0"} : memref<16x4xf32, "dram">, memref<4x4xf32, "sram">
    tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [8, 4, 4] {accumulate, sync.engine = "matrix"} : memref<8x4xf32, "sram">, memref<4x4xf32, "sram">, memref<8x4xf32, "acc">
  }
  tile.acc_read %acc[%c0, %c0] to %y[%c0, %c0] sizes [8, 4] {sync.engine = "vector"} : memref<8x4xf32, "acc">, memref<8x4xf32, "sram">
  tile.copy %y[%c0, %c0] to %out[%c0, %c0] sizes [8, 4] {sync.engine = "dma1"} : memref<8x4xf32, "sram">, memref<8x4xf32, "dram">
  func.return
}
// CHECK-LABEL: func.func @tiled_matmul
// CHECK:         sync.signal [[WAR:[0-9]+]] on "dma0"
// CHECK-NEXT:    scf.for %k
// CHECK-NEXT:      sync.wait [[WAR]] on "dma0"
// CHECK-NEXT:      tile.copy %x
// CHECK-NEXT:      tile.copy %w
// CHECK-NEXT:      sync.signal [[RAW:[0-9]+]] on "dma0"
// CHECK-NEXT:      sync.wait [[RAW]] on "matrix"
// CHECK-NEXT:      tile.matmul
// CHECK-NEXT:      sync.signal [[WAR]] on "matrix"
// CHECK-NEXT:    }
// CHECK-NEXT:    sync.signal [[ACC:[0-9]+]] on "matrix"
// CHECK-NEXT:    sync.wait [[ACC]] on "vector"
// CHECK-NEXT:    tile.acc_read
// CHECK-NEXT:    sync.signal [[Y:[0-9]+]] on "vector"
// CHECK-NEXT:    sync.wait [[Y]] on "dma1"
// CHECK-NEXT:    tile.copy %y
// CHECK-NEXT:    sync.wait [[WAR]] on "dma0"
// CHECK-NEXT:    func.return

// -----

// Deferred drains: after the loop, dma0 first loads a tile no matmul reads (it need not wait
// for the loop's last matmul), then overwrites the loop's tile %a: the credit drains right
// before that load, which also waits for the loop as a whole (a forward edge sharing the
// semaphore: the drain takes the loop's last credits first).
func.func @deferred_drain(%x: memref<8x16xf32, "dram">, %w: memref<4x4xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %a = tile.alloc : memref<8x4xf32, "sram">
  %b = tile.alloc : memref<4x4xf32, "sram">
  %acc = tile.alloc : memref<8x4xf32, "acc">
  %next = tile.alloc : memref<4x4xf32, "sram">
  tile.copy %w[%c0, %c0] to %b[%c0, %c0] sizes [4, 4] {sync.engine = "dma1"} : memref<4x4xf32, "dram">, memref<4x4xf32, "sram">
  scf.for %k = %c0 to %c16 step %c4 {
    tile.copy %x[%c0, %k] to %a[%c0, %c0] sizes [8, 4] {sync.engine = "dma0"} : memref<8x16xf32, "dram">, memref<8x4xf32, "sram">
    tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [8, 4, 4] {accumulate, sync.engine = "matrix"} : memref<8x4xf32, "sram">, memref<4x4xf32, "sram">, memref<8x4xf32, "acc">
  }
  tile.copy %w[%c0, %c0] to %next[%c0, %c0] sizes [4, 4] {sync.engine = "dma0"} : memref<4x4xf32, "dram">, memref<4x4xf32, "sram">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [8, 4] {sync.engine = "dma0"} : memref<8x16xf32, "dram">, memref<8x4xf32, "sram">
  func.return
}
// CHECK-LABEL: func.func @deferred_drain
// CHECK:         sync.signal [[WAR:[0-9]+]] on "dma0"
// CHECK-NEXT:    scf.for %k
// CHECK-NEXT:      sync.wait [[WAR]] on "dma0"
// CHECK:           sync.signal [[WAR]] on "matrix"
// CHECK-NEXT:    }
// CHECK-NEXT:    sync.signal [[WAR]] on "matrix"
// CHECK-NEXT:    tile.copy %w[%c0, %c0] to %next
// CHECK-NEXT:    sync.wait [[WAR]] on "dma0"
// CHECK-NEXT:    sync.wait [[WAR]] on "dma0"
// CHECK-NEXT:    tile.copy %x[%c0, %c0] to %a
// CHECK-NEXT:    func.return

// -----

// A weight loaded once before the loop and read in every iteration: the vector engine waits
// once, before the loop, not in every iteration.
func.func @weight_before_loop(%x: memref<8x8xf32, "dram">, %bias: memref<1x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %wb = tile.alloc : memref<1x8xf32, "sram">
  %t = tile.alloc : memref<2x8xf32, "sram">
  tile.copy %bias[%c0, %c0] to %wb[%c0, %c0] sizes [1, 8] {sync.engine = "dma0"} : memref<1x8xf32, "dram">, memref<1x8xf32, "sram">
  scf.for %i = %c0 to %c8 step %c2 {
    tile.binary %t[%c0, %c0], %wb[%c0, %c0] to %t[%c0, %c0] sizes [2, 8] {op = "add", broadcast = "row", sync.engine = "vector"} : memref<2x8xf32, "sram">, memref<1x8xf32, "sram">, memref<2x8xf32, "sram">
  }
  func.return
}
// CHECK-LABEL: func.func @weight_before_loop
// CHECK:         tile.copy %bias
// CHECK-NEXT:    sync.signal [[W:[0-9]+]] on "dma0"
// CHECK-NEXT:    sync.wait [[W]] on "vector"
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      tile.binary
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// -----

// A forward edge into a loop waits inside it, before the first item that needs it: the vector
// op before the loop (a peeled first step) read %t1, which only the loop's second load
// rewrites, so the loop's first load (into %t0) does not wait for it. The producer signals
// once per trip (count 4), the loop waits once per iteration, on a semaphore of its own.
func.func @wait_inside_loop(%x: memref<16x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %t0 = tile.alloc : memref<2x8xf32, "sram">
  %t1 = tile.alloc : memref<2x8xf32, "sram">
  tile.copy %x[%c0, %c0] to %t1[%c0, %c0] sizes [2, 8] {sync.engine = "dma0"} : memref<16x8xf32, "dram">, memref<2x8xf32, "sram">
  tile.unary %t1[%c0, %c0] to %t1[%c0, %c0] sizes [2, 8] {op = "neg", sync.engine = "vector"} : memref<2x8xf32, "sram">, memref<2x8xf32, "sram">
  scf.for %i = %c0 to %c16 step %c4 {
    tile.copy %x[%i, %c0] to %t0[%c0, %c0] sizes [2, 8] {sync.engine = "dma0"} : memref<16x8xf32, "dram">, memref<2x8xf32, "sram">
    tile.unary %t0[%c0, %c0] to %t0[%c0, %c0] sizes [2, 8] {op = "neg", sync.engine = "vector"} : memref<2x8xf32, "sram">, memref<2x8xf32, "sram">
    %j = arith.addi %i, %c2 : index
    tile.copy %x[%j, %c0] to %t1[%c0, %c0] sizes [2, 8] {sync.engine = "dma0"} : memref<16x8xf32, "dram">, memref<2x8xf32, "sram">
    tile.unary %t1[%c0, %c0] to %t1[%c0, %c0] sizes [2, 8] {op = "neg", sync.engine = "vector"} : memref<2x8xf32, "sram">, memref<2x8xf32, "sram">
  }
  func.return
}
// CHECK-LABEL: func.func @wait_inside_loop
// CHECK:         tile.unary %t1
// CHECK-NEXT:    sync.signal [[SUNK:[0-9]+]] on "vector" count 4
// CHECK:         scf.for
// CHECK-NOT:       sync.wait [[SUNK]]
// CHECK:           tile.copy %x[%i, %c0] to %t0
// CHECK:           sync.wait [[SUNK]] on "dma0"
// CHECK-NEXT:      sync.wait {{[0-9]+}} on "dma0"
// CHECK-NEXT:      tile.copy %x[%j, %c0] to %t1

// -----

// The same inside an outer loop (m tiles, as conv and matmul kernels peel each tile's first
// chunk): the forward edge from the peeled step (it read %t1) still waits at the loop's load
// into %t1. The inner loop's first load, into %t0, must still follow the previous tile's last
// step, which read %t0: that loop-carried edge was implied only by the forward edge's wait
// before the loop, so it comes back as a credit of its own (primed before the outer loop,
// waited before the inner one, signalled after the last step).
func.func @sunk_in_outer_loop(%x: memref<64x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c14 = arith.constant 14 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %t0 = tile.alloc : memref<2x8xf32, "sram">
  %t1 = tile.alloc : memref<2x8xf32, "sram">
  scf.for %m = %c0 to %c64 step %c16 {
    tile.copy %x[%m, %c0] to %t1[%c0, %c0] sizes [2, 8] {sync.engine = "dma0"} : memref<64x8xf32, "dram">, memref<2x8xf32, "sram">
    tile.unary %t1[%c0, %c0] to %t1[%c0, %c0] sizes [2, 8] {op = "neg", sync.engine = "vector"} : memref<2x8xf32, "sram">, memref<2x8xf32, "sram">
    %hi = arith.addi %m, %c14 : index
    scf.for %i = %c2 to %c14 step %c4 {
      %r = arith.addi %m, %i : index
      tile.copy %x[%r, %c0] to %t0[%c0, %c0] sizes [2, 8] {sync.engine = "dma0"} : memref<64x8xf32, "dram">, memref<2x8xf32, "sram">
      tile.unary %t0[%c0, %c0] to %t0[%c0, %c0] sizes [2, 8] {op = "neg", sync.engine = "vector"} : memref<2x8xf32, "sram">, memref<2x8xf32, "sram">
      %j = arith.addi %r, %c2 : index
      tile.copy %x[%j, %c0] to %t1[%c0, %c0] sizes [2, 8] {sync.engine = "dma0"} : memref<64x8xf32, "dram">, memref<2x8xf32, "sram">
      tile.unary %t1[%c0, %c0] to %t1[%c0, %c0] sizes [2, 8] {op = "neg", sync.engine = "vector"} : memref<2x8xf32, "sram">, memref<2x8xf32, "sram">
    }
    tile.copy %x[%hi, %c0] to %t0[%c0, %c0] sizes [2, 8] {sync.engine = "dma0"} : memref<64x8xf32, "dram">, memref<2x8xf32, "sram">
    tile.unary %t0[%c0, %c0] to %t0[%c0, %c0] sizes [2, 8] {op = "neg", sync.engine = "vector"} : memref<2x8xf32, "sram">, memref<2x8xf32, "sram">
  }
  func.return
}
// The remainder after the inner loop loads %t0 again: it needs the last iteration's read of %t0
// only, not the read of %t1 after it. The inner loop's two credits (one per buffer) leave two
// units at its exit; a wait for one of them passes once the last iteration has signalled after
// reading %t0, so it replaces the remainder's forward edge, and the other unit drains at the
// end of the outer body.
// CHECK-LABEL: func.func @sunk_in_outer_loop
// CHECK:         sync.signal [[CARRIED:[0-9]+]] on "dma0"
// CHECK-NEXT:    scf.for %m
// CHECK:           tile.unary %t1
// CHECK-NEXT:      sync.signal [[SUNK:[0-9]+]] on "vector" count 3
// CHECK-NOT:       sync.wait [[SUNK]]
// CHECK:           sync.wait [[CARRIED]] on "dma0"
// CHECK-NEXT:      sync.signal [[CREDIT:[0-9]+]] on "dma0"
// CHECK-NEXT:      sync.signal [[CREDIT]] on "dma0"
// CHECK-NOT:       sync.wait [[SUNK]]
// CHECK:           scf.for %i
// CHECK-NOT:         sync.wait [[SUNK]]
// CHECK:             tile.copy %x[%r, %c0] to %t0
// CHECK:             tile.unary %t0
// CHECK-NEXT:        sync.signal [[CREDIT]] on "vector"
// CHECK:             sync.wait [[SUNK]] on "dma0"
// CHECK:             tile.copy %x[%j, %c0] to %t1
// CHECK:             tile.unary %t1
// CHECK-NEXT:        sync.signal [[CREDIT]] on "vector"
// CHECK-NEXT:      }
// CHECK-NEXT:      sync.wait [[CREDIT]] on "dma0"{{$}}
// CHECK-NEXT:      tile.copy %x[%hi, %c0] to %t0
// CHECK:           tile.unary %t0
// CHECK-NEXT:      sync.signal [[CARRIED]] on "vector"
// CHECK-NEXT:      sync.wait [[CREDIT]] on "dma0"{{$}}
// CHECK-NEXT:    }
// CHECK-NEXT:    sync.wait [[CARRIED]] on "dma0"

// -----

// Double buffering (what multi-buffer produces): the loop body is unrolled by two over the
// rotating buffers %t0 and %t1. The load into %t0 waits for the vector op that read %t0 one
// iteration earlier, the load into %t1 for the one that read %t1: both credits share one
// semaphore (primed twice, drained twice), and a load never waits for the other buffer.
func.func @double_buffered(%x: memref<8x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %t0 = tile.alloc : memref<2x8xf32, "sram">
  %t1 = tile.alloc : memref<2x8xf32, "sram">
  %u = tile.alloc : memref<2x8xf32, "sram">
  scf.for %i = %c0 to %c8 step %c4 {
    tile.copy %x[%i, %c0] to %t0[%c0, %c0] sizes [2, 8] {sync.engine = "dma0"} : memref<8x8xf32, "dram">, memref<2x8xf32, "sram">
    tile.unary %t0[%c0, %c0] to %u[%c0, %c0] sizes [2, 8] {op = "exp", sync.engine = "vector"} : memref<2x8xf32, "sram">, memref<2x8xf32, "sram">
    %j = arith.addi %i, %c2 : index
    tile.copy %x[%j, %c0] to %t1[%c0, %c0] sizes [2, 8] {sync.engine = "dma0"} : memref<8x8xf32, "dram">, memref<2x8xf32, "sram">
    tile.unary %t1[%c0, %c0] to %u[%c0, %c0] sizes [2, 8] {op = "exp", sync.engine = "vector"} : memref<2x8xf32, "sram">, memref<2x8xf32, "sram">
  }
  func.return
}
// CHECK-LABEL: func.func @double_buffered
// CHECK:         sync.signal [[WAR:[0-9]+]] on "dma0"
// CHECK-NEXT:    sync.signal [[WAR]] on "dma0"
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      sync.wait [[WAR]] on "dma0"
// CHECK-NEXT:      tile.copy %x[%i, %c0] to %t0
// CHECK-NEXT:      sync.signal [[RAW:[0-9]+]] on "dma0"
// CHECK-NEXT:      sync.wait [[RAW]] on "vector"
// CHECK-NEXT:      tile.unary %t0
// CHECK-NEXT:      sync.signal [[WAR]] on "vector"
// CHECK-NEXT:      %j = arith.addi
// CHECK-NEXT:      sync.wait [[WAR]] on "dma0"
// CHECK-NEXT:      tile.copy %x[%j, %c0] to %t1
// CHECK-NEXT:      sync.signal [[RAW]] on "dma0"
// CHECK-NEXT:      sync.wait [[RAW]] on "vector"
// CHECK-NEXT:      tile.unary %t1
// CHECK-NEXT:      sync.signal [[WAR]] on "vector"
// CHECK-NEXT:    }
// CHECK-NEXT:    sync.wait [[WAR]] on "dma0"
// CHECK-NEXT:    sync.wait [[WAR]] on "dma0"

// -----

// A rotating slot computed in the loop (%i mod 2): iteration i writes the slot iteration i+1
// does not touch, so the load only waits for the reader of two iterations earlier (a credit
// of distance 2: prime and drain count 2).
func.func @rotating_slot(%x: memref<8x2x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %buf = tile.alloc : memref<2x2x8xf32, "sram">
  %u = tile.alloc : memref<1x2x8xf32, "sram">
  scf.for %i = %c0 to %c8 step %c1 {
    %s = arith.remsi %i, %c2 : index
    tile.copy %x[%i, %c0, %c0] to %buf[%s, %c0, %c0] sizes [1, 2, 8] {sync.engine = "dma0"} : memref<8x2x8xf32, "dram">, memref<2x2x8xf32, "sram">
    tile.unary %buf[%s, %c0, %c0] to %u[%c0, %c0, %c0] sizes [1, 2, 8] {op = "exp", sync.engine = "vector"} : memref<2x2x8xf32, "sram">, memref<1x2x8xf32, "sram">
  }
  func.return
}
// CHECK-LABEL: func.func @rotating_slot
// CHECK:         sync.signal [[WAR:[0-9]+]] on "dma0" count 2
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      %s = arith.remsi
// CHECK-NEXT:      sync.wait [[WAR]] on "dma0"
// CHECK-NEXT:      tile.copy
// CHECK-NEXT:      sync.signal [[RAW:[0-9]+]] on "dma0"
// CHECK-NEXT:      sync.wait [[RAW]] on "vector"
// CHECK-NEXT:      tile.unary
// CHECK-NEXT:      sync.signal [[WAR]] on "vector"
// CHECK-NEXT:    }
// CHECK-NEXT:    sync.wait [[WAR]] on "dma0" count 2

// -----

// A tile.reshape view aliases its source: writing through the view and reading the source on
// another engine is a dependence.
func.func @view_alias(%x: memref<32xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<4x8xf32, "sram">
  %b = tile.alloc : memref<4x8xf32, "sram">
  %v = tile.reshape %a : memref<4x8xf32, "sram"> -> memref<32xf32, "sram">
  tile.copy %x[%c0] to %v[%c0] sizes [32] {sync.engine = "dma0"} : memref<32xf32, "dram">, memref<32xf32, "sram">
  tile.unary %a[%c0, %c0] to %b[%c0, %c0] sizes [4, 8] {op = "exp", sync.engine = "vector"} : memref<4x8xf32, "sram">, memref<4x8xf32, "sram">
  func.return
}
// CHECK-LABEL: func.func @view_alias
// CHECK:         tile.copy %x[%c0] to %v[%c0]
// CHECK-NEXT:    sync.signal [[S:[0-9]+]] on "dma0"
// CHECK-NEXT:    sync.wait [[S]] on "vector"
// CHECK-NEXT:    tile.unary %a

// -----

// plan-memory gave %a and %b the same SRAM bytes (disjoint lifetimes): the load into %b must
// wait until the store has read %a (WAR across two buffers).
func.func @planned_alias(%x: memref<4x8xf32, "dram">, %out: memref<4x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc {offset = 0 : i64} : memref<4x8xf32, "sram">
  %b = tile.alloc {offset = 0 : i64} : memref<4x8xf32, "sram">
  tile.copy %a[%c0, %c0] to %out[%c0, %c0] sizes [4, 8] {sync.engine = "dma1"} : memref<4x8xf32, "sram">, memref<4x8xf32, "dram">
  tile.copy %x[%c0, %c0] to %b[%c0, %c0] sizes [4, 8] {sync.engine = "dma0"} : memref<4x8xf32, "dram">, memref<4x8xf32, "sram">
  func.return
}
// CHECK-LABEL: func.func @planned_alias
// CHECK:         tile.copy %a{{.*}} {sync.engine = "dma1"}
// CHECK-NEXT:    sync.signal [[S:[0-9]+]] on "dma1"
// CHECK-NEXT:    sync.wait [[S]] on "dma0"
// CHECK-NEXT:    tile.copy %x

// -----

// Nested loops: the inner loop accumulates over k, the outer loop walks row tiles. The first
// load of the next row tile must wait for the last matmul of the previous one (the inner
// credit's drain orders it: deferred to the end of the outer body, nothing on dma0 follows), and the accumulator read waits once after the inner loop.
func.func @nested_loops(%x: memref<8x8xf32, "dram">, %w: memref<8x4xf32, "dram">, %out: memref<8x4xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %a = tile.alloc : memref<4x4xf32, "sram">
  %b = tile.alloc : memref<4x4xf32, "sram">
  %acc = tile.alloc : memref<4x4xf32, "acc">
  %y = tile.alloc : memref<4x4xf32, "sram">
  scf.for %m = %c0 to %c8 step %c4 {
    scf.for %k = %c0 to %c8 step %c4 {
      tile.copy %x[%m, %k] to %a[%c0, %c0] sizes [4, 4] {sync.engine = "dma0"} : memref<8x8xf32, "dram">, memref<4x4xf32, "sram">
      tile.copy %w[%k, %c0] to %b[%c0, %c0] sizes [4, 4] {sync.engine = "dma0"} : memref<8x4xf32, "dram">, memref<4x4xf32, "sram">
      tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [4, 4, 4] {accumulate, sync.engine = "matrix"} : memref<4x4xf32, "sram">, memref<4x4xf32, "sram">, memref<4x4xf32, "acc">
    }
    tile.acc_read %acc[%c0, %c0] to %y[%c0, %c0] sizes [4, 4] {sync.engine = "vector"} : memref<4x4xf32, "acc">, memref<4x4xf32, "sram">
    tile.copy %y[%c0, %c0] to %out[%m, %c0] sizes [4, 4] {sync.engine = "dma1"} : memref<4x4xf32, "sram">, memref<8x4xf32, "dram">
  }
  func.return
}
// CHECK-LABEL: func.func @nested_loops
// CHECK:         sync.signal [[ACCWAR:[0-9]+]] on "matrix"
// CHECK-NEXT:    sync.signal [[YWAR:[0-9]+]] on "vector"
// CHECK-NEXT:    scf.for %m
// CHECK-NEXT:      sync.wait [[ACCWAR]] on "matrix"
// CHECK-NEXT:      sync.signal [[TILEWAR:[0-9]+]] on "dma0"
// CHECK-NEXT:      scf.for %k
// CHECK-NEXT:        sync.wait [[TILEWAR]] on "dma0"
// CHECK-NEXT:        tile.copy %x
// CHECK-NEXT:        tile.copy %w
// CHECK-NEXT:        sync.signal [[RAW:[0-9]+]] on "dma0"
// CHECK-NEXT:        sync.wait [[RAW]] on "matrix"
// CHECK-NEXT:        tile.matmul
// CHECK-NEXT:        sync.signal [[TILEWAR]] on "matrix"
// CHECK-NEXT:      }
// CHECK-NEXT:      sync.signal [[ACC:[0-9]+]] on "matrix"
// CHECK-NEXT:      sync.wait [[ACC]] on "vector"
// CHECK-NEXT:      sync.wait [[YWAR]] on "vector"
// CHECK-NEXT:      tile.acc_read
// CHECK-NEXT:      sync.signal [[ACCWAR]] on "vector"
// CHECK-NEXT:      sync.signal [[Y:[0-9]+]] on "vector"
// CHECK-NEXT:      sync.wait [[Y]] on "dma1"
// CHECK-NEXT:      tile.copy %y
// CHECK-NEXT:      sync.signal [[YWAR]] on "dma1"
// CHECK-NEXT:      sync.wait [[TILEWAR]] on "dma0"
// CHECK-NEXT:    }
// CHECK-NEXT:    sync.wait [[ACCWAR]] on "matrix"
// CHECK-NEXT:    sync.wait [[YWAR]] on "vector"

// -----

// Insert-semaphores needs engines: an unbound compute op is an error naming the pass to run.
func.func @unbound(%x: memref<4x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<4x8xf32, "sram">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 8] : memref<4x8xf32, "dram">, memref<4x8xf32, "sram">
  func.return
}
// CHECK: insert-semaphores: 1 tile compute op(s) not bound to an engine (tile.copy x1); run convert-tile-to-sync first

// -----

// Loop bounds must be constants (the dependence distance is computed per iteration).
func.func @dynamic_bound(%x: memref<4x8xf32, "dram">, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = tile.alloc : memref<4x8xf32, "sram">
  scf.for %i = %c0 to %n step %c1 {
    tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 8] {sync.engine = "dma0"} : memref<4x8xf32, "dram">, memref<4x8xf32, "sram">
  }
  func.return
}
// CHECK: insert-semaphores needs scf.for loops with constant bounds and no iter_args
