"""Residual connections fused into the kernel of the matmul or conv whose result they add to
(epilogue fusion): `add(y, r)` (and a relu after it, for a conv) where y is the result's only
use and r a tensor of y's shape. The kernel adds r's window to each output tile before its
store, so y never goes to DRAM and the add has no kernel of its own. Only where the cost model
expects it to pay: a DMA-bound kernel gets slower by the residual's load
(`linear.fusion_estimates`, `conv.conv_fusion_estimates`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation

from aitc.dialects import graph
from aitc.passes.graph_to_tile import linear
from aitc.passes.graph_to_tile.builder import CostOnlyBuilder, KernelBuilder
from aitc.passes.graph_to_tile.conv import conv_fusion_estimates, residual_of
from aitc.passes.graph_to_tile.costs import Budget
from aitc.passes.graph_to_tile.lowering import LoweringContext
from aitc.passes.graph_to_tile.rows import ROW_OPS, prologue_fits


def _fuses(producer: Operation, chain: list[Operation], budget: Budget) -> bool:
    if isinstance(producer, graph.MatMulOp):
        return (
            len(chain) == 1
            and linear.residual_add(producer, chain[0])
            and linear.fusion_pays(producer, budget, _add_apart(chain[0], budget))
        )
    if isinstance(producer, graph.ConvOp):
        fused = residual_of(producer, chain)
        estimates = conv_fusion_estimates(producer, fused, budget) if fused is not None else None
        return estimates is not None and estimates[0] <= estimates[1]
    return False


def _add_apart(add: Operation, budget: Budget) -> int | None:
    """What `add` costs left apart when it would be the prologue of the row op that alone uses
    its result (`rows.prologue_fits`, a residual add before a layer norm): the row op's kernel
    estimated with it less without (`row_kernel_cycles`); None when it would be a kernel of
    its own."""
    uses = list(add.results[0].uses)
    if len(uses) != 1 or not isinstance(uses[0].operation, ROW_OPS):
        return None
    row_op = uses[0].operation
    if not prologue_fits([add], row_op, budget):
        return None
    return max(0, row_kernel_cycles([add, row_op], budget) - row_kernel_cycles([row_op], budget))


class _CostOnly(LoweringContext):
    """A LoweringContext whose kernels charge the cost model and emit nothing
    (`CostOnlyBuilder`); `cycles`: the sum of their estimates."""

    def __init__(self, budget: Budget):
        super().__init__(budget)
        self.cycles = 0

    def kernel(self, ops: Sequence[Operation], name: str | None = None) -> KernelBuilder:
        return CostOnlyBuilder(self.budget, ops[-1].name)

    def add(self, builder: KernelBuilder, tiles: Sequence[int], reason: str) -> None:
        self.cycles += builder.cost.cycles(self.budget.target)


def row_kernel_cycles(unit: list[Operation], budget: Budget) -> int:
    """The estimate of the kernel of row-op unit `unit` (a row op, after the elementwise ops of
    its prologue), by its lowering on a `_CostOnly` context."""
    from aitc.passes.graph_to_tile.table import LOWERINGS

    ctx = _CostOnly(budget)
    LOWERINGS[type(unit[-1])].lower(ctx, unit)
    return ctx.cycles


def fuse_residuals(units: list[list[Operation]], budget: Budget) -> list[list[Operation]]:
    """Lowering units (in order) with each matmul or conv unit merged with the unit of the
    residual add that consumes its result (the add, for a conv also a relu after it), where
    that fusion pays; the merged unit is placed at the add's (after the residual is computed)
    and lowered by the matmul's or conv's lowering."""
    single = {unit[0]: index for index, unit in enumerate(units) if len(unit) == 1}
    merged: list[list[Operation] | None] = list(units)
    for index, unit in enumerate(units):
        if not isinstance(unit[0], graph.AddOp):
            continue
        for operand in (unit[0].lhs, unit[0].rhs):
            producer = operand.owner
            if isinstance(producer, Operation) and producer in single and _fuses(producer, unit, budget):
                merged[single[producer]] = None
                merged[index] = [producer, *unit]
                break
    return [unit for unit in merged if unit]
