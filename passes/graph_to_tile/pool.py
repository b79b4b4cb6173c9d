"""Lowering of pooling (graph.max_pool, graph.avg_pool; 1-D and 2-D) and of a graph.batch_norm
that graph-fold-batch-norm left unfolded, for convert-graph-to-tile. Registered by importing
graph_to_tile_conv.

Pooling is a vector-engine window kernel (im2col.VectorWindow) whose N*C rows are
independent channels. Per chunk, with the tap-major patch:

    y = tap0 <op> tap1;  y = y <op> tap for the other taps     (tile.binary max / add)

max: padding and ceil_mode's partial windows read the stage's -inf fill (-128 for an int8 max
pool, which graph-quantized-matmul makes from a quantize of a max pool), so they never win.
avg: they read 0, and the sum is divided by each output's count, computed at compile time as
aitc/interp/graph.py does (count_include_pad counts the explicit pads, never the ceil_mode
extension): kh*kw everywhere -> tile.binary_imm div; otherwise a [1, OH*OW] tile.const of
counts, loaded per block, -> tile.binary div {broadcast = "row"}.

batch_norm: per tile of channels, inv = scale / sqrt(var + eps) is computed once as a column;
then y = (x - mean) * inv + bias on [channels x positions] tiles with column broadcasts, in
the reference's order of operations.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import f32
from xdsl.ir import Operation

from aitc.dialects import graph, tile
from aitc.passes.graph_to_tile.builder import Index, KernelBuilder, Win
from aitc.passes.graph_to_tile.conv_channels_last import lower_channels_last_pool
from aitc.passes.graph_to_tile.costs import F32, Budget, RowFootprint, plan_rows
from aitc.passes.graph_to_tile.im2col import Im2col, VectorWindow
from aitc.passes.graph_to_tile.lowering import (
    CannotFit,
    LoweringContext,
    tensor_element,
    tensor_shape,
)
from aitc.passes.graph_to_tile.patch_layout import PatchLayout
from aitc.passes.graph_to_tile.tuning import choose, noted
from aitc.passes.graph_to_tile.window import Block, Geometry, WindowDim, window_dims
from aitc.passes.graph_to_tile.window_costs import (
    WINDOW_DEPTH,
    WindowProblem,
    plan_window,
    ranked_window,
    window_minimum,
    window_plan_of,
)
from aitc.weights import array_to_attr

# --------------------------------------------------------------------------- pooling

INT8_MIN = -128
"""An int8 max pool's padding: the smallest int8 never wins a max (as -inf does in f32)."""


def pool_geometry(op: graph.PoolOp) -> Geometry:
    """Every (image, channel) is one independent row: batch 1, N*C channels."""
    x = tensor_shape(op.input)
    n, c = x[0], x[op.channel_dim()]
    h, w = window_dims(op, op.kernel())
    return Geometry(1, n * c, 1, n * c, h, w)


def _counts(dim: WindowDim, include_pad: bool) -> np.ndarray:
    """Per output along one dim: how many of its taps the divisor counts."""
    low, high = (-dim.pad, dim.size + dim.pad_end) if include_pad else (0, dim.size)
    taps = (np.arange(dim.out) * dim.stride - dim.pad)[:, None] + np.arange(dim.kernel) * dim.dilation
    return ((taps >= low) & (taps < high)).sum(axis=1)


def pool_counts(op: graph.AvgPoolOp, g: Geometry) -> np.ndarray:
    """The divisor of every output position, [OH, OW] (f32)."""
    include = op.count_include_pad is not None
    return np.outer(_counts(g.h, include), _counts(g.w, include)).astype(np.float32)


def _count_row(ctx: LoweringContext, op: Operation, counts: np.ndarray, pitch: int):
    """A [1, OH*pitch] tile.const of the counts, row oh at oh * pitch (the patch's wide layout,
    `PatchLayout`; the columns past OW hold 1), or None when the counts are all equal."""
    if np.all(counts == counts.flat[0]):
        return None
    wide = np.ones((counts.shape[0], pitch), np.float32)
    wide[:, : counts.shape[1]] = counts
    const = tile.ConstOp(array_to_attr(wide.reshape(1, -1), "pool_counts"))
    const.location = op.location
    ctx.decls.append(const)
    return const.buffer


def _combine(kb: KernelBuilder, cols: Im2col, name: str, y: Win, sizes: list[int]) -> None:
    """y = tap0 <name> tap1 <name> ... (the patch's tap windows)."""
    taps = cols.g.taps
    if taps == 1:
        kb.unary("copy", cols.tap_rows(0), y, sizes)
        return
    kb.binary(name, cols.tap_rows(0), cols.tap_rows(1), y, sizes)
    for tap in range(2, taps):
        kb.binary(name, y, cols.tap_rows(tap), y, sizes)


class _Divisor:
    """avg pooling's division by the counts: by an immediate when they are all equal, else by
    the block's window of the count row (loaded into a [1, positions] SRAM row)."""

    def __init__(self, op: graph.AvgPoolOp, g: Geometry):
        self.op, self.g, self.counts = op, g, pool_counts(op, g)
        self.uniform = bool(np.all(self.counts == self.counts.flat[0]))

    def allocate(self, ctx: LoweringContext, kb: KernelBuilder, layout: PatchLayout) -> None:
        """The count row in the layout's pitch (OW when blocks are parts of one row)."""
        self.pitch = layout.pitch if layout.rows > 1 else self.g.w.out
        self.row = _count_row(ctx, self.op, self.counts, self.pitch)
        self.tile = kb.alloc([1, layout.width], f32, "sram") if self.row is not None else None

    def apply(self, kb: KernelBuilder, acc: Win, sizes: list[int], hb: Block, wb: Block) -> None:
        if self.row is None or self.tile is None:
            kb.binary_imm("div", acc, float(self.counts.flat[0]), acc, sizes)
            return
        first = kb.add(kb.mul(hb.o0, self.pitch), wb.o0)
        kb.copy(Win(self.row, (0, first)), Win.at(self.tile), [1, sizes[1]])
        kb.binary("div", acc, Win.at(self.tile), acc, sizes, "row")


def _pool_problem(g: Geometry, is_max: bool, divisor: _Divisor | None, int8: bool = False) -> WindowProblem:
    """`int8`: an i8 max pool (1-byte tiles, padding read as -128, the type's minimum)."""
    combine = ("max" if is_max else "add",) * (g.taps - 1) or ("copy",)
    epilogue = combine if divisor is None else (*combine, "div")
    counted = divisor is not None and not divisor.uniform
    pad = (INT8_MIN if int8 else -math.inf) if is_max else 0.0
    size = 1 if int8 else F32
    return WindowProblem(
        g, "vector", epilogue=epilogue, counts=counted, pad_value=pad, element=size, stored=size
    )


def estimated_cycles(op: graph.MaxPoolOp, budget: Budget) -> int | None:
    """The estimate of the channels-first plan of a max pool (None: none fits)."""
    plan = plan_window(_pool_problem(pool_geometry(op), True, None), budget)
    return plan.cycles if plan is not None else None


def lower_pool(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.PoolOp)
    if isinstance(op, graph.MaxPoolOp) and op.is_channels_last():
        lower_channels_last_pool(ctx, ops)
        return
    g, is_max = pool_geometry(op), isinstance(op, graph.MaxPoolOp)
    divisor = _Divisor(op, g) if isinstance(op, graph.AvgPoolOp) else None
    element = tensor_element(op.input)
    problem = _pool_problem(g, is_max, divisor, str(element) == "i8")
    plan = plan_window(problem, ctx.budget)
    if plan is None:
        sram, _ = window_minimum(problem)
        raise CannotFit(op, "the smallest pooling tile (one output, one channel)", sram, ctx.budget)
    plan, note = choose(
        "pool",
        [problem],
        ctx.budget,
        ops,
        plan,
        lambda count: ranked_window(problem, ctx.budget, count),
        lambda choice: window_plan_of(problem, ctx.budget, choice),
    )
    kb = ctx.kernel(ops)
    kb.cost.depth = WINDOW_DEPTH
    cols = Im2col(kb, g, (plan.rows, plan.cols, plan.tc), "tap", problem.pad_value, element=element)
    y = kb.alloc([plan.tc, cols.layout.out_width()], element, "sram")
    if divisor is not None:
        divisor.allocate(ctx, kb, cols.layout)

    def compute(c0: Index, cs: int, hb: Block, wb: Block) -> None:
        sizes = [cs, cols.positions(hb, wb)]
        _combine(kb, cols, "max" if is_max else "add", Win.at(y), sizes)
        if divisor is not None:
            divisor.apply(kb, Win.at(y), sizes, hb, wb)

    views = (
        ctx.value_view(op.input, [g.channels, g.h.size, g.w.size]),
        ctx.value_view(op.output, [g.channels, g.h.out, g.w.out]),
    )
    VectorWindow(kb, g, cols, y, views).run(compute)
    ctx.add(kb, plan.tiles, noted(_pool_reason(op, plan, problem.counts), note))


def _pool_reason(op: graph.PoolOp, plan, counted: bool) -> str:
    if isinstance(op, graph.MaxPoolOp) and str(tensor_element(op.input)) == "i8":
        how = f"max over the taps in int8, padding read as {INT8_MIN}"
    elif isinstance(op, graph.MaxPoolOp):
        how = "max over the taps, padding read as -inf"
    else:
        divisor = "a per-position count row (tile.const)" if counted else "the uniform count"
        how = f"sum over the taps, padding read as 0, divided by {divisor}"
    return (
        f"{how}; blocks of {plan.rows} x {plan.cols} outputs, {plan.tc} channel(s) per chunk; "
        f"fewest est. cycles of {plan.candidates} tilings"
    )


# --------------------------------------------------------------------------- batch norm


def batch_norm_problem(op: Operation) -> str | None:
    assert isinstance(op, graph.BatchNormOp)
    if str(tensor_element(op.input)) != "f32":
        return f"batch_norm is lowered for f32 only, got {tensor_element(op.input)}"
    if 0 in tensor_shape(op.input):
        return "zero-size tensors have no buffers"
    return None


def _channel_params(kb: KernelBuilder, op: graph.BatchNormOp, params: list, c0: Index, cs: int) -> None:
    """mean, inv = scale / sqrt(var + eps) and bias of channels [c0, c0 + cs) as SRAM columns."""
    (mean, mean_s), (var, inv), (scale, scale_s), (bias, bias_s) = params
    column = [cs, 1]
    for src, dst in ((mean, mean_s), (var, inv), (scale, scale_s), (bias, bias_s)):
        kb.copy(Win(src, (c0, 0)), Win.at(dst), column)
    epsilon = op.epsilon.value.data if op.epsilon else 1e-5
    kb.binary_imm("add", Win.at(inv), epsilon, Win.at(inv), column)
    kb.unary("sqrt", Win.at(inv), Win.at(inv), column)
    kb.binary("div", Win.at(scale_s), Win.at(inv), Win.at(inv), column)


def lower_batch_norm(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.BatchNormOp)
    shape = tensor_shape(op.input)
    batch, channels, positions = shape[0], shape[1], math.prod(shape[2:])
    tiles = plan_rows(channels, positions, RowFootprint(F32, per_row=4 * F32), ctx.budget.sram, False)
    if tiles is None:
        raise CannotFit(op, "one element and its channel's parameters", 5 * F32, ctx.budget)
    tr, tq = tiles
    x = ctx.value_view(op.input, [batch * channels, positions])
    out = ctx.value_view(op.output, [batch * channels, positions])
    kb = ctx.kernel(ops)
    t = Win.at(kb.alloc([tr, tq], f32, "sram"))
    sources = (op.mean, op.var, op.scale, op.bias)
    params = [(ctx.value_view(v, [channels, 1]), kb.alloc([tr, 1], f32, "sram")) for v in sources]
    mean, inv, bias = Win.at(params[0][1]), Win.at(params[1][1]), Win.at(params[3][1])

    def block(n: Index, c0: Index, cs: int, q0: Index, qs: int) -> None:
        sizes, row = [cs, qs], kb.add(kb.mul(n, channels), c0)
        kb.copy(Win(x, (row, q0)), t, sizes)
        kb.binary("sub", t, mean, t, sizes, "col")
        kb.binary("mul", t, inv, t, sizes, "col")
        kb.binary("add", t, bias, t, sizes, "col")
        kb.copy(t, Win(out, (row, q0)), sizes)

    def channel_tile(c0: Index, cs: int) -> None:
        _channel_params(kb, op, params, c0, cs)
        kb.loop(0, batch, 1, lambda n: kb.tiles(positions, tq, lambda q0, qs: block(n, c0, cs, q0, qs)))

    kb.tiles(channels, tr, channel_tile)
    reason = "per channel tile: inv = scale / sqrt(var + eps) once, then (x - mean) * inv + bias per tile"
    ctx.add(kb, [tr, tq], reason)
