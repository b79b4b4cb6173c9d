"""ONNX model -> `graph` dialect module.

    load (protobuf)
      -> validate (opset, outputs, names declared twice, read before defined or assigned twice,
         element types, absurd sizes and raw data sizes, support of every node and its
         attribute values, external data references: all problems at once, before any work)
      -> read external data (confined to the model's folder, checked against tensor sizes)
      -> pin input shapes (--input-shape), reject dynamic or absurd dims
      -> onnx.checker
      -> onnx shape inference (strict) to catch inconsistent shapes, reported per node
      -> lower node by node (onnx_ops.ONNX_OPS), folding constant subgraphs to constants
      -> func.func @main with `graph.name` on arguments and results, verified

Every user-facing problem is an `AitcError` with one line per problem, naming the ONNX node.
`import_model` is the whole sequence; `aitc import` and `aitc check` both run it.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message
from onnx import external_data_helper, helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from aitc.diagnostics import AitcError
from aitc.frontend.lowering import (
    MAX_DIM,
    MAX_ELEMENTS,
    SUPPORTED_ELEMENT_TYPES,
    Lowering,
    Unsupported,
    Value,
    check_dims,
    onnx_to_numpy,
)
from aitc.frontend.onnx_ops import ONNX_OPS, invalid_attribute
from aitc.types import element_type_of

MIN_OPSET = 13
MAX_OPSET = onnx.defs.onnx_opset_version()


@dataclass(frozen=True)
class NodeSupport:
    """One row of `aitc check`: how aitc handles one node."""

    name: str
    op_type: str
    status: str  # supported | decomposed | unsupported
    reason: str


# --------------------------------------------------------------------------- loading

_NOT_ONNX_HINT = "the file is truncated or is not an ONNX model; re-export it (torch.onnx.export, onnx.save)"

_MAGIC = (
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"PK\x03\x04", "a zip archive (a PyTorch .pt checkpoint or an .npz?)"),
    (b"\x1f\x8b", "a gzip file"),
    (b"\x93NUMPY", "a NumPy .npy file"),
    (b"\x89HDF", "an HDF5 file (a Keras .h5 model?)"),
    (b"\x80\x02", "a Python pickle (a PyTorch checkpoint?)"),
    (b"\x80\x04", "a Python pickle (a PyTorch checkpoint?)"),
)


def _looks_like(data: bytes) -> str | None:
    """What a file that failed to parse as ONNX seems to be, to name it in the error."""
    for magic, what in _MAGIC:
        if data.startswith(magic):
            return what
    if data[4:8] == b"TFL3":
        return "a TensorFlow Lite model"
    head = data[:4096]
    for cut in range(4):  # a multi-byte character may straddle the cut
        try:
            text = head[: len(head) - cut].decode("utf-8")
            break
        except UnicodeDecodeError:
            continue
    else:
        return None
    if not text.strip() or not all(c.isprintable() or c in "\t\r\n" for c in text):
        return None
    if text.lstrip().startswith(("builtin.module", "module", "func.func", '"builtin.module"')):
        return "an MLIR text file"
    first = text.strip().splitlines()[0]
    return f"a text file starting with {first[:40]!r}"


def _not_onnx(data: bytes, reason: str) -> AitcError:
    what = _looks_like(data)
    looks = f"; it looks like {what}" if what else ""
    return AitcError(f"not an ONNX model ({len(data)} bytes{looks}): {reason}", hint=_NOT_ONNX_HINT)


def load_model(path: str | os.PathLike, external_data: bool = True) -> onnx.ModelProto:
    """Reads an ONNX file; external data must stay inside the model's folder.

    With `external_data=False` the weights kept in external files are not read (their
    references are still there: `external_data_problems` checks them without reading).
    """
    path = Path(path)
    if path.is_dir():
        raise AitcError(f"{path} is a folder, not an ONNX file")
    if not path.is_file():
        raise AitcError(f"no such file: {path}")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise AitcError(f"cannot read {path}: {error.strerror}") from None
    if not data:
        raise AitcError("the file is empty (0 bytes), not an ONNX model", hint=_NOT_ONNX_HINT)
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as error:
        raise _not_onnx(data, f"protobuf parse failed ({str(error).strip()})") from None
    if not model.HasField("graph") or (not model.graph.node and not model.graph.output):
        raise _not_onnx(data, "it has no graph")
    broken = list(_non_utf8_strings(model))
    if broken:
        raise AitcError(broken[:5], hint="the file is damaged: ONNX names and string attributes are UTF-8")
    if external_data:
        _load_external_data(model, path.parent)
    return model


def _non_utf8_strings(message: Message, path: str = "model") -> Iterator[str]:
    """Where `message` holds a string field that is not UTF-8 (protobuf hands those over as
    bytes, and every later use of the name would fail)."""
    for field, value in message.ListFields():
        values = value if field.is_repeated else [value]
        for index, item in enumerate(values):
            where = f"{path}.{field.name}[{index}]" if field.is_repeated else f"{path}.{field.name}"
            if field.type == FieldDescriptor.TYPE_STRING and isinstance(item, bytes):
                yield f"{where} is not UTF-8 text ({item[:40]!r})"
            elif field.type == FieldDescriptor.TYPE_MESSAGE:
                yield from _non_utf8_strings(item, where)


def _external_tensors(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    return [t for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]


def _tensor_nbytes(tensor: onnx.TensorProto) -> int | None:
    """Bytes of a fixed-size tensor's data (None for strings and unknown element types)."""
    if tensor.data_type in (onnx.TensorProto.STRING, onnx.TensorProto.UNDEFINED):
        return None
    try:
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    except (KeyError, TypeError, ValueError):
        return None
    return math.prod(int(d) for d in tensor.dims) * itemsize


def _external_problem(tensor: onnx.TensorProto, folder: Path) -> str | None:
    """What is wrong with one initializer's external data reference, if anything."""
    info = {entry.key: entry.value for entry in tensor.external_data}
    location = info.get("location", "")
    if not location:
        return "its external data has no location"
    target = (folder / location).resolve()
    if os.path.isabs(location) or not target.is_relative_to(folder.resolve()):
        return f"external data path '{location}' leaves the model's folder"
    if not target.exists():
        return f"external data file '{location}' is missing"
    if not target.is_file():
        return f"external data path '{location}' is not a file"
    try:
        offset = int(info.get("offset", 0))
        length = int(info["length"]) if "length" in info else None
    except ValueError:
        return f"external data offset/length {info.get('offset')!r}/{info.get('length')!r} are not integers"
    size = target.stat().st_size
    if offset < 0 or (length is not None and length < 0):
        return f"external data offset {offset} / length {length} is negative"
    available = size - offset if length is None else length
    if offset + available > size:
        return (
            f"external data file '{location}' holds {size} bytes, "
            f"fewer than offset {offset} + length {length}"
        )
    needed = _tensor_nbytes(tensor)
    if needed is not None and available != needed:
        return (
            f"external data '{location}' gives {available} bytes (offset {offset}), "
            f"but the {_describe(tensor)} needs {needed}"
        )
    return None


def _describe(tensor: onnx.TensorProto) -> str:
    """`4x4 FLOAT tensor` (`scalar FLOAT tensor`)."""
    dims = "x".join(str(d) for d in tensor.dims) or "scalar"
    return f"{dims} {onnx.TensorProto.DataType.Name(tensor.data_type)} tensor"


def external_data_problems(model: onnx.ModelProto, folder: str | os.PathLike) -> list[str]:
    """What is wrong with the external data references (paths, files, sizes), without reading."""
    problems = []
    for tensor in _external_tensors(model):
        problem = _external_problem(tensor, Path(folder))
        if problem:
            problems.append(f"initializer '{tensor.name}': {problem}")
    return problems


_EXTERNAL_HINT = "keep external data files next to the model, with relative paths"


def _load_external_data(model: onnx.ModelProto, folder: Path) -> None:
    problems = external_data_problems(model, folder)
    if problems:
        raise AitcError(problems, hint=_EXTERNAL_HINT)
    if _external_tensors(model):
        try:
            external_data_helper.load_external_data_for_model(model, str(folder))
        except (OSError, ValueError) as error:
            raise AitcError(f"cannot read the model's external data: {error}") from None


def _as_model(source: str | os.PathLike | onnx.ModelProto) -> onnx.ModelProto:
    if not isinstance(source, onnx.ModelProto):
        return load_model(source)
    unloaded = _external_tensors(source)
    if unloaded:
        raise AitcError(
            [
                f"initializer '{t.name}' keeps its data in an external file that was not loaded"
                for t in unloaded
            ],
            hint="pass the model's path (external data is read from its folder), "
            "or onnx.load() it with its external data first",
        )
    return source


# --------------------------------------------------------------------------- validation


def default_opset(model: onnx.ModelProto) -> int:
    """The version of the default (ai.onnx) opset that the model imports (the highest, if it
    lists several: ONNX binds every node to the highest)."""
    versions = [entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")]
    if versions:
        return max(versions)
    if not model.opset_import:
        raise AitcError(
            "the model declares no opset (opset_import is empty)",
            hint="the file is truncated or was not written by an ONNX exporter",
        )
    raise AitcError("the model imports no default-domain (ai.onnx) opset")


def node_name(node: onnx.NodeProto, index: int) -> str:
    """The node's name, or `OpType_index` for an unnamed node (as the table and errors show it)."""
    return node.name or f"{node.op_type}_{index}"


def _node_label(node: onnx.NodeProto, index: int) -> str:
    """`node 'name' (OpType)`: how every diagnostic names a node."""
    return f"node '{node_name(node, index)}' ({node.op_type})"


def _support(node: onnx.NodeProto) -> tuple[str, str]:
    """(status, reason) of one node: supported / decomposed / unsupported / invalid."""
    entry = ONNX_OPS.get(node.op_type)
    if node.domain not in ("", "ai.onnx"):
        return "unsupported", f"custom domain '{node.domain}'"
    if entry is None:
        return "unsupported", "no lowering for this op type"
    invalid = invalid_attribute(node)
    if invalid:
        return "invalid", invalid
    problem = entry.precheck(node) if entry.precheck else None
    return ("unsupported", problem) if problem else (entry.status, entry.note)


def node_support(model: onnx.ModelProto) -> list[NodeSupport]:
    """Per node: supported / decomposed / unsupported / invalid, with the reason."""
    return [
        NodeSupport(node_name(node, index), node.op_type, *_support(node))
        for index, node in enumerate(model.graph.node)
    ]


def _declaration_problems(model: onnx.ModelProto) -> list[str]:
    """At least one graph output; graph inputs, initializers and outputs each declared once."""
    problems = []
    if not model.graph.output:
        problems.append(
            "the graph has no outputs, so it computes nothing: list its results in graph.output "
            "(re-export the model)"
        )
    lists = {
        "graph input": [i.name for i in model.graph.input],
        "initializer": [t.name for t in model.graph.initializer],
        "graph output": [o.name for o in model.graph.output],
    }
    for kind, names in lists.items():
        for name, count in Counter(names).items():
            if count > 1:
                problems.append(f"{kind} '{name}' is listed {count} times; list it once")
    return problems


def _definition_problems(model: onnx.ModelProto) -> list[str]:
    """Single assignment: every name a node reads is defined before it, every name it writes is
    new (not a graph input, initializer or other node's output), every graph output is produced."""
    definer = {i.name: f"graph input '{i.name}'" for i in model.graph.input}
    definer.update({t.name: f"initializer '{t.name}'" for t in model.graph.initializer})
    problems = []
    for index, node in enumerate(model.graph.node):
        label = _node_label(node, index)
        problems += [
            f"{label} reads '{name}', which no initializer, graph input or earlier node defines "
            "(missing initializer?)"
            for name in node.input
            if name and name not in definer
        ]
        for name in filter(None, node.output):
            if name in definer:
                problems.append(
                    f"{label} writes '{name}', which {definer[name]} already defines: "
                    "ONNX assigns each name once; rename one of them"
                )
            definer.setdefault(name, label)
    unproduced = [o.name for o in model.graph.output if o.name not in definer]
    return problems + [f"graph output '{name}' is never produced" for name in unproduced]


def _type_name(elem_type: int) -> str:
    values = onnx.TensorProto.DataType.values()
    return onnx.TensorProto.DataType.Name(elem_type) if elem_type in values else str(elem_type)


def _type_problems(model: onnx.ModelProto) -> list[str]:
    """Graph inputs/outputs must be tensors, and every boundary tensor of a supported element type."""
    problems = []
    values = [("input", v) for v in graph_inputs(model)] + [("output", v) for v in model.graph.output]
    for kind, value in values:
        if not value.type.HasField("tensor_type"):
            problems.append(
                f"graph {kind} '{value.name}' is not a tensor (sequences and maps are not supported)"
            )
        elif kind == "output" and not value.type.tensor_type.HasField("shape"):
            problems.append(
                f"graph output '{value.name}' declares no shape (ONNX requires one; symbolic dims are "
                "fine): re-export the model, or set it with onnx.shape_inference.infer_shapes"
            )
        elif value.type.tensor_type.elem_type not in SUPPORTED_ELEMENT_TYPES:
            name = _type_name(value.type.tensor_type.elem_type)
            problems.append(
                f"graph {kind} '{value.name}' has element type {name}, which aitc does not support"
            )
    for tensor in model.graph.initializer:
        if tensor.data_type not in SUPPORTED_ELEMENT_TYPES:
            problems.append(
                f"initializer '{tensor.name}' has element type {_type_name(tensor.data_type)}, "
                "which aitc does not support"
            )
    return problems


def _dims_problem(dims: Sequence[int], what: str) -> str | None:
    """Rejects negative and absurd shapes before anything is allocated."""
    if any(d < 0 for d in dims):
        return f"{what} has a negative dimension {list(dims)}"
    count = math.prod(dims)
    if any(d > MAX_DIM for d in dims) or count > MAX_ELEMENTS:
        return f"{what} has absurd dimensions {list(dims)}: {count} elements (aitc's limit: {MAX_ELEMENTS})"
    return None


def _raw_data_problem(tensor: onnx.TensorProto) -> str | None:
    """An initializer whose raw_data does not hold exactly its shape's bytes (onnx.checker only
    catches too few)."""
    if tensor.data_location == onnx.TensorProto.EXTERNAL or not tensor.HasField("raw_data"):
        return None
    needed, size = _tensor_nbytes(tensor), len(tensor.raw_data)
    if needed is None or size == needed:
        return None
    return (
        f"initializer '{tensor.name}' holds {size} bytes of raw data, "
        f"but the {_describe(tensor)} needs {needed}"
    )


def _size_problems(model: onnx.ModelProto) -> list[str]:
    problems = [
        _dims_problem([int(d) for d in t.dims], f"initializer '{t.name}'") or _raw_data_problem(t)
        for t in model.graph.initializer
    ]
    return [p for p in problems if p]


def _check_opset(model: onnx.ModelProto) -> None:
    opset = default_opset(model)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise AitcError(
            f"opset {opset} is not supported (aitc imports opsets {MIN_OPSET}..{MAX_OPSET})",
            hint="convert the model with onnx.version_converter.convert_version(model, 17)",
        )


def model_problems(model: onnx.ModelProto) -> list[str]:
    """What would stop an import besides the nodes themselves: opset, outputs, names defined
    twice or never, element types, initializer sizes (one line each)."""
    try:
        _check_opset(model)
    except AitcError as error:
        return error.problems
    return (
        _declaration_problems(model)
        + _definition_problems(model)
        + _type_problems(model)
        + _size_problems(model)
    )


_NODE_HINTS = {
    "unsupported": "`aitc check MODEL` lists every node; `aitc check --ops` lists the supported op types",
    "invalid": "ONNX forbids these attribute values: fix the exporter, or the node (onnx.helper)",
}


def validate(model: onnx.ModelProto, folder: str | os.PathLike | None = None) -> None:
    """All structural problems at once, before any work: opset (alone: nothing else means much
    under a wrong opset), then model_problems, unsupported or invalid nodes and, given the
    model's folder, bad external data references (checked, not read)."""
    _check_opset(model)
    problems = model_problems(model)
    external = external_data_problems(model, folder) if folder is not None else []
    bad = [r for r in node_support(model) if r.status in _NODE_HINTS]
    problems += external + [f"node '{r.name}' ({r.op_type}): {r.status}: {r.reason}" for r in bad]
    if problems:
        statuses = {r.status for r in bad}
        hints = [hint for status, hint in _NODE_HINTS.items() if status in statuses]
        raise AitcError(problems, hint=hints[0] if hints else _EXTERNAL_HINT if external else None)


_CHECKER_NODE = re.compile(r"Bad node spec for node\. Name: (.*) OpType: (\S+)")


def check_onnx(model: onnx.ModelProto) -> None:
    """onnx.checker, its complaint reduced to one line with the offending node or tensor."""
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        context = [line.removeprefix("==> Context:").strip() for line in lines if line.startswith("==>")]
        message = lines[0] if lines else "onnx.checker failed"
        node = _CHECKER_NODE.fullmatch(context[0]) if context else None
        if node:
            label = _checker_node_label(model, *node.groups())
            raise AitcError(f"{label}: invalid: {message} (onnx.checker)") from None
        where = f" ({context[0]})" if context else ""
        raise AitcError(f"invalid ONNX model: {message}{where}") from None


def _checker_node_label(model: onnx.ModelProto, name: str, op_type: str) -> str:
    """The label of the node onnx.checker names (the first so named: unnamed ones are ambiguous)."""
    nodes = enumerate(model.graph.node)
    found = next(((i, n) for i, n in nodes if n.name == name and n.op_type == op_type), None)
    return f"node '{name}' ({op_type})" if found is None else _node_label(found[1], found[0])


# --------------------------------------------------------------------------- shapes


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The model's inputs that are not initializers: the values a run is given."""
    initializers = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers]


def _dims(value: onnx.ValueInfoProto) -> list[int | str]:
    dims: list[int | str] = []
    for d in value.type.tensor_type.shape.dim:
        dims.append(d.dim_value if d.HasField("dim_value") else (d.dim_param or "?"))
    return dims


def pin_input_shapes(model: onnx.ModelProto, input_shapes: Mapping[str, Sequence[int]]) -> None:
    """Writes static shapes into the graph inputs; every dim must end up static and sane."""
    inputs = {i.name: i for i in graph_inputs(model)}
    problems = [
        f"--input-shape names '{n}', which is not a model input (inputs: {', '.join(inputs)})"
        for n in input_shapes
        if n not in inputs
    ]
    for name, value in inputs.items():
        tensor_type = value.type.tensor_type
        if name in input_shapes:
            wanted = list(input_shapes[name])
            if tensor_type.HasField("shape") and len(tensor_type.shape.dim) != len(wanted):
                problems.append(
                    f"--input-shape {name}: rank {len(wanted)}, but the model says rank "
                    f"{len(tensor_type.shape.dim)} {_dims(value)}"
                )
                continue
            shape = tensor_type.shape
            del shape.dim[:]
            for d in wanted:
                shape.dim.add().dim_value = d
        problems += _input_shape_problems(name, value)
    if problems:
        raise AitcError(problems)


def _input_shape_problems(name: str, value: onnx.ValueInfoProto) -> list[str]:
    if not value.type.tensor_type.HasField("shape"):
        return [f"input '{name}' has no shape; pass --input-shape {name}=D0xD1x..."]
    dims = _dims(value)
    if any(isinstance(d, str) for d in dims):
        example = "x".join(str(d) if isinstance(d, int) else "1" for d in dims)
        symbolic = ", ".join(f"'{d}'" for d in dims if isinstance(d, str))
        return [
            f"input '{name}' has dynamic dims {symbolic} (shape {dims}); "
            f"pin them with --input-shape {name}={example}"
        ]
    problem = _dims_problem([int(d) for d in dims], f"input '{name}'")
    return [problem] if problem else []


_INFERENCE_LINE = re.compile(r"\(op_type:(\w*), node name: ([^)]*)\): (?:\[\w+\] )?(.*)")


def _declared_types(model: onnx.ModelProto) -> dict[str, str]:
    """`name -> f32[3x4]` for every value whose type the model states (inputs, initializers, value_info)."""
    types = {}
    for value in [*model.graph.input, *model.graph.value_info]:
        if value.type.HasField("tensor_type"):
            elem = _type_name(value.type.tensor_type.elem_type).lower()
            types[value.name] = f"{elem}[{'x'.join(str(d) for d in _dims(value))}]"
    for tensor in model.graph.initializer:
        types[tensor.name] = f"{_type_name(tensor.data_type).lower()}[{'x'.join(map(str, tensor.dims))}]"
    return types


def _inference_problems(model: onnx.ModelProto, text: str) -> list[str]:
    """onnx's shape inference complaints, one line per node, with the node's input types."""
    nodes = {n.name: n for n in model.graph.node if n.name}
    types = _declared_types(model)
    problems = []
    for match in _INFERENCE_LINE.finditer(text):
        op_type, name, message = match.groups()
        if "instead is null" in message and problems:
            continue  # a consequence of an earlier problem
        node = nodes.get(name)
        known = [f"{i} {types[i]}" for i in (node.input if node else []) if i in types]
        inputs = f" (inputs: {', '.join(known)})" if known else ""
        problems.append(f"node '{name}' ({op_type}): inconsistent shapes or types: {message.strip()}{inputs}")
    return problems


def _infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as error:
        problems = _inference_problems(model, str(error))
        if not problems:
            lines = [line.strip() for line in str(error).splitlines() if line.strip()]
            problems = [f"inconsistent shapes or types: {' '.join(lines)[:400]}"]
        raise AitcError(problems, hint="onnx's strict shape inference rejects the model") from None


# --------------------------------------------------------------------------- lowering


def _initializers(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    values = {}
    problems = []
    for tensor in model.graph.initializer:
        try:
            check_dims(list(tensor.dims), f"initializer {tensor.name}")
            onnx_to_numpy(tensor.data_type)
            values[tensor.name] = numpy_helper.to_array(tensor)
        except Unsupported as error:
            problems.append(str(error))
        except (ValueError, TypeError) as error:
            problems.append(f"initializer '{tensor.name}' is malformed: {error}")
    if problems:
        raise AitcError(problems)
    return values


def _lower_nodes(model: onnx.ModelProto, lowering: Lowering, env: dict[str, Value]) -> None:
    for index, node in enumerate(model.graph.node):
        lowering.at_node(node, index)
        label = _node_label(node, index)
        inputs = [env[name] if name else None for name in node.input]
        last = lowering.block.last_op
        try:
            outputs = ONNX_OPS[node.op_type].lower(lowering, node, inputs)
            _verify_new_ops(lowering.block, last)
        except Unsupported as error:
            raise AitcError(f"{label}: {error}") from None
        except (VerifyException, DiagnosticException, ValueError, IndexError) as error:
            raise AitcError(f"{label}: {str(error).splitlines()[0]}") from None
        for name, value in zip(node.output, outputs, strict=False):
            if name:
                env[name] = value


def _verify_new_ops(block: Block, last: Operation | None) -> None:
    """Verifies the ops added after `last`, so that a bad attribute is blamed on its ONNX node
    (onnx's shape inference does not check everything, e.g. Conv's group against the channels)."""
    op = last.next_op if last is not None else block.first_op
    while op is not None:
        op.verify()
        op = op.next_op


def _value_type(value: Value) -> TensorType:
    if isinstance(value, np.ndarray):
        return TensorType(element_type_of(value.dtype), list(value.shape))
    assert isinstance(value.type, TensorType)
    return value.type


def _check_against_onnx(inferred: onnx.ModelProto, env: Mapping[str, Value]) -> None:
    """onnx's own inference and aitc's must agree on every static shape (catches lowering bugs)."""
    infos = list(inferred.graph.value_info) + list(inferred.graph.output)
    problems = []
    for info in infos:
        dims = _dims(info)
        if info.name not in env or not info.type.tensor_type.HasField("shape"):
            continue
        if any(isinstance(d, str) for d in dims):
            continue
        ours = list(_value_type(env[info.name]).get_shape())
        if ours != dims:
            problems.append(f"'{info.name}': onnx infers shape {dims}, aitc computed {ours}")
    if problems:
        raise AitcError(problems, hint="this is an aitc bug or an inconsistent model")


def _name_attrs(names: Sequence[str]) -> ArrayAttr[DictionaryAttr]:
    return ArrayAttr([DictionaryAttr({"graph.name": StringAttr(n)}) for n in names])


def import_onnx(
    source: str | os.PathLike | onnx.ModelProto,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ModuleOp:
    """Converts an ONNX model (path or ModelProto) to a verified graph-dialect module.

    The entry function is `@main`; its arguments and results carry the ONNX names as
    `graph.name` attributes, and every op's location is the ONNX node name.
    """
    model, folder = _unread_model(source)
    return import_model(model, folder, input_shapes)


def _unread_model(source: str | os.PathLike | onnx.ModelProto) -> tuple[onnx.ModelProto, Path | None]:
    """The model to import (a private copy of a ModelProto, whose external data must be loaded;
    a file read without its external data) and the folder to read that data from."""
    if isinstance(source, onnx.ModelProto):
        model = onnx.ModelProto()
        model.CopyFrom(_as_model(source))
        return model, None
    return load_model(source, external_data=False), Path(source).parent


def import_model(
    model: onnx.ModelProto,
    folder: Path | None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ModuleOp:
    """The whole import of `model` (changed in place), with every check: `aitc import` and
    `aitc check` both run this, so they accept and reject the same models.

    External data is read from `folder` only after `validate` (a model aitc cannot import costs
    nothing); with no folder, the model must hold its weights already.
    """
    inferred = typed_model(model, folder, input_shapes)
    return _lower_model(model, inferred)


def typed_model(
    model: onnx.ModelProto,
    folder: Path | None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> onnx.ModelProto:
    """Every check of `import_model` before lowering: `model` validated, its external data
    read from `folder`, its inputs pinned to `input_shapes` (both in place), checked by onnx;
    returns it with every value typed by onnx's strict shape inference (an AitcError naming the
    node where the types do not add up). `aitc verify` prepares the model it compares so."""
    validate(model, folder)
    if folder is not None:
        _load_external_data(model, folder)
    pin_input_shapes(model, input_shapes or {})
    check_onnx(model)
    return _infer_shapes(model)


def _lower_model(model: onnx.ModelProto, inferred: onnx.ModelProto) -> ModuleOp:
    """`func.func @main` holding the lowered nodes, checked against onnx's shapes and verified."""
    env: dict[str, Value] = dict(_initializers(model))
    block = Block()
    arg_names = []
    for value in graph_inputs(model):
        dtype = onnx_to_numpy(value.type.tensor_type.elem_type)
        shape = [int(d) for d in _dims(value)]
        env[value.name] = block.insert_arg(TensorType(element_type_of(dtype), shape), len(block.args))
        arg_names.append(value.name)
    lowering = Lowering(block, default_opset(model))
    lowering.constant_names = {id(v): (v, k) for k, v in env.items() if isinstance(v, np.ndarray)}
    _lower_nodes(model, lowering, env)
    _check_against_onnx(inferred, env)
    lowering.location = None
    lowering.name_hint = "output"
    results: list[SSAValue] = [lowering.ssa(env[o.name]) for o in model.graph.output]
    block.add_op(func.ReturnOp(*results))
    function = func.FuncOp(
        "main",
        ([a.type for a in block.args], [r.type for r in results]),
        Region(block),
        arg_attrs=_name_attrs(arg_names),
        res_attrs=_name_attrs([o.name for o in model.graph.output]),
    )
    module = ModuleOp([function])
    _erase_unused_constants(block)
    module.verify()
    return module


def _erase_unused_constants(block: Block) -> None:
    from aitc.dialects.graph import ConstantOp

    for op in reversed(list(block.ops)):
        if isinstance(op, ConstantOp) and not op.output.uses:
            op.detach()
            op.erase()


@dataclass(frozen=True)
class CheckReport:
    """What `aitc check` reports: the per-node table, and the error `aitc import` fails with."""

    nodes: list[NodeSupport]
    error: AitcError | None  # None: the model imports


def check_model(
    source: str | os.PathLike | onnx.ModelProto,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> CheckReport:
    """`import_onnx`'s whole work in memory (nothing is written), reported instead of raised,
    with the per-node table. Errors loading the file itself still raise AitcError."""
    model, folder = _unread_model(source)
    nodes = node_support(model)
    try:
        import_model(model, folder, input_shapes)
    except AitcError as error:
        return CheckReport(nodes, error)
    return CheckReport(nodes, None)
