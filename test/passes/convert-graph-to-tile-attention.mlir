// RUN: aitc-opt %s --split-input-file -p 'convert-graph-to-tile{target=edge}' | filecheck %s
// RUN: aitc-opt %s --split-input-file -p 'convert-graph-to-tile{target=tiny}' | filecheck %s --check-prefix=TINY

// Two heads of 8 with one key-mask row for everything, on edge: one kernel; the mask row is
// loaded once; per head (an scf.for) K and V are column windows of the packed projections
// (no transpose: QK^T is a tile.matmul {transpose_rhs}), Q is scaled, the mask row is added to
// the scores in ACC by the matrix engine (a column of ones, filled once, times the mask row:
// k = 1, accumulated), the row max reads them in ACC and the subtraction brings them to SRAM,
// where exp and the row sum run; the product with V is normalised by the row sums and stored
// into the head's columns of the output.
func.func @attention(%q: tensor<1x8x16xf32> {graph.name = "q"}, %k: tensor<1x8x16xf32> {graph.name = "k"}, %v: tensor<1x8x16xf32> {graph.name = "v"}, %m: tensor<1x1x1x8xf32> {graph.name = "mask"}) -> (tensor<1x8x16xf32> {graph.name = "out"}) {
  %out = graph.attention %q, %k, %v, %m {heads = 2 : i64, scale = 0.25 : f64} : tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x1x1x8xf32> -> tensor<1x8x16xf32> loc("/attention/Softmax")
  func.return %out : tensor<1x8x16xf32>
}
// CHECK-LABEL: func.func @attention
// CHECK:         %[[Q:[0-9]+]] = tile.reshape %q : memref<1x8x16xf32, "dram"> -> memref<8x16xf32, "dram">
// CHECK:         %[[M:[0-9]+]] = tile.reshape %mask : memref<1x1x1x8xf32, "dram"> -> memref<1x8xf32, "dram">
// CHECK-NEXT:    tile.kernel "/attention/Softmax" {op = "graph.attention", tiles = array<i64: 8, 8>, {{.*}} reason = "fused attention, 2 head(s) of 8: 8 query row(s) per tile, whole key rows (8) per head{{.*}}", est_fill_drain = array<i64: {{[0-9]+, [0-9]+, [0-9]+, [0-9]+}}>}
// CHECK:           tile.binary_imm %[[ONES:[0-9]+]][{{.*}}] to %[[ONES]][{{.*}}] sizes [8, 1] {op = "add", imm = 1.000000e+00 : f64}
// CHECK:           tile.copy %[[M]][%{{.*}}] to %[[MT:[0-9]+]][%{{.*}}] sizes [1, 8]
// CHECK-NEXT:      scf.for %[[H:[0-9]+]] =
// CHECK-NEXT:        %[[COL:[0-9]+]] = arith.muli %[[H]], %{{.*}} : index
// CHECK-NEXT:        tile.copy %{{[0-9]+}}[%{{[0-9]+}}, %[[COL]]] to %[[K:[0-9]+]][{{.*}}] sizes [8, 8]
// CHECK-NEXT:        tile.copy %{{[0-9]+}}[%{{[0-9]+}}, %[[COL]]] to %[[V:[0-9]+]][{{.*}}] sizes [8, 8]
// CHECK-NEXT:        tile.copy %[[Q]][%{{[0-9]+}}, %[[COL]]] to %[[QT:[0-9]+]][{{.*}}] sizes [8, 8]
// CHECK-NEXT:        tile.binary_imm %[[QT]][{{.*}}] to %[[QT]][{{.*}}] sizes [8, 8] {op = "mul", imm = 2.500000e-01 : f64}
// CHECK-NEXT:        tile.matmul %[[QT]][{{.*}}], %[[K]][{{.*}}] to %[[SA:[0-9]+]][{{.*}}] sizes [8, 8, 8] {transpose_rhs}
// CHECK-NEXT:        tile.matmul %[[ONES]][{{.*}}], %[[MT]][{{.*}}] to %[[SA]][{{.*}}] sizes [8, 1, 8] {accumulate} : memref<8x1xf32, "sram">, memref<1x8xf32, "sram">, memref<8x8xf32, "acc">
// CHECK-NEXT:        tile.reduce %[[SA]][{{.*}}] to %[[MAX:[0-9]+]][{{.*}}] sizes [8, 8] {op = "max"} : memref<8x8xf32, "acc">
// CHECK-NEXT:        tile.binary %[[SA]][{{.*}}], %[[MAX]][{{.*}}] to %[[S:[0-9]+]][{{.*}}] sizes [8, 8] {op = "sub", broadcast = "col"} : memref<8x8xf32, "acc">
// CHECK-NEXT:        tile.unary %[[S]][{{.*}}] to %[[S]][{{.*}}] sizes [8, 8] {op = "exp"}
// CHECK-NEXT:        tile.reduce %[[S]][{{.*}}] to %[[SUM:[0-9]+]][{{.*}}] sizes [8, 8] {op = "sum"}
// CHECK-NEXT:        tile.matmul %[[S]][{{.*}}], %[[V]][{{.*}}] to %[[OA:[0-9]+]][{{.*}}] sizes [8, 8, 8] :
// CHECK-NEXT:        tile.acc_read %[[OA]][{{.*}}] to %[[O:[0-9]+]][{{.*}}] sizes [8, 8]
// CHECK-NEXT:        tile.unary %[[SUM]][{{.*}}] to %[[SUM]][{{.*}}] sizes [8, 1] {op = "recip"}
// CHECK-NEXT:        tile.binary %[[O]][{{.*}}], %[[SUM]][{{.*}}] to %[[O]][{{.*}}] sizes [8, 8] {op = "mul", broadcast = "col"}
// CHECK-NEXT:        tile.copy %[[O]][{{.*}}] to %{{[0-9]+}}[%{{[0-9]+}}, %[[COL]]] sizes [8, 8]
// CHECK-NEXT:      }

// -----

// 256 keys on tiny: no score row of them fits its 1 KiB of ACC, so the keys come in chunks (K
// and V loaded per chunk) and the softmax is online: each later chunk raises the running max
// (the rescale factor a = exp(m - m')), rescales the running sum and the output, and adds its
// own product with V.
func.func @long(%q: tensor<1x2x8xf32> {graph.name = "q"}, %k: tensor<1x256x8xf32> {graph.name = "k"}, %v: tensor<1x256x8xf32> {graph.name = "v"}) -> (tensor<1x2x8xf32> {graph.name = "out"}) {
  %out = graph.attention %q, %k, %v {heads = 1 : i64, scale = 5.000000e-01 : f64} : tensor<1x2x8xf32>, tensor<1x256x8xf32>, tensor<1x256x8xf32> -> tensor<1x2x8xf32>
  func.return %out : tensor<1x2x8xf32>
}
// TINY-LABEL: func.func @long
// TINY:         tile.kernel {{.*}}reason = "fused attention, 1 head(s) of 8: 1 query row(s) per tile, online softmax over chunks of {{[0-9]+}} keys
// TINY:           tile.reduce %[[S:[0-9]+]][{{.*}}] to %[[M:[0-9]+]][{{.*}}] {op = "max"}
// TINY:           tile.acc_read %{{[0-9]+}}[{{.*}}] to %[[O:[0-9]+]][{{.*}}] sizes [1, 8]
// TINY:           tile.reduce %[[S]][{{.*}}] to %[[MN:[0-9]+]][{{.*}}] {op = "max"}
// TINY-NEXT:      tile.binary %[[M]][{{.*}}], %[[MN]][{{.*}}] to %[[MN]][{{.*}}] sizes [1, 1] {op = "max"}
// TINY-NEXT:      tile.binary %[[M]][{{.*}}], %[[MN]][{{.*}}] to %[[A:[0-9]+]][{{.*}}] sizes [1, 1] {op = "sub"}
// TINY-NEXT:      tile.unary %[[A]][{{.*}}] to %[[A]][{{.*}}] sizes [1, 1] {op = "exp"}
// TINY-NEXT:      tile.unary %[[MN]][{{.*}}] to %[[M]][{{.*}}] sizes [1, 1] {op = "copy"}
// TINY:           tile.binary %[[O]][{{.*}}], %[[A]][{{.*}}] to %[[O]][{{.*}}] sizes [1, 8] {op = "mul", broadcast = "col"}
// TINY:           tile.binary %{{[0-9]+}}[{{.*}}], %[[O]][{{.*}}] to %[[O]][{{.*}}] sizes [1, 8] {op = "add"}
