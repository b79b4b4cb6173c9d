// RUN: aitc-opt %s --split-input-file --verify-diagnostics -p "convert-tile-to-sync{target=tiny}" | filecheck %s
// RUN: aitc-opt %s --split-input-file --verify-diagnostics -p "convert-tile-to-sync{target=server}" | filecheck %s --check-prefix=SERVER

// The four engine classes of a matmul kernel: the loads go to dma0, the matmul to the matrix
// engine, the accumulator read to the vector engine, the store to dma1.
func.func @matmul_kernel(%x: memref<8x4xf32, "dram">, %w: memref<4x4xf32, "dram">, %out: memref<8x4xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<8x4xf32, "sram">
  %b = tile.alloc : memref<4x4xf32, "sram">
  %acc = tile.alloc : memref<8x4xf32, "acc">
  %y = tile.alloc : memref<8x4xf32, "sram">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [8, 4] : memref<8x4xf32, "dram">, memref<8x4xf32, "sram">
  tile.copy %w[%c0, %c0] to %b[%c0, %c0] sizes [4, 4] : memref<4x4xf32, "dram">, memref<4x4xf32, "sram">
  tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [8, 4, 4] : memref<8x4xf32, "sram">, memref<4x4xf32, "sram">, memref<8x4xf32, "acc">
  tile.acc_read %acc[%c0, %c0] to %y[%c0, %c0] sizes [8, 4] {activation = "relu"} : memref<8x4xf32, "acc">, memref<8x4xf32, "sram">
  tile.copy %y[%c0, %c0] to %out[%c0, %c0] sizes [8, 4] : memref<8x4xf32, "sram">, memref<8x4xf32, "dram">
  func.return
}
// CHECK-LABEL: func.func @matmul_kernel
// CHECK:         tile.copy %x{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:    tile.copy %w{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:    tile.matmul {{.*}} {sync.engine = "matrix"}
// CHECK-NEXT:    tile.acc_read {{.*}} {activation = "relu", sync.engine = "vector"}
// CHECK-NEXT:    tile.copy %y{{.*}} {sync.engine = "dma1"}

// -----

// Every vector-engine op, inside a loop and a kernel: binding reaches nested regions.
func.func @vector_ops(%n: memref<8x1xf32, "sram">) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %a = tile.alloc : memref<8x8xf32, "sram">
  %q = tile.alloc : memref<8x8xi8, "sram">
  tile.kernel "k" {
    scf.for %i = %c0 to %c2 step %c1 {
      tile.binary %a[%c0, %c0], %a[%c0, %c0] to %a[%c0, %c0] sizes [8, 8] {op = "add"} : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">, memref<8x8xf32, "sram">
      tile.binary_imm %a[%c0, %c0] to %a[%c0, %c0] sizes [8, 8] {op = "mul", imm = 2.0 : f64} : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">
      tile.unary %a[%c0, %c0] to %a[%c0, %c0] sizes [8, 8] {op = "exp"} : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">
      tile.select %a[%c0, %c0], %a[%c0, %c0], %a[%c0, %c0] to %a[%c0, %c0] sizes [8, 8] : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">, memref<8x8xf32, "sram">, memref<8x8xf32, "sram">
      tile.reduce %a[%c0, %c0] to %n[%c0, %c0] sizes [8, 8] {op = "max"} : memref<8x8xf32, "sram">, memref<8x1xf32, "sram">
      tile.cast %a[%c0, %c0] to %q[%c0, %c0] sizes [8, 8] {scale = 0.5 : f64} : memref<8x8xf32, "sram">, memref<8x8xi8, "sram">
    }
  }
  func.return
}
// CHECK-LABEL: func.func @vector_ops
// CHECK-COUNT-6: sync.engine = "vector"

// -----

// On-chip copies (sram -> sram, sram -> acc) share dma0 with the loads on a two-queue target;
// a target with more queues gives them dma2, off the load and store queues.
func.func @on_chip_copies() {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<4x4xf32, "sram">
  %b = tile.alloc : memref<4x4xf32, "sram">
  %acc = tile.alloc : memref<4x4xf32, "acc">
  tile.copy %a[%c0, %c0] to %b[%c0, %c0] sizes [4, 4] : memref<4x4xf32, "sram">, memref<4x4xf32, "sram">
  tile.copy %b[%c0, %c0] to %acc[%c0, %c0] sizes [4, 4] : memref<4x4xf32, "sram">, memref<4x4xf32, "acc">
  func.return
}
// CHECK-LABEL: func.func @on_chip_copies
// CHECK:         tile.copy %a{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:    tile.copy %b{{.*}} {sync.engine = "dma0"}
// SERVER-LABEL: func.func @on_chip_copies
// SERVER:         tile.copy %a{{.*}} {sync.engine = "dma2"}
// SERVER-NEXT:    tile.copy %b{{.*}} {sync.engine = "dma2"}


// -----

// In a kernel the DMA ops spread over the queues (tiny: 10 + bytes/8 cycles each), the busiest
// first: the stores take dma1 (8 x 42 + 42 = 378); the load in the loop that stores may not
// (it would queue behind a store each iteration) and takes dma0 (336); the on-chip copy (336) joins it, the
// less busy queue then; the 2 KiB prologue load (266) and the small one (42) go to dma1; the
// load after the first store stays off dma1 too.
func.func @spread(%x: memref<64x8xf32, "dram">, %w: memref<64x8xf32, "dram">, %out: memref<64x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %a = tile.alloc : memref<8x8xf32, "sram">
  %b = tile.alloc : memref<64x8xf32, "sram">
  %c = tile.alloc : memref<8x8xf32, "sram">
  %y = tile.alloc : memref<8x8xf32, "sram">
  tile.kernel "k" {
    tile.copy %w[%c0, %c0] to %b[%c0, %c0] sizes [64, 8] : memref<64x8xf32, "dram">, memref<64x8xf32, "sram">
    tile.copy %x[%c0, %c0] to %c[%c0, %c0] sizes [8, 8] : memref<64x8xf32, "dram">, memref<8x8xf32, "sram">
    scf.for %i = %c0 to %c64 step %c8 {
      tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [8, 8] : memref<64x8xf32, "dram">, memref<8x8xf32, "sram">
      tile.copy %c[%c0, %c0] to %y[%c0, %c0] sizes [8, 8] : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">
      tile.binary %a[%c0, %c0], %y[%c0, %c0] to %y[%c0, %c0] sizes [8, 8] {op = "add"} : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">, memref<8x8xf32, "sram">
      tile.copy %y[%c0, %c0] to %out[%i, %c0] sizes [8, 8] : memref<8x8xf32, "sram">, memref<64x8xf32, "dram">
    }
    tile.copy %b[%c0, %c0] to %out[%c0, %c0] sizes [8, 8] : memref<64x8xf32, "sram">, memref<64x8xf32, "dram">
    tile.copy %w[%c8, %c0] to %c[%c0, %c0] sizes [8, 8] : memref<64x8xf32, "dram">, memref<8x8xf32, "sram">
  }
  func.return
}
// CHECK-LABEL: func.func @spread
// CHECK:         tile.copy %w[%c0, %c0] to %b{{.*}} {sync.engine = "dma1"}
// CHECK-NEXT:    tile.copy %x[%c0, %c0] to %c{{.*}} {sync.engine = "dma1"}
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      tile.copy %x[%i, %c0] to %a{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:      tile.copy %c[%c0, %c0] to %y{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:      tile.binary {{.*}} {op = "add", sync.engine = "vector"}
// CHECK-NEXT:      tile.copy %y[%c0, %c0] to %out{{.*}} {sync.engine = "dma1"}
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.copy %b[%c0, %c0] to %out{{.*}} {sync.engine = "dma1"}
// CHECK-NEXT:    tile.copy %w[%c8, %c0] to %c{{.*}} {sync.engine = "dma0"}

// -----

// A direct conv's shape: per output tile (a loop that stores once, at its end) a loop of
// chunk loads that stores nothing and computes less than it loads. Those loads meet a store
// only when their loop starts, so they spread over both queues (the larger, 8 x 4 x 138, on dma0, the other on dma1).
// The load of the storing loop's own body may queue behind its store too: the kernel's
// stores are light (2 x 138 cycles against 2 x (138 + 8 x 212) of loads, below 1/8).
func.func @nested(%x: memref<64x32xf32, "dram">, %w: memref<64x64xf32, "dram">, %out: memref<16x32xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %s = tile.alloc : memref<8x32xf32, "sram">
  %t = tile.alloc : memref<8x16xf32, "sram">
  %u = tile.alloc : memref<8x32xf32, "sram">
  tile.kernel "k" {
    scf.for %o = %c0 to %c16 step %c8 {
      tile.copy %x[%o, %c0] to %u[%c0, %c0] sizes [8, 32] : memref<64x32xf32, "dram">, memref<8x32xf32, "sram">
      scf.for %k = %c0 to %c64 step %c8 {
        tile.copy %x[%k, %c0] to %s[%c0, %c0] sizes [8, 32] : memref<64x32xf32, "dram">, memref<8x32xf32, "sram">
        tile.copy %w[%k, %c0] to %t[%c0, %c0] sizes [8, 16] : memref<64x64xf32, "dram">, memref<8x16xf32, "sram">
      }
      tile.copy %u[%c0, %c0] to %out[%o, %c0] sizes [8, 32] : memref<8x32xf32, "sram">, memref<16x32xf32, "dram">
    }
  }
  func.return
}
// CHECK-LABEL: func.func @nested
// CHECK:           tile.copy %x[%o, %c0] to %u{{.*}} {sync.engine = "dma1"}
// CHECK-NEXT:      scf.for
// CHECK-NEXT:        tile.copy %x[%k, %c0] to %s{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:        tile.copy %w[%k, %c0] to %t{{.*}} {sync.engine = "dma1"}
// CHECK-NEXT:      }
// CHECK-NEXT:      tile.copy %u[%c0, %c0] to %out{{.*}} {sync.engine = "dma1"}

// -----

// The same with a smaller read at the storing loop's start (8 x 16: 74 cycles) than its store
// (138): on dma1 the read would load only after the previous trip's store, which waits for
// that trip's compute, and the trip's first compute needs it. It stays on dma0 even though the
// stores are light (an int8 FFN2's peeled first K step: 145,971 -> 139,068 simulated cycles).
func.func @nested_step_prologue(%x: memref<64x32xf32, "dram">, %w: memref<64x64xf32, "dram">, %out: memref<16x32xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %s = tile.alloc : memref<8x32xf32, "sram">
  %t = tile.alloc : memref<8x16xf32, "sram">
  %u = tile.alloc : memref<8x32xf32, "sram">
  tile.kernel "k" {
    scf.for %o = %c0 to %c16 step %c8 {
      tile.copy %x[%o, %c0] to %u[%c0, %c0] sizes [8, 16] : memref<64x32xf32, "dram">, memref<8x32xf32, "sram">
      scf.for %k = %c0 to %c64 step %c8 {
        tile.copy %x[%k, %c0] to %s[%c0, %c0] sizes [8, 32] : memref<64x32xf32, "dram">, memref<8x32xf32, "sram">
        tile.copy %w[%k, %c0] to %t[%c0, %c0] sizes [8, 16] : memref<64x64xf32, "dram">, memref<8x16xf32, "sram">
      }
      tile.copy %u[%c0, %c0] to %out[%o, %c0] sizes [8, 32] : memref<8x32xf32, "sram">, memref<16x32xf32, "dram">
    }
  }
  func.return
}
// CHECK-LABEL: func.func @nested_step_prologue
// CHECK:           tile.copy %x[%o, %c0] to %u{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:      scf.for
// CHECK:           tile.copy %u[%c0, %c0] to %out{{.*}} {sync.engine = "dma1"}

// -----

// The same loads, but the chunk loop also runs an exp over the 8 x 32 tile (2 + 64 x 4 = 258
// vector cycles against 138 + 74 of loads): the loop waits for its compute, not its loads, so
// they stay off dma1, where they would wait behind the store when the next output tile starts
// (four chunks per tile: the store is not light, 138 cycles against 4 x 212).
func.func @nested_compute(%x: memref<64x32xf32, "dram">, %w: memref<64x64xf32, "dram">, %out: memref<16x32xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %s = tile.alloc : memref<8x32xf32, "sram">
  %t = tile.alloc : memref<8x16xf32, "sram">
  %u = tile.alloc : memref<8x32xf32, "sram">
  tile.kernel "k" {
    scf.for %o = %c0 to %c16 step %c8 {
      scf.for %k = %c0 to %c32 step %c8 {
        tile.copy %x[%k, %c0] to %s[%c0, %c0] sizes [8, 32] : memref<64x32xf32, "dram">, memref<8x32xf32, "sram">
        tile.copy %w[%k, %c0] to %t[%c0, %c0] sizes [8, 16] : memref<64x64xf32, "dram">, memref<8x16xf32, "sram">
        tile.unary %s[%c0, %c0] to %u[%c0, %c0] sizes [8, 32] {op = "exp"} : memref<8x32xf32, "sram">, memref<8x32xf32, "sram">
      }
      tile.copy %u[%c0, %c0] to %out[%o, %c0] sizes [8, 32] : memref<8x32xf32, "sram">, memref<16x32xf32, "dram">
    }
  }
  func.return
}
// CHECK-LABEL: func.func @nested_compute
// CHECK:           scf.for %k
// CHECK-NEXT:        tile.copy %x[%k, %c0] to %s{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:        tile.copy %w[%k, %c0] to %t{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:        tile.unary {{.*}} {op = "exp", sync.engine = "vector"}
// -----

// Transposes and gathers are DMAs too: by direction, like copies.
func.func @transpose_gather(%t: memref<16x8xf32, "dram">, %x: memref<8x4xf32, "dram">, %o: memref<8x4xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %ids = tile.alloc : memref<4x1xi32, "sram">
  %e = tile.alloc : memref<4x8xf32, "sram">
  %xt = tile.alloc : memref<4x8xf32, "sram">
  tile.gather %t[%c0, %c0], %ids[%c0, %c0] to %e[%c0, %c0] sizes [4, 8] : memref<16x8xf32, "dram">, memref<4x1xi32, "sram">, memref<4x8xf32, "sram">
  tile.transpose %x[%c0, %c0] to %xt[%c0, %c0] sizes [8, 4] : memref<8x4xf32, "dram">, memref<4x8xf32, "sram">
  tile.transpose %e[%c0, %c0] to %o[%c0, %c0] sizes [4, 8] : memref<4x8xf32, "sram">, memref<8x4xf32, "dram">
  func.return
}
// CHECK-LABEL: func.func @transpose_gather
// CHECK:         tile.gather {{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:    tile.transpose %x{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:    tile.transpose %e{{.*}} {sync.engine = "dma1"}

// -----

// An op bound before the pass keeps its engine when the engine suits it (here a load that a
// colleague moved to the store queue on purpose).
func.func @keeps_valid_binding(%x: memref<4x4xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<4x4xf32, "sram">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 4] {sync.engine = "dma1"} : memref<4x4xf32, "dram">, memref<4x4xf32, "sram">
  func.return
}
// CHECK-LABEL: func.func @keeps_valid_binding
// CHECK:         tile.copy %x{{.*}} {sync.engine = "dma1"}

// -----

// A binding to an engine of the wrong class is an error, not silently replaced.
func.func @wrong_engine(%x: memref<4x4xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<4x4xf32, "sram">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 4] {sync.engine = "matrix"} : memref<4x4xf32, "dram">, memref<4x4xf32, "sram">
  func.return
}
// CHECK: tile.copy is bound to 'matrix', which is not a dma engine of target 'tiny' (2 DMA queues)

// -----

// A DMA queue the target does not have (tiny has dma0 and dma1) is an error too.
func.func @missing_queue(%x: memref<4x4xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<4x4xf32, "sram">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 4] {sync.engine = "dma3"} : memref<4x4xf32, "dram">, memref<4x4xf32, "sram">
  func.return
}
// CHECK: tile.copy is bound to 'dma3', which is not a dma engine of target 'tiny'

// -----

// A stage and its zero padding, as a channels-last conv loads them each block: the on-chip
// copy of the padding columns completes the buffer the DRAM read of its block fills, so it
// follows that read onto its queue (dma0) although dma1 is less busy. On dma1 it would queue
// behind the previous block's store, which waits for that block's compute: the next block's
// compute would wait for it. (The loop computes longer than it loads, 26 + 98 vector cycles
// against 42: a load-bound loop would spread its copies instead.)
func.func @stage_padding(%x: memref<64x8xf32, "dram">, %out: memref<64x1xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c64 = arith.constant 64 : index
  %zero = tile.alloc : memref<8x1xf32, "sram">
  %stage = tile.alloc : memref<8x10xf32, "sram">
  %y = tile.alloc : memref<8x1xf32, "sram">
  tile.kernel "k" {
    scf.for %i = %c0 to %c64 step %c8 {
      tile.copy %x[%i, %c0] to %stage[%c0, %c1] sizes [8, 8] : memref<64x8xf32, "dram">, memref<8x10xf32, "sram">
      tile.copy %zero[%c0, %c0] to %stage[%c0, %c0] sizes [8, 1] : memref<8x1xf32, "sram">, memref<8x10xf32, "sram">
      tile.copy %zero[%c0, %c0] to %stage[%c0, %c9] sizes [8, 1] : memref<8x1xf32, "sram">, memref<8x10xf32, "sram">
      tile.unary %stage[%c0, %c0] to %stage[%c0, %c0] sizes [8, 10] {op = "exp"} : memref<8x10xf32, "sram">, memref<8x10xf32, "sram">
      tile.reduce %stage[%c0, %c0] to %y[%c0, %c0] sizes [8, 10] {op = "sum"} : memref<8x10xf32, "sram">, memref<8x1xf32, "sram">
      tile.copy %y[%c0, %c0] to %out[%i, %c0] sizes [8, 1] : memref<8x1xf32, "sram">, memref<64x1xf32, "dram">
    }
  }
  func.return
}
// CHECK-LABEL: func.func @stage_padding
// CHECK:           tile.copy %x{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:      tile.copy %zero{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:      tile.copy %zero{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:      tile.unary
// CHECK-NEXT:      tile.reduce
// CHECK-NEXT:      tile.copy %y{{.*}} {sync.engine = "dma1"}

// -----

// The same stage in a loop that loads longer than it computes (42 cycles of DRAM reads against
// 26 of vector work): the loop waits for its loads anyway, so the padding copies take the
// less busy queue instead of following the load.
func.func @stage_padding_load_bound(%x: memref<64x8xf32, "dram">, %out: memref<64x1xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c64 = arith.constant 64 : index
  %zero = tile.alloc : memref<8x1xf32, "sram">
  %stage = tile.alloc : memref<8x10xf32, "sram">
  %y = tile.alloc : memref<8x1xf32, "sram">
  tile.kernel "k" {
    scf.for %i = %c0 to %c64 step %c8 {
      tile.copy %x[%i, %c0] to %stage[%c0, %c1] sizes [8, 8] : memref<64x8xf32, "dram">, memref<8x10xf32, "sram">
      tile.copy %zero[%c0, %c0] to %stage[%c0, %c0] sizes [8, 1] : memref<8x1xf32, "sram">, memref<8x10xf32, "sram">
      tile.copy %zero[%c0, %c0] to %stage[%c0, %c9] sizes [8, 1] : memref<8x1xf32, "sram">, memref<8x10xf32, "sram">
      tile.reduce %stage[%c0, %c0] to %y[%c0, %c0] sizes [8, 10] {op = "sum"} : memref<8x10xf32, "sram">, memref<8x1xf32, "sram">
      tile.copy %y[%c0, %c0] to %out[%i, %c0] sizes [8, 1] : memref<8x1xf32, "sram">, memref<64x1xf32, "dram">
    }
  }
  func.return
}
// CHECK-LABEL: func.func @stage_padding_load_bound
// CHECK:           tile.copy %x{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:      tile.copy %zero{{.*}} {sync.engine = "dma1"}
// CHECK-NEXT:      tile.copy %zero{{.*}} {sync.engine = "dma1"}
// CHECK-NEXT:      tile.reduce
// CHECK-NEXT:      tile.copy %y{{.*}} {sync.engine = "dma1"}

// -----

// A block's tap copy out of its stage (an on-chip copy of loaded data) in a loop that loads
// and copies for longer than it computes, but that multi-buffer left serial (no
// `buffer_depth`): one copy cannot be split between the queues, and on dma1 it would wait for
// the previous block's store, so it stays behind its load on dma0.
func.func @serial_tap_copy(%x: memref<64x8xf32, "dram">, %out: memref<64x1xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %stage = tile.alloc : memref<8x8xf32, "sram">
  %patch = tile.alloc : memref<8x8xf32, "sram">
  %y = tile.alloc : memref<8x1xf32, "sram">
  tile.kernel "k" {
    scf.for %i = %c0 to %c64 step %c8 {
      tile.copy %x[%i, %c0] to %stage[%c0, %c0] sizes [8, 8] : memref<64x8xf32, "dram">, memref<8x8xf32, "sram">
      tile.copy %stage[%c0, %c0] to %patch[%c0, %c0] sizes [8, 8] : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">
      tile.reduce %patch[%c0, %c0] to %y[%c0, %c0] sizes [8, 8] {op = "sum"} : memref<8x8xf32, "sram">, memref<8x1xf32, "sram">
      tile.copy %y[%c0, %c0] to %out[%i, %c0] sizes [8, 1] : memref<8x1xf32, "sram">, memref<64x1xf32, "dram">
    }
  }
  func.return
}
// CHECK-LABEL: func.func @serial_tap_copy
// CHECK:           tile.copy %x{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:      tile.copy %stage{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:      tile.reduce
// CHECK-NEXT:      tile.copy %y{{.*}} {sync.engine = "dma1"}

// -----

// The same loop rotated by multi-buffer (depth 2): the next block's load overlaps this one, so
// the copy takes the less busy queue.
func.func @pipelined_tap_copy(%x: memref<64x8xf32, "dram">, %out: memref<64x1xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %stage = tile.alloc : memref<8x8xf32, "sram">
  %patch = tile.alloc : memref<8x8xf32, "sram">
  %y = tile.alloc : memref<8x1xf32, "sram">
  tile.kernel "k" {
    scf.for %i = %c0 to %c64 step %c8 {
      tile.copy %x[%i, %c0] to %stage[%c0, %c0] sizes [8, 8] : memref<64x8xf32, "dram">, memref<8x8xf32, "sram">
      tile.copy %stage[%c0, %c0] to %patch[%c0, %c0] sizes [8, 8] : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">
      tile.reduce %patch[%c0, %c0] to %y[%c0, %c0] sizes [8, 8] {op = "sum"} : memref<8x8xf32, "sram">, memref<8x1xf32, "sram">
      tile.copy %y[%c0, %c0] to %out[%i, %c0] sizes [8, 1] : memref<8x1xf32, "sram">, memref<64x1xf32, "dram">
    } {buffer_depth = 2 : i64}
  }
  func.return
}
// CHECK-LABEL: func.func @pipelined_tap_copy
// CHECK:           tile.copy %x{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:      tile.copy %stage{{.*}} {sync.engine = "dma1"}

// -----

// Serial, with two tap copies a block: they split over the queues.
func.func @serial_tap_copies(%x: memref<64x8xf32, "dram">, %out: memref<64x1xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %stage = tile.alloc : memref<8x8xf32, "sram">
  %patch = tile.alloc : memref<8x8xf32, "sram">
  %patch2 = tile.alloc : memref<8x8xf32, "sram">
  %y = tile.alloc : memref<8x1xf32, "sram">
  tile.kernel "k" {
    scf.for %i = %c0 to %c64 step %c8 {
      tile.copy %x[%i, %c0] to %stage[%c0, %c0] sizes [8, 8] : memref<64x8xf32, "dram">, memref<8x8xf32, "sram">
      tile.copy %stage[%c0, %c0] to %patch[%c0, %c0] sizes [8, 8] : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">
      tile.copy %stage[%c0, %c0] to %patch2[%c0, %c0] sizes [8, 8] : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">
      tile.binary %patch[%c0, %c0], %patch2[%c0, %c0] to %patch[%c0, %c0] sizes [8, 8] {op = "add"} : memref<8x8xf32, "sram">, memref<8x8xf32, "sram">, memref<8x8xf32, "sram">
      tile.reduce %patch[%c0, %c0] to %y[%c0, %c0] sizes [8, 8] {op = "sum"} : memref<8x8xf32, "sram">, memref<8x1xf32, "sram">
      tile.copy %y[%c0, %c0] to %out[%i, %c0] sizes [8, 1] : memref<8x1xf32, "sram">, memref<64x1xf32, "dram">
    }
  }
  func.return
}
// CHECK-LABEL: func.func @serial_tap_copies
// CHECK:           tile.copy %x{{.*}} {sync.engine = "dma0"}
// CHECK-NEXT:      tile.copy %stage{{.*}} {sync.engine = "dma1"}
// CHECK-NEXT:      tile.copy %stage{{.*}} {sync.engine = "dma0"}
