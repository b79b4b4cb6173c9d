"""The `aitc` command line on good inputs: import, check, run (error paths: test_frontend_errors.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest

from aitc.frontend.onnx_import import import_onnx
from aitc.interp.run import run_module
from aitc.ir import parse_mlir
from aitc.reference import assert_close, onnxruntime_outputs
from aitc.testing import model_zoo
from aitc.tools import aitc_main
from aitc.tools.aitc_main import main

AITC = Path(sys.executable).with_name("aitc")


def run_cli(capsys, argv: Sequence[str | os.PathLike]) -> tuple[int, str, str]:
    """`aitc ARGV` in-process: (exit status, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def layer(tmp_path) -> tuple[Path, onnx.ModelProto, dict[str, np.ndarray]]:
    """A small transformer layer saved as layer.onnx: two inputs (dynamic batch), one output."""
    model, inputs = model_zoo.transformer_encoder_layer(hidden=16, heads=2, seq=4, ffn=32, batch=2)
    path = tmp_path / "layer.onnx"
    onnx.save(model, path)
    return path, model, inputs


SHAPES = ["--input-shape", "x=2x4x16", "--input-shape", "attention_mask=2x4"]


# --------------------------------------------------------------------------- aitc import


def test_import_writes_the_output_file(capsys, tmp_path, layer):
    path, _, _ = layer
    out = tmp_path / "layer.mlir"
    code, stdout, err = run_cli(capsys, ["import", path, "-o", out, *SHAPES])
    assert code == 0, err
    assert stdout == err == ""
    text = out.read_text()
    assert 'graph.name = "x"' in text
    assert 'graph.name = "attention_mask"' in text
    assert 'graph.name = "y"' in text
    assert "tensor<2x4x16xf32>" in text
    assert 'loc("/layer.0/attention/MatMul")' in text
    parse_mlir(text, str(out))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["layer.mlir", "layer.onnx"]  # no temporaries


def test_import_to_stdout_and_generic_form(capsys, layer):
    path, _, _ = layer
    code, pretty, _ = run_cli(capsys, ["import", path, *SHAPES])
    assert code == 0
    assert "graph.matmul %" in pretty
    code, generic, _ = run_cli(capsys, ["import", path, "--generic", *SHAPES])
    assert code == 0
    assert '"graph.matmul"(' in generic
    assert parse_mlir(generic).is_structurally_equivalent(parse_mlir(pretty))


def test_import_overwrites_atomically(capsys, tmp_path, layer):
    path, _, _ = layer
    out = tmp_path / "layer.mlir"
    out.write_text("old contents")
    code, _, _ = run_cli(capsys, ["import", path, "-o", out, *SHAPES])
    assert code == 0
    assert out.read_text().startswith("builtin.module")


# --------------------------------------------------------------------------- the module's target


def test_import_records_a_target_only_when_given(capsys, layer):
    path, _, _ = layer
    code, plain, _ = run_cli(capsys, ["import", path, *SHAPES])
    assert code == 0
    assert "aitc.target" not in plain
    code, targeted, err = run_cli(capsys, ["import", path, "--target", "tiny", *SHAPES])
    assert code == 0, err
    assert targeted.startswith('builtin.module attributes {aitc.target = "tiny"}')


def test_compile_takes_the_inputs_target_and_refuses_another(capsys, tmp_path, layer):
    path, _, _ = layer
    graph, binary = tmp_path / "layer.mlir", tmp_path / "layer.aitb"
    assert run_cli(capsys, ["import", path, "--target", "tiny", "-o", graph, *SHAPES])[0] == 0
    code, tile, err = run_cli(capsys, ["compile", graph, "--emit", "tile"])
    assert code == 0, err
    assert 'aitc.target = "tiny", tile.target = "tiny"' in tile
    code, out, err = run_cli(capsys, ["compile", graph, "-o", binary])
    assert code == 0, err
    assert "for target 'tiny'" in out
    code, _, err = run_cli(capsys, ["compile", graph, "--emit", "tile", "--target", "edge"])
    assert code == 1
    assert "module is for target 'tiny' (aitc.target) but --target says 'edge'; drop --target" in err


def test_compile_verify_each_gives_the_same_binary(capsys, tmp_path, layer, monkeypatch):
    """--verify-each only verifies more often: the program is the same."""
    monkeypatch.setenv("AITC_VERIFY_EACH", "0")  # the default outside the tests: verify the result
    path, _, _ = layer
    binaries = [tmp_path / "stages.aitb", tmp_path / "each.aitb"]
    for binary, extra in zip(binaries, ([], ["--verify-each"]), strict=True):
        code, _, err = run_cli(capsys, ["compile", path, *SHAPES, "--cores", "1", "-o", binary, *extra])
        assert code == 0, err
    assert binaries[0].read_bytes() == binaries[1].read_bytes()


# --------------------------------------------------------------------------- aitc check


def test_check_prints_one_row_per_node(capsys, layer):
    path, model, _ = layer
    code, out, err = run_cli(capsys, ["check", path, *SHAPES])
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["node", "op", "type", "status", "reason"]
    assert set(lines[1]) <= {"-", " "}
    rows = lines[2:-1]
    assert len(rows) == len(model.graph.node)
    for row, node in zip(rows, model.graph.node, strict=True):
        assert row.split()[:2] == [node.name, node.op_type]
        assert row.split()[2] in ("supported", "decomposed")
    assert re.fullmatch(r"\d+ supported, \d+ decomposed, 0 unsupported", lines[-1])
    supported, decomposed = (int(n) for n in re.findall(r"\d+", lines[-1])[:2])
    assert supported + decomposed == len(model.graph.node)


def test_check_needs_input_shapes_as_import_does(capsys, layer):
    """Dynamic dims: the table, then import's error naming the --input-shape to pass."""
    path, model, _ = layer
    code, out, err = run_cli(capsys, ["check", path])
    assert code == 1
    assert len(out.splitlines()) == len(model.graph.node) + 3
    assert f"{path}: error: input 'x' has dynamic dims 'N'" in err
    assert "--input-shape x=1x4x16" in err
    _, _, err = run_cli(capsys, ["check", path, "--input-shape", "x=2x4x16"])
    assert err.count(": error: ") == 1  # only attention_mask is left dynamic
    assert "input 'attention_mask' has dynamic dims" in err


def test_check_exits_1_on_unsupported_nodes(capsys, tmp_path):
    model, _ = model_zoo.mlp()
    model.graph.node[1].op_type = "Mish2"  # no such op
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    code, out, _ = run_cli(capsys, ["check", path])
    assert code == 1
    assert re.search(r"/relu1/Relu\s+Mish2\s+unsupported\s+no lowering", out)
    assert out.splitlines()[-1].endswith("1 unsupported")


def test_check_exits_1_on_model_problems(capsys, tmp_path):
    model, _ = model_zoo.mlp()
    model.opset_import[0].version = 9
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    code, _, err = run_cli(capsys, ["check", path])
    assert code == 1
    assert f"{path}: error: opset 9 is not supported" in err


def test_check_ops_lists_the_claimed_op_types(capsys):
    code, out, _ = run_cli(capsys, ["check", "--ops"])
    assert code == 0
    lines = out.splitlines()
    rows = lines[2:-1]
    ops = [row.split()[0] for row in rows]
    assert len(ops) >= 60
    assert ops == sorted(ops)
    for op in ("Conv", "MatMul", "Gemm", "Softmax", "LayerNormalization", "BatchNormalization", "Reshape"):
        assert op in ops
    assert all(row.split()[1] in ("supported", "decomposed") for row in rows)
    assert lines[-1] == f"{len(ops)} ONNX op types claimed"


def test_check_needs_a_model(capsys):
    code, _, err = run_cli(capsys, ["check"])
    assert code == 1
    assert "needs MODEL.onnx" in err


# --------------------------------------------------------------------------- aitc run


def test_run_round_trip_with_npz(capsys, tmp_path, layer):
    path, model, inputs = layer
    mlir = tmp_path / "layer.mlir"
    assert run_cli(capsys, ["import", path, "-o", mlir, *SHAPES])[0] == 0
    np.savez(tmp_path / "in.npz", **inputs)
    code, out, err = run_cli(
        capsys, ["run", mlir, "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "out.npz"]
    )
    assert code == 0, err
    assert "wrote 1 output(s)" in out
    with np.load(tmp_path / "out.npz") as saved:
        assert saved.files == [o.name for o in model.graph.output]
        assert_close({"y": saved["y"]}, {"y": onnxruntime_outputs(model, inputs)["y"]})


def test_run_onnx_directly_matches_the_mlir(capsys, tmp_path, layer):
    path, _, inputs = layer
    np.savez(tmp_path / "in.npz", **inputs)
    args = ["--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "direct.npz"]
    code, _, err = run_cli(capsys, ["run", path, *SHAPES, *args])
    assert code == 0, err
    expected = run_module(import_onnx(path, {k: v.shape for k, v in inputs.items()}), inputs)
    with np.load(tmp_path / "direct.npz") as saved:
        assert np.array_equal(saved["y"], expected["y"])


def test_run_prints_a_summary_without_outputs(capsys, tmp_path, layer):
    path, model, inputs = layer
    np.savez(tmp_path / "in.npz", **inputs)
    code, out, _ = run_cli(capsys, ["run", path, *SHAPES, "--inputs", tmp_path / "in.npz"])
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["output", "type", "min", "max", "mean", "first", "values"]
    row = re.match(r"y\s+float32\[2, 4, 16\]\s+(\S+)\s+(\S+)\s+(\S+)", lines[2])
    assert row, lines[2]
    y = onnxruntime_outputs(model, inputs)["y"]
    low, high = float(row[1]), float(row[2])
    assert low == pytest.approx(y.min(), rel=1e-4, abs=1e-4)
    assert high == pytest.approx(y.max(), rel=1e-4, abs=1e-4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npz", "layer.onnx"]


def test_run_with_random_inputs(capsys, layer):
    path, _, _ = layer
    code, out, _ = run_cli(capsys, ["run", path, *SHAPES, "--seed", "3"])
    assert code == 0
    assert out.splitlines()[0] == "no --inputs: using random inputs (seed 3) for x, attention_mask"


def test_run_single_npy_input(capsys, tmp_path):
    model, inputs = model_zoo.mlp(batch=2)
    onnx.save(model, tmp_path / "mlp.onnx")
    np.save(tmp_path / "x.npy", inputs["x"])
    args = ["run", tmp_path / "mlp.onnx", "--input-shape", "x=2x64", "--inputs", tmp_path / "x.npy"]
    code, _, err = run_cli(capsys, [*args, "--outputs", tmp_path / "probs.npz"])
    assert code == 0, err
    with np.load(tmp_path / "probs.npz") as saved:
        assert_close({"probs": saved["probs"]}, {"probs": onnxruntime_outputs(model, inputs)["probs"]})


# --------------------------------------------------------------------------- exit statuses


def test_internal_errors_exit_2_without_traceback(capsys, monkeypatch, layer):
    path, _, _ = layer

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(aitc_main, "cmd_check", broken)
    monkeypatch.delenv("AITC_DEBUG", raising=False)
    code, _, err = run_cli(capsys, ["check", path])
    assert code == 2
    assert "internal error: RuntimeError: boom" in err
    assert "AITC_DEBUG=1" in err
    assert "Traceback" not in err
    monkeypatch.setenv("AITC_DEBUG", "1")
    code, _, err = run_cli(capsys, ["check", path])
    assert code == 2
    assert "Traceback" in err


def test_real_process_import_then_run(tmp_path, layer):
    path, model, inputs = layer
    mlir = tmp_path / "layer.mlir"
    np.savez(tmp_path / "in.npz", **inputs)
    commands = [
        [AITC, "import", path, "-o", mlir, *SHAPES],
        [AITC, "run", mlir, "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "out.npz"],
    ]
    for command in commands:
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stderr
    with np.load(tmp_path / "out.npz") as saved:
        assert saved.files == ["y"]
        assert_close({"y": saved["y"]}, {"y": onnxruntime_outputs(model, inputs)["y"]})


def test_non_ascii_names_survive_import_print_and_run(capsys, tmp_path):
    """ONNX allows any UTF-8 name: node names become escaped ASCII locations (xDSL cannot parse
    non-ASCII `loc` strings) and input names round-trip through the printed .mlir."""
    node = onnx.helper.make_node("Relu", ["entrée"], ["y"], name="nœud")
    graph = onnx.helper.make_graph(
        [node],
        "g",
        [onnx.helper.make_tensor_value_info("entrée", onnx.TensorProto.FLOAT, [2])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])],
    )
    onnx.save(
        onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)]), tmp_path / "u.onnx"
    )
    np.savez(tmp_path / "in.npz", **{"entrée": np.array([-1.0, 2.0], np.float32)})  # pyright: ignore[reportArgumentType]  -- numpy's stub: a **dict of arrays could bind savez's allow_pickle: bool
    assert run_cli(capsys, ["import", tmp_path / "u.onnx", "-o", tmp_path / "u.mlir"])[0] == 0
    assert 'loc("n\\\\u0153ud")' in (tmp_path / "u.mlir").read_text()
    code, _, err = run_cli(
        capsys, ["run", tmp_path / "u.mlir", "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "o.npz"]
    )
    assert code == 0, err
    assert np.load(tmp_path / "o.npz")["y"].tolist() == [0.0, 2.0]


def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path):
    """`aitc-opt big.mlir | head -1`: once the reader closes the pipe, the command stops with
    the SIGPIPE status and no "internal error" (before, BrokenPipeError was reported as a bug;
    every command goes through `diagnostics.run_command`)."""
    text = "\n".join(
        f"func.func @f{i}(%x: tensor<4xf32>) -> tensor<4xf32> {{\n"
        f"  %y = graph.relu %x : tensor<4xf32>\n  func.return %y : tensor<4xf32>\n}}"
        for i in range(3000)
    )
    source = tmp_path / "big.mlir"
    source.write_text(text)
    process = subprocess.Popen(
        [AITC.with_name("aitc-opt"), source],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.readline()
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) in (0, 141), stderr
    assert "internal error" not in stderr
    assert "Traceback" not in stderr


def test_the_inputs_pin_the_dynamic_dims(capsys, tmp_path):
    """A model with a dynamic batch dim runs, verifies and profiles on --inputs alone: their
    shapes pin the dims --input-shape leaves open (as onnxruntime takes them); without inputs
    the dims still need --input-shape."""
    model, _ = model_zoo.mlp(batch=2, features=8, hidden=16, classes=4)
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param
    onnx.save(model, tmp_path / "m.onnx")
    x = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    code, _, err = run_cli(capsys, ["run", tmp_path / "m.onnx", "--inputs", tmp_path / "in.npz",
                                    "--outputs", tmp_path / "out.npz"])  # fmt: skip
    assert code == 0, err
    got = dict(np.load(tmp_path / "out.npz"))
    want = onnxruntime_outputs(model, {"x": x})
    assert {k: v.shape for k, v in got.items()} == {k: v.shape for k, v in want.items()}
    assert_close(got, want)
    for command in (["verify"], ["perf", "--cores", "1"]):
        code, _, err = run_cli(capsys, [*command, tmp_path / "m.onnx", "--inputs", tmp_path / "in.npz"])
        assert code == 0, err
    code, _, err = run_cli(capsys, ["run", tmp_path / "m.onnx"])
    assert code == 1
    assert "pin them with --input-shape" in err
