"""Event-driven timing: engines, dispatch, semaphores and barriers.

Per core, instructions are dispatched in program order to one FIFO per engine (`dma0` ..,
`matrix`, `vector`). Dispatch is free and the FIFOs are unbounded, so each engine simply runs
its own subsequence of the program, in order, one instruction at a time; engines of all cores
run concurrently. Dispatch is lazy: an engine pulls from its core's instruction generator until
it finds its next instruction, queueing the ones it passes for their engines.

Time advances by events: a heap holds (cycle, engine) for every engine that can start its next
instruction at that cycle; the earliest is popped, its instruction starts, and the engine is
pushed back at the instruction's completion cycle (costs in `timing.py`). Each instruction's
functional effect is applied atomically when it starts (so race-free programs have one result),
after the checks of `checks.py`. Processing in start order also serves the shared DRAM channel
and the link ports (one egress and one ingress per core, `LinkPorts`) first come, first served.

Cross-engine ordering comes only from:

- semaphores (per core, `target.semaphores` counters starting at 0): `hw.sem_signal s, engine=E,
  count=c` runs on E, so it executes once every earlier instruction of E has completed, and adds
  c at its start, to semaphore s of its own core or, with `peer=p`, of core p. `hw.sem_wait s,
  engine=E, count=c` blocks E until s of its own core is >= c, then subtracts c. Both take 1
  cycle, so a signal at cycle t releases a waiter (of any core) at t, which starts its next
  instruction at t + 1.
- barriers: every core's n-th `hw.barrier` (counted in its program order, whatever its engine)
  blocks its engine until all cores of the program have reached their n-th barrier; all are
  released at the arrival cycle of the last one and take 1 cycle.

When no engine can start and some still have instructions, the program is deadlocked: the
report lists each blocked engine's queue head, the semaphore values and the pending barriers.
The cycle cap (`SimOptions.max_cycles`) stops runaway programs.
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from aitc import progress
from aitc.analysis.access_log import Intervals
from aitc.sim.checks import RaceDetector, cap_error, check_region, deadlock_error, unbalanced_error
from aitc.sim.execute import EXECUTE, Memories, gather_indices
from aitc.sim.footprint import Region, gather_intervals
from aitc.sim.program import Instr, Program
from aitc.sim.timing import dma_end, link_end
from aitc.sim.trace import TraceRecorder


@dataclass(frozen=True)
class SimOptions:
    """Caps that stop a runaway simulation with an error instead of running forever."""

    max_instructions: int = 5_000_000
    max_cycles: int = 10**12


PROGRESS_STEP = 16384
"""Scheduling steps between two updates of the progress bar (`aitc.progress`)."""


class EngineState:
    """One engine of one core: its FIFO, progress, and the counters `stats.py` reports."""

    __slots__ = (
        "blocked_since", "busy", "bytes", "core", "done_at", "dram_wait", "fifo", "gid", "head", "index",
        "instructions", "macs", "name", "remaining", "stall",
    )  # fmt: skip

    def __init__(self, gid: int, core: int, index: int, name: str, remaining: int):
        self.gid, self.core, self.index, self.name, self.remaining = gid, core, index, name, remaining
        self.fifo: deque[Instr] = deque()
        self.head: Instr | None = None
        self.blocked_since = -1
        self.busy = self.stall = self.dram_wait = self.instructions = self.bytes = self.macs = (
            self.done_at
        ) = 0


class LinkPorts:
    """The link ports of one core and their counters: egress (this core's dma_peer sends) and
    ingress (other cores' sends to it), each free from a cycle on."""

    __slots__ = ("egress_busy", "egress_free", "ingress_free", "received", "sent", "wait")

    def __init__(self) -> None:
        self.egress_free = self.ingress_free = 0
        self.sent = self.received = self.egress_busy = self.wait = 0


class Scheduler:
    """Runs a decoded program on memories: timing, checks and functional effects together."""

    def __init__(
        self, program: Program, memories: Memories, options: SimOptions, trace: TraceRecorder | None
    ):
        target = program.target
        self.program, self.memories, self.options, self.trace = program, memories, options, trace
        self.per_core = len(program.engines)
        self.engines = [
            EngineState(core * self.per_core + i, core, i, name, 0)
            for core in range(target.cores)
            for i, name in enumerate(program.engines)
        ]
        self.streams: dict[int, Iterator[Instr]] = {}
        self.barrier_numbers: dict[int, int] = {}
        for core in program.cores:
            self.streams[core.core] = core.instructions()
            self.barrier_numbers[core.core] = 0
            for i, count in enumerate(core.counts):
                self.engines[core.core * self.per_core + i].remaining = count
        self.semaphores = np.zeros((target.cores, target.semaphores), np.int64)
        self.waiters: dict[tuple[int, int], list[int]] = {}
        self.barriers: dict[int, dict[int, tuple[int, int]]] = {}
        self.detector = RaceDetector(len(self.engines), self._accessors())
        self.heap: list[tuple[int, int]] = []
        self.dram_free = self.dram_read = self.dram_write = self.now = self.refs = 0
        self.collectives: dict[str, list[int]] = {}
        """Per collective (its location): [first start, last end, bytes sent over links]."""
        self.links = [LinkPorts() for _ in range(target.cores)]
        self.mnemonics: Counter[str] = Counter()

    def _accessors(self) -> list[list[int]]:
        """For each memory key, the engines whose instructions can touch it (sorted)."""
        accessors: list[set[int]] = [set() for _ in self.memories.sizes]
        for core in self.program.cores:
            for s in core.statics():
                gid = core.core * self.per_core + s.engine
                for region in s.regions:
                    accessors[Memories.key(region.space, s.peer if region.peer else core.core)].add(gid)
        return [sorted(engines) for engines in accessors]

    # -- main loop
    def run(self) -> int:
        """Simulates to the end; returns the total cycle count (raises SimulationError)."""
        self.heap = [(0, e.gid) for e in self.engines if e.remaining]
        heapq.heapify(self.heap)
        for e in self.engines:
            if not e.remaining:
                self.detector.finish(e.gid)
        steps = {"exec": self._execute, "signal": self._signal, "wait": self._wait, "barrier": self._barrier}
        total = left = sum(e.remaining for e in self.engines)
        with progress.bar(total, "simulate", unit="instr") as shown:
            while self.heap:
                for _ in range(PROGRESS_STEP):  # the bar moves every PROGRESS_STEP steps
                    if not self.heap:
                        break
                    t, gid = heapq.heappop(self.heap)
                    self.now = t
                    e = self.engines[gid]
                    ins = e.head if e.head is not None else self._next(e)
                    e.head = ins
                    steps[ins.static.kind](e, ins, t)
                remaining = sum(e.remaining for e in self.engines)
                shown.update(left - remaining)
                left = remaining
        if any(e.remaining for e in self.engines):
            raise self._deadlock()
        if self.semaphores.any():
            raise unbalanced_error(self._semaphore_lines())
        return max((e.done_at for e in self.engines), default=0)

    def _next(self, e: EngineState) -> Instr:
        """The next instruction of engine `e`, dispatching its core's program up to it."""
        if e.fifo:
            return e.fifo.popleft()
        base = e.core * self.per_core
        for ins in self.streams[e.core]:
            if ins.static.kind == "barrier":
                ins.barrier = self.barrier_numbers[e.core]
                self.barrier_numbers[e.core] += 1
            if ins.static.engine == e.index:
                return ins
            self.engines[base + ins.static.engine].fifo.append(ins)
        raise AssertionError(f"engine {e.name} of core {e.core} ran out of instructions")

    def _complete(self, e: EngineState, ins: Instr, start: int, end: int, stalled: int = 0) -> None:
        """Books a finished instruction (stats, trace, caps) and requeues its engine."""
        e.head = None
        e.remaining -= 1
        e.instructions += 1
        e.busy += end - start - stalled
        e.stall += stalled
        self.mnemonics[ins.static.mnemonic] += 1
        if ins.static.collective is not None:
            span = self.collectives.setdefault(ins.static.collective, [start, end, 0])
            span[0], span[1] = min(span[0], start), max(span[1], end)
            span[2] += ins.static.cost.link and ins.static.cost.bytes
        if self.trace is not None:
            self.trace.add(e.core, e.index, ins, start, end, stalled)
        if end > self.options.max_cycles:
            raise cap_error("cycle", end, self.options.max_cycles, "max_cycles")
        if e.remaining:
            heapq.heappush(self.heap, (end, e.gid))
        else:
            e.done_at = end
            self.detector.finish(e.gid)

    # -- instructions with a data effect
    def _execute(self, e: EngineState, ins: Instr, t: int) -> None:
        """Checks every region, applies the effect, then times the instruction."""
        s = ins.static
        self.detector.tick(e.gid)
        self.refs += 1
        self.detector.refs[self.refs] = (ins, e.name, t)
        clock = self.detector.clocks[e.gid].tolist()
        for region in s.regions:
            self._touch(e, ins, region, t, clock)
        EXECUTE[s.mnemonic](self.memories, ins)
        self._complete(e, ins, t, self._end(e, ins, t))

    def _touch(self, e: EngineState, ins: Instr, region: Region, t: int, clock: list[int]) -> None:
        """Bounds, alignment and race checks of one region, which is then recorded (`clock`: the
        engine's vector clock)."""
        offset = region.key_offset
        key = offset and offset + 2 * (ins.static.peer if region.peer else ins.core)
        base = ins.addr[region.field]
        check_region(self.memories, key, base, region, ins, e.name, t)
        if region.gathered:
            indices = gather_indices(self.memories, ins)
            intervals = Intervals.of(*gather_intervals(base, indices, region.row_bytes, region.stride))
        else:
            intervals = Intervals(base, region.lo_off, region.hi_off, base, base + region.extent)
        self.detector.access(e.gid, key, intervals, region.write, self.refs, clock)

    def _end(self, e: EngineState, ins: Instr, t: int) -> int:
        """Completion cycle; DMAs touching DRAM queue for the shared channel, peer DMAs for
        the link ports."""
        s = ins.static
        cost = s.cost
        e.bytes += cost.bytes
        e.macs += cost.macs
        if cost.link:
            return self._link_end(ins, t)
        if not cost.dram:
            return t + cost.cycles
        end, self.dram_free = dma_end(cost, t, self.dram_free)
        e.dram_wait += end - t - cost.cycles
        if s.spaces["src"] == "dram":
            self.dram_read += cost.bytes
        else:
            self.dram_write += cost.bytes
        return end

    def _link_end(self, ins: Instr, t: int) -> int:
        """Completion cycle of a dma_peer: it holds the sender's egress and the receiver's
        ingress port from when both are free, then the link latency follows."""
        cost = ins.static.cost
        sender, receiver = self.links[ins.core], self.links[ins.static.peer]
        end, ports_end = link_end(cost, t, sender.egress_free, receiver.ingress_free)
        sender.egress_free = receiver.ingress_free = ports_end
        sender.sent += cost.bytes
        receiver.received += cost.bytes
        sender.egress_busy += cost.link
        sender.wait += end - t - cost.cycles
        return end

    # -- semaphores and barriers
    def _signal(self, e: EngineState, ins: Instr, t: int) -> None:
        """sem_signal: adds `count` (visible at once) to the semaphore of its core or of its
        `peer`, and wakes that semaphore's waiters (the detector gets the same edge either way)."""
        peer = ins.static.peer
        key = (peer if peer >= 0 else ins.core, ins.static.sem)
        self.detector.tick(e.gid)
        self.semaphores[key] += ins.static.count
        self.detector.signal(e.gid, key, ins.static.count)
        for waiter in self.waiters.pop(key, ()):
            heapq.heappush(self.heap, (t, waiter))
        self._complete(e, ins, t, t + 1)

    def _wait(self, e: EngineState, ins: Instr, t: int) -> None:
        """sem_wait: blocks until the value reaches `count`, then takes it."""
        key, count = (ins.core, ins.static.sem), ins.static.count
        since = e.blocked_since if e.blocked_since >= 0 else t
        if self.semaphores[key] < count:
            e.blocked_since = since
            self.waiters.setdefault(key, []).append(e.gid)
            return
        e.blocked_since = -1
        self.semaphores[key] -= count
        self.detector.tick(e.gid)
        self.detector.wait(e.gid, key, count)
        self._complete(e, ins, since, t + 1, stalled=t - since)

    def _barrier(self, e: EngineState, ins: Instr, t: int) -> None:
        """barrier: blocks until every core reached this barrier, then releases all."""
        arrivals = self.barriers.setdefault(ins.barrier, {})
        arrivals[ins.core] = (e.gid, t)
        e.blocked_since = t
        if len(arrivals) < len(self.program.cores):
            return
        del self.barriers[ins.barrier]
        gids = [gid for gid, _ in arrivals.values()]
        for gid in gids:
            self.detector.tick(gid)
        self.detector.barrier(gids)
        for gid, since in arrivals.values():
            engine = self.engines[gid]
            engine.blocked_since = -1
            assert engine.head is not None
            self._complete(engine, engine.head, since, t + 1, stalled=t - since)

    # -- deadlock report
    def _deadlock(self):
        """The error for a run where no engine can progress."""
        blocked = [self._blocked_line(e) for e in self.engines if e.remaining]
        return deadlock_error(self.now, blocked, self._semaphore_lines(), self._barrier_lines())

    def _blocked_line(self, e: EngineState) -> str:
        """One line per blocked engine: why, since when, and its queue head."""
        ins = e.head
        if ins is None:
            return f"core {e.core} {e.name}: not started"
        s = ins.static
        if s.kind == "wait":
            value = self.semaphores[ins.core, s.sem]
            why = f"semaphore {s.sem} = {value}, needs {s.count}"
        else:
            arrived = len(self.barriers.get(ins.barrier, {}))
            why = f"barrier #{ins.barrier}: {arrived} of {len(self.program.cores)} cores arrived"
        return f"core {e.core} {e.name} since cycle {e.blocked_since} ({why}): {ins.describe()}"

    def _semaphore_lines(self) -> list[str]:
        """Per core, the semaphores that are nonzero or waited on: the program's cores in its
        order, then cores without a hw.core that a peer signal counted up."""
        waited: dict[tuple[int, int], list[str]] = {}
        for e in self.engines:
            if e.remaining and e.head is not None and e.head.static.kind == "wait":
                waited.setdefault((e.core, e.head.static.sem), []).append(
                    f"{e.name} waits for {e.head.static.count}"
                )
        cores = [core.core for core in self.program.cores]
        cores += [core for core in range(len(self.semaphores)) if core not in cores]
        lines = []
        for core in cores:
            values = self.semaphores[core]
            items = []
            for sem in range(len(values)):
                who = waited.get((core, sem))
                if values[sem] or who:
                    items.append(f"sem {sem} = {values[sem]}" + (f" ({', '.join(who)})" if who else ""))
            if items:
                lines.append(f"core {core}: " + "; ".join(items))
        return lines

    def _barrier_lines(self) -> list[str]:
        """Per pending barrier, who arrived and who is missing."""
        lines = []
        for number, arrivals in sorted(self.barriers.items()):
            missing = [core.core for core in self.program.cores if core.core not in arrivals]
            status = [self._core_status(core) for core in missing]
            lines.append(
                f"barrier #{number}: reached by cores {sorted(arrivals)}; missing {'; '.join(status)}"
            )
        return lines

    def _core_status(self, core: int) -> str:
        """Why a core is missing from a barrier."""
        engines = self.engines[core * self.per_core : (core + 1) * self.per_core]
        if not any(e.remaining for e in engines):
            return f"core {core} (finished all its instructions)"
        return f"core {core} (blocked elsewhere)"
