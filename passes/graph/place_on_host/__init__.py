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

This module is the driver (`split_function`: the steps above) and the pass; the steps' facts are
the package's modules:

    placement.py  steps 1 and 2: where each op runs and why, and the segments the ops form
    outline.py    step 3: a segment's function, its hand-over tensors and their names
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from aitc.analysis.graph_matching import is_graph_level, node_name
from aitc.dialects import exec as exec_dialect
from aitc.dialects import graph
from aitc.module_target import module_target
from aitc.passes.graph.place_on_host.outline import HandOverNames, SegmentSplit, outline_segment
from aitc.passes.graph.place_on_host.placement import placement_of_ops, settled_segments
from aitc.passes.legality import refuse_sharded


def _refuse(hosted: list[Operation], reasons: dict[Operation, str | None]) -> PassFailedException:
    lines = "\n".join(f"  '{node_name(op)}' ({op.name}): {reasons[op]}" for op in hosted)
    return PassFailedException(
        f"place-on-host: {len(hosted)} op(s) cannot run on the NPU and host fallback is off "
        f"(--no-host-fallback):\n{lines}"
    )


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
    split = SegmentSplit(settled_segments(ops, reasons), list(ret.arguments))
    for op in ops:
        if reasons[op] is not None:
            op.attributes[exec_dialect.REASON_ATTR] = StringAttr(str(reasons[op]))
    names = HandOverNames(function, split.returned)
    schedule = Block(arg_types=[a.type for a in block.args])
    for old, new in zip(block.args, schedule.args, strict=True):
        new.name_hint = old.name_hint
    available: dict[SSAValue, SSAValue] = dict(zip(block.args, schedule.args, strict=True))
    functions: list[func.FuncOp] = []
    for k, run in enumerate(split.runs):
        inputs, outputs = split.interface(k)
        outlined = outline_segment(function, run, k, (inputs, outputs), names)
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
        refuse_sharded(op, self.name)
        functions = [f for f in op.ops if isinstance(f, func.FuncOp) and f.body.blocks]
        for function in functions:
            if is_graph_level(function) and exec_dialect.lowered_here(function):
                split_function(op, function, self.fallback)
