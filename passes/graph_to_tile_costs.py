"""The cost model of `convert-graph-to-tile`: pure functions of a Target and static sizes.

Two users: the planners below choose tile sizes by estimating every candidate in closed form,
and `graph_to_tile_builder.KernelBuilder` charges each op it emits (times the trip count of
its loops), so the `dma_bytes` / `est_cycles` recorded on a kernel are the model applied to
the IR that was actually produced. The per-instruction costs are the simulator's
(`aitc/sim/timing.py`) without the DMA latency, which multi-buffering hides: DMA bytes /
min(DMA, DRAM) bandwidth, matrix latency + k + m, vector latency + rows * ceil(cols / lanes)
* op cycles.

    est_cycles = max(DMA-in, DMA-out, DRAM bytes / DRAM bandwidth, matrix, vector)

since the engines run concurrently once `multi-buffer` pipelines the loops.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from aitc.target import Target

F32 = 4


@dataclass(frozen=True)
class Budget:
    """What one kernel may use: `sram` is half of the target's SRAM (one copy of the working
    set; the other half is left for double buffering by `multi-buffer`), `acc` half of ACC."""

    target: Target
    sram: int
    acc: int

    @staticmethod
    def of(target: Target) -> Budget:
        return Budget(target, target.sram_bytes // 2, target.acc_bytes // 2)

    @property
    def rows(self) -> int:
        """Matrix-engine contraction lanes: k of one tile.matmul."""
        return self.target.matrix.rows

    @property
    def cols(self) -> int:
        """Matrix-engine output lanes: n of one tile.matmul."""
        return self.target.matrix.cols


def split(extent: int, tile: int) -> list[tuple[int, int]]:
    """`extent` cut into tiles of `tile`: [(size, count)] for the full tiles and the remainder."""
    full, rest = divmod(extent, tile)
    return [(size, count) for size, count in ((tile, full), (rest, 1)) if size and count]


def balanced(extent: int, limit: int) -> int:
    """The smallest tile <= limit that covers `extent` in as few tiles as `limit` does (so
    16 rows with limit 13 become 2 tiles of 8, not 13 + 3)."""
    limit = max(1, min(limit, extent))
    return -(-extent // -(-extent // limit))


def dram_bandwidth(target: Target) -> int:
    return min(target.dma.bytes_per_cycle, target.dram.bytes_per_cycle)


def dma_cycles(target: Target, nbytes: int, dram: bool = True) -> float:
    """Transfer time at the bandwidth of the path; the per-transfer latency is left out, as
    multi-buffering overlaps it with compute (it is throughput that bounds a pipelined loop)."""
    bandwidth = dram_bandwidth(target) if dram else target.dma.bytes_per_cycle
    return nbytes / bandwidth


def matmul_cycles(target: Target, m: int, k: int) -> int:
    """One tile.matmul: latency + k (weights shift in) + m (rows stream through)."""
    return target.matrix.latency + k + m


def vector_cycles(target: Target, op: str, rows: int, cols: int) -> int:
    vector = target.vector
    return vector.latency + rows * -(-cols // vector.lanes) * vector.cycles_per_group(op)


@dataclass
class Cost:
    """Engine time and DRAM traffic of a kernel, accumulated op by op."""

    dma_in: float = 0.0
    dma_out: float = 0.0
    dram_bytes: int = 0
    matrix: int = 0
    vector: int = 0
    counts: dict[str, int] = field(default_factory=dict)

    def add_dma(self, target: Target, nbytes: int, src: str, dst: str, times: int = 1) -> None:
        dram = "dram" in (src, dst)
        cycles = times * dma_cycles(target, nbytes, dram)
        if dst == "dram":
            self.dma_out += cycles
        else:
            self.dma_in += cycles
        self.dram_bytes += times * nbytes if dram else 0

    def cycles(self, target: Target) -> int:
        dram = self.dram_bytes / target.dram.bytes_per_cycle
        return math.ceil(max(self.dma_in, self.dma_out, dram, self.matrix, self.vector))


# --------------------------------------------------------------------------- matmul


@dataclass(frozen=True)
class MatmulProblem:
    """C[batches x m x n] = A[m x k] @ B[k x n] (+ bias row) per batch, f32; `temps` extra
    m x n SRAM tiles the epilogue needs (a composite activation after a bias), `epilogue` the
    vector ops it runs per output tile (acc_read, or the bias add and the activation's ops)."""

    batches: int
    m: int
    k: int
    n: int
    bias: bool = False
    temps: int = 0
    epilogue: tuple[str, ...] = ("acc_read",)


@dataclass(frozen=True)
class MatmulPlan:
    """Tile sizes (SRAM tiles tm x tk of A, tk x tn of B, tm x tn of C), loop order ("m":
    m tiles outermost, "n": n tiles outermost), which operand stays in SRAM across the inner
    loop ("lhs", "rhs" or "none"), and the estimate that chose them."""

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

    def key(self) -> tuple[int, int, int, int]:
        """Fewest cycles, then DMA bytes, then engine work (matrix + vector cycles: fewer,
        larger matmuls), then SRAM."""
        return (self.cycles, self.dma_bytes, self.work, self.sram_bytes)


def matmul_sram_bytes(p: MatmulProblem, tm: int, tk: int, tn: int) -> int:
    return F32 * (tm * tk + tk * tn + tm * tn * (1 + p.temps) + (tn if p.bias else 0))


def _matmul_dma(p: MatmulProblem, tm: int, tk: int, tn: int, keep: str) -> tuple[int, int]:
    """(DRAM bytes loaded, DRAM bytes stored) of one candidate."""
    nm, nn = -(-p.m // tm), -(-p.n // tn)
    a_bytes, b_bytes = F32 * p.m * p.k, F32 * p.k * p.n
    if keep == "lhs":  # the A tile (tm x K) is loaded once per m tile, reused by every n tile
        loads = a_bytes + nm * b_bytes
    elif keep == "rhs":  # the B panel (K x tn) is loaded once per n tile, reused by every m tile
        loads = b_bytes + nn * a_bytes
    else:
        loads = nn * a_bytes + nm * b_bytes
    if p.bias:  # a bias row per n tile: once per panel (keep rhs), else once per (m, n) tile
        loads += F32 * p.n * (1 if keep == "rhs" else nm)
    return p.batches * loads, p.batches * F32 * p.m * p.n


def _matmul_compute(p: MatmulProblem, budget: Budget, tm: int, tk: int, tn: int) -> tuple[int, int]:
    """(matrix cycles, vector cycles) of one candidate, in closed form."""
    target = budget.target
    nm, nn = -(-p.m // tm), -(-p.n // tn)
    subs = sum(count * -(-size // budget.rows) for size, count in split(p.k, tk))
    matrix = p.batches * nn * (nm * (p.k + target.matrix.latency * subs) + p.m * subs)
    groups = sum(count * -(-size // target.vector.lanes) for size, count in split(p.n, tn))
    per_group = sum(target.vector.cycles_per_group(op) for op in p.epilogue)
    vector = p.batches * (len(p.epilogue) * nm * nn * target.vector.latency + p.m * groups * per_group)
    return matrix, vector


def estimate_matmul(p: MatmulProblem, budget: Budget, tm: int, tk: int, tn: int, order: str) -> MatmulPlan:
    """One candidate's estimate: cycles = max(DMA in, DMA out, DRAM, matrix, vector)."""
    target = budget.target
    keep = "none" if tk < p.k else ("lhs" if order == "m" else "rhs")
    loads, stores = _matmul_dma(p, tm, tk, tn, keep)
    bandwidth = dram_bandwidth(target)
    matrix, vector = _matmul_compute(p, budget, tm, tk, tn)
    dram = (loads + stores) / target.dram.bytes_per_cycle
    cycles = math.ceil(max(loads / bandwidth, stores / bandwidth, dram, matrix, vector))
    sram = matmul_sram_bytes(p, tm, tk, tn)
    return MatmulPlan(tm, tk, tn, order, keep, loads + stores, cycles, sram, F32 * tm * tn, matrix + vector)


def _tile_choices(extent: int, step: int, limit: int = 16) -> list[int]:
    """Candidate tile sizes for `extent`: multiples of `step` (small ones, powers of two,
    balanced splits) and the whole extent."""
    units = -(-extent // step)
    picks = set(range(1, min(units, 8) + 1))
    picks |= {1 << i for i in range(units.bit_length()) if 1 << i <= units}
    picks |= {-(-units // parts) for parts in range(1, limit + 1)}
    sizes = {min(extent, u * step) for u in picks}
    return sorted(sizes | {extent})


def matmul_candidates(p: MatmulProblem, budget: Budget) -> Iterator[MatmulPlan]:
    """Every candidate that fits: tn <= matrix cols, tk a multiple of matrix rows or all of K,
    tm up to the SRAM and ACC budgets."""
    tns = {min(p.n, budget.cols), balanced(p.n, budget.cols)}
    for tn in sorted(tns):
        for tk in _tile_choices(p.k, budget.rows):
            for tm in _tile_choices(p.m, 1):
                if F32 * tm * tn > budget.acc or matmul_sram_bytes(p, tm, tk, tn) > budget.sram:
                    continue
                for order in ("m", "n") if tk == p.k else ("m",):
                    yield estimate_matmul(p, budget, tm, tk, tn, order)


def plan_matmul(p: MatmulProblem, budget: Budget) -> MatmulPlan | None:
    """The best candidate by `MatmulPlan.key`; None when not even the smallest tiles fit."""
    candidates = list(matmul_candidates(p, budget))
    if not candidates:
        return None
    return replace(min(candidates, key=MatmulPlan.key), candidates=len(candidates))


def matmul_minimum(p: MatmulProblem, budget: Budget) -> tuple[int, int]:
    """(SRAM bytes, ACC bytes) of the smallest legal tiling, for the cannot-fit diagnostic."""
    tk, tn = min(p.k, budget.rows), min(p.n, budget.cols)
    return matmul_sram_bytes(p, 1, tk, tn), F32 * tn


# --------------------------------------------------------------------------- row kernels


@dataclass(frozen=True)
class RowFootprint:
    """SRAM bytes of a row-tiled kernel as a function of its tile (tr rows x tc cols):
    `per_element` * tr * tc (full tiles) + `per_row` * tr (column vectors) + `per_col` * tc
    (row vectors) + `fixed` (scalars)."""

    per_element: int
    per_row: int = 0
    per_col: int = 0
    fixed: int = 0

    def bytes(self, tr: int, tc: int) -> int:
        return self.per_element * tr * tc + self.per_row * tr + self.per_col * tc + self.fixed


def plan_rows(
    rows: int, cols: int, footprint: RowFootprint, budget: int, whole_rows: bool
) -> tuple[int, int] | None:
    """(tr, tc) for a rows x cols iteration space: whole rows when they fit (always when
    `whole_rows`, e.g. a softmax), then as many rows as fit, balanced; None if nothing fits."""
    tc = cols
    if footprint.bytes(1, cols) > budget:
        if whole_rows:
            return None
        spare = budget - footprint.per_row - footprint.fixed
        tc = spare // (footprint.per_element + footprint.per_col) if spare > 0 else 0
        if tc < 1:
            return None
        tc = balanced(cols, tc)
    per_row = footprint.per_element * tc + footprint.per_row
    spare = budget - footprint.per_col * tc - footprint.fixed
    tr = balanced(rows, max(1, spare // per_row)) if per_row else rows
    return tr, tc


def plan_box(
    shape: tuple[int, ...], tileable: tuple[bool, ...], elem: int, budget: int
) -> tuple[int, ...] | None:
    """Tile sizes for copying an n-d box through SRAM: innermost tileable dims whole first,
    then as much of the next dim as fits; untileable dims (strided) get 1. None if a single
    element does not fit."""
    if elem > budget:
        return None
    sizes = [1] * len(shape)
    room = budget // elem
    for dim in reversed(range(len(shape))):
        if not tileable[dim]:
            continue
        take = min(shape[dim], room)
        sizes[dim] = balanced(shape[dim], take)
        room //= max(sizes[dim], 1)
        if take < shape[dim]:
            break
    return tuple(sizes)
