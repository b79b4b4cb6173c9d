"""`schedule-engines`: the order of a straight-line run of ops, chosen for the engines that run them.

Each engine (a DMA queue, the matrix engine, the vector engine) executes its ops in program
order, so the order the lowering emits them in is the order each engine gets. That order is a
kernel's dataflow, op after op; across two independent pieces of work it serialises what the
engines could overlap. A fused attention tile is the typical case (two query tiles a, b of one
head, rotated buffers, as multi-buffer leaves them):

    emitted                                 scheduled
    matrix:  QK_a  PV_a  QK_b  PV_b         matrix:  QK_a  QK_b  PV_a  PV_b
    vector:  softmax_a  O_a  softmax_b ..   vector:  softmax_a  softmax_b ..  O_a  ..

With the emitted order PV_a waits for softmax_a, QK_b waits for PV_a, and softmax_b waits for
QK_b: the vector engine idles for two matmul groups per tile. Scheduled, QK_b runs while the
vector engine is still busy with softmax_a.

Runs. A run is a maximal sequence of compute ops of one block, with the pure index and view
ops among them (`arith`, `tile.reshape`); loops, kernels, allocations and anything else end a
run, so nothing moves across them. The pure ops of a run go first, in their order (compute ops
produce no values, so every operand stays defined before its use), then the compute ops in the
scheduled order.

Schedule. Compute ops depend on each other when they touch a common byte and one writes
(`aitc.analysis.tile_footprint`, over every iteration of the enclosing loops, plan-memory's
shared bytes included: conservative). List scheduling: each op costs what the cost model charges
(`tile_to_sync`'s busy cycles), starts once its engine is free and the ops it depends on have
ended; the next op taken is the ready one that can start first, ties to program order. With
no gain to be had (every op of a run on one engine, or a chain), the order stays as emitted.

Loop bodies. A run that is a whole loop body also depends on itself across the back edge: the
load into a rotated buffer copy waits for the previous trip's reads of that copy. Scheduled as
if each trip started from idle engines, a load into the copy read last (ready at the start)
could take a DMA queue ahead of the load into the copy read first, and then hold it up behind
it on the in-order queue. So a loop body is scheduled twice: once as above, then with each
DMA op released at the end of its back-edge predecessors in that first order less the trip's
period (when the previous trip would let it start: negative for a copy read early in the
trip). The period is the busiest engine's work per trip, the pace of trips that overlap, not
the first order's makespan, which counts the trip's fill and drain: a fused attention's value
tile read by the trip's last matmuls was released at once and took dma0 ahead of the next
query tile, which the trip needs first (MiniLM-L6: 3,498 cycles).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from aitc.analysis.tile_footprint import Access, StaticIndexRanges, access_bytes, accesses, trip_count
from aitc.dialects import sync, tile
from aitc.module_target import module_target
from aitc.passes.legality import check_all_bound
from aitc.passes.sync.insert_semaphores.dependences import Hull
from aitc.passes.tile_to_sync import busy_cycles
from aitc.target import Target


def _pure(op: Operation) -> bool:
    """An index or view op a run may hoist: no memory effect, no region."""
    return isinstance(op, tile.ReshapeOp) or (op.dialect_name() == "arith" and not op.regions)


def runs(block: Block) -> list[list[Operation]]:
    """The runs of `block` that hold at least two compute ops (module docstring)."""
    found: list[list[Operation]] = []
    current: list[Operation] = []
    for op in block.ops:
        if isinstance(op, tile.COMPUTE_OPS) or (_pure(op) and current):
            current.append(op)
            continue
        found.append(current)
        current = [op] if _pure(op) else []
    found.append(current)
    return [run for run in found if sum(isinstance(op, tile.COMPUTE_OPS) for op in run) >= 2]


@dataclass
class _Item:
    op: tile.WindowOp
    index: int
    engine: str
    cycles: int
    after: list[int]  # indices of the earlier ops it depends on
    touches: list[tuple[Hashable, bool, Hull]]  # (storage, writes, bytes) of each access


def _items(ops: list[tile.WindowOp], target: Target) -> list[_Item]:
    """The ops with their engines, costs and dependences: per storage, the live earlier reads
    (for a write) and writes (for any access) whose bytes meet this one's (`Hull`: byte hulls
    first). A write whose window is the same in every iteration (exact) ends the
    accesses it covers: a later op touching their bytes touches the write's, which is ordered
    after them."""
    ranges = StaticIndexRanges()
    live: dict[tuple[Hashable, bool], list[tuple[int, Hull]]] = {}
    items = []
    for j, op in enumerate(ops):
        after: set[int] = set()
        mine = []
        for access in accesses(op):
            hull = Hull.of(access_bytes(access, ranges))
            storage = access.view.storage
            for writes in (True, False) if access.write else (True,):
                after.update(
                    i for i, other in live.get((storage, writes), ()) if i not in after and hull.meets(other)
                )
            mine.append((access, hull))
        for access, hull in mine:
            storage = access.view.storage
            if access.write and _exact(access, ranges):
                for writes in (True, False):
                    records = live.get((storage, writes), [])
                    records[:] = [r for r in records if not _covers(hull, r[1])]
            live.setdefault((storage, access.write), []).append((j, hull))
        engine = sync.engine_of(op)
        assert engine is not None
        touches = [(access.view.storage, access.write, hull) for access, hull in mine]
        items.append(_Item(op, j, engine, busy_cycles(op, target), sorted(after), touches))
    return items


def _covers(write: Hull, other: Hull) -> bool:
    """Whether every byte of `other` lies in `write`'s runs."""
    if not (write.low <= other.low and other.end <= write.end):
        return False
    if write.single:
        return True
    starts, ends = write.bytes
    at = np.searchsorted(starts, other.bytes[0], side="right") - 1
    return bool((at >= 0).all() and (other.bytes[1] <= ends[at]).all())


def _exact(access: Access, ranges: StaticIndexRanges) -> bool:
    """Whether `access`'s window is the same in every iteration of its loops."""
    return all((r := ranges(index)) is not None and r[0] == r[1] for index in access.indices)


def schedule(items: list[_Item], release: dict[int, int] | None = None) -> tuple[list[int], dict[int, int]]:
    """The order of `items` (indices) by list scheduling (module docstring), and when each
    ends; an item of `release` starts no earlier than its release (which may be negative:
    before the run's start, as a loop body's next trip may start an op)."""
    release = release or {}
    ends: dict[int, int] = {}
    free: dict[str, int] = {}
    order: list[int] = []
    waiting = list(range(len(items)))
    floor = min([0, *release.values()])
    while waiting:
        ready = [i for i in waiting if all(d in ends for d in items[i].after)]
        starts = {
            i: max([free.get(items[i].engine, floor), release.get(i, 0), *(ends[d] for d in items[i].after)])
            for i in ready
        }
        pick = min(ready, key=lambda i: (starts[i], i))
        ends[pick] = starts[pick] + items[pick].cycles
        free[items[pick].engine] = ends[pick]
        order.append(pick)
        waiting.remove(pick)
    return order, ends


def _carried(items: list[_Item]) -> dict[int, list[int]]:
    """In a loop body: per DMA op, the later ops of the body it depends on across the loop's
    back edge (touching a common byte, one writing: the previous trip's op must end first),
    e.g. the load into a rotated copy on the previous trip's last reads of that copy."""
    carried: dict[int, list[int]] = {}
    for j, item in enumerate(items):
        if not item.engine.startswith("dma"):
            continue
        for i in range(j + 1, len(items)):
            if any(
                s == t and (w or v) and h.meets(g) for s, w, h in item.touches for t, v, g in items[i].touches
            ):
                carried.setdefault(j, []).append(i)
    return carried


def loop_schedule(items: list[_Item]) -> list[int]:
    """The order of a run that is a whole loop body (module docstring, "Loop bodies")."""
    order, ends = schedule(items)
    carried = _carried(items)
    if not carried:
        return order
    busy: dict[str, int] = {}
    for item in items:
        busy[item.engine] = busy.get(item.engine, 0) + item.cycles
    period = max(busy.values())  # a trip's pace once trips overlap: its busiest engine's work
    release = {j: max(ends[i] for i in preds) - period for j, preds in carried.items()}
    return schedule(items, release)[0]


def schedule_run(run: list[Operation], target: Target) -> bool:
    """Reorders one run in place; whether anything moved."""
    compute = [op for op in run if isinstance(op, tile.COMPUTE_OPS)]
    pure = [op for op in run if not isinstance(op, tile.COMPUTE_OPS)]
    items = _items(compute, target)
    order = loop_schedule(items) if _whole_body(run) else schedule(items)[0]
    if order == list(range(len(compute))) and run[: len(pure)] == pure:
        return False
    anchor = run[-1].next_op
    block = run[-1].parent_block()
    assert block is not None
    for op in run:
        op.detach()
    point = InsertPoint.before(anchor) if anchor is not None else InsertPoint.at_end(block)
    Rewriter.insert_op([*pure, *(compute[i] for i in order)], point)
    return True


def _whole_body(run: list[Operation]) -> bool:
    """Whether `run` is all of a loop body that repeats (its ops but the yield)."""
    block = run[0].parent_block()
    if block is None or not isinstance(loop := block.parent_op(), scf.ForOp) or trip_count(loop) in (0, 1):
        return False
    return len(run) == len(block.ops) - 1


def inline_single_trips(function: func.FuncOp) -> int:
    """Replaces each scf.for of `function` that runs exactly once by its body (the induction
    variable by the lower bound), so its ops join the runs around it; how many."""
    loops = [op for op in function.walk() if isinstance(op, scf.ForOp)]
    inlined = 0
    for loop in reversed(loops):  # innermost first
        if trip_count(loop) != 1 or loop.iter_args:
            continue
        body = loop.body.block
        body.args[0].replace_all_uses_with(loop.lb)
        for op in list(body.ops):
            if isinstance(op, scf.YieldOp):
                continue
            op.detach()
            Rewriter.insert_op(op, InsertPoint.before(loop))
        loop.detach()
        loop.erase()
        inlined += 1
    return inlined


def schedule_function(function: func.FuncOp, target: Target) -> int:
    """Schedules every run of `function` (after inlining the loops that run once); how many
    runs moved."""
    inline_single_trips(function)
    blocks = [region.block for op in function.walk() for region in op.regions if region.blocks]
    return sum(schedule_run(run, target) for block in blocks for run in runs(block))


@dataclass(frozen=True)
class ScheduleEnginesPass(ModulePass):
    """Orders each straight-line run of compute ops for the engines that run them.

    Input:
      Tile-level functions whose compute ops are bound to engines (convert-tile-to-sync), with
      no sync ops yet (the order is insert-semaphores' to synchronise).
      The target: the module's `aitc.target`, else the `target` option (`aitc.module_target`).
    Output:
      The same ops; within each run (a block's consecutive compute ops and the index and view
      ops among them) the index and view ops first, then the compute ops in list-schedule
      order (module docstring).
    Invariants:
      Every pair of ops that touch a common byte, one writing, keeps its order, so every level
      computes what it did; nothing moves across a loop, a kernel or an allocation; the same
      input gives the same order.
    """

    name = "schedule-engines"
    target: str | None = None
    """A preset name or FILE.toml, for a module without `aitc.target` (`aitc.module_target`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op, self.target, self.name)
        check_all_bound(op, self.name)
        for function in op.walk():
            if isinstance(function, func.FuncOp) and function.body.blocks:
                schedule_function(function, target)
