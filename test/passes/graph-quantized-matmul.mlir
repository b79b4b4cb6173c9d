// RUN: aitc-opt %s --split-input-file -p graph-quantized-matmul | filecheck %s

// A symmetric activation and a per-tensor weight: the product is an i8 x i8 -> i32 matmul on
// the weight as it is, scaled back once by sa * sw = 0.5 * 0.25.
func.func @symmetric(%x: tensor<2x3xi8>) -> tensor<2x2xf32> {
  %sa = graph.constant dense<0.5> : tensor<f32>
  %za = graph.constant dense<0> : tensor<i8>
  %a = graph.dequantize %x, %sa, %za : tensor<2x3xi8>, tensor<f32>, tensor<i8> -> tensor<2x3xf32>
  %wq = graph.constant dense<[[1, -2], [3, 4], [-5, 6]]> : tensor<3x2xi8>
  %sw = graph.constant dense<0.25> : tensor<f32>
  %w = graph.dequantize %wq, %sw, %za : tensor<3x2xi8>, tensor<f32>, tensor<i8> -> tensor<3x2xf32>
  %y = graph.matmul %a, %w : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<2x2xf32> loc("fc")
  func.return %y : tensor<2x2xf32>
}
// CHECK-LABEL: func.func @symmetric
// CHECK:         %fc_int8 = graph.constant dense<{{\[\[}}1, -2], [3, 4], [-5, 6]]> : tensor<3x2xi8>
// CHECK-NEXT:    %fc_acc = graph.matmul %x, %fc_int8 : tensor<2x3xi8>, tensor<3x2xi8> -> tensor<2x2xi32>
// CHECK-NEXT:    %fc_scale = graph.constant dense<1.250000e-01> : tensor<1xf32>
// CHECK-NEXT:    %fc_zero = graph.constant dense<0> : tensor<1xi32>
// CHECK-NEXT:    %y = graph.dequantize %fc_acc, %fc_scale, %fc_zero : tensor<2x2xi32>, tensor<1xf32>, tensor<1xi32> -> tensor<2x2xf32>
// CHECK-NEXT:    func.return %y
// CHECK-NOT:     graph.dequantize %x

// -----

// An activation zero point of 3 and a scale per column: the constant 3 * colsum(W) * sa * sw
// = [3 * -1 * 1 * 0.5, 3 * 8 * 1 * 2] = [-1.5, 48] is subtracted after the scaling.
func.func @zero_point_per_column(%x: tensor<4x3xi8>) -> tensor<4x2xf32> {
  %sa = graph.constant dense<1.0> : tensor<f32>
  %za = graph.constant dense<3> : tensor<i8>
  %a = graph.dequantize %x, %sa, %za : tensor<4x3xi8>, tensor<f32>, tensor<i8> -> tensor<4x3xf32>
  %wq = graph.constant dense<[[1, -2], [3, 4], [-5, 6]]> : tensor<3x2xi8>
  %sw = graph.constant dense<[[0.5, 2.0]]> : tensor<1x2xf32>
  %zw = graph.constant dense<0> : tensor<1x2xi8>
  %w = graph.dequantize %wq, %sw, %zw : tensor<3x2xi8>, tensor<1x2xf32>, tensor<1x2xi8> -> tensor<3x2xf32>
  %y = graph.matmul %a, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32> loc("fc")
  func.return %y : tensor<4x2xf32>
}
// CHECK-LABEL: func.func @zero_point_per_column
// CHECK:         graph.matmul %x, %fc_int8 : tensor<4x3xi8>, tensor<3x2xi8> -> tensor<4x2xi32>
// CHECK-NEXT:    %fc_scale = graph.constant dense<[5.000000e-01, 2.000000e+00]> : tensor<2xf32>
// CHECK:         %fc_scaled = graph.dequantize
// CHECK-NEXT:    %fc_zero_point_sums = graph.constant dense<[-1.500000e+00, 4.800000e+01]> : tensor<2xf32>
// CHECK-NEXT:    %y = graph.sub %fc_scaled, %fc_zero_point_sums

// -----

// A uint8 weight with zero point 128 is centred into int8 (129 - 128 = 1, ...).
func.func @uint8_weight(%x: tensor<1x2xi8>) -> tensor<1x1xf32> {
  %sa = graph.constant dense<1.0> : tensor<f32>
  %za = graph.constant dense<0> : tensor<i8>
  %a = graph.dequantize %x, %sa, %za : tensor<1x2xi8>, tensor<f32>, tensor<i8> -> tensor<1x2xf32>
  %wq = graph.constant dense<[[129], [0]]> : tensor<2x1xui8>
  %sw = graph.constant dense<1.0> : tensor<f32>
  %zw = graph.constant dense<128> : tensor<ui8>
  %w = graph.dequantize %wq, %sw, %zw : tensor<2x1xui8>, tensor<f32>, tensor<ui8> -> tensor<2x1xf32>
  %y = graph.matmul %a, %w : tensor<1x2xf32>, tensor<2x1xf32> -> tensor<1x1xf32> loc("fc")
  func.return %y : tensor<1x1xf32>
}
// CHECK-LABEL: func.func @uint8_weight
// CHECK:         %fc_int8 = graph.constant dense<{{\[\[}}1], [-128]]> : tensor<2x1xi8>

// -----

// Left in f32: a scale per row of the weight (it does not factor out of the sum), and a
// weight computed at run time.
func.func @not_rewritten(%x: tensor<2x3xi8>, %v: tensor<3x2xi8>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %sa = graph.constant dense<0.5> : tensor<f32>
  %za = graph.constant dense<0> : tensor<i8>
  %a = graph.dequantize %x, %sa, %za : tensor<2x3xi8>, tensor<f32>, tensor<i8> -> tensor<2x3xf32>
  %wq = graph.constant dense<1> : tensor<3x2xi8>
  %rows = graph.constant dense<[[0.5], [1.0], [2.0]]> : tensor<3x1xf32>
  %w = graph.dequantize %wq, %rows, %za : tensor<3x2xi8>, tensor<3x1xf32>, tensor<i8> -> tensor<3x2xf32>
  %y = graph.matmul %a, %w : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
  %u = graph.dequantize %v, %sa, %za : tensor<3x2xi8>, tensor<f32>, tensor<i8> -> tensor<3x2xf32>
  %z = graph.matmul %a, %u : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
  func.return %y, %z : tensor<2x2xf32>, tensor<2x2xf32>
}
// CHECK-LABEL: func.func @not_rewritten
// CHECK-NOT:     xi32>
// CHECK:         graph.matmul %a, %w : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
// CHECK:         graph.matmul %a, %u : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<2x2xf32>

// -----

// A uint8 activation (zero point 100) becomes int8 with zero point -28 at the quantize and
// its dequantize: the same values; the matmul then runs in int8 (-28 * colsum(W) * 0.5 * 1 =
// [56, -28] is subtracted).
func.func @uint8_activation(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %s = graph.constant dense<0.5> : tensor<f32>
  %z = graph.constant dense<100> : tensor<ui8>
  %q = graph.quantize %x, %s, %z : tensor<2x2xf32>, tensor<f32>, tensor<ui8> -> tensor<2x2xui8>
  %a = graph.dequantize %q, %s, %z : tensor<2x2xui8>, tensor<f32>, tensor<ui8> -> tensor<2x2xf32>
  %wq = graph.constant dense<[[1, -2], [-5, 4]]> : tensor<2x2xi8>
  %sw = graph.constant dense<1.0> : tensor<f32>
  %zw = graph.constant dense<0> : tensor<i8>
  %w = graph.dequantize %wq, %sw, %zw : tensor<2x2xi8>, tensor<f32>, tensor<i8> -> tensor<2x2xf32>
  %y = graph.matmul %a, %w : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32> loc("fc")
  func.return %y : tensor<2x2xf32>
}
// CHECK-LABEL: func.func @uint8_activation
// CHECK:         %q_zero_int8 = graph.constant dense<-28> : tensor<1xi8>
// CHECK-NEXT:    %q = graph.quantize %x, %s, %q_zero_int8 : tensor<2x2xf32>, tensor<f32>, tensor<1xi8> -> tensor<2x2xi8>
// CHECK:         graph.matmul %q, %fc_int8 : tensor<2x2xi8>, tensor<2x2xi8> -> tensor<2x2xi32>
// CHECK:         %fc_zero_point_sums = graph.constant dense<[5.600000e+01, -2.800000e+01]> : tensor<2xf32>
// CHECK-NOT:     ui8

// -----

// A conv of a dequantized int8 activation (zero point 3) and a constant int8 weight with a
// scale per output channel, and an int32 bias dequantized: an i8 conv that subtracts the zero
// point from its input (so its padding counts as 0), scaled per channel [C_out, 1, 1] by
// sa * sw = [0.5, 1.0], then the bias (2 * 0.25, -4 * 0.5) added in f32.
func.func @conv(%x: tensor<1x2x4x4xi8>) -> tensor<1x2x4x4xf32> {
  %sa = graph.constant dense<0.5> : tensor<f32>
  %za = graph.constant dense<3> : tensor<i8>
  %a = graph.dequantize %x, %sa, %za : tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8> -> tensor<1x2x4x4xf32>
  %wq = graph.constant dense<[[[[1, 2, 3]], [[4, 5, 6]]], [[[-1, -2, -3]], [[7, 8, 9]]]]> : tensor<2x2x1x3xi8>
  %sw = graph.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %zw = graph.constant dense<0> : tensor<2x1x1x1xi8>
  %w = graph.dequantize %wq, %sw, %zw : tensor<2x2x1x3xi8>, tensor<2x1x1x1xf32>, tensor<2x1x1x1xi8> -> tensor<2x2x1x3xf32>
  %bq = graph.constant dense<[2, -4]> : tensor<2xi32>
  %sb = graph.constant dense<[0.25, 0.5]> : tensor<2xf32>
  %zb = graph.constant dense<0> : tensor<2xi32>
  %b = graph.dequantize %bq, %sb, %zb : tensor<2xi32>, tensor<2xf32>, tensor<2xi32> -> tensor<2xf32>
  %y = graph.conv %a, %w, %b {pads = array<i64: 0, 1, 0, 1>} : tensor<1x2x4x4xf32>, tensor<2x2x1x3xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32> loc("conv")
  func.return %y : tensor<1x2x4x4xf32>
}
// CHECK-LABEL: func.func @conv
// CHECK:         %conv_acc = graph.conv %x, %conv_int8 {pads = array<i64: 0, 1, 0, 1>, input_zero = 3 : i64} : tensor<1x2x4x4xi8>, tensor<2x2x1x3xi8> -> tensor<1x2x4x4xi32>
// CHECK-NEXT:    %conv_scale = graph.constant dense<{{\[\[\[}}5.000000e-01]], {{\[\[}}1.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %conv_zero = graph.constant dense<0> : tensor<1xi32>
// CHECK-NEXT:    [[SCALED:%.+]] = graph.dequantize %conv_acc, %conv_scale, %conv_zero
// CHECK-NEXT:    %conv_bias = graph.constant dense<{{\[\[\[}}5.000000e-01]], {{\[\[}}-2.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %y = graph.add [[SCALED]], %conv_bias
// CHECK-NEXT:    func.return %y
// CHECK-NOT:     graph.dequantize %x

// -----

// A weight with a scale per input channel does not factor out of the sum: the conv stays f32.
func.func @conv_scale_per_input_channel(%x: tensor<1x2x4x4xi8>) -> tensor<1x1x4x4xf32> {
  %sa = graph.constant dense<0.5> : tensor<f32>
  %za = graph.constant dense<0> : tensor<i8>
  %a = graph.dequantize %x, %sa, %za : tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8> -> tensor<1x2x4x4xf32>
  %wq = graph.constant dense<[[[[1]], [[2]]]]> : tensor<1x2x1x1xi8>
  %sw = graph.constant dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32>
  %zw = graph.constant dense<0> : tensor<1x2x1x1xi8>
  %w = graph.dequantize %wq, %sw, %zw : tensor<1x2x1x1xi8>, tensor<1x2x1x1xf32>, tensor<1x2x1x1xi8> -> tensor<1x2x1x1xf32>
  %y = graph.conv %a, %w : tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32> -> tensor<1x1x4x4xf32>
  func.return %y : tensor<1x1x4x4xf32>
}
// CHECK-LABEL: func.func @conv_scale_per_input_channel
// CHECK:         graph.conv %{{.*}} : tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32> -> tensor<1x1x4x4xf32>

// -----

// A depthwise conv (one input channel per group) stays f32: the vector engine's products per
// channel beat a matmul per channel.
func.func @depthwise_stays_float(%x: tensor<1x2x4x4xi8>) -> tensor<1x2x4x4xf32> {
  %sa = graph.constant dense<0.5> : tensor<f32>
  %za = graph.constant dense<0> : tensor<i8>
  %a = graph.dequantize %x, %sa, %za : tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8> -> tensor<1x2x4x4xf32>
  %wq = graph.constant dense<[[[[1]]], [[[2]]]]> : tensor<2x1x1x1xi8>
  %sw = graph.constant dense<1.0> : tensor<f32>
  %w = graph.dequantize %wq, %sw, %za : tensor<2x1x1x1xi8>, tensor<f32>, tensor<i8> -> tensor<2x1x1x1xf32>
  %y = graph.conv %a, %w {group = 2 : i64} : tensor<1x2x4x4xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
// CHECK-LABEL: func.func @depthwise_stays_float
// CHECK:         graph.conv %{{.*}} {group = 2 : i64} : tensor<1x2x4x4xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x4x4xf32>

// -----

// A max pool before a quantize to int8 pools the quantized values instead (quantizing never
// decreases, so it commutes with a max): quantize, then an int8 max pool.
func.func @max_pool_then_quantize(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xi8> {
  %p = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x2x4x4xf32> -> tensor<1x2x2x2xf32> loc("pool")
  %s = graph.constant dense<0.1> : tensor<f32>
  %z = graph.constant dense<-3> : tensor<i8>
  %q = graph.quantize %p, %s, %z : tensor<1x2x2x2xf32>, tensor<f32>, tensor<i8> -> tensor<1x2x2x2xi8> loc("quantize")
  func.return %q : tensor<1x2x2x2xi8>
}
// CHECK-LABEL: func.func @max_pool_then_quantize
// CHECK:         %z = graph.constant
// CHECK-NEXT:    %pool_input_int8 = graph.quantize %x, %s, %z : tensor<1x2x4x4xf32>, tensor<f32>, tensor<i8> -> tensor<1x2x4x4xi8>
// CHECK-NEXT:    %q = graph.max_pool %pool_input_int8 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x2x4x4xi8> -> tensor<1x2x2x2xi8>
// CHECK-NEXT:    func.return %q

// -----

// A max pool of a dequantized int8 tensor pools the int8 values, then dequantizes.
func.func @dequantize_then_max_pool(%x: tensor<1x2x4x4xi8>) -> tensor<1x2x2x2xf32> {
  %s = graph.constant dense<0.1> : tensor<f32>
  %z = graph.constant dense<-3> : tensor<i8>
  %d = graph.dequantize %x, %s, %z : tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8> -> tensor<1x2x4x4xf32>
  %p = graph.max_pool %d {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x2x4x4xf32> -> tensor<1x2x2x2xf32> loc("pool")
  func.return %p : tensor<1x2x2x2xf32>
}
// CHECK-LABEL: func.func @dequantize_then_max_pool
// CHECK:         %pool_int8 = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x2x4x4xi8> -> tensor<1x2x2x2xi8>
// CHECK-NEXT:    %p = graph.dequantize %pool_int8, %s, %z : tensor<1x2x2x2xi8>, tensor<f32>, tensor<i8> -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    func.return %p

// -----

// A bias quantized to int32 by the product's own scale (sa * sw = 0.5 * [1, 2]), as QDQ
// quantizers write it, is the int8 conv's i32 bias: added to the exact sum, no f32 add.
func.func @conv_int32_bias(%x: tensor<1x2x4x4xi8>) -> tensor<1x2x4x4xf32> {
  %sa = graph.constant dense<0.5> : tensor<f32>
  %za = graph.constant dense<3> : tensor<i8>
  %a = graph.dequantize %x, %sa, %za : tensor<1x2x4x4xi8>, tensor<f32>, tensor<i8> -> tensor<1x2x4x4xf32>
  %wq = graph.constant dense<[[[[1]], [[2]]], [[[3]], [[4]]]]> : tensor<2x2x1x1xi8>
  %sw = graph.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %zw = graph.constant dense<0> : tensor<2x1x1x1xi8>
  %w = graph.dequantize %wq, %sw, %zw : tensor<2x2x1x1xi8>, tensor<2x1x1x1xf32>, tensor<2x1x1x1xi8> -> tensor<2x2x1x1xf32>
  %bq = graph.constant dense<[7, -9]> : tensor<2xi32>
  %sb = graph.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %zb = graph.constant dense<0> : tensor<2xi32>
  %b = graph.dequantize %bq, %sb, %zb : tensor<2xi32>, tensor<2xf32>, tensor<2xi32> -> tensor<2xf32>
  %y = graph.conv %a, %w, %b : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32> loc("conv")
  func.return %y : tensor<1x2x4x4xf32>
}
// CHECK-LABEL: func.func @conv_int32_bias
// CHECK:         %conv_bias_int32 = graph.constant dense<[7, -9]> : tensor<2xi32>
// CHECK-NEXT:    %conv_acc = graph.conv %x, %conv_int8, %conv_bias_int32 {input_zero = 3 : i64} : tensor<1x2x4x4xi8>, tensor<2x2x1x1xi8>, tensor<2xi32> -> tensor<1x2x4x4xi32>
// CHECK-NEXT:    %conv_scale = graph.constant
// CHECK-NEXT:    %conv_zero = graph.constant
// CHECK-NEXT:    %y = graph.dequantize %conv_acc, %conv_scale, %conv_zero
// CHECK-NEXT:    func.return %y
