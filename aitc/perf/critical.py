"""The critical path of a simulated run, through engines and semaphore edges.

Walked backwards from the instruction that finished last: an instruction started when the one
before it on its engine (engines run in order) ended, unless it is a semaphore wait that
blocked, which started when the signal it waited for was sent, so the path jumps to the
signalling engine (a barrier: to the core that arrived last). Each instruction on the path
counts its cycles for its engine and ONNX node; a gap between two instructions of one engine
is idle (nothing had been issued to it yet: a loop's first wait, the run's start); each wait
the path crosses is an edge "engine A waits on sem S for engine B, node X", with the cycles A
was blocked there. The summary ranks both: the path says which engine and node set the run's
length, the edges what the engines waited for.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from aitc.perf.timeline import NO_NODE, engine_names, is_wait


@dataclass(frozen=True)
class Edge:
    """Waits on the critical path: `waiter` blocked on `sem` until `signaller` (running node
    `node`) signalled it, `cycles` blocked in all, over `count` waits."""

    waiter: str
    sem: str
    signaller: str
    node: str
    cycles: int
    count: int


@dataclass(frozen=True)
class CriticalPath:
    """Cycles of the path per engine, per (engine, node), the idle gaps, and the edges."""

    cycles: int
    engines: dict[str, int]
    nodes: dict[tuple[str, str], int]
    idle: int
    edges: list[Edge]

    def summary(self, count: int = 5) -> list[str]:
        """Sentences ranking what set the run's length: the path's cycles per engine (and idle),
        the `count` largest (engine, node) shares, the `count` largest waits."""
        total = max(self.cycles, 1)
        shares = sorted(self.engines.items(), key=lambda item: (-item[1], item[0]))
        parts = [f"{engine} {cycles / total:.0%}" for engine, cycles in shares] + [
            f"idle {self.idle / total:.0%}"
        ]
        lines = [f"by engine: {', '.join(parts)}"]
        for (engine, node), cycles in sorted(self.nodes.items(), key=lambda i: (-i[1], i[0]))[:count]:
            lines.append(f"{engine} runs {node}: {cycles / total:.0%} of the cycles on the critical path")
        for edge in self.edges[:count]:
            lines.append(
                f"{edge.waiter} waits on {edge.sem} for {edge.signaller} ({edge.node}): "
                f"{edge.cycles / total:.0%} of cycles ({edge.count} wait{'s' * (edge.count != 1)})"
            )
        return lines


def critical_path(trace: dict[str, Any]) -> CriticalPath:
    """The critical path of the run a trace records (module docstring)."""
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    if not events:
        return CriticalPath(0, {}, {}, 0, [])
    return _Walk(trace, events).run()


class _Walk:
    """The events of a trace indexed for walking the path backwards."""

    def __init__(self, trace: dict[str, Any], events: list[dict[str, Any]]):
        self.names = engine_names(trace)
        self.events = events
        self.lanes: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
        for event in sorted(events, key=lambda e: (e["ts"], e["ts"] + e["dur"])):
            self.lanes[(event["pid"], event["tid"])].append(event)
        self.position = {id(e): (lane, i) for lane, found in self.lanes.items() for i, e in enumerate(found)}
        self.signals: dict[tuple[int, object], list[tuple[int, dict[str, Any]]]] = defaultdict(list)
        self.barriers: dict[int, list[dict[str, Any]]] = defaultdict(list)  # by release cycle
        for event in events:
            if event["name"].startswith("sem_signal"):
                self.signals[(event["pid"], event["args"].get("sem"))].append((_end(event), event))
            elif event["name"].startswith("barrier"):
                self.barriers[_end(event)].append(event)
        for found in self.signals.values():
            found.sort(key=lambda item: (item[0], item[1]["ts"]))
        self.ends = {key: [end for end, _ in found] for key, found in self.signals.items()}

    def engine(self, event: dict[str, Any]) -> str:
        """The engine name of `event`'s track."""
        return self.names.get((event["pid"], event["tid"]), str(event["tid"]))

    def before(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The instruction before `event` on its engine."""
        lane, index = self.position[id(event)]
        return self.lanes[lane][index - 1] if index else None

    def releaser(self, wait: dict[str, Any]) -> dict[str, Any] | None:
        """The signal that ended a blocked wait (the last one of its semaphore on its core by
        then), or for a barrier the participant that arrived last (a barrier releases every core
        at the same cycle)."""
        if wait["name"].startswith("barrier"):
            peers = [e for e in self.barriers[_end(wait)] if e is not wait]
            return max(peers, key=lambda e: (e["ts"], e["pid"]), default=None)
        key = (wait["pid"], wait["args"].get("sem"))
        index = bisect_right(self.ends.get(key, []), _end(wait)) - 1
        return self.signals[key][index][1] if index >= 0 else None

    def run(self) -> CriticalPath:
        """Walks the path back from the instruction that finished last (module docstring)."""
        current: dict[str, Any] | None = max(self.events, key=lambda e: (_end(e), e["ts"]))
        assert current is not None
        total = _end(current)
        per_engine: dict[str, int] = defaultdict(int)
        per_node: dict[tuple[str, str], int] = defaultdict(int)
        edges: dict[tuple[str, str, str, str], list[int]] = defaultdict(lambda: [0, 0])
        idle, seen = 0, set()
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            stalled = int(current["args"].get("stalled", 0)) if is_wait(current) else 0
            source = self.releaser(current) if stalled else None
            if source is not None:
                node = (self.before(source) or source)["args"].get("node", NO_NODE)
                sem = f"sem {current['args']['sem']}" if "sem" in current["args"] else "a barrier"
                edge = edges[(self.engine(current), sem, self.engine(source), node)]
                edge[0], edge[1] = edge[0] + stalled, edge[1] + 1
                current = source
                continue
            if not is_wait(current) and not current["name"].startswith("sem_signal"):
                per_engine[self.engine(current)] += current["dur"]
                per_node[(self.engine(current), current["args"].get("node", NO_NODE))] += current["dur"]
            previous = self.before(current)
            idle += current["ts"] - (_end(previous) if previous is not None else 0)
            current = previous
        ranked = sorted(
            (Edge(*key, cycles, count) for key, (cycles, count) in edges.items()),
            key=lambda e: (-e.cycles, e.waiter, e.sem, e.signaller, e.node),
        )
        return CriticalPath(total, dict(per_engine), dict(per_node), max(idle, 0), ranked)


def _end(event: dict[str, Any]) -> int:
    return event["ts"] + event["dur"]
