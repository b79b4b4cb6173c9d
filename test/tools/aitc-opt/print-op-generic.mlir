// RUN: aitc-opt %s --print-op-generic | filecheck %s

// Generic form: operands in parentheses, attributes in {}, a function type; optional operands
// (the matmul bias) and several results (split) need no special syntax.
func.func @generic(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>, %c: tensor<6xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %0 = graph.matmul %a, %b, %c {activation = "relu"} : tensor<4x8xf32>, tensor<8x6xf32>, tensor<6xf32> -> tensor<4x6xf32>
  %1:2 = graph.split %0 {axis = 1 : i64} : tensor<4x6xf32> -> tensor<4x3xf32>, tensor<4x3xf32>
  func.return %1#0, %1#1 : tensor<4x3xf32>, tensor<4x3xf32>
}
// CHECK:      "builtin.module"() ({
// CHECK-NEXT:   "func.func"() <{sym_name = "generic", function_type = {{.*}}}> ({
// CHECK-NEXT:   ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>, %c: tensor<6xf32>):
// CHECK-NEXT:     %0 = "graph.matmul"(%a, %b, %c) {activation = "relu"} : (tensor<4x8xf32>, tensor<8x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:     %1, %2 = "graph.split"(%0) {axis = 1 : i64} : (tensor<4x6xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>)
// CHECK-NEXT:     "func.return"(%1, %2) : (tensor<4x3xf32>, tensor<4x3xf32>) -> ()
