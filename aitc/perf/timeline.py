"""What a simulator trace (`aitc.sim.trace`) says about time: busy intervals per engine and per
ONNX node, each node's span and its time alone, and the share of a window each engine spent
busy or blocked.

A node's *time alone* is the cycles from the later of its first instruction's start and the
end of every node before it (in order of their last instruction) to its last instruction's end:
kernels may overlap (the next kernel's loads run during the current one's compute), so times
alone add up to the program's cycles and each overlap counts once, for the node that finishes
later. On a multi-core program each core also has its own spans (`Timeline.core_spans`): the
cores run their parts of a node at once and drift apart between collectives, so a node's time
on one core is measured against that core's previous node.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

Interval = tuple[int, int]

COMPUTE = ("matrix", "vector")

NO_NODE = "(no node)"
"""The row of instructions that carry no ONNX node (a multi-core program's input and output
copies between DRAM regions)."""


def union(intervals: list[Interval]) -> list[Interval]:
    """The sorted, disjoint intervals covering the same cycles."""
    merged: list[Interval] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def length(intervals: list[Interval], lo: int = 0, hi: int = 1 << 62) -> int:
    """Cycles of disjoint `intervals` within [lo, hi)."""
    return sum(max(0, min(end, hi) - max(start, lo)) for start, end in intervals)


def intersection(a: list[Interval], b: list[Interval]) -> list[Interval]:
    """The cycles two sorted, disjoint interval lists share."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


@dataclass(frozen=True)
class Span:
    """One ONNX node's instructions: first start, last end, and its time alone."""

    node: str
    start: int
    end: int
    alone: int


def engine_names(trace: dict[str, Any]) -> dict[tuple[int, int], str]:
    """(core, thread id) -> engine name ("dma0", "matrix", ...), from the trace's metadata."""
    return {
        (event["pid"], event["tid"]): event["args"]["name"]
        for event in trace["traceEvents"]
        if event.get("ph") == "M" and event.get("name") == "thread_name"
    }


def is_wait(event: dict[str, Any]) -> bool:
    """A sem_wait or barrier slice: time its engine was blocked, not working."""
    return event["name"].startswith(("sem_wait", "barrier"))


class Timeline:
    """Busy and blocked intervals per engine (over every core: an engine name stands for that
    engine on each core) and per node, from a trace's complete events."""

    def __init__(self, trace: dict[str, Any]):
        names = engine_names(trace)
        self.cores = len({pid for pid, _ in names})
        busy: dict[str, list[Interval]] = defaultdict(list)
        blocked: dict[str, list[Interval]] = defaultdict(list)
        per_node: dict[str, list[Interval]] = defaultdict(list)
        per_core_node: dict[int, dict[str, list[Interval]]] = defaultdict(lambda: defaultdict(list))
        self.core_busy: dict[tuple[int, str], list[Interval]] = defaultdict(list)
        for event in trace["traceEvents"]:
            if event.get("ph") != "X":
                continue
            engine = names.get((event["pid"], event["tid"]), str(event["tid"]))
            span = (event["ts"], event["ts"] + event["dur"])
            if is_wait(event):
                blocked[engine].append((span[0], span[1] - 1))
                continue
            if event["name"].startswith("sem_signal"):
                continue
            busy[engine].append(span)
            self.core_busy[(event["pid"], engine)].append(span)
            per_node[event["args"].get("node", NO_NODE)].append(span)
            per_core_node[event["pid"]][event["args"].get("node", NO_NODE)].append(span)
        self.busy = {engine: union(spans) for engine, spans in busy.items()}
        self.blocked = {engine: union(spans) for engine, spans in blocked.items()}
        self.core_busy = {key: union(spans) for key, spans in self.core_busy.items()}
        self.spans = _spans(per_node)
        self.core_spans = {core: _spans(nodes) for core, nodes in sorted(per_core_node.items())}
        """Per core, its nodes' spans and times alone on that core's own timeline."""

    def busiest(self, lo: int, hi: int, core: int | None = None) -> tuple[str, float]:
        """The engine busiest over [lo, hi) (of `core`, or averaged over the cores) and its
        busy share."""
        if core is not None:
            shares = {
                engine: length(spans, lo, hi) / max(hi - lo, 1)
                for (pid, engine), spans in self.core_busy.items()
                if pid == core
            }
        else:
            shares = {
                engine: sum(length(s, lo, hi) for (_, e), s in self.core_busy.items() if e == engine)
                / (max(hi - lo, 1) * max(self.cores, 1))
                for engine in self.busy
            }
        if not shares:
            return "idle", 0.0
        engine = max(shares, key=lambda e: (shares[e], e))
        return engine, shares[engine]

    def exposed_dma(self, lo: int, hi: int) -> int:
        """Cycles in [lo, hi) with a DMA queue busy and no compute engine busy (any core)."""
        dma = union([s for engine, spans in self.busy.items() if engine.startswith("dma") for s in spans])
        compute = union([s for engine in COMPUTE for s in self.busy.get(engine, [])])
        return length(dma, lo, hi) - length(intersection(dma, compute), lo, hi)

    def blocked_share(self, lo: int, hi: int) -> float:
        """The share of [lo, hi) in which some engine was blocked and none was busy: time the
        program waited on its own synchronisation."""
        waiting = union([s for spans in self.blocked.values() for s in spans])
        working = union([s for spans in self.busy.values() for s in spans])
        return (length(waiting, lo, hi) - length(intersection(waiting, working), lo, hi)) / max(hi - lo, 1)


def _spans(per_node: dict[str, list[Interval]]) -> list[Span]:
    """Each node's span and time alone, in order of their last instruction (module docstring)."""
    bounds = {node: (min(s for s, _ in spans), max(e for _, e in spans)) for node, spans in per_node.items()}
    found, previous = [], 0
    for node, (first, last) in sorted(bounds.items(), key=lambda item: (item[1][1], item[1][0], item[0])):
        found.append(Span(node, first, last, max(last - max(first, previous), 0)))
        previous = max(previous, last)
    return found
