"""`optimize-sync`: drops semaphore edges that other edges already imply, merges repeated
signals and waits.

Edges. A semaphore is a *channel* when one engine signals it, another waits on it, every count
is 1, and at every level (function body with kernels flattened, loop bodies) its k-th wait
comes after its k-th signal, nothing is pending when a loop using it starts, and it is balanced
at the end of each loop body; then the k-th signal and the k-th wait of a level form an edge
(FIFO matching). Other semaphores (credit protocols, whose prime is signalled by the waiter;
hand-written protocols; a number some signal sends to a `peer` core, whose other half is in
another core's function) are left alone and not used as evidence: the analysis can only miss
removals, never remove a needed ordering.

Transitive happens-before, per level: walking the level's items, each engine keeps a vector
clock (for every engine, how many of its work items - compute ops, loops - are known to be
complete); a signal snapshots its engine's clock, a wait joins the matching snapshot. The edge
A -> B is redundant if, without it, B knows before its next work item after the wait that A
completed all the work A had done before the signal:

    op1 on A; sync.signal 0 on A; op2 on A; sync.signal 1 on A
    sync.wait 1 on B   // B now knows A completed op1 and op2
    sync.wait 0 on B   // implied: removed with its signal

Nested loops are opaque items (their inner edges are not used), so an implied edge of one
iteration is implied in all. Removing a matched signal/wait pair keeps the channel's FIFO
order, so the other edges still match.

Merging: two signals (or two waits) of one semaphore on one engine with no op of that engine
between them in the same block become one with the summed count (signals only when they go to
the same core; waits only when that engine is the semaphore's only waiter, so no other engine
can take units in between).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from aitc.dialects import sync, tile

SemaphoreOp = sync.SignalOp | sync.WaitOp


@dataclass(eq=False)
class SyncLevel:
    """A level's items in order: compute ops, sync ops and loops (with their own levels)."""

    items: list[Operation] = field(default_factory=list)
    work: list[set[str]] = field(default_factory=list)  # per item, the engines doing work in it
    children: list[SyncLevel] = field(default_factory=list)
    inside: dict[Operation, set[int]] = field(default_factory=dict)  # loop -> semaphores in it


def build_level(block: Block, level: SyncLevel | None = None) -> SyncLevel:
    level = level or SyncLevel()
    for op in block.ops:
        if isinstance(op, tile.KernelOp):
            build_level(op.body.block, level)
        elif isinstance(op, scf.ForOp):
            level.items.append(op)
            level.work.append(
                {e for n in op.walk() if isinstance(n, tile.WindowOp) if (e := sync.engine_of(n))}
            )
            level.children.append(build_level(op.body.block))
            level.inside[op] = {n.semaphore() for n in op.walk() if isinstance(n, SemaphoreOp)}
        elif isinstance(op, tile.WindowOp):
            level.items.append(op)
            level.work.append({e} if (e := sync.engine_of(op)) else set())
        elif isinstance(op, sync.SignalOp | sync.WaitOp | sync.BarrierOp):
            level.items.append(op)
            level.work.append(set())
    return level


def all_levels(level: SyncLevel) -> list[SyncLevel]:
    return [level, *(nested for child in level.children for nested in all_levels(child))]


@dataclass(eq=False)
class Edge:
    signal: int  # positions in the level
    wait: int
    source: str
    target: str
    ops: tuple[Operation, Operation]


# --------------------------------------------------------------------------- channels and edges


def channel_candidates(function: func.FuncOp) -> set[int]:
    """Semaphores with one signalling engine, one (other) waiting engine, every count 1, and no
    signal to a peer core."""
    signallers: dict[int, set[str]] = {}
    waiters: dict[int, set[str]] = {}
    counts: dict[int, set[int]] = {}
    remote: set[int] = set()  # numbers signalled to another core: half of that protocol is elsewhere
    for op in function.walk():
        if isinstance(op, sync.SignalOp) and op.peer_core() is not None:
            remote.add(op.semaphore())
        elif isinstance(op, SemaphoreOp):
            engines = signallers if isinstance(op, sync.SignalOp) else waiters
            engines.setdefault(op.semaphore(), set()).add(op.engine_name())
            counts.setdefault(op.semaphore(), set()).add(op.amount())
    return {
        s
        for s in counts
        if counts[s] == {1} and len(signallers.get(s, ())) == 1 and len(waiters.get(s, ())) == 1
        and signallers[s] != waiters[s] and s not in remote
    }  # fmt: skip


def match(level: SyncLevel, semaphore: int) -> list[tuple[int, int]] | None:
    """(signal, wait) positions of `semaphore` at this level, FIFO-matched; None unless every wait
    follows its signal, nothing is pending at a loop using it, and the level ends balanced."""
    pending: deque[int] = deque()
    pairs = []
    for position, op in enumerate(level.items):
        if isinstance(op, SemaphoreOp) and op.semaphore() == semaphore:
            if isinstance(op, sync.SignalOp):
                pending.append(position)
            elif not pending:
                return None
            else:
                pairs.append((pending.popleft(), position))
        elif semaphore in level.inside.get(op, ()) and pending:
            return None
    return None if pending else pairs


def level_edges(top: SyncLevel, candidates: set[int]) -> dict[SyncLevel, list[Edge]]:
    """The edges of every channel, per level; a candidate failing at any level is dropped."""
    levels = all_levels(top)
    matched = {s: [match(level, s) for level in levels] for s in candidates}
    edges: dict[SyncLevel, list[Edge]] = {level: [] for level in levels}
    for pairs_per_level in matched.values():
        if any(pairs is None for pairs in pairs_per_level):
            continue
        for level, pairs in zip(levels, pairs_per_level, strict=True):
            for signal, wait in pairs or ():
                ops = (level.items[signal], level.items[wait])
                assert isinstance(ops[0], sync.SignalOp)  # `match` pairs a signal with a wait
                assert isinstance(ops[1], sync.WaitOp)
                edges[level].append(Edge(signal, wait, ops[0].engine_name(), ops[1].engine_name(), ops))
    return edges


# --------------------------------------------------------------------------- redundancy


@dataclass(frozen=True)
class Timeline:
    """Where each engine has work in a level, as sorted positions (bisected)."""

    positions: dict[str, list[int]]
    length: int

    @staticmethod
    def of(level: SyncLevel) -> Timeline:
        positions: dict[str, list[int]] = {}
        for position, work in enumerate(level.work):
            for engine in work:
                positions.setdefault(engine, []).append(position)
        return Timeline(positions, len(level.work))

    def last_work(self, engine: str, position: int) -> int:
        """The last position before `position` where `engine` has work, else -1."""
        found = self.positions.get(engine, [])
        index = bisect_left(found, position)
        return found[index - 1] if index else -1

    def next_work(self, engine: str, position: int) -> int:
        """The first position after `position` where `engine` has work, else the level's end."""
        found = self.positions.get(engine, [])
        index = bisect_right(found, position)
        return found[index] if index < len(found) else self.length


class Channels:
    """The signals and waits of a level's channel edges in position order, for `implied`;
    edges found implied are dropped from the evidence."""

    def __init__(self, edges: list[Edge], level: SyncLevel):
        self.timeline = Timeline.of(level)
        ends = [(e.signal, e, True) for e in edges] + [(e.wait, e, False) for e in edges]
        self.events = sorted(ends, key=lambda event: event[0])
        self.positions = [position for position, _, _ in self.events]
        self.dropped: set[Edge] = set()

    def implied(self, edge: Edge) -> bool:
        """Whether the other edges kept already order the work `edge.source` did before the
        signal ahead of the next work of `edge.target` after the wait.

        Vector clocks per engine count work items (compute ops, loops), so a signal with no
        work of its engine in between says the same as the next one; a signal snapshots its
        engine's clock, a wait joins the snapshot of its signal. Only whether an engine's clock
        covers the source's work up to the signal matters here, and only a signal of the source
        after its last work before that point can start such knowledge: so only the signals
        and waits from there up to the target's next work are walked, tracking which engines
        know (`informed`) and which signals carry it (`told`)."""
        start = self.timeline.last_work(edge.source, edge.signal)
        stop = self.timeline.next_work(edge.target, edge.wait)
        informed: set[str] = set()
        told: set[int] = set()
        for index in range(bisect_right(self.positions, start), len(self.events)):
            position, other, signals = self.events[index]
            if position >= stop:
                break
            if other is edge or other in self.dropped:
                continue
            if signals:
                if other.source == edge.source:
                    informed.add(edge.source)
                if other.source in informed:
                    told.add(position)
            elif other.signal in told:
                informed.add(other.target)
        return edge.target in informed


def remove_implied(edges: list[Edge], level: SyncLevel) -> int:
    """Erases the signal and wait of every implied edge (latest waits first), each checked
    against the edges still kept; returns how many went."""
    channels = Channels(edges, level)
    for edge in sorted(edges, key=lambda e: -e.wait):
        if channels.implied(edge):
            channels.dropped.add(edge)
            for op in edge.ops:
                op.detach()
                op.erase()
    return len(channels.dropped)


# --------------------------------------------------------------------------- merging


def _engines_of(op: Operation) -> set[str] | None:
    """The engines `op` involves; None for a region op (a barrier to merging)."""
    if isinstance(op, SemaphoreOp | sync.BarrierOp):
        return {op.engine.data} if op.engine is not None else set()
    if isinstance(op, tile.WindowOp):
        engine = sync.engine_of(op)
        return {engine} if engine else set()
    return None if op.regions else set()


def merge_block(block: Block, single_waiter: set[int]) -> None:
    """Merges repeated signals/waits of one semaphore on one engine within `block`."""
    open_ops: dict[tuple[type, int, str, int | None], SemaphoreOp] = {}
    for op in list(block.ops):
        for region in op.regions:
            for nested in region.blocks:
                merge_block(nested, single_waiter)
        engines = _engines_of(op)
        if engines is None:
            open_ops.clear()
            continue
        candidate = _mergeable(op, single_waiter)
        if candidate is not None and _merge_key(candidate) in open_ops:
            first = open_ops[_merge_key(candidate)]
            first.attributes["count"] = IntegerAttr(first.amount() + candidate.amount(), i64)
            op.detach()
            op.erase()
            continue
        for stale in [k for k in open_ops if k[2] in engines]:
            del open_ops[stale]
        if candidate is not None:
            open_ops[_merge_key(candidate)] = candidate
    return


def _mergeable(op: Operation, single_waiter: set[int]) -> SemaphoreOp | None:
    """`op` if it may merge with an earlier repeat: a signal, or a wait on a single-waiter semaphore."""
    if isinstance(op, sync.SignalOp) or (isinstance(op, sync.WaitOp) and op.semaphore() in single_waiter):
        return op
    return None


def _merge_key(op: SemaphoreOp) -> tuple[type, int, str, int | None]:
    peer = op.peer_core() if isinstance(op, sync.SignalOp) else None
    return (type(op), op.semaphore(), op.engine_name(), peer)


def single_waiter_semaphores(function: func.FuncOp) -> set[int]:
    waiters: dict[int, set[str]] = {}
    for op in function.walk():
        if isinstance(op, sync.WaitOp):
            waiters.setdefault(op.semaphore(), set()).add(op.engine_name())
    return {s for s, engines in waiters.items() if len(engines) == 1}


def optimize_sync(function: func.FuncOp) -> None:
    top = build_level(function.body.block)
    for level, edges in level_edges(top, channel_candidates(function)).items():
        remove_implied(edges, level)
    merge_block(function.body.block, single_waiter_semaphores(function))


@dataclass(frozen=True)
class OptimizeSyncPass(ModulePass):
    """Removes semaphore edges implied by others and merges repeated signals/waits.

    Input:
      Sync-level functions (after insert-semaphores, or hand-written).
    Output:
      The same functions with fewer sync.signal / sync.wait: an edge of a channel semaphore whose
      ordering other edges of its level already imply is erased (signal and wait together, so
      counts stay balanced); repeated signals/waits of one semaphore on one engine, with no op
      of that engine between them, become one op with the summed count.
    Invariants:
      Every happens-before between compute ops of the input holds in the output (the sync
      interpreter reports no new race or deadlock); semaphore values at the end are unchanged;
      compute ops are untouched.
    """

    name = "optimize-sync"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.walk():
            if isinstance(function, func.FuncOp) and function.body.blocks:
                optimize_sync(function)
