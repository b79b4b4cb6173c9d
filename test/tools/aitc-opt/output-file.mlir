// RUN: rm -f %t
// RUN: aitc-opt %s -o %t | filecheck %s --check-prefix=STDOUT --allow-empty
// RUN: filecheck %s < %t

// A failing input leaves no output file behind, not even an empty or partial one:
// RUN: rm -f %t.bad
// RUN: echo 'func.func @f( {' | not aitc-opt -o %t.bad
// RUN: %python -c "import os,sys; sys.exit(os.path.exists(sys.argv[1]))" %t.bad
// ... also when only a later chunk fails, after the first one was printed:
// RUN: not aitc-opt --split-input-file -o %t.bad < %S/Inputs/later-chunk-fails.in
// RUN: %python -c "import os,sys; sys.exit(os.path.exists(sys.argv[1]))" %t.bad

// -o writes the module to the file and nothing to stdout.
func.func @written(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.sigmoid %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// STDOUT-NOT:  builtin.module
// CHECK:       func.func @written
// CHECK-NEXT:    %0 = graph.sigmoid %x : tensor<4xf32>
