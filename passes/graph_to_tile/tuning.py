"""Measured tile plans (`aitc compile --tune`): where a kernel's plan is chosen, a tuning
session may replace the cost model's pick by one measured on the simulator, and may record
every kernel it sees for the tuner (`aitc.tune`) to measure.

A kernel is known by its signature: its kind, the problem(s) the planner solves (shapes,
strides, epilogue, fused residual), the target's fingerprint and the budget. Equal signatures
get equal candidates, so a choice measured once holds for every kernel of that signature, in
this model or another one, until the format or the planner changes the candidates (a choice
that is no longer a candidate is ignored and counted as stale).

Without a session (every compile without --tune) nothing here runs: plans are the model's.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue

from aitc.analysis.graph_matching import node_name
from aitc.dialects import graph
from aitc.module_target import TARGET_ATTR
from aitc.passes.graph_to_tile.costs import Budget

TUNING_FORMAT = 1
"""Part of every kernel key: a change to what a choice means starts the caches afresh."""

SHORT_LIST = 6
"""Candidates the tuner measures per kernel by default: the cost model's best first."""


WIDEN = 4
"""The short list is drawn from the `WIDEN` x candidates best estimates (`short_list`)."""


class Choosable(Protocol):
    @property
    def cycles(self) -> int: ...

    @property
    def choice(self) -> tuple: ...

    @property
    def family(self) -> tuple: ...


P = TypeVar("P", bound=Choosable)


@dataclass(frozen=True)
class Tuned:
    """The measured choice for one kernel signature and what the kernel's `reason` says of it."""

    choice: tuple
    note: str


@dataclass(frozen=True)
class Request:
    """A kernel a recording session saw: its key and signature, the node it was lowered for,
    the graph ops lowered together as a module of their own (`unit`: the ops, their constants,
    the other operands as arguments, the last op's results returned) and the model's short list
    as (choice, estimated cycles), best first."""

    key: str
    kind: str
    signature: str
    node: str
    unit: ModuleOp
    ranked: tuple[tuple[tuple, int], ...]


@dataclass
class TuningSession:
    """The choices to apply (by kernel key) and, with `record`, the kernels seen (`requests`,
    each with a short list of `candidates` plans). `applied` and `stale` collect the keys whose
    choice was used and those whose choice is no candidate any more."""

    choices: Mapping[str, Tuned] = field(default_factory=dict)
    record: bool = False
    candidates: int = SHORT_LIST
    requests: dict[str, Request] = field(default_factory=dict)
    """The first kernel of every signature seen, by key, in the order seen."""
    counts: Counter[str] = field(default_factory=Counter)
    """How many kernels of each signature were lowered."""
    applied: set[str] = field(default_factory=set)
    stale: set[str] = field(default_factory=set)


_SESSION: ContextVar[TuningSession | None] = ContextVar("aitc_tuning_session", default=None)


@contextmanager
def tuning_session(session: TuningSession | None) -> Iterator[TuningSession | None]:
    """Makes `session` the one `choose` consults while the block runs (compiles inside it,
    including the per-core ones of a multi-core compile, see it). None suspends tuning: a
    lowering that only estimates (the sharding cost model lowers ops alone for their
    `est_cycles`) neither uses measured choices nor is recorded."""
    token = _SESSION.set(session)
    try:
        yield session
    finally:
        _SESSION.reset(token)


def kernel_signature(kind: str, problems: Sequence[object], budget: Budget) -> str:
    """The text that identifies a kernel's planning problem on a target (the dataclasses'
    reprs are deterministic)."""
    problem_text = "; ".join(repr(problem) for problem in problems)
    target = budget.target
    return (
        f"{kind}: {problem_text} | target {target.name} {target.fingerprint().hex()} sram {budget.sram} "
        f"acc {budget.acc} depth {budget.depth}"
    )


def kernel_key(signature: str) -> str:
    """The cache key of a signature (with `TUNING_FORMAT`)."""
    return hashlib.sha256(f"{TUNING_FORMAT}\n{signature}".encode()).hexdigest()[:24]


def choose(
    kind: str,
    problems: Sequence[object],
    budget: Budget,
    ops: Sequence[Operation],
    model: P,
    ranked: Callable[[int], list[P]],
    plan_of: Callable[[tuple], P | None],
) -> tuple[P, str]:
    """The plan to lower `ops` with and the note for its `reason`: the session's measured
    choice for this signature when it has one that is still a candidate (`plan_of`), else the
    model's plan `model` and no note. A recording session also records the kernel, with the
    first `candidates` of `ranked`."""
    session = _SESSION.get()
    if session is None:
        return model, ""
    signature = kernel_signature(kind, problems, budget)
    key = kernel_key(signature)
    if session.record:
        session.counts[key] += 1
        if key not in session.requests:
            short = tuple((plan.choice, plan.cycles) for plan in short_list(ranked, session.candidates))
            unit = extract_unit(ops)
            session.requests[key] = Request(key, kind, signature, node_name(ops[-1]), unit, short)
    tuned = session.choices.get(key)
    if tuned is None:
        return model, ""
    plan = plan_of(tuple(tuned.choice))
    if plan is None:
        session.stale.add(key)
        return model, ""
    session.applied.add(key)
    return plan, tuned.note


def noted(reason: str, note: str) -> str:
    """A kernel's `reason` with `choose`'s note, if any, after it."""
    return f"{reason}; {note}" if note else reason


def short_list(ranked: Callable[[int], list[P]], count: int) -> list[P]:
    """The `count` plans to measure, among the `WIDEN * count` best estimates: the best half by
    estimate, then the best plan of each family (`family`: block shape, loop order, what is
    kept) not among them yet, in the order of their estimates, then the best of the rest. The
    model's errors are often about structure (whether a block loop pipelines, how often
    weights stream), which plans of one family share, so the other half goes to other
    structures (ResNet-50 on edge, 6 per kernel: 14,734,625 cycles with the 6 best estimates,
    14,679,180 with this list; the 16 best estimates reach 14,597,232)."""
    wide = ranked(WIDEN * count)
    best = wide[: -(-count // 2)]
    families = {plan.family for plan in best}
    others: dict[tuple, P] = {}
    for plan in wide[len(best) :]:
        if plan.family not in families and plan.family not in others:
            others[plan.family] = plan
    rest = [plan for plan in wide[len(best) :] if plan not in others.values()]
    return [*best, *others.values(), *rest][:count]


def extract_unit(ops: Sequence[Operation]) -> ModuleOp:
    """`ops` (graph ops lowered as one kernel) as a module of their own: constants they use are
    cloned, every other operand becomes an argument of @main, which returns the last op's
    results; the module keeps the enclosing one's `aitc.target`."""
    mapping: dict[SSAValue, SSAValue] = {}
    inside = {result for op in ops for result in op.results}
    outside = list(dict.fromkeys(v for op in ops for v in op.operands if v not in inside))
    arguments = [v for v in outside if not isinstance(v.owner, graph.ConstantOp)]
    block = Block(arg_types=[v.type for v in arguments])
    mapping.update(zip(arguments, block.args, strict=True))
    for value in outside:
        if isinstance(value.owner, graph.ConstantOp) and value not in mapping:
            constant = value.owner.clone()
            block.add_op(constant)
            mapping[value] = constant.results[0]
    for op in ops:
        clone = op.clone(value_mapper=mapping)
        block.add_op(clone)
        mapping.update(zip(op.results, clone.results, strict=True))
    results = [mapping[result] for result in ops[-1].results]
    block.add_op(func.ReturnOp(*results))
    function = func.FuncOp("main", ([a.type for a in block.args], [r.type for r in results]), Region(block))
    module = ModuleOp([function])
    enclosing = ops[-1].get_toplevel_object()
    if isinstance(enclosing, ModuleOp) and TARGET_ATTR in enclosing.attributes:
        module.attributes[TARGET_ATTR] = enclosing.attributes[TARGET_ATTR]
    return module
