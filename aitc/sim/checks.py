"""The simulator's always-on checks: bounds, alignment, races, deadlock and caps.

Bounds and alignment: every region an instruction touches (`footprint.py`) must lie inside its
memory (DRAM `dram.bytes`, SRAM `sram_bytes` and ACC `acc_bytes` per core) and start at a
multiple of its element size. Decoding already proves this statically for affine addresses
(`aitc.dialects.hw.program`, over the whole loop nest), so the per-instance check is a backstop
that names the exact loop iteration and cycle; a gather's indices are checked here, at run time.

Races, with vector clocks (as in ThreadSanitizer/FastTrack, per engine instead of per thread):

- Every engine of every core has a vector clock (a row of `clocks`); each instruction ticks its
  engine's own entry, and `clock[e]` then is the epoch of that instruction.
- `sem_signal` puts `count` copies of the signaller's clock on the semaphore's FIFO; `sem_wait`
  takes `count` of them and joins (element-wise max) them into the waiter's clock. A semaphore
  is a (core, number) pair, so a signal to a `peer` core's semaphore orders the signalling
  engine before that core's waiter exactly as a local signal does. A barrier joins the clocks of
  all its participants. These are the only happens-before edges besides the program order of
  each (in-order) engine.
- Each access is recorded as (engine, epoch, byte intervals, read/write, instruction) in an
  `AccessLog` (`aitc.analysis.access_log`, shared with the sync interpreter), per engine in
  its order, so only the records an access is not yet ordered after are searched (a binary
  search on epochs, then bounding boxes; the per-row intervals are compared with numpy only when
  boxes meet). A new access conflicts with a record of another engine that does not happen before it
  (`record.epoch > clock[record.engine]`) when their intervals overlap and at least one of them
  writes. Reads and writes are kept in separate logs, so a read is only compared with writes.
- Records every engine that can still touch that memory has already seen are pruned, so the
  logs stay short for programs that synchronise.

A race, a deadlock (reported by `engine.py` with `deadlock_error`), an access outside memory,
or an exceeded cap stops the simulation with a `SimulationError` naming the instructions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aitc.analysis.access_log import PRUNE_MIN, AccessLog, Intervals
from aitc.analysis.vector_clock import SignalUnits
from aitc.sim.errors import SimulationError
from aitc.sim.execute import Memories
from aitc.sim.footprint import Region
from aitc.sim.program import Instr

RACE_HINT = (
    "make the later engine wait for the earlier one: hw.sem_signal on the first engine after its "
    "access, hw.sem_wait on the second before its access (across cores: the signal with peer=<the "
    "waiting core>, or a hw.barrier)"
)


def check_region(
    mem: Memories, key: int, base: int, region: Region, ins: Instr, engine: str, cycle: int
) -> None:
    """Raises unless `region` at `base` lies inside memory `key` and is aligned."""
    if base % region.align:
        raise SimulationError(
            "alignment",
            f"{ins.describe(engine, cycle)}: '{region.field}' address 0x{base:x} is not a multiple of "
            f"{region.align} (its element size)",
            hint="element addresses must be aligned to their element size",
        )
    size = mem.sizes[key]
    if base < 0 or base + region.extent > size:
        action = "writes" if region.write else "reads"
        raise SimulationError(
            "bounds",
            f"{ins.describe(engine, cycle)}: '{region.field}' {action} {Memories.describe_key(key)} bytes "
            f"[0x{base:x}, 0x{base + region.extent:x}), outside its {size} bytes",
            hint="addresses are base + step*index: check the loop steps, sizes and the target's memory sizes",
        )


class RaceDetector:
    """Vector clocks for `n_engines` engines, semaphore FIFOs and per-memory access logs.

    `accessors[key]` lists the engines that can ever touch memory `key` (from the program's
    footprints); only they matter when deciding which records are safe to prune.
    """

    def __init__(self, n_engines: int, accessors: Sequence[Sequence[int]]):
        self.clocks = np.zeros((n_engines, n_engines), np.int64)
        self.reads = [AccessLog() for _ in accessors]
        self.writes = [AccessLog() for _ in accessors]
        self.accessors = [np.array(sorted(a), np.int64) for a in accessors]
        self.finished = np.zeros(n_engines, bool)
        self.limits = [PRUNE_MIN] * len(accessors)
        self.refs: dict[int, tuple[Instr, str, int]] = {}
        self.ref_limit = PRUNE_MIN
        self.units = SignalUnits()

    # -- happens-before edges
    def tick(self, gid: int) -> None:
        """Engine `gid` executes an instruction: its own clock entry advances."""
        self.clocks[gid, gid] += 1

    def signal(self, gid: int, sem: tuple[int, int], count: int) -> None:
        """`count` copies of the signaller's clock join the FIFO of semaphore `sem` = (core,
        number), which may belong to another core than the signaller's."""
        self.units.signal(sem, self.clocks[gid], count)

    def wait(self, gid: int, sem: tuple[int, int], count: int) -> None:
        """The waiter joins the clocks of the `count` oldest signal units."""
        self.units.wait(sem, count, self.clocks[gid])

    def barrier(self, gids: Sequence[int]) -> None:
        """Every participant gets the join of all participants' clocks."""
        rows = list(gids)
        self.clocks[rows] = self.clocks[rows].max(axis=0)

    def finish(self, gid: int) -> None:
        """Engine `gid` has no instructions left: it no longer holds back pruning."""
        self.finished[gid] = True

    # -- accesses
    def access(
        self, gid: int, key: int, intervals: Intervals, write: bool, ref: int, clock: list[int]
    ) -> None:
        """Checks one access of engine `gid`, whose vector clock is `clock` (as a list), against
        the logs (raising `SimulationError` on a race), then records it."""
        found = self.writes[key].conflict(clock, intervals)
        if found is not None:
            raise self._race_error(key, (ref, write), (found, True))
        if write and (found := self.reads[key].conflict(clock, intervals)) is not None:
            raise self._race_error(key, (ref, write), (found, False))
        log = self.writes[key] if write else self.reads[key]
        log.add(intervals, gid, clock[gid], ref)
        if log.size > self.limits[key]:
            self._prune(key)

    def _prune(self, key: int) -> None:
        """Drops records of memory `key` that every remaining accessor has seen."""
        accessors = self.accessors[key]
        active = accessors[~self.finished[accessors]]
        if len(active):
            frontier = self.clocks[active].min(axis=0)
        else:
            frontier = np.full(len(self.clocks), np.iinfo(np.int64).max)
        for log in (self.reads[key], self.writes[key]):
            log.prune(frontier)
        self.limits[key] = max(PRUNE_MIN, 2 * (self.reads[key].size + self.writes[key].size))
        if len(self.refs) > self.ref_limit:
            self._collect_refs()

    def _collect_refs(self) -> None:
        """Forgets instructions no record refers to any more."""
        live = np.unique(np.concatenate([log.refs() for log in (*self.reads, *self.writes)]))
        self.refs = {int(r): self.refs[int(r)] for r in live}
        self.ref_limit = max(PRUNE_MIN, 2 * len(self.refs))

    def _race_error(
        self, key: int, current: tuple[int, bool], earlier: tuple[tuple[int, int, int], bool]
    ) -> SimulationError:
        """The report naming both instructions of a race."""
        (other, first, end), earlier_write = earlier
        earlier_ins, earlier_engine, earlier_cycle = self.refs[other]
        ins, engine, cycle = self.refs[current[0]]
        lines = [
            f"data race on {Memories.describe_key(key)}, bytes [0x{first:x}, 0x{end:x}): two engines access "
            "them with no semaphore or barrier ordering the accesses",
            f"  {'write' if earlier_write else 'read '}  "
            f"{earlier_ins.describe(earlier_engine, earlier_cycle)}",
            f"  {'write' if current[1] else 'read '}  {ins.describe(engine, cycle)}",
        ]
        return SimulationError("race", "\n".join(lines), hint=RACE_HINT)


def deadlock_error(
    cycle: int, blocked: Sequence[str], semaphores: Sequence[str], barriers: Sequence[str]
) -> SimulationError:
    """The report when no engine can progress: blocked queue heads, semaphores, pending barriers."""
    shown = list(blocked[:12]) + (
        [f"... and {len(blocked) - 12} more blocked engines"] if len(blocked) > 12 else []
    )
    lines = [f"deadlock at cycle {cycle}: no engine can make progress", "  blocked engines (queue heads):"]
    lines += [f"    {line}" for line in shown]
    lines += ["  semaphores (nonzero or waited on):"] + [f"    {line}" for line in semaphores or ["all zero"]]
    if barriers:
        lines += ["  pending barriers:"] + [f"    {line}" for line in barriers]
    return SimulationError(
        "deadlock",
        "\n".join(lines),
        hint="each hw.sem_wait needs matching hw.sem_signal counts; every core must reach each hw.barrier",
    )


def unbalanced_error(semaphores: Sequence[str]) -> SimulationError:
    """The report when the program ends with semaphores above zero: signals nobody awaited. A
    program must leave the semaphores as it found them (zero), or its next run starts with stale
    credits that let a producer overwrite data still in use."""
    lines = ["the program ended with semaphores above zero (signals that no wait consumed):"]
    lines += [f"    {line}" for line in semaphores]
    return SimulationError(
        "unbalanced", "\n".join(lines), hint="every hw.sem_signal needs a matching hw.sem_wait before hw.end"
    )


def cap_error(what: str, value: int, cap: int, option: str) -> SimulationError:
    """The error for a program over the instruction or cycle cap."""
    return SimulationError(
        "cap",
        f"the program would exceed the {what} cap: {value} > {cap}",
        hint=f"raise the cap with {option}=N if the program is meant to be this long",
    )
