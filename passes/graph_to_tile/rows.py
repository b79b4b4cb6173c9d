"""Row-wise vector kernels for convert-graph-to-tile: softmax, log_softmax, layer_norm and the
reductions over trailing axes.

The input is viewed as rows x cols (cols = the product of the normalised / reduced trailing
dims); each tile holds whole rows, so a row statistic is one `tile.reduce` into a tr x 1
column that broadcasts back with `tile.binary {broadcast = "col"}`:

    softmax:     m = max(x); x = exp(x - m); s = sum(x); y = x * (1 / s)
    log_softmax: x = x - max(x); l = log(sum(exp(x))); y = x - l
    layer_norm:  c = x - sum(x)/C; v = sum(c*c)/C; y = c * rsqrt(v + eps) * scale (+ bias)
    reduce:      sum | sum / C | max | -max(-x)

A row statistic is inverted once per row, so each element costs a product, not a division.

An op over a non-trailing axis is reported as unsupported (transpose it first).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from xdsl.ir import Operation, SSAValue

from aitc.dialects import graph
from aitc.passes.graph_to_tile.builder import CostOnlyBuilder, Index, KernelBuilder, Win, element_bytes
from aitc.passes.graph_to_tile.costs import Budget, RowFootprint, fastest_height, plan_rows, tile_heights
from aitc.passes.graph_to_tile.elementwise import EMITTERS
from aitc.passes.graph_to_tile.lowering import (
    CannotFit,
    LoweringContext,
    tensor_element,
    tensor_shape,
)
from aitc.passes.graph_to_tile.vector import Chain, ChainEmitter

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


def _plan(ctx: LoweringContext, op: Operation, rows: int, cols: int, footprint: RowFootprint) -> int:
    """tr: the most whole rows per tile that fit (the kernel's and its input's tiles)."""
    tiles = plan_rows(rows, cols, footprint, ctx.budget.sram, whole_rows=True)
    if tiles is None:
        what = f"a whole row of {cols} elements (with its working copies)"
        raise CannotFit(op, what, footprint.bytes(1, cols), ctx.budget)
    return tiles[0]


class _RowInput:
    """Where a row kernel's input rows come from: its DRAM tensor, copied into a tile per row
    tile, or (`prologue`) the elementwise chain that computes it, run in SRAM on the row
    tile's inputs (the chain's result never goes to DRAM). `load` returns the tile holding
    rows r0 .. r0 + rs, which the kernel may overwrite."""

    def __init__(self, ctx: LoweringContext, op: Operation, prologue: list[Operation], first_axis: int):
        self.ctx, self.op = ctx, op
        self.rows, self.cols = _rows_cols(op.operands[0], first_axis)
        self.chain = Chain.of(prologue) if prologue else None

    def footprint(self) -> RowFootprint:
        """SRAM of the input side per tile: the input tile, or the chain's tiles and inputs."""
        return RowFootprint(F32) if self.chain is None else self.chain.footprint()

    def start(self, kb: KernelBuilder, tr: int) -> Callable[[Index, int], Win]:
        """Allocates the input side's buffers (loads what the chain needs once) and returns `load`."""
        if self.chain is not None:
            emitter = ChainEmitter(self.ctx, kb, self.chain, (tr, self.cols))
            emitter.hoist((tr, self.cols))
            op_location = self.op.location

            def compute(r0: Index, rs: int) -> Win:
                result = emitter.compute([], r0, rs, 0, self.cols)
                kb.location = op_location
                return result

            return compute
        x = self.ctx.value_view(self.op.operands[0], [self.rows, self.cols])
        t = Win.at(kb.alloc([tr, self.cols], tensor_element(self.op.operands[0]), "sram"))

        def copy(r0: Index, rs: int) -> Win:
            kb.copy(Win(x, (r0, 0)), t, [rs, self.cols])
            return t

        return copy


def _row_kernel(
    ctx: LoweringContext, ops: list[Operation], first_axis: int, footprint: RowFootprint, body, reason: str
) -> None:
    """The shared loop: a rows x cols view of the output, row tiles of tr whole rows, each
    tile's input from `_RowInput` (ops[:-1]: the fused prologue chain, if any); `footprint`:
    the SRAM the body needs besides its input tile. tr: `_tile_rows`."""
    op = ops[-1]
    source = _RowInput(ctx, op, ops[:-1], first_axis)
    rows, cols = source.rows, source.cols
    most = _plan(ctx, op, rows, cols, _plus(footprint, source.footprint()))
    out_cols = math.prod(tensor_shape(op.results[0])) // rows
    y = ctx.value_view(op.results[0], [rows, out_cols])

    def emit(kb: KernelBuilder, tr: int) -> None:
        load = source.start(kb, tr)
        per_tile = body(kb, tr, cols)
        kb.tiles(rows, tr, lambda r0, rs: per_tile(load(r0, rs), y, r0, rs))

    row_bytes = cols * element_bytes(tensor_element(op.operands[0]))
    tr, tried = _tile_rows(ctx, (rows, most, row_bytes), emit)
    kb = ctx.kernel(ops)
    emit(kb, tr)
    if tried > 1:
        reason += (
            f"; {tr} row(s) per tile, the fewest est. cycles of {tried} tile heights up to {most} (a smaller "
            "tile's loads and stores hide behind more of the compute, each op pays its latency per tile)"
        )
    if len(ops) > 1:
        reason += f"; the {len(ops) - 1} elementwise op(s) producing its input run in SRAM on each row tile"
    ctx.add(kb, [tr, cols], reason)


def _tile_rows(
    ctx: LoweringContext, rows: tuple[int, int, int], emit: Callable[[KernelBuilder, int], None]
) -> tuple[int, int]:
    """(tr, candidates estimated): of the most whole rows per tile that fit and its halvings
    (`costs.tile_heights`; `rows`: the rows, the most that fit, the bytes of an input row),
    the one `emit` estimates fewest cycles for on a `CostOnlyBuilder`.
    The tallest tile made the pipeline's fill (the first tile's load) and drain (the last
    one's store) longest: MiniLM's layer norms, 128 x 384, ran 18,964 cycles in 2 tiles of 64
    rows, 16,138 in 16 of 8."""

    def estimate(tr: int) -> int:
        kb = CostOnlyBuilder(ctx.budget, "rows")
        emit(kb, tr)
        return kb.cost.cycles(ctx.budget.target)

    count, most, row_bytes = rows
    estimates = tile_heights(count, most, row_bytes, ctx.budget.target, estimate)
    return fastest_height(estimates), len(estimates)


def body_footprint(op: Operation) -> RowFootprint:
    """SRAM a row kernel's body needs besides its input tile: a tr x 1 statistic, the squares
    (layer norm) or the exponentials (log_softmax), the scale and bias rows (layer norm)."""
    if isinstance(op, graph.LayerNormOp):
        params = sum(v is not None for v in (op.scale, op.bias))
        return RowFootprint(F32, per_row=F32, per_col=F32 * params)
    return RowFootprint(F32 if isinstance(op, graph.LogSoftmaxOp) else 0, per_row=F32)


def _plus(a: RowFootprint, b: RowFootprint) -> RowFootprint:
    return RowFootprint(
        a.per_element + b.per_element, a.per_row + b.per_row, a.per_col + b.per_col, a.fixed + b.fixed
    )


# --------------------------------------------------------------------------- softmax


def softmax_axis_problem(op: Operation) -> str | None:
    assert isinstance(op, graph.AxisOp)
    if any(d != 1 for d in tensor_shape(op.input)[op.norm_axis() + 1 :]):
        return f"{op.name} over axis {op.norm_axis()}, not the last one: transpose it to the last axis first"
    return _float_problem(op)


def lower_softmax(ctx: LoweringContext, ops: list[Operation]) -> None:
    op = ops[-1]
    assert isinstance(op, graph.AxisOp)
    log = isinstance(op, graph.LogSoftmaxOp)
    f32 = tensor_element(op.input)

    def body(kb: KernelBuilder, tr: int, cols: int):
        e = Win.at(kb.alloc([tr, cols], f32, "sram")) if log else None
        s = Win.at(kb.alloc([tr, 1], f32, "sram"))

        def per_tile(t: Win, y: SSAValue, r0: Index, rs: int) -> None:
            sizes = [rs, cols]
            exps = t if e is None else e
            kb.reduce("max", t, s, sizes)
            kb.binary("sub", t, s, t, sizes, "col")
            kb.unary("exp", t, exps, sizes)
            kb.reduce("sum", exps, s, sizes)
            if log:
                kb.unary("log", s, s, [rs, 1])
                kb.binary("sub", t, s, t, sizes, "col")
            else:  # one reciprocal per row, then a product per element (a division costs more)
                kb.unary("recip", s, s, [rs, 1])
                kb.binary("mul", t, s, t, sizes, "col")
            kb.copy(t, Win(y, (r0, 0)), sizes)

        return per_tile

    reason = "whole rows per tile: max, exp, sum and the normalisation stay in SRAM"
    _row_kernel(ctx, ops, op.norm_axis(), body_footprint(op), body, reason)


# --------------------------------------------------------------------------- layer norm


def layer_norm_problem(op: Operation) -> str | None:
    assert isinstance(op, graph.LayerNormOp)
    cols = _rows_cols(op.input, op.norm_axis())[1]
    for operand in (op.scale, op.bias):
        if operand is not None and math.prod(tensor_shape(operand)) != cols:
            return "scale/bias that broadcast within the normalised dims are not lowered yet"
    return _float_problem(op)


def lower_layer_norm(ctx: LoweringContext, ops: list[Operation]) -> None:
    op = ops[-1]
    assert isinstance(op, graph.LayerNormOp)
    epsilon = op.epsilon.value.data if op.epsilon else 1e-5
    params = [v for v in (op.scale, op.bias) if v is not None]
    f32 = tensor_element(op.input)

    def body(kb: KernelBuilder, tr: int, cols: int):
        sq = Win.at(kb.alloc([tr, cols], f32, "sram"))
        s = Win.at(kb.alloc([tr, 1], f32, "sram"))
        rows = []
        for value in params:  # scale and bias rows: loaded once for all row tiles
            rows.append(Win.at(kb.alloc([1, cols], f32, "sram")))
            kb.copy(Win(ctx.value_view(value, [1, cols]), (0, 0)), rows[-1], [1, cols])

        def per_tile(t: Win, y: SSAValue, r0: Index, rs: int) -> None:
            sizes, column = [rs, cols], [rs, 1]
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
    _row_kernel(ctx, ops, op.norm_axis(), body_footprint(op), body, reason)


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
    op = ops[-1]
    assert isinstance(op, graph.ReduceOp)
    first_axis = op.reduced_axes()[0]
    f32 = tensor_element(op.input)
    kind = {graph.ReduceMaxOp: "max", graph.ReduceMinOp: "min"}.get(type(op), "sum")

    def body(kb: KernelBuilder, tr: int, cols: int):
        s = Win.at(kb.alloc([tr, 1], f32, "sram"))

        def per_tile(t: Win, y: SSAValue, r0: Index, rs: int) -> None:
            sizes, column = [rs, cols], [rs, 1]
            if kind == "min":  # min(x) = -max(-x)
                kb.unary("neg", t, t, sizes)
            kb.reduce("sum" if kind == "sum" else "max", t, s, sizes)
            if kind == "min":
                kb.unary("neg", s, s, column)
            if isinstance(op, graph.ReduceMeanOp):
                kb.binary_imm("div", s, cols, s, column)
            kb.copy(s, Win(y, (r0, 0)), column)

        return per_tile

    reason = (
        f"{kind} over the trailing {len(op.reduced_axes())} dim(s): whole rows per tile, one tile.reduce each"
    )
    _row_kernel(ctx, ops, first_axis, body_footprint(op), body, reason)


# --------------------------------------------------------------------------- prologue fusion

ROW_OPS = (graph.SoftmaxOp, graph.LogSoftmaxOp, graph.LayerNormOp, *REDUCERS)


def _first_axis(op: Operation) -> int:
    """The first axis a row op works over (its rows are the dims before it)."""
    if isinstance(op, graph.ReduceOp):
        return op.reduced_axes()[0]
    assert isinstance(op, graph.AxisOp | graph.LayerNormOp)
    return op.norm_axis()


def prologue_fits(chain: list[Operation], op: Operation, budget: Budget) -> bool:
    """Whether row op `op` can take elementwise `chain` (which computes its input, used by
    nothing else) as its prologue: the chain's iteration space is the op's rows x cols with no
    looped dims (the op works over the last axis), all f32, and a tile of whole rows with the
    chain's working tiles fits."""
    value = op.operands[0]
    if chain[-1].results[0] is not value or not value.has_one_use() or _float_problem(op):
        return False
    if any(str(tensor_element(v)) != "f32" for member in chain for v in (*member.operands, *member.results)):
        return False
    shape, planned = tensor_shape(value), Chain.of(chain)
    if _first_axis(op) != len(shape) - 1 or planned.layout.split != 0 or planned.layout.cols != shape[-1]:
        return False
    rows, cols = _rows_cols(value, len(shape) - 1)
    need = _plus(body_footprint(op), planned.footprint())
    return plan_rows(rows, cols, need, budget.sram, True) is not None


def fuse_row_prologues(units: list[list[Operation]], budget: Budget) -> list[list[Operation]]:
    """Lowering units (in order) with each row op's unit (softmax, layer norm, reduction)
    merged with the elementwise chain unit that computes its input (`prologue_fits`): one
    kernel whose chain result never goes to DRAM (e.g. a residual add and the layer norm after
    it), placed at the row op's unit and lowered by its lowering."""
    chains: dict[SSAValue, int] = {
        unit[-1].results[0]: index for index, unit in enumerate(units) if _is_chain(unit)
    }
    merged: list[list[Operation] | None] = list(units)
    for index, unit in enumerate(units):
        if len(unit) != 1 or not isinstance(unit[0], ROW_OPS):
            continue
        producer = chains.get(unit[0].operands[0])
        if producer is not None and producer < index and prologue_fits(units[producer], unit[0], budget):
            merged[index] = [*units[producer], unit[0]]
            merged[producer] = None
    return [unit for unit in merged if unit]


def _is_chain(unit: list[Operation]) -> bool:
    return all(type(op) in EMITTERS for op in unit)
