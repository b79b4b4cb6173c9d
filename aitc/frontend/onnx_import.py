"""ONNX model -> `graph` dialect module.

    load (protobuf, external data confined to the model's folder)
      -> validate (opset, onnx.checker, undefined names, support of every node: all problems at once)
      -> pin input shapes (--input-shape), reject dynamic or absurd dims
      -> onnx shape inference (strict) to catch inconsistent shapes
      -> lower node by node (onnx_ops.ONNX_OPS), folding constant subgraphs to constants
      -> func.func @main with `graph.name` on arguments and results, verified

Every user-facing problem is an `AitcError` with one line per problem, naming the ONNX node.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from aitc.diagnostics import AitcError
from aitc.frontend.lowering import Lowering, Unsupported, Value, check_dims, onnx_to_numpy
from aitc.frontend.onnx_ops import ONNX_OPS
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


def load_model(path: str | os.PathLike) -> onnx.ModelProto:
    """Reads an ONNX file; external data must stay inside the model's folder."""
    path = Path(path)
    if not path.is_file():
        raise AitcError(f"no such file: {path}")
    data = path.read_bytes()
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as error:
        raise AitcError(
            f"not a valid ONNX model ({len(data)} bytes): protobuf parse failed ({error})",
            hint="the file is truncated or not ONNX; re-export it",
        ) from None
    if not model.HasField("graph") or (not model.graph.node and not model.graph.output):
        raise AitcError("not an ONNX model: it has no graph", hint="the file is truncated or not ONNX")
    _load_external_data(model, path.parent)
    return model


def _external_tensors(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    return [t for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]


def _load_external_data(model: onnx.ModelProto, folder: Path) -> None:
    problems = []
    root = folder.resolve()
    for tensor in _external_tensors(model):
        info = {entry.key: entry.value for entry in tensor.external_data}
        location = info.get("location", "")
        target = (folder / location).resolve()
        if os.path.isabs(location) or not target.is_relative_to(root):
            problems.append(
                f"initializer '{tensor.name}': external data path '{location}' leaves the model's folder"
            )
        elif not target.is_file():
            problems.append(f"initializer '{tensor.name}': external data file '{location}' is missing")
        else:
            size = target.stat().st_size
            offset, length = int(info.get("offset", 0)), int(info.get("length", size))
            if offset + length > size:
                problems.append(
                    f"initializer '{tensor.name}': external data '{location}' is shorter ({size} bytes) than offset+length {offset + length}"
                )
    if problems:
        raise AitcError(problems, hint="keep external data files next to the model, with relative paths")
    if _external_tensors(model):
        onnx.external_data_helper.load_external_data_for_model(model, str(folder))


def _as_model(source: str | os.PathLike | onnx.ModelProto) -> onnx.ModelProto:
    return source if isinstance(source, onnx.ModelProto) else load_model(source)


# --------------------------------------------------------------------------- validation


def default_opset(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    raise AitcError("the model imports no default-domain (ai.onnx) opset")


def node_support(model: onnx.ModelProto) -> list[NodeSupport]:
    """Per node: supported / decomposed / unsupported with the reason."""
    rows = []
    for index, node in enumerate(model.graph.node):
        name = node.name or f"{node.op_type}_{index}"
        entry = ONNX_OPS.get(node.op_type)
        if node.domain not in ("", "ai.onnx"):
            rows.append(NodeSupport(name, node.op_type, "unsupported", f"custom domain '{node.domain}'"))
        elif entry is None:
            rows.append(NodeSupport(name, node.op_type, "unsupported", "no lowering for this op type"))
        else:
            problem = entry.precheck(node) if entry.precheck else None
            if problem:
                rows.append(NodeSupport(name, node.op_type, "unsupported", problem))
            else:
                rows.append(NodeSupport(name, node.op_type, entry.status, entry.note))
    return rows


def _undefined_names(model: onnx.ModelProto) -> list[str]:
    defined = {i.name for i in model.graph.input} | {t.name for t in model.graph.initializer} | {""}
    problems = []
    for index, node in enumerate(model.graph.node):
        for name in node.input:
            if name not in defined:
                label = node.name or f"{node.op_type}_{index}"
                problems.append(
                    f"node '{label}' ({node.op_type}) reads '{name}', which no initializer, "
                    "graph input or earlier node defines (missing initializer?)"
                )
        defined.update(node.output)
    for output in model.graph.output:
        if output.name not in defined:
            problems.append(f"graph output '{output.name}' is never produced")
    return problems


def validate(model: onnx.ModelProto) -> None:
    """All structural problems at once: opset, undefined names, unsupported nodes."""
    opset = default_opset(model)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise AitcError(
            f"opset {opset} is not supported (aitc imports opsets {MIN_OPSET}..{MAX_OPSET})",
            hint="convert the model with onnx.version_converter.convert_version(model, 17)",
        )
    problems = _undefined_names(model)
    if problems:
        raise AitcError(problems)
    unsupported = [r for r in node_support(model) if r.status == "unsupported"]
    if unsupported:
        raise AitcError(
            [f"node '{r.name}' ({r.op_type}): unsupported: {r.reason}" for r in unsupported],
            hint="`aitc check MODEL` lists every node; `aitc check --ops` lists the supported op types",
        )
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as error:
        raise AitcError(f"invalid ONNX model: {str(error).strip().splitlines()[0]}") from None


# --------------------------------------------------------------------------- shapes


def _graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    initializers = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers]


def _dims(value: onnx.ValueInfoProto) -> list[int | str]:
    dims: list[int | str] = []
    for d in value.type.tensor_type.shape.dim:
        dims.append(d.dim_value if d.HasField("dim_value") else (d.dim_param or "?"))
    return dims


def pin_input_shapes(model: onnx.ModelProto, input_shapes: Mapping[str, Sequence[int]]) -> None:
    """Writes static shapes into the graph inputs; every dim must end up static and sane."""
    inputs = {i.name: i for i in _graph_inputs(model)}
    problems = [
        f"--input-shape names '{n}', which is not a model input (inputs: {', '.join(inputs)})"
        for n in input_shapes
        if n not in inputs
    ]
    for name, value in inputs.items():
        tensor_type = value.type.tensor_type
        if not value.type.HasField("tensor_type"):
            problems.append(f"input '{name}' is not a tensor")
            continue
        if name in input_shapes:
            shape = tensor_type.shape
            wanted = list(input_shapes[name])
            if shape.dim and len(shape.dim) != len(wanted):
                problems.append(
                    f"--input-shape {name}: rank {len(wanted)} but the model says rank {len(shape.dim)}"
                )
                continue
            del shape.dim[:]
            for d in wanted:
                shape.dim.add().dim_value = d
        dims = _dims(value)
        if not tensor_type.HasField("shape"):
            problems.append(f"input '{name}' has no shape; pass --input-shape {name}=D0xD1x...")
        elif any(isinstance(d, str) for d in dims):
            example = "x".join(str(d) if isinstance(d, int) else "N" for d in dims)
            problems.append(
                f"input '{name}' has dynamic dims {dims}; pin them with --input-shape {name}={example}"
            )
        else:
            try:
                check_dims([int(d) for d in dims], f"input {name}")
            except Unsupported as error:
                problems.append(str(error))
    if problems:
        raise AitcError(problems)


def _infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        raise AitcError(f"inconsistent shapes or types: {' '.join(lines)[:400]}") from None


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
        label = node.name or f"{node.op_type}_{index}"
        inputs = [env[name] if name else None for name in node.input]
        try:
            outputs = ONNX_OPS[node.op_type].lower(lowering, node, inputs)
        except Unsupported as error:
            raise AitcError(f"node '{label}' ({node.op_type}): {error}") from None
        except (VerifyException, DiagnosticException, ValueError, IndexError) as error:
            raise AitcError(f"node '{label}' ({node.op_type}): {str(error).splitlines()[0]}") from None
        for name, value in zip(node.output, outputs, strict=False):
            if name:
                env[name] = value


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
    model = onnx.ModelProto()
    model.CopyFrom(_as_model(source))
    validate(model)
    pin_input_shapes(model, input_shapes or {})
    inferred = _infer_shapes(model)
    env: dict[str, Value] = dict(_initializers(model))
    block = Block()
    arg_names = []
    for value in _graph_inputs(model):
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


def check_model(
    source: str | os.PathLike | onnx.ModelProto,
) -> list[NodeSupport]:
    """The per-node support table of `aitc check` (loading errors still raise AitcError)."""
    model = _as_model(source)
    return node_support(model)
