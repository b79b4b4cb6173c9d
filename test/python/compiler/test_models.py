"""The model zoo end to end: ONNX -> graph dialect -> numpy reference, checked against onnxruntime.

For every zoo model: the imported module, and the same module after the `graph-optimize`
pipeline, compute what onnxruntime computes (max abs error <= 1e-5 * max(1, max|reference|));
optimisation removes ops; printing and re-parsing changes nothing; ops carry their ONNX node
names as locations; `--input-shape` pins the dynamic batch dim; names survive the trip.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
from xdsl.dialects.builtin import ModuleOp, TensorType

from aitc.dialects import graph
from aitc.frontend.onnx_import import import_onnx
from aitc.interp.run import entry_function, input_names, output_names, run_module
from aitc.ir import parse_mlir, print_mlir
from aitc.passes.pipelines import graph_optimize_pipeline, run_pipeline
from aitc.reference import assert_close, onnxruntime_outputs
from aitc.testing import model_zoo

ZOO: dict[str, tuple[Callable, dict]] = {
    "mlp": (model_zoo.mlp, {}),
    "cnn_bn_pool": (model_zoo.cnn_bn_pool, {}),
    "residual_block": (model_zoo.residual_block, {}),
    "depthwise_separable": (model_zoo.depthwise_separable, {}),
    "transformer_opset17": (model_zoo.transformer_encoder_layer, {}),
    "transformer_opset13": (model_zoo.transformer_encoder_layer, {"opset": 13}),
    "transformer_opset18_decomposed": (
        model_zoo.transformer_encoder_layer,
        {"opset": 18, "decomposed": True},
    ),
    "transformer_opset20": (model_zoo.transformer_encoder_layer, {"opset": 20}),
    "encoder_tiny": (
        model_zoo.encoder,
        {
            "layers": 2,
            "hidden": 32,
            "heads": 4,
            "ffn": 64,
            "seq": 8,
            "vocab": 50,
            "batch": 2,
            "dynamic_batch": True,
        },
    ),
}
"""Test id -> (builder, keyword arguments). Every model has something graph-optimize fuses."""

NAMES = list(ZOO)
CONV_MODELS = ["cnn_bn_pool", "residual_block", "depthwise_separable"]
TRANSFORMERS = [n for n in NAMES if n.startswith("transformer_")]

COMPUTE_OPS = {
    "Conv", "MatMul", "Gemm", "Softmax", "BatchNormalization", "LayerNormalization", "MaxPool",
    "AveragePool", "Relu", "Clip", "Erf", "Gelu", "Transpose", "Sqrt", "Pow",
}  # fmt: skip
"""ONNX op types that always become a graph op of their own (never folded at import)."""

SHAPE_OPS = {"Shape", "Concat"}
"""In the zoo these only compute shapes, so the importer must fold them away."""


@dataclass(frozen=True)
class Case:
    """One zoo model with its example inputs, onnxruntime's outputs and the imported module."""

    model: onnx.ModelProto
    inputs: dict[str, np.ndarray]
    reference: dict[str, np.ndarray]
    module: ModuleOp


def shapes_of(inputs: Mapping[str, np.ndarray]) -> dict[str, list[int]]:
    """`input_shapes` for import_onnx that pins every dynamic dim to the example's."""
    return {name: list(value.shape) for name, value in inputs.items()}


@functools.cache
def case(name: str) -> Case:
    """Built once per session: tests only read the model and the module."""
    builder, kwargs = ZOO[name]
    model, inputs = builder(**kwargs)
    module = import_onnx(model, shapes_of(inputs))
    return Case(model, inputs, onnxruntime_outputs(model, inputs), module)


def graph_optimize(module: ModuleOp) -> ModuleOp:
    """A copy of `module` after the `graph-optimize` pipeline."""
    optimized = module.clone()
    run_pipeline(optimized, graph_optimize_pipeline())
    return optimized


@functools.cache
def optimized(name: str) -> ModuleOp:
    """The optimised module of zoo model `name`, built once per session."""
    return graph_optimize(case(name).module)


def graph_op_counts(module: ModuleOp) -> Counter:
    """How many of each graph-dialect op the module holds."""
    return Counter(op.name for op in module.walk() if op.name.startswith("graph."))


def locations(module: ModuleOp) -> set[str]:
    """The names in the printed IR's `loc("...")`."""
    return set(re.findall(r'loc\("([^"]*)"\)', print_mlir(module)))


# --------------------------------------------------------------------------- the zoo itself


@pytest.mark.parametrize("name", NAMES)
def test_zoo_builders_are_deterministic(name: str):
    builder, kwargs = ZOO[name]
    model, inputs = builder(**kwargs)
    again, inputs_again = builder(**kwargs)
    assert model.SerializeToString() == again.SerializeToString()
    assert inputs.keys() == inputs_again.keys()
    assert all(np.array_equal(inputs[k], inputs_again[k]) for k in inputs)
    onnx.checker.check_model(model, full_check=True)


def test_zoo_models_have_a_dynamic_batch_dim():
    for name in NAMES:
        model = case(name).model
        for value in model.graph.input:
            assert value.type.tensor_type.shape.dim[0].dim_param == "N", (name, value.name)


def test_transformer_variants_use_the_requested_forms():
    def op_types(name: str) -> Counter:
        return Counter(n.op_type for n in case(name).model.graph.node)

    assert op_types("transformer_opset17")["LayerNormalization"] == 2
    assert op_types("transformer_opset17")["Erf"] == 1
    assert op_types("transformer_opset20")["Gelu"] == 1
    for decomposed in ("transformer_opset13", "transformer_opset18_decomposed"):
        counts = op_types(decomposed)
        assert counts["LayerNormalization"] == counts["Gelu"] == 0
        assert (counts["ReduceMean"], counts["Sqrt"], counts["Erf"]) == (4, 2, 1)
    for name in TRANSFORMERS:
        counts = op_types(name)
        assert (counts["Shape"], counts["Gather"], counts["Reshape"]) == (1, 1, 4)


def test_benchmark_encoder_is_static_by_default():
    model, inputs = model_zoo.encoder(layers=1, hidden=16, heads=2, ffn=32, seq=4, vocab=10, batch=2)
    assert_close(run_module(import_onnx(model), inputs), onnxruntime_outputs(model, inputs))


def test_static_batch_copy_imports_without_input_shapes():
    model, inputs = model_zoo.mlp(batch=3)
    pinned = model_zoo.with_static_batch(model, 3)
    assert_close(run_module(import_onnx(pinned), inputs), onnxruntime_outputs(model, inputs))


# --------------------------------------------------------------------------- numerics


@pytest.mark.parametrize("name", NAMES)
def test_graph_level_matches_onnxruntime(name: str):
    c = case(name)
    assert_close(run_module(c.module, c.inputs), c.reference)


@pytest.mark.parametrize("name", NAMES)
def test_optimized_matches_onnxruntime(name: str):
    c = case(name)
    assert_close(run_module(optimized(name), c.inputs), c.reference)


@pytest.mark.parametrize("name", NAMES)
def test_optimized_agrees_with_unoptimized(name: str):
    c = case(name)
    plain = run_module(c.module, c.inputs)
    assert_close(run_module(optimized(name), c.inputs), plain)


@pytest.mark.parametrize("name", NAMES)
def test_optimization_removes_ops(name: str):
    before, after = graph_op_counts(case(name).module), graph_op_counts(optimized(name))
    assert sum(after.values()) < sum(before.values()), (before, after)


@pytest.mark.parametrize("name", CONV_MODELS)
def test_batch_norm_folds_into_conv(name: str):
    assert graph_op_counts(case(name).module)["graph.batch_norm"] > 0
    assert graph_op_counts(optimized(name))["graph.batch_norm"] == 0


def test_decomposed_transformer_optimizes_to_the_fused_graph():
    """torch's opset-13 export (GELU and LayerNorm spelled out) ends up as the opset-17 graph."""
    fused = graph_op_counts(optimized("transformer_opset17"))
    for name in ("transformer_opset13", "transformer_opset18_decomposed", "transformer_opset20"):
        assert graph_op_counts(optimized(name)) == fused, name


# --------------------------------------------------------------------------- text round trip


@pytest.mark.parametrize("stage", ["imported", "optimized"])
@pytest.mark.parametrize("name", NAMES)
def test_print_parse_round_trip_is_exact(name: str, stage: str):
    c = case(name)
    module = c.module if stage == "imported" else optimized(name)
    text = print_mlir(module)
    reparsed = parse_mlir(text, f"{name}.mlir")
    before, after = run_module(module, c.inputs), run_module(reparsed, c.inputs)
    assert list(after) == list(before)
    for key in before:
        assert np.array_equal(after[key], before[key]), key
    assert print_mlir(reparsed) == text


@pytest.mark.parametrize("name", NAMES)
def test_locations_are_onnx_node_names(name: str):
    c = case(name)
    node_names = {n.name for n in c.model.graph.node}
    found = locations(c.module)
    assert found <= node_names, found - node_names
    compute = {n.name for n in c.model.graph.node if n.op_type in COMPUTE_OPS}
    assert compute <= found, compute - found
    folded = {n.name for n in c.model.graph.node if n.op_type in SHAPE_OPS}
    assert not folded & found, folded & found


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_shape_subgraph_folds_at_import(name: str):
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape becomes static reshapes: no shape ops remain."""
    counts = graph_op_counts(case(name).module)
    assert counts["graph.gather"] == counts["graph.concat"] == 0
    batch = case(name).inputs["x"].shape[0]
    for op in case(name).module.walk():
        if isinstance(op, graph.ReshapeOp) and len(op.output.type.get_shape()) == 4:
            assert op.output.type.get_shape()[0] == batch


# --------------------------------------------------------------------------- shapes and names


@pytest.mark.parametrize("name", ["mlp", "cnn_bn_pool", "transformer_opset13", "encoder_tiny"])
def test_input_shape_pins_the_dynamic_batch(name: str):
    builder, kwargs = ZOO[name]
    model, inputs = builder(**{**kwargs, "batch": 3})
    module = import_onnx(model, shapes_of(inputs))
    for type_ in entry_function(module).function_type.inputs.data:
        assert isinstance(type_, TensorType)
        assert type_.get_shape()[0] == 3
    assert_close(run_module(module, inputs), onnxruntime_outputs(model, inputs))


@pytest.mark.parametrize("name", NAMES)
def test_names_are_the_models(name: str):
    c = case(name)
    function = entry_function(c.module)
    assert input_names(function) == [i.name for i in c.model.graph.input]
    assert output_names(function) == [o.name for o in c.model.graph.output]
    assert list(run_module(c.module, c.inputs)) == [o.name for o in c.model.graph.output]
    assert list(run_module(optimized(name), c.inputs)) == [o.name for o in c.model.graph.output]


# --------------------------------------------------------------------------- bundled examples

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_bundled_examples_are_fresh_small_and_static():
    """examples/models/*.onnx are what examples/make_example_models.py writes today."""
    spec = importlib.util.spec_from_file_location("make_example_models", EXAMPLES / "make_example_models.py")
    assert spec is not None
    assert spec.loader is not None
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    for name in maker.EXAMPLES:
        path = EXAMPLES / "models" / f"{name}.onnx"
        data = path.read_bytes()
        fresh, inputs = maker.build(name)
        assert data == fresh, f"{path} is stale: rerun examples/make_example_models.py"
        if name in maker.EXAMPLE_INPUTS:
            with np.load(path.with_suffix(".inputs.npz")) as saved:
                assert saved.files == list(inputs)
                for key, value in inputs.items():
                    np.testing.assert_array_equal(saved[key], value)
        assert len(data) < 300_000
        import_onnx(path)  # static shapes: no --input-shape needed
