"""Simulating a schedule of NPU and host segments (`aitc.dialects.exec`), as the runtime runs it.

Each NPU segment is its own hw.program, decoded once and simulated on fresh memories; the
runtime hands tensors over through the programs' hw.tensor descriptors: it writes a segment's
inputs at their DRAM addresses before the segment starts and reads its outputs after it ends.
Host segments run on the numpy reference kernels between them. The NPU is idle while the host
works, so the run's simulated cycles are the sum of the NPU segments' cycles; host work is
reported separately (ops, wall seconds) because the simulator has no model of the host CPU.

Statistics sum the segments' counters per core and engine; the trace puts the segments one
after another on the cycle axis and marks each host segment with an instant event.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from aitc.analysis.signature import input_names, output_names
from aitc.dialects import exec as exec_dialect
from aitc.dialects.hw import ProgramOp
from aitc.interp.schedule import HostRunner, callee_of, calls, run_schedule
from aitc.sim.engine import SimOptions
from aitc.sim.errors import SimulationError
from aitc.sim.program import Program, TensorSpec, decode_program
from aitc.sim.run_program import SimResult, check_inputs, run_program
from aitc.sim.stats import EngineStats, LinkStats, SimStats
from aitc.target import Target, load_target
from aitc.types import numpy_dtype, shape_and_element


@dataclass(frozen=True)
class SegmentRun:
    """One executed segment: placement, name, simulated cycles (NPU) or host wall seconds."""

    placement: str
    name: str
    cycles: int = 0
    host_seconds: float = 0.0
    host_ops: int = 0


def _specs(function: func.FuncOp, kind: str) -> tuple[TensorSpec, ...]:
    types = function.function_type.inputs.data if kind == "input" else function.function_type.outputs.data
    names = input_names(function) if kind == "input" else output_names(function)
    specs = []
    for name, type_ in zip(names, types, strict=True):
        shape, element = shape_and_element(type_)
        specs.append(TensorSpec(name, kind, shape, np.dtype(numpy_dtype(element)), -1))
    return tuple(specs)


def _target_of(module: ModuleOp, target: Target | str | Path | None) -> Target:
    if isinstance(target, Target):
        return target
    if target is not None:
        return load_target(target)
    targets = [op.target.data for op in module.ops if isinstance(op, ProgramOp) and op.target is not None]
    if targets:
        return load_target(targets[0])
    named = module.attributes.get("tile.target")
    return load_target(getattr(named, "data", "edge"))


class SegmentedProgram:
    """A schedule ready to simulate: its hw.programs decoded, its host segments interpretable."""

    def __init__(
        self,
        module: ModuleOp,
        schedule: func.FuncOp,
        target: Target | str | Path | None,
        options: SimOptions,
        verified: bool = False,
    ):
        self.module = module
        self.schedule = schedule
        self.target = _target_of(module, target)
        self.options = options
        self.calls = calls(schedule)
        self.programs: dict[str, Program] = {}
        for call in self.calls:
            callee = callee_of(module, call)
            if call.placement.data == "npu":
                if not isinstance(callee, ProgramOp):
                    raise exec_error(call, f"is a {callee.name}; the simulator runs hw programs")
                self.programs[call.callee_name] = decode_program(callee, self.target, verified)
        self.host = HostRunner(module)
        self.inputs = _specs(schedule, "input")
        self.outputs = _specs(schedule, "output")
        self.name = schedule.sym_name.data

    def run(self, inputs: Mapping[str, np.ndarray], trace: bool = False) -> SimResult:
        """Runs every segment; returns a SimResult whose stats and trace cover them all."""
        arrays = check_inputs(self.inputs, inputs)
        results = []
        runs: list[SegmentRun] = []

        def run_npu(call, callee, args):
            program = self.programs[call.callee_name]
            named = dict(zip((s.name for s in program.inputs), args, strict=True))
            result = run_program(program, named, self.options, trace)
            results.append(result)
            runs.append(SegmentRun("npu", call.callee_name, cycles=result.stats.cycles))
            return list(result.outputs.values())

        def run_host(function: func.FuncOp, args):
            start = time.perf_counter()
            outputs = self.host(function, args)
            ops = sum(1 for op in function.body.block.ops if op.name.startswith("graph."))
            runs.append(SegmentRun("host", function.sym_name.data, host_seconds=time.perf_counter() - start,
                                   host_ops=ops))  # fmt: skip
            return outputs

        ordered = [arrays[spec.name] for spec in self.inputs]
        values = run_schedule(self.module, self.schedule, ordered, run_npu, run_host)
        outputs = {spec.name: value for spec, value in zip(self.outputs, values, strict=True)}
        stats = merge_stats([r.stats for r in results], self.target, tuple(runs))
        trace_json = merge_traces([r.trace for r in results], runs, self.name) if trace else None
        return SimResult(outputs, stats, trace_json)


def exec_error(call: exec_dialect.CallOp, detail: str) -> SimulationError:
    return SimulationError("program", f"segment @{call.callee_name} {detail}")


def merge_stats(parts: list[SimStats], target: Target, runs: tuple[SegmentRun, ...]) -> SimStats:
    """One SimStats for segments run back to back: counters summed per core and engine."""
    cycles = sum(p.cycles for p in parts)
    engines: dict[tuple[int, str], EngineStats] = {}
    offset = 0
    for part in parts:
        for e in part.engines:
            key = (e.core, e.engine)
            shifted = replace(e, finished=offset + e.finished)
            if key not in engines:
                engines[key] = shifted
                continue
            old = engines[key]
            engines[key] = replace(
                old,
                instructions=old.instructions + e.instructions,
                busy=old.busy + e.busy,
                stall=old.stall + e.stall,
                bytes=old.bytes + e.bytes,
                dram_wait=old.dram_wait + e.dram_wait,
                macs=old.macs + e.macs,
                finished=shifted.finished,
            )
        offset += part.cycles
    merged = tuple(replace(e, idle=cycles - e.busy - e.stall) for _, e in sorted(engines.items()))
    mnemonics: dict[str, int] = {}
    for part in parts:
        for name, count in part.by_mnemonic.items():
            mnemonics[name] = mnemonics.get(name, 0) + count
    cores = tuple(sorted({c for p in parts for c in p.cores})) or (0,)
    links = {core: LinkStats(core) for core in cores}
    for part in parts:
        for link in part.links:
            links[link.core] = links[link.core].merged(link)
    return SimStats(
        cycles=cycles,
        clock_mhz=target.clock_mhz,
        cores=cores,
        engines=merged,
        macs_per_cycle=target.matrix.macs_per_cycle,
        dram_read=sum(p.dram_read for p in parts),
        dram_write=sum(p.dram_write for p in parts),
        dram_bytes_per_cycle=target.dram.bytes_per_cycle,
        by_mnemonic=dict(sorted(mnemonics.items())),
        links=tuple(links.values()),
        segments=runs,
        collectives=tuple(c for p in parts for c in p.collectives),
    )


HOST_PID = 1000
"""Trace process id of the host CPU row."""


def merge_traces(parts: list[dict[str, Any] | None], runs: list[SegmentRun], name: str) -> dict[str, Any]:
    """The segments' traces back to back on the cycle axis, host segments as instant events."""
    events: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    traces = iter(parts)
    offset = 0
    for run in runs:
        if run.placement == "host":
            work = {"ops": run.host_ops, "host_ms": round(run.host_seconds * 1e3, 3)}
            events.append(
                {
                    "ph": "i",
                    "s": "g",
                    "name": f"host {run.name}",
                    "pid": HOST_PID,
                    "tid": 0,
                    "ts": offset,
                    "args": work,
                }
            )
            continue
        part = next(traces) or {"traceEvents": []}
        for event in part["traceEvents"]:
            if event["ph"] == "M":
                key = (event["name"], event["pid"], event["tid"])
                if key not in seen:
                    seen.add(key)
                    events.append(event)
                continue
            args = {**event["args"], "segment": run.name}
            events.append({**event, "ts": event["ts"] + offset, "args": args})
        offset += run.cycles
    if any(run.placement == "host" for run in runs):
        events.append(
            {"ph": "M", "name": "process_name", "pid": HOST_PID, "tid": 0, "args": {"name": "host"}}
        )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "program": name,
            "time_unit": "1 unit (us in the viewer) = 1 cycle",
            "segments": len(runs),
        },
    }
