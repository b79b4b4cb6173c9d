"""`shard-simplify`: fewer, cheaper collectives with the same per-core results.

Rewrites, each on collectives of one grid and the same grid axes (A), for an inner result used
only by the outer op:

    all_slice(all_reduce(x, A), A, d)        -> reduce_scatter(x, A, d)   (one ring pass, not two)
    all_slice(all_gather(x, A, d), A, d)     -> x                         (gather then take one's own)
    all_reduce(all_reduce(x, A), B), A ∩ B = ∅, same reduction -> all_reduce(x, A + B)
    a collective over a group of one core    -> its operand (when the types agree)
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from aitc.analysis.graph_matching import replace_with_value
from aitc.dialects import shard


def _only_input_of(value: SSAValue, outer: shard.CollectiveOp, op_type: type) -> shard.CollectiveOp | None:
    """The collective of `op_type` that defines `value`, on `outer`'s grid, used only by `outer`."""
    inner = value.owner
    if not isinstance(inner, op_type) or not value.has_one_use():
        return None
    assert isinstance(inner, shard.CollectiveOp)
    return inner if inner.grid == outer.grid else None


class ReduceScatterFromSliceOfAllReduce(RewritePattern):
    """all_slice(all_reduce(x, A), A, d) -> reduce_scatter(x, A, d)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: shard.AllSliceOp, rewriter: PatternRewriter) -> None:
        inner = _only_input_of(op.input, op, shard.AllReduceOp)
        if not isinstance(inner, shard.AllReduceOp) or inner.axes != op.axes or op.halo is not None:
            return
        if inner.input.type != inner.result.type:
            return  # the reduction also converts the element type
        merged = shard.ReduceScatterOp(
            inner.input,
            op.grid.root_reference.data,
            op.axes,
            op.result.type,
            scatter_axis=op.int_prop("slice_axis"),
            reduction=inner.kind,
        )
        merged.location = op.location
        rewriter.replace(op, merged)


class ElideSliceOfGather(RewritePattern):
    """all_slice(all_gather(x, A, d), A, d) -> x: each core takes back its own part."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: shard.AllSliceOp, rewriter: PatternRewriter) -> None:
        inner = _only_input_of(op.input, op, shard.AllGatherOp)
        if inner is None or inner.axes != op.axes or op.halo is not None:
            return
        same_dim = inner.int_prop("gather_axis") == op.int_prop("slice_axis")
        if same_dim and inner.input.type == op.result.type:
            replace_with_value(rewriter, op, inner.input)


class MergeAllReduces(RewritePattern):
    """all_reduce(all_reduce(x, A), B) -> all_reduce(x, A + B) for disjoint A, B and one
    reduction: one collective over the union of the groups."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: shard.AllReduceOp, rewriter: PatternRewriter) -> None:
        inner = _only_input_of(op.input, op, shard.AllReduceOp)
        if not isinstance(inner, shard.AllReduceOp) or inner.kind != op.kind:
            return
        if set(inner.axes) & set(op.axes) or inner.input.type != op.result.type:
            return
        merged = shard.AllReduceOp(
            inner.input,
            op.grid.root_reference.data,
            [*inner.axes, *op.axes],
            op.result.type,
            reduction=op.kind,
        )
        merged.location = op.location
        rewriter.replace(op, merged)


class ElideSingleCoreCollective(RewritePattern):
    """A collective over a group of one core leaves every value where it is."""

    def match_and_rewrite(self, op, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, shard.CollectiveOp) or op.input.type != op.result.type:
            return
        grid = shard.grid_of(op, op.grid.root_reference.data)
        if grid is not None and shard.group_size(grid, op.axes) == 1:
            replace_with_value(rewriter, op, op.input)


SIMPLIFICATIONS: tuple[type[RewritePattern], ...] = (
    ReduceScatterFromSliceOfAllReduce,
    ElideSliceOfGather,
    MergeAllReduces,
    ElideSingleCoreCollective,
)


@dataclass(frozen=True)
class ShardSimplifyPass(ModulePass):
    """Replaces chains of collectives by fewer, cheaper ones.

    Input:
      A module with shard collectives (per-core, after partitioning, or written by hand).
    Output:
      No all_slice of a single-use all_reduce or all_gather over the same grid axes (the first
      becomes a reduce_scatter, the second the gathered value), no all_reduce of a single-use
      all_reduce with the same reduction over disjoint axes (one all_reduce over both), and no
      collective over a group of one core.
    Invariants:
      Every core's values are unchanged, up to the order in which a merged reduction adds.
    """

    name = "shard-simplify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [pattern() for pattern in SIMPLIFICATIONS]
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(op)
