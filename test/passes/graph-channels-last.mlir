// RUN: aitc-opt %s --split-input-file -p "graph-channels-last{layout=nhwc target=edge}" | filecheck %s
// RUN: aitc-opt %s --split-input-file -p "graph-channels-last{layout=nchw target=edge}" | filecheck %s --check-prefix=NCHW
// RUN: aitc-opt %s --split-input-file -p "graph-channels-last{target=edge}" | filecheck %s --check-prefix=AUTO
// RUN: not aitc-opt %s --split-input-file -p "graph-channels-last{layout=nhcw target=edge}" 2>&1 | filecheck %s --check-prefix=BAD

// BAD: error: graph-channels-last: layout must be one of auto, nchw, nhwc, got 'nhcw'

// A residual block: two convs, a relu between them, the residual add of the block's input and a
// relu after it form one region. Its input is transposed once (for the first conv and the add),
// its result once back; the convs are channels_last, the weights keep their layout.
func.func @block(%x: tensor<1x64x28x28xf32>) -> tensor<1x64x28x28xf32> {
  %w1 = graph.constant dense<0.01> : tensor<64x64x3x3xf32>
  %w2 = graph.constant dense<0.02> : tensor<64x64x3x3xf32>
  %a = graph.conv %x, %w1 {pads = array<i64: 1, 1, 1, 1>, activation = "relu"} : tensor<1x64x28x28xf32>, tensor<64x64x3x3xf32> -> tensor<1x64x28x28xf32>
  %b = graph.conv %a, %w2 {pads = array<i64: 1, 1, 1, 1>} : tensor<1x64x28x28xf32>, tensor<64x64x3x3xf32> -> tensor<1x64x28x28xf32>
  %c = graph.add %b, %x : tensor<1x64x28x28xf32>, tensor<1x64x28x28xf32> -> tensor<1x64x28x28xf32>
  %y = graph.relu %c : tensor<1x64x28x28xf32>
  func.return %y : tensor<1x64x28x28xf32>
}
// CHECK-LABEL: func.func @block
// CHECK:         %x_nhwc = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : tensor<1x64x28x28xf32> -> tensor<1x28x28x64xf32>
// CHECK-NEXT:    %a_nhwc = graph.conv %x_nhwc, %w1 {pads = array<i64: 1, 1, 1, 1>, activation = "relu", channels_last} : tensor<1x28x28x64xf32>, tensor<64x64x3x3xf32> -> tensor<1x28x28x64xf32>
// CHECK-NEXT:    %b_nhwc = graph.conv %a_nhwc, %w2 {pads = array<i64: 1, 1, 1, 1>, channels_last} : tensor<1x28x28x64xf32>, tensor<64x64x3x3xf32> -> tensor<1x28x28x64xf32>
// CHECK-NEXT:    %c_nhwc = graph.add %b_nhwc, %x_nhwc : tensor<1x28x28x64xf32>, tensor<1x28x28x64xf32> -> tensor<1x28x28x64xf32>
// CHECK-NEXT:    %y_nhwc = graph.relu %c_nhwc : tensor<1x28x28x64xf32>
// CHECK-NEXT:    %y = graph.transpose %y_nhwc {perm = array<i64: 0, 3, 1, 2>} : tensor<1x28x28x64xf32> -> tensor<1x64x28x28xf32>
// CHECK-NEXT:    func.return %y
// NCHW-LABEL: func.func @block
// NCHW-NOT:     graph.transpose
// NCHW-NOT:     channels_last
// AUTO-LABEL: func.func @block
// AUTO-COUNT-2: channels_last

// -----

// What the channels-last lowering cannot take keeps its layout: a strided conv (graph-polyphase-conv
// makes it stride-1 phase convs first), a grouped one, one whose weight is computed, a 1-D one.
func.func @kept(%x: tensor<1x8x9x9xf32>, %w: tensor<8x8x3x3xf32>, %s: tensor<1x8x9xf32>) -> (tensor<1x8x5x5xf32>, tensor<1x8x9x9xf32>, tensor<1x8x9x9xf32>, tensor<1x8x9xf32>) {
  %c = graph.constant dense<0.01> : tensor<8x8x3x3xf32>
  %g = graph.constant dense<0.01> : tensor<8x4x3x3xf32>
  %k = graph.constant dense<0.01> : tensor<8x8x3xf32>
  %strided = graph.conv %x, %c {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x9x9xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x5x5xf32>
  %grouped = graph.conv %x, %g {group = 2 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x9x9xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x9x9xf32>
  %computed = graph.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x9x9xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x9x9xf32>
  %one_d = graph.conv %s, %k {pads = array<i64: 1, 1>} : tensor<1x8x9xf32>, tensor<8x8x3xf32> -> tensor<1x8x9xf32>
  func.return %strided, %grouped, %computed, %one_d : tensor<1x8x5x5xf32>, tensor<1x8x9x9xf32>, tensor<1x8x9x9xf32>, tensor<1x8x9xf32>
}
// CHECK-LABEL: func.func @kept
// CHECK-NOT:     graph.transpose
// CHECK-NOT:     channels_last
// CHECK:         func.return
