// The target as a module attribute: passes need no option. IR older than `aitc.target` names
// its target only in `tile.target` (written by convert-graph-to-tile), which is read instead.
// RUN: aitc-opt %s --split-input-file --verify-diagnostics -p 'convert-graph-to-tile,plan-memory' | filecheck %s
// RUN: aitc-opt %s --split-input-file --verify-diagnostics -p 'convert-graph-to-tile{target=server},plan-memory' \
// RUN:   | filecheck %s --check-prefix=CONTRADICT

// The module says edge: both passes lower and plan for edge.
builtin.module attributes {aitc.target = "edge"} {
  func.func @matmul(%x: tensor<64x256xf32>, %w: tensor<256x64xf32>) -> tensor<64x64xf32> {
    %y = graph.matmul %x, %w : tensor<64x256xf32>, tensor<256x64xf32> -> tensor<64x64xf32>
    func.return %y : tensor<64x64xf32>
  }
}
// CHECK:       builtin.module attributes {aitc.target = "edge", tile.target = "edge", {{.*}}} {
// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    attributes {tile.sram_peak = {{[0-9]+}} : i64
// CONTRADICT:  convert-graph-to-tile: module is for target 'edge' (aitc.target) but the pass option says 'server'

// -----

// Older tile-level IR: `tile.target` names the target; the passes read it and record it as
// `aitc.target`. An option naming another target contradicts it.
builtin.module attributes {tile.target = "tiny"} {
  func.func @copy(%x: memref<8x16xf32, "dram">, %y: memref<8x16xf32, "dram"> {tile.output}) {
    %c0 = arith.constant 0 : index
    tile.kernel "k" {
      %a = tile.alloc : memref<8x16xf32, "sram">
      tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [8, 16] : memref<8x16xf32, "dram">, memref<8x16xf32, "sram">
      tile.copy %a[%c0, %c0] to %y[%c0, %c0] sizes [8, 16] : memref<8x16xf32, "sram">, memref<8x16xf32, "dram">
    }
    func.return
  }
}
// CHECK:       builtin.module attributes {tile.target = "tiny", aitc.target = "tiny", {{.*}}} {
// CHECK-LABEL: func.func @copy
// CHECK:         tile.alloc {offset = 0 : i64} : memref<8x16xf32, "sram">
// CONTRADICT:  convert-graph-to-tile: module is for target 'tiny' (tile.target) but the pass option says 'server'
