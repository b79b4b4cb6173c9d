"""`aitc compile --cores N --shard S` and `aitc run` on the multi-core binary, as a user runs them.

- In real processes: `aitc compile` then `aitc run --inputs/--outputs` for the transformer
  layer on edge x 4 (auto) and the MLP on tiny x 2 (tp), against onnxruntime; the compile's
  stdout shows the sharding plan and every core's instruction count; compiling again in a
  process with another hash seed writes the same bytes.
- In-process errors: `--emit tile|sync` with `--cores 2`, more cores than the target has, and
  a model that needs host segments (bert_torch_export) with `--cores 2`: exit status 1, a
  one-line diagnostic (for bert followed by the list of host ops), no traceback, no output
  file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from aitc.reference import onnxruntime_outputs
from aitc.testing import model_zoo
from aitc.tools.aitc_main import main

AITC = Path(sys.executable).with_name("aitc")
TOLERANCE = 1e-4
"""max |simulated - onnxruntime| / max |onnxruntime|, per output."""


@dataclass
class Saved:
    """A zoo model on disk: the .onnx, its example inputs as .npz, its --input-shape flags."""

    model: onnx.ModelProto
    inputs: dict[str, np.ndarray]
    onnx_path: Path
    npz_path: Path

    @property
    def shape_flags(self) -> list[str]:
        flags = []
        for name, value in self.inputs.items():
            flags += ["--input-shape", f"{name}={'x'.join(map(str, value.shape))}"]
        return flags


def save(directory: Path, name: str, model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> Saved:
    onnx.save(model, directory / f"{name}.onnx")
    arrays: dict[str, Any] = dict(inputs)  # typed loosely: savez's keywords include allow_pickle
    np.savez(directory / f"{name}.npz", **arrays)
    return Saved(model, inputs, directory / f"{name}.onnx", directory / f"{name}.npz")


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Saved]:
    directory = tmp_path_factory.mktemp("models")
    return {
        "mlp": save(directory, "mlp", *model_zoo.mlp()),
        "transformer": save(directory, "transformer", *model_zoo.transformer_encoder_layer()),
        "bert": save(directory, "bert", *model_zoo.bert_torch_export()),
        "cnn": save(directory, "cnn", *model_zoo.residual_block(batch=1, channels=8, image=16)),
    }


def aitc_process(argv: Sequence[str | os.PathLike], hash_seed: int = 0) -> subprocess.CompletedProcess[str]:
    """`aitc ARGV` in a process of its own (with PYTHONHASHSEED `hash_seed`)."""
    env = {**os.environ, "PYTHONHASHSEED": str(hash_seed)}
    return subprocess.run([AITC, *map(str, argv)], capture_output=True, text=True, check=False, env=env)


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    diff = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    scale = float(np.max(np.abs(want.astype(np.float64))))
    return diff / scale if scale > 0 else diff


CLI_CASES = [
    ("transformer", "edge", 4, "auto"),
    ("mlp", "tiny", 2, "tp"),
    ("cnn", "edge", 4, "sp"),
    ("bert", "edge", 2, "tp"),
]
"""(model, target, cores, strategy); the CNN (batch 1) with sp splits its convs' output rows;
BERT as torch exports it has host segments (mask arithmetic, GatherND pooling) between its NPU
segments, each sharded on its own."""


@dataclass
class CliCompile:
    binary: Path
    stdout: str


@pytest.fixture(scope="module")
def cli_compiled(models, tmp_path_factory) -> dict[tuple[str, str, int, str], CliCompile]:
    """Every CLI_CASES model compiled by `aitc compile` in its own process (hash seed 0)."""
    directory = tmp_path_factory.mktemp("binaries")
    built = {}
    for name, target, cores, strategy in CLI_CASES:
        binary = directory / f"{name}-{target}{cores}-{strategy}.aitb"
        saved = models[name]
        argv = [saved.onnx_path, "--target", target, "--cores", cores, "--shard", strategy]
        result = aitc_process(["compile", *argv, *saved.shape_flags, "-o", binary])
        assert result.returncode == 0, result.stderr
        built[(name, target, cores, strategy)] = CliCompile(binary, result.stdout)
    return built


@pytest.mark.parametrize("case", CLI_CASES, ids=[f"{m}-{t}{c}-{s}" for m, t, c, s in CLI_CASES])
def test_compile_then_run_matches_onnxruntime(case, models, cli_compiled, tmp_path):
    name, _, cores, strategy = case
    saved, compiled = models[name], cli_compiled[case]
    outputs = tmp_path / "out.npz"
    result = aitc_process(["run", compiled.binary, "--inputs", saved.npz_path, "--outputs", outputs])
    assert result.returncode == 0, result.stderr
    want = onnxruntime_outputs(saved.model, saved.inputs)
    with np.load(outputs) as got:
        assert sorted(got.files) == sorted(want)
        for output, expected in want.items():
            assert got[output].shape == expected.shape
            error = relative_error(got[output], expected)
            assert error <= TOLERANCE, f"{output}: relative error {error:.3g}"
    report = compiled.stdout
    chosen = "(tp|sp|dp|tp-sp|layerwise)" if strategy == "auto" else strategy
    segment = r"segment @\w+: " if name == "bert" else ""
    assert re.search(rf"^{segment}sharding plan: {chosen} on {cores} cores", report, re.M), report
    if name == "bert":  # the host segments are listed as in a single-core compile
        assert re.search(r"^placement: .* on the host in \d+ segment\(s\)", report, re.M), report
    if name == "cnn":  # the 3x3 convs read one row of halo on each side
        assert re.search(r"graph\.conv\s+sp: split output rows \(halo 1\+1\)", report), report
    assert re.search(r"^node\s+op\s+decision\s+est_cycles\s+collectives$", report, re.M), report
    for core in range(cores):
        assert re.search(rf"^  core {core}: [1-9]\d* instructions", report, re.M), report
    assert f"wrote {compiled.binary}" in report


def test_binary_is_the_same_from_another_process(models, cli_compiled, tmp_path):
    """4 cores, another PYTHONHASHSEED: nothing in the binary depends on set or dict-of-hash order."""
    name, target, cores, strategy = CLI_CASES[0]
    saved = models[name]
    binary = tmp_path / "again.aitb"
    argv = [saved.onnx_path, "--target", target, "--cores", cores, "--shard", strategy, *saved.shape_flags]
    result = aitc_process(["compile", *argv, "-o", binary], hash_seed=12345)
    assert result.returncode == 0, result.stderr
    assert binary.read_bytes() == cli_compiled[CLI_CASES[0]].binary.read_bytes()


# --------------------------------------------------------------------------- errors


def run_cli(capsys, argv: Sequence[str | os.PathLike]) -> tuple[int, str, str]:
    """`aitc ARGV` in-process: (exit status, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_refused(code: int, err: str, output: Path) -> list[str]:
    """Exit status 1, no traceback, no output file (nor a temporary); the stderr lines."""
    assert code == 1, err
    assert "Traceback" not in err
    assert "internal error" not in err, err
    assert not output.exists(), f"{output} written by a failed compile"
    assert not list(output.parent.glob(f"{output.name}*")), "a temporary output was left behind"
    lines = err.strip().splitlines()
    assert " error: " in lines[0], err
    return lines


def assert_one_line_error(code: int, err: str, output: Path) -> str:
    lines = assert_refused(code, err, output)
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("level", ["tile", "sync"])
def test_emit_below_graph_with_several_cores_is_refused(capsys, models, tmp_path, level: str):
    saved = models["mlp"]
    output = tmp_path / "out.mlir"
    argv = ["compile", saved.onnx_path, "--target", "edge", "--cores", "2", "--emit", level, "-o", output]
    code, _, err = run_cli(capsys, [*argv, *saved.shape_flags])
    line = assert_one_line_error(code, err, output)
    assert f"--emit {level} with --cores 2" in line
    assert "--emit graph" in line  # what to do instead


@pytest.mark.parametrize(("target", "cores", "has"), [("edge", 8, 4), ("tiny", 3, 2)])
def test_more_cores_than_the_target_has_is_refused(
    capsys, models, tmp_path, target: str, cores: int, has: int
):
    saved = models["mlp"]
    output = tmp_path / "out.aitb"
    argv = ["compile", saved.onnx_path, "--target", target, "--cores", str(cores), "-o", output]
    code, _, err = run_cli(capsys, [*argv, *saved.shape_flags])
    line = assert_one_line_error(code, err, output)
    assert f"{cores} cores" in line
    assert f"target '{target}' has {has}" in line
    assert f"use at most {has} cores" in line


@pytest.mark.parametrize("strategy", ["tp", "auto"])
def test_a_split_that_divides_nothing_is_refused_with_the_numbers(capsys, tmp_path, strategy: str):
    """12 heads of 8 (96 columns, FFN 192, 16 tokens, batch 1) on 5 of server's 8 cores:
    no dim any strategy splits divides by 5, so the plan would run everything on every
    core. Refused on one line with the sizes and the core counts that divide them."""
    saved = save(
        tmp_path, "h12", *model_zoo.transformer_encoder_layer(hidden=96, heads=12, seq=16, ffn=192, batch=1)
    )
    output = tmp_path / "h12.aitb"
    argv = [
        "compile",
        saved.onnx_path,
        "--target",
        "server",
        "--cores",
        "5",
        "--shard",
        strategy,
        "-o",
        output,
    ]
    code, _, err = run_cli(capsys, [*argv, *saved.shape_flags])
    line = assert_one_line_error(code, err, output)
    assert f"--shard {strategy} on 5 cores splits nothing" in line
    assert "split n (output columns) of 96, which does not divide by 5 (2, 3, 4, 6, 8 cores would)" in line
    assert "use a core count that divides" in line


def test_no_host_fallback_on_several_cores_lists_the_host_ops(capsys, models, tmp_path):
    """bert_torch_export computes its mask with i64/bool ops that run on the host. With
    --no-host-fallback the multi-core compile refuses as the single-core one does: one line
    naming the flag, then one indented line per op that needs the host."""
    saved = models["bert"]
    output = tmp_path / "bert.aitb"
    argv = ["compile", saved.onnx_path, "--target", "edge", "--cores", "2", "--no-host-fallback"]
    code, _, err = run_cli(capsys, [*argv, "-o", output, *saved.shape_flags])
    first, *ops = assert_refused(code, err, output)
    assert "--no-host-fallback" in first
    assert ops, "no op named"
    for line in ops:
        assert re.fullmatch(r"  '[^']+' \(graph\.\w+\): .+", line), line


def test_shard_measure_keeps_the_fastest_strategy_on_the_simulator(capsys, models, tmp_path):
    """`--shard measure`: every strategy compiled and simulated; the report lists each one's
    simulated and estimated cycles (or why it failed: dp has no batch to split) and keeps the
    fastest, whose binary then runs in exactly the cycles listed."""
    saved = models["cnn"]
    output = tmp_path / "cnn.aitb"
    argv = ["compile", saved.onnx_path, "--target", "edge", "--cores", "4", "--shard", "measure"]
    code, out, err = run_cli(capsys, [*argv, "-o", output, *saved.shape_flags])
    assert code == 0, err
    kept = re.search(
        r"^measured on the simulator \(--shard measure, seeded random inputs\): kept (\S+)$", out, re.M
    )
    assert kept, out
    rows = {m[1]: m[2] for m in re.finditer(r"^(tp|sp|dp|tp-sp|layerwise) +(\d+|failed)", out, re.M)}
    assert sorted(rows) == sorted(["tp", "sp", "dp", "tp-sp", "layerwise"]), out
    assert rows["dp"] == "failed"  # batch 1
    cycles = {name: int(value) for name, value in rows.items() if value != "failed"}
    assert cycles[kept[1]] == min(cycles.values())
    stats = tmp_path / "stats.json"
    run = aitc_process(["run", output, "--stats-json", stats])
    assert run.returncode == 0, run.stderr
    assert json.loads(stats.read_text())["cycles"] == cycles[kept[1]]
