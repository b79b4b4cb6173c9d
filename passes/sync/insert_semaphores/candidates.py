"""Candidate pairs of the dependence analysis (`dependences.py`): the compute ops on different
engines whose windows may share a byte, one of them writing, minus pairs that the ordering of
other pairs already implies. The analysis' nodes are defined here (`Node`, placed in the tree of
`Level`s that `dependences.Program` builds), since pairing them is the first thing it does.

Inside one top-level item (an op, or a loop nest) every pair of overlapping windows is a
candidate. Across top-level items, accesses are kept per storage as *live records*; a later
item is paired with the live records it overlaps, and then kills the records its writes cover
entirely:

    R: tile.unary ... to %a          (record of %a, bytes B)
    Y: tile.copy %x to %a            (writes all of B: kills R after pairing with it)
    F: tile.matmul %a ...            (only paired with Y, not with R)

That is sound: R -> Y is ordered (Y writes R's bytes), and any later F touching R's bytes
touches bytes Y wrote, so Y -> F is ordered too; R -> F follows. A write kills only bytes it
surely writes: windows whose indices are exact (constant, or loop-invariant in loops, which run
at least once here). Without this, buffers that plan-memory reuses across every kernel would
make the candidates quadratic in the program length.

Across top-level items, a pair also gives nothing new once an edge it implies is known. The pair
of X (engine A, item a) with Y (engine B, item b) becomes a forward edge a -> b of the function
body, and such an edge implies every a' -> b' on the same engines with a' <= a and b' >= b
(insert-semaphores drops those as dominated: the wait before item b orders everything later on
B after everything up to a on A). Items are visited in order, so once a pair A -> B from item a
is yielded, later nodes on B skip the records of A from items up to a (`reach`): with buffers
that loop-variant writes never kill, this keeps the candidates near linear in the program length.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import scf
from xdsl.ir import Operation, SSAValue

from aitc.analysis.tile_footprint import Access, Intervals, Range, overlap
from aitc.dialects import tile


@dataclass(eq=False)
class Level:
    """The function body or a loop body, with its items (compute ops and loops) in order."""

    loop: scf.ForOp | None
    parent: Level | None
    position: int  # index of `loop` among the parent's items
    first: int = 0  # lower bound of the induction variable
    step: int = 1
    trips: int = 1
    items: list[Operation] = field(default_factory=list)

    def induction(self) -> SSAValue:
        assert self.loop is not None
        return self.loop.body.block.args[0]

    def encloses(self, other: Level) -> bool:
        """Whether `other` is this level or nested in it."""
        level: Level | None = other
        while level is not None and level is not self:
            level = level.parent
        return level is self


@dataclass(eq=False)
class Node:
    """A compute op with its engine, its path of (level, item index) from the function body down,
    its windows and the ranges of its enclosing loops' induction variables."""

    op: tile.WindowOp
    engine: str
    order: int
    path: tuple[tuple[Level, int], ...]
    accesses: list[Access]
    loops: dict[SSAValue, Range]


@dataclass(frozen=True, eq=False)
class Record:
    node: Node
    write: bool
    bytes: Intervals


class Live:
    """The live records of one storage, in order, with per record as array columns its hull
    (first byte, end), whether it writes, its engine (a number) and whether it is a single
    interval: one vectorised comparison leaves out the records whose hull misses a window (or
    that cannot pair), so only the few that may overlap or be covered get the exact (interval
    by interval) check."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        # lows, ends, writes, engines, singles, items
        self.columns = [np.zeros(16, np.int64) for _ in range(6)]

    def add(self, record: Record, engine: int) -> None:
        count = len(self.records)
        if count == len(self.columns[0]):
            self.columns = [np.concatenate((column, np.zeros_like(column))) for column in self.columns]
        found = record.bytes
        row = (found[0][0], found[1][-1], record.write, engine, len(found[0]) == 1, record.node.path[0][1])
        for column, value in zip(self.columns, row, strict=True):
            column[count] = value
        self.records.append(record)

    def meeting(
        self, found: Intervals, write: bool, engine: int, reach: np.ndarray
    ) -> tuple[list[int], np.ndarray]:
        """The indices, in order, of the records whose hull overlaps the hull of `found` (the
        first test of `overlap`), one of the two writing, on another engine than `engine`, from
        an item after `reach[their engine]`; and per record whether it is a single interval."""
        count = len(self.records)
        lows, ends, writes, engines, singles, items = (column[:count] for column in self.columns)
        mask = (lows < found[1][-1]) & (found[0][0] < ends) & (engines != engine) & (items > reach[engines])
        if not write:
            mask &= writes.astype(bool)
        return np.flatnonzero(mask).tolist(), singles

    def _covered(self, candidates: list[int], written: Intervals) -> list[int]:
        """The records among `candidates` that `written` covers: every interval of the record
        lies inside one interval of the sorted `written` (all records' intervals tested at once)."""
        if not candidates:
            return []
        parts = [self.records[k].bytes for k in candidates]
        lengths = np.array([len(lo) for lo, _ in parts])
        lo = np.concatenate([lo for lo, _ in parts])
        hi = np.concatenate([hi for _, hi in parts])
        index = np.searchsorted(written[0], lo, "right") - 1
        fits = (index >= 0) & (written[1][np.maximum(index, 0)] >= hi)
        whole = np.logical_and.reduceat(fits, np.concatenate(([0], np.cumsum(lengths)[:-1])))
        return [k for k, ok in zip(candidates, whole.tolist(), strict=True) if ok]

    def kill(self, written: Intervals) -> None:
        """Drops the records that `written` covers entirely (`_covered`; a record can only be
        covered when its hull lies inside the hull of `written`)."""
        count = len(self.records)
        lows, ends = self.columns[0][:count], self.columns[1][:count]
        inside = np.flatnonzero((lows >= written[0][0]) & (ends <= written[1][-1]))
        if len(written[0]) == 1:  # one interval covers everything inside its hull
            dead = inside.tolist()
        else:
            dead = self._covered(inside.tolist(), written)
        if not dead:
            return
        keep = np.ones(count, bool)
        keep[dead] = False
        self.records = [record for record, kept in zip(self.records, keep.tolist(), strict=True) if kept]
        self.columns = [np.concatenate((c[:count][keep], np.zeros(16, np.int64))) for c in self.columns]


class Candidates:
    """Iterates the candidate (earlier, later) node pairs of `nodes` (in program order). Each
    pair has an access of each node on one storage, one of them writing, whose footprints
    overlap."""

    def __init__(
        self,
        nodes: list[Node],
        footprint: Callable[[Node, int], Intervals],
        exact: Callable[[Node, int], bool],
    ):
        self.nodes, self.footprint, self.exact = nodes, footprint, exact
        self.seen: set[tuple[int, int]] = set()
        self.engines: dict[str, int] = {}
        for node in nodes:
            self.engines.setdefault(node.engine, len(self.engines))
        self.reach = np.full((len(self.engines), len(self.engines)), -1, np.int64)
        """reach[B, A]: the last item of A that a yielded pair A -> B started from."""

    def __iter__(self) -> Iterator[tuple[Node, Node]]:
        groups: dict[int, list[Node]] = {}
        for node in self.nodes:
            groups.setdefault(node.path[0][1], []).append(node)
        live: dict[Hashable, Live] = {}
        for group in groups.values():
            yield from self._within(group)
            yield from self._against(group, live)
            self._kill(group, live)
            for node in group:
                for index, access in enumerate(node.accesses):
                    record = Record(node, access.write, self.footprint(node, index))
                    storage = live.get(access.view.storage)
                    if storage is None:
                        storage = live[access.view.storage] = Live()
                    storage.add(record, self.engines[node.engine])

    def _within(self, group: list[Node]) -> Iterator[tuple[Node, Node]]:
        """Every overlapping pair inside one top-level item (a sweep over sorted hulls)."""
        by_storage: dict[Hashable, list[tuple[int, int, Node, bool, Intervals]]] = {}
        for node in group:
            for index, access in enumerate(node.accesses):
                found = self.footprint(node, index)
                entry = (int(found[0][0]), int(found[1][-1]), node, access.write, found)
                by_storage.setdefault(access.view.storage, []).append(entry)
        for entries in by_storage.values():
            entries.sort(key=lambda e: e[0])
            for i, (_, hi, node, write, found) in enumerate(entries):
                for lo2, _, other, write2, found2 in entries[i + 1 :]:
                    if lo2 >= hi:
                        break
                    first, second = (node, other) if node.order <= other.order else (other, node)
                    key = (first.order, second.order)
                    if not (write or write2) or first.engine == second.engine or key in self.seen:
                        continue  # checked before the (costlier) overlap, which would not change it
                    if overlap(found, found2):
                        self.seen.add(key)
                        yield first, second

    def _against(self, group: list[Node], live: dict[Hashable, Live]) -> Iterator[tuple[Node, Node]]:
        """Pairs of the group's accesses with the live records of earlier top-level items that
        no earlier pair implies (`reach`)."""
        seen = self.seen
        for node in group:
            engine = self.engines[node.engine]
            reach = self.reach[engine]
            for index, access in enumerate(node.accesses):
                storage = live.get(access.view.storage)
                if storage is None:
                    continue
                found = self.footprint(node, index)
                single = len(found[0]) == 1
                meeting, singles = storage.meeting(found, access.write, engine, reach)
                for k in meeting:  # engines differ (masked): a pair unless seen, implied or disjoint
                    record = storage.records[k]
                    key = (record.node.order, node.order)
                    item, source = record.node.path[0][1], self.engines[record.node.engine]
                    if key in seen or item <= reach[source]:
                        continue
                    if not ((single and singles[k]) or overlap(record.bytes, found)):
                        continue  # two single intervals whose hulls meet do overlap
                    seen.add(key)
                    reach[source] = item
                    yield record.node, node

    def _kill(self, group: list[Node], live: dict[Hashable, Live]) -> None:
        """Drops the live records that the group's sure writes cover entirely."""
        for node in group:
            for index, access in enumerate(node.accesses):
                storage = live.get(access.view.storage)
                if not (storage and storage.records and access.write and self.exact(node, index)):
                    continue
                storage.kill(self.footprint(node, index))
