"""How a DMA moves a window, and which queue runs it: the facts the cost model of
`convert-graph-to-tile` predicts and the later stages implement.

- Queue policy (`dma_queue`), applied by `convert-tile-to-sync`: loads (from DRAM) on dma0,
  stores (to DRAM) on dma1, so loads of the next tile never queue behind stores of the previous
  one; on-chip copies on dma2 when the target has a third queue, else on dma0 with the loads
  (they feed compute, as loads do).
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


def dma_queue(src_space: str, dst_space: str, queues: int) -> str:
    """The queue of a DMA from memory space `src_space` to `dst_space` on a target with `queues`
    DMA queues: stores dma1, loads dma0, on-chip copies dma2 (dma0 with two queues)."""
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
