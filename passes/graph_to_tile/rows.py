"""Row-wise vector kernels for convert-graph-to-tile: softmax, log_softmax, layer_norm and the
reductions over trailing axes.

The input is viewed as rows x cols (cols = the product of the normalised / reduced trailing
dims); each tile holds whole rows, so a row statistic is one `tile.reduce` into a tr x 1
column that broadcasts back with `tile.binary {broadcast = "col"}`:

    softmax:     m = max(x); x = exp(x - m); s = sum(x); y = x * (1 / s)
    log_softmax: x = x - max(x); l = log(sum(exp(x))); y = x - l
    layer_norm:  c = x - sum(x)/C; v = sum(c*c)/C; y = c * rsqrt(v + eps) * scale (+ bias)

(A row statistic is inverted once per row, so each element costs a product, not a division.)
    reduce:      sum | sum / C | max | -max(-x)

An op over a non-trailing axis is reported as unsupported (transpose it first).
"""

from __future__ import annotations

import math

from xdsl.ir import Operation, SSAValue

from aitc.dialects import graph
from aitc.passes.graph_to_tile.builder import Index, KernelBuilder, Win
from aitc.passes.graph_to_tile.costs import RowFootprint, plan_rows
from aitc.passes.graph_to_tile.lowering import (
    CannotFit,
    LoweringContext,
    tensor_element,
    tensor_shape,
)

F32 = 4


def _float_problem(op: Operation) -> str | None:
    if str(tensor_element(op.operands[0])) != "f32":
        return f"{op.name} is lowered for f32 only, got {tensor_element(op.operands[0])}"
    if 0 in tensor_shape(op.operands[0]):
        return "zero-size tensors have no buffers"
    return None


def _rows_cols(value: SSAValue, first_axis: int) -> tuple[int, int]:
    shape = tensor_shape(value)
    return math.prod(shape[:first_axis]), math.prod(shape[first_axis:])


def _plan(
    ctx: LoweringContext, op: Operation, rows: int, cols: int, footprint: RowFootprint
) -> tuple[int, int]:
    tiles = plan_rows(rows, cols, footprint, ctx.budget.sram, whole_rows=True)
    if tiles is None:
        what = f"a whole row of {cols} elements (with its working copies)"
        raise CannotFit(op, what, footprint.bytes(1, cols), ctx.budget)
    return tiles


def _row_kernel(ctx: LoweringContext, op: Operation, first_axis: int, tiles_of, body, reason: str) -> None:
    """The shared loop: rows x cols views of input and output, row tiles of tr whole rows."""
    rows, cols = _rows_cols(op.operands[0], first_axis)
    tr, _ = tiles_of(rows, cols)
    out_cols = math.prod(tensor_shape(op.results[0])) // rows
    x = ctx.value_view(op.operands[0], [rows, cols])
    y = ctx.value_view(op.results[0], [rows, out_cols])
    kb = ctx.kernel([op])
    per_tile = body(kb, tr, cols)
    kb.tiles(rows, tr, lambda r0, rs: per_tile(x, y, r0, rs))
    ctx.add(kb, [tr, cols], reason)


# --------------------------------------------------------------------------- softmax


def softmax_axis_problem(op: Operation) -> str | None:
    assert isinstance(op, graph.AxisOp)
    if any(d != 1 for d in tensor_shape(op.input)[op.norm_axis() + 1 :]):
        return f"{op.name} over axis {op.norm_axis()}, not the last one: transpose it to the last axis first"
    return _float_problem(op)


def lower_softmax(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.AxisOp)
    log = isinstance(op, graph.LogSoftmaxOp)
    footprint = RowFootprint(F32 * (2 if log else 1), per_row=F32)
    f32 = tensor_element(op.input)

    def body(kb: KernelBuilder, tr: int, cols: int):
        t = Win.at(kb.alloc([tr, cols], f32, "sram"))
        e = Win.at(kb.alloc([tr, cols], f32, "sram")) if log else t
        s = Win.at(kb.alloc([tr, 1], f32, "sram"))

        def per_tile(x: SSAValue, y: SSAValue, r0: Index, rs: int) -> None:
            sizes = [rs, cols]
            kb.copy(Win(x, (r0, 0)), t, sizes)
            kb.reduce("max", t, s, sizes)
            kb.binary("sub", t, s, t, sizes, "col")
            kb.unary("exp", t, e, sizes)
            kb.reduce("sum", e, s, sizes)
            if log:
                kb.unary("log", s, s, [rs, 1])
                kb.binary("sub", t, s, t, sizes, "col")
            else:  # one reciprocal per row, then a product per element (a division costs more)
                kb.unary("recip", s, s, [rs, 1])
                kb.binary("mul", t, s, t, sizes, "col")
            kb.copy(t, Win(y, (r0, 0)), sizes)

        return per_tile

    reason = "whole rows per tile: max, exp, sum and the normalisation stay in SRAM"
    _row_kernel(ctx, op, op.norm_axis(), lambda r, c: _plan(ctx, op, r, c, footprint), body, reason)


# --------------------------------------------------------------------------- layer norm


def layer_norm_problem(op: Operation) -> str | None:
    assert isinstance(op, graph.LayerNormOp)
    cols = _rows_cols(op.input, op.norm_axis())[1]
    for operand in (op.scale, op.bias):
        if operand is not None and math.prod(tensor_shape(operand)) != cols:
            return "scale/bias that broadcast within the normalised dims are not lowered yet"
    return _float_problem(op)


def lower_layer_norm(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.LayerNormOp)
    epsilon = op.epsilon.value.data if op.epsilon else 1e-5
    params = [v for v in (op.scale, op.bias) if v is not None]
    footprint = RowFootprint(2 * F32, per_row=F32, per_col=F32 * len(params))
    f32 = tensor_element(op.input)

    def body(kb: KernelBuilder, tr: int, cols: int):
        t, sq = (Win.at(kb.alloc([tr, cols], f32, "sram")) for _ in range(2))
        s = Win.at(kb.alloc([tr, 1], f32, "sram"))
        rows = []
        for value in params:  # scale and bias rows: loaded once for all row tiles
            rows.append(Win.at(kb.alloc([1, cols], f32, "sram")))
            kb.copy(Win(ctx.value_view(value, [1, cols]), (0, 0)), rows[-1], [1, cols])

        def per_tile(x: SSAValue, y: SSAValue, r0: Index, rs: int) -> None:
            sizes, column = [rs, cols], [rs, 1]
            kb.copy(Win(x, (r0, 0)), t, sizes)
            kb.reduce("sum", t, s, sizes)
            kb.binary_imm("div", s, cols, s, column)
            kb.binary("sub", t, s, t, sizes, "col")
            kb.binary("mul", t, t, sq, sizes)
            kb.reduce("sum", sq, s, sizes)
            kb.binary_imm("div", s, cols, s, column)
            kb.binary_imm("add", s, epsilon, s, column)
            kb.unary("rsqrt", s, s, column)
            kb.binary("mul", t, s, t, sizes, "col")
            for row, name in zip(rows, ("mul", "add"), strict=False):
                kb.binary(name, t, row, t, sizes, "row")
            kb.copy(t, Win(y, (r0, 0)), sizes)

        return per_tile

    reason = "whole rows per tile; scale and bias rows loaded once; mean and variance as tr x 1 columns"
    _row_kernel(ctx, op, op.norm_axis(), lambda r, c: _plan(ctx, op, r, c, footprint), body, reason)


# --------------------------------------------------------------------------- reductions

REDUCERS = (graph.ReduceSumOp, graph.ReduceMeanOp, graph.ReduceMaxOp, graph.ReduceMinOp)


def reduce_problem(op: Operation) -> str | None:
    assert isinstance(op, graph.ReduceOp)
    axes, rank = op.reduced_axes(), len(tensor_shape(op.input))
    if not axes:
        return "a reduction over no axes is not lowered (graph-canonicalize removes it)"
    if axes != tuple(range(rank - len(axes), rank)):
        return f"reduces axes {list(axes)}, not the trailing dims: transpose them to the end first"
    return _float_problem(op)


def lower_reduce(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.ReduceOp)
    first_axis = op.reduced_axes()[0]
    f32 = tensor_element(op.input)
    kind = {graph.ReduceMaxOp: "max", graph.ReduceMinOp: "min"}.get(type(op), "sum")

    def body(kb: KernelBuilder, tr: int, cols: int):
        t = Win.at(kb.alloc([tr, cols], f32, "sram"))
        s = Win.at(kb.alloc([tr, 1], f32, "sram"))

        def per_tile(x: SSAValue, y: SSAValue, r0: Index, rs: int) -> None:
            sizes, column = [rs, cols], [rs, 1]
            kb.copy(Win(x, (r0, 0)), t, sizes)
            if kind == "min":  # min(x) = -max(-x)
                kb.unary("neg", t, t, sizes)
            kb.reduce("sum" if kind == "sum" else "max", t, s, sizes)
            if kind == "min":
                kb.unary("neg", s, s, column)
            if isinstance(op, graph.ReduceMeanOp):
                kb.binary_imm("div", s, cols, s, column)
            kb.copy(s, Win(y, (r0, 0)), column)

        return per_tile

    footprint = RowFootprint(F32, per_row=F32)
    reason = (
        f"{kind} over the trailing {len(op.reduced_axes())} dim(s): whole rows per tile, one tile.reduce each"
    )
    _row_kernel(ctx, op, first_axis, lambda r, c: _plan(ctx, op, r, c, footprint), body, reason)
