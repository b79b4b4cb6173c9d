"""A seeded fuzzer for the `aitc` and `aitc-opt` command lines (`python -m aitc.fuzz`, `make fuzz`).

It generates bad inputs in families (`families.FAMILIES`): damaged ONNX bytes, semantically
broken ONNX models, mutated .mlir at every level, damaged (and re-sealed) .aitb binaries, bad
`--inputs` .npz files, awkward output paths, broken `--target` TOML files, and odd option
values. Case `i` of seed `S` is always the same case. Each case runs in a forked child of a warm
interpreter (or, every 50th case, through the installed console script) in its own folder, and
gets exactly one outcome: accept, clean reject, traceback, hang, crash, partial output or
destroyed file. The rules are in `aitc/fuzz/classify.py`'s docstring.

    case.py            Case (argv + files + what may change), its folder, the per-case seed
    bases.py           the valid artifacts the families mutate (cached per process)
    mutate.py          byte and MLIR-text mutations
    onnx_mutations.py  structured ONNX model mutations
    onnx_random_ops.py random ONNX nodes (schema-shaped) and constant-folding bombs grafted on
    families.py        the ONNX, .mlir, .aitb and target-TOML families; FAMILIES; generate_case
    io_families.py     the npz-inputs and output-paths families
    options_family.py  the cli-options family
    runner.py          fork-per-case runner with timeouts and parallel jobs
    classify.py        outcomes and their rules
    report.py          the table, the bad-case list with reproduce commands, distinct behaviours
"""
