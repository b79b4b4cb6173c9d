"""`convert-tile-to-sync`: binds every tile compute op to the engine queue that executes it.

    tile.copy %x[..] to %a[..] ...                   tile.copy ... {sync.engine = "dma0"}   load
    tile.matmul %a[..], %b[..] to %acc[..] ...  ==>  tile.matmul ... {sync.engine = "matrix"}
    tile.acc_read %acc[..] to %y[..] ...             tile.acc_read ... {sync.engine = "vector"}
    tile.copy %y[..] to %out[..] ...                 tile.copy ... {sync.engine = "dma1"}   store

DMA ops (copy, transpose, gather) go to a queue by direction: reads from DRAM (loads) to dma0,
writes to DRAM (stores) to dma1, so loads of the next tile never queue behind stores of the
previous one; on-chip copies (sram/acc <-> sram) go to dma2 when the target has a third queue,
else they share dma0 with the loads (they feed compute, as loads do). matmul runs on the matrix
engine, every other compute op on the vector engine (`tile.ENGINE_OF`).

Binding alone orders nothing across engines: `insert-semaphores` adds that.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from aitc.dialects import sync, tile
from aitc.passes.legality import check_all_bound
from aitc.passes.tile.plan_memory import resolve_target
from aitc.target import Target

LOAD_QUEUE, STORE_QUEUE, LOCAL_QUEUE = "dma0", "dma1", "dma2"


def dma_queue(op: tile.WindowOp, queues: int) -> str:
    """The DMA queue of a copy/transpose/gather: loads dma0, stores dma1, on-chip dma2 or dma0."""
    source, destination = op.accesses()[0][0], op.accesses()[-1][0]
    if tile.space_of(destination) == "dram":
        return STORE_QUEUE
    if tile.space_of(source) == "dram":
        return LOAD_QUEUE
    return LOCAL_QUEUE if queues > 2 else LOAD_QUEUE


def engine_for(op: tile.WindowOp, target: Target) -> str:
    """The engine `op` runs on for `target` (its class: `tile.engine_class`)."""
    kind = tile.engine_class(op)
    return dma_queue(op, target.dma.queues) if kind == "dma" else kind


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
    op.emit_error(message, PassFailedException(message))


@dataclass(frozen=True)
class ConvertTileToSyncPass(ModulePass):
    """Binds every tile compute op to an engine (`sync.engine`).

    Input:
      Tile-level functions (any stage after convert-graph-to-tile).
    Output:
      The same IR with `sync.engine` on every compute op: DMA loads on dma0, stores on dma1,
      on-chip copies on dma2 (dma0 if the target has two queues), matmul on matrix, the other
      compute ops on vector. Ops already bound keep their binding if it is valid.
    Invariants:
      Every tile compute op is bound (`check_all_bound`) to an engine that exists on the target
      and runs its op class; nothing else changes.
    """

    name = "convert-tile-to-sync"
    target: str = "tiny"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(self.target)
        for nested in op.walk():
            if not isinstance(nested, tile.COMPUTE_OPS):
                continue
            engine = sync.engine_of(nested)
            if engine is None:
                sync.bind(nested, engine_for(nested, target))
            else:
                _check_existing(nested, engine, target)
        check_all_bound(op, self.name)
