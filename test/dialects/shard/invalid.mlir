// RUN: aitc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// A collective names a grid that exists.
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = shard.all_reduce %x on @nowhere grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}
// CHECK: shard.all_reduce: no shard.grid @nowhere in the module

// -----

// Grid axes exist.
shard.grid @g(shape = 4)
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = shard.all_reduce %x on @g grid_axes = [1] : tensor<8xf32> -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}
// CHECK: shard.all_reduce: grid axes [1] do not exist in @g (4)

// -----

// A grid axis splits at most one dim of a sharding.
shard.grid @g(shape = 4)
func.func @f() {
  %s = shard.sharding @g split_axes = [[0], [0]] : !shard.sharding
  func.return
}
// CHECK: shard.sharding: grid axes [0, 0] repeat an axis

// -----

// 12 rows do not divide among 5 cores: the error gives the numbers and the fixes.
shard.grid @g(shape = 5)
func.func @f(%x: tensor<12x4xf32>) -> tensor<12x4xf32> {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %y = shard.shard %x to %s : tensor<12x4xf32>
  func.return %y : tensor<12x4xf32>
}
// CHECK: shard.shard: dim 0 of tensor<12x4xf32> has 12 elements, which do not divide among 5 cores; split another dim, use 3 or 4 cores, or give sharded_dims_offsets for an uneven split

// -----

// Uneven offsets rise from 0 to the dim size.
shard.grid @g(shape = 2)
func.func @f(%x: tensor<5xf32>) -> tensor<5xf32> {
  %s = shard.sharding @g split_axes = [[0]] sharded_dims_offsets = [0, 3, 4] : !shard.sharding
  %y = shard.shard %x to %s : tensor<5xf32>
  func.return %y : tensor<5xf32>
}
// CHECK: shard.shard: sharded_dims_offsets [0, 3, 4] for dim 0 must rise from 0 to its size 5

// -----

// One start per core and the size: 2 cores need 3 offsets.
shard.grid @g(shape = 2)
func.func @f() {
  %s = shard.sharding @g split_axes = [[0]] sharded_dims_offsets = [0, 5] : !shard.sharding
  func.return
}
// CHECK: shard.sharding: sharded_dims_offsets needs 3 values (each split dim: one start per core, then its size), got 2

// -----

// all_gather multiplies the gather dim by the group size.
shard.grid @g(shape = 4)
func.func @f(%x: tensor<2x3xf32>) -> tensor<2x6xf32> {
  %y = shard.all_gather %x on @g grid_axes = [0] gather_axis = 1 : tensor<2x3xf32> -> tensor<2x6xf32>
  func.return %y : tensor<2x6xf32>
}
// CHECK: shard.all_gather: the result of tensor<2x3xf32> over 4 cores has shape [2, 12], not [2, 6]

// -----

// reduce_scatter needs the scatter dim to divide.
shard.grid @g(shape = 4)
func.func @f(%x: tensor<6xf32>) -> tensor<1xf32> {
  %y = shard.reduce_scatter %x on @g grid_axes = [0] scatter_axis = 0 : tensor<6xf32> -> tensor<1xf32>
  func.return %y : tensor<1xf32>
}
// CHECK: shard.reduce_scatter: dim 0 of size 6 does not divide among 4 cores

// -----

// The axis of a collective is a dim of its operand.
shard.grid @g(shape = 2)
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = shard.all_slice %x on @g grid_axes = [0] slice_axis = 1 : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: shard.all_slice: slice_axis 1 is not a dim of tensor<4xf32>

// -----

// A halo widens each core's part: 8 / 2 + 1 + 1 = 6, not 4.
shard.grid @g(shape = 2)
func.func @f(%x: tensor<8xf32>) -> tensor<4xf32> {
  %y = shard.all_slice %x on @g grid_axes = [0] slice_axis = 0 halo = [1, 1] : tensor<8xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: shard.all_slice: the result of tensor<8xf32> over 2 cores has shape [6], not [4]

// -----

// A halo is two sizes, neither negative.
shard.grid @g(shape = 2)
func.func @f(%x: tensor<8xf32>) -> tensor<4xf32> {
  %y = shard.all_slice %x on @g grid_axes = [0] slice_axis = 0 halo = [-1, 1] : tensor<8xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: shard.all_slice: halo must be [lo, hi], both >= 0, not [-1, 1]

// -----

// The fill past the ends is 0 or -inf.
shard.grid @g(shape = 2)
func.func @f(%x: tensor<8xf32>) -> tensor<5xf32> {
  %y = shard.all_slice %x on @g grid_axes = [0] slice_axis = 0 halo = [1, 0] fill = "nan" : tensor<8xf32> -> tensor<5xf32>
  func.return %y : tensor<5xf32>
}
// CHECK: shard.all_slice: fill "nan" needs a halo and is one of '0', '-inf'

// -----

// A fill without a halo has nothing to fill.
shard.grid @g(shape = 2)
func.func @f(%x: tensor<8xf32>) -> tensor<4xf32> {
  %y = shard.all_slice %x on @g grid_axes = [0] slice_axis = 0 fill = "-inf" : tensor<8xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: shard.all_slice: fill "-inf" needs a halo and is one of '0', '-inf'

// -----

// halo_sizes: (lo, hi) per split dim.
shard.grid @g(shape = 2)
func.func @f() {
  %s = shard.sharding @g split_axes = [[0], []] halo_sizes = [1] : !shard.sharding
  func.return
}
// CHECK: shard.sharding: halo_sizes needs two values >= 0 (lo, hi) per split dim (1 split), got [1]

// -----

// Reductions are sum, max, min or prod.
shard.grid @g(shape = 2)
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = shard.all_reduce %x on @g grid_axes = [0] reduction = mean : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: shard.all_reduce: reduction 'mean' is not one of sum, max, min, prod

// -----

// A broadcast root is a core of the group.
shard.grid @g(shape = 2)
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = shard.broadcast %x on @g grid_axes = [0] root = [2] : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: shard.broadcast: root [2] is not a core of grid axes [0] of @g (2)
