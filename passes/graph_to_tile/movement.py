"""Data movement for convert-graph-to-tile: reshape, concat, slice, split, tile, pad, and the
copy of an output that is an input or a constant (transpose.py and gather.py move data too).

Everything but reshape (a `tile.reshape` view, no kernel) moves DRAM -> SRAM -> DRAM in tiles
that fit the SRAM budget. `copy_box` is the workhorse: an n-d box of the source (per dim an
offset and a step, so slices with steps and broadcast dims work) goes to a box of the
destination; dims with step 1 on both sides are tiled (innermost first), the others looped:

    for each tile of the box:      (one scf.for per dim that needs more than one tile)
      tile.copy src[...] to stage[0, ...]        sizes = tile
      tile.copy stage[0, ...] to dst[...]        sizes = tile
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from aitc.dialects import graph, tile
from aitc.passes.graph_to_tile.builder import (
    Index,
    KernelBuilder,
    Win,
    buffer_element,
    buffer_shape,
    element_bytes,
)
from aitc.passes.graph_to_tile.costs import RowFootprint, plan_box, plan_rows
from aitc.passes.graph_to_tile.elementwise import fill
from aitc.passes.graph_to_tile.lowering import (
    CannotFit,
    LoweringContext,
    flat2d,
    tensor_element,
    tensor_shape,
)


@dataclass(frozen=True)
class Axis:
    """One dim of a box copy: `extent` elements, at src[offset + step * i], dst[offset + i*step]."""

    extent: int
    src: tuple[Index, int] = (0, 1)
    dst: tuple[Index, int] = (0, 1)

    @property
    def tileable(self) -> bool:
        return self.src[1] == 1 and self.dst[1] == 1


def plan_copy(
    ctx: LoweringContext, op: Operation, axes_list: Sequence[Sequence[Axis]], element: int, share: int = 1
) -> tuple[int, ...]:
    """One staging box for several copies of the same rank, within 1/`share` of the SRAM
    budget: planned over the largest extent any copy has along each dim (a dim tiles where
    some copy can tile it; a copy that cannot steps through it one element at a time). The
    copies' own boxes, merged dim by dim, could together exceed the budget (a concat of a
    thin slab and a thick one: the slab's whole channels, the slab's rows)."""
    extents = tuple(max(a[d].extent for a in axes_list) for d in range(len(axes_list[0])))
    tileable = tuple(any(a[d].tileable for a in axes_list) for d in range(len(axes_list[0])))
    box = plan_box(extents, tileable, element, ctx.budget.sram // share)
    if box is None:
        raise CannotFit(op, "one element", element, ctx.budget)
    return box


def copy_box(kb: KernelBuilder, src: SSAValue, dst: SSAValue, axes: Sequence[Axis], stage: SSAValue) -> None:
    """Copies the box described by `axes` from `src` to `dst` through SRAM buffer `stage`."""
    limits = buffer_shape(stage)

    def level(depth: int, offsets: list[Index], sizes: list[int]) -> None:
        if depth == len(axes):
            src_idx = [kb.add(a.src[0], kb.mul(o, a.src[1])) for a, o in zip(axes, offsets, strict=True)]
            dst_idx = [kb.add(a.dst[0], kb.mul(o, a.dst[1])) for a, o in zip(axes, offsets, strict=True)]
            kb.copy(Win(src, tuple(src_idx)), Win.at(stage), sizes)
            kb.copy(Win.at(stage), Win(dst, tuple(dst_idx)), sizes)
            return
        size = min(limits[depth], axes[depth].extent) if axes[depth].tileable else 1
        kb.tiles(axes[depth].extent, size, lambda o, s: level(depth + 1, [*offsets, o], [*sizes, s]))

    level(0, [], [])


def _box_kernel(
    ctx: LoweringContext,
    op: Operation,
    copies: list[tuple[SSAValue, SSAValue, list[Axis]]],
    reason: str,
    name: str | None = None,
) -> None:
    """One kernel doing `copies` (src, dst, axes) through one staging buffer."""
    element_type = buffer_element(copies[0][1])
    box = plan_copy(ctx, op, [axes for _, _, axes in copies], element_bytes(element_type))
    kb = ctx.kernel([op], name)
    kb.cost.staged = True  # loads and stores share the stage
    stage = kb.alloc(box, element_type, "sram")
    for src, dst, axes in copies:
        copy_box(kb, src, dst, axes, stage)
    ctx.add(kb, box, reason)


def copy_value(
    ctx: LoweringContext, op: Operation, src: SSAValue, dst: SSAValue, name: str | None = None
) -> None:
    """A kernel copying DRAM buffer `src` to `dst` (same element count), located at `op`."""
    rows, cols = flat2d(buffer_shape(dst))
    src2, dst2 = ctx.view(src, [rows, cols]), ctx.view(dst, [rows, cols])
    reason = "copy through SRAM (an output that is an input, a constant, a view or another output)"
    _box_kernel(ctx, op, [(src2, dst2, [Axis(rows), Axis(cols)])], reason, name)


# --------------------------------------------------------------------------- views


def lower_reshape(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.ReshapeOp)
    ctx.buffers[op.output] = ctx.view(ctx.buffer(op.input), tensor_shape(op.output) or (1,))


# --------------------------------------------------------------------------- box copies


def _three_d(shape: Sequence[int], axis: int) -> list[int]:
    return [math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])]


def lower_concat(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.ConcatOp)
    axis = op.axis.value.data if op.axis else 0
    out_shape = _three_d(tensor_shape(op.output), axis)
    out = ctx.value_view(op.output, out_shape)
    copies, offset = [], 0
    for value in op.inputs:
        shape = _three_d(tensor_shape(value), axis)
        axes = [Axis(shape[0]), Axis(shape[1], dst=(offset, 1)), Axis(shape[2])]
        copies.append((ctx.value_view(value, shape), out, axes))
        offset += shape[1]
    _box_kernel(ctx, op, copies, f"{len(copies)} inputs copied into their slices along axis {axis}")


def lower_split(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.SplitOp)
    axis = op.axis.value.data if op.axis else 0
    source = ctx.value_view(op.input, _three_d(tensor_shape(op.input), axis))
    copies, offset = [], 0
    for value in op.outputs:
        shape = _three_d(tensor_shape(value), axis)
        axes = [Axis(shape[0]), Axis(shape[1], src=(offset, 1)), Axis(shape[2])]
        copies.append((source, ctx.value_view(value, shape), axes))
        offset += shape[1]
    _box_kernel(ctx, op, copies, f"{len(copies)} slices along axis {axis} copied out")


def lower_slice(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.SliceOp)
    shape = tensor_shape(op.input)
    starts = graph.ints_of(op.starts, [0] * len(shape))
    steps = graph.ints_of(op.steps, [1] * len(shape))
    out = tensor_shape(op.output)
    # a dim of n read every s-th element (s > 1 dividing n) is viewed as [n / s, s]: the
    # elements read are then a unit-step range of the first, at one index of the second, so
    # the dim tiles (one DMA row per element, its stride s elements) instead of being looped
    src_shape: list[int] = []
    dst_shape: list[int] = []
    axes: list[Axis] = []
    for n, count, start, step in zip(shape, out, starts, steps, strict=True):
        if step > 1 and n % step == 0 and count > 1:
            src_shape += [n // step, step]
            dst_shape += [count, 1]
            axes += [Axis(count, src=(start // step, 1)), Axis(1, src=(start % step, 1))]
        else:
            src_shape.append(n)
            dst_shape.append(count)
            axes.append(Axis(count, src=(start, step)))
    src, dst = ctx.value_view(op.input, src_shape or (1,)), ctx.value_view(op.output, dst_shape or (1,))
    reason = "strided dims viewed [n / step, step] and tiled where the step divides them, else looped"
    _box_kernel(ctx, op, [(src, dst, axes or [Axis(1)])], reason)


def lower_tile(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.TileOp)
    shape, reps = tensor_shape(op.input), graph.ints_of(op.repeats)
    src, dst = ctx.buffer(op.input), ctx.buffer(op.output)
    box = plan_copy(ctx, op, [[Axis(n) for n in shape]], element_bytes(tensor_element(op.input)))
    kb = ctx.kernel([op])
    kb.cost.staged = True  # loads and stores share the stage
    stage = kb.alloc(box, tensor_element(op.input), "sram")

    def repeat(indices: list[Index]) -> None:
        axes = [Axis(n, dst=(kb.mul(r, n), 1)) for n, r in zip(shape, indices, strict=True)]
        copy_box(kb, src, dst, axes, stage)

    kb.nest(reps, repeat)
    ctx.add(kb, box, "the input box copied once per repetition")


def pad_unsupported(op: Operation) -> str | None:
    assert isinstance(op, graph.PadOp)
    if op.pad_mode() != "constant":
        return f"pad mode '{op.pad_mode()}' is not lowered yet (only constant)"
    if str(tensor_element(op.input)) not in ("f32", "i32", "i8"):
        return "the pad fill runs on the vector engine: f32, i32 or i8 only"
    return None


def lower_pad(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.PadOp)
    shape, out_shape, pads = tensor_shape(op.input), tensor_shape(op.output), graph.ints_of(op.pads)
    n, element_type = len(shape), tensor_element(op.input)
    rows, cols = flat2d(out_shape)
    fill_tiles = plan_rows(rows, cols, RowFootprint(element_bytes(element_type)), ctx.budget.sram // 2, False)
    axes = [
        Axis(d - max(0, -pads[i]) - max(0, -pads[i + n]), src=(max(0, -pads[i]), 1), dst=(max(0, pads[i]), 1))
        for i, d in enumerate(shape)
    ]
    box = plan_copy(ctx, op, [axes], element_bytes(element_type), share=2) if axes else (1,)
    if fill_tiles is None:
        raise CannotFit(op, "one element of the pad fill", element_bytes(element_type), ctx.budget)
    kb = ctx.kernel([op])
    kb.cost.staged = True  # loads and stores share the stage
    tr, tc = fill_tiles
    pattern = kb.alloc([tr, tc], element_type, "sram")
    fill(kb, Win.at(pattern), op.value.value.data if op.value else 0.0, [tr, tc])
    out2 = ctx.value_view(op.output, [rows, cols])
    kb.tiles(
        rows,
        tr,
        lambda r0, rs: kb.tiles(
            cols, tc, lambda c0, cs: kb.copy(Win.at(pattern), Win(out2, (r0, c0)), [rs, cs])
        ),
    )
    if all(a.extent > 0 for a in axes):
        stage = kb.alloc(box, element_type, "sram")
        copy_box(kb, ctx.buffer(op.input), ctx.buffer(op.output), axes, stage)
    ctx.add(
        kb, [tr, tc, *box], "the fill tile is stored over the output, then the input is copied into place"
    )


def kernel_view(kb: KernelBuilder, buffer: SSAValue, shape: Sequence[int]) -> SSAValue:
    """A tile.reshape view of a kernel's SRAM buffer (emitted in the kernel, after the allocs)."""
    if buffer_shape(buffer) == tuple(shape):
        return buffer
    return kb.emit(tile.ReshapeOp(buffer, shape)).results[0]
