// RUN: aitc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One verifier failure per case (trait order is not deterministic, so a case never breaks two
// rules). xDSL has no expected-error: each case checks the printed message. A CHECK-LABEL on
// the separator line printed between chunks pins each message to its own chunk, so a case
// that unexpectedly verifies fails the test instead of matching a later case's message.

// The custom syntax takes the type from the value; the generic form can disagree with it.
%0 = "graph.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<3xf32>
// CHECK:       Operation does not verify: value type tensor<2xf32> differs from result type tensor<3xf32>

// -----

// A constant without a value has nothing to produce.
%0 = "graph.constant"() : () -> tensor<3xf32>
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: graph.constant needs a 'value' attribute

// -----

// Transcendental unary ops are float-only.
func.func @exp_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  %0 = graph.exp %x : tensor<4xi32>
  func.return %0 : tensor<4xi32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: graph.exp needs a float tensor

// -----

// Unary ops keep the operand type; only the generic form can state another one.
func.func @unary_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  %0 = "graph.relu"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  func.return %0 : tensor<4xf16>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result 'output' at position 0 does not verify:
// CHECK-NEXT:  | attribute tensor<4xf32> expected from variable 'T', but got tensor<4xf16>

// -----

// Logical not is defined on i1 only.
func.func @not_float(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.not %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: graph.not needs an i1 tensor

// -----

// leaky_relu has no default slope.
func.func @leaky_relu_no_alpha(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.leaky_relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: graph.leaky_relu needs the 'alpha' attribute

// -----

// selu needs both alpha and gamma.
func.func @selu_no_gamma(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.selu %x {alpha = 1.67 : f64} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: graph.selu needs the 'gamma' attribute

// -----

// gelu knows only the exact form and the tanh approximation.
func.func @gelu_mode(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.gelu %x {approximate = "fast"} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: approximate must be 'none' or 'tanh', got 'fast'

// -----

// graph IR is statically shaped, also for ops that would not need the shape.
func.func @unary_dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  %0 = graph.relu %x : tensor<?xf32>
  func.return %0 : tensor<?xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: graph ops need static shapes, got tensor<?xf32>

// -----

// Trailing dims 3 and 4 do not broadcast.
func.func @broadcast_mismatch(%x: tensor<2x3xf32>, %y: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = graph.add %x, %y : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: shapes [2, 3] and [4] do not broadcast

// -----

// The result type must be the broadcast of the operands, not one of them.
func.func @binary_result(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  %0 = graph.mul %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result type tensor<3xf32> should be tensor<2x3xf32> (broadcast of the operands)

// -----

// Binary operands share one element type: no implicit promotion.
func.func @binary_elem(%x: tensor<3xf32>, %y: tensor<3xf16>) -> tensor<3xf32> {
  %0 = graph.sub %x, %y : tensor<3xf32>, tensor<3xf16> -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: operand element types differ: f32 vs f16

// -----

// Logical ops take i1 operands.
func.func @and_float(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = graph.and %x, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: graph.and needs i1 operands

// -----

// pow is float-only.
func.func @pow_int(%x: tensor<3xi32>) -> tensor<3xi32> {
  %0 = graph.pow %x, %x : tensor<3xi32>, tensor<3xi32> -> tensor<3xi32>
  func.return %0 : tensor<3xi32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: graph.pow needs float operands

// -----

// Comparisons produce i1.
func.func @compare_result(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = graph.less %x, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result type tensor<3xf32> should be tensor<3xi1> (broadcast of the operands)

// -----

// mod has two modes: the C remainder (fmod) and the floored one.
func.func @mod_mode(%x: tensor<3xi32>) -> tensor<3xi32> {
  %0 = graph.mod %x, %x {mode = "trunc"} : tensor<3xi32>, tensor<3xi32> -> tensor<3xi32>
  func.return %0 : tensor<3xi32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: mode must be 'fmod' or 'floor', got 'trunc'

// -----

// The where condition must be i1.
func.func @where_cond(%c: tensor<3xi8>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = graph.where %c, %x, %x : tensor<3xi8>, tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: the condition must be an i1 tensor

// -----

// Both where branches need one element type.
func.func @where_branches(%c: tensor<3xi1>, %x: tensor<3xf32>, %y: tensor<3xf16>) -> tensor<3xf32> {
  %0 = graph.where %c, %x, %y : tensor<3xi1>, tensor<3xf32>, tensor<3xf16> -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: both branches need the same element type

// -----

// where broadcasts all three operands: the result here is too small.
func.func @where_result(%c: tensor<2x1xi1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = graph.where %c, %x, %x : tensor<2x1xi1>, tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result type should be tensor<2x3xf32>

// -----

// cast changes the element type only.
func.func @cast_shape(%x: tensor<4xi64>) -> tensor<2x2xf32> {
  %0 = graph.cast %x : tensor<4xi64> -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: cast keeps the shape

// -----

// The contraction dims (K) must agree.
func.func @matmul_k(%a: tensor<4x8xf32>, %b: tensor<6x5xf32>) -> tensor<4x5xf32> {
  %0 = graph.matmul %a, %b : tensor<4x8xf32>, tensor<6x5xf32> -> tensor<4x5xf32>
  func.return %0 : tensor<4x5xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: contraction dims differ: 4x8 @ 6x5

// -----

// A 1-D rhs drops the N dim: 4x8 @ 8 is 4, not 4x1.
func.func @matmul_1d_result(%a: tensor<4x8xf32>, %v: tensor<8xf32>) -> tensor<4x1xf32> {
  %0 = graph.matmul %a, %v : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x1xf32>
  func.return %0 : tensor<4x1xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result type should be tensor<4xf32>

// -----

// Batch dims broadcast like elementwise operands; 2 and 3 do not.
func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x5xf32>) -> tensor<3x4x5xf32> {
  %0 = graph.matmul %a, %b : tensor<2x4x8xf32>, tensor<3x8x5xf32> -> tensor<3x4x5xf32>
  func.return %0 : tensor<3x4x5xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: shapes [2] and [3] do not broadcast

// -----

// matmul has no scalar form.
func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = graph.matmul %a, %b : tensor<f32>, tensor<8xf32> -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: matmul operands must have rank >= 1

// -----

// matmul operands share one element type.
func.func @matmul_elem(%a: tensor<4x8xf32>, %b: tensor<8x5xf16>) -> tensor<4x5xf32> {
  %0 = graph.matmul %a, %b : tensor<4x8xf32>, tensor<8x5xf16> -> tensor<4x5xf32>
  func.return %0 : tensor<4x5xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: matmul operands need one element type

// -----

// The bias has one value per output column (N = 5), not per row.
func.func @matmul_bias(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>, %c: tensor<4xf32>) -> tensor<4x5xf32> {
  %0 = graph.matmul %a, %b, %c : tensor<4x8xf32>, tensor<8x5xf32>, tensor<4xf32> -> tensor<4x5xf32>
  func.return %0 : tensor<4x5xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: bias must be tensor<5xf32>, one value per output column

// -----

// The bias has the element type of the product.
func.func @matmul_bias_elem(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>, %c: tensor<5xf16>) -> tensor<4x5xf32> {
  %0 = graph.matmul %a, %b, %c : tensor<4x8xf32>, tensor<8x5xf32>, tensor<5xf16> -> tensor<4x5xf32>
  func.return %0 : tensor<4x5xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: bias must be tensor<5xf32>, one value per output column

// -----

// Only the listed activations can be fused.
func.func @matmul_activation(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>) -> tensor<4x5xf32> {
  %0 = graph.matmul %a, %b {activation = "swish"} : tensor<4x8xf32>, tensor<8x5xf32> -> tensor<4x5xf32>
  func.return %0 : tensor<4x5xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: unknown fused activation 'swish', expected one of relu, sigmoid, tanh, gelu, gelu_tanh, relu6

// -----

// The group count must divide the input channels (6 % 4 != 0).
func.func @conv_group(%x: tensor<1x6x8x8xf32>, %w: tensor<8x2x3x3xf32>) -> tensor<1x8x6x6xf32> {
  %0 = graph.conv %x, %w {group = 4 : i64} : tensor<1x6x8x8xf32>, tensor<8x2x3x3xf32> -> tensor<1x8x6x6xf32>
  func.return %0 : tensor<1x8x6x6xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: group 4 must divide C_in 6 and C_out 8

// -----

// The weight's C_in/group (4) times group (1) must equal the input channels (3).
func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> {
  %0 = graph.conv %x, %w : tensor<1x3x8x8xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x6x6xf32>
  func.return %0 : tensor<1x8x6x6xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: weight expects 4 input channels, input has 3

// -----

// Channels last, the input's channels are its last dim (3), not dim 1 (8).
func.func @conv_channels_last_channels(%x: tensor<1x8x8x3xf32>, %w: tensor<8x8x3x3xf32>) -> tensor<1x6x6x8xf32> {
  %0 = graph.conv %x, %w {channels_last} : tensor<1x8x8x3xf32>, tensor<8x8x3x3xf32> -> tensor<1x6x6x8xf32>
  func.return %0 : tensor<1x6x6x8xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: weight expects 8 input channels, input has 3

// -----

// Channels last, the result is N x OH x OW x C_out.
func.func @conv_channels_last_result(%x: tensor<1x8x8x3xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32> {
  %0 = graph.conv %x, %w {channels_last} : tensor<1x8x8x3xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x6x6xf32>
  func.return %0 : tensor<1x8x6x6xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result type should be tensor<1x6x6x8xf32>

// -----

// The weight has the rank of the input.
func.func @conv_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<8x3x3xf32>) -> tensor<1x8x6x6xf32> {
  %0 = graph.conv %x, %w : tensor<1x3x8x8xf32>, tensor<8x3x3xf32> -> tensor<1x8x6x6xf32>
  func.return %0 : tensor<1x8x6x6xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: conv needs N x C x spatial input and a weight of the same rank

// -----

// pads lists begins then ends: 2-D needs 4 values.
func.func @conv_pads_length(%x: tensor<1x3x8x8xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32> {
  %0 = graph.conv %x, %w {pads = array<i64: 1, 1>} : tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x8x8xf32>
  func.return %0 : tensor<1x8x8x8xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: pads needs 4 values (begins, then ends)

// -----

// strides need one value per spatial dim.
func.func @conv_strides_length(%x: tensor<1x3x8x8xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x3x3xf32> {
  %0 = graph.conv %x, %w {strides = array<i64: 2>} : tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x3x3xf32>
  func.return %0 : tensor<1x8x3x3xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: strides/dilations need 2 values

// -----

// A zero stride never advances.
func.func @conv_zero_stride(%x: tensor<1x3x8x8xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32> {
  %0 = graph.conv %x, %w {strides = array<i64: 0, 1>} : tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x6x6xf32>
  func.return %0 : tensor<1x8x6x6xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: strides and dilations must be > 0

// -----

// Conv pads are non-negative (cropping is a slice).
func.func @conv_negative_pads(%x: tensor<1x3x8x8xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32> {
  %0 = graph.conv %x, %w {pads = array<i64: -1, 0, 1, 0>} : tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x6x6xf32>
  func.return %0 : tensor<1x8x6x6xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: pads must be >= 0

// -----

// A dilated 3x3 window spans 5 and does not fit a 4x4 input.
func.func @conv_window(%x: tensor<1x3x4x4xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x1x1xf32> {
  %0 = graph.conv %x, %w {dilations = array<i64: 2, 2>} : tensor<1x3x4x4xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x1x1xf32>
  func.return %0 : tensor<1x8x1x1xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: window 3 (dilation 2) exceeds spatial dim 0: size 4, padded by 0

// -----

// The result type is inferred from strides/pads/dilations: 8x8, 3x3, pad 1 gives 8x8.
func.func @conv_result(%x: tensor<1x3x8x8xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32> {
  %0 = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x6x6xf32>
  func.return %0 : tensor<1x8x6x6xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result type should be tensor<1x8x8x8xf32>

// -----

// The conv bias has one value per output channel.
func.func @conv_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x8x6x6xf32> {
  %0 = graph.conv %x, %w, %b : tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>, tensor<3xf32> -> tensor<1x8x6x6xf32>
  func.return %0 : tensor<1x8x6x6xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: bias must be tensor<8xf32>, one value per output channel

// -----

// The conv bias has the element type of the input.
func.func @conv_bias_elem(%x: tensor<1x3x8x8xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xi32>) -> tensor<1x8x6x6xf32> {
  %0 = graph.conv %x, %w, %b : tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>, tensor<8xi32> -> tensor<1x8x6x6xf32>
  func.return %0 : tensor<1x8x6x6xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: bias must be tensor<8xf32>, one value per output channel

// -----

// Input and weight share one element type.
func.func @conv_elem(%x: tensor<1x3x8x8xf32>, %w: tensor<8x3x3x3xf16>) -> tensor<1x8x6x6xf32> {
  %0 = graph.conv %x, %w : tensor<1x3x8x8xf32>, tensor<8x3x3x3xf16> -> tensor<1x8x6x6xf32>
  func.return %0 : tensor<1x8x6x6xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: input and weight need one element type

// -----

// conv fuses the same activations as matmul.
func.func @conv_activation(%x: tensor<1x3x8x8xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32> {
  %0 = graph.conv %x, %w {activation = "mish"} : tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x6x6xf32>
  func.return %0 : tensor<1x8x6x6xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: unknown fused activation 'mish', expected one of relu, sigmoid, tanh, gelu, gelu_tanh, relu6

// -----

// Integer-list options are array<i64: ...>; a float array would be silently truncated.
func.func @conv_float_strides(%x: tensor<1x3x8x8xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32> {
  %0 = graph.conv %x, %w {strides = array<f32: 1.5, 1.0>} : tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x6x6xf32>
  func.return %0 : tensor<1x8x6x6xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: integer-list attributes must be array<i64: ...>, got array<f32: 1.500000e+00, 1.000000e+00>

// -----

// Pooling needs a kernel_shape with one value per spatial dim.
func.func @pool_kernel(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32> {
  %0 = graph.max_pool %x {kernel_shape = array<i64: 2>} : tensor<1x2x8x8xf32> -> tensor<1x2x4x4xf32>
  func.return %0 : tensor<1x2x4x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: kernel_shape needs 2 values

// -----

// A kernel of size 0 has no elements to pool.
func.func @pool_kernel_zero(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x9x8xf32> {
  %0 = graph.avg_pool %x {kernel_shape = array<i64: 0, 1>} : tensor<1x2x8x8xf32> -> tensor<1x2x9x8xf32>
  func.return %0 : tensor<1x2x9x8xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: kernel_shape values must be > 0

// -----

// Pooling works on N x C x spatial tensors.
func.func @pool_rank(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = graph.max_pool %x {kernel_shape = array<i64>} : tensor<2x8xf32> -> tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: pooling needs an N x C x spatial input

// -----

// With ceil_mode, a 5-wide dim pooled 2 by 2 gives 3, not 2.
func.func @pool_ceil_result(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x2x2xf32> {
  %0 = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode} : tensor<1x2x5x5xf32> -> tensor<1x2x2x2xf32>
  func.return %0 : tensor<1x2x2x2xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result type should be tensor<1x2x3x3xf32>

// -----

// Without ceil_mode, the same pooling gives 2, not 3.
func.func @pool_floor_result(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %0 = graph.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x2x5x5xf32> -> tensor<1x2x3x3xf32>
  func.return %0 : tensor<1x2x3x3xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result type should be tensor<1x2x2x2xf32>

// -----

// batch_norm's statistics are per channel (C = 16).
func.func @batch_norm_channels(%x: tensor<1x16x4x4xf32>, %c: tensor<16xf32>, %d: tensor<8xf32>) -> tensor<1x16x4x4xf32> {
  %0 = graph.batch_norm %x, %c, %c, %d, %c : tensor<1x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<16xf32> -> tensor<1x16x4x4xf32>
  func.return %0 : tensor<1x16x4x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: per-channel operands must be tensor<16xf32>, got tensor<8xf32>

// -----

// batch_norm keeps the input type.
func.func @batch_norm_result(%x: tensor<1x16x4x4xf32>, %c: tensor<16xf32>) -> tensor<1x16x4x4xf16> {
  %0 = graph.batch_norm %x, %c, %c, %c, %c : tensor<1x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<1x16x4x4xf16>
  func.return %0 : tensor<1x16x4x4xf16>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result type must equal the input type

// -----

// The per-channel statistics have the input's element type.
func.func @batch_norm_elem(%x: tensor<1x16x4x4xf32>, %c: tensor<16xf32>, %d: tensor<16xf16>) -> tensor<1x16x4x4xf32> {
  %0 = graph.batch_norm %x, %c, %c, %c, %d : tensor<1x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf16> -> tensor<1x16x4x4xf32>
  func.return %0 : tensor<1x16x4x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: per-channel operands must be tensor<16xf32>, got tensor<16xf16>

// -----

// The layer_norm scale must broadcast to the normalised dims (384), not to the sequence (128).
func.func @layer_norm_scale(%x: tensor<1x128x384xf32>, %g: tensor<128xf32>) -> tensor<1x128x384xf32> {
  %0 = graph.layer_norm %x, %g {axis = -1 : i64} : tensor<1x128x384xf32>, tensor<128xf32> -> tensor<1x128x384xf32>
  func.return %0 : tensor<1x128x384xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: scale/bias 128 must broadcast to the normalised dims 384

// -----

// The layer_norm bias obeys the same rule as the scale.
func.func @layer_norm_bias(%x: tensor<1x128x384xf32>, %g: tensor<384xf32>, %b: tensor<2x384xf32>) -> tensor<1x128x384xf32> {
  %0 = graph.layer_norm %x, %g, %b : tensor<1x128x384xf32>, tensor<384xf32>, tensor<2x384xf32> -> tensor<1x128x384xf32>
  func.return %0 : tensor<1x128x384xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: scale/bias 2x384 must broadcast to the normalised dims 384

// -----

// The layer_norm scale has the element type of the input.
func.func @layer_norm_scale_elem(%x: tensor<4x8xf32>, %g: tensor<8xf16>) -> tensor<4x8xf32> {
  %0 = graph.layer_norm %x, %g : tensor<4x8xf32>, tensor<8xf16> -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: scale/bias need the element type of the input

// -----

// layer_norm is float-only.
func.func @layer_norm_int(%x: tensor<4x8xi32>, %g: tensor<8xi32>) -> tensor<4x8xi32> {
  %0 = graph.layer_norm %x, %g : tensor<4x8xi32>, tensor<8xi32> -> tensor<4x8xi32>
  func.return %0 : tensor<4x8xi32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: layer_norm needs a float tensor

// -----

// The layer_norm axis is in [-rank, rank).
func.func @layer_norm_axis(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = graph.layer_norm %x, %g {axis = 2 : i64} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: axis 2 is out of range for rank 2

// -----

// layer_norm keeps the input type.
func.func @layer_norm_result(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<8x4xf32> {
  %0 = graph.layer_norm %x, %g : tensor<4x8xf32>, tensor<8xf32> -> tensor<8x4xf32>
  func.return %0 : tensor<8x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result type must equal the input type

// -----

// The softmax axis is in [-rank, rank).
func.func @softmax_axis(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %0 = graph.softmax %x {axis = -3 : i64} : tensor<4x10xf32>
  func.return %0 : tensor<4x10xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: axis -3 is out of range for rank 2

// -----

// softmax is float-only.
func.func @log_softmax_int(%x: tensor<4x10xi32>) -> tensor<4x10xi32> {
  %0 = graph.log_softmax %x {axis = 1 : i64} : tensor<4x10xi32>
  func.return %0 : tensor<4x10xi32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: graph.log_softmax needs a float tensor

// -----

// Reduction axes are non-negative and below the rank.
func.func @reduce_axis_range(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = graph.reduce_sum %x {axes = array<i64: 2>} : tensor<4x8xf32> -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: axes [2] out of range for rank 2

// -----

// Negative axes are normalised by the frontend, never stored.
func.func @reduce_axis_negative(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = graph.reduce_max %x {axes = array<i64: -1>} : tensor<4x8xf32> -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: axes [-1] out of range for rank 2

// -----

// Reduction axes are sorted and unique (one spelling per reduction).
func.func @reduce_axes_unsorted(%x: tensor<4x8x2xf32>) -> tensor<8xf32> {
  %0 = graph.reduce_mean %x {axes = array<i64: 2, 0>} : tensor<4x8x2xf32> -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: axes must be sorted and unique

// -----

// keepdims keeps the reduced dim as size 1.
func.func @reduce_keepdims(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = graph.reduce_min %x {axes = array<i64: 1>, keepdims} : tensor<4x8xf32> -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result shape should be 4x1

// -----

// Reductions keep the element type.
func.func @reduce_elem(%x: tensor<4x8xf32>) -> tensor<4xf16> {
  %0 = graph.reduce_prod %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf16>
  func.return %0 : tensor<4xf16>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result element type should be f32

// -----

// argmax reduces exactly one axis.
func.func @argmax_axes(%x: tensor<4x8xf32>) -> tensor<i64> {
  %0 = graph.argmax %x {axes = array<i64: 0, 1>} : tensor<4x8xf32> -> tensor<i64>
  func.return %0 : tensor<i64>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: graph.argmax reduces exactly one axis

// -----

// arg-reductions return i64 indices.
func.func @argmin_elem(%x: tensor<4x8xf32>) -> tensor<4xi32> {
  %0 = graph.argmin %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xi32>
  func.return %0 : tensor<4xi32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result element type should be i64

// -----

// reshape keeps the element count (24 vs 25).
func.func @reshape_count(%x: tensor<2x3x4xf32>) -> tensor<5x5xf32> {
  %0 = graph.reshape %x : tensor<2x3x4xf32> -> tensor<5x5xf32>
  func.return %0 : tensor<5x5xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: reshape changes the element count: 24 -> 25

// -----

// reshape keeps the element type.
func.func @reshape_elem(%x: tensor<2x3xf32>) -> tensor<6xi32> {
  %0 = graph.reshape %x : tensor<2x3xf32> -> tensor<6xi32>
  func.return %0 : tensor<6xi32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: reshape keeps the element type

// -----

// A perm with a repeated dim is not a permutation.
func.func @transpose_perm(%x: tensor<2x3x4xf32>) -> tensor<2x2x4xf32> {
  %0 = graph.transpose %x {perm = array<i64: 0, 0, 2>} : tensor<2x3x4xf32> -> tensor<2x2x4xf32>
  func.return %0 : tensor<2x2x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: perm [0, 0, 2] is not a permutation of rank 3

// -----

// perm has one entry per dim.
func.func @transpose_perm_length(%x: tensor<2x3x4xf32>) -> tensor<3x2x4xf32> {
  %0 = graph.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  func.return %0 : tensor<3x2x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: perm [1, 0] is not a permutation of rank 3

// -----

// The result shape is the permuted input shape.
func.func @transpose_result(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = graph.transpose %x {perm = array<i64: 2, 1, 0>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result type should be tensor<4x3x2xf32>

// -----

// Concatenated tensors agree outside the axis.
func.func @concat_mismatch(%a: tensor<1x8xf32>, %b: tensor<2x4xf32>) -> tensor<1x12xf32> {
  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x8xf32>, tensor<2x4xf32>) -> tensor<1x12xf32>
  func.return %0 : tensor<1x12xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: 2x4 and 1x8 differ outside axis 1

// -----

// The concat axis is non-negative and below the rank.
func.func @concat_axis(%a: tensor<1x8xf32>) -> tensor<1x8xf32> {
  %0 = graph.concat %a, %a {axis = 2 : i64} : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
  func.return %0 : tensor<1x8xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: axis 2 out of range for rank 2

// -----

// Concatenated tensors share one element type.
func.func @concat_elem(%a: tensor<1x8xf32>, %b: tensor<1x8xf16>) -> tensor<2x8xf32> {
  %0 = graph.concat %a, %b : (tensor<1x8xf32>, tensor<1x8xf16>) -> tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: concat inputs need one element type

// -----

// The result size along the axis is the sum of the inputs' (8 + 4).
func.func @concat_result(%a: tensor<1x8xf32>, %b: tensor<1x4xf32>) -> tensor<1x8xf32> {
  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x8xf32>, tensor<1x4xf32>) -> tensor<1x8xf32>
  func.return %0 : tensor<1x8xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result shape should be 1x12

// -----

// concat of nothing has no shape to take.
%0 = "graph.concat"() {axis = 0 : i64} : () -> tensor<1xf32>
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: concat needs at least one input

// -----

// 2 + 3 * 3 = 11 lies past a dim of 10.
func.func @slice_range(%x: tensor<4x10xf32>) -> tensor<4x4xf32> {
  %0 = graph.slice %x {starts = array<i64: 0, 2>, steps = array<i64: 1, 3>} : tensor<4x10xf32> -> tensor<4x4xf32>
  func.return %0 : tensor<4x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: start 2, step 3, count 4: indices 2..11 leave [0, 10)

// -----

// A negative start is normalised by the frontend, never stored.
func.func @slice_negative_start(%x: tensor<4x10xf32>) -> tensor<1x10xf32> {
  %0 = graph.slice %x {starts = array<i64: -1, 0>} : tensor<4x10xf32> -> tensor<1x10xf32>
  func.return %0 : tensor<1x10xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: start -1, step 1, count 1: indices -1..-1 leave [0, 4)

// -----

// A zero step never advances.
func.func @slice_step(%x: tensor<4x10xf32>) -> tensor<4x1xf32> {
  %0 = graph.slice %x {steps = array<i64: 1, 0>} : tensor<4x10xf32> -> tensor<4x1xf32>
  func.return %0 : tensor<4x1xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: steps must be non-zero

// -----

// starts has one value per dim.
func.func @slice_starts_length(%x: tensor<4x10xf32>) -> tensor<4x4xf32> {
  %0 = graph.slice %x {starts = array<i64: 0>} : tensor<4x10xf32> -> tensor<4x4xf32>
  func.return %0 : tensor<4x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: starts/steps need one value per dim

// -----

// slice keeps the element type.
func.func @slice_elem(%x: tensor<4x10xf32>) -> tensor<4x10xf16> {
  %0 = graph.slice %x : tensor<4x10xf32> -> tensor<4x10xf16>
  func.return %0 : tensor<4x10xf16>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: slice keeps the element type

// -----

// The split pieces must add up to the input along the axis (4 + 4 + 4 != 10).
func.func @split_sizes(%x: tensor<2x10xf32>) -> tensor<2x4xf32> {
  %a, %b, %c = graph.split %x {axis = 1 : i64} : tensor<2x10xf32> -> tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  func.return %a : tensor<2x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: pieces sum to 12 along axis 1, input has 10

// -----

// Split pieces match the input outside the axis.
func.func @split_other_dims(%x: tensor<2x10xf32>) -> tensor<2x5xf32> {
  %a, %b = graph.split %x {axis = 1 : i64} : tensor<2x10xf32> -> tensor<2x5xf32>, tensor<3x5xf32>
  func.return %a : tensor<2x5xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: split pieces must match the input outside the axis

// -----

// The split axis is non-negative and below the rank.
func.func @split_axis(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  %a = graph.split %x {axis = 2 : i64} : tensor<2x10xf32> -> tensor<2x10xf32>
  func.return %a : tensor<2x10xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: axis 2 out of range for rank 2

// -----

// Split pieces keep the element type.
func.func @split_elem(%x: tensor<2x10xf32>) -> tensor<2x5xf32> {
  %a, %b = graph.split %x {axis = 1 : i64} : tensor<2x10xf32> -> tensor<2x5xf32>, tensor<2x5xf16>
  func.return %a : tensor<2x5xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: split pieces keep the element type

// -----

// broadcast only expands size-1 dims.
func.func @broadcast_to(%x: tensor<2x128xf32>) -> tensor<4x128xf32> {
  %0 = graph.broadcast %x : tensor<2x128xf32> -> tensor<4x128xf32>
  func.return %0 : tensor<4x128xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: 2x128 does not broadcast to 4x128

// -----

// broadcast keeps the element type.
func.func @broadcast_elem(%x: tensor<1x4xf32>) -> tensor<2x4xi32> {
  %0 = graph.broadcast %x : tensor<1x4xf32> -> tensor<2x4xi32>
  func.return %0 : tensor<2x4xi32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: broadcast keeps the element type

// -----

// tile needs one repeat count per dim.
func.func @tile_repeats(%x: tensor<3x4xf32>) -> tensor<6x4xf32> {
  %0 = graph.tile %x {repeats = array<i64: 2>} : tensor<3x4xf32> -> tensor<6x4xf32>
  func.return %0 : tensor<6x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: repeats needs one value >= 0 per dim

// -----

// The tile result is dims times repeats (3*2 = 6, not 5).
func.func @tile_result(%x: tensor<3x4xf32>) -> tensor<5x4xf32> {
  %0 = graph.tile %x {repeats = array<i64: 2, 1>} : tensor<3x4xf32> -> tensor<5x4xf32>
  func.return %0 : tensor<5x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result shape should be 6x4

// -----

// tile keeps the element type.
func.func @tile_elem(%x: tensor<3x4xf32>) -> tensor<6x4xf16> {
  %0 = graph.tile %x {repeats = array<i64: 2, 1>} : tensor<3x4xf32> -> tensor<6x4xf16>
  func.return %0 : tensor<6x4xf16>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: tile keeps the element type

// -----

// pad lists begins then ends: 2 dims need 4 values.
func.func @pad_length(%x: tensor<2x3xf32>) -> tensor<2x5xf32> {
  %0 = graph.pad %x {pads = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: pads needs 4 values

// -----

// Pad modes are constant, reflect and edge.
func.func @pad_mode(%x: tensor<2x3xf32>) -> tensor<2x5xf32> {
  %0 = graph.pad %x {pads = array<i64: 0, 1, 0, 1>, mode = "wrap"} : tensor<2x3xf32> -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: unknown pad mode 'wrap'

// -----

// The pad result grows by begin + end per dim.
func.func @pad_result(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %0 = graph.pad %x {pads = array<i64: 0, 1, 0, 1>} : tensor<2x3xf32> -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result shape should be 2x5

// -----

// Negative pads crop, but not below size 0.
func.func @pad_crop(%x: tensor<2x3xf32>) -> tensor<2x0xf32> {
  %0 = graph.pad %x {pads = array<i64: 0, -2, 0, -2>} : tensor<2x3xf32> -> tensor<2x0xf32>
  func.return %0 : tensor<2x0xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: negative pads remove more than the dim holds

// -----

// pad keeps the element type.
func.func @pad_elem(%x: tensor<2x3xf32>) -> tensor<2x5xf16> {
  %0 = graph.pad %x {pads = array<i64: 0, 1, 0, 1>} : tensor<2x3xf32> -> tensor<2x5xf16>
  func.return %0 : tensor<2x5xf16>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: pad keeps the element type

// -----

// gather indices are integers.
func.func @gather_float_indices(%t: tensor<10x4xf32>, %i: tensor<3xf32>) -> tensor<3x4xf32> {
  %0 = graph.gather %t, %i : tensor<10x4xf32>, tensor<3xf32> -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: indices must be an integer tensor (not i1), got tensor<3xf32>

// -----

// i1 is not an index type.
func.func @gather_bool_indices(%t: tensor<10x4xf32>, %i: tensor<3xi1>) -> tensor<3x4xf32> {
  %0 = graph.gather %t, %i : tensor<10x4xf32>, tensor<3xi1> -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: indices must be an integer tensor (not i1), got tensor<3xi1>

// -----

// The gather axis is non-negative and below the rank.
func.func @gather_axis(%t: tensor<10x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  %0 = graph.gather %t, %i {axis = 2 : i64} : tensor<10x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: axis 2 out of range for rank 2

// -----

// The gathered dim is replaced by the indices' shape (axis 1: 10x3, not 3x4).
func.func @gather_result(%t: tensor<10x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  %0 = graph.gather %t, %i {axis = 1 : i64} : tensor<10x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result type should be tensor<10x3xf32>

// -----

// gather_nd indices are integers, not i1.
func.func @gather_nd_bool_indices(%x: tensor<4x5xf32>, %i: tensor<3x1xi1>) -> tensor<3x5xf32> {
  %0 = graph.gather_nd %x, %i : tensor<4x5xf32>, tensor<3x1xi1> -> tensor<3x5xf32>
  func.return %0 : tensor<3x5xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: indices must be an integer tensor (not i1), got tensor<3x1xi1>

// -----

// batch_dims must leave at least one dim of each operand (here indices has rank 2).
func.func @gather_nd_batch_dims_rank(%x: tensor<2x3x4xf32>, %i: tensor<2x1xi64>) -> tensor<2x4xf32> {
  %0 = graph.gather_nd %x, %i {batch_dims = 2 : i64} : tensor<2x3x4xf32>, tensor<2x1xi64> -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: batch_dims 2 must be in [0, min(rank(input), rank(indices)) = 2)

// -----

// batch_dims is not negative.
func.func @gather_nd_batch_dims_negative(%x: tensor<2x3xf32>, %i: tensor<2x1xi64>) -> tensor<2xf32> {
  %0 = graph.gather_nd %x, %i {batch_dims = -1 : i64} : tensor<2x3xf32>, tensor<2x1xi64> -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: batch_dims -1 must be in [0, min(rank(input), rank(indices)) = 2)

// -----

// The leading batch_dims dims of input and indices are shared.
func.func @gather_nd_batch_mismatch(%x: tensor<2x3x4xf32>, %i: tensor<3x1xi64>) -> tensor<3x4xf32> {
  %0 = graph.gather_nd %x, %i {batch_dims = 1 : i64} : tensor<2x3x4xf32>, tensor<3x1xi64> -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: batch dims differ: input 2, indices 3

// -----

// Each index row addresses at most rank(input) - batch_dims dims.
func.func @gather_nd_row_too_long(%x: tensor<2x3xf32>, %i: tensor<4x3xi64>) -> tensor<4xf32> {
  %0 = graph.gather_nd %x, %i : tensor<2x3xf32>, tensor<4x3xi64> -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: indices' last dim 3 must be in [1, 2] (rank(input) - batch_dims)

// -----

// An empty index row (k = 0) is not allowed by ONNX.
func.func @gather_nd_empty_row(%x: tensor<2x3xf32>, %i: tensor<4x0xi64>) -> tensor<4x2x3xf32> {
  %0 = graph.gather_nd %x, %i : tensor<2x3xf32>, tensor<4x0xi64> -> tensor<4x2x3xf32>
  func.return %0 : tensor<4x2x3xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: indices' last dim 0 must be in [1, 2] (rank(input) - batch_dims)

// -----

// The result is indices[:-1] + input[batch_dims+k:] (here 2x64, not 2x16x64).
func.func @gather_nd_result(%x: tensor<2x16x64xf32>, %i: tensor<2x2xi64>) -> tensor<2x16x64xf32> {
  %0 = graph.gather_nd %x, %i : tensor<2x16x64xf32>, tensor<2x2xi64> -> tensor<2x16x64xf32>
  func.return %0 : tensor<2x16x64xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result type should be tensor<2x64xf32>

// -----

// graph IR is statically shaped: a dynamic dim is rejected with a clear message.
func.func @dynamic_dim(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>) -> tensor<?x8xf32> {
  %0 = graph.matmul %x, %w : tensor<?x4xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  func.return %0 : tensor<?x8xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: graph ops need static shapes, got tensor<?x4xf32>

// -----

// Three heads do not divide 64 features.
%q, %k, %v = "test.op"() : () -> (tensor<1x4x64xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>)
%0 = graph.attention %q, %k, %v {heads = 3 : i64} : tensor<1x4x64xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32> -> tensor<1x4x64xf32>
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: attention: 3 heads do not divide q's 64 and v's 64 features

// -----

// K and V disagree on the number of keys.
%q, %k, %v = "test.op"() : () -> (tensor<1x4x64xf32>, tensor<1x4x64xf32>, tensor<1x5x64xf32>)
%0 = graph.attention %q, %k, %v {heads = 2 : i64} : tensor<1x4x64xf32>, tensor<1x4x64xf32>, tensor<1x5x64xf32> -> tensor<1x4x64xf32>
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: attention: q, k, v need one batch, k and v one length

// -----

// A mask per key and head, but over 3 heads where there are 2.
%q, %k, %v, %m = "test.op"() : () -> (tensor<1x4x64xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>, tensor<1x3x1x4xf32>)
%0 = graph.attention %q, %k, %v, %m {heads = 2 : i64} : tensor<1x4x64xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>, tensor<1x3x1x4xf32> -> tensor<1x4x64xf32>
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: attention: mask 1x3x1x4 must be [B or 1, H or 1, S or 1, S'] = 1x2x4x4

// -----

// graph.quantize makes the zero point's integer type.
func.func @quantize_type(%x: tensor<4xf32>, %s: tensor<f32>, %z: tensor<i8>) -> tensor<4xi16> {
  %0 = "graph.quantize"(%x, %s, %z) : (tensor<4xf32>, tensor<f32>, tensor<i8>) -> tensor<4xi16>
  func.return %0 : tensor<4xi16>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: graph.quantize: the zero point must be i16

// -----

// A scale per channel must have the channel's size.
func.func @quantize_scale(%x: tensor<2x3xf32>, %s: tensor<1x2xf32>, %z: tensor<i8>) -> tensor<2x3xi8> {
  %0 = graph.quantize %x, %s, %z : tensor<2x3xf32>, tensor<1x2xf32>, tensor<i8> -> tensor<2x3xi8>
  func.return %0 : tensor<2x3xi8>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: graph.quantize: the scale must broadcast to the input

// -----

// graph.dequantize takes an integer tensor.
func.func @dequantize_float(%x: tensor<4xf32>, %s: tensor<f32>, %z: tensor<f32>) -> tensor<4xf32> {
  %0 = graph.dequantize %x, %s, %z : tensor<4xf32>, tensor<f32>, tensor<f32> -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: graph.dequantize: the quantized type must be one of i8, ui8, i16, ui16, i32, got f32

// -----

// An int8 matmul has an i32 result and no bias.
func.func @int8_matmul_bias(%a: tensor<2x4xi8>, %b: tensor<4x3xi8>, %c: tensor<3xi8>) -> tensor<2x3xi32> {
  %0 = "graph.matmul"(%a, %b, %c) : (tensor<2x4xi8>, tensor<4x3xi8>, tensor<3xi8>) -> tensor<2x3xi32>
  func.return %0 : tensor<2x3xi32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: an i8 matmul has no bias or activation

// -----

// An int8 conv has an i32 result and an i32 bias.
func.func @int8_conv_bias(%x: tensor<1x2x4x4xi8>, %w: tensor<3x2x1x1xi8>, %b: tensor<3xi8>) -> tensor<1x3x4x4xi32> {
  %0 = graph.conv %x, %w, %b : tensor<1x2x4x4xi8>, tensor<3x2x1x1xi8>, tensor<3xi8> -> tensor<1x3x4x4xi32>
  func.return %0 : tensor<1x3x4x4xi32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: bias must be tensor<3xi32>, one value per output channel

// -----

// An int8 conv has no fused activation.
func.func @int8_conv_activation(%x: tensor<1x2x4x4xi8>, %w: tensor<3x2x1x1xi8>) -> tensor<1x3x4x4xi32> {
  %0 = graph.conv %x, %w {activation = "relu"} : tensor<1x2x4x4xi8>, tensor<3x2x1x1xi8> -> tensor<1x3x4x4xi32>
  func.return %0 : tensor<1x3x4x4xi32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: an i8 conv has no activation

// -----

// An input zero point belongs to an int8 conv.
func.func @float_conv_zero(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32> {
  %0 = graph.conv %x, %w {input_zero = 3 : i64} : tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32> -> tensor<1x3x4x4xf32>
  func.return %0 : tensor<1x3x4x4xf32>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: input_zero 3 needs an i8 conv and must fit i8

// -----

// The result of an int8 conv is i32.
func.func @int8_conv_result(%x: tensor<1x2x4x4xi8>, %w: tensor<3x2x1x1xi8>) -> tensor<1x3x4x4xi8> {
  %0 = graph.conv %x, %w : tensor<1x2x4x4xi8>, tensor<3x2x1x1xi8> -> tensor<1x3x4x4xi8>
  func.return %0 : tensor<1x3x4x4xi8>
}
// CHECK-LABEL: {{^}}// {{-+}}
// CHECK:       Operation does not verify: result type should be tensor<1x3x4x4xi32>
