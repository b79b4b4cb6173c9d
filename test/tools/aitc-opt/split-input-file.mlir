// RUN: aitc-opt %s --split-input-file | filecheck %s

// Each chunk is parsed, verified and printed on its own; the output keeps the separators.
func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK:       builtin.module {
// CHECK-NEXT:    func.func @first(%x: tensor<4xf32>)
// CHECK:       {{^}}}{{$}}
// CHECK-EMPTY:
// CHECK-NEXT:  {{^}}// {{-+}}{{$}}

// -----

// A chunk may reuse names defined in another chunk: they are separate modules.
func.func @first(%x: tensor<4xi1>) -> tensor<4xi1> {
  %0 = graph.not %x : tensor<4xi1>
  func.return %0 : tensor<4xi1>
}
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:    func.func @first(%x: tensor<4xi1>)
// CHECK:       {{^}}// {{-+}}{{$}}

// -----

// The last chunk is not followed by a separator.
func.func @last() {
  func.return
}
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:    func.func @last()
// CHECK-NOT:   {{-----}}
