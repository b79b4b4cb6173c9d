"""aitc's cycle-approximate simulator of the virtual NPU: the living definition of the `hw` ISA.

    from aitc.sim import Simulator, Session
    result = Simulator(module, "tiny").run({"x": x}, trace=True)
    [y] = Session("program.mlir").run(None, {"x": x})

Modules, in the order a run uses them:

    program.py    decode a hw.program: data layout, per-core instruction streams (loops lazy)
    footprint.py  the bytes each instruction reads and writes
    timing.py     the cycles each instruction takes
    execute.py    what each instruction computes (numpy, vectorised per instruction)
    checks.py     bounds, alignment, races (vector clocks), deadlock, caps
    engine.py     event-driven scheduling of engines, semaphores, barriers
    stats.py      cycles, busy/stall/idle, bytes, MAC utilisation; `format_stats`
    trace.py      Chrome/Perfetto trace JSON
    run_program.py one run of one program on fresh memories: `run_program`, `SimResult`
    segments.py   a schedule of NPU and host segments, run as the runtime runs it
    simulator.py  `Simulator`;  session.py  `Session` (onnxruntime style)
    build.py      helpers to build hw programs in Python (tests, benchmarks)

Static target limits (bounds over whole loop nests, alignment, engines, ...) come from
`aitc.dialects.hw.program` and are checked when a program is decoded; the checks here run per
executed instruction and add what only execution can know: races, deadlocks, data-dependent
gather rows.
"""

from __future__ import annotations

from aitc.sim.engine import SimOptions
from aitc.sim.errors import SimulationError
from aitc.sim.program import Program, decode_program
from aitc.sim.run_program import SimResult
from aitc.sim.session import Session
from aitc.sim.simulator import Simulator
from aitc.sim.stats import SimStats, format_stats, stats_json
from aitc.sim.trace import trace_json, write_trace

__all__ = [
    "Program", "Session", "SimOptions", "SimResult", "SimStats", "SimulationError", "Simulator",
    "decode_program", "format_stats", "stats_json", "trace_json", "write_trace",
]  # fmt: skip
