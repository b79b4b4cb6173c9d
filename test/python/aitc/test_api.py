"""The short public API at the package top (`aitc.import_onnx`, `aitc.compile`, `aitc.run`,
`aitc.Session`): it gives what the CLI gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import aitc
from aitc.reference import onnxruntime_outputs
from aitc.testing import model_zoo


@pytest.fixture(scope="module")
def mlp(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    model, inputs = model_zoo.mlp(batch=4, features=16, hidden=32, classes=8)
    for value in model.graph.input:  # pin the dynamic batch dim, as --input-shape would
        value.type.tensor_type.shape.dim[0].dim_value = 4
    path = tmp_path_factory.mktemp("api") / "mlp.onnx"
    onnx.save(model, path)
    return path, inputs


def test_compile_run_and_report_match_onnxruntime(mlp):
    path, inputs = mlp
    compiled = aitc.compile(path, target="tiny")
    assert compiled.level == "hw"
    assert compiled.target.name == "tiny"
    reference = onnxruntime_outputs(onnx.load(path), inputs)
    for name, want in reference.items():
        np.testing.assert_allclose(compiled.run(inputs)[name], want, rtol=1e-4, atol=1e-5)
    assert "placement: every node on the NPU" in compiled.report()
    assert compiled.simulate(inputs).stats.cycles > 0


def test_import_and_run_at_graph_level(mlp):
    path, inputs = mlp
    module = aitc.import_onnx(path)
    reference = onnxruntime_outputs(onnx.load(path), inputs)
    outputs = aitc.run(module, inputs)
    for name, want in reference.items():
        np.testing.assert_allclose(outputs[name], want, rtol=1e-5, atol=1e-6)


def test_saved_binary_equals_the_clis(mlp, tmp_path: Path):
    path, _ = mlp
    aitc.compile(path, target="edge").save(tmp_path / "api.aitb")
    cli = [sys.executable, "-m", "aitc.tools.aitc_main", "compile", str(path), "--target", "edge"]
    subprocess.run([*cli, "-o", str(tmp_path / "cli.aitb")], check=True, capture_output=True)
    assert (tmp_path / "api.aitb").read_bytes() == (tmp_path / "cli.aitb").read_bytes()


def test_session_runs_the_saved_binary(mlp, tmp_path: Path):
    path, inputs = mlp
    compiled = aitc.compile(path, target="tiny")
    compiled.save(tmp_path / "mlp.aitb")
    session = aitc.Session(tmp_path / "mlp.aitb")
    [output] = session.run(None, inputs)
    [want] = compiled.run(inputs).values()
    np.testing.assert_array_equal(output, want)


def test_pipeline_string_names_the_target_once(mlp):
    path, _ = mlp
    pipeline = aitc.compile(path, target="tiny", emit="tile").pipeline
    assert pipeline.count("target=") == 1
    assert "convert-graph-to-tile" in pipeline


def test_a_tile_level_result_saves_mlir_but_refuses_a_binary(mlp, tmp_path: Path):
    path, inputs = mlp
    compiled = aitc.compile(path, target="tiny", emit="tile")
    compiled.save(tmp_path / "mlp.mlir")
    assert "tile.kernel" in (tmp_path / "mlp.mlir").read_text()
    with pytest.raises(ValueError, match="hw level"):
        compiled.save(tmp_path / "mlp.aitb")
    assert not (tmp_path / "mlp.aitb").exists()
    assert set(compiled.run(inputs)) == set(aitc.run(aitc.import_onnx(path), inputs))


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        aitc.nope
