// RUN: aitc-opt %s -p cse | filecheck %s --check-prefix=CSE
// RUN: aitc-opt %s -p 'canonicalize,cse,dce' | filecheck %s --check-prefix=XDSL
// RUN: aitc-opt %s -p 'graph-fold-constants{max-bytes=1024},cse,dce' | filecheck %s --check-prefix=FOLD
// RUN: aitc-opt %s -p 'graph-fold-constants{max-bytes=4}' | filecheck %s --check-prefix=SMALL

// xDSL's generic passes and aitc's passes (with an option) run on graph IR in one pipeline.
func.func @pipeline(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = graph.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %c = graph.add %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %d = graph.mul %x, %c : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %e = graph.mul %x, %c : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %unused = graph.neg %x : tensor<2xf32>
  %r = graph.add %d, %e : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// cse merges the two identical muls (and drops the unused pure op).
// CSE-LABEL: func.func @pipeline
// CSE:         %d = graph.mul %x, %c
// CSE-NOT:     graph.mul
// CSE-NOT:     graph.neg
// CSE:         graph.add %d, %d

// canonicalize, cse and dce in one pipeline: one mul is left, the unused op is gone.
// XDSL-LABEL: func.func @pipeline
// XDSL:         graph.mul
// XDSL-NOT:     graph.mul
// XDSL-NOT:     graph.neg
// XDSL:         func.return

// max-bytes=1024 lets the 8-byte sum of the two constants fold into one constant.
// FOLD-LABEL: func.func @pipeline
// FOLD-NEXT:    [[C:%\w+]] = graph.constant dense<[4.000000e+00, 6.000000e+00]> : tensor<2xf32>
// FOLD-NEXT:    [[D:%\w+]] = graph.mul %x, [[C]]
// FOLD-NEXT:    graph.add [[D]], [[D]]
// FOLD-NEXT:    func.return

// max-bytes=4 is smaller than the 8-byte result: the option reaches the pass, nothing folds.
// SMALL-LABEL: func.func @pipeline
// SMALL:         graph.add %a, %b
