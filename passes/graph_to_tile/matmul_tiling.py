"""How convert-graph-to-tile tiles a matmul: the problem (`MatmulProblem`), a tiling
(`MatmulPlan`), the K steps and column groups of the nest graph_to_tile_linear emits for it, and
the buffers each plan needs with their SRAM and ACC bytes. The estimate of a plan and the choice
of one are `matmul_costs`'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from aitc.dialects.hw import DTYPES
from aitc.passes.graph_to_tile.costs import F32, Budget, split


@dataclass(frozen=True)
class MatmulProblem:
    """C[batches x m x n] = A[m x k] @ B[k x n] (+ bias row) (+ residual) per batch, f32; `temps`
    extra tm x tn SRAM tiles the epilogue needs (a composite activation after a bias), `epilogue`
    the vector ops it runs per output tile (acc_read, or the bias add and the activation's ops);
    `residual`: a tensor of C's shape is added to each output tile before it is stored (a
    residual connection fused into the matmul: each block loads its window of it when it starts,
    each output tile adds its part with one vector op)."""

    batches: int
    m: int
    k: int
    n: int
    bias: bool = False
    temps: int = 0
    epilogue: tuple[str, ...] = ("acc_read",)
    residual: bool = False
    operand_bytes: int = F32
    """Bytes of an A or B element: 4 (f32), 1 (i8, accumulating in i32; the result is i32)."""
    chain: tuple[str, ...] = ()
    """The vector ops of an elementwise chain fused into the epilogue (an int8 matmul's
    dequantize, bias, activation, requantize: `linear.epilogue_chain`), run per output tile
    on the finished product in place of acc_read; its result is what the kernel stores."""
    chain_slots: tuple[str, ...] = ()
    """The element type of each tm x tn working tile of the fused chain."""
    chain_rows: tuple[str, ...] = ()
    """The element type of each 1 x n row the fused chain reads (scales, biases), loaded once."""
    chain_tiles: tuple[str, ...] = ()
    """The element type of each tensor of the result's shape the fused chain reads (a residual):
    each block loads its window when it starts, as `residual`."""
    result_bytes: int = F32
    """Bytes of an element the kernel stores: 4 (f32, or an int8 matmul's i32), 1 (an int8 chain
    result, a requantized layer)."""

    @property
    def block_inputs(self) -> tuple[int, ...]:
        """Bytes an element of each tensor a block loads when it starts: the residual, then the
        chain's tensor inputs."""
        return (F32,) * self.residual + tuple(DTYPES[dtype] for dtype in self.chain_tiles)

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
    peeled: tuple[str, ...] = ()
    """The K steps with tiles of their own (`fitting_peels`)."""

    def key(self) -> tuple[int, int, int, int]:
        """Fewest cycles, then DMA bytes, then engine work (matrix + vector cycles: fewer,
        larger matmuls), then SRAM."""
        return (self.cycles, self.dma_bytes, self.work, self.sram_bytes)

    @property
    def choice(self) -> tuple[int, int, int, str, int, str, str]:
        """What identifies the tiling among `matmul_options` (the tuner's record of it)."""
        return (self.tm, self.tk, self.tn, self.order, self.bn, self.mode, self.keep)

    @property
    def family(self) -> tuple[int, int, str, str]:
        """The tiling's structure: block rows and columns, loop order, kept panel (what the
        tuner's short list takes one of each, `tuning.short_list`)."""
        return (self.tm, self.bn, self.order, self.keep)


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


MAX_UNROLL = 16
"""Column groups per step up to which graph_to_tile_linear emits each group's ops one after the
other instead of an scf.for: insert-semaphores then orders the ops of consecutive groups one by
one (a loop as a whole waits for the whole previous one: a bubble of one vector op per step).
16 covers a 384-wide block of 32-column groups (MiniLM's projections and FFN2: 2,832,668 ->
2,763,439 cycles on edge against 8; 32 gains nothing more)."""


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


def steps_alternate(k: int, tk: int, bn: int, tn: int, mode: str) -> bool:
    """Whether the K steps of a block take turns on two ACC tiles: a block summed in SRAM with
    one column group (`group_slots` gives it one tile), so the matrix engine starts a step while
    the vector engine adds the last one into the block (`step_slot`)."""
    return mode == "sram" and tk < k and -(-bn // tn) == 1


def engines_overlap(k: int, tk: int, bn: int, tn: int, mode: str) -> bool:
    """Whether the matrix and vector engines take turns on several ACC tiles of a block (column
    groups, or alternating K steps), so they overlap even at buffer depth 1 (`Cost.overlap`)."""
    return group_slots(bn, tn) > 1 or steps_alternate(k, tk, bn, tn, mode)


def step_slot(kind: str, k: int, tk: int, mode: str) -> int:
    """The ACC tile a step of `kind` uses when steps alternate: the first 0, the steps between
    1 (multi-buffer rotates them when they loop), the last 0 after them, else 1."""
    middle = any(step == "next" for step, _, _ in matmul_steps(k, tk, mode))
    return {"first": 0, "next": 1}.get(kind, 0 if middle else 1)


def peeled_tiles(k: int, tk: int, mode: str) -> tuple[str, ...]:
    """The peeled K steps that load into tiles of their own (graph_to_tile_linear): straight-line
    steps that shared tiles would run one after the other (multi-buffer only rotates loops);
    and next to the loop over the steps between them, the loop neither waits at its entry for
    the first step's matmuls nor makes the last step's loads wait for its own (insert-semaphores
    orders a loop after, and before, everything that touches the same buffers). The last step's
    tiles are loaded before the loop. (`fitting_peels`: without the first step's when SRAM
    cannot hold them.)"""
    steps = matmul_steps(k, tk, mode)
    if steps[0][0] == "only":
        return ()
    return ("first", "last") if mode == "sram" else ("first",)


def fitting_peels(
    p: MatmulProblem, budget: Budget, tm: int, tk: int, tn: int, bn: int, mode: str, keep: str
) -> tuple[str, ...]:
    """`peeled_tiles`, but a block summed in SRAM whose buffers do not fit the target's SRAM
    with both peeled steps' tiles, and whose steps between loop (more than one: multi-buffer
    rotates their tiles; a single one would share the first step's tiles and wait for its
    matmuls), peels only the last: its first step then takes copy depth - 1 of the rotated
    tiles, which the loop's first loads do not touch. Its loads wait for the previous block's
    loop to end, while the block, which is not rotated, waits for the previous block's stores
    anyway (1024^3 on edge: 512-row blocks fit so; 1,261,420 cycles against 1,359,470 with
    256-row blocks)."""
    peeled = peeled_tiles(p.k, tk, mode)
    looped = any(kind == "next" and count > 1 for kind, _, count in matmul_steps(p.k, tk, mode))
    if "first" not in peeled or mode != "sram" or not looped:
        return peeled
    buffers = matmul_buffers(p, tm, tk, tn, bn, mode, keep, peeled)
    if sram_need(buffers, budget.depth, keep) <= budget.target.sram_bytes:
        return peeled
    return tuple(kind for kind in peeled if kind != "first")


def step_tile(role: str, kind: str, peeled: tuple[str, ...]) -> str:
    """The buffer role of A/B tile `role` ("a" or "b") in a step of `kind`."""
    return f"{role}_{kind}" if kind in peeled else role


class Buffer(NamedTuple):
    """A buffer of a matmul kernel: its shape, its space ("sram" or "acc") and the bytes of an
    element; `operand`: an A/B tile (of the operands' type, `operand_bytes` an element), else
    of the result's type (f32, or i32 for i8 operands)."""

    shape: tuple[int, ...]
    space: str
    element: int = F32
    operand: bool = False
    dtype: str = ""
    """The element type when it is neither the operands' nor the result's (a chain tile)."""


def matmul_buffers(
    p: MatmulProblem,
    tm: int,
    tk: int,
    tn: int,
    bn: int,
    mode: str,
    keep: str,
    peeled: tuple[str, ...] | None = None,
) -> dict[str, Buffer]:
    """The kernel's SRAM/ACC buffers by role (`Buffer`); graph_to_tile_linear allocates
    exactly these ("acc1", "y1", ..: the tiles unrolled groups take turns on; "a_first", ..:
    the tiles of the `peeled` steps, default `peeled_tiles`)."""
    ktile = min(tk, p.k)
    single = ktile == p.k
    slots = group_slots(bn, tn)
    element = p.operand_bytes
    buffers: dict[str, Buffer] = {
        "a": Buffer((tm, p.k if keep == "lhs" else ktile), "sram", element, True),
        "b": Buffer((p.k if keep == "rhs" else ktile, bn), "sram", element, True),
    }
    for kind in peeled_tiles(p.k, tk, mode) if peeled is None else peeled:
        if keep != "lhs":
            buffers[f"a_{kind}"] = Buffer((tm, ktile), "sram", element, True)
        if keep != "rhs":
            buffers[f"b_{kind}"] = Buffer((ktile, bn), "sram", element, True)
    if mode == "sram" and not single:
        buffers["c"] = Buffer((tm, bn), "sram")
        slots = 2 if steps_alternate(p.k, tk, bn, tn, mode) else slots
        buffers.update((slot_role("acc", s), Buffer((tm, tn), "acc")) for s in range(slots))
    else:
        if single:
            buffers.update((slot_role("acc", s), Buffer((tm, tn), "acc")) for s in range(slots))
        else:
            buffers["acc"] = Buffer((tm, bn), "acc")
        if not p.chain:
            buffers.update((slot_role("y", s), Buffer((tm, tn), "sram")) for s in range(slots))
    if p.residual:  # the block's residual, loaded when the block starts
        buffers["r"] = Buffer((tm, bn), "sram")
    if p.bias:
        buffers["bias"] = Buffer((1, p.n), "sram")
    if p.bias or (mode == "sram" and not single):  # the activation runs in place: scratch tiles
        buffers.update((f"temp{t}", Buffer((tm, tn), "sram")) for t in range(p.temps))
    return buffers | _chain_buffers(p, tm, tn, bn)


def _chain_buffers(p: MatmulProblem, tm: int, tn: int, bn: int) -> dict[str, Buffer]:
    """The working tiles, rows and block-wide tensor inputs of an epilogue chain
    (`MatmulProblem.chain`)."""
    tiles = {f"chain{i}": Buffer((tm, tn), "sram", DTYPES[t], dtype=t) for i, t in enumerate(p.chain_slots)}
    rows = {f"row{i}": Buffer((1, p.n), "sram", DTYPES[t], dtype=t) for i, t in enumerate(p.chain_rows)}
    loaded = {f"full{i}": Buffer((tm, bn), "sram", DTYPES[t], dtype=t) for i, t in enumerate(p.chain_tiles)}
    return tiles | rows | loaded


def slot_role(role: str, slot: int) -> str:
    """The buffer role of `role`'s tile for group slot `slot` (`matmul_buffers`)."""
    return role if slot == 0 else f"{role}{slot}"


def footprint(buffers: dict[str, Buffer], space: str) -> int:
    """Bytes of the buffers in `space` ("sram" or "acc"), by their element size (`matmul_buffers`)."""
    return sum(
        (spec[2] if len(spec) > 2 else F32) * math.prod(spec[0])
        for spec in buffers.values()
        if spec[1] == space
    )


def _bytes(buffers: dict[str, Buffer], roles: Sequence[str]) -> int:
    return footprint({role: buffers[role] for role in roles if role in buffers}, "sram")


def sram_need(buffers: dict[str, Buffer], depth: int, keep: str = "none") -> int:
    """SRAM the kernel needs once multi-buffer has rotated the tiles its step loop loads (A and
    B unless kept as a panel, `depth` copies): that must fit the target's SRAM. (Other kernels
    get half of it for one copy of everything; a matmul's block in SRAM and its panels are too
    large to be counted twice: whether a second block fits is `block_rotates`.)"""
    streamed = [role for role, kept in (("a", "lhs"), ("b", "rhs")) if keep != kept]
    return footprint(buffers, "sram") + (depth - 1) * _bytes(buffers, streamed)


def block_rotates(buffers: dict[str, Buffer], budget: Budget, keep: str) -> bool:
    """Whether multi-buffer can also give the block summed in SRAM a second copy (the next
    block then never waits for this one's stores)."""
    need = sram_need(buffers, budget.depth, keep) + _bytes(buffers, ["c"])
    return need <= budget.target.sram_bytes


def matmul_sram_bytes(
    p: MatmulProblem, tm: int, tk: int, tn: int, bn: int = 0, mode: str = "acc", keep: str = "none"
) -> int:
    return footprint(matmul_buffers(p, tm, tk, tn, bn or tn, mode, keep), "sram")
