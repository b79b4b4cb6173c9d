// RUN: aitc-opt %s | aitc-opt | filecheck %s
// RUN: aitc-opt %s --print-op-generic | aitc-opt | filecheck %s

// Every graph op in custom form; the second RUN line also round-trips the generic form.

// Inline dense constants (float, scalar, i1) and an out-of-line dense_resource blob.
func.func @constants() -> (tensor<2xf32>, tensor<i64>, tensor<2x2xi1>, tensor<3xi32>, tensor<1xf32>) {
  %w = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %s = graph.constant dense<7> : tensor<i64>
  %m = graph.constant dense<[[true, false], [false, true]]> : tensor<2x2xi1>
  %z = graph.constant dense<0> : tensor<3xi32>
  %r = graph.constant dense_resource<ops_blob_w> : tensor<1xf32>
  func.return %w, %s, %m, %z, %r : tensor<2xf32>, tensor<i64>, tensor<2x2xi1>, tensor<3xi32>, tensor<1xf32>
}
// CHECK-LABEL: func.func @constants(
// CHECK-NEXT:    %w = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %s = graph.constant dense<7> : tensor<i64>
// CHECK-NEXT{LITERAL}:    %m = graph.constant dense<[[true, false], [false, true]]> : tensor<2x2xi1>
// CHECK-NEXT:    %z = graph.constant dense<0> : tensor<3xi32>
// CHECK-NEXT:    %r = graph.constant dense_resource<ops_blob_w> : tensor<1xf32>
// CHECK-NEXT:    func.return %w, %s, %m, %z, %r : tensor<2xf32>, tensor<i64>, tensor<2x2xi1>, tensor<3xi32>, tensor<1xf32>

// Every unary op on a float tensor (the result type is the operand type).
func.func @unary_float(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.neg %x : tensor<4x8xf32>
  %1 = graph.abs %0 : tensor<4x8xf32>
  %2 = graph.sign %1 : tensor<4x8xf32>
  %3 = graph.exp %2 : tensor<4x8xf32>
  %4 = graph.log %3 : tensor<4x8xf32>
  %5 = graph.sqrt %4 : tensor<4x8xf32>
  %6 = graph.reciprocal %5 : tensor<4x8xf32>
  %7 = graph.tanh %6 : tensor<4x8xf32>
  %8 = graph.sigmoid %7 : tensor<4x8xf32>
  %9 = graph.relu %8 : tensor<4x8xf32>
  %10 = graph.erf %9 : tensor<4x8xf32>
  %11 = graph.sin %10 : tensor<4x8xf32>
  %12 = graph.cos %11 : tensor<4x8xf32>
  %13 = graph.floor %12 : tensor<4x8xf32>
  %14 = graph.ceil %13 : tensor<4x8xf32>
  %15 = graph.round %14 : tensor<4x8xf32>
  %16 = graph.softplus %15 : tensor<4x8xf32>
  %17 = graph.softsign %16 : tensor<4x8xf32>
  %18 = graph.hard_swish %17 : tensor<4x8xf32>
  func.return %18 : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @unary_float(
// CHECK-NEXT:    %0 = graph.neg %x : tensor<4x8xf32>
// CHECK-NEXT:    %1 = graph.abs %0 : tensor<4x8xf32>
// CHECK-NEXT:    %2 = graph.sign %1 : tensor<4x8xf32>
// CHECK-NEXT:    %3 = graph.exp %2 : tensor<4x8xf32>
// CHECK-NEXT:    %4 = graph.log %3 : tensor<4x8xf32>
// CHECK-NEXT:    %5 = graph.sqrt %4 : tensor<4x8xf32>
// CHECK-NEXT:    %6 = graph.reciprocal %5 : tensor<4x8xf32>
// CHECK-NEXT:    %7 = graph.tanh %6 : tensor<4x8xf32>
// CHECK-NEXT:    %8 = graph.sigmoid %7 : tensor<4x8xf32>
// CHECK-NEXT:    %9 = graph.relu %8 : tensor<4x8xf32>
// CHECK-NEXT:    %10 = graph.erf %9 : tensor<4x8xf32>
// CHECK-NEXT:    %11 = graph.sin %10 : tensor<4x8xf32>
// CHECK-NEXT:    %12 = graph.cos %11 : tensor<4x8xf32>
// CHECK-NEXT:    %13 = graph.floor %12 : tensor<4x8xf32>
// CHECK-NEXT:    %14 = graph.ceil %13 : tensor<4x8xf32>
// CHECK-NEXT:    %15 = graph.round %14 : tensor<4x8xf32>
// CHECK-NEXT:    %16 = graph.softplus %15 : tensor<4x8xf32>
// CHECK-NEXT:    %17 = graph.softsign %16 : tensor<4x8xf32>
// CHECK-NEXT:    %18 = graph.hard_swish %17 : tensor<4x8xf32>
// CHECK-NEXT:    func.return %18 : tensor<4x8xf32>

// Unary ops that also take integers; not takes i1.
func.func @unary_int(%x: tensor<5xi32>, %b: tensor<5xi1>) -> (tensor<5xi32>, tensor<5xi1>) {
  %0 = graph.neg %x : tensor<5xi32>
  %1 = graph.abs %0 : tensor<5xi32>
  %2 = graph.sign %1 : tensor<5xi32>
  %3 = graph.relu %2 : tensor<5xi32>
  %4 = graph.not %b : tensor<5xi1>
  func.return %3, %4 : tensor<5xi32>, tensor<5xi1>
}
// CHECK-LABEL: func.func @unary_int(
// CHECK-NEXT:    %0 = graph.neg %x : tensor<5xi32>
// CHECK-NEXT:    %1 = graph.abs %0 : tensor<5xi32>
// CHECK-NEXT:    %2 = graph.sign %1 : tensor<5xi32>
// CHECK-NEXT:    %3 = graph.relu %2 : tensor<5xi32>
// CHECK-NEXT:    %4 = graph.not %b : tensor<5xi1>
// CHECK-NEXT:    func.return %3, %4 : tensor<5xi32>, tensor<5xi1>

// Activations with float parameters: clip with two, one or no bounds; both gelu modes.
func.func @parametric(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.leaky_relu %x {alpha = 0.01 : f64} : tensor<4xf32>
  %1 = graph.elu %0 {alpha = 1.0 : f64} : tensor<4xf32>
  %2 = graph.selu %1 {alpha = 1.67 : f64, gamma = 1.05 : f64} : tensor<4xf32>
  %3 = graph.hard_sigmoid %2 {alpha = 0.2 : f64, beta = 0.5 : f64} : tensor<4xf32>
  %4 = graph.clip %3 {alpha = 0.0 : f64, beta = 6.0 : f64} : tensor<4xf32>
  %5 = graph.clip %4 {beta = 1.0 : f64} : tensor<4xf32>
  %6 = graph.clip %5 : tensor<4xf32>
  %7 = graph.gelu %6 : tensor<4xf32>
  %8 = graph.gelu %7 {approximate = "tanh"} : tensor<4xf32>
  %9 = graph.gelu %8 {approximate = "none"} : tensor<4xf32>
  func.return %9 : tensor<4xf32>
}
// CHECK-LABEL: func.func @parametric(
// CHECK-NEXT:    %0 = graph.leaky_relu %x {alpha = 1.000000e-02 : f64} : tensor<4xf32>
// CHECK-NEXT:    %1 = graph.elu %0 {alpha = 1.000000e+00 : f64} : tensor<4xf32>
// CHECK-NEXT:    %2 = graph.selu %1 {alpha = 1.670000e+00 : f64, gamma = 1.050000e+00 : f64} : tensor<4xf32>
// CHECK-NEXT:    %3 = graph.hard_sigmoid %2 {alpha = 2.000000e-01 : f64, beta = 5.000000e-01 : f64} : tensor<4xf32>
// CHECK-NEXT:    %4 = graph.clip %3 {alpha = 0.000000e+00 : f64, beta = 6.000000e+00 : f64} : tensor<4xf32>
// CHECK-NEXT:    %5 = graph.clip %4 {beta = 1.000000e+00 : f64} : tensor<4xf32>
// CHECK-NEXT:    %6 = graph.clip %5 : tensor<4xf32>
// CHECK-NEXT:    %7 = graph.gelu %6 : tensor<4xf32>
// CHECK-NEXT:    %8 = graph.gelu %7 {approximate = "tanh"} : tensor<4xf32>
// CHECK-NEXT:    %9 = graph.gelu %8 {approximate = "none"} : tensor<4xf32>
// CHECK-NEXT:    func.return %9 : tensor<4xf32>

// Every arithmetic binary op on equal shapes; mod with an explicit mode.
func.func @binary_same_shape(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.add %x, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = graph.sub %0, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = graph.mul %1, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %3 = graph.div %2, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %4 = graph.pow %3, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %5 = graph.max %4, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %6 = graph.min %5, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %7 = graph.mod %6, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %8 = graph.prelu %7, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %9 = graph.mod %8, %y {mode = "floor"} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %9 : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @binary_same_shape(
// CHECK-NEXT:    %0 = graph.add %x, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = graph.sub %0, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %2 = graph.mul %1, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %3 = graph.div %2, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %4 = graph.pow %3, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %5 = graph.max %4, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %6 = graph.min %5, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %7 = graph.mod %6, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %8 = graph.prelu %7, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %9 = graph.mod %8, %y {mode = "floor"} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %9 : tensor<2x3xf32>

// Broadcasting: a trailing row, 4x1 with 1x5, rank-0 scalars on either side.
func.func @binary_broadcast(%x: tensor<2x3xf32>, %row: tensor<3xf32>, %col: tensor<4x1xi32>, %r: tensor<1x5xi32>, %s: tensor<f32>) -> (tensor<2x3xf32>, tensor<4x5xi32>, tensor<2x3xf32>, tensor<f32>) {
  %0 = graph.add %x, %row : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %1 = graph.mul %col, %r : tensor<4x1xi32>, tensor<1x5xi32> -> tensor<4x5xi32>
  %2 = graph.div %s, %x : tensor<f32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %3 = graph.sub %s, %s : tensor<f32>, tensor<f32> -> tensor<f32>
  %4 = graph.prelu %x, %row : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  func.return %2, %1, %4, %3 : tensor<2x3xf32>, tensor<4x5xi32>, tensor<2x3xf32>, tensor<f32>
}
// CHECK-LABEL: func.func @binary_broadcast(
// CHECK-NEXT:    %0 = graph.add %x, %row : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = graph.mul %col, %r : tensor<4x1xi32>, tensor<1x5xi32> -> tensor<4x5xi32>
// CHECK-NEXT:    %2 = graph.div %s, %x : tensor<f32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %3 = graph.sub %s, %s : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:    %4 = graph.prelu %x, %row : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %2, %1, %4, %3 : tensor<2x3xf32>, tensor<4x5xi32>, tensor<2x3xf32>, tensor<f32>

// Logical ops on i1, broadcast.
func.func @logical(%a: tensor<4xi1>, %b: tensor<2x1xi1>) -> tensor<2x4xi1> {
  %0 = graph.and %a, %b : tensor<4xi1>, tensor<2x1xi1> -> tensor<2x4xi1>
  %1 = graph.or %0, %a : tensor<2x4xi1>, tensor<4xi1> -> tensor<2x4xi1>
  %2 = graph.xor %1, %b : tensor<2x4xi1>, tensor<2x1xi1> -> tensor<2x4xi1>
  func.return %2 : tensor<2x4xi1>
}
// CHECK-LABEL: func.func @logical(
// CHECK-NEXT:    %0 = graph.and %a, %b : tensor<4xi1>, tensor<2x1xi1> -> tensor<2x4xi1>
// CHECK-NEXT:    %1 = graph.or %0, %a : tensor<2x4xi1>, tensor<4xi1> -> tensor<2x4xi1>
// CHECK-NEXT:    %2 = graph.xor %1, %b : tensor<2x4xi1>, tensor<2x1xi1> -> tensor<2x4xi1>
// CHECK-NEXT:    func.return %2 : tensor<2x4xi1>

// Comparisons produce i1, for float and integer operands.
func.func @compare(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %i: tensor<4xi64>, %j: tensor<i64>) -> (tensor<2x3xi1>, tensor<4xi1>) {
  %0 = graph.equal %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
  %1 = graph.less %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
  %2 = graph.less_equal %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
  %3 = graph.greater %i, %j : tensor<4xi64>, tensor<i64> -> tensor<4xi1>
  %4 = graph.greater_equal %i, %j : tensor<4xi64>, tensor<i64> -> tensor<4xi1>
  func.return %2, %4 : tensor<2x3xi1>, tensor<4xi1>
}
// CHECK-LABEL: func.func @compare(
// CHECK-NEXT:    %0 = graph.equal %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
// CHECK-NEXT:    %1 = graph.less %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
// CHECK-NEXT:    %2 = graph.less_equal %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
// CHECK-NEXT:    %3 = graph.greater %i, %j : tensor<4xi64>, tensor<i64> -> tensor<4xi1>
// CHECK-NEXT:    %4 = graph.greater_equal %i, %j : tensor<4xi64>, tensor<i64> -> tensor<4xi1>
// CHECK-NEXT:    func.return %2, %4 : tensor<2x3xi1>, tensor<4xi1>

// where broadcasts condition, x and y three ways.
func.func @where(%c: tensor<2x3xi1>, %x: tensor<3xf32>, %y: tensor<f32>) -> tensor<2x3xf32> {
  %0 = graph.where %c, %x, %y : tensor<2x3xi1>, tensor<3xf32>, tensor<f32> -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @where(
// CHECK-NEXT:    %0 = graph.where %c, %x, %y : tensor<2x3xi1>, tensor<3xf32>, tensor<f32> -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %0 : tensor<2x3xf32>

// cast between integer, float and i1 element types.
func.func @cast(%x: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi1>) {
  %0 = graph.cast %x : tensor<4xi64> -> tensor<4xf32>
  %1 = graph.cast %0 : tensor<4xf32> -> tensor<4xi1>
  func.return %0, %1 : tensor<4xf32>, tensor<4xi1>
}
// CHECK-LABEL: func.func @cast(
// CHECK-NEXT:    %0 = graph.cast %x : tensor<4xi64> -> tensor<4xf32>
// CHECK-NEXT:    %1 = graph.cast %0 : tensor<4xf32> -> tensor<4xi1>
// CHECK-NEXT:    func.return %0, %1 : tensor<4xf32>, tensor<4xi1>

// Affine quantization: to int8 with one scale and zero point, back to f32 with a scale per
// channel (axis 1); and the int8 x int8 -> i32 matmul graph-quantized-matmul makes.
func.func @quantize(%x: tensor<2x3x4xf32>, %s: tensor<f32>, %z: tensor<i8>, %c: tensor<1x3x1xf32>, %zc: tensor<1x3x1xi8>, %w: tensor<4x5xi8>) -> (tensor<2x3x4xf32>, tensor<2x3x5xi32>) {
  %0 = graph.quantize %x, %s, %z : tensor<2x3x4xf32>, tensor<f32>, tensor<i8> -> tensor<2x3x4xi8>
  %1 = graph.dequantize %0, %c, %zc : tensor<2x3x4xi8>, tensor<1x3x1xf32>, tensor<1x3x1xi8> -> tensor<2x3x4xf32>
  %2 = graph.matmul %0, %w : tensor<2x3x4xi8>, tensor<4x5xi8> -> tensor<2x3x5xi32>
  func.return %1, %2 : tensor<2x3x4xf32>, tensor<2x3x5xi32>
}
// CHECK-LABEL: func.func @quantize(
// CHECK-NEXT:    %0 = graph.quantize %x, %s, %z : tensor<2x3x4xf32>, tensor<f32>, tensor<i8> -> tensor<2x3x4xi8>
// CHECK-NEXT:    %1 = graph.dequantize %0, %c, %zc : tensor<2x3x4xi8>, tensor<1x3x1xf32>, tensor<1x3x1xi8> -> tensor<2x3x4xf32>
// CHECK-NEXT:    %2 = graph.matmul %0, %w : tensor<2x3x4xi8>, tensor<4x5xi8> -> tensor<2x3x5xi32>
// CHECK-NEXT:    func.return %1, %2 : tensor<2x3x4xf32>, tensor<2x3x5xi32>

// The int8 conv graph-quantized-matmul makes: i8 x i8 -> i32, the input's zero point subtracted.
func.func @int8_conv(%x: tensor<1x3x6x6xi8>, %w: tensor<4x3x3x3xi8>) -> tensor<1x4x6x6xi32> {
  %0 = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, input_zero = -128 : i64} : tensor<1x3x6x6xi8>, tensor<4x3x3x3xi8> -> tensor<1x4x6x6xi32>
  func.return %0 : tensor<1x4x6x6xi32>
}
// CHECK-LABEL: func.func @int8_conv(
// CHECK-NEXT:    %0 = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, input_zero = -128 : i64} : tensor<1x3x6x6xi8>, tensor<4x3x3x3xi8> -> tensor<1x4x6x6xi32>

// Batched matmul against a shared 2-D weight; with a bias and a fused activation.
func.func @matmul(%a: tensor<8x128x64xf32>, %b: tensor<64x32xf32>, %bias: tensor<32xf32>) -> (tensor<8x128x32xf32>, tensor<8x128x32xf32>) {
  %0 = graph.matmul %a, %b : tensor<8x128x64xf32>, tensor<64x32xf32> -> tensor<8x128x32xf32>
  %1 = graph.matmul %a, %b, %bias {activation = "relu"} : tensor<8x128x64xf32>, tensor<64x32xf32>, tensor<32xf32> -> tensor<8x128x32xf32>
  func.return %0, %1 : tensor<8x128x32xf32>, tensor<8x128x32xf32>
}
// CHECK-LABEL: func.func @matmul(
// CHECK-NEXT:    %0 = graph.matmul %a, %b : tensor<8x128x64xf32>, tensor<64x32xf32> -> tensor<8x128x32xf32>
// CHECK-NEXT:    %1 = graph.matmul %a, %b, %bias {activation = "relu"} : tensor<8x128x64xf32>, tensor<64x32xf32>, tensor<32xf32> -> tensor<8x128x32xf32>
// CHECK-NEXT:    func.return %0, %1 : tensor<8x128x32xf32>, tensor<8x128x32xf32>

// Batch dims broadcast like elementwise operands (2x1 with 3 gives 2x3).
func.func @matmul_batch_broadcast(%a: tensor<2x1x4x8xf32>, %b: tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32> {
  %0 = graph.matmul %a, %b : tensor<2x1x4x8xf32>, tensor<3x8x5xf32> -> tensor<2x3x4x5xf32>
  func.return %0 : tensor<2x3x4x5xf32>
}
// CHECK-LABEL: func.func @matmul_batch_broadcast(
// CHECK-NEXT:    %0 = graph.matmul %a, %b : tensor<2x1x4x8xf32>, tensor<3x8x5xf32> -> tensor<2x3x4x5xf32>
// CHECK-NEXT:    func.return %0 : tensor<2x3x4x5xf32>

// 1-D operands are promoted and their unit dim dropped: vector-matrix, matrix-vector, dot.
func.func @matmul_1d(%v: tensor<8xf32>, %m: tensor<8x5xf32>, %n: tensor<3x8xf32>) -> (tensor<5xf32>, tensor<3xf32>, tensor<f32>) {
  %0 = graph.matmul %v, %m : tensor<8xf32>, tensor<8x5xf32> -> tensor<5xf32>
  %1 = graph.matmul %n, %v : tensor<3x8xf32>, tensor<8xf32> -> tensor<3xf32>
  %2 = graph.matmul %v, %v : tensor<8xf32>, tensor<8xf32> -> tensor<f32>
  func.return %0, %1, %2 : tensor<5xf32>, tensor<3xf32>, tensor<f32>
}
// CHECK-LABEL: func.func @matmul_1d(
// CHECK-NEXT:    %0 = graph.matmul %v, %m : tensor<8xf32>, tensor<8x5xf32> -> tensor<5xf32>
// CHECK-NEXT:    %1 = graph.matmul %n, %v : tensor<3x8xf32>, tensor<8xf32> -> tensor<3xf32>
// CHECK-NEXT:    %2 = graph.matmul %v, %v : tensor<8xf32>, tensor<8xf32> -> tensor<f32>
// CHECK-NEXT:    func.return %0, %1, %2 : tensor<5xf32>, tensor<3xf32>, tensor<f32>

// 2-D conv with bias, pads and strides; without bias, strided, with a fused activation.
func.func @conv(%x: tensor<1x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>) -> (tensor<1x16x32x32xf32>, tensor<1x16x15x15xf32>) {
  %0 = graph.conv %x, %w, %b {group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32> -> tensor<1x16x32x32xf32>
  %1 = graph.conv %x, %w {strides = array<i64: 2, 2>, activation = "relu6"} : tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<1x16x15x15xf32>
  func.return %0, %1 : tensor<1x16x32x32xf32>, tensor<1x16x15x15xf32>
}
// CHECK-LABEL: func.func @conv(
// CHECK-NEXT:    %0 = graph.conv %x, %w, %b {group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32> -> tensor<1x16x32x32xf32>
// CHECK-NEXT:    %1 = graph.conv %x, %w {strides = array<i64: 2, 2>, activation = "relu6"} : tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<1x16x15x15xf32>
// CHECK-NEXT:    func.return %0, %1 : tensor<1x16x32x32xf32>, tensor<1x16x15x15xf32>

// Channels last: input and result N x H x W x C, the weight keeps C_out x C_in x kh x kw.
func.func @conv_channels_last(%x: tensor<1x32x32x3xf32>, %w: tensor<16x3x3x3xf32>) -> tensor<1x32x32x16xf32> {
  %0 = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, channels_last} : tensor<1x32x32x3xf32>, tensor<16x3x3x3xf32> -> tensor<1x32x32x16xf32>
  func.return %0 : tensor<1x32x32x16xf32>
}
// CHECK-LABEL: func.func @conv_channels_last(
// CHECK-NEXT:    %0 = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, channels_last} : tensor<1x32x32x3xf32>, tensor<16x3x3x3xf32> -> tensor<1x32x32x16xf32>
// CHECK-NEXT:    func.return %0 : tensor<1x32x32x16xf32>

// A channels-last max pool: N x H x W x C in and out.
func.func @max_pool_channels_last(%x: tensor<1x8x8x16xf32>) -> tensor<1x4x4x16xf32> {
  %0 = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, channels_last} : tensor<1x8x8x16xf32> -> tensor<1x4x4x16xf32>
  func.return %0 : tensor<1x4x4x16xf32>
}
// CHECK-LABEL: func.func @max_pool_channels_last(
// CHECK-NEXT:    %0 = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, channels_last} : tensor<1x8x8x16xf32> -> tensor<1x4x4x16xf32>
// CHECK-NEXT:    func.return %0 : tensor<1x4x4x16xf32>

// Depthwise conv (group == C_in) with dilation 2.
func.func @conv_depthwise_dilated(%x: tensor<2x8x10x10xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<2x8x6x6xf32> {
  %0 = graph.conv %x, %w {group = 8 : i64, dilations = array<i64: 2, 2>} : tensor<2x8x10x10xf32>, tensor<8x1x3x3xf32> -> tensor<2x8x6x6xf32>
  func.return %0 : tensor<2x8x6x6xf32>
}
// CHECK-LABEL: func.func @conv_depthwise_dilated(
// CHECK-NEXT:    %0 = graph.conv %x, %w {group = 8 : i64, dilations = array<i64: 2, 2>} : tensor<2x8x10x10xf32>, tensor<8x1x3x3xf32> -> tensor<2x8x6x6xf32>
// CHECK-NEXT:    func.return %0 : tensor<2x8x6x6xf32>

// 1-D grouped conv with an end pad only.
func.func @conv_1d_asymmetric_pads(%x: tensor<1x4x9xf32>, %w: tensor<6x2x3xf32>) -> tensor<1x6x4xf32> {
  %0 = graph.conv %x, %w {group = 2 : i64, pads = array<i64: 0, 1>, strides = array<i64: 2>} : tensor<1x4x9xf32>, tensor<6x2x3xf32> -> tensor<1x6x4xf32>
  func.return %0 : tensor<1x6x4xf32>
}
// CHECK-LABEL: func.func @conv_1d_asymmetric_pads(
// CHECK-NEXT:    %0 = graph.conv %x, %w {group = 2 : i64, pads = array<i64: 0, 1>, strides = array<i64: 2>} : tensor<1x4x9xf32>, tensor<6x2x3xf32> -> tensor<1x6x4xf32>
// CHECK-NEXT:    func.return %0 : tensor<1x6x4xf32>

// max/avg pooling: strided, padded with count_include_pad, and ceil_mode vs floor.
func.func @pooling(%x: tensor<1x8x32x32xf32>, %y: tensor<1x2x5x5xf32>) -> (tensor<1x8x16x16xf32>, tensor<1x8x32x32xf32>, tensor<1x2x3x3xf32>, tensor<1x2x2x2xf32>) {
  %0 = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x8x32x32xf32> -> tensor<1x8x16x16xf32>
  %1 = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, count_include_pad} : tensor<1x8x32x32xf32> -> tensor<1x8x32x32xf32>
  %2 = graph.max_pool %y {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode} : tensor<1x2x5x5xf32> -> tensor<1x2x3x3xf32>
  %3 = graph.avg_pool %y {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x2x5x5xf32> -> tensor<1x2x2x2xf32>
  func.return %0, %1, %2, %3 : tensor<1x8x16x16xf32>, tensor<1x8x32x32xf32>, tensor<1x2x3x3xf32>, tensor<1x2x2x2xf32>
}
// CHECK-LABEL: func.func @pooling(
// CHECK-NEXT:    %0 = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x8x32x32xf32> -> tensor<1x8x16x16xf32>
// CHECK-NEXT:    %1 = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, count_include_pad} : tensor<1x8x32x32xf32> -> tensor<1x8x32x32xf32>
// CHECK-NEXT:    %2 = graph.max_pool %y {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode} : tensor<1x2x5x5xf32> -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    %3 = graph.avg_pool %y {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x2x5x5xf32> -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    func.return %0, %1, %2, %3 : tensor<1x8x16x16xf32>, tensor<1x8x32x32xf32>, tensor<1x2x3x3xf32>, tensor<1x2x2x2xf32>

// batch_norm; layer_norm with bias over the last dim and without bias over two dims.
func.func @normalization(%x: tensor<1x16x8x8xf32>, %c: tensor<16xf32>, %t: tensor<1x128x384xf32>, %g: tensor<384xf32>, %h: tensor<128x384xf32>) -> (tensor<1x16x8x8xf32>, tensor<1x128x384xf32>, tensor<1x128x384xf32>) {
  %0 = graph.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f64} : tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<1x16x8x8xf32>
  %1 = graph.layer_norm %t, %g, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<1x128x384xf32>, tensor<384xf32>, tensor<384xf32> -> tensor<1x128x384xf32>
  %2 = graph.layer_norm %t, %h {axis = 1 : i64} : tensor<1x128x384xf32>, tensor<128x384xf32> -> tensor<1x128x384xf32>
  func.return %0, %1, %2 : tensor<1x16x8x8xf32>, tensor<1x128x384xf32>, tensor<1x128x384xf32>
}
// CHECK-LABEL: func.func @normalization(
// CHECK-NEXT:    %0 = graph.batch_norm %x, %c, %c, %c, %c {epsilon = 1.000000e-05 : f64} : tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %1 = graph.layer_norm %t, %g, %g {axis = -1 : i64, epsilon = 1.000000e-05 : f64} : tensor<1x128x384xf32>, tensor<384xf32>, tensor<384xf32> -> tensor<1x128x384xf32>
// CHECK-NEXT:    %2 = graph.layer_norm %t, %h {axis = 1 : i64} : tensor<1x128x384xf32>, tensor<128x384xf32> -> tensor<1x128x384xf32>
// CHECK-NEXT:    func.return %0, %1, %2 : tensor<1x16x8x8xf32>, tensor<1x128x384xf32>, tensor<1x128x384xf32>

// attention with a per-batch key mask, and without a mask (V of another head width).
func.func @attention(%q: tensor<2x16x64xf32>, %k: tensor<2x8x64xf32>, %v: tensor<2x8x32xf32>, %m: tensor<2x1x1x8xf32>) -> (tensor<2x16x32xf32>, tensor<2x16x32xf32>) {
  %0 = graph.attention %q, %k, %v, %m {heads = 4 : i64, scale = 0.25 : f64} : tensor<2x16x64xf32>, tensor<2x8x64xf32>, tensor<2x8x32xf32>, tensor<2x1x1x8xf32> -> tensor<2x16x32xf32>
  %1 = graph.attention %q, %k, %v {heads = 2 : i64, scale = 1.0 : f64} : tensor<2x16x64xf32>, tensor<2x8x64xf32>, tensor<2x8x32xf32> -> tensor<2x16x32xf32>
  func.return %0, %1 : tensor<2x16x32xf32>, tensor<2x16x32xf32>
}
// CHECK-LABEL: func.func @attention(
// CHECK-NEXT:    %0 = graph.attention %q, %k, %v, %m {heads = 4 : i64, scale = 2.500000e-01 : f64} : tensor<2x16x64xf32>, tensor<2x8x64xf32>, tensor<2x8x32xf32>, tensor<2x1x1x8xf32> -> tensor<2x16x32xf32>
// CHECK-NEXT:    %1 = graph.attention %q, %k, %v {heads = 2 : i64, scale = 1.000000e+00 : f64} : tensor<2x16x64xf32>, tensor<2x8x64xf32>, tensor<2x8x32xf32> -> tensor<2x16x32xf32>
// CHECK-NEXT:    func.return %0, %1

// softmax/log_softmax with an explicit axis and with the default (-1).
func.func @softmax(%s: tensor<1x12x128x128xf32>, %l: tensor<4x10xf32>) -> (tensor<1x12x128x128xf32>, tensor<4x10xf32>, tensor<4x10xf32>) {
  %0 = graph.softmax %s {axis = -1 : i64} : tensor<1x12x128x128xf32>
  %1 = graph.log_softmax %l {axis = 1 : i64} : tensor<4x10xf32>
  %2 = graph.softmax %l : tensor<4x10xf32>
  func.return %0, %1, %2 : tensor<1x12x128x128xf32>, tensor<4x10xf32>, tensor<4x10xf32>
}
// CHECK-LABEL: func.func @softmax(
// CHECK-NEXT:    %0 = graph.softmax %s {axis = -1 : i64} : tensor<1x12x128x128xf32>
// CHECK-NEXT:    %1 = graph.log_softmax %l {axis = 1 : i64} : tensor<4x10xf32>
// CHECK-NEXT:    %2 = graph.softmax %l : tensor<4x10xf32>
// CHECK-NEXT:    func.return %0, %1, %2 : tensor<1x12x128x128xf32>, tensor<4x10xf32>, tensor<4x10xf32>

// Reductions with and without keepdims, over one or all axes; arg-reductions give i64.
func.func @reductions(%x: tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<8xf32>, tensor<f32>, tensor<1x1xf32>, tensor<4xf32>, tensor<4xi64>, tensor<1x8xi64>) {
  %0 = graph.reduce_sum %x {axes = array<i64: 1>, keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
  %1 = graph.reduce_mean %x {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
  %2 = graph.reduce_max %x {axes = array<i64: 0, 1>} : tensor<4x8xf32> -> tensor<f32>
  %3 = graph.reduce_min %x {axes = array<i64: 0, 1>, keepdims} : tensor<4x8xf32> -> tensor<1x1xf32>
  %4 = graph.reduce_prod %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
  %5 = graph.argmax %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xi64>
  %6 = graph.argmin %x {axes = array<i64: 0>, keepdims, select_last_index} : tensor<4x8xf32> -> tensor<1x8xi64>
  func.return %0, %1, %2, %3, %4, %5, %6 : tensor<4x1xf32>, tensor<8xf32>, tensor<f32>, tensor<1x1xf32>, tensor<4xf32>, tensor<4xi64>, tensor<1x8xi64>
}
// CHECK-LABEL: func.func @reductions(
// CHECK-NEXT:    %0 = graph.reduce_sum %x {axes = array<i64: 1>, keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    %1 = graph.reduce_mean %x {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xf32>
// CHECK-NEXT:    %2 = graph.reduce_max %x {axes = array<i64: 0, 1>} : tensor<4x8xf32> -> tensor<f32>
// CHECK-NEXT:    %3 = graph.reduce_min %x {axes = array<i64: 0, 1>, keepdims} : tensor<4x8xf32> -> tensor<1x1xf32>
// CHECK-NEXT:    %4 = graph.reduce_prod %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NEXT:    %5 = graph.argmax %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xi64>
// CHECK-NEXT:    %6 = graph.argmin %x {axes = array<i64: 0>, keepdims, select_last_index} : tensor<4x8xf32> -> tensor<1x8xi64>
// CHECK-NEXT:    func.return %0, %1, %2, %3, %4, %5, %6 : tensor<4x1xf32>, tensor<8xf32>, tensor<f32>, tensor<1x1xf32>, tensor<4xf32>, tensor<4xi64>, tensor<1x8xi64>

// Empty axes reduce nothing: the result is the input shape.
func.func @reduce_no_axes(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.reduce_sum %x : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @reduce_no_axes(
// CHECK-NEXT:    %0 = graph.reduce_sum %x : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %0 : tensor<4x8xf32>

// reshape, including from a rank-0 tensor.
func.func @reshape(%x: tensor<1x12x64xf32>, %s: tensor<f32>) -> (tensor<1x768xf32>, tensor<1x1xf32>) {
  %0 = graph.reshape %x : tensor<1x12x64xf32> -> tensor<1x768xf32>
  %1 = graph.reshape %s : tensor<f32> -> tensor<1x1xf32>
  func.return %0, %1 : tensor<1x768xf32>, tensor<1x1xf32>
}
// CHECK-LABEL: func.func @reshape(
// CHECK-NEXT:    %0 = graph.reshape %x : tensor<1x12x64xf32> -> tensor<1x768xf32>
// CHECK-NEXT:    %1 = graph.reshape %s : tensor<f32> -> tensor<1x1xf32>
// CHECK-NEXT:    func.return %0, %1 : tensor<1x768xf32>, tensor<1x1xf32>

// transpose with a perm and with the default (reversed dims).
func.func @transpose(%x: tensor<1x128x12x64xf32>, %m: tensor<3x5xi8>) -> (tensor<1x12x128x64xf32>, tensor<5x3xi8>) {
  %0 = graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : tensor<1x128x12x64xf32> -> tensor<1x12x128x64xf32>
  %1 = graph.transpose %m : tensor<3x5xi8> -> tensor<5x3xi8>
  func.return %0, %1 : tensor<1x12x128x64xf32>, tensor<5x3xi8>
}
// CHECK-LABEL: func.func @transpose(
// CHECK-NEXT:    %0 = graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : tensor<1x128x12x64xf32> -> tensor<1x12x128x64xf32>
// CHECK-NEXT:    %1 = graph.transpose %m : tensor<3x5xi8> -> tensor<5x3xi8>
// CHECK-NEXT:    func.return %0, %1 : tensor<1x12x128x64xf32>, tensor<5x3xi8>

// concat of three tensors, along the default axis 0, and of one tensor.
func.func @concat(%a: tensor<1x8xf32>, %b: tensor<1x4xf32>, %c: tensor<2x8xf32>) -> (tensor<1x20xf32>, tensor<3x8xf32>, tensor<1x8xf32>) {
  %0 = graph.concat %a, %b, %a {axis = 1 : i64} : (tensor<1x8xf32>, tensor<1x4xf32>, tensor<1x8xf32>) -> tensor<1x20xf32>
  %1 = graph.concat %a, %c : (tensor<1x8xf32>, tensor<2x8xf32>) -> tensor<3x8xf32>
  %2 = graph.concat %a {axis = 0 : i64} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  func.return %0, %1, %2 : tensor<1x20xf32>, tensor<3x8xf32>, tensor<1x8xf32>
}
// CHECK-LABEL: func.func @concat(
// CHECK-NEXT:    %0 = graph.concat %a, %b, %a {axis = 1 : i64} : (tensor<1x8xf32>, tensor<1x4xf32>, tensor<1x8xf32>) -> tensor<1x20xf32>
// CHECK-NEXT:    %1 = graph.concat %a, %c : (tensor<1x8xf32>, tensor<2x8xf32>) -> tensor<3x8xf32>
// CHECK-NEXT:    %2 = graph.concat %a {axis = 0 : i64} : (tensor<1x8xf32>) -> tensor<1x8xf32>
// CHECK-NEXT:    func.return %0, %1, %2 : tensor<1x20xf32>, tensor<3x8xf32>, tensor<1x8xf32>

// Strided, negative-step and empty slices.
func.func @slice(%x: tensor<4x10xf32>) -> (tensor<4x4xf32>, tensor<2x10xf32>, tensor<0x10xf32>) {
  %0 = graph.slice %x {starts = array<i64: 0, 2>, steps = array<i64: 1, 2>} : tensor<4x10xf32> -> tensor<4x4xf32>
  %1 = graph.slice %x {starts = array<i64: 3, 9>, steps = array<i64: -2, -1>} : tensor<4x10xf32> -> tensor<2x10xf32>
  %2 = graph.slice %x : tensor<4x10xf32> -> tensor<0x10xf32>
  func.return %0, %1, %2 : tensor<4x4xf32>, tensor<2x10xf32>, tensor<0x10xf32>
}
// CHECK-LABEL: func.func @slice(
// CHECK-NEXT:    %0 = graph.slice %x {starts = array<i64: 0, 2>, steps = array<i64: 1, 2>} : tensor<4x10xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    %1 = graph.slice %x {starts = array<i64: 3, 9>, steps = array<i64: -2, -1>} : tensor<4x10xf32> -> tensor<2x10xf32>
// CHECK-NEXT:    %2 = graph.slice %x : tensor<4x10xf32> -> tensor<0x10xf32>
// CHECK-NEXT:    func.return %0, %1, %2 : tensor<4x4xf32>, tensor<2x10xf32>, tensor<0x10xf32>

// split into three equal pieces with named results, and into two unequal ones.
func.func @split(%x: tensor<1x128x1152xf32>, %y: tensor<6x2xi32>) -> (tensor<1x128x384xf32>, tensor<1x128x384xf32>, tensor<1x128x384xf32>, tensor<1x2xi32>, tensor<5x2xi32>) {
  %q, %k, %v = graph.split %x {axis = 2 : i64} : tensor<1x128x1152xf32> -> tensor<1x128x384xf32>, tensor<1x128x384xf32>, tensor<1x128x384xf32>
  %0:2 = graph.split %y : tensor<6x2xi32> -> tensor<1x2xi32>, tensor<5x2xi32>
  func.return %q, %k, %v, %0#0, %0#1 : tensor<1x128x384xf32>, tensor<1x128x384xf32>, tensor<1x128x384xf32>, tensor<1x2xi32>, tensor<5x2xi32>
}
// CHECK-LABEL: func.func @split(
// CHECK-NEXT:    %q, %k, %v = graph.split %x {axis = 2 : i64} : tensor<1x128x1152xf32> -> tensor<1x128x384xf32>, tensor<1x128x384xf32>, tensor<1x128x384xf32>
// CHECK-NEXT:    %0, %1 = graph.split %y : tensor<6x2xi32> -> tensor<1x2xi32>, tensor<5x2xi32>
// CHECK-NEXT:    func.return %q, %k, %v, %0, %1 : tensor<1x128x384xf32>, tensor<1x128x384xf32>, tensor<1x128x384xf32>, tensor<1x2xi32>, tensor<5x2xi32>

// broadcast, tile, and pad in each mode (negative pads crop).
func.func @broadcast_tile_pad(%x: tensor<1x128xf32>, %t: tensor<3x4xf32>, %p: tensor<2x3xf32>) -> (tensor<4x128xf32>, tensor<6x4xf32>, tensor<2x5xf32>, tensor<4x3xf32>, tensor<2x1xf32>) {
  %0 = graph.broadcast %x : tensor<1x128xf32> -> tensor<4x128xf32>
  %1 = graph.tile %t {repeats = array<i64: 2, 1>} : tensor<3x4xf32> -> tensor<6x4xf32>
  %2 = graph.pad %p {pads = array<i64: 0, 1, 0, 1>, mode = "constant", value = 0.0 : f64} : tensor<2x3xf32> -> tensor<2x5xf32>
  %3 = graph.pad %p {pads = array<i64: 1, 0, 1, 0>, mode = "reflect"} : tensor<2x3xf32> -> tensor<4x3xf32>
  %4 = graph.pad %p {pads = array<i64: 0, -1, 0, -1>, mode = "edge"} : tensor<2x3xf32> -> tensor<2x1xf32>
  func.return %0, %1, %2, %3, %4 : tensor<4x128xf32>, tensor<6x4xf32>, tensor<2x5xf32>, tensor<4x3xf32>, tensor<2x1xf32>
}
// CHECK-LABEL: func.func @broadcast_tile_pad(
// CHECK-NEXT:    %0 = graph.broadcast %x : tensor<1x128xf32> -> tensor<4x128xf32>
// CHECK-NEXT:    %1 = graph.tile %t {repeats = array<i64: 2, 1>} : tensor<3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT:    %2 = graph.pad %p {pads = array<i64: 0, 1, 0, 1>, mode = "constant", value = 0.000000e+00 : f64} : tensor<2x3xf32> -> tensor<2x5xf32>
// CHECK-NEXT:    %3 = graph.pad %p {pads = array<i64: 1, 0, 1, 0>, mode = "reflect"} : tensor<2x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT:    %4 = graph.pad %p {pads = array<i64: 0, -1, 0, -1>, mode = "edge"} : tensor<2x3xf32> -> tensor<2x1xf32>
// CHECK-NEXT:    func.return %0, %1, %2, %3, %4 : tensor<4x128xf32>, tensor<6x4xf32>, tensor<2x5xf32>, tensor<4x3xf32>, tensor<2x1xf32>

// Embedding-style gather along axis 0; gather with a rank-0 index along axis 1.
func.func @gather(%table: tensor<30522x384xf32>, %ids: tensor<1x128xi64>, %m: tensor<3x4x5xf32>, %i: tensor<i32>) -> (tensor<1x128x384xf32>, tensor<3x5xf32>) {
  %0 = graph.gather %table, %ids {axis = 0 : i64} : tensor<30522x384xf32>, tensor<1x128xi64> -> tensor<1x128x384xf32>
  %1 = graph.gather %m, %i {axis = 1 : i64} : tensor<3x4x5xf32>, tensor<i32> -> tensor<3x5xf32>
  func.return %0, %1 : tensor<1x128x384xf32>, tensor<3x5xf32>
}
// CHECK-LABEL: func.func @gather(
// CHECK-NEXT:    %0 = graph.gather %table, %ids {axis = 0 : i64} : tensor<30522x384xf32>, tensor<1x128xi64> -> tensor<1x128x384xf32>
// CHECK-NEXT:    %1 = graph.gather %m, %i {axis = 1 : i64} : tensor<3x4x5xf32>, tensor<i32> -> tensor<3x5xf32>
// CHECK-NEXT:    func.return %0, %1 : tensor<1x128x384xf32>, tensor<3x5xf32>

// gather_nd: one hidden state per sequence (k = 2 of rank 3, i64 indices); a batch_dims = 1
// gather of rows with i32 indices; the default batch_dims 0 with full coordinates (k = rank).
func.func @gather_nd(%h: tensor<2x16x64xf32>, %idx: tensor<2x2xi64>, %x: tensor<2x3x4xf32>, %j: tensor<2x5x1xi32>, %p: tensor<7x2xi64>) -> (tensor<2x64xf32>, tensor<2x5x4xf32>, tensor<7x4xf32>) {
  %0 = graph.gather_nd %h, %idx {batch_dims = 0 : i64} : tensor<2x16x64xf32>, tensor<2x2xi64> -> tensor<2x64xf32>
  %1 = graph.gather_nd %x, %j {batch_dims = 1 : i64} : tensor<2x3x4xf32>, tensor<2x5x1xi32> -> tensor<2x5x4xf32>
  %2 = graph.gather_nd %x, %p : tensor<2x3x4xf32>, tensor<7x2xi64> -> tensor<7x4xf32>
  func.return %0, %1, %2 : tensor<2x64xf32>, tensor<2x5x4xf32>, tensor<7x4xf32>
}
// CHECK-LABEL: func.func @gather_nd(
// CHECK-NEXT:    %0 = graph.gather_nd %h, %idx {batch_dims = 0 : i64} : tensor<2x16x64xf32>, tensor<2x2xi64> -> tensor<2x64xf32>
// CHECK-NEXT:    %1 = graph.gather_nd %x, %j {batch_dims = 1 : i64} : tensor<2x3x4xf32>, tensor<2x5x1xi32> -> tensor<2x5x4xf32>
// CHECK-NEXT:    %2 = graph.gather_nd %x, %p : tensor<2x3x4xf32>, tensor<7x2xi64> -> tensor<7x4xf32>
// CHECK-NEXT:    func.return %0, %1, %2 : tensor<2x64xf32>, tensor<2x5x4xf32>, tensor<7x4xf32>

// The blob is printed back in the module's resource section, in lower-case hex (upstream
// mlir-opt writes upper case; both spell the same bytes).
// CHECK:      {-#
// CHECK-NEXT:   dialect_resources: {
// CHECK-NEXT:     builtin: {
// CHECK-NEXT:       ops_blob_w: "0x040000000000803f"
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: #-}

{-# dialect_resources: { builtin: { ops_blob_w: "0x040000000000803F" } } #-}
