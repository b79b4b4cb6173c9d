"""The matmul part of convert-graph-to-tile's cost model: the estimate of how a matmul is tiled
(`MatmulPlan`, with the buffers each plan needs: `matmul_tiling`), charged with `Cost` on the
nest that graph_to_tile_linear emits for it; `plan_matmul` picks the cheapest plan that fits.

The per-instruction costs and the pipelining model are `graph_to_tile_costs`'s.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from itertools import product
from typing import NamedTuple

from aitc.dialects.hw import DTYPES
from aitc.passes.graph_to_tile.costs import (
    F32,
    Budget,
    Cost,
    balanced,
    cheapest_few,
    dma_instruction_cycles,
    matmul_cycles,
    remembered,
    rotated_trip,
    split,
    vector_cycles,
)
from aitc.passes.graph_to_tile.matmul_tiling import (
    Buffer,
    MatmulPlan,
    MatmulProblem,
    block_rotates,
    column_groups,
    engines_overlap,
    fitting_peels,
    footprint,
    matmul_buffers,
    matmul_sram_bytes,
    matmul_steps,
    sram_need,
)
from aitc.target import Target


def _flush_ops(p: MatmulProblem, kind: str) -> tuple[str, ...]:
    """The vector ops after a group's matmuls of one step of kind `kind` (see
    graph_to_tile_linear): "only" and "epilogue" (a block summed in ACC) end the product
    (acc_read with the activation, or bias add and activation); in SRAM the first step writes
    the block (acc_read, or the bias add), the others add to it and the last one applies the
    activation in place."""
    if kind in ("only", "epilogue"):
        return p.chain or p.epilogue
    if kind == "last" and p.chain:
        return ("add", *p.chain)
    if kind == "first":
        return ("add",) if p.bias else ("acc_read",)
    return ("add",) + (p.activation if kind == "last" else ())


def _step_loads(
    cost: Cost,
    p: MatmulProblem,
    target: Target,
    shape: tuple[int, int, int],
    keep: str,
    times: int,
    ahead: bool,
    spread: bool = False,
) -> None:
    """Charges the A and B tiles of one K step (`ahead`: into the tiles of a peeled step;
    `spread`: over the queues, `spread_step_loads`)."""
    msz, ks, nsz = shape
    if keep != "lhs":
        cost.add_dma(target, p.operand_bytes * msz * ks, "dram", "sram", times, ahead, spread=spread)
    if keep != "rhs":
        cost.add_dma(target, p.operand_bytes * ks * nsz, "dram", "sram", times, ahead, spread=spread)


def spread_step_loads(
    p: MatmulProblem, budget: Budget, shape: tuple[int, int, int], plan: tuple[int, int, str, str], kind: str
) -> bool:
    """Whether the loads of the K steps of `kind` and `shape` (msz, ks, nsz) go over every DMA
    queue: steps in a loop (kind "next", more than one of that size) that waits for its loads,
    their cycles on one queue exceeding the step's matmuls and vector ops (with `plan`'s tk,
    tn, mode and kept panel), which convert-tile-to-sync spreads (`tile_to_sync._bound_by_loads`)."""
    target, (tk, tn, mode, keep) = budget.target, plan
    ks = shape[1]
    steps = matmul_steps(p.k, tk, mode)
    if not any(step == kind == "next" and size == ks and count > 1 for step, size, count in steps):
        return False
    loads = sum(dma_instruction_cycles(target, nbytes) for nbytes in _step_tiles(p, shape, keep))
    return loads > max(_step_compute(p, budget, shape, tn, mode))


def _step_tiles(p: MatmulProblem, shape: tuple[int, int, int], keep: str) -> list[int]:
    """Bytes of the A and B tiles one K step of `shape` (msz, ks, nsz) loads (not a kept panel)."""
    msz, ks, nsz = shape
    return [p.operand_bytes * msz * ks] * (keep != "lhs") + [p.operand_bytes * ks * nsz] * (keep != "rhs")


def _step_compute(
    p: MatmulProblem, budget: Budget, shape: tuple[int, int, int], tn: int, mode: str
) -> tuple[int, int]:
    """(matrix, vector) cycles of one K step between the peeled ones ("next") of `shape`: its
    matmuls, and in "sram" mode the vector ops adding each group into the block."""
    target, (msz, ks, nsz) = budget.target, shape
    matrix = vector = 0
    for _, gsz, gc in column_groups(nsz, tn):
        matrix += gc * sum(count * matmul_cycles(target, msz, kk) for kk, count in _chunks(budget, ks))
        if mode == "sram":
            vector += gc * sum(vector_cycles(target, op, msz, gsz) for op in _flush_ops(p, "next"))
    return matrix, vector


def _charge_group(cost: Cost, p: MatmulProblem, budget: Budget, shape: tuple, kind: str, times: int) -> None:
    """The matmuls of one column group of one step (kind "epilogue": none), the vector ops
    after them and, when the group is finished, its store."""
    target = budget.target
    msz, ks, gsz = shape
    if kind != "epilogue":
        for kk, count in _chunks(budget, ks):
            cost.add_matrix(matmul_cycles(target, msz, kk), times * count)
    if kind == "acc":  # a step of a block summed in ACC: nothing more
        return
    for op in _flush_ops(p, kind):
        cost.add_vector(vector_cycles(target, op, msz, gsz), times)
    if kind in ("only", "epilogue", "last"):
        if p.residual:  # the tile's part of the block's residual
            cost.add_vector(vector_cycles(target, "add", msz, gsz), times)
        cost.add_dma(target, p.result_bytes * msz * gsz, "sram", "dram", times)


def _charge_block(
    cost: Cost, p: MatmulProblem, budget: Budget, shape: tuple[int, int], times: int, plan: tuple, first: bool
) -> None:
    """Charges one C block (msz x nsz, run `times` times) as graph_to_tile_linear emits it,
    and the waits around its K steps (`block_waits`; `first`: the blocks include the kernel's
    first)."""
    tk, tn, mode, keep, _, peeled = plan
    target = budget.target
    msz, nsz = shape
    groups = column_groups(nsz, tn)
    steps = matmul_steps(p.k, tk, mode)
    hoisted = "last" in peeled
    for kind, ks, kc in steps:
        step = kind if mode == "sram" or kind == "only" else "acc"
        spread = spread_step_loads(p, budget, (msz, ks, nsz), (tk, tn, mode, keep), kind)
        if kind != "last" or not hoisted:
            _step_loads(cost, p, target, (msz, ks, nsz), keep, times * kc, kind in peeled, spread)
        if kind in ("first", "only"):  # the block's residual or chain inputs, after those tiles
            for element in p.block_inputs:
                cost.add_dma(target, element * msz * nsz, "dram", "sram", times)
        for _, gsz, gc in groups:
            _charge_group(cost, p, budget, (msz, ks, gsz), step, times * kc * gc)
        if kind == "first" and hoisted:  # the last step's tiles, loaded before the loop
            _step_loads(cost, p, target, (msz, steps[-1][1], nsz), keep, times, True)
    if steps[0][0] == "only":
        return
    if mode == "acc":
        for _, gsz, gc in groups:
            _charge_group(cost, p, budget, (msz, 0, gsz), "epilogue", times * gc)
    charge_block_waits(cost, block_waits(p, budget, plan, shape), times, first)


def charge_block_waits(cost: Cost, waits: tuple[int, int, int], times: int, first: bool) -> None:
    """Charges `block_waits` for `times` blocks (`first`: they include the kernel's first)."""
    idle, stall, before_next = waits
    cost.add_wait(idle, times, "dma0")
    cost.add_wait(stall, times)
    cost.add_wait(before_next, times - first)


class LoopPace(NamedTuple):
    """One block's loop over its K steps between the peeled ones, in cycles: `loads` as the
    kernel-wide estimate counts them (the busier queue's share, at least the DRAM channel's
    time), `latency` what its trips wait for their loads (a trip's tiles, each on one queue,
    load while the trip before it computes: at buffer depth 2 a trip takes at least its
    busier queue's part of its own loads), `compute` the busier compute engine's cycles."""

    loads: int
    latency: int
    compute: int


def loop_pace(
    p: MatmulProblem, budget: Budget, shape: tuple[int, int], plan: tuple, times: int = 1
) -> LoopPace:
    """`LoopPace` of `times` blocks (msz x nsz) of `plan` (tk, tn, mode, keep): a loop whose loads
    are spread (`spread_step_loads`) has each trip's tiles over the queues, the largest first
    on the least loaded one (`aitc.analysis.dma.spread_queues`, `Transfer.copy`)."""
    tk, tn, mode, keep = plan
    target, (msz, nsz) = budget.target, shape
    queues = max(target.dma.queues, 1)
    loads = latency = compute = 0
    for kind, ks, kc in matmul_steps(p.k, tk, mode):
        if kind != "next":
            continue
        tiles = _step_tiles(p, (msz, ks, nsz), keep)
        cycles = sorted((dma_instruction_cycles(target, nbytes) for nbytes in tiles), reverse=True)
        busy = max(_step_compute(p, budget, (msz, ks, nsz), tn, mode))
        once = trip = sum(cycles)
        if spread_step_loads(p, budget, (msz, ks, nsz), plan, kind):
            dram = -(-sum(tiles) // target.dram.bytes_per_cycle)
            once = max(-(-once // queues), dram)
            trip = max(rotated_trip(cycles, queues, budget.depth, busy), dram)
        loads += kc * once
        latency += kc * trip
        compute += kc * busy
    return LoopPace(times * loads, times * latency, times * compute)


def _chunks(budget: Budget, ks: int) -> list[tuple[int, int]]:
    """(k, count) of the matmuls one column group of a K step of `ks` issues (matrix rows each)."""
    return (
        [(min(budget.rows, ks), 1), *split(ks - budget.rows, budget.rows)] if ks > budget.rows else [(ks, 1)]
    )


def block_waits(
    p: MatmulProblem, budget: Budget, plan: tuple, shape: tuple[int, int]
) -> tuple[int, int, int]:
    """(load-queue idle, pipeline stall, stall before the next block) of one block of several K
    steps, from the way insert-semaphores orders it (measured on the simulator); the last
    counts for every block but the kernel's first (`charge_block_waits`):

    - the loop over the K steps drains its semaphores at its exit: the load queue waits there
      for the loop's last matmuls (about one step of them) before loading the next block;
    - "acc" mode: the next block's first tiles are then loaded while nothing computes; when
      the step loop's loads are spread over the queues (`spread_step_loads`), also the longer
      of the block's residual or chain inputs (loaded when it starts, before the next steps'
      tiles on dma0) and the wait of the next steps' tiles on dma1 behind this block's
      stores (MiniLM's FFN2 with its residual, 128 x 128 blocks: about 4k cycles a block);
    - "sram" mode, block not rotated (`block_rotates`): the next block's first step writes
      column group j once this block's store j is done, so it runs at the stores' pace: the
      stores beyond the compute of a last and a first step stall the pipeline;
    - "sram" mode, the step loop's loads spread over the queues (`spread_step_loads`): the
      next block's loop starts once dma0 has loaded, after this loop drains, the next
      block's first step, its hoisted last step and its share of the loop's first tiles, and
      dma1 has stored this block (from its last step on) and loaded its share, while the
      matrix engine has a last and a first step to run (the pace of a block not rotated is
      part of that): MiniLM's FFN2 at tk 96, 128 x 128 blocks: 3,887-cycle gaps a block
      (3,776 so); 1024^3 at 512 x 128: about 7.1k (7,552);
    - "sram" mode, a residual or chain input loaded when the block starts: the next steps'
      tiles queue behind it, so what two steps' slack (their matmuls beyond their loads) does
      not cover stalls the matrix engine (an int8 FFN2 at tk 32: 550-1,513-cycle gaps a block);
    - `_shared_tile_stall`."""
    tk, tn, mode, keep, rotates, peeled = plan
    steps = matmul_steps(p.k, tk, mode)
    if steps[0][0] == "only":
        return 0, 0, 0
    target, (msz, nsz) = budget.target, shape
    groups = column_groups(nsz, tn)
    step = sum(
        gc * kc * matmul_cycles(target, msz, kk) for _, _, gc in groups for kk, kc in _chunks(budget, tk)
    )
    loads = sum(dma_instruction_cycles(target, nbytes) for nbytes in _step_tiles(p, (msz, tk, nsz), keep))
    looped = any(kind == "next" and count > 1 for kind, _, count in steps)
    drain = step if looped else 0
    stores = sum(gc * dma_instruction_cycles(target, p.result_bytes * msz * gsz) for _, gsz, gc in groups)
    spread = any(spread_step_loads(p, budget, (msz, ks, nsz), plan[:4], kind) for kind, ks, _ in steps)
    block_load = sum(dma_instruction_cycles(target, element * msz * nsz) for element in p.block_inputs)
    if mode == "acc":
        return drain, loads, max(block_load, stores - step) if spread else 0
    pace = 0 if rotates else max(0, stores - 2 * step)
    late = max(0, block_load - 2 * max(0, step - loads))
    stall = late + _shared_tile_stall(p, budget, steps, msz, nsz, tn)
    if not spread:
        return drain, pace + stall, 0
    share = loads // max(target.dma.queues, 1)
    dma0 = loads * (2 if "last" in peeled else 1) + share
    dma1 = step + stores + share
    return drain, stall, max(0, max(dma0, dma1) - 2 * step)


def _shared_tile_stall(
    p: MatmulProblem, budget: Budget, steps: list[tuple[str, int, int]], msz: int, nsz: int, tn: int
) -> int:
    """A block summed in SRAM whose K steps alternate on two ACC tiles, with steps between the
    first and the last (`step_slot`): the last step's matmuls reuse the first step's tile, so
    they wait for its join (acc_read or bias add), which the in-order vector engine runs only
    after the previous block's last join and epilogue. A block then takes at least the last
    step's matmuls + the first step's join + the last step's join and epilogue, one after the
    other; the stall is what that exceeds the busier engine's time for the block by (an int8
    FFN with a gelu and quantize epilogue: 2,652 cycles a block against 2,112 of matmuls;
    simulated 131k cycles where max(engines) said 105k)."""
    if len(steps) < 3 or -(-nsz // tn) != 1:  # no step between, or not alternating
        return 0
    target, rows = budget.target, budget.rows

    def matrix(ks: int) -> int:
        return sum(matmul_cycles(target, msz, kk) * count for kk, count in split(ks, rows))

    def vector(kind: str) -> int:
        ops = _flush_ops(p, kind) + (("add",) if kind == "last" and p.residual else ())
        return sum(vector_cycles(target, op, msz, nsz) for op in ops)

    matrix_busy = sum(count * matrix(ks) for _, ks, count in steps)
    engines = max(matrix_busy, sum(count * vector(kind) for kind, _, count in steps))
    chained = matrix(steps[-1][1]) + vector("first") + vector("last")
    return max(0, chained - engines)


def charge_matmul(
    cost: Cost,
    p: MatmulProblem,
    budget: Budget,
    tm: int,
    tk: int,
    tn: int,
    bn: int,
    mode: str,
    order: str,
    keep: str,
    rotates: bool = True,
    peeled: tuple[str, ...] | None = None,
) -> None:
    """Charges the whole kernel in emission order (bias row, batches, blocks by `order`);
    `peeled`: the steps with tiles of their own (default `fitting_peels`)."""
    target = budget.target
    peeled = fitting_peels(p, budget, tm, tk, tn, bn, mode, keep) if peeled is None else peeled
    if p.bias:
        cost.add_dma(target, F32 * p.n, "dram", "sram")
    for dtype in p.chain_rows:
        cost.add_dma(target, DTYPES[dtype] * p.n, "dram", "sram")
    outer, inner = (split(p.m, tm), split(p.n, bn)) if order == "m" else (split(p.n, bn), split(p.m, tm))
    paces: list[LoopPace] = []  # per block, times its runs
    plan = (tk, tn, mode, keep, rotates, peeled)
    for i, (osz, oc) in enumerate(outer):
        times = p.batches * oc
        if keep != "none":
            charge_panel(
                cost,
                budget,
                (osz if keep == "lhs" else p.k, p.k if keep == "lhs" else osz, p.operand_bytes),
                times,
                i == 0,
                times == 1 and len(outer) == 1,
            )
        for isz, ic in inner:
            shape = (osz, isz) if order == "m" else (isz, osz)
            _charge_block(cost, p, budget, shape, times * ic, plan, not paces)
            paces.append(loop_pace(p, budget, shape, (tk, tn, mode, keep), times * ic))
    charge_loop_paces(cost, paces)


def charge_loop_paces(cost: Cost, paces: Sequence[LoopPace]) -> None:
    """Charges what the kernel-wide max of `Cost.cycles` misses about the blocks' step loops
    (`paces`, each times its runs): the blocks run one after the other, so one that waits for
    its loads does not borrow the slack of one that waits for its compute, and a trip waits
    for its own loads however idle the other queues are."""
    apart = sum(max(pace.latency, pace.compute) for pace in paces)
    together = max(sum(pace.loads for pace in paces), sum(pace.compute for pace in paces))
    cost.add_wait(max(0, apart - together))


def charge_panel(
    cost: Cost, budget: Budget, shape: tuple[int, int, int], times: int, first: bool, only: bool = False
) -> None:
    """A kept panel's load (`shape`: rows, columns, bytes of an element; `only`: the kernel's
    only panel, `panel_parts`), and
    the stall while it loads: even with a second copy the load waits for the loop over the
    previous panel's blocks to drain its semaphores, so it does not overlap that panel's
    matmuls (measured on the simulator; the kernel's first panel is its fill)."""
    rows, cols, element = shape
    parts = panel_parts(rows, element * cols, budget.target, only)
    apart = 0 if len(parts) > 1 else -1
    for _, part in parts:
        cost.add_dma(budget.target, element * part * cols, "dram", "sram", times, apart=apart)
    cost.add_wait(dma_instruction_cycles(budget.target, element * rows * cols), times - first)


SPLIT_LATENCIES = 16
"""A kept panel loads in one copy per queue only when each part's transfer takes at least this
many DMA latencies (`panel_parts`; 32 KiB on edge): a part pays the latency again, a small
panel's part on the stores' queue may wait behind the previous kernel's stores
(tiny_transformer's 16 x 64 panels: 1,134 -> 1,753 cycles for its FFN2 when split), and the
fill a split saves on a small panel is within the estimate's error (at 8 latencies MiniLM's
int8 projections split their 48 KiB panel and took a plan of K steps of 32 for it, 27,376
cycles estimated, that ran 31,236 against 28,195 streaming K steps of 192)."""


def panel_parts(rows: int, row_bytes: int, target: Target, only: bool) -> list[tuple[int, int]]:
    """(first row, rows) of the copies that load a kept panel of `rows` rows of `row_bytes`:
    one per DMA queue (balanced rows) when it is the kernel's `only` panel (a straight read
    before any store, which convert-tile-to-sync places each part on another queue) and each
    part is large (`SPLIT_LATENCIES`), so it loads on every queue, as fast as DRAM gives more
    than one queue takes; one copy otherwise (after a store, or in a loop that stores, its
    reads stay on dma0; on tiny, one queue already takes all DRAM gives). MiniLM's projections
    keep a 128 x 384 lhs panel: 6,208 cycles on one queue before the first matmul; split, their
    layer runs 472,446 -> 463,603 cycles."""
    dma = target.dma
    parts = max(1, min(dma.queues, rows)) if only and target.dram.bytes_per_cycle > dma.bytes_per_cycle else 1
    if rows * row_bytes < parts * SPLIT_LATENCIES * dma.latency * dma.bytes_per_cycle:
        parts = 1
    size = -(-rows // parts)
    return [(r0, min(size, rows - r0)) for r0 in range(0, rows, size)]


def estimate_matmul(
    p: MatmulProblem,
    budget: Budget,
    tm: int,
    tk: int,
    tn: int,
    order: str,
    bn: int = 0,
    mode: str = "acc",
    keep: str | None = None,
) -> MatmulPlan:
    """One candidate's estimate (`Cost` of the nest graph_to_tile_linear emits)."""
    bn = bn or tn
    if keep is None:  # the former meaning: a whole-K tile is kept along the loop order
        keep = "none" if tk < p.k else ("lhs" if order == "m" else "rhs")
    peeled = fitting_peels(p, budget, tm, tk, tn, bn, mode, keep)
    buffers = matmul_buffers(p, tm, tk, tn, bn, mode, keep, peeled)
    rotates = block_rotates(buffers, budget, keep)
    cost = Cost(depth=budget.depth, overlap=engines_overlap(p.k, tk, bn, tn, mode))
    charge_matmul(cost, p, budget, tm, tk, tn, bn, mode, order, keep, rotates, peeled)
    return MatmulPlan(
        tm, min(tk, p.k), tn, order, keep, cost.dram_bytes, cost.cycles(budget.target),
        footprint(buffers, "sram"), footprint(buffers, "acc"), cost.matrix + cost.vector,
        bn=bn, mode=mode if min(tk, p.k) < p.k else "acc", depth=budget.depth,
        sram_need=sram_need(buffers, budget.depth, keep), rotates=rotates, peeled=peeled,
    )  # fmt: skip


def _tile_choices(extent: int, step: int, limit: int = 16) -> list[int]:
    """Candidate tile sizes for `extent`: multiples of `step` (small ones, powers of two,
    balanced splits) and the whole extent."""
    units = -(-extent // step)
    picks = set(range(1, min(units, 8) + 1))
    picks |= {1 << i for i in range(units.bit_length()) if 1 << i <= units}
    picks |= {-(-units // parts) for parts in range(1, limit + 1)}
    sizes = {min(extent, u * step) for u in picks}
    return sorted(sizes | {extent})


KEEPS = (("none", "m"), ("lhs", "m"), ("rhs", "n"))
"""(kept panel, loop order) combinations: a kept panel is reused along the inner loop."""


def matmul_options(p: MatmulProblem, budget: Budget) -> Iterator[tuple[int, int, int, str, int, str, str]]:
    """(tm, tk, tn, order, bn, mode, keep) of every candidate that fits (`matmul_fits`): tn <=
    matrix cols, tk a multiple of matrix rows or all of K, bn a multiple of tn (or all of N), tm
    up to SRAM and ACC but not below the matrix rows or a quarter of M (rows per matmul below
    both cannot pay for the engine's latency and k cycles, nor buy more overlap), ACC or SRAM
    accumulation, a kept panel or none."""
    tns = {min(p.n, budget.cols), balanced(p.n, budget.cols)}
    for tn in sorted(tns):
        bns = [b for b in _tile_choices(p.n, tn) if b % tn == 0 or b == p.n]
        for tk in _tile_choices(p.k, budget.rows):
            modes = ("acc", "sram") if tk < p.k else ("acc",)
            tms = [tm for tm in _tile_choices(p.m, 1) if tm >= min(budget.rows, -(-p.m // 4))]
            for tm, bn, mode, (keep, order) in product(tms, bns, modes, KEEPS):
                peeled = fitting_peels(p, budget, tm, tk, tn, bn, mode, keep)
                buffers = matmul_buffers(p, tm, tk, tn, bn, mode, keep, peeled)
                turns = mode == "sram" and engines_overlap(p.k, tk, bn, tn, mode)
                if matmul_fits(buffers, budget, keep, turns):
                    yield tm, tk, tn, order, bn, mode, keep


def matmul_candidates(p: MatmulProblem, budget: Budget) -> Iterator[MatmulPlan]:
    """Every candidate that fits (`matmul_options`), estimated."""
    for option in matmul_options(p, budget):
        yield estimate_matmul(p, budget, *option)


def matmul_busy(p: MatmulProblem, budget: Budget, option: tuple[int, int, int, str, int, str, str]) -> int:
    """The matrix engine's busy cycles of a candidate (what `charge_matmul`'s matmuls add), a
    lower bound of its estimated cycles at any depth."""
    tm, tk, tn, order, bn, mode, _ = option
    latency = budget.target.matrix.latency
    steps = matmul_steps(p.k, tk, mode)
    outer, inner = (split(p.m, tm), split(p.n, bn)) if order == "m" else (split(p.n, bn), split(p.m, tm))
    busy = 0
    for osz, oc in outer:
        for isz, ic in inner:
            msz, nsz = (osz, isz) if order == "m" else (isz, osz)
            groups = sum(count for _, _, count in column_groups(nsz, tn))
            for _, ks, kc in steps:
                per_group = sum(count * (latency + kk + msz) for kk, count in _chunks(budget, ks))
                busy += p.batches * oc * ic * kc * groups * per_group
    return busy


def matmul_fits(buffers: dict[str, Buffer], budget: Budget, keep: str, turns: bool = False) -> bool:
    """ACC within its budget (all of ACC when the engines take `turns` on several ACC tiles,
    `engines_overlap`: they need no rotated copies then, and multi-buffer rotates ACC only
    while its copies fit); SRAM: the buffers with their rotated copies (`sram_need`) within the
    target's SRAM."""
    need = sram_need(buffers, budget.depth, keep)
    acc = footprint(buffers, "acc")
    return (budget.holds_acc(acc) if turns else acc <= budget.acc) and need <= budget.target.sram_bytes


_PLANS: dict[tuple[object, ...], MatmulPlan | None] = {}
"""Memo of `plan_matmul`: a model repeats a few matmul shapes (a 6-layer encoder plans 48
matmuls of 5 shapes); plans are immutable, so equal problems share one."""


NEAR_TIE = 0.01
"""Candidates estimated within this fraction of the best one's cycles are a tie, which the
fewest DMA bytes break (`plan_matmul`): the model's error is larger than that, DRAM traffic is
certain. MiniLM's int8 FFN matmul: blocks streaming the lhs, est. 105,056 cycles and 3.2 MB,
ran 173,373 cycles; keeping the lhs panel, est. 105,252 and 0.8 MB, ran 116,859."""

NEAR_TIE_CANDIDATES = 8
"""How many of the best candidates `plan_matmul` looks at for a near tie."""


def plan_matmul(p: MatmulProblem, budget: Budget) -> MatmulPlan | None:
    """The best candidate by `MatmulPlan.key`, or among those within `NEAR_TIE` of its cycles
    the one that moves the fewest DMA bytes; None when not even the smallest tiles fit."""
    key = (p, budget.sram, budget.acc, budget.depth, budget.target.fingerprint())
    return remembered(_PLANS, key, lambda: _near_tie(ranked_matmul(p, budget, NEAR_TIE_CANDIDATES)))


def _near_tie(ranked: list[MatmulPlan]) -> MatmulPlan | None:
    if not ranked:
        return None
    tied = [plan for plan in ranked if plan.cycles <= ranked[0].cycles * (1 + NEAR_TIE)]
    return min(tied, key=lambda plan: (plan.dma_bytes, plan.key()))


def ranked_matmul(p: MatmulProblem, budget: Budget, count: int) -> list[MatmulPlan]:
    """The `count` best candidates by `MatmulPlan.key` (the first of equal ones, in
    `matmul_options` order), best first, branch and bound (`cheapest_few`): candidates are
    visited by their matrix-engine cycles (`matmul_busy`, a lower bound of their cycles).
    `plan_matmul`'s is the first; the tuner's short list draws from them."""
    options = list(matmul_options(p, budget))
    floors = [matmul_busy(p, budget, option) for option in options]
    plans = cheapest_few(floors, lambda index, _: estimate_matmul(p, budget, *options[index]), count)
    return [replace(plan, candidates=len(options)) for plan in plans]


def matmul_plan_of(p: MatmulProblem, budget: Budget, choice: Sequence[object]) -> MatmulPlan | None:
    """The candidate whose `MatmulPlan.choice` is `choice`, estimated; None when no candidate
    is (a tuning record of another problem, target or compiler version)."""
    options = list(matmul_options(p, budget))
    option = next((option for option in options if option == tuple(choice)), None)
    if option is None:
        return None
    return replace(estimate_matmul(p, budget, *option), candidates=len(options))


def matmul_minimum(p: MatmulProblem, budget: Budget) -> tuple[int, int]:
    """(SRAM bytes, ACC bytes) of the smallest legal tiling, for the cannot-fit diagnostic."""
    tk, tn = min(p.k, budget.rows), min(p.n, budget.cols)
    return matmul_sram_bytes(p, 1, tk, tn), F32 * tn
