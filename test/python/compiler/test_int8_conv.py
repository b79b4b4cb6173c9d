"""int8 convolutions on the NPU: a Conv of dequantized int8 tensors (QDQ) becomes an i8 x i8 ->
i32 graph.conv (graph-quantized-matmul), lowered as an implicit GEMM on the matrix engine with
its padding filled with the input's zero point; the results match onnxruntime running the same
QDQ model, at every level and through the CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from aitc.compiler import CompileOptions, compile_module
from aitc.dialects import graph
from aitc.frontend.onnx_import import import_onnx
from aitc.interp.run import run_module
from aitc.reference import onnxruntime_outputs
from aitc.sim import Simulator
from aitc.testing import model_zoo


def _qdq_conv(
    shape: tuple[int, int, int, int],
    outs: int,
    kernel: int,
    seed: int,
    per_channel: bool,
    relu: bool = False,
    **attrs,
) -> tuple[onnx.ModelProto, np.ndarray]:
    """x -> QuantizeLinear (int8, a random zero point) -> DequantizeLinear -> Conv with an int8
    weight (per tensor or per output channel) and an int32 bias, both dequantized -> y (f32),
    then y quantized again (yq, int8); and an input. With `relu` the conv's result goes
    through a Relu before the quantize and yq is the only output (a layer of a quantized CNN)."""
    rng = np.random.default_rng(seed)
    group = attrs.get("group", 1)
    x = rng.standard_normal(shape).astype(np.float32)
    x_scale, x_zero = np.float32(0.03), np.int8(rng.integers(-100, 100))
    w = rng.integers(-127, 128, (outs, shape[1] // group, kernel, kernel)).astype(np.int8)
    w_scale = (rng.uniform(0.002, 0.01, outs) if per_channel else np.array(0.005)).astype(np.float32)
    b_scale = (x_scale * w_scale).astype(np.float32)
    b = rng.integers(-2000, 2000, outs).astype(np.int32)
    constants = {
        "x_scale": x_scale, "x_zero": x_zero, "w": w, "w_scale": w_scale,
        "w_zero": np.zeros(w_scale.shape, np.int8), "b": b, "b_scale": b_scale,
        "b_zero": np.zeros(b_scale.shape, np.int32), "y_scale": np.float32(0.05), "y_zero": np.int8(-3),
    }  # fmt: skip
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["xq"], name="quantize_x"),
        helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zero"], ["xd"], name="dequantize_x"),
        helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero"], ["wd"], name="dequantize_w", axis=0),
        helper.make_node("DequantizeLinear", ["b", "b_scale", "b_zero"], ["bd"], name="dequantize_b", axis=0),
        helper.make_node("Conv", ["xd", "wd", "bd"], ["c" if relu else "y"], name="conv", **attrs),
        *([helper.make_node("Relu", ["c"], ["y"], name="relu")] if relu else []),
        helper.make_node("QuantizeLinear", ["y", "y_scale", "y_zero"], ["yq"], name="quantize_y"),
    ]
    outputs = [helper.make_tensor_value_info("yq", TensorProto.INT8, None)]
    if not relu:
        outputs.insert(0, helper.make_tensor_value_info("y", TensorProto.FLOAT, None))
    graph_ = helper.make_graph(
        nodes,
        "qdq_conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        outputs,
        [numpy_helper.from_array(np.asarray(v), k) for k, v in constants.items()],
    )  # fmt: skip
    model = helper.make_model(graph_, opset_imports=[helper.make_opsetid("", 19)])
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    for index in range(len(outputs)):
        model.graph.output[index].CopyFrom(inferred.graph.output[index])
    return model, x


def _assert_matches(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    """y within float rounding of onnxruntime's (it sums f32 products, the NPU an exact integer
    sum scaled once), yq within one step (a value within rounding of a boundary)."""
    if "y" in want:
        scale = float(np.abs(want["y"]).max()) or 1.0
        np.testing.assert_allclose(got["y"], want["y"], rtol=1e-4, atol=1e-5 * scale)
    assert got["yq"].dtype == np.int8
    assert np.abs(got["yq"].astype(np.int16) - want["yq"]).max(initial=0) <= 1


def _i8_matmuls(program) -> list:
    return [op for op in program.walk() if op.name == "hw.matmul" and "i8" in str(op.attributes.get("dtype"))]


SETTINGS = settings(max_examples=14, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    per_group=st.integers(1, 3), groups=st.integers(1, 3), f=st.integers(1, 3), size=st.integers(3, 9),
    kernel=st.sampled_from([1, 2, 3]), stride=st.integers(1, 2), pad=st.integers(0, 2),
    dilation=st.integers(1, 2), per_channel=st.booleans(), target=st.sampled_from(["tiny", "edge"]),
    seed=st.integers(0, 99),
)  # fmt: skip
def test_random_int8_convs_run_on_the_matrix_engine(
    per_group, groups, f, size, kernel, stride, pad, dilation, per_channel, target, seed
):
    """Shapes, strides, pads, dilations, groups, zero points and per-channel scales: the
    compiled program multiplies in i8 and matches onnxruntime; a depthwise conv (one input
    channel per group) stays f32 (graph-quantized-matmul leaves it to the vector engine) and
    matches too."""
    c, outs = per_group * groups, f * groups
    size = max(size, dilation * (kernel - 1) + 1 - 2 * pad)
    attrs = {"strides": [stride] * 2, "pads": [pad] * 4, "dilations": [dilation] * 2, "group": groups}
    model, x = _qdq_conv((1, c, size, size), outs, kernel, seed, per_channel, **attrs)
    program = compile_module(model, CompileOptions(target=target, depth=2)).module
    depthwise = per_group == 1 and groups > 1
    assert bool(_i8_matmuls(program)) != depthwise, "int8 on the matrix engine unless depthwise"
    got = Simulator(program, target).run({"x": x}).outputs  # raises on any race or deadlock
    _assert_matches(got, onnxruntime_outputs(model, {"x": x}))


@SETTINGS
@given(
    c=st.integers(1, 6), f=st.integers(1, 40), size=st.integers(3, 12), kernel=st.sampled_from([1, 3]),
    stride=st.integers(1, 2), pad=st.integers(0, 1), per_channel=st.booleans(),
    target=st.sampled_from(["tiny", "edge"]), seed=st.integers(0, 99),
)  # fmt: skip
def test_random_int8_conv_layers_fuse_their_requantization(
    c, f, size, kernel, stride, pad, per_channel, target, seed
):
    """conv -> relu -> quantize, as a quantized CNN's layer: one kernel, whose epilogue adds
    the int32 bias to the exact sum, scales each output tile back (per channel), applies the
    relu and quantizes, storing int8; the result within one step of onnxruntime's."""
    attrs = {"strides": [stride] * 2, "pads": [pad] * 4}
    model, x = _qdq_conv((1, c, size, size), f, kernel, seed, per_channel, relu=True, **attrs)
    tiled = compile_module(model, CompileOptions(target=target, emit="tile")).module
    kernels = [str(k.attributes["op"]) for k in tiled.walk() if k.name == "tile.kernel"]
    assert '"graph.conv,graph.dequantize,graph.relu,graph.quantize"' in kernels, kernels
    program = compile_module(model, CompileOptions(target=target, depth=2)).module
    got = Simulator(program, target).run({"x": x}).outputs
    _assert_matches(got, onnxruntime_outputs(model, {"x": x}))


@pytest.mark.parametrize("level", ["graph", "tile", "sync"])
def test_every_level_of_an_int8_conv_computes_the_same(level):
    """The i8 conv with an input zero point and padding: each level's result equals the
    simulator's bit for bit (integers, and one scaling of them)."""
    model, x = _qdq_conv((2, 5, 7, 7), 6, 3, 7, True, pads=[1, 2, 1, 0], strides=[1, 2])
    module = import_onnx(model)
    lowered = compile_module(module, CompileOptions(target="tiny", emit=level)).module
    text = str(lowered)
    if level == "graph":
        assert "input_zero" in text
        assert "xi32>" in text
    got = run_module(lowered, {"x": x})
    hw = compile_module(module, CompileOptions(target="tiny")).module
    simulated = Simulator(hw, "tiny").run({"x": x}).outputs
    for name in ("y", "yq"):
        np.testing.assert_array_equal(got[name], simulated[name], err_msg=name)
    _assert_matches(simulated, onnxruntime_outputs(model, {"x": x}))


def test_the_graph_conv_is_int8_with_its_zero_point():
    model, _ = _qdq_conv((1, 3, 6, 6), 4, 3, 1, False, pads=[1, 1, 1, 1])
    module = compile_module(import_onnx(model), CompileOptions(target="edge", emit="graph")).module
    convs = [op for op in module.walk() if isinstance(op, graph.ConvOp)]
    assert len(convs) == 1
    assert convs[0].is_integer()
    assert convs[0].input_zero_point() != 0
    assert str(graph.tensor_of(convs[0].output).get_element_type()) == "i32"


def _cnn_quantized_by_onnxruntime(folder: Path, per_channel: bool) -> tuple[onnx.ModelProto, dict]:
    """model_zoo's residual block (convs, batch norms, relus, a strided downsample) quantized by
    onnxruntime's quantize_static (QDQ, int8) after its pre-processing (which folds the batch
    norms into the convs), calibrated on 8 random images; and an input."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    model, inputs = model_zoo.residual_block(batch=1, channels=8, image=10)
    name = next(iter(inputs))
    rng = np.random.default_rng(3)
    samples = [rng.standard_normal(inputs[name].shape).astype(np.float32) for _ in range(8)]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter({name: s} for s in samples)

        def get_next(self):
            return next(self.batches, None)

    onnx.save(model, folder / "float.onnx")
    quant_pre_process(str(folder / "float.onnx"), str(folder / "prepared.onnx"), skip_symbolic_shape=True)
    quantize_static(str(folder / "prepared.onnx"), str(folder / "quantized.onnx"), Reader(),
                    quant_format=QuantFormat.QDQ, per_channel=per_channel,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)  # fmt: skip
    return onnx.load(str(folder / "quantized.onnx")), inputs


@pytest.mark.parametrize("per_channel", [False, True])
def test_a_quantize_static_cnn_runs_its_convs_in_int8_through_the_cli(capsys, tmp_path, per_channel):
    """`aitc compile` of a CNN that onnxruntime quantized puts every node on the NPU, every conv
    as i8 x i8 -> i32 matmuls; `aitc run` of the binary matches onnxruntime on the same model."""
    from aitc.tools.aitc_main import main

    model, inputs = _cnn_quantized_by_onnxruntime(tmp_path, per_channel)
    op_types = [n.op_type for n in model.graph.node]
    assert op_types.count("Conv") == 5
    assert "BatchNormalization" not in op_types
    source, binary = tmp_path / "model.onnx", tmp_path / "model.aitb"
    onnx.save(model, source)
    shape = "x=" + "x".join(str(d) for d in inputs["x"].shape)
    compile_ = ["compile", str(source), "--input-shape", shape, "--cores", "1", "-o", str(binary)]
    assert main(compile_) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "placement: every node on the NPU" in out
    assert main(["disasm", str(binary)]) == 0
    matmuls = [line for line in capsys.readouterr().out.splitlines() if "hw.matmul" in line]
    assert matmuls
    assert all("dtype=i8" in line for line in matmuls), matmuls[:3]
    np.savez(tmp_path / "in.npz", **inputs)
    run = ["run", binary, "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "out.npz"]
    assert main([str(a) for a in run]) == 0, capsys.readouterr().err
    got = dict(np.load(tmp_path / "out.npz"))
    want = onnxruntime_outputs(model, inputs)
    for name, value in want.items():
        scale = float(np.abs(value).max()) or 1.0
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-4 * scale, err_msg=name)


def test_an_aitc_quantized_cnn_folds_its_batch_norms_into_the_int8_scaling(tmp_path):
    """`aitc quantize` keeps a CNN's batch norms after its convs (in float); compiled, each one
    folds into the scaling back of its int8 conv (graph-fold-batch-norm), no batch-norm kernel
    is left, and every tensor matches onnxruntime running the same QDQ model (int8 tensors
    within one step)."""
    from aitc.quantize import quantize_model
    from aitc.verify import verify_model

    model, inputs = model_zoo.residual_block(batch=1, channels=8, image=10)
    quantized, _ = quantize_model(model, inputs, per_channel=True, cache=tmp_path)
    assert "BatchNormalization" in {n.op_type for n in quantized.graph.node}
    shapes = {k: list(v.shape) for k, v in inputs.items()}
    options = CompileOptions(target="edge", cores=1, input_shapes=shapes)
    tiled = compile_module(quantized, CompileOptions(target="edge", emit="tile", input_shapes=shapes)).module
    kernels = [str(k.attributes["op"]) for k in tiled.walk() if k.name == "tile.kernel"]
    assert not [k for k in kernels if "batch_norm" in k], kernels
    checked = verify_model(quantized, options, "hw", ("entire",), inputs)
    assert not checked.failures, [
        f"{c.tensor}: {c.comparison and c.comparison.problem}" for c in checked.failures
    ]
    steps = [c.comparison.max_abs for c in checked.checks if c.dtype == "int8" and c.comparison is not None]
    assert len(steps) >= 4
    assert max(steps) <= 1


@pytest.mark.parametrize("strategy", ["auto", "sp", "tp"])
def test_an_int8_cnn_on_four_cores_matches_onnxruntime(tmp_path, strategy):
    """Sharded over 4 cores, an int8 conv splits by images and output channels only (no partial
    i32 sums, no halo whose fill would be 0 where its padding is the input's zero point), and
    the int8 activations' slices stay on the NPU (they are data, not index arithmetic)."""
    from aitc.quantize import quantize_model

    model, inputs = model_zoo.residual_block(batch=1, channels=16, image=12)
    quantized, _ = quantize_model(model, inputs, per_channel=True, cache=tmp_path)
    shapes = {k: list(v.shape) for k, v in inputs.items()}
    options = CompileOptions(target="edge", cores=4, input_shapes=shapes, shard=strategy)
    program = compile_module(quantized, options).module
    assert _i8_matmuls(program)
    got = Simulator(program, "edge").run(inputs).outputs
    for name, want in onnxruntime_outputs(quantized, inputs).items():
        scale = float(np.abs(want).max()) or 1.0
        np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-4 * scale, err_msg=name)


def test_an_int8_stem_conv_stacks_its_phases():
    """A 3-channel 7x7 stride-2 int8 conv (a ResNet stem) becomes a stride-1 conv over its input
    phases stacked along the channels (graph-polyphase-conv's space-to-depth), still in i8 with
    its input zero point, and matches onnxruntime."""
    model, x = _qdq_conv((1, 3, 16, 16), 8, 7, 5, True, relu=True, strides=[2, 2], pads=[3, 3, 3, 3])
    tiled = compile_module(model, CompileOptions(target="edge", emit="tile")).module
    kernels = [str(k.attributes["op"]) for k in tiled.walk() if k.name == "tile.kernel"]
    assert '"graph.transpose"' in kernels  # the phases stacked along the channels, in int8
    assert "memref<1x12x8x8xi8" in str(tiled)  # the stride-1 conv's input
    program = compile_module(model, CompileOptions(target="edge")).module
    assert _i8_matmuls(program)
    got = Simulator(program, "edge").run({"x": x}).outputs
    _assert_matches(got, onnxruntime_outputs(model, {"x": x}))


def test_verify_compares_a_qdq_model_on_four_cores():
    """`aitc verify --cores 4` on a QDQ model: the dequantized weights (tensors of initializers
    alone) are not compared, since a multi-core program cannot return a constant; every
    activation is, within the quantized tolerances."""
    from aitc.verify import verify_model

    model, x = _qdq_conv((1, 8, 8, 8), 16, 3, 2, True, relu=True, pads=[1, 1, 1, 1])
    options = CompileOptions(target="edge", cores=4)
    report = verify_model(model, options, "hw", ("entire",), {"x": x})
    compared = {c.tensor for c in report.checks}
    assert {"xq", "yq"} <= compared
    assert not compared & {"wd", "bd"}
    assert not report.failures, [c.tensor for c in report.failures]


def _qdq_max_pool(shape, seed: int, quantize_after: bool, **attrs) -> tuple[onnx.ModelProto, np.ndarray]:
    """x -> Q -> DQ -> MaxPool -> Q -> yq (onnxruntime's QDQ form of a max pool), or with
    `quantize_after` x -> MaxPool -> Q -> yq (`aitc quantize`'s: a max pool before a conv's
    quantized input); and an input."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    constants = {"s": np.float32(0.02), "z": np.int8(rng.integers(-20, 20))}
    pool_input = "x" if quantize_after else "xd"
    nodes = [] if quantize_after else [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="quantize_x"),
        helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dequantize_x"),
    ]  # fmt: skip
    nodes += [
        helper.make_node("MaxPool", [pool_input], ["p"], name="pool", **attrs),
        helper.make_node("QuantizeLinear", ["p", "s", "z"], ["yq"], name="quantize_y"),
    ]
    graph_ = helper.make_graph(
        nodes,
        "qdq_pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("yq", TensorProto.INT8, None)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in constants.items()],
    )
    model = helper.make_model(graph_, opset_imports=[helper.make_opsetid("", 19)])
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    model.graph.output[0].CopyFrom(inferred.graph.output[0])
    return model, x


@SETTINGS
@given(
    c=st.integers(1, 5), size=st.integers(3, 11), kernel=st.integers(1, 3), stride=st.integers(1, 2),
    pad=st.integers(0, 1), quantize_after=st.booleans(),
    target=st.sampled_from(["tiny", "edge"]), seed=st.integers(0, 99),
)  # fmt: skip
def test_random_max_pools_between_quantizations_pool_int8(
    c, size, kernel, stride, pad, quantize_after, target, seed
):
    """A max pool next to a quantize or a dequantize pools the int8 values (quantizing and
    dequantizing never decrease, so they commute with a max): an i8 max pool on the vector
    engine, its padding -128; the int8 result equals onnxruntime's bit for bit."""
    pad = min(pad, kernel - 1)
    # no ceil_mode: where its last window starts past the input, onnx's shape inference keeps it
    # and onnxruntime and aitc drop it, and aitc refuses the model (see the stop's note)
    attrs = {"kernel_shape": [kernel] * 2, "strides": [stride] * 2, "pads": [pad] * 4}
    model, x = _qdq_max_pool((1, c, size, size), seed, quantize_after, **attrs)
    tiled = compile_module(model, CompileOptions(target=target, emit="tile")).module
    pools = [
        k for k in tiled.walk() if k.name == "tile.kernel" and "graph.max_pool" in str(k.attributes["op"])
    ]
    assert pools
    assert all("xi8" in str(k) for k in pools)
    program = compile_module(model, CompileOptions(target=target, depth=2)).module
    got = Simulator(program, target).run({"x": x}).outputs["yq"]
    np.testing.assert_array_equal(got, onnxruntime_outputs(model, {"x": x})["yq"])
