// RUN: aitc-opt %s --split-input-file -p graph-polyphase-conv | filecheck %s
// RUN: aitc-opt %s --split-input-file -p graph-polyphase-conv --print-debuginfo | filecheck %s --check-prefix=LOC

// ResNet's stride-2 3x3 conv (pad 1) on 16 channels: along each dim, the even input pixels
// meet the middle tap, the odd ones the outer two (the first of them in the padding). Four
// phase convs of 1x1, 1x2, 2x1 and 2x2 taps read four strided slices; the first carries the
// bias; adds sum them, the relu follows the sum; all at the conv's location.
func.func @downsample(%x: tensor<1x16x8x8xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x4xf32> {
  %w = graph.constant dense<1.0> : tensor<4x16x3x3xf32>
  %y = graph.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, activation = "relu"} : tensor<1x16x8x8xf32>, tensor<4x16x3x3xf32>, tensor<4xf32> -> tensor<1x4x4x4xf32> loc("/layer2.0/conv1/Conv")
  func.return %y : tensor<1x4x4x4xf32>
}
// CHECK-LABEL: func.func @downsample
// CHECK:         %y_phase0_input = graph.slice %x {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 2, 2>} : tensor<1x16x8x8xf32> -> tensor<1x16x4x4xf32>
// CHECK-NEXT:    %y_phase0_weight = graph.constant {{.*}} : tensor<4x16x1x1xf32>
// CHECK-NEXT:    %y_phase0 = graph.conv %y_phase0_input, %y_phase0_weight, %b : tensor<1x16x4x4xf32>, tensor<4x16x1x1xf32>, tensor<4xf32> -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %y_phase1_input = graph.slice %x {starts = array<i64: 0, 0, 0, 1>, steps = array<i64: 1, 1, 2, 2>} : tensor<1x16x8x8xf32> -> tensor<1x16x4x4xf32>
// CHECK-NEXT:    %y_phase1_weight = graph.constant {{.*}} : tensor<4x16x1x2xf32>
// CHECK-NEXT:    %y_phase1 = graph.conv %y_phase1_input, %y_phase1_weight {pads = array<i64: 0, 1, 0, 0>} : tensor<1x16x4x4xf32>, tensor<4x16x1x2xf32> -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %y_sum1 = graph.add %y_phase1, %y_phase0
// CHECK-NEXT:    %y_phase2_input = graph.slice %x {starts = array<i64: 0, 0, 1, 0>, steps = array<i64: 1, 1, 2, 2>}
// CHECK-NEXT:    %y_phase2_weight = graph.constant {{.*}} : tensor<4x16x2x1xf32>
// CHECK-NEXT:    %y_phase2 = graph.conv %y_phase2_input, %y_phase2_weight {pads = array<i64: 1, 0, 0, 0>}
// CHECK-NEXT:    %y_sum2 = graph.add %y_phase2, %y_sum1
// CHECK-NEXT:    %y_phase3_input = graph.slice %x {starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 2, 2>}
// CHECK-NEXT:    %y_phase3_weight = graph.constant {{.*}} : tensor<4x16x2x2xf32>
// CHECK-NEXT:    %y_phase3 = graph.conv %y_phase3_input, %y_phase3_weight {pads = array<i64: 1, 1, 0, 0>}
// CHECK-NEXT:    %y_sum3 = graph.add %y_phase3, %y_sum2
// CHECK-NEXT:    %y = graph.relu %y_sum3 : tensor<1x4x4x4xf32>
// CHECK-NEXT:    func.return %y
// LOC-LABEL: func.func @downsample
// LOC-COUNT-4: graph.conv {{.*}} loc("/layer2.0/conv1/Conv")
// LOC:         graph.relu {{.*}} loc("/layer2.0/conv1/Conv")

// -----

// A 1x1 conv of stride 2 reads phase 0 only: one slice and one conv, bias and activation kept.
func.func @shortcut(%x: tensor<1x16x6x6xf32>) -> tensor<1x8x3x3xf32> {
  %w = graph.constant dense<0.5> : tensor<8x16x1x1xf32>
  %y = graph.conv %x, %w {strides = array<i64: 2, 2>} : tensor<1x16x6x6xf32>, tensor<8x16x1x1xf32> -> tensor<1x8x3x3xf32>
  func.return %y : tensor<1x8x3x3xf32>
}
// CHECK-LABEL: func.func @shortcut
// CHECK:         %y_phase0_input = graph.slice %x {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 2, 2>} : tensor<1x16x6x6xf32> -> tensor<1x16x3x3xf32>
// CHECK-NEXT:    %y_phase0_weight = graph.constant {{.*}} : tensor<8x16x1x1xf32>
// CHECK-NEXT:    %y = graph.conv %y_phase0_input, %y_phase0_weight : tensor<1x16x3x3xf32>, tensor<8x16x1x1xf32> -> tensor<1x8x3x3xf32>
// CHECK-NEXT:    func.return %y

// -----

// Kept: a 3-channel stem (fewer than 16 input channels per group), and a stride-1 conv.
func.func @kept(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x8x8xf32>) {
  %s = graph.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x4x4xf32>
  %t = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x8x8xf32>
  func.return %s, %t : tensor<1x4x4x4xf32>, tensor<1x4x8x8xf32>
}
// CHECK-LABEL: func.func @kept
// CHECK-NOT:     graph.slice
// CHECK:         graph.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>}
// CHECK-NEXT:    graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>}

// -----

// A 3-channel stem (7x7, stride 2, pad 3) has too few channels for phase convs: its 4 phases
// are stacked along the channels (space-to-depth: 12 channels of 8 x 8) and one 4x4 conv,
// pads 2 before and 1 after, reads them; the weight holds each tap at its phase's channels.
func.func @stem(%x: tensor<1x3x16x16xf32>, %b: tensor<8xf32>) -> tensor<1x8x8x8xf32> {
  %w = graph.constant dense<1.0> : tensor<8x3x7x7xf32>
  %y = graph.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>, activation = "relu"} : tensor<1x3x16x16xf32>, tensor<8x3x7x7xf32>, tensor<8xf32> -> tensor<1x8x8x8xf32> loc("/conv1/Conv")
  func.return %y : tensor<1x8x8x8xf32>
}
// CHECK-LABEL: func.func @stem
// CHECK:         %w = graph.constant
// CHECK-NEXT:    %y_phases_split = graph.reshape %x : tensor<1x3x16x16xf32> -> tensor<1x3x8x2x8x2xf32>
// CHECK-NEXT:    %y_phases_first = graph.transpose %y_phases_split {perm = array<i64: 0, 3, 5, 1, 2, 4>} : tensor<1x3x8x2x8x2xf32> -> tensor<1x2x2x3x8x8xf32>
// CHECK-NEXT:    %y_stacked_input = graph.reshape %y_phases_first : tensor<1x2x2x3x8x8xf32> -> tensor<1x12x8x8xf32>
// CHECK-NEXT:    %y_stacked_weight = graph.constant {{.*}} : tensor<8x12x4x4xf32>
// CHECK-NEXT:    %y = graph.conv %y_stacked_input, %y_stacked_weight, %b {activation = "relu", pads = array<i64: 2, 2, 1, 1>} : tensor<1x12x8x8xf32>, tensor<8x12x4x4xf32>, tensor<8xf32> -> tensor<1x8x8x8xf32>
// CHECK-NEXT:    func.return %y
// LOC-LABEL: func.func @stem
// LOC:         graph.transpose {{.*}} loc("/conv1/Conv")
// LOC:         graph.conv {{.*}} loc("/conv1/Conv")
