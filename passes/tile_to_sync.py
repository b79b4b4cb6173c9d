"""`convert-tile-to-sync`: binds every tile compute op to the engine queue that executes it.

    tile.copy %x[..] to %a[..] ...                   tile.copy ... {sync.engine = "dma0"}   load
    tile.matmul %a[..], %b[..] to %acc[..] ...  ==>  tile.matmul ... {sync.engine = "matrix"}
    tile.acc_read %acc[..] to %y[..] ...             tile.acc_read ... {sync.engine = "vector"}
    tile.copy %y[..] to %out[..] ...                 tile.copy ... {sync.engine = "dma1"}   store

DMA ops (copy, transpose, gather) of a kernel are spread over the target's DMA queues
(`aitc.analysis.dma.spread_queues`): stores on dma1, every other one, the busiest first (its
instructions' cycles times its trip count), on the least busy queue, except that a DRAM read
that would queue behind one of the kernel's stores (after its first store, or in a loop that
stores) stays off dma1, unless it sits in a loop of its own that stores nothing and waits for
its loads (they keep one queue busier than its matrix or vector ops keep their engine: a
direct conv's chunk loads inside its output-tile loop): it then meets a store only when that
loop starts, and the loop gains more from the second queue than it loses there; or unless the
kernel's stores are light (`LIGHT_STORES`), when waiting behind them costs little, except for a
read at the start of a storing loop's trip that has a loop of reads inside (a block's peeled
first K step) when the loop's stores per trip take longer than the read: the trip's first
compute needs it, and on dma1 it would load only after the previous trip's stores. The DMA
ops of a loop that moves data alone (no loop nested in it does, `_moves_alone`) are balanced
among themselves first, since its trips repeat them together: a direct conv's chunk loop,
unrolled by 2, used to put three of its four loads on dma0 (its peeled loads had left dma1
the less busy queue over the kernel). An on-chip copy that completes the buffer a DRAM read of
its block fills (a stage's zero padding) follows that read onto its queue unless the loop
waits for its loads: on dma1 it would queue behind the previous block's store, which waits for
that block's compute, and the next block's compute would wait for it (a 64-channel 3x3 conv
channels last on 56 x 56: 2,617 idle matrix cycles per block). Any other on-chip copy of
loaded data for the compute (an im2col tap, a merged patch) stays off dma1 like a load, unless
its loop loads and copies for more than `COPY_BOUND` times its compute and spreading can pay
(`_splits_copies`: the loop is multi-buffered, or has two copies or more a trip). Outside a
kernel: loads dma0, stores dma1, on-chip copies dma2 (dma0 on a two-queue target). matmul runs
on the matrix engine, every other compute op on the vector engine (`tile.ENGINE_OF`).

Binding alone orders nothing across engines: `insert-semaphores` adds that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeGuard

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from aitc.analysis.dma import Transfer, dma_queue, spread_queues
from aitc.analysis.tile_footprint import trip_count
from aitc.dialects import sync, tile
from aitc.module_target import module_target
from aitc.passes.graph_to_tile.costs import (
    COPY_BOUND,
    LIGHT_STORES,
    dma_instruction_cycles,
    dma_transfers,
    matmul_cycles,
    vector_cycles,
)
from aitc.passes.legality import check_all_bound, fail
from aitc.passes.tile.multi_buffer import DEPTH_ATTR
from aitc.target import Target
from aitc.types import element_bytes


def engine_for(op: tile.WindowOp, target: Target) -> str:
    """The engine `op` runs on for `target` (its class: `tile.engine_class`; a copy, transpose or
    gather goes to the queue `aitc.analysis.dma.dma_queue` picks for its memory spaces)."""
    kind = tile.engine_class(op)
    if kind != "dma":
        return kind
    source, destination = op.accesses()[0][0], op.accesses()[-1][0]
    return dma_queue(tile.space_of(source), tile.space_of(destination), target.dma.queues)


def _is_dma(op: Operation) -> TypeGuard[tile.WindowOp]:
    return isinstance(op, tile.COMPUTE_OPS) and tile.engine_class(op) == "dma"


def _writes_dram(op: tile.WindowOp) -> bool:
    return tile.space_of(op.accesses()[-1][0]) == "dram"


def _reads_dram(op: tile.WindowOp) -> bool:
    return tile.space_of(op.accesses()[0][0]) == "dram"


def _parents(op: Operation, kernel: tile.KernelOp) -> list[Operation]:
    """The ops around `op` inside `kernel` (its loops), innermost first."""
    parents, parent = [], op.parent_op()
    while parent is not None and parent is not kernel:
        parents.append(parent)
        parent = parent.parent_op()
    return parents


def _trips(op: Operation, kernel: tile.KernelOp) -> int:
    """How many times `op` runs per run of `kernel` (its loops' trip counts)."""
    loops = [parent for parent in _parents(op, kernel) if isinstance(parent, scf.ForOp)]
    return math.prod(trip_count(loop) or 1 for loop in loops)


def busy_cycles(op: tile.WindowOp, target: Target) -> int:
    """Cycles one run of compute op `op` keeps its engine busy, as the cost model charges it."""
    kind, box = tile.engine_class(op), op.box()
    if kind == "dma":
        return _dma_cycles(op, target)
    if kind == "matrix":
        return matmul_cycles(target, box[0], box[1])
    name = op.attributes.get("op")
    cost = name.data if isinstance(name, StringAttr) else "default"
    return vector_cycles(target, cost, math.prod(box[:-1]), box[-1])


def dma_instructions(op: tile.WindowOp) -> tuple[int, int, bool]:
    """(instructions, bytes each, whether it touches DRAM) of one run of DMA op `op`, as
    convert-sync-to-hw selects them (`dma_transfers`; a gather is one instruction)."""
    source, destination = op.accesses()[0][0], op.accesses()[-1][0]
    dram = "dram" in (tile.space_of(source), tile.space_of(destination))
    element = element_bytes(tile.memref_of(destination).get_element_type())
    if isinstance(op, tile.GatherOp):
        return 1, op.box()[0] * op.box()[1] * element, dram
    src_shape, dst_shape = (tile.memref_of(buffer).get_shape() for buffer in (source, destination))
    count, nbytes = dma_transfers(op.box(), src_shape, dst_shape, element, isinstance(op, tile.TransposeOp))
    return count, nbytes, dram


def _dma_cycles(op: tile.WindowOp, target: Target) -> int:
    """Cycles one run of DMA op `op` keeps its queue busy, as the cost model charges it."""
    count, nbytes, dram = dma_instructions(op)
    return count * dma_instruction_cycles(target, nbytes, dram)


def bind_kernel_dmas(kernel: tile.KernelOp, target: Target) -> None:
    """Binds the unbound DMA ops of `kernel` to queues (`spread_queues`, module docstring)."""
    order = {op: index for index, op in enumerate(kernel.walk())}
    dmas = [op for op in kernel.walk() if _is_dma(op) and sync.engine_of(op) is None]
    first_store = min((order[op] for op in dmas if _writes_dram(op)), default=len(order))
    around = {op: _parents(op, kernel) for op in dmas}
    storing = {parent for op in dmas if _writes_dram(op) for parent in around[op]}
    load_bound: dict[scf.ForOp, bool] = {}  # `_bound_by_loads` per loop, asked once
    copy_bound: dict[scf.ForOp, bool] = {}  # the same, counting on-chip copies too
    loaded = {tile.base_buffer(op.accesses()[-1][0]) for op in dmas if _reads_dram(op)}
    cycles = {op: _trips(op, kernel) * _dma_cycles(op, target) for op in dmas}
    copy_of = _body_copies(dmas)
    stores = sum(c for op, c in cycles.items() if _writes_dram(op))
    light_stores = LIGHT_STORES * stores < sum(cycles.values()) - stores
    stepped = {  # storing loops with a loop of reads inside: blocks of several K steps
        parent
        for op in dmas
        if _reads_dram(op) and around[op] and isinstance(around[op][0], scf.ForOp)
        for parent in around[op][1:]
        if parent in storing and isinstance(parent, scf.ForOp)
    }
    stores_per_trip = {  # each stepped loop's stores, in cycles per trip
        loop: sum(c for op, c in cycles.items() if _writes_dram(op) and loop in around[op])
        / max(1, _trips(loop, kernel) * (trip_count(loop) or 1))
        for loop in stepped
    }
    transfers = []
    groups: dict[scf.ForOp | SSAValue, int] = {}  # loops (or split loads) balanced among themselves
    for at, op in enumerate(dmas):
        reads_dram = _reads_dram(op)
        parents = around[op]
        in_storing_loop = any(parent in storing for parent in parents)
        # a read in a loop of its own that stores nothing meets a store only at that loop's
        # entry: worth a bubble there when the loop waits for its loads anyway
        innermost = parents[0] if parents and isinstance(parents[0], scf.ForOp) else None
        if innermost is not None and innermost not in load_bound:
            load_bound[innermost] = _bound_by_loads(innermost, kernel, target)
        waits_for_loads = innermost is not None and load_bound[innermost]
        apart = waits_for_loads and innermost not in storing
        if reads_dram or _writes_dram(op):
            spreads = apart
        elif tile.base_buffer(op.accesses()[0][0]) not in loaded:  # e.g. a stage's padding
            spreads = True
        else:  # an on-chip copy of loaded data for the compute: like a load, off the stores'
            # queue unless its loop waits for such copies (`_bound_by_loads`, on_chip)
            if innermost is not None and innermost not in copy_bound:
                copy_bound[innermost] = _splits_copies(innermost) and _bound_by_loads(
                    innermost, kernel, target, on_chip=True
                )
            spreads = apart or (innermost is not None and copy_bound[innermost])
        # light stores let reads wait behind them, but not a block's peeled first step when
        # the previous block's stores take longer than the read itself: its tiles are needed
        # as the block starts, and on dma1 they would load only after those stores
        step_prologue = (
            reads_dram
            and innermost is not None
            and stores_per_trip.get(innermost, 0) > _dma_cycles(op, target)
        )
        behind = (
            not _writes_dram(op)
            and (order[op] > first_store or in_storing_loop)
            and not spreads
            and (not light_stores or step_prologue)
        )
        if _moves_alone(innermost):
            group = groups.setdefault(innermost, len(groups))
        else:  # the parts of one load split over the queues balance among themselves
            split = _split_load(dmas, at, kernel)
            group = groups.setdefault(split, len(groups)) if split is not None else None
        follows = None if waits_for_loads else _completed_load(dmas, at)
        copy = copy_of.get(op, 0) if group is not None else 0
        transfers.append(Transfer(cycles[op], _writes_dram(op), behind, group, follows, copy))
    for op, queue in zip(dmas, spread_queues(transfers, target.dma.queues), strict=True):
        sync.bind(op, queue)


def _split_load(dmas: list[tile.WindowOp], at: int, kernel: tile.KernelOp) -> SSAValue | None:
    """The buffer a straight DRAM read (in no loop of the kernel) fills together with the
    straight reads right before or after it that write the same buffer: the parts of one
    load split over the queues (a matmul's kept panel, `matmul_costs.panel_parts`), which
    `spread_queues` balances among themselves (a group); None for any other op."""
    op = dmas[at]

    def straight_into(other: tile.WindowOp) -> SSAValue | None:
        if not _reads_dram(other) or any(isinstance(p, scf.ForOp) for p in _parents(other, kernel)):
            return None
        return tile.base_buffer(other.accesses()[-1][0])

    buffer = straight_into(op)
    if buffer is None:
        return None
    neighbours = [dmas[i] for i in (at - 1, at + 1) if 0 <= i < len(dmas)]
    return buffer if any(straight_into(other) == buffer for other in neighbours) else None


def _body_copies(dmas: list[tile.WindowOp]) -> dict[tile.WindowOp, int]:
    """Which copy of its loop's body each DMA op is in when multi-buffer unrolled the body by
    its depth (`buffer_depth`): the body holds that many copies one after the other, each with
    the same number of DMA ops (ops of loops not unrolled are left out: copy 0)."""
    bodies: dict[Operation, list[tile.WindowOp]] = {}
    for op in dmas:
        loop = op.parent_op()
        if isinstance(loop, scf.ForOp):
            bodies.setdefault(loop, []).append(op)
    copies: dict[tile.WindowOp, int] = {}
    for loop, mine in bodies.items():
        depth = loop.attributes.get(DEPTH_ATTR)
        if isinstance(depth, IntegerAttr) and depth.value.data >= 2 and not len(mine) % depth.value.data:
            per_copy = len(mine) // depth.value.data
            copies.update((op, index // per_copy) for index, op in enumerate(mine))
    return copies


def _completed_load(dmas: list[tile.WindowOp], at: int) -> int | None:
    """The index of the DRAM read that on-chip copy `dmas[at]` completes: the nearest one before
    it, with no DMA op of another block between them, that writes the same buffer (a stage's
    load, whose zero padding the copy writes); None for any other op."""
    op = dmas[at]
    if _reads_dram(op) or _writes_dram(op):
        return None
    destination = op.accesses()[-1][0]
    for index in range(at - 1, -1, -1):
        load = dmas[index]
        if load.parent_block() is not op.parent_block():
            return None
        if _reads_dram(load) and load.accesses()[-1][0] == destination:
            return index
    return None


def _moves_alone(loop: scf.ForOp | None) -> TypeGuard[scf.ForOp]:
    """Whether `loop`'s DMA ops are all its own (no loop nested in it moves data): its trips
    repeat them together, so `spread_queues` balances them among themselves."""
    if loop is None:
        return False
    nested = (op for op in loop.body.walk() if isinstance(op, scf.ForOp))
    return not any(_is_dma(inner) for op in nested for inner in op.body.walk())


def _splits_copies(loop: scf.ForOp) -> bool:
    """Whether spreading `loop`'s on-chip copies over the queues can pay for the wait behind the
    previous trip's store on dma1: when multi-buffer rotated its buffers (`buffer_depth` >= 2,
    the next trip's loads overlap this trip), or when a trip has two copies or more to split. A
    single copy of a serial loop only joins that chain (resnet_block's 1x1 strided conv: its tap
    copy on dma1 waited for each block's store: 1,048 cycles, 939 on dma0); a pool's taps
    split (tiny_cnn's max pool: 1,045 cycles spread, 1,538 all on dma0)."""
    depth = loop.attributes.get(DEPTH_ATTR)
    if isinstance(depth, IntegerAttr) and depth.value.data >= 2:
        return True
    copies = [op for op in loop.body.walk() if _is_dma(op) and not _reads_dram(op) and not _writes_dram(op)]
    return len(copies) >= 2


def _bound_by_loads(loop: scf.ForOp, kernel: tile.KernelOp, target: Target, on_chip: bool = False) -> bool:
    """Whether the DRAM reads inside `loop` keep one queue busier than the loop's matrix or
    vector ops keep their engine: the loop waits for its loads, so spreading them pays.

    `on_chip`: whether the loop's DRAM reads and on-chip copies take more than `COPY_BOUND`
    times its compute (why: `costs.COPY_BOUND`)."""
    busy = {"dma": 0, "matrix": 0, "vector": 0}  # dma: what feeds the compute (no stores)
    for op in loop.walk():
        if not isinstance(op, tile.COMPUTE_OPS):
            continue
        kind = tile.engine_class(op)
        if kind != "dma" or (not _writes_dram(op) and (on_chip or _reads_dram(op))):
            busy[kind] += _trips(op, kernel) * busy_cycles(op, target)
    return busy["dma"] > (COPY_BOUND if on_chip else 1) * max(busy["matrix"], busy["vector"])


def _check_existing(op: Operation, engine: str, target: Target) -> None:
    """An op bound before this pass keeps its engine if the engine suits the op and the target."""
    assert isinstance(op, tile.WindowOp)
    kind = tile.engine_class(op)
    queue_ok = kind != "dma" or (engine[3:].isdigit() and int(engine[3:]) < target.dma.queues)
    if engine.startswith(kind) and queue_ok:
        return
    message = (
        f"convert-tile-to-sync: {op.name} is bound to '{engine}', which is not a {kind} engine of "
        f"target '{target.name}' ({target.dma.queues} DMA queues)"
    )
    fail(op, message)


@dataclass(frozen=True)
class ConvertTileToSyncPass(ModulePass):
    """Binds every tile compute op to an engine (`sync.engine`).

    Input:
      Tile-level functions (any stage after convert-graph-to-tile).
      The target: the module's `aitc.target`, else the `target` option (`aitc.module_target`).
    Output:
      The same IR with `sync.engine` on every compute op: a kernel's DMA ops spread over the DMA
      queues (stores on dma1, the others by `spread_queues`), DMA ops outside kernels by
      `dma_queue`, matmul on matrix, the other compute ops on vector. Ops already bound keep
      their binding if it is valid.
    Invariants:
      Every tile compute op is bound (`check_all_bound`) to an engine that exists on the target
      and runs its op class; nothing else changes.
    """

    name = "convert-tile-to-sync"
    target: str | None = None
    """A preset name or FILE.toml, for a module without `aitc.target` (`aitc.module_target`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op, self.target, self.name)
        for kernel in op.walk():
            if isinstance(kernel, tile.KernelOp):
                bind_kernel_dmas(kernel, target)
        for nested in op.walk():
            if not isinstance(nested, tile.COMPUTE_OPS):
                continue
            engine = sync.engine_of(nested)
            if engine is None:
                sync.bind(nested, engine_for(nested, target))
            else:
                _check_existing(nested, engine, target)
        check_all_bound(op, self.name)
