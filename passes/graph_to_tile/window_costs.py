"""Tile planning of the window kernels (conv, pooling) of convert-graph-to-tile: every
candidate tiling is estimated in closed form, with the per-op costs of graph_to_tile_costs,
following the loop nests of graph_to_tile_conv / graph_to_tile_window op for op.

A plan fixes the output block (R rows x Q cols, Q = OW when R > 1), the channel chunk tc,
for the matrix engine the output-channel tile tm (ACC holds tm x the block's patch columns,
`PatchLayout.width`), whether the weights stay in SRAM for a whole group (`keep`) and whether
the contraction is one product per tap over tap-major weights (`per_tap`, graph_to_tile_conv's
module docstring; estimated at the pipeline's buffer depth, the others at `WINDOW_DEPTH`).
The cheapest candidate by estimated cycles, then DRAM bytes, then total engine time, then
SRAM wins; the kernel records the cost of the IR actually emitted.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import product

from aitc.passes.graph_to_tile.costs import (
    F32,
    Budget,
    Cost,
    cheapest_few,
    dma_instruction_cycles,
    dma_transfers,
    matmul_cycles,
    remembered,
    split,
    vector_cycles,
)
from aitc.passes.graph_to_tile.matmul_tiling import MAX_UNROLL
from aitc.passes.graph_to_tile.patch_layout import PatchLayout
from aitc.passes.graph_to_tile.window import (
    BlockRun,
    Geometry,
    block_runs,
    fill_windows,
    padding_sources,
    padding_strips,
    prefill_strips,
    refill_windows,
)


@dataclass(frozen=True)
class WindowProblem:
    """What a window kernel computes. `engine` "matrix" (implicit GEMM, channel-major patch)
    or "vector" (per-tap vector ops, tap-major patch); `weights`: per-channel tap weights on
    the vector engine (depthwise); `epilogue`: the vector ops per output tile (after the
    contraction, or all of a vector kernel's); `temps`: extra output-sized SRAM tiles;
    `counts`: a divisor row per block (avg pooling); `pad_value`: the stage's fill; `residual`
    (matrix engine): a tensor of the output's shape is added to each output tile after the
    epilogue, then these vector ops run (the activation that follows the add); None: no
    residual."""

    g: Geometry
    engine: str
    bias: bool = False
    weights: bool = False
    epilogue: tuple[str, ...] = ("acc_read",)
    temps: int = 0
    counts: bool = False
    pad_value: float = 0.0
    residual: tuple[str, ...] | None = None
    tap_major: bool = False
    """Matrix engine: the weights may be laid out tap-major (a constant, or a single tap), so
    `WindowPlan.per_tap` plans are candidates too."""
    element: int = F32
    """Bytes of an input and weight element (1 for an i8 conv: its stage, patch and weight
    tiles; the accumulator, output and bias columns are 4-byte f32 or i32 either way)."""
    stored: int = F32
    """Bytes of a stored output element (an int8 conv's epilogue chain may end in int8)."""
    chain_bytes: int = 0
    """Matrix engine: bytes per output-tile element of an epilogue chain's working slots and
    tensor inputs (`epilogue` lists its vector ops after the first)."""
    columns: int = 0
    """Per-channel columns [C_out, 1] (4-byte) the epilogue chain reads, loaded per group."""
    tile_inputs: tuple[int, ...] = ()
    """Element bytes of each tensor input of the chain, loaded per output tile."""
    chain_reads_acc: bool = False
    """The chain's first op reads the accumulator itself where the layout is not compact
    (no correction column to add first): `epilogue`'s leading acc_read is then not emitted."""


@dataclass(frozen=True)
class WindowPlan:
    """A tiling of a window kernel (see the module docstring). `per_tap` (matrix engine): the
    weights tap-major [M, kh, kw, C/g] and one product per tap, of its weight columns and its
    rows of the patch: with stride 1 there is no patch, a tap's rows are the stage itself, seen
    flat per channel from the tap's first element (output position p reads stage element
    base(i, j) + p); strided, the patch is tap-major (one DMA per tap, `PatchLayout.flat`)."""

    engine: str
    rows: int
    cols: int
    tc: int
    tm: int
    keep: bool
    per_tap: bool = False
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
    def choice(self) -> tuple[str, int, int, int, int, bool, bool]:
        """What identifies the tiling among `window_candidates` (the tuner's record of it)."""
        return (self.engine, self.rows, self.cols, self.tc, self.tm, self.keep, self.per_tap)

    @property
    def family(self) -> tuple[str, int, int, int, bool]:
        """The tiling's structure: engine, block shape, output channels per tile, per tap or
        not (what the tuner's short list takes one of each, `tuning.short_list`)."""
        return (self.engine, self.rows, self.cols, self.tm, self.per_tap)

    @property
    def tiles(self) -> list[int]:
        """The `tiles` attribute: [R, Q, tc, tm] (matrix) or [R, Q, tc] (vector)."""
        return [self.rows, self.cols, self.tc] + ([self.tm] if self.engine == "matrix" else [])


# --------------------------------------------------------------------------- footprint


def window_sram(p: WindowProblem, plan: WindowPlan, layout: PatchLayout | None = None) -> int:
    """SRAM bytes of the kernel's buffers (graph_to_tile_conv / _pool allocate exactly these);
    `layout`: the plan's `_layout`, when the caller has it."""
    g, layout = p.g, layout or _layout(p, plan)
    stage = layout.planes * layout.hs * layout.ws
    if plan.per_tap and not g.direct:  # Im2col.refill's tiles of the padding value
        stage += sum(
            rows * cols for rows, cols in padding_sources(g, (plan.rows, plan.cols, plan.tc)).values()
        )
    patch = 0 if in_place(g, plan) else g.taps * plan.tc * layout.width
    if p.engine == "matrix":
        k = g.channels * g.taps
        weights = g.outs * k if plan.keep else plan.tm * plan.tc * g.taps
        # the output tile (none when a chain reads ACC itself), and the residual's
        tiles = int(not (p.chain_reads_acc and not layout.compact)) + (p.residual is not None)
        rest = plan.tm * (tiles * layout.out_width(layout.compact) + p.temps * layout.width) + (
            g.outs if p.bias else 0
        )
        rest += (plan.tm * layout.out_width(layout.compact) * p.chain_bytes) // F32 + p.columns * g.outs
    else:
        per_channel = (g.taps if p.weights else 0) + int(p.bias)
        weights = (g.outs if plan.keep else plan.tc) * per_channel
        rest = plan.tc * (layout.out_width() + p.temps * layout.width) + (layout.width if p.counts else 0)
    return p.element * (stage + patch + weights) + F32 * rest


def window_acc(p: WindowProblem, plan: WindowPlan, layout: PatchLayout | None = None) -> int:
    if p.engine != "matrix":
        return 0
    return F32 * plan.tm * (layout or _layout(p, plan)).width


def _layout(p: WindowProblem, plan: WindowPlan) -> PatchLayout:
    order = "channel" if p.engine == "matrix" and not plan.per_tap else "tap"
    return PatchLayout(p.g, plan.rows, plan.cols, plan.tc, order)


def in_place(g: Geometry, plan: WindowPlan) -> bool:
    """Whether the products read the stage itself (no patch): one tap with stride 1, or a
    per-tap plan with stride 1."""
    return g.direct or (plan.per_tap and g.unit_stride)


def merged_taps(g: Geometry, plan: WindowPlan) -> bool:
    """Whether a per-tap plan's products of all taps are one product of k = taps * C/g: its
    tap-major patch holds every channel (tc >= C/g), so rows (tap, c) are dense and match the
    tap-major weight's columns (a stem conv: 3 channels, 49 taps, one k = 147 product instead
    of 49 of k = 3)."""
    return plan.per_tap and not in_place(g, plan) and plan.tc >= g.channels and g.taps > 1


def tap_parts(g: Geometry, plan: WindowPlan, queues: int) -> list[tuple[int, int]]:
    """(first tap, taps) of each part a per-tap plan's streamed weight tile W'[tm, taps, tc] loads
    in, each into a buffer of its own (multi-buffer rotates each, as one copy writes it whole):
    on a target of two DMA queues or more, two halves, which convert-tile-to-sync puts side by
    side on two queues (`spread_queues` balances a loop body's copy among itself), so the tile
    loads at the DRAM's rate rather than one queue's while the products go tap by tap anyway
    (ResNet-50's layer4 3x3 convs: a 197 KB tile a chunk took 6,220 cycles on one queue against
    3,942 of matmuls); one part otherwise (kept weights, one product over all taps)."""
    if queues < 2 or not plan.per_tap or plan.keep or g.taps < 2 or merged_taps(g, plan):
        return [(0, g.taps)]
    half = -(-g.taps // 2)
    return [(0, half), (half, g.taps - half)]


# --------------------------------------------------------------------------- estimates


def _runs(g: Geometry, plan: WindowPlan) -> Iterator[tuple[BlockRun, BlockRun]]:
    """(row run, column run) pairs in emission order (rows outer): every block of a pair has
    the same shape and field."""
    return product(block_runs(g.h, plan.rows), block_runs(g.w, plan.cols))


def _copy(
    cost: Cost,
    budget: Budget,
    spaces: tuple[str, str],
    shapes: tuple,
    box: list[int],
    times: int,
    independent: bool = False,
    element: int = F32,
) -> None:
    """One tile.copy of `box` between buffers of `shapes` (src, dst) of `element`-byte
    elements, run `times` times (`independent`: as `Cost.add_dma` says)."""
    count, nbytes = dma_transfers(box, shapes[0], shapes[1], element)
    cost.add_dma(budget.target, nbytes, *spaces, times * count, looped=times > 1, independent=independent)


def _gather(
    cost: Cost, p: WindowProblem, budget: Budget, block: tuple, times: int, plan: WindowPlan | None = None
) -> None:
    """Im2col.load of one chunk of cs channels of a block of the run pair (h, w): for a per-tap
    `plan` the stage's padding, then the field into the stage, then (unless in place) every
    tap into the patch. `block` = (layout, (h, w), cs)."""
    layout, (h, w), cs = block
    g = p.g
    h_n, w_n = h.in_bounds(g.h), w.in_bounds(g.w)
    source = [g.batch * g.groups * g.channels, g.h.size, g.w.size]
    if plan is not None and plan.per_tap and not g.direct:  # Im2col.refill: all the padding, copied
        block = (layout.rows, layout.cols, layout.tc)
        sources = padding_sources(g, block)
        views = {
            "planes": [layout.planes, layout.hs * layout.ws],
            "lines": [layout.planes * layout.hs, layout.ws],
        }
        for view, _, sizes in refill_windows(g, block, (h, w)):
            shapes = (sources[view], views[view])
            _copy(cost, budget, ("sram", "sram"), shapes, list(sizes), times, True, p.element)
    if h_n and w_n:
        stage = [layout.planes, layout.hs, layout.ws]
        _copy(cost, budget, ("dram", "sram"), (source, stage), [cs, h_n, w_n], times, element=p.element)
    if g.direct or (plan is not None and in_place(g, plan)):
        return
    count, nbytes = _tap_transfers(layout, cs, layout.positions(h.size, w.size), p.element)
    cost.add_dma(budget.target, nbytes, "sram", "sram", times * count, ops=g.taps, looped=times > 1)


def _tap_transfers(layout: PatchLayout, cs: int, positions: int, element: int = F32) -> tuple[int, int]:
    """(DMA instructions, bytes each) of one tap's copy into the patch: every tap moves the same
    box."""
    tap = layout.tap_copy(0, 0, cs, positions)
    return dma_transfers(tap.box, tap.src_shape, tap.dst_shape, element)


def taps_beside(budget: Budget, g: Geometry, layout: PatchLayout, cs: int, positions: int) -> int:
    """The vector work of a depthwise block that runs while its later taps are still copied: the
    tap copies go round the DMA queues, a round at a time, and the products of the taps of every
    round but the last (the first tap's product, then each other's product and add) run during
    the rounds after it. mobilenet_block's 3x3 depthwise conv: estimated 3,171 cycles serially, it
    ran in 2,566 once plan-memory stopped placing the sum on the stage."""
    target = budget.target
    count, nbytes = _tap_transfers(layout, cs, positions)
    queues = max(1, target.dma.queues)
    rounds = -(-g.taps // queues)
    early = (rounds - 1) * queues
    if not early:
        return 0
    product, add = (vector_cycles(target, op, cs, positions) for op in ("mul", "add"))
    work = product + (early - 1) * (product + add)
    return min((rounds - 1) * count * dma_instruction_cycles(target, nbytes, dram=False), work)


def _epilogue(
    cost: Cost, budget: Budget, ops: tuple[str, ...], rows: int, positions: int, times: int
) -> None:
    for op in ops:
        cost.add_vector(vector_cycles(budget.target, op, rows, positions), times)


def _store(
    cost: Cost, p: WindowProblem, budget: Budget, layout: PatchLayout, box: list[int], times: int
) -> None:
    """The store of one output tile: y viewed [.., R, out pitch] -> out [B*M, OH, OW]."""
    g = p.g
    out = [g.batch * g.groups * g.outs, g.h.out, g.w.out]
    pitch = layout.out_pitch(p.engine == "matrix" and layout.compact)
    _copy(cost, budget, ("sram", "dram"), ([box[0], layout.rows, pitch], out), box, times, element=p.stored)


def _matrix_epilogue(
    cost: Cost, p: WindowProblem, budget: Budget, block: tuple, times: int, single: bool = False
) -> None:
    """_MatrixConv._epilogue: the first op (it reads ACC) row by row when the layout is compact,
    the others (the activation after a bias add) on the whole tile; `single`: the accumulator
    is not double-buffered (`Budget.single_acc`), so the next tile's products wait for that read."""
    layout, (h, w), ms = block
    ops = p.epilogue[1:] if p.chain_reads_acc and not layout.compact else p.epilogue
    target, (first, *rest) = budget.target, ops
    with cost.reading_acc(single):
        if layout.compact:
            cost.add_vector(vector_cycles(target, first, ms, w.size), times * h.size)
            tile = (ms, h.size * w.size)
        else:
            tile = (ms, layout.positions(h.size, w.size))
            cost.add_vector(vector_cycles(target, first, *tile), times)
    g, pitch = p.g, layout.out_pitch(layout.compact)
    for nbytes in p.tile_inputs:  # the chain's tensor inputs: their window of the tile, ahead
        out = [g.batch * g.groups * g.outs, g.h.out, g.w.out]
        count, size = dma_transfers([ms, h.size, w.size], out, [ms, layout.rows, pitch], nbytes)
        cost.add_dma(target, size, "dram", "sram", times * count, ahead=True, looped=times > 1)
    for op in rest:
        cost.add_vector(vector_cycles(target, op, *tile), times)
    if p.residual is not None:  # the residual's window of the block, added, then the activation
        g = p.g
        out = [g.batch * g.groups * g.outs, g.h.out, g.w.out]
        pitch = layout.out_pitch(layout.compact)
        count, nbytes = dma_transfers([ms, h.size, w.size], out, [ms, layout.rows, pitch], F32)
        cost.add_dma(target, nbytes, "dram", "sram", times * count, ahead=True, looped=times > 1)  # own tile
        for op in ("add", *p.residual):
            cost.add_vector(vector_cycles(target, op, *tile), times)


def _fills(
    cost: Cost, p: WindowProblem, budget: Budget, block: tuple[int, int, int], strips: list, times: int
) -> None:
    """Filling `strips` of the stage of blocks of `block` = (R, Q, tc) with the padding value
    (Im2col._fill: cmp_eq, mul, add)."""
    ops = ("cmp_eq", "mul", "add") if p.pad_value else ("cmp_eq", "mul")
    for _, _, size in fill_windows(p.g, block, strips, budget.target):
        for op in ops:
            cost.add_vector(vector_cycles(budget.target, op, *size), times)


def _contract_ops(
    budget: Budget, m: int, k: int, positions: int, unrolled: bool = False
) -> Iterator[tuple[int, int]]:
    """(cycles, count) of the matmuls of one m x k x positions product (_MatrixConv._products),
    in order: per column tile of <= cols positions (each one apart when `unrolled` and there
    are at most MAX_UNROLL, else a loop and its remainder), the first k chunk then the others
    (each apart up to MAX_UNROLL chunks, else a loop and its remainder)."""
    rows, cols = budget.rows, budget.cols
    tiles = split(positions, cols, MAX_UNROLL if unrolled else 0)
    rest = split(k - rows, rows, MAX_UNROLL - 1)  # after the first chunk
    for _, pc in tiles:
        yield matmul_cycles(budget.target, m, min(rows, k)), pc
        for ks, kc in rest:
            yield matmul_cycles(budget.target, m, ks), pc * kc


def _contract(
    cost: Cost, budget: Budget, m: int, k: int, positions: int, times: int, unrolled: bool = False
) -> None:
    """The matmuls of one m x k x positions product."""
    for once, count in _contract_ops(budget, m, k, positions, unrolled):
        cost.add_matrix(once, times * count)


def _matrix_products(p: WindowProblem, plan: WindowPlan, layout: PatchLayout) -> Iterator[tuple]:
    """(run pair, times, m tile (size, count), channel chunk (size, count)) of every product of
    _MatrixConv's loop nest, in order."""
    g = p.g
    whole = plan.tc >= g.channels
    chunks = [(g.channels, 1)] if whole else split(g.channels, plan.tc)
    for h, w in _runs(g, plan):
        times = g.batch * g.groups * h.count * w.count
        for m_tile in split(g.outs, plan.tm):
            for chunk in chunks:
                yield (h, w), times, m_tile, chunk


def _matrix_busy(p: WindowProblem, budget: Budget, plan: WindowPlan, layout: PatchLayout) -> int:
    """The matrix engine's busy cycles over the whole kernel: what its `_contract`s add, in
    closed form (every column tile multiplies the first k chunk, then the full and the last
    partial chunk of the rest)."""
    rows, latency, busy = budget.rows, budget.target.matrix.latency, 0
    per_tap = plan.per_tap and not merged_taps(p.g, plan)
    products = p.g.taps if per_tap else 1  # per tap: one product per tap, k = the chunk
    for (h, w), times, (ms, mc), (cs, cc) in _matrix_products(p, plan, layout):
        k = cs if per_tap else cs * p.g.taps
        full, rest = divmod(max(0, k - rows), rows)
        chunks = (
            latency + min(rows, k) + ms + full * (latency + rows + ms) + (latency + rest + ms if rest else 0)
        )
        column_tiles = -(-layout.positions(h.size, w.size) // budget.cols)
        busy += column_tiles * chunks * times * mc * cc * products
    return busy


def _matrix_prologue(cost: Cost, p: WindowProblem, budget: Budget, plan: WindowPlan) -> None:
    """Before _MatrixConv's loops: the padding fills, the weights kept for the whole kernel, the bias."""
    g, target = p.g, budget.target
    if not plan.per_tap:
        _fills(cost, p, budget, (plan.rows, plan.cols, plan.tc), prefill_strips(g, (plan.rows, plan.cols)), 1)
    elif not g.direct:  # Im2col.refill: its tiles of the padding value, filled once
        ops = ("cmp_eq", "mul", "add") if p.pad_value else ("cmp_eq", "mul")
        for rows, cols in padding_sources(g, (plan.rows, plan.cols, plan.tc)).values():
            for op in ops:  # tiles no load writes: filled while the first loads run
                cost.add_vector(vector_cycles(target, op, rows, cols), ahead=True)
    if plan.keep:
        cost.add_dma(target, p.element * g.outs * g.channels * g.taps, "dram", "sram", g.groups)
    if p.bias:
        cost.add_dma(target, F32 * g.outs, "dram", "sram", g.groups)
    for _ in range(p.columns):  # an epilogue chain's per-channel columns
        cost.add_dma(target, F32 * g.outs, "dram", "sram", g.groups)


def _beaten(cost: Cost, matrix_to_come: int, bound: int | None) -> bool:
    """Whether a candidate cannot beat `bound` cycles, even if only the `matrix_to_come` matmul
    cycles were still to come."""
    return bound is not None and cost.floor(matrix_to_come) > bound


def _chunk_products(
    cost: Cost, p: WindowProblem, budget: Budget, plan: WindowPlan, sizes: tuple[int, int, int], times: int
) -> None:
    """_MatrixConv._contract of one chunk: the weight tile unless kept, then the products of
    `sizes` = (ms, cs, positions): one of k = cs * taps, or per tap one of k = cs reading the
    tap-major weight window [ms, taps, cs] of W' [M, taps, C/g] (one of k = taps * cs when
    `merged_taps`)."""
    g, (ms, cs, positions) = p.g, sizes
    _weight_tile(cost, p, budget, plan, (ms, cs), times)
    if not plan.per_tap:
        _contract(cost, budget, ms, cs * g.taps, positions, times)
        return
    if merged_taps(g, plan):
        _contract(cost, budget, ms, cs * g.taps, positions, times, unrolled=True)
        return
    for _ in range(g.taps):
        _contract(cost, budget, ms, cs, positions, times, unrolled=True)


def _weight_tile(
    cost: Cost, p: WindowProblem, budget: Budget, plan: WindowPlan, sizes: tuple[int, int], times: int
) -> None:
    """The load of one chunk's weight tile of `sizes` = (ms, cs) unless the weights are kept:
    W [ms, cs * taps], or per tap the tap-major window [ms, taps, cs] of W' [M, taps, C/g] in
    its `tap_parts`."""
    g, (ms, cs) = p.g, sizes
    if plan.keep:
        return
    if not plan.per_tap:
        cost.add_dma(budget.target, p.element * ms * cs * g.taps, "dram", "sram", times)
        return
    for _, taps in tap_parts(g, plan, budget.target.dma.queues):
        weights = ([g.groups * g.outs, g.taps, g.channels], [plan.tm, taps, plan.tc])
        _copy(cost, budget, ("dram", "sram"), weights, [ms, taps, cs], times, element=p.element)


def _chunks(cost: Cost, p: WindowProblem, budget: Budget, plan: WindowPlan, tile: tuple, times: int) -> None:
    """_MatrixConv._m_tile over the channel chunks of one output tile of ms channels: each
    chunk's gather and products; at depth 2 also the wait for the first chunk's load, which
    is peeled (it starts the sum), so no loop rotates it against the previous tile's last
    chunk (a single chunk after it is not a loop either: `Cost.straight`). `tile` = (layout, (h, w),
    ms)."""
    layout, (h, w), ms = tile
    positions = layout.positions(h.size, w.size)
    first = min(plan.tc, p.g.channels)  # peeled: it starts the sum
    _gather(cost, p, budget, (layout, (h, w), first), times, plan)
    _chunk_products(cost, p, budget, plan, (ms, first, positions), times)
    store = dma_instruction_cycles(budget.target, p.stored * ms * h.size * w.size)
    with cost.loads_of_own_loop(budget.target, (p.g.channels - first) // plan.tc, times, store):
        for cs, cc in split(p.g.channels - first, plan.tc):
            _gather(cost, p, budget, (layout, (h, w), cs), times * cc, plan)
            _chunk_products(cost, p, budget, plan, (ms, cs, positions), times * cc)
    if budget.depth > 1:
        alone = Cost(depth=1, places_straight=False)  # its loads on their queues
        _gather(alone, p, budget, (layout, (h, w), first), 1, plan)
        _weight_tile(alone, p, budget, plan, (ms, first), 1)
        cost.add_wait(math.ceil(max(alone.queues.values(), default=0)), times)


def places_straight(plan: WindowPlan, channels: int) -> bool:
    """Whether a conv kernel's estimate places its DMA reads outside loops (`Cost.placed`): not
    a matrix conv in channel chunks. convert-tile-to-sync balances the loads of its chunk loop
    among themselves (`tile_to_sync._moves_alone`), which `Cost.placed` does not replay: with
    them left on dma0 the reads placed beside them looked free (a 1x1 conv of 1024 channels into
    64 on 14 x 14 in chunks of 171: 32,150 cycles estimated, 44,100 simulated)."""
    return plan.engine != "matrix" or plan.tc >= channels


def estimate_matrix(
    p: WindowProblem, budget: Budget, plan: WindowPlan, bound: int | None = None, matrix: int | None = None
) -> Cost | None:
    """The loop nest of graph_to_tile_conv._MatrixConv, op for op; None once its `Cost.floor`
    exceeds `bound` (the candidate cannot win). `matrix`: its `_matrix_busy`, when known."""
    g = p.g
    whole = plan.tc >= g.channels
    cost = Cost(depth=budget.depth, places_straight=places_straight(plan, g.channels))
    layout = _layout(p, plan)
    m_tiles = split(g.outs, plan.tm)
    tiles = (plan.rows, plan.cols)
    single = budget.single_acc(plan.acc_bytes)
    if matrix is None:
        matrix = _matrix_busy(p, budget, plan, layout) if bound is not None else 0
    _matrix_prologue(cost, p, budget, plan)
    if _beaten(cost, matrix, bound):
        return None
    for h, w in _runs(g, plan):
        times = g.batch * g.groups * h.count * w.count
        positions = layout.positions(h.size, w.size)
        if not plan.per_tap:
            _fills(cost, p, budget, (*tiles, plan.tc), padding_strips(g, tiles, (h, w), prefill=False), times)
        if whole:
            _gather(cost, p, budget, (layout, (h, w), g.channels), times, plan)
        for ms, mc in m_tiles:
            if _beaten(cost, matrix - cost.matrix, bound):
                return None
            if whole:
                _chunk_products(cost, p, budget, plan, (ms, g.channels, positions), times * mc)
            else:
                _chunks(cost, p, budget, plan, (layout, (h, w), ms), times * mc)
            _matrix_epilogue(cost, p, budget, (layout, (h, w), ms), times * mc, single)
            _store(cost, p, budget, layout, [ms, h.size, w.size], times * mc)
    return cost


def estimate_vector(
    p: WindowProblem, budget: Budget, plan: WindowPlan, bound: int | None = None
) -> Cost | None:
    """The loop nest of im2col.VectorWindow, op for op; None once its `Cost.floor` exceeds
    `bound`."""
    g, target, cost = p.g, budget.target, Cost(depth=budget.depth, taps_overlap=p.weights)
    layout = _layout(p, plan)
    loads = [n for n in (g.taps if p.weights else 0, int(p.bias)) if n]  # per channel: weights, bias
    tiles = (plan.rows, plan.cols)
    _fills(cost, p, budget, (*tiles, plan.tc), prefill_strips(g, tiles), 1)
    for n in loads if plan.keep else ():
        cost.add_dma(target, F32 * n * g.channels, "dram", "sram")
    for h, w in _runs(g, plan):
        if bound is not None and cost.floor() > bound:
            return None
        times, positions = g.batch * h.count * w.count, layout.positions(h.size, w.size)
        _fills(cost, p, budget, (*tiles, plan.tc), padding_strips(g, tiles, (h, w), prefill=False), times)
        for cs, cc in split(g.channels, plan.tc):
            _gather(cost, p, budget, (layout, (h, w), cs), times * cc)
            for n in () if plan.keep else loads:
                cost.add_dma(target, F32 * n * cs, "dram", "sram", times * cc)
            ops = p.epilogue[:-1] if p.counts else p.epilogue
            _epilogue(cost, budget, ops, cs, positions, times * cc)
            if p.weights:  # a depthwise conv: its products run beside the later tap copies
                cost.add_beside_taps(taps_beside(budget, g, layout, cs, positions), times * cc)
            if p.counts:  # the block's window of the count row, then the division
                cost.add_dma(target, F32 * positions, "dram", "sram", times * cc)
                _epilogue(cost, budget, p.epilogue[-1:], cs, positions, times * cc)
            _store(cost, p, budget, layout, [cs, h.size, w.size], times * cc)
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


WINDOW_DEPTH = 1
"""The buffer depth window kernels with a patch are estimated at, whatever the pipeline's: `multi-buffer`
rotates a buffer only when one write of an iteration covers all of it, and the patch is written
by one copy per tap (the stage, with padding, by the field load and the fills), so the taps of
the next block wait for the matmuls or vector ops of this one: the engines run one after the
other (measured: a pipelined estimate was 0.6-0.8 of the simulated cycles, a serial one
0.93-1.10)."""


def _looped_share(g: Geometry, plan: WindowPlan) -> float:
    """The share of a kernel's blocks that are iterations of a loop (their row or column run
    has several blocks, `for_blocks`)."""

    def single(runs: tuple[BlockRun, ...]) -> float:
        return sum(run.count for run in runs if run.count == 1) / sum(run.count for run in runs)

    return 1 - single(block_runs(g.h, plan.rows)) * single(block_runs(g.w, plan.cols))


def window_budget(p: WindowProblem, plan: WindowPlan, budget: Budget) -> Budget:
    """`budget` at the depth `plan` is estimated at: the pipeline's for a per-tap plan or a
    direct one (1x1, stride 1: the stage is the patch), whose stage, patch and weight tiles
    are each written whole by a chunk (`stage_written_whole`), so multi-buffer rotates them
    in the loop over chunks, or over blocks when a chunk holds every channel; else
    `WINDOW_DEPTH`. The loop over chunks
    must have 2 trips or more: the first chunk is peeled (it starts the sum) and a remainder
    chunk follows the loop, so 512 channels in chunks of 171 leave a loop of one trip (inlined)
    and straight-line chunks that no loop rotates. One chunk is pipelined when 3/4 of the
    blocks are in loops (border blocks and remainders are straight-line: only a loop's blocks
    overlap). At depth 2 each output tile still waits for its peeled first chunk's load
    (`_first_chunk_bubble`)."""
    chunks = -(-p.g.channels // plan.tc)
    trips = (p.g.channels - plan.tc) // plan.tc if chunks > 1 else 0
    looped = chunks == 1 and _looped_share(p.g, plan) >= 0.75
    pipelined = (plan.per_tap or p.g.direct) and stage_written_whole(p, plan) and (trips >= 2 or looped)
    return budget if pipelined else replace(budget, depth=WINDOW_DEPTH)


def stage_written_whole(p: WindowProblem, plan: WindowPlan) -> bool:
    """Whether a chunk's load (with its padding) writes every element of the stage, which
    multi-buffer needs to rotate it: not when the stage has a spare plane (`PatchLayout.flat`)
    or a field whose span is not a multiple of the stride (the stage rounds it up, and the
    taps' garbage columns read the rest): resnet_block's 1x1 stride-2 downsample, estimated
    pipelined at 837 cycles, ran serially in 1,127."""
    layout = _layout(p, plan)
    return not layout.flat and (p.g.h.span(plan.rows), p.g.w.span(plan.cols)) == (layout.hs, layout.ws)


def window_candidates(p: WindowProblem, budget: Budget) -> Iterator[WindowPlan]:
    """Every tiling whose buffers fit the SRAM and ACC budgets, not yet estimated."""
    tms = _sizes(p.g.outs) if p.engine == "matrix" else [0]
    keeps = (True, False) if p.engine == "matrix" or p.weights or p.bias else (False,)
    per_taps = (False, True) if p.tap_major else (False,)
    for (rows, cols), tc in product(_shapes(p.g), _sizes(p.g.channels)):
        layouts = {t: _layout(p, WindowPlan(p.engine, rows, cols, tc, 0, False, t)) for t in per_taps}
        for tm, keep, per_tap in product(tms, keeps, per_taps):
            plan = WindowPlan(p.engine, rows, cols, tc, tm, keep, per_tap)
            layout = layouts[per_tap]
            sram, acc = window_sram(p, plan, layout), window_acc(p, plan, layout)
            if sram <= budget.sram and budget.holds_acc(acc):
                yield replace(plan, sram_bytes=sram, acc_bytes=acc)


_PLANS: dict[tuple, WindowPlan | None] = {}
"""`plan_window`'s answers by (problem, target fingerprint, SRAM, ACC, depth): a network
repeats a handful of window shapes (ResNet-50's 53 convs have 20 distinct problems), and the
search over every tiling is most of the conversion's time."""


def plan_window(p: WindowProblem, budget: Budget) -> WindowPlan | None:
    """The cheapest candidate (`WindowPlan.key`, the first of equal ones); None if none fits. A
    pure function of its arguments, remembered (`_PLANS`)."""
    key = (p, budget.target.fingerprint(), budget.sram, budget.acc, budget.depth)
    return remembered(_PLANS, key, lambda: next(iter(ranked_window(p, budget, 1)), None))


def ranked_window(p: WindowProblem, budget: Budget, count: int) -> list[WindowPlan]:
    """The `count` cheapest candidates, best first (`plan_window`'s is the first; the tuner's
    short list draws from them): every fitting candidate estimated at
    `WINDOW_DEPTH`, branch and bound (`cheapest_few`): a candidate's matrix-engine cycles
    (`_matrix_busy`) bound its cycles from below, and an estimate stops as soon as its running
    bound (`Cost.floor`) exceeds the count-th best cycles. Ties on `WindowPlan.key` go to the
    first candidate in `window_candidates` order."""
    pipelined, budget = budget, replace(budget, depth=WINDOW_DEPTH)
    candidates = list(window_candidates(p, budget))
    floors = _matrix_floors(p, budget, candidates)

    def estimate(index: int, bound: int | None) -> WindowPlan | None:
        return _estimate(p, pipelined, candidates[index], bound, floors[index])

    return [replace(plan, candidates=len(candidates)) for plan in cheapest_few(floors, estimate, count)]


def _estimate(
    p: WindowProblem, pipelined: Budget, plan: WindowPlan, bound: int | None, floor: int | None
) -> WindowPlan | None:
    """`plan` with its estimate (at `window_budget`'s depth for the matrix engine, else
    `WINDOW_DEPTH`), or None when it cannot beat `bound` cycles."""
    budget = replace(pipelined, depth=WINDOW_DEPTH)
    if p.engine == "matrix":
        cost = estimate_matrix(p, window_budget(p, plan, pipelined), plan, bound, floor)
    else:
        cost = estimate_vector(p, budget, plan, bound)
    if cost is None:
        return None
    return replace(plan, cycles=cost.cycles(budget.target), dma_bytes=cost.dram_bytes, work=cost.work())


def window_plan_of(p: WindowProblem, budget: Budget, choice: Sequence[object]) -> WindowPlan | None:
    """The candidate whose `WindowPlan.choice` is `choice`, estimated; None when no candidate
    is (a tuning record of another problem, target or compiler version)."""
    fitting = replace(budget, depth=WINDOW_DEPTH)
    candidates = list(window_candidates(p, fitting))
    plan = next((plan for plan in candidates if plan.choice == tuple(choice)), None)
    if plan is None:
        return None
    estimated = _estimate(p, budget, plan, None, None)
    return None if estimated is None else replace(estimated, candidates=len(candidates))


def _matrix_floors(p: WindowProblem, budget: Budget, candidates: list[WindowPlan]) -> list[int]:
    """Per candidate, the matrix engine's busy cycles (0 on the vector engine), computed once
    per block and tile shape (it does not depend on `keep`)."""
    if p.engine != "matrix":
        return [0] * len(candidates)
    known: dict[tuple[int, int, int, int, bool], int] = {}
    floors = []
    for plan in candidates:
        shape = (plan.rows, plan.cols, plan.tc, plan.tm, plan.per_tap)
        if shape not in known:
            known[shape] = _matrix_busy(p, budget, plan, _layout(p, plan))
        floors.append(known[shape])
    return floors


def window_minimum(p: WindowProblem) -> tuple[int, int]:
    """(SRAM, ACC) bytes of the smallest tiling (one output, one channel), for CannotFit."""
    plan = WindowPlan(p.engine, 1, 1, 1, 1, False)
    return window_sram(p, plan), window_acc(p, plan)
