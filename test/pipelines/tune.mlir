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

// `aitc compile --tune` on a 24x48 @ 48x20 matmul for tiny (4x4 engine). The cost model picks
// K steps of 4 (est. 2246 cycles); on the simulator that measures 2982 cycles alone, and its
// sixth candidate (K steps of 12, the lhs row panel kept in SRAM, est. 2616) measures 2754, so
// the tuned compile takes it. The cache records the short list; a second --tune measures nothing and writes the
// same binary; aitc-opt applies the cache with the pass's `tuning` option.
func.func @main(%x: tensor<24x48xf32> {graph.name = "x"}, %w: tensor<48x20xf32> {graph.name = "w"}) -> (tensor<24x20xf32> {graph.name = "y"}) {
  %y = graph.matmul %x, %w : tensor<24x48xf32>, tensor<48x20xf32> -> tensor<24x20xf32> loc("/fc/MatMul")
  func.return %y : tensor<24x20xf32>
}

// COLD:      /fc/MatMul  graph.matmul  24x12x4
// COLD:      kernel      kind    count  model est  model measured  tuned    gain    from
// COLD:      /fc/MatMul  matmul  1      2246       2982            #6 2754  1.083x  measured now
// COLD-NEXT: tuning: 1 kernel signature(s), 1 measured in {{.*}} s, 1 not the model's pick; cache {{.*}}.json; model's estimate off by median 24.7%, max 24.7% on its picks

// CACHE:      "kind": "matmul",
// CACHE-NEXT: "node": "/fc/MatMul",
// CACHE-NEXT: "signature": "matmul: MatmulProblem(batches=1, m=24, k=48, n=20, bias=False, temps=0, epilogue=('acc_read',), residual=False, operand_bytes=4{{.*}}) | target tiny {{[0-9a-f]+}} sram 8192 acc 1024 depth 2",
// CACHE:      "estimated": 2246,
// CACHE-NEXT: "measured": 2982,

// WARM:      /fc/MatMul  matmul  1      2246       2982            #6 2754  1.083x  cache
// WARM-NEXT: tuning: 1 kernel signature(s), 0 measured in {{.*}}

// TUNED: tile.kernel "/fc/MatMul" {op = "graph.matmul", tiles = array<i64: 24, 12, 4>, {{.*}}tuned on the simulator: candidate 6 of the model's 6 [24, 12, 4, 'm', 16, 'sram', 'lhs'] measured 2754 cycles alone (est. 2616); the model's pick measured 2982 (est. 2246)"

// MODEL:     tile.kernel "/fc/MatMul" {op = "graph.matmul", tiles = array<i64: 24, 4, 4>,
// MODEL-NOT: tuned

// BAD: {{.*}}.bad.json: not a tuning cache aitc can read ('kernels' is not an object); delete it to start afresh, or give another file with --tune-cache
