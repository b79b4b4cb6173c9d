// RUN: aitc-opt %s --split-input-file | filecheck %s
// RUN: aitc-opt %s --split-input-file --print-op-generic | aitc-opt --split-input-file | filecheck %s

// Grids: 1-D and 2-D.
// CHECK: shard.grid @cores(shape = 4)
// CHECK: shard.grid @mesh(shape = 2x2)
shard.grid @cores(shape = 4)
shard.grid @mesh(shape = 2x2)

// Shardings: split dims, replicated dims, an uneven split, and the annotation op.
// CHECK-LABEL: func.func @annotations
func.func @annotations(%x: tensor<10x16xf32>) -> tensor<10x16xf32> {
  // CHECK-NEXT: %s = shard.sharding @cores split_axes = [[], [0]] : !shard.sharding
  %s = shard.sharding @cores split_axes = [[], [0]] : !shard.sharding
  // CHECK-NEXT: %u = shard.sharding @cores split_axes = [[0]] sharded_dims_offsets = [0, 3, 6, 8, 10] : !shard.sharding
  %u = shard.sharding @cores split_axes = [[0]] sharded_dims_offsets = [0, 3, 6, 8, 10] : !shard.sharding
  // CHECK-NEXT: %r = shard.sharding @mesh split_axes = [[0, 1]] : !shard.sharding
  %r = shard.sharding @mesh split_axes = [[0, 1]] : !shard.sharding
  // CHECK-NEXT: %y = shard.shard %x to %s : tensor<10x16xf32>
  %y = shard.shard %x to %s : tensor<10x16xf32>
  // CHECK-NEXT: %z = shard.shard %y to %u annotate_for_users : tensor<10x16xf32>
  %z = shard.shard %y to %u annotate_for_users : tensor<10x16xf32>
  // A split widened by a halo (upstream's halo_sizes): one row before each part, two after.
  // CHECK-NEXT: %h = shard.sharding @cores split_axes = [[0]] halo_sizes = [1, 2] : !shard.sharding
  %h = shard.sharding @cores split_axes = [[0]] halo_sizes = [1, 2] : !shard.sharding
  func.return %z : tensor<10x16xf32>
}

// Each collective once, with the shapes a group of 4 (or 2) cores gives.
// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK-NEXT: shard.all_reduce %x on @cores grid_axes = [0] : tensor<8x16xf32> -> tensor<8x16xf32>
  %a = shard.all_reduce %x on @cores grid_axes = [0] : tensor<8x16xf32> -> tensor<8x16xf32>
  // CHECK-NEXT: shard.all_reduce %a on @mesh grid_axes = [1, 0] reduction = max : tensor<8x16xf32> -> tensor<8x16xf32>
  %m = shard.all_reduce %a on @mesh grid_axes = [1, 0] reduction = max : tensor<8x16xf32> -> tensor<8x16xf32>
  // CHECK-NEXT: shard.all_gather %m on @cores grid_axes = [0] gather_axis = 1 : tensor<8x16xf32> -> tensor<8x64xf32>
  %g = shard.all_gather %m on @cores grid_axes = [0] gather_axis = 1 : tensor<8x16xf32> -> tensor<8x64xf32>
  // CHECK-NEXT: shard.reduce_scatter %g on @cores grid_axes = [0] scatter_axis = 1 : tensor<8x64xf32> -> tensor<8x16xf32>
  %r = shard.reduce_scatter %g on @cores grid_axes = [0] scatter_axis = 1 : tensor<8x64xf32> -> tensor<8x16xf32>
  // CHECK-NEXT: shard.all_slice %r on @mesh grid_axes = [0] slice_axis = 0 : tensor<8x16xf32> -> tensor<4x16xf32>
  %l = shard.all_slice %r on @mesh grid_axes = [0] slice_axis = 0 : tensor<8x16xf32> -> tensor<4x16xf32>
  // A part widened by a halo: 16 / 4 + 1 + 1 columns.
  // CHECK-NEXT: shard.all_slice %r on @cores grid_axes = [0] slice_axis = 1 halo = [1, 1] : tensor<8x16xf32> -> tensor<8x6xf32>
  %w = shard.all_slice %r on @cores grid_axes = [0] slice_axis = 1 halo = [1, 1] : tensor<8x16xf32> -> tensor<8x6xf32>
  // A halo whose rows past the ends are -inf (a max pool's padding): 16 / 4 + 1 columns.
  // CHECK-NEXT: shard.all_slice %r on @cores grid_axes = [0] slice_axis = 1 halo = [1, 0] fill = "-inf" : tensor<8x16xf32> -> tensor<8x5xf32>
  %mp = shard.all_slice %r on @cores grid_axes = [0] slice_axis = 1 halo = [1, 0] fill = "-inf" : tensor<8x16xf32> -> tensor<8x5xf32>
  // CHECK-NEXT: shard.all_to_all %l on @cores grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<4x16xf32> -> tensor<16x4xf32>
  %t = shard.all_to_all %l on @cores grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<4x16xf32> -> tensor<16x4xf32>
  // CHECK-NEXT: shard.broadcast %x on @mesh grid_axes = [0, 1] root = [1, 0] : tensor<8x16xf32> -> tensor<8x16xf32>
  %b = shard.broadcast %x on @mesh grid_axes = [0, 1] root = [1, 0] : tensor<8x16xf32> -> tensor<8x16xf32>
  // An empty grid_axes is a group of one core: printed without grid_axes.
  // CHECK-NEXT: shard.all_reduce %b on @cores : tensor<8x16xf32> -> tensor<8x16xf32>
  %c = shard.all_reduce %b on @cores grid_axes = [] : tensor<8x16xf32> -> tensor<8x16xf32>
  // CHECK-NEXT: shard.process_linear_index on @mesh : index
  %i = shard.process_linear_index on @mesh : index
  func.return %c : tensor<8x16xf32>
}
