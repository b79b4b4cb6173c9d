"""The valid artifacts the fuzz families mutate: small ONNX models, the .mlir of every level, the
hand-written hw programs, .aitb binaries and the `tiny` target's TOML.

Each is built once per process (`functools.cache`) by running the real command on a good input
in a forked child, so a smoke run pays for one import/compile per model, not one per case.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import aitc
from aitc.fuzz.runner import run_for_artifact
from aitc.testing import model_zoo

MODELS = ("mlp", "cnn", "reshape", "layer", "depthwise", "host", "qdq", "qdq_cnn")
"""Names of the base ONNX models (every input dim static, so no --input-shape is needed)."""
LEVELS = ("tile", "sync", "hw")
COMPILED_MODELS = ("mlp", "host", "qdq", "qdq_cnn")
"""Models compiled for `tiny` into lower-level .mlir and .aitb seeds (`host` is a bundle)."""


def _reshape_model() -> onnx.ModelProto:
    """x [2, 8] -> Reshape [4, 4] -> MatMul w [4, 4] -> Relu -> y: a Reshape with a shape input."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), "w")
    shape = numpy_helper.from_array(np.array([4, 4], np.int64), "shape")
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
        helper.make_node("MatMul", ["r", "w"], ["m"], name="matmul"),
        helper.make_node("Relu", ["m"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "reshape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])],
        [weight, shape],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


X_SCALE = 0.05
"""The QDQ bases' input scale."""


def _activation_quantization(x_zero: int) -> list[onnx.TensorProto]:
    """The QDQ bases' activation scales and zero points: the input x (`X_SCALE`, `x_zero`) and
    the hidden h (0.04, -128, as a relu's output quantizes)."""
    return [
        numpy_helper.from_array(np.array(X_SCALE, np.float32), "x_scale"),
        numpy_helper.from_array(np.array(x_zero, np.int8), "x_zero"),
        numpy_helper.from_array(np.array(0.04, np.float32), "h_scale"),
        numpy_helper.from_array(np.array(-128, np.int8), "h_zero"),
    ]


def _quantized_input() -> list[onnx.NodeProto]:
    """x -> QuantizeLinear -> x_q -> DequantizeLinear -> x_dq."""
    return [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["x_q"], name="quantize_x"),
        helper.make_node("DequantizeLinear", ["x_q", "x_scale", "x_zero"], ["x_dq"], name="dequantize_x"),
    ]


def _qdq_model() -> onnx.ModelProto:
    """x [2, 8] -> QuantizeLinear/DequantizeLinear (int8, zero point 3) -> MatMul with an int8
    weight [8, 4] (a scale per column) -> Add -> Relu -> QuantizeLinear/DequantizeLinear -> y: a
    QDQ model, as `aitc quantize` writes them, whose MatMul runs in int8 on the NPU."""
    rng = np.random.default_rng(0)
    constants = [
        numpy_helper.from_array(rng.integers(-127, 128, (8, 4)).astype(np.int8), "w_q"),
        numpy_helper.from_array(np.array([0.01, 0.02, 0.015, 0.03], np.float32), "w_scale"),
        numpy_helper.from_array(np.zeros(4, np.int8), "w_zero"),
        numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b"),
        *_activation_quantization(3),
    ]
    nodes = [
        *_quantized_input(),
        helper.make_node(
            "DequantizeLinear", ["w_q", "w_scale", "w_zero"], ["w"], name="dequantize_w", axis=1
        ),
        helper.make_node("MatMul", ["x_dq", "w"], ["m"], name="matmul"),
        helper.make_node("Add", ["m", "b"], ["a"], name="bias"),
        helper.make_node("Relu", ["a"], ["h"], name="relu"),
        helper.make_node("QuantizeLinear", ["h", "h_scale", "h_zero"], ["h_q"], name="quantize_h"),
        helper.make_node("DequantizeLinear", ["h_q", "h_scale", "h_zero"], ["y"], name="dequantize_h"),
    ]
    graph = helper.make_graph(
        nodes,
        "qdq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        constants,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def _qdq_cnn_model() -> onnx.ModelProto:
    """x [1, 3, 8, 8] -> QuantizeLinear/DequantizeLinear (int8, zero point -5) -> Conv 3x3 pad 1
    with an int8 weight (a scale per output channel) and an int32 bias -> Relu -> MaxPool 2x2
    -> QuantizeLinear/DequantizeLinear -> y: a quantized CNN layer, whose conv and max pool run
    in int8 on the NPU."""
    rng = np.random.default_rng(0)
    w_scale = np.array([0.01, 0.02, 0.015, 0.03], np.float32)
    x_scale = np.float32(X_SCALE)
    constants = [
        numpy_helper.from_array(rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8), "w_q"),
        numpy_helper.from_array(w_scale, "w_scale"),
        numpy_helper.from_array(np.zeros(4, np.int8), "w_zero"),
        numpy_helper.from_array(rng.integers(-500, 500, 4).astype(np.int32), "b_q"),
        numpy_helper.from_array((x_scale * w_scale).astype(np.float32), "b_scale"),
        numpy_helper.from_array(np.zeros(4, np.int32), "b_zero"),
        *_activation_quantization(-5),
    ]
    nodes = [
        *_quantized_input(),
        helper.make_node(
            "DequantizeLinear", ["w_q", "w_scale", "w_zero"], ["w"], name="dequantize_w", axis=0
        ),
        helper.make_node(
            "DequantizeLinear", ["b_q", "b_scale", "b_zero"], ["b"], name="dequantize_b", axis=0
        ),
        helper.make_node("Conv", ["x_dq", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("QuantizeLinear", ["p", "h_scale", "h_zero"], ["h_q"], name="quantize_h"),
        helper.make_node("DequantizeLinear", ["h_q", "h_scale", "h_zero"], ["y"], name="dequantize_h"),
    ]
    graph = helper.make_graph(
        nodes,
        "qdq_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4, 4])],
        constants,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def _build_model(name: str) -> onnx.ModelProto:
    builders = {
        "mlp": lambda: model_zoo.mlp(batch=2, features=8, hidden=16, classes=4)[0],
        "cnn": lambda: model_zoo.cnn_bn_pool(batch=1, image=8, classes=4)[0],
        "layer": lambda: model_zoo.transformer_encoder_layer(hidden=8, heads=2, seq=4, ffn=16, batch=1)[0],
        "depthwise": lambda: model_zoo.depthwise_separable(batch=1, channels=4, image=6)[0],
        "host": lambda: model_zoo.mlp_with_host_ops(batch=2, features=8, hidden=8, classes=4)[0],
        "reshape": _reshape_model,
        "qdq": _qdq_model,
        "qdq_cnn": _qdq_cnn_model,
    }
    batch = {"mlp": 2, "cnn": 1, "layer": 1, "depthwise": 1}
    built = builders[name]()
    return model_zoo.with_static_batch(built, batch[name]) if name in batch else built


@cache
def model(name: str) -> onnx.ModelProto:
    """A base model (treat as read-only: copy before mutating)."""
    return _build_model(name)


@cache
def model_bytes(name: str) -> bytes:
    """A base model, serialized."""
    return model(name).SerializeToString()


@cache
def dynamic_model_bytes() -> bytes:
    """The `mlp` base model with its dynamic batch dim `N` left unpinned (input x [N, 8])."""
    return model_zoo.mlp(batch=2, features=8, hidden=16, classes=4)[0].SerializeToString()


@cache
def graph_mlir(name: str) -> str:
    """`aitc import` of a base model: graph-level .mlir."""
    return run_for_artifact(["aitc", "import", "m.onnx"], {"m.onnx": model_bytes(name)}).decode()


SHARD_MLIR = """shard.grid @cores(shape = 4)
shard.grid @mesh(shape = 2x2)
func.func @main(%x: tensor<8x16xf32> {graph.name = "x"}, %w: tensor<16x4xf32> {graph.name = "w"})
    -> (tensor<8x16xf32> {graph.name = "y"}) {
  %s = shard.sharding @cores split_axes = [[], [0]] : !shard.sharding
  %u = shard.sharding @cores split_axes = [[0]] sharded_dims_offsets = [0, 3, 5, 7, 8] : !shard.sharding
  %a = shard.shard %x to %s : tensor<8x16xf32>
  %b = shard.shard %a to %u annotate_for_users : tensor<8x16xf32>
  %p = graph.matmul %b, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  %g = shard.all_gather %p on @cores grid_axes = [0] gather_axis = 1 : tensor<8x4xf32> -> tensor<8x16xf32>
  %r = shard.all_reduce %g on @mesh grid_axes = [1, 0] reduction = max : tensor<8x16xf32> -> tensor<8x16xf32>
  %c = shard.reduce_scatter %r on @cores grid_axes = [0] scatter_axis = 0
    : tensor<8x16xf32> -> tensor<2x16xf32>
  %l = shard.all_slice %c on @mesh grid_axes = [1] slice_axis = 1 : tensor<2x16xf32> -> tensor<2x8xf32>
  %h = shard.all_slice %c on @cores grid_axes = [0] slice_axis = 1 halo = [1, 0] fill = "-inf"
    : tensor<2x16xf32> -> tensor<2x5xf32>
  %t = shard.all_to_all %l on @cores grid_axes = [0] split_axis = 1 concat_axis = 0
    : tensor<2x8xf32> -> tensor<8x2xf32>
  %y = shard.broadcast %x on @mesh grid_axes = [0, 1] root = [1, 0] : tensor<8x16xf32> -> tensor<8x16xf32>
  %i = shard.process_linear_index on @mesh : index
  func.return %y : tensor<8x16xf32>
}
"""
"""A per-core (SPMD) module with every shard op: the seed of the sharded .mlir cases."""


@cache
def level_mlir(name: str, level: str) -> str:
    """`aitc compile --target tiny --emit LEVEL` of a base model."""
    argv = ["aitc", "compile", "m.onnx", "--target", "tiny", "--emit", level]
    return run_for_artifact(argv, {"m.onnx": model_bytes(name)}).decode()


@cache
def example_programs() -> dict[str, str]:
    """The hand-written hw programs of examples/hw/ (empty if the source tree is not at hand)."""
    folder = Path(aitc.__file__).resolve().parents[1] / "examples" / "hw"
    return {path.stem: path.read_text() for path in sorted(folder.glob("*.mlir"))}


@cache
def binaries() -> dict[str, bytes]:
    """.aitb seeds: every example program assembled, and the compiled models for `tiny`."""
    result = {}
    for name, text in example_programs().items():
        result[name] = run_for_artifact(["aitc", "asm", "p.mlir", "-o", "p.aitb"], {"p.mlir": text}, "p.aitb")
    for name in COMPILED_MODELS:
        argv = ["aitc", "compile", "m.onnx", "--target", "tiny", "-o", "m.aitb"]
        result[name] = run_for_artifact(argv, {"m.onnx": model_bytes(name)}, "m.aitb")
    return result


@cache
def tiny_target_toml() -> str:
    """The `tiny` preset's TOML text."""
    return resources.files("aitc").joinpath("targets/tiny.toml").read_text()


def program_inputs(name: str) -> dict[str, np.ndarray]:
    """Good example inputs of a base binary or model (name -> array), deterministic."""
    rng = np.random.default_rng(0)
    shapes = {
        "tiled_matmul": {"a": (16, 16), "b": (16, 16)},
        "vector_pipeline": {"x": (32, 16)},
        "mlp": {"x": (2, 8)},
    }
    return {key: rng.standard_normal(shape).astype(np.float32) for key, shape in shapes[name].items()}
