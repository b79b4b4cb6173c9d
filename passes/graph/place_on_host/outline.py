"""Outlining for place-on-host (step 3 of the pass): which segment makes each value and what
each segment hands over (`SegmentSplit`), the names of the hand-over tensors (`HandOverNames`),
and a segment's function (`outline_segment`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, StringAttr
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue

from aitc.analysis.graph_matching import node_name
from aitc.dialects import exec as exec_dialect
from aitc.dialects import graph
from aitc.passes.graph.place_on_host.placement import Segment


def _clean(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.:/-]", "_", text) or "t"


class HandOverNames:
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


def outline_segment(
    function: func.FuncOp,
    segment: Segment,
    number: int,
    interface: tuple[list[SSAValue], list[SSAValue]],
    names: HandOverNames,
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


@dataclass
class SegmentSplit:
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
