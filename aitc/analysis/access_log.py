"""The access log of the vector-clock race checks: shared by the simulator's `RaceDetector`
(`aitc/sim/checks.py`, per hw engine and memory) and the sync interpreter's `RaceChecker`
(`aitc/interp/sync.py`, per engine and storage), so both levels find races the same way.

Each access is recorded as (byte intervals [lo, hi), engine, epoch, ref): `epoch` is the
accessing engine's own vector-clock entry at the access and `ref` the caller's number for the
instruction (growing with every access). A new access conflicts with a record that does not
happen before it (`record.epoch > clock[record.engine]`) when their intervals overlap; callers
keep reads and writes in separate logs and compare a read with writes only.

Records are kept per engine, in the order the engine made them. An engine's epochs only grow, so
the records of engine e that do not happen before a clock are a suffix of e's records, found by
binary search: a check costs the records not yet ordered before the accessing engine, not the
whole log, which in a synchronised program is a handful. Records that every engine still able
to access the memory has seen (`epoch <= frontier[engine]`) form a prefix of each engine's
records, and pruning drops it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

import numpy as np

Clock = Sequence[int] | np.ndarray
"""A vector clock: one epoch per engine."""

PRUNE_MIN = 4096
"""Intervals a log may hold before the first pruning pass (the limit then adapts)."""


class Intervals:
    """Sorted, disjoint byte intervals [offset + lo[i], offset + hi[i]) with their bounding box
    [first, last). Kept as offsets from a base so an access costs no array arithmetic unless its
    box meets a concurrent record's."""

    __slots__ = ("first", "hi", "last", "lo", "offset")

    def __init__(self, offset: int, lo: np.ndarray, hi: np.ndarray, first: int, last: int):
        self.offset, self.lo, self.hi, self.first, self.last = offset, lo, hi, first, last

    @classmethod
    def of(cls, lo: np.ndarray, hi: np.ndarray) -> Intervals:
        """The intervals [lo[i], hi[i])."""
        return cls(0, lo, hi, int(lo[0]), int(hi[-1]))

    def __len__(self) -> int:
        return len(self.lo)

    def overlap(self, other: Intervals) -> tuple[int, int] | None:
        """The first overlap [first, end) of one of these intervals with one of `other`'s, in
        this one's order; None if they are disjoint."""
        rlo, rhi = self.offset + self.lo, self.offset + self.hi
        lo, hi = other.offset + other.lo, other.offset + other.hi
        j = np.searchsorted(lo, rhi, "left") - 1
        jj = np.maximum(j, 0)
        hit = (j >= 0) & (hi[jj] > rlo)
        if not hit.any():
            return None
        i = int(np.argmax(hit))
        k = jj[i]
        return int(max(rlo[i], lo[k])), int(min(rhi[i], hi[k]))


class _EngineRecords:
    """The accesses of one engine, in its order: epoch, ref, bounding box and intervals of each;
    the live ones are those from `start` on."""

    __slots__ = ("epochs", "firsts", "intervals", "lasts", "refs", "start")

    def __init__(self) -> None:
        self.epochs: list[int] = []
        self.refs: list[int] = []
        self.firsts: list[int] = []
        self.lasts: list[int] = []
        self.intervals: list[Intervals] = []
        self.start = 0

    @property
    def live(self) -> int:
        """Live intervals."""
        return sum(len(intervals) for intervals in self.intervals[self.start :])

    def add(self, intervals: Intervals, epoch: int, ref: int) -> None:
        """Appends one access (dropping the pruned prefix once it is the larger part)."""
        if self.start > 64 and 2 * self.start > len(self.epochs):
            for column in (self.epochs, self.refs, self.firsts, self.lasts, self.intervals):
                del column[: self.start]
            self.start = 0
        self.epochs.append(epoch)
        self.refs.append(ref)
        self.firsts.append(intervals.first)
        self.lasts.append(intervals.last)
        self.intervals.append(intervals)

    def first_after(self, epoch: int) -> int:
        """Index of the first live access with an epoch above `epoch`."""
        return bisect_right(self.epochs, epoch, self.start)

    def conflict(self, after: int, intervals: Intervals) -> tuple[int, int, int] | None:
        """(ref, first, last byte + 1) of the earliest access with an epoch above `after` that
        overlaps `intervals`; None if there is none."""
        low, high = intervals.first, intervals.last
        firsts, lasts = self.firsts, self.lasts
        for i in range(self.first_after(after), len(firsts)):
            if firsts[i] < high and lasts[i] > low:
                hit = self.intervals[i].overlap(intervals)
                if hit is not None:
                    return self.refs[i], *hit
        return None


class AccessLog:
    """Accesses to one memory, per engine (see the module docstring)."""

    def __init__(self) -> None:
        self.engines: dict[int, _EngineRecords] = {}
        self.size = 0
        """Live intervals over all engines."""

    def add(self, intervals: Intervals, engine: int, epoch: int, ref: int) -> None:
        """Records an access."""
        records = self.engines.get(engine)
        if records is None:
            records = self.engines[engine] = _EngineRecords()
        records.add(intervals, epoch, ref)
        self.size += len(intervals)

    def conflict(self, clock: Clock, intervals: Intervals) -> tuple[int, int, int] | None:
        """(ref, first, last byte + 1) of the earliest record that does not happen before `clock`
        and overlaps `intervals`; None if there is none."""
        found = None
        for engine, records in self.engines.items():
            seen = int(clock[engine])
            epochs = records.epochs
            if not epochs or epochs[-1] <= seen:
                continue
            hit = records.conflict(seen, intervals)
            if hit is not None and (found is None or hit[0] < found[0]):
                found = hit
        return found

    def prune(self, frontier: Clock) -> None:
        """Drops records every remaining accessor has seen (`epoch <= frontier[engine]`)."""
        for engine, records in self.engines.items():
            records.start = records.first_after(int(frontier[engine]))
        self.size = sum(records.live for records in self.engines.values())

    def refs(self) -> np.ndarray:
        """The instruction ref of every live record."""
        return np.array([ref for r in self.engines.values() for ref in r.refs[r.start :]], np.int64)
