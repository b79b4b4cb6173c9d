"""Residual connections fused into the kernel of the matmul or conv whose result they add to
(epilogue fusion): `add(y, r)` (and a relu after it, for a conv) where y is the result's only
use and r a tensor of y's shape. The kernel adds r's window to each output tile before its
store, so y never goes to DRAM and the add has no kernel of its own. Only where the cost model
expects it to pay: a DMA-bound kernel gets slower by the residual's load
(`linear.fusion_estimates`, `conv.conv_fusion_estimates`).
"""

from __future__ import annotations

from xdsl.ir import Operation

from aitc.dialects import graph
from aitc.passes.graph_to_tile import linear
from aitc.passes.graph_to_tile.conv import conv_fusion_estimates, residual_of
from aitc.passes.graph_to_tile.costs import Budget


def _fuses(producer: Operation, chain: list[Operation], budget: Budget) -> bool:
    if isinstance(producer, graph.MatMulOp):
        return (
            len(chain) == 1
            and linear.residual_add(producer, chain[0])
            and linear.fusion_pays(producer, budget)
        )
    if isinstance(producer, graph.ConvOp):
        fused = residual_of(producer, chain)
        estimates = conv_fusion_estimates(producer, fused, budget) if fused is not None else None
        return estimates is not None and estimates[0] <= estimates[1]
    return False


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
