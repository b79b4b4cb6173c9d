// The target is the module's `aitc.target` (aitc/module_target.py), not a pass option with a
// default: a hand-written pipeline gives it once and every later pass reads it from the module.
// RUN: aitc-opt %s -p 'convert-graph-to-tile{target=edge},plan-memory' | filecheck %s
// RUN: aitc-opt %s -p 'place-on-host{target=edge},convert-graph-to-tile,plan-memory' | filecheck %s
// RUN: aitc-opt %s -p 'convert-graph-to-tile{target=edge},plan-memory{target=edge}' | filecheck %s
// RUN: not aitc-opt %s -p 'convert-graph-to-tile{target=edge},plan-memory{target=tiny}' 2>&1 \
// RUN:   | filecheck %s --check-prefix=CONTRADICT
// RUN: not aitc-opt %s -p 'convert-graph-to-tile,plan-memory' 2>&1 | filecheck %s --check-prefix=NONE
// RUN: not aitc-opt %s -p 'plan-memory' 2>&1 | filecheck %s --check-prefix=NONE-PLAN
// RUN: aitc-opt %s -p 'convert-graph-to-tile{target=edge},multi-buffer,plan-memory,convert-tile-to-sync,insert-semaphores,optimize-sync,convert-sync-to-hw' \
// RUN:   | filecheck %s --check-prefix=HW

// A 64x256 @ 256x64 matmul lowered for edge needs more SRAM than tiny has. plan-memory used to
// plan it for its own default target, tiny, and failed ("target 'tiny' has 16384").
func.func @matmul(%x: tensor<64x256xf32> {graph.name = "x"}, %w: tensor<256x64xf32> {graph.name = "w"}) -> (tensor<64x64xf32> {graph.name = "y"}) {
  %y = graph.matmul %x, %w : tensor<64x256xf32>, tensor<256x64xf32> -> tensor<64x64xf32> loc("/fc/MatMul")
  func.return %y : tensor<64x64xf32>
}
// CHECK:       builtin.module attributes {aitc.target = "edge", tile.target = "edge", {{.*}}} {
// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    attributes {tile.sram_peak = {{[0-9]+}} : i64
// CHECK:         tile.kernel "/fc/MatMul" {{{.*}}sram_peak = {{[0-9]+}} : i64

// A pass option that names another target than the module's is an error naming both.
// CONTRADICT: error: plan-memory: module is for target 'edge' (aitc.target) but the pass option says 'tiny'; drop the option

// No target on the module and none in the pass options: the error says how to give one.
// NONE:      error: convert-graph-to-tile: no target: the module has no aitc.target attribute
// NONE-SAME: give the target once: on the first target-dependent pass (-p 'PASS{target=edge},...'), as `builtin.module attributes {aitc.target = "edge"}`
// NONE-PLAN: error: plan-memory: no target: the module has no aitc.target attribute

// At hw level each program records the target, the module no longer does; the program keeps
// its kernel's estimate.
// HW:     builtin.module attributes {tile.target = "edge", {{.*}}} {
// HW-NOT: aitc.target
// HW:       hw.program @matmul target "edge" attributes {aitc.kernels = [{kernel = "/fc/MatMul", op = "graph.matmul", est_cycles = {{[0-9]+}} : i64
