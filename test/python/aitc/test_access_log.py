"""The race checks' access log against a brute-force search over every record it was given."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from aitc.analysis.access_log import AccessLog, Intervals

ENGINES = 4


def intervals(draw, rows_max: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Sorted, disjoint intervals inside [0, 256)."""
    rows = draw(st.integers(1, rows_max))
    start = draw(st.integers(0, 128))
    width = draw(st.integers(1, 16))
    stride = draw(st.integers(width, 32)) if rows > 1 else width
    lo = start + stride * np.arange(rows, dtype=np.int64)
    return lo, lo + width


@st.composite
def histories(draw):
    """A sequence of accesses: (engine, lo, hi, clock of the accessing engine)."""
    clocks = np.zeros((ENGINES, ENGINES), np.int64)
    steps = []
    for _ in range(draw(st.integers(1, 40))):
        engine = draw(st.integers(0, ENGINES - 1))
        if draw(st.booleans()):  # a synchronisation: engine learns another's clock
            other = draw(st.integers(0, ENGINES - 1))
            np.maximum(clocks[engine], clocks[other], out=clocks[engine])
        clocks[engine, engine] += 1
        steps.append((engine, *intervals(draw), clocks[engine].copy()))
    return steps


def brute_force(records, clock, lo, hi):
    """The earliest live record not ordered before `clock` that overlaps [lo, hi), as AccessLog
    reports it: its first interval that overlaps, with the last interval of [lo, hi) it meets."""
    for ref, (engine, epoch, rlo, rhi, live) in enumerate(records):
        if not live or epoch <= clock[engine]:
            continue
        for a, b in zip(rlo, rhi):
            for c, d in reversed(list(zip(lo, hi))):
                if a < d and c < b:
                    return ref, int(max(a, c)), int(min(b, d))
    return None


@settings(max_examples=300, deadline=None)
@given(histories(), st.data())
def test_conflicts_match_a_search_of_every_record(steps, data):
    log, records = AccessLog(), []
    for ref, (engine, lo, hi, clock) in enumerate(steps):
        expected = brute_force(records, clock, lo, hi)
        assert log.conflict(clock.tolist(), Intervals.of(lo, hi)) == expected
        base = data.draw(st.integers(0, 64))  # the same intervals, kept as offsets from a base
        shifted = Intervals(base, lo - base, hi - base, int(lo[0]), int(hi[-1]))
        log.add(shifted, engine, int(clock[engine]), ref)
        records.append([engine, int(clock[engine]), lo, hi, True])
        if data.draw(st.integers(0, 5)) == 0:  # prune below some clock
            frontier = steps[data.draw(st.integers(0, ref))][3]
            log.prune(frontier)
            for record in records:
                record[4] &= record[1] > frontier[record[0]]
        assert log.size == sum(len(r[2]) for r in records if r[4])
