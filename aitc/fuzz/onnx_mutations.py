"""Structured mutations of valid ONNX models: the mistakes exporters and hand edits make.

Each mutation edits a `ModelProto` in place and returns a note, or raises `NotApplicable` when
the model lacks what it needs (e.g. no Conv); `mutate_model` then tries another base model.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from aitc.fuzz.onnx_random_ops import folding_bomb, graft_random_op

GRAFT_SHARE = 0.4
"""Fraction of semantic mutations that graft a random op (`onnx_random_ops`)."""


class NotApplicable(Exception):
    """The model has nothing this mutation could damage."""


ModelMutation = Callable[[onnx.ModelProto, random.Random], str]


def _nodes(model: onnx.ModelProto, *op_types: str, with_inputs: bool = False) -> list[onnx.NodeProto]:
    """The nodes of these op types (any, if none given); NotApplicable if there are none."""
    found = [
        n
        for n in model.graph.node
        if (not op_types or n.op_type in op_types) and (n.input or not with_inputs)
    ]
    if not found:
        raise NotApplicable
    return found


def _initializer(model: onnx.ModelProto, name: str) -> onnx.TensorProto:
    for tensor in model.graph.initializer:
        if tensor.name == name:
            return tensor
    raise NotApplicable


def _set_attribute(node: onnx.NodeProto, name: str, value) -> None:
    kept = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend([*kept, helper.make_attribute(name, value)])


def _replace_initializer(model: onnx.ModelProto, name: str, array: np.ndarray) -> None:
    tensor = _initializer(model, name)
    tensor.CopyFrom(numpy_helper.from_array(array, name))


def weight_shape(model: onnx.ModelProto, rng: random.Random) -> str:
    """A MatMul/Gemm weight of the wrong shape (e.g. [9, 4] against an input of [2, 8])."""
    node = rng.choice(_nodes(model, "MatMul", "Gemm"))
    shape = rng.choice([(9, 4), (1,), (3, 3, 3), (0, 4), ()])
    _replace_initializer(model, node.input[1], np.ones(shape, np.float32))
    return f"{node.op_type} '{node.name}' weight -> shape {shape}"


def reshape_without_shape(model: onnx.ModelProto, rng: random.Random) -> str:
    """A Reshape whose shape input is removed."""
    node = rng.choice(_nodes(model, "Reshape"))
    del node.input[1:]
    return f"Reshape '{node.name}' lost its shape input"


def reshape_bad_attribute(model: onnx.ModelProto, rng: random.Random) -> str:
    """Reshape allowzero=3 (only 0/1 are defined) or a target shape that cannot fit."""
    node = rng.choice(_nodes(model, "Reshape"))
    if rng.random() < 0.5:
        _set_attribute(node, "allowzero", rng.choice([3, -1]))
        return f"Reshape '{node.name}' allowzero -> bad value"
    target = rng.choice([[-1, -1], [0, 0, 0], [2**40], [-5], [3, 5], []])
    _replace_initializer(model, node.input[1], np.array(target, np.int64))
    return f"Reshape '{node.name}' shape -> {target}"


def conv_group(model: onnx.ModelProto, rng: random.Random) -> str:
    """A Conv with group = -1, 0, 3 or 2**40."""
    node = rng.choice(_nodes(model, "Conv"))
    group = rng.choice([-1, 0, 3, 2**40])
    _set_attribute(node, "group", group)
    return f"Conv '{node.name}' group -> {group}"


def conv_channels(model: onnx.ModelProto, rng: random.Random) -> str:
    """A Conv weight whose input channels do not match its input, or bad pads/strides/kernel."""
    node = rng.choice(_nodes(model, "Conv"))
    if rng.random() < 0.5:
        out_c, in_c, kh, kw = _initializer(model, node.input[1]).dims
        _replace_initializer(model, node.input[1], np.ones((out_c, in_c + 3, kh, kw), np.float32))
        return f"Conv '{node.name}' weight in-channels {in_c} -> {in_c + 3}"
    name, value = rng.choice(
        [("pads", [-1] * 4), ("strides", [0, 0]), ("kernel_shape", [5]), ("dilations", [2**31])]
    )
    _set_attribute(node, name, value)
    return f"Conv '{node.name}' {name} -> {value}"


def ir_version(model: onnx.ModelProto, rng: random.Random) -> str:
    """ir_version 0, negative or from the future."""
    model.ir_version = rng.choice([0, -1, 2, 999])
    return f"ir_version -> {model.ir_version}"


def opset_version(model: onnx.ModelProto, rng: random.Random) -> str:
    """The default-domain opset out of range, or a second default-domain import."""
    if rng.random() < 0.2:
        model.opset_import.append(helper.make_opsetid("", 13))
        return "second default-domain opset import"
    model.opset_import[0].version = rng.choice([0, 1, 5, 12, 99, 2**40, -1])
    return f"opset -> {model.opset_import[0].version}"


def short_raw_data(model: onnx.ModelProto, rng: random.Random) -> str:
    """An initializer whose raw_data is shorter than its dims say (or empty)."""
    tensor = rng.choice(list(model.graph.initializer) or [None])
    if tensor is None:
        raise NotApplicable
    data = numpy_helper.to_array(tensor).tobytes()
    tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor), tensor.name))
    tensor.raw_data = data[: rng.randrange(len(data) + 1) // 2]
    return f"initializer '{tensor.name}' raw_data cut to {len(tensor.raw_data)} of {len(data)} bytes"


def absurd_dims(model: onnx.ModelProto, rng: random.Random) -> str:
    """A graph input dim (or an initializer dim) negative, zero or absurd (2**40)."""
    value = rng.choice([-3, 0, 2**40, 2**62])
    if rng.random() < 0.5 and model.graph.initializer:
        tensor = rng.choice(list(model.graph.initializer))
        tensor.dims[:] = [value, *tensor.dims[1:]]
        return f"initializer '{tensor.name}' dims -> {list(tensor.dims)}"
    graph_input = rng.choice(list(model.graph.input))
    dims = graph_input.type.tensor_type.shape.dim
    if not dims:
        raise NotApplicable
    dims[0].dim_value = value
    return f"input '{graph_input.name}' dim 0 -> {value}"


def outputs(model: onnx.ModelProto, rng: random.Random) -> str:
    """No graph outputs, an output listed twice, or an output nothing produces."""
    choice = rng.randrange(3)
    if choice == 0:
        del model.graph.output[:]
        return "graph without outputs"
    if choice == 1:
        model.graph.output.append(model.graph.output[0])
        return f"output '{model.graph.output[0].name}' listed twice"
    model.graph.output[0].name = "nobody_makes_this"
    return "an output nothing produces"


def op_type(model: onnx.ModelProto, rng: random.Random) -> str:
    """An unknown op type, or a known one in an unknown domain."""
    node = rng.choice(_nodes(model))
    if rng.random() < 0.3:
        node.domain = "com.example.unknown"
        return f"node '{node.name}' domain -> com.example.unknown"
    node.op_type = rng.choice(["FooBar", "", "Conv2D", node.op_type.lower()])
    return f"node '{node.name}' op type -> '{node.op_type}'"


def names(model: onnx.ModelProto, rng: random.Random) -> str:
    """Duplicate node names, two nodes writing one value, or names with quotes/newlines."""
    nodes = _nodes(model)
    choice = rng.randrange(3)
    if choice == 0:
        for node in nodes:
            node.name = "same"
        return "every node named 'same'"
    if choice == 1 and len(nodes) > 1:
        nodes[1].output[0] = nodes[0].output[0]
        return f"nodes 0 and 1 both write '{nodes[0].output[0]}'"
    nodes[0].name = rng.choice(['a"b', "line\nbreak", "}{", "%0", "é" * 300, "\\", 'loc("x")'])
    return f"node 0 renamed to {nodes[0].name[:20]!r}"


def undefined_values(model: onnx.ModelProto, rng: random.Random) -> str:
    """A node input no one defines, a renamed graph input, or a node that uses its own output."""
    node = rng.choice(_nodes(model, with_inputs=True))
    choice = rng.randrange(3)
    if choice == 0:
        node.input[0] = "no_such_value"
        return f"node '{node.name}' input 0 -> undefined"
    if choice == 1:
        model.graph.input[0].name = "renamed_input"
        return "graph input 0 renamed"
    node.input[0] = node.output[0]
    return f"node '{node.name}' reads its own output (a cycle)"


def dtypes(model: onnx.ModelProto, rng: random.Random) -> str:
    """A graph input of another element type, or an initializer relabelled as another type."""
    bad = rng.choice([TensorProto.INT64, TensorProto.STRING, TensorProto.BOOL, TensorProto.FLOAT16, 0, 999])
    if rng.random() < 0.5 and model.graph.initializer:
        tensor = rng.choice(list(model.graph.initializer))
        tensor.data_type = bad
        return f"initializer '{tensor.name}' data_type -> {bad}"
    model.graph.input[0].type.tensor_type.elem_type = bad
    return f"input 0 elem_type -> {bad}"


def attributes(model: onnx.ModelProto, rng: random.Random) -> str:
    """An axis out of range, an attribute of the wrong type, or an unknown attribute."""
    node = rng.choice(_nodes(model))
    name, value = rng.choice(
        [("axis", 7), ("axis", -9), ("axis", 1.5), ("axis", "one"), ("transB", 5), ("bogus", 1)]
    )
    _set_attribute(node, name, value)
    return f"node '{node.name}' {name} -> {value!r}"


def external_data(model: onnx.ModelProto, rng: random.Random) -> str:
    """An initializer moved to external data that is missing, outside the model's folder, a
    folder, or at an absurd offset/length."""
    tensor = rng.choice(list(model.graph.initializer) or [None])
    if tensor is None:
        raise NotApplicable
    location = rng.choice(["missing.bin", "../../../../etc/hostname", "/etc/hostname", ".", ""])
    entries = {"location": location}
    if rng.random() < 0.4:
        entries[rng.choice(["offset", "length"])] = str(rng.choice([2**62, -1, 10**30]))
    tensor.ClearField("raw_data")
    tensor.ClearField("float_data")
    tensor.ClearField("int64_data")
    tensor.data_location = TensorProto.EXTERNAL
    del tensor.external_data[:]
    for key, value in entries.items():
        tensor.external_data.add(key=key, value=value)
    return f"initializer '{tensor.name}' external data {entries}"


def empty_graph(model: onnx.ModelProto, rng: random.Random) -> str:
    """No nodes at all (the output is then undefined, or renamed to be the input)."""
    del model.graph.node[:]
    if rng.random() < 0.5:
        model.graph.output[0].name = model.graph.input[0].name
        return "no nodes; output = input"
    return "no nodes"


MODEL_MUTATIONS: tuple[ModelMutation, ...] = (
    weight_shape, reshape_without_shape, reshape_bad_attribute, conv_group, conv_channels, ir_version,
    opset_version, short_raw_data, absurd_dims, outputs, op_type, names, undefined_values, dtypes,
    attributes, external_data, empty_graph, folding_bomb,
)  # fmt: skip


def mutate_model(base: dict[str, onnx.ModelProto], rng: random.Random) -> tuple[bytes, str]:
    """One random mutation (often a grafted random op) applied to a copy of a base model that it
    applies to: (bytes, note)."""
    mutation = graft_random_op if rng.random() < GRAFT_SHARE else rng.choice(MODEL_MUTATIONS)
    for name in rng.sample(sorted(base), len(base)):
        model = onnx.ModelProto()
        model.CopyFrom(base[name])
        try:
            note = mutation(model, rng)
        except NotApplicable:
            continue
        return model.SerializeToString(), f"{name}: {note}"
    raise AssertionError(f"no base model suits {mutation.__name__}")
