"""`aitc verify`: the metrics, the two modes on a deliberately wrong kernel, every level against
onnxruntime, the snapshot, and the command's exit status and error paths."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from scipy import special
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from aitc.compiler import CompileOptions
from aitc.dialects import graph
from aitc.interp import graph as graph_interp
from aitc.testing import model_zoo
from aitc.tools.aitc_main import main
from aitc.verify import snapshot_files, verify_model
from aitc.verify.bisect import pipeline_passes
from aitc.verify.metrics import REL_FLOOR, compare, profile_of


def test_metrics_of_a_known_difference():
    want = np.array([1.0, -2.0, 3.0, 0.0], np.float32)
    got = want + np.array([0.0, 0.0, 0.03, 0.0], np.float32)
    c = compare(got, want)
    assert c.max_abs == pytest.approx(0.03, rel=1e-5)
    assert c.max_rel == pytest.approx(0.01, rel=1e-4)  # 0.03 / |3|
    assert c.sqnr_db == pytest.approx(10 * math.log10(14 / 0.03**2), rel=1e-5)
    g, w = got.astype(np.float64), want.astype(np.float64)
    cosine = float(np.dot(g, w) / (np.linalg.norm(g) * np.linalg.norm(w)))
    assert c.cosine == pytest.approx(cosine, rel=1e-9)
    assert c.passed is False  # 42 dB is below float32's 60
    assert "SQNR" in c.problem


def test_relative_error_of_near_zero_values_uses_the_floor():
    want = np.array([1000.0, 1e-6], np.float32)
    got = np.array([1000.0, 2e-6], np.float32)
    c = compare(got, want)
    assert c.max_rel == pytest.approx(1e-6 / (REL_FLOOR * 1000), rel=1e-3)
    assert c.passed


def test_equal_tensors_integers_nan_and_shapes():
    same = compare(np.ones(3, np.float32), np.ones(3, np.float32))
    assert (same.sqnr_db, same.cosine, same.passed) == (math.inf, 1.0, True)
    assert compare(np.zeros(2, np.float32), np.zeros(2, np.float32)).passed
    assert compare(np.array([1, 2], np.int64), np.array([1, 2], np.int64)).passed
    off_by_one = compare(np.array([1, 3], np.int64), np.array([1, 2], np.int64))
    assert (off_by_one.passed, off_by_one.profile, off_by_one.problem) == (False, "integer", "not equal")
    nan = np.array([np.nan, 1.0], np.float32)
    assert compare(nan, nan).passed
    assert not compare(np.array([np.nan, 1.0], np.float32), np.array([0.0, 1.0], np.float32)).passed
    assert "shape" in compare(np.zeros(2, np.float32), np.zeros(3, np.float32)).problem
    assert [profile_of(np.dtype(t)) for t in ("float32", "float16", "int8", "int64", "bool")] == [
        "float32", "float16", "int8", "integer", "bool",
    ]  # fmt: skip


def _mlp() -> onnx.ModelProto:
    """x -> MatMul -> Sigmoid -> MatMul -> y."""
    rng = np.random.default_rng(0)
    w1 = helper.make_tensor("w1", TensorProto.FLOAT, [8, 16], rng.standard_normal(128).astype(np.float32))
    w2 = helper.make_tensor("w2", TensorProto.FLOAT, [16, 4], rng.standard_normal(64).astype(np.float32))
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
        helper.make_node("Sigmoid", ["h"], ["s"], name="act"),
        helper.make_node("MatMul", ["s", "w2"], ["y"], name="mm2"),
    ]
    graph_ = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [w1, w2],
    )  # fmt: skip
    return helper.make_model(graph_, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("level", ["graph", "tile", "sync", "hw"])
def test_every_level_matches_onnxruntime_node_by_node(level):
    report = verify_model(_mlp(), CompileOptions(target="edge", cores=1), level, ("entire", "single"))
    assert [(c.mode, c.node) for c in report.checks] == [
        ("entire", "mm1"), ("entire", "act"), ("entire", "mm2"),
        ("single", "mm1"), ("single", "act"), ("single", "mm2"),
    ]  # fmt: skip
    assert not report.failures
    assert all(c.comparison is not None and c.comparison.sqnr_db > 100 for c in report.checks)


def test_a_wrong_kernel_fails_from_its_node_on_in_entire_mode_and_alone_in_single_mode(monkeypatch):
    wrong = lambda x: special.expit(x) * 1.01  # noqa: E731 - a 1% error in one kernel
    monkeypatch.setitem(graph_interp.KERNELS, graph.SigmoidOp, graph_interp._unary(wrong))
    monkeypatch.setitem(graph_interp.ACTIVATIONS, "sigmoid", wrong)
    report = verify_model(_mlp(), CompileOptions(target="edge", cores=1), "graph", ("entire", "single"))
    failed = [(c.mode, c.node) for c in report.failures]
    assert failed == [("entire", "act"), ("entire", "mm2"), ("single", "act")]


def test_the_snapshot_holds_every_tensor_and_maps_names():
    report = verify_model(_mlp(), CompileOptions(target="edge", cores=1), "hw", ("entire", "single"))
    files = snapshot_files(report)
    names = json.loads(files["names.json"])
    assert set(names) == {"x", "h", "s", "y"}
    assert {f"reference/{names[n]}.npy" for n in names} <= set(files)
    assert {f"entire/{names[n]}.npy" for n in ("h", "s", "y")} <= set(files)
    assert {f"single/{names[n]}.npy" for n in ("h", "s", "y")} <= set(files)
    data = json.loads(files["report.json"])
    assert (data["compared"], data["failed"], data["level"]) == (6, 0, "hw")


@dataclass(frozen=True)
class BreakSigmoidPass(ModulePass):
    """Deliberately wrong: every sigmoid (an op or a fused activation) becomes a tanh."""

    name = "break-sigmoid"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in list(op.walk()):
            if isinstance(inner, graph.SigmoidOp):
                Rewriter.replace_op(
                    inner, graph.TanhOp.create(operands=inner.operands, result_types=[inner.result_types[0]])
                )
                continue
            for key in ("activation", "op"):
                value = inner.attributes.get(key)
                if isinstance(value, StringAttr) and value.data == "sigmoid":
                    inner.attributes[key] = StringAttr("tanh")


@pytest.mark.parametrize("after", ["graph-canonicalize", "multi-buffer", "convert-sync-to-hw"])
def test_bisect_names_a_deliberately_broken_pass(after):
    options = CompileOptions(target="edge", cores=1)
    passes = pipeline_passes(options, "hw")
    at = next(i for i, p in enumerate(passes) if p.name == after) + 1
    broken = [*passes[:at], BreakSigmoidPass(), *passes[at:]]
    lines: list[str] = []
    report = verify_model(_mlp(), options, "hw", ("entire",), bisect=True, passes=broken, log=lines.append)
    assert report.bisect is not None
    assert (report.bisect.since, report.bisect.culprit) == (at + 1, at + 1)
    assert report.bisect.passes[at] == "break-sigmoid"
    assert report.bisect.divergence is not None
    assert report.bisect.divergence.node == "act"
    assert f"BISECT: running pass ({at + 1}) break-sigmoid on module" in lines
    assert f"BISECT: NOT running pass ({at + 1}) break-sigmoid on module" in lines
    assert report.bisect.probes <= 2 + math.ceil(math.log2(len(broken)))
    assert f"first diverging: pass ({at + 1}) break-sigmoid" in report.bisect.text()


def test_bisect_narrows_to_a_run_of_passes_whose_modules_cannot_run():
    """Between convert-tile-to-sync and insert-semaphores a sync module races (the sync
    interpreter refuses it), so a pass broken there is found within that run of passes."""
    options = CompileOptions(target="edge", cores=1)
    passes = pipeline_passes(options, "hw")
    at = next(i for i, p in enumerate(passes) if p.name == "convert-tile-to-sync") + 1
    semaphores = next(i for i, p in enumerate(passes) if p.name == "insert-semaphores") + 2  # after the break
    broken = [*passes[:at], BreakSigmoidPass(), *passes[at:]]
    report = verify_model(
        _mlp(), options, "hw", ("entire",), bisect=True, passes=broken, log=lambda line: None
    )
    assert report.bisect is not None
    assert report.bisect.since is not None
    assert report.bisect.since <= at + 1 <= semaphores == report.bisect.culprit
    assert "data race" in report.bisect.unrunnable
    assert "break-sigmoid" in report.bisect.text()
    assert report.bisect.divergence is not None
    assert report.bisect.divergence.node == "act"


def test_bisect_without_a_disagreement_runs_nothing():
    lines: list[str] = []
    report = verify_model(_mlp(), CompileOptions(target="edge", cores=1), "hw", bisect=True, log=lines.append)
    assert report.bisect is None
    assert lines == []


# --------------------------------------------------------------------------- the command


def run_cli(capsys, argv: Sequence[str | os.PathLike]) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def layer(tmp_path) -> Path:
    model, _ = model_zoo.transformer_encoder_layer(hidden=16, heads=2, seq=4, ffn=32, batch=2)
    path = tmp_path / "layer.onnx"
    onnx.save(model, path)
    return path


SHAPES = ["--input-shape", "x=2x4x16", "--input-shape", "attention_mask=2x4"]


def test_verify_passes_and_writes_the_snapshot(capsys, tmp_path, layer):
    out = tmp_path / "snap"
    code, stdout, err = run_cli(capsys, ["verify", layer, *SHAPES, "--mode", "both", "-o", out])
    assert code == 0, err
    assert "0 outside tolerance" in stdout
    names = json.loads((out / "names.json").read_text())
    assert "/layer.0/attention/Softmax_output_0" in names
    stem = names["/layer.0/attention/Softmax_output_0"]
    want, got = np.load(out / "reference" / f"{stem}.npy"), np.load(out / "entire" / f"{stem}.npy")
    assert want.shape == got.shape == (2, 2, 4, 4)
    np.testing.assert_allclose(got, want, atol=1e-5)
    report = json.loads((out / "report.json").read_text())
    assert report["failed"] == 0
    assert {t["mode"] for t in report["tensors"]} == {"entire", "single"}


def test_verify_exits_1_when_a_tensor_is_outside_tolerance(capsys, monkeypatch, tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(_mlp(), path)
    wrong = lambda x: special.expit(x) * 1.01  # noqa: E731
    monkeypatch.setitem(graph_interp.KERNELS, graph.SigmoidOp, graph_interp._unary(wrong))
    monkeypatch.setitem(graph_interp.ACTIVATIONS, "sigmoid", wrong)
    code, stdout, err = run_cli(capsys, ["verify", path, "--level", "graph", "-o", tmp_path / "snap"])
    assert code == 1
    assert "2 tensor(s) outside tolerance, the first 's' of node 'act'" in err
    assert "FAIL" in stdout
    assert json.loads((tmp_path / "snap" / "report.json").read_text())["failed"] == 2  # written anyway


@pytest.mark.parametrize("case", ["dynamic dims", "bad model", "a file as -o", "bad inputs"])
def test_verify_errors_write_nothing(capsys, monkeypatch, tmp_path, layer, case):
    monkeypatch.chdir(tmp_path)
    argv = ["verify", layer, *SHAPES, "-o", "snap"]
    if case == "dynamic dims":
        argv = ["verify", layer, "-o", "snap"]
    elif case == "bad model":
        Path("broken.onnx").write_bytes(b"\x08\x07garbage")
        argv[1] = "broken.onnx"
    elif case == "a file as -o":
        Path("snap").write_text("keep me")
    else:
        np.savez("wrong.npz", nothing=np.zeros(2, np.float32))
        argv += ["--inputs", "wrong.npz"]
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    code, _, err = run_cli(capsys, argv)
    assert code == 1
    assert "error:" in err
    assert "Traceback" not in err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
