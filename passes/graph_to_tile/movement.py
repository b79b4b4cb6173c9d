"""Data movement for convert-graph-to-tile: reshape, transpose, concat, slice, split, tile,
pad, gather, and the copy of an output that is an input or a constant.

Everything but reshape (a `tile.reshape` view, no kernel) moves DRAM -> SRAM -> DRAM in tiles
that fit the SRAM budget. `copy_box` is the workhorse: an n-d box of the source (per dim an
offset and a step, so slices with steps and broadcast dims work) goes to a box of the
destination; dims with step 1 on both sides are tiled (innermost first), the others looped:

    for each tile of the box:      (one scf.for per dim that needs more than one tile)
      tile.copy src[...] to stage[0, ...]        sizes = tile
      tile.copy stage[0, ...] to dst[...]        sizes = tile

A transpose first drops unit dims and merges input dims that stay adjacent and in order
(`collapse_transpose`), then reads a 2-D block of output dims per iteration of the other output
dims: the last two, or when the last dim stays last, the last and the longest other one (one
DMA each way per block); when the input holds the block column-major, a `tile.transpose` writes
it out (one DMA per row of the shorter side).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import i32
from xdsl.ir import Operation, SSAValue

from aitc.analysis.graph_matching import constant_array
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
from aitc.weights import array_to_attr


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
    """One staging box for several copies of the same rank (the largest tile any needs), within
    1/`share` of the SRAM budget."""
    boxes = []
    for axes in axes_list:
        extents, tileable = tuple(a.extent for a in axes), tuple(a.tileable for a in axes)
        box = plan_box(extents, tileable, element, ctx.budget.sram // share)
        if box is None:
            raise CannotFit(op, "one element", element, ctx.budget)
        boxes.append(box)
    return tuple(max(sizes) for sizes in zip(*boxes, strict=True))


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
    axes = [Axis(n, src=(start, step)) for n, start, step in zip(out, starts, steps, strict=True)]
    src, dst = ctx.value_view(op.input, shape or (1,)), ctx.value_view(op.output, out or (1,))
    _box_kernel(ctx, op, [(src, dst, axes or [Axis(1)])], "strided dims are looped, unit-step dims tiled")


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


# --------------------------------------------------------------------------- transpose


def collapse_transpose(shape: Sequence[int], perm: Sequence[int]) -> tuple[list[int], list[int]]:
    """The same data movement on fewer dims: unit dims dropped, and input dims that stay next to
    each other and in order merged. A head split [16, 4, 16] -> [4, 16, 16] (perm 1, 0, 2) stays
    3-D, but [16, 4, 16] -> [4, 16, 16] with perm (1, 2, 0) is the 2-D transpose [16, 64] ->
    [64, 16]: one DMA per input row instead of one per input row and head."""
    kept = [d for d in range(len(shape)) if shape[d] != 1]
    where = {d: i for i, d in enumerate(kept)}
    runs: list[list[int]] = []  # runs of consecutive kept input dims, in output order
    for position in (where[d] for d in perm if shape[d] != 1):
        if runs and runs[-1][-1] + 1 == position:
            runs[-1].append(position)
        else:
            runs.append([position])
    by_input = sorted(range(len(runs)), key=lambda r: runs[r][0])
    merged = [math.prod(shape[kept[i]] for i in runs[r]) for r in by_input]
    return merged, [by_input.index(r) for r in range(len(runs))]


@dataclass(frozen=True)
class _TransposeBlocks:
    """How lower_transpose cuts the (collapsed) output: blocks of `tiles` over output dims
    `dims` (rows, cols), looped over the other ("lead") output dims; `copy`: the block's two
    dims keep their order (it is copied out, else transposed)."""

    perm: tuple[int, ...]
    out_shape: tuple[int, ...]
    dims: tuple[int, int]
    tiles: tuple[int, int]

    @property
    def copy(self) -> bool:
        return self.perm[self.dims[0]] < self.perm[self.dims[1]]

    @property
    def lead(self) -> list[int]:
        return [d for d in range(len(self.perm)) if d not in self.dims]


def _transpose_block(
    kb: KernelBuilder, plan: _TransposeBlocks, bufs: tuple, lead: list[Index], at: tuple
) -> None:
    """Output block [.., r0:r0+rs (dim i), .., c0:c0+cs (dim j)] at `lead` from the input (see the
    module docstring): one DMA in, one DMA out (a tile.transpose out when it turns)."""
    src, out, stage_in, stage_out = bufs
    r0, rs, c0, cs = at
    n, (i, j) = len(plan.perm), plan.dims
    out_idx: list[Index] = [0] * n
    for d, o in zip(plan.lead, lead, strict=True):
        out_idx[d] = o
    out_idx[i], out_idx[j] = r0, c0
    src_idx: list[Index] = [0] * n
    sizes = [1] * n
    for d in range(n):
        src_idx[plan.perm[d]] = out_idx[d]
    sizes[plan.perm[i]], sizes[plan.perm[j]] = rs, cs
    kb.copy(Win(src, tuple(src_idx)), Win.at(stage_in), sizes)
    out_sizes = [1] * n
    out_sizes[i], out_sizes[j] = rs, cs
    if plan.copy:  # the block keeps its layout: copy it out
        kb.copy(Win.at(stage_out), Win(out, tuple(out_idx)), out_sizes)
        return
    # column-major in the stage: transpose it out, into the output viewed as rows x last dim
    strides = [math.prod(plan.out_shape[d + 1 : n - 1]) for d in range(n - 1)]
    row = kb.linear([(out_idx[d], strides[d]) for d in range(n - 1)])
    kb.transpose(Win.at(stage_out), Win(out, (row, c0)), [cs, rs])


def _transpose_plan(
    ctx: LoweringContext, op: Operation, perm: list[int], out_shape: list[int]
) -> _TransposeBlocks:
    """Blocks over the last two output dims, or when the last dim stays last (a copy of whole
    rows), over the last dim and the longest other one (fewest DMAs: one per block each way)."""
    n = len(perm)
    dims = (n - 2, n - 1)
    if perm[-1] == n - 1:
        dims = (max(range(n - 1), key=lambda d: (out_shape[d], d)), n - 1)
    element = element_bytes(tensor_element(op.operands[0]))
    tiles = plan_rows(out_shape[dims[0]], out_shape[dims[1]], RowFootprint(element), ctx.budget.sram, False)
    if tiles is None:
        raise CannotFit(op, "one element", element, ctx.budget)
    return _TransposeBlocks(tuple(perm), tuple(out_shape), dims, tiles)


def lower_transpose(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.TransposeOp)
    shape, perm = collapse_transpose(tensor_shape(op.input), op.permutation())
    if len(perm) < 2 or perm == sorted(perm):
        copy_value(ctx, op, ctx.buffer(op.input), ctx.buffer(op.output))
        return
    out_shape = [shape[p] for p in perm]
    plan = _transpose_plan(ctx, op, perm, out_shape)
    (i, j), (tr, tc), n = plan.dims, plan.tiles, len(perm)
    element_type = tensor_element(op.input)
    kb = ctx.kernel([op])
    kb.cost.staged = True  # loads and stores share the stage
    stage = kb.alloc([tr, tc] if plan.copy else [tc, tr], element_type, "sram")
    box_in, box_out = [1] * n, [1] * n
    box_in[perm[i]], box_in[perm[j]] = tr, tc
    box_out[i], box_out[j] = tr, tc
    stage_in = kernel_view(kb, stage, box_in)
    out = ctx.value_view(op.output, out_shape)
    if plan.copy:
        stage_out, dst = kernel_view(kb, stage, box_out), out
    else:  # tile.transpose works on 2-D windows: the output as rows of dim i, columns of dim j
        stage_out, dst = stage, ctx.value_view(op.output, [math.prod(out_shape[:-1]), out_shape[-1]])
    bufs = (ctx.value_view(op.input, shape), dst, stage_in, stage_out)

    def block(lead: list[Index]) -> None:
        def tile(r0: Index, rs: int, c0: Index, cs: int) -> None:
            _transpose_block(kb, plan, bufs, lead, (r0, rs, c0, cs))

        kb.tiles(
            out_shape[i], tr, lambda r0, rs: kb.tiles(out_shape[j], tc, lambda c0, cs: tile(r0, rs, c0, cs))
        )

    kb.nest([out_shape[d] for d in plan.lead], block)
    how = "copied" if plan.copy else "transposed (tile.transpose)"
    ctx.add(kb, [tr, tc], f"output blocks of {tr} x {tc} read from the input and {how} out")


def kernel_view(kb: KernelBuilder, buffer: SSAValue, shape: Sequence[int]) -> SSAValue:
    """A tile.reshape view of a kernel's SRAM buffer (emitted in the kernel, after the allocs)."""
    if buffer_shape(buffer) == tuple(shape):
        return buffer
    return kb.emit(tile.ReshapeOp(buffer, shape)).results[0]


# --------------------------------------------------------------------------- gather


def gather_unsupported(op: Operation) -> str | None:
    assert isinstance(op, graph.GatherOp)
    if (op.axis.value.data if op.axis else 0) != 0:
        return "only gather on axis 0 (embedding lookup) is lowered"
    if str(tensor_element(op.indices)) not in ("i64", "i32"):
        return f"gather indices must be i64 or i32, got {tensor_element(op.indices)}"
    return None


def _indices(ctx: LoweringContext, op: graph.GatherOp, count: int) -> tuple[SSAValue, bool]:
    """The indices as a [count, 1] DRAM view and whether they may be negative. Constant indices
    become an i32 tile.const with negatives already wrapped."""
    table_rows = tensor_shape(op.input)[0]
    values = constant_array(op.indices)
    if values is not None:
        wrapped = np.where(values < 0, values + table_rows, values).astype(np.int32).reshape(count, 1)
        const = tile.ConstOp(array_to_attr(wrapped, "gather_indices"))
        const.location = op.location
        ctx.decls.append(const)
        return const.buffer, False
    return ctx.value_view(op.indices, [count, 1]), True


def _load_indices(
    kb: KernelBuilder, src: SSAValue, bufs: dict, r0: Index, rs: int, table_rows: int, signed: bool
) -> None:
    """idx[0:rs] = indices[r0:r0+rs] as i32 in [0, table_rows)."""
    idx = Win.at(bufs["idx"])
    if "wide" in bufs:  # i64 indices: narrowed by tile.cast
        kb.copy(Win(src, (r0, 0)), Win.at(bufs["wide"]), [rs, 1])
        kb.cast(Win.at(bufs["wide"]), idx, [rs, 1])
    else:
        kb.copy(Win(src, (r0, 0)), idx, [rs, 1])
    if signed:  # idx += (idx < 0) * table_rows
        mask = Win.at(bufs["mask"])
        kb.binary_imm("cmp_lt", idx, 0, mask, [rs, 1])
        kb.binary_imm("mul", mask, table_rows, mask, [rs, 1])
        kb.binary("add", idx, mask, idx, [rs, 1])


def lower_gather(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.GatherOp)
    table_shape = tensor_shape(op.input)
    count, length = math.prod(tensor_shape(op.indices)), math.prod(table_shape[1:])
    element_type = tensor_element(op.input)
    footprint = RowFootprint(element_bytes(element_type), per_row=16)
    tiles = plan_rows(count, length, footprint, ctx.budget.sram, False)
    if tiles is None:
        raise CannotFit(op, "one gathered element and its index", footprint.bytes(1, 1), ctx.budget)
    tr, tc = tiles
    indices, signed = _indices(ctx, op, count)
    table = ctx.value_view(op.input, [table_shape[0], length])
    out = ctx.value_view(op.output, [count, length])
    kb = ctx.kernel([op])
    kb.cost.staged = True  # loads and stores share the stage
    bufs = {"idx": kb.alloc([tr, 1], i32, "sram"), "rows": kb.alloc([tr, tc], element_type, "sram")}
    if str(buffer_element(indices)) == "i64":
        bufs["wide"] = kb.alloc([tr, 1], buffer_element(indices), "sram")
    if signed:
        bufs["mask"] = kb.alloc([tr, 1], i32, "sram")

    def row_tile(r0: Index, rs: int) -> None:
        _load_indices(kb, indices, bufs, r0, rs, table_shape[0], signed)
        kb.tiles(length, tc, lambda c0, cs: _gather_cols(kb, table, bufs, out, (r0, rs, c0, cs)))

    kb.tiles(count, tr, row_tile)
    ctx.add(
        kb, [tr, tc], "indices narrowed to i32 in SRAM (negative ones wrapped), rows fetched by tile.gather"
    )


def _gather_cols(kb: KernelBuilder, table: SSAValue, bufs: dict, out: SSAValue, at: tuple) -> None:
    r0, rs, c0, cs = at
    kb.gather(Win(table, (0, c0)), Win.at(bufs["idx"]), Win.at(bufs["rows"]), [rs, cs])
    kb.copy(Win.at(bufs["rows"]), Win(out, (r0, c0)), [rs, cs])
