"""`place-on-host`: heterogeneous placement. Graph ops the NPU cannot run (or that are cheaper
on the host) go to host segments; the function becomes a schedule of NPU and host segments.

    1. place every graph op (constants follow their users, see `placement_of_ops`):
         host  no tile lowering, or its lowering refuses this variant (`missing_reason`);
               integer/boolean index arithmetic on at most HOST_INDEX_ELEMENTS elements;
               a reshape of a host result; an op that would read a boolean from DRAM
               because its producer is on the host (iterated to a fixed point)
         npu   everything else
    2. order the ops into as few segments as possible: a topological order that runs every
       ready op of the current placement before switching (host first when both are ready)
    3. outline each segment into `@<function>_host<i>` / `@<function>_npu<i>` (exec.placement);
       constants are cloned into every segment that uses them; a segment's arguments and
       results are the hand-over tensors, named after the model tensor (`graph.name`)
    4. the function becomes the schedule (`exec.schedule`): one exec.call per segment

A function that needs no host op is left unchanged. See `aitc/dialects/exec.py` for the form.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from aitc.analysis.graph_matching import is_graph_level, node_name
from aitc.dialects import exec as exec_dialect
from aitc.dialects import graph
from aitc.module_target import module_target
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


def _index_arithmetic(op: Operation) -> bool:
    values = [*op.operands, *op.results]
    return (
        bool(op.results)
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


def _clean(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.:/-]", "_", text) or "t"


class _Names:
    """Hand-over tensor names: the model's name where the value has one, else the node's."""

    def __init__(self, function: func.FuncOp, returned: Sequence[SSAValue]):
        self.of: dict[SSAValue, str] = {}
        self.used: set[str] = set()
        for values, attrs in (
            (function.body.block.args, function.arg_attrs),
            (returned, function.res_attrs),
        ):
            for value, attr in zip(values, attrs.data if attrs else (), strict=False):
                name = attr.data.get("graph.name")
                if isinstance(name, StringAttr) and value not in self.of:
                    self._take(value, name.data)

    def _take(self, value: SSAValue, name: str) -> str:
        unique, k = name, 1
        while unique in self.used:
            unique, k = f"{name}_{k}", k + 1
        self.used.add(unique)
        self.of[value] = unique
        return unique

    def __call__(self, value: SSAValue) -> str:
        if value in self.of:
            return self.of[value]
        owner = value.owner
        base = value.name_hint or (node_name(owner) if isinstance(owner, Operation) else "arg")
        if isinstance(value, OpResult) and len(value.owner.results) > 1 and not value.name_hint:
            base = f"{base}_{value.index}"
        return self._take(value, _clean(base))


def _attrs(names: list[str]) -> ArrayAttr[DictionaryAttr]:
    return ArrayAttr([DictionaryAttr({"graph.name": StringAttr(n)}) for n in names])


def _outline(
    function: func.FuncOp,
    segment: Segment,
    number: int,
    interface: tuple[list[SSAValue], list[SSAValue]],
    names: _Names,
) -> func.FuncOp:
    """A new segment function computing the interface's outputs from its inputs with clones
    of the segment's ops."""
    inputs, outputs = interface
    block = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = {}
    for value, arg in zip(inputs, block.args, strict=True):
        mapping[value] = arg
        arg.name_hint = value.name_hint
    for op in segment.ops:
        for operand in op.operands:
            owner = operand.owner
            if operand not in mapping and isinstance(owner, graph.ConstantOp):
                clone = owner.clone()
                block.add_op(clone)
                mapping[operand] = clone.results[0]
        clone = op.clone(value_mapper=mapping)
        block.add_op(clone)
        for old, new in zip(op.results, clone.results, strict=True):
            mapping[old] = new
    for value in outputs:  # a returned constant or argument, handed through the last segment
        owner = value.owner
        if value not in mapping and isinstance(owner, graph.ConstantOp):
            clone = owner.clone()
            block.add_op(clone)
            mapping[value] = clone.results[0]
    block.add_op(func.ReturnOp(*[mapping[v] for v in outputs]))
    name = f"{function.sym_name.data}_{segment.placement}{number}"
    type_ = FunctionType.from_lists([v.type for v in inputs], [v.type for v in outputs])
    outlined = func.FuncOp(name, type_, Region(block))
    outlined.attributes[exec_dialect.PLACEMENT_ATTR] = StringAttr(segment.placement)
    outlined.arg_attrs = _attrs([names(v) for v in inputs])
    outlined.res_attrs = _attrs([names(v) for v in outputs])
    outlined.location = function.location
    return outlined


def _refuse(hosted: list[Operation], reasons: dict[Operation, str | None]) -> PassFailedException:
    lines = "\n".join(f"  '{node_name(op)}' ({op.name}): {reasons[op]}" for op in hosted)
    return PassFailedException(
        f"place-on-host: {len(hosted)} op(s) cannot run on the NPU and host fallback is off "
        f"(--no-host-fallback):\n{lines}"
    )


@dataclass
class _Split:
    """Which segment makes each op's results, and what the function returns."""

    runs: list[Segment]
    returned: list[SSAValue]

    def __post_init__(self) -> None:
        self.segment_of = {op: k for k, run in enumerate(self.runs) for op in run.ops}

    def made_in(self, value: SSAValue) -> int | None:
        owner = value.owner
        return self.segment_of.get(owner) if isinstance(owner, Operation) else None

    def interface(self, k: int) -> tuple[list[SSAValue], list[SSAValue]]:
        """Segment `k`'s hand-over tensors: (values it reads from elsewhere, values it makes
        that later segments or the return need). Returned values no segment makes (arguments,
        constants) are handed through the last segment."""
        inputs: list[SSAValue] = []
        outputs: list[SSAValue] = []
        for op in self.runs[k].ops:
            inputs += [v for v in op.operands if self.made_in(v) != k and not _is_constant(v)]
            for result in op.results:
                if result in self.returned or any(
                    self.segment_of.get(u.operation, k) != k for u in result.uses
                ):
                    outputs.append(result)
        if k == len(self.runs) - 1:
            passed = [v for v in self.returned if self.made_in(v) is None]
            outputs += passed
            inputs += [v for v in passed if not _is_constant(v)]
        return list(dict.fromkeys(inputs)), list(dict.fromkeys(outputs))


def _is_constant(value: SSAValue) -> bool:
    return isinstance(value.owner, graph.ConstantOp)


def split_function(module: ModuleOp, function: func.FuncOp, fallback: bool) -> None:
    """Places and outlines `function` (see the module docstring); a no-op when all of it runs
    on the NPU."""
    block = function.body.block
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    ops = [op for op in block.ops if op.name.startswith("graph.") and not isinstance(op, graph.ConstantOp)]
    reasons = placement_of_ops(ops)
    hosted = [op for op in ops if reasons[op] is not None]
    if not hosted:
        return
    if not fallback:
        raise _refuse(hosted, reasons)
    split = _Split(settled_segments(ops, reasons), list(ret.arguments))
    for op in ops:
        if reasons[op] is not None:
            op.attributes[exec_dialect.REASON_ATTR] = StringAttr(str(reasons[op]))
    names = _Names(function, split.returned)
    schedule = Block(arg_types=[a.type for a in block.args])
    for old, new in zip(block.args, schedule.args, strict=True):
        new.name_hint = old.name_hint
    available: dict[SSAValue, SSAValue] = dict(zip(block.args, schedule.args, strict=True))
    functions: list[func.FuncOp] = []
    for k, run in enumerate(split.runs):
        inputs, outputs = split.interface(k)
        outlined = _outline(function, run, k, (inputs, outputs), names)
        functions.append(outlined)
        call = exec_dialect.CallOp(
            run.placement, outlined.sym_name.data, [available[v] for v in inputs], [v.type for v in outputs]
        )
        call.location = function.location
        schedule.add_op(call)
        for value, result in zip(outputs, call.results, strict=True):
            result.name_hint = value.name_hint
            available[value] = result
    schedule.add_op(func.ReturnOp(*[available[v] for v in split.returned]))
    function.body.detach_block(block)
    block.drop_all_references()
    function.body.add_block(schedule)
    function.attributes[exec_dialect.SCHEDULE_ATTR] = UnitAttr()
    parent = module.body.block
    after = function
    for outlined in functions:
        parent.insert_op_after(outlined, after)
        after = outlined


@dataclass(frozen=True)
class PlaceOnHostPass(ModulePass):
    """Places graph ops the NPU cannot run (or that are cheaper there) on the host and splits
    each such function into a schedule of NPU and host segments.

    Input:
      Graph-level functions (after graph-optimize). Placement does not depend on the target;
      a `target` option is checked against the module's and recorded as `aitc.target`
      (`aitc.module_target`), so a pipeline starting here can name the target once.
    Output:
      Unchanged functions where every op runs on the NPU. Otherwise: the function becomes a
      schedule (`exec.schedule`, only exec.call and func.return) with the same signature and
      argument/result attributes, followed by its segment functions `@f_host<i>` /
      `@f_npu<i>` (`exec.placement`), each a graph-level function of the hand-over tensors
      (named by `graph.name`). Every op on the host carries `exec.reason`.
    Invariants:
      Every graph op of the input is in exactly one segment (constants are cloned into each
      segment that uses them); segments are called in an order that respects every data
      dependence; no NPU segment reads or writes a boolean tensor across a hand-over; running
      the schedule computes exactly what the function computed. With `fallback=false` any op
      that would go to the host is an error that lists every such node and why.
    """

    name = "place-on-host"
    target: str | None = None
    fallback: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.target is not None:
            module_target(op, self.target, self.name)
        functions = [f for f in op.ops if isinstance(f, func.FuncOp) and f.body.blocks]
        for function in functions:
            if is_graph_level(function) and exec_dialect.lowered_here(function):
                split_function(op, function, self.fallback)
