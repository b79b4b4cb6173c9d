"""The access log of the vector-clock race checks: shared by the simulator's `RaceDetector`
(`aitc/sim/checks.py`, per hw engine and memory) and the sync interpreter's `RaceChecker`
(`aitc/interp/sync.py`, per engine and storage), so both levels find races the same way.

Each access is recorded as (byte intervals [lo, hi), engine, epoch, ref): `epoch` is the
accessing engine's own vector-clock entry at the access and `ref` the caller's number for the
instruction. A new access conflicts with a record that does not happen before it
(`record.epoch > clock[record.engine]`) when their intervals overlap; callers keep reads and
writes in separate logs and compare a read with writes only. Records that every engine still
able to access the memory has seen can be pruned, so the logs stay short.
"""

from __future__ import annotations

import numpy as np

PRUNE_MIN = 4096
"""Intervals a log may hold before the first pruning pass (the limit then adapts)."""


class AccessLog:
    """Accesses to one memory: growable parallel arrays of intervals [lo, hi), engine, epoch, ref.

    `latest[e]` is the newest epoch of engine e among the records (epochs only grow), so a search
    can return at once when every record happens before the accessing engine's clock, which is
    the common case in a synchronised program.
    """

    def __init__(self, n_engines: int) -> None:
        self.size = 0
        self._columns = np.empty((5, 64), np.int64)  # lo, hi, engine, epoch, ref
        self.latest = np.zeros(n_engines, np.int64)

    def add(self, lo: np.ndarray, hi: np.ndarray, engine: int, epoch: int, ref: int) -> None:
        """Records an access (its intervals must be sorted and disjoint)."""
        start, end = self.size, self.size + len(lo)
        if end > self._columns.shape[1]:
            grown = np.empty((5, 2 * end), np.int64)
            grown[:, :start] = self._columns[:, :start]
            self._columns = grown
        block = self._columns[:, start:end]
        block[0], block[1], block[2], block[3], block[4] = lo, hi, engine, epoch, ref
        self.size = end
        self.latest[engine] = epoch

    def conflict(self, clock: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[int, int, int] | None:
        """(ref, first, last byte + 1) of a record that does not happen before `clock` and overlaps
        the sorted, disjoint intervals [lo, hi); None if there is none."""
        if not self.size or not (self.latest > clock).any():
            return None
        rlo, rhi, engine, epoch, ref = self._columns[:, : self.size]
        near = epoch > clock[engine]  # concurrent records, then those inside the bounding box
        near &= rlo < hi[-1]
        near &= rhi > lo[0]
        candidates = near.nonzero()[0]
        if not len(candidates):
            return None
        rlo, rhi = rlo[candidates], rhi[candidates]
        j = np.searchsorted(lo, rhi, "left") - 1
        jj = np.maximum(j, 0)
        hit = (j >= 0) & (hi[jj] > rlo)
        if not hit.any():
            return None
        first = int(np.argmax(hit))
        k = jj[first]
        return int(ref[candidates[first]]), int(max(rlo[first], lo[k])), int(min(rhi[first], hi[k]))

    def prune(self, frontier: np.ndarray) -> None:
        """Drops records every remaining accessor has seen (`epoch <= frontier[engine]`)."""
        columns = self._columns[:, : self.size]
        kept = columns[:, columns[3] > frontier[columns[2]]]
        self.size = kept.shape[1]
        self._columns[:, : self.size] = kept
        self.latest[:] = 0
        np.maximum.at(self.latest, kept[2], kept[3])

    def refs(self) -> np.ndarray:
        """The instruction ref of every record."""
        return self._columns[4, : self.size]
