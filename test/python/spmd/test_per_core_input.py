"""A per-core graph (`aitc compile --emit graph --cores N`) given back to `aitc compile`: it is
lowered for the cores of its grid as it is, and runs as the direct multi-core compile does."""

from __future__ import annotations

import numpy as np

from aitc.testing import model_zoo
from aitc.tools.aitc_main import main


def test_a_per_core_graph_compiles_to_the_same_program_outputs(tmp_path, capsys):
    model, inputs = model_zoo.transformer_encoder_layer(batch=2)
    onnx_path = tmp_path / "layer.onnx"
    onnx_path.write_bytes(model.SerializeToString())
    np.savez(tmp_path / "in.npz", **inputs)
    shapes = [
        arg
        for name, v in inputs.items()
        for arg in ("--input-shape", f"{name}={'x'.join(map(str, v.shape))}")
    ]
    per_core = tmp_path / "layer4.mlir"
    assert (
        main(["compile", str(onnx_path), *shapes, "--cores", "4", "--emit", "graph", "-o", str(per_core)])
        == 0
    )
    outputs = {}
    for name, source, extra in (("direct", onnx_path, shapes), ("from-graph", per_core, [])):
        binary = tmp_path / f"{name}.aitb"
        assert main(["compile", str(source), *extra, "--cores", "4", "-o", str(binary)]) == 0
        out = tmp_path / f"{name}.npz"
        assert main(["run", str(binary), "--inputs", str(tmp_path / "in.npz"), "--outputs", str(out)]) == 0
        with np.load(out) as arrays:
            outputs[name] = arrays["y"]
    np.testing.assert_allclose(outputs["from-graph"], outputs["direct"], rtol=1e-5, atol=1e-6)
    capsys.readouterr()


def test_a_per_core_graph_refuses_another_core_count(tmp_path, capsys):
    model, inputs = model_zoo.mlp()
    onnx_path = tmp_path / "mlp.onnx"
    onnx_path.write_bytes(model.SerializeToString())
    shapes = ["--input-shape", f"x={'x'.join(map(str, inputs['x'].shape))}"]
    per_core = tmp_path / "mlp4.mlir"
    assert (
        main(
            [
                "compile",
                str(onnx_path),
                *shapes,
                "--cores",
                "4",
                "--shard",
                "tp",
                "--emit",
                "graph",
                "-o",
                str(per_core),
            ]
        )
        == 0
    )
    capsys.readouterr()
    out = tmp_path / "x.aitb"
    assert main(["compile", str(per_core), "--cores", "2", "-o", str(out)]) == 1
    assert "per-core program for 4 cores" in capsys.readouterr().err
    assert not out.exists()
