"""Tile planning of the window kernels (conv, pooling) of convert-graph-to-tile: every
candidate tiling is estimated in closed form, with the per-op costs of graph_to_tile_costs,
following the loop nests of graph_to_tile_conv / graph_to_tile_window op for op.

A plan fixes the output block (R rows x Q cols, Q = OW when R > 1), the channel chunk tc,
for the matrix engine the output-channel tile tm (ACC holds tm x R*Q) and whether the
weights stay in SRAM for a whole group (`keep`). The cheapest candidate by estimated cycles,
then DRAM bytes, then total engine time, then SRAM wins; the kernel records the cost of the
IR actually emitted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import product

from aitc.passes.graph_to_tile_costs import F32, Budget, Cost, matmul_cycles, split, vector_cycles
from aitc.passes.graph_to_tile_window import (
    BlockRun,
    Geometry,
    block_runs,
    fill_windows,
    padding_strips,
    prefill_strips,
)
from aitc.target import Target


@dataclass(frozen=True)
class WindowProblem:
    """What a window kernel computes. `engine` "matrix" (implicit GEMM, channel-major patch)
    or "vector" (per-tap vector ops, tap-major patch); `weights`: per-channel tap weights on
    the vector engine (depthwise); `epilogue`: the vector ops per output tile (after the
    contraction, or all of a vector kernel's); `temps`: extra output-sized SRAM tiles;
    `counts`: a divisor row per block (avg pooling); `pad_value`: the stage's fill."""

    g: Geometry
    engine: str
    bias: bool = False
    weights: bool = False
    epilogue: tuple[str, ...] = ("acc_read",)
    temps: int = 0
    counts: bool = False
    pad_value: float = 0.0


@dataclass(frozen=True)
class WindowPlan:
    engine: str
    rows: int
    cols: int
    tc: int
    tm: int
    keep: bool
    cycles: int = 0
    dma_bytes: int = 0
    work: int = 0
    sram_bytes: int = 0
    acc_bytes: int = 0
    candidates: int = 0

    def key(self) -> tuple[int, int, int, int]:
        """Est. cycles, then DRAM bytes, then the engines' total busy time (`WindowCost.work`),
        then SRAM."""
        return (self.cycles, self.dma_bytes, self.work, self.sram_bytes)

    @property
    def tiles(self) -> list[int]:
        """The `tiles` attribute: [R, Q, tc, tm] (matrix) or [R, Q, tc] (vector)."""
        return [self.rows, self.cols, self.tc] + ([self.tm] if self.engine == "matrix" else [])


@dataclass
class WindowCost(Cost):
    """A Cost that also counts DMA transfers: their latency, which the model leaves to
    multi-buffering, still breaks ties between plans (fewer, larger transfers win)."""

    transfers: int = 0

    def add_dma(self, target: Target, nbytes: int, src: str, dst: str, times: int = 1) -> None:
        super().add_dma(target, nbytes, src, dst, times)
        self.transfers += times

    def work(self, target: Target) -> int:
        """Busy time of all engines together, DMA latency included."""
        busy = self.dma_in + self.dma_out + self.matrix + self.vector
        return round(busy + self.transfers * target.dma.latency)


# --------------------------------------------------------------------------- footprint


def window_sram(p: WindowProblem, plan: WindowPlan) -> int:
    """SRAM bytes of the kernel's buffers (graph_to_tile_conv / _pool allocate exactly these)."""
    g, positions = p.g, plan.rows * plan.cols
    stage = plan.tc * g.h.stage(plan.rows) * g.w.stage(plan.cols)
    patch = 0 if g.direct else g.taps * plan.tc * positions
    if p.engine == "matrix":
        k = g.channels * g.taps
        weights = g.outs * k if plan.keep else plan.tm * plan.tc * g.taps
        rest = plan.tm * positions * (1 + p.temps) + (g.outs if p.bias else 0)
    else:
        per_channel = (g.taps if p.weights else 0) + int(p.bias)
        weights = (g.outs if plan.keep else plan.tc) * per_channel
        rest = plan.tc * positions * (1 + p.temps) + (positions if p.counts else 0)
    return F32 * (stage + patch + weights + rest)


def window_acc(p: WindowProblem, plan: WindowPlan) -> int:
    return F32 * plan.tm * plan.rows * plan.cols if p.engine == "matrix" else 0


# --------------------------------------------------------------------------- estimates


def _runs(g: Geometry, plan: WindowPlan) -> Iterator[tuple[BlockRun, BlockRun]]:
    """(row run, column run) pairs: every block of a pair has the same shape and field."""
    return product(block_runs(g.h, plan.rows), block_runs(g.w, plan.cols))


def _gather(cost: Cost, p: WindowProblem, budget: Budget, shape: tuple[int, int, int], times: int) -> None:
    """Stage load and tap copies of one chunk of cs channels: shape = (cs, positions, field)."""
    cs, positions, field = shape
    cost.add_dma(budget.target, F32 * cs * field, "dram", "sram", times)
    if not p.g.direct:
        cost.add_dma(budget.target, F32 * cs * positions, "sram", "sram", times * p.g.taps)


def _store(cost: Cost, p: WindowProblem, budget: Budget, rows: int, positions: int, times: int) -> None:
    """The epilogue's vector ops and the store of one rows x positions output tile."""
    cost.vector += times * sum(vector_cycles(budget.target, op, rows, positions) for op in p.epilogue)
    cost.add_dma(budget.target, F32 * rows * positions, "sram", "dram", times)


def _fills(p: WindowProblem, budget: Budget, plan: WindowPlan, strips: list[tuple[str, int, int]]) -> int:
    """Vector cycles of filling `strips` with the padding value (Im2col._fill)."""
    ops = ("cmp_eq", "mul", "add") if p.pad_value else ("cmp_eq", "mul")
    fills = fill_windows(p.g, (plan.rows, plan.cols, plan.tc), strips, budget.target)
    return sum(vector_cycles(budget.target, op, *size) for _, _, size in fills for op in ops)


def _contraction(budget: Budget, m: int, k: int, positions: int) -> int:
    """Matrix cycles of one m x k x positions product in matmuls of k <= rows, n <= cols."""
    return sum(
        pc * kc * matmul_cycles(budget.target, m, ks)
        for _, pc in split(positions, budget.cols)
        for ks, kc in split(k, budget.rows)
    )


def estimate_matrix(p: WindowProblem, budget: Budget, plan: WindowPlan) -> WindowCost:
    """The loop nest of graph_to_tile_conv._MatrixConv."""
    g, target, cost = p.g, budget.target, WindowCost()
    chunks, m_tiles = split(g.channels, plan.tc), split(g.outs, plan.tm)
    builds = 1 if chunks == [(g.channels, 1)] else sum(c for _, c in m_tiles)  # patch reuse
    if plan.keep:
        cost.add_dma(target, F32 * g.outs * g.channels * g.taps, "dram", "sram", g.groups)
    if p.bias:
        cost.add_dma(target, F32 * g.outs, "dram", "sram", g.groups)
    tiles = (plan.rows, plan.cols)
    cost.vector += _fills(p, budget, plan, prefill_strips(g, tiles))
    for h, w in _runs(g, plan):
        times, positions = g.batch * g.groups * h.count * w.count, h.size * w.size
        field = h.in_bounds(g.h) * w.in_bounds(g.w)
        cost.vector += times * _fills(p, budget, plan, padding_strips(g, tiles, (h, w), prefill=False))
        for cs, cc in chunks:
            _gather(cost, p, budget, (cs, positions, field), times * cc * builds)
            for ms, mc in m_tiles:
                if not plan.keep:
                    cost.add_dma(target, F32 * ms * cs * g.taps, "dram", "sram", times * cc * mc)
                cost.matrix += times * cc * mc * _contraction(budget, ms, cs * g.taps, positions)
        for ms, mc in m_tiles:
            _store(cost, p, budget, ms, positions, times * mc)
    return cost


def estimate_vector(p: WindowProblem, budget: Budget, plan: WindowPlan) -> WindowCost:
    """The loop nest of graph_to_tile_window.VectorWindow."""
    g, target, cost = p.g, budget.target, WindowCost()
    loads = [n for n in (g.taps if p.weights else 0, int(p.bias)) if n]  # per channel: weights, bias
    for n in loads if plan.keep else ():
        cost.add_dma(target, F32 * n * g.channels, "dram", "sram")
    tiles = (plan.rows, plan.cols)
    cost.vector += _fills(p, budget, plan, prefill_strips(g, tiles))
    for h, w in _runs(g, plan):
        times, positions = g.batch * h.count * w.count, h.size * w.size
        field = h.in_bounds(g.h) * w.in_bounds(g.w)
        cost.vector += times * _fills(p, budget, plan, padding_strips(g, tiles, (h, w), prefill=False))
        for cs, cc in split(g.channels, plan.tc):
            _gather(cost, p, budget, (cs, positions, field), times * cc)
            if p.counts:
                cost.add_dma(target, F32 * positions, "dram", "sram", times * cc)
            for n in () if plan.keep else loads:
                cost.add_dma(target, F32 * n * cs, "dram", "sram", times * cc)
            _store(cost, p, budget, cs, positions, times * cc)
    return cost


# --------------------------------------------------------------------------- search


def _sizes(extent: int) -> list[int]:
    """Candidate tile sizes: balanced splits into up to 8 parts and powers of two."""
    sizes = {-(-extent // parts) for parts in range(1, min(extent, 8) + 1)}
    sizes |= {1 << i for i in range(extent.bit_length()) if 1 << i <= extent}
    return sorted(sizes)


def _shapes(g: Geometry) -> list[tuple[int, int]]:
    """Output blocks: R whole rows, or part of one row when a row is too long."""
    rows = [(r, g.w.out) for r in _sizes(g.h.out)]
    return rows + [(1, q) for q in _sizes(g.w.out) if q < g.w.out]


def window_candidates(p: WindowProblem, budget: Budget) -> Iterator[WindowPlan]:
    """Every tiling whose buffers fit the SRAM and ACC budgets, estimated."""
    estimate = estimate_matrix if p.engine == "matrix" else estimate_vector
    tms = _sizes(p.g.outs) if p.engine == "matrix" else [0]
    keeps = (True, False) if p.engine == "matrix" or p.weights or p.bias else (False,)
    for (rows, cols), tc, tm, keep in product(_shapes(p.g), _sizes(p.g.channels), tms, keeps):
        plan = WindowPlan(p.engine, rows, cols, tc, tm, keep)
        sram, acc = window_sram(p, plan), window_acc(p, plan)
        if sram > budget.sram or acc > budget.acc:
            continue
        cost = estimate(p, budget, plan)
        work = cost.work(budget.target)
        cycles, dram = cost.cycles(budget.target), cost.dram_bytes
        yield replace(plan, cycles=cycles, dma_bytes=dram, work=work, sram_bytes=sram, acc_bytes=acc)


def plan_window(p: WindowProblem, budget: Budget) -> WindowPlan | None:
    """The cheapest candidate (`WindowPlan.key`); None if none fits."""
    candidates = list(window_candidates(p, budget))
    if not candidates:
        return None
    return replace(min(candidates, key=WindowPlan.key), candidates=len(candidates))


def window_minimum(p: WindowProblem) -> tuple[int, int]:
    """(SRAM, ACC) bytes of the smallest tiling (one output, one channel), for CannotFit."""
    plan = WindowPlan(p.engine, 1, 1, 1, 1, False)
    return window_sram(p, plan), window_acc(p, plan)
