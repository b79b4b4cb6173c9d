// RUN: aitc-opt %s -p 'convert-graph-to-tile{target=edge}' | filecheck %s
// RUN: aitc-opt %s -p 'convert-graph-to-tile{target=edge},multi-buffer{target=edge}' | filecheck %s --check-prefix=MB

// A 1x1 conv of 1024 channels into 256 on 14 x 14 (ResNet-50's layer3 reduction). With the
// accumulator within half of ACC (64 KiB) a block holds at most 64 KiB of sums and the weights
// stream once per block of positions. Blocks of 8 x 14 positions of all 256 output channels
// take a 256 x 112 f32 accumulator (112 KiB, over half of the 128 KiB ACC): multi-buffer
// cannot double it, so each block's products wait for the previous block's epilogue to read it
// (charged in the estimate), but its chunk loop loads a trip's patch and weight tiles side by
// side on both queues (charged too): 3.1 MB of DRAM traffic, 85,236 cycles simulated, where one
// block of all 196 positions and 128 channels moved 2.9 MB in 96,023. The cost model picks it
// and the reason says why; multi-buffer still doubles the SRAM tiles and leaves one accumulator.
func.func @conv1x1_single_acc(%x: tensor<1x1024x14x14xf32>, %w: tensor<256x1024x1x1xf32>) -> tensor<1x256x14x14xf32> {
  %y = graph.conv %x, %w : tensor<1x1024x14x14xf32>, tensor<256x1024x1x1xf32> -> tensor<1x256x14x14xf32> loc("/layer3/conv1")
  func.return %y : tensor<1x256x14x14xf32>
}
// CHECK-LABEL: func.func @conv1x1_single_acc
// CHECK:         tile.kernel "/layer3/conv1" {op = "graph.conv", tiles = array<i64: 8, 14, 32, 256>, dma_bytes = 3100672 : i64, est_cycles = {{[0-9]+}} : i64, sram_bytes = {{[0-9]+}} : i64, acc_bytes = 114688 : i64, reason = "{{.*}}blocks of 8 x 14 outputs{{.*}}; accumulators of 112 KiB, over half of ACC, so not double-buffered (each tile's products wait for the previous tile's epilogue to read them); fewest est. cycles
// CHECK:           tile.alloc : memref<256x112xf32, "acc">
// CHECK-NOT:       tile.alloc {{.*}} "acc">
// CHECK:           tile.acc_read
// MB-LABEL:    func.func @conv1x1_single_acc
// MB-COUNT-2:      tile.alloc : memref<32x8x14xf32, "sram">
// MB-COUNT-2:      tile.alloc : memref<256x32xf32, "sram">
// MB-NEXT:         tile.alloc : memref<256x112xf32, "acc">
// MB-NOT:          tile.alloc {{.*}} "acc">
// MB:              buffer_depth = 2
