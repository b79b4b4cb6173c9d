"""Lowering of a channels-last graph.conv (`graph.conv {channels_last}`: N x H x W x C in and
out) for convert-graph-to-tile: a per-tap GEMM whose rows are output positions.

NCHW convs (conv.py) stream the output channels of a tile through the matrix engine (m = tm,
at most C_out), so a 64-channel layer runs at m / (m + latency + k) <= 0.57 of the peak. With
the channels last, a row of the activations is one position's channels, so the positions
stream (m in the hundreds) and the weights are the stationary operand:

    out[p, co] = sum over taps t, channels c of stage[p + base(t), c] * W'[co, t, c]

The stage holds the receptive field of R output rows: S = R + (kh - 1) * dh input rows of the
padded width Wp = pl + W + pr, tc channels each, flat as [S * Wp, tc] (the DMA writes each
input row's W x tc block at column pl; the padding is copied from a tile of zeros). Output
position p = r * Wp + c is row r, column c of the block (c < OW; the kw - 1 columns after each
row are computed and dropped), and tap (i, j) reads the stage from base = i * dh * Wp + j * dw.
One tile.matmul per tap, chunk of <= matrix-rows channels and tile of <= matrix-cols output
channels: m = (R - 1) * Wp + OW positions, rhs the weight laid out tap-major [C_out, kh*kw*C]
at compile time, transposed (`transpose_rhs`: its rows are output channels):

    [W' -> SRAM when kept] [bias row -> SRAM]
    for n in images:
      for row blocks of R (interior blocks in one scf.for, border ones peeled):
        [one chunk: stage <- x rows + zero padding]
        for co0 step tn:
          for c0 step tc:  [stage <- chunk + zero padding] [W' tile -> SRAM]
            for tap: for n0 step cols: for k0 step rows:
              tile.matmul acc[0:m, n0:] (+)= stage[base(tap):, k0:] @ W'[co0 + n0:, tap, c0 + k0:]^T
          epilogue: per output row acc_read {activation} (or + bias row, then the activation)
                    into a dense y [R * OW, tn]; [+ residual window, activation]; out <- y

Stride 1, one group (graph-channels-last gives this layout only to such convs; strided convs
are stride-1 phase convs after graph-polyphase-conv). The plan (R, tc, tn, weights kept or
streamed) has the fewest cycles the cost model estimates, charging the ops this module emits
(`_estimate` runs the same code on a builder that only counts).

A channels-last max pool (`graph.max_pool {channels_last}`, any stride, dilation and pads,
ceil mode) lives here too, as it shares the stage: `_PoolEmitter` reads each tap in place
through a view of the stage in which a tap's outputs along a row are a plain window, where the
channels-first pool copies every tap into a patch by DMA.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

from xdsl.dialects.builtin import f32
from xdsl.ir import Operation, SSAValue

from aitc.dialects import graph, tile
from aitc.passes.graph_to_tile.builder import CostOnlyBuilder, Index, KernelBuilder, Win, dram_buffer
from aitc.passes.graph_to_tile.costs import Budget, balanced, dma_instruction_cycles, remembered
from aitc.passes.graph_to_tile.elementwise import ACTIVATION_TEMPS, apply_activation, fill
from aitc.passes.graph_to_tile.lowering import CannotFit, Fused, LoweringContext, tensor_element, tensor_shape
from aitc.passes.graph_to_tile.matmul_tiling import MAX_UNROLL
from aitc.passes.graph_to_tile.movement import kernel_view
from aitc.passes.graph_to_tile.tuning import P, choose, noted
from aitc.passes.graph_to_tile.window import (
    Block,
    Geometry,
    block_runs,
    conv_geometry,
    for_blocks,
    tap_major_order,
    window_dims,
    window_problem,
)

# --------------------------------------------------------------------------- plans


MERGES = ("tap", "row", "all")
"""How many taps one contraction covers: one ("tap": each product reads the stage in place),
a row of the kernel ("row": kw copies of the stage, shifted by one tap each, side by side make a
row's taps one contraction of kw * C), or all of them ("all": kh * kw shifted copies, the
im2col patch of the block's positions). With fewer channels than matrix rows a per-tap product
leaves most of the engine's rows idle while it still streams every position (m + latency + k
cycles for k = C); merged, the rows fill up and the positions stream ceil(taps * C / rows)
times instead of taps times, at the price of on-chip copies (ResNet's stem: 12 channels of a
4 x 4 phase kernel)."""


@dataclass(frozen=True)
class ChannelsLastPlan:
    """R output rows per block, tc input channels per chunk, tn output channels per tile, the
    whole weight kept in SRAM or a [tn, taps, tc] tile streamed per chunk, the taps one
    contraction covers (`MERGES`; merged only when a chunk holds every channel); estimated
    cycles."""

    rows: int
    tc: int
    tn: int
    keep: bool
    merge: str = "tap"
    cycles: int = 0

    def key(self) -> tuple[int, ...]:
        return (self.cycles, -self.rows, -self.tn, -self.tc, int(not self.keep), MERGES.index(self.merge))

    @property
    def choice(self) -> tuple[int, int, int, bool, str]:
        """What identifies the plan among the candidates (the tuner's record of it)."""
        return (self.rows, self.tc, self.tn, self.keep, self.merge)

    @property
    def family(self) -> tuple[int, int, str]:
        """The plan's structure: rows per block, output channels per tile and the taps one
        contraction covers (`tuning.short_list`)."""
        return (self.rows, self.tn, self.merge)


@dataclass(frozen=True)
class Problem:
    """What the plan depends on: the conv's geometry and its epilogue."""

    g: Geometry
    bias: bool
    activation: str | None
    residual: bool
    after: str | None  # the activation after the residual add


def supported(op: graph.ConvOp) -> str | None:
    """Why `op` cannot take the channels-last lowering, else None."""
    x, w = tensor_shape(op.input), tensor_shape(op.weight)
    strides, _, _ = op.window()
    if len(x) not in (3, 4) or str(tensor_element(op.input)) != "f32":
        return "only f32 1-D and 2-D convs"
    if op.groups() != 1:
        return "grouped convs keep N x C x H x W"
    if any(s != 1 for s in strides):
        return "strided convs keep N x C x H x W (graph-polyphase-conv makes them stride 1)"
    taps = math.prod(w[2:])
    constant = isinstance(op.weight.owner, graph.ConstantOp) and op.weight.owner.value is not None
    if taps > 1 and not constant:
        return "the weight must be a constant (it is laid out tap-major at compile time)"
    if 0 in x or 0 in tensor_shape(op.output):
        return "zero-size tensors have no buffers"
    return None


def window_op_problem(op: Operation) -> str | None:
    """Why a conv or pool is not lowered (`window_problem`, and for a channels-last one
    `supported` or `pool_supported`), else None."""
    why = window_problem(op)
    if why is None and isinstance(op, graph.WindowOp) and op.is_channels_last():
        why = supported(op) if isinstance(op, graph.ConvOp) else pool_supported(op)  # type: ignore[arg-type]
    return why


def _choose_ranked(
    kind: str, problem: object, budget: Budget, ops: list[Operation], plans: list[P]
) -> tuple[P, str]:
    """`tuning.choose` over `plans` (every candidate, cheapest first)."""
    by_choice = {plan.choice: plan for plan in plans}
    return choose(kind, [problem], budget, ops, plans[0], lambda count: plans[:count], by_choice.get)


def _width(g: Geometry) -> int:
    """Wp: the padded width the outputs read (stride 1)."""
    return g.w.out + (g.w.kernel - 1) * g.w.dilation


def _acc_bytes(g: Geometry, rows: int, tn: int) -> int:
    """The accumulator of a block of `rows` output rows and `tn` output channels (f32)."""
    return 4 * _positions(g, rows) * tn


def _positions(g: Geometry, rows: int) -> int:
    """m: the positions of a block of `rows` output rows (the last row's tail dropped)."""
    return (rows - 1) * _width(g) + g.w.out


def _zero_rows(g: Geometry, rows: int) -> int:
    """The most stage rows a border block of `rows` output rows reads from the padding."""
    strips = [
        high - low
        for run in block_runs(g.h, rows)
        if not run.inside
        for low, high in g.h.strips(run.o0, run.size)
    ]
    return max(strips, default=0)


# --------------------------------------------------------------------------- emission


def _filled(kb: KernelBuilder, shape: list[int], value: float) -> SSAValue:
    """A tile of `shape` holding `value` (filled once, before the loops): what the stage's
    padding is copied from."""
    rows = math.prod(shape[:-1])
    buffer = kb.alloc([rows, shape[-1]], f32, "sram")
    fill(kb, Win.at(buffer), value, [rows, shape[-1]])
    return kernel_view(kb, buffer, shape)


def _load_stage(
    kb: KernelBuilder,
    g: Geometry,
    stage: tuple[SSAValue, SSAValue | None, SSAValue | None],
    x: Win,
    hb: Block,
    rows: int,
    cs: int,
) -> None:
    """Channels [c0, c0 + cs) of the input rows under output block `hb` into the stage
    [S, Wp, tc], every byte of it written, so multi-buffer can rotate it: the rows and columns
    in the padding are copied from the padding tiles. `stage` = (stage, row tile, column tile);
    `x` = the input [N*H, W, C] at (image n, 0, c0); `rows` = stage rows of the block."""
    buffer, pad_rows, pad_cols = stage
    n, _, c0 = x.idx
    wp = tile.memref_of(buffer).get_shape()[1]
    start = kb.add(kb.mul(hb.o0, g.h.stride), -g.h.pad)
    low, high = 0, rows
    if not hb.inside:
        assert isinstance(hb.o0, int)
        first = hb.o0 * g.h.stride - g.h.pad
        # a block whose stage lies all in the padding (pads wider than the kernel) loads nothing
        low = min(rows, max(0, -first))
        high = max(low, min(rows, g.h.size - first))
        for a, b in ((0, low), (high, rows)):
            if b > a and pad_rows is not None:
                kb.copy(Win.at(pad_rows), Win(buffer, (a, 0, 0)), [b - a, wp, cs])
    if high > low:
        src = Win(x.buffer, (kb.add(kb.mul(n, g.h.size), kb.add(start, low)), 0, c0))
        kb.copy(src, Win(buffer, (low, g.w.pad, 0)), [high - low, g.w.size, cs])
        right = wp - g.w.pad - g.w.size
        for at, width in ((0, g.w.pad), (g.w.pad + g.w.size, right)):
            if width and pad_cols is not None:
                kb.copy(Win.at(pad_cols), Win(buffer, (low, at, 0)), [high - low, width, cs])


@dataclass(frozen=True)
class Views:
    """DRAM views: x [N*H, W, C], w [C_out, taps*C] and w_taps [C_out, taps, C] (tap-major),
    out [N*OH*OW, C_out], bias [1, C_out], residual [N*OH*OW, C_out]."""

    x: SSAValue
    w: SSAValue
    w_taps: SSAValue
    out: SSAValue
    bias: SSAValue | None
    residual: SSAValue | None


class _Emitter:
    """Emits (or, on a `CostOnlyBuilder`, charges) the loop nest of one planned conv."""

    def __init__(self, kb: KernelBuilder, p: Problem, plan: ChannelsLastPlan, v: Views):
        self.kb, self.p, self.plan, self.v = kb, p, plan, v
        g = p.g
        self.g, self.wp = g, _width(g)
        self.stage_rows = plan.rows + (g.h.kernel - 1) * g.h.dilation
        tc, tn, taps = plan.tc, plan.tn, g.taps
        # written as [S, Wp, tc] boxes (what multi-buffer sees the loads cover), read flat
        self.stage3 = kb.alloc([self.stage_rows, self.wp, tc], f32, "sram")
        self.stage = kernel_view(kb, self.stage3, [self.stage_rows * self.wp, tc])
        if plan.keep:
            self.weights = kb.alloc([g.outs, taps * g.channels], f32, "sram")
        else:
            self.weights = kb.alloc([tn, taps * tc], f32, "sram")
            self.weight_taps = kernel_view(kb, self.weights, [tn, taps, tc])
        self.acc = kb.alloc([_positions(g, plan.rows), tn], f32, "acc")
        self.single_acc = kb.budget.single_acc(_acc_bytes(g, plan.rows, tn))
        self.patch = None
        if plan.merge != "tap":  # [rows, taps merged * tc]: what the merged contractions read
            merged = g.w.kernel if plan.merge == "row" else taps
            self.patch = kb.alloc([self._patch_rows(plan.rows), merged * tc], f32, "sram")
        dense = [plan.rows * g.w.out, tn]
        self.y = kb.alloc(dense, f32, "sram")
        self.bias = kb.alloc([1, g.outs], f32, "sram") if p.bias else None
        self.residual = kb.alloc(dense, f32, "sram") if p.residual else None
        temps = ACTIVATION_TEMPS.get(p.activation or "", 0) if p.bias else 0
        self.temp = Win.at(kb.alloc(dense, f32, "sram")) if temps else None
        pad_cols = max(g.w.pad, self.wp - g.w.pad - g.w.size)
        zero_cols = _filled(kb, [self.stage_rows, pad_cols, tc], 0.0) if pad_cols else None
        zero_rows = _zero_rows(g, plan.rows)
        self.padding = (_filled(kb, [zero_rows, self.wp, tc], 0.0) if zero_rows else None, zero_cols)

    def run(self) -> None:
        kb, g, v = self.kb, self.g, self.v
        if self.plan.keep:
            kb.copy(Win.at(v.w), Win.at(self.weights), [g.outs, g.taps * g.channels])
        if self.bias is not None and v.bias is not None:
            kb.copy(Win.at(v.bias), Win.at(self.bias), [1, g.outs])
        kb.loop(0, g.batch, 1, lambda n: for_blocks(kb, g.h, self.plan.rows, lambda hb: self._block(n, hb)))

    def _patch_rows(self, rows: int) -> int:
        """Rows of the merged patch a block of `rows` output rows reads: a "row" patch is
        indexed like the stage (a kernel row's products start `i * dh * Wp` rows down) and
        ends where the last position's last kernel row starts; an "all" patch has a row per
        position."""
        g = self.g
        if self.plan.merge == "row":
            return (rows - 1 + (g.h.kernel - 1) * g.h.dilation) * self.wp + g.w.out
        return _positions(g, rows)

    def _block(self, n: Index, hb: Block) -> None:
        self.n, self.hb = n, hb
        whole = self.plan.tc >= self.g.channels
        if whole:
            self._load(0, self.g.channels)
            self._merge_taps()
        self.kb.tiles(self.g.outs, self.plan.tn, lambda co0, ns: self._out_tile(co0, ns, whole))

    def _merge_taps(self) -> None:
        """The merged patch of this block: per merged tap, the stage shifted by the tap's base
        into its column block (on-chip copies; every row the contractions read is written)."""
        if self.patch is None:
            return
        g, cs = self.g, self.g.channels
        rows = self._patch_rows(self.hb.size)
        if self.plan.merge == "row":
            bases = [self._base(0, j) for j in range(g.w.kernel)]
        else:
            bases = [self._base(i, j) for i in range(g.h.kernel) for j in range(g.w.kernel)]
        for t, base in enumerate(bases):
            self.kb.copy(Win(self.stage, (base, 0)), Win(self.patch, (0, t * cs)), [rows, cs], feeds=True)

    def _base(self, i: int, j: int) -> int:
        """The stage row tap (i, j) reads for position 0."""
        return i * self.g.h.dilation * self.wp + j * self.g.w.dilation

    def _out_tile(self, co0: Index, ns: int, whole: bool) -> None:
        tc, channels = self.plan.tc, self.g.channels
        if whole:
            self._weights(co0, ns, 0, channels)
            self._contract(co0, ns, 0, channels, True)
        else:
            self._chunk(co0, ns, 0, tc, True)
            target, rows = self.kb.target, self.hb.size + (self.g.h.kernel - 1) * self.g.h.dilation
            store = dma_instruction_cycles(target, 4 * self.hb.size * self.g.w.out * ns)
            stage = dma_instruction_cycles(target, 4 * rows * self.g.w.size * tc)
            weights = 0 if self.plan.keep else dma_instruction_cycles(target, 4 * ns * self.g.taps * tc)
            with self.kb.own_loads((channels - tc) // tc, store + max(stage, weights)):
                self.kb.tiles(channels - tc, tc, lambda c0, cs: self._chunk(co0, ns, c0, cs, False), tc)
        self._epilogue(co0, ns)

    def _chunk(self, co0: Index, ns: int, c0: Index, cs: int, first: bool) -> None:
        self._load(c0, cs)
        self._weights(co0, ns, c0, cs)
        self._contract(co0, ns, c0, cs, first)

    def _weights(self, co0: Index, ns: int, c0: Index, cs: int) -> None:
        """The streamed weight tile W'[co0:co0+ns, :, c0:c0+cs] (nothing when kept)."""
        if not self.plan.keep:
            src = Win(self.v.w_taps, (co0, 0, c0))
            self.kb.copy(src, Win.at(self.weight_taps), [ns, self.g.taps, cs])

    def _load(self, c0: Index, cs: int) -> None:
        rows = self.hb.size + (self.g.h.kernel - 1) * self.g.h.dilation
        _load_stage(
            self.kb, self.g, (self.stage3, *self.padding), Win(self.v.x, (self.n, 0, c0)), self.hb, rows, cs
        )

    def _contractions(self) -> list[tuple[SSAValue, int, int, int]]:
        """(lhs buffer, its first row, the first tap, taps) of each contraction of a chunk: a
        tap of the stage, a kernel row or all the taps of the merged patch (`MERGES`)."""
        g, merge = self.g, self.plan.merge
        if merge == "all":
            assert self.patch is not None
            return [(self.patch, 0, 0, g.taps)]
        if merge == "row":
            assert self.patch is not None
            kw = g.w.kernel
            return [(self.patch, self._base(i, 0), i * kw, kw) for i in range(g.h.kernel)]
        taps = [(i, j) for i in range(g.h.kernel) for j in range(g.w.kernel)]
        return [(self.stage, self._base(i, j), i * g.w.kernel + j, 1) for i, j in taps]

    def _contract(self, co0: Index, ns: int, c0: Index, cs: int, first: bool) -> None:
        kb, g = self.kb, self.g
        rows, cols = kb.budget.rows, kb.budget.cols
        m = _positions(g, self.hb.size)
        for source, base, tap, taps in self._contractions():
            depth = taps * cs  # the contraction: taps merged side by side (cs = C when merged)
            if self.plan.keep:
                w_row, w_col = co0, kb.add(tap * g.channels, c0)
            else:
                w_row, w_col = 0, tap * self.plan.tc

            def product(
                n0: Index,
                nn: int,
                k0: Index,
                ks: int,
                accumulate: bool,
                base=base,
                w_row=w_row,
                w_col=w_col,
                source=source,
            ):
                lhs = Win(source, (base, k0))
                rhs = Win(self.weights, (kb.add(w_row, n0), kb.add(w_col, k0)))
                kb.matmul(lhs, rhs, Win(self.acc, (0, n0)), [m, ks, nn], accumulate, transpose_rhs=True)

            def column(n0: Index, nn: int, product=product, start=first and tap == 0, depth=depth) -> None:
                product(n0, nn, 0, min(rows, depth), not start)
                kb.tiles(
                    depth - rows,
                    rows,
                    lambda k0, ks: product(n0, nn, k0, ks, True),
                    rows,
                    unroll=MAX_UNROLL - 1,
                )

            kb.tiles(ns, cols, column, unroll=MAX_UNROLL)

    def _epilogue(self, co0: Index, ns: int) -> None:
        kb, g, p = self.kb, self.g, self.p
        rows, ow = self.hb.size, g.w.out
        sizes = [rows * ow, ns]
        y = Win.at(self.y)

        def first(acc: Win, dst: Win, box: list[int]) -> None:
            if self.bias is None:
                kb.acc_read(acc, dst, box, p.activation)
            else:
                kb.binary("add", acc, Win(self.bias, (0, co0)), dst, box, "row")

        with kb.cost.reading_acc(self.single_acc):
            if ow == self.wp:  # no dropped columns: the block is dense already
                first(Win.at(self.acc), y, sizes)
            else:
                kb.tiles(
                    rows,
                    1,
                    lambda r, _: first(
                        Win(self.acc, (kb.mul(r, self.wp), 0)), Win(self.y, (kb.mul(r, ow), 0)), [ow, ns]
                    ),
                )
        if self.bias is not None:
            apply_activation(kb, p.activation, y, self.temp, sizes)
        at = (kb.linear([(self.n, g.h.out * ow), (self.hb.o0, ow)]), co0)
        if self.residual is not None and self.v.residual is not None:
            kb.copy(Win(self.v.residual, at), Win.at(self.residual), sizes, ahead=True)
            kb.binary("add", y, Win.at(self.residual), y, sizes)
            apply_activation(kb, p.after, y, None, sizes)
        kb.copy(y, Win(self.v.out, at), sizes)


def _dram_views(g: Geometry, p: Problem) -> Views:
    rows, outs = g.batch * g.h.out * g.w.out, g.outs
    w = dram_buffer([outs, g.taps * g.channels])
    return Views(
        dram_buffer([g.batch * g.h.size, g.w.size, g.channels]),
        w,
        dram_buffer([outs, g.taps, g.channels]),
        dram_buffer([rows, outs]),
        dram_buffer([1, outs]) if p.bias else None,
        dram_buffer([rows, outs]) if p.residual else None,
    )


def _estimate(p: Problem, plan: ChannelsLastPlan, budget: Budget, views: Views) -> ChannelsLastPlan | None:
    """`plan` with its cycles, or None when its buffers do not fit the budget."""
    kb = CostOnlyBuilder(budget, "graph.conv")
    emitter = _Emitter(kb, p, plan, views)
    if kb.sram_bytes > budget.sram or not budget.holds_acc(kb.acc_bytes):
        return None
    emitter.run()
    return replace(plan, cycles=kb.cost.cycles(budget.target))


def _tiles(extent: int, smallest: int) -> list[int]:
    """Tile sizes to try along `extent`: `smallest` doubling, balanced, and the whole."""
    sizes, size = {extent}, smallest
    while size < extent:
        sizes.add(balanced(extent, size))
        size *= 2
    return sorted(sizes)


def _candidates(p: Problem, budget: Budget) -> list[ChannelsLastPlan]:
    g = p.g
    out_rows = sorted({balanced(g.h.out, r) for r in range(1, g.h.out + 1)})
    plans = []
    for tn in _tiles(g.outs, budget.cols):
        fit = [r for r in out_rows if budget.holds_acc(_acc_bytes(g, r, tn))]
        # two chunks are the peeled first one and one more, straight-line: the second load
        # would wait for the first chunk's products (multi-buffer rotates loops only)
        for tc in (t for t in _tiles(g.channels, budget.rows) if t == g.channels or -(-g.channels // t) > 2):
            merges = _merges(g, budget) if tc == g.channels else ("tap",)
            for keep, merge in itertools.product((True, False), merges):
                plans += [ChannelsLastPlan(r, tc, tn, keep, merge) for r in fit]
    return plans


def _merges(g: Geometry, budget: Budget) -> tuple[str, ...]:
    """The tap merges (`MERGES`) worth estimating for a chunk of all of `g`'s channels: only
    when a tap's channels leave matrix rows idle (C not a multiple of them), a row merge when
    the kernel is wider than one tap, an all-taps merge when it is taller than one row too."""
    if g.channels % budget.rows == 0:
        return ("tap",)
    return ("tap",) + (("row",) if g.w.kernel > 1 else ()) + (("all",) if g.h.kernel > 1 else ())


_MEMO: dict[tuple, list[ChannelsLastPlan]] = {}


def ranked(p: Problem, budget: Budget) -> list[ChannelsLastPlan]:
    """Every plan that fits, cheapest first (memoised per problem and budget)."""

    def rank() -> list[ChannelsLastPlan]:
        views = _dram_views(p.g, p)
        plans = [plan for c in _candidates(p, budget) if (plan := _estimate(p, c, budget, views))]
        return sorted(plans, key=ChannelsLastPlan.key)

    key = (p, budget.target.fingerprint(), budget.sram, budget.acc, budget.depth)
    return remembered(_MEMO, key, rank)


def problem_of(op: graph.ConvOp, fused: Fused | None) -> Problem:
    activation = op.activation.data if op.activation else None
    return Problem(
        conv_geometry(op),
        op.bias is not None,
        activation,
        fused is not None,
        fused.activation if fused else None,
    )


def estimate(op: graph.ConvOp, budget: Budget, fused: Fused | None = None) -> ChannelsLastPlan | None:
    """The cheapest plan of `op` as a channels-last conv (graph-channels-last compares it with
    the NCHW one), or None when none fits."""
    plans = ranked(problem_of(op, fused), budget)
    return plans[0] if plans else None


def _reason(p: Problem, plan: ChannelsLastPlan, count: int, budget: Budget) -> str:
    g = p.g
    weights = "kept in SRAM" if plan.keep else "streamed per chunk"
    layout = "W laid out [C_out, kh, kw, C] at compile time, " if g.taps > 1 else ""
    products = {
        "tap": "one product per tap",
        "row": f"one product per kernel row (its {g.w.kernel} taps merged: shifted stage copies)",
        "all": f"one product for all {g.taps} taps (merged: the im2col patch, copied from the stage)",
    }[plan.merge]
    return (
        f"channels-last per-tap GEMM: {layout}the positions stream (m = {_positions(g, plan.rows)} of "
        f"{plan.rows} output row(s) of padded width {_width(g)}), {products} with the weight "
        f"as transposed rhs; {plan.tc} channel(s) per chunk, {plan.tn} output channel(s) per tile, "
        f"weights {weights}{budget.acc_note(_acc_bytes(g, plan.rows, plan.tn))}; fewest est. cycles of "
        f"{count} tilings"
    )


def lower_channels_last_conv(ctx: LoweringContext, ops: list[Operation], fused: Fused | None) -> None:
    """One channels-last conv, with the residual add (+ relu) `fused` into it if given."""
    op = ops[0]
    assert isinstance(op, graph.ConvOp)
    why = supported(op)
    if why is not None:
        raise CannotFit(op, f"channels-last conv: {why}", 0, ctx.budget)
    p = problem_of(op, fused)
    plans = ranked(p, ctx.budget)
    if not plans:
        need = _acc_bytes(p.g, 1, min(p.g.outs, ctx.budget.cols))
        raise CannotFit(op, "one output row of the channels-last conv", need, ctx.budget, "ACC", single=True)
    plan, note = _choose_ranked("conv", p, ctx.budget, ops, plans)
    g = p.g
    rank = len(tensor_shape(op.weight))
    w = (
        ctx.buffer(op.weight)
        if g.taps == 1
        else ctx.permuted_constant(op.weight, tap_major_order(rank), "tap_major")
    )
    assert w is not None, "supported() checked the weight is a constant"
    rows = g.batch * g.h.out * g.w.out
    views = Views(
        ctx.value_view(op.input, [g.batch * g.h.size, g.w.size, g.channels]),
        ctx.view(w, [g.outs, g.taps * g.channels]),
        ctx.view(w, [g.outs, g.taps, g.channels]),
        ctx.value_view(fused.output if fused else op.output, [rows, g.outs]),
        ctx.value_view(op.bias, [1, g.outs]) if op.bias is not None else None,
        ctx.value_view(fused.residual, [rows, g.outs]) if fused else None,
    )
    kb = ctx.kernel(ops)
    _Emitter(kb, p, plan, views).run()
    reason = _reason(p, plan, len(plans), ctx.budget)
    if fused is not None:
        relu = " and relu" if fused.activation else ""
        reason += f"; the residual add{relu} fused: each output tile adds its residual before its store"
    ctx.add(kb, [plan.rows, plan.tc, plan.tn], noted(reason, note))


# --------------------------------------------------------------------------- max pool


@dataclass(frozen=True)
class PoolPlan:
    """R output rows per block and tc channels per chunk of a channels-last max pool."""

    rows: int
    tc: int
    cycles: int = 0

    def key(self) -> tuple[int, ...]:
        return (self.cycles, -self.rows, -self.tc)

    @property
    def choice(self) -> tuple[int, int]:
        return (self.rows, self.tc)

    @property
    def family(self) -> tuple[int]:
        return (self.rows,)


def pool_supported(op: graph.MaxPoolOp) -> str | None:
    """Why `op` cannot take the channels-last lowering, else None."""
    x = tensor_shape(op.input)
    if len(x) != 4 or str(tensor_element(op.input)) != "f32":
        return "only f32 2-D max pools"
    if 0 in x or 0 in tensor_shape(op.output):
        return "zero-size tensors have no buffers"
    return None


def _pool_width(g: Geometry) -> int:
    """The stage width: the input at its begin pad and what the windows reach, rounded up to
    the stride (the taps are read through a view [.., Wp / sw, sw * tc])."""
    reach = (g.w.out - 1) * g.w.stride + (g.w.kernel - 1) * g.w.dilation + 1
    width = max(g.w.pad + g.w.size, reach)
    return -(-width // g.w.stride) * g.w.stride


def _pool_rows(g: Geometry, rows: int) -> int:
    """Stage rows under a block of `rows` output rows."""
    return (rows - 1) * g.h.stride + (g.h.kernel - 1) * g.h.dilation + 1


class _PoolEmitter:
    """A channels-last max pool on the vector engine: the stage holds the block's input rows at
    the padded width (the padding copied from tiles of -inf), viewed [S * Wp / sw, sw * tc] so
    that a tap's outputs along a row are a plain 2-D window (one row per output column, sw * tc
    elements apart); per output row the taps are folded with `max` into a dense y [R * OW, tc],
    which goes out as N x H x W x C rows. No tap copies: the vector engine reads the taps where
    the DMA put them.

        for c0 step tc: for n in images: for row blocks of R:
          stage <- x rows (+ -inf padding);  for r < R: y[r] = max over taps;  out <- y
    """

    def __init__(self, kb: KernelBuilder, g: Geometry, plan: PoolPlan, views: tuple[SSAValue, SSAValue]):
        self.kb, self.g, self.plan = kb, g, plan
        self.x, self.out = views
        self.wp = _pool_width(g)
        self.stage_rows = _pool_rows(g, plan.rows)
        tc, sw = plan.tc, g.w.stride
        self.stage3 = kb.alloc([self.stage_rows, self.wp, tc], f32, "sram")
        self.taps = kernel_view(kb, self.stage3, [self.stage_rows * self.wp // sw, sw * tc])
        self.y = kb.alloc([plan.rows * g.w.out, tc], f32, "sram")
        pad_cols = max(g.w.pad, self.wp - g.w.pad - g.w.size)
        fill_cols = _filled(kb, [self.stage_rows, pad_cols, tc], -math.inf) if pad_cols else None
        strips = [
            max(
                -(run.o0 * g.h.stride - g.h.pad),
                0,
                _pool_rows(g, run.size) - (g.h.size - (run.o0 * g.h.stride - g.h.pad)),
            )
            for run in block_runs(g.h, plan.rows)
            if not run.inside
        ]
        pad_rows = min(max(strips, default=0), self.stage_rows)
        self.padding = (_filled(kb, [pad_rows, self.wp, tc], -math.inf) if pad_rows else None, fill_cols)

    def run(self) -> None:
        kb, g = self.kb, self.g
        kb.tiles(
            g.channels,
            self.plan.tc,
            lambda c0, cs: kb.loop(
                0,
                g.batch,
                1,
                lambda n: for_blocks(kb, g.h, self.plan.rows, lambda hb: self._block(c0, cs, n, hb)),
            ),
        )

    def _block(self, c0: Index, cs: int, n: Index, hb: Block) -> None:
        kb, g = self.kb, self.g
        rows = _pool_rows(g, hb.size)
        _load_stage(kb, g, (self.stage3, *self.padding), Win(self.x, (n, 0, c0)), hb, rows, cs)
        kb.tiles(hb.size, 1, lambda r, _: self._row(r, cs))
        at = (kb.linear([(n, g.h.out * g.w.out), (hb.o0, g.w.out)]), c0)
        kb.copy(Win.at(self.y), Win(self.out, at), [hb.size * g.w.out, cs])

    def _row(self, r: Index, cs: int) -> None:
        kb, g = self.kb, self.g
        per_row, sw = self.wp // g.w.stride, g.w.stride
        y = Win(self.y, (kb.mul(r, g.w.out), 0))
        wins = []
        for i in range(g.h.kernel):
            for j in range(g.w.kernel):
                row = kb.add(
                    kb.mul(r, g.h.stride * per_row), i * g.h.dilation * per_row + (j * g.w.dilation) // sw
                )
                wins.append(Win(self.taps, (row, ((j * g.w.dilation) % sw) * self.plan.tc)))
        box = [g.w.out, cs]
        kb.binary("max", wins[0], wins[1] if len(wins) > 1 else wins[0], y, box)
        for win in wins[2:]:
            kb.binary("max", y, win, y, box)


def _pool_dram_views(g: Geometry) -> tuple[SSAValue, SSAValue]:
    """DRAM stand-ins for a pool's input [N*H, W, C] and output [N*OH*OW, C] in an estimate."""
    return (
        dram_buffer([g.batch * g.h.size, g.w.size, g.channels]),
        dram_buffer([g.batch * g.h.out * g.w.out, g.channels]),
    )


def _pool_estimate(g: Geometry, plan: PoolPlan, budget: Budget) -> PoolPlan | None:
    kb = CostOnlyBuilder(budget, "graph.max_pool")
    emitter = _PoolEmitter(kb, g, plan, _pool_dram_views(g))
    if kb.sram_bytes > budget.sram:
        return None
    emitter.run()
    return PoolPlan(plan.rows, plan.tc, kb.cost.cycles(budget.target))


_POOL_MEMO: dict[tuple, list[PoolPlan]] = {}


def pool_geometry(op: graph.MaxPoolOp) -> Geometry:
    """A channels-last pool: `channels` = C per image, `batch` = N."""
    x = tensor_shape(op.input)
    h, w = window_dims(op, op.kernel())
    return Geometry(x[0], x[-1], 1, x[-1], h, w)


def ranked_pool(g: Geometry, budget: Budget) -> list[PoolPlan]:
    """Every channels-last pool plan that fits, cheapest first (memoised)."""

    def rank() -> list[PoolPlan]:
        out_rows = sorted({balanced(g.h.out, r) for r in range(1, g.h.out + 1)})
        candidates = [PoolPlan(r, tc) for tc in _tiles(g.channels, budget.cols) for r in out_rows]
        plans = [plan for c in candidates if (plan := _pool_estimate(g, c, budget))]
        return sorted(plans, key=PoolPlan.key)

    key = (g, budget.target.fingerprint(), budget.sram, budget.acc, budget.depth)
    return remembered(_POOL_MEMO, key, rank)


def pool_estimate(op: graph.MaxPoolOp, budget: Budget) -> PoolPlan | None:
    """The cheapest channels-last plan of `op` (graph-channels-last compares it), or None."""
    plans = ranked_pool(pool_geometry(op), budget)
    return plans[0] if plans else None


def lower_channels_last_pool(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.MaxPoolOp)
    why = pool_supported(op)
    if why is not None:
        raise CannotFit(op, f"channels-last max pool: {why}", 0, ctx.budget)
    g = pool_geometry(op)
    plans = ranked_pool(g, ctx.budget)
    if not plans:
        smallest = CostOnlyBuilder(ctx.budget, "graph.max_pool")
        _PoolEmitter(smallest, g, PoolPlan(1, min(g.channels, ctx.budget.cols)), _pool_dram_views(g))
        raise CannotFit(op, "one output row of the channels-last max pool", smallest.sram_bytes, ctx.budget)
    plan, note = _choose_ranked("pool", g, ctx.budget, ops, plans)
    views = (
        ctx.value_view(op.input, [g.batch * g.h.size, g.w.size, g.channels]),
        ctx.value_view(op.output, [g.batch * g.h.out * g.w.out, g.channels]),
    )
    kb = ctx.kernel(ops)
    _PoolEmitter(kb, g, plan, views).run()
    reason = (
        f"channels-last max pool on the vector engine: {g.taps} taps read in place from the stage "
        f"(rows of {g.w.stride} x {plan.tc} elements), folded with max per output row; blocks of "
        f"{plan.rows} output row(s), {plan.tc} channel(s) per chunk; fewest est. cycles of "
        f"{len(plans)} tilings"
    )
    ctx.add(kb, [plan.rows, plan.tc], noted(reason, note))
