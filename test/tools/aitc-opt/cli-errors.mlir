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
// MISSING:     does-not-exist.mlir: error: no such file: {{.*}}does-not-exist.mlir
// MISSING-NOT: Traceback

// A pipeline that does not parse is a diagnostic with a caret (xDSL raises a BaseException).
// RUN: not aitc-opt %s -p 'cse{' 2>&1 | filecheck %s --check-prefix=SPEC
// SPEC-NOT:    Traceback
// SPEC:        aitc-opt: error: Error parsing pass pipeline specification:
// SPEC:        Expected argument name here

// The only output target is mlir: xDSL's others do not know aitc's dialects.
// RUN: not aitc-opt %s -t llvm 2>&1 | filecheck %s --check-prefix=TARGET
// TARGET:      argument -t/--target: invalid choice: 'llvm' (choose from mlir)

// An input that is a folder, a symlink loop or not UTF-8 text is refused by name.
// RUN: rm -rf %t.dir && mkdir %t.dir && ln -sfn %t.loop %t.loop
// RUN: not aitc-opt %t.dir 2>&1 | filecheck %s --check-prefix=FOLDER
// FOLDER-NOT:  Traceback
// FOLDER:      error: {{.*}}.dir is a folder, not a file
// RUN: not aitc-opt %t.loop 2>&1 | filecheck %s --check-prefix=LOOP
// LOOP-NOT:    Traceback
// LOOP:        error: cannot read {{.*}}.loop: Too many levels of symbolic links
// RUN: %python -c "open('%t.latin1', 'wb').write(bytes([0x63, 0x61, 0x66, 0xe9]))"
// RUN: not aitc-opt %t.latin1 2>&1 | filecheck %s --check-prefix=UTF8
// UTF8:        error: {{.*}}.latin1 is not a UTF-8 text file (byte 3 is not UTF-8)

// RUN: aitc-opt --version | filecheck %s --check-prefix=VERSION
// VERSION:     aitc-opt (xdsl 0.74.0)

func.func @unused() {
  func.return
}
