"""Happens-before through semaphores, with vector clocks (as in ThreadSanitizer/FastTrack, per
engine instead of per thread): the one implementation the sync interpreter's race checker and
the simulator's share.

A `sem_signal` of `count` puts one unit on the semaphore's FIFO: a copy of the signaller's clock
and how many counts it still holds. A `sem_wait` of `count` takes counts from the oldest units
first and joins (element-wise max) each unit's clock into the waiter's clock; a unit leaves the
FIFO when its last count is taken.

    signal(s, A, 2); signal(s, B, 1)      FIFO of s: [A x2] [B x1]
    wait(s, 2, C)                         C = max(C, A);  FIFO: [B x1]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable

import numpy as np


class SignalUnits:
    """Per semaphore (any hashable key), the FIFO of signal units not yet consumed by a wait."""

    def __init__(self) -> None:
        self.fifos: dict[Hashable, deque[list]] = {}

    def signal(self, semaphore: Hashable, clock: np.ndarray, count: int) -> None:
        """`count` counts signalled with (a copy of) `clock`."""
        self.fifos.setdefault(semaphore, deque()).append([clock.copy(), count])

    def wait(self, semaphore: Hashable, count: int, clock: np.ndarray) -> None:
        """Takes the `count` oldest counts and joins their clocks into `clock` (in place). The
        caller has checked that the semaphore holds `count`."""
        fifo = self.fifos[semaphore]
        while count:
            unit = fifo[0]
            np.maximum(clock, unit[0], out=clock)
            taken = min(count, unit[1])
            unit[1] -= taken
            count -= taken
            if not unit[1]:
                fifo.popleft()
