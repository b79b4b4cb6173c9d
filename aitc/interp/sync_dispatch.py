"""Dispatch for the sync interpreter (`aitc.interp.sync`): a function walked in program order
becomes one in-order stream of tasks per engine.

Index arithmetic (arith) is evaluated, scf.for (constant bounds) is unrolled, tile.kernel is
inlined, and buffers are created by the tile interpreter's functions (`tile.alloc` zeros,
`tile.const` copies, `tile.reshape` views). Each compute op (by its `sync.engine`) and sync op
(by its engine) is appended to its engine's stream with its operand values, the concrete start
of each window, and the enclosing loop indices (for messages).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from aitc.analysis.tile_footprint import Access, accesses, evaluate_index_op
from aitc.diagnostics import AitcError
from aitc.dialects import sync, tile
from aitc.interp.loops import LoopBudget
from aitc.interp.tile import describe, tile_interpreter

SYNC_OPS = (sync.SignalOp, sync.WaitOp, sync.BarrierOp)
SyncOp = sync.SignalOp | sync.WaitOp | sync.BarrierOp


@dataclass(eq=False)
class Task:
    """One dispatched op: a compute op with its operand values, or a sync op."""

    op: Operation
    args: tuple = ()
    loops: tuple[tuple[str, int], ...] = ()
    windows: tuple[tuple[Access, tuple[int, ...]], ...] = ()

    def describe(self, engine: str) -> str:
        where = "".join(f", {name} = {value}" for name, value in self.loops)
        return f"{describe(self.op)} on {engine}{' (' + where[2:] + ')' if where else ''}"


class Dispatcher:
    """Walks a function in program order and fills one in-order stream per engine."""

    def __init__(self, module: ModuleOp):
        self.budget = LoopBudget()
        self.interpreter = tile_interpreter(module, budget=self.budget)
        self.env: dict[SSAValue, np.ndarray | int] = {}
        """Buffers (arrays) and index values."""
        self.streams: dict[str, list[Task]] = {}
        self.windows: dict[Operation, list[Access]] = {}

    def run(self, function: func.FuncOp, args: Sequence[np.ndarray]) -> dict[str, list[Task]]:
        self.env.update(zip(function.body.block.args, args, strict=True))
        self.block(function.body.block, ())
        return self.streams

    def block(self, block: Block, loops: tuple[tuple[str, int], ...]) -> None:
        for op in block.ops:
            if isinstance(op, tile.KernelOp):
                self.block(op.body.block, loops)
            elif isinstance(op, scf.ForOp):
                self.loop(op, loops)
            elif isinstance(op, tile.AllocOp | tile.ConstOp | tile.ReshapeOp):
                args = tuple(self.env[v] for v in op.operands)
                (self.env[op.results[0]],) = self.interpreter.run_op(op, args)
            elif isinstance(op, (*tile.COMPUTE_OPS, *SYNC_OPS)):
                self.dispatch(op, loops)
            elif op.name.startswith("arith."):
                self.index_op(op)
            elif not isinstance(op, scf.YieldOp | func.ReturnOp):
                raise AitcError(f"{describe(op)}: the sync interpreter cannot run {op.name}")

    def index_op(self, op: Operation) -> None:
        operands = [(int(self.env[v]), int(self.env[v])) for v in op.operands]
        value = evaluate_index_op(op, operands) if len(op.results) == 1 else None
        if value is None:
            raise AitcError(f"{describe(op)}: the sync interpreter evaluates index arithmetic only")
        self.env[op.results[0]] = value[0]

    def loop(self, op: scf.ForOp, loops: tuple[tuple[str, int], ...]) -> None:
        if op.iter_args:
            raise AitcError(f"{describe(op)}: scf.for with iter_args is not a tile-level loop")
        first, stop, step = (int(self.env[v]) for v in (op.lb, op.ub, op.step))
        induction = op.body.block.args[0]
        name = f"%{induction.name_hint or 'i'}"
        for value in self.budget.iterations(op, first, stop, step):
            self.env[induction] = value
            self.block(op.body.block, (*loops, (name, value)))

    def dispatch(self, op: tile.WindowOp | SyncOp, loops: tuple[tuple[str, int], ...]) -> None:
        engine = sync.engine_of(op) if isinstance(op, tile.WindowOp) else op.engine_name()
        if engine is None:
            raise AitcError(f"{describe(op)} is not bound to an engine (run convert-tile-to-sync)")
        task = Task(op, loops=loops)
        if isinstance(op, tile.WindowOp):
            task.args = tuple(self.env[v] for v in op.operands)
            if op not in self.windows:
                self.windows[op] = accesses(op)
            task.windows = tuple(
                (access, tuple(int(self.env[i]) for i in access.indices)) for access in self.windows[op]
            )
        self.streams.setdefault(engine, []).append(task)
