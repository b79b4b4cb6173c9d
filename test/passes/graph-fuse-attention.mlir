// RUN: aitc-opt %s --split-input-file -p graph-fuse-attention,dce | filecheck %s
// RUN: aitc-opt %s --split-input-file -p graph-fuse-attention --print-debuginfo | filecheck %s --check-prefix=LOC

// BERT's attention as torch.onnx exports it: heads split by reshape + transpose (K straight to
// [B, H, D, S']), scores divided by sqrt(D), an additive [B, 1, 1, S'] mask, softmax, @ V, heads
// merged back. One graph.attention on the packed projections remains, at the softmax's location.
func.func @bert(%q: tensor<1x8x16xf32>, %k: tensor<1x8x16xf32>, %v: tensor<1x8x16xf32>, %mask: tensor<1x1x1x8xf32>) -> tensor<1x8x16xf32> {
  %q4 = graph.reshape %q : tensor<1x8x16xf32> -> tensor<1x8x2x8xf32>
  %qh = graph.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x8xf32> -> tensor<1x2x8x8xf32>
  %k4 = graph.reshape %k : tensor<1x8x16xf32> -> tensor<1x8x2x8xf32>
  %kt = graph.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x8x2x8xf32> -> tensor<1x2x8x8xf32>
  %v4 = graph.reshape %v : tensor<1x8x16xf32> -> tensor<1x8x2x8xf32>
  %vh = graph.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x8xf32> -> tensor<1x2x8x8xf32>
  %s = graph.matmul %qh, %kt : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32> -> tensor<1x2x8x8xf32>
  %c = graph.constant dense<2.0> : tensor<f32>
  %scaled = graph.div %s, %c : tensor<1x2x8x8xf32>, tensor<f32> -> tensor<1x2x8x8xf32>
  %masked = graph.add %scaled, %mask : tensor<1x2x8x8xf32>, tensor<1x1x1x8xf32> -> tensor<1x2x8x8xf32>
  %p = graph.softmax %masked {axis = -1 : i64} : tensor<1x2x8x8xf32> loc("attention/Softmax")
  %o = graph.matmul %p, %vh : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32> -> tensor<1x2x8x8xf32>
  %ot = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x8x8xf32> -> tensor<1x8x2x8xf32>
  %out = graph.reshape %ot : tensor<1x8x2x8xf32> -> tensor<1x8x16xf32>
  func.return %out : tensor<1x8x16xf32>
}
// CHECK-LABEL: func.func @bert
// CHECK-NEXT:    %out = graph.attention %q, %k, %v, %mask {heads = 2 : i64, scale = 5.000000e-01 : f64} : tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x1x1x8xf32> -> tensor<1x8x16xf32>
// CHECK-NEXT:    func.return %out
// LOC-LABEL: func.func @bert
// LOC:         graph.attention {{.*}} loc("attention/Softmax")

// -----

// No mask, the scale as a multiplication, a mask on the left of the add of rank 2 (reshaped to
// rank 4), V of another head width.
func.func @mask_first(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x12xf32>, %mask: tensor<4x6xf32>) -> tensor<2x4x12xf32> {
  %q4 = graph.reshape %q : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %qh = graph.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  %k4 = graph.reshape %k : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
  %kt = graph.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : tensor<2x6x2x4xf32> -> tensor<2x2x4x6xf32>
  %v4 = graph.reshape %v : tensor<2x6x12xf32> -> tensor<2x6x2x6xf32>
  %vh = graph.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x6x2x6xf32> -> tensor<2x2x6x6xf32>
  %s = graph.matmul %qh, %kt : tensor<2x2x4x4xf32>, tensor<2x2x4x6xf32> -> tensor<2x2x4x6xf32>
  %c = graph.constant dense<0.25> : tensor<f32>
  %scaled = graph.mul %s, %c : tensor<2x2x4x6xf32>, tensor<f32> -> tensor<2x2x4x6xf32>
  %masked = graph.add %mask, %scaled : tensor<4x6xf32>, tensor<2x2x4x6xf32> -> tensor<2x2x4x6xf32>
  %p = graph.softmax %masked {axis = 3 : i64} : tensor<2x2x4x6xf32>
  %o = graph.matmul %p, %vh : tensor<2x2x4x6xf32>, tensor<2x2x6x6xf32> -> tensor<2x2x4x6xf32>
  %ot = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x4x6xf32> -> tensor<2x4x2x6xf32>
  %out = graph.reshape %ot : tensor<2x4x2x6xf32> -> tensor<2x4x12xf32>
  func.return %out : tensor<2x4x12xf32>
}
// CHECK-LABEL: func.func @mask_first
// CHECK-NEXT:    %mask_4d = graph.reshape %mask : tensor<4x6xf32> -> tensor<1x1x4x6xf32>
// CHECK-NEXT:    %out = graph.attention %q, %k, %v, %mask_4d {heads = 2 : i64, scale = 2.500000e-01 : f64} : tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x12xf32>, tensor<1x1x4x6xf32> -> tensor<2x4x12xf32>

// -----

// Neither a scale nor a mask.
func.func @plain(%q: tensor<1x4x8xf32>, %k: tensor<1x4x8xf32>, %v: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %q4 = graph.reshape %q : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %qh = graph.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
  %k4 = graph.reshape %k : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %kt = graph.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
  %v4 = graph.reshape %v : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %vh = graph.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
  %s = graph.matmul %qh, %kt : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %p = graph.softmax %s {axis = -1 : i64} : tensor<1x2x4x4xf32>
  %o = graph.matmul %p, %vh : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %ot = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x4x4xf32> -> tensor<1x4x2x4xf32>
  %out = graph.reshape %ot : tensor<1x4x2x4xf32> -> tensor<1x4x8xf32>
  func.return %out : tensor<1x4x8xf32>
}
// CHECK-LABEL: func.func @plain
// CHECK-NEXT:    %out = graph.attention %q, %k, %v {heads = 2 : i64, scale = 1.000000e+00 : f64} : tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32> -> tensor<1x4x8xf32>

// -----

// The probabilities are also a result (an attention map someone wants): nothing fuses.
func.func @probabilities_used(%q: tensor<1x4x8xf32>, %k: tensor<1x4x8xf32>, %v: tensor<1x4x8xf32>) -> (tensor<1x4x8xf32>, tensor<1x2x4x4xf32>) {
  %q4 = graph.reshape %q : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %qh = graph.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
  %k4 = graph.reshape %k : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %kt = graph.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
  %v4 = graph.reshape %v : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %vh = graph.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
  %s = graph.matmul %qh, %kt : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %p = graph.softmax %s {axis = -1 : i64} : tensor<1x2x4x4xf32>
  %o = graph.matmul %p, %vh : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %ot = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x4x4xf32> -> tensor<1x4x2x4xf32>
  %out = graph.reshape %ot : tensor<1x4x2x4xf32> -> tensor<1x4x8xf32>
  func.return %out, %p : tensor<1x4x8xf32>, tensor<1x2x4x4xf32>
}
// CHECK-LABEL: func.func @probabilities_used
// CHECK-NOT:     graph.attention
// CHECK:         graph.softmax

// -----

// Q's heads are not the same split as K's (Q: 2 heads of 4, K: 4 heads of 2): nothing fuses.
func.func @heads_differ(%q: tensor<1x4x8xf32>, %k: tensor<1x4x8xf32>, %v: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %q4 = graph.reshape %q : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %qh = graph.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
  %k4 = graph.reshape %k : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %kt = graph.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
  %v4 = graph.reshape %v : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %vh = graph.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
  %s = graph.matmul %qh, %kt : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %p = graph.softmax %s {axis = -1 : i64} : tensor<1x2x4x4xf32>
  %o = graph.matmul %p, %vh : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %ot = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x4x4xf32> -> tensor<1x4x2x4xf32>
  %out = graph.reshape %ot : tensor<1x4x2x4xf32> -> tensor<1x4x8xf32>
  func.return %out : tensor<1x4x8xf32>
}
// CHECK-LABEL: func.func @heads_differ
// CHECK-NOT:     graph.attention
// CHECK:         func.return

// -----

// Q comes from a projection with constant weights and bias used by nothing else: the scale
// (1/2) is folded into a copy of them, x @ (W / 2) + b / 2 at the projection's location, and
// the attention's scale is 1 (its kernel does not scale Q). K's projection is left alone.
func.func @prescaled(%x: tensor<1x2x4xf32>, %k: tensor<1x2x4xf32>, %v: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  %w = graph.constant dense<[[2.0, 4.0, 6.0, 8.0], [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0], [-2.0, 2.0, -2.0, 2.0]]> : tensor<4x4xf32>
  %b = graph.constant dense<[4.0, 0.0, -4.0, 2.0]> : tensor<4xf32>
  %q = graph.matmul %x, %w, %b : tensor<1x2x4xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<1x2x4xf32> loc("query/MatMul")
  %q4 = graph.reshape %q : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %qh = graph.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %k4 = graph.reshape %k : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %kt = graph.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %v4 = graph.reshape %v : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %vh = graph.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %s = graph.matmul %qh, %kt : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %c = graph.constant dense<2.0> : tensor<f32>
  %scaled = graph.div %s, %c : tensor<1x2x2x2xf32>, tensor<f32> -> tensor<1x2x2x2xf32>
  %p = graph.softmax %scaled {axis = -1 : i64} : tensor<1x2x2x2xf32> loc("attention/Softmax")
  %o = graph.matmul %p, %vh : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %ot = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %out = graph.reshape %ot : tensor<1x2x2x2xf32> -> tensor<1x2x4xf32>
  func.return %out : tensor<1x2x4xf32>
}
// CHECK-LABEL: func.func @prescaled
// CHECK-NEXT:    %q_prescaled_weights = graph.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00], [5.000000e-01, 5.000000e-01, 5.000000e-01, 5.000000e-01], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], [-1.000000e+00, 1.000000e+00, -1.000000e+00, 1.000000e+00]]> : tensor<4x4xf32>
// CHECK-NEXT:    %q_prescaled_bias = graph.constant dense<[2.000000e+00, 0.000000e+00, -2.000000e+00, 1.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    %q_prescaled = graph.matmul %x, %q_prescaled_weights, %q_prescaled_bias
// CHECK-NEXT:    %out = graph.attention %q_prescaled, %k, %v {heads = 2 : i64, scale = 1.000000e+00 : f64}
// CHECK-NEXT:    func.return %out
// LOC-LABEL: func.func @prescaled
// LOC:         %q_prescaled = graph.matmul {{.*}} loc("query/MatMul")
// LOC:         graph.attention {{.*}} loc("attention/Softmax")
