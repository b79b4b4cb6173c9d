"""What a window op may read of a buffer and what it certainly writes, as boxes of indices.

The windows, their reads and writes, and the index ranges are the shared tile access analysis
(`aitc.analysis.tile_footprint`: `accesses`, `StaticIndexRanges`, `window_box`). That analysis
answers "which bytes may an op touch" (enough to order two ops); `multi-buffer` also asks which
bytes an op *certainly* writes, so that a later read of them is known to see this iteration's
data. That must-side is kept here, as boxes (per dim an inclusive index range) rather than byte
intervals, so that the windows a loop writes at `iv + c` join into what the whole loop writes:

    scf.for %i = 0 to 8 step 4 {
      tile.copy %x[%i, %c0] to %a[%i, %c0] sizes [4, 16]    an iteration writes rows %i .. %i + 3
    }                                                        the loop writes rows 0 .. 7 of %a
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.ir import Operation, SSAValue

from aitc.analysis import tile_footprint
from aitc.analysis.liveness import users
from aitc.analysis.tile_footprint import (
    Range,
    StaticIndexRanges,
    constant_index,
    loop_bounds,
    root_of,
    trip_count,
    window_box,
)
from aitc.dialects import tile

Box = tuple[Range, ...]
"""A region of a buffer: per dim an inclusive (first, last) index range."""


@dataclass(frozen=True)
class Effect:
    """What one window op does to a buffer: the region it may read (None: no read) and the
    region it certainly writes (None: none, or not known exactly); `window`: the window
    itself (buffer, index operands, box), which names the same bytes wherever the same values
    index it (`exposure.scan` matches a read against the writes before it in one iteration)."""

    read: Box | None
    write: Box | None
    writes: bool
    window: Window | None = None


Window = tuple[SSAValue, tuple[SSAValue, ...], tuple[int, ...]]
"""A window by name: the buffer (or view) value, its index operands and its box."""


def whole(shape: Sequence[int]) -> Box:
    return tuple((0, d - 1) for d in shape)


def window_region(buffer: SSAValue, indices: Sequence[SSAValue], box: Sequence[int]) -> tuple[Box, bool]:
    """(region covered, exact?) of a window on `buffer` itself (not a view), over the whole run."""
    shape = tuple(tile.memref_of(buffer).get_shape())
    ranges = StaticIndexRanges()
    starts = [ranges(index) for index in indices]
    exact = all(start is not None and start[0] == start[1] for start in starts)
    return window_box(starts, box, shape), exact


def fills(op: tile.WindowOp) -> bool:
    """`op` starts a fill (graph_to_tile_elementwise.fill): x = (x == 0) in place, then
    x = x * 0, so what x held does not matter (0 or 1, even for NaN or inf, times 0)."""
    after = op.next_op
    return (
        isinstance(op, tile.BinaryImmOp)
        and op.op is not None
        and op.op.data == "cmp_eq"
        and isinstance(after, tile.BinaryImmOp)
        and after.op is not None
        and after.op.data == "mul"
        and after.imm is not None
        and after.imm.value.data == 0.0
        and op.accesses()[0] == op.accesses()[1] == after.accesses()[0] == after.accesses()[1]
        and op.box() == after.box()
    )


def effects(op: tile.WindowOp, root: SSAValue) -> list[Effect]:
    """The effects of `op` on the bytes of `root` (directly or through a view). A window on a
    view reads what `view_bounds` holds (the whole root when an index range is unknown), and
    writes all of it only when it covers the whole view. The
    first op of a fill reads nothing that matters: it only writes. A window on a view (a
    reshape of the whole root) at constant indices that is one contiguous run of the view's
    elements, which is a box of the root, is that box (`view_region`)."""
    found = []
    filling = fills(op)
    for window in tile_footprint.accesses(op):
        buffer, indices = window.buffer, window.indices
        if root_of(buffer) is not root or (filling and not window.write):
            continue
        if buffer is root:
            region, exact = window_region(buffer, indices, window.box)
        elif (flat := view_region(root, window.view.shape, indices, window.box)) is not None:
            region, exact = flat, True
        else:
            exact = tuple(window.box) == window.view.shape and all(constant_index(i) == 0 for i in indices)
            region = view_bounds(root, window.view.shape, indices, window.box)
        read = region if window.read else None
        named = (buffer, tuple(indices), tuple(window.box))
        found.append(Effect(read, region if window.write and exact else None, window.write, named))
    return found


def view_region(
    root: SSAValue, view_shape: Sequence[int], indices: Sequence[SSAValue], box: Sequence[int]
) -> Box | None:
    """The box of `root` that a window of `box` at constant `indices` on a row-major reshape of
    it (`view_shape`) covers exactly, if it is one; else None: in each group of dims
    (`_spans`) the window must be one contiguous run that is a box of the group's root dims
    (`flat_box`)."""
    spans = _spans(root, view_shape, indices, box)
    if spans is None:
        return None
    region: list[tuple[int, int]] = []
    for dims, first, last, contiguous in spans:
        found = flat_box(dims, first, last + 1) if contiguous else None
        if found is None:
            return None
        region += found
    return tuple(region)


def view_bounds(
    root: SSAValue, view_shape: Sequence[int], indices: Sequence[SSAValue], box: Sequence[int]
) -> Box:
    """A box of `root` holding every element a window of `box` at `indices` on a row-major
    reshape of it (`view_shape`) may touch: per group of dims (`_spans`), the bounds of the
    flat range from the window's first element to its last, over every value the indices take
    (`_swept_spans`, for indices that vary with a loop); the whole root when an index range is
    not known or the shapes do not match."""
    spans = _spans(root, view_shape, indices, box)
    if spans is None:
        spans = _swept_spans(root, view_shape, indices, box)
    if spans is None:
        return whole(tile.memref_of(root).get_shape())
    return tuple(bound for dims, first, last, _ in spans for bound in flat_bounds(dims, first, last))


def _swept_spans(
    root: SSAValue, view_shape: Sequence[int], indices: Sequence[SSAValue], box: Sequence[int]
) -> list[tuple[list[int], int, int, bool]] | None:
    """`_spans` of the windows at every value the indices take over the run (an index that
    varies with a loop takes its range, `StaticIndexRanges`): per group, the flat index of the
    first element of the lowest window and of the last element of the highest one (a flat
    index only grows with each view index). None when a range is unknown."""
    ranges = StaticIndexRanges()
    found = [ranges(index) for index in indices]
    if any(r is None for r in found):
        return None
    lows = _spans_at(root, view_shape, [r[0] for r in found if r is not None], box)
    highs = _spans_at(root, view_shape, [r[1] for r in found if r is not None], box)
    if lows is None or highs is None:
        return None
    return [(low[0], low[1], high[2], False) for low, high in zip(lows, highs, strict=True)]


def _spans(
    root: SSAValue, view_shape: Sequence[int], indices: Sequence[SSAValue], box: Sequence[int]
) -> list[tuple[list[int], int, int, bool]] | None:
    """A window of `box` at `indices` on a row-major reshape of `root` (`view_shape`), per
    group of consecutive dims with equal products (a reshape only merges or splits within
    them, `_groups`): the root's dims of the group, the flat indices of the window's first
    and last element in it, and whether its elements there are one contiguous run (dims
    before its first partial one have extent 1, dims after it are whole). Groups of size-1
    dims without a root side are left out. None when an index is not constant, the window is
    empty or the shapes do not match."""
    return _spans_at(root, view_shape, [constant_index(i) for i in indices], box)


def _spans_at(
    root: SSAValue, view_shape: Sequence[int], starts: Sequence[int | None], box: Sequence[int]
) -> list[tuple[list[int], int, int, bool]] | None:
    """`_spans` with the window's start indices given as numbers (None: not known)."""
    root_shape = tuple(tile.memref_of(root).get_shape())
    if (
        any(s is None for s in starts)
        or 0 in box
        or 0 in root_shape
        or math.prod(view_shape) != math.prod(root_shape)
    ):
        return None
    spans = []
    for views, roots in _groups(view_shape, root_shape):
        dims = [root_shape[d] for d in roots]
        if not dims:
            continue
        if not views:  # root dims of size 1 without a view side
            spans.append((dims, 0, 0, True))
            continue
        shape, sizes = [view_shape[d] for d in views], [box[d] for d in views]
        partial = next((k for k in range(len(sizes)) if sizes[k] > 1), len(sizes) - 1)
        contiguous = all(sizes[k] == shape[k] for k in range(partial + 1, len(sizes)))
        strides = [math.prod(shape[k + 1 :]) for k in range(len(shape))]
        first = sum(starts[d] * stride for d, stride in zip(views, strides, strict=True))  # type: ignore[operator]
        last = first + sum((size - 1) * stride for size, stride in zip(sizes, strides, strict=True))
        spans.append((dims, first, last, contiguous))
    return spans


def flat_bounds(shape: Sequence[int], first: int, last: int) -> list[tuple[int, int]]:
    """The smallest box of a row-major array of `shape` holding flat elements first .. last:
    the dims before the first one where their indices differ are fixed, that one spans, the
    rest are whole."""
    size = math.prod(shape)
    a, b = np.unravel_index(min(first, size - 1), shape), np.unravel_index(min(last, size - 1), shape)
    for d in range(len(shape)):
        if a[d] != b[d]:
            return (
                [(int(a[k]), int(a[k])) for k in range(d)]
                + [(int(a[d]), int(b[d]))]
                + [(0, n - 1) for n in shape[d + 1 :]]
            )
    return [(int(i), int(i)) for i in a]


def _groups(a: Sequence[int], b: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """Consecutive dims of `a` and `b` (equal products) cut into groups of equal products."""
    groups, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        da, db = [i], [j]
        pa, pb = a[i] if i < len(a) else 1, b[j] if j < len(b) else 1
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb:
                pa, i = pa * a[i], i + 1
                da.append(i - 1)
            else:
                pb, j = pb * b[j], j + 1
                db.append(j - 1)
        groups.append(([d for d in da if d < len(a)], [d for d in db if d < len(b)]))
    return groups


def flat_box(shape: Sequence[int], low: int, high: int) -> Box | None:
    """The box of a row-major array of `shape` whose elements are exactly the flat range
    [low, high), if there is one: the outermost dim d whose index blocks the range starts and
    ends on, within one index of the dims before d."""
    for d in range(len(shape)):
        block = math.prod(shape[d + 1 :])
        if low % block or high % block:
            continue
        first, last = low // block, high // block - 1
        if first // shape[d] != last // shape[d]:
            continue  # the run crosses an index of an outer dim
        outer, box = first // shape[d], []
        for size in reversed(shape[:d]):
            outer, index = divmod(outer, size)
            box.insert(0, (index, index))
        return (*box, (first % shape[d], last % shape[d]), *((0, n - 1) for n in shape[d + 1 :]))
    return None


def covers(covered: Iterable[Box], region: Box) -> bool:
    """Whether the union of the `covered` boxes contains `region` (which a box alone may not:
    a stage's padding strips and its interior, say)."""
    boxes = list(covered)
    return _covered_by(boxes, region)


def _covered_by(boxes: list[Box], region: Box) -> bool:
    if any(high < low for low, high in region):
        return True
    for index, box in enumerate(boxes):
        if all(c[1] < r[0] or r[1] < c[0] for c, r in zip(box, region, strict=True)):
            continue  # disjoint
        # the parts of `region` outside `box`, one slab per dim, must be covered by the others
        rest, core = boxes[index + 1 :], list(region)
        for d, (c, r) in enumerate(zip(box, region, strict=True)):
            for part in ((r[0], min(r[1], c[0] - 1)), (max(r[0], c[1] + 1), r[1])):
                if part[0] <= part[1] and not _covered_by(rest, (*core[:d], part, *core[d + 1 :])):
                    return False
            core[d] = (max(r[0], c[0]), min(r[1], c[1]))
        return True
    return False


def holders(root: SSAValue) -> set[Operation]:
    """The ops that access the bytes of `root` (directly or through views; making a view is no
    access) and the ops around them: `op` or an op nested in it touches `root` exactly when `op`
    is in the set. From the uses of `root`, so it costs the uses, not the size of the IR; compute
    it again after the IR changes."""
    found: set[Operation] = set()
    if isinstance(root.owner, tile.ReshapeOp):
        return found  # a view is no root: nothing accesses it as one
    for user in users(root):
        node: Operation | None = user
        while node is not None and node not in found:  # an op in the set has its parents there
            found.add(node)
            node = node.parent_op()
    return found


def merge(boxes: list[Box]) -> list[Box]:
    """`boxes` with the ones that differ in one dim only and touch there joined."""
    boxes = list(dict.fromkeys(boxes))
    joined = True
    while joined:
        joined = False
        for i, a in enumerate(boxes):
            for j in range(i + 1, len(boxes)):
                b = boxes[j]
                differ = [d for d in range(len(a)) if a[d] != b[d]]
                if len(differ) > 1:
                    continue
                if differ:
                    d = differ[0]
                    if a[d][1] + 1 < b[d][0] or b[d][1] + 1 < a[d][0]:
                        continue
                    a = (*a[:d], (min(a[d][0], b[d][0]), max(a[d][1], b[d][1])), *a[d + 1 :])
                boxes[i] = a
                del boxes[j]
                joined = True
                break
            if joined:
                break
    return boxes


def _iv_offset(index: SSAValue, iv: SSAValue) -> int | None:
    """c when `index` is `iv + c` (c constant), else None."""
    if index is iv:
        return 0
    owner = index.owner
    if isinstance(owner, arith.AddiOp):
        a, b = owner.operands
        if a is iv and constant_index(b) is not None:
            return constant_index(b)
        if b is iv and constant_index(a) is not None:
            return constant_index(a)
    return None


def swept(loop: scf.ForOp, root: SSAValue) -> list[Box]:
    """Regions that all iterations of `loop` together certainly write: windows of `root` at
    `iv + c` in one dim (constant elsewhere) whose boxes tile a whole step."""
    bounds, trips = loop_bounds(loop), trip_count(loop)
    if bounds is None or not trips:
        return []
    lb, _, step = bounds
    iv = loop.body.block.args[0]
    runs: dict[tuple, list[Range]] = {}
    for op in loop.body.block.ops:
        if not isinstance(op, tile.WindowOp):
            continue
        name, (buffer, indices) = op.ACCESSES[-1], op.accesses()[-1]
        if buffer is not root:
            continue
        box, shape = op.window_shape(name), tile.memref_of(root).get_shape()
        offsets = [_iv_offset(i, iv) for i in indices]
        fixed = [constant_index(i) for i in indices]
        moving = [d for d, c in enumerate(offsets) if c is not None and fixed[d] is None]
        if len(moving) != 1 or any(fixed[d] is None for d in range(len(indices)) if d != moving[0]):
            continue
        d = moving[0]
        offset = offsets[d]
        assert offset is not None
        others = tuple(
            _fixed_dim(fixed[e], box[e], shape[e]) if e != d else (0, 0) for e in range(len(indices))
        )
        runs.setdefault((d, others), []).append((offset, offset + box[d] - 1))
    regions = []
    for (d, others), intervals in runs.items():
        for ((first, last),) in merge([(r,) for r in intervals]):
            if last - first + 1 >= step:
                size = tile.memref_of(root).get_shape()[d]
                full = (lb + first, min(size - 1, lb + (trips - 1) * step + last))
                regions.append((*others[:d], full, *others[d + 1 :]))
    return regions


def _fixed_dim(start: int | None, box: int, size: int) -> Range:
    """The rows a window with a constant `start` covers in a dim of `size`."""
    assert start is not None  # the caller only keeps windows whose other dims are constant
    return start, min(size - 1, start + box - 1)
