// RUN: aitc-opt %s -p 'convert-graph-to-tile{target=edge},multi-buffer,plan-memory,convert-tile-to-sync' | filecheck %s

// A 128x384 @ 384x384 projection (MiniLM's) keeps its 128 x 384 lhs panel in SRAM. The panel
// is the kernel's fill: nothing computes before it is in. It loads as two copies of 64 rows
// (`matmul_costs.panel_parts`: the kernel's only panel, each part long against the DMA
// latency), which convert-tile-to-sync puts on different queues (the parts of one load
// balance among themselves), so the panel takes half the time before the first matmul.
func.func @projection(%x: tensor<128x384xf32> {graph.name = "x"}, %w: tensor<384x384xf32> {graph.name = "w"}) -> (tensor<128x384xf32> {graph.name = "y"}) {
  %y = graph.matmul %x, %w : tensor<128x384xf32>, tensor<384x384xf32> -> tensor<128x384xf32> loc("/q/MatMul")
  func.return %y : tensor<128x384xf32>
}
// CHECK:     tile.kernel "/q/MatMul" {{.*}}keeps the lhs row panel in SRAM
// CHECK-DAG: tile.copy %x[%{{.*}}, %{{.*}}] to %[[P:[a-z0-9_]+]][%{{.*}}, %{{.*}}] sizes [64, 384] {sync.engine = "dma0"}
// CHECK-DAG: tile.copy %x[%{{.*}}, %{{.*}}] to %[[P]][%{{.*}}, %{{.*}}] sizes [64, 384] {sync.engine = "dma1"}
// CHECK:     tile.matmul
