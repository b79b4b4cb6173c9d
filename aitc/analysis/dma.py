"""How a DMA moves a window, and which queue runs it: the facts the cost model of
`convert-graph-to-tile` predicts and the later stages implement.

- Queue policy (`spread_queues`), applied by `convert-tile-to-sync` to the DMA ops of each
  kernel: stores (to DRAM) on dma1; every other DMA op (loads, on-chip copies, gathers), the
  busiest first, on the queue with the fewest cycles so far (within its loop body first, when
  it is in one whose trips repeat it with the body's other DMA ops), so loads use every queue
  the target has (one queue moves 32 B/cycle, DRAM gives more). Queues run in order, so a DRAM read
  that would queue behind a store of its kernel (placed after the kernel's first store, or in
  a loop that stores) stays off the store queue: it would wait for that store, which waits for
  the compute before it, and lose its prefetch. Outside a kernel (`dma_queue`): loads on dma0,
  stores on dma1, on-chip copies on dma2 when the target has a third queue, else dma0.
- Instruction shape (`transfer_dims`, `merge_dims`), applied by `convert-sync-to-hw`: a copy is
  a list of dims (count, src stride, dst stride) in bytes; inner dims contiguous on both sides
  fold into `row_bytes`, outer dims that nest exactly merge, the longest remaining dim (the
  innermost of equal ones) is the instruction's `rows` and every other one a hw.loop around
  it, so a strided copy is as few instructions, each paying the DMA latency once, as it can
  be. A transpose is a copy whose last two dst strides are swapped, looping over the shorter
  side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

LOAD_QUEUE, STORE_QUEUE, LOCAL_QUEUE = "dma0", "dma1", "dma2"


@dataclass(frozen=True)
class Transfer:
    """One DMA op of a kernel, for `spread_queues`: its busy cycles over the whole kernel (every
    instruction of every trip), whether it writes DRAM, and whether it is a DRAM read that
    would queue behind one of the kernel's stores."""

    cycles: int
    store: bool = False
    behind_store: bool = False
    group: int | None = None
    """The loop body it runs in (one number per innermost loop; None: straight-line code): the
    transfers of one body run together every trip, so they are balanced among themselves
    first."""
    follows: int | None = None
    """The index of an earlier transfer whose queue this one takes: an on-chip copy that
    completes the buffer a DRAM read of its block fills (a stage's zero padding) goes right
    after that read, so what reads the buffer never waits for another queue's stores."""
    copy: int = 0
    """Which copy of its loop body it is in when multi-buffer unrolled the body (copy k loads
    buffer copy k): a copy's transfers are balanced among themselves first, so the loads one
    iteration waits for finish together on every queue instead of one after the other on one."""


def spread_queues(transfers: Sequence[Transfer], queues: int) -> list[str]:
    """The queue of each of a kernel's DMA ops (in program order; module docstring): stores on
    dma1; the others loop body by loop body (`Transfer.group`, the busiest first, then the
    straight-line ones), largest first (ties in program order), each on the queue its copy of
    the loop body (`Transfer.copy`) has loaded least so far, then its loop body (its stores
    included), then the least busy over the kernel, among those it may use (a read behind a
    store not on dma1); a transfer that follows another (`Transfer.follows`) takes that one's
    queue. One queue: everything on dma0."""
    if queues < 2:
        return [LOAD_QUEUE] * len(transfers)
    busy = [0] * queues
    chosen = [STORE_QUEUE if t.store else "" for t in transfers]
    busy[1] = sum(t.cycles for t in transfers if t.store)
    in_loop = {t.group: [0] * queues for t in transfers if t.group is not None}
    in_copy = {(t.group, t.copy): [0] * queues for t in transfers if t.group is not None}
    for t in transfers:
        if t.store and t.group is not None:
            in_loop[t.group][1] += t.cycles
    total = {g: sum(t.cycles for t in transfers if t.group == g) for g in in_loop}

    def rank(i: int) -> tuple[int, int, int, int, int]:
        group = transfers[i].group
        if group is None:
            return (1, 0, 0, -transfers[i].cycles, i)
        return (0, -total[group], group, -transfers[i].cycles, i)

    for index in sorted(range(len(transfers)), key=rank):
        transfer = transfers[index]
        if transfer.store or transfer.follows is not None:
            continue
        loop = in_loop.get(transfer.group) if transfer.group is not None else None
        copy = in_copy.get((transfer.group, transfer.copy)) if transfer.group is not None else None
        allowed = [q for q in range(queues) if not (transfer.behind_store and q == 1)]
        queue = min(allowed, key=lambda q: (copy[q] if copy else 0, loop[q] if loop else 0, busy[q], q))
        busy[queue] += transfer.cycles
        if loop and copy:
            loop[queue] += transfer.cycles
            copy[queue] += transfer.cycles
        chosen[index] = f"dma{queue}"
    return _followed(transfers, chosen)


def _followed(transfers: Sequence[Transfer], chosen: list[str]) -> list[str]:
    """`chosen` with each transfer that follows another on that one's queue."""
    return [
        chosen[t.follows] if t.follows is not None and not t.store else queue
        for t, queue in zip(transfers, chosen, strict=True)
    ]


def dma_queue(src_space: str, dst_space: str, queues: int) -> str:
    """The queue of a DMA outside a kernel from memory space `src_space` to `dst_space` on a
    target with `queues` DMA queues: stores dma1, loads dma0, on-chip copies dma2 (dma0 with
    two queues)."""
    if dst_space == "dram":
        return STORE_QUEUE
    if src_space == "dram":
        return LOAD_QUEUE
    return LOCAL_QUEUE if queues > 2 else LOAD_QUEUE


@dataclass(frozen=True)
class Dim:
    """One dim of a DMA transfer: `count` steps of `src` / `dst` bytes."""

    count: int
    src: int
    dst: int


def transfer_dims(
    box: Sequence[int],
    src_strides: Sequence[int],
    dst_strides: Sequence[int],
    element: int,
    transpose: bool = False,
) -> list[Dim]:
    """The dims of a copy of `box` between buffers with these element strides (`element` bytes
    each); a transpose lands src (r, c) at dst (c, r) and loops over the shorter side."""
    dst_strides = list(dst_strides)
    if transpose:
        dst_strides[-2:] = dst_strides[-1], dst_strides[-2]
    dims = [Dim(n, s * element, d * element) for n, s, d in zip(box, src_strides, dst_strides, strict=True)]
    if transpose and dims[-1].count < dims[-2].count:
        dims[-2:] = dims[-1], dims[-2]
    return dims


def merge_dims(dims: Sequence[Dim], element: int) -> tuple[int, list[Dim]]:
    """(row_bytes, remaining dims outermost first): drops single-element dims, folds inner dims
    that are contiguous on both sides into the row, merges outer dims that nest exactly."""
    remaining = [d for d in dims if d.count > 1]
    row = element
    while remaining and remaining[-1].src == row and remaining[-1].dst == row:
        row *= remaining.pop().count
    merged: list[Dim] = []
    for dim in remaining:
        outer = merged[-1] if merged else None
        if outer and outer.src == dim.count * dim.src and outer.dst == dim.count * dim.dst:
            merged[-1] = Dim(outer.count * dim.count, dim.src, dim.dst)
        else:
            merged.append(dim)
    if merged:  # the longest dim is the instruction's rows: the fewest instructions
        rows = max(range(len(merged)), key=lambda i: (merged[i].count, i))
        merged.append(merged.pop(rows))
    return row, merged
