// RUN: aitc-opt %s --split-input-file -p shard-partition | filecheck %s

// Megatron MLP on 4 cores: the weights are sliced locally (all_slice of a whole value moves
// nothing), the row-split matmul's partial sums are all-reduced and its bias is added once,
// after the all_reduce.
shard.grid @cores(shape = 4)
func.func @mlp(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %rows = shard.sharding @cores split_axes = [[0], []] : !shard.sharding
  %cols = shard.sharding @cores split_axes = [[], [0]] : !shard.sharding
  %w1 = graph.constant dense<0.5> : tensor<64x128xf32>
  %w2 = graph.constant dense<0.25> : tensor<128x64xf32>
  %b2 = graph.constant dense<1.0> : tensor<64xf32>
  %w1s = shard.shard %w1 to %cols annotate_for_users : tensor<64x128xf32>
  %h = graph.matmul %x, %w1s {activation = "relu"} : tensor<8x64xf32>, tensor<64x128xf32> -> tensor<8x128xf32>
  %hs = shard.shard %h to %cols : tensor<8x128xf32>
  %w2s = shard.shard %w2 to %rows annotate_for_users : tensor<128x64xf32>
  %y = graph.matmul %hs, %w2s, %b2 : tensor<8x128xf32>, tensor<128x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
  func.return %y : tensor<8x64xf32>
}
// CHECK-LABEL: func.func @mlp(%x: tensor<8x64xf32>) -> tensor<8x64xf32>
// CHECK-NOT:     shard.sharding
// CHECK:         %[[W1:.*]] = shard.all_slice %w1 on @cores grid_axes = [0] slice_axis = 1 : tensor<64x128xf32> -> tensor<64x32xf32>
// CHECK-NEXT:    %h = graph.matmul %x, %[[W1]] {activation = "relu"} : tensor<8x64xf32>, tensor<64x32xf32> -> tensor<8x32xf32>
// CHECK-NEXT:    %[[W2:.*]] = shard.all_slice %w2 on @cores grid_axes = [0] slice_axis = 0 : tensor<128x64xf32> -> tensor<32x64xf32>
// CHECK-NEXT:    %y = graph.matmul %h, %[[W2]] : tensor<8x32xf32>, tensor<32x64xf32> -> tensor<8x64xf32>
// CHECK-NEXT:    %[[R:.*]] = shard.all_reduce %y on @cores grid_axes = [0] : tensor<8x64xf32> -> tensor<8x64xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.add %[[R]], %b2 : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
// CHECK-NEXT:    func.return %[[B]] : tensor<8x64xf32>

// -----

// Resharding: a value split by rows that its user wants split by columns goes through one
// all_to_all; the whole result a return needs comes from an all_gather.
shard.grid @g(shape = 2)
func.func @reshard(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %rows = shard.sharding @g split_axes = [[0], []] : !shard.sharding
  %cols = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %whole = shard.sharding @g split_axes = [[], []] : !shard.sharding
  %xr = shard.shard %x to %rows annotate_for_users : tensor<4x6xf32>
  %e = graph.exp %xr : tensor<4x6xf32>
  %er = shard.shard %e to %rows : tensor<4x6xf32>
  %ec = shard.shard %er to %cols annotate_for_users : tensor<4x6xf32>
  %n = graph.neg %ec : tensor<4x6xf32>
  %nc = shard.shard %n to %cols : tensor<4x6xf32>
  %nw = shard.shard %nc to %whole annotate_for_users : tensor<4x6xf32>
  func.return %nw : tensor<4x6xf32>
}
// CHECK-LABEL: func.func @reshard
// CHECK-NEXT:    %[[X:.*]] = shard.all_slice %x on @g grid_axes = [0] slice_axis = 0 : tensor<4x6xf32> -> tensor<2x6xf32>
// CHECK-NEXT:    %e = graph.exp %[[X]] : tensor<2x6xf32>
// CHECK-NEXT:    %[[T:.*]] = shard.all_to_all %e on @g grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<2x6xf32> -> tensor<4x3xf32>
// CHECK-NEXT:    %n = graph.neg %[[T]] : tensor<4x3xf32>
// CHECK-NEXT:    %[[G:.*]] = shard.all_gather %n on @g grid_axes = [0] gather_axis = 1 : tensor<4x3xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %[[G]]

// -----

// A reshape that would split 2 heads over 4 cores cannot keep its operand split: the
// operand is gathered and the reshape runs whole (never a wrong answer).
shard.grid @g(shape = 4)
func.func @heads(%x: tensor<2x64xf32>) -> tensor<2x2x32xf32> {
  %cols = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %cols annotate_for_users : tensor<2x64xf32>
  %e = graph.exp %xs : tensor<2x64xf32>
  %es = shard.shard %e to %cols : tensor<2x64xf32>
  %r = graph.reshape %es : tensor<2x64xf32> -> tensor<2x2x32xf32>
  func.return %r : tensor<2x2x32xf32>
}
// CHECK-LABEL: func.func @heads
// CHECK:         %e = graph.exp %{{.*}} : tensor<2x16xf32>
// CHECK-NEXT:    %[[G:.*]] = shard.all_gather %e on @g grid_axes = [0] gather_axis = 1 : tensor<2x16xf32> -> tensor<2x64xf32>
// CHECK-NEXT:    %r = graph.reshape %[[G]] : tensor<2x64xf32> -> tensor<2x2x32xf32>

// -----

// A conv split along its output rows over 2 cores: its input is whole, so every core takes
// its 4 rows plus one row of halo on each side (zeros past the ends stand for the padding),
// and its conv pads no rows (only columns). Its result stays split by rows.
shard.grid @cores(shape = 2)
func.func @conv_rows(%x: tensor<1x4x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %rows = shard.sharding @cores split_axes = [[], [], [0], []] : !shard.sharding
  %halo = shard.sharding @cores split_axes = [[], [], [0], []] halo_sizes = [1, 1] : !shard.sharding
  %w = graph.constant dense<0.5> : tensor<8x4x3x3xf32>
  %xs = shard.shard %x to %halo annotate_for_users : tensor<1x4x8x8xf32>
  %h = graph.conv %xs, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x8x8xf32>
  %hs = shard.shard %h to %rows : tensor<1x8x8x8xf32>
  func.return %hs : tensor<1x8x8x8xf32>
}
// CHECK-LABEL: func.func @conv_rows
// CHECK:         %[[X:.*]] = shard.all_slice %x on @cores grid_axes = [0] slice_axis = 2 halo = [1, 1] : tensor<1x4x8x8xf32> -> tensor<1x4x6x8xf32>
// CHECK-NEXT:    %h = graph.conv %[[X]], %w {pads = array<i64: 0, 1, 0, 1>, strides = array<i64: 1, 1>} : tensor<1x4x6x8xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x4x8xf32>
// CHECK-NEXT:    %[[G:.*]] = shard.all_gather %h on @cores grid_axes = [0] gather_axis = 2 : tensor<1x8x4x8xf32> -> tensor<1x8x8x8xf32>
// CHECK-NEXT:    func.return %[[G]]

// -----

// A conv split along its output rows whose input is split along its rows already: no
// all_gather of the whole input. Every core's boundary (its last row, then its first) is
// gathered (2 rows per core), each core keeps its own and its neighbours' boundaries (an
// all_slice with a halo of one boundary: zeros past the ends), and its part is widened by
// the previous core's last row and the next core's first row.
shard.grid @cores(shape = 2)
func.func @conv_rows_of_rows(%x: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %rows = shard.sharding @cores split_axes = [[], [], [0], []] : !shard.sharding
  %halo = shard.sharding @cores split_axes = [[], [], [0], []] halo_sizes = [1, 1] : !shard.sharding
  %w = graph.constant dense<0.5> : tensor<8x8x3x3xf32>
  %xr = shard.shard %x to %rows : tensor<1x8x8x8xf32>
  %xs = shard.shard %xr to %halo annotate_for_users : tensor<1x8x8x8xf32>
  %h = graph.conv %xs, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x8x8xf32>
  %hs = shard.shard %h to %rows : tensor<1x8x8x8xf32>
  func.return %hs : tensor<1x8x8x8xf32>
}
// CHECK-LABEL: func.func @conv_rows_of_rows
// CHECK:         %[[PART:.*]] = shard.all_slice %x on @cores grid_axes = [0] slice_axis = 2 : tensor<1x8x8x8xf32> -> tensor<1x8x4x8xf32>
// CHECK-NEXT:    %[[LAST:.*]] = graph.slice %[[PART]] {starts = array<i64: 0, 0, 3, 0>, steps = array<i64: 1, 1, 1, 1>} : tensor<1x8x4x8xf32> -> tensor<1x8x1x8xf32>
// CHECK-NEXT:    %[[FIRST:.*]] = graph.slice %[[PART]] {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : tensor<1x8x4x8xf32> -> tensor<1x8x1x8xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.concat %[[LAST]], %[[FIRST]] {axis = 2 : i64}
// CHECK-NEXT:    %[[G:.*]] = shard.all_gather %[[B]] on @cores grid_axes = [0] gather_axis = 2 : tensor<1x8x2x8xf32> -> tensor<1x8x4x8xf32>
// CHECK-NEXT:    %[[N:.*]] = shard.all_slice %[[G]] on @cores grid_axes = [0] slice_axis = 2 halo = [2, 2] : tensor<1x8x4x8xf32> -> tensor<1x8x6x8xf32>
// CHECK-NEXT:    %[[ABOVE:.*]] = graph.slice %[[N]] {starts = array<i64: 0, 0, 0, 0>, {{.*}} -> tensor<1x8x1x8xf32>
// CHECK-NEXT:    %[[BELOW:.*]] = graph.slice %[[N]] {starts = array<i64: 0, 0, 5, 0>, {{.*}} -> tensor<1x8x1x8xf32>
// CHECK-NEXT:    %[[W:.*]] = graph.concat %[[ABOVE]], %[[PART]], %[[BELOW]] {axis = 2 : i64} : (tensor<1x8x1x8xf32>, tensor<1x8x4x8xf32>, tensor<1x8x1x8xf32>) -> tensor<1x8x6x8xf32>
// CHECK-NEXT:    %h = graph.conv %[[W]], %w {pads = array<i64: 0, 1, 0, 1>}

// -----

// A max pool split along its output rows reads its input with a halo like a conv (the
// window's overhang: 1 row before each part), but what stands past the ends is its padding,
// -inf: the exchange's all_slice fills with -inf, and the per-core pool pads no rows.
shard.grid @cores(shape = 2)
func.func @max_pool_rows_of_rows(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
  %rows = shard.sharding @cores split_axes = [[], [], [0], []] : !shard.sharding
  %halo = shard.sharding @cores split_axes = [[], [], [0], []] halo_sizes = [1, 0] : !shard.sharding
  %xr = shard.shard %x to %rows : tensor<1x4x8x8xf32>
  %xs = shard.shard %xr to %halo annotate_for_users : tensor<1x4x8x8xf32>
  %p = graph.max_pool %xs {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  %ps = shard.shard %p to %rows : tensor<1x4x4x4xf32>
  func.return %ps : tensor<1x4x4x4xf32>
}
// CHECK-LABEL: func.func @max_pool_rows_of_rows
// CHECK:         %[[PART:.*]] = shard.all_slice %x on @cores grid_axes = [0] slice_axis = 2 : tensor<1x4x8x8xf32> -> tensor<1x4x4x8xf32>
// CHECK-NEXT:    %[[LAST:.*]] = graph.slice %[[PART]] {starts = array<i64: 0, 0, 3, 0>, {{.*}} -> tensor<1x4x1x8xf32>
// CHECK-NEXT:    %[[G:.*]] = shard.all_gather %[[LAST]] on @cores grid_axes = [0] gather_axis = 2 : tensor<1x4x1x8xf32> -> tensor<1x4x2x8xf32>
// CHECK-NEXT:    %[[N:.*]] = shard.all_slice %[[G]] on @cores grid_axes = [0] slice_axis = 2 halo = [1, 1] fill = "-inf" : tensor<1x4x2x8xf32> -> tensor<1x4x3x8xf32>
// CHECK-NEXT:    %[[ABOVE:.*]] = graph.slice %[[N]] {starts = array<i64: 0, 0, 0, 0>, {{.*}} -> tensor<1x4x1x8xf32>
// CHECK-NEXT:    %[[W:.*]] = graph.concat %[[ABOVE]], %[[PART]] {axis = 2 : i64} : (tensor<1x4x1x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x5x8xf32>
// CHECK-NEXT:    %p = graph.max_pool %[[W]] {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 1, 0, 1>} : tensor<1x4x5x8xf32> -> tensor<1x4x2x4xf32>

// -----

// An average pool that counts its padding in its divisors splits its rows with a halo of
// zeros (the default fill), and the per-core pool pads no rows.
shard.grid @cores(shape = 2)
func.func @avg_pool_rows(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %halo = shard.sharding @cores split_axes = [[], [], [0], []] halo_sizes = [1, 1] : !shard.sharding
  %xs = shard.shard %x to %halo annotate_for_users : tensor<1x4x8x8xf32>
  %p = graph.avg_pool %xs {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, count_include_pad} : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  func.return %p : tensor<1x4x8x8xf32>
}
// CHECK-LABEL: func.func @avg_pool_rows
// CHECK:         %[[X:.*]] = shard.all_slice %x on @cores grid_axes = [0] slice_axis = 2 halo = [1, 1] : tensor<1x4x8x8xf32> -> tensor<1x4x6x8xf32>
// CHECK-NEXT:    %p = graph.avg_pool %[[X]] {kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 1, 0, 1>, count_include_pad} : tensor<1x4x6x8xf32> -> tensor<1x4x4x8xf32>
