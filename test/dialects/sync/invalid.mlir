// RUN: aitc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Engines are dma<N>, matrix or vector.
func.func @unknown_engine() {
  sync.signal 0 on "gpu"
  func.return
}
// CHECK: unknown engine 'gpu' (expected dma0, dma1, ..., matrix or vector)

// -----

// A wait takes at least one unit.
func.func @zero_count() {
  "sync.wait"() {sem = 0 : i64, engine = "matrix", count = 0 : i64} : () -> ()
  func.return
}
// CHECK: sync.wait: count must be >= 1

// -----

// Semaphore ids are not negative.
func.func @negative_sem() {
  "sync.signal"() {sem = -1 : i64, engine = "dma0"} : () -> ()
  func.return
}
// CHECK: sync.signal: semaphore must be >= 0

// -----

// A signal's peer is a core id.
func.func @negative_peer() {
  "sync.signal"() {sem = 0 : i64, engine = "dma1", peer = -1 : i64} : () -> ()
  func.return
}
// CHECK: sync.signal: peer must be a core id (>= 0)

// -----

// A signal needs its engine.
func.func @no_engine() {
  "sync.signal"() {sem = 0 : i64} : () -> ()
  func.return
}
// CHECK: sync.signal needs a semaphore and an engine

// -----

// A barrier names an engine too.
func.func @barrier_engine() {
  "sync.barrier"() {engine = "dma"} : () -> ()
  func.return
}
// CHECK: unknown engine 'dma' (expected dma0, dma1, ..., matrix or vector)
