// RUN: aitc-opt %s --split-input-file -p optimize-sync | filecheck %s

// The store waits for the load twice: directly (semaphore 2) and through the vector engine,
// which waited for the load before signalling the store (semaphores 0 and 1). The direct edge
// is implied and goes, signal and wait together.
func.func @transitive_through_third_engine(%x: memref<4x8xf32, "dram">, %out: memref<4x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<4x8xf32, "sram">
  %b = tile.alloc : memref<4x8xf32, "sram">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 8] {sync.engine = "dma0"} : memref<4x8xf32, "dram">, memref<4x8xf32, "sram">
  sync.signal 0 on "dma0"
  sync.signal 2 on "dma0"
  sync.wait 0 on "vector"
  tile.unary %a[%c0, %c0] to %b[%c0, %c0] sizes [4, 8] {op = "exp", sync.engine = "vector"} : memref<4x8xf32, "sram">, memref<4x8xf32, "sram">
  sync.signal 1 on "vector"
  sync.wait 1 on "dma1"
  sync.wait 2 on "dma1"
  tile.copy %a[%c0, %c0] to %out[%c0, %c0] sizes [4, 8] {sync.engine = "dma1"} : memref<4x8xf32, "sram">, memref<4x8xf32, "dram">
  func.return
}
// CHECK-LABEL: func.func @transitive_through_third_engine
// CHECK:         tile.copy %x
// CHECK-NEXT:    sync.signal 0 on "dma0"
// CHECK-NEXT:    sync.wait 0 on "vector"
// CHECK-NEXT:    tile.unary
// CHECK-NEXT:    sync.signal 1 on "vector"
// CHECK-NEXT:    sync.wait 1 on "dma1"
// CHECK-NEXT:    tile.copy %a
// CHECK-NOT:     sync.{{signal|wait}} 2

// -----

// B waits for A's second op (semaphore 1) before it waits for A's first (semaphore 0): A runs
// in order, so the second wait is implied.
func.func @earlier_op_of_same_engine(%x: memref<4x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<4x8xf32, "sram">
  %b = tile.alloc : memref<4x8xf32, "sram">
  %c = tile.alloc : memref<4x8xf32, "sram">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 8] {sync.engine = "dma0"} : memref<4x8xf32, "dram">, memref<4x8xf32, "sram">
  sync.signal 0 on "dma0"
  tile.copy %x[%c0, %c0] to %b[%c0, %c0] sizes [4, 8] {sync.engine = "dma0"} : memref<4x8xf32, "dram">, memref<4x8xf32, "sram">
  sync.signal 1 on "dma0"
  sync.wait 1 on "vector"
  tile.unary %b[%c0, %c0] to %c[%c0, %c0] sizes [4, 8] {op = "exp", sync.engine = "vector"} : memref<4x8xf32, "sram">, memref<4x8xf32, "sram">
  sync.wait 0 on "vector"
  tile.unary %a[%c0, %c0] to %c[%c0, %c0] sizes [4, 8] {op = "exp", sync.engine = "vector"} : memref<4x8xf32, "sram">, memref<4x8xf32, "sram">
  func.return
}
// CHECK-LABEL: func.func @earlier_op_of_same_engine
// CHECK:         tile.copy %x{{.*}} to %a
// CHECK-NEXT:    tile.copy %x{{.*}} to %b
// CHECK-NEXT:    sync.signal 1 on "dma0"
// CHECK-NEXT:    sync.wait 1 on "vector"
// CHECK-NEXT:    tile.unary %b
// CHECK-NEXT:    tile.unary %a

// -----

// Two edges from different engines into the vector engine: neither implies the other, both stay.
func.func @independent_edges_stay(%x: memref<4x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<4x8xf32, "sram">
  %b = tile.alloc : memref<4x8xf32, "sram">
  %acc = tile.alloc : memref<4x8xf32, "acc">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 8] {sync.engine = "dma0"} : memref<4x8xf32, "dram">, memref<4x8xf32, "sram">
  sync.signal 0 on "dma0"
  tile.copy %b[%c0, %c0] to %acc[%c0, %c0] sizes [4, 8] {sync.engine = "dma1"} : memref<4x8xf32, "sram">, memref<4x8xf32, "acc">
  sync.signal 1 on "dma1"
  sync.wait 0 on "vector"
  sync.wait 1 on "vector"
  tile.binary %acc[%c0, %c0], %a[%c0, %c0] to %b[%c0, %c0] sizes [4, 8] {op = "add", sync.engine = "vector"} : memref<4x8xf32, "acc">, memref<4x8xf32, "sram">, memref<4x8xf32, "sram">
  func.return
}
// CHECK-LABEL: func.func @independent_edges_stay
// CHECK:         sync.signal 0 on "dma0"
// CHECK:         sync.signal 1 on "dma1"
// CHECK-NEXT:    sync.wait 0 on "vector"
// CHECK-NEXT:    sync.wait 1 on "vector"

// -----

// Inside a loop body the same reasoning holds for every iteration: the direct dma0 -> dma1
// edge of each iteration is implied by the path through the vector engine.
func.func @implied_in_loop(%x: memref<8x8xf32, "dram">, %out: memref<8x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %a = tile.alloc : memref<4x8xf32, "sram">
  scf.for %i = %c0 to %c8 step %c4 {
    tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [4, 8] {sync.engine = "dma0"} : memref<8x8xf32, "dram">, memref<4x8xf32, "sram">
    sync.signal 0 on "dma0"
    sync.signal 2 on "dma0"
    sync.wait 0 on "vector"
    tile.unary %a[%c0, %c0] to %a[%c0, %c0] sizes [4, 8] {op = "exp", sync.engine = "vector"} : memref<4x8xf32, "sram">, memref<4x8xf32, "sram">
    sync.signal 1 on "vector"
    sync.wait 1 on "dma1"
    sync.wait 2 on "dma1"
    tile.copy %a[%c0, %c0] to %out[%i, %c0] sizes [4, 8] {sync.engine = "dma1"} : memref<4x8xf32, "sram">, memref<8x8xf32, "dram">
  }
  func.return
}
// CHECK-LABEL: func.func @implied_in_loop
// CHECK:         scf.for
// CHECK-NEXT:      tile.copy %x
// CHECK-NEXT:      sync.signal 0 on "dma0"
// CHECK-NEXT:      sync.wait 0 on "vector"
// CHECK-NEXT:      tile.unary
// CHECK-NEXT:      sync.signal 1 on "vector"
// CHECK-NEXT:      sync.wait 1 on "dma1"
// CHECK-NEXT:      tile.copy %a
// CHECK-NEXT:    }

// -----

// Repeated signals (and waits) of one semaphore on one engine, with no op of that engine in
// between, become one op with the summed count; ops of other engines in between do not matter.
func.func @merge_repeated(%x: memref<4x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<4x8xf32, "sram">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 8] {sync.engine = "dma0"} : memref<4x8xf32, "dram">, memref<4x8xf32, "sram">
  sync.signal 3 on "dma0"
  tile.unary %a[%c0, %c0] to %a[%c0, %c0] sizes [4, 8] {op = "abs", sync.engine = "vector"} : memref<4x8xf32, "sram">, memref<4x8xf32, "sram">
  sync.signal 3 on "dma0" count 2
  sync.wait 3 on "matrix"
  sync.wait 3 on "matrix" count 2
  func.return
}
// CHECK-LABEL: func.func @merge_repeated
// CHECK:         tile.copy
// CHECK-NEXT:    sync.signal 3 on "dma0" count 3
// CHECK-NEXT:    tile.unary
// CHECK-NEXT:    sync.wait 3 on "matrix" count 3
// CHECK-NEXT:    func.return

// -----

// No merge across an op of the same engine: the second signal also covers the second copy,
// so the two signals mean different things.
func.func @no_merge_across_own_op(%x: memref<4x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<4x8xf32, "sram">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 8] {sync.engine = "dma0"} : memref<4x8xf32, "dram">, memref<4x8xf32, "sram">
  sync.signal 3 on "dma0"
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 8] {sync.engine = "dma0"} : memref<4x8xf32, "dram">, memref<4x8xf32, "sram">
  sync.signal 3 on "dma0"
  sync.wait 3 on "vector" count 2
  func.return
}
// CHECK-LABEL: func.func @no_merge_across_own_op
// CHECK:         sync.signal 3 on "dma0"
// CHECK-NEXT:    tile.copy
// CHECK-NEXT:    sync.signal 3 on "dma0"
// CHECK-NEXT:    sync.wait 3 on "vector" count 2

// -----

// A credit protocol (the waiter primes the semaphore before the loop and drains it after) is
// not a one-signaller channel: optimize-sync neither removes it nor uses it as evidence, and
// the tiled matmul that insert-semaphores produced comes out unchanged.
func.func @credit_untouched(%x: memref<8x16xf32, "dram">, %w: memref<16x4xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %a = tile.alloc : memref<8x4xf32, "sram">
  %b = tile.alloc : memref<4x4xf32, "sram">
  %acc = tile.alloc : memref<8x4xf32, "acc">
  sync.signal 0 on "dma0"
  scf.for %k = %c0 to %c16 step %c4 {
    sync.wait 0 on "dma0"
    tile.copy %x[%c0, %k] to %a[%c0, %c0] sizes [8, 4] {sync.engine = "dma0"} : memref<8x16xf32, "dram">, memref<8x4xf32, "sram">
    tile.copy %w[%k, %c0] to %b[%c0, %c0] sizes [4, 4] {sync.engine = "dma0"} : memref<16x4xf32, "dram">, memref<4x4xf32, "sram">
    sync.signal 1 on "dma0"
    sync.wait 1 on "matrix"
    tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [8, 4, 4] {accumulate, sync.engine = "matrix"} : memref<8x4xf32, "sram">, memref<4x4xf32, "sram">, memref<8x4xf32, "acc">
    sync.signal 0 on "matrix"
  }
  sync.wait 0 on "dma0"
  func.return
}
// CHECK-LABEL: func.func @credit_untouched
// CHECK:         sync.signal 0 on "dma0"
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      sync.wait 0 on "dma0"
// CHECK-NEXT:      tile.copy
// CHECK-NEXT:      tile.copy
// CHECK-NEXT:      sync.signal 1 on "dma0"
// CHECK-NEXT:      sync.wait 1 on "matrix"
// CHECK-NEXT:      tile.matmul
// CHECK-NEXT:      sync.signal 0 on "matrix"
// CHECK-NEXT:    }
// CHECK-NEXT:    sync.wait 0 on "dma0"

// -----

// As @transitive_through_third_engine, plus a signal of semaphore 2 to core 1 (`peer 1`) and a
// second wait on this core's semaphore 2, whose signal comes from another core. Semaphore 2 is
// no channel of this function (FIFO matching would pair the peer signal with the first wait):
// every signal and wait of it stays (the two waits merge).
func.func @peer_signal_is_not_a_channel(%x: memref<4x8xf32, "dram">, %out: memref<4x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<4x8xf32, "sram">
  %b = tile.alloc : memref<4x8xf32, "sram">
  sync.signal 2 on "dma0" peer 1
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 8] {sync.engine = "dma0"} : memref<4x8xf32, "dram">, memref<4x8xf32, "sram">
  sync.signal 0 on "dma0"
  sync.signal 2 on "dma0"
  sync.wait 0 on "vector"
  tile.unary %a[%c0, %c0] to %b[%c0, %c0] sizes [4, 8] {op = "exp", sync.engine = "vector"} : memref<4x8xf32, "sram">, memref<4x8xf32, "sram">
  sync.signal 1 on "vector"
  sync.wait 1 on "dma1"
  sync.wait 2 on "dma1"
  sync.wait 2 on "dma1"
  tile.copy %a[%c0, %c0] to %out[%c0, %c0] sizes [4, 8] {sync.engine = "dma1"} : memref<4x8xf32, "sram">, memref<4x8xf32, "dram">
  func.return
}
// CHECK-LABEL: func.func @peer_signal_is_not_a_channel
// CHECK:         sync.signal 2 on "dma0" peer 1
// CHECK:         sync.signal 2 on "dma0"{{$}}
// CHECK:         sync.wait 2 on "dma1" count 2

// -----

// Repeated signals merge only when they go to the same core's semaphore.
func.func @merge_signals_per_core() {
  sync.signal 0 on "dma1" peer 1
  sync.signal 0 on "dma1" peer 1
  sync.signal 0 on "dma1"
  sync.wait 0 on "vector"
  func.return
}
// CHECK-LABEL: func.func @merge_signals_per_core
// CHECK-NEXT:    sync.signal 0 on "dma1" count 2 peer 1
// CHECK-NEXT:    sync.signal 0 on "dma1"{{$}}
// CHECK-NEXT:    sync.wait 0 on "vector"
