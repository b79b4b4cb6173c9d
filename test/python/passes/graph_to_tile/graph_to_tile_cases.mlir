// Graph-level cases for test_graph_to_tile.py (not a lit test: test/python is excluded from lit).
// One function per case, named after it; each runs at graph and tile level on tiny and edge.
// A matmul larger than tiny's SRAM tiles: K in several tile.matmul per SRAM tile, N in engine-wide tiles.
func.func @matmul(%x: tensor<32x48xf32> {graph.name = "x"}, %w: tensor<48x20xf32> {graph.name = "w"}) -> (tensor<32x20xf32> {graph.name = "y"}) {
  %y = graph.matmul %x, %w : tensor<32x48xf32>, tensor<48x20xf32> -> tensor<32x20xf32>
  func.return %y : tensor<32x20xf32>
}

// -----

// Bias then activation (relu, gelu_tanh, relu6) from ACC, and an activation fused into acc_read.
func.func @bias_activations(%a: tensor<5x7xf32>, %b: tensor<7x9xf32>, %c: tensor<9xf32>) -> (tensor<5x9xf32>, tensor<5x9xf32>, tensor<5x9xf32>, tensor<5x9xf32>) {
  %y1 = graph.matmul %a, %b, %c {activation = "relu"} : tensor<5x7xf32>, tensor<7x9xf32>, tensor<9xf32> -> tensor<5x9xf32>
  %y2 = graph.matmul %a, %b, %c {activation = "gelu_tanh"} : tensor<5x7xf32>, tensor<7x9xf32>, tensor<9xf32> -> tensor<5x9xf32>
  %y3 = graph.matmul %a, %b, %c {activation = "relu6"} : tensor<5x7xf32>, tensor<7x9xf32>, tensor<9xf32> -> tensor<5x9xf32>
  %y4 = graph.matmul %a, %b {activation = "sigmoid"} : tensor<5x7xf32>, tensor<7x9xf32> -> tensor<5x9xf32>
  func.return %y1, %y2, %y3, %y4 : tensor<5x9xf32>, tensor<5x9xf32>, tensor<5x9xf32>, tensor<5x9xf32>
}

// -----

// Batch dims on both sides, and broadcast batch dims (3x1 against 2).
func.func @batched_matmul(%a: tensor<2x3x8x16xf32>, %b: tensor<2x3x16x8xf32>, %c: tensor<3x1x8x16xf32>, %d: tensor<2x16x6xf32>) -> (tensor<2x3x8x8xf32>, tensor<3x2x8x6xf32>) {
  %y = graph.matmul %a, %b : tensor<2x3x8x16xf32>, tensor<2x3x16x8xf32> -> tensor<2x3x8x8xf32>
  %z = graph.matmul %c, %d : tensor<3x1x8x16xf32>, tensor<2x16x6xf32> -> tensor<3x2x8x6xf32>
  func.return %y, %z : tensor<2x3x8x8xf32>, tensor<3x2x8x6xf32>
}

// -----

// 1-D operands: a row vector times a matrix, a matrix times a column vector.
func.func @vector_matmul(%a: tensor<16xf32>, %b: tensor<16x6xf32>, %c: tensor<6xf32>) -> (tensor<6xf32>, tensor<16xf32>) {
  %y = graph.matmul %a, %b : tensor<16xf32>, tensor<16x6xf32> -> tensor<6xf32>
  %z = graph.matmul %b, %c {activation = "tanh"} : tensor<16x6xf32>, tensor<6xf32> -> tensor<16xf32>
  func.return %y, %z : tensor<6xf32>, tensor<16xf32>
}

// -----

// One fused chain: row and column broadcasts, immediates, a broadcast lhs, a mask and where.
func.func @elementwise_chain(%x: tensor<4x8x16xf32>, %b: tensor<16xf32>, %s: tensor<4x8x1xf32>) -> (tensor<4x8x16xf32>) {
  %c = graph.constant dense<2.0> : tensor<f32>
  %0 = graph.add %x, %b : tensor<4x8x16xf32>, tensor<16xf32> -> tensor<4x8x16xf32>
  %1 = graph.mul %0, %c : tensor<4x8x16xf32>, tensor<f32> -> tensor<4x8x16xf32>
  %2 = graph.tanh %1 : tensor<4x8x16xf32>
  %3 = graph.sub %s, %2 : tensor<4x8x1xf32>, tensor<4x8x16xf32> -> tensor<4x8x16xf32>
  %4 = graph.abs %3 : tensor<4x8x16xf32>
  %5 = graph.add %4, %c : tensor<4x8x16xf32>, tensor<f32> -> tensor<4x8x16xf32>
  %6 = graph.div %c, %5 : tensor<f32>, tensor<4x8x16xf32> -> tensor<4x8x16xf32>
  %7 = graph.greater %x, %s : tensor<4x8x16xf32>, tensor<4x8x1xf32> -> tensor<4x8x16xi1>
  %8 = graph.where %7, %6, %c : tensor<4x8x16xi1>, tensor<4x8x16xf32>, tensor<f32> -> tensor<4x8x16xf32>
  func.return %8 : tensor<4x8x16xf32>
}

// -----

// Attention scores: scale and mask (looped batch dim) fused, then softmax.
func.func @mask_softmax(%x: tensor<2x2x8x8xf32>, %m: tensor<2x1x1x8xf32>) -> (tensor<2x2x8x8xf32>) {
  %c = graph.constant dense<4.0> : tensor<f32>
  %0 = graph.div %x, %c : tensor<2x2x8x8xf32>, tensor<f32> -> tensor<2x2x8x8xf32>
  %1 = graph.add %0, %m : tensor<2x2x8x8xf32>, tensor<2x1x1x8xf32> -> tensor<2x2x8x8xf32>
  %2 = graph.softmax %1 {axis = -1 : i64} : tensor<2x2x8x8xf32>
  func.return %2 : tensor<2x2x8x8xf32>
}

// -----

// Every composite activation, each a sequence of tile ops.
func.func @activations(%x: tensor<6x10xf32>) -> (tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>) {
  %a = graph.leaky_relu %x {alpha = 0.1 : f64} : tensor<6x10xf32>
  %b = graph.leaky_relu %x {alpha = 1.5 : f64} : tensor<6x10xf32>
  %c = graph.elu %x {alpha = 0.7 : f64} : tensor<6x10xf32>
  %d = graph.selu %x {alpha = 1.67 : f64, gamma = 1.05 : f64} : tensor<6x10xf32>
  %e = graph.hard_sigmoid %x {alpha = 0.2 : f64, beta = 0.5 : f64} : tensor<6x10xf32>
  %f = graph.hard_swish %x : tensor<6x10xf32>
  %g = graph.softplus %x : tensor<6x10xf32>
  %h = graph.softsign %x : tensor<6x10xf32>
  %i = graph.clip %x {alpha = -0.5 : f64, beta = 0.5 : f64} : tensor<6x10xf32>
  %s = graph.sign %x : tensor<6x10xf32>
  %j = graph.gelu %s {approximate = "tanh"} : tensor<6x10xf32>
  %p = graph.constant dense<2.0> : tensor<f32>
  %q = graph.abs %x : tensor<6x10xf32>
  %r = graph.pow %q, %p : tensor<6x10xf32>, tensor<f32> -> tensor<6x10xf32>
  %k = graph.sqrt %r : tensor<6x10xf32>
  func.return %a, %b, %c, %d, %e, %f, %g, %h, %i, %j, %k : tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32>
}

// -----

// layer_norm, log_softmax and the reductions over trailing axes (to a scalar too).
func.func @normalization_reductions(%x: tensor<2x8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8xf32>, tensor<2x1x1xf32>, tensor<2x8x32xf32>, tensor<f32>) {
  %y = graph.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<2x8x32xf32>
  %s = graph.reduce_mean %x {axes = array<i64: 2>} : tensor<2x8x32xf32> -> tensor<2x8xf32>
  %mn = graph.reduce_min %x {axes = array<i64: 1, 2>, keepdims} : tensor<2x8x32xf32> -> tensor<2x1x1xf32>
  %ls = graph.log_softmax %x {axis = 2 : i64} : tensor<2x8x32xf32>
  %t = graph.reduce_max %x {axes = array<i64: 0, 1, 2>} : tensor<2x8x32xf32> -> tensor<f32>
  func.return %y, %s, %mn, %ls, %t : tensor<2x8x32xf32>, tensor<2x8xf32>, tensor<2x1x1xf32>, tensor<2x8x32xf32>, tensor<f32>
}

// -----

// Transposes (copy-out and tile.transpose), reshape views, a strided slice, concat and split.
func.func @movement(%x: tensor<2x8x2x16xf32>, %y: tensor<2x3x16xf32>) -> (tensor<2x2x8x16xf32>, tensor<2x2x16x8xf32>, tensor<2x11x16xf32>, tensor<2x8x32xf32>, tensor<2x3x16xf32>, tensor<16x2x8x2xf32>, tensor<2x1x16xf32>, tensor<2x2x16xf32>) {
  %t1 = graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : tensor<2x8x2x16xf32> -> tensor<2x2x8x16xf32>
  %t2 = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : tensor<2x8x2x16xf32> -> tensor<2x2x16x8xf32>
  %t3 = graph.transpose %x {perm = array<i64: 3, 0, 1, 2>} : tensor<2x8x2x16xf32> -> tensor<16x2x8x2xf32>
  %r = graph.reshape %x : tensor<2x8x2x16xf32> -> tensor<2x8x32xf32>
  %v = graph.reshape %t1 : tensor<2x2x8x16xf32> -> tensor<2x16x16xf32>
  %sl = graph.slice %v {starts = array<i64: 0, 1, 0>, steps = array<i64: 1, 2, 1>} : tensor<2x16x16xf32> -> tensor<2x8x16xf32>
  %cat = graph.concat %sl, %y {axis = 1 : i64} : (tensor<2x8x16xf32>, tensor<2x3x16xf32>) -> tensor<2x11x16xf32>
  %p0, %p1 = graph.split %y {axis = 1 : i64} : tensor<2x3x16xf32> -> tensor<2x1x16xf32>, tensor<2x2x16xf32>
  func.return %t1, %t2, %cat, %r, %y, %t3, %p0, %p1 : tensor<2x2x8x16xf32>, tensor<2x2x16x8xf32>, tensor<2x11x16xf32>, tensor<2x8x32xf32>, tensor<2x3x16xf32>, tensor<16x2x8x2xf32>, tensor<2x1x16xf32>, tensor<2x2x16xf32>
}

// -----

// A concat of a thin slab and a thick block (a halo row joined to a core's part): one staging
// box serves both copies, and must fit the budget (the copies' own boxes merged dim by dim,
// the slab's every channel with the block's rows, used to exceed it).
func.func @concat_slab_and_block(%row: tensor<1x64x1x112xf32>, %part: tensor<1x64x28x112xf32>) -> tensor<1x64x29x112xf32> {
  %cat = graph.concat %row, %part {axis = 2 : i64} : (tensor<1x64x1x112xf32>, tensor<1x64x28x112xf32>) -> tensor<1x64x29x112xf32>
  func.return %cat : tensor<1x64x29x112xf32>
}

// -----

// Embedding lookups with i64 ids from an input (negative ones wrapped) and from a constant.
func.func @gather(%ids: tensor<2x5xi64>, %t: tensor<6x12xf32>) -> (tensor<2x5x12xf32>, tensor<3x12xf32>) {
  %e = graph.gather %t, %ids {axis = 0 : i64} : tensor<6x12xf32>, tensor<2x5xi64> -> tensor<2x5x12xf32>
  %ci = graph.constant dense<[5, -1, 0]> : tensor<3xi64>
  %k = graph.gather %t, %ci {axis = 0 : i64} : tensor<6x12xf32>, tensor<3xi64> -> tensor<3x12xf32>
  func.return %e, %k : tensor<2x5x12xf32>, tensor<3x12xf32>
}

// -----

// Constant pad with a crop, tile, and broadcast.
func.func @pad_tile_broadcast(%x: tensor<3x5xf32>) -> (tensor<5x6xf32>, tensor<3x10xf32>, tensor<4x3x5xf32>) {
  %p = graph.pad %x {pads = array<i64: 1, -1, 1, 2>, mode = "constant", value = 1.5 : f64} : tensor<3x5xf32> -> tensor<5x6xf32>
  %t = graph.tile %x {repeats = array<i64: 1, 2>} : tensor<3x5xf32> -> tensor<3x10xf32>
  %b = graph.broadcast %x : tensor<3x5xf32> -> tensor<4x3x5xf32>
  func.return %p, %t, %b : tensor<5x6xf32>, tensor<3x10xf32>, tensor<4x3x5xf32>
}

// -----

// i32 arithmetic and cast, and outputs that are inputs, duplicates, constants or views.
func.func @integers_and_copies(%i: tensor<4x6xi32>, %x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xi32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<2xf32>, tensor<24xf32>) {
  %f = graph.cast %i : tensor<4x6xi32> -> tensor<4x6xf32>
  %c = graph.constant dense<3> : tensor<i32>
  %a0 = graph.add %i, %c : tensor<4x6xi32>, tensor<i32> -> tensor<4x6xi32>
  %a = graph.relu %a0 : tensor<4x6xi32>
  %k = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %r = graph.reshape %x : tensor<4x6xf32> -> tensor<24xf32>
  func.return %f, %a, %x, %x, %k, %r : tensor<4x6xf32>, tensor<4x6xi32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<2xf32>, tensor<24xf32>
}

// -----

// Every vector-engine function, comparison and logic op in chains (each lowering in
// passes/graph_to_tile/table.py runs in some case; log of exp and reciprocal of exp stay finite).
func.func @vector_functions(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %row: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x1xf32>) {
  %0 = graph.neg %x : tensor<4x8xf32>
  %1 = graph.exp %0 : tensor<4x8xf32>
  %2 = graph.log %1 : tensor<4x8xf32>
  %3 = graph.reciprocal %1 : tensor<4x8xf32>
  %4 = graph.sigmoid %2 : tensor<4x8xf32>
  %5 = graph.erf %3 : tensor<4x8xf32>
  %6 = graph.max %4, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %7 = graph.min %6, %5 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %8 = graph.prelu %x, %row : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %c0 = graph.less %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  %c1 = graph.less_equal %x, %row : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  %c2 = graph.greater_equal %y, %row : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  %c3 = graph.equal %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  %b0 = graph.and %c0, %c1 : tensor<4x8xi1>, tensor<4x8xi1> -> tensor<4x8xi1>
  %b1 = graph.or %b0, %c2 : tensor<4x8xi1>, tensor<4x8xi1> -> tensor<4x8xi1>
  %b2 = graph.xor %b1, %c3 : tensor<4x8xi1>, tensor<4x8xi1> -> tensor<4x8xi1>
  %b3 = graph.not %b2 : tensor<4x8xi1>
  %w = graph.where %b3, %x, %y : tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %s = graph.reduce_sum %7 {axes = array<i64: 1>, keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
  func.return %7, %8, %w, %s : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// Fused attention as BERT has it: 2 heads of 8, one key mask row shared by all, scaled.
func.func @attention_shared_mask(%q: tensor<1x8x16xf32>, %k: tensor<1x8x16xf32>, %v: tensor<1x8x16xf32>, %m: tensor<1x1x1x8xf32>) -> tensor<1x8x16xf32> {
  %o = graph.attention %q, %k, %v, %m {heads = 2 : i64, scale = 0.35 : f64} : tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x1x1x8xf32> -> tensor<1x8x16xf32>
  func.return %o : tensor<1x8x16xf32>
}

// -----

// Two batches with a key mask each, 3 heads, fewer keys than queries and V heads of another width.
func.func @attention_batch_mask(%q: tensor<2x6x12xf32>, %k: tensor<2x5x12xf32>, %v: tensor<2x5x9xf32>, %m: tensor<2x1x1x5xf32>) -> tensor<2x6x9xf32> {
  %o = graph.attention %q, %k, %v, %m {heads = 3 : i64, scale = 0.5 : f64} : tensor<2x6x12xf32>, tensor<2x5x12xf32>, tensor<2x5x9xf32>, tensor<2x1x1x5xf32> -> tensor<2x6x9xf32>
  func.return %o : tensor<2x6x9xf32>
}

// -----

// A mask per head and query row (causal or relative-position biases), no scale.
func.func @attention_full_mask(%q: tensor<1x5x8xf32>, %k: tensor<1x7x8xf32>, %v: tensor<1x7x8xf32>, %m: tensor<1x2x5x7xf32>) -> tensor<1x5x8xf32> {
  %o = graph.attention %q, %k, %v, %m {heads = 2 : i64} : tensor<1x5x8xf32>, tensor<1x7x8xf32>, tensor<1x7x8xf32>, tensor<1x2x5x7xf32> -> tensor<1x5x8xf32>
  func.return %o : tensor<1x5x8xf32>
}

// -----

// 300 keys: on tiny no score row fits, so the online softmax runs over chunks of keys (with a
// remainder chunk), rescaling the running max, sum and output per chunk; edge keeps whole rows.
func.func @attention_long(%q: tensor<1x6x8xf32>, %k: tensor<1x300x8xf32>, %v: tensor<1x300x8xf32>, %m: tensor<1x1x1x300xf32>) -> tensor<1x6x8xf32> {
  %o = graph.attention %q, %k, %v, %m {heads = 1 : i64, scale = 0.25 : f64} : tensor<1x6x8xf32>, tensor<1x300x8xf32>, tensor<1x300x8xf32>, tensor<1x1x1x300xf32> -> tensor<1x6x8xf32>
  func.return %o : tensor<1x6x8xf32>
}

// -----

// Residual connections: a batched matmul with a bias whose only use adds a same-shape tensor
// fuses the add into its kernel; a residual that broadcasts (a row) stays its own kernel, as
// does the add of a matmul that has another use.
func.func @matmul_residual(%a: tensor<2x12x40xf32>, %b: tensor<40x24xf32>, %c: tensor<24xf32>, %r: tensor<2x12x24xf32>, %row: tensor<24xf32>) -> (tensor<2x12x24xf32>, tensor<2x12x24xf32>, tensor<2x12x24xf32>) {
  %y = graph.matmul %a, %b, %c : tensor<2x12x40xf32>, tensor<40x24xf32>, tensor<24xf32> -> tensor<2x12x24xf32>
  %z = graph.add %r, %y : tensor<2x12x24xf32>, tensor<2x12x24xf32> -> tensor<2x12x24xf32>
  %y2 = graph.matmul %a, %b : tensor<2x12x40xf32>, tensor<40x24xf32> -> tensor<2x12x24xf32>
  %z2 = graph.add %y2, %row : tensor<2x12x24xf32>, tensor<24xf32> -> tensor<2x12x24xf32>
  %y3 = graph.matmul %a, %b : tensor<2x12x40xf32>, tensor<40x24xf32> -> tensor<2x12x24xf32>
  %z3 = graph.add %y3, %y3 : tensor<2x12x24xf32>, tensor<2x12x24xf32> -> tensor<2x12x24xf32>
  func.return %z, %z2, %z3 : tensor<2x12x24xf32>, tensor<2x12x24xf32>, tensor<2x12x24xf32>
}

// -----

// A ResNet block's tail: conv (bias) + residual + relu fuses into the conv's kernel (padding,
// two blocks of rows); a conv + residual without the relu too; a grouped conv's add does not.
func.func @conv_residual(%x: tensor<1x4x10x10xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>, %r: tensor<1x6x10x10xf32>, %wg: tensor<6x2x3x3xf32>) -> (tensor<1x6x10x10xf32>, tensor<1x6x10x10xf32>, tensor<1x6x10x10xf32>) {
  %y = graph.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : tensor<1x4x10x10xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x10x10xf32>
  %s = graph.add %y, %r : tensor<1x6x10x10xf32>, tensor<1x6x10x10xf32> -> tensor<1x6x10x10xf32>
  %z = graph.relu %s : tensor<1x6x10x10xf32>
  %y2 = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x4x10x10xf32>, tensor<6x4x3x3xf32> -> tensor<1x6x10x10xf32>
  %z2 = graph.add %r, %y2 : tensor<1x6x10x10xf32>, tensor<1x6x10x10xf32> -> tensor<1x6x10x10xf32>
  %y3 = graph.conv %x, %wg {pads = array<i64: 1, 1, 1, 1>, group = 2 : i64} : tensor<1x4x10x10xf32>, tensor<6x2x3x3xf32> -> tensor<1x6x10x10xf32>
  %z3 = graph.add %y3, %r : tensor<1x6x10x10xf32>, tensor<1x6x10x10xf32> -> tensor<1x6x10x10xf32>
  func.return %z, %z2, %z3 : tensor<1x6x10x10xf32>, tensor<1x6x10x10xf32>, tensor<1x6x10x10xf32>
}

// -----

// Quantization on the vector engine: a relu fused into graph.quantize with a zero point (x /
// scale, clamp, round to i32, + zero point, saturate to i8), one without (round and saturate
// in one cast), and graph.dequantize with a zero point and a scale per column, and without.
func.func @quantize_dequantize(%x: tensor<6x20xf32>, %q: tensor<6x20xi8>) -> (tensor<6x20xi8>, tensor<6x20xi8>, tensor<6x20xf32>, tensor<6x20xf32>) {
  %r = graph.relu %x : tensor<6x20xf32>
  %s = graph.constant dense<0.0125> : tensor<f32>
  %z = graph.constant dense<-7> : tensor<i8>
  %a = graph.quantize %r, %s, %z : tensor<6x20xf32>, tensor<f32>, tensor<i8> -> tensor<6x20xi8>
  %z0 = graph.constant dense<0> : tensor<1x1xi8>
  %b = graph.quantize %x, %s, %z0 : tensor<6x20xf32>, tensor<f32>, tensor<1x1xi8> -> tensor<6x20xi8>
  %cols = graph.constant dense<[0.5, 0.25, 2.0, 1.0, 0.5, 0.25, 2.0, 1.0, 0.5, 0.25, 2.0, 1.0, 0.5, 0.25, 2.0, 1.0, 0.5, 0.25, 2.0, 1.0]> : tensor<20xf32>
  %c = graph.dequantize %q, %cols, %z : tensor<6x20xi8>, tensor<20xf32>, tensor<i8> -> tensor<6x20xf32>
  %d = graph.dequantize %q, %s, %z0 : tensor<6x20xi8>, tensor<f32>, tensor<1x1xi8> -> tensor<6x20xf32>
  func.return %a, %b, %c, %d : tensor<6x20xi8>, tensor<6x20xi8>, tensor<6x20xf32>, tensor<6x20xf32>
}

// -----

// i8 x i8 -> i32 on the matrix engine (K in several steps on tiny), scaled back to f32.
func.func @int8_matmul(%a: tensor<12x80xi8>, %b: tensor<80x24xi8>) -> (tensor<12x24xi32>, tensor<12x24xf32>) {
  %y = graph.matmul %a, %b : tensor<12x80xi8>, tensor<80x24xi8> -> tensor<12x24xi32>
  %s = graph.constant dense<0.001> : tensor<f32>
  %z = graph.constant dense<0> : tensor<i32>
  %f = graph.dequantize %y, %s, %z : tensor<12x24xi32>, tensor<f32>, tensor<i32> -> tensor<12x24xf32>
  func.return %y, %f : tensor<12x24xi32>, tensor<12x24xf32>
}

// -----

// int8 matmuls whose dequantize, bias, activation and requantize run in the matmul's epilogue
// (epilogue.py): a scale per column and a zero-point correction row; K of 200 (several steps
// on tiny, summed in ACC or in SRAM) and a batched lhs; the second ends in f32 with a residual
// (a tensor of the product's shape, loaded per output tile).
func.func @int8_epilogues(%a: tensor<2x10x200xi8>, %b: tensor<200x40xi8>, %c: tensor<10x40xi8>, %d: tensor<40x8xi8>, %e: tensor<10x8xf32>) -> (tensor<2x10x40xi8>, tensor<10x8xf32>) {
  %p = graph.matmul %a, %b : tensor<2x10x200xi8>, tensor<200x40xi8> -> tensor<2x10x40xi32>
  %cols = graph.constant dense<[0.001, 0.002, 0.0005, 0.001, 0.001, 0.002, 0.0005, 0.001, 0.001, 0.002, 0.0005, 0.001, 0.001, 0.002, 0.0005, 0.001, 0.001, 0.002, 0.0005, 0.001, 0.001, 0.002, 0.0005, 0.001, 0.001, 0.002, 0.0005, 0.001, 0.001, 0.002, 0.0005, 0.001, 0.001, 0.002, 0.0005, 0.001, 0.001, 0.002, 0.0005, 0.001]> : tensor<40xf32>
  %z = graph.constant dense<0> : tensor<i32>
  %y = graph.dequantize %p, %cols, %z : tensor<2x10x40xi32>, tensor<40xf32>, tensor<i32> -> tensor<2x10x40xf32>
  %bias = graph.constant dense<[0.5, -0.5, 1.0, -1.0, 0.25, -0.25, 2.0, -2.0, 0.5, -0.5, 1.0, -1.0, 0.25, -0.25, 2.0, -2.0, 0.5, -0.5, 1.0, -1.0, 0.5, -0.5, 1.0, -1.0, 0.25, -0.25, 2.0, -2.0, 0.5, -0.5, 1.0, -1.0, 0.25, -0.25, 2.0, -2.0, 0.5, -0.5, 1.0, -1.0]> : tensor<40xf32>
  %h0 = graph.add %y, %bias : tensor<2x10x40xf32>, tensor<40xf32> -> tensor<2x10x40xf32>
  %h = graph.relu %h0 : tensor<2x10x40xf32>
  %s = graph.constant dense<0.02> : tensor<f32>
  %zq = graph.constant dense<-100> : tensor<i8>
  %q = graph.quantize %h, %s, %zq : tensor<2x10x40xf32>, tensor<f32>, tensor<i8> -> tensor<2x10x40xi8>
  %r = graph.matmul %c, %d : tensor<10x40xi8>, tensor<40x8xi8> -> tensor<10x8xi32>
  %s2 = graph.constant dense<0.0025> : tensor<f32>
  %f = graph.dequantize %r, %s2, %z : tensor<10x8xi32>, tensor<f32>, tensor<i32> -> tensor<10x8xf32>
  %t0 = graph.tanh %f : tensor<10x8xf32>
  %t = graph.add %t0, %e : tensor<10x8xf32>, tensor<10x8xf32> -> tensor<10x8xf32>
  func.return %q, %t : tensor<2x10x40xi8>, tensor<10x8xf32>
}
