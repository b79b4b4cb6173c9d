// RUN: rm -f %t
// RUN: aitc-opt %s -o %t | filecheck %s --check-prefix=STDOUT --allow-empty
// RUN: filecheck %s < %t
// A new file gets the umask's mode (once 0600, from the temporary file):
// RUN: %python -c "import os,stat,sys; m=os.umask(0); sys.exit(stat.S_IMODE(os.stat(sys.argv[1]).st_mode) != 0o666 & ~m)" %t

// A failing input leaves no output file behind, not even an empty or partial one:
// RUN: rm -f %t.bad
// RUN: echo 'func.func @f( {' | not aitc-opt -o %t.bad
// RUN: %python -c "import os,sys; sys.exit(os.path.exists(sys.argv[1]))" %t.bad
// ... also when only a later chunk fails, after the first one was printed:
// RUN: not aitc-opt --split-input-file -o %t.bad < %S/Inputs/later-chunk-fails.in
// RUN: %python -c "import os,sys; sys.exit(os.path.exists(sys.argv[1]))" %t.bad

// -o is checked before any work: a missing folder, a path under a file, a folder, a trailing
// '/' and a name longer than the file system allows are one-line errors, and nothing is left.
// RUN: rm -rf %t.d && mkdir %t.d && touch %t.d/file
// RUN: not aitc-opt %s -o %t.d/missing/out.mlir 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING: error: cannot write {{.*}}missing/out.mlir: folder {{.*}}missing does not exist
// RUN: not aitc-opt %s -o %t.d/file/out.mlir 2>&1 | filecheck %s --check-prefix=UNDER
// UNDER:   error: cannot write {{.*}}file/out.mlir: {{.*}}file is not a folder
// RUN: not aitc-opt %s -o %t.d 2>&1 | filecheck %s --check-prefix=FOLDER
// FOLDER:  error: cannot write {{.*}}.d: it is a folder; name a file inside it
// RUN: not aitc-opt %s -o %t.d/new/ 2>&1 | filecheck %s --check-prefix=SLASH
// SLASH:   error: cannot write {{.*}}new/: a trailing '/' names a folder, and there is none; name a file
// RUN: not aitc-opt %s -o %t.d/%{long256} 2>&1 | filecheck %s --check-prefix=LONG
// LONG:    error: cannot write {{.*}}: the file name is 256 bytes long; the file system allows 255
// RUN: %python -c "import os,sys; sys.exit(sorted(os.listdir(sys.argv[1])) != ['file'])" %t.d
// A legal 255-character name works (the temporary file has a short name of its own).
// RUN: aitc-opt %s -o %t.d/%{long255}
// RUN: filecheck %s < %t.d/%{long255}

// -o writes through a symlink (the link stays) and into a character device, never replacing
// either with a regular file; an output that is the input is refused.
// RUN: rm -f %t.target && ln -sfn %t.target %t.link
// RUN: aitc-opt %s -o %t.link && test -L %t.link && filecheck %s < %t.target
// RUN: aitc-opt %s -o /dev/null && test -c /dev/null
// RUN: cp %s %t.same.mlir && not aitc-opt %t.same.mlir -o %t.same.mlir 2>&1 | filecheck %s --check-prefix=SAME
// SAME:    error: cannot write {{.*}}same.mlir: it is the input {{.*}}same.mlir; choose another output name
// RUN: cmp %s %t.same.mlir

// -o - is stdout, as in mlir-opt (no file named '-').
// RUN: cd %t.d && aitc-opt %s -o - | filecheck %s
// RUN: %python -c "import os,sys; sys.exit(os.path.exists(sys.argv[1]))" %t.d/-

// -o writes the module to the file and nothing to stdout.
func.func @written(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.sigmoid %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// STDOUT-NOT:  builtin.module
// CHECK:       func.func @written
// CHECK-NEXT:    %0 = graph.sigmoid %x : tensor<4xf32>
