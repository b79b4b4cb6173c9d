// RUN: aitc-opt %s --split-input-file -p graph-canonicalize | filecheck %s

// A reshape to the operand's own type is dropped.
func.func @reshape_same_type(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = graph.reshape %x : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @reshape_same_type
// CHECK-NEXT:    func.return %x : tensor<2x3xf32>

// -----

// reshape(reshape(x)) is one reshape of x; the inner one, now dead, is erased.
func.func @reshape_chain(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %a = graph.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  %b = graph.reshape %a : tensor<6xf32> -> tensor<3x2xf32>
  func.return %b : tensor<3x2xf32>
}
// CHECK-LABEL: func.func @reshape_chain
// CHECK-NEXT:    %b = graph.reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %b

// -----

// A reshape chain that returns to the original type disappears entirely.
func.func @reshape_round_trip(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = graph.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  %b = graph.reshape %a : tensor<6xf32> -> tensor<2x3xf32>
  func.return %b : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-NEXT:    func.return %x

// -----

// The inner reshape stays when it has another use; the outer one still reads x directly.
func.func @reshape_chain_multi_use(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<6xf32>) {
  %a = graph.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  %b = graph.reshape %a : tensor<6xf32> -> tensor<3x2xf32>
  func.return %b, %a : tensor<3x2xf32>, tensor<6xf32>
}
// CHECK-LABEL: func.func @reshape_chain_multi_use
// CHECK-NEXT:    %a = graph.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
// CHECK-NEXT:    %b = graph.reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %b, %a

// -----

// A transpose with the identity permutation is dropped.
func.func @transpose_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %t = graph.transpose %x {perm = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %t : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @transpose_identity
// CHECK-NEXT:    func.return %x

// -----

// Two transposes that undo each other disappear.
func.func @transpose_inverse_pair(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %a = graph.transpose %x {perm = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %b = graph.transpose %a {perm = array<i64: 2, 0, 1>} : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
  func.return %b : tensor<2x3x4xf32>
}
// CHECK-LABEL: func.func @transpose_inverse_pair
// CHECK-NEXT:    func.return %x

// -----

// Two transposes compose into one: result dim i is x dim inner[outer[i]].
func.func @transpose_compose(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %a = graph.transpose %x {perm = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %b = graph.transpose %a {perm = array<i64: 1, 0, 2>} : tensor<3x4x2xf32> -> tensor<4x3x2xf32>
  func.return %b : tensor<4x3x2xf32>
}
// CHECK-LABEL: func.func @transpose_compose
// CHECK-NEXT:    %b = graph.transpose %x {perm = array<i64: 2, 1, 0>} : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
// CHECK-NEXT:    func.return %b

// -----

// x + 0, 0 + x, x - 0, x * 1, 1 * x and x / 1 all become x.
func.func @neutral_elements(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %zero = graph.constant dense<0.0> : tensor<3xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %a = graph.add %x, %zero : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %b = graph.add %zero, %a : tensor<3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %c = graph.sub %b, %zero : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %d = graph.mul %c, %one : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %e = graph.mul %one, %d : tensor<f32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %f = graph.div %e, %one : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  func.return %f : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @neutral_elements
// CHECK-NEXT:    func.return %x

// -----

// Negative: 0 - x, 1 / x, x * 2 and an add whose zero widens x by broadcasting all stay.
func.func @not_neutral(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3xf32>) {
  %zero = graph.constant dense<0.0> : tensor<3xf32>
  %one = graph.constant dense<1.0> : tensor<3xf32>
  %two = graph.constant dense<2.0> : tensor<3xf32>
  %wide = graph.constant dense<0.0> : tensor<2x3xf32>
  %a = graph.sub %zero, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %b = graph.div %one, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %c = graph.mul %x, %two : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %d = graph.add %x, %wide : tensor<3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %a, %b, %c, %d : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3xf32>
}
// CHECK-LABEL: func.func @not_neutral
// CHECK:         %a = graph.sub %zero, %x
// CHECK-NEXT:    %b = graph.div %one, %x
// CHECK-NEXT:    %c = graph.mul %x, %two
// CHECK-NEXT:    %d = graph.add %x, %wide

// -----

// A slice that keeps everything, a broadcast to the same shape, a one-input concat and a
// cast to the same type are dropped.
func.func @data_movement_no_ops(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = graph.slice %x {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %b = graph.broadcast %a : tensor<2x3xf32> -> tensor<2x3xf32>
  %c = graph.concat %b {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %d = graph.cast %c : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %d : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @data_movement_no_ops
// CHECK-NEXT:    func.return %x

// -----

// Negative: a partial slice and a reversing slice (step -1) are real work.
func.func @slices_kept(%x: tensor<4xf32>) -> (tensor<2xf32>, tensor<4xf32>) {
  %a = graph.slice %x {starts = array<i64: 1>, steps = array<i64: 1>} : tensor<4xf32> -> tensor<2xf32>
  %b = graph.slice %x {starts = array<i64: 3>, steps = array<i64: -1>} : tensor<4xf32> -> tensor<4xf32>
  func.return %a, %b : tensor<2xf32>, tensor<4xf32>
}
// CHECK-LABEL: func.func @slices_kept
// CHECK-NEXT:    %a = graph.slice
// CHECK-NEXT:    %b = graph.slice

// -----

// Widening casts squash: i8 -> i32 -> f32 is i8 -> f32; f16 -> f32 -> f16 is x itself.
func.func @cast_chains_lossless(%x: tensor<4xi8>, %h: tensor<4xf16>) -> (tensor<4xf32>, tensor<4xf16>) {
  %a = graph.cast %x : tensor<4xi8> -> tensor<4xi32>
  %b = graph.cast %a : tensor<4xi32> -> tensor<4xf32>
  %c = graph.cast %h : tensor<4xf16> -> tensor<4xf32>
  %d = graph.cast %c : tensor<4xf32> -> tensor<4xf16>
  func.return %b, %d : tensor<4xf32>, tensor<4xf16>
}
// CHECK-LABEL: func.func @cast_chains_lossless
// CHECK-NEXT:    %b = graph.cast %x : tensor<4xi8> -> tensor<4xf32>
// CHECK-NEXT:    func.return %b, %h

// -----

// Negative: a narrowing middle type (f32 -> i32 truncates, i64 -> i8 wraps) keeps both casts.
func.func @cast_chains_lossy(%x: tensor<4xf32>, %y: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi64>) {
  %a = graph.cast %x : tensor<4xf32> -> tensor<4xi32>
  %b = graph.cast %a : tensor<4xi32> -> tensor<4xf32>
  %c = graph.cast %y : tensor<4xi64> -> tensor<4xi8>
  %d = graph.cast %c : tensor<4xi8> -> tensor<4xi64>
  func.return %b, %d : tensor<4xf32>, tensor<4xi64>
}
// CHECK-LABEL: func.func @cast_chains_lossy
// CHECK-NEXT:    %a = graph.cast %x : tensor<4xf32> -> tensor<4xi32>
// CHECK-NEXT:    %b = graph.cast %a : tensor<4xi32> -> tensor<4xf32>
// CHECK-NEXT:    %c = graph.cast %y : tensor<4xi64> -> tensor<4xi8>
// CHECK-NEXT:    %d = graph.cast %c : tensor<4xi8> -> tensor<4xi64>

// -----

// Dead pure graph ops are erased.
func.func @dead_ops(%x: tensor<3xf32>) -> tensor<3xf32> {
  %unused = graph.relu %x : tensor<3xf32>
  %c = graph.constant dense<1.0> : tensor<3xf32>
  func.return %x : tensor<3xf32>
}
// CHECK-LABEL: func.func @dead_ops
// CHECK-NEXT:    func.return %x
