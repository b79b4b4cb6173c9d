// RUN: not aitc-opt %s 2>&1 | filecheck %s
// RUN: %python -c "import subprocess,sys; sys.exit(subprocess.run(['aitc-opt', sys.argv[1]], capture_output=True).returncode != 1)" %s

// A parse error is one compiler-style diagnostic (file:line:col: error: message, the source
// line, a caret) with exit status 1, never a Python traceback.
func.func @missing_bracket(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu %x : tensor<4xf32
  func.return %0 : tensor<4xf32>
}
// CHECK-NOT:   Traceback
// CHECK:       parse-error.mlir:[[# @LINE - 3]]:3: error: Expected '>' after builtin parameter list
// CHECK-NEXT:  {{^}}  func.return %0 : tensor<4xf32>
// CHECK-NEXT:  {{^}}  ^^^^^^^^^^^
// CHECK-NOT:   Traceback
