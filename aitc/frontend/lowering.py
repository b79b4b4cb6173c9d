"""State of one ONNX -> graph import: the block being filled, import-time constants, folding."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import helper
from xdsl.dialects.builtin import LocationAttr, NameLoc, NoneAttr, StringAttr, TensorType, UnitAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue

from aitc.dialects import graph
from aitc.interp.graph import evaluate
from aitc.types import element_type_of, numpy_dtype
from aitc.weights import array_to_attr

Value = SSAValue | np.ndarray
"""A node input/output during import: an SSA value, or a constant known at import time."""

MAX_DIM = 1 << 31
MAX_ELEMENTS = 1 << 33
FOLD_GROWTH_BYTES = 1 << 16
"""Folding may not grow constants by more than this (an Expand of a scalar stays an op)."""


class Unsupported(Exception):
    """A node that aitc cannot import, with the reason."""


class Lowering:
    """Emits graph ops for ONNX nodes into `block`, folding ops whose inputs are all constant."""

    def __init__(self, block: Block, opset: int):
        self.block = block
        self.opset = opset
        self.location: LocationAttr | None = None
        self.name_hint = "c"
        self._constants: dict[SSAValue, np.ndarray] = {}
        self._materialized: dict[int, tuple[np.ndarray, SSAValue]] = {}
        self.constant_names: dict[int, tuple[np.ndarray, str]] = {}
        """Names of initializers, by array identity, so weights keep their ONNX names."""

    # -- values
    def ssa(self, value: Value | None) -> SSAValue:
        """The SSA value for `value`, materialising an import-time constant as graph.constant."""
        assert value is not None, "missing required input"
        if not isinstance(value, np.ndarray):
            return value
        cached = self._materialized.get(id(value))
        if cached is not None and cached[0] is value:
            return cached[1]
        named = self.constant_names.get(id(value))
        hint = named[1] if named is not None and named[0] is value else self.name_hint
        op = graph.ConstantOp(array_to_attr(value, hint))
        self._place(op)
        result = op.output
        self._constants[result] = value
        self._materialized[id(value)] = (value, result)
        return result

    def is_const(self, value: Value | None) -> bool:
        """Whether `value` is known at import (an array, or an SSA value folded from constants)."""
        return isinstance(value, np.ndarray) or (value is not None and value in self._constants)

    def const(self, value: Value | None, what: str) -> np.ndarray:
        """The import-time value of an input that must be constant (a shape, axes, pads...)."""
        if isinstance(value, np.ndarray):
            return value
        if value is not None and value in self._constants:
            return self._constants[value]
        raise Unsupported(
            f"input '{what}' must be a constant known at import, but it is computed at run time"
        )

    # -- ops
    def emit(self, op: Operation) -> list[Value]:
        """Adds `op`, or folds it to constants when every operand is constant."""
        folded = self._fold(op)
        if folded is not None:
            op.drop_all_references()
            return list(folded)
        self._place(op)
        return list(op.results)

    def emit_kept(self, op: Operation) -> list[Value]:
        """Adds `op` even when every operand is constant (a dequantized int8 weight stays int8 for
        the matrix engine); its values are still known at import, so a consumer that needs
        them (`const`) or folds gets them, and an op left without users is dead code."""
        folded = self._fold(op)
        self._place(op)
        for result, value in zip(op.results, folded or (), strict=False):
            self._constants[result] = value
        return list(op.results)

    def emit_inferred(
        self, op_type: type, operands: Sequence, attributes: dict, dtype: np.dtype
    ) -> list[Value]:
        """Builds an op whose result type its own `inferred_type()` computes (conv, pooling)."""
        probe = op_type.build(
            operands=operands,
            result_types=[TensorType(element_type_of(dtype), [1])],
            attributes=attributes,
        )
        try:
            type_ = probe.inferred_type()
        except Exception as error:
            probe.drop_all_references()
            raise Unsupported(str(error)) from error
        probe.drop_all_references()
        return self.emit(op_type.build(operands=operands, result_types=[type_], attributes=attributes))

    def _place(self, op: Operation) -> None:
        if self.location is not None:
            op.location = self.location
        self.block.add_op(op)

    def _fold(self, op: Operation) -> tuple[np.ndarray, ...] | None:
        if not all(v in self._constants for v in op.operands):
            return None
        args = [self._constants[v] for v in op.operands]
        out_bytes = sum(_nbytes(r.type) for r in op.results)
        if out_bytes > sum(a.nbytes for a in args) + FOLD_GROWTH_BYTES:
            return None
        op.verify()  # a kernel runs only on an op its verifier accepts (shapes, axes, types)
        return evaluate(op, args)

    # -- helpers used by many lowerings
    def reshape(self, value: Value, shape: Sequence[int]) -> Value:
        if isinstance(value, np.ndarray):
            return value.reshape(shape)
        if tuple(graph.tensor_of(value).get_shape()) == tuple(shape):
            return value
        return self.emit(graph.ReshapeOp(value, shape))[0]

    def cast(self, value: Value | None, dtype: np.dtype) -> Value:
        assert value is not None
        if isinstance(value, np.ndarray):
            return value.astype(dtype) if value.dtype != dtype else value
        if numpy_dtype(graph.tensor_of(value).get_element_type()) == dtype:
            return value
        return self.emit(graph.CastOp(value, element_type_of(dtype)))[0]

    def reduce(
        self,
        op_type: type[graph.ReduceOp],
        value: Value | None,
        axes: Sequence[int],
        keepdims: bool,
    ) -> Value:
        x = self.ssa(value)
        x_type = graph.tensor_of(x)
        shape = x_type.get_shape()
        out = graph.ReduceOp.infer_shape(shape, axes, keepdims)
        attributes: dict[str, Attribute] = {"axes": graph.ints_attr(axes)}
        if keepdims:
            attributes["keepdims"] = UnitAttr()
        result_type = TensorType(x_type.get_element_type(), out)
        return self.emit(op_type.build(operands=[x], result_types=[result_type], attributes=attributes))[0]

    def check_size(self, shape: Sequence[int], what: str) -> None:
        check_dims(shape, what)

    def onnx_dtype(self, elem_type: int) -> np.dtype:
        return onnx_to_numpy(elem_type)

    def at_node(self, node: onnx.NodeProto, index: int) -> None:
        name = node.name or f"{node.op_type}_{index}"
        self.location = NameLoc(StringAttr(location_text(name)), NoneAttr())
        self.name_hint = node.name or node.output[0] or node.op_type


def location_text(name: str) -> str:
    """An ONNX node name as location text: xDSL cannot parse non-ASCII `loc("...")` strings back,
    so non-ASCII characters are written as Python-style escapes (`nœud` -> `n\\u0153ud`)."""
    return name.encode("ascii", "backslashreplace").decode("ascii")


def _nbytes(type_: Attribute) -> int:
    assert isinstance(type_, TensorType)
    return int(np.prod(type_.get_shape())) * numpy_dtype(type_.get_element_type()).itemsize


SUPPORTED_ELEMENT_TYPES = {
    onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
    onnx.TensorProto.INT8, onnx.TensorProto.INT16, onnx.TensorProto.INT32, onnx.TensorProto.INT64,
    onnx.TensorProto.UINT8, onnx.TensorProto.UINT16, onnx.TensorProto.BOOL,
}  # fmt: skip


def onnx_to_numpy(elem_type: int) -> np.dtype:
    if elem_type not in SUPPORTED_ELEMENT_TYPES:
        name = (
            onnx.TensorProto.DataType.Name(elem_type)
            if elem_type in onnx.TensorProto.DataType.values()
            else str(elem_type)
        )
        raise Unsupported(f"element type {name} is not supported")
    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))


def check_dims(shape: Sequence[int], what: str) -> None:
    """Rejects absurd shapes before anything is allocated."""
    if any(d < 0 for d in shape):
        raise Unsupported(f"'{what}' has a negative dimension {list(shape)}")
    if any(d > MAX_DIM for d in shape) or int(np.prod([float(d) for d in shape])) > MAX_ELEMENTS:
        raise Unsupported(f"'{what}' has absurd dimensions {list(shape)} (over {MAX_ELEMENTS} elements)")
