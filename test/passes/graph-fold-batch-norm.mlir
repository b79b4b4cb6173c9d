// RUN: aitc-opt %s --split-input-file -p graph-fold-batch-norm | filecheck %s

// conv without bias + batch_norm: factor = scale / sqrt(var + eps) = [2, 1.5] scales the
// weight per output channel; bias = (0 - mean) * factor + beta = [-1.5, -2].
func.func @fold(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]]]> : tensor<2x2x1x1xf32>
  %s = graph.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %b = graph.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %m = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %v = graph.constant dense<[0.0, 3.0]> : tensor<2xf32>
  %c = graph.conv %x, %w : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32>
  %y = graph.batch_norm %c, %s, %b, %m, %v {epsilon = 1.0 : f64} : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32> loc("bn1")
  func.return %y : tensor<1x2x4x4xf32>
}
// CHECK-LABEL: func.func @fold
// CHECK-NEXT:    %bn1_weight = graph.constant dense<{{\[\[\[\[}}2.000000e+00]], {{\[\[}}4.000000e+00]]], {{\[\[\[}}4.500000e+00]], {{\[\[}}6.000000e+00]]]]> : tensor<2x2x1x1xf32>
// CHECK-NEXT:    %bn1_bias = graph.constant dense<[-1.500000e+00, -2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = graph.conv %x, %bn1_weight, %bn1_bias : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    func.return %y

// -----

// A conv that has a bias keeps its attributes; the bias goes through the batch norm too:
// (b - mean) * factor + beta = [0.5, 1].
func.func @fold_with_bias(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %w = graph.constant dense<1.0> : tensor<2x2x1x1xf32>
  %cb = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %s = graph.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %b = graph.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %m = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %v = graph.constant dense<[0.0, 3.0]> : tensor<2xf32>
  %c = graph.conv %x, %w, %cb {strides = array<i64: 2, 2>} : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32> -> tensor<1x2x2x2xf32>
  %y = graph.batch_norm %c, %s, %b, %m, %v {epsilon = 1.0 : f64} : tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x2x2xf32>
  func.return %y : tensor<1x2x2x2xf32>
}
// CHECK-LABEL: func.func @fold_with_bias
// CHECK:         %y_bias = graph.constant dense<[5.000000e-01, 1.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = graph.conv %x, %y_weight, %y_bias {strides = array<i64: 2, 2>}
// CHECK-NOT:     graph.batch_norm

// -----

// Negative: a batch-norm parameter that is not a constant (the mean here) keeps both ops.
func.func @runtime_mean(%x: tensor<1x2x4x4xf32>, %m: tensor<2xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<1.0> : tensor<2x2x1x1xf32>
  %s = graph.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %v = graph.constant dense<[0.0, 3.0]> : tensor<2xf32>
  %c = graph.conv %x, %w : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32>
  %y = graph.batch_norm %c, %s, %s, %m, %v : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
// CHECK-LABEL: func.func @runtime_mean
// CHECK:         %c = graph.conv %x, %w
// CHECK-NEXT:    %y = graph.batch_norm %c, %s, %s, %m, %v

// -----

// Negative: a conv weight that is not a constant cannot absorb the scale.
func.func @runtime_weight(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %s = graph.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %c = graph.conv %x, %w : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32>
  %y = graph.batch_norm %c, %s, %s, %s, %s : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
// CHECK-LABEL: func.func @runtime_weight
// CHECK:         graph.batch_norm

// -----

// Negative: the conv result is also returned, so it must stay unnormalised.
func.func @multi_use(%x: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %w = graph.constant dense<1.0> : tensor<2x2x1x1xf32>
  %s = graph.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %c = graph.conv %x, %w : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32>
  %y = graph.batch_norm %c, %s, %s, %s, %s : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y, %c : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}
// CHECK-LABEL: func.func @multi_use
// CHECK:         graph.batch_norm

// -----

// Negative: a conv with a fused activation: the batch norm comes after the relu.
func.func @after_activation(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<1.0> : tensor<2x2x1x1xf32>
  %s = graph.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %c = graph.conv %x, %w {activation = "relu"} : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32>
  %y = graph.batch_norm %c, %s, %s, %s, %s : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
// CHECK-LABEL: func.func @after_activation
// CHECK:         graph.batch_norm

// -----

// A batch_norm on a network input (no conv before it) stays: it is a valid graph op.
func.func @alone(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %s = graph.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %y = graph.batch_norm %x, %s, %s, %s, %s : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
// CHECK-LABEL: func.func @alone
// CHECK-NEXT:    %s = graph.constant
// CHECK-NEXT:    %y = graph.batch_norm %x, %s, %s, %s, %s

// -----

// An int8 conv's scaling back (graph-quantized-matmul's dequantize by sa * sw and bias add)
// absorbs the batch norm after it: factor = [2, 1.5] scales the scale [0.5, 0.5] per channel
// to [1, 0.75], and the bias [1, 2] becomes (b - mean) * factor + beta = [0.5, 1].
func.func @fold_into_dequantize(%x: tensor<1x2x4x4xi8>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<1> : tensor<2x2x1x1xi8>
  %acc = graph.conv %x, %w {input_zero = 3 : i64} : tensor<1x2x4x4xi8>, tensor<2x2x1x1xi8> -> tensor<1x2x4x4xi32>
  %sc = graph.constant dense<0.5> : tensor<1xf32>
  %z = graph.constant dense<0> : tensor<1xi32>
  %d = graph.dequantize %acc, %sc, %z : tensor<1x2x4x4xi32>, tensor<1xf32>, tensor<1xi32> -> tensor<1x2x4x4xf32> loc("conv")
  %cb = graph.constant dense<[[[1.0]], [[2.0]]]> : tensor<2x1x1xf32>
  %c = graph.add %d, %cb : tensor<1x2x4x4xf32>, tensor<2x1x1xf32> -> tensor<1x2x4x4xf32>
  %s = graph.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %b = graph.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %m = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %v = graph.constant dense<[0.0, 3.0]> : tensor<2xf32>
  %y = graph.batch_norm %c, %s, %b, %m, %v {epsilon = 1.0 : f64} : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32> loc("bn1")
  func.return %y : tensor<1x2x4x4xf32>
}
// CHECK-LABEL: func.func @fold_into_dequantize
// CHECK:         %bn1_scale = graph.constant dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}7.500000e-01]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %bn1_scaled = graph.dequantize %acc, %bn1_scale, %z : tensor<1x2x4x4xi32>, tensor<2x1x1xf32>, tensor<1xi32> -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %bn1_bias = graph.constant dense<{{\[\[\[}}5.000000e-01]], {{\[\[}}1.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %y = graph.add %bn1_scaled, %bn1_bias
// CHECK-NEXT:    func.return %y
// CHECK-NOT:     graph.batch_norm
