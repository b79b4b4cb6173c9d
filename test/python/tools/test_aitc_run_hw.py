"""`aitc run` on hw programs: text and binary, inputs/outputs, --stats, --trace, --target."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import aitc
from aitc.tools.aitc_main import main

EXAMPLE = Path(__file__).parents[3] / "examples" / "hw" / "tiled_matmul.mlir"


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def inputs(tmp_path) -> Path:
    rng = np.random.default_rng(1)
    path = tmp_path / "in.npz"
    np.savez(
        path,
        a=rng.standard_normal((16, 16)).astype(np.float32),
        b=rng.standard_normal((16, 16)).astype(np.float32),
    )
    return path


def test_run_text_program_with_stats_and_trace(capsys, tmp_path, inputs):
    code, out, err = run_cli(
        capsys,
        "run",
        EXAMPLE,
        "--inputs",
        inputs,
        "--outputs",
        tmp_path / "o.npz",
        "--stats",
        "--trace",
        tmp_path / "t.json",
    )
    assert code == 0, err
    data = np.load(inputs)
    np.testing.assert_allclose(np.load(tmp_path / "o.npz")["c"], data["a"] @ data["b"], rtol=1e-5, atol=1e-5)
    assert "cycles" in out
    assert "matrix utilisation" in out
    trace = json.loads((tmp_path / "t.json").read_text())
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert slices
    assert all({"name", "ts", "dur", "pid", "tid"} <= set(e) for e in slices)


def test_run_binary_equals_text(capsys, tmp_path, inputs):
    assert run_cli(capsys, "asm", EXAMPLE, "-o", tmp_path / "p.aitb")[0] == 0
    assert (
        run_cli(capsys, "run", tmp_path / "p.aitb", "--inputs", inputs, "--outputs", tmp_path / "b.npz")[0]
        == 0
    )
    assert run_cli(capsys, "run", EXAMPLE, "--inputs", inputs, "--outputs", tmp_path / "t.npz")[0] == 0
    assert np.array_equal(np.load(tmp_path / "b.npz")["c"], np.load(tmp_path / "t.npz")["c"])


def test_binary_for_another_target_is_refused(capsys, tmp_path):
    assert run_cli(capsys, "asm", EXAMPLE, "-o", tmp_path / "p.aitb")[0] == 0
    code, _, err = run_cli(capsys, "run", tmp_path / "p.aitb", "--target", "edge")
    assert code == 1
    assert "assembled for target 'tiny'" in err
    assert "Traceback" not in err


def test_simulator_flags_are_rejected_for_graph_ir(capsys, tmp_path):
    mlir = tmp_path / "g.mlir"
    mlir.write_text(
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  func.return %x : tensor<2xf32>\n}\n"
    )
    code, _, err = run_cli(capsys, "run", mlir, "--stats")
    assert code == 1
    assert "apply to hw programs" in err


def test_session_is_exported_from_the_package(inputs):
    data = np.load(inputs)
    [c] = aitc.Session(EXAMPLE).run(None, {"a": data["a"], "b": data["b"]})
    np.testing.assert_allclose(c, data["a"] @ data["b"], rtol=1e-5, atol=1e-5)


def test_stats_json_holds_what_stats_prints(capsys, tmp_path, inputs):
    """--stats-json: total cycles, per core and per engine busy/stall/idle, deterministic."""
    two_core = EXAMPLE.with_name("two_core_allreduce.mlir")
    argv = ["run", two_core, "--seed", "3", "--stats", "--stats-json", tmp_path / "s.json"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    stats = json.loads((tmp_path / "s.json").read_text())
    assert f"cycles           {stats['cycles']} " in out
    assert [c["core"] for c in stats["per_core"]] == [0, 1]
    assert max(c["cycles"] for c in stats["per_core"]) == stats["cycles"]
    for engine in stats["engines"]:
        assert engine["busy"] + engine["stall"] + engine["idle"] == stats["cycles"]
    first = (tmp_path / "s.json").read_bytes()
    assert run_cli(capsys, *argv)[0] == 0
    assert (tmp_path / "s.json").read_bytes() == first


def test_stats_json_refuses_graph_level_ir(capsys, tmp_path):
    graph = tmp_path / "g.mlir"
    graph.write_text(
        'func.func @main(%x: tensor<4xf32> {graph.name = "x"}) -> (tensor<4xf32> {graph.name = "y"}) {\n'
        "  %y = graph.relu %x : tensor<4xf32>\n  func.return %y : tensor<4xf32>\n}\n"
    )
    code, _, err = run_cli(capsys, "run", graph, "--stats-json", tmp_path / "s.json")
    assert code == 1
    assert "--stats-json" in err
    assert not (tmp_path / "s.json").exists()
