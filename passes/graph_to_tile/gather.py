"""Gather for convert-graph-to-tile: on axis 0 (an embedding lookup), rows of the table fetched
by tile.gather with the indices narrowed to i32 in SRAM (negative ones wrapped); constant
indices become a tile.const. Data movement as in movement.py.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import i32
from xdsl.ir import Operation, SSAValue

from aitc.analysis.graph_matching import constant_array
from aitc.dialects import graph, tile
from aitc.passes.graph_to_tile.builder import Index, KernelBuilder, Win, buffer_element, element_bytes
from aitc.passes.graph_to_tile.costs import RowFootprint, plan_rows
from aitc.passes.graph_to_tile.lowering import CannotFit, LoweringContext, tensor_element, tensor_shape
from aitc.weights import array_to_attr


def gather_unsupported(op: Operation) -> str | None:
    assert isinstance(op, graph.GatherOp)
    if (op.axis.value.data if op.axis else 0) != 0:
        return "only gather on axis 0 (embedding lookup) is lowered"
    if str(tensor_element(op.indices)) not in ("i64", "i32"):
        return f"gather indices must be i64 or i32, got {tensor_element(op.indices)}"
    return None


def _indices(ctx: LoweringContext, op: graph.GatherOp, count: int) -> tuple[SSAValue, bool]:
    """The indices as a [count, 1] DRAM view and whether they may be negative. Constant indices
    become an i32 tile.const with negatives already wrapped."""
    table_rows = tensor_shape(op.input)[0]
    values = constant_array(op.indices)
    if values is not None:
        wrapped = np.where(values < 0, values + table_rows, values).astype(np.int32).reshape(count, 1)
        const = tile.ConstOp(array_to_attr(wrapped, "gather_indices"))
        const.location = op.location
        ctx.decls.append(const)
        return const.buffer, False
    return ctx.value_view(op.indices, [count, 1]), True


def _load_indices(
    kb: KernelBuilder, src: SSAValue, bufs: dict, r0: Index, rs: int, table_rows: int, signed: bool
) -> None:
    """idx[0:rs] = indices[r0:r0+rs] as i32 in [0, table_rows)."""
    idx = Win.at(bufs["idx"])
    if "wide" in bufs:  # i64 indices: narrowed by tile.cast
        kb.copy(Win(src, (r0, 0)), Win.at(bufs["wide"]), [rs, 1])
        kb.cast(Win.at(bufs["wide"]), idx, [rs, 1])
    else:
        kb.copy(Win(src, (r0, 0)), idx, [rs, 1])
    if signed:  # idx += (idx < 0) * table_rows
        mask = Win.at(bufs["mask"])
        kb.binary_imm("cmp_lt", idx, 0, mask, [rs, 1])
        kb.binary_imm("mul", mask, table_rows, mask, [rs, 1])
        kb.binary("add", idx, mask, idx, [rs, 1])


def lower_gather(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.GatherOp)
    table_shape = tensor_shape(op.input)
    count, length = math.prod(tensor_shape(op.indices)), math.prod(table_shape[1:])
    element_type = tensor_element(op.input)
    footprint = RowFootprint(element_bytes(element_type), per_row=16)
    tiles = plan_rows(count, length, footprint, ctx.budget.sram, False)
    if tiles is None:
        raise CannotFit(op, "one gathered element and its index", footprint.bytes(1, 1), ctx.budget)
    tr, tc = tiles
    indices, signed = _indices(ctx, op, count)
    table = ctx.value_view(op.input, [table_shape[0], length])
    out = ctx.value_view(op.output, [count, length])
    kb = ctx.kernel([op])
    kb.cost.staged = True  # loads and stores share the stage
    bufs = {"idx": kb.alloc([tr, 1], i32, "sram"), "rows": kb.alloc([tr, tc], element_type, "sram")}
    if str(buffer_element(indices)) == "i64":
        bufs["wide"] = kb.alloc([tr, 1], buffer_element(indices), "sram")
    if signed:
        bufs["mask"] = kb.alloc([tr, 1], i32, "sram")

    def row_tile(r0: Index, rs: int) -> None:
        _load_indices(kb, indices, bufs, r0, rs, table_shape[0], signed)
        kb.tiles(length, tc, lambda c0, cs: _gather_cols(kb, table, bufs, out, (r0, rs, c0, cs)))

    kb.tiles(count, tr, row_tile)
    ctx.add(
        kb, [tr, tc], "indices narrowed to i32 in SRAM (negative ones wrapped), rows fetched by tile.gather"
    )


def _gather_cols(kb: KernelBuilder, table: SSAValue, bufs: dict, out: SSAValue, at: tuple) -> None:
    r0, rs, c0, cs = at
    kb.gather(Win(table, (0, c0)), Win.at(bufs["idx"]), Win.at(bufs["rows"]), [rs, cs])
    kb.copy(Win.at(bufs["rows"]), Win(out, (r0, c0)), [rs, cs])
