"""`insert-semaphores`: the signals and waits that cross-engine data dependences need.

Dependences (RAW, WAR, WAW between ops on different engines touching a common byte, views and
plan-memory's shared bytes included) come from `sync_dependences`, as edges between two items
of one level (an op, or a whole loop). Each edge becomes a protocol on one semaphore:

    forward (same iteration / straight line)      credit (loop-carried, distance d)
                                                  sync.signal s on "B" count d   // prime
    X'  ... on "A"                                scf.for {
    sync.signal s on "A"    // right after X'       sync.wait s on "B"           // before Y'
    ...                                             Y' ... on "B"
    sync.wait s on "B"      // right before Y'      X' ... on "A"
    Y'  ... on "B"                                  sync.signal s on "A"         // after X'
                                                  }
                                                  ...  // B's ops that need no X'
                                                  sync.wait s on "B" count d     // drain

A credit wait lets Y' of iteration i + d start once X' of iteration i is done (the first d
iterations use the primed credits, e.g. a load into a buffer waits for the consumer of the
load d iterations earlier); the drain returns the semaphore to 0 and orders all of X' before
whatever follows it on B. It is deferred (`drain_points`): it sits before the first later item
of the loop's level that needs it (one that uses the semaphore again, or consumes a dependence
of the pair from the loop or before it), else at the end of that level's body, so B goes on
with what does not depend on the loop's last iterations, e.g. the next kernel's first loads.
A producer before a loop and a consumer inside it is a forward edge whose wait sits once
before the loop (Y' is the loop), or inside it when the consumers lie past its first item
(`sink_points`); the reverse, once after it. A loop-carried edge of an enclosing loop that
ends at the same loop earlier in its body (e.g. the previous m-tile's last chunk read copy 0,
this tile's peeled chunk read copy 1, and the chunk loop loads copy 0 first) does not hold the
wait back: `prune` had let that wait imply it, so it comes back as a credit of its own
(`_restored`); when the target lacks the semaphores for it, the forward edge waits no later
than the first consumer of any of them, as before.

Redundancy: an edge is dropped when another one on the same engine pair and level implies it
(signal no earlier, wait no later), or when a loop strictly between its ends holds an edge on
the same engine pair (that edge's first signal and wait, or its drain, order the same ops: a
deferred drain still comes before the end's item, which consumes a dependence of the pair).

Semaphore numbers. A semaphore has one waiting engine, which counts units: its k-th wait
passes once k units were signalled. The edges of one engine pair share a number wherever that
count still hands each wait its own signal (`counts_match`, `join`): forward edges at every
level (after pruning, their signals and waits come in the same order, and the channel is empty
whenever a loop using it starts) and credit edges of loops that do not nest. So the count is
bounded by the engine pairs and the loop nesting, not by the program length; above
`target.semaphores` the pass fails naming the kernel.

The end of the function needs nothing: the program ends when every engine has drained its
queue, so outputs written on any engine are complete.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import PassFailedException

from aitc.dialects import sync, tile
from aitc.module_target import module_target
from aitc.passes.legality import check_all_bound
from aitc.passes.sync.insert_semaphores.candidates import Level
from aitc.passes.sync.insert_semaphores.dependences import Dependences, Edge, Program
from aitc.passes.tile_to_sync import engine_for
from aitc.target import Target

# --------------------------------------------------------------------------- pruning


def _dominated_same_level(edges: list[Edge]) -> list[Edge]:
    """Drops edges implied by another of the same level and engine pair. e' implies e when it
    signals no earlier (after' >= after) and waits no later ((distance', before') <= (distance,
    before)); in a loop, an e' signalling earlier still implies e through its next iteration
    when (1 + distance', before') <= (distance, before): X' of iteration i precedes the signal
    of e' at i + 1 on the same engine (across instances of the loop too)."""
    groups: dict[tuple[int, str, str], list[Edge]] = {}
    for edge in edges:
        groups.setdefault((id(edge.level), edge.source, edge.target), []).append(edge)
    kept = []
    for group in groups.values():
        loop = group[0].level.loop is not None
        shifted = min((1 + e.distance, e.before) for e in group) if loop else None
        best: tuple[int, int] | None = None
        for edge in sorted(group, key=lambda e: (-e.after, e.key())):
            if best is not None and best <= edge.key():
                continue
            best = edge.key()
            if shifted is None or edge.key() < shifted:
                kept.append(edge)
    return kept


def _pairs_inside(edges: list[Edge]) -> dict[int, set[tuple[str, str]]]:
    """For every loop level (by id), the engine pairs of the edges nested in it."""
    inside: dict[int, set[tuple[str, str]]] = {}
    for edge in edges:
        level: Level | None = edge.level
        while level is not None and level.loop is not None:
            inside.setdefault(id(level), set()).add((edge.source, edge.target))
            level = level.parent
    return inside


def _spans_inner_edge(edge: Edge, program: Program, inside: dict[int, set[tuple[str, str]]]) -> bool:
    """Whether a loop strictly between the ends of forward `edge` holds an edge of its pair."""
    pair = (edge.source, edge.target)
    for item in edge.level.items[edge.after + 1 : edge.before]:
        child = program.levels.get(item) if isinstance(item, scf.ForOp) else None
        if child is not None and pair in inside.get(id(child), ()):
            return True
    return False


def prune(edges: list[Edge], program: Program) -> list[Edge]:
    """The edges left once implied ones are dropped, in program order of their waits."""
    kept = _dominated_same_level(edges)
    inside = _pairs_inside(kept)
    kept = [e for e in kept if e.distance or not _spans_inner_edge(e, program, inside)]
    return in_wait_order(kept, program)


def in_wait_order(edges: list[Edge], program: Program) -> list[Edge]:
    """`edges` in program order of their waits, then of their signals."""
    order = program.program_order()
    return sorted(edges, key=lambda e: (order[e.level.items[e.before]], order[e.level.items[e.after]]))


# --------------------------------------------------------------------------- semaphore ids


def kernel_name(op: Operation) -> str:
    parent = tile.enclosing_kernel(op)
    return parent.sym.data if parent is not None and parent.sym is not None else "<no kernel>"


@dataclass(eq=False)
class Member:
    """The edges of one level that use one semaphore."""

    level: Level
    edges: list[Edge]

    def credit(self) -> bool:
        return any(e.distance for e in self.edges)


def counts_match(edges: list[Edge]) -> bool:
    """Whether edges of one level and engine pair can share a semaphore: its only waiter then
    counts units, so with m edges, P credits primed in all, and the ranks of each edge's signal
    and wait among the m signals and m waits of an iteration, the wait of edge e at iteration j
    is the (j*m + rank_b)-th and passes after the first (j*m + rank_b + 1 - P) signals, which
    must include e's own signal of iteration j - d_e: rank_a - rank_b <= d_e * m - P. (Forward
    edges left by `prune` have equal ranks, so they always share.)"""
    primed = sum(e.distance for e in edges)
    by_signal = sorted(edges, key=lambda e: e.after)
    by_wait = sorted(edges, key=lambda e: e.before)
    m = len(edges)
    return all(by_signal.index(e) - by_wait.index(e) <= e.distance * m - primed for e in edges)


def join(members: list[Member], level: Level, part: list[Edge]) -> bool:
    """Adds `part` (edges of `level`) to the users of a semaphore if they can share it: a level
    with credits outstanding (primed) must not enclose another user, and one level's edges
    must pass `counts_match` together. Forward edges elsewhere are fine: the channel is
    balanced and empty whenever a loop using it starts (`prune` drops edges spanning one)."""
    credit = any(e.distance for e in part)
    same = None
    for member in members:
        if member.level is level:
            same = member
        elif (member.level.encloses(level) and member.credit()) or (level.encloses(member.level) and credit):
            return False
    if same is None:
        members.append(Member(level, list(part)))
        return True
    if not counts_match(same.edges + part):
        return False
    same.edges += part
    return True


class SemaphoreIds:
    """Semaphore numbers per engine pair: a pair's edges share its first semaphore where `join`
    allows, else take the pair's next one; numbers are given in order of first use."""

    def __init__(self, limit: int, target: str):
        self.limit, self.target = limit, target
        self.slots: dict[tuple[str, str], list[list[Member]]] = {}
        self.numbers: dict[tuple[str, str, int], int] = {}

    def assign(self, edges: list[Edge]) -> dict[Edge, int]:
        groups: dict[tuple[int, str, str], list[Edge]] = {}
        for edge in edges:
            groups.setdefault((id(edge.level), edge.source, edge.target), []).append(edge)
        ids: dict[Edge, int] = {}
        for group in groups.values():
            forward = [e for e in group if not e.distance]
            parts = (
                [group]
                if counts_match(group)
                else [forward] * bool(forward) + [[e] for e in group if e.distance]
            )
            for part in parts:
                ids.update(dict.fromkeys(part, self._number(part)))
        return ids

    def _number(self, part: list[Edge]) -> int:
        first = part[0]
        slots = self.slots.setdefault((first.source, first.target), [])
        slot = next((s for s, members in enumerate(slots) if join(members, first.level, part)), None)
        if slot is None:
            slots.append([Member(first.level, list(part))])
            slot = len(slots) - 1
        key = (first.source, first.target, slot)
        if key not in self.numbers:
            if len(self.numbers) >= self.limit:
                raise PassFailedException(
                    f"insert-semaphores: kernel '{kernel_name(first.consumer)}' needs more than the "
                    f"{self.limit} semaphores of {self.target} ({first.source} -> {first.target})"
                )
            self.numbers[key] = len(self.numbers)
        return self.numbers[key]


# --------------------------------------------------------------------------- IR surgery


class Inserter:
    """Places signals right after their producers and waits right before their consumers."""

    def __init__(self) -> None:
        self.last_after: dict[int, Operation] = {}

    def after(self, anchor: Operation, op: Operation) -> None:
        previous = self.last_after.get(id(anchor), anchor)
        Rewriter.insert_op(op, InsertPoint.after(previous))
        self.last_after[id(anchor)] = op

    def insert_sunk(self, edge: Edge, point: tuple[Level, int], semaphore: int) -> None:
        """A forward edge into a loop, waited inside it: the producer signals once for each
        trip, the loop waits for one unit before item `point` of its body every iteration."""
        producer = edge.level.items[edge.after]
        level, item = point
        self.after(producer, sync.SignalOp(semaphore, edge.source, level.trips))
        Rewriter.insert_op(sync.WaitOp(semaphore, edge.target), InsertPoint.before(level.items[item]))

    def insert(self, edge: Edge, semaphore: int, drained: bool = False) -> None:
        """A forward or credit edge; a credit edge drains right after its loop unless its
        drain is already in place (`drained`, `insert_drain`)."""
        producer, consumer = edge.level.items[edge.after], edge.level.items[edge.before]
        self.after(producer, sync.SignalOp(semaphore, edge.source))
        Rewriter.insert_op(sync.WaitOp(semaphore, edge.target), InsertPoint.before(consumer))
        if edge.distance:
            loop = edge.level.loop
            assert loop is not None
            Rewriter.insert_op(sync.SignalOp(semaphore, edge.target, edge.distance), InsertPoint.before(loop))
            if not drained:
                self.after(loop, sync.WaitOp(semaphore, edge.target, edge.distance))

    @staticmethod
    def insert_drain(edge: Edge, semaphore: int, point: Operation | Block) -> None:
        """The drain of credit edge `edge` before op `point`, or at the end of block `point`
        (before its terminator). Drains go in first, so the primes and waits later put before
        the same op come after them."""
        drain = sync.WaitOp(semaphore, edge.target, edge.distance)
        if isinstance(point, Operation):
            Rewriter.insert_op(drain, InsertPoint.before(point))
            return
        last = point.last_op
        if last is not None and last.has_trait(IsTerminator):
            Rewriter.insert_op(drain, InsertPoint.before(last))
        else:
            Rewriter.insert_op(drain, InsertPoint.at_end(point))


# --------------------------------------------------------------------------- deferred drains


def _uses(edge: Edge) -> list[Operation]:
    """The ops before which `edge` puts a wait or a prime on its target engine."""
    uses = [edge.level.items[edge.before]]
    if edge.distance and edge.level.loop is not None:
        uses.append(edge.level.loop)
    return uses


def drain_points(
    edges: list[Edge], found: list[Edge], ids: dict[Edge, int], exits: list[Edge] | None = None
) -> dict[Edge, Operation | Block]:
    """Where each credit edge of `edges` drains: not right after its loop but before the first
    later item of the enclosing level that needs it, else at the end of that level's body
    (once per instance of the loop, and before the function ends: every semaphore is back
    to 0). Needing it: the item uses the same semaphore (a wait or prime of an edge sharing
    it, or a drain: the source's signals come in program order, so the drain still takes
    exactly the loop's last units), or it consumes a dependence (`found`: before `prune`) of
    the same engine pair from the loop or an item before it, which the drain may be what
    orders (`prune` drops edges that span a loop holding one of their pair). Until then the
    target engine goes on with what follows the loop, e.g. the loads of the next kernel. An
    exit edge of the pair from the loop (`exits`, `exit_points`) orders its consumer and what
    follows it on the target engine after everything the source engine did before it, so
    those consumers do not need the drain."""
    waited = {  # per (level, loop item, pair): the first item an exit edge from the loop waits at
        (id(e.level), e.after, e.source, e.target): e.before for e in exits or []
    }
    by_number: dict[int, list[Edge]] = {}
    for edge in edges:
        if edge in ids:
            by_number.setdefault(ids[edge], []).append(edge)
    crossing: dict[tuple[int, str, str], list[Edge]] = {}
    for edge in found:
        crossing.setdefault((id(edge.level), edge.source, edge.target), []).append(edge)
    indices: dict[int, dict[int, int]] = {}  # per level, its items by id
    points: dict[Edge, Operation | Block] = {}
    for edge in edges:
        if not edge.distance or edge not in ids:
            continue
        outer, position = edge.level.parent, edge.level.position
        assert outer is not None
        if id(outer) not in indices:
            indices[id(outer)] = {id(item): k for k, item in enumerate(outer.items)}
        index = indices[id(outer)]
        uses = [
            k
            for other in by_number[ids[edge]]
            for use in _uses(other)
            if (k := _item_of(use, index)) is not None and k > position
        ]
        exited = waited.get((id(outer), position, edge.source, edge.target))
        consumers = [
            other.before
            for other in crossing.get((id(outer), edge.source, edge.target), [])
            if other.after <= position < other.before and (exited is None or other.before < exited)
        ]
        if uses or consumers:
            points[edge] = outer.items[min(uses + consumers)]
        else:
            block = outer.items[-1].parent_block()
            assert block is not None
            points[edge] = block
    return points


# --------------------------------------------------------------------------- waits inside loops


def _item_of(op: Operation, index: dict[int, int]) -> int | None:
    """The index of the item of a level that holds `op` (kernels are flattened into levels);
    `index`: the level's items by id."""
    node: Operation | None = op
    while node is not None and id(node) not in index:
        node = node.parent_op()
    return None if node is None else index[id(node)]


def sink_points(edges: list[Edge], program: Program) -> dict[tuple[int, str, str, int], tuple[Level, int]]:
    """For every (level, source engine, target engine, loop item) whose edges end at a loop:
    that loop's level and the first item of its body holding a consumer of any of them
    (`edges`: all of them, before `prune`, so the edges it drops count too)."""
    points: dict[tuple[int, str, str, int], tuple[Level, int]] = {}
    indices: dict[int, dict[int, int]] = {}  # per level, its items by id
    for edge in edges:
        loop = edge.level.items[edge.before]
        child = program.levels.get(loop) if isinstance(loop, scf.ForOp) else None
        if child is None:
            continue
        if id(child) not in indices:
            indices[id(child)] = {id(item): k for k, item in enumerate(child.items)}
        item = _item_of(edge.consumer, indices[id(child)])
        key = (id(edge.level), edge.source, edge.target, edge.before)
        if item is None:
            points[key] = (child, 0)  # not found: the loop's first item, as if the wait were before it
            continue
        known = points.get(key)
        points[key] = (child, item if known is None else min(known[1], item))
    return points


def _sunk(edges: list[Edge], points: dict) -> dict[Edge, tuple[Level, int]]:
    """The forward edges into a loop whose consumers all lie past the loop's first item: their
    wait moves inside the loop, before that item (`Inserter.insert`)."""
    sunk = {}
    for edge in edges:
        point = points.get((id(edge.level), edge.source, edge.target, edge.before))
        if edge.distance == 0 and point is not None and point[1] > 0:
            sunk[edge] = point
    return sunk


def _implies(k: Edge, e: Edge) -> bool:
    """Whether kept edge `k` implies `e` (same level and engine pair; `_dominated_same_level`)."""
    if k.level is not e.level or (k.source, k.target) != (e.source, e.target):
        return False
    if k.after >= e.after and k.key() <= e.key():
        return True
    return k.level.loop is not None and (1 + k.distance, k.before) <= e.key()


def _restored(found: list[Edge], edges: list[Edge], sunk: dict[Edge, tuple[Level, int]]) -> list[Edge]:
    """The loop-carried edges `prune` dropped that end at a loop before the wait of a sunk
    forward edge of their pair moved there, and that no other kept edge implies: only the sunk
    edge's wait before the loop (in the next iteration) ordered them. E.g. a chunk loop's load
    into rotated copy 0, after the previous m-tile's last chunk read copy 0: the forward edge from
    this tile's peeled chunk (copy 1) now waits at the load into copy 1."""
    if not sunk:
        return []
    kept = set(edges)
    others = [e for e in edges if e not in sunk]
    wait_at = {(id(e.level), e.source, e.target, e.before): point for e, point in sunk.items()}
    indices: dict[int, dict[int, int]] = {}
    restored = []
    for edge in found:
        key = (id(edge.level), edge.source, edge.target, edge.before)
        if not edge.distance or edge in kept or key not in wait_at:
            continue
        child, at = wait_at[key]
        if id(child) not in indices:
            indices[id(child)] = {id(item): k for k, item in enumerate(child.items)}
        item = _item_of(edge.consumer, indices[id(child)])
        if (item is None or item < at) and not any(_implies(k, edge) for k in others):
            restored.append(edge)
    return _dominated_same_level(restored)


def _can_share(a: Edge, b: Edge) -> bool:
    """Whether two sunk edges of one engine pair can use one semaphore: its waiter counts units,
    so each edge's waits must take its own signal's units: in program order the signals and
    the loops come in the same order (same level), or the levels do not nest (one's items all
    before the other's)."""
    if a.level is b.level:
        return (a.after < b.after) == (a.before < b.before) and a.before != b.before
    return not (a.level.encloses(b.level) or b.level.encloses(a.level))


def _sunk_numbers(sunk: dict[Edge, tuple[Level, int]], first: int, limit: int) -> dict[Edge, int]:
    """Semaphore numbers from `first` up to `limit` for the sunk edges: an edge shares the
    first number of its engine pair whose edges it can share with (`_can_share`), else takes
    a new one; an edge that would need a number from `limit` on gets none."""
    slots: dict[tuple[str, str], list[list[Edge]]] = {}
    ids: dict[Edge, int] = {}
    used = 0
    for edge in sunk:
        pair_slots = slots.setdefault((edge.source, edge.target), [])
        slot = next((s for s in pair_slots if all(_can_share(edge, other) for other in s)), None)
        if slot is None:
            if first + used >= limit:
                continue
            slot = []
            pair_slots.append(slot)
            ids[edge] = first + used
            used += 1
        else:
            ids[edge] = ids[slot[0]]
        slot.append(edge)
    return ids


# --------------------------------------------------------------------------- exits from loops


@dataclass(frozen=True)
class Exit:
    """A forward edge out of a loop whose consumers need only the loop's body up to item
    `item` (`loop_level.items[item]`) of its last iteration."""

    loop_level: Level
    item: int


def exit_points(edges: list[Edge], found: list[Edge], program: Program, sunk: dict) -> dict[Edge, Exit]:
    """The kept forward edges from a loop L to a later item Y (not sunk) whose dependences
    (`found`: all edges of the pair from L, before `prune`) come from body items of L up to
    some item k, while the source engine still has work in L's body after k: Y may start once
    the last iteration is past item k instead of once L is done (`early_drains`). A
    multi-buffered loop whose trips do not divide by its depth has a remainder after it that
    reuses copy 0: its loads need the last trip's copy-0 compute, not the copy-1 compute after
    it (a channels-last 1x1 conv of 512 channels, 15 chunk trips: the remainder's loads about
    1k cycles earlier a block). The loop's credits of the pair need no drain before Y then
    (`drain_points`): the edge's wait, or the early drain, orders everything the source engine
    did before the loop. Only inside a loop nest:
    between the function's top-level items the dependence analysis leaves out the pairs an
    edge already implies (`Candidates`), so the last conflicting body item is not known there."""
    producers: dict[tuple[int, int, str, str], list[Operation]] = {}
    for edge in found:
        if edge.distance == 0 and edge.producer is not None:
            key = (id(edge.level), edge.after, edge.source, edge.target)
            producers.setdefault(key, []).append(edge.producer)
    points: dict[Edge, Exit] = {}
    indices: dict[int, dict[int, int]] = {}  # per loop level, its items by id
    for edge in edges:
        loop = edge.level.items[edge.after]
        child = program.levels.get(loop) if isinstance(loop, scf.ForOp) else None
        if edge.distance or edge in sunk or child is None or edge.level.loop is None:
            continue  # at the function level `found` leaves out the pairs an edge implies
        if id(child) not in indices:
            indices[id(child)] = {id(item): k for k, item in enumerate(child.items)}
        index = indices[id(child)]
        ops = producers.get((id(edge.level), edge.after, edge.source, edge.target), [])
        items = [_item_of(op, index) for op in ops]
        if not items or None in items:
            continue
        last = max(k for k in items if k is not None)
        if any(_works_on(item, edge.source) for item in child.items[last + 1 :]):
            points[edge] = Exit(child, last)
    return points


def _works_on(item: Operation, engine: str) -> bool:
    """Whether item (a compute op or a loop) has work on `engine`."""
    ops = item.walk() if isinstance(item, scf.ForOp) else [item]
    return any(isinstance(op, tile.COMPUTE_OPS) and sync.engine_of(op) == engine for op in ops)


def early_drains(
    exits: dict[Edge, Exit], edges: list[Edge], ids: dict[Edge, int], points: dict[Edge, Operation | Block]
) -> tuple[dict[Edge, Operation], set[Edge]]:
    """Drains of a loop's credits moved before the consumer Y of an exit (`exit_points`), and
    the forward edges they replace. The loop's credits of Y's engine pair on one semaphore,
    all of distance 1, are primed m times and leave m units at the exit; the target counts
    units, and the source signals in program order, so a wait for c of them passes once the
    last iteration has given all its signals on the semaphore but the last m - c. With c
    chosen so that signal comes after the last body item Y needs, the wait orders Y (and what
    follows it on the target, and what the source did before the loop) as the forward edge
    did, without a semaphore of its own (a program the size of ResNet-50 uses all 32 of
    edge); the other m - c units drain where they would have. Only when no item before Y
    needs the loop's drain (`points`: every credit's drain lies past Y) and c < m."""
    moved: dict[Edge, Operation] = {}
    replaced: set[Edge] = set()
    for edge, exit in exits.items():
        consumer = edge.level.items[edge.before]
        at_level = [e for e in edges if e.level is exit.loop_level and e in ids]
        for number in sorted({ids[e] for e in at_level if e.distance}):
            members = [e for e in at_level if ids[e] == number]
            credits = [e for e in members if e.distance]
            if (credits[0].source, credits[0].target) != (edge.source, edge.target):
                continue
            if any(e.distance != 1 or e in moved for e in credits) or not all(
                _drains_after(points[e], edge) for e in credits
            ):
                continue
            signals = sorted(e.after for e in members)
            needed = next((i for i, after in enumerate(signals) if after >= exit.item), None)
            if needed is None:
                continue
            count = max(1, needed + 1 - (len(members) - len(credits)))
            if count >= len(credits):
                continue
            moved.update((e, consumer) for e in credits[:count])
            replaced.add(edge)
            break
    return moved, replaced


def _drains_after(point: Operation | Block, edge: Edge) -> bool:
    """Whether a drain at `point` (an item of `edge`'s level, or the end of its body) comes
    after `edge`'s consumer."""
    if isinstance(point, Block):
        return True
    return edge.level.items.index(point) > edge.before


def insert_semaphores(function: func.FuncOp, limit: int, label: str) -> None:
    """Inserts the protocols of `function` with semaphore numbers below `limit` (`label` names
    them in the error when more are needed: "target 'tiny'"). A forward edge into a loop whose
    consumers all lie past the loop's first item waits inside the loop, before the first of
    them, once per iteration, its producer signalling once for every trip (so the loop's
    first items, e.g. the loads of a rotated buffer copy the producer did not touch, need not
    wait); those edges take numbers of their own, after the others, and those left without
    one wait before the loop as other forward edges."""
    program = Program(function)
    found = Dependences(program).edges()
    try:
        _insert(program, found, limit, label, restore=True)
    except PassFailedException:  # the restored edges need semaphores the target lacks (raised
        # while numbering, before anything is inserted)
        _insert(program, found, limit, label, restore=False)


def _insert(program: Program, found: list[Edge], limit: int, label: str, restore: bool) -> None:
    """`insert_semaphores` on the edges `found`: with `restore`, forward edges sink past the
    consumers of the loop-carried edges that only they implied, which come back as edges of
    their own (`_restored`); without, they sink no further than any consumer."""
    edges = prune(found, program)
    if restore:
        points = sink_points([e for e in found if e.distance == 0], program)
        sunk = _sunk(edges, points)
        restored = _restored(found, edges, sunk)
        if restored:
            edges = in_wait_order([*edges, *restored], program)
    else:
        sunk = _sunk(edges, sink_points(found, program))
    while True:  # the sunk edges that numbers are left for (the others wait where they end)
        ids = SemaphoreIds(limit, label).assign([e for e in edges if e not in sunk])
        sunk_ids = _sunk_numbers(sunk, len(set(ids.values())), limit)
        if len(sunk_ids) == len(sunk):
            break
        sunk = {e: point for e, point in sunk.items() if e in sunk_ids}
    plain = [e for e in edges if e not in sunk]
    exits = exit_points(plain, found, program, sunk)
    without = [e for e in plain if e not in exits]  # where the drains go if the exits' edges go
    points = drain_points(without, found, ids, list(exits))
    moved, replaced = early_drains(exits, plain, ids, points)
    if replaced != set(exits):  # the exits' edges that stay may share the credits' semaphore
        points = drain_points([e for e in plain if e not in replaced], found, ids, list(exits))
    inserter = Inserter()
    for edge, point in points.items():
        inserter.insert_drain(edge, ids[edge], moved.get(edge, point))
    for edge in edges:
        if edge in sunk:
            inserter.insert_sunk(edge, sunk[edge], sunk_ids[edge])
        elif edge not in replaced:
            inserter.insert(edge, ids[edge], drained=True)


UNSPREAD_ATTR = "sync.dma_queues"
"""On a function whose DMA ops went back to the load and store queues (`synchronize`)."""


def synchronize(function: func.FuncOp, target: Target, reserved: int = 0) -> None:
    """`insert_semaphores` with the target's semaphores but the top `reserved` ones; when the
    DMA ops spread over the queues (convert-tile-to-sync) need more (every queue a compute
    engine waits for is another engine pair), the function's DMA ops go back to the load and
    store queues (`tile_to_sync.engine_for`) and it is synchronised again; the function
    records why."""
    limit = target.semaphores - reserved
    name = f"target '{target.name}'" + (
        f" ({reserved} of its {target.semaphores} kept free)" if reserved else ""
    )
    try:
        insert_semaphores(function, limit, name)
        return
    except PassFailedException:
        moved = _unspread(function, target)
        if not moved:
            raise
    insert_semaphores(function, limit, name)
    function.attributes[UNSPREAD_ATTR] = StringAttr(
        f"load/store queues: spreading {moved} DMA op(s) over the queues needed more than the "
        f"{limit} semaphores of {name}"
    )


def _unspread(function: func.FuncOp, target: Target) -> int:
    """Rebinds the DMA ops of `function` that are not on their load/store queue; how many."""
    moved = 0
    for op in function.walk():
        if isinstance(op, tile.COMPUTE_OPS) and tile.engine_class(op) == "dma":
            home = engine_for(op, target)
            if sync.engine_of(op) != home:
                sync.bind(op, home)
                moved += 1
    return moved


@dataclass(frozen=True)
class InsertSemaphoresPass(ModulePass):
    """Inserts exactly the sync.signal / sync.wait that cross-engine data dependences need.

    Input:
      Tile-level functions whose compute ops are bound to engines (convert-tile-to-sync), with
      constant loop bounds and no sync ops yet; plan-memory offsets, if present, are honoured
      (buffers sharing bytes depend on each other).
      The target: the module's `aitc.target`, else the `target` option (`aitc.module_target`).
    Output:
      The same functions with semaphore protocols (see the module docstring): forward edges
      (signal right after the producer, wait right before the consumer or the loop holding it)
      and credit edges for loop-carried dependences (prime before the loop, drain after).
    Invariants:
      Executing the result honours every dependence (the sync interpreter reports no race);
      same-engine pairs get nothing; every semaphore returns to 0 at the end; semaphore numbers
      are < target.semaphores - reserved: if a function's DMA ops spread over the queues need more, they
      go back to the load and store queues (recorded as `sync.dma_queues` on the function),
      and if it still needs more, the pass fails naming the kernel.
    """

    name = "insert-semaphores"
    target: str | None = None
    """A preset name or FILE.toml, for a module without `aitc.target` (`aitc.module_target`)."""
    reserved: int = 0
    """The top semaphores left unused: a multi-core program's phases keep its fences' free
    (`aitc.spmd.link`), since an engine may still wait inside a phase while the others
    already signal the fence."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op, self.target, self.name)
        if not 0 <= self.reserved < target.semaphores:
            raise PassFailedException(
                f"insert-semaphores: reserved must be 0..{target.semaphores - 1}, got {self.reserved}"
            )
        check_all_bound(op, self.name)
        for function in op.walk():
            if isinstance(function, func.FuncOp) and function.body.blocks:
                synchronize(function, target, self.reserved)
