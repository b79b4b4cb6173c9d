"""Statistics of a simulation: cycles, busy/stall/idle per engine, bytes, MACs, utilisation.

Per engine (only engines that ran instructions are listed):
    busy   cycles spent executing (a DMA's wait for the shared DRAM channel or for a link port
           included, also shown separately as `dram wait` / the core's link `wait`;
           sem_wait/barrier count 1 busy cycle each)
    stall  cycles blocked on sem_wait or barrier
    idle   total cycles - busy - stall (nothing queued, or finished)
Per core, the core-to-core link (`LinkStats`; `per_core[i]["link"]` in `to_dict`):
    bytes_sent / bytes_received   bytes its dma_peer sent / other cores' dma_peer delivered to it
    egress_busy                   cycles its egress port was transferring
    wait                          cycles its dma_peer waited for a port (its egress or the
                                  receiver's ingress)
Matrix utilisation = MACs / (cycles * matrix rows * cols), per core and overall (overall counts
every core of the program).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from aitc.report import format_table
from aitc.sim.engine import LinkPorts, Scheduler


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
class LinkStats:
    """The link ports of one core (see the module docstring)."""

    core: int
    bytes_sent: int = 0
    bytes_received: int = 0
    egress_busy: int = 0
    wait: int = 0

    def merged(self, other: LinkStats) -> LinkStats:
        """The counters of two runs summed (segments run back to back)."""
        return LinkStats(
            self.core,
            self.bytes_sent + other.bytes_sent,
            self.bytes_received + other.bytes_received,
            self.egress_busy + other.egress_busy,
            self.wait + other.wait,
        )


@dataclass(frozen=True)
class CollectiveStats:
    """One collective of a multi-core program (its instructions carry
    `loc("collective <kind>#<n> <bytes>B <node>")`): the cycles from its first instruction's
    start to its last one's end on any core, the bytes its peer DMAs moved (all cores), and
    the bandwidths as NCCL reports them: algbw = bytes / cycles (bytes = the value an
    all_reduce reduces, the whole value an all_gather or reduce_scatter makes or splits) and
    busbw = algbw * 2(n-1)/n (all_reduce) or algbw * (n-1)/n, comparable to one link's peak."""

    name: str
    kind: str
    node: str
    bytes: int
    cycles: int
    link_bytes: int
    algbw: float
    busbw: float


def collective_stats(spans: dict[str, list[int]], cores: int) -> tuple[CollectiveStats, ...]:
    """CollectiveStats per collective, in program order (their first start)."""
    found = []
    for location, (start, end, link_bytes) in sorted(spans.items(), key=lambda item: item[1][0]):
        _, name, size, *node = location.split(" ", 3)
        kind = name.split("#")[0]
        nbytes = int(size.removesuffix("B")) if size.removesuffix("B").isdigit() else 0
        cycles = max(end - start, 1)
        factor = (2 if kind == "all_reduce" else 1) * (cores - 1) / max(cores, 1)
        algbw = nbytes / cycles if link_bytes else 0.0  # a part written in place moves nothing over the links
        found.append(
            CollectiveStats(
                name, kind, node[0] if node else "", nbytes, cycles, link_bytes, algbw, algbw * factor
            )
        )
    return tuple(found)


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
    links: tuple[LinkStats, ...] = ()
    """Per core of `cores`, in that order; reported under `per_core` by `to_dict`."""
    segments: tuple[Any, ...] = ()
    """`aitc.sim.segments.SegmentRun` per segment when a schedule ran (empty for one program)."""
    collectives: tuple[CollectiveStats, ...] = ()
    """Per collective of a multi-core program, in order (`CollectiveStats`)."""

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

    def core_link(self, core: int) -> LinkStats:
        """The link counters of `core` (all zero when it moved nothing over the link)."""
        return next((link for link in self.links if link.core == core), LinkStats(core))

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
        del data["links"]  # one place for them: under per_core
        data.update(instructions=self.instructions, macs=self.macs, utilisation=self.utilisation())
        data["per_core"] = [self._core_summary(c) for c in self.cores]
        return data

    def _core_summary(self, core: int) -> dict[str, Any]:
        link = asdict(self.core_link(core))
        del link["core"]
        return {
            "core": core,
            "cycles": self.core_cycles(core),
            "macs": self.core_macs(core),
            "utilisation": self.utilisation(core),
            "link": link,
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
        links=tuple(_link_stats(c.core, scheduler.links[c.core]) for c in scheduler.program.cores),
        collectives=collective_stats(scheduler.collectives, len(scheduler.program.cores)),
    )


def _link_stats(core: int, ports: LinkPorts) -> LinkStats:
    return LinkStats(core, ports.sent, ports.received, ports.egress_busy, ports.wait)


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
        link = _link_text(stats.core_link(core))
        lines.append(f"core {core:<11} finished at cycle {stats.core_cycles(core)}{util}{link}")
    if stats.segments:
        lines += ["", format_segments(stats.segments)]
    if stats.collectives:
        lines += ["", format_collectives(stats.collectives)]
    return "\n".join(lines)


def format_collectives(collectives: tuple[CollectiveStats, ...]) -> str:
    """One row per collective: bytes, cycles, NCCL-style algorithm and bus bandwidth."""
    rows = [
        (c.name, c.node, c.bytes, c.cycles, c.link_bytes, f"{c.algbw:.2f}", f"{c.busbw:.2f}")
        for c in collectives
    ]
    return format_table(
        ["collective", "node", "bytes", "cycles", "link bytes", "algbw B/cyc", "busbw B/cyc"], rows
    )


def _link_text(link: LinkStats) -> str:
    """`, link 64 B sent / 64 B received (...)` for a core that used the link, else ''."""
    if not (link.bytes_sent or link.bytes_received):
        return ""
    return (
        f", link {link.bytes_sent} B sent / {link.bytes_received} B received "
        f"(egress busy {link.egress_busy} cycles, {link.wait} waiting for a port)"
    )


def format_segments(segments: tuple[Any, ...]) -> str:
    """One row per segment of a schedule: where it ran and what it cost."""
    rows = [
        (k, s.placement, s.name, s.cycles if s.placement == "npu" else "",
         f"{s.host_ops} op(s), {s.host_seconds * 1e3:.2f} ms wall" if s.placement == "host" else "")
        for k, s in enumerate(segments)
    ]  # fmt: skip
    return format_table(["segment", "on", "name", "cycles", "host work"], rows)
