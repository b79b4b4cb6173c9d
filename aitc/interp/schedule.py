"""Running a schedule (`aitc.dialects.exec`): host segments on the numpy reference kernels,
NPU segments by whatever runs their level.

    outputs = run_schedule(module, schedule, [x, mask], run_npu)

`run_npu(call, callee, args)` runs one NPU segment (a function at graph, tile or sync level,
or a hw.program) on the positional hand-over tensors and returns its outputs in order;
`aitc.interp.run` passes `run_npu_reference` (the interpreters, and the simulator for
hw.programs), the simulator its own (`aitc.sim.segments`). Host segments always
run here, on `HostRunner` (the graph interpreter), exactly as the runtime runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter
from xdsl.interpreters.func import FuncFunctions
from xdsl.ir import Operation, SSAValue

from aitc.diagnostics import AitcError
from aitc.dialects import exec as exec_dialect
from aitc.interp.graph import GraphFunctions
from aitc.interp.shard import ShardFunctions

RunNpu = Callable[[exec_dialect.CallOp, Operation, list[np.ndarray]], list[np.ndarray]]


def find_schedule(module: ModuleOp, name: str | None = None) -> func.FuncOp | None:
    """The schedule function (`name`, else the only one), or None if the module has none."""
    schedules = [op for op in module.ops if exec_dialect.is_schedule(op)]
    if name is not None:
        schedules = [f for f in schedules if isinstance(f, func.FuncOp) and f.sym_name.data == name]
    return schedules[0] if len(schedules) == 1 else None


def calls(schedule: func.FuncOp) -> list[exec_dialect.CallOp]:
    """The segment calls of a schedule, in order."""
    return [op for op in schedule.body.block.ops if isinstance(op, exec_dialect.CallOp)]


def callee_of(module: ModuleOp, call: exec_dialect.CallOp) -> Operation:
    """The function or hw.program a call runs (the verifier guarantees it exists)."""
    callee = exec_dialect.lookup(module, call.callee_name)
    if callee is None:
        raise AitcError(f"exec.call: no segment @{call.callee_name} in the module")
    return callee


class HostRunner:
    """Runs host segment functions with the graph interpreter (one per module)."""

    def __init__(self, module: ModuleOp):
        self.interpreter = Interpreter(module)
        self.interpreter.register_implementations(FuncFunctions())
        self.interpreter.register_implementations(GraphFunctions())
        self.interpreter.register_implementations(ShardFunctions())

    def __call__(self, function: func.FuncOp, args: list[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(r) for r in self.interpreter.call_op(function, tuple(args))]


def run_schedule(
    module: ModuleOp,
    schedule: func.FuncOp,
    args: Sequence[np.ndarray],
    run_npu: RunNpu,
    run_host: Callable[[func.FuncOp, list[np.ndarray]], list[np.ndarray]] | None = None,
) -> list[np.ndarray]:
    """Runs every segment in order and returns the schedule's results (`run_host` defaults to
    a `HostRunner` of the module)."""
    run_host = run_host or HostRunner(module)
    values: dict[SSAValue, np.ndarray] = dict(zip(schedule.body.block.args, args, strict=True))
    for call in calls(schedule):
        callee = callee_of(module, call)
        inputs = [values[v] for v in call.arguments]
        if call.placement.data == "host":
            assert isinstance(callee, func.FuncOp)
            outputs = run_host(callee, inputs)
        else:
            outputs = run_npu(call, callee, inputs)
        values.update(zip(call.res, outputs, strict=True))
    ret = schedule.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    return [values[v] for v in ret.arguments]
