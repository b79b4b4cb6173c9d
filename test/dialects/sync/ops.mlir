// RUN: aitc-opt %s | aitc-opt | filecheck %s
// RUN: aitc-opt %s --print-op-generic | aitc-opt | filecheck %s

// A producer/consumer pair: DMA signals, the matrix engine waits.
func.func @signal_wait() {
  sync.signal 0 on "dma0"
  sync.wait 0 on "matrix"
  func.return
}
// CHECK-LABEL: func.func @signal_wait()
// CHECK-NEXT:    sync.signal 0 on "dma0"
// CHECK-NEXT:    sync.wait 0 on "matrix"
// CHECK-NEXT:    func.return

// Counts other than 1 are printed; 1 is the default.
func.func @counts() {
  sync.signal 3 on "vector" count 2
  sync.wait 3 on "dma1" count 2
  func.return
}
// CHECK-LABEL: func.func @counts()
// CHECK-NEXT:    sync.signal 3 on "vector" count 2
// CHECK-NEXT:    sync.wait 3 on "dma1" count 2

// A signal to another core's semaphore: `peer` after `count`; without it, this core's.
func.func @peer() {
  sync.signal 1 on "dma1" peer 3
  sync.signal 2 on "dma1" count 2 peer 0
  func.return
}
// CHECK-LABEL: func.func @peer()
// CHECK-NEXT:    sync.signal 1 on "dma1" peer 3
// CHECK-NEXT:    sync.signal 2 on "dma1" count 2 peer 0

// A cross-core barrier on one engine, with a location.
func.func @barrier() {
  sync.barrier on "dma0"
  func.return
}
// CHECK-LABEL: func.func @barrier()
// CHECK-NEXT:    sync.barrier on "dma0"

// A tile op bound to an engine (the sync.engine attribute) between semaphore ops.
func.func @bound(%a: memref<4x4xf32, "dram">, %b: memref<4x4xf32, "sram">) {
  %c0 = arith.constant 0 : index
  tile.copy %a[%c0, %c0] to %b[%c0, %c0] sizes [4, 4] {sync.engine = "dma0"} : memref<4x4xf32, "dram">, memref<4x4xf32, "sram">
  sync.signal 1 on "dma0"
  func.return
}
// CHECK-LABEL: func.func @bound
// CHECK:         tile.copy {{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:    sync.signal 1 on "dma0"
