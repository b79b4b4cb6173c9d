"""End to end: ONNX -> graph -> tile -> sync -> hw -> simulator, against onnxruntime, and the
levels against each other (differential execution, the project's main correctness tool)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from aitc.binary import assemble
from aitc.compiler import CompileOptions, compile_module
from aitc.frontend.onnx_import import import_onnx
from aitc.interp.run import run_module
from aitc.reference import assert_close, onnxruntime_outputs
from aitc.sim import Simulator
from aitc.target import load_target
from aitc.testing import model_zoo

MODELS = {
    "mlp": lambda: model_zoo.mlp(batch=4, features=16, hidden=32, classes=8),
    "cnn": lambda: model_zoo.cnn_bn_pool(batch=1, image=8, classes=4),
    "resnet-block": lambda: model_zoo.residual_block(batch=1, channels=4, image=6),
    "mobilenet-block": lambda: model_zoo.depthwise_separable(batch=1, channels=4, image=6),
    "transformer": lambda: model_zoo.transformer_encoder_layer(hidden=16, heads=2, seq=8, ffn=32, batch=1),
}


def static_model(name: str):
    model, inputs = MODELS[name]()
    shapes = {k: list(v.shape) for k, v in inputs.items()}
    return model, inputs, shapes


@pytest.mark.parametrize("target", ["tiny", "edge"])
@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_compiled_program_matches_onnxruntime(name: str, target: str, depth: int):
    model, inputs, shapes = static_model(name)
    result = compile_module(model, CompileOptions(target=target, depth=depth, input_shapes=shapes))
    outputs = Simulator(result.module, target).run(inputs).outputs
    assert_close(outputs, onnxruntime_outputs(model, inputs), 1e-4)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_level_computes_the_same(name: str):
    model, inputs, shapes = static_model(name)
    graph = import_onnx(model, shapes)
    expected = run_module(graph, inputs)
    for level in ("tile", "sync"):
        lowered = compile_module(graph, CompileOptions(target="tiny", emit=level)).module
        assert_close(run_module(lowered, inputs), expected, tolerance=1e-5)
    hw = compile_module(graph, CompileOptions(target="tiny")).module
    assert_close(Simulator(hw, "tiny").run(inputs).outputs, expected, tolerance=1e-5)


def test_compiling_twice_gives_identical_binaries():
    model, _, shapes = static_model("transformer")
    binaries = [
        assemble(
            compile_module(model, CompileOptions(target="edge", input_shapes=shapes)).module,
            load_target("edge"),
        )
        for _ in range(2)
    ]
    assert binaries[0] == binaries[1]


def _sync_ops(program) -> list:
    from aitc.dialects.hw import BarrierOp, SemSignalOp, SemWaitOp

    return [op for op in program.walk() if isinstance(op, SemSignalOp | SemWaitOp | BarrierOp)]


@pytest.mark.parametrize("name", ["mlp", "transformer"])
def test_deleting_any_semaphore_op_is_caught_by_the_simulator(name: str):
    """Every signal and wait the compiler emits is needed: without it the simulator reports a race,
    a deadlock, or semaphores left above zero at the end (a drain deleted: the next run of the
    program would start with stale credits) — and never hangs."""
    from aitc.sim import SimulationError

    model, inputs, shapes = static_model(name)
    program = compile_module(model, CompileOptions(target="tiny", depth=2, input_shapes=shapes)).module
    count = len(_sync_ops(program))
    assert count > 0
    for index in range(count):
        mutant = program.clone()
        victim = _sync_ops(mutant)[index]
        victim.detach()
        victim.erase()
        with pytest.raises(SimulationError) as caught:
            Simulator(mutant, "tiny").run(inputs)
        assert caught.value.kind in ("race", "deadlock", "unbalanced"), str(caught.value)


def _single_op_model(op_type: str, shapes: list[list[int]], seed: int, **attrs) -> onnx.ModelProto:
    """A one-node model: input x, the other operands as initializers."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    weights = [
        numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), f"w{i}")
        for i, s in enumerate(shapes[1:])
    ]
    node = helper.make_node(op_type, ["x", *[w.name for w in weights]], ["y"], name=op_type.lower(), **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shapes[0])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    model.graph.output[0].CopyFrom(inferred.graph.output[0])
    return model


def _compile_simulate_compare(model: onnx.ModelProto, shape: list[int], target: str, seed: int) -> None:
    x = np.random.default_rng(seed + 1).standard_normal(shape).astype(np.float32)
    program = compile_module(model, CompileOptions(target=target, depth=2)).module
    outputs = Simulator(program, target).run({"x": x}).outputs  # raises on any race or deadlock
    assert_close(outputs, onnxruntime_outputs(model, {"x": x}), 1e-4)


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from aitc.dialects.tile import KernelOp  # noqa: E402

TARGETS = st.sampled_from(["tiny", "edge"])
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    m=st.integers(1, 24), k=st.integers(1, 40), n=st.integers(1, 24), target=TARGETS, seed=st.integers(0, 99)
)
def test_random_matmuls_compile_and_simulate(m: int, k: int, n: int, target: str, seed: int):
    _compile_simulate_compare(_single_op_model("MatMul", [[m, k], [k, n]], seed), [m, k], target, seed)


@SETTINGS
@given(
    c=st.integers(1, 4), f=st.integers(1, 6), size=st.integers(3, 9), kernel=st.sampled_from([1, 3]),
    stride=st.integers(1, 2), pad=st.integers(0, 1), target=TARGETS, seed=st.integers(0, 99),
)  # fmt: skip
def test_random_convs_compile_and_simulate(c, f, size, kernel, stride, pad, target, seed):
    model = _single_op_model(
        "Conv", [[1, c, size, size], [f, c, kernel, kernel]], seed, strides=[stride, stride], pads=[pad] * 4
    )
    _compile_simulate_compare(model, [1, c, size, size], target, seed)


@SETTINGS
@given(
    c=st.integers(16, 20), f=st.integers(1, 6), size=st.integers(3, 10), kernel=st.integers(1, 4),
    stride=st.integers(2, 3), pad=st.integers(0, 1), target=TARGETS, seed=st.integers(0, 99),
)  # fmt: skip
def test_random_strided_convs_run_as_phase_sums(c, f, size, kernel, stride, pad, target, seed):
    """Strided convs with enough channels reach the NPU as sums of stride-1 phase convs
    (graph-polyphase-conv, in the lowering pipeline) and still match onnxruntime."""
    size = max(size, kernel - 2 * pad)
    model = _single_op_model(
        "Conv", [[1, c, size, size], [f, c, kernel, kernel]], seed, strides=[stride, stride], pads=[pad] * 4
    )
    _compile_simulate_compare(model, [1, c, size, size], target, seed)
    tiled = compile_module(model, CompileOptions(target=target, emit="tile")).module
    kernels = [k for k in tiled.walk() if isinstance(k, KernelOp)]
    assert any("graph.slice" in k.attributes["op"].data for k in kernels)  # pyright: ignore[reportAttributeAccessIssue]


@SETTINGS
@given(
    rows=st.integers(1, 20), cols=st.integers(1, 40), op=st.sampled_from(["Add", "Mul", "Sub", "Max"]),
    broadcast=st.sampled_from(["full", "row", "scalar"]), target=TARGETS, seed=st.integers(0, 99),
)  # fmt: skip
def test_random_elementwise_compile_and_simulate(rows, cols, op, broadcast, target, seed):
    other = {"full": [rows, cols], "row": [cols], "scalar": [1]}[broadcast]
    _compile_simulate_compare(_single_op_model(op, [[rows, cols], other], seed), [rows, cols], target, seed)


def non_trailing_axes_model() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """Softmax over axis 1 of [2, 8, 6] and a mean over axis 1 (keepdims): both non-trailing."""
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Softmax", ["x"], ["p"], name="softmax_mid", axis=1),
        helper.make_node("ReduceMean", ["p"], ["m"], name="mean_mid", axes=[1], keepdims=1),
        helper.make_node("Sub", ["p", "m"], ["y"], name="center"),
    ]
    graph = helper.make_graph(
        nodes,
        "axes",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 6])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, {"x": np.random.default_rng(5).standard_normal((2, 8, 6)).astype(np.float32)}


@pytest.mark.parametrize("target", ["tiny", "edge"])
def test_non_trailing_reductions_and_softmax_run_on_the_npu(target: str):
    model, inputs = non_trailing_axes_model()
    result = compile_module(model, CompileOptions(target=target))
    assert all(row.get("on") != "host" for row in result.kernels)
    ops = {str(row["op"]) for row in result.kernels}
    assert {"graph.softmax", "graph.reduce_mean", "graph.transpose"} <= ops
    assert_close(
        Simulator(result.module, target).run(inputs).outputs, onnxruntime_outputs(model, inputs), 1e-4
    )


def test_an_invalid_result_is_reported_with_the_flag_that_finds_the_pass(monkeypatch):
    """Without verify_each the compiler verifies its result once: an invalid one is an AitcError
    that says how to find the pass, never a traceback or an invalid module."""
    from xdsl.dialects.builtin import StringAttr

    from aitc import compiler
    from aitc.diagnostics import AitcError
    from aitc.dialects import graph
    from aitc.testing import model_zoo

    model, inputs = model_zoo.mlp()
    real = compiler._compile

    def breaking(source, options):
        result = real(source, options)
        matmul = next(op for op in result.module.walk() if isinstance(op, graph.MatMulOp))
        matmul.attributes["activation"] = StringAttr("swish")  # not an activation graph knows
        return result

    monkeypatch.setattr(compiler, "_compile", breaking)
    shapes = {name: list(value.shape) for name, value in inputs.items()}
    options = CompileOptions(target="tiny", emit="graph", cores=1, input_shapes=shapes, verify_each=False)
    with pytest.raises(AitcError, match=r"the compiled module is invalid \(--verify-each finds the pass"):
        compile_module(model, options)
