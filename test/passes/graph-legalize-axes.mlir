// RUN: aitc-opt %s --split-input-file -p graph-legalize-axes | filecheck %s
// RUN: aitc-opt %s --split-input-file -p graph-legalize-axes,graph-legalize-axes | filecheck %s

// A mean over the middle axis with keepdims: transpose it last, reduce, reshape back.
func.func @reduce_middle(%x: tensor<8x16x4xf32>) -> tensor<8x1x4xf32> {
  %m = graph.reduce_mean %x {axes = array<i64: 1>, keepdims} : tensor<8x16x4xf32> -> tensor<8x1x4xf32>
  func.return %m : tensor<8x1x4xf32>
}
// CHECK-LABEL: func.func @reduce_middle(
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %{{.*}} {perm = array<i64: 0, 2, 1>} : tensor<8x16x4xf32> -> tensor<8x4x16xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.reduce_mean %[[T]] {axes = array<i64: 2>} : tensor<8x4x16xf32> -> tensor<8x4xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.reshape %[[R]] : tensor<8x4xf32> -> tensor<8x1x4xf32>
// CHECK-NEXT:    func.return %[[B]]

// -----

// Two leading axes without keepdims: the result needs no reshape.
func.func @reduce_leading(%x: tensor<2x3x5xf32>) -> tensor<5xf32> {
  %s = graph.reduce_sum %x {axes = array<i64: 0, 1>} : tensor<2x3x5xf32> -> tensor<5xf32>
  func.return %s : tensor<5xf32>
}
// CHECK-LABEL: func.func @reduce_leading(
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %{{.*}} {perm = array<i64: 2, 0, 1>}
// CHECK-NEXT:    %[[R:.*]] = graph.reduce_sum %[[T]] {axes = array<i64: 1, 2>} : tensor<5x2x3xf32> -> tensor<5xf32>
// CHECK-NEXT:    func.return %[[R]]

// -----

// Trailing axes, integer tensors and arg-reductions are left alone.
func.func @untouched(%x: tensor<4x8xf32>, %i: tensor<4x8xi64>) -> (tensor<4xf32>, tensor<8xi64>, tensor<8xi64>) {
  %a = graph.reduce_max %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
  %b = graph.reduce_sum %i {axes = array<i64: 0>} : tensor<4x8xi64> -> tensor<8xi64>
  %c = graph.argmax %x {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<8xi64>
  func.return %a, %b, %c : tensor<4xf32>, tensor<8xi64>, tensor<8xi64>
}
// CHECK-LABEL: func.func @untouched(
// CHECK-NEXT:    graph.reduce_max %{{.*}} {axes = array<i64: 1>}
// CHECK-NEXT:    graph.reduce_sum %{{.*}} {axes = array<i64: 0>}
// CHECK-NEXT:    graph.argmax
// CHECK-NEXT:    func.return

// -----

// Softmax over channels of NCHW: the channel axis goes last and comes back.
func.func @softmax_channels(%x: tensor<1x3x4x5xf32>) -> tensor<1x3x4x5xf32> {
  %p = graph.softmax %x {axis = 1 : i64} : tensor<1x3x4x5xf32>
  func.return %p : tensor<1x3x4x5xf32>
}
// CHECK-LABEL: func.func @softmax_channels(
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %{{.*}} {perm = array<i64: 0, 2, 3, 1>} : tensor<1x3x4x5xf32> -> tensor<1x4x5x3xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.softmax %[[T]] {axis = -1 : i64} : tensor<1x4x5x3xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.transpose %[[S]] {perm = array<i64: 0, 3, 1, 2>} : tensor<1x4x5x3xf32> -> tensor<1x3x4x5xf32>
// CHECK-NEXT:    func.return %[[B]]

// -----

// An axis followed only by unit dims is already trailing in memory.
func.func @softmax_unit_tail(%x: tensor<4x10x1xf32>) -> tensor<4x10x1xf32> {
  %p = graph.log_softmax %x {axis = 1 : i64} : tensor<4x10x1xf32>
  func.return %p : tensor<4x10x1xf32>
}
// CHECK-LABEL: func.func @softmax_unit_tail(
// CHECK-NEXT:    graph.log_softmax %{{.*}} {axis = 1 : i64}
// CHECK-NEXT:    func.return
