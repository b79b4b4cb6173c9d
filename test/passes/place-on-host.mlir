// RUN: aitc-opt %s --split-input-file --verify-diagnostics -p place-on-host | filecheck %s
// RUN: aitc-opt %s --split-input-file --verify-diagnostics -p 'place-on-host{fallback=false}' | filecheck %s --check-prefix=NOFALLBACK

// Everything runs on the NPU: the function is left as it is.
func.func @all_npu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = graph.relu %x : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @all_npu(
// CHECK-NEXT:    %{{.*}} = graph.relu
// CHECK-NEXT:    func.return
// CHECK-NOT:   exec.
// NOFALLBACK-LABEL: func.func @all_npu(

// -----

// graph.sin has no tile lowering: NPU, host, NPU. The hand-over tensors take the model's
// names (inputs, outputs), else the SSA name, else the producing node's.
func.func @main(%x: tensor<4x8xf32> {graph.name = "x"}) -> (tensor<4x8xf32> {graph.name = "y"}) {
  %a = graph.relu %x : tensor<4x8xf32> loc("relu")
  %s = graph.sin %a : tensor<4x8xf32> loc("sin")
  %y = graph.exp %s : tensor<4x8xf32> loc("exp")
  func.return %y : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @main(
// CHECK-SAME:    {graph.name = "x"}
// CHECK-SAME:    attributes {exec.schedule}
// CHECK-NEXT:    %[[A:.*]] = exec.call npu @main_npu0(%{{.*}}) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %[[S:.*]] = exec.call host @main_host1(%[[A]]) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %[[Y:.*]] = exec.call npu @main_npu2(%[[S]]) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[Y]]
// CHECK:       func.func @main_npu0(%{{.*}}: tensor<4x8xf32> {graph.name = "x"}) -> (tensor<4x8xf32> {graph.name = "a"}) attributes {exec.placement = "npu"}
// CHECK-NEXT:    graph.relu
// CHECK:       func.func @main_host1(%{{.*}}: tensor<4x8xf32> {graph.name = "a"}) -> (tensor<4x8xf32> {graph.name = "s"}) attributes {exec.placement = "host"}
// CHECK-NEXT:    graph.sin %{{.*}} {exec.reason = "no tile lowering for graph.sin: the vector engine has no such function"}
// CHECK:       func.func @main_npu2(%{{.*}}: tensor<4x8xf32> {graph.name = "s"}) -> (tensor<4x8xf32> {graph.name = "y"}) attributes {exec.placement = "npu"}
// CHECK-NEXT:    graph.exp

// NOFALLBACK: place-on-host: 1 op(s) cannot run on the NPU and host fallback is off (--no-host-fallback):
// NOFALLBACK-NEXT: 'sin' (graph.sin): no tile lowering for graph.sin

// -----

// Integer index arithmetic on a runtime input goes to the host, and runs first (host ops are
// scheduled before NPU ops that are ready at the same time): i64 the engines cannot hold, a
// small i32 op they could run but the host runs cheaper. The boolean mask stays on the host;
// only f32 and i32 cross to the NPU. Constants are cloned into the segments that use them.
func.func @mask(%ids: tensor<2x8xi64>, %x: tensor<2x8xf32>, %pos: tensor<2x8xi32>) -> (tensor<2x8xf32>, tensor<2x8xi32>) {
  %zero = graph.constant dense<0> : tensor<i64>
  %pad = graph.equal %ids, %zero : tensor<2x8xi64>, tensor<i64> -> tensor<2x8xi1> loc("pad")
  %keep = graph.not %pad : tensor<2x8xi1> loc("keep")
  %m = graph.cast %keep : tensor<2x8xi1> -> tensor<2x8xf32> loc("to_float")
  %e = graph.exp %x : tensor<2x8xf32> loc("exp")
  %y = graph.mul %e, %m : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32> loc("apply")
  %one = graph.constant dense<1> : tensor<i32>
  %next = graph.add %pos, %one : tensor<2x8xi32>, tensor<i32> -> tensor<2x8xi32> loc("next")
  func.return %y, %next : tensor<2x8xf32>, tensor<2x8xi32>
}
// CHECK-LABEL: func.func @mask(
// CHECK-NEXT:    %[[M:.*]], %[[N:.*]] = exec.call host @mask_host0(%{{.*}}, %{{.*}}) : (tensor<2x8xi64>, tensor<2x8xi32>) -> (tensor<2x8xf32>, tensor<2x8xi32>)
// CHECK-NEXT:    %[[Y:.*]] = exec.call npu @mask_npu1(%{{.*}}, %[[M]]) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    func.return %[[Y]], %[[N]]
// CHECK:       func.func @mask_host0(
// CHECK-NEXT:    graph.constant dense<0> : tensor<i64>
// CHECK-NEXT:    graph.equal {{.*}} {exec.reason = "element type i64 is not handled by the vector engine (f32, i32, i8)"}
// CHECK-NEXT:    graph.not {{.*}} {exec.reason = "integer index arithmetic on 16 element(s): cheaper on the host
// CHECK-NEXT:    graph.cast {{.*}} {exec.reason = "reads a boolean (i1) tensor made on the host
// CHECK-NEXT:    graph.constant dense<1> : tensor<i32>
// CHECK-NEXT:    graph.add {{.*}} {exec.reason = "integer index arithmetic on 16 element(s): cheaper on the host
// CHECK:       func.func @mask_npu1(
// CHECK-NEXT:    graph.exp
// CHECK-NEXT:    graph.mul

// -----

// A boolean never crosses a segment boundary: the NPU could run the compare and the select,
// but the select also needs a host result, so it would land in a later NPU segment than the
// compare and the i1 mask would go through DRAM. Both move to the host (the compare, ready
// first, runs in the first host segment).
func.func @bool_crossing(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = graph.greater %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1> loc("compare")
  %e = graph.exp %x : tensor<4x8xf32> loc("exp")
  %s = graph.sin %e : tensor<4x8xf32> loc("sin")
  %r = graph.where %c, %s, %y : tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32> loc("select")
  func.return %r : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @bool_crossing(
// CHECK-NEXT:    exec.call host @bool_crossing_host0
// CHECK-NEXT:    exec.call npu @bool_crossing_npu1
// CHECK-NEXT:    exec.call host @bool_crossing_host2
// CHECK-NEXT:    func.return
// CHECK:       func.func @bool_crossing_host0(
// CHECK-NEXT:    graph.greater {{.*}} {exec.reason = "a boolean (i1) tensor it shares would cross a segment boundary through DRAM"}
// CHECK-NEXT:    func.return
// CHECK:       func.func @bool_crossing_npu1(
// CHECK-NEXT:    graph.exp
// CHECK-NEXT:    func.return
// CHECK:       func.func @bool_crossing_host2(
// CHECK-NEXT:    graph.sin
// CHECK-NEXT:    graph.where {{.*}} {exec.reason = "a boolean (i1) tensor it shares would cross a segment boundary through DRAM"}
