"""Chrome / Perfetto trace of a simulation (the chrome://tracing "traceEvents" JSON format).

One process per core ("core N"), one thread per engine that ran instructions ("dma0", "matrix",
...), and one complete event (`"ph": "X"`) per executed instruction, named
`<mnemonic> <ONNX node>` with its concrete addresses and sizes as `args`. A sem_wait or barrier
slice spans the time its engine was blocked (`args.stalled` cycles) plus its one cycle.

Time unit: `ts` and `dur` are cycles. Trace viewers read them as microseconds, so 1 us on the
viewer's time axis = 1 cycle; `otherData.time_unit` says so and gives the clock to convert.

Open the file at https://ui.perfetto.dev or chrome://tracing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aitc.files import write_atomic
from aitc.sim.program import Instr

_SIZE_FIELDS = ("rows", "row_bytes", "cols", "m", "k", "n", "dtype", "op", "count", "sem", "peer")


class TraceRecorder:
    """Collects (core, engine, instruction, start, end) while simulating; formats at the end."""

    def __init__(self) -> None:
        self.slices: list[tuple[int, int, Instr, int, int, int]] = []

    def add(self, core: int, engine: int, ins: Instr, start: int, end: int, stalled: int = 0) -> None:
        """Records one executed instruction (`stalled`: cycles blocked before it ran)."""
        self.slices.append((core, engine, ins, start, end, stalled))

    def to_json(self, engines: tuple[str, ...], clock_mhz: int, program: str) -> dict[str, Any]:
        """The trace as a JSON-ready dict (see the module docstring)."""
        events: list[dict[str, Any]] = []
        used = sorted({(core, engine) for core, engine, *_ in self.slices})
        for core in sorted({core for core, _ in used}):
            events.append(_meta("process_name", core, 0, {"name": f"core {core}"}))
            events.append(_meta("process_sort_index", core, 0, {"sort_index": core}))
        for core, engine in used:
            events.append(_meta("thread_name", core, engine, {"name": engines[engine]}))
            events.append(_meta("thread_sort_index", core, engine, {"sort_index": engine}))
        events += [_slice(*entry) for entry in self.slices]
        return {
            "traceEvents": events,
            "displayTimeUnit": "ns",
            "otherData": {
                "program": program,
                "time_unit": "1 unit (us in the viewer) = 1 cycle",
                "clock_mhz": clock_mhz,
            },
        }


def _meta(name: str, pid: int, tid: int, args: dict[str, Any]) -> dict[str, Any]:
    """A metadata event naming a process or thread."""
    return {"ph": "M", "name": name, "pid": pid, "tid": tid, "args": args}


def _slice(core: int, engine: int, ins: Instr, start: int, end: int, stalled: int) -> dict[str, Any]:
    """The complete event of one executed instruction."""
    s = ins.static
    args: dict[str, Any] = {name: f"{s.spaces[name]}[0x{addr:x}]" for name, addr in ins.addr.items()}
    args.update({k: s.fields[k] for k in _SIZE_FIELDS if k in s.fields})
    if s.cost.bytes:
        args["bytes"] = s.cost.bytes
    if stalled:
        args["stalled"] = stalled
    if s.location:
        args["node"] = s.location
    name = f"{s.mnemonic} {s.location}" if s.location else s.mnemonic
    return {
        "ph": "X",
        "name": name,
        "cat": s.op.ENGINE,
        "pid": core,
        "tid": engine,
        "ts": start,
        "dur": end - start,
        "args": args,
    }


def trace_json(trace: dict[str, Any]) -> str:
    """A trace dict (from `SimResult.trace`) as compact JSON text."""
    return json.dumps(trace, separators=(",", ":"))


def write_trace(trace: dict[str, Any], path: str | Path) -> None:
    """Writes a trace dict (from `SimResult.trace`) as JSON, atomically."""
    write_atomic(path, trace_json(trace))
