// RUN: aitc-opt %s --split-input-file --verify-diagnostics -p "plan-memory{target=tiny}" | filecheck %s
// RUN: aitc-opt %s --split-input-file --verify-diagnostics -p "plan-memory{target=edge}" | filecheck %s --check-prefix=EDGE

// Two kernels run one after the other: their SRAM buffers are never live together. Each
// kernel's own buffers also live through the kernel before it when the two fit side by side,
// so the next kernel's loads need not wait for the previous one's last reads: on edge (512
// KiB) %b gets bytes of its own. On tiny (16 KiB) two 12 KiB kernels do not fit side by side:
// both start at byte 0 and the peak is the larger kernel's, not the sum.
func.func @reuse_across_kernels(%x: memref<48x64xf32, "dram"> {graph.name = "x"}, %y: memref<48x64xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  tile.kernel "k1" {
    %a = tile.alloc : memref<48x64xf32, "sram">
    tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [48, 64] : memref<48x64xf32, "dram">, memref<48x64xf32, "sram">
    tile.copy %a[%c0, %c0] to %y[%c0, %c0] sizes [48, 64] : memref<48x64xf32, "sram">, memref<48x64xf32, "dram">
  }
  tile.kernel "k2" {
    %b = tile.alloc : memref<32x64xf32, "sram">
    tile.copy %y[%c0, %c0] to %b[%c0, %c0] sizes [32, 64] : memref<48x64xf32, "dram">, memref<32x64xf32, "sram">
    tile.copy %b[%c0, %c0] to %y[%c0, %c0] sizes [32, 64] : memref<32x64xf32, "sram">, memref<48x64xf32, "dram">
  }
  func.return
}
// CHECK-LABEL: func.func @reuse_across_kernels
// CHECK-SAME:    %x: memref<48x64xf32, "dram"> {graph.name = "x", tile.offset = 0 : i64}
// CHECK-SAME:    %y: memref<48x64xf32, "dram"> {graph.name = "y", tile.output, tile.offset = 12288 : i64}
// CHECK-SAME:    attributes {tile.sram_peak = 12288 : i64, tile.acc_peak = 0 : i64, tile.dram_bytes = 24576 : i64}
// CHECK:         tile.kernel "k1" {sram_peak = 12288 : i64, acc_peak = 0 : i64}
// CHECK-NEXT:      %a = tile.alloc {offset = 0 : i64} : memref<48x64xf32, "sram">
// CHECK:         tile.kernel "k2" {sram_peak = 8192 : i64, acc_peak = 0 : i64}
// CHECK-NEXT:      %b = tile.alloc {offset = 0 : i64} : memref<32x64xf32, "sram">
// EDGE-LABEL:  func.func @reuse_across_kernels
// EDGE-SAME:     tile.sram_peak = 20480 : i64
// EDGE:          tile.kernel "k1" {sram_peak = 12288 : i64, acc_peak = 0 : i64}
// EDGE-NEXT:       %a = tile.alloc {offset = 0 : i64} : memref<48x64xf32, "sram">
// EDGE:          tile.kernel "k2" {sram_peak = 20480 : i64, acc_peak = 0 : i64}
// EDGE-NEXT:       %b = tile.alloc {offset = 12288 : i64} : memref<32x64xf32, "sram">

// -----

// Buffers allocated outside a loop and used inside it stay live for the whole loop (the next
// iteration comes back to them), so %a and %c get disjoint bytes although their uses do not
// interleave in the text.
func.func @loop_keeps_buffers_live(%x: memref<16x16xf32, "dram"> {graph.name = "x"}, %y: memref<16x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  tile.kernel "loop" {
    %a = tile.alloc : memref<4x16xf32, "sram">
    %c = tile.alloc : memref<4x16xf32, "sram">
    scf.for %i = %c0 to %c16 step %c4 {
      tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [4, 16] : memref<16x16xf32, "dram">, memref<4x16xf32, "sram">
      tile.copy %a[%c0, %c0] to %y[%i, %c0] sizes [4, 16] : memref<4x16xf32, "sram">, memref<16x16xf32, "dram">
      tile.copy %y[%i, %c0] to %c[%c0, %c0] sizes [4, 16] : memref<16x16xf32, "dram">, memref<4x16xf32, "sram">
      tile.copy %c[%c0, %c0] to %y[%i, %c0] sizes [4, 16] : memref<4x16xf32, "sram">, memref<16x16xf32, "dram">
    }
  }
  func.return
}
// CHECK-LABEL: func.func @loop_keeps_buffers_live
// CHECK-SAME:    tile.sram_peak = 512 : i64
// CHECK:         %a = tile.alloc {offset = 0 : i64} : memref<4x16xf32, "sram">
// CHECK-NEXT:    %c = tile.alloc {offset = 256 : i64} : memref<4x16xf32, "sram">

// -----

// Buffers allocated inside the loop body live within one iteration, so %a and %c could share
// bytes; but they are one kernel's, which fits without sharing: shared, %c's load would wait
// for the store of %a (a dependence through bytes, not data), so each gets its own.
func.func @allocs_in_loop_body(%x: memref<16x16xf32, "dram"> {graph.name = "x"}, %y: memref<16x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  tile.kernel "loop" {
    scf.for %i = %c0 to %c16 step %c4 {
      %a = tile.alloc : memref<4x16xf32, "sram">
      tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [4, 16] : memref<16x16xf32, "dram">, memref<4x16xf32, "sram">
      tile.copy %a[%c0, %c0] to %y[%i, %c0] sizes [4, 16] : memref<4x16xf32, "sram">, memref<16x16xf32, "dram">
      %c = tile.alloc : memref<4x16xf32, "sram">
      tile.copy %y[%i, %c0] to %c[%c0, %c0] sizes [4, 16] : memref<16x16xf32, "dram">, memref<4x16xf32, "sram">
      tile.copy %c[%c0, %c0] to %y[%i, %c0] sizes [4, 16] : memref<4x16xf32, "sram">, memref<16x16xf32, "dram">
    }
  }
  func.return
}
// CHECK-LABEL: func.func @allocs_in_loop_body
// CHECK-SAME:    tile.sram_peak = 512 : i64
// CHECK:         %a = tile.alloc {offset = 0 : i64}
// CHECK:         %c = tile.alloc {offset = 256 : i64}

// -----

// A kernel that does not fit without sharing: two 12 KiB buffers of disjoint lifetimes on
// tiny's 16 KiB share bytes by their lifetimes; on edge (512 KiB) they do not.
func.func @shares_when_it_must(%x: memref<48x64xf32, "dram"> {graph.name = "x"}, %y: memref<48x64xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  tile.kernel "big" {
    %a = tile.alloc : memref<48x64xf32, "sram">
    tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [48, 64] : memref<48x64xf32, "dram">, memref<48x64xf32, "sram">
    tile.copy %a[%c0, %c0] to %y[%c0, %c0] sizes [48, 64] : memref<48x64xf32, "sram">, memref<48x64xf32, "dram">
    %c = tile.alloc : memref<48x64xf32, "sram">
    tile.copy %y[%c0, %c0] to %c[%c0, %c0] sizes [48, 64] : memref<48x64xf32, "dram">, memref<48x64xf32, "sram">
    tile.copy %c[%c0, %c0] to %y[%c0, %c0] sizes [48, 64] : memref<48x64xf32, "sram">, memref<48x64xf32, "dram">
  }
  func.return
}
// CHECK-LABEL: func.func @shares_when_it_must
// CHECK-SAME:    tile.sram_peak = 12288 : i64
// CHECK:         %a = tile.alloc {offset = 0 : i64}
// CHECK:         %c = tile.alloc {offset = 0 : i64}
// EDGE-LABEL:  func.func @shares_when_it_must
// EDGE-SAME:     tile.sram_peak = 24576 : i64
// EDGE:          %a = tile.alloc {offset = 0 : i64}
// EDGE:          %c = tile.alloc {offset = 12288 : i64}

// -----

// A use in an inner loop keeps the buffer live for the outermost loop that does not contain
// its alloc: %t (allocated in the outer body) spans the inner loop only, %w spans both loops.
func.func @nested_loops(%x: memref<16x16xf32, "dram"> {graph.name = "x"}, %y: memref<16x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  tile.kernel "nest" {
    %w = tile.alloc : memref<4x16xf32, "sram">
    scf.for %i = %c0 to %c16 step %c4 {
      %t = tile.alloc : memref<4x4xf32, "sram">
      scf.for %j = %c0 to %c16 step %c4 {
        tile.copy %x[%i, %j] to %t[%c0, %c0] sizes [4, 4] : memref<16x16xf32, "dram">, memref<4x4xf32, "sram">
        tile.copy %t[%c0, %c0] to %w[%c0, %j] sizes [4, 4] : memref<4x4xf32, "sram">, memref<4x16xf32, "sram">
      }
      %u = tile.alloc : memref<4x4xf32, "sram">
      tile.copy %w[%c0, %c0] to %u[%c0, %c0] sizes [4, 4] : memref<4x16xf32, "sram">, memref<4x4xf32, "sram">
      tile.copy %u[%c0, %c0] to %y[%i, %c0] sizes [4, 4] : memref<4x4xf32, "sram">, memref<16x16xf32, "dram">
    }
  }
  func.return
}
// CHECK-LABEL: func.func @nested_loops
// CHECK-SAME:    tile.sram_peak = 384 : i64
// CHECK:         %w = tile.alloc {offset = 0 : i64} : memref<4x16xf32, "sram">
// CHECK:         %t = tile.alloc {offset = 256 : i64} : memref<4x4xf32, "sram">
// CHECK:         %u = tile.alloc {offset = 320 : i64} : memref<4x4xf32, "sram">

// -----

// Offsets are multiples of 64 bytes: a 60-byte buffer live together with an i8 buffer pushes
// the second one to byte 64; the peak is where the last byte ends.
func.func @alignment(%x: memref<3x5xf32, "dram"> {graph.name = "x"}, %q: memref<4x4xi8, "dram"> {graph.name = "q"}, %y: memref<3x5xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  tile.kernel "align" {
    %a = tile.alloc : memref<3x5xf32, "sram">
    %b = tile.alloc : memref<4x4xi8, "sram">
    tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [3, 5] : memref<3x5xf32, "dram">, memref<3x5xf32, "sram">
    tile.copy %q[%c0, %c0] to %b[%c0, %c0] sizes [4, 4] : memref<4x4xi8, "dram">, memref<4x4xi8, "sram">
    tile.copy %a[%c0, %c0] to %y[%c0, %c0] sizes [3, 5] : memref<3x5xf32, "sram">, memref<3x5xf32, "dram">
  }
  func.return
}
// CHECK-LABEL: func.func @alignment
// CHECK-SAME:    %x: memref<3x5xf32, "dram"> {graph.name = "x", tile.offset = 0 : i64}
// CHECK-SAME:    %q: memref<4x4xi8, "dram"> {graph.name = "q", tile.offset = 64 : i64}
// CHECK-SAME:    %y: memref<3x5xf32, "dram"> {graph.name = "y", tile.output, tile.offset = 128 : i64}
// CHECK-SAME:    tile.sram_peak = 80 : i64, tile.acc_peak = 0 : i64, tile.dram_bytes = 188 : i64
// CHECK:         %a = tile.alloc {offset = 0 : i64} : memref<3x5xf32, "sram">
// CHECK-NEXT:    %b = tile.alloc {offset = 64 : i64} : memref<4x4xi8, "sram">

// -----

// DRAM: arguments first, then constants, each never shared; intermediates (DRAM allocs) after
// them, sharing bytes when their lifetimes are disjoint (%t1 is dead once %t2 is written). A
// tile.reshape is a view of %t1's bytes: it gets no offset and keeps %t1 alive.
func.func @dram_layout(%x: memref<4x16xf32, "dram"> {graph.name = "x"}, %y: memref<4x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %w = tile.const dense<1.0> : tensor<4x16xf32>
  tile.kernel "stage" {
    %s = tile.alloc : memref<4x16xf32, "sram">
    %t1 = tile.alloc : memref<4x16xf32, "dram">
    %t2 = tile.alloc : memref<4x16xf32, "dram">
    tile.copy %x[%c0, %c0] to %s[%c0, %c0] sizes [4, 16] : memref<4x16xf32, "dram">, memref<4x16xf32, "sram">
    tile.copy %s[%c0, %c0] to %t1[%c0, %c0] sizes [4, 16] : memref<4x16xf32, "sram">, memref<4x16xf32, "dram">
    %v = tile.reshape %t1 : memref<4x16xf32, "dram"> -> memref<2x32xf32, "dram">
    %s2 = tile.alloc : memref<2x32xf32, "sram">
    tile.copy %v[%c0, %c0] to %s2[%c0, %c0] sizes [2, 32] : memref<2x32xf32, "dram">, memref<2x32xf32, "sram">
    %v2 = tile.reshape %t2 : memref<4x16xf32, "dram"> -> memref<2x32xf32, "dram">
    tile.copy %s2[%c0, %c0] to %v2[%c0, %c0] sizes [2, 32] : memref<2x32xf32, "sram">, memref<2x32xf32, "dram">
    tile.copy %t2[%c0, %c0] to %s[%c0, %c0] sizes [4, 16] : memref<4x16xf32, "dram">, memref<4x16xf32, "sram">
    tile.copy %s[%c0, %c0] to %y[%c0, %c0] sizes [4, 16] : memref<4x16xf32, "sram">, memref<4x16xf32, "dram">
  }
  func.return
}
// CHECK-LABEL: func.func @dram_layout
// CHECK-SAME:    {graph.name = "x", tile.offset = 0 : i64}
// CHECK-SAME:    {graph.name = "y", tile.output, tile.offset = 256 : i64}
// CHECK-SAME:    tile.dram_bytes = 1024 : i64
// CHECK:         %w = tile.const dense<1.000000e+00> : tensor<4x16xf32> {offset = 512 : i64}
// CHECK:         %t1 = tile.alloc {offset = 768 : i64} : memref<4x16xf32, "dram">
// CHECK-NEXT:    %t2 = tile.alloc {offset = 768 : i64} : memref<4x16xf32, "dram">
// CHECK:         %v = tile.reshape %t1 : memref<4x16xf32, "dram"> -> memref<2x32xf32, "dram">
// CHECK:         %v2 = tile.reshape %t2 : memref<4x16xf32, "dram"> -> memref<2x32xf32, "dram">

// -----

// Within one kernel: %a and %b overlap in time (%b is written while %a is still to be read),
// %c starts after %a's last use but, the kernel fitting without sharing, gets bytes of its own.
// ACC buffers are planned separately, from byte 0 of the accumulator.
func.func @partial_overlap(%x: memref<4x4xf32, "dram"> {graph.name = "x"}, %y: memref<4x4xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  tile.kernel "mm" {
    %a = tile.alloc : memref<4x4xf32, "sram">
    %b = tile.alloc : memref<4x4xf32, "sram">
    %c = tile.alloc : memref<4x4xf32, "sram">
    %acc = tile.alloc : memref<4x4xf32, "acc">
    tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 4] : memref<4x4xf32, "dram">, memref<4x4xf32, "sram">
    tile.copy %x[%c0, %c0] to %b[%c0, %c0] sizes [4, 4] : memref<4x4xf32, "dram">, memref<4x4xf32, "sram">
    tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [4, 4, 4] : memref<4x4xf32, "sram">, memref<4x4xf32, "sram">, memref<4x4xf32, "acc">
    tile.acc_read %acc[%c0, %c0] to %c[%c0, %c0] sizes [4, 4] : memref<4x4xf32, "acc">, memref<4x4xf32, "sram">
    tile.copy %c[%c0, %c0] to %y[%c0, %c0] sizes [4, 4] : memref<4x4xf32, "sram">, memref<4x4xf32, "dram">
  }
  func.return
}
// CHECK-LABEL: func.func @partial_overlap
// CHECK-SAME:    tile.sram_peak = 192 : i64, tile.acc_peak = 64 : i64
// CHECK:         tile.kernel "mm" {sram_peak = 192 : i64, acc_peak = 64 : i64}
// CHECK-NEXT:      %a = tile.alloc {offset = 0 : i64} : memref<4x4xf32, "sram">
// CHECK-NEXT:      %b = tile.alloc {offset = 64 : i64} : memref<4x4xf32, "sram">
// CHECK-NEXT:      %c = tile.alloc {offset = 128 : i64} : memref<4x4xf32, "sram">
// CHECK-NEXT:      %acc = tile.alloc {offset = 0 : i64} : memref<4x4xf32, "acc">

// -----

// Negative: 20 KiB of SRAM live at once do not fit the tiny target's 16 KiB; the error names
// the kernel, the bytes needed and available, and a fix. The edge target (512 KiB) holds it.
func.func @sram_overflow(%x: memref<64x64xf32, "dram"> {graph.name = "x"}, %y: memref<64x64xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  tile.kernel "big" {
    %a = tile.alloc : memref<64x64xf32, "sram">
    %b = tile.alloc : memref<16x64xf32, "sram">
    tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [64, 64] : memref<64x64xf32, "dram">, memref<64x64xf32, "sram">
    tile.copy %x[%c0, %c0] to %b[%c0, %c0] sizes [16, 64] : memref<64x64xf32, "dram">, memref<16x64xf32, "sram">
    tile.copy %a[%c0, %c0] to %y[%c0, %c0] sizes [64, 64] : memref<64x64xf32, "sram">, memref<64x64xf32, "dram">
  } loc("conv_7")
  func.return
}
// CHECK: plan-memory: kernel "big" (conv_7) needs 20480 bytes of SRAM per core (20480 bytes live at once), target 'tiny' has 16384: use smaller tiles, a lower multi-buffer depth, or a target with more SRAM (core.sram_bytes)
// CHECK: %b ends at byte 20480 of 16384 in sram

// EDGE-LABEL: func.func @sram_overflow
// EDGE-SAME:    tile.sram_peak = 20480 : i64
// EDGE:         %a = tile.alloc {offset = 0 : i64}
// EDGE-NEXT:    %b = tile.alloc {offset = 16384 : i64}

// -----

// Negative: an accumulator tile larger than the tiny target's 2 KiB of ACC.
func.func @acc_overflow(%x: memref<16x16xf32, "dram"> {graph.name = "x"}, %y: memref<16x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  tile.kernel "wide" {
    %a = tile.alloc : memref<16x16xf32, "sram">
    %acc = tile.alloc : memref<16x64xf32, "acc">
    tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [16, 16] : memref<16x16xf32, "dram">, memref<16x16xf32, "sram">
    tile.matmul %a[%c0, %c0], %a[%c0, %c0] to %acc[%c0, %c0] sizes [16, 16, 16] : memref<16x16xf32, "sram">, memref<16x16xf32, "sram">, memref<16x64xf32, "acc">
    tile.acc_read %acc[%c0, %c0] to %a[%c0, %c0] sizes [16, 16] : memref<16x64xf32, "acc">, memref<16x16xf32, "sram">
    tile.copy %a[%c0, %c0] to %y[%c0, %c0] sizes [16, 16] : memref<16x16xf32, "sram">, memref<16x16xf32, "dram">
  }
  func.return
}
// CHECK: plan-memory: kernel "wide" needs 4096 bytes of ACC per core (4096 bytes live at once), target 'tiny' has 2048: use smaller output tiles

// -----

// Negative: inputs and outputs of 4 MiB each do not fit the tiny target's 4 MiB of DRAM.
func.func @dram_overflow(%x: memref<1024x1024xf32, "dram"> {graph.name = "x"}, %y: memref<1024x1024xf32, "dram"> {graph.name = "y", tile.output}) {
  func.return
}
// CHECK: plan-memory: function @dram_overflow needs 8388608 bytes of DRAM (8388608 bytes live at once), target 'tiny' has 4194304: use a target with more DRAM (dram.bytes)

// -----

// A function without buffers (graph level) is left alone: no offsets, no peak attributes.
func.func @graph_level(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
// CHECK-LABEL: func.func @graph_level(%x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    func.return %x : tensor<4xf32>
