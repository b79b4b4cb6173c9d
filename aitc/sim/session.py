"""`Session`: run a compiled program the way onnxruntime's `InferenceSession` runs a model.

    session = Session("model.mlir")                    # or .aitb, a ModuleOp or a hw.program
    [y] = session.run(None, {"x": x})                  # output_names=None: all outputs, in order
    session.last_result.stats                          # statistics of that run

Programs are loaded by file suffix through `PROGRAM_LOADERS` (suffix -> function returning a
module): `.mlir` text, or `.aitb` binaries through `aitc.binary.load_program`, which refuses a
binary assembled for a different target than the one given. A new container format is one entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from aitc.binary import load_program
from aitc.diagnostics import AitcError
from aitc.dialects.hw import ProgramOp
from aitc.files import read_text
from aitc.ir import parse_mlir, require_weights
from aitc.sim.engine import SimOptions
from aitc.sim.program import TensorSpec
from aitc.sim.run_program import SimResult
from aitc.sim.simulator import Simulator
from aitc.target import Target, load_target


def _load_mlir(path: Path, target: Target | None) -> ModuleOp:
    """Parses (and verifies) a .mlir file."""
    module = parse_mlir(read_text(path), str(path))
    require_weights(module)
    return module


def _load_binary(path: Path, target: Target | None) -> ModuleOp:
    """Disassembles a .aitb file (`aitc.binary`)."""
    return load_program(path, target)  # refuses a binary assembled for another target


PROGRAM_LOADERS: dict[str, Callable[[Path, Target | None], ModuleOp]] = {
    ".mlir": _load_mlir,
    ".aitb": _load_binary,
}
"""File suffix -> loader of a module holding one hw.program (given the target, if known)."""


def load_program_file(path: str | Path, target: Target | None = None) -> ModuleOp:
    """A module holding a hw.program, read from a `.mlir` or `.aitb` file."""
    path = Path(path)
    loader = PROGRAM_LOADERS.get(path.suffix)
    if loader is None:
        raise AitcError(f"{path}: unknown program file type (expected {', '.join(PROGRAM_LOADERS)})")
    return loader(path, target)  # reading it reports a missing file, a folder or a device


class Session:
    """A program ready to run on the simulator, onnxruntime style (see the module docstring)."""

    def __init__(
        self,
        source: str | Path | ModuleOp | ProgramOp,
        target: Target | str | Path | None = None,
        options: SimOptions | None = None,
    ):
        if target is not None and not isinstance(target, Target):
            target = load_target(target)
        loaded = not isinstance(source, ModuleOp | ProgramOp)  # then verified by loading
        module = load_program_file(source, target) if loaded else source
        self.simulator = Simulator(module, target, options, verified=loaded)
        self.last_result: SimResult | None = None

    def get_inputs(self) -> tuple[TensorSpec, ...]:
        """The program's inputs (name, shape, dtype, DRAM address)."""
        return self.simulator.inputs

    def get_outputs(self) -> tuple[TensorSpec, ...]:
        """The program's outputs (name, shape, dtype, DRAM address)."""
        return self.simulator.outputs

    def run(
        self, output_names: Sequence[str] | None, inputs: Mapping[str, np.ndarray], trace: bool = False
    ) -> list[np.ndarray]:
        """The requested outputs (all, in program order, when `output_names` is None)."""
        names = [spec.name for spec in self.simulator.outputs]
        wanted = list(output_names) if output_names is not None else names
        unknown = [n for n in wanted if n not in names]
        if unknown:
            raise AitcError(
                f"unknown output(s) {', '.join(map(repr, unknown))} (outputs: {', '.join(names)})"
            )
        self.last_result = self.simulator.run(inputs, trace=trace)
        return [self.last_result.outputs[name] for name in wanted]
