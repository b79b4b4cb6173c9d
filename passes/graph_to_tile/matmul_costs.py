"""The matmul part of convert-graph-to-tile's cost model: how a matmul is tiled (`MatmulPlan`),
the buffers each plan needs, and its estimate, charged with `Cost` on the nest that
graph_to_tile_linear emits for it; `plan_matmul` picks the cheapest plan that fits.

The per-instruction costs and the pipelining model are `graph_to_tile_costs`'s.
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
    balanced,
    dma_instruction_cycles,
    matmul_cycles,
    split,
    vector_cycles,
)
from aitc.target import Target


@dataclass(frozen=True)
class MatmulProblem:
    """C[batches x m x n] = A[m x k] @ B[k x n] (+ bias row) per batch, f32; `temps` extra
    tm x tn SRAM tiles the epilogue needs (a composite activation after a bias), `epilogue` the
    vector ops it runs per output tile (acc_read, or the bias add and the activation's ops)."""

    batches: int
    m: int
    k: int
    n: int
    bias: bool = False
    temps: int = 0
    epilogue: tuple[str, ...] = ("acc_read",)

    @property
    def activation(self) -> tuple[str, ...]:
        """The activation's vector ops when they cannot ride on acc_read (after an add)."""
        if self.bias:
            return self.epilogue[1:]
        return () if self.epilogue == ("acc_read",) else activation_ops_of(self.epilogue[0])


def activation_ops_of(name: str) -> tuple[str, ...]:
    """The vector ops of an activation applied in place (graph_to_tile_elementwise)."""
    from aitc.passes.graph_to_tile.elementwise import activation_ops

    return activation_ops(name)


@dataclass(frozen=True)
class MatmulPlan:
    """How graph_to_tile_linear tiles a matmul (see its module docstring).

    C is computed in blocks of tm x bn; each block runs over K in steps of tk, every step
    loading a tm x tk tile of A and a tk x bn tile of B (unless a panel is kept: `keep` "lhs"
    holds the tm x K row panel of A across the blocks of a row, loop order "m"; "rhs" the K x bn
    column panel of B across the blocks of a column, loop order "n"), and issuing one
    tile.matmul of m = tm, k <= matrix rows, n = tn <= matrix cols per (column group, row chunk).
    `mode` "acc": the block accumulates in ACC over all steps (tm x bn of ACC; tm x tn when
    one step covers K); "sram": each step's group products go through a tm x tn ACC tile and are
    added into the block in SRAM by the vector engine (the ACC holds one group, so blocks can be
    larger). The estimate (`cycles`, `dma_bytes`) is `Cost` applied to that nest. `sram_bytes`:
    one copy of the buffers; `sram_need`: with the copies multi-buffer adds (`sram_need`);
    `rotates`: whether a second copy of the block fits too (`block_rotates`)."""

    tm: int
    tk: int
    tn: int
    order: str
    keep: str
    dma_bytes: int
    cycles: int
    sram_bytes: int
    acc_bytes: int
    work: int = 0
    candidates: int = 0
    bn: int = 0
    mode: str = "acc"
    depth: int = 2
    sram_need: int = 0
    rotates: bool = True

    def key(self) -> tuple[int, int, int, int]:
        """Fewest cycles, then DMA bytes, then engine work (matrix + vector cycles: fewer,
        larger matmuls), then SRAM."""
        return (self.cycles, self.dma_bytes, self.work, self.sram_bytes)


def matmul_steps(k: int, tk: int, mode: str) -> list[tuple[str, int, int]]:
    """The K steps of a block in emission order as (kind, size, count): one step ("only") when
    tk covers K; "acc" mode peels the first step (its matmuls start the sum) and loops over the
    rest; "sram" mode peels the first step (it writes the block) and the last one (it finishes
    and stores each column group) around a loop over the steps between them."""
    first = min(tk, k)
    if first == k:
        return [("only", k, 1)]
    if mode == "acc":
        return [("first", first, 1)] + [("next", size, count) for size, count in split(k - first, tk)]
    last = (k - first) % tk or tk
    middle = k - first - last
    return [("first", first, 1)] + ([("next", tk, middle // tk)] if middle else []) + [("last", last, 1)]


MAX_UNROLL = 8
"""Column groups per step up to which graph_to_tile_linear emits each group's ops one after the
other instead of an scf.for: insert-semaphores then orders the ops of consecutive groups one by
one (a loop as a whole waits for the whole previous one: a bubble of one vector op per step)."""


def column_groups(nsz: int, tn: int) -> list[tuple[int, int, int]]:
    """(offset, size, count) of the column groups of a block of nsz columns: one entry per group
    when they are unrolled, else one per group size (the loop and its remainder)."""
    if -(-nsz // tn) <= MAX_UNROLL:
        return [(j0, min(tn, nsz - j0), 1) for j0 in range(0, nsz, tn)]
    return [(j0 * tn, size, count) for j0, (size, count) in zip((0, nsz // tn), split(nsz, tn), strict=False)]


def group_slots(bn: int, tn: int) -> int:
    """ACC (and output) tiles the unrolled groups of a block take turns on: two, three when the
    count is odd (group 0 of the next step must not take the tile of the last group of this
    one), one when there is one group or a loop (then multi-buffer rotates)."""
    groups = -(-bn // tn)
    if groups == 1 or groups > MAX_UNROLL:
        return 1
    return 2 if groups % 2 == 0 else 3


def peeled_tiles(k: int, tk: int, mode: str) -> tuple[str, ...]:
    """The peeled K steps that load into tiles of their own (graph_to_tile_linear): straight-line
    steps that shared tiles would run one after the other (multi-buffer only rotates loops);
    and next to the loop over the steps between them, the loop neither waits at its entry for
    the first step's matmuls nor makes the last step's loads wait for its own (insert-semaphores
    orders a loop after, and before, everything that touches the same buffers). The last step's
    tiles are loaded before the loop."""
    steps = matmul_steps(k, tk, mode)
    if steps[0][0] == "only":
        return ()
    return ("first", "last") if mode == "sram" else ("first",)


def step_tile(role: str, kind: str, peeled: tuple[str, ...]) -> str:
    """The buffer role of A/B tile `role` ("a" or "b") in a step of `kind`."""
    return f"{role}_{kind}" if kind in peeled else role


def matmul_buffers(
    p: MatmulProblem, tm: int, tk: int, tn: int, bn: int, mode: str, keep: str
) -> dict[str, tuple]:
    """The kernel's SRAM/ACC buffers by role: (shape, space); graph_to_tile_linear allocates
    exactly these ("acc1", "y1", ..: the tiles unrolled groups take turns on; "a_first", ..:
    the tiles of peeled steps, `peeled_tiles`)."""
    ktile = min(tk, p.k)
    single = ktile == p.k
    slots = group_slots(bn, tn)
    buffers: dict[str, tuple] = {
        "a": ((tm, p.k if keep == "lhs" else ktile), "sram"),
        "b": ((p.k if keep == "rhs" else ktile, bn), "sram"),
    }
    for kind in peeled_tiles(p.k, tk, mode):
        if keep != "lhs":
            buffers[f"a_{kind}"] = ((tm, ktile), "sram")
        if keep != "rhs":
            buffers[f"b_{kind}"] = ((ktile, bn), "sram")
    if mode == "sram" and not single:
        buffers["c"] = ((tm, bn), "sram")
        buffers.update((slot_role("acc", s), ((tm, tn), "acc")) for s in range(slots))
    else:
        if single:
            buffers.update((slot_role("acc", s), ((tm, tn), "acc")) for s in range(slots))
        else:
            buffers["acc"] = ((tm, bn), "acc")
        buffers.update((slot_role("y", s), ((tm, tn), "sram")) for s in range(slots))
    if p.bias:
        buffers["bias"] = ((1, p.n), "sram")
    if p.bias or (mode == "sram" and not single):  # the activation runs in place: scratch tiles
        buffers.update((f"temp{t}", ((tm, tn), "sram")) for t in range(p.temps))
    return buffers


def slot_role(role: str, slot: int) -> str:
    """The buffer role of `role`'s tile for group slot `slot` (`matmul_buffers`)."""
    return role if slot == 0 else f"{role}{slot}"


def _footprint(buffers: dict[str, tuple], space: str) -> int:
    return sum(F32 * math.prod(shape) for shape, where in buffers.values() if where == space)


def _bytes(buffers: dict[str, tuple], roles: Sequence[str]) -> int:
    return _footprint({role: buffers[role] for role in roles if role in buffers}, "sram")


def sram_need(buffers: dict[str, tuple], depth: int, keep: str = "none") -> int:
    """SRAM the kernel needs once multi-buffer has rotated the tiles its step loop loads (A and
    B unless kept as a panel, `depth` copies): that must fit the target's SRAM. (Other kernels
    get half of it for one copy of everything; a matmul's block in SRAM and its panels are too
    large to be counted twice: whether a second block fits is `block_rotates`.)"""
    streamed = [role for role, kept in (("a", "lhs"), ("b", "rhs")) if keep != kept]
    return _footprint(buffers, "sram") + (depth - 1) * _bytes(buffers, streamed)


def block_rotates(buffers: dict[str, tuple], budget: Budget, keep: str) -> bool:
    """Whether multi-buffer can also give the block summed in SRAM a second copy (the next
    block then never waits for this one's stores)."""
    need = sram_need(buffers, budget.depth, keep) + _bytes(buffers, ["c"])
    return need <= budget.target.sram_bytes


def matmul_sram_bytes(
    p: MatmulProblem, tm: int, tk: int, tn: int, bn: int = 0, mode: str = "acc", keep: str = "none"
) -> int:
    return _footprint(matmul_buffers(p, tm, tk, tn, bn or tn, mode, keep), "sram")


def _flush_ops(p: MatmulProblem, kind: str) -> tuple[str, ...]:
    """The vector ops after a group's matmuls of one step of kind `kind` (see
    graph_to_tile_linear): "only" and "epilogue" (a block summed in ACC) end the product
    (acc_read with the activation, or bias add and activation); in SRAM the first step writes
    the block (acc_read, or the bias add), the others add to it and the last one applies the
    activation in place."""
    if kind in ("only", "epilogue"):
        return p.epilogue
    if kind == "first":
        return ("add",) if p.bias else ("acc_read",)
    return ("add",) + (p.activation if kind == "last" else ())


def _step_loads(
    cost: Cost, target: Target, shape: tuple[int, int, int], keep: str, times: int, ahead: bool
) -> None:
    """Charges the A and B tiles of one K step (`ahead`: into the tiles of a peeled step)."""
    msz, ks, nsz = shape
    if keep != "lhs":
        cost.add_dma(target, F32 * msz * ks, "dram", "sram", times, ahead)
    if keep != "rhs":
        cost.add_dma(target, F32 * ks * nsz, "dram", "sram", times, ahead)


def _charge_group(cost: Cost, p: MatmulProblem, budget: Budget, shape: tuple, kind: str, times: int) -> None:
    """The matmuls of one column group of one step (kind "epilogue": none), the vector ops
    after them and, when the group is finished, its store."""
    target, rows = budget.target, budget.rows
    msz, ks, gsz = shape
    if kind != "epilogue":
        chunks = [(min(rows, ks), 1), *split(ks - rows, rows)] if ks > rows else [(ks, 1)]
        for kk, count in chunks:
            cost.add_matrix(matmul_cycles(target, msz, kk), times * count)
    if kind == "acc":  # a step of a block summed in ACC: nothing more
        return
    for op in _flush_ops(p, kind):
        cost.add_vector(vector_cycles(target, op, msz, gsz), times)
    if kind in ("only", "epilogue", "last"):
        cost.add_dma(target, F32 * msz * gsz, "sram", "dram", times)


def _charge_block(
    cost: Cost, p: MatmulProblem, budget: Budget, shape: tuple[int, int], times: int, plan: tuple
) -> None:
    """Charges one C block (msz x nsz, run `times` times) as graph_to_tile_linear emits it,
    and the waits around its K steps (`block_waits`)."""
    tk, tn, mode, keep, _ = plan
    target = budget.target
    msz, nsz = shape
    groups = column_groups(nsz, tn)
    steps = matmul_steps(p.k, tk, mode)
    peeled = peeled_tiles(p.k, tk, mode)
    hoisted = "last" in peeled
    for kind, ks, kc in steps:
        if kind != "last" or not hoisted:
            _step_loads(cost, target, (msz, ks, nsz), keep, times * kc, kind in peeled)
        step = kind if mode == "sram" or kind == "only" else "acc"
        for _, gsz, gc in groups:
            _charge_group(cost, p, budget, (msz, ks, gsz), step, times * kc * gc)
        if kind == "first" and hoisted:  # the last step's tiles, loaded before the loop
            _step_loads(cost, target, (msz, steps[-1][1], nsz), keep, times, True)
    if steps[0][0] == "only":
        return
    if mode == "acc":
        for _, gsz, gc in groups:
            _charge_group(cost, p, budget, (msz, 0, gsz), "epilogue", times * gc)
    idle, stall = block_waits(p, budget, plan, shape)
    cost.add_wait(idle, times, "dma0")
    cost.add_wait(stall, times)


def block_waits(p: MatmulProblem, budget: Budget, plan: tuple, shape: tuple[int, int]) -> tuple[int, int]:
    """(load-queue idle, pipeline stall) of one block of several K steps, from the way
    insert-semaphores orders it (measured on the simulator):

    - the loop over the K steps drains its semaphores at its exit: the load queue waits there
      for the loop's last matmuls (about one step of them) before loading the next block;
    - "acc" mode: the next block's first tiles are then loaded while nothing computes;
    - "sram" mode, block not rotated (`block_rotates`): the next block's first step writes
      column group j once this block's store j is done, so it runs at the stores' pace: the
      stores beyond the compute of a last and a first step stall the pipeline."""
    tk, tn, mode, keep, rotates = plan
    steps = matmul_steps(p.k, tk, mode)
    if steps[0][0] == "only":
        return 0, 0
    target, (msz, nsz) = budget.target, shape
    groups = column_groups(nsz, tn)
    chunks = (
        [(min(budget.rows, tk), 1), *split(tk - budget.rows, budget.rows)] if tk > budget.rows else [(tk, 1)]
    )
    step = sum(gc * kc * matmul_cycles(target, msz, kk) for _, _, gc in groups for kk, kc in chunks)
    loads = (dma_instruction_cycles(target, F32 * msz * tk) if keep != "lhs" else 0) + (
        dma_instruction_cycles(target, F32 * tk * nsz) if keep != "rhs" else 0
    )
    looped = any(kind == "next" and count > 1 for kind, _, count in steps)
    drain = step if looped else 0
    if mode == "acc":
        return drain, loads
    stores = sum(gc * dma_instruction_cycles(target, F32 * msz * gsz) for _, gsz, gc in groups)
    return drain, 0 if rotates else max(0, stores - 2 * step)


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
) -> None:
    """Charges the whole kernel in emission order (bias row, batches, blocks by `order`)."""
    target = budget.target
    if p.bias:
        cost.add_dma(target, F32 * p.n, "dram", "sram")
    outer, inner = (split(p.m, tm), split(p.n, bn)) if order == "m" else (split(p.n, bn), split(p.m, tm))
    for i, (osz, oc) in enumerate(outer):
        times = p.batches * oc
        if keep != "none":
            charge_panel(cost, budget, F32 * osz * p.k, times, i == 0)
        for isz, ic in inner:
            shape = (osz, isz) if order == "m" else (isz, osz)
            _charge_block(cost, p, budget, shape, times * ic, (tk, tn, mode, keep, rotates))


def charge_panel(cost: Cost, budget: Budget, nbytes: int, times: int, first: bool) -> None:
    """A kept panel's load, and the stall while it loads: even with a second copy the load
    waits for the loop over the previous panel's blocks to drain its semaphores, so it does
    not overlap that panel's matmuls (measured on the simulator; the kernel's first panel is
    its fill)."""
    cost.add_dma(budget.target, nbytes, "dram", "sram", times)
    cost.add_wait(dma_instruction_cycles(budget.target, nbytes), times - first)


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
    buffers = matmul_buffers(p, tm, tk, tn, bn, mode, keep)
    rotates = block_rotates(buffers, budget, keep)
    cost = Cost(depth=budget.depth, overlap=group_slots(bn, tn) > 1)
    charge_matmul(cost, p, budget, tm, tk, tn, bn, mode, order, keep, rotates)
    return MatmulPlan(
        tm, min(tk, p.k), tn, order, keep, cost.dram_bytes, cost.cycles(budget.target),
        _footprint(buffers, "sram"), _footprint(buffers, "acc"), cost.matrix + cost.vector,
        bn=bn, mode=mode if min(tk, p.k) < p.k else "acc", depth=budget.depth,
        sram_need=sram_need(buffers, budget.depth, keep), rotates=rotates,
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


def matmul_candidates(p: MatmulProblem, budget: Budget) -> Iterator[MatmulPlan]:
    """Every candidate that fits (`matmul_fits`): tn <= matrix cols, tk a multiple of matrix
    rows or all of K, bn a multiple of tn (or all of N), tm up to SRAM and ACC but not below the
    matrix rows or a quarter of M (rows per matmul below both cannot pay for the engine's
    latency and k cycles, nor buy more overlap), ACC or SRAM accumulation, a kept panel or
    none."""
    tns = {min(p.n, budget.cols), balanced(p.n, budget.cols)}
    for tn in sorted(tns):
        bns = [b for b in _tile_choices(p.n, tn) if b % tn == 0 or b == p.n]
        for tk in _tile_choices(p.k, budget.rows):
            modes = ("acc", "sram") if tk < p.k else ("acc",)
            tms = [tm for tm in _tile_choices(p.m, 1) if tm >= min(budget.rows, -(-p.m // 4))]
            for tm, bn, mode, (keep, order) in product(tms, bns, modes, KEEPS):
                buffers = matmul_buffers(p, tm, tk, tn, bn, mode, keep)
                if not matmul_fits(buffers, budget, keep):
                    continue
                yield estimate_matmul(p, budget, tm, tk, tn, order, bn, mode, keep)


def matmul_fits(buffers: dict[str, tuple], budget: Budget, keep: str) -> bool:
    """ACC within its budget; SRAM: the buffers with their rotated copies (`sram_need`) within
    the target's SRAM."""
    need = sram_need(buffers, budget.depth, keep)
    return _footprint(buffers, "acc") <= budget.acc and need <= budget.target.sram_bytes


_PLANS: dict[tuple[object, ...], MatmulPlan | None] = {}
"""Memo of `plan_matmul`: a model repeats a few matmul shapes (a 6-layer encoder plans 48
matmuls of 5 shapes); plans are immutable, so equal problems share one."""


def plan_matmul(p: MatmulProblem, budget: Budget) -> MatmulPlan | None:
    """The best candidate by `MatmulPlan.key`; None when not even the smallest tiles fit."""
    key = (p, budget.sram, budget.acc, budget.depth, budget.target.fingerprint())
    if key not in _PLANS:
        if len(_PLANS) >= 4096:
            _PLANS.clear()
        _PLANS[key] = _search_matmul(p, budget)
    return _PLANS[key]


def _search_matmul(p: MatmulProblem, budget: Budget) -> MatmulPlan | None:
    candidates = list(matmul_candidates(p, budget))
    if not candidates:
        return None
    return replace(min(candidates, key=MatmulPlan.key), candidates=len(candidates))


def matmul_minimum(p: MatmulProblem, budget: Budget) -> tuple[int, int]:
    """(SRAM bytes, ACC bytes) of the smallest legal tiling, for the cannot-fit diagnostic."""
    tk, tn = min(p.k, budget.rows), min(p.n, budget.cols)
    return matmul_sram_bytes(p, 1, tk, tn), F32 * tn
