// RUN: not aitc-opt %s 2>&1 | filecheck %s

// Without --verify-diagnostics a verifier error fails the run: `file: error: message`, then only
// the failing op and a few lines around it (the whole module could be thousands of lines).
func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.exp %x : tensor<4xf32>
  %1 = graph.exp %0 : tensor<4xf32>
  %2 = graph.exp %1 : tensor<4xf32>
  %3 = graph.exp %2 : tensor<4xf32>
  %4 = graph.exp %3 : tensor<4xf32>
  %5 = graph.exp %4 : tensor<4xf32>
  func.return %5 : tensor<4xf32>
}
func.func @second(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.softmax %x {axis = 2 : i64} : tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
// CHECK-NOT:   Traceback
// CHECK:       verify-error.mlir: error: axis 2 is out of range for rank 2
// CHECK-NEXT:  {{^}}  ...
// CHECK-NOT:   "graph.exp"(%x)
// CHECK:       "graph.softmax"(%x) {axis = 2 : i64}
// CHECK-NEXT:  ^^^^^^^
// CHECK-NEXT:  | Operation does not verify: axis 2 is out of range for rank 2
// CHECK-NOT:   Traceback
