"""`Simulator`: decode once, run many times on fresh memories.

    sim = Simulator(module_or_program, target=None)    # target: Target, preset name, TOML path,
    result = sim.run({"x": x}, trace=True)             #   or None = the program's own `target`
    result.outputs["y"], result.stats, result.trace    # trace: Chrome/Perfetto JSON dict

A run of one program loads the `hw.const` segments and the inputs into a zeroed DRAM,
simulates every core, and reads the outputs back (`run_program.py`). A module holding a
schedule of NPU and host segments (`aitc.dialects.exec`) runs them in order
(`aitc.sim.segments`). Inputs must match the program's inputs exactly (names, shapes, dtypes);
every mismatch is reported at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from aitc.collector import fewer_collections
from aitc.dialects.hw import ProgramOp
from aitc.interp.schedule import find_schedule
from aitc.sim.engine import SimOptions
from aitc.sim.errors import SimulationError
from aitc.sim.program import Program, TensorSpec, decode_program, find_program
from aitc.sim.run_program import SimResult, run_program
from aitc.sim.segments import SegmentedProgram
from aitc.target import Target, load_target


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
        verified: bool = False,
    ):
        """`verified`: the module was just verified (as compiling, parsing and loading a binary
        do), so decoding skips the op verifiers."""
        with fewer_collections():
            self._decode(program, target, options, verified)

    def _decode(
        self,
        program: ModuleOp | ProgramOp | Program,
        target: Target | str | Path | None,
        options: SimOptions | None,
        verified: bool,
    ) -> None:
        self.options = options or SimOptions()
        self.segmented: SegmentedProgram | None = None
        schedule = find_schedule(program) if isinstance(program, ModuleOp) else None
        if schedule is not None:
            assert isinstance(program, ModuleOp)
            self.segmented = SegmentedProgram(program, schedule, target, self.options, verified)
            self.target = self.segmented.target
            return
        if isinstance(program, Program):
            self.program = program
        else:
            op = find_program(program)
            self.program = decode_program(op, resolve_target(op, target), verified)
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
        """Simulates one execution (`run_program`); raises `SimulationError` on bad inputs or a
        misbehaving program. A schedule runs its segments in order (`aitc.sim.segments`)."""
        with fewer_collections():
            if self.segmented is not None:
                return self.segmented.run(inputs, trace)
            return run_program(self.program, inputs, self.options, trace)
