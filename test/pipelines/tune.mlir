// RUN: rm -f %t.json
// RUN: aitc compile %s --target tiny --cores 1 --tune --tune-cache %t.json -o %t.aitb | filecheck %s --check-prefix=COLD
// RUN: filecheck %s --check-prefix=CACHE < %t.json
// RUN: aitc compile %s --target tiny --cores 1 --tune --tune-cache %t.json -o %t.warm.aitb | filecheck %s --check-prefix=WARM
// RUN: cmp %t.aitb %t.warm.aitb
// RUN: aitc-opt %s -p 'convert-graph-to-tile{target=tiny tuning="%t.json"}' | filecheck %s --check-prefix=TUNED
// RUN: aitc-opt %s -p 'convert-graph-to-tile{target=tiny}' | filecheck %s --check-prefix=MODEL
// RUN: echo '{"format": 1, "kernels": []}' > %t.bad.json
// RUN: not aitc compile %s --target tiny --cores 1 --tune --tune-cache %t.bad.json -o %t.bad.aitb 2>&1 | filecheck %s --check-prefix=BAD
// RUN: not test -e %t.bad.aitb

// `aitc compile --tune` on a 16x64 @ 64x20 matmul for tiny (4x4 engine). The cost model picks
// blocks of 16 x 12 summed in SRAM over K steps of 4 (est. 2310 cycles); on the simulator that
// measures 2592 cycles alone, and its fifth candidate (one 16 x 20 block, est. 2406) measures
// 2405, so the tuned compile takes it. The cache records the short list; a second --tune measures nothing and writes the
// same binary; aitc-opt applies the cache with the pass's `tuning` option.
func.func @main(%x: tensor<16x64xf32> {graph.name = "x"}, %w: tensor<64x20xf32> {graph.name = "w"}) -> (tensor<16x20xf32> {graph.name = "y"}) {
  %y = graph.matmul %x, %w : tensor<16x64xf32>, tensor<64x20xf32> -> tensor<16x20xf32> loc("/fc/MatMul")
  func.return %y : tensor<16x20xf32>
}

// COLD:      /fc/MatMul  graph.matmul  16x4x4
// COLD:      kernel      kind    count  model est  model measured  tuned    gain    from
// COLD:      /fc/MatMul  matmul  1      2310       2592            #5 2405  1.078x  measured now
// COLD-NEXT: tuning: 1 kernel signature(s), 1 measured in {{.*}} s, 1 not the model's pick; cache {{.*}}.json; model's estimate off by median 10.9%, max 10.9% on its picks

// CACHE:      "kind": "matmul",
// CACHE-NEXT: "node": "/fc/MatMul",
// CACHE-NEXT: "signature": "matmul: MatmulProblem(batches=1, m=16, k=64, n=20, bias=False, temps=0, epilogue=('acc_read',), residual=False, operand_bytes=4{{.*}}) | target tiny {{[0-9a-f]+}} sram 8192 acc 1024 depth 2",
// CACHE:      "estimated": 2310,
// CACHE-NEXT: "measured": 2592,

// WARM:      /fc/MatMul  matmul  1      2310       2592            #5 2405  1.078x  cache
// WARM-NEXT: tuning: 1 kernel signature(s), 0 measured in {{.*}}

// TUNED: tile.kernel "/fc/MatMul" {op = "graph.matmul", tiles = array<i64: 16, 4, 4>, block = array<i64: 16, 20>, {{.*}}tuned on the simulator: candidate 5 of the model's 6 [16, 4, 4, 'm', 20, 'sram', 'none'] measured 2405 cycles alone (est. 2494); the model's pick measured 2592 (est. 2310)"

// MODEL:     tile.kernel "/fc/MatMul" {op = "graph.matmul", tiles = array<i64: 16, 4, 4>, block = array<i64: 16, 12>,
// MODEL-NOT: tuned

// BAD: {{.*}}.bad.json: not a tuning cache aitc can read ('kernels' is not an object); delete it to start afresh, or give another file with --tune-cache
