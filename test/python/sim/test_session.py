"""`aitc.sim.Session`: onnxruntime-style runs of .mlir and .aitb programs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aitc.binary import save_program
from aitc.diagnostics import AitcError
from aitc.ir import parse_mlir
from aitc.sim import Session
from aitc.target import load_target

EXAMPLE = Path(__file__).parents[3] / "examples" / "hw" / "tiled_matmul.mlir"
RNG = np.random.default_rng(7)
INPUTS = {name: RNG.standard_normal((16, 16)).astype(np.float32) for name in ("a", "b")}


def test_session_runs_mlir_and_describes_its_io():
    session = Session(EXAMPLE)
    assert [(t.name, t.shape, str(t.dtype)) for t in session.get_inputs()] == [
        ("a", (16, 16), "float32"),
        ("b", (16, 16), "float32"),
    ]
    assert [t.name for t in session.get_outputs()] == ["c"]
    [c] = session.run(["c"], INPUTS)
    np.testing.assert_allclose(c, INPUTS["a"] @ INPUTS["b"], rtol=1e-5, atol=1e-6)


def test_session_runs_an_assembled_binary_identically(tmp_path):
    binary = tmp_path / "tiled_matmul.aitb"
    save_program(binary, parse_mlir(EXAMPLE.read_text()), load_target("tiny"))
    from_text, from_binary = Session(EXAMPLE), Session(binary, target="tiny")
    [expected], [actual] = from_text.run(None, INPUTS), from_binary.run(None, INPUTS)
    np.testing.assert_array_equal(actual, expected)
    assert from_binary.last_result is not None
    assert from_text.last_result is not None
    assert from_binary.last_result.stats == from_text.last_result.stats


def test_binary_for_another_target_is_refused(tmp_path):
    binary = tmp_path / "tiled_matmul.aitb"
    save_program(binary, parse_mlir(EXAMPLE.read_text()), load_target("tiny"))
    with pytest.raises(AitcError, match="edge"):
        Session(binary, target="edge")


def test_session_errors(tmp_path):
    with pytest.raises(AitcError, match="unknown program file type"):
        Session(tmp_path / "model.onnx")
    with pytest.raises(AitcError, match="no such file"):
        Session(tmp_path / "missing.mlir")
    with pytest.raises(AitcError, match=r"unknown output\(s\) 'd' \(outputs: c\)"):
        Session(EXAMPLE).run(["d"], INPUTS)
