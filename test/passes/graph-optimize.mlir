// RUN: aitc-opt %s --split-input-file -p graph-optimize | filecheck %s

// matmul + bias add + decomposed GELU (as torch exports it): the GELU is recognised first,
// then bias and activation fuse into one matmul.
func.func @matmul_bias_gelu(%a: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %w = graph.constant dense<0.5> : tensor<3x4xf32>
  %bias = graph.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %m = graph.matmul %a, %w : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %x = graph.add %m, %bias : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %d = graph.div %x, %sqrt2 : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %e = graph.erf %d : tensor<2x4xf32>
  %p = graph.add %e, %one : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %q = graph.mul %x, %p : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %y = graph.mul %q, %half : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @matmul_bias_gelu
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %{{.*}} = graph.constant dense<[1.000000e-01, 2.000000e-01, 3.000000e-01, 4.000000e-01]> : tensor<4xf32>
// CHECK-NEXT:    %y = graph.matmul %a, %w, %{{.*}} {activation = "gelu"} : tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %y

// -----

// conv + batch_norm + relu: the batch norm folds into new weight/bias constants, then the
// relu fuses; the transpose pair and the reshape chain around it disappear.
func.func @conv_bn_relu(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<1.0> : tensor<2x2x1x1xf32>
  %s = graph.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %b = graph.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %m = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %v = graph.constant dense<[0.0, 3.0]> : tensor<2xf32>
  %t1 = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : tensor<1x2x4x4xf32> -> tensor<1x4x4x2xf32>
  %t2 = graph.transpose %t1 {perm = array<i64: 0, 3, 1, 2>} : tensor<1x4x4x2xf32> -> tensor<1x2x4x4xf32>
  %c = graph.conv %t2, %w : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32>
  %n = graph.batch_norm %c, %s, %b, %m, %v {epsilon = 1.0 : f64} : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  %r = graph.relu %n : tensor<1x2x4x4xf32>
  %f = graph.reshape %r : tensor<1x2x4x4xf32> -> tensor<32xf32>
  %y = graph.reshape %f : tensor<32xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
// CHECK-LABEL: func.func @conv_bn_relu
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<{{.*}}> : tensor<2x2x1x1xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[-1.500000e+00, -2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %r = graph.conv %x, %[[W]], %[[B]] {activation = "relu"}
// CHECK-NEXT:    func.return %r

// -----

// Equal subexpressions (two identical adds of equal constants) are computed once.
func.func @cse(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c1 = graph.constant dense<2.0> : tensor<4xf32>
  %c2 = graph.constant dense<2.0> : tensor<4xf32>
  %a = graph.add %x, %c1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %b = graph.add %x, %c2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %y = graph.mul %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK-LABEL: func.func @cse
// CHECK-NEXT:    %c1 = graph.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK-NEXT:    %a = graph.add %x, %c1
// CHECK-NEXT:    %y = graph.mul %a, %a
// CHECK-NEXT:    func.return %y
