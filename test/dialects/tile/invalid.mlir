// RUN: aitc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One verifier failure per case. xDSL has no expected-error: each case checks the printed
// message, and a CHECK-LABEL on the separator printed between chunks pins each message to its
// own chunk (a case that unexpectedly verifies fails the test instead of matching a later one).

// The matrix engine reads its operands from sram, not dram.
func.func @matmul_lhs_in_dram(%a: memref<8x16xf32, "dram">, %c0: index) {
  %b = tile.alloc : memref<16x8xf32, "sram">
  %acc = tile.alloc : memref<8x8xf32, "acc">
  tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [8, 16, 8] : memref<8x16xf32, "dram">, memref<16x8xf32, "sram">, memref<8x8xf32, "acc">
  func.return
}
// CHECK:       Operation does not verify: tile.matmul 'lhs' must be in sram

// -----

// The matrix engine accumulates into acc only.
func.func @matmul_acc_in_sram(%c0: index) {
  %a = tile.alloc : memref<8x16xf32, "sram">
  %b = tile.alloc : memref<16x8xf32, "sram">
  %acc = tile.alloc : memref<8x8xf32, "sram">
  tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [8, 16, 8] : memref<8x16xf32, "sram">, memref<16x8xf32, "sram">, memref<8x8xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.matmul 'acc' must be in acc

// -----

// lhs and rhs share one element type (no mixed f32 x i8 products).
func.func @matmul_mixed_inputs(%c0: index) {
  %a = tile.alloc : memref<8x16xf32, "sram">
  %b = tile.alloc : memref<16x8xi8, "sram">
  %acc = tile.alloc : memref<8x8xf32, "acc">
  tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [8, 16, 8] : memref<8x16xf32, "sram">, memref<16x8xi8, "sram">, memref<8x8xf32, "acc">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.matmul: lhs and rhs need one element type

// -----

// i8 products accumulate in i32, never in f32.
func.func @matmul_i8_into_f32(%c0: index) {
  %a = tile.alloc : memref<8x16xi8, "sram">
  %b = tile.alloc : memref<16x8xi8, "sram">
  %acc = tile.alloc : memref<8x8xf32, "acc">
  tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [8, 16, 8] : memref<8x16xi8, "sram">, memref<16x8xi8, "sram">, memref<8x8xf32, "acc">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.matmul: f32 inputs accumulate in f32, i8 inputs in i32; got i8 inputs, f32 acc

// -----

// matmul sizes are exactly [m, k, n].
func.func @matmul_two_sizes(%c0: index) {
  %a = tile.alloc : memref<8x16xf32, "sram">
  %b = tile.alloc : memref<16x8xf32, "sram">
  %acc = tile.alloc : memref<8x8xf32, "acc">
  tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [8, 16] : memref<8x16xf32, "sram">, memref<16x8xf32, "sram">, memref<8x8xf32, "acc">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.matmul: sizes are [m, k, n]

// -----

// A window is never larger than its buffer.
func.func @window_too_large(%x: memref<32x64xf32, "dram">, %c0: index) {
  %a = tile.alloc : memref<64x64xf32, "sram">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [64, 64] : memref<32x64xf32, "dram">, memref<64x64xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.copy 'src': window [64, 64] does not fit buffer [32, 64]

// -----

// A window at constant indices must lie inside its buffer (dynamic ones are checked at run time).
func.func @window_leaves_buffer(%x: memref<32x64xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %a = tile.alloc : memref<32x64xf32, "sram">
  tile.copy %x[%c16, %c0] to %a[%c0, %c0] sizes [32, 64] : memref<32x64xf32, "dram">, memref<32x64xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.copy 'src': window [32, 64] at constant indices [16, 0] leaves buffer [32, 64]

// -----

// A window takes one index per buffer dim.
func.func @missing_index(%x: memref<32x64xf32, "dram">, %c0: index) {
  %a = tile.alloc : memref<32x64xf32, "sram">
  tile.copy %x[%c0] to %a[%c0, %c0] sizes [32, 64] : memref<32x64xf32, "dram">, memref<32x64xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.copy 'src': a rank-2 buffer needs 2 indices, got 1

// -----

// sizes has one value per buffer dim.
func.func @sizes_rank(%x: memref<32x64xf32, "dram">, %c0: index) {
  %a = tile.alloc : memref<32x64xf32, "sram">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [32] : memref<32x64xf32, "dram">, memref<32x64xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.copy 'src': sizes need 2 values, got [32]

// -----

// ACC data goes to dram through sram at the tile level.
func.func @copy_acc_to_dram(%y: memref<8x8xf32, "dram">, %c0: index) {
  %acc = tile.alloc : memref<8x8xf32, "acc">
  tile.copy %acc[%c0, %c0] to %y[%c0, %c0] sizes [8, 8] : memref<8x8xf32, "acc">, memref<8x8xf32, "dram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.copy between acc and dram: go through sram

// -----

// No DMA copies dram to dram.
func.func @copy_dram_to_dram(%x: memref<8x8xf32, "dram">, %y: memref<8x8xf32, "dram">, %c0: index) {
  tile.copy %x[%c0, %c0] to %y[%c0, %c0] sizes [8, 8] : memref<8x8xf32, "dram">, memref<8x8xf32, "dram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.copy dram -> dram: go through sram

// -----

// DMA moves bytes: it never converts element types.
func.func @copy_converts(%x: memref<8x8xf32, "dram">, %c0: index) {
  %a = tile.alloc : memref<8x8xi32, "sram">
  tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [8, 8] : memref<8x8xf32, "dram">, memref<8x8xi32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.copy keeps the element type

// -----

// A transpose between two dram buffers would need a dram -> dram DMA.
func.func @transpose_dram_to_dram(%x: memref<8x16xf32, "dram">, %y: memref<16x8xf32, "dram">, %c0: index) {
  tile.transpose %x[%c0, %c0] to %y[%c0, %c0] sizes [8, 16] : memref<8x16xf32, "dram">, memref<16x8xf32, "dram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.transpose dram -> dram: go through sram

// -----

// Gather indices are i32, as hw.dma_gather reads them.
func.func @gather_i8_indices(%t: memref<100x16xf32, "dram">, %c0: index) {
  %ids = tile.alloc : memref<8x1xi8, "sram">
  %e = tile.alloc : memref<8x16xf32, "sram">
  tile.gather %t[%c0, %c0], %ids[%c0, %c0] to %e[%c0, %c0] sizes [8, 16] : memref<100x16xf32, "dram">, memref<8x1xi8, "sram">, memref<8x16xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.gather: indices must be i32, got i8

// -----

// binary ops are those of hw.vbinary.
func.func @unknown_binary_op(%c0: index) {
  %a = tile.alloc : memref<8x64xf32, "sram">
  tile.binary %a[%c0, %c0], %a[%c0, %c0] to %a[%c0, %c0] sizes [8, 64] {op = "pow"} : memref<8x64xf32, "sram">, memref<8x64xf32, "sram">, memref<8x64xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.binary: op must be one of add, sub, mul, div, max, min, cmp_eq, cmp_lt, cmp_le, cmp_gt, cmp_ge

// -----

// A row broadcast reads one row of cols values: b's buffer is too narrow here.
func.func @broadcast_row_too_narrow(%c0: index) {
  %a = tile.alloc : memref<8x64xf32, "sram">
  %b = tile.alloc : memref<1x32xf32, "sram">
  tile.binary %a[%c0, %c0], %b[%c0, %c0] to %a[%c0, %c0] sizes [8, 64] {op = "add", broadcast = "row"} : memref<8x64xf32, "sram">, memref<1x32xf32, "sram">, memref<8x64xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.binary 'b': window [1, 64] does not fit buffer [1, 32]

// -----

// broadcast is none, row, col or scalar.
func.func @unknown_broadcast(%c0: index) {
  %a = tile.alloc : memref<8x64xf32, "sram">
  tile.binary %a[%c0, %c0], %a[%c0, %c0] to %a[%c0, %c0] sizes [8, 64] {op = "add", broadcast = "diagonal"} : memref<8x64xf32, "sram">, memref<8x64xf32, "sram">, memref<8x64xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.binary: unknown broadcast 'diagonal'

// -----

// Only tile.cast converts: the windows of other vector ops share one element type.
func.func @binary_mixed_types(%c0: index) {
  %a = tile.alloc : memref<8x64xf32, "sram">
  %b = tile.alloc : memref<8x64xi32, "sram">
  tile.binary %a[%c0, %c0], %b[%c0, %c0] to %a[%c0, %c0] sizes [8, 64] {op = "add"} : memref<8x64xf32, "sram">, memref<8x64xi32, "sram">, memref<8x64xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.binary: windows differ in element type

// -----

// The vector engine divides f32 only (as hw.vbinary).
func.func @integer_div(%c0: index) {
  %a = tile.alloc : memref<8x64xi32, "sram">
  tile.binary %a[%c0, %c0], %a[%c0, %c0] to %a[%c0, %c0] sizes [8, 64] {op = "div"} : memref<8x64xi32, "sram">, memref<8x64xi32, "sram">, memref<8x64xi32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.binary: div works on f32 only

// -----

// Only the last two sizes of a vector window may exceed 1.
func.func @vector_window_3d(%c0: index) {
  %a = tile.alloc : memref<2x8x64xf32, "sram">
  tile.unary %a[%c0, %c0, %c0] to %a[%c0, %c0, %c0] sizes [2, 8, 64] {op = "neg"} : memref<2x8x64xf32, "sram">, memref<2x8x64xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.unary: only the last two sizes may exceed 1

// -----

// The vector engine has no f16.
func.func @vector_f16(%c0: index) {
  %a = tile.alloc : memref<8x64xf16, "sram">
  tile.unary %a[%c0, %c0] to %a[%c0, %c0] sizes [8, 64] {op = "neg"} : memref<8x64xf16, "sram">, memref<8x64xf16, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.unary: the vector engine works on f32, i32, i8, not f16

// -----

// An integer immediate must be a whole number of the window's type.
func.func @imm_fraction_for_i8(%c0: index) {
  %a = tile.alloc : memref<8x64xi8, "sram">
  tile.binary_imm %a[%c0, %c0] to %a[%c0, %c0] sizes [8, 64] {op = "mul", imm = 0.5 : f64} : memref<8x64xi8, "sram">, memref<8x64xi8, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.binary_imm: imm 0.5 must be a whole number in [-128, 127] for i8

// -----

// Transcendental unary ops work on f32 only.
func.func @exp_on_i32(%c0: index) {
  %a = tile.alloc : memref<8x64xi32, "sram">
  tile.unary %a[%c0, %c0] to %a[%c0, %c0] sizes [8, 64] {op = "exp"} : memref<8x64xi32, "sram">, memref<8x64xi32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.unary: exp works on f32 only

// -----

// A reduction writes rows x 1: the dst buffer here has only 4 rows for 8.
func.func @reduce_dst_too_short(%c0: index) {
  %a = tile.alloc : memref<8x64xf32, "sram">
  %d = tile.alloc : memref<4x1xf32, "sram">
  tile.reduce %a[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "sum"} : memref<8x64xf32, "sram">, memref<4x1xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.reduce 'dst': window [8, 1] does not fit buffer [4, 1]

// -----

// hw.vreduce writes a dense column: a column of a wider buffer is strided.
func.func @reduce_dst_not_a_column(%c0: index) {
  %a = tile.alloc : memref<8x64xf32, "sram">
  %d = tile.alloc : memref<8x4xf32, "sram">
  tile.reduce %a[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "max"} : memref<8x64xf32, "sram">, memref<8x4xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.reduce: dst must be a dense column (last dim 1), got [8, 4]

// -----

// Reductions are sum or max.
func.func @reduce_mean(%c0: index) {
  %a = tile.alloc : memref<8x64xf32, "sram">
  %d = tile.alloc : memref<8x1xf32, "sram">
  tile.reduce %a[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "mean"} : memref<8x64xf32, "sram">, memref<8x1xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.reduce: op must be sum or max

// -----

// tile.cast converts between f32, i32 and i8 only.
func.func @cast_to_f16(%c0: index) {
  %a = tile.alloc : memref<8x32xf32, "sram">
  %d = tile.alloc : memref<8x32xf16, "sram">
  tile.cast %a[%c0, %c0] to %d[%c0, %c0] sizes [8, 32] : memref<8x32xf32, "sram">, memref<8x32xf16, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.cast: the vector engine works on f32, i32, i8, not f16

// -----

// A cast to the same type without a scale does nothing (hw.vcast refuses it).
func.func @cast_nothing(%c0: index) {
  %a = tile.alloc : memref<8x32xf32, "sram">
  tile.cast %a[%c0, %c0] to %a[%c0, %c0] sizes [8, 32] : memref<8x32xf32, "sram">, memref<8x32xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.cast: nothing to convert

// -----

// A zero point belongs to an integer side: f32 -> f32 has none.
func.func @cast_float_zero_point(%c0: index) {
  %a = tile.alloc : memref<8x32xf32, "sram">
  %d = tile.alloc : memref<8x32xf32, "sram">
  tile.cast %a[%c0, %c0] to %d[%c0, %c0] sizes [8, 32] {zero = 3 : i64} : memref<8x32xf32, "sram">, memref<8x32xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.cast: a zero point needs an integer side (a or dst i8/i32)

// -----

// Activations are those of hw.acc_read.
func.func @unknown_activation(%c0: index) {
  %acc = tile.alloc : memref<8x8xf32, "acc">
  %d = tile.alloc : memref<8x8xf32, "sram">
  tile.acc_read %acc[%c0, %c0] to %d[%c0, %c0] sizes [8, 8] {activation = "swish"} : memref<8x8xf32, "acc">, memref<8x8xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.acc_read: activation must be one of none, relu, relu6, sigmoid, tanh, gelu, gelu_tanh

// -----

// Integer accumulators allow only none, relu and relu6.
func.func @sigmoid_on_i32(%c0: index) {
  %acc = tile.alloc : memref<8x8xi32, "acc">
  %d = tile.alloc : memref<8x8xi32, "sram">
  tile.acc_read %acc[%c0, %c0] to %d[%c0, %c0] sizes [8, 8] {activation = "sigmoid"} : memref<8x8xi32, "acc">, memref<8x8xi32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.acc_read: activation sigmoid needs f32 (i32 allows none/relu/relu6)

// -----

// ACC holds 32-bit values: no i8 buffers there.
func.func @acc_of_i8() {
  %acc = tile.alloc : memref<8x8xi8, "acc">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.alloc: ACC holds 32-bit values (f32 or i32), got memref<8x8xi8, "acc">

// -----

// Buffers live in dram, sram or acc.
func.func @unknown_space() {
  %a = tile.alloc : memref<8x8xf32, "l2">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.alloc must live in dram, sram or acc, got memref<8x8xf32, "l2">

// -----

// Buffers have static shapes (plan-memory places them at fixed offsets).
func.func @dynamic_shape() {
  %a = tile.alloc : memref<?x8xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.alloc needs a static shape, got memref<?x8xf32, "sram">

// -----

// The generic form can give a tile.const a type other than its value's.
func.func @const_type_mismatch() {
  %w = "tile.const"() {value = dense<1.0> : tensor<2xf32>} : () -> memref<3xf32, "dram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: value tensor<2xf32> does not match buffer memref<3xf32, "dram">

// -----

// Constants are weights in dram.
func.func @const_in_sram() {
  %w = "tile.const"() {value = dense<1.0> : tensor<2xf32>} : () -> memref<2xf32, "sram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.const lives in dram

// -----

// A reshape is a view: it keeps the element count.
func.func @reshape_count(%x: memref<4x8xf32, "dram">) {
  %v = tile.reshape %x : memref<4x8xf32, "dram"> -> memref<4x4xf32, "dram">
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.reshape changes the element count: memref<4x8xf32, "dram"> -> memref<4x4xf32, "dram">

// -----

// A kernel has a name (the custom syntax always writes one).
func.func @kernel_without_name() {
  "tile.kernel"() ({
  ^bb0:
  }) : () -> ()
  func.return
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile.kernel needs a name (sym)
