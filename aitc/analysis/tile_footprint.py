"""Which bytes a tile compute op touches: the memory model shared by `insert-semaphores`
(static, over ranges of loop indices), `multi-buffer` (static, over whole loops) and the sync
interpreter (dynamic, exact indices).

Storage. A buffer value is a view of a storage: tile.reshape is followed to the root buffer
(tile.alloc, tile.const or a function argument). A root placed by plan-memory (`offset`, or the
`tile.offset` argument attribute) lives in its memory space at that byte offset, so buffers
whose bytes plan-memory shares (disjoint lifetimes) alias each other here; an unplaced root is
a storage of its own.

    %v = tile.reshape %a : memref<4x8xf32> -> memref<32xf32>     %v and %a: one storage
    %a = tile.alloc {offset = 0}   %b = tile.alloc {offset = 0}  %a and %b: storage "sram"

Windows. A window box of a view covers, row-major, a set of sorted disjoint byte intervals of
its storage (`window_bytes`). Indices are ranges [lo, hi] (inclusive; exact values are ranges
of width 0): an index computed by an op this model does not know is None, and the window then
covers its whole dimension, which is sound (it can only add dependences).

Loops. An index's range comes from the ranges of the loop induction variables it is computed
from: given by the caller (`IndexRanges`: insert-semaphores walks the loop nest and knows each
induction variable's range there), or read off the IR (`StaticIndexRanges`: every scf.for with
constant bounds runs its whole trip count, for a pass that asks about one op at a time).

    scf.for %i = 0 to 10 step 4 { %j = arith.addi %i, %c1 }     %i: [0, 8]   %j: [1, 9]

Reads and writes. Every window is read except the destination (the last access), which is
written, and read too by an accumulating tile.matmul (`Access.read`, `Access.write`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType
from xdsl.ir import BlockArgument, Operation, SSAValue

from aitc.dialects import tile
from aitc.types import numpy_dtype

Range = tuple[int, int]
Intervals = tuple[np.ndarray, np.ndarray]
MAX_RUNS = 1 << 16
"""Windows covering more separate byte runs than this are approximated by their hull."""

# --------------------------------------------------------------------------- index arithmetic


def _corners(function: Callable[[int, int], int]) -> Callable[[Range, Range], Range | None]:
    """Range semantics of an op monotone in each argument: the extremes are at the corners."""

    def apply(a: Range, b: Range) -> Range | None:
        values = [function(x, y) for x in a for y in b]
        return min(values), max(values)

    return apply


def _division(function: Callable[[int, int], int]) -> Callable[[Range, Range], Range | None]:
    """Division is monotone in each argument while the divisor keeps its sign."""
    corners = _corners(function)
    return lambda a, b: None if b[0] <= 0 <= b[1] else corners(a, b)


def _truncdiv(x: int, y: int) -> int:
    quotient = abs(x) // abs(y)
    return quotient if (x >= 0) == (y > 0) else -quotient


def _remainder(a: Range, b: Range) -> Range | None:
    if b[0] != b[1] or b[0] <= 0:
        return None
    c = b[0]
    if a[0] >= 0 and a[0] // c == a[1] // c:
        return a[0] % c, a[1] % c
    return (0, c - 1) if a[0] >= 0 else (1 - c, c - 1)


BINARY: dict[str, Callable[[Range, Range], Range | None]] = {
    "arith.addi": _corners(lambda x, y: x + y),
    "arith.subi": _corners(lambda x, y: x - y),
    "arith.muli": _corners(lambda x, y: x * y),
    "arith.minsi": _corners(min),
    "arith.minui": _corners(min),
    "arith.maxsi": _corners(max),
    "arith.maxui": _corners(max),
    "arith.divsi": _division(_truncdiv),
    "arith.divui": _division(lambda x, y: x // y),
    "arith.floordivsi": _division(lambda x, y: x // y),
    "arith.ceildivsi": _division(lambda x, y: -(-x // y)),
    "arith.ceildivui": _division(lambda x, y: -(-x // y)),
    "arith.remsi": _remainder,
    "arith.remui": _remainder,
}
"""Index arithmetic on ranges, by op name."""

CASTS = ("arith.index_cast", "arith.index_castui")


def constant_of(op: Operation) -> int | None:
    """The value of an integer/index arith.constant, else None."""
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def constant_index(value: SSAValue) -> int | None:
    """The value of `value` when an integer/index arith.constant defines it, else None."""
    owner = value.owner
    return constant_of(owner) if isinstance(owner, Operation) else None


def loop_bounds(loop: scf.ForOp) -> tuple[int, int, int] | None:
    """(lb, ub, step) when all three are `index` constants and step > 0, else None."""
    if not isinstance(loop.lb.type, IndexType):
        return None
    lb, ub, step = (constant_index(v) for v in (loop.lb, loop.ub, loop.step))
    if lb is None or ub is None or step is None or step <= 0:
        return None
    return lb, ub, step


def trip_count(loop: scf.ForOp) -> int | None:
    """How many times `loop` runs its body (`loop_bounds` known), else None."""
    bounds = loop_bounds(loop)
    if bounds is None:
        return None
    lb, ub, step = bounds
    return max(0, -(-(ub - lb) // step))


def induction_range(loop: scf.ForOp) -> Range | None:
    """The values the induction variable of `loop` takes; None when unknown or none (no trip)."""
    bounds, trips = loop_bounds(loop), trip_count(loop)
    if bounds is None or not trips:
        return None
    return bounds[0], bounds[0] + (trips - 1) * bounds[2]


def evaluate_index_op(op: Operation, operands: Sequence[Range | None]) -> Range | None:
    """The range of the result of index op `op` given its operands' ranges (None: unknown)."""
    value = constant_of(op)
    if value is not None:
        return value, value
    if op.name in CASTS:
        return operands[0]
    rule = BINARY.get(op.name)
    if rule is None or len(operands) != 2 or operands[0] is None or operands[1] is None:
        return None
    return rule(operands[0], operands[1])


class IndexRanges:
    """Evaluates index SSA values to ranges, given the ranges of loop induction variables."""

    def __init__(self, loops: Mapping[SSAValue, Range]):
        self.loops = loops
        self.cache: dict[SSAValue, Range | None] = {}

    def __call__(self, value: SSAValue) -> Range | None:
        if value in self.loops:
            return self.loops[value]
        if value not in self.cache:
            owner = value.owner
            if not isinstance(owner, Operation):
                self.cache[value] = None
            else:
                self.cache[value] = evaluate_index_op(owner, [self(v) for v in owner.operands])
        return self.cache[value]


class StaticIndexRanges(IndexRanges):
    """`IndexRanges` with no loop context: the induction variable of every scf.for takes all
    the values of its loop (`induction_range`; unknown without constant bounds), so a range
    holds over the whole run. Build one per question: it caches, and the IR may change."""

    def __init__(self) -> None:
        super().__init__({})

    def __call__(self, value: SSAValue) -> Range | None:
        if isinstance(value, BlockArgument) and value.index == 0:
            loop = value.block.parent_op()
            if isinstance(loop, scf.ForOp):
                return induction_range(loop)
        return super().__call__(value)


def depends_on(value: SSAValue, induction: SSAValue) -> bool:
    """Whether index `value` may vary with `induction` (unknown ops: conservatively yes)."""
    if value is induction:
        return True
    owner = value.owner
    if not isinstance(owner, Operation):
        return False  # another loop's induction variable
    if constant_of(owner) is not None:
        return False
    if owner.name not in BINARY and owner.name not in CASTS:
        return True
    return any(depends_on(v, induction) for v in owner.operands)


# --------------------------------------------------------------------------- storages and views


@dataclass(frozen=True)
class View:
    """A buffer as seen by the memory model: `shape` elements of `itemsize` bytes, row-major,
    from byte `base` of `storage` (a planned memory space name or the root buffer value)."""

    storage: Hashable
    base: int
    shape: tuple[int, ...]
    itemsize: int
    name: str

    def nbytes(self) -> int:
        return math.prod(self.shape) * self.itemsize


def planned_offset(root: SSAValue) -> int | None:
    """The byte offset plan-memory gave root buffer `root`, if any."""
    owner = root.owner
    if isinstance(owner, tile.AllocOp | tile.ConstOp):
        return owner.offset.value.data if owner.offset is not None else None
    if isinstance(root, BlockArgument) and isinstance(owner.parent_op(), func.FuncOp):
        function = owner.parent_op()
        assert isinstance(function, func.FuncOp)
        attrs = function.arg_attrs.data[root.index].data if function.arg_attrs else {}
        offset = attrs.get("tile.offset")
        return offset.value.data if isinstance(offset, IntegerAttr) else None
    return None


def root_of(buffer: SSAValue) -> SSAValue:
    """The buffer `buffer` is a view of (tile.reshape followed to its source)."""
    while isinstance(buffer.owner, tile.ReshapeOp):
        buffer = buffer.owner.source
    return buffer


def view_of(buffer: SSAValue) -> View:
    type_ = buffer.type
    assert isinstance(type_, MemRefType)
    root = root_of(buffer)
    name = f"%{root.name_hint}" if root.name_hint else f"a {tile.space_of(root)} buffer"
    shape, itemsize = tuple(type_.get_shape()), numpy_dtype(type_.get_element_type()).itemsize
    offset = planned_offset(root)
    if offset is None:
        return View(root, 0, shape, itemsize, name)
    return View(tile.space_of(root), offset, shape, itemsize, name)


# --------------------------------------------------------------------------- windows


@dataclass(frozen=True)
class Access:
    """One window of a compute op: its view (of `buffer`), index operands, box, and whether it
    is written (the last access: dst / acc) and read (the sources; an accumulating matmul's
    acc too)."""

    name: str
    view: View
    indices: tuple[SSAValue, ...]
    box: tuple[int, ...]
    write: bool
    buffer: SSAValue
    read: bool


def accesses(op: tile.WindowOp) -> list[Access]:
    """The windows of `op`; the last access (dst / acc) is the one it writes."""
    result = []
    accumulates = isinstance(op, tile.MatmulOp) and op.accumulate is not None
    for position, (name, (buffer, indices)) in enumerate(zip(op.ACCESSES, op.accesses(), strict=True)):
        write = position == len(op.ACCESSES) - 1
        view, box = view_of(buffer), op.window_shape(name)
        result.append(Access(name, view, indices, box, write, buffer, not write or accumulates))
    return result


def window_box(starts: Sequence[Range | None], box: Sequence[int], shape: Sequence[int]) -> tuple[Range, ...]:
    """Per dim, the inclusive index range a window of `box` at `starts` may cover, clipped to
    `shape` (an unknown start: the whole dim). Empty (last < first) for a window outside it."""
    return tuple(
        (0, dim - 1) if start is None else (max(0, start[0]), min(dim - 1, start[1] + size - 1))
        for start, size, dim in zip(starts, box, shape, strict=True)
    )


def _covered(view: View, starts: Sequence[Range | None], box: Sequence[int]) -> tuple[list[int], list[int]]:
    """Per dim, the first index and the extent the window may cover (clipped to the view; the
    whole dim where `window_box` is empty, as for an unknown start)."""
    lows, extents = [], []
    for (low, high), dim in zip(window_box(starts, box, view.shape), view.shape, strict=True):
        if high < low:
            low, high = 0, dim - 1
        lows.append(low)
        extents.append(high - low + 1)
    return lows, extents


def window_bytes(view: View, starts: Sequence[Range | None], box: Sequence[int]) -> Intervals:
    """Sorted disjoint byte intervals [lo, hi) of the storage that the window may touch."""
    lows, extents = _covered(view, starts, box)
    strides = [math.prod(view.shape[d + 1 :]) for d in range(len(view.shape))]
    partial = len(extents)
    while partial and extents[partial - 1] == view.shape[partial - 1]:
        partial -= 1
    if partial == 0:
        return np.array([view.base]), np.array([view.base + view.nbytes()])
    inner = partial - 1  # dims after `inner` are whole, so each run spans them
    run = extents[inner] * strides[inner]
    if math.prod(extents[:inner]) > MAX_RUNS:
        first = sum(low * stride for low, stride in zip(lows, strides, strict=True))
        last = sum((low + extent - 1) * s for low, extent, s in zip(lows, extents, strides, strict=True))
        hull_lo, hull_hi = view.base + first * view.itemsize, view.base + (last + 1) * view.itemsize
        return np.array([hull_lo]), np.array([hull_hi])
    offsets = np.array([lows[inner] * strides[inner]], np.int64)
    for d in range(inner - 1, -1, -1):
        rows = (lows[d] + np.arange(extents[d], dtype=np.int64)) * strides[d]
        offsets = (rows[:, None] + offsets[None, :]).ravel()
    lo = view.base + view.itemsize * offsets
    return lo, lo + view.itemsize * run


def access_bytes(access: Access, ranges: Callable[[SSAValue], Range | None]) -> Intervals:
    """The byte intervals of `access` with its indices evaluated by `ranges`."""
    return window_bytes(access.view, [ranges(i) for i in access.indices], access.box)


def overlap(a: Intervals, b: Intervals) -> bool:
    """Whether two sorted disjoint interval sets share a byte."""
    a_lo, a_hi = a
    b_lo, b_hi = b
    if not (a_lo[0] < b_hi[-1] and b_lo[0] < a_hi[-1]):
        return False
    if len(b_lo) == 1 or len(a_lo) == 1:  # one interval against sorted ones: one bisection
        (a_lo, a_hi), (b_lo, b_hi) = ((a_lo, a_hi), (b_lo, b_hi)) if len(b_lo) == 1 else (b, a)
        last = int(a_lo.searchsorted(b_hi[0], "left")) - 1  # the last a starting before b's end
        return last >= 0 and bool(a_hi[last] > b_lo[0])
    last = a_lo.searchsorted(b_hi, "left") - 1  # per b interval: the last a starting before its end
    clipped = np.maximum(last, 0)
    return bool(((last >= 0) & (a_hi[clipped] > b_lo)).any())
