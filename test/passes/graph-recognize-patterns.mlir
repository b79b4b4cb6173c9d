// RUN: aitc-opt %s --split-input-file -p graph-recognize-patterns | filecheck %s

// GELU as torch.onnx exports it at opset 13: x * (erf(x / 1.4142135) + 1) * 0.5.
func.func @gelu_torch(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %d = graph.div %x, %sqrt2 : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %e = graph.erf %d : tensor<2x8xf32>
  %a = graph.add %e, %one : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %m = graph.mul %x, %a : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %y = graph.mul %m, %half : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32> loc("mlp/gelu")
  func.return %y : tensor<2x8xf32>
}
// CHECK-LABEL: func.func @gelu_torch
// CHECK-NEXT:    %y = graph.gelu %x : tensor<2x8xf32>
// CHECK-NEXT:    func.return %y

// -----

// GELU in the other association order, with mul by 0.70710678 and 1 + erf.
func.func @gelu_reassociated(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %inv = graph.constant dense<0.707106769> : tensor<1xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %h = graph.mul %half, %x : tensor<f32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %d = graph.mul %inv, %x : tensor<1xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %e = graph.erf %d : tensor<2x8xf32>
  %a = graph.add %one, %e : tensor<f32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %y = graph.mul %h, %a : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
// CHECK-LABEL: func.func @gelu_reassociated
// CHECK-NEXT:    %y = graph.gelu %x : tensor<2x8xf32>
// CHECK-NEXT:    func.return %y

// -----

// tanh-approximate GELU with pow(x, 3): 0.5 * x * (1 + tanh(0.79788456 * (x + 0.044715 x^3))).
func.func @gelu_tanh_pow(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %three = graph.constant dense<3.0> : tensor<f32>
  %k = graph.constant dense<0.044715> : tensor<f32>
  %c = graph.constant dense<0.797884583> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %p = graph.pow %x, %three : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %q = graph.mul %k, %p : tensor<f32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %i = graph.add %x, %q : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %s = graph.mul %i, %c : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %t = graph.tanh %s : tensor<2x8xf32>
  %a = graph.add %t, %one : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %h = graph.mul %half, %x : tensor<f32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %y = graph.mul %h, %a : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
// CHECK-LABEL: func.func @gelu_tanh_pow
// CHECK-NEXT:    %y = graph.gelu %x {approximate = "tanh"} : tensor<2x8xf32>
// CHECK-NEXT:    func.return %y

// -----

// tanh-approximate GELU with x * x * x and the cubic term on the left of the add.
func.func @gelu_tanh_mul(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %k = graph.constant dense<0.044715> : tensor<f32>
  %c = graph.constant dense<0.797884583> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %x2 = graph.mul %x, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %x3 = graph.mul %x2, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %q = graph.mul %x3, %k : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %i = graph.add %q, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %s = graph.mul %c, %i : tensor<f32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %t = graph.tanh %s : tensor<2x8xf32>
  %a = graph.add %one, %t : tensor<f32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %m = graph.mul %x, %a : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %y = graph.mul %m, %half : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
// CHECK-LABEL: func.func @gelu_tanh_mul
// CHECK-NEXT:    %y = graph.gelu %x {approximate = "tanh"} : tensor<2x8xf32>
// CHECK-NEXT:    func.return %y

// -----

// Negative: 0.6 is not 0.5, so this is not a GELU.
func.func @gelu_wrong_constant(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.6> : tensor<f32>
  %d = graph.div %x, %sqrt2 : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %e = graph.erf %d : tensor<2x8xf32>
  %a = graph.add %e, %one : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %m = graph.mul %x, %a : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %y = graph.mul %m, %half : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
// CHECK-LABEL: func.func @gelu_wrong_constant
// CHECK-NOT:     graph.gelu
// CHECK:         func.return

// -----

// Negative: the erf result is also returned, so the chain must stay.
func.func @gelu_multi_use(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %d = graph.div %x, %sqrt2 : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %e = graph.erf %d : tensor<2x8xf32>
  %a = graph.add %e, %one : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %m = graph.mul %x, %a : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %y = graph.mul %m, %half : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  func.return %y, %e : tensor<2x8xf32>, tensor<2x8xf32>
}
// CHECK-LABEL: func.func @gelu_multi_use
// CHECK-NOT:     graph.gelu
// CHECK:         func.return %y, %e

// -----

// Negative: the erf reads another value than the one multiplied, so this is no GELU of x.
func.func @gelu_other_input(%x: tensor<2x8xf32>, %z: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %d = graph.div %z, %sqrt2 : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %e = graph.erf %d : tensor<2x8xf32>
  %a = graph.add %e, %one : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %m = graph.mul %x, %a : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %y = graph.mul %m, %half : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
// CHECK-LABEL: func.func @gelu_other_input
// CHECK-NOT:     graph.gelu
// CHECK:         func.return

// -----

// LayerNorm as torch.onnx exports it at opset 13 (pow 2, gamma, beta); epsilon comes from
// the constant and the axis is negative.
func.func @layer_norm_torch(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<9.99999974E-6> : tensor<f32>
  %mean = graph.reduce_mean %x {axes = array<i64: 2>, keepdims} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %sub = graph.sub %x, %mean : tensor<2x4x8xf32>, tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  %sq = graph.pow %sub, %two : tensor<2x4x8xf32>, tensor<f32> -> tensor<2x4x8xf32>
  %var = graph.reduce_mean %sq {axes = array<i64: 2>, keepdims} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %ve = graph.add %var, %eps : tensor<2x4x1xf32>, tensor<f32> -> tensor<2x4x1xf32>
  %sd = graph.sqrt %ve : tensor<2x4x1xf32>
  %n = graph.div %sub, %sd : tensor<2x4x8xf32>, tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  %s = graph.mul %n, %g : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  %y = graph.add %s, %b : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  func.return %y : tensor<2x4x8xf32>
}
// CHECK-LABEL: func.func @layer_norm_torch
// CHECK-NEXT:    %y = graph.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 9.9999997473787516e-06 : f64} : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    func.return %y

// -----

// LayerNorm over the two trailing axes, squared by a self-mul, without beta.
func.func @layer_norm_two_axes(%x: tensor<2x4x8xf32>, %g: tensor<4x8xf32>) -> tensor<2x4x8xf32> {
  %eps = graph.constant dense<1.0E-5> : tensor<1xf32>
  %mean = graph.reduce_mean %x {axes = array<i64: 1, 2>, keepdims} : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
  %sub = graph.sub %x, %mean : tensor<2x4x8xf32>, tensor<2x1x1xf32> -> tensor<2x4x8xf32>
  %sq = graph.mul %sub, %sub : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %var = graph.reduce_mean %sq {axes = array<i64: 1, 2>, keepdims} : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
  %ve = graph.add %eps, %var : tensor<1xf32>, tensor<2x1x1xf32> -> tensor<2x1x1xf32>
  %sd = graph.sqrt %ve : tensor<2x1x1xf32>
  %n = graph.div %sub, %sd : tensor<2x4x8xf32>, tensor<2x1x1xf32> -> tensor<2x4x8xf32>
  %y = graph.mul %g, %n : tensor<4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  func.return %y : tensor<2x4x8xf32>
}
// CHECK-LABEL: func.func @layer_norm_two_axes
// CHECK-NEXT:    %y = graph.layer_norm %x, %g {axis = -2 : i64, epsilon = {{.*}} : f64} : tensor<2x4x8xf32>, tensor<4x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    func.return %y

// -----

// Negative: the variance is also returned, so the chain must stay.
func.func @layer_norm_multi_use(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0E-5> : tensor<f32>
  %mean = graph.reduce_mean %x {axes = array<i64: 1>, keepdims} : tensor<2x8xf32> -> tensor<2x1xf32>
  %sub = graph.sub %x, %mean : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  %sq = graph.pow %sub, %two : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %var = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : tensor<2x8xf32> -> tensor<2x1xf32>
  %ve = graph.add %var, %eps : tensor<2x1xf32>, tensor<f32> -> tensor<2x1xf32>
  %sd = graph.sqrt %ve : tensor<2x1xf32>
  %n = graph.div %sub, %sd : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  %s = graph.mul %n, %g : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %y = graph.add %s, %b : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  func.return %y, %var : tensor<2x8xf32>, tensor<2x1xf32>
}
// CHECK-LABEL: func.func @layer_norm_multi_use
// CHECK-NOT:     graph.layer_norm
// CHECK:         func.return %y, %var

// -----

// Negative: means over a leading axis (axis 0 of 8x2) are not a layer norm.
func.func @layer_norm_leading_axis(%x: tensor<8x2xf32>, %g: tensor<8x2xf32>, %b: tensor<8x2xf32>) -> tensor<8x2xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0E-5> : tensor<f32>
  %mean = graph.reduce_mean %x {axes = array<i64: 0>, keepdims} : tensor<8x2xf32> -> tensor<1x2xf32>
  %sub = graph.sub %x, %mean : tensor<8x2xf32>, tensor<1x2xf32> -> tensor<8x2xf32>
  %sq = graph.pow %sub, %two : tensor<8x2xf32>, tensor<f32> -> tensor<8x2xf32>
  %var = graph.reduce_mean %sq {axes = array<i64: 0>, keepdims} : tensor<8x2xf32> -> tensor<1x2xf32>
  %ve = graph.add %var, %eps : tensor<1x2xf32>, tensor<f32> -> tensor<1x2xf32>
  %sd = graph.sqrt %ve : tensor<1x2xf32>
  %n = graph.div %sub, %sd : tensor<8x2xf32>, tensor<1x2xf32> -> tensor<8x2xf32>
  %s = graph.mul %n, %g : tensor<8x2xf32>, tensor<8x2xf32> -> tensor<8x2xf32>
  %y = graph.add %s, %b : tensor<8x2xf32>, tensor<8x2xf32> -> tensor<8x2xf32>
  func.return %y : tensor<8x2xf32>
}
// CHECK-LABEL: func.func @layer_norm_leading_axis
// CHECK-NOT:     graph.layer_norm
// CHECK:         func.return

// -----

// Negative: pow 3 is not a square, so this is no variance.
func.func @layer_norm_wrong_power(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  %three = graph.constant dense<3.0> : tensor<f32>
  %eps = graph.constant dense<1.0E-5> : tensor<f32>
  %mean = graph.reduce_mean %x {axes = array<i64: 1>, keepdims} : tensor<2x8xf32> -> tensor<2x1xf32>
  %sub = graph.sub %x, %mean : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  %sq = graph.pow %sub, %three : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %var = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : tensor<2x8xf32> -> tensor<2x1xf32>
  %ve = graph.add %var, %eps : tensor<2x1xf32>, tensor<f32> -> tensor<2x1xf32>
  %sd = graph.sqrt %ve : tensor<2x1xf32>
  %n = graph.div %sub, %sd : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  %y = graph.mul %n, %g : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
// CHECK-LABEL: func.func @layer_norm_wrong_power
// CHECK-NOT:     graph.layer_norm
// CHECK:         func.return
