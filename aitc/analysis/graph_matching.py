"""Matching and building helpers shared by the graph passes (no passes here).

Constants are read through `aitc.weights.attr_to_array`, so inline `dense<...>` and
`dense_resource<...>` values look the same to a pattern. Float constants that a pattern expects
(0.5, 1/sqrt(2), epsilon, ...) are compared with a relative tolerance, because exporters print
them rounded to float32.
"""

from __future__ import annotations

import math
import re
from typing import TypeVar

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, FusedLoc, LocationAttr, NameLoc, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from aitc.dialects import graph
from aitc.weights import array_to_attr, attr_to_array

REL_TOLERANCE = 1e-4
"""Relative tolerance for comparing a constant with the value a pattern expects."""

OpT = TypeVar("OpT", bound=Operation)


def shape_of(value: SSAValue) -> tuple[int, ...]:
    type_ = value.type
    assert isinstance(type_, TensorType)
    return tuple(type_.get_shape())


def producer(value: SSAValue, op_type: type[OpT]) -> OpT | None:
    """The op of class `op_type` that defines `value`, else None."""
    owner = value.owner
    return owner if isinstance(owner, op_type) else None


def constant_array(value: SSAValue) -> np.ndarray | None:
    """The array held by the `graph.constant` that defines `value`, else None."""
    op = producer(value, graph.ConstantOp)
    if op is None or op.value is None:
        return None
    return attr_to_array(op.value)


def splat_value(value: SSAValue) -> float | None:
    """The one value of a constant whose elements are all equal (a scalar or a splat), else None."""
    array = constant_array(value)
    if array is None or array.size == 0 or array.dtype.kind not in "biuf":
        return None
    first = array.flat[0]
    if not np.all(array == first):
        return None
    return float(first)


def close(actual: float, expected: float, rel: float = REL_TOLERANCE) -> bool:
    return math.isclose(actual, expected, rel_tol=rel, abs_tol=0.0)


def is_splat(value: SSAValue, expected: float, rel: float = REL_TOLERANCE) -> bool:
    """True when `value` is a constant splat of `expected` (within `rel`; exact when rel=0)."""
    actual = splat_value(value)
    if actual is None:
        return False
    return actual == expected if rel == 0 else close(actual, expected, rel)


def single_use(value: SSAValue) -> bool:
    return value.has_one_use()


def other_operand(op: Operation, value: SSAValue) -> SSAValue:
    """The operand of binary `op` that is not `value` (the second one if both are)."""
    lhs, rhs = op.operands[0], op.operands[1]
    return rhs if lhs is value else lhs


def location_name(location: Attribute) -> str | None:
    """The ONNX node name a location carries (a NameLoc, or the last named one of a FusedLoc)."""
    if isinstance(location, NameLoc):
        return location.desc.data
    if isinstance(location, FusedLoc):
        # xDSL 0.74 types FusedLoc.locations as Attribute; its constraint makes it an ArrayAttr
        assert isinstance(location.locations, ArrayAttr)
        names = [location_name(loc) for loc in location.locations.data]
        return next((n for n in reversed(names) if n), None)
    return None


def is_graph_level(f: func.FuncOp) -> bool:
    """A function on tensors (or holding graph ops): the conversion's input."""
    types = [*f.function_type.inputs.data, *f.function_type.outputs.data]
    return any(isinstance(t, TensorType) for t in types) or any(
        o.name.startswith("graph.") for o in f.body.block.ops
    )


def node_name(op: Operation) -> str:
    """The ONNX node name that the op's location carries, else the op name."""
    return location_name(op.location) or op.name


def name_hint(op: Operation) -> str:
    """A readable name for values made from `op`: its location name, else its result's SSA
    name, else the op's short name. Only [A-Za-z0-9_] survives, so it is a valid SSA name."""
    raw = location_name(op.location)
    if not raw and op.results:
        raw = op.results[0].name_hint
    raw = raw or op.name.split(".")[-1]
    clean = re.sub(r"[^A-Za-z0-9_]", "_", raw).strip("_") or "cst"
    return clean if clean[0].isalpha() or clean[0] == "_" else "v_" + clean


def new_constant(array: np.ndarray, hint: str, location: LocationAttr | None = None) -> graph.ConstantOp:
    """A `graph.constant` holding `array` (inline when small, a named resource otherwise)."""
    op = graph.ConstantOp(array_to_attr(np.ascontiguousarray(array), hint))
    op.output.name_hint = hint
    if location is not None:
        op.location = location
    return op


def replace_with_value(rewriter: PatternRewriter, op: Operation, value: SSAValue) -> None:
    """Replaces single-result `op` by an existing value (the op is erased)."""
    rewriter.replace(op, [], [value])
