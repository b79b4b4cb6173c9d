// RUN: aitc-opt %s --split-input-file --parsing-diagnostics | filecheck %s
// The shard syntax refuses what aitc cannot run while parsing, with the position of the problem.

// aitc targets have a fixed number of cores: a dynamic grid dim is refused.
shard.grid @g(shape = 2x?)
// CHECK: aitc grids are static: give every dim of the shape (no '?')

// -----

// A broadcast names its root core.
shard.grid @g(shape = 2)
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = shard.broadcast %x on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: shard.broadcast needs root = [...]
