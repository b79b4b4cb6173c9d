"""One core's function cut at its collectives: compute phases and the collectives between them.

A phase is a maximal run of graph ops (in program order) between two collectives; it becomes a
graph module of its own (`@main`, inputs and outputs named by `graph.name`), which the
single-core pipeline lowers to an hw.program. Values that cross a phase boundary (into a later
phase, a collective or the function's results) are that phase's outputs and later phases'
inputs: they live in DRAM between phases, like the tensors of place-on-host's segments, and
carry the same names (`HandOverNames`: the model's name where the value has one).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue

from aitc.analysis.graph_matching import node_name
from aitc.diagnostics import AitcError
from aitc.dialects import exec as exec_dialect
from aitc.dialects import graph, shard
from aitc.interp.shard import groups
from aitc.module_target import TARGET_ATTR
from aitc.passes.graph.place_on_host.outline import HandOverNames, outline_segment
from aitc.passes.graph.place_on_host.placement import Segment


@dataclass
class Collective:
    """A collective between phases: `kind` on value `source` giving value `result`."""

    kind: str
    source: str
    result: str
    source_type: TensorType
    result_type: TensorType
    reduction: str = "sum"
    axis: int | None = None
    """gather_axis / scatter_axis (None for all_reduce)."""
    node: str = ""


@dataclass
class Slice:
    """Core `position`'s part (along `axis`) of the function input `source`, copied into the
    per-core tensor `result` before the phases that read it."""

    source: str
    result: str
    source_type: TensorType
    result_type: TensorType
    axis: int
    position: int


@dataclass
class Phase:
    """A graph module computing `outputs` from `inputs` (names of DRAM tensors)."""

    module: ModuleOp
    inputs: list[str]
    outputs: list[str]


@dataclass
class Steps:
    """A core's program: phases and collectives in order, the function's inputs (name, type)
    and its outputs (output name, the value name that holds it)."""

    steps: list[Phase | Collective | Slice] = field(default_factory=list)
    inputs: list[tuple[str, TensorType]] = field(default_factory=list)
    outputs: list[tuple[str, str]] = field(default_factory=list)


def _collective(op: shard.CollectiveOp, names: HandOverNames) -> Collective:
    if isinstance(op, shard.AllToAllOp | shard.BroadcastOp | shard.AllSliceOp):
        raise AitcError(
            f"{op.name} (node {node_name(op)}) is not lowered to the NPU yet; shard with a strategy "
            "that needs only all_reduce, all_gather and reduce_scatter (--shard tp or dp)"
        )
    axis = None
    if isinstance(op, shard.AllGatherOp):
        axis = op.int_prop("gather_axis")
    elif isinstance(op, shard.ReduceScatterOp):
        axis = op.int_prop("scatter_axis")
    reduction = op.kind if isinstance(op, shard.ReducingOp) else "sum"
    source_type, result_type = op.input.type, op.result.type
    assert isinstance(source_type, TensorType)
    assert isinstance(result_type, TensorType)
    kind = op.name.removeprefix("shard.")
    return Collective(
        kind, names(op.input), names(op.result), source_type, result_type, reduction, axis, node_name(op)
    )


def cut(function: func.FuncOp, target: str, core: int) -> Steps:
    """The phases and collectives of a specialized per-core function (module docstring)."""
    block = function.body.block
    returned = list(block.last_op.operands) if isinstance(block.last_op, func.ReturnOp) else []
    names = HandOverNames(function, returned)
    runs: list[list[Operation] | shard.CollectiveOp] = [[]]
    slices: list[Slice] = []
    for op in block.ops:
        if isinstance(op, shard.AllSliceOp) and op.input in block.args:
            slices.append(_slice(op, names, core))
        elif isinstance(op, shard.CollectiveOp):
            runs += [op, []]
        elif not isinstance(op, func.ReturnOp | graph.ConstantOp):
            run = runs[-1]
            assert isinstance(run, list)
            run.append(op)
    steps = Steps(inputs=[(names(arg), _tensor(arg)) for arg in block.args], steps=list(slices))
    for number, run in enumerate(runs):
        if isinstance(run, shard.CollectiveOp):
            steps.steps.append(_collective(run, names))
        elif run:
            steps.steps.append(_phase(function, run, number, names, target))
    steps.outputs = [(names(v), names(v)) for v in returned]
    for value in returned:
        if isinstance(value.owner, graph.ConstantOp) or value in block.args:
            raise AitcError("a multi-core program cannot return an input or a constant as is yet")
    return steps


def _slice(op: shard.AllSliceOp, names: HandOverNames, core: int) -> Slice:
    grid = shard.grid_of(op, op.grid.root_reference.data)
    assert grid is not None  # the verifier's
    position = next(members.index(core) for members in groups(grid.dims, op.axes) if core in members)
    return Slice(
        names(op.input),
        names(op.result),
        _tensor(op.input),
        _tensor(op.result),
        op.int_prop("slice_axis"),
        position,
    )


def _tensor(value: SSAValue) -> TensorType:
    assert isinstance(value.type, TensorType)
    return value.type


def _phase(
    function: func.FuncOp,
    ops: list[Operation],
    number: int,
    names: HandOverNames,
    target: str,
) -> Phase:
    inside = set(ops)
    defined = {r for op in ops for r in op.results}
    inputs: list[SSAValue] = []
    for op in ops:
        for value in op.operands:
            if value not in defined and value not in inputs and not isinstance(value.owner, graph.ConstantOp):
                inputs.append(value)
    outputs: list[SSAValue] = []
    for op in ops:
        for value in op.results:
            if any(use.operation not in inside for use in value.uses):
                outputs.append(value)
    outlined = outline_segment(function, Segment("npu", ops), number, (inputs, outputs), names)
    del outlined.attributes[exec_dialect.PLACEMENT_ATTR]
    outlined.sym_name = StringAttr("main")
    module = ModuleOp([outlined])
    module.attributes[TARGET_ATTR] = StringAttr(target)
    return Phase(module, [names(v) for v in inputs], [names(v) for v in outputs])
