// RUN: aitc-opt %s -p dce | filecheck %s

// xDSL's dce erases graph ops whose results nobody uses, chains included.
func.func @dead_graph_ops(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = graph.constant dense<1.0> : tensor<4xf32>
  %a = graph.add %x, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %r = graph.relu %a : tensor<4xf32>
  %s = graph.sigmoid %x : tensor<4xf32>
  func.return %s : tensor<4xf32>
}
// CHECK-LABEL: func.func @dead_graph_ops
// CHECK-NEXT:    %s = graph.sigmoid %x : tensor<4xf32>
// CHECK-NEXT:    func.return %s
