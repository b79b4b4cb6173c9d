"""What the lowerings of convert-graph-to-tile share: the shape of a dispatch-table entry, the
context a lowering works in, and the two ways a lowering refuses an op.

A `Lowering` is one entry of the dispatch table (`table.LOWERINGS`, written out in one place):
its `lower` function, a static `unsupported` check run on every op before anything is lowered,
and whether the op joins elementwise chains. A family module (e.g. `conv.py`) defines
`lower_conv(ctx, ops)` and `conv_unsupported(op)`; `table.py` pairs them with the op class.

A lowering reads its operands' DRAM buffers with `ctx.buffer(value)` (views with
`ctx.view(buffer, shape)`), builds one kernel with `ctx.kernel(ops)` and hands it back with
`ctx.add(builder, tiles, reason)`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import DenseResourceAttr, LocationAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from aitc.analysis.graph_matching import node_name
from aitc.analysis.tile_footprint import root_of
from aitc.dialects import graph, tile
from aitc.passes.graph_to_tile.builder import KernelBuilder, buffer_shape
from aitc.passes.graph_to_tile.costs import Budget
from aitc.weights import array_to_attr, attr_to_array

# --------------------------------------------------------------------------- failures


class Unsupported(Exception):
    """An op (or a variant of it) that convert-graph-to-tile cannot lower yet."""


@dataclass(frozen=True)
class Fused:
    """A residual add (and the activation after it) fused into a conv's kernel."""

    residual: SSAValue
    activation: str | None
    output: SSAValue


class CannotFit(Exception):
    """A tensor whose smallest legal tile does not fit the target's SRAM/ACC budget."""

    def __init__(
        self, op: Operation, what: str, needed: int, budget: Budget, space: str = "SRAM", single: bool = False
    ):
        """`single`: the ACC tile may take all of ACC, single-buffered (`Budget.holds_acc`)."""
        self.op = op
        total = budget.target.sram_bytes if space == "SRAM" else budget.target.acc_bytes
        available = budget.sram if space == "SRAM" else budget.acc
        allowed = f"half of its {_kib(total)} {space}; the other half is kept for double buffering"
        if single:
            available, allowed = 2 * budget.acc, f"all of its {space}, single-buffered"
        fix_kib = -(-needed * total // available // 1024)
        self.message = (
            f"'{node_name(op)}' ({op.name}): {what} needs {_kib(needed)} of {space} per tile, but "
            f"target '{budget.target.name}' allows {_kib(available)} ({allowed}). Fix: use a target "
            f"with >= {fix_kib} KiB {space}, or make the tensor smaller (e.g. split the op along this "
            "dim before lowering)"
        )
        super().__init__(self.message)


def _kib(nbytes: int) -> str:
    return f"{nbytes} bytes" if nbytes < 4096 else f"{nbytes / 1024:.1f} KiB"


# --------------------------------------------------------------------------- dispatch table

LowerFn = Callable[["LoweringContext", list[Operation]], None]
CheckFn = Callable[[Operation], "str | None"]


def _always_supported(op: Operation) -> str | None:
    return None


@dataclass(frozen=True)
class Lowering:
    """How one graph op class is lowered; `fusable` ops are grouped into elementwise chains
    and `lower` receives the whole chain."""

    lower: LowerFn
    unsupported: CheckFn = _always_supported
    fusable: bool = False


# --------------------------------------------------------------------------- helpers


def tensor_shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def tensor_element(value: SSAValue) -> Attribute:
    assert isinstance(value.type, TensorType)
    return value.type.get_element_type()


def flat2d(shape: Sequence[int]) -> tuple[int, int]:
    """(product of leading dims, last dim); a scalar is 1 x 1."""
    if not shape:
        return 1, 1
    return math.prod(shape[:-1]), shape[-1]


# --------------------------------------------------------------------------- context


def residual_operand(value: SSAValue, add: Operation) -> SSAValue | None:
    """The tensor `add` adds to `value` when that is a residual connection a producer's kernel
    can take over: `add` is a graph.add and `value`'s only use, the other operand has `value`'s
    shape (no broadcast) and so has the result, all f32; else None."""
    if not isinstance(add, graph.AddOp) or not value.has_one_use() or value not in (add.lhs, add.rhs):
        return None
    other = add.rhs if add.lhs is value else add.lhs
    if other is value or not tensor_shape(other) == tensor_shape(value) == tensor_shape(add.output):
        return None
    f32 = {str(tensor_element(v)) for v in (value, other, add.output)} == {"f32"}
    return other if f32 else None


class LoweringContext:
    """The function being built: DRAM buffers of graph values, function-level declarations
    (tile.const, dram tile.alloc, tile.reshape views) and kernels, in order."""

    def __init__(self, budget: Budget):
        self.budget = budget
        self.decls: list[Operation] = []
        self.kernels: list[Operation] = []
        self.buffers: dict[SSAValue, SSAValue] = {}
        self._views: dict[tuple[SSAValue, tuple[int, ...]], SSAValue] = {}
        self.permuted: dict[tuple[SSAValue, tuple[int, ...]], SSAValue] = {}

    def buffer(self, value: SSAValue) -> SSAValue:
        """The DRAM buffer of graph `value`: its argument, its tile.const, or a new dram alloc."""
        if value in self.buffers:
            return self.buffers[value]
        owner = value.owner
        if isinstance(owner, graph.ConstantOp) and owner.value is not None:
            op = tile.ConstOp(owner.value)
            result = op.buffer
        else:
            op = tile.AllocOp(tile.buffer_type(tensor_shape(value), tensor_element(value), "dram"))
            result = op.buffer
        op.location = value.owner.location if isinstance(value.owner, Operation) else op.location
        self.decls.append(op)
        self.buffers[value] = result
        return result

    def permuted_constant(self, value: SSAValue, perm: Sequence[int], layout: str) -> SSAValue | None:
        """The DRAM buffer of constant `value` with its dims permuted by `perm` at compile time
        (numpy.transpose of the bytes, a tile.const of its own, made once); None when `value` is
        not a graph.constant, so a lowering that wants a weight in another layout can fall back.
        The resource is named after the original's and `layout` (e.g. `conv1_weight_ohwi_<digest>`)."""
        owner = value.owner
        if not isinstance(owner, graph.ConstantOp) or owner.value is None:
            return None
        key = (value, tuple(perm))
        if key not in self.permuted:
            array = np.ascontiguousarray(np.transpose(attr_to_array(owner.value), perm))
            hint = (
                owner.value.resource_handle.data.rsplit("_", 1)[0]
                if isinstance(owner.value, DenseResourceAttr)
                else "w"
            )
            op = tile.ConstOp(array_to_attr(array, f"{hint}_{layout}"))
            op.location = owner.location
            self.decls.append(op)
            self.permuted[key] = op.buffer
        return self.permuted[key]

    def constant(self, array: np.ndarray, hint: str, location: LocationAttr | None = None) -> SSAValue:
        """The DRAM buffer of a constant the lowering computes at compile time (a tile.const
        of its own, named `hint`)."""
        op = tile.ConstOp(array_to_attr(np.ascontiguousarray(array), hint))
        if location is not None:
            op.location = location
        self.decls.append(op)
        return op.buffer

    def view(self, buffer: SSAValue, shape: Sequence[int]) -> SSAValue:
        """A tile.reshape of `buffer` to `shape` (the buffer itself when the shape is equal)."""
        shape = tuple(int(d) for d in shape)
        buffer = root_of(buffer)  # a view of a view: view the root
        if buffer_shape(buffer) == shape:
            return buffer
        key = (buffer, shape)
        if key not in self._views:
            op = tile.ReshapeOp(buffer, shape)
            owner = buffer.owner
            if isinstance(owner, Operation):
                op.location = owner.location
            self.decls.append(op)
            self._views[key] = op.result
        return self._views[key]

    def value_view(self, value: SSAValue, shape: Sequence[int]) -> SSAValue:
        return self.view(self.buffer(value), shape)

    def kernel(self, ops: Sequence[Operation], name: str | None = None) -> KernelBuilder:
        """A builder for the kernel of `ops` (named, unless `name` is given, and located after
        the last one; its `op` attribute lists the graph ops)."""
        last = ops[-1]
        op_names = ",".join(dict.fromkeys(op.name for op in ops if op.name.startswith("graph."))) or "copy"
        return KernelBuilder(self.budget, name or node_name(last), last.location, op_names)

    def add(self, builder: KernelBuilder, tiles: Sequence[int], reason: str) -> None:
        self.kernels.append(builder.finish(tiles, reason))
