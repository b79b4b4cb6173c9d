"""The sync-level interpreter: engines run concurrently, and only semaphores order them.

This is the executable definition of `aitc.dialects.sync`, a mirror of the hw simulator's engine
model (`aitc/sim/engine.py`, `aitc/sim/checks.py`) one level up, without timing:

1. Dispatch (`sync_dispatch.py`). @main is walked in program order: index arithmetic is
   evaluated, scf.for (constant bounds) unrolled, tile.kernel inlined, buffers created as the
   tile interpreter creates them, and every compute op (by its `sync.engine`) and sync op (by
   its engine) appended, with its concrete index values, to its engine's in-order stream.
2. Execution. An adversarial but deterministic schedule: engines are visited in a fixed order
   (`order`), each running as far ahead as its semaphore waits allow, until no engine can
   move. A missing wait thus lets a consumer run before its producer, or a producer overwrite
   data that an engine visited later still needs. Compute ops apply the tile interpreter's
   numpy semantics (`aitc.interp.tile.TileFunctions`, through `Interpreter.run_op`) when they run.
3. Checks. Semaphores are counters with a FIFO of signal units carrying the signaller's vector
   clock; a wait takes `count` units and joins their clocks (as `RaceDetector`). Every window
   is a set of byte intervals of its storage (`aitc.analysis.tile_footprint`: views and
   plan-memory's shared bytes alias); two engines touching a common byte, one writing, without
   a happens-before path is a race. A race, or a deadlock (engines left, all blocked on waits),
   is an AitcError naming the ops, their kernels, locations and loop indices. So is a program
   that ends with a semaphore above 0: its protocol is unbalanced (a signal without its wait),
   and a later user of that semaphore (another program, or a reused id) would pass a wait early.

`sync.barrier` orders engines across cores; a function is one core, so it only ticks its engine.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp

from aitc.analysis.access_log import PRUNE_MIN, AccessLog, Intervals
from aitc.analysis.signature import check_inputs, entry_function, is_output_arg, output_names
from aitc.analysis.tile_footprint import Access, window_bytes
from aitc.analysis.vector_clock import SignalUnits
from aitc.diagnostics import AitcError
from aitc.dialects import sync, tile
from aitc.interp.sync_dispatch import SYNC_OPS, Dispatcher, Task
from aitc.types import numpy_dtype

RACE_HINT = "order the two ops: sync.signal after the first on its engine, sync.wait before the second on its"


@dataclass
class SyncRun:
    """What a run produced: outputs by name, final semaphore values, ops run per engine."""

    outputs: dict[str, np.ndarray]
    semaphores: dict[int, int] = field(default_factory=dict)
    executed: dict[str, int] = field(default_factory=dict)


# --------------------------------------------------------------------------- race checks


class RaceChecker:
    """Vector clocks per engine and read/write logs per storage (the simulator's algorithm)."""

    def __init__(self, engines: Sequence[str]):
        self.engines = list(engines)
        self.clocks = np.zeros((len(engines), len(engines)), np.int64)
        self.storages: dict[Hashable, tuple[AccessLog, AccessLog, str]] = {}
        self.refs: list[tuple[Task, str, Access]] = []
        self.active = np.ones(len(engines), bool)

    def access(self, engine: int, task: Task) -> None:
        """Checks every window of a compute task against earlier unordered accesses, then logs it."""
        self.clocks[engine, engine] += 1
        clock = self.clocks[engine]
        for access, starts in task.windows:
            intervals = Intervals.of(*window_bytes(access.view, [(s, s) for s in starts], access.box))
            reads, writes, _ = self._logs(access)
            self.refs.append((task, self.engines[engine], access))
            ref = len(self.refs) - 1
            found = writes.conflict(clock, intervals)
            if found is None and access.write:
                found = reads.conflict(clock, intervals)
            if found is not None:
                raise self._race(access, ref, found)
            log = writes if access.write else reads
            log.add(intervals, engine, int(clock[engine]), ref)
            if log.size > PRUNE_MIN:
                self._prune(reads, writes)

    def _logs(self, access: Access) -> tuple[AccessLog, AccessLog, str]:
        view = access.view
        if view.storage not in self.storages:
            name = view.name if not isinstance(view.storage, str) else f"{view.storage} (at {view.name})"
            self.storages[view.storage] = (AccessLog(), AccessLog(), name)
        return self.storages[view.storage]

    def _prune(self, reads: AccessLog, writes: AccessLog) -> None:
        live = self.clocks[self.active]
        frontier = live.min(axis=0) if len(live) else np.full(len(self.engines), np.iinfo(np.int64).max)
        reads.prune(frontier)
        writes.prune(frontier)

    def _race(self, access: Access, ref: int, found: tuple[int, int, int]) -> AitcError:
        earlier, first, end = found
        name = self._logs(access)[2]
        lines = [f"data race on {name}, bytes [0x{first:x}, 0x{end:x}): two engines access them with no "
                 "semaphore ordering the accesses"]  # fmt: skip
        for index in (earlier, ref):
            task, engine, window = self.refs[index]
            lines.append(
                f"  {'write' if window.write else 'read '} '{window.name}' of {task.describe(engine)}"
            )
        return AitcError(lines, hint=RACE_HINT)


# --------------------------------------------------------------------------- execution


class Engines:
    """Runs the streams concurrently under the fixed visiting order."""

    def __init__(self, streams: Mapping[str, list[Task]], dispatcher: Dispatcher, order: Sequence[str]):
        self.order = [e for e in order if e in streams] + sorted(e for e in streams if e not in order)
        self.streams, self.dispatcher = streams, dispatcher
        self.position = dict.fromkeys(self.order, 0)
        self.checker = RaceChecker(self.order)
        self.values: dict[int, int] = {}
        self.units = SignalUnits()

    def run(self) -> None:
        moved = True
        while moved:
            moved = False
            for index, engine in enumerate(self.order):
                moved |= self._advance(index, engine)
        if any(self.position[e] < len(self.streams[e]) for e in self.order):
            raise self._deadlock()
        left = {s: v for s, v in sorted(self.values.items()) if v}
        if left:
            values = ", ".join(f"semaphore {s} = {v}" for s, v in left.items())
            raise AitcError(
                f"unbalanced semaphores: {values} at the end of the program (more signals than waits)",
                hint="every semaphore must end at 0, or a later wait on it would pass without its signal",
            )

    def _advance(self, index: int, engine: str) -> bool:
        stream, start = self.streams[engine], self.position[engine]
        position = start
        while position < len(stream) and self._step(index, stream[position]):
            position += 1
        self.position[engine] = position
        self.checker.active[index] = position < len(stream)
        return position > start

    def _step(self, engine: int, task: Task) -> bool:
        """Runs `task` on `engine` unless it is a wait that cannot pass yet."""
        op, clock = task.op, self.checker.clocks[engine]
        if isinstance(op, sync.WaitOp):
            semaphore, count = op.semaphore(), op.amount()
            if self.values.get(semaphore, 0) < count:
                return False
            self.values[semaphore] -= count
            self.units.wait(semaphore, count, clock)
        elif isinstance(op, sync.SignalOp):
            clock[engine] += 1
            self.values[op.semaphore()] = self.values.get(op.semaphore(), 0) + op.amount()
            self.units.signal(op.semaphore(), clock, op.amount())
        elif isinstance(op, sync.BarrierOp):
            clock[engine] += 1
        else:
            self.checker.access(engine, task)
            self.dispatcher.interpreter.run_op(op, task.args)
        return True

    def _deadlock(self) -> AitcError:
        lines = ["deadlock: every engine with ops left is blocked on a sync.wait"]
        for engine in self.order:
            stream, position = self.streams[engine], self.position[engine]
            if position == len(stream):
                lines.append(f"  {engine}: finished")
                continue
            task = stream[position]
            assert isinstance(task.op, sync.WaitOp)
            value = self.values.get(task.op.semaphore(), 0)
            lines.append(
                f"  {engine}: blocked (semaphore {task.op.semaphore()} = {value}, needs "
                f"{task.op.amount()}) at {task.describe(engine)}; {len(stream) - position - 1} op(s) after it"
            )
        values = ", ".join(f"{s} = {v}" for s, v in sorted(self.values.items()) if v) or "all 0"
        lines.append(f"  semaphores: {values}")
        return AitcError(lines, hint="every sync.wait needs sync.signal counts that some engine reaches")


# --------------------------------------------------------------------------- entry points

DEFAULT_ORDER = ("dma0", "dma1", "dma2", "dma3", "matrix", "vector")


def _arguments(function: func.FuncOp, inputs: Mapping[str, np.ndarray]) -> tuple[list, list]:
    """The entry's buffers: copies of the inputs, zeroed outputs (`tile.output`)."""
    types = function.function_type.inputs.data
    if function.function_type.outputs.data or not all(isinstance(t, MemRefType) for t in types):
        raise AitcError(f"@{function.sym_name.data} is not a sync-level function (buffers in, no results)")
    given = iter(check_inputs(function, inputs))
    args, outputs = [], []
    for index, type_ in enumerate(types):
        assert isinstance(type_, MemRefType)
        if is_output_arg(function, index):
            outputs.append(np.zeros(type_.get_shape(), numpy_dtype(type_.get_element_type())))
            args.append(outputs[-1])
        else:
            args.append(np.array(next(given), order="C"))
    return args, outputs


def run_sync(
    module: ModuleOp,
    inputs: Mapping[str, np.ndarray],
    entry: str | None = None,
    order: Sequence[str] = DEFAULT_ORDER,
) -> SyncRun:
    """Runs the sync-level entry function (see the module docstring); raises AitcError on a race or
    a deadlock."""
    function = entry_function(module, entry)
    args, outputs = _arguments(function, inputs)
    dispatcher = Dispatcher(module)
    engines = Engines(dispatcher.run(function, args), dispatcher, order)
    engines.run()
    executed = {engine: len(stream) for engine, stream in engines.streams.items()}
    return SyncRun(dict(zip(output_names(function), outputs, strict=True)), engines.values, executed)


def run_sync_module(
    module: ModuleOp, inputs: Mapping[str, np.ndarray], entry: str | None = None
) -> dict[str, np.ndarray]:
    """The outputs of the sync-level entry function, by name (`run_sync` for the details)."""
    return run_sync(module, inputs, entry).outputs


def is_sync_level(function: func.FuncOp) -> bool:
    """Whether `function` is sync-level IR, run by this interpreter: it holds sync ops, or every
    compute op is bound to an engine (convert-tile-to-sync's legality). A function with only some
    ops bound is still tile level (the tile interpreter ignores `sync.engine`)."""
    compute = [op for op in function.walk() if isinstance(op, tile.COMPUTE_OPS)]
    if any(isinstance(op, SYNC_OPS) for op in function.walk()):
        return True
    return bool(compute) and all(sync.ENGINE_ATTR in op.attributes for op in compute)
