"""The shard planner: one split decision per op of a graph function, from a few seeds (user
annotations) and a strategy, costed by `cost_model.py`. `shard-propagate` writes the decisions
as `shard.shard` annotations; `shard-partition` turns annotated IR into per-core IR.

**Decisions.** Every value is either whole on every core (replicated, `None`) or split along
one dim into equal contiguous parts (an int, the dim) over a 1-D grid of `cores`. Every op
splits one loop of its rule (`rules.py`) or none. A forward sweep decides the ops in program
order; a backward sweep then splits replicated ops whose users all want the same split of
their result (so a scale or a bias add before a split matmul runs on a part, not the whole).

**How an op decides.** An *anchor* op (matmul, conv, gather) takes the loop its strategy
forces when that loop divides evenly:

    tp  tensor parallel (Megatron): a matmul by a weight splits its output columns (n), or its
        contraction (k, then one all_reduce) when its input arrives split along k; a conv by
        a weight splits its output channels, or its input channels when they arrive split
    sp  sequence parallel: a matmul by a weight splits its rows (the tokens), a gather its
        indices' last dim (the tokens); spatial for a CNN: a conv by a weight splits its
        output rows (H), reading its input with a halo
    dp  data parallel: the batch (result dim 0)
    tp-sp  Megatron tensor + sequence parallel: the matmuls as tp; every other op that no split
        operand informs (embeddings, residual adds, LayerNorms) splits its tokens (result dim
        rank - 2) instead of running whole on every core, so a row-parallel matmul's all_reduce
        becomes a reduce_scatter, and a column-parallel matmul gathers its input (all_gather)
    layerwise  per layer: each anchor takes the loop tp, sp or dp would force on it (and
        that divides) of least estimated cycles, its operands' resharding included, so a
        CNN can split rows where feature maps are large and channels where they are many

Every other op with a split operand (or a seeded result), and an anchor whose forced loop does
not divide, takes the candidate (a splittable loop, or none) of least estimated cycles:
resharding its operands (all_gather, all_to_all; slicing a whole value is free), the all_reduce
a reduction loop needs, resharding to a seeded result sharding, plus the op's own per-core
cycles; but a candidate that keeps every operand's split wins unless it costs more than
KEEP_SPLIT times the cheapest (a value resharded for one user tends to be moved back later).
Ties go to the forced loop, then to parallel loops, then to the lowest loop.
An op with no split operand that is not an anchor runs replicated (redundant work on small
values beats moving them).

**The plan's cost** (`Plan.total`) sums per op its per-core cycles and the collectives its
operands and results need; `auto` plans with every strategy and keeps the cheapest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from aitc.dialects import graph
from aitc.passes.shard.cost_model import (
    collective_cycles,
    halo_copy_cycles,
    op_cycles,
    staging_cycles,
    tensor_bytes,
)
from aitc.passes.shard.rules import PARALLEL, Rule, local_attributes, rule_of, shape_of, splittable
from aitc.target import Target

Split = int | None
"""A value's sharding on a 1-D grid: the dim split into equal parts, or None (whole)."""

STRATEGIES = ("tp", "sp", "dp", "tp-sp", "layerwise")
"""The strategies `auto` chooses among (`none` plans from the seeds alone)."""

LAYER_STRATEGIES = ("tp", "sp", "dp")
"""What `layerwise` chooses among at each anchor op."""


def reshard_kind(have: Split, want: Split) -> str | None:
    """The collective that turns sharding `have` into `want` (None: nothing to do)."""
    if have == want:
        return None
    if want is None:
        return "all_gather"
    if have is None:
        return "all_slice"
    return "all_to_all"


@dataclass
class OpPlan:
    """One op's decision: the loop it splits, its estimated cycles (compute, collectives) and
    why."""

    loop: int | None
    compute: int
    collectives: list[tuple[str, int, int, str]] = field(default_factory=list)
    """(kind, bytes of the whole tensor, estimated cycles, algorithm) per collective."""
    reason: str = ""
    refused: bool = False
    """The strategy's split of this op was refused (its dim does not divide): say why."""

    @property
    def cycles(self) -> int:
        return self.compute + sum(c[2] for c in self.collectives)


@dataclass
class Plan:
    """Decisions for every op of one function and the sharding of every value."""

    strategy: str
    cores: int
    ops: dict[Operation, OpPlan]
    values: dict[SSAValue, Split]
    output_collectives: list[tuple[str, int, int, str]]
    refusals: list[str] = field(default_factory=list)
    """Distinct reasons the strategy's splits were not taken (a dim that does not divide)."""

    @property
    def splits_anything(self) -> bool:
        return any(p.loop is not None for p in self.ops.values())

    @property
    def total(self) -> int:
        return sum(p.cycles for p in self.ops.values()) + sum(c[2] for c in self.output_collectives)

    @property
    def collective_count(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for entries in [p.collectives for p in self.ops.values()] + [self.output_collectives]:
            for kind, *_ in entries:
                counts[kind] = counts.get(kind, 0) + 1
        return counts


KEEP_SPLIT = 2.0
"""An op keeps its operands' splits (no all_gather / all_to_all) unless that costs more than
this many times the cheapest candidate: its users follow the split, so moving it for one op
tends to cost a move back later (the greedy sweep cannot see that far)."""


RESHARD_SIGNIFICANT = 0.1
"""KEEP_SPLIT applies when the cheapest candidate's resharding is at least this share of its
cycles (an all_gather through the shared DRAM that costs a barrier does not count)."""


def _reshard_cycles(plan: OpPlan) -> int:
    return sum(cycles for kind, _, cycles, _ in plan.collectives if kind in ("all_gather", "all_to_all"))


def exchanges_halo(have: Split, want: Split, halo: tuple[int, int], part_rows: int) -> bool:
    """Whether a value split along `have`, read split along `want` with `halo`, is widened by
    exchanging boundaries with the neighbours (`Partitioner.exchange_halo`): it is split along
    that dim already and the halo reaches no further than the neighbours' parts."""
    return have is not None and have == want and max(halo) <= part_rows


def result_split(rule: Rule | None, loop: int | None, index: int) -> Split:
    """The sharding of result `index` when the op splits `loop` (a reduction's partial result
    is all-reduced, so whole)."""
    if rule is None or loop is None or rule.is_reduction(loop):
        return None
    return rule.dim_of(rule.results[index], loop)


def operand_want(op: Operation, index: int, loop: int | None) -> Split:
    """The sharding `op` needs for operand `index` when it splits `loop`."""
    rule = rule_of(op)
    if rule is None or loop is None:
        return None
    return rule.dim_of(rule.operands[index], loop)


def _is_weight(value: SSAValue) -> bool:
    return isinstance(value.owner, graph.ConstantOp)


def forced_loop(op: Operation, rule: Rule, strategy: str, values: dict[SSAValue, Split]) -> int | None:
    """The loop `strategy` forces on anchor `op` (None: the op is no anchor of the strategy)."""
    out_rank = len(shape_of(op.results[0]))
    if isinstance(op, graph.MatMulOp) and _is_weight(op.rhs) and len(rule.loops) == out_rank + 1:
        m, n, k = out_rank - 2, out_rank - 1, out_rank
        if strategy == "tp":
            lhs = values.get(op.lhs)
            return k if lhs is not None and rule.operands[0][lhs] == k else n
        if strategy == "sp":
            return m
    if isinstance(op, graph.ConvOp) and _is_weight(op.weight) and strategy == "tp":
        have = values.get(op.input)
        return 2 if have == 1 and len(rule.loops) > 2 and rule.loops[2] == "sum" else 1
    if isinstance(op, graph.ConvOp) and _is_weight(op.weight) and strategy == "sp" and rule.halo is not None:
        return rule.halo.loop
    if isinstance(op, graph.GatherOp) and strategy == "sp":
        return len(shape_of(op.indices)) - 1 + (op.axis.value.data if op.axis is not None else 0)
    if strategy == "tp-sp":
        return forced_loop(op, rule, "tp", values)
    if strategy == "dp" and isinstance(op, graph.MatMulOp | graph.ConvOp | graph.GatherOp):
        return 0 if rule.results[0] and rule.results[0][0] == 0 else None
    return None


class Planner:
    """Plans one function for `cores` cores of `target` with `strategy` and `seeds` (values
    whose sharding the user fixed)."""

    def __init__(self, target: Target, cores: int, strategy: str, seeds: dict[SSAValue, Split]):
        self.target, self.cores, self.strategy, self.seeds = target, cores, strategy, seeds
        self.values: dict[SSAValue, Split] = {}
        self.ops: dict[Operation, OpPlan] = {}
        self.refusals: list[str] = []

    # -- costs

    def collective(
        self, kind: str, value: SSAValue, split: Split = None, nbytes: int | None = None
    ) -> tuple[str, int, int, str]:
        """(kind, bytes of the whole value (or `nbytes`), estimated cycles: the links and the
        DRAM staging around them, algorithm). An all_gather of a value split along its
        outermost dim (the parts are contiguous) goes through the shared DRAM: a barrier, no
        link, no staging."""
        nbytes = tensor_bytes(value) if nbytes is None else nbytes
        if kind == "all_gather" and split is not None and math.prod(shape_of(value)[:split]) == 1:
            return (kind, nbytes, 2 * self.target.dma.latency, "dram")
        estimate = collective_cycles(self.target, kind, nbytes, self.cores)
        staging = staging_cycles(self.target, kind, nbytes, self.cores)
        return (kind, nbytes, estimate.cycles + staging, estimate.algorithm)

    def local_shape(self, value: SSAValue, split: Split) -> tuple[int, ...]:
        shape = list(shape_of(value))
        if split is not None:
            shape[split] //= self.cores
        return tuple(shape)

    def halo_exchange(self, value: SSAValue, want: Split, halo: tuple[int, int] | None) -> bool:
        """Whether operand `value`, read split along `want` with `halo`, is widened by
        exchanging boundaries with the neighbours (`exchanges_halo`)."""
        if halo is None or want is None:
            return False
        return exchanges_halo(self.values.get(value), want, halo, shape_of(value)[want] // self.cores)

    def operand_collective(
        self, value: SSAValue, want: Split, halo: tuple[int, int] | None
    ) -> tuple[str, int, int, str] | None:
        """The collective that gives an op its operand `value` split along `want` (read with
        `halo`): none, a reshard, the all_gather of every core's boundary rows (a halo on a
        value split along that dim already), or for another halo making the value whole."""
        have = self.values.get(value)
        if self.halo_exchange(value, want, halo):
            assert want is not None
            assert halo is not None
            boundaries = tensor_bytes(value) // shape_of(value)[want] * self.cores * sum(halo)
            return self.collective("all_gather", value, have, nbytes=boundaries)
        kind = reshard_kind(have, None if halo else want)
        return None if kind in (None, "all_slice") else self.collective(kind, value, have)

    def evaluate(self, op: Operation, rule: Rule | None, loop: int | None) -> OpPlan:
        """The cost of `op` splitting `loop`, given its operands' current shardings (an operand
        read with a halo: see `operand_collective`)."""
        collectives = []
        local = []
        copies = 0  # the copy kernels that widen a part by its halo
        for index, value in enumerate(op.operands):
            want = operand_want(op, index, loop)
            halo = rule.halo_of(index, loop) if rule is not None else None
            if (moved := self.operand_collective(value, want, halo)) is not None:
                collectives.append(moved)
            shape = self.local_shape(value, want)
            if halo is not None and want is not None:
                shape = (*shape[:want], shape[want] + sum(halo), *shape[want + 1 :])
                how = "exchange" if self.halo_exchange(value, want, halo) else "slice"
                window = tensor_bytes(value) // math.prod(shape_of(value)) * math.prod(shape)
                copies += halo_copy_cycles(self.target, how, window, self.cores)
            local.append(shape)
        for index, value in enumerate(op.results):
            natural = result_split(rule, loop, index)
            local.append(
                self.local_shape(value, natural if rule is None or not rule.is_reduction(loop) else None)
            )
            if rule is not None and rule.is_reduction(loop):
                collectives.append(self.collective("all_reduce", value))
            if value in self.seeds:
                kind = reshard_kind(natural, self.seeds[value])
                if kind not in (None, "all_slice"):
                    collectives.append(self.collective(kind, value, natural))
        attributes = local_attributes(op, rule, loop, self.cores) if rule is not None else None
        return OpPlan(loop, op_cycles(op, local, self.cores, self.target, attributes) + copies, collectives)

    # -- decisions

    def candidates(self, op: Operation, rule: Rule) -> list[int]:
        return [loop for loop in range(len(rule.loops)) if splittable(op, rule, loop, self.cores)]

    def decide(self, op: Operation) -> OpPlan:
        rule = rule_of(op)
        if rule is None:
            plan = self.evaluate(op, None, None)
            plan.reason = "no sharding rule: runs whole on every core"
            return plan
        loops = self.candidates(op, rule)
        forced = forced_loop(op, rule, self.strategy, self.values)
        informed = any(self.values.get(v) is not None for v in op.operands) or any(
            self.seeds.get(r) is not None for r in op.results
        )
        if self.strategy == "layerwise" and (plan := self._per_layer(op, rule, loops)) is not None:
            return plan
        if forced is not None and forced in loops and not self._forced_needs_gather(op, forced):
            plan = self.evaluate(op, rule, forced)
            plan.reason = f"{self.strategy}: {loop_name(op, rule, forced)}"
            return plan
        if not informed:
            tokens = self._token_loop(op, rule, loops) if self.strategy == "tp-sp" else None
            if tokens is not None:
                plan = self.evaluate(op, rule, tokens)
                plan.reason = f"tp-sp: {loop_name(op, rule, tokens)} (tokens)"
                return plan
            plan = self.evaluate(op, rule, None)
            plan.reason = "no split operand: runs whole on every core"
            if forced is not None:
                plan.reason = f"{self._not_dividing(op, rule, forced)}: runs whole"
                plan.refused = True
            return plan
        options = [self.evaluate(op, rule, loop) for loop in [None, *loops]]

        def key(p: OpPlan) -> tuple:
            return (p.cycles, p.loop != forced, rule.is_reduction(p.loop), -1 if p.loop is None else p.loop)

        best = min(options, key=key)
        keeping = [p for p in options if not _reshard_cycles(p)]
        significant = _reshard_cycles(best) >= RESHARD_SIGNIFICANT * best.cycles
        if keeping and significant and min(keeping, key=key).cycles <= KEEP_SPLIT * best.cycles:
            best = min(keeping, key=key)  # keep the split: a reshard now is usually paid back later
        why = "least cycles" if len(options) > 1 else "only choice"
        if forced is not None and forced not in loops:
            why += f"; {self._not_dividing(op, rule, forced)}"
            best.refused = True
        best.reason = f"{loop_name(op, rule, best.loop)}: {why}"
        return best

    def _per_layer(self, op: Operation, rule: Rule, loops: list[int]) -> OpPlan | None:
        """`layerwise` on an anchor: the cheapest of the loops tp, sp and dp would force on it
        (None: no strategy anchors it)."""
        choices: dict[int, str] = {}
        for name in LAYER_STRATEGIES:
            loop = forced_loop(op, rule, name, self.values)
            if loop is not None and loop in loops:
                choices.setdefault(loop, name)
        if not choices:
            return None
        options = {loop: self.evaluate(op, rule, loop) for loop in choices}
        best = min(options, key=lambda loop: (options[loop].cycles, list(choices).index(loop)))
        costs = ", ".join(f"{name} {options[loop].cycles}" for loop, name in choices.items())
        plan = options[best]
        plan.reason = f"layerwise: {choices[best]}, {loop_name(op, rule, best)} (cycles: {costs})"
        return plan

    def _token_loop(self, op: Operation, rule: Rule, loops: list[int]) -> int | None:
        """tp-sp's split of an op outside the tensor-parallel matmuls: the tokens (the rows,
        result dim rank - 2) of a rank-2 or rank-3 activation, when they divide (a CNN's NCHW
        feature maps have no tokens: tp-sp is tp there)."""
        out = rule.results[0] if rule.results else ()
        if len(out) not in (2, 3) or isinstance(op, graph.MatMulOp | graph.ConvOp):
            return None  # tokens are the rows of a [tokens, hidden] or [batch, tokens, hidden] activation
        loop = out[len(out) - 2]
        return loop if loop in loops and rule.loops[loop] == PARALLEL else None

    def _not_dividing(self, op: Operation, rule: Rule, loop: int) -> str:
        """Why the forced `loop` was not taken, with the numbers and the core counts of the
        target that would divide it (recorded in `refusals` too)."""
        sizes = sorted(
            {
                shape_of(value)[dim]
                for maps, values in ((rule.operands, op.operands), (rule.results, op.results))
                for dims, value in zip(maps, values, strict=True)
                for dim, mapped in enumerate(dims)
                if mapped == loop
            }
        )
        fits = [p for p in range(2, self.target.cores + 1) if all(size % p == 0 for size in sizes)]
        would = (
            f" ({', '.join(map(str, fits))} cores would)" if fits else " (no core count of the target would)"
        )
        size = "/".join(map(str, sizes))
        split = loop_name(op, rule, loop)
        reason = f"{self.strategy} would {split} of {size}, which does not divide by {self.cores}"
        if reason + would not in self.refusals:
            self.refusals.append(reason + would)
        return reason + would

    def _forced_needs_gather(self, op: Operation, loop: int) -> bool:
        """Whether taking the forced loop would all-gather a split operand that another
        candidate keeps (then the costs decide)."""
        rule = rule_of(op)
        for index, value in enumerate(op.operands):
            want = operand_want(op, index, loop)
            halo = rule.halo_of(index, loop) if rule is not None else None
            if self.halo_exchange(value, want, halo):
                continue  # the neighbours' boundaries only
            if reshard_kind(self.values.get(value), None if halo else want) in ("all_gather", "all_to_all"):
                return True
        return False

    def record(self, op: Operation, plan: OpPlan) -> None:
        self.ops[op] = plan
        rule = rule_of(op)
        for index, value in enumerate(op.results):
            self.values[value] = result_split(rule, plan.loop, index)

    def run(self, function: func.FuncOp) -> Plan:
        for arg in function.body.block.args:
            self.values[arg] = self.seeds.get(arg)
        body = [op for op in function.body.block.ops if not isinstance(op, func.ReturnOp)]
        for op in body:
            if isinstance(op, graph.ConstantOp):
                self.values[op.results[0]] = self.seeds.get(op.results[0])
                continue
            self.record(op, self.decide(op))
        self._backward(body, function)
        self._scattered(body)
        outputs = []
        for value in function.body.block.last_op.operands if function.body.block.last_op else ():
            kind = reshard_kind(self.values.get(value), None)
            if kind is not None:
                outputs.append(self.collective(kind, value, self.values.get(value)))
        return Plan(self.strategy, self.cores, self.ops, self.values, outputs, self.refusals)

    def _backward(self, body: list[Operation], function: func.FuncOp) -> None:
        """Splits replicated ops whose users all want one split of their (single) result."""
        for op in reversed(body):
            plan = self.ops.get(op)
            rule = rule_of(op)
            if plan is None or rule is None or plan.loop is not None or len(op.results) != 1:
                continue
            wants = {self._use_want(use.operation, use.index) for use in op.results[0].uses}
            if len(wants) != 1 or (want := wants.pop()) is None:
                continue
            loop = rule.results[0][want]
            if loop is None or rule.loops[loop] != PARALLEL or not splittable(op, rule, loop, self.cores):
                continue
            new = self.evaluate(op, rule, loop)
            if new.collectives:
                continue
            new.reason = f"{loop_name(op, rule, loop)}: every user wants this split"
            self.record(op, new)
        del function

    def _scattered(self, body: list[Operation]) -> None:
        """Costs as a reduce_scatter the all_reduce of a reduction's result that its only user
        reads split: shard-simplify merges the all_slice of a single-use all_reduce into one
        (tp-sp's row-parallel matmuls feeding token-split residual adds)."""
        for op in body:
            plan, rule = self.ops.get(op), rule_of(op)
            if plan is None or rule is None or plan.loop is None or not rule.is_reduction(plan.loop):
                continue
            for value in op.results:
                uses = list(value.uses)
                if len(uses) != 1 or self._use_want(uses[0].operation, uses[0].index) is None:
                    continue
                at = next((i for i, c in enumerate(plan.collectives) if c[0] == "all_reduce"), None)
                if at is not None:
                    plan.collectives[at] = self.collective("reduce_scatter", value)

    def _use_want(self, user: Operation, index: int) -> Split:
        plan = self.ops.get(user)
        return None if plan is None else operand_want(user, index, plan.loop)


def loop_name(op: Operation, rule: Rule, loop: int | None) -> str:
    """`split n (output columns)`-style words for a decision."""
    if loop is None:
        return "whole"
    if isinstance(op, graph.MatMulOp):
        rank = len(shape_of(op.output))
        names = {rank - 2: "m (rows)", rank - 1: "n (output columns)", rank: "k (contraction, all_reduce)"}
        return "split " + names.get(loop, f"batch dim {loop}")
    if rule.halo is not None and loop == rule.halo.loop:
        halo = rule.halo.lo + rule.halo.hi
        return "split output rows" + (f" (halo {rule.halo.lo}+{rule.halo.hi})" if halo else "")
    if isinstance(op, graph.ConvOp):
        return "split " + ("batch", "output channels", "input channels (all_reduce)")[loop]
    kind = "" if rule.loops[loop] == PARALLEL else f" ({rule.loops[loop]} reduction, all_reduce)"
    dim = rule.dim_of(rule.results[0], loop) if op.results else None
    where = f"result dim {dim}" if dim is not None else f"loop {loop}"
    return f"split {where}{kind}"


def plan_function(
    function: func.FuncOp, target: Target, cores: int, strategy: str, seeds: dict[SSAValue, Split]
) -> tuple[Plan, dict[str, int] | None]:
    """The plan of `function` for `strategy`, and for `auto` (the cheapest of STRATEGIES, ties
    to the first; `layerwise` only when it beats every uniform strategy by LAYERWISE_MARGIN)
    every strategy's estimated total cycles (the plan's `why`)."""
    if strategy != "auto":
        return Planner(target, cores, strategy, seeds).run(function), None
    plans = [Planner(target, cores, s, seeds).run(function) for s in STRATEGIES]
    uniform = min(
        (p for p in plans if p.strategy != "layerwise"), key=lambda p: (p.total, STRATEGIES.index(p.strategy))
    )
    mixed = next(p for p in plans if p.strategy == "layerwise")
    best = mixed if mixed.total < (1 - LAYERWISE_MARGIN) * uniform.total else uniform
    return best, {p.strategy: p.total for p in plans}


LAYERWISE_MARGIN = 0.03
"""`auto` takes the layerwise plan over the best uniform one only when it is estimated at least
this much faster: mixing strategies adds reshards between layers, whose estimates are the least
certain part of a plan (a transformer layer's layerwise and tp-sp plans tie within 0.3% while
tp-sp runs 4% faster)."""
