// RUN: aitc-opt %s --split-input-file -p 'shard-propagate{strategy=tp target=edge}' | filecheck %s
// RUN: aitc-opt %s --split-input-file -p 'shard-propagate{strategy=sp target=edge cores=2}' | filecheck %s --check-prefix=SP

// Tensor parallel (Megatron): the first weight is split by output columns, the second by
// rows (its input arrives split along the contraction), one all_reduce; the return wants
// the result whole.
func.func @mlp(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %w1 = graph.constant dense<0.5> : tensor<64x128xf32>
  %w2 = graph.constant dense<0.25> : tensor<128x64xf32>
  %h = graph.matmul %x, %w1 {activation = "relu"} : tensor<8x64xf32>, tensor<64x128xf32> -> tensor<8x128xf32>
  %y = graph.matmul %h, %w2 : tensor<8x128xf32>, tensor<128x64xf32> -> tensor<8x64xf32>
  func.return %y : tensor<8x64xf32>
}
// CHECK:       builtin.module attributes {aitc.target = "edge", shard.plan = {strategy = "tp", cores = 4 : i64, est_cycles = {{[0-9]+}} : i64, collectives = "1 all_reduce"}}
// CHECK:         shard.grid @cores(shape = 4)
// CHECK-DAG:     %[[ROWS:.*]] = shard.sharding @cores split_axes = {{\[}}[0], []] : !shard.sharding
// CHECK-DAG:     %[[COLS:.*]] = shard.sharding @cores split_axes = {{\[}}[], [0]] : !shard.sharding
// CHECK:         %[[W1:.*]] = shard.shard %w1 to %[[COLS]] annotate_for_users : tensor<64x128xf32>
// CHECK-NEXT:    %h = graph.matmul %x, %[[W1]] {activation = "relu", shard.plan = {decision = "tp: split n (output columns)", cycles = {{[0-9]+}} : i64}}
// CHECK-NEXT:    %[[H:.*]] = shard.shard %h to %[[COLS]] : tensor<8x128xf32>
// CHECK-NEXT:    %[[W2:.*]] = shard.shard %w2 to %[[ROWS]] annotate_for_users : tensor<128x64xf32>
// CHECK-NEXT:    %y = graph.matmul %[[H]], %[[W2]] {shard.plan = {decision = "tp: split k (contraction, all_reduce)", cycles = {{[0-9]+}} : i64, collectives = "all_reduce 2048 B ({{ring|tree}}) {{[0-9]+}} cycles"}}
// CHECK-NEXT:    func.return %y

// Sequence parallel splits the rows (tokens) of every matmul by a weight: no collective
// until the return gathers the rows.
// SP-LABEL:    func.func @mlp
// SP:          %h = graph.matmul %{{.*}}, %w1 {activation = "relu", shard.plan = {decision = "sp: split m (rows)", cycles = {{[0-9]+}} : i64}}
// SP:          %y = graph.matmul %{{.*}}, %w2 {shard.plan = {decision = "sp: split m (rows)", cycles = {{[0-9]+}} : i64}}
// SP-NEXT:     %[[Y:.*]] = shard.shard %y to %{{.*}} : tensor<8x64xf32>
// SP-NEXT:     %[[WHOLE:.*]] = shard.shard %[[Y]] to %{{.*}} annotate_for_users : tensor<8x64xf32>
// SP-NEXT:     func.return %[[WHOLE]]

// -----

// A user annotation propagates backward into the op that produces the annotated value (its
// cost counts the resharding the annotation would need) and forward through an elementwise
// op and a transpose (which moves the split to the transposed dim).
builtin.module attributes {aitc.target = "edge"} {
  shard.grid @g(shape = 2)
  func.func @chain(%x: tensor<4x6xf32>) -> tensor<6x4xf32> {
    %e = graph.exp %x : tensor<4x6xf32>
    %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
    %a = shard.shard %e to %s : tensor<4x6xf32>
    %n = graph.neg %a : tensor<4x6xf32>
    %t = graph.transpose %n {perm = array<i64: 1, 0>} : tensor<4x6xf32> -> tensor<6x4xf32>
    func.return %t : tensor<6x4xf32>
  }
}
// CHECK-LABEL: func.func @chain
// CHECK:         %[[X:.*]] = shard.shard %x to %{{.*}} annotate_for_users : tensor<4x6xf32>
// CHECK-NEXT:    %e = graph.exp %[[X]] {shard.plan = {decision = "split result dim 0: least cycles"
// CHECK-NEXT:    %[[E:.*]] = shard.shard %e to
// CHECK-NEXT:    %n = graph.neg %[[E]] {shard.plan = {decision = "split result dim 0: least cycles"
// CHECK-NEXT:    %[[N:.*]] = shard.shard %n to
// CHECK-NEXT:    %t = graph.transpose %[[N]] {perm = array<i64: 1, 0>, shard.plan = {decision = "split result dim 1: least cycles"
// CHECK-NEXT:    %[[T:.*]] = shard.shard %t to %{{.*}} : tensor<6x4xf32>
// CHECK-NEXT:    %[[R:.*]] = shard.shard %[[T]] to %{{.*}} annotate_for_users : tensor<6x4xf32>
// CHECK-NEXT:    func.return %[[R]]

// -----

// Spatial split of a CNN (sp): each conv splits its output rows. The 3x3 conv reads one row
// of halo on each side of its part (its input's sharding says so); the stride-2 1x1 conv
// reads exactly its part of the relu's rows, which are split already: no collective.
func.func @convs(%x: tensor<1x4x8x8xf32>) -> tensor<1x8x4x4xf32> {
  %w1 = graph.constant dense<0.5> : tensor<8x4x3x3xf32>
  %w2 = graph.constant dense<0.25> : tensor<8x8x1x1xf32>
  %h = graph.conv %x, %w1 {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x8x8xf32>
  %r = graph.relu %h : tensor<1x8x8x8xf32>
  %y = graph.conv %r, %w2 {strides = array<i64: 2, 2>} : tensor<1x8x8x8xf32>, tensor<8x8x1x1xf32> -> tensor<1x8x4x4xf32>
  func.return %y : tensor<1x8x4x4xf32>
}
// SP-LABEL:    func.func @convs
// SP-DAG:      %[[ROWS:.*]] = shard.sharding @cores split_axes = {{\[\[\], \[\], \[0\], \[\]\]}} : !shard.sharding
// SP-DAG:      %[[HALO:.*]] = shard.sharding @cores split_axes = {{\[\[\], \[\], \[0\], \[\]\]}} halo_sizes = [1, 1] : !shard.sharding
// SP:          %[[X:.*]] = shard.shard %x to %[[HALO]] annotate_for_users : tensor<1x4x8x8xf32>
// SP-NEXT:     %h = graph.conv %[[X]], %w1 {{.*}}decision = "sp: split output rows (halo 1+1)"
// SP-NEXT:     %[[H:.*]] = shard.shard %h to %[[ROWS]] : tensor<1x8x8x8xf32>
// SP-NEXT:     %r = graph.relu %[[H]] {{.*}}decision = "split result dim 2: least cycles"
// SP-NEXT:     %[[R:.*]] = shard.shard %r to %[[ROWS]] : tensor<1x8x8x8xf32>
// SP-NEXT:     %y = graph.conv %[[R]], %w2 {{.*}}decision = "sp: split output rows"
// SP-NOT:      collectives
// SP:          func.return

// -----

// Pooling in a spatial split: a padded, overlapping max pool splits its output rows too,
// reading one row of halo before its part (its padding, -inf, past the ends: see
// shard-partition); an average pool that does not count its padding cannot (each core's
// divisors would change) and splits its channels instead.
func.func @pools(%x: tensor<1x4x64x64xf32>) -> tensor<1x8x16x16xf32> {
  %w = graph.constant dense<0.5> : tensor<8x4x3x3xf32>
  %h = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : tensor<1x4x64x64xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x64x64xf32>
  %m = graph.max_pool %h {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x64x64xf32> -> tensor<1x8x32x32xf32>
  %a = graph.avg_pool %m {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x32x32xf32> -> tensor<1x8x16x16xf32>
  func.return %a : tensor<1x8x16x16xf32>
}
// SP-LABEL:    func.func @pools
// SP-DAG:      %[[HALO:.*]] = shard.sharding @cores split_axes = {{\[\[\], \[\], \[0\], \[\]\]}} halo_sizes = [1, 0] : !shard.sharding
// SP:          %h = graph.conv {{.*}}decision = "sp: split output rows (halo 1+1)"
// SP:          %[[H:.*]] = shard.shard %{{.*}} to %[[HALO]] annotate_for_users : tensor<1x8x64x64xf32>
// SP-NEXT:     %m = graph.max_pool %[[H]] {{.*}}decision = "split output rows (halo 1+0): least cycles"
// SP:          %a = graph.avg_pool {{.*}}decision = "split result dim 1: least cycles"
