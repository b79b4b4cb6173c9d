// RUN: aitc-opt %s -p 'cse,dce' --print-between-passes | filecheck %s

// --print-between-passes shows the IR after each pass but the last, whose result is the output.
func.func @twice(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.exp %x : tensor<4xf32>
  %1 = graph.exp %x : tensor<4xf32>
  %2 = graph.add %0, %1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
// CHECK:       IR after cse:
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:    func.func @twice
// CHECK-NEXT:      %0 = graph.exp %x : tensor<4xf32>
// CHECK-NEXT:      %1 = graph.add %0, %0
// CHECK-NOT:   IR after dce:
// CHECK:       builtin.module {
// CHECK-NEXT:    func.func @twice
