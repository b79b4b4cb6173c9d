"""The must/may regions multi-buffer reasons with (passes/tile/multi_buffer/regions.py): unions
of boxes covering a region, windows on reshaped views mapped back to boxes of the root, and
the bounds of what a view window may touch (at constant indices, or swept by a loop), checked
against numpy masks of the same windows.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, f32
from xdsl.ir import Block, SSAValue

from aitc.dialects import tile
from aitc.passes.tile.multi_buffer.regions import covers, flat_bounds, flat_box, view_bounds, view_region


def _mask(shape, box) -> np.ndarray:
    mask = np.zeros(shape, bool)
    mask[tuple(slice(low, high + 1) for low, high in box)] = True
    return mask


def test_a_stage_is_covered_by_its_padding_strips_and_interior_together():
    whole = ((0, 31), (0, 8), (0, 8))
    strips = [
        ((0, 31), (0, 0), (0, 8)),
        ((0, 31), (8, 8), (0, 8)),
        ((0, 31), (0, 8), (0, 0)),
        ((0, 31), (0, 8), (8, 8)),
    ]
    interior = ((0, 31), (1, 7), (1, 7))
    assert covers([*strips, interior], whole)
    assert not covers(strips, whole)
    assert not covers([*strips[1:], interior], whole)  # the top row is missing
    assert covers([((0, 1),), ((2, 3),)], ((0, 3),))
    assert not covers([((0, 0),), ((2, 3),)], ((0, 3),))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_covers_agrees_with_a_mask(data):
    shape = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))

    def box():
        bounds = [sorted(data.draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2))) for n in shape]
        return tuple((low, high) for low, high in bounds)

    boxes = [box() for _ in range(data.draw(st.integers(0, 4)))]
    region = box()
    union = np.zeros(shape, bool)
    for b in boxes:
        union |= _mask(shape, b)
    assert covers(boxes, region) == bool(union[_mask(shape, region)].all())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3), st.data())
def test_flat_box_is_exact_and_flat_bounds_hold_the_range(shape, data):
    size = math.prod(shape)
    low = data.draw(st.integers(0, size - 1))
    high = data.draw(st.integers(low + 1, size))
    flat = np.zeros(size, bool)
    flat[low:high] = True
    flat = flat.reshape(shape)
    box = flat_box(shape, low, high)
    if box is not None:
        assert np.array_equal(_mask(shape, box), flat)
    bounds = flat_bounds(shape, low, high - 1)
    assert _mask(shape, bounds)[flat].all()


def _index(value: int):
    return arith.ConstantOp(IntegerAttr(value, IndexType())).result


def test_windows_on_views_map_to_boxes_of_the_root():
    root = tile.AllocOp(tile.buffer_type([32, 9, 9], f32, "sram")).buffer
    lines = [32 * 9, 9]  # the stage seen [tc * Hs, Ws]: a column strip is a box of the root
    assert view_region(root, lines, [_index(0), _index(8)], [288, 1]) == ((0, 31), (0, 8), (8, 8))
    planes = [32, 81]  # seen [tc, Hs * Ws]: a row strip is one too
    assert view_region(root, planes, [_index(0), _index(72)], [32, 9]) == ((0, 31), (8, 8), (0, 8))
    # a tap's run of a plane (wide positions) wraps rows: no box, only its bounds are known
    stage = tile.AllocOp(tile.buffer_type([32, 10, 16], f32, "sram")).buffer
    assert view_region(stage, [32, 160], [_index(0), _index(34)], [32, 94]) is None
    assert view_bounds(stage, [32, 160], [_index(0), _index(34)], [32, 94]) == ((0, 31), (2, 7), (0, 15))
    weights = tile.AllocOp(tile.buffer_type([171, 288], f32, "sram")).buffer
    taps = [171, 9, 32]  # a remainder tile of fewer rows through the 3-d view
    assert view_region(weights, taps, [_index(0)] * 3, [170, 9, 32]) == ((0, 169), (0, 287))
    assert view_region(weights, taps, [_index(0)] * 3, [170, 9, 16]) is None


def _factor(data, shape) -> list[int]:
    """A random shape with the same number of elements as `shape` (ones inserted anywhere)."""
    total = math.prod(shape)
    dims = []
    while total > 1:
        divisors = [d for d in range(2, total + 1) if total % d == 0]
        d = data.draw(st.sampled_from(divisors))
        dims.append(d)
        total //= d
    for _ in range(data.draw(st.integers(0, 2))):
        dims.insert(data.draw(st.integers(0, len(dims))), 1)
    return dims or [1]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_view_windows_map_to_the_root_soundly(data):
    """Against numpy: `view_region` is exactly the window's elements when it gives a box, and
    `view_bounds` always holds them, for random reshapes (dims of 1 included) and windows."""
    root_shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    view_shape = _factor(data, root_shape)
    starts = [data.draw(st.integers(0, n - 1)) for n in view_shape]
    box = [data.draw(st.integers(1, n - s)) for n, s in zip(view_shape, starts, strict=True)]
    root = tile.AllocOp(tile.buffer_type(root_shape, f32, "sram")).buffer
    window = np.zeros(view_shape, bool)
    window[tuple(slice(s, s + b) for s, b in zip(starts, box, strict=True))] = True
    want = window.reshape(root_shape)
    indices = [_index(s) for s in starts]
    exact = view_region(root, view_shape, indices, box)
    if exact is not None:
        assert np.array_equal(_mask(root_shape, exact), want)
    bounds = view_bounds(root, view_shape, indices, box)
    assert _mask(root_shape, bounds)[want].all()


def _loop_index(lb: int, ub: int, step: int, offset: int) -> SSAValue:
    """`iv + offset` for the induction variable of an scf.for from lb to ub by step."""
    loop = scf.ForOp(_index(lb), _index(ub), _index(step), [], Block(arg_types=[IndexType()]))
    iv = loop.body.block.args[0]
    return iv if offset == 0 else arith.AddiOp(iv, _index(offset)).result


def test_a_view_window_in_a_loop_is_bounded_by_the_rows_it_sweeps():
    """A direct conv's 6-row block reads its stage [128 x 8 x 14] as [128, 112] windows of 32
    columns at j = 0, 32 (a loop): rows 0..4 of every channel, not the whole stage (whose
    rows 6 and 7 the block never writes), so multi-buffer can rotate the stage."""
    stage = tile.AllocOp(tile.buffer_type([128, 8, 14], f32, "sram")).buffer
    bounds = view_bounds(stage, [128, 112], [_index(0), _loop_index(0, 64, 32, 0)], [32, 32])
    assert bounds == ((0, 31), (0, 4), (0, 13))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_view_windows_swept_by_a_loop_stay_in_their_bounds(data):
    """Against numpy: a window on a view whose start in one dim is `iv + offset` of a loop
    touches, over all the loop's iterations, only elements inside `view_bounds`."""
    root_shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    view_shape = _factor(data, root_shape)
    dim = data.draw(st.integers(0, len(view_shape) - 1))
    box = [data.draw(st.integers(1, n)) for n in view_shape]
    starts = [data.draw(st.integers(0, n - b)) for n, b in zip(view_shape, box, strict=True)]
    last = view_shape[dim] - box[dim]  # the highest start the swept dim may take
    offset = data.draw(st.integers(0, last))
    step = data.draw(st.integers(1, 3))
    ub = data.draw(st.integers(1, last - offset + 1))
    root = tile.AllocOp(tile.buffer_type(root_shape, f32, "sram")).buffer
    touched = np.zeros(view_shape, bool)
    for iv in range(0, ub, step):
        at = [*starts[:dim], iv + offset, *starts[dim + 1 :]]
        touched[tuple(slice(s, s + b) for s, b in zip(at, box, strict=True))] = True
    indices: list[SSAValue] = [_index(s) for s in starts]
    indices[dim] = _loop_index(0, ub, step, offset)
    bounds = view_bounds(root, view_shape, indices, box)
    assert _mask(root_shape, bounds)[touched.reshape(root_shape)].all()
