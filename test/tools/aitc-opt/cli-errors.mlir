// Mistakes on the command line are one-line errors with exit status 1, never a traceback.

// RUN: not aitc-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=PASS
// PASS-NOT:    Traceback
// PASS:        aitc-opt: error: Unrecognized passes: ['no-such-pass']
// PASS-NOT:    Traceback

// RUN: not aitc-opt %s -p 'cse{no-such-option=1}' 2>&1 | filecheck %s --check-prefix=OPTION
// OPTION-NOT:  Traceback
// OPTION:      aitc-opt: error: {{.*}}no{{[-_]}}such{{[-_]}}option{{.*}} not found
// OPTION-NOT:  Traceback

// RUN: not aitc-opt %t.does-not-exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING-NOT: Traceback
// MISSING:     aitc-opt: error: {{.*}}No such file or directory{{.*}}does-not-exist.mlir
// MISSING-NOT: Traceback

// RUN: aitc-opt --version | filecheck %s --check-prefix=VERSION
// VERSION:     aitc-opt (xdsl 0.74.0)

func.func @unused() {
  func.return
}
