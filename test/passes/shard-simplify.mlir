// RUN: aitc-opt %s --split-input-file -p shard-simplify | filecheck %s

// An all_slice of an all_reduce over the same axes is one reduce_scatter.
shard.grid @g(shape = 4)
func.func @slice_of_all_reduce(%x: tensor<8x4xf32>) -> tensor<2x4xf32> {
  %r = shard.all_reduce %x on @g grid_axes = [0] reduction = max : tensor<8x4xf32> -> tensor<8x4xf32>
  %y = shard.all_slice %r on @g grid_axes = [0] slice_axis = 0 : tensor<8x4xf32> -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @slice_of_all_reduce
// CHECK-NEXT:    %y = shard.reduce_scatter %x on @g grid_axes = [0] scatter_axis = 0 reduction = max : tensor<8x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %y

// -----

// The all_reduce has another user: it stays, and so does the slice.
shard.grid @g(shape = 4)
func.func @shared_all_reduce(%x: tensor<8x4xf32>) -> (tensor<2x4xf32>, tensor<8x4xf32>) {
  %r = shard.all_reduce %x on @g grid_axes = [0] : tensor<8x4xf32> -> tensor<8x4xf32>
  %y = shard.all_slice %r on @g grid_axes = [0] slice_axis = 0 : tensor<8x4xf32> -> tensor<2x4xf32>
  func.return %y, %r : tensor<2x4xf32>, tensor<8x4xf32>
}
// CHECK-LABEL: func.func @shared_all_reduce
// CHECK-NEXT:    shard.all_reduce
// CHECK-NEXT:    shard.all_slice

// -----

// Gathering and then taking one's own part gives back the part.
shard.grid @g(shape = 2)
func.func @slice_of_gather(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %g = shard.all_gather %x on @g grid_axes = [0] gather_axis = 1 : tensor<3x4xf32> -> tensor<3x8xf32>
  %y = shard.all_slice %g on @g grid_axes = [0] slice_axis = 1 : tensor<3x8xf32> -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}
// CHECK-LABEL: func.func @slice_of_gather
// CHECK-NEXT:    func.return %x

// -----

// Gather on one dim, slice on another: not an identity, kept.
shard.grid @g(shape = 2)
func.func @slice_other_dim(%x: tensor<4x4xf32>) -> tensor<2x8xf32> {
  %g = shard.all_gather %x on @g grid_axes = [0] gather_axis = 1 : tensor<4x4xf32> -> tensor<4x8xf32>
  %y = shard.all_slice %g on @g grid_axes = [0] slice_axis = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
// CHECK-LABEL: func.func @slice_other_dim
// CHECK-NEXT:    shard.all_gather
// CHECK-NEXT:    shard.all_slice

// -----

// Two all_reduces over the two axes of a 2x2 grid are one over both.
shard.grid @g(shape = 2x2)
func.func @two_all_reduces(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = shard.all_reduce %x on @g grid_axes = [1] : tensor<4xf32> -> tensor<4xf32>
  %y = shard.all_reduce %a on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK-LABEL: func.func @two_all_reduces
// CHECK-NEXT:    %y = shard.all_reduce %x on @g grid_axes = [1, 0] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:    func.return %y

// -----

// Different reductions do not merge.
shard.grid @g(shape = 2x2)
func.func @sum_then_max(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = shard.all_reduce %x on @g grid_axes = [1] : tensor<4xf32> -> tensor<4xf32>
  %y = shard.all_reduce %a on @g grid_axes = [0] reduction = max : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK-LABEL: func.func @sum_then_max
// CHECK-NEXT:    shard.all_reduce %x
// CHECK-NEXT:    shard.all_reduce %a

// -----

// A collective over one core (no axes, or an axis of size 1) moves nothing.
shard.grid @g(shape = 1x4)
func.func @single_core(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = shard.all_reduce %x on @g : tensor<4xf32> -> tensor<4xf32>
  %y = shard.broadcast %a on @g grid_axes = [0] root = [0] : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK-LABEL: func.func @single_core
// CHECK-NEXT:    func.return %x
