"""aitc.analysis.dma: a copy's dims become one DMA instruction shape that moves the same bytes
with as few instructions as possible."""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from aitc.analysis.dma import Dim, Transfer, merge_dims, spread_queues, transfer_dims
from aitc.passes.graph_to_tile.costs import contiguous_strides, dma_transfers


def _pairs(dims: list[Dim], element: int) -> set[tuple[int, int]]:
    """(src, dst) byte offsets of every element the dims move."""
    points = itertools.product(*(range(d.count) for d in dims))
    return {
        (
            sum(i * d.src for i, d in zip(p, dims, strict=True)) + e,
            sum(i * d.dst for i, d in zip(p, dims, strict=True)) + e,
        )
        for p in points
        for e in range(element)
    }


def _instruction_pairs(row_bytes: int, remaining: list[Dim]) -> set[tuple[int, int]]:
    """The same set as the instructions see it: loops around rows of row_bytes bytes."""
    rows = remaining or [Dim(1, 0, 0)]
    return {
        (
            sum(i * d.src for i, d in zip(p, rows, strict=True)) + b,
            sum(i * d.dst for i, d in zip(p, rows, strict=True)) + b,
        )
        for p in itertools.product(*(range(d.count) for d in rows))
        for b in range(row_bytes)
    }


def test_the_longest_dim_is_the_rows():
    # a stride-2 1x1 conv's patch: 64 channels x 2 rows x 7 columns, every element alone
    dims = transfer_dims([64, 2, 7], [14 * 14 * 2, 28, 2], [14, 7, 1], 4)
    row_bytes, remaining = merge_dims(dims, 4)
    assert row_bytes == 4
    assert remaining[-1].count == 64
    assert math.prod(d.count for d in remaining[:-1]) == 14
    # a 3x3 tap of 64 channels x 2 rows of 7: 2 instructions of 64 rows (not 64 of 2)
    assert dma_transfers([64, 2, 7], [64, 14, 14], [64, 2, 7], 4) == (2, 64 * 7 * 4)


def test_equal_counts_keep_the_innermost():
    row_bytes, remaining = merge_dims([Dim(8, 400, 32), Dim(8, 40, 4)], 4)
    assert row_bytes == 4
    assert remaining == [Dim(8, 400, 32), Dim(8, 40, 4)]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 5), min_size=1, max_size=4).flatmap(
        lambda box: st.tuples(
            st.just(box),
            st.lists(st.integers(0, 3), min_size=len(box), max_size=len(box)),
            st.booleans(),
        )
    )
)
def test_instructions_move_exactly_the_window(case):
    box, pads, transpose = case
    if transpose and len(box) < 2:
        return
    src = [b + p for b, p in zip(box, pads, strict=True)]
    dst = list(box)
    if transpose:
        dst[-2:] = dst[-1], dst[-2]
    dims = transfer_dims(box, contiguous_strides(src), contiguous_strides(dst), 4, transpose)
    row_bytes, remaining = merge_dims(dims, 4)
    assert _instruction_pairs(row_bytes, remaining) == _pairs(dims, 4)
    longest = max((d.count for d in remaining), default=1)
    assert not remaining or remaining[-1].count == longest


def test_one_queue_takes_everything():
    assert spread_queues([Transfer(5, store=True), Transfer(3)], 1) == ["dma0", "dma0"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1000), st.booleans(), st.booleans()), max_size=12),
    st.integers(2, 4),
)
def test_spread_keeps_stores_on_dma1_and_reads_behind_them_off_it(items, queues):
    transfers = [Transfer(cycles, store, behind and not store) for cycles, store, behind in items]
    chosen = spread_queues(transfers, queues)
    assert chosen == spread_queues(transfers, queues)  # deterministic
    busy = dict.fromkeys((f"dma{q}" for q in range(queues)), 0)
    for transfer, queue in zip(transfers, chosen, strict=True):
        busy[queue] += transfer.cycles
        assert int(queue[3:]) < queues
        assert (queue == "dma1") if transfer.store else not (transfer.behind_store and queue == "dma1")
    free = [t.cycles for t in transfers if not t.store and not t.behind_store]
    if free and queues == 2 and not any(t.behind_store for t in transfers):
        # greedy, largest first: no queue ends more than one transfer above the other
        assert abs(busy["dma0"] - busy["dma1"]) <= max(max(free), sum(t.cycles for t in transfers if t.store))


def test_a_loop_bodys_transfers_are_balanced_among_themselves():
    """A conv's chunk loop unrolled by 2 loads a stage and a weight tile per chunk (group 1,
    every trip), while the peeled first chunk's loads (group 0) may only use dma0 (they queue
    behind the block's store): the loop's four loads split evenly, so every trip keeps both
    queues equally busy. Balancing the kernel's totals instead put all four on dma1 (the
    peeled loads made dma0 the busier queue over the kernel, not in the loop)."""
    peeled = [Transfer(9000, behind_store=True, group=None), Transfer(11000, behind_store=True, group=None)]
    sizes = (960 * 6, 1088 * 6, 960 * 6, 1088 * 6)
    loop = [Transfer(c, group=1) for c in sizes]
    chosen = spread_queues([*peeled, Transfer(500, store=True, group=None), *loop], 2)
    assert chosen[:3] == ["dma0", "dma0", "dma1"]
    per_queue = {
        q: sum(c for c, where in zip(sizes, chosen[3:], strict=True) if where == q) for q in ("dma0", "dma1")
    }
    assert per_queue["dma0"] == per_queue["dma1"]


def test_a_transfer_that_follows_another_takes_its_queue():
    """A stage's load (dma0: behind the block's store) and the copies of its zero padding,
    which follow it there although dma1 is idle apart from the store."""
    load = Transfer(3000, behind_store=True, group=1)
    padding = [Transfer(128, group=1, follows=0), Transfer(128, group=1, follows=0)]
    store = Transfer(1500, store=True, group=1)
    assert spread_queues([load, *padding, store], 2) == ["dma0", "dma0", "dma0", "dma1"]
    unfollowed = [Transfer(128, group=1), Transfer(128, group=1)]
    assert spread_queues([load, *unfollowed, store], 2)[1:3] == ["dma1", "dma1"]


def test_each_copy_of_an_unrolled_body_loads_over_every_queue():
    """The K loop of a 512 x 128 matmul block, unrolled by 2 (copy k loads buffer copy k): an A
    tile (2,112 cycles) and a B tile (576) per copy. Balancing only the loop's totals put a
    copy's two tiles on one queue (2,688 cycles a trip against 2,240 of matmuls); per copy,
    each trip's tiles load side by side and the loop's totals stay balanced."""
    loop = [Transfer(c, group=0, copy=k) for k, c in ((0, 2112), (0, 576), (1, 2112), (1, 576))]
    chosen = spread_queues([*loop, Transfer(8448, store=True, group=None)], 2)
    assert chosen[0] != chosen[1]
    assert chosen[2] != chosen[3]
    busy = {
        q: sum(t.cycles for t, where in zip(loop, chosen, strict=False) if where == q)
        for q in ("dma0", "dma1")
    }
    assert busy["dma0"] == busy["dma1"] == 2688
    assert spread_queues([Transfer(c, group=0) for c in (2112, 576, 2112, 576)], 2) == [
        "dma0", "dma0", "dma1", "dma1",
    ]  # fmt: skip
