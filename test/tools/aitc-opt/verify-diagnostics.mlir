// RUN: aitc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// --verify-diagnostics prints a verifier error with the annotated op and goes on with the
// next chunk; the exit status stays 0 (lit fails the RUN line otherwise).
func.func @bad(%x: tensor<2x3xf32>, %y: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = graph.add %x, %y : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}
// CHECK:       shapes [2, 3] and [4] do not broadcast
// CHECK:       "graph.add"(%x, %y)
// CHECK-NEXT:  ^^^^^^^^^^^
// CHECK-NEXT:  | Operation does not verify: shapes [2, 3] and [4] do not broadcast

// -----

// A valid chunk after a failing one is printed normally.
func.func @good(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK-LABEL: func.func @good
// CHECK-NEXT:    %0 = graph.relu %x : tensor<4xf32>

// -----

// Errors raised by xDSL's own verifiers (here: func.return types) are reported the same way.
func.func @wrong_return(%x: tensor<4xf32>) -> tensor<4xi32> {
  func.return %x : tensor<4xf32>
}
// CHECK:       Operation does not verify: Expected arguments to have the same types as the function output types
