"""Lowering of graph.conv for convert-graph-to-tile: 1-D and 2-D, grouped and depthwise, with
strides, pads, dilations, an optional bias and a fused activation.

Implicit GEMM on the matrix engine, per group and image, with the im2col patch built by DMA
(graph_to_tile_window: stage = receptive field, one copy per tap; padding is the stage's zero
fill, stride and dilation are window offsets):

    out[m, p] = sum_k W[m, k] * patch[k, p]      m: output channel, k = (c, i, j), p = (oh, ow)

The weight is the LHS exactly as it lies in DRAM ([C_out, C/g*kh*kw] is a tile.reshape view of
[C_out, C/g, kh, kw]), the patch is the RHS with output positions as columns (n <= matrix cols
per tile.matmul, k <= matrix rows), and the product [C_out, positions] is already NCHW. So
nothing is transposed, neither the weight (which cannot be transposed in DRAM at compile
time) nor the output:

    for g in groups:                       [W of the group -> SRAM when kept] [bias column]
      for n in images:
        for row blocks: for col blocks:    (interior blocks in one scf.for, borders peeled)
          [border block: zero the stage]
          one chunk:  stage + taps;  for m0 step tm: matmuls; epilogue
          else:       for m0 step tm: for c0 step tc: stage + taps, [W tile]; matmuls
                                      epilogue
      matmuls:  for p0 in R*Q step cols: for k0 step rows: tile.matmul [tm, k, p]
                (accumulating after the first product of the first chunk)
      epilogue: acc_read {activation}, or add bias column (broadcast col) + activation;
                out[n*C_out + g*M + m0, oh0, ow0] <- y (viewed [tm, R, Q])

Per tap (`WindowPlan.per_tap`, offered when the weight is a constant or has one tap): the
weight is laid out tap-major [C_out, kh, kw, C/g] at compile time (a tile.const of its own),
so the columns of each tap are contiguous and the contraction is a sum of one product per
tap, k = the chunk's channels:

    out[m, p] = sum_t sum_c W'[m, t, c] * rows_t[c, p]

With stride 1, rows_t is the stage itself, viewed flat per channel from the tap's first
element (base(i, j) + p, the wide positions): no im2col patch, no tap copies. Strided, rows_t
is the tap's block of a tap-major patch, one DMA per tap for all channels (`PatchLayout.flat`).
Every load first copies the stage's padding from tiles of zeros, so a chunk writes all of its
stage and multi-buffer rotates stage, patch and weight tiles (the plan is estimated at the
pipeline's depth).

Depthwise (group == C_in == C_out) may run on the vector engine instead: for each tap, the
tap's [tc, positions] patch window times the weight column (broadcast col), summed in SRAM.
Both are planned (graph_to_tile_window_costs); the cheaper estimate wins and `reason` says so.
`tiles` is [R, Q, tc, tm] (matrix engine) or [R, Q, tc] (vector engine).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from xdsl.dialects.builtin import f32, i32
from xdsl.ir import Operation, SSAValue

from aitc.analysis.graph_matching import name_hint
from aitc.dialects import graph
from aitc.dialects.hw import DTYPES
from aitc.passes.graph_to_tile.builder import Index, KernelBuilder, Win, buffer_element
from aitc.passes.graph_to_tile.conv_channels_last import estimate as channels_last_estimate
from aitc.passes.graph_to_tile.conv_channels_last import lower_channels_last_conv
from aitc.passes.graph_to_tile.costs import F32, Budget, add_kernel_cycles, dma_instruction_cycles
from aitc.passes.graph_to_tile.elementwise import (
    ACTIVATION_TEMPS,
    Operand,
    activation_ops,
    apply_activation,
)
from aitc.passes.graph_to_tile.epilogue import EpilogueChain, epilogue_chain
from aitc.passes.graph_to_tile.im2col import Im2col, VectorWindow
from aitc.passes.graph_to_tile.lowering import (
    CannotFit,
    Fused,
    LoweringContext,
    residual_operand,
    tensor_element,
    tensor_shape,
)
from aitc.passes.graph_to_tile.matmul_tiling import MAX_UNROLL
from aitc.passes.graph_to_tile.movement import kernel_view
from aitc.passes.graph_to_tile.tuning import choose, noted
from aitc.passes.graph_to_tile.vector import SLOT_TYPES
from aitc.passes.graph_to_tile.window import (
    Block,
    Geometry,
    conv_geometry,
    for_blocks,
    tap_major_order,
)
from aitc.passes.graph_to_tile.window_costs import (
    WindowPlan,
    WindowProblem,
    merged_taps,
    places_straight,
    plan_window,
    ranked_window,
    tap_parts,
    taps_beside,
    window_budget,
    window_minimum,
    window_plan_of,
)
from aitc.types import element_bytes
from aitc.weights import attr_to_array


@dataclass(frozen=True)
class ConvViews:
    """DRAM views: x [N*C, H, W], w [C_out, C/g*kh*kw] (tap-major [C_out, kh*kw*C/g] per tap,
    then also `w_taps` [C_out, kh*kw, C/g]), out [N*C_out, OH, OW], bias [C_out, 1],
    and a residual added to the output (out's view), if one is fused. With an epilogue chain
    (an int8 conv's): `out` is the chain result's, `cols` its per-channel inputs [C_out, 1]
    and `tiles` its inputs of the output's shape (out's view)."""

    x: SSAValue
    w: SSAValue
    out: SSAValue
    bias: SSAValue | None
    residual: SSAValue | None = None
    w_taps: SSAValue | None = None
    cols: tuple[SSAValue, ...] = ()
    tiles: tuple[SSAValue, ...] = ()

    @staticmethod
    def of(
        ctx: LoweringContext,
        op: graph.ConvOp,
        g: Geometry,
        fused: Fused | None,
        per_tap: bool,
        chain: EpilogueChain | None = None,
    ) -> ConvViews:
        c_in, c_out = g.groups * g.channels, g.groups * g.outs
        out = [g.batch * c_out, g.h.out, g.w.out]
        tap_major = None
        if per_tap:  # one tap: the weight already is tap-major
            tap_major = (
                ctx.buffer(op.weight)
                if g.taps == 1
                else ctx.permuted_constant(
                    op.weight, tap_major_order(len(tensor_shape(op.weight))), "tap_major"
                )
            )
            assert tap_major is not None, "per-tap plans are only offered for constant weights"
        weight = tap_major if tap_major is not None else ctx.buffer(op.weight)
        result = chain.result if chain else fused.output if fused else op.output
        return ConvViews(
            ctx.value_view(op.input, [g.batch * c_in, g.h.size, g.w.size]),
            ctx.view(weight, [c_out, g.channels * g.taps]),
            ctx.value_view(result, out),
            ctx.value_view(op.bias, [c_out, 1]) if op.bias is not None and not op.is_integer() else None,
            ctx.value_view(fused.residual, out) if fused else None,
            ctx.view(weight, [c_out, g.taps, g.channels]) if tap_major is not None else None,
            tuple(ctx.value_view(col, [c_out, 1]) for col in chain.cols) if chain else (),
            tuple(ctx.value_view(tile_, out) for tile_ in chain.tiles) if chain else (),
        )


def residual_of(conv: Operation, chain: list[Operation]) -> Fused | None:
    """The residual add a conv kernel can take over: `chain` is an add of the conv's result (its
    only use) and a tensor of its shape, optionally followed by a relu; the conv has no
    activation of its own, one group, and all are f32."""
    if not isinstance(conv, graph.ConvOp) or conv.activation or conv.groups() != 1 or not chain:
        return None
    if conv.is_integer():
        return None
    add, *rest = chain
    if len(rest) > 1 or (rest and not isinstance(rest[0], graph.ReluOp)):
        return None
    residual = residual_operand(conv.output, add)
    return None if residual is None else Fused(residual, "relu" if rest else None, chain[-1].results[0])


# --------------------------------------------------------------------------- matrix engine


class _MatrixConv:
    """Emits the implicit GEMM loop nest of one planned conv (see the module docstring)."""

    def __init__(
        self,
        kb: KernelBuilder,
        g: Geometry,
        plan: WindowPlan,
        views: ConvViews,
        activation,
        after=None,
        input_zero: int = 0,
        chain: EpilogueChain | None = None,
    ):
        """`input_zero`: an i8 conv's input zero point, the stage's padding value (the bias,
        if any, is then the column that subtracts it: `integer_correction`). `chain`: the
        elementwise chain run on each output tile (`epilogue`), whose result is stored."""
        self.kb, self.g, self.plan, self.v, self.activation = kb, g, plan, views, activation
        self.after = after  # the activation after a fused residual add
        k = g.channels * g.taps
        order = "tap" if plan.per_tap else "channel"
        element = buffer_element(views.x)
        result = i32 if str(element) == "i8" else element  # the matrix engine's accumulator type
        block = (plan.rows, plan.cols, plan.tc)
        self.cols = Im2col(kb, g, block, order, input_zero, per_tap=plan.per_tap, element=element)
        layout = self.cols.layout
        if plan.per_tap and not plan.keep:  # W'[tm, taps, tc] in parts: (first tap, taps, 2-D, 3-D)
            self.weight_parts = []
            for first, taps in tap_parts(g, plan, kb.target.dma.queues):
                buffer = kb.alloc([plan.tm, plan.tc * taps], element, "sram")
                view = kernel_view(kb, buffer, [plan.tm, taps, plan.tc])
                self.weight_parts.append((first, taps, buffer, view))
            self.weights = self.weight_parts[0][2]
        else:
            self.weights = kb.alloc(
                [g.outs, k] if plan.keep else [plan.tm, plan.tc * g.taps], element, "sram"
            )
        self.acc = kb.alloc([plan.tm, layout.width], result, "acc")
        self.single_acc = kb.budget.single_acc(plan.acc_bytes)
        # the i32 sum in SRAM, unless an epilogue chain reads it from ACC (`_epilogue`)
        self.chain_reads_acc = chain is not None and views.bias is None and not layout.compact
        if not self.chain_reads_acc:
            self.y = kb.alloc([plan.tm, layout.out_width(layout.compact)], result, "sram")
            self.y3 = kernel_view(kb, self.y, [plan.tm, plan.rows, layout.out_pitch(layout.compact)])
        self.bias = kb.alloc([g.outs, 1], result, "sram") if views.bias is not None else None
        self.residual = None
        if views.residual is not None:  # shaped like y: the residual's window of the block
            residual = kb.alloc([plan.tm, layout.out_width(layout.compact)], f32, "sram")
            self.residual = (
                residual,
                kernel_view(kb, residual, [plan.tm, plan.rows, layout.out_pitch(layout.compact)]),
            )
        temps = ACTIVATION_TEMPS.get(activation or "", 0) if self.bias is not None else 0
        self.temp = Win.at(kb.alloc([plan.tm, layout.width], f32, "sram")) if temps else None
        self.chain = chain
        self.stored = element_bytes(tensor_element(chain.result) if chain is not None else result)
        if chain is not None:  # its columns, its tiles (and their 3-D views) and working slots
            dense = [plan.tm, layout.out_width(layout.compact)]
            shape3 = [plan.tm, plan.rows, layout.out_pitch(layout.compact)]
            self.columns = [kb.alloc([g.outs, 1], tensor_element(col), "sram") for col in chain.cols]
            self.inputs = [kb.alloc(dense, tensor_element(value), "sram") for value in chain.tiles]
            self.inputs3 = [kernel_view(kb, tile_, shape3) for tile_ in self.inputs]
            self.slots = [kb.alloc(dense, SLOT_TYPES[t], "sram") for t in chain.slot_types]
            result = self.slots[chain.slot_of[chain.result]]
            self.y3 = kernel_view(kb, result, shape3)

    def run(self) -> None:
        self.kb.loop(0, self.g.groups, 1, self._group)

    def _group(self, gi: Index) -> None:
        kb, g, v = self.kb, self.g, self.v
        self.w_row = kb.mul(gi, g.outs)
        if self.plan.keep:
            kb.copy(Win(v.w, (self.w_row, 0)), Win.at(self.weights), [g.outs, g.channels * g.taps])
        if self.bias is not None and v.bias is not None:
            kb.copy(Win(v.bias, (self.w_row, 0)), Win.at(self.bias), [g.outs, 1])
        for src, dst in zip(v.cols, self.columns if self.chain is not None else (), strict=True):
            kb.copy(Win(src, (self.w_row, 0)), Win.at(dst), [g.outs, 1])
        kb.loop(0, g.batch, 1, lambda n: self._image(gi, n))

    def _image(self, gi: Index, n: Index) -> None:
        kb, g = self.kb, self.g
        self.x_row = kb.linear([(n, g.groups * g.channels), (gi, g.channels)])
        self.o_row = kb.linear([(n, g.groups * g.outs), (gi, g.outs)])
        per_row = lambda hb: for_blocks(kb, g.w, self.plan.cols, lambda wb: self._block(hb, wb))  # noqa: E731
        for_blocks(kb, g.h, self.plan.rows, per_row)

    def _block(self, hb: Block, wb: Block) -> None:
        self.hb, self.wb = hb, wb
        self.cols.prepare(hb, wb)
        whole = self.plan.tc >= self.g.channels  # one chunk: the patch serves every m tile
        if whole:
            self.cols.load(self.v.x, self.x_row, self.g.channels, hb, wb)
        self.kb.tiles(self.g.outs, self.plan.tm, lambda m0, ms: self._m_tile(m0, ms, whole))

    def _m_tile(self, m0: Index, ms: int, whole: bool) -> None:
        tc = self.plan.tc
        if whole:
            self._contract(m0, ms, 0, self.g.channels, True)
        else:
            with self.kb.peeled_trip():
                self._chunk(m0, ms, 0, tc, True)
            store = dma_instruction_cycles(self.kb.target, self.stored * ms * self.hb.size * self.wb.size)
            with self.kb.own_loads((self.g.channels - tc) // tc, store):
                self.kb.tiles(self.g.channels - tc, tc, lambda c0, cs: self._chunk(m0, ms, c0, cs, False), tc)
        self._epilogue(m0, ms)

    def _chunk(self, m0: Index, ms: int, c0: Index, cs: int, first: bool) -> None:
        self.cols.load(self.v.x, self.kb.add(self.x_row, c0), cs, self.hb, self.wb)
        self._contract(m0, ms, c0, cs, first)

    def _contract(self, m0: Index, ms: int, c0: Index, cs: int, first: bool) -> None:
        """acc[0:ms, 0:positions] (+)= W[m0:m0+ms, chunk] @ patch[chunk, 0:positions]; per tap:
        the sum over taps t of W'[m0:m0+ms, t, chunk] @ (the tap's rows: stage[chunk, base(t):
        base(t)+positions] in place, else patch[t*tc:t*tc+cs, 0:positions])."""
        if self.plan.per_tap:
            self._contract_per_tap(m0, ms, c0, cs, first)
            return
        kb, k, column = self.kb, cs * self.g.taps, self.kb.mul(c0, self.g.taps)
        at: tuple[Index, Index] = (m0, column)
        if not self.plan.keep:
            kb.copy(Win(self.v.w, (kb.add(self.w_row, m0), column)), Win.at(self.weights), [ms, k])
            at = (0, 0)
        positions = self.cols.positions(self.hb, self.wb)
        kb.tiles(positions, kb.budget.cols, lambda p0, ps: self._products(at, (ms, k, ps), (0, 0, p0), first))

    def _contract_per_tap(self, m0: Index, ms: int, c0: Index, cs: int, first: bool) -> None:
        kb, g, layout = self.kb, self.g, self.cols.layout
        if self.plan.keep:  # W' of the group [M, taps * C/g]: tap t's chunk at column t*C/g + c0
            row, columns, width = m0, c0, g.channels
        else:
            assert self.v.w_taps is not None
            for first_tap, taps, _, view in self.weight_parts:
                src = Win(self.v.w_taps, (kb.add(self.w_row, m0), first_tap, c0))
                kb.copy(src, Win.at(view), [ms, taps, cs])
            row, columns, width = 0, 0, self.plan.tc
        positions = self.cols.positions(self.hb, self.wb)
        if merged_taps(g, self.plan):  # rows (tap, c) and columns (tap, c): one product
            at = (row, columns)
            self._over_positions(
                positions, lambda p0, ps: self._products(at, (ms, g.taps * cs, ps), (0, 0, p0), first)
            )
            return
        for i in range(g.h.kernel):
            for j in range(g.w.kernel):
                tap = i * g.w.kernel + j
                rhs: tuple[int, int]
                if self.cols.in_place:
                    rhs = (0, i * g.h.dilation * layout.ws + j * g.w.dilation)
                else:
                    rhs = (tap * self.plan.tc, 0)
                weights, part_tap = self._weight_part(tap)
                at = (row, kb.add(columns, part_tap * width))
                self._over_positions(
                    positions,
                    lambda p0, ps, at=at, rhs=rhs, tap=tap, weights=weights: self._products(
                        at, (ms, cs, ps), (rhs[0], rhs[1], p0), first and tap == 0, weights
                    ),
                )

    def _weight_part(self, tap: int) -> tuple[SSAValue, int]:
        """The SRAM buffer holding tap `tap`'s weights and the tap's index in it: the kept
        weights, or the part of the streamed tile (`tap_parts`) it is in."""
        if self.plan.keep:
            return self.weights, tap
        first, _, buffer, _ = next(part for part in self.weight_parts if tap < part[0] + part[1])
        return buffer, tap - first

    def _over_positions(self, positions: int, product: Callable[[Index, int], None]) -> None:
        """product(p0, ps) over the column tiles of `positions`, unrolled up to MAX_UNROLL."""
        self.kb.tiles(positions, self.kb.budget.cols, product, unroll=MAX_UNROLL)

    def _products(
        self,
        at: tuple[Index, Index],
        sizes: tuple[int, int, int],
        rhs: tuple[int, int, Index],
        first: bool,
        weights: SSAValue | None = None,
    ) -> None:
        """The matmuls of positions [p0, p0 + ps): lhs at `at` of `weights` (default: the
        weight tile), rhs rows from `row` and columns from `base` + p0 (`rhs` = (row, base,
        p0)), acc columns from p0."""
        kb, rows = self.kb, self.kb.budget.rows
        ms, k, ps = sizes
        row, base, p0 = rhs
        column = kb.add(p0, base) if base else p0
        lhs_buffer = self.weights if weights is None else weights

        def product(k0: Index, ks: int, accumulate: bool) -> None:
            lhs = Win(lhs_buffer, (at[0], kb.add(at[1], k0)))
            patch = Win(self.cols.patch, (kb.add(k0, row) if row else k0, column))
            kb.matmul(lhs, patch, Win(self.acc, (0, p0)), [ms, ks, ps], accumulate)

        product(0, min(rows, k), not first)  # then the rest, unrolled up to MAX_UNROLL chunks in all
        kb.tiles(k - rows, rows, lambda k0, ks: product(k0, ks, True), rows, unroll=MAX_UNROLL - 1)

    def _epilogue(self, m0: Index, ms: int) -> None:
        """acc_read {activation}, or the bias add (broadcast col) and the activation, into y;
        row by row into a dense y when the layout is `compact`; then the store."""
        kb, hb, wb, layout = self.kb, self.hb, self.wb, self.cols.layout
        positions = self.cols.positions(hb, wb)
        sizes = [ms, hb.size * wb.size] if layout.compact else [ms, positions]

        def first(acc: Win, dst: Win, box: list[int]) -> None:
            if self.bias is None:
                kb.acc_read(acc, dst, box, self.activation)
            else:
                kb.binary("add", acc, Win(self.bias, (m0, 0)), dst, box, "col")

        at = (kb.add(self.o_row, m0), hb.o0, wb.o0)
        if self.chain_reads_acc:  # the chain's first op (a cast) reads ACC itself: no acc_read
            self._run_chain(Win.at(self.acc), m0, at, (ms, hb, wb), sizes)
            kb.copy(Win.at(self.y3), Win(self.v.out, at), [ms, hb.size, wb.size])
            return
        y = Win.at(self.y)
        with kb.cost.reading_acc(self.single_acc):
            if layout.compact:
                row = lambda r, _: first(  # noqa: E731
                    Win(self.acc, (0, kb.mul(r, layout.pitch))),
                    Win(self.y, (0, kb.mul(r, wb.size))),
                    [ms, wb.size],
                )
                kb.tiles(hb.size, 1, row)
            else:
                first(Win.at(self.acc), y, sizes)
        if self.bias is not None:
            apply_activation(kb, self.activation, y, self.temp, sizes)
        if self.chain is not None:
            self._run_chain(y, m0, at, (ms, hb, wb), sizes)
        if self.residual is not None and self.v.residual is not None:  # + residual, then activation
            residual, residual3 = self.residual
            kb.copy(Win(self.v.residual, at), Win.at(residual3), [ms, hb.size, wb.size], ahead=True)
            kb.binary("add", y, Win.at(residual), y, sizes)
            apply_activation(kb, self.after, y, None, sizes)
        kb.copy(Win.at(self.y3), Win(self.v.out, at), [ms, hb.size, wb.size])

    def _run_chain(
        self, y: Win, m0: Index, at: tuple, tile: tuple[int, Block, Block], sizes: list[int]
    ) -> None:
        """The epilogue chain on the output tile `y` (the i32 sum, in SRAM or still in ACC):
        its tensor inputs' windows loaded first, each op into its working slot; the result slot
        is what `y3` stores."""
        kb, chain, (ms, hb, wb) = self.kb, self.chain, tile
        assert chain is not None
        for src, dst in zip(self.v.tiles, self.inputs3, strict=True):
            kb.copy(Win(src, at), Win.at(dst), [ms, hb.size, wb.size], ahead=True)
        inputs = {v: Operand("full", Win.at(b)) for v, b in zip(chain.tiles, self.inputs, strict=True)}
        inputs |= {v: Operand("col", Win(b, (m0, 0))) for v, b in zip(chain.cols, self.columns, strict=True)}
        reads_acc = kb.cost.reading_acc(self.single_acc) if y.buffer is self.acc else None
        chain.emit(kb, y, inputs, [Win.at(slot) for slot in self.slots], sizes, reads_acc)


# --------------------------------------------------------------------------- vector engine


def _lower_depthwise(kb: KernelBuilder, g: Geometry, plan: WindowPlan, views: ConvViews, activation) -> None:
    """y[c, p] = sum over taps of patch[tap, c, p] * W[c, tap] (+ bias[c]), activation."""
    rows = g.channels if plan.keep else plan.tc
    cols = Im2col(kb, g, (plan.rows, plan.cols, plan.tc), "tap")
    weights = kb.alloc([rows, g.taps], f32, "sram")
    bias = kb.alloc([rows, 1], f32, "sram") if views.bias is not None else None
    y = kb.alloc([plan.tc, cols.layout.out_width()], f32, "sram")
    temp = (
        kb.alloc([plan.tc, cols.layout.width], f32, "sram")
        if ACTIVATION_TEMPS.get(activation or "")
        else None
    )
    sources = [(views.w, weights, g.taps), (views.bias, bias, 1)]
    loads = [(src, dst, n) for src, dst, n in sources if src is not None and dst is not None]
    for src, dst, n in loads if plan.keep else ():
        kb.copy(Win.at(src), Win.at(dst), [g.channels, n])

    def compute(c0: Index, cs: int, hb: Block, wb: Block) -> None:
        sizes, acc = [cs, cols.positions(hb, wb)], Win.at(y)
        at = c0 if plan.keep else 0
        for src, dst, n in () if plan.keep else loads:
            kb.copy(Win(src, (c0, 0)), Win.at(dst), [cs, n])
        kb.binary("mul", cols.tap_rows(0), Win(weights, (at, 0)), acc, sizes, "col")
        for tap in range(1, g.taps):  # the tap's patch rows are scratch: scale them in place
            kb.binary("mul", cols.tap_rows(tap), Win(weights, (at, tap)), cols.tap_rows(tap), sizes, "col")
            kb.binary("add", acc, cols.tap_rows(tap), acc, sizes)
        if bias is not None:
            kb.binary("add", acc, Win(bias, (at, 0)), acc, sizes, "col")
        apply_activation(kb, activation, acc, Win.at(temp) if temp is not None else None, sizes)
        kb.charge_beside_taps(taps_beside(kb.budget, g, cols.layout, cs, sizes[1]))

    kb.cost.taps_overlap = True
    VectorWindow(kb, g, cols, y, (views.x, views.out)).run(compute)


# --------------------------------------------------------------------------- planning


PER_TAP_SEMAPHORES = 24
"""Per-tap plans are offered on targets with at least this many semaphores per core: their
kernels rotate stage, weight, accumulator and output tiles in nested loops, whose protocols
took up to 16 semaphores (measured on the convs of ResNet-50 and the test models), and a
multi-core program keeps 2 for its fences. With fewer (the test target `tiny` has 16), the
im2col plans, which need fewer, are the only candidates."""


def _problems(
    op: graph.ConvOp,
    g: Geometry,
    budget: Budget,
    fused: Fused | None = None,
    chain: EpilogueChain | None = None,
) -> list[WindowProblem]:
    """The matrix-engine problem, and for a depthwise conv the vector-engine one (with a fused
    residual add, or an int8 conv: the matrix one only)."""
    target = budget.target
    activation = op.activation.data if op.activation else None
    integer, input_zero = op.is_integer(), op.input_zero_point()
    has_bias = op.bias is not None or bool(input_zero)  # an i8 conv's correction column is its bias
    temps = ACTIVATION_TEMPS.get(activation or "", 0)
    finish = ("add", *activation_ops(activation)) if has_bias else (activation or "acc_read",)
    chained: dict = {}
    if chain is not None:  # its vector ops per tile, its working slots and inputs, what it stores
        slots = sum(DTYPES[t] for t in chain.slot_types)
        inputs = tuple(element_bytes(tensor_element(v)) for v in chain.tiles)
        finish += chain.vector_ops(budget)
        chained = {
            "stored": element_bytes(tensor_element(chain.result)),
            "chain_bytes": slots + sum(inputs),
            "columns": len(chain.cols),
            "tile_inputs": inputs,
            "chain_reads_acc": not has_bias,
        }
    residual = activation_ops(fused.activation) if fused else None
    constant = isinstance(op.weight.owner, graph.ConstantOp) and op.weight.owner.value is not None
    tap_major = ((g.taps > 1 and constant) or (g.taps == 1 and not g.direct)) and (
        target.semaphores >= PER_TAP_SEMAPHORES
    )
    problems = [
        WindowProblem(
            g,
            "matrix",
            has_bias,
            False,
            finish,
            temps if has_bias else 0,
            pad_value=input_zero,
            residual=residual,
            tap_major=tap_major,
            element=1 if integer else F32,
            **chained,
        )
    ]
    if fused or integer:  # the vector engine's depthwise products would wrap in i8
        return problems
    if g.channels == 1 and g.outs == 1:
        depthwise = Geometry(g.batch, g.groups, 1, g.groups, g.h, g.w)
        ops = ("mul",) + ("mul", "add") * (g.taps - 1) + ("add",) * has_bias + activation_ops(activation)
        problems.append(WindowProblem(depthwise, "vector", has_bias, True, ops, temps))
    return problems


def integer_correction(op: graph.ConvOp) -> np.ndarray:
    """The bias minus input_zero * (the sum of each output channel's weights), as i32
    [C_out, 1]: an i8 conv whose padding holds the input zero point sums (x - zero) * w over
    every tap, plus its bias, once this column is added (graph.conv's `input_zero`)."""
    weight = attr_to_array(op.weight.owner.value)  # type: ignore[union-attr]  (window_problem: a constant)
    sums = weight.astype(np.int64).reshape(weight.shape[0], -1).sum(axis=1, keepdims=True)
    column = -op.input_zero_point() * sums
    if op.bias is not None:
        column += attr_to_array(op.bias.owner.value).astype(np.int64).reshape(-1, 1)  # type: ignore[union-attr]
    return column.astype(np.int32)


def _reason(plan: WindowPlan, plans: list[WindowPlan], g: Geometry, budget: Budget) -> str:
    block = f"blocks of {plan.rows} x {plan.cols} outputs, {plan.tc} channel(s) per chunk"
    if plan.engine == "matrix" and plan.per_tap:
        weights = "kept in SRAM per group" if plan.keep else "streamed per tile"
        layout = "W laid out [C_out, kh, kw, C/g] at compile time, " if g.taps > 1 else ""
        rows = (
            "the stage itself (shifted per tap, no im2col patch)"
            if g.unit_stride
            else "a tap-major patch (one DMA per tap)"
        )
        text = (
            f"per-tap GEMM: {layout}one product per tap with {rows} as rhs; {block}, {plan.tm} "
            f"output channel(s) per tile, weights {weights}"
        )
    elif plan.engine == "matrix":
        weights = "kept in SRAM per group" if plan.keep else "streamed per tile"
        text = (
            f"implicit GEMM: W [C_out, {g.channels * g.taps}] as lhs (no transpose), im2col patch by DMA "
            f"as rhs; {block}, {plan.tm} output channel(s) per tile, weights {weights}"
        )
    else:
        text = f"depthwise on the vector engine: {g.taps} tap multiply-adds per chunk; {block}"
    text += budget.acc_note(plan.acc_bytes)
    text += f"; fewest est. cycles of {plan.candidates} tilings"
    if len(plans) > 1:
        cost = {p.engine: p.cycles for p in plans}
        versus = f"est. {cost['vector']} vector vs {cost['matrix']} matrix cycles"
        text += f"; chose the {plan.engine} engine ({versus})"
    return text


def _ranked(problems: list[WindowProblem], budget: Budget, count: int) -> list[WindowPlan]:
    """The `count` cheapest plans over the conv's problems (engines), best first."""
    plans = [plan for p in problems for plan in ranked_window(p, budget, count)]
    return sorted(plans, key=WindowPlan.key)[:count]


def _plan_of(problems: list[WindowProblem], budget: Budget, choice: tuple) -> WindowPlan | None:
    """The plan `choice` names (`WindowPlan.choice`, engine first), if it is a candidate."""
    for p in problems:
        if p.engine == choice[0] and (plan := window_plan_of(p, budget, choice)) is not None:
            return plan
    return None


def _cannot_fit(op: graph.ConvOp, problem: WindowProblem, budget: Budget) -> CannotFit:
    sram, acc = window_minimum(problem)
    if not budget.holds_acc(acc):
        return CannotFit(op, "one accumulator element of the conv", acc, budget, "ACC", single=True)
    return CannotFit(op, "the smallest conv tile (one output position, one channel)", sram, budget)


def estimated_cycles(op: graph.ConvOp, budget: Budget) -> int | None:
    """The estimate of the cheapest channels-first plan of `op` (None: none fits)."""
    g = conv_geometry(op)
    plans = [plan for p in _problems(op, g, budget) if (plan := plan_window(p, budget)) is not None]
    return min(plan.cycles for plan in plans) if plans else None


def conv_fusion_estimates(op: graph.ConvOp, fused: Fused, budget: Budget) -> tuple[int, int] | None:
    """(cycles of the conv with the residual add fused, cycles of the conv alone plus the add's
    own kernel, which reads two tensors of the output's size on its load queue), or None when
    a plan does not fit."""
    if op.is_channels_last():
        pair = [channels_last_estimate(op, budget, f) for f in (fused, None)]
        if pair[0] is None or pair[1] is None:
            return None
        nbytes = 4 * math.prod(tensor_shape(op.output))
        return pair[0].cycles, pair[1].cycles + add_kernel_cycles(budget.target, nbytes)
    g = conv_geometry(op)
    plans = [plan_window(_problems(op, g, budget, f)[0], budget) for f in (fused, None)]
    with_residual, alone = plans
    if with_residual is None or alone is None:
        return None
    nbytes = 4 * math.prod(tensor_shape(op.output))
    return with_residual.cycles, alone.cycles + add_kernel_cycles(budget.target, nbytes)


def lower_conv(ctx: LoweringContext, ops: list[Operation]) -> None:
    """One conv, or a conv and the residual add (+ relu) fused into it (`fuse_residuals`), or an
    int8 conv and the elementwise chain of its epilogue (`fuse_epilogue_chains`)."""
    op, *rest = ops
    assert isinstance(op, graph.ConvOp)
    chain = epilogue_chain(op, rest) if rest and op.is_integer() else None
    fused = residual_of(op, rest) if rest and chain is None else None
    assert not rest or fused is not None or chain is not None
    if op.is_channels_last():
        lower_channels_last_conv(ctx, ops, fused)
        return
    g = conv_geometry(op)
    problems = _problems(op, g, ctx.budget, fused, chain)
    plans = [plan for p in problems if (plan := plan_window(p, ctx.budget)) is not None]
    if not plans:
        raise _cannot_fit(op, problems[-1], ctx.budget)
    plan, note = choose(
        "conv",
        problems,
        ctx.budget,
        ops,
        min(plans, key=WindowPlan.key),
        lambda count: _ranked(problems, ctx.budget, count),
        lambda choice: _plan_of(problems, ctx.budget, choice),
    )
    activation = op.activation.data if op.activation else None
    views = ConvViews.of(ctx, op, g, fused, plan.per_tap, chain)
    input_zero = op.input_zero_point()
    if op.is_integer() and (input_zero or op.bias is not None):
        correction = ctx.constant(integer_correction(op), f"{name_hint(op)}_zero_point_sums", op.location)
        views = replace(views, bias=ctx.view(correction, [g.groups * g.outs, 1]))
    kb = ctx.kernel(ops)
    kb.cost.depth = window_budget(problems[0], plan, ctx.budget).depth
    kb.cost.places_straight = places_straight(plan, g.channels)
    if plan.engine == "matrix":
        after = fused.activation if fused else None
        _MatrixConv(kb, g, plan, views, activation, after, input_zero, chain).run()
    else:
        _lower_depthwise(kb, problems[-1].g, plan, views, activation)
    reason = _reason(plan, plans, g, ctx.budget)
    if op.is_integer():
        reason += "; i8 x i8 -> i32 on the matrix engine"
        if input_zero:
            reason += (
                f", the padding filled with the input zero point {input_zero} and each output "
                "channel's sum of it times its weights subtracted in the epilogue"
            )
        if op.bias is not None:
            reason += ", the i32 bias added " + ("with it" if input_zero else "in the epilogue")
    if chain is not None:
        names = ", ".join(o.name.removeprefix("graph.") for o in chain.ops)
        reason += (
            f"; the epilogue runs the {len(chain.ops)}-op elementwise chain on each output tile "
            f"({names}); the i32 sum stays on chip"
        )
    if fused is not None:
        estimates = conv_fusion_estimates(op, fused, ctx.budget) or (plan.cycles, 0)
        reason += (
            f"; the residual add{' and relu' if fused.activation else ''} fused (est. {estimates[0]} cycles "
            f"against {estimates[1]} for the conv and the add apart): each output tile adds its window of "
            "the residual before its store"
        )
    ctx.add(kb, plan.tiles, noted(reason, note))
