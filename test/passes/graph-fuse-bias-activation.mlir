// RUN: aitc-opt %s --split-input-file -p graph-fuse-bias-activation | filecheck %s
// RUN: aitc-opt %s --split-input-file -p graph-fuse-bias-activation --print-debuginfo | filecheck %s --check-prefix=LOC

// A constant [N] bias added after a matmul becomes its bias operand.
func.func @matmul_bias(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %m = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %c = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %y = graph.add %m, %c : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @matmul_bias
// CHECK-NEXT:    %y_bias = graph.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    %y = graph.matmul %a, %b, %y_bias : tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %y

// -----

// A [1, N] constant bias on the left of the add is reshaped to [N]; the relu then fuses too,
// and the fused op keeps the relu's location.
func.func @matmul_bias_relu(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %m = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32> loc("fc/MatMul")
  %c = graph.constant dense<[[1.0, 2.0, 3.0, 4.0]]> : tensor<1x4xf32>
  %y = graph.add %c, %m : tensor<1x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32> loc("fc/Add")
  %r = graph.relu %y : tensor<2x4xf32> loc("fc/Relu")
  func.return %r : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @matmul_bias_relu
// CHECK-NEXT:    %fc_Add_bias = graph.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    %r = graph.matmul %a, %b, %fc_Add_bias {activation = "relu"} : tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %r
// LOC-LABEL: func.func @matmul_bias_relu
// LOC:         graph.matmul {{.*}} loc("fc/Relu")

// -----

// A bias that is a function argument (not a constant) fuses as it is.
func.func @matmul_bias_argument(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<4xf32>) -> tensor<2x4xf32> {
  %m = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %y = graph.add %m, %c : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @matmul_bias_argument
// CHECK-NEXT:    %y = graph.matmul %a, %b, %c : tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32> -> tensor<2x4xf32>

// -----

// A [C, 1, 1] constant after a conv that has a constant bias: the biases are summed.
func.func @conv_bias_combined(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x2x2xf32> {
  %b0 = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %m = graph.conv %x, %w, %b0 : tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32> -> tensor<1x3x2x2xf32>
  %b1 = graph.constant dense<[[[10.0]], [[20.0]], [[30.0]]]> : tensor<3x1x1xf32>
  %y = graph.add %m, %b1 : tensor<1x3x2x2xf32>, tensor<3x1x1xf32> -> tensor<1x3x2x2xf32>
  func.return %y : tensor<1x3x2x2xf32>
}
// CHECK-LABEL: func.func @conv_bias_combined
// CHECK-NEXT:    %y_bias = graph.constant dense<[1.100000e+01, 2.200000e+01, 3.300000e+01]> : tensor<3xf32>
// CHECK-NEXT:    %y = graph.conv %x, %w, %y_bias : tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32> -> tensor<1x3x2x2xf32>
// CHECK-NEXT:    func.return %y

// -----

// A computed [1, C, 1, 1] bias on a conv with an argument bias: reshape and add, then relu6.
func.func @conv_bias_runtime(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %b0: tensor<3xf32>, %b1: tensor<1x3x1x1xf32>) -> tensor<1x3x2x2xf32> {
  %m = graph.conv %x, %w, %b0 : tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32> -> tensor<1x3x2x2xf32>
  %y = graph.add %b1, %m : tensor<1x3x1x1xf32>, tensor<1x3x2x2xf32> -> tensor<1x3x2x2xf32>
  %r = graph.clip %y {alpha = 0.0 : f64, beta = 6.0 : f64} : tensor<1x3x2x2xf32>
  func.return %r : tensor<1x3x2x2xf32>
}
// CHECK-LABEL: func.func @conv_bias_runtime
// CHECK-NEXT:    %y_bias = graph.reshape %b1 : tensor<1x3x1x1xf32> -> tensor<3xf32>
// CHECK-NEXT:    %y_bias_1 = graph.add %b0, %y_bias : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
// CHECK-NEXT:    %r = graph.conv %x, %w, %y_bias_1 {activation = "relu6"}
// CHECK-NEXT:    func.return %r

// -----

// Each fusable activation maps to its `activation` name (gelu's tanh form to "gelu_tanh").
func.func @activations(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %m1 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %r1 = graph.sigmoid %m1 : tensor<2x4xf32>
  %m2 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %r2 = graph.tanh %m2 : tensor<2x4xf32>
  %m3 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %r3 = graph.gelu %m3 : tensor<2x4xf32>
  %m4 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %r4 = graph.gelu %m4 {approximate = "tanh"} : tensor<2x4xf32>
  %m5 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %r5 = graph.clip %m5 {alpha = 0.0 : f64} : tensor<2x4xf32>
  func.return %r1, %r2, %r3, %r4, %r5 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
// CHECK-LABEL: func.func @activations
// CHECK-NEXT:    %r1 = graph.matmul %a, %b {activation = "sigmoid"}
// CHECK-NEXT:    %r2 = graph.matmul %a, %b {activation = "tanh"}
// CHECK-NEXT:    %r3 = graph.matmul %a, %b {activation = "gelu"}
// CHECK-NEXT:    %r4 = graph.matmul %a, %b {activation = "gelu_tanh"}
// CHECK-NEXT:    %r5 = graph.matmul %a, %b {activation = "relu"}

// -----

// Negative: the matmul result has a second use, so neither the bias nor the relu fuses.
func.func @multi_use(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %m = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %y = graph.add %m, %c : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %r = graph.relu %m : tensor<2x4xf32>
  func.return %y, %r, %m : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
// CHECK-LABEL: func.func @multi_use
// CHECK-NEXT:    %m = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %y = graph.add %m, %c
// CHECK-NEXT:    %r = graph.relu %m

// -----

// Negative: a full [M, N] addend and a conv addend of shape [C] (it runs along W, not C)
// are not per-channel biases.
func.func @not_a_bias(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %full: tensor<2x4xf32>, %x: tensor<1x2x4x4xf32>, %w: tensor<2x2x3x3xf32>, %cb: tensor<2xf32>) -> (tensor<2x4xf32>, tensor<1x2x2x2xf32>) {
  %m = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %y = graph.add %m, %full : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %c = graph.conv %x, %w : tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32> -> tensor<1x2x2x2xf32>
  %z = graph.add %c, %cb : tensor<1x2x2x2xf32>, tensor<2xf32> -> tensor<1x2x2x2xf32>
  func.return %y, %z : tensor<2x4xf32>, tensor<1x2x2x2xf32>
}
// CHECK-LABEL: func.func @not_a_bias
// CHECK:         %y = graph.add %m, %full
// CHECK:         %z = graph.add %c, %cb

// -----

// Negative: a bias cannot follow an activation that is already fused, clip(0, 5) is no
// known activation, and leaky_relu is not fusable.
func.func @not_fusable(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %m = graph.matmul %a, %b {activation = "relu"} : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %y = graph.add %m, %c : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %m2 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %r2 = graph.clip %m2 {alpha = 0.0 : f64, beta = 5.0 : f64} : tensor<2x4xf32>
  %m3 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %r3 = graph.leaky_relu %m3 {alpha = 0.1 : f64} : tensor<2x4xf32>
  func.return %y, %r2, %r3 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
// CHECK-LABEL: func.func @not_fusable
// CHECK:         %y = graph.add %m, %c
// CHECK:         %r2 = graph.clip %m2
// CHECK:         %r3 = graph.leaky_relu %m3
