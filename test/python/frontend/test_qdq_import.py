"""QDQ models: QuantizeLinear/DequantizeLinear import as graph ops that match onnxruntime bit for
bit (round half to even, saturation, per-axis scales), and a model quantized by onnxruntime's
quantize_static imports, compiles and matches onnxruntime at every level."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from aitc.compiler import CompileOptions
from aitc.diagnostics import AitcError
from aitc.frontend.onnx_import import import_onnx
from aitc.interp.run import run_module
from aitc.reference import onnxruntime_outputs
from aitc.testing import model_zoo
from aitc.verify import verify_model


def _qdq(shape, scale, zero, dtype=TensorProto.INT8, axis=1, scale_input=False) -> onnx.ModelProto:
    """x -> QuantizeLinear -> q (an output too) -> DequantizeLinear -> y."""
    np_type = onnx.helper.tensor_dtype_to_np_dtype(dtype)
    constants = [numpy_helper.from_array(np.asarray(zero, np_type), "zero")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]
    if scale_input:
        inputs.append(helper.make_tensor_value_info("scale", TensorProto.FLOAT, list(np.shape(scale))))
    else:
        constants.append(numpy_helper.from_array(np.asarray(scale, np.float32), "scale"))
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["q"], name="quantize", axis=axis),
        helper.make_node("DequantizeLinear", ["q", "scale", "zero"], ["y"], name="dequantize", axis=axis),
    ]
    outputs = [
        helper.make_tensor_value_info("q", dtype, shape),
        helper.make_tensor_value_info("y", TensorProto.FLOAT, shape),
    ]
    graph = helper.make_graph(nodes, "qdq", inputs, outputs, constants)
    opset = 21 if dtype in (TensorProto.INT16, TensorProto.UINT16) else 19  # 16-bit QuantizeLinear: opset 21
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize(
    ("dtype", "zero"),
    [(TensorProto.INT8, 3), (TensorProto.UINT8, 128), (TensorProto.INT16, -7), (TensorProto.UINT16, 30000)],
)
def test_quantize_dequantize_match_onnxruntime_bit_for_bit(dtype, zero):
    scale = np.float32(0.05)
    # exact halves (round half to even), both saturation ends, and ordinary values
    x = np.concatenate([np.arange(-6, 6, dtype=np.float32) * scale / 2, [1e6, -1e6],
                        np.random.default_rng(0).standard_normal(18).astype(np.float32)])  # fmt: skip
    x = x.astype(np.float32).reshape(4, 8)
    model = _qdq([4, 8], scale, zero, dtype)
    got = run_module(import_onnx(model), {"x": x})
    want = onnxruntime_outputs(model, {"x": x})
    for name in ("q", "y"):
        assert got[name].dtype == want[name].dtype
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


@pytest.mark.parametrize("dtype", [TensorProto.INT8, TensorProto.INT16, TensorProto.UINT16])
def test_output_dtype_without_a_zero_point_sets_the_type(dtype):
    """QuantizeLinear-21's `output_dtype` with no zero point: the result has that type (a zero
    point of 0), not uint8."""
    node = helper.make_node("QuantizeLinear", ["x", "scale"], ["q"], name="quantize", output_dtype=dtype)
    graph = helper.make_graph(
        [node], "q", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
        [helper.make_tensor_value_info("q", dtype, [2, 5])],
        [numpy_helper.from_array(np.asarray(0.02, np.float32), "scale")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    x = np.array([[-3.0, -0.03, 0.01, 0.03, 2.0], [1e5, -1e5, 0.5, -0.5, 0.0]], np.float32)
    got = run_module(import_onnx(model), {"x": x})["q"]
    want = onnxruntime_outputs(model, {"x": x})["q"]
    assert got.dtype == want.dtype == helper.tensor_dtype_to_np_dtype(dtype)
    np.testing.assert_array_equal(got, want)


def test_per_axis_scales():
    scales = np.array([0.1, 0.02, 0.5], np.float32)
    model = _qdq([2, 3, 4, 4], scales, np.array([0, -5, 7]), axis=1)
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 4)).astype(np.float32) * 4
    got = run_module(import_onnx(model), {"x": x})
    want = onnxruntime_outputs(model, {"x": x})
    np.testing.assert_array_equal(got["q"], want["q"])
    np.testing.assert_array_equal(got["y"], want["y"])


def test_a_one_element_scale_with_a_scalar_zero_point_is_per_tensor():
    """onnxruntime's quantize_static writes a folded bias's DequantizeLinear with a scale of
    shape [1] and a scalar zero point; onnxruntime takes one value each as per tensor."""
    model = _qdq([2, 3], np.array([0.1], np.float32), 3)
    x = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    got = run_module(import_onnx(model), {"x": x})
    want = onnxruntime_outputs(model, {"x": x})
    np.testing.assert_array_equal(got["q"], want["q"])
    np.testing.assert_array_equal(got["y"], want["y"])


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: _qdq([2, 2], 0.1, 0, scale_input=True), "must be a constant"),
        (lambda: _qdq([2, 2], 0.0, 0), "every scale must be positive and finite"),
        (
            lambda: _qdq([2, 3], np.array([0.1, 0.2], np.float32), np.array([0, 0])),
            "2 scales for axis 1 of size 3",
        ),
    ],
)
def test_unsupported_quantization_is_a_clean_error_naming_the_node(build, message):
    with pytest.raises(AitcError, match=message) as error:
        import_onnx(build())
    assert "node 'quantize' (QuantizeLinear)" in str(error.value)


def _digits_quantized_by_onnxruntime(
    folder: Path, samples: int, **options
) -> tuple[onnx.ModelProto, np.ndarray]:
    """The digits MLP quantized by onnxruntime's quantize_static (QDQ; `options` as it takes
    them) calibrated on `samples` training images one at a time; and 32 held-out images."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    model, images, _ = model_zoo.digits_mlp()

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter({"x": images[i : i + 1]} for i in range(samples))

        def get_next(self):
            return next(self.batches, None)

    onnx.save(model, folder / "float.onnx")
    quantize_static(str(folder / "float.onnx"), str(folder / "quantized.onnx"), Reader(),
                    quant_format=QuantFormat.QDQ, **options)  # fmt: skip
    held_out = images[model_zoo.DIGITS_TRAIN : model_zoo.DIGITS_TRAIN + 32]
    return onnx.load(str(folder / "quantized.onnx")), held_out


@pytest.fixture(scope="module")
def ort_quantized(tmp_path_factory) -> tuple[onnx.ModelProto, np.ndarray]:
    """The digits MLP quantized by onnxruntime's quantize_static (QDQ and its defaults: int8
    activations and weights per tensor, Relu folded into the quantization) on 100 training
    images; and held-out images."""
    return _digits_quantized_by_onnxruntime(tmp_path_factory.mktemp("ort"), 100)


def _compile_and_run(
    capsys, model: onnx.ModelProto, images: np.ndarray, folder: Path
) -> tuple[Path, np.ndarray]:
    """`aitc compile` of `model` for one core (asserting it succeeds and runs every node on the
    NPU), then `aitc run` of the binary on `images`: (the binary, its logits)."""
    from aitc.tools.aitc_main import main

    source, binary = folder / "model.onnx", folder / "model.aitb"
    onnx.save(model, source)
    shape = f"x={images.shape[0]}x{images.shape[1]}"
    code = main(["compile", str(source), "--input-shape", shape, "--cores", "1", "-o", str(binary)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "placement: every node on the NPU" in out
    np.savez(folder / "in.npz", x=images)
    run = ["run", binary, "--inputs", folder / "in.npz", "--outputs", folder / "out.npz"]
    assert main([str(a) for a in run]) == 0, capsys.readouterr().err
    capsys.readouterr()
    return binary, np.load(folder / "out.npz")["logits"]


@pytest.mark.parametrize("level", ["graph", "tile", "hw"])
def test_a_quantize_static_model_compiles_and_matches_onnxruntime(ort_quantized, level):
    model, images = ort_quantized
    assert {n.op_type for n in model.graph.node} >= {"QuantizeLinear", "DequantizeLinear"}
    options = CompileOptions(target="edge", cores=1, input_shapes={"x": list(images.shape)})
    report = verify_model(model, options, level, ("entire",), {"x": images})
    assert not report.failures, [
        f"{c.tensor}: {c.comparison.problem if c.comparison else c.skipped}" for c in report.failures
    ]
    quantized = [c for c in report.checks if c.dtype in ("int8", "uint8")]
    assert len(quantized) >= 4, "x, h0, h and y0 are quantized"
    assert all(c.comparison is not None and c.comparison.max_abs == 0 for c in quantized)  # integers: exactly
    logits = next(c for c in report.checks if c.tensor == "logits")
    assert logits.comparison is not None
    assert logits.comparison.sqnr_db > 100


def test_int8_matmuls_run_on_the_matrix_engine_through_the_cli(capsys, ort_quantized, tmp_path):
    """`aitc compile` puts the whole quantize_static model on the NPU with its MatMuls as
    i8 x i8 -> i32 on the matrix engine (graph-quantized-matmul), the activations in DRAM as
    int8; `aitc run` of the binary matches onnxruntime on the same QDQ model."""
    from aitc.tools.aitc_main import main

    model, images = ort_quantized
    binary, got = _compile_and_run(capsys, model, images, tmp_path)
    assert main(["disasm", str(binary)]) == 0
    matmuls = [line for line in capsys.readouterr().out.splitlines() if "hw.matmul" in line]
    assert matmuls
    assert all("dtype=i8" in line for line in matmuls), matmuls
    want = onnxruntime_outputs(model, {"x": images})["logits"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got.argmax(axis=1), want.argmax(axis=1))


def test_a_quantized_encoder_matches_onnxruntime_within_one_step(tmp_path):
    """An encoder quantized by `aitc quantize` (every MatMul int8, attention and layer norms
    in f32) compiled for the NPU: each int8 tensor equals onnxruntime's running the same QDQ
    model except where a value lies within float rounding of a rounding boundary (then one
    step apart); the float tensors are judged by the quantized profile (`tolerances_for`)."""
    from aitc.quantize import quantize_model
    from aitc.verify.metrics import QUANTIZED_TOLERANCES

    model, inputs = model_zoo.encoder(layers=1, hidden=64, heads=4, ffn=128, seq=32)
    quantized, report = quantize_model(model, inputs, cache=tmp_path)
    assert len(report.quantized) == 6
    options = CompileOptions(
        target="edge", cores=1, input_shapes={k: list(v.shape) for k, v in inputs.items()}
    )
    checked = verify_model(quantized, options, "hw", ("entire",), inputs)
    assert checked.profiles is QUANTIZED_TOLERANCES
    assert not checked.failures, [
        f"{c.tensor}: {c.comparison and c.comparison.problem}" for c in checked.failures
    ]
    steps = [c.comparison.max_abs for c in checked.checks if c.dtype == "int8" and c.comparison is not None]
    assert len(steps) == 4
    assert max(steps) <= 1
    compiled = checked.compiled["entire"]
    int8 = [n for n, v in compiled.items() if np.asarray(v).dtype == np.int8]
    equal = [np.mean(compiled[n] == checked.reference[n]) for n in int8]
    assert min(equal) > 0.99, dict(zip(int8, equal, strict=True))


def test_uint8_activations_run_in_int8_on_the_npu(capsys, tmp_path):
    """quantize_static with uint8 activations (QUInt8, onnxruntime's older default): the
    activations become int8 with their zero points moved by -128 (graph-quantized-matmul), so
    the whole model runs on the NPU with int8 MatMuls, and `aitc run` matches onnxruntime."""
    from onnxruntime.quantization import QuantType

    quantized, held_out = _digits_quantized_by_onnxruntime(tmp_path, 50, activation_type=QuantType.QUInt8)
    zero_types = {i.data_type for i in quantized.graph.initializer if i.name.endswith("zero_point")}
    assert TensorProto.UINT8 in zero_types
    _, got = _compile_and_run(capsys, quantized, held_out, tmp_path)
    want = onnxruntime_outputs(quantized, {"x": held_out})["logits"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("activations", ["QUInt16", "QInt16"])
def test_16_bit_activations_quantize_on_the_host(capsys, tmp_path, activations):
    """quantize_static with 16-bit activations (QUInt16, QInt16; opset 21): the NPU holds 8-bit
    integers only, so every QuantizeLinear/DequantizeLinear of an activation runs on the host,
    each placement giving its reason, and the MatMuls and Adds between them in f32 on the NPU;
    `aitc run` of the binary matches onnxruntime bit for bit on the integer tensors."""
    from onnxruntime.quantization import QuantType

    from aitc.tools.aitc_main import main

    quantized, held_out = _digits_quantized_by_onnxruntime(
        tmp_path, 20, activation_type=getattr(QuantType, activations)
    )
    source, binary = tmp_path / "model.onnx", tmp_path / "model.aitb"
    onnx.save(quantized, source)
    shape = f"x={held_out.shape[0]}x{held_out.shape[1]}"
    assert main(["compile", str(source), "--input-shape", shape, "--cores", "1", "-o", str(binary)]) == 0
    out = capsys.readouterr().out
    dtype = "ui16" if activations == "QUInt16" else "i16"
    assert f"graph.quantize of {dtype}: the NPU holds i8" in out
    assert re.search(r"^fc1 +graph\.matmul +npu", out, re.MULTILINE), out
    assert re.search(r"^fc2 +graph\.matmul +npu", out, re.MULTILINE), out
    np.savez(tmp_path / "in.npz", x=held_out)
    run = ["run", binary, "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "out.npz"]
    assert main([str(a) for a in run]) == 0, capsys.readouterr().err
    want = onnxruntime_outputs(quantized, {"x": held_out})["logits"]
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["logits"], want, rtol=1e-5, atol=1e-5)
    options = CompileOptions(target="edge", cores=1, input_shapes={"x": list(held_out.shape)})
    report = verify_model(quantized, options, "hw", ("entire",), {"x": held_out})
    integers = [c for c in report.checks if c.dtype in ("uint16", "int16")]
    assert len(integers) >= 4
    assert all(c.comparison is not None and c.comparison.max_abs == 0 for c in integers)
