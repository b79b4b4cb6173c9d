// RUN: aitc-opt %s --split-input-file -p graph-fold-constants | filecheck %s
// RUN: aitc-opt %s --split-input-file -p 'graph-fold-constants{max-bytes=16}' | filecheck %s --check-prefix=SMALL

// An add of two constants becomes one constant; the operands, now dead, are erased.
func.func @fold_add() -> tensor<3xf32> {
  %a = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = graph.constant dense<2.0> : tensor<3xf32>
  %s = graph.add %a, %b : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  func.return %s : tensor<3xf32>
}
// CHECK-LABEL: func.func @fold_add()
// CHECK-NEXT:    %s = graph.constant dense<[3.000000e+00, 4.000000e+00, 5.000000e+00]> : tensor<3xf32>
// CHECK-NEXT:    func.return %s : tensor<3xf32>

// -----

// Folding cascades: shape arithmetic on i64 (mul, then reshape) ends as one constant.
func.func @fold_chain() -> tensor<2x2xi64> {
  %a = graph.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %b = graph.constant dense<3> : tensor<4xi64>
  %m = graph.mul %a, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %r = graph.reshape %m : tensor<4xi64> -> tensor<2x2xi64>
  func.return %r : tensor<2x2xi64>
}
// CHECK-LABEL: func.func @fold_chain()
// CHECK-NEXT:    %r = graph.constant dense<{{\[\[}}3, 6], [9, 12]]> : tensor<2x2xi64>
// CHECK-NEXT:    func.return %r

// -----

// A multi-result op folds into one constant per result, named after each result.
func.func @fold_split() -> (tensor<2xi64>, tensor<1xi64>) {
  %a = graph.constant dense<[1, 2, 3]> : tensor<3xi64>
  %p, %q = graph.split %a {axis = 0 : i64} : tensor<3xi64> -> tensor<2xi64>, tensor<1xi64>
  func.return %p, %q : tensor<2xi64>, tensor<1xi64>
}
// CHECK-LABEL: func.func @fold_split()
// CHECK-NEXT:    %p = graph.constant dense<[1, 2]> : tensor<2xi64>
// CHECK-NEXT:    %q = graph.constant dense<3> : tensor<1xi64>
// CHECK-NEXT:    func.return %p, %q

// -----

// A large folded value becomes a dense_resource whose key comes from the op's location name.
func.func @fold_named() -> tensor<32xf32> {
  %a = graph.constant dense<1.0> : tensor<32xf32>
  %b = graph.constant dense<2.0> : tensor<32xf32>
  %s = graph.add %a, %b : tensor<32xf32>, tensor<32xf32> -> tensor<32xf32> loc("fc1/Add")
  func.return %s : tensor<32xf32>
}
// CHECK-LABEL: func.func @fold_named()
// CHECK-NEXT:    %fc1_Add = graph.constant dense_resource<fc1_Add_{{[0-9a-f]+}}> : tensor<32xf32>
// CHECK:         fc1_Add_{{[0-9a-f]+}}: "0x10000000{{(00004040)+}}"

// -----

// Negative: an operand that is not a constant keeps the op.
func.func @keep_runtime_operand(%x: tensor<3xf32>) -> tensor<3xf32> {
  %b = graph.constant dense<2.0> : tensor<3xf32>
  %s = graph.add %x, %b : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  func.return %s : tensor<3xf32>
}
// CHECK-LABEL: func.func @keep_runtime_operand
// CHECK-NEXT:    %b = graph.constant
// CHECK-NEXT:    %s = graph.add %x, %b

// -----

// Negative: an out-of-range gather is not folded, so it still fails at run time.
func.func @keep_failing_kernel() -> tensor<1xf32> {
  %a = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %i = graph.constant dense<5> : tensor<1xi64>
  %g = graph.gather %a, %i {axis = 0 : i64} : tensor<3xf32>, tensor<1xi64> -> tensor<1xf32>
  func.return %g : tensor<1xf32>
}
// CHECK-LABEL: func.func @keep_failing_kernel
// CHECK:         graph.gather

// -----

// max-bytes: a 64-byte broadcast folds by default but not under max-bytes=16.
func.func @size_limit() -> tensor<4x4xf32> {
  %a = graph.constant dense<1.0> : tensor<f32>
  %y = graph.broadcast %a : tensor<f32> -> tensor<4x4xf32>
  func.return %y : tensor<4x4xf32>
}
// CHECK-LABEL: func.func @size_limit()
// CHECK-NEXT:    %y = graph.constant dense<1.000000e+00> : tensor<4x4xf32>
// SMALL-LABEL: func.func @size_limit()
// SMALL:         graph.broadcast
