"""Buffer liveness and interval packing for tile-level functions (helpers, no pass here).

Program order is the pre-order walk of a function: every op gets a position, and an op with
regions (scf.for, tile.kernel) spans its own position up to the last op nested in it.

A buffer is live from its first to its last use (uses through `tile.reshape` views count as
uses of the viewed buffer). A use inside an scf.for that does not contain the buffer's
definition stretches the range to the whole loop, outermost such loop first: iteration i+1 may
read what iteration i wrote, so the bytes are busy until the loop ends. A buffer allocated
inside a tile.kernel (or a loop body) cannot be used outside it, so it dies there at the latest.

    pos:   0 alloc %a     1 kernel {  2 for {  3 copy -> %a   4 matmul %a }   5 copy %b }
    %a:                               [2 ............................... 4]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, SSAValue

from aitc.dialects import tile
from aitc.types import numpy_dtype

ALIGNMENT = 64
"""Every planned buffer starts at a multiple of 64 bytes: a DMA burst / cache-line boundary, so
row transfers never straddle one needlessly; it also covers every element alignment (<= 8)."""

LOOPS = (scf.ForOp, scf.WhileOp, scf.ParallelOp)

Span = tuple[int, int]


def align_up(value: int, alignment: int = ALIGNMENT) -> int:
    return -(-value // alignment) * alignment


def byte_size(type_: MemRefType) -> int:
    """Bytes of a buffer (row-major, dense); i1 takes a byte."""
    count = 1
    for dim in type_.get_shape():
        count *= dim
    return count * numpy_dtype(type_.get_element_type()).itemsize


def program_spans(function: func.FuncOp) -> dict[Operation, Span]:
    """Op -> (its position, the position of the last op nested in it) in pre-order."""
    order = list(function.walk())
    spans = {op: (index, index) for index, op in enumerate(order)}
    for op in reversed(order):  # children come after their parent in pre-order
        parent = op.parent_op()
        if parent is not None and parent in spans:
            start, end = spans[parent]
            spans[parent] = (start, max(end, spans[op][1]))
    return spans


def users(value: SSAValue) -> Iterator[Operation]:
    """Ops that access the bytes of `value`, directly or through tile.reshape views of it (making
    a view is not an access: a view made early does not keep the bytes busy)."""
    for use in value.uses:
        if isinstance(use.operation, tile.ReshapeOp):
            yield from users(use.operation.result)
        else:
            yield use.operation


def _anchor(user: Operation, definition: Operation | None) -> Operation:
    """The outermost loop around `user` that does not contain `definition` (else `user`)."""
    anchor, parent = user, user.parent_op()
    while parent is not None and not (definition is not None and parent.is_ancestor(definition)):
        if isinstance(parent, LOOPS):
            anchor = parent
        parent = parent.parent_op()
    return anchor


def live_span(value: SSAValue, spans: dict[Operation, Span]) -> Span:
    """First and last position at which the bytes of `value` are in use (see module doc)."""
    definition = value.owner if isinstance(value.owner, Operation) else None
    points = [spans[_anchor(user, definition)] for user in users(value)]
    if not points and definition is not None:
        points = [spans[definition]]
    if not points:
        return (0, 0)
    return (min(p[0] for p in points), max(p[1] for p in points))


def overlaps(a: Span, b: Span) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


@dataclass
class Lifetime:
    """One buffer to place: `size` bytes live over `span`; `offset` is set by `pack`."""

    value: SSAValue
    op: Operation
    size: int
    span: Span
    offset: int = -1

    @property
    def end(self) -> int:
        return self.offset + self.size


def pack(lifetimes: Sequence[Lifetime], base: int = 0) -> int:
    """First-fit interval packing, biggest buffers first (TFLite's greedy-by-size): each buffer
    takes the lowest aligned offset >= `base` that overlaps no placed buffer live at the same
    time. Ties keep program order, so the same input gives the same offsets. Returns the end
    of the highest buffer (`base` if there is none).

    Vectorised over the placed buffers: with the busy ones sorted by (offset, end), the offset
    tried before busy buffer k is the running max of `base` and the aligned ends before k, and
    the first k it fits under decides (else the running max over all of them)."""
    order = sorted(range(len(lifetimes)), key=lambda i: (-lifetimes[i].size, lifetimes[i].span[0], i))
    firsts, lasts, lows, highs = (np.zeros(len(lifetimes), np.int64) for _ in range(4))
    for placed, index in enumerate(order):
        item = lifetimes[index]
        live = (firsts[:placed] <= item.span[1]) & (item.span[0] <= lasts[:placed])
        busy_lows, busy_highs = lows[:placed][live], highs[:placed][live]
        by_offset = np.lexsort((busy_highs, busy_lows))
        busy_lows, busy_highs = busy_lows[by_offset], busy_highs[by_offset]
        tried = np.maximum.accumulate(np.concatenate(([base], -(-busy_highs // ALIGNMENT) * ALIGNMENT)))
        fits = np.flatnonzero(tried[:-1] + item.size <= busy_lows)
        item.offset = int(tried[fits[0]] if len(fits) else tried[-1])
        firsts[placed], lasts[placed], lows[placed], highs[placed] = *item.span, item.offset, item.end
    return max((item.end for item in lifetimes), default=base)
