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

from aitc.analysis.dma import dma_queue
from aitc.dialects import sync, tile
from aitc.module_target import module_target
from aitc.passes.legality import check_all_bound, fail
from aitc.target import Target


def engine_for(op: tile.WindowOp, target: Target) -> str:
    """The engine `op` runs on for `target` (its class: `tile.engine_class`; a copy, transpose or
    gather goes to the queue `aitc.analysis.dma.dma_queue` picks for its memory spaces)."""
    kind = tile.engine_class(op)
    if kind != "dma":
        return kind
    source, destination = op.accesses()[0][0], op.accesses()[-1][0]
    return dma_queue(tile.space_of(source), tile.space_of(destination), target.dma.queues)


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
      The same IR with `sync.engine` on every compute op: DMA loads on dma0, stores on dma1,
      on-chip copies on dma2 (dma0 if the target has two queues), matmul on matrix, the other
      compute ops on vector. Ops already bound keep their binding if it is valid.
    Invariants:
      Every tile compute op is bound (`check_all_bound`) to an engine that exists on the target
      and runs its op class; nothing else changes.
    """

    name = "convert-tile-to-sync"
    target: str | None = None
    """A preset name or FILE.toml, for a module without `aitc.target` (`aitc.module_target`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op, self.target, self.name)
        for nested in op.walk():
            if not isinstance(nested, tile.COMPUTE_OPS):
                continue
            engine = sync.engine_of(nested)
            if engine is None:
                sync.bind(nested, engine_for(nested, target))
            else:
                _check_existing(nested, engine, target)
        check_all_bound(op, self.name)
