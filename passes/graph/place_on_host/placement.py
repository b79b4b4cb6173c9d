"""Where each graph op runs for place-on-host (steps 1 and 2 of the pass): the reason an op
goes to the host (`placement_of_ops`), and the single-placement segments the ops are ordered
into (`settled_segments`, which moves to the host what would share a boolean across segments).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue

from aitc.dialects import graph
from aitc.passes.graph_to_tile.table import missing_reason
from aitc.types import is_bool, is_float

HOST_INDEX_ELEMENTS = 4096
"""Integer/boolean ops with at most this many result elements run on the host: an NPU kernel
pays at least two DMA latencies (load, store) plus a launch through the queues, more than a
host CPU needs for a few thousand integer operations."""


def _elements(value: SSAValue) -> int:
    type_ = value.type
    return math.prod(type_.get_shape()) if isinstance(type_, TensorType) else 0


def _is_float(value: SSAValue) -> bool:
    type_ = value.type
    return isinstance(type_, TensorType) and is_float(type_.get_element_type())


def _is_bool(value: SSAValue) -> bool:
    type_ = value.type
    return isinstance(type_, TensorType) and is_bool(type_.get_element_type())


def _is_int8(value: SSAValue) -> bool:
    type_ = value.type
    return isinstance(type_, TensorType) and str(type_.get_element_type()) == "i8"


def _index_arithmetic(op: Operation) -> bool:
    """Small integer computations (shapes, indices) other than the int8 matmuls and convs of
    quantized models, which are the matrix engine's work, and the moves of their int8 tensors
    (a slice, a concat: activations, as a multi-core program splits them)."""
    values = [*op.operands, *op.results]
    return (
        bool(op.results)
        and not isinstance(op, graph.MatMulOp | graph.ConvOp)
        and not any(_is_int8(r) for r in op.results)
        and not any(_is_float(v) for v in values)
        and sum(_elements(r) for r in op.results) <= HOST_INDEX_ELEMENTS
    )


def _producer(value: SSAValue) -> Operation | None:
    owner = value.owner
    return owner if isinstance(owner, Operation) and not isinstance(owner, graph.ConstantOp) else None


def placement_of_ops(ops: Sequence[Operation]) -> dict[Operation, str | None]:
    """op -> None (NPU) or the reason it runs on the host, for every non-constant graph op."""
    reasons: dict[Operation, str | None] = {}
    for op in ops:
        reason = missing_reason(op)
        if reason is None and _index_arithmetic(op):
            count = sum(_elements(r) for r in op.results)
            reason = (
                f"integer index arithmetic on {count} element(s): cheaper on the host than an NPU "
                "kernel (two DMA latencies at least)"
            )
        reasons[op] = reason
    changed = True
    while changed:  # follow-on placements, to a fixed point
        changed = False
        for op in ops:
            if reasons[op] is not None:
                continue
            producers = [_producer(v) for v in op.operands]
            if isinstance(op, graph.ReshapeOp) and producers[0] is not None and reasons[producers[0]]:
                reasons[op] = "a view of a host result (free on the host)"
            elif any(
                _is_bool(v) and (p is None or reasons[p] is not None)
                for v, p in zip(op.operands, producers, strict=True)
            ):
                reasons[op] = "reads a boolean (i1) tensor made on the host: the engines have no boolean type"
            elif any(
                _is_bool(r) and reasons.get(use.operation) is not None for r in op.results for use in r.uses
            ):
                reasons[op] = "makes a boolean (i1) tensor used on the host: the engines have no boolean type"
            else:
                continue
            changed = True
    return reasons


@dataclass
class Segment:
    """A run of ops on one processor, in program order."""

    placement: str
    ops: list[Operation]


def segments(ops: Sequence[Operation], reasons: dict[Operation, str | None]) -> list[Segment]:
    """`ops` (topologically ordered) regrouped into as few single-placement runs as a greedy
    list scheduler finds: run every ready op of the current placement, then switch."""
    index = {op: i for i, op in enumerate(ops)}
    waiting = {op: len({p for v in op.operands if (p := _producer(v)) in index}) for op in ops}
    ready: dict[str, list[int]] = {"host": [], "npu": []}

    def kind(op: Operation) -> str:
        return "npu" if reasons[op] is None else "host"

    for op in ops:
        if not waiting[op]:
            heapq.heappush(ready[kind(op)], index[op])
    result: list[Segment] = []
    current = "host" if ready["host"] else "npu"
    while ready["host"] or ready["npu"]:
        if not ready[current]:
            current = "npu" if current == "host" else "host"
        segment = Segment(current, [])
        while ready[current]:
            op = ops[heapq.heappop(ready[current])]
            segment.ops.append(op)
            for user in dict.fromkeys(use.operation for r in op.results for use in r.uses):
                if user in waiting:
                    waiting[user] -= 1
                    if not waiting[user]:
                        heapq.heappush(ready[kind(user)], index[user])
        result.append(segment)
    return result


def settled_segments(ops: Sequence[Operation], reasons: dict[Operation, str | None]) -> list[Segment]:
    """`segments`, after moving to the host every NPU op that would read or write a boolean
    across a segment boundary (two NPU ops in different segments cannot share an i1 tensor:
    it would go through DRAM). Updates `reasons`; terminates because ops only move to the host."""
    while True:
        runs = segments(ops, reasons)
        where: dict[Operation | Block, int] = {op: k for k, run in enumerate(runs) for op in run.ops}
        moved = False
        for op in ops:
            if reasons[op] is not None:
                continue
            crossing = any(
                _is_bool(v) and where.get(v.owner) != where[op]
                for v in op.operands
                if not isinstance(v.owner, graph.ConstantOp)
            ) or any(
                _is_bool(r) and where.get(u.operation, where[op]) != where[op]
                for r in op.results
                for u in r.uses
            )
            if crossing:
                reasons[op] = "a boolean (i1) tensor it shares would cross a segment boundary through DRAM"
                moved = True
        if not moved:
            return runs
