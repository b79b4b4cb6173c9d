"""Transpose for convert-graph-to-tile: data movement DRAM -> SRAM -> DRAM in tiles that fit
the SRAM budget, as in movement.py.

A transpose first drops unit dims and merges input dims that stay adjacent and in order
(`collapse_transpose`), then reads a 2-D block of output dims per iteration of the other output
dims: the last two, or when the last dim stays last, the last and the longest other one (one
DMA each way per block); when the input holds the block column-major, a `tile.transpose` writes
it out (one DMA per row of the shorter side).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import f32
from xdsl.ir import Attribute, Operation, SSAValue

from aitc.dialects import graph
from aitc.passes.graph_to_tile.builder import (
    CostOnlyBuilder,
    Index,
    KernelBuilder,
    Win,
    dram_buffer,
    element_bytes,
)
from aitc.passes.graph_to_tile.costs import Budget, RowFootprint, plan_rows, remembered
from aitc.passes.graph_to_tile.lowering import CannotFit, LoweringContext, tensor_element, tensor_shape
from aitc.passes.graph_to_tile.movement import copy_value, kernel_view


def collapse_transpose(shape: Sequence[int], perm: Sequence[int]) -> tuple[list[int], list[int]]:
    """The same data movement on fewer dims: unit dims dropped, and input dims that stay next to
    each other and in order merged. A head split [16, 4, 16] -> [4, 16, 16] (perm 1, 0, 2) stays
    3-D, but [16, 4, 16] -> [4, 16, 16] with perm (1, 2, 0) is the 2-D transpose [16, 64] ->
    [64, 16]: one DMA per input row instead of one per input row and head."""
    kept = [d for d in range(len(shape)) if shape[d] != 1]
    where = {d: i for i, d in enumerate(kept)}
    runs: list[list[int]] = []  # runs of consecutive kept input dims, in output order
    for position in (where[d] for d in perm if shape[d] != 1):
        if runs and runs[-1][-1] + 1 == position:
            runs[-1].append(position)
        else:
            runs.append([position])
    by_input = sorted(range(len(runs)), key=lambda r: runs[r][0])
    merged = [math.prod(shape[kept[i]] for i in runs[r]) for r in by_input]
    return merged, [by_input.index(r) for r in range(len(runs))]


@dataclass(frozen=True)
class _TransposeBlocks:
    """How lower_transpose cuts the (collapsed) output: blocks of `tiles` over output dims
    `dims` (rows, cols), looped over the other ("lead") output dims; `copy`: the block's two
    dims keep their order (it is copied out, else transposed)."""

    perm: tuple[int, ...]
    out_shape: tuple[int, ...]
    dims: tuple[int, int]
    tiles: tuple[int, int]

    @property
    def copy(self) -> bool:
        return self.perm[self.dims[0]] < self.perm[self.dims[1]]

    @property
    def lead(self) -> list[int]:
        return [d for d in range(len(self.perm)) if d not in self.dims]


def _transpose_block(
    kb: KernelBuilder, plan: _TransposeBlocks, bufs: tuple, lead: list[Index], at: tuple
) -> None:
    """Output block [.., r0:r0+rs (dim i), .., c0:c0+cs (dim j)] at `lead` from the input (see the
    module docstring): one DMA in, one DMA out (a tile.transpose out when it turns)."""
    src, out, stage_in, stage_out = bufs
    r0, rs, c0, cs = at
    n, (i, j) = len(plan.perm), plan.dims
    out_idx: list[Index] = [0] * n
    for d, o in zip(plan.lead, lead, strict=True):
        out_idx[d] = o
    out_idx[i], out_idx[j] = r0, c0
    src_idx: list[Index] = [0] * n
    sizes = [1] * n
    for d in range(n):
        src_idx[plan.perm[d]] = out_idx[d]
    sizes[plan.perm[i]], sizes[plan.perm[j]] = rs, cs
    kb.copy(Win(src, tuple(src_idx)), Win.at(stage_in), sizes)
    out_sizes = [1] * n
    out_sizes[i], out_sizes[j] = rs, cs
    if plan.copy:  # the block keeps its layout: copy it out
        kb.copy(Win.at(stage_out), Win(out, tuple(out_idx)), out_sizes)
        return
    # column-major in the stage: transpose it out, into the output viewed as rows x last dim
    strides = [math.prod(plan.out_shape[d + 1 : n - 1]) for d in range(n - 1)]
    row = kb.linear([(out_idx[d], strides[d]) for d in range(n - 1)])
    kb.transpose(Win.at(stage_out), Win(out, (row, c0)), [cs, rs])


def _transpose_plan(
    perm: list[int], out_shape: list[int], element: int, budget: Budget
) -> _TransposeBlocks | None:
    """Blocks over the last two output dims, or when the last dim stays last (a copy of whole
    rows), over the last dim and the longest other one (fewest DMAs: one per block each way);
    None when not even one element fits."""
    n = len(perm)
    dims = (n - 2, n - 1)
    if perm[-1] == n - 1:
        dims = (max(range(n - 1), key=lambda d: (out_shape[d], d)), n - 1)
    tiles = plan_rows(out_shape[dims[0]], out_shape[dims[1]], RowFootprint(element), budget.sram, False)
    return None if tiles is None else _TransposeBlocks(tuple(perm), tuple(out_shape), dims, tiles)


def _emit_transpose(
    kb: KernelBuilder,
    plan: _TransposeBlocks,
    element_type: Attribute,
    src: SSAValue,
    out: tuple[SSAValue, SSAValue],
) -> None:
    """The kernel of `plan`: `src` is the input viewed in its collapsed shape, `out` the output
    viewed in the collapsed output shape and as rows x its last dim."""
    (i, j), (tr, tc), n = plan.dims, plan.tiles, len(plan.perm)
    perm, out_shape = plan.perm, plan.out_shape
    kb.cost.staged = True  # loads and stores share the stage
    stage = kb.alloc([tr, tc] if plan.copy else [tc, tr], element_type, "sram")
    box_in, box_out = [1] * n, [1] * n
    box_in[perm[i]], box_in[perm[j]] = tr, tc
    box_out[i], box_out[j] = tr, tc
    stage_in = kernel_view(kb, stage, box_in)
    if plan.copy:
        stage_out, dst = kernel_view(kb, stage, box_out), out[0]
    else:  # tile.transpose works on 2-D windows: the output as rows of dim i, columns of dim j
        stage_out, dst = stage, out[1]
    bufs = (src, dst, stage_in, stage_out)

    def block(lead: list[Index]) -> None:
        def tile(r0: Index, rs: int, c0: Index, cs: int) -> None:
            _transpose_block(kb, plan, bufs, lead, (r0, rs, c0, cs))

        kb.tiles(
            out_shape[i], tr, lambda r0, rs: kb.tiles(out_shape[j], tc, lambda c0, cs: tile(r0, rs, c0, cs))
        )

    kb.nest([out_shape[d] for d in plan.lead], block)


def lower_transpose(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.TransposeOp)
    shape, perm = collapse_transpose(tensor_shape(op.input), op.permutation())
    if len(perm) < 2 or perm == sorted(perm):
        copy_value(ctx, op, ctx.buffer(op.input), ctx.buffer(op.output))
        return
    out_shape = [shape[p] for p in perm]
    element_type = tensor_element(op.input)
    plan = _transpose_plan(perm, out_shape, element_bytes(element_type), ctx.budget)
    if plan is None:
        raise CannotFit(op, "one element", element_bytes(element_type), ctx.budget)
    kb = ctx.kernel([op])
    rows = [math.prod(out_shape[:-1]), out_shape[-1]]
    out = (ctx.value_view(op.output, out_shape), ctx.value_view(op.output, rows))
    _emit_transpose(kb, plan, element_type, ctx.value_view(op.input, shape), out)
    how = "copied" if plan.copy else "transposed (tile.transpose)"
    ctx.add(
        kb,
        list(plan.tiles),
        f"output blocks of {plan.tiles[0]} x {plan.tiles[1]} read from the input and {how} out",
    )


_ESTIMATES: dict[tuple, int] = {}
"""Memo of `transpose_estimate`: graph-channels-last asks it for every region edge and every
conv it weighs, and a model repeats a few shapes."""


def transpose_estimate(shape: Sequence[int], perm: Sequence[int], budget: Budget) -> int:
    """The estimated cycles of the kernel `lower_transpose` emits for an f32 tensor of `shape`
    permuted by `perm` (0 when it is a copy-free view or no block fits: the caller's other
    costs decide then)."""
    key = (tuple(shape), tuple(perm), budget.target.fingerprint(), budget.sram, budget.acc, budget.depth)
    return remembered(_ESTIMATES, key, lambda: _estimate(shape, perm, budget))


def _estimate(shape: Sequence[int], perm: Sequence[int], budget: Budget) -> int:
    collapsed, order = collapse_transpose(shape, perm)
    if len(order) < 2 or order == sorted(order):
        return 0
    out_shape = [collapsed[p] for p in order]
    plan = _transpose_plan(order, out_shape, 4, budget)
    if plan is None:
        return 0
    kb = CostOnlyBuilder(budget, "graph.transpose")
    rows = [math.prod(out_shape[:-1]), out_shape[-1]]
    _emit_transpose(kb, plan, f32, dram_buffer(collapsed), (dram_buffer(out_shape), dram_buffer(rows)))
    return kb.cost.cycles(budget.target)
