"""One run of one decoded program: load DRAM, simulate every core, read the outputs back.

    result = run_program(program, {"x": x}, SimOptions(), trace=True)

A run loads the `hw.const` segments and the inputs into a zeroed DRAM, simulates every core
(`engine.py`), and reads the outputs back. Inputs must match the program's inputs exactly
(names, shapes, dtypes); every mismatch is reported at once. `Simulator` runs a program this
way, and a schedule runs each of its NPU segments this way (`segments.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from aitc.sim.checks import cap_error
from aitc.sim.engine import Scheduler, SimOptions
from aitc.sim.errors import SimulationError
from aitc.sim.execute import Memories
from aitc.sim.program import Program, TensorSpec
from aitc.sim.stats import SimStats, collect_stats
from aitc.sim.trace import TraceRecorder
from aitc.types import shape_str


@dataclass(frozen=True)
class SimResult:
    """Outputs by name, statistics, and the trace (None unless requested)."""

    outputs: dict[str, np.ndarray]
    stats: SimStats
    trace: dict[str, Any] | None = None


def run_program(
    program: Program, inputs: Mapping[str, np.ndarray], options: SimOptions, trace: bool = False
) -> SimResult:
    """Simulates one execution of `program` on fresh memories; raises `SimulationError` on bad
    inputs or a misbehaving program."""
    total = program.total_instructions
    if total > options.max_instructions:
        raise cap_error("instruction", total, options.max_instructions, "max_instructions")
    arrays = check_inputs(program.inputs, inputs)
    memories = Memories(program.target)
    dram = memories.arrays[0]
    for segment in program.consts:
        dram[segment.addr : segment.addr + segment.nbytes] = segment.data
    for spec in program.inputs:
        dram[spec.addr : spec.addr + spec.nbytes] = arrays[spec.name].reshape(-1).view(np.uint8)
    recorder = TraceRecorder() if trace else None
    scheduler = Scheduler(program, memories, options, recorder)
    cycles = scheduler.run()
    outputs = {spec.name: _read(dram, spec) for spec in program.outputs}
    trace_json = None
    if recorder is not None:
        trace_json = recorder.to_json(program.engines, program.target.clock_mhz, program.name)
    return SimResult(outputs, collect_stats(scheduler, cycles), trace_json)


def _read(dram: np.ndarray, spec: TensorSpec) -> np.ndarray:
    """A copy of output `spec` from DRAM, typed and shaped."""
    raw = dram[spec.addr : spec.addr + spec.nbytes].copy()
    return raw.view(spec.dtype).reshape(spec.shape)


def check_inputs(specs: tuple[TensorSpec, ...], inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Contiguous arrays for every input; all problems (missing, unknown, shape, dtype) at once."""
    problems, arrays = [], {}
    expected = {spec.name: spec for spec in specs}
    missing = [name for name in expected if name not in inputs]
    if missing:
        problems.append(f"missing input(s): {', '.join(repr(n) for n in missing)}")
    unknown = [name for name in inputs if name not in expected]
    if unknown:
        problems.append(f"unknown input(s): {', '.join(repr(n) for n in unknown)} (the program takes "
                        f"{', '.join(s.describe() for s in specs) or 'no inputs'})")  # fmt: skip
    for name, spec in expected.items():
        if name not in inputs:
            continue
        array = np.asarray(inputs[name])
        if array.shape != spec.shape:
            problems.append(
                f"input '{name}' has shape {shape_str(array.shape)}, "
                f"the program expects {shape_str(spec.shape)}"
            )
        elif array.dtype != spec.dtype:
            problems.append(f"input '{name}' has dtype {array.dtype}, the program expects {spec.dtype}")
        else:
            arrays[name] = np.ascontiguousarray(array)
    if problems:
        raise SimulationError(
            "input", problems, hint="inputs must match the program's hw.tensor inputs exactly"
        )
    return arrays
