// RUN: aitc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The callee must exist.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {exec.schedule} {
  %y = exec.call npu @nowhere(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: exec.call: no function or hw.program @nowhere

// -----

// Placement is npu or host.
func.func @seg(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {exec.schedule} {
  %y = exec.call gpu @seg(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: exec.call: placement must be npu or host, got 'gpu'

// -----

// A host call needs a host segment function.
func.func @seg(%x: tensor<4xf32>) -> tensor<4xf32> attributes {exec.placement = "npu"} {
  func.return %x : tensor<4xf32>
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {exec.schedule} {
  %y = exec.call host @seg(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: exec.call host: @seg is not a host segment function

// -----

// The hand-over tensors must match the callee's interface.
func.func @seg(%x: tensor<4xf32>) -> tensor<4xf32> attributes {exec.placement = "host"} {
  func.return %x : tensor<4xf32>
}
func.func @main(%x: tensor<8xf32>) -> tensor<4xf32> attributes {exec.schedule} {
  %y = exec.call host @seg(%x) : (tensor<8xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: exec.call: operand #0 of @seg is tensor<4xf32>, the call has tensor<8xf32>

// -----

// And their number.
hw.program @prog target "tiny" {
  hw.tensor "x" input dram[0x0] : tensor<4xf32>
  hw.core 0 {
    hw.end
  }
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {exec.schedule} {
  %y = exec.call npu @prog(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: exec.call: @prog takes 0 result(s), the call has 1
