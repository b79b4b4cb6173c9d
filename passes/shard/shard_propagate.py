"""`shard-propagate`: a sharding for every tensor, from a few annotations or a strategy.

The decisions and their costs are `planner.py`'s; this pass reads the seeds from the IR and
writes the result back in upstream MLIR's form:

    %s = shard.sharding @cores split_axes = [[], [], [0]] : !shard.sharding
    %y = graph.matmul %x, %w ... : ... -> tensor<2x16x64xf32>
    %y_s = shard.shard %y to %s : tensor<2x16x64xf32>                    // how %y is split
    %r = shard.shard %y_s to %whole annotate_for_users : tensor<2x16x64xf32>  // a user wants it whole

and records the plan: on the module `shard.plan` (strategy, cores, estimated cycles, every
strategy's estimate when `auto` chose), on every split op or op with a collective a
`shard.plan` dictionary (its decision and why, its per-core cycles, its collectives with bytes,
algorithm and cycles).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from aitc.analysis.signature import entry_function
from aitc.diagnostics import AitcError
from aitc.dialects import shard
from aitc.module_target import module_target
from aitc.passes.shard.planner import STRATEGIES, Plan, Split, operand_want, plan_function
from aitc.passes.shard.rules import rule_of, shape_of

PLAN_ATTR = "shard.plan"
"""Module and op attribute holding the plan (see the module docstring)."""

GRID = "cores"
"""The name of the grid shard-propagate creates when the module has none."""


def graph_function(module: ModuleOp, pass_name: str) -> func.FuncOp:
    """The function a shard pass works on (`aitc.analysis.signature.entry_function`)."""
    try:
        return entry_function(module)
    except AitcError as error:
        raise PassFailedException(f"{pass_name}: {error}") from None


def one_d_grid(module: ModuleOp, cores: int | None, default: int) -> tuple[str, int]:
    """The grid to plan on: the module's (which must be 1-D), else a new one of `cores`
    (default `default`, the target's core count)."""
    grids = [op for op in module.ops if isinstance(op, shard.GridOp)]
    if len(grids) > 1:
        raise PassFailedException("shard-propagate: plans on one grid; the module has several")
    if grids:
        dims = grids[0].dims
        if len(dims) != 1:
            raise PassFailedException(
                f"shard-propagate: plans on a 1-D grid of cores; @{grids[0].sym_name.data} is "
                f"{'x'.join(map(str, dims))}"
            )
        if cores is not None and cores != dims[0]:
            raise PassFailedException(
                f"shard-propagate: cores={cores} but grid @{grids[0].sym_name.data} has {dims[0]} cores"
            )
        return grids[0].sym_name.data, dims[0]
    count = default if cores is None else cores
    if count < 1:
        raise PassFailedException(f"shard-propagate: cores must be >= 1, got {count}")
    module.body.block.insert_op_before(shard.GridOp(GRID, [count]), module.body.block.first_op)  # type: ignore[arg-type]
    return GRID, count


def split_of(sharding: shard.ShardingOp) -> Split:
    """The split dim of a 1-D sharding (None: replicated)."""
    axes = sharding.axes
    split = [dim for dim, on in enumerate(axes) if on]
    if len(split) > 1:
        raise PassFailedException(
            f"shard-propagate: a tensor splits one dim over a 1-D grid; split_axes {axes} splits {len(split)}"
        )
    return split[0] if split else None


def take_seeds(function: func.FuncOp) -> dict[SSAValue, Split]:
    """The user's annotations as seeds; the annotation ops are removed (rewritten later)."""
    seeds: dict[SSAValue, Split] = {}
    for op in list(function.body.block.ops):
        if isinstance(op, shard.ShardOp):
            sharding = op.sharding.owner
            if not isinstance(sharding, shard.ShardingOp):
                raise PassFailedException(
                    "shard-propagate: a shard.shard's sharding must come from shard.sharding"
                )
            if sharding.offsets is not None:
                raise PassFailedException(
                    "shard-propagate: uneven shards (sharded_dims_offsets) are not planned"
                )
            if sharding.halo is not None:
                raise PassFailedException(
                    "shard-propagate: halo_sizes are planned, not seeded: annotate the split alone "
                    "(a conv split along its rows gets its halo from its window)"
                )
            source = op.src
            seeds.setdefault(source, split_of(sharding))
            op.result.replace_all_uses_with(source)
            op.detach()
            op.erase()
    for op in list(function.body.block.ops):
        if isinstance(op, shard.ShardingOp) and not op.result.uses:
            op.detach()
            op.erase()
    return seeds


class Annotator:
    """Writes a plan as shard.sharding / shard.shard ops."""

    def __init__(self, function: func.FuncOp, grid: str):
        self.block: Block = function.body.block
        self.grid = grid
        self.shardings: dict[tuple[int, Split, tuple[int, int] | None], SSAValue] = {}

    def sharding(self, rank: int, split: Split, halo: tuple[int, int] | None = None) -> SSAValue:
        key = (rank, split, halo)
        if key not in self.shardings:
            axes = [[0] if dim == split else [] for dim in range(rank)]
            op = shard.ShardingOp(self.grid, axes, halo=halo)
            first = self.block.first_op
            if first is None:
                self.block.add_op(op)
            else:
                self.block.insert_op_before(op, first)
            self.shardings[key] = op.result
        return self.shardings[key]

    def annotate_result(self, value: SSAValue, split: Split, after: Operation | None) -> None:
        """`shard.shard %value to <split>` right after its definition; users use it."""
        sharding = self.sharding(len(shape_of(value)), split)
        note = shard.ShardOp(value, sharding)
        if after is None:  # an argument: right after the sharding it uses
            assert isinstance(sharding.owner, Operation)
            self.block.insert_op_after(note, sharding.owner)
        else:
            self.block.insert_op_after(note, after)
        value.replace_uses_with_if(note.result, lambda use: use.operation is not note)

    def annotate_use(
        self, user: Operation, index: int, split: Split, halo: tuple[int, int] | None = None
    ) -> None:
        """`shard.shard %operand to <split> annotate_for_users` before `user`."""
        value = user.operands[index]
        sharding = self.sharding(len(shape_of(value)), split, halo)
        note = shard.ShardOp(value, sharding, annotate_for_users=True)
        self.block.insert_op_before(note, user)
        user.operands[index] = note.result


def op_plan_attr(plan: Plan, op: Operation) -> DictionaryAttr | None:
    """`{decision = "...", cycles = N, collectives = "all_reduce 2048 B (ring) 192 cycles"}`
    for an op that is split, needs a collective or whose split was refused (None for one that
    just runs whole)."""
    entry = plan.ops[op]
    if entry.loop is None and not entry.collectives and not entry.refused:
        return None
    entries: dict[str, Attribute] = {
        "decision": StringAttr(entry.reason),
        "cycles": IntegerAttr(entry.compute, i64),
    }
    if entry.collectives:
        text = ", ".join(
            f"{kind} {n} B ({algorithm}) {cycles} cycles" for kind, n, cycles, algorithm in entry.collectives
        )
        entries["collectives"] = StringAttr(text)
    return DictionaryAttr(entries)


def write_plan(function: func.FuncOp, plan: Plan, grid: str) -> None:
    """Annotates `function` with `plan` (see the module docstring)."""
    annotator = Annotator(function, grid)
    block = function.body.block
    originals = list(block.ops)
    for arg in block.args:
        if plan.values.get(arg) is not None:
            annotator.annotate_result(arg, plan.values[arg], None)
    for op in originals:
        entry = plan.ops.get(op)
        loop = entry.loop if entry is not None else None
        rule = rule_of(op)
        for index, value in enumerate(op.operands):
            want = operand_want(op, index, loop)  # a return wants whole values
            halo = rule.halo_of(index, loop) if rule is not None else None
            if want != plan.values.get(_source(value)) or halo is not None:
                annotator.annotate_use(op, index, want, halo)
        for value in op.results:
            if plan.values.get(value) is not None:
                annotator.annotate_result(value, plan.values[value], op)
        if entry is not None and (attr := op_plan_attr(plan, op)) is not None:
            op.attributes[PLAN_ATTR] = attr


def _source(value: SSAValue) -> SSAValue:
    """The value a chain of shard.shard annotations starts from."""
    while isinstance(value.owner, shard.ShardOp):
        value = value.owner.src
    return value


def plan_summary(plan: Plan, estimates: dict[str, int] | None) -> DictionaryAttr:
    entries: dict[str, Attribute] = {
        "strategy": StringAttr(plan.strategy),
        "cores": IntegerAttr(plan.cores, i64),
        "est_cycles": IntegerAttr(plan.total, i64),
        "collectives": StringAttr(
            ", ".join(f"{count} {kind}" for kind, count in sorted(plan.collective_count.items())) or "none"
        ),
    }
    if not plan.splits_anything and plan.refusals:
        entries["refused"] = StringAttr("; ".join(plan.refusals[:3]))
    if estimates:
        entries["alternatives"] = DictionaryAttr({k: IntegerAttr(v, i64) for k, v in estimates.items()})
    return DictionaryAttr(entries)


@dataclass(frozen=True)
class ShardPropagatePass(ModulePass):
    """Gives every tensor of the entry function a sharding over a 1-D grid of cores.

    Input:
      A graph-level module with one function, optionally a 1-D `shard.grid` and `shard.shard`
      annotations fixing some values' shardings (one split dim each, even shards).
    Output:
      A `shard.grid` (created as `@cores` with `cores` cores, default the target's, when
      absent); every split value annotated with `shard.shard %v to %s` after its definition;
      every use that needs another sharding (including func.return, which needs whole
      values) through `shard.shard ... annotate_for_users`; the plan on the module and on
      the ops as `shard.plan` (see the module docstring).
    Invariants:
      Only annotations are added: the function's values and the graph ops are unchanged, so
      the module still runs unsharded (the interpreter treats annotations as identities).
      Every split divides evenly. The same input gives the same plan.
    """

    name = "shard-propagate"

    strategy: str = "none"
    """tp, sp, dp, tp-sp, layerwise, auto (the cheapest of those) or none (the annotations only)."""

    cores: int | None = None
    """The grid size when the module has no grid (default: the target's cores)."""

    target: str | None = None
    """A preset name or FILE.toml, for a module without `aitc.target`."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        choices = ("none", "auto", *STRATEGIES)
        if self.strategy not in choices:
            raise PassFailedException(
                f"shard-propagate: unknown strategy '{self.strategy}'; choose one of {', '.join(choices)}"
            )
        target = module_target(op, self.target, self.name)
        function = graph_function(op, self.name)
        grid, cores = one_d_grid(op, self.cores, target.cores)
        if cores > target.cores:
            raise PassFailedException(
                f"shard-propagate: {cores} cores asked for, but target '{target.name}' has {target.cores}; "
                f"use at most {target.cores} cores or a target with more"
            )
        seeds = take_seeds(function)
        plan, estimates = plan_function(function, target, cores, self.strategy, seeds)
        write_plan(function, plan, grid)
        op.attributes[PLAN_ATTR] = plan_summary(plan, estimates)
