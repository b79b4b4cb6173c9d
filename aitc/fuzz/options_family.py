"""The cli-options family: valid files, odd option values (`--seed -1`, `--input-shape x=2**40x8`,
`--tune-seconds nan`, `--tune-cache .`,
`--entry %0`, `--target ../tiny`, `-p 'cse{'`, `aitc-opt -t llvm`, `--split-input-file` with
`// -----` dropped anywhere). Every value is a string a user could type."""

from __future__ import annotations

import io
import random

import numpy as np

from aitc.fuzz import bases
from aitc.fuzz.case import Case
from aitc.fuzz.io_families import outputs_of

SEEDS = ("-1", str(2**64), str(2**31), "0", "1e3", "0x10", "-9223372036854775809")
SHAPES = (
    "x=1099511627776x8", "x=2x8x3", "x=2", "nosuch=1x2", "x=0x8", "x=-1x8", "x=2x8", "=2x8", "x=",
    "x=axb", "x=4096x8", "x=1x1x1x1x1x1x1x1x1x1x8", "x=N", "x=2x8=3",
)  # fmt: skip
TARGETS = ("", "TINY", "tiny ", "../tiny", "nosuch", "/", ".", "missing.toml", "edge", "server", "m.onnx")
ENTRIES = ("", "nosuch", "main", "@main", "%0", "probs", "a" * 300)
PIPELINES = (
    "", ",", ",,", "cse{", "'", "cse cse", "nosuch-pass", "graph-optimize{x=1}",
    "graph-fold-constants{max-bytes=abc}", "graph-fold-constants{max-bytes=" + "9" * 30 + "}",
    "graph-fold-constants{bogus=1}", "convert-graph-to-tile{target=}",
    "convert-graph-to-tile{depth=-1 target=tiny}", "multi-buffer{depth=0 target=tiny}",
    "constant-fold-interp", "convert-scf-to-cf", "canonicalize,cse,dce", "printf-to-llvm",
    "convert-linalg-to-loops",
)  # fmt: skip
TUNE_VALUES = ("-1", "0", "nan", "inf", "1e309", "abc", "0.5", "2", str(2**64), "")
OPT_TARGETS = ("mlir", "llvm", "wgsl", "x86-asm", "riscv-asm", "mps", "csl", "wat", "arm-asm")
OPT_FLAGS = ("--print-op-generic", "--print-debuginfo", "--print-no-properties", "--disable-verify",
             "--verify-diagnostics", "--parsing-diagnostics", "--allow-unregistered-dialect",
             "--no-implicit-module", "--print-between-passes", "--time-passes", "--shrink")  # fmt: skip


def _split_markers(rng: random.Random, text: str) -> str:
    """`text` with `// -----` chunk separators inserted between random lines."""
    lines = text.splitlines(keepends=True)
    for _ in range(rng.randint(1, 3)):
        lines.insert(rng.randrange(len(lines) + 1), "// -----\n")
    return "".join(lines)


def _run_command(rng: random.Random) -> list[str]:
    program = rng.choice(["m.onnx", "d.onnx", "m.mlir", "p.aitb", "p.mlir"])
    argv = ["aitc", "run", program]
    options = {
        "--seed": lambda: rng.choice(SEEDS),
        "--input-shape": lambda: rng.choice(SHAPES),
        "--entry": lambda: rng.choice(ENTRIES),
        "--target": lambda: rng.choice(TARGETS),
        "--outputs": lambda: rng.choice(["out.npz", "out"]),
    }
    for flag in rng.sample(sorted(options), rng.randint(1, 2)):
        argv += [flag, options[flag]()]
    return argv + (["--stats"] if rng.random() < 0.3 else [])


def _opt_command(rng: random.Random) -> list[str]:
    argv = ["aitc-opt", "s.mlir" if rng.random() < 0.3 else "m.mlir"]
    if argv[1] == "s.mlir":
        argv.append("--split-input-file")
    if rng.random() < 0.6:
        argv += ["-p", rng.choice(PIPELINES)]
    if rng.random() < 0.3:
        argv += ["-t", rng.choice(OPT_TARGETS)]
    argv += rng.sample(OPT_FLAGS, rng.choice([0, 0, 1, 2]))
    return argv + (["-o", "out.mlir"] if rng.random() < 0.3 else [])


def _other_command(rng: random.Random) -> list[str]:
    return rng.choice(
        [
            ["aitc", "import", "d.onnx", "--input-shape", rng.choice(SHAPES), "-o", "out.mlir"],
            [
                "aitc",
                "compile",
                "d.onnx",
                "--input-shape",
                rng.choice(SHAPES),
                "--target",
                "tiny",
                "--emit",
                "graph",
            ],
            [
                "aitc",
                "compile",
                "h.onnx",
                "--target",
                rng.choice(TARGETS),
                "--no-host-fallback",
                *rng.choice([[], ["--verify-each"], ["--quiet"]]),
                "-o",
                "out.aitb",
            ],
            [
                "aitc",
                "compile",
                "m.onnx",
                "--target",
                "tiny",
                *rng.choice([["--tune"], []]),
                # odd --tune-candidates values run under a short time bound: a huge short list
                # is measured until --tune-seconds run out (300 by default), longer than a case
                *rng.choice(
                    [
                        ["--tune-seconds"],
                        ["--tune-seconds", "2", "--tune-candidates"],
                    ]
                ),
                rng.choice(TUNE_VALUES),
                "--tune-cache",  # always: the default cache is the user's, outside the case's folder
                rng.choice(["t.json", "m.onnx", ".", "out.aitb"]),
                "-o",
                "out.aitb",
            ],
            [
                "aitc",
                "perf",
                rng.choice(["m.onnx", "d.onnx", "h.onnx", "p.aitb", "p.mlir"]),
                "--target",
                rng.choice(TARGETS),
                *rng.choice(
                    [
                        [],
                        ["--cores", rng.choice(["1", "2", "0", "-1", "x"])],
                        ["--top", rng.choice(["1", "0"])],
                    ]
                ),
                *rng.choice(
                    [[], ["--input-shape", rng.choice(SHAPES)], ["--seed", rng.choice(["0", "-1", "9" * 30])]]
                ),
                *rng.choice([[], ["-o", rng.choice(["rep", "m.onnx", ".", "p.aitb/x", "-", "rep/"])]]),
            ],
            [
                "aitc",
                "verify",
                rng.choice(["m.onnx", "d.onnx", "h.onnx", "p.aitb", "m.mlir"]),
                "--target",
                rng.choice(TARGETS),
                *rng.choice([[], ["--level", rng.choice(["graph", "tile", "sync", "hw", "x"])]]),
                *rng.choice([[], ["--mode", rng.choice(["entire", "single", "both", ""])]]),
                *rng.choice(
                    [[], [], ["--float", rng.choice(["m.onnx", "d.onnx", "p.aitb", "missing.onnx"])]]
                ),
                *rng.choice(
                    [[], ["--input-shape", rng.choice(SHAPES)], ["--cores", rng.choice(["1", "2", "0"])]]
                ),
                *rng.choice([[], ["-o", rng.choice(["snap", "m.onnx", ".", "-"])]]),
            ],
            [
                "aitc",
                "quantize",
                rng.choice(["m.onnx", "d.onnx", "h.onnx", "p.aitb"]),
                "--calibration",
                rng.choice(["c.npz", "m.onnx", "missing.npz", "p.aitb"]),
                "--no-cache",  # always: the default cache is the user's, outside the case's folder
                *rng.choice([[], ["--method", rng.choice(["minmax", "entropy", "percentile", "x"])]]),
                *rng.choice([[], ["--per-channel"], ["--exclude", rng.choice(["fc1", "nosuch", ""])]]),
                *rng.choice([[], ["--percentile", rng.choice(["99", "0", "-5", "nan", "1e400"])]]),
                "-o",
                rng.choice(["q.onnx", "m.onnx", ".", "c.npz"]),
            ],
            ["aitc", "target", "show", rng.choice(TARGETS)],
            ["aitc", "asm", "p.mlir", "--target", rng.choice(TARGETS), "-o", "out.aitb"],
            ["aitc", "disasm", "p.aitb", "--target", rng.choice(TARGETS), "--generic"],
            ["aitc", "check", "--ops", *rng.choice([[], ["m.onnx"]])],
            ["aitc", "check"],
        ]
    )


def _calibration(rng: random.Random) -> bytes:
    """Calibration samples for the mlp model (x: 2x8 per run), sometimes of a wrong shape."""
    rows = rng.choice([8, 6, 0])
    buffer = io.BytesIO()
    np.savez(
        buffer, x=np.random.default_rng(rng.randrange(1 << 30)).standard_normal((rows, 8)).astype(np.float32)
    )
    return buffer.getvalue()


def cli_options_case(rng: random.Random) -> Case:
    """A valid file and odd option values for `aitc run`, `aitc-opt` and the other commands."""
    graph = bases.graph_mlir("mlp")
    files = {
        "m.onnx": bases.model_bytes("mlp"),
        "d.onnx": bases.dynamic_model_bytes(),
        "h.onnx": bases.model_bytes("host"),
        "m.mlir": graph.encode(),
        "s.mlir": _split_markers(rng, graph).encode(),
        "p.mlir": bases.level_mlir("mlp", "hw").encode(),
        "p.aitb": bases.binaries()["mlp"],
        "c.npz": _calibration(rng),
    }
    argv = rng.choice([_run_command, _run_command, _opt_command, _opt_command, _other_command])(rng)
    outputs = outputs_of(argv)
    return Case("", 0, argv, files=files, inputs=sorted(files), outputs=outputs, note="odd option values")
