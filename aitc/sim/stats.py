"""Statistics of a simulation: cycles, busy/stall/idle per engine, bytes, MACs, utilisation.

Per engine (only engines that ran instructions are listed):
    busy   cycles spent executing (a DMA's wait for the shared DRAM channel included, also shown
           separately as `dram wait`; sem_wait/barrier count 1 busy cycle each)
    stall  cycles blocked on sem_wait or barrier
    idle   total cycles - busy - stall (nothing queued, or finished)
Matrix utilisation = MACs / (cycles * matrix rows * cols), per core and overall (overall counts
every core of the program).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from aitc.report import format_table
from aitc.sim.engine import Scheduler


@dataclass(frozen=True)
class EngineStats:
    """One engine of one core; `finished` is the cycle its last instruction completed."""

    core: int
    engine: str
    instructions: int
    busy: int
    stall: int
    idle: int
    bytes: int
    dram_wait: int
    macs: int
    finished: int


@dataclass(frozen=True)
class SimStats:
    """Everything `format_stats` prints, as data (`to_dict` for JSON)."""

    cycles: int
    clock_mhz: int
    cores: tuple[int, ...]
    engines: tuple[EngineStats, ...]
    macs_per_cycle: int
    dram_read: int
    dram_write: int
    dram_bytes_per_cycle: int
    by_mnemonic: dict[str, int] = field(default_factory=dict)
    segments: tuple[Any, ...] = ()
    """`aitc.sim.segments.SegmentRun` per segment when a schedule ran (empty for one program)."""

    @property
    def instructions(self) -> int:
        """Instructions executed, all engines."""
        return sum(e.instructions for e in self.engines)

    @property
    def macs(self) -> int:
        """Multiply-accumulates done by all matrix engines."""
        return sum(e.macs for e in self.engines)

    def core_cycles(self, core: int) -> int:
        """The cycle the last engine of `core` finished."""
        return max((e.finished for e in self.engines if e.core == core), default=0)

    def core_macs(self, core: int) -> int:
        """Multiply-accumulates done by the matrix engine of `core`."""
        return sum(e.macs for e in self.engines if e.core == core)

    def utilisation(self, core: int | None = None) -> float:
        """Matrix-engine utilisation of one core, or of all cores of the program."""
        cores = 1 if core is not None else max(len(self.cores), 1)
        macs = self.core_macs(core) if core is not None else self.macs
        return macs / max(self.cycles * self.macs_per_cycle * cores, 1)

    @property
    def seconds(self) -> float:
        """Simulated time at the target's clock."""
        return self.cycles / (self.clock_mhz * 1e6)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready statistics, derived totals and a summary per core included."""
        data = asdict(self)
        data.update(instructions=self.instructions, macs=self.macs, utilisation=self.utilisation())
        data["per_core"] = [
            {
                "core": c,
                "cycles": self.core_cycles(c),
                "macs": self.core_macs(c),
                "utilisation": self.utilisation(c),
            }
            for c in self.cores
        ]
        return data

    def _core_summary(self, core: int) -> dict[str, Any]:
        return {
            "core": core,
            "cycles": self.core_cycles(core),
            "macs": self.core_macs(core),
            "utilisation": self.utilisation(core),
        }


def stats_json(stats: SimStats) -> str:
    """`aitc run --stats-json`: the statistics as indented JSON with sorted keys (the same run
    gives the same text, except a schedule's host wall times)."""
    return json.dumps(stats.to_dict(), indent=2, sort_keys=True) + "\n"


def collect_stats(scheduler: Scheduler, cycles: int) -> SimStats:
    """Reads the counters of a finished run."""
    target = scheduler.program.target
    engines = tuple(
        EngineStats(
            e.core,
            e.name,
            e.instructions,
            e.busy,
            e.stall,
            cycles - e.busy - e.stall,
            e.bytes,
            e.dram_wait,
            e.macs,
            e.done_at,
        )
        for e in scheduler.engines
        if e.instructions
    )
    return SimStats(
        cycles=cycles,
        clock_mhz=target.clock_mhz,
        cores=tuple(c.core for c in scheduler.program.cores),
        engines=engines,
        macs_per_cycle=target.matrix.macs_per_cycle,
        dram_read=scheduler.dram_read,
        dram_write=scheduler.dram_write,
        dram_bytes_per_cycle=target.dram.bytes_per_cycle,
        by_mnemonic=dict(sorted(scheduler.mnemonics.items())),
    )


def _pct(part: int, whole: int) -> str:
    """`part` as a percentage of `whole` ('-' when `whole` is 0)."""
    return f"{100 * part / whole:.1f}%" if whole else "-"


def format_stats(stats: SimStats) -> str:
    """A plain-text report: one row per engine, then per-core and overall totals."""
    rows = [
        (e.core, e.engine, e.instructions, e.busy, _pct(e.busy, stats.cycles), e.stall, e.idle, e.bytes or "",
         e.dram_wait or "", e.macs or "")
        for e in stats.engines
    ]  # fmt: skip
    table = format_table(
        ["core", "engine", "instrs", "busy", "busy%", "stall", "idle", "bytes", "dram wait", "MACs"], rows
    )
    dram = stats.dram_read + stats.dram_write
    lines = [
        table,
        "",
        f"cycles           {stats.cycles} ({stats.seconds * 1e6:.2f} us at {stats.clock_mhz} MHz)",
        f"instructions     {stats.instructions} ("
        + ", ".join(f"{k} {v}" for k, v in stats.by_mnemonic.items())
        + ")",
        f"DRAM             {stats.dram_read} B read, {stats.dram_write} B written "
        f"({_pct(dram, stats.cycles * stats.dram_bytes_per_cycle)} of peak bandwidth)",
        f"MACs             {stats.macs}, matrix utilisation {100 * stats.utilisation():.1f}% overall",
    ]
    for core in stats.cores:
        util = f", matrix utilisation {100 * stats.utilisation(core):.1f}%" if stats.core_macs(core) else ""
        lines.append(f"core {core:<11} finished at cycle {stats.core_cycles(core)}{util}")
    if stats.segments:
        lines += ["", format_segments(stats.segments)]
    return "\n".join(lines)


def format_segments(segments: tuple[Any, ...]) -> str:
    """One row per segment of a schedule: where it ran and what it cost."""
    rows = [
        (k, s.placement, s.name, s.cycles if s.placement == "npu" else "",
         f"{s.host_ops} op(s), {s.host_seconds * 1e3:.2f} ms wall" if s.placement == "host" else "")
        for k, s in enumerate(segments)
    ]  # fmt: skip
    return format_table(["segment", "on", "name", "cycles", "host work"], rows)
