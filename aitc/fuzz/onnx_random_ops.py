"""A random ONNX node grafted onto a valid model: an op type from a fixed list, fed by the graph
input and random constants (random dtypes, shapes and values, some absurd), with random
attributes, its result an extra graph output. It exercises every importer precheck and
lowering, and import-time constant folding (`ConstantOfShape` of [2**40], `Range` to 2**40...).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from aitc.fuzz.case import numpy_rng

OP_TYPES = (
    "Abs", "Add", "And", "ArgMax", "AveragePool", "BatchNormalization", "Cast", "Ceil", "Clip",
    "Concat", "ConstantOfShape", "Conv", "Cos", "CumSum", "DepthToSpace", "Div", "Dropout", "Einsum",
    "Elu", "Equal", "Erf", "Exp", "Expand", "Flatten", "Floor", "Gather", "GatherElements", "GatherND",
    "Gelu", "Gemm", "GlobalAveragePool", "Greater", "HardSigmoid", "Identity", "InstanceNormalization",
    "LayerNormalization", "LeakyRelu", "Less", "Log", "LogSoftmax", "MatMul", "Max", "MaxPool", "Mean",
    "Min", "Mod", "Mul", "Neg", "NonZero", "Not", "OneHot", "Pad", "Pow", "Range", "Reciprocal",
    "ReduceMax", "ReduceMean", "ReduceSum", "Relu", "Reshape", "Resize", "Round", "ScatterND", "Shape",
    "Sigmoid", "Sign", "Sin", "Size", "Slice", "Softmax", "Softplus", "SpaceToDepth", "Split", "Sqrt",
    "Squeeze", "Sub", "Sum", "Tanh", "Tile", "TopK", "Transpose", "Trilu", "Unsqueeze", "Where",
)  # fmt: skip
"""Op types to graft (fixed, so a case stays the same when aitc learns new ops)."""

_NUMPY_TYPES = {
    "tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(bool)": np.bool_,
    "tensor(float16)": np.float16, "tensor(int32)": np.int32, "tensor(uint8)": np.uint8,
    "tensor(int8)": np.int8, "tensor(double)": np.float64,
}  # fmt: skip
_ABSURD_INTS = (2**40, -1, 0, 2**62, -(2**40))
_STRINGS = ("constant", "reflect", "edge", "DCR", "CRD", "linear", "nearest", "NOTSET", "SAME_UPPER", "bogus")
ABSURD_SHARE = 0.15
"""Chance that a constant or attribute value is absurd (negative, zero, 2**40) instead of plausible."""


def _random_shape(rng: random.Random) -> list[int]:
    return [rng.choice([1, 1, 2, 3, 4, 8, 0]) for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 4]))]


def _random_constant(rng: random.Random, name: str, dtype: type) -> onnx.TensorProto:
    """A small constant; an int64 one sometimes holds an absurd value (a size, index, repeat)."""
    values = numpy_rng(rng).integers(-3, 9, size=_random_shape(rng))
    if dtype is np.int64 and values.size and rng.random() < ABSURD_SHARE:
        values.flat[rng.randrange(values.size)] = rng.choice(_ABSURD_INTS)
    return numpy_helper.from_array(values.astype(dtype), name)


def _schema(op_type: str, opset: int) -> onnx.defs.OpSchema | None:
    try:
        return onnx.defs.get_schema(op_type, opset)
    except onnx.defs.SchemaError:
        return None


def _input_dtypes(rng: random.Random, schema: onnx.defs.OpSchema | None) -> list[type]:
    """One dtype per input, consistent per type parameter of the schema (float32 if unknown)."""
    if schema is None:
        return [rng.choice([np.float32, np.int64, np.bool_]) for _ in range(rng.randint(1, 3))]
    allowed = {c.type_param_str: list(c.allowed_type_strs) for c in schema.type_constraints}
    count = rng.randint(schema.min_input, min(schema.max_input, schema.min_input + 2))
    by_parameter: dict[str, type] = {}
    dtypes = []
    for index in range(count):
        formal = schema.inputs[min(index, len(schema.inputs) - 1)].type_str
        if formal not in by_parameter:
            options = [_NUMPY_TYPES[t] for t in allowed.get(formal, [formal]) if t in _NUMPY_TYPES]
            by_parameter[formal] = rng.choice(sorted(options, key=str) or [np.float32])
        dtypes.append(by_parameter[formal])
    return dtypes


def _attribute_value(rng: random.Random, kind: onnx.defs.OpSchema.AttrType) -> object:
    absurd = rng.random() < ABSURD_SHARE
    kinds = onnx.defs.OpSchema.AttrType
    if kind == kinds.INT:
        return rng.choice(_ABSURD_INTS) if absurd else rng.choice([0, 1, 1, 2, -1, 3])
    if kind == kinds.INTS:
        return [rng.choice(_ABSURD_INTS) if absurd else rng.randint(-1, 3) for _ in range(rng.randint(1, 4))]
    if kind == kinds.FLOAT:
        return rng.choice([float("nan"), -1e38]) if absurd else rng.choice([0.0, 0.5, 1.0, -1.0])
    if kind == kinds.STRING:
        return rng.choice(_STRINGS)
    return None


def _random_attributes(rng: random.Random, schema: onnx.defs.OpSchema | None) -> dict[str, Any]:
    """Every required attribute of the schema and some optional ones, with plausible (sometimes
    absurd) values; none for an op without a schema."""
    chosen = {}
    for name, attribute in sorted((schema.attributes if schema else {}).items()):
        if attribute.required or rng.random() < 0.3:
            value = _attribute_value(rng, attribute.type)
            if value is not None:
                chosen[name] = value
    return chosen


def graft_random_op(model: onnx.ModelProto, rng: random.Random) -> str:
    """Adds one random node reading `model`'s first input and/or constants, with inputs and
    attributes shaped by the op's ONNX schema; its output becomes an extra graph output (typed
    by ONNX shape inference when that succeeds)."""
    graph = model.graph
    op_type = rng.choice(OP_TYPES)
    schema = _schema(op_type, model.opset_import[0].version)
    inputs = []
    for index, dtype in enumerate(_input_dtypes(rng, schema)):
        if dtype is np.float32 and rng.random() < 0.5:
            inputs.append(graph.input[0].name)
            continue
        graph.initializer.append(_random_constant(rng, f"fuzz_const_{index}", dtype))
        inputs.append(f"fuzz_const_{index}")
    attributes = _random_attributes(rng, schema)
    graph.node.append(helper.make_node(op_type, inputs, ["fuzz_out"], name="fuzz_op", **attributes))
    graph.output.append(_inferred_output(model))
    described = ", ".join(f"{k}={v}" for k, v in attributes.items())
    return f"grafted {op_type}({', '.join(inputs)}) {described}".rstrip()


def _inferred_output(model: onnx.ModelProto) -> onnx.ValueInfoProto:
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # an invalid graft: declare a rank-2 float output and let aitc judge
        return helper.make_tensor_value_info("fuzz_out", TensorProto.FLOAT, ["d0", "d1"])
    for value in inferred.graph.value_info:
        if value.name == "fuzz_out" and value.type.tensor_type.HasField("shape"):
            return value
    return helper.make_tensor_value_info("fuzz_out", TensorProto.FLOAT, ["d0", "d1"])


def folding_bomb(model: onnx.ModelProto, rng: random.Random) -> str:
    """An extra output computed from constants whose value would take terabytes: import-time
    folding must refuse it, not try to allocate it."""
    graph, huge = model.graph, rng.choice([[2**20, 2**20], [2**40], [2**31, 2**31, 2**31]])
    graph.initializer.extend(
        [
            numpy_helper.from_array(np.array(huge, np.int64), "bomb_shape"),
            numpy_helper.from_array(np.array(1.0, np.float32), "bomb_one"),
            numpy_helper.from_array(np.array(0, np.int64), "bomb_start"),
            numpy_helper.from_array(np.array(huge[0], np.int64), "bomb_limit"),
            numpy_helper.from_array(np.array(1, np.int64), "bomb_step"),
        ]
    )
    op, inputs = rng.choice(
        [
            ("ConstantOfShape", ["bomb_shape"]),
            ("Expand", ["bomb_one", "bomb_shape"]),
            ("Range", ["bomb_start", "bomb_limit", "bomb_step"]),
            ("Tile", [graph.input[0].name, "bomb_shape"]),
        ]
    )
    graph.node.append(helper.make_node(op, inputs, ["bomb"], name="bomb"))
    elem_type = TensorProto.INT64 if op == "Range" else TensorProto.FLOAT
    graph.output.append(helper.make_tensor_value_info("bomb", elem_type, None))
    return f"extra output {op}({', '.join(inputs)}) with {huge}"
