// RUN: aitc-opt %s --split-input-file -p cse | filecheck %s

// xDSL's cse merges graph ops (they are Pure) with equal operands and attributes.
func.func @graph_ops(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %a = graph.add %x, %c : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %b = graph.add %x, %c : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %e = graph.mul %a, %b : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %e : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @graph_ops
// CHECK-NEXT:    %c = graph.constant
// CHECK-NEXT:    %a = graph.add %x, %c
// CHECK-NEXT:    %e = graph.mul %a, %a
// CHECK-NEXT:    func.return %e

// -----

// Ops that differ in an attribute (the transpose perm) are not merged.
func.func @different_attributes(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %a = graph.transpose %x {perm = array<i64: 1, 0>} : tensor<2x2xf32> -> tensor<2x2xf32>
  %b = graph.transpose %x {perm = array<i64: 0, 1>} : tensor<2x2xf32> -> tensor<2x2xf32>
  func.return %a, %b : tensor<2x2xf32>, tensor<2x2xf32>
}
// CHECK-LABEL: func.func @different_attributes
// CHECK-NEXT:    %a = graph.transpose %x {perm = array<i64: 1, 0>}
// CHECK-NEXT:    %b = graph.transpose %x {perm = array<i64: 0, 1>}
