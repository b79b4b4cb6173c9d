"""`Simulator`: decode once, run many times on fresh memories.

    sim = Simulator(module_or_program, target=None)    # target: Target, preset name, TOML path,
    result = sim.run({"x": x}, trace=True)             #   or None = the program's own `target`
    result.outputs["y"], result.stats, result.trace    # trace: Chrome/Perfetto JSON dict

A run of one program loads the `hw.const` segments and the inputs into a zeroed DRAM,
simulates every core (`engine.py`), and reads the outputs back. A module holding a schedule of
NPU and host segments (`aitc.dialects.exec`) runs them in order (`aitc.sim.segments`). Inputs
must match the program's inputs exactly (names, shapes, dtypes); every mismatch is reported at
once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from aitc.dialects.hw import ProgramOp
from aitc.interp.schedule import find_schedule
from aitc.sim.checks import cap_error
from aitc.sim.engine import Scheduler, SimOptions
from aitc.sim.errors import SimulationError
from aitc.sim.execute import Memories
from aitc.sim.program import Program, TensorSpec, decode_program, find_program
from aitc.sim.segments import SegmentedProgram
from aitc.sim.stats import SimStats, collect_stats
from aitc.sim.trace import TraceRecorder
from aitc.target import Target, load_target
from aitc.types import shape_str


@dataclass(frozen=True)
class SimResult:
    """Outputs by name, statistics, and the trace (None unless requested)."""

    outputs: dict[str, np.ndarray]
    stats: SimStats
    trace: dict[str, Any] | None = None


def resolve_target(program: ProgramOp, target: Target | str | Path | None) -> Target:
    """`target` itself, a preset name or TOML path, or (None) the program's `target` attribute."""
    if isinstance(target, Target):
        return target
    if target is None:
        if program.target is None:
            raise SimulationError("program", "the hw.program names no target; pass one")
        return load_target(program.target.data)
    return load_target(target)


class Simulator:
    """A decoded program bound to a target (see the module docstring)."""

    def __init__(
        self,
        program: ModuleOp | ProgramOp | Program,
        target: Target | str | Path | None = None,
        options: SimOptions | None = None,
    ):
        self.options = options or SimOptions()
        self.segmented: SegmentedProgram | None = None
        schedule = find_schedule(program) if isinstance(program, ModuleOp) else None
        if schedule is not None:
            assert isinstance(program, ModuleOp)
            self.segmented = SegmentedProgram(program, schedule, target, self.options)  # pyright: ignore
            self.target = self.segmented.target
            return
        if isinstance(program, Program):
            self.program = program
        else:
            op = find_program(program)
            self.program = decode_program(op, resolve_target(op, target))
        self.target = self.program.target

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        """The program's inputs, in declaration order."""
        return self.segmented.inputs if self.segmented else self.program.inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        """The program's outputs, in declaration order."""
        return self.segmented.outputs if self.segmented else self.program.outputs

    def run(self, inputs: Mapping[str, np.ndarray], trace: bool = False) -> SimResult:
        """Simulates one execution; raises `SimulationError` on bad inputs or a misbehaving program.
        A schedule runs its segments in order (`aitc.sim.segments`)."""
        if self.segmented is not None:
            return self.segmented.run(inputs, trace)
        total = self.program.total_instructions
        if total > self.options.max_instructions:
            raise cap_error("instruction", total, self.options.max_instructions, "max_instructions")
        arrays = check_inputs(self.program.inputs, inputs)
        memories = Memories(self.target)
        dram = memories.arrays[0]
        for segment in self.program.consts:
            dram[segment.addr : segment.addr + segment.nbytes] = segment.data
        for spec in self.program.inputs:
            dram[spec.addr : spec.addr + spec.nbytes] = arrays[spec.name].reshape(-1).view(np.uint8)
        recorder = TraceRecorder() if trace else None
        scheduler = Scheduler(self.program, memories, self.options, recorder)
        cycles = scheduler.run()
        outputs = {spec.name: _read(dram, spec) for spec in self.program.outputs}
        trace_json = None
        if recorder is not None:
            trace_json = recorder.to_json(self.program.engines, self.target.clock_mhz, self.program.name)
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
