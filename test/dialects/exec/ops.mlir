// RUN: aitc-opt %s | aitc-opt | filecheck %s
// RUN: aitc-opt %s --print-op-generic | aitc-opt | filecheck %s

// A schedule: a host segment makes the mask, an NPU segment (graph level here) uses it.
func.func @main_host0(%ids: tensor<2x4xi64> {graph.name = "ids"}) -> (tensor<2x4xf32> {graph.name = "mask"}) attributes {exec.placement = "host"} {
  %m = graph.cast %ids : tensor<2x4xi64> -> tensor<2x4xf32>
  func.return %m : tensor<2x4xf32>
}
func.func @main_npu1(%x: tensor<2x4xf32>, %m: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {exec.placement = "npu"} {
  %y = graph.mul %x, %m : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
func.func @main(%x: tensor<2x4xf32>, %ids: tensor<2x4xi64>) -> tensor<2x4xf32> attributes {exec.schedule} {
  %m = exec.call host @main_host0(%ids) : (tensor<2x4xi64>) -> tensor<2x4xf32>
  %y = exec.call npu @main_npu1(%x, %m) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @main(
// CHECK-SAME:    attributes {exec.schedule}
// CHECK-NEXT:    %{{.*}} = exec.call host @main_host0(%{{.*}}) : (tensor<2x4xi64>) -> tensor<2x4xf32>
// CHECK-NEXT:    %{{.*}} = exec.call npu @main_npu1(%{{.*}}, %{{.*}}) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return

// An NPU segment lowered to hw: the call's types match the program's hw.tensor descriptors.
hw.program @prog_npu0 target "tiny" {
  hw.tensor "x" input dram[0x0] : tensor<4xf32>
  hw.tensor "y" output dram[0x40] : tensor<4xf32>
  hw.core 0 {
    hw.end
  }
}
func.func @prog(%x: tensor<4xf32>) -> tensor<4xf32> attributes {exec.schedule} {
  %y = exec.call npu @prog_npu0(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK-LABEL: func.func @prog(
// CHECK-NEXT:    %{{.*}} = exec.call npu @prog_npu0(%{{.*}}) : (tensor<4xf32>) -> tensor<4xf32>
