"""Run a module at any level on numpy inputs: the one entry point of `aitc run` and the tests.

Graph-level functions run on the graph interpreter (`aitc.interp.graph`). Tile-level functions
take buffers (memrefs) in destination-passing style: inputs first, then the output buffers,
marked with the unit arg attribute `tile.output` (`aitc.analysis.signature`); `run_module`
hands those to `aitc.interp.tile`, or to `aitc.interp.sync` once the function is sync level
(sync ops, or every compute op bound to an engine by `sync.engine`). A schedule of segments
(`aitc.dialects.exec`) runs its host segments on the graph interpreter and its NPU segments by
their level: the interpreters, or the simulator for a hw.program. That is why this module sits
above both the interpreters and the simulator (see test/python/test_layering.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from aitc.analysis.signature import (
    check_inputs,
    entry_function,
    input_names,
    input_types,
    is_output_arg,
    is_tile_level,
    output_names,
)
from aitc.diagnostics import AitcError
from aitc.dialects import exec as exec_dialect
from aitc.dialects import hw
from aitc.interp.schedule import HostRunner, RunNpu, run_schedule
from aitc.interp.shard import run_spmd, spmd_grid
from aitc.interp.sync import is_sync_level, run_sync_module
from aitc.interp.tile import run_tile_module
from aitc.sim.simulator import Simulator
from aitc.types import numpy_dtype, shape_and_element

__all__ = [
    "entry_function", "input_names", "is_output_arg", "output_names", "random_inputs", "random_tensor",
    "run_module", "run_npu_reference",
]  # fmt: skip
"""The signature helpers are `aitc.analysis.signature`'s, importable from here too."""


def random_tensor(rng: np.random.Generator, shape: Sequence[int], dtype: np.dtype) -> np.ndarray:
    """Test data: standard normal floats, 0/1 booleans, small integers in [-4, 4]."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    low = 0 if dtype.kind == "u" else -4
    return rng.integers(low, 5, shape).astype(dtype)


def random_program_inputs(specs, seed: int) -> dict[str, np.ndarray]:
    """Seeded random inputs (`random_tensor`) for a hw program's input specs (each with a
    name, shape and dtype: `aitc.sim.Simulator.inputs`)."""
    rng = np.random.default_rng(seed)
    return {spec.name: random_tensor(rng, spec.shape, spec.dtype) for spec in specs}


def random_inputs(f: func.FuncOp, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded random inputs for every argument of `f`, by model input name."""
    rng = np.random.default_rng(seed)
    types = [shape_and_element(t) for t in input_types(f)]
    return {
        name: random_tensor(rng, shape, numpy_dtype(element))
        for name, (shape, element) in zip(input_names(f), types, strict=True)
    }


def run_module(
    module: ModuleOp,
    inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray],
    entry: str | None = None,
) -> dict[str, np.ndarray]:
    """Executes `module` (graph, tile or sync level, or a schedule of segments at any level)
    and returns its outputs by name."""
    f = entry_function(module, entry)
    if not isinstance(inputs, Mapping):
        inputs = dict(zip(input_names(f), inputs, strict=True))
    if exec_dialect.is_schedule(f):
        results = run_schedule(module, f, check_inputs(f, inputs), run_npu_reference(module))
        return dict(zip(output_names(f), results, strict=True))
    if is_tile_level(f):
        if is_sync_level(f):
            return run_sync_module(module, inputs, f.sym_name.data)
        return run_tile_module(module, inputs, f.sym_name.data)
    grid = spmd_grid(f)
    if grid is not None:
        return run_spmd_whole(module, f, inputs, grid.size)
    results = HostRunner(module)(f, check_inputs(f, inputs))
    return dict(zip(output_names(f), results, strict=True))


def holds_hw_program(module: ModuleOp) -> bool:
    """Whether the simulator runs `module`: it holds hw.programs (and, if a schedule, no NPU
    segment above hw level)."""
    programs = any(isinstance(op, hw.ProgramOp) for op in module.ops)
    return programs and not any(exec_dialect.lowered_here(op) for op in module.ops)


def run_any_level(module: ModuleOp, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The outputs of `module` at whatever level it is: hw programs on the simulator (a
    schedule's host segments on the host), anything above on aitc's interpreters."""
    if holds_hw_program(module):
        return Simulator(module).run(inputs).outputs
    return run_module(module, inputs)


def run_spmd_whole(
    module: ModuleOp, f: func.FuncOp, inputs: Mapping[str, np.ndarray], cores: int
) -> dict[str, np.ndarray]:
    """A per-core (SPMD) function as `shard-partition` makes it: every core gets the whole
    inputs and returns the whole outputs; they must agree (bit for bit), and core 0's are the
    result."""
    per_core = run_spmd(module, [inputs] * cores, f.sym_name.data)
    for core, outputs in enumerate(per_core[1:], start=1):
        for name, value in outputs.items():
            if not np.array_equal(value, per_core[0][name], equal_nan=True):
                raise AitcError(
                    f"@{f.sym_name.data} is per-core (SPMD) but core {core} returns another '{name}' than "
                    "core 0: its results are not whole on every core (all_gather or all_reduce them)"
                )
    return per_core[0]


def run_npu_reference(module: ModuleOp) -> RunNpu:
    """Runs NPU segments at graph, tile or sync level with aitc's interpreters, and hw.programs
    on the simulator."""

    def run(call: exec_dialect.CallOp, callee: Operation, args: list[np.ndarray]) -> list[np.ndarray]:
        if isinstance(callee, func.FuncOp):
            named = dict(zip(input_names(callee), args, strict=True))
            return list(run_module(module, named, callee.sym_name.data).values())
        assert isinstance(callee, hw.ProgramOp)  # an NPU segment is a function or an hw.program
        simulator = Simulator(callee)
        named = dict(zip((spec.name for spec in simulator.inputs), args, strict=True))
        return list(simulator.run(named).outputs.values())

    return run
