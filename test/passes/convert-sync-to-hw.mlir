// RUN: aitc-opt %s --split-input-file --verify-diagnostics -p 'convert-sync-to-hw{target=tiny}' | filecheck %s
// RUN: aitc-opt %s --split-input-file --verify-diagnostics --print-debuginfo -p 'convert-sync-to-hw{target=tiny}' \
// RUN:   | filecheck %s --check-prefix=LOC
// RUN: aitc-opt %s --split-input-file --verify-diagnostics -p 'convert-sync-to-hw{target="edge"}' \
// RUN:   | filecheck %s --check-prefix=EDGE

// A DMA load of a 4 x 8 block out of an 8 x 16 input: one strided dma_in (rows of 32 bytes,
// 64 bytes apart in DRAM, dense in SRAM); arguments become hw.tensor, constants hw.const.
func.func @dma_load(%x: memref<8x16xf32, "dram"> {graph.name = "x", tile.offset = 0 : i64},
                    %y: memref<4x8xf32, "dram"> {graph.name = "y", tile.output, tile.offset = 512 : i64}) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %w = tile.const dense<[1.0, 2.0]> : tensor<2xf32> {offset = 640 : i64}
  %a = tile.alloc {offset = 64 : i64} : memref<4x8xf32, "sram">
  tile.copy %x[%c0, %c8] to %a[%c0, %c0] sizes [4, 8] {sync.engine = "dma0"}
      : memref<8x16xf32, "dram">, memref<4x8xf32, "sram">
  func.return
}
// CHECK-LABEL: hw.program @dma_load target "tiny" {
// CHECK-NEXT:    hw.tensor "x" input dram[0x0] : tensor<8x16xf32>
// CHECK-NEXT:    hw.tensor "y" output dram[0x200] : tensor<4x8xf32>
// CHECK-NEXT:    hw.const dram[0x280] = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    hw.core 0 {
// CHECK-NEXT:      hw.dma_in sram[0x40] <- dram[0x20], rows=4, row_bytes=32, src_stride=64
// CHECK-NEXT:      hw.end
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// EDGE-LABEL:  hw.program @dma_load target "edge" {

// -----

// 3-D windows: dims contiguous on both sides merge (full 8-element rows of 3 consecutive rows
// are 96 contiguous bytes); a window whose rows do not merge (4 of 8 elements) gets an hw.loop
// over its planes around one strided DMA, advancing both addresses.
func.func @window_3d(%x: memref<2x4x8xf32, "dram"> {graph.name = "x", tile.offset = 0 : i64}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = tile.alloc {offset = 0 : i64} : memref<2x3x8xf32, "sram">
  %b = tile.alloc {offset = 256 : i64} : memref<2x3x4xf32, "sram">
  tile.copy %x[%c0, %c1, %c0] to %a[%c0, %c0, %c0] sizes [2, 3, 8] {sync.engine = "dma0"}
      : memref<2x4x8xf32, "dram">, memref<2x3x8xf32, "sram">
  tile.copy %x[%c0, %c1, %c0] to %b[%c0, %c0, %c0] sizes [2, 3, 4] {sync.engine = "dma0"}
      : memref<2x4x8xf32, "dram">, memref<2x3x4xf32, "sram">
  func.return
}
// CHECK-LABEL: hw.program @window_3d
// CHECK:         hw.dma_in sram[0x0] <- dram[0x20], rows=2, row_bytes=96, src_stride=128
// CHECK-NEXT:    hw.loop 2 {
// CHECK-NEXT:      hw.dma_in sram[0x100 + 0x30*i0] <- dram[0x20 + 0x80*i0], rows=3, row_bytes=16, src_stride=32
// CHECK-NEXT:    }
// CHECK-NEXT:    hw.end

// -----

// scf.for -> hw.loop with the trip count; the index (%i * 4 + 2 - 1 = 1 + 4*i0 rows, from
// lb 0 step 1 over [0, 3)) becomes an address step of 4 rows x 64 bytes.
func.func @loop_steps(%x: memref<16x16xf32, "dram"> {graph.name = "x", tile.offset = 0 : i64}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %a = tile.alloc {offset = 0 : i64} : memref<2x16xf32, "sram">
  scf.for %i = %c0 to %c3 step %c1 {
    %m = arith.muli %c4, %i : index
    %p = arith.addi %m, %c2 : index
    %r = arith.subi %p, %c1 : index
    tile.copy %x[%r, %c0] to %a[%c0, %c0] sizes [2, 16] {sync.engine = "dma0"}
        : memref<16x16xf32, "dram">, memref<2x16xf32, "sram">
  }
  func.return
}
// CHECK-LABEL: hw.program @loop_steps
// CHECK:         hw.loop 3 {
// CHECK-NEXT:      hw.dma_in sram[0x0] <- dram[0x40 + 0x100*i0], row_bytes=128
// CHECK-NEXT:    }

// -----

// Nested loops: the outer loop is i0, the inner i1; a window indexed by both steps on both.
// A loop with a non-zero lower bound and step 2 counts its trips; zero-trip loops vanish and
// one-trip loops run their body once, inline.
func.func @nested(%x: memref<8x8xf32, "dram"> {graph.name = "x", tile.offset = 0 : i64}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %a = tile.alloc {offset = 0 : i64} : memref<2x2xf32, "sram">
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c2 to %c8 step %c2 {
      %r = arith.muli %i, %c4 : index
      tile.copy %x[%r, %j] to %a[%c0, %c0] sizes [2, 2] {sync.engine = "dma0"}
          : memref<8x8xf32, "dram">, memref<2x2xf32, "sram">
    }
    scf.for %k = %c4 to %c4 step %c1 {
      tile.copy %x[%k, %k] to %a[%c0, %c0] sizes [2, 2] {sync.engine = "dma0"}
          : memref<8x8xf32, "dram">, memref<2x2xf32, "sram">
    }
    scf.for %k = %c4 to %c8 step %c8 {
      tile.copy %x[%k, %i] to %a[%c0, %c0] sizes [2, 2] {sync.engine = "dma0"}
          : memref<8x8xf32, "dram">, memref<2x2xf32, "sram">
    }
  }
  func.return
}
// CHECK-LABEL: hw.program @nested
// CHECK:         hw.loop 2 {
// CHECK-NEXT:      hw.loop 3 {
// CHECK-NEXT:        hw.dma_in sram[0x0] <- dram[0x8 + 0x80*i0 + 0x8*i1], rows=2, row_bytes=8, src_stride=32
// CHECK-NEXT:      }
// CHECK-NEXT:      hw.dma_in sram[0x0] <- dram[0x80 + 0x4*i0], rows=2, row_bytes=8, src_stride=32
// CHECK-NEXT:    }
// CHECK-NEXT:    hw.end

// -----

// Matmul on windows of wider buffers: strides are the row pitches in elements (8 each; rhs is
// read as n x k with transpose_rhs); a single-row window needs no stride.
func.func @matmul_strides(%x: memref<4x4xf32, "dram"> {graph.name = "x", tile.offset = 0 : i64}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %lhs = tile.alloc {offset = 0 : i64} : memref<4x8xf32, "sram">
  %rhs = tile.alloc {offset = 128 : i64} : memref<4x8xf32, "sram">
  %acc = tile.alloc {offset = 0 : i64} : memref<4x8xf32, "acc">
  tile.matmul %lhs[%c0, %c4], %rhs[%c0, %c0] to %acc[%c0, %c4] sizes [4, 4, 4]
      {accumulate, transpose_rhs, sync.engine = "matrix"}
      : memref<4x8xf32, "sram">, memref<4x8xf32, "sram">, memref<4x8xf32, "acc">
  tile.matmul %lhs[%c0, %c0], %rhs[%c0, %c0] to %acc[%c0, %c0] sizes [1, 4, 4] {sync.engine = "matrix"}
      : memref<4x8xf32, "sram">, memref<4x8xf32, "sram">, memref<4x8xf32, "acc">
  func.return
}
// CHECK-LABEL: hw.program @matmul_strides
// CHECK:         hw.matmul acc[0x10] <- sram[0x10], sram[0x80], m=4, k=4, n=4, lhs_stride=8, rhs_stride=8, acc_stride=8, accumulate, transpose_rhs
// CHECK-NEXT:    hw.matmul acc[0x0] <- sram[0x0], sram[0x80], m=1, k=4, n=4, rhs_stride=8

// -----

// Vector ops: dtype from the element type, strides in elements (0 = dense); b of a row or
// scalar broadcast is one row, of a col broadcast a column with its pitch as b_stride.
func.func @vector(%x: memref<4x4xf32, "dram"> {graph.name = "x", tile.offset = 0 : i64}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %a = tile.alloc {offset = 0 : i64} : memref<4x8xf32, "sram">
  %b = tile.alloc {offset = 128 : i64} : memref<4x4xf32, "sram">
  %d = tile.alloc {offset = 192 : i64} : memref<4x4xf32, "sram">
  %i = tile.alloc {offset = 256 : i64} : memref<4x4xi8, "sram">
  %s = tile.alloc {offset = 320 : i64} : memref<4x1xf32, "sram">
  %j = tile.alloc {offset = 384 : i64} : memref<4x4xi32, "sram">
  %acc = tile.alloc {offset = 0 : i64} : memref<4x4xi32, "acc">
  tile.binary %a[%c0, %c4], %b[%c0, %c0] to %d[%c0, %c0] sizes [4, 4] {op = "add", broadcast = "row", sync.engine = "vector"}
      : memref<4x8xf32, "sram">, memref<4x4xf32, "sram">, memref<4x4xf32, "sram">
  tile.binary %d[%c0, %c0], %b[%c0, %c0] to %d[%c0, %c0] sizes [4, 4] {op = "mul", broadcast = "col", sync.engine = "vector"}
      : memref<4x4xf32, "sram">, memref<4x4xf32, "sram">, memref<4x4xf32, "sram">
  tile.binary %d[%c0, %c0], %b[%c0, %c0] to %a[%c0, %c0] sizes [4, 4] {op = "sub", broadcast = "scalar", sync.engine = "vector"}
      : memref<4x4xf32, "sram">, memref<4x4xf32, "sram">, memref<4x8xf32, "sram">
  tile.binary_imm %i[%c0, %c0] to %i[%c0, %c0] sizes [4, 4] {op = "max", imm = 0.0 : f64, sync.engine = "vector"}
      : memref<4x4xi8, "sram">, memref<4x4xi8, "sram">
  tile.unary %a[%c0, %c0] to %d[%c0, %c0] sizes [4, 4] {op = "tanh", sync.engine = "vector"}
      : memref<4x8xf32, "sram">, memref<4x4xf32, "sram">
  tile.select %d[%c0, %c0], %b[%c0, %c0], %d[%c0, %c0] to %d[%c0, %c0] sizes [4, 4] {sync.engine = "vector"}
      : memref<4x4xf32, "sram">, memref<4x4xf32, "sram">, memref<4x4xf32, "sram">, memref<4x4xf32, "sram">
  tile.select %d[%c0, %c0], %a[%c0, %c0], %b[%c0, %c0] to %d[%c0, %c0] sizes [4, 4] {sync.engine = "vector"}
      : memref<4x4xf32, "sram">, memref<4x8xf32, "sram">, memref<4x4xf32, "sram">, memref<4x4xf32, "sram">
  tile.reduce %a[%c0, %c0] to %s[%c0, %c0] sizes [4, 8] {op = "max", sync.engine = "vector"}
      : memref<4x8xf32, "sram">, memref<4x1xf32, "sram">
  tile.cast %acc[%c0, %c0] to %i[%c0, %c0] sizes [4, 4] {scale = 0.5 : f64, sync.engine = "vector"}
      : memref<4x4xi32, "acc">, memref<4x4xi8, "sram">
  tile.acc_read %acc[%c0, %c0] to %j[%c0, %c0] sizes [1, 4] {sync.engine = "vector"}
      : memref<4x4xi32, "acc">, memref<4x4xi32, "sram">
  func.return
}
// CHECK-LABEL: hw.program @vector
// CHECK:         hw.vbinary sram[0xc0] <- sram[0x10], sram[0x80], op=add, rows=4, cols=4, broadcast=row, src_stride=8
// CHECK-NEXT:    hw.vbinary sram[0xc0] <- sram[0xc0], sram[0x80], op=mul, rows=4, cols=4, broadcast=col, b_stride=4
// CHECK-NEXT:    hw.vbinary sram[0x0] <- sram[0xc0], sram[0x80], op=sub, rows=4, cols=4, broadcast=scalar, dst_stride=8
// CHECK-NEXT:    hw.vimm sram[0x100] <- sram[0x100], op=max, imm=0.0, rows=4, cols=4, dtype=i8
// CHECK-NEXT:    hw.vunary sram[0xc0] <- sram[0x0], op=tanh, rows=4, cols=4, src_stride=8
// CHECK-NEXT:    hw.vselect sram[0xc0] <- sram[0xc0], sram[0x80], sram[0xc0], rows=4, cols=4
// Sources with different pitches cannot share vselect's src_stride: one row at a time.
// CHECK-NEXT:    hw.loop 4 {
// CHECK-NEXT:      hw.vselect sram[0xc0 + 0x10*i0] <- sram[0xc0 + 0x10*i0], sram[0x0 + 0x20*i0], sram[0x80 + 0x10*i0], cols=4
// CHECK-NEXT:    }
// CHECK-NEXT:    hw.vreduce sram[0x140] <- sram[0x0], op=max, rows=4, cols=8
// CHECK-NEXT:    hw.vcast sram[0x100] <- acc[0x0], rows=4, cols=4, from=i32, to=i8, scale=0.5
// CHECK-NEXT:    hw.acc_read sram[0x180] <- acc[0x0], cols=4, dtype=i32

// -----

// Semaphores and barriers keep their engines; a DMA's queue comes from its engine and is only
// written when it is not the instruction's default (dma_in: dma0, dma_out: dma1).
func.func @semaphores(%y: memref<4x4xf32, "dram"> {graph.name = "y", tile.output, tile.offset = 0 : i64}) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc {offset = 0 : i64} : memref<4x4xf32, "sram">
  sync.signal 3 on "vector" count 2
  sync.wait 3 on "dma0" count 2
  tile.copy %a[%c0, %c0] to %y[%c0, %c0] sizes [4, 4] {sync.engine = "dma0"}
      : memref<4x4xf32, "sram">, memref<4x4xf32, "dram">
  sync.signal 1 on "dma0"
  sync.wait 1 on "dma1"
  tile.copy %y[%c0, %c0] to %a[%c0, %c0] sizes [4, 4] {sync.engine = "dma1"}
      : memref<4x4xf32, "dram">, memref<4x4xf32, "sram">
  tile.copy %a[%c0, %c0] to %y[%c0, %c0] sizes [4, 4] {sync.engine = "dma1"}
      : memref<4x4xf32, "sram">, memref<4x4xf32, "dram">
  sync.barrier on "matrix"
  func.return
}
// CHECK-LABEL: hw.program @semaphores
// CHECK:         hw.sem_signal 3, engine=vector, count=2
// CHECK-NEXT:    hw.sem_wait 3, engine=dma0, count=2
// CHECK-NEXT:    hw.dma_out dram[0x0] <- sram[0x0], row_bytes=64, queue=0
// CHECK-NEXT:    hw.sem_signal 1, engine=dma0
// CHECK-NEXT:    hw.sem_wait 1, engine=dma1
// CHECK-NEXT:    hw.dma_in sram[0x0] <- dram[0x0], row_bytes=64, queue=1
// CHECK-NEXT:    hw.dma_out dram[0x0] <- sram[0x0], row_bytes=64
// CHECK-NEXT:    hw.barrier engine=matrix
// CHECK-NEXT:    hw.end

// -----

// A signal to another core's semaphore keeps its peer (tiny has cores 0 and 1).
func.func @peer_signal() {
  sync.signal 2 on "dma1" count 2 peer 1
  func.return
}
// CHECK-LABEL: hw.program @peer_signal
// CHECK:         hw.sem_signal 2, engine=dma1, count=2, peer=1
// CHECK-NEXT:    hw.end

// -----

// Transpose: one DMA per column of the 6 x 2 source (the shorter side), each moving 6 single
// elements 8 bytes apart (the src row pitch) into one dense dst row.
func.func @transpose(%x: memref<6x2xf32, "dram"> {graph.name = "x", tile.offset = 0 : i64}) {
  %c0 = arith.constant 0 : index
  %t = tile.alloc {offset = 0 : i64} : memref<2x6xf32, "sram">
  %u = tile.alloc {offset = 64 : i64} : memref<6x2xf32, "sram">
  tile.transpose %x[%c0, %c0] to %t[%c0, %c0] sizes [6, 2] {sync.engine = "dma0"}
      : memref<6x2xf32, "dram">, memref<2x6xf32, "sram">
  tile.transpose %t[%c0, %c0] to %u[%c0, %c0] sizes [2, 6] {sync.engine = "dma0"}
      : memref<2x6xf32, "sram">, memref<6x2xf32, "sram">
  func.return
}
// CHECK-LABEL: hw.program @transpose
// CHECK:         hw.loop 2 {
// CHECK-NEXT:      hw.dma_in sram[0x0 + 0x18*i0] <- dram[0x0 + 0x4*i0], rows=6, row_bytes=4, src_stride=8
// CHECK-NEXT:    }
// On chip, and with the shorter side first: one DMA per src row, into a dst column.
// CHECK-NEXT:    hw.loop 2 {
// CHECK-NEXT:      hw.dma_local sram[0x40 + 0x4*i0] <- sram[0x0 + 0x18*i0], rows=6, row_bytes=4, dst_stride=8
// CHECK-NEXT:    }

// -----

// Gather: table rows are the table's pitch apart; the dense i32 index column is read from SRAM.
func.func @gather(%table: memref<10x8xf32, "dram"> {graph.name = "table", tile.offset = 0 : i64}) {
  %c0 = arith.constant 0 : index
  %ids = tile.alloc {offset = 0 : i64} : memref<4x1xi32, "sram">
  %e = tile.alloc {offset = 64 : i64} : memref<4x16xf32, "sram">
  tile.gather %table[%c0, %c0], %ids[%c0, %c0] to %e[%c0, %c0] sizes [4, 8] {sync.engine = "dma0"}
      : memref<10x8xf32, "dram">, memref<4x1xi32, "sram">, memref<4x16xf32, "sram">
  func.return
}
// CHECK-LABEL: hw.program @gather
// CHECK:         hw.dma_gather sram[0x40] <- dram[0x0], sram[0x0], rows=4, row_bytes=32, dst_stride=64, table_rows=10

// -----

// tile.kernel bodies are inlined; their ONNX location names every instruction (an op's own
// location wins).
func.func @kernel(%x: memref<4x4xf32, "dram"> {graph.name = "x", tile.offset = 0 : i64}) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc {offset = 0 : i64} : memref<4x4xf32, "sram">
  tile.kernel "relu1" {
    tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 4] {sync.engine = "dma0"}
        : memref<4x4xf32, "dram">, memref<4x4xf32, "sram">
    sync.signal 0 on "dma0"
    sync.wait 0 on "vector"
    tile.unary %a[%c0, %c0] to %a[%c0, %c0] sizes [4, 4] {op = "relu", sync.engine = "vector"}
        : memref<4x4xf32, "sram">, memref<4x4xf32, "sram"> loc("relu_inner")
  } loc("relu1")
  func.return
}
// CHECK-LABEL: hw.program @kernel
// CHECK:         hw.dma_in sram[0x0] <- dram[0x0], row_bytes=64
// CHECK-NEXT:    hw.sem_signal 0, engine=dma0
// CHECK-NEXT:    hw.sem_wait 0, engine=vector
// CHECK-NEXT:    hw.vunary sram[0x0] <- sram[0x0], op=relu, rows=4, cols=4
// CHECK-NEXT:    hw.end
// LOC-LABEL:     hw.program @kernel
// LOC:           hw.dma_in sram[0x0] <- dram[0x0], row_bytes=64 loc("relu1")
// LOC-NEXT:      hw.sem_signal 0, engine=dma0 loc("relu1")
// LOC-NEXT:      hw.sem_wait 0, engine=vector loc("relu1")
// LOC-NEXT:      hw.vunary sram[0x0] <- sram[0x0], op=relu, rows=4, cols=4 loc("relu_inner")

// -----

// A kernel's estimate (convert-graph-to-tile's est_cycles and dma_bytes) stays on the program
// as `aitc.kernels`, with the ONNX nodes its instructions name, so `aitc perf` on the .aitb
// can compare it with the simulated cycles; a kernel without one records nothing.
func.func @estimates(%x: memref<4x4xf32, "dram"> {graph.name = "x", tile.offset = 0 : i64}) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc {offset = 0 : i64} : memref<4x4xf32, "sram">
  tile.kernel "relu1" {dma_bytes = 64 : i64, est_cycles = 150 : i64, op = "graph.relu"} {
    tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 4] {sync.engine = "dma0"}
        : memref<4x4xf32, "dram">, memref<4x4xf32, "sram">
    sync.signal 0 on "dma0"
    sync.wait 0 on "vector"
    tile.unary %a[%c0, %c0] to %a[%c0, %c0] sizes [4, 4] {op = "relu", sync.engine = "vector"}
        : memref<4x4xf32, "sram">, memref<4x4xf32, "sram"> loc("relu_inner")
  } loc("relu1")
  tile.kernel "unestimated" {
  }
  func.return
}
// CHECK-LABEL: hw.program @estimates target "tiny" attributes {aitc.kernels = [{
// CHECK-SAME:    kernel = "relu1", op = "graph.relu", est_cycles = 150 : i64, dma_bytes = 64 : i64,
// CHECK-SAME:    nodes = ["relu1", "relu_inner"], core = 0 : i64}]} {
// CHECK:         hw.vunary

// -----

// A window index that is not affine in the loop indices (a division) has no address steps.
func.func @not_affine(%x: memref<8x4xf32, "dram"> {graph.name = "x", tile.offset = 0 : i64}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %a = tile.alloc {offset = 0 : i64} : memref<1x4xf32, "sram">
  scf.for %i = %c0 to %c4 step %c1 {
    %r = arith.divui %i, %c2 : index
    tile.copy %x[%r, %c0] to %a[%c0, %c0] sizes [1, 4] {sync.engine = "dma0"}
        : memref<8x4xf32, "dram">, memref<1x4xf32, "sram">
  }
  func.return
}
// CHECK:       tile.copy: a window index is not an affine function of the enclosing scf.for indices
// CHECK-SAME:  (%r is defined by 'arith.divui'; supported: arith.constant, addi, subi, muli by a constant)

// -----

// Buffers need the offsets plan-memory assigns.
func.func @unplanned(%x: memref<4x4xf32, "dram"> {graph.name = "x", tile.offset = 0 : i64}) {
  %a = tile.alloc : memref<4x4xf32, "sram">
  func.return
}
// CHECK:       tile.alloc has no byte offset: run plan-memory first
