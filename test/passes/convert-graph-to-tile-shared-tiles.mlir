// RUN: aitc-opt %s -p 'convert-graph-to-tile{target=tiny}' | filecheck %s

// A 128x32 @ 32x32 matmul on tiny (4x4 engine, 8 KiB SRAM, 1 KiB ACC), as blocks of 64 x 24
// summed in SRAM over K steps of 8 with the 32 x 24 rhs panel kept. Its two ACC tiles (1 KiB
// each) take all of ACC: they are not double-buffered, the matrix and vector engines take
// turns on them, and the reason says so. The first and the last K step's tiles of their own
// do not fit beside the block and its rotated copies: only the last step keeps its own (loaded
// before the loop), the first step loads into the tile the loop's steps load (multi-buffer
// gives it the rotated copy the loop's first trip does not use). Executed at every level, down
// to the simulator: test/python/passes/graph_to_tile/test_matmul_levels.py.
func.func @matmul(%x: tensor<128x32xf32> {graph.name = "x"}, %w: tensor<32x32xf32> {graph.name = "w"}) -> (tensor<128x32xf32> {graph.name = "y"}) {
  %y = graph.matmul %x, %w : tensor<128x32xf32>, tensor<32x32xf32> -> tensor<128x32xf32> loc("/fc/MatMul")
  func.return %y : tensor<128x32xf32>
}
// CHECK:      tile.kernel "/fc/MatMul" {op = "graph.matmul", tiles = array<i64: 64, 8, 4>, block = array<i64: 64, 24>, {{.*}}acc_bytes = 2048 : i64, reason = "{{.*}}; ACC tiles of 2 KiB, over half of ACC, so not double-buffered (the matrix and vector engines take turns on them); the first K step loads into the rotated tiles (SRAM holds no tiles of its own for it)"
// CHECK:        scf.for %[[M:[a-z0-9_]+]] =
// CHECK-NEXT:     tile.copy %x[%[[M]], %{{.*}}] to %[[A:[a-z0-9_]+]][{{.*}}] sizes [64, 8]
// CHECK:          tile.copy %x[%[[M]], %{{.*}}] to %[[LAST:[a-z0-9_]+]][{{.*}}] sizes [64, 8]
// CHECK-NEXT:     scf.for %[[K:[a-z0-9_]+]] =
// CHECK-NEXT:       tile.copy %x[%[[M]], %[[K]]] to %[[A]][{{.*}}] sizes [64, 8]
// CHECK:          tile.matmul %[[LAST]][
