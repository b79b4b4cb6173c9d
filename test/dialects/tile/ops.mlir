// RUN: aitc-opt %s | aitc-opt | filecheck %s
// RUN: aitc-opt %s --print-op-generic | aitc-opt | filecheck %s

// Every tile op in custom form; the second RUN line also round-trips the generic form.

// Buffers: allocations in each space (one placed by plan-memory), inline and out-of-line
// constants in dram, and a reshape view.
func.func @buffers() {
  %a = tile.alloc : memref<32x64xf32, "sram">
  %b = tile.alloc {offset = 4096 : i64} : memref<32x32xi32, "acc">
  %d = tile.alloc : memref<2x3x4xi8, "dram">
  %w = tile.const dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %r = tile.const dense_resource<tile_ops_blob> : tensor<1xf32> {offset = 256 : i64}
  %v = tile.reshape %d : memref<2x3x4xi8, "dram"> -> memref<6x4xi8, "dram">
  func.return
}
// CHECK-LABEL: func.func @buffers()
// CHECK-NEXT:    %a = tile.alloc : memref<32x64xf32, "sram">
// CHECK-NEXT:    %b = tile.alloc {offset = 4096 : i64} : memref<32x32xi32, "acc">
// CHECK-NEXT:    %d = tile.alloc : memref<2x3x4xi8, "dram">
// CHECK-NEXT{LITERAL}: %w = tile.const dense<[[1.000000e+00, 2.000000e+00]]> : tensor<1x2xf32>
// CHECK-NEXT:    %r = tile.const dense_resource<tile_ops_blob> : tensor<1xf32> {offset = 256 : i64}
// CHECK-NEXT:    %v = tile.reshape %d : memref<2x3x4xi8, "dram"> -> memref<6x4xi8, "dram">
// CHECK-NEXT:    func.return

// DMA ops: windows at dynamic and constant offsets, a 3-D copy, a transpose and a gather.
func.func @dma(%x: memref<128x64xf32, "dram">, %t: memref<100x16xf32, "dram">, %y: memref<4x8x16xf32, "dram">, %i: index) {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<32x64xf32, "sram">
  %at = tile.alloc : memref<64x32xf32, "sram">
  %ids = tile.alloc : memref<8x1xi32, "sram">
  %e = tile.alloc : memref<8x16xf32, "sram">
  %e3 = tile.alloc : memref<2x8x16xf32, "sram">
  tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [32, 64] : memref<128x64xf32, "dram">, memref<32x64xf32, "sram">
  tile.transpose %a[%c0, %c0] to %at[%c0, %c0] sizes [32, 64] : memref<32x64xf32, "sram">, memref<64x32xf32, "sram">
  tile.gather %t[%c0, %c0], %ids[%c0, %c0] to %e[%c0, %c0] sizes [8, 16] : memref<100x16xf32, "dram">, memref<8x1xi32, "sram">, memref<8x16xf32, "sram">
  tile.copy %e3[%c0, %c0, %c0] to %y[%i, %c0, %c0] sizes [2, 8, 16] : memref<2x8x16xf32, "sram">, memref<4x8x16xf32, "dram">
  func.return
}
// CHECK-LABEL: func.func @dma(
// CHECK:         tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [32, 64] : memref<128x64xf32, "dram">, memref<32x64xf32, "sram">
// CHECK-NEXT:    tile.transpose %a[%c0, %c0] to %at[%c0, %c0] sizes [32, 64] : memref<32x64xf32, "sram">, memref<64x32xf32, "sram">
// CHECK-NEXT:    tile.gather %t[%c0, %c0], %ids[%c0, %c0] to %e[%c0, %c0] sizes [8, 16] : memref<100x16xf32, "dram">, memref<8x1xi32, "sram">, memref<8x16xf32, "sram">
// CHECK-NEXT:    tile.copy %e3[%c0, %c0, %c0] to %y[%i, %c0, %c0] sizes [2, 8, 16] : memref<2x8x16xf32, "sram">, memref<4x8x16xf32, "dram">

// The matrix engine: f32 with accumulate, rhs transposed, and i8 x i8 -> i32.
func.func @matmul() {
  %c0 = arith.constant 0 : index
  %a = tile.alloc : memref<32x64xf32, "sram">
  %b = tile.alloc : memref<64x32xf32, "sram">
  %bt = tile.alloc : memref<32x64xf32, "sram">
  %acc = tile.alloc : memref<32x32xf32, "acc">
  %qa = tile.alloc : memref<8x16xi8, "sram">
  %qb = tile.alloc : memref<16x8xi8, "sram">
  %qacc = tile.alloc : memref<8x8xi32, "acc">
  tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [32, 64, 32] {accumulate} : memref<32x64xf32, "sram">, memref<64x32xf32, "sram">, memref<32x32xf32, "acc">
  tile.matmul %a[%c0, %c0], %bt[%c0, %c0] to %acc[%c0, %c0] sizes [32, 64, 32] {transpose_rhs} : memref<32x64xf32, "sram">, memref<32x64xf32, "sram">, memref<32x32xf32, "acc">
  tile.matmul %qa[%c0, %c0], %qb[%c0, %c0] to %qacc[%c0, %c0] sizes [8, 16, 8] : memref<8x16xi8, "sram">, memref<16x8xi8, "sram">, memref<8x8xi32, "acc">
  func.return
}
// CHECK-LABEL: func.func @matmul()
// CHECK:         tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [32, 64, 32] {accumulate} : memref<32x64xf32, "sram">, memref<64x32xf32, "sram">, memref<32x32xf32, "acc">
// CHECK-NEXT:    tile.matmul %a[%c0, %c0], %bt[%c0, %c0] to %acc[%c0, %c0] sizes [32, 64, 32] {transpose_rhs} : memref<32x64xf32, "sram">, memref<32x64xf32, "sram">, memref<32x32xf32, "acc">
// CHECK-NEXT:    tile.matmul %qa[%c0, %c0], %qb[%c0, %c0] to %qacc[%c0, %c0] sizes [8, 16, 8] : memref<8x16xi8, "sram">, memref<16x8xi8, "sram">, memref<8x8xi32, "acc">

// The vector engine: binary with each broadcast (a read from acc once), an immediate, unary,
// select, row reductions, casts and an acc read with an activation.
func.func @vector() {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %acc = tile.alloc : memref<8x64xf32, "acc">
  %a = tile.alloc : memref<16x64xf32, "sram">
  %row = tile.alloc : memref<1x64xf32, "sram">
  %col = tile.alloc : memref<8x1xf32, "sram">
  %d = tile.alloc : memref<8x64xf32, "sram">
  %q = tile.alloc : memref<8x64xi8, "sram">
  tile.binary %acc[%c0, %c0], %row[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "add", broadcast = "row"} : memref<8x64xf32, "acc">, memref<1x64xf32, "sram">, memref<8x64xf32, "sram">
  tile.binary %a[%c8, %c0], %col[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "sub", broadcast = "col"} : memref<16x64xf32, "sram">, memref<8x1xf32, "sram">, memref<8x64xf32, "sram">
  tile.binary %a[%c0, %c0], %col[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "div", broadcast = "scalar"} : memref<16x64xf32, "sram">, memref<8x1xf32, "sram">, memref<8x64xf32, "sram">
  tile.binary %a[%c0, %c0], %a[%c8, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "cmp_lt"} : memref<16x64xf32, "sram">, memref<16x64xf32, "sram">, memref<8x64xf32, "sram">
  tile.binary_imm %d[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "max", imm = 0.000000e+00 : f64} : memref<8x64xf32, "sram">, memref<8x64xf32, "sram">
  tile.unary %d[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "exp"} : memref<8x64xf32, "sram">, memref<8x64xf32, "sram">
  tile.select %d[%c0, %c0], %a[%c0, %c0], %a[%c8, %c0] to %d[%c0, %c0] sizes [8, 64] : memref<8x64xf32, "sram">, memref<16x64xf32, "sram">, memref<16x64xf32, "sram">, memref<8x64xf32, "sram">
  tile.reduce %d[%c0, %c0] to %col[%c0, %c0] sizes [8, 64] {op = "sum"} : memref<8x64xf32, "sram">, memref<8x1xf32, "sram">
  tile.cast %d[%c0, %c0] to %q[%c0, %c0] sizes [8, 64] {scale = 1.250000e-02 : f64} : memref<8x64xf32, "sram">, memref<8x64xi8, "sram">
  tile.cast %q[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {scale = 5.000000e-01 : f64, zero = -128 : i64} : memref<8x64xi8, "sram">, memref<8x64xf32, "sram">
  tile.acc_read %acc[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {activation = "relu"} : memref<8x64xf32, "acc">, memref<8x64xf32, "sram">
  func.return
}
// CHECK-LABEL: func.func @vector()
// CHECK:         tile.binary %acc[%c0, %c0], %row[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "add", broadcast = "row"} : memref<8x64xf32, "acc">, memref<1x64xf32, "sram">, memref<8x64xf32, "sram">
// CHECK-NEXT:    tile.binary %a[%c8, %c0], %col[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "sub", broadcast = "col"}
// CHECK-NEXT:    tile.binary %a[%c0, %c0], %col[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "div", broadcast = "scalar"}
// CHECK-NEXT:    tile.binary %a[%c0, %c0], %a[%c8, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "cmp_lt"}
// CHECK-NEXT:    tile.binary_imm %d[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "max", imm = 0.000000e+00 : f64} : memref<8x64xf32, "sram">, memref<8x64xf32, "sram">
// CHECK-NEXT:    tile.unary %d[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "exp"} : memref<8x64xf32, "sram">, memref<8x64xf32, "sram">
// CHECK-NEXT:    tile.select %d[%c0, %c0], %a[%c0, %c0], %a[%c8, %c0] to %d[%c0, %c0] sizes [8, 64] : memref<8x64xf32, "sram">, memref<16x64xf32, "sram">, memref<16x64xf32, "sram">, memref<8x64xf32, "sram">
// CHECK-NEXT:    tile.reduce %d[%c0, %c0] to %col[%c0, %c0] sizes [8, 64] {op = "sum"} : memref<8x64xf32, "sram">, memref<8x1xf32, "sram">
// CHECK-NEXT:    tile.cast %d[%c0, %c0] to %q[%c0, %c0] sizes [8, 64] {scale = 1.250000e-02 : f64} : memref<8x64xf32, "sram">, memref<8x64xi8, "sram">
// CHECK-NEXT:    tile.cast %q[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {scale = 5.000000e-01 : f64, zero = -128 : i64} : memref<8x64xi8, "sram">, memref<8x64xf32, "sram">
// CHECK-NEXT:    tile.acc_read %acc[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {activation = "relu"} : memref<8x64xf32, "acc">, memref<8x64xf32, "sram">

// Kernels with and without recorded decisions, holding a structured loop over row tiles
// (windows at loop-carried indices) and an op bound to an engine by the sync level.
func.func @kernels(%x: memref<64x16xf32, "dram"> {graph.name = "x"}, %y: memref<64x16xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  tile.kernel "relu1" {op = "graph.relu", tiles = array<i64: 8, 16>, reason = "fits sram"} {
    %s = tile.alloc : memref<8x16xf32, "sram">
    scf.for %i = %c0 to %c64 step %c8 {
      tile.copy %x[%i, %c0] to %s[%c0, %c0] sizes [8, 16] {sync.engine = "dma0"} : memref<64x16xf32, "dram">, memref<8x16xf32, "sram">
      tile.unary %s[%c0, %c0] to %s[%c0, %c0] sizes [8, 16] {op = "relu"} : memref<8x16xf32, "sram">, memref<8x16xf32, "sram">
      tile.copy %s[%c0, %c0] to %y[%i, %c0] sizes [8, 16] : memref<8x16xf32, "sram">, memref<64x16xf32, "dram">
    }
  }
  tile.kernel "empty" {
  }
  func.return
}
// CHECK-LABEL: func.func @kernels(
// CHECK-SAME:    %y: memref<64x16xf32, "dram"> {graph.name = "y", tile.output})
// CHECK:         tile.kernel "relu1" {op = "graph.relu", tiles = array<i64: 8, 16>, reason = "fits sram"} {
// CHECK-NEXT:      %s = tile.alloc : memref<8x16xf32, "sram">
// CHECK-NEXT:      scf.for %i = %c0 to %c64 step %c8 {
// CHECK-NEXT:        tile.copy %x[%i, %c0] to %s[%c0, %c0] sizes [8, 16] {sync.engine = "dma0"} : memref<64x16xf32, "dram">, memref<8x16xf32, "sram">
// CHECK-NEXT:        tile.unary %s[%c0, %c0] to %s[%c0, %c0] sizes [8, 16] {op = "relu"}
// CHECK-NEXT:        tile.copy %s[%c0, %c0] to %y[%i, %c0] sizes [8, 16]
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.kernel "empty" {
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// CHECK:      {-#
// CHECK-NEXT:   dialect_resources: {
// CHECK-NEXT:     builtin: {
// CHECK-NEXT:       tile_ops_blob: "0x040000000000803f"
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: #-}

{-# dialect_resources: { builtin: { tile_ops_blob: "0x040000000000803F" } } #-}
