"""One test per user-facing diagnostic of `aitc import` / `aitc check` / `aitc run`.

Each bad input must give: exit status 1, `FILE: error: ...` lines that say what is wrong (and,
where it helps, how to fix it), no traceback, and no output file (nor a temporary one) left
behind. Most tests call the CLI in-process; `test_real_process_*` run the installed `aitc`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from aitc.diagnostics import AitcError
from aitc.frontend import onnx_import
from aitc.frontend.onnx_import import import_onnx
from aitc.testing import model_zoo
from aitc.tools.aitc_main import main

AITC = Path(sys.executable).with_name("aitc")
F32 = TensorProto.FLOAT
I64 = TensorProto.INT64


# --------------------------------------------------------------------------- helpers


def tensor(name: str, dims: Sequence[int | str | None] | None, elem_type: int = F32) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, None if dims is None else list(dims))


def make_model(nodes, inputs, outputs, initializers=(), opset: int = 17, extra_opsets=()) -> onnx.ModelProto:
    """A model built without onnx.checker, so that it can be as broken as a test needs."""
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    opsets = [helper.make_opsetid("", opset), *extra_opsets]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def relu_model(dims: Sequence[int | str], opset: int = 17) -> onnx.ModelProto:
    return make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [tensor("x", dims)],
        [tensor("y", dims)],
        opset=opset,
    )


def add_weight_model(weight: onnx.TensorProto) -> onnx.ModelProto:
    """y = x + w, with `w` an initializer the test has prepared (external, absurd...)."""
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    return make_model([node], [tensor("x", [4, 4])], [tensor("y", [4, 4])], [weight])


def save(model: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


def run_cli(capsys, argv: Sequence[str | os.PathLike]) -> tuple[int, str, str]:
    """`aitc ARGV` in-process: (exit status, stdout, stderr)."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exit_:  # argparse usage errors
        code = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def assert_user_error(code: int, err: str, where: str | os.PathLike, *fragments: str) -> None:
    """Exit 1; every line `WHERE: error|note: ...` (or a compiler-style located error); fragments present."""
    assert code == 1, err
    assert "Traceback" not in err
    assert "internal error" not in err
    assert err.strip(), "no message"
    for fragment in fragments:
        assert fragment in err, f"{fragment!r} not in:\n{err}"
    first = err.splitlines()[0]
    assert first.startswith(f"{where}: error: ") or re.match(r"\S+:\d+:\d+: error: ", first), first


def assert_nothing_written(folder: Path, *kept: Path) -> None:
    """`folder` holds only the inputs the test wrote (no output, no temporary file)."""
    leftovers = sorted(p.name for p in folder.iterdir() if p not in kept)
    assert leftovers == [], leftovers


def import_fails(capsys, tmp_path: Path, model_path: Path, *fragments: str, extra=()) -> str:
    """`aitc import MODEL -o OUT` fails cleanly with `fragments` in the message; returns stderr."""
    inputs = set(tmp_path.iterdir())
    out = tmp_path / "out.mlir"
    code, _, err = run_cli(capsys, ["import", model_path, "-o", out, *extra])
    assert_user_error(code, err, model_path, *fragments)
    assert_nothing_written(tmp_path, *inputs)
    return err


# --------------------------------------------------------------------------- not an ONNX file


def test_truncated_file(capsys, tmp_path):
    data = model_zoo.mlp()[0].SerializeToString()
    path = tmp_path / "truncated.onnx"
    path.write_bytes(data[: len(data) // 2])
    import_fails(
        capsys, tmp_path, path, "not an ONNX model", "protobuf parse failed", "note: the file is truncated"
    )


def test_truncated_before_the_opset(capsys, tmp_path):
    """Cut exactly where opset_import starts: protobuf parses it, the opset is missing."""
    model = relu_model([2, 4])
    full = model.SerializeToString()
    del model.opset_import[:]
    path = tmp_path / "cut.onnx"
    path.write_bytes(full[: len(model.SerializeToString())])
    import_fails(capsys, tmp_path, path, "declares no opset", "truncated")


def test_png_file(capsys, tmp_path):
    path = tmp_path / "photo.onnx"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06\x00\x00")
    import_fails(capsys, tmp_path, path, "not an ONNX model", "looks like a PNG image")


def test_text_file(capsys, tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("this is not a model\nat all\n")
    import_fails(
        capsys, tmp_path, path, "not an ONNX model", "a text file starting with 'this is not a model'"
    )


def test_mlir_file_given_to_import(capsys, tmp_path):
    path = tmp_path / "model.onnx"
    path.write_text("builtin.module {\n}\n")
    import_fails(capsys, tmp_path, path, "looks like an MLIR text file")


def test_empty_file(capsys, tmp_path):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    import_fails(capsys, tmp_path, path, "empty (0 bytes)", "not an ONNX model")


def test_missing_file(capsys, tmp_path):
    import_fails(capsys, tmp_path, tmp_path / "nothere.onnx", "no such file")


def test_folder_instead_of_file(capsys, tmp_path):
    folder = tmp_path / "model.onnx"
    folder.mkdir()
    import_fails(capsys, tmp_path, folder, "is a folder")


# --------------------------------------------------------------------------- broken models


def test_missing_initializer(capsys, tmp_path):
    node = helper.make_node("MatMul", ["x", "weight"], ["y"], name="/fc/MatMul")
    path = save(make_model([node], [tensor("x", [2, 3])], [tensor("y", [2, 4])]), tmp_path / "m.onnx")
    import_fails(capsys, tmp_path, path, "node '/fc/MatMul' (MatMul) reads 'weight'", "missing initializer")


def test_inconsistent_matmul_shapes(capsys, tmp_path):
    node = helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")
    model = make_model([node], [tensor("a", [3, 4]), tensor("b", [5, 6])], [tensor("y", [3, 6])])
    err = import_fails(
        capsys, tmp_path, save(model, tmp_path / "m.onnx"), "node 'mm' (MatMul)", "Incompatible dimensions"
    )
    assert "a float[3x4]" in err
    assert "b float[5x6]" in err


def test_declared_output_shape_contradicts_inference(capsys, tmp_path):
    node = helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")
    model = make_model([node], [tensor("a", [3, 4]), tensor("b", [4, 6])], [tensor("y", [3, 7])])
    import_fails(capsys, tmp_path, save(model, tmp_path / "m.onnx"), "node 'mm' (MatMul)", "(6) vs (7)")


def test_graph_op_verification_blames_the_onnx_node(capsys, tmp_path):
    """onnx's shape inference lets Conv's group=3 on 8 channels through; the graph verifier does not."""
    model, _ = model_zoo.depthwise_separable(channels=8)
    conv = next(n for n in model.graph.node if n.name == "/dw/Conv")
    next(a for a in conv.attribute if a.name == "group").i = 3
    path = save(model, tmp_path / "m.onnx")
    import_fails(
        capsys, tmp_path, path, "node '/dw/Conv' (Conv): ", "group", extra=["--input-shape", "x=1x8x12x12"]
    )


def test_gather_nd_batch_dims_that_onnx_inference_lets_through(capsys, tmp_path):
    """onnx's inference does not compare GatherND's batch dims; the graph verifier does."""
    node = helper.make_node("GatherND", ["x", "i"], ["y"], name="gnd", batch_dims=1)
    model = make_model(
        [node], [tensor("x", [2, 3, 4]), tensor("i", [3, 1], TensorProto.INT64)], [tensor("y", [3, 4])]
    )
    import_fails(
        capsys, tmp_path, save(model, tmp_path / "m.onnx"), "node 'gnd' (GatherND): batch dims differ"
    )


def test_output_without_shape(capsys, tmp_path):
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    model = make_model([node], [tensor("x", [2, 4])], [tensor("y", None)])
    import_fails(capsys, tmp_path, save(model, tmp_path / "m.onnx"), "graph output 'y' declares no shape")


def test_opset_too_old(capsys, tmp_path):
    path = save(relu_model([2, 4], opset=9), tmp_path / "old.onnx")
    import_fails(capsys, tmp_path, path, "opset 9 is not supported", "convert_version")


def test_the_highest_of_several_default_opsets_counts(capsys, tmp_path):
    """ONNX binds every node to the highest version the model imports: [9, 17] means opset 17."""
    model = relu_model([2, 4], opset=9)
    model.opset_import.append(helper.make_opsetid("", 17))
    path = save(model, tmp_path / "m.onnx")
    for command in (["check", path], ["import", path, "-o", tmp_path / "m.mlir"]):
        code, _, err = run_cli(capsys, command)
        assert (code, err) == (0, "")


def test_unsupported_element_type(capsys, tmp_path):
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    model = make_model(
        [node], [tensor("x", [2], TensorProto.BFLOAT16)], [tensor("y", [2], TensorProto.BFLOAT16)]
    )
    import_fails(
        capsys, tmp_path, save(model, tmp_path / "m.onnx"), "graph input 'x' has element type BFLOAT16"
    )


def _unsupported_model() -> onnx.ModelProto:
    """A custom-domain op and NonMaxSuppression, on an input with a dynamic batch."""
    nodes = [
        helper.make_node("FancyOp", ["boxes"], ["fancy"], name="/head/FancyOp", domain="com.example"),
        helper.make_node(
            "NonMaxSuppression", ["fancy", "scores"], ["selected"], name="/nms/NonMaxSuppression"
        ),
    ]
    inputs = [tensor("boxes", ["N", 10, 4]), tensor("scores", ["N", 1, 10])]
    outputs = [tensor("selected", [None, 3], TensorProto.INT64)]
    return make_model(nodes, inputs, outputs, extra_opsets=[helper.make_opsetid("com.example", 1)])


def test_unsupported_ops_are_all_listed_before_any_work(capsys, tmp_path, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("validation must fail before shapes are pinned or inferred")

    monkeypatch.setattr(onnx_import, "_load_external_data", no_work)
    monkeypatch.setattr(onnx_import, "pin_input_shapes", no_work)
    monkeypatch.setattr(onnx_import, "_infer_shapes", no_work)
    path = save(_unsupported_model(), tmp_path / "detector.onnx")
    err = import_fails(
        capsys,
        tmp_path,
        path,
        "node '/head/FancyOp' (FancyOp): unsupported: custom domain 'com.example'",
        "node '/nms/NonMaxSuppression' (NonMaxSuppression): unsupported",
        "aitc check",
    )
    assert err.count(": error: ") == 2


def test_structural_problems_come_together(capsys, tmp_path):
    """An undefined name and an unsupported op in one model: both reported in one run."""
    nodes = [
        helper.make_node("Add", ["x", "bias"], ["a"], name="add"),
        helper.make_node("NonMaxSuppression", ["a", "a"], ["y"], name="nms"),
    ]
    model = make_model(nodes, [tensor("x", [1, 4, 4])], [tensor("y", [None, 3], TensorProto.INT64)])
    err = import_fails(capsys, tmp_path, save(model, tmp_path / "m.onnx"), "reads 'bias'", "node 'nms'")
    assert err.count(": error: ") == 2


def test_check_lists_unsupported_ops_and_exits_1(capsys, tmp_path):
    path = save(_unsupported_model(), tmp_path / "detector.onnx")
    code, out, _ = run_cli(capsys, ["check", path])
    assert code == 1
    assert "/head/FancyOp" in out
    assert "/nms/NonMaxSuppression" in out
    assert "2 unsupported" in out


# --------------------------------------------------------------------------- sizes and shapes


def test_absurd_input_dims(capsys, tmp_path):
    path = save(relu_model([10**12, 4]), tmp_path / "huge.onnx")
    import_fails(capsys, tmp_path, path, "input 'x' has absurd dimensions [1000000000000, 4]")


def test_absurd_initializer_dims(capsys, tmp_path):
    weight = onnx.TensorProto(name="w", data_type=F32, dims=[10**6, 10**6], raw_data=b"\0" * 16)
    path = save(add_weight_model(weight), tmp_path / "huge.onnx")
    import_fails(capsys, tmp_path, path, "initializer 'w' has absurd dimensions [1000000, 1000000]")


def test_absurd_input_shape_option(capsys, tmp_path):
    path = save(relu_model(["N", 4]), tmp_path / "m.onnx")
    for shape in ("100000x100000", "4000000000x4"):
        import_fails(capsys, tmp_path, path, "absurd dimensions", extra=["--input-shape", f"x={shape}"])


def test_dynamic_dims_need_input_shape(capsys, tmp_path):
    model, _ = model_zoo.transformer_encoder_layer(hidden=16, heads=2, seq=4, ffn=32)
    path = save(model, tmp_path / "layer.onnx")
    err = import_fails(capsys, tmp_path, path, "input 'x' has dynamic dims 'N'", "--input-shape x=1x4x16")
    assert "--input-shape attention_mask=1x4" in err
    # the suggested options work as given
    options = [arg for m in re.findall(r"(--input-shape \S+)", err) for arg in m.split()]
    out = tmp_path / "layer.mlir"
    code, _, err = run_cli(capsys, ["import", path, "-o", out, *options])
    assert code == 0, err
    assert "tensor<1x4x16xf32>" in out.read_text()


def test_input_without_shape(capsys, tmp_path):
    path = save(relu_model([2, 4]), tmp_path / "m.onnx")
    model = onnx.load(path)
    model.graph.input[0].type.tensor_type.ClearField("shape")
    save(model, path)
    import_fails(capsys, tmp_path, path, "input 'x' has no shape", "--input-shape x=")


def test_input_shape_names_unknown_input(capsys, tmp_path):
    path = save(relu_model(["N", 4]), tmp_path / "m.onnx")
    import_fails(
        capsys,
        tmp_path,
        path,
        "--input-shape names 'image', which is not a model input (inputs: x)",
        extra=["--input-shape", "x=2x4", "--input-shape", "image=1x3"],
    )


def test_input_shape_with_wrong_rank(capsys, tmp_path):
    path = save(relu_model(["N", 4]), tmp_path / "m.onnx")
    import_fails(
        capsys, tmp_path, path, "rank 3, but the model says rank 2", extra=["--input-shape", "x=2x4x1"]
    )


def test_malformed_input_shape_option(capsys, tmp_path):
    path = save(relu_model(["N", 4]), tmp_path / "m.onnx")
    code, _, err = run_cli(capsys, ["import", path, "--input-shape", "x=2xfour"])
    assert code == 2  # argparse's usage error
    assert "dims must be integers" in err
    assert "Traceback" not in err


# --------------------------------------------------------------------------- external data


def external_weight(location: str, **extra: str) -> onnx.TensorProto:
    weight = onnx.TensorProto(name="w", data_type=F32, dims=[4, 4], data_location=TensorProto.EXTERNAL)
    for key, value in {"location": location, **extra}.items():
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    return weight


@pytest.mark.parametrize("location", ["../secret.bin", "sub/../../secret.bin", "/etc/passwd"])
def test_external_data_outside_the_model_folder(capsys, tmp_path, location):
    (tmp_path / "secret.bin").write_bytes(b"\0" * 64)
    folder = tmp_path / "model"
    folder.mkdir()
    path = save(add_weight_model(external_weight(location)), folder / "m.onnx")
    import_fails(
        capsys, folder, path, f"initializer 'w': external data path '{location}' leaves the model's folder"
    )


def test_external_data_symlink_out_of_the_folder(capsys, tmp_path):
    (tmp_path / "secret.bin").write_bytes(b"\0" * 64)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "w.bin").symlink_to(tmp_path / "secret.bin")
    path = save(add_weight_model(external_weight("w.bin")), folder / "m.onnx")
    import_fails(capsys, folder, path, "leaves the model's folder")


def test_missing_external_data_file(capsys, tmp_path):
    path = save(add_weight_model(external_weight("weights.bin")), tmp_path / "m.onnx")
    import_fails(capsys, tmp_path, path, "external data file 'weights.bin' is missing")


def test_external_data_too_short(capsys, tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"\0" * 10)
    path = save(add_weight_model(external_weight("weights.bin")), tmp_path / "m.onnx")
    import_fails(capsys, tmp_path, path, "gives 10 bytes", "needs 64")


def test_external_data_with_garbage_offset(capsys, tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"\0" * 64)
    path = save(add_weight_model(external_weight("weights.bin", offset="abc")), tmp_path / "m.onnx")
    import_fails(capsys, tmp_path, path, "are not integers")


def test_external_data_problems_come_with_the_unsupported_ops(capsys, tmp_path):
    """Checked (not read) before any weight is loaded, and reported together with the other problems."""
    model = add_weight_model(external_weight("weights.bin"))
    model.graph.node.append(helper.make_node("NonMaxSuppression", ["y", "y"], ["boxes"], name="nms"))
    model.graph.output.append(tensor("boxes", [None, 3], TensorProto.INT64))
    path = save(model, tmp_path / "m.onnx")
    err = import_fails(capsys, tmp_path, path, "'weights.bin' is missing", "node 'nms' (NonMaxSuppression)")
    assert err.count(": error: ") == 2
    code, _, err = run_cli(capsys, ["check", path])
    assert code == 1
    assert "'weights.bin' is missing" in err


def test_external_data_loads_from_the_model_folder(capsys, tmp_path):
    (tmp_path / "weights.bin").write_bytes(np.arange(16, dtype=np.float32).tobytes())
    path = save(
        add_weight_model(external_weight("weights.bin", offset="0", length="64")), tmp_path / "m.onnx"
    )
    code, _, err = run_cli(capsys, ["import", path, "-o", tmp_path / "m.mlir"])
    assert code == 0, err


def test_model_proto_with_unloaded_external_data(tmp_path, monkeypatch):
    """The API never reads external data relative to the current folder."""
    (tmp_path / "weights.bin").write_bytes(b"\0" * 64)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AitcError, match="keeps its data in an external file that was not loaded"):
        import_onnx(add_weight_model(external_weight("weights.bin")))


# --------------------------------------------------------------------------- check agrees with import


def _ones(name: str, shape: Sequence[int], dtype=np.float32) -> onnx.TensorProto:
    return numpy_helper.from_array(np.ones(shape, dtype), name)


def _single(op_type: str, x_dims, y_dims, weights=(), y_type: int = F32, **attributes) -> onnx.ModelProto:
    """y = OpType(x, *weights), the node named after its op type in lower case (`matmul`)."""
    inputs = ["x", *(w.name for w in weights)]
    node = helper.make_node(op_type, inputs, ["y"], name=op_type.lower(), **attributes)
    return make_model([node], [tensor("x", x_dims)], [tensor("y", y_dims, y_type)], weights)


def _relus(*edges: tuple[str, str, str], inputs=("x",), outputs=("y",), weights=()) -> onnx.ModelProto:
    """Relu nodes given as (name, input, output), on float[2] values."""
    nodes = [helper.make_node("Relu", [i], [o], name=n) for n, i, o in edges]
    return make_model(nodes, [tensor(i, [2]) for i in inputs], [tensor(o, [2]) for o in outputs], weights)


def _raw_data_off_by(extra: int) -> onnx.ModelProto:
    """y = x + w, where w's raw_data has `extra` bytes more (fewer, if negative) than its 4x4 floats."""
    weight = _ones("w", [4, 4])
    weight.raw_data = weight.raw_data[:extra] if extra < 0 else weight.raw_data + b"\0" * extra
    return add_weight_model(weight)


def _folded(op_type: str, constants: list[onnx.TensorProto], y_dims=(), y_type: int = F32) -> onnx.ModelProto:
    """y = OpType(constants...): a node import folds (no graph input)."""
    node = helper.make_node(op_type, [c.name for c in constants], ["y"], name=op_type.lower())
    return make_model([node], [], [tensor("y", list(y_dims), y_type)], constants)


def _ir_version_0() -> onnx.ModelProto:
    model = relu_model([2, 4])
    model.ir_version = 0
    return model


def _range_with_delta_0() -> onnx.ModelProto:
    bounds = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("a", 0), ("b", 5), ("d", 0))]
    node = helper.make_node("Range", ["a", "b", "d"], ["y"], name="range")
    return make_model([node], [], [tensor("y", [None])], bounds)


_SHAPE_16 = numpy_helper.from_array(np.array([16], np.int64), "s")
_CONV = ([1, 4, 5, 5], [1, 4, 3, 3])
_POOL = ([1, 1, 5, 5], [1, 1, 4, 4])

INVALID_MODELS = [
    pytest.param(
        lambda: _single("MatMul", [2, 8], [2, 4], [_ones("w", [9, 4])]),
        ["node 'matmul' (MatMul)", "Incompatible dimensions", "w float[9x4]"],
        id="matmul-weight-mismatch",
    ),
    pytest.param(
        lambda: _single("Reshape", [2, 8], [16]),
        ["node 'reshape' (Reshape): invalid: ", "input size 1 not in range"],
        id="reshape-without-shape",
    ),
    pytest.param(
        lambda: _single("Reshape", [2, 8], [16], [_SHAPE_16], allowzero=3),
        ["node 'reshape' (Reshape): invalid: attribute allowzero=3 (ONNX allows only 0 or 1)"],
        id="reshape-allowzero-3",
    ),
    pytest.param(
        lambda: _single("Conv", *_CONV, [_ones("w", [4, 4, 3, 3])], group=-1),
        ["node 'conv' (Conv): invalid: attribute group=-1 (ONNX requires values >= 1)"],
        id="conv-group-negative",
    ),
    pytest.param(
        lambda: _single("Conv", *_CONV, [_ones("w", [4, 3, 3, 3])]),
        ["node 'conv' (Conv): weight expects 3 input channels, input has 4"],
        id="conv-channels-mismatch",
    ),
    pytest.param(
        lambda: _single("Gemm", [2, 4], [2, 4], [_ones("w", [4, 4])], transB=2),
        ["node 'gemm' (Gemm): invalid: attribute transB=2"],
        id="gemm-transB-2",
    ),
    pytest.param(
        lambda: _single("Mod", [2], [2], [_ones("w", [2])], fmod=5),
        ["node 'mod' (Mod): invalid: attribute fmod=5"],
        id="mod-fmod-5",
    ),
    pytest.param(
        lambda: _single("MaxPool", *_POOL, kernel_shape=[2, 2], ceil_mode=3),
        ["node 'maxpool' (MaxPool): invalid: attribute ceil_mode=3"],
        id="maxpool-ceil-mode-3",
    ),
    pytest.param(
        lambda: _single("MaxPool", *_POOL, kernel_shape=[2, 2], strides=[0, 1]),
        ["node 'maxpool' (MaxPool): invalid: attribute strides=[0, 1] (ONNX requires values >= 1)"],
        id="maxpool-stride-0",
    ),
    pytest.param(
        lambda: _single("ArgMax", [2, 3], [1, 3], y_type=TensorProto.INT64, select_last_index=2),
        ["node 'argmax' (ArgMax): invalid: attribute select_last_index=2"],
        id="argmax-select-last-index-2",
    ),
    pytest.param(
        _range_with_delta_0, ["node 'range' (Range): ", "do not make a finite range"], id="range-delta-0"
    ),
    pytest.param(_ir_version_0, ["invalid ONNX model", "ir_version"], id="ir-version-0"),
    pytest.param(
        lambda: _raw_data_off_by(-54),
        ["initializer 'w' holds 10 bytes of raw data, but the 4x4 FLOAT tensor needs 64"],
        id="raw-data-short",
    ),
    pytest.param(lambda: _raw_data_off_by(8), ["initializer 'w' holds 72 bytes"], id="raw-data-long"),
    pytest.param(
        lambda: relu_model([-3, 2]), ["input 'x' has a negative dimension [-3, 2]"], id="negative-input-dim"
    ),
    pytest.param(
        lambda: relu_model([2**40, 2]),
        ["input 'x' has absurd dimensions [1099511627776, 2]"],
        id="absurd-input-dim",
    ),
    pytest.param(
        lambda: relu_model(["N", 4]),
        ["input 'x' has dynamic dims 'N'", "--input-shape x=1x4"],
        id="dynamic-dims-not-pinned",
    ),
    pytest.param(
        lambda: _relus(("relu", "x", "y"), outputs=()), ["the graph has no outputs"], id="no-outputs"
    ),
    pytest.param(
        lambda: _relus(("relu", "x", "y"), outputs=("y", "y")),
        ["graph output 'y' is listed 2 times"],
        id="output-listed-twice",
    ),
    pytest.param(
        lambda: _relus(("relu", "x", "y"), inputs=("x", "x")),
        ["graph input 'x' is listed 2 times"],
        id="input-listed-twice",
    ),
    pytest.param(
        lambda: _relus(("relu", "x", "y"), weights=[_ones("w", [2]), _ones("w", [2])]),
        ["initializer 'w' is listed 2 times"],
        id="initializer-listed-twice",
    ),
    pytest.param(
        lambda: _relus(("relu", "x", "y"), ("relu2", "y", "x")),
        ["node 'relu2' (Relu) writes 'x', which graph input 'x' already defines"],
        id="output-shadows-input",
    ),
    pytest.param(
        lambda: _relus(("relu", "x", "w"), ("relu2", "w", "y"), weights=[_ones("w", [2])]),
        ["node 'relu' (Relu) writes 'w', which initializer 'w' already defines"],
        id="output-shadows-initializer",
    ),
    pytest.param(
        lambda: _relus(("relu", "x", "y"), ("relu2", "x", "y")),
        ["node 'relu2' (Relu) writes 'y', which node 'relu' (Relu) already defines"],
        id="output-shadows-node-output",
    ),
    pytest.param(
        lambda: add_weight_model(external_weight("weights.bin")),
        ["initializer 'w': external data file 'weights.bin' is missing"],
        id="external-data-missing",
    ),
    # Found by fuzzing (the kernels of constant folding once ran on ops their verifier refuses):
    pytest.param(
        lambda: _folded("ArgMax", [numpy_helper.from_array(np.array(-2.0, np.float32), "c")], (), I64),
        ["node 'argmax' (ArgMax): axes [0] out of range for rank 0"],
        id="argmax-of-a-scalar-constant",
    ),
    pytest.param(
        lambda: _folded("LayerNormalization", [_ones("c", [1]), _ones("scale", [8, 0])], [1]),
        ["node 'layernormalization' (LayerNormalization): scale/bias 8x0 must broadcast"],
        id="layer-norm-scale-of-another-shape",
    ),
]
"""(model builder, fragments that `aitc check` and `aitc import` must both print), per case."""


@pytest.mark.parametrize(("build", "fragments"), INVALID_MODELS)
def test_check_and_import_refuse_invalid_models_alike(capsys, tmp_path, build, fragments):
    """Both exit 1 with the same error lines (check after its table) and write nothing."""
    path = save(build(), tmp_path / "m.onnx")
    import_err = import_fails(capsys, tmp_path, path, *fragments)
    code, out, check_err = run_cli(capsys, ["check", path])
    assert check_err == import_err
    assert code == 1
    assert out.split()[:2] == ["node", "op"]  # the table first
    assert_nothing_written(tmp_path, path)


def test_check_marks_invalid_attributes_in_its_table(capsys, tmp_path):
    model = _single("Reshape", [2, 8], [16], [_SHAPE_16], allowzero=3)
    code, out, _ = run_cli(capsys, ["check", save(model, tmp_path / "m.onnx")])
    assert code == 1
    assert re.search(r"reshape\s+Reshape\s+invalid\s+attribute allowzero=3", out)
    assert out.splitlines()[-1] == "0 supported, 0 decomposed, 0 unsupported, 1 invalid"


def test_check_reads_external_weights_when_import_needs_them(capsys, tmp_path):
    """The Reshape target lives in the external file: only its values show the model is wrong."""
    (tmp_path / "shape.bin").write_bytes(np.array([3, 5], np.int64).tobytes())
    shape = onnx.TensorProto(
        name="s", data_type=TensorProto.INT64, dims=[2], data_location=TensorProto.EXTERNAL
    )
    for key, value in {"location": "shape.bin", "length": "16"}.items():
        entry = shape.external_data.add()
        entry.key, entry.value = key, value
    path = save(_single("Reshape", [2, 8], [3, 5], [shape]), tmp_path / "m.onnx")
    import_err = import_fails(capsys, tmp_path, path, "node 'reshape' (Reshape)")
    code, _, check_err = run_cli(capsys, ["check", path])
    assert (code, check_err) == (1, import_err)


ZOO_SIZES = {
    "mlp": {"batch": 2, "features": 8, "hidden": 16, "classes": 4},
    "cnn_bn_pool": {"batch": 1, "image": 8, "classes": 4},
    "residual_block": {"batch": 1, "channels": 4, "image": 8},
    "depthwise_separable": {"batch": 1, "channels": 4, "image": 8},
    "transformer_encoder_layer": {"hidden": 16, "heads": 2, "seq": 4, "ffn": 32, "batch": 1},
    "encoder": {"layers": 1, "hidden": 16, "heads": 2, "ffn": 32, "seq": 4, "vocab": 20},
    "bert_torch_export": {"layers": 1, "hidden": 16, "heads": 2, "ffn": 32, "seq": 4, "vocab": 20},
    "mlp_with_host_ops": {"batch": 2, "features": 8, "hidden": 8, "classes": 4},
}
"""Small keyword arguments for every model_zoo builder (a new builder needs an entry)."""


@pytest.mark.parametrize("name", sorted(model_zoo.ZOO))
def test_check_and_import_accept_the_zoo(capsys, tmp_path, name):
    model, inputs = model_zoo.ZOO[name](**ZOO_SIZES[name])
    path = save(model, tmp_path / f"{name}.onnx")
    shapes = [f"--input-shape={k}={'x'.join(map(str, v.shape))}" for k, v in inputs.items()]
    code, out, err = run_cli(capsys, ["check", path, *shapes])
    assert (code, err) == (0, "")
    assert out.splitlines()[-1].endswith(" 0 unsupported")
    code, _, err = run_cli(capsys, ["import", path, "-o", tmp_path / "out.mlir", *shapes])
    assert (code, err) == (0, "")
    assert (tmp_path / "out.mlir").read_text().startswith("builtin.module")


# --------------------------------------------------------------------------- aitc run


@pytest.fixture
def mlp_mlir(tmp_path, capsys) -> Path:
    """The zoo MLP imported at batch 4: input `x` float32[4, 64], output `probs`."""
    model, _ = model_zoo.mlp(batch=4)
    onnx_path = save(model, tmp_path / "mlp.onnx")
    code, _, err = run_cli(
        capsys, ["import", onnx_path, "-o", tmp_path / "mlp.mlir", "--input-shape", "x=4x64"]
    )
    assert code == 0, err
    return tmp_path / "mlp.mlir"


def run_fails(capsys, mlir: Path, inputs: Path, *fragments: str) -> str:
    folder = mlir.parent
    before = set(folder.iterdir())
    code, _, err = run_cli(capsys, ["run", mlir, "--inputs", inputs, "--outputs", folder / "out.npz"])
    assert_user_error(code, err, mlir, *fragments)
    assert_nothing_written(folder, *before)
    return err


@pytest.mark.parametrize(
    ("arrays", "fragments"),
    [
        ({}, ["missing input(s): x"]),
        ({"x": np.zeros((4, 64), np.float32), "y": np.zeros(3, np.float32)}, ["unknown input(s): y"]),
        ({"image": np.zeros((4, 64), np.float32)}, ["missing input(s): x", "unknown input(s): image"]),
        (
            {"x": np.zeros((4, 65), np.float32)},
            ["input 'x' is float32[4, 65], the model expects float32[4, 64]"],
        ),
        ({"x": np.zeros((4, 64))}, ["input 'x' is float64[4, 64], the model expects float32[4, 64]"]),
    ],
    ids=["missing", "extra", "renamed", "wrong-shape", "wrong-dtype"],
)
def test_run_with_wrong_inputs(capsys, tmp_path, mlp_mlir, arrays, fragments):
    np.savez(tmp_path / "in.npz", **arrays)
    run_fails(capsys, mlp_mlir, tmp_path / "in.npz", *fragments)


def test_run_with_truncated_npz(capsys, tmp_path, mlp_mlir):
    np.savez(tmp_path / "good.npz", x=np.zeros((4, 64), np.float32))
    data = (tmp_path / "good.npz").read_bytes()
    (tmp_path / "bad.npz").write_bytes(data[: len(data) // 2])
    run_fails(capsys, mlp_mlir, tmp_path / "bad.npz", "bad.npz is a damaged .npz file")


def test_run_with_text_as_npz(capsys, tmp_path, mlp_mlir):
    (tmp_path / "in.npz").write_text("x = 1, 2, 3\n")
    run_fails(capsys, mlp_mlir, tmp_path / "in.npz", "in.npz is not an .npz or .npy file")


def test_run_with_object_array_npz(capsys, tmp_path, mlp_mlir):
    np.savez(tmp_path / "in.npz", x=np.array([{"a": 1}], dtype=object))
    run_fails(capsys, mlp_mlir, tmp_path / "in.npz", "entry 'x' holds Python object (pickled) values")


def test_run_with_npz_member_not_npy(capsys, tmp_path, mlp_mlir):
    with zipfile.ZipFile(tmp_path / "in.npz", "w") as archive:
        archive.writestr("x.npy", b"not numpy data")
    run_fails(capsys, mlp_mlir, tmp_path / "in.npz", "entry 'x' is not a valid .npy array")


def test_run_with_missing_npz(capsys, tmp_path, mlp_mlir):
    run_fails(capsys, mlp_mlir, tmp_path / "nothere.npz", "no such file")


MALFORMED_MLIR = """builtin.module {
  func.func @main(%0: tensor<2xf32>) -> tensor<2xf32> {
    %1 = graph.relu %0 : tensor<2xf32>
    func.return %1
  }
}
"""


def test_run_malformed_mlir_shows_file_line_col(capsys, tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text(MALFORMED_MLIR)
    code, _, err = run_cli(capsys, ["run", path])
    assert_user_error(code, err, path, f"{path}:5:3: error: Expected ':'")
    assert err.splitlines()[1:] == ["  }", "  ^"]


def test_run_unknown_op_in_mlir(capsys, tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text("builtin.module {\n  %0 = graph.frobnicate : tensor<2xf32>\n}\n")
    code, _, err = run_cli(capsys, ["run", path])
    assert_user_error(code, err, path, f"{path}:2:", "graph.frobnicate")


def test_run_invalid_ir(capsys, tmp_path):
    path = tmp_path / "bad.mlir"
    text = MALFORMED_MLIR.replace("func.return %1", "func.return %1 : tensor<2xf32>")
    path.write_text(text.replace("-> tensor<2xf32> {", "-> tensor<3xf32> {"))
    code, _, err = run_cli(capsys, ["run", path])
    assert_user_error(code, err, path, "bad.mlir:4:5: error: Expected arguments", "tensor<3xf32>")


def test_run_mlir_without_its_weights(tmp_path, mlp_mlir):
    """In a fresh process (this one already holds the weights: the resource store is per process)."""
    text = mlp_mlir.read_text()
    mlp_mlir.write_text(text[: text.index("{-#")])  # drop the dialect_resources section
    result = subprocess.run([AITC, "run", mlp_mlir], capture_output=True, text=True, check=False)
    assert_user_error(result.returncode, result.stderr, mlp_mlir, "has no bytes", "dialect_resources")


def test_run_binary_file_as_mlir(capsys, tmp_path):
    path = tmp_path / "model.mlir"
    path.write_bytes(model_zoo.mlp()[0].SerializeToString())
    code, _, err = run_cli(capsys, ["run", path])
    assert_user_error(code, err, path, "is not a UTF-8 text file")


def test_run_without_main(capsys, tmp_path):
    path = tmp_path / "two.mlir"
    body = (
        "  func.func @{0}(%0: tensor<2xf32>) -> tensor<2xf32> {{\n    func.return %0 : tensor<2xf32>\n  }}\n"
    )
    path.write_text("builtin.module {\n" + body.format("foo") + body.format("bar") + "}\n")
    code, _, err = run_cli(capsys, ["run", path])
    assert_user_error(code, err, path, "no function @main to run (functions: @foo, @bar)", "--entry")


def test_run_onnx_with_dynamic_dims(capsys, tmp_path):
    path = save(relu_model(["N", 4]), tmp_path / "m.onnx")
    code, _, err = run_cli(capsys, ["run", path])
    assert_user_error(code, err, path, "--input-shape x=1x4")


@pytest.mark.parametrize(
    ("op", "message"),
    [
        ("Gather", "gather index out of range [-4, 3] at graph.gather ('g')"),
        ("GatherND", "gather_nd index 4 at indices[1, 0] is out of range [-4, 3] at graph.gather_nd ('g')"),
    ],
)
def test_run_with_an_index_out_of_range(capsys, tmp_path, op, message):
    """Index data outside the dim is the input's fault: a located error, not an internal one."""
    index_dims = [2] if op == "Gather" else [2, 1]
    node = helper.make_node(op, ["x", "i"], ["y"], name="g")
    model = make_model(
        [node], [tensor("x", [4, 3]), tensor("i", index_dims, TensorProto.INT64)], [tensor("y", [2, 3])]
    )
    path = save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", x=np.zeros((4, 3), np.float32), i=np.array([1, 4]).reshape(index_dims))
    run_fails(capsys, path, tmp_path / "in.npz", message)


# --------------------------------------------------------------------------- in a real process


@pytest.mark.parametrize(
    ("content", "fragment"),
    [(b"", "empty"), (b"\x89PNG\r\n\x1a\n", "PNG"), (None, "unsupported")],
    ids=["empty", "png", "unsupported"],
)
def test_real_process_reports_without_traceback(tmp_path, content, fragment):
    path = tmp_path / "m.onnx"
    if content is None:
        save(_unsupported_model(), path)
    else:
        path.write_bytes(content)
    result = subprocess.run(
        [AITC, "import", path, "-o", tmp_path / "out.mlir"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 1
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not (tmp_path / "out.mlir").exists()


def test_check_and_import_agree_on_fuzzed_models(tmp_path, capsys):
    """`aitc check` fails exactly when `aitc import` does, with the same error lines, on the
    fuzzer's damaged and mutated models (byte flips, bad shapes, attributes, names, ...)."""
    from aitc.fuzz.case import case_rng
    from aitc.fuzz.families import onnx_bytes_case, onnx_semantic_case

    rejected = 0
    for index in range(200):
        family = onnx_semantic_case if index % 3 else onnx_bytes_case
        case = family(case_rng(1234, index))
        if "m.onnx" not in case.files:
            continue  # the case swapped its model for a folder or a symlink
        path = tmp_path / f"m{index}.onnx"
        path.write_bytes(case.files["m.onnx"])
        shapes = [a for i, a in enumerate(case.argv) if case.argv[i - 1] == "--input-shape"]
        options = [f"--input-shape={s}" for s in shapes]
        checked = main(["check", str(path), *options])
        check_errors = [line for line in capsys.readouterr().err.splitlines() if line]
        imported = main(["import", str(path), *options, "-o", str(tmp_path / "out.mlir")])
        import_errors = [line for line in capsys.readouterr().err.splitlines() if line]
        assert checked == imported, (case.note, check_errors, import_errors)
        assert check_errors == import_errors, case.note
        rejected += imported != 0
    assert rejected > 60  # the sample holds many invalid models, not only valid ones


def test_names_that_are_not_utf8_are_refused_by_check_and_import(capsys, tmp_path):
    """protobuf hands a string field that is not UTF-8 over as bytes; a damaged name once made
    `aitc import` fail with AttributeError and `aitc check` with UnicodeDecodeError."""
    data = relu_model([2, 4]).SerializeToString()
    name = data.index(b"relu")
    path = tmp_path / "m.onnx"
    path.write_bytes(data[:name] + b"rel\xd9" + data[name + 4 :])
    for command in (["check", path], ["import", path, "-o", tmp_path / "out.mlir"]):
        code, _, err = run_cli(capsys, command)
        assert_user_error(code, err, path, "graph.node[0].name is not UTF-8 text", "the file is damaged")
    assert not (tmp_path / "out.mlir").exists()
