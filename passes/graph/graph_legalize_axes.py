"""`graph-legalize-axes`: reductions and softmax over non-trailing axes become their trailing
form between transposes, which the NPU runs (convert-graph-to-tile tiles trailing axes only).

    reduce_mean(x: 8x16x4, axes [1], keepdims)  ->  t = transpose(x, [0, 2, 1])      8x4x16
                                                    r = reduce_mean(t, axes [2])     8x4
                                                    reshape(r) -> 8x1x4
    softmax(x: 8x16x4, axis 1)                  ->  transpose(softmax(transpose(x, [0, 2, 1]),
                                                    axis 2), [0, 2, 1])
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from aitc.dialects import graph
from aitc.types import is_float

REDUCTIONS = (graph.ReduceSumOp, graph.ReduceMeanOp, graph.ReduceMaxOp, graph.ReduceMinOp)
"""The reductions the NPU tiles over trailing axes (graph_to_tile_rows)."""


def _located(ops: list[Operation], like: Operation) -> list[Operation]:
    for op in ops:
        op.location = like.location
    return ops


def _float_input(op: Operation) -> bool:
    type_ = op.operands[0].type
    return isinstance(type_, TensorType) and is_float(type_.get_element_type())


class TrailingReduction(RewritePattern):
    """A sum/mean/max/min over non-trailing axes reduces the trailing axes of a transpose
    that moves them last (the other dims keep their order), then reshapes to keepdims."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, REDUCTIONS) or not _float_input(op):
            return
        shape = list(graph.tensor_of(op.input).get_shape())
        axes, rank = op.reduced_axes(), len(shape)
        if not axes or axes == tuple(range(rank - len(axes), rank)):
            return
        kept = [i for i in range(rank) if i not in axes]
        moved = graph.TransposeOp(op.input, [*kept, *axes])
        element = op.output.type.get_element_type()
        reduced = type(op).create(
            operands=[moved.output],
            result_types=[TensorType(element, [shape[i] for i in kept])],
            attributes={"axes": graph.ints_attr(list(range(len(kept), rank)))},
        )
        new_ops: list[Operation] = [moved, reduced]
        if op.keepdims is not None:
            new_ops.append(graph.ReshapeOp(reduced.results[0], op.output.type.get_shape()))
        rewriter.replace(op, _located(new_ops, op), [new_ops[-1].results[0]])


class TrailingSoftmax(RewritePattern):
    """softmax/log_softmax over an axis followed by dims > 1 runs on the last axis of a
    transpose, and is transposed back."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, graph.SoftmaxOp | graph.LogSoftmaxOp) or not _float_input(op):
            return
        shape = graph.tensor_of(op.input).get_shape()
        axis = op.norm_axis()
        if all(d == 1 for d in shape[axis + 1 :]):
            return
        perm = [i for i in range(len(shape)) if i != axis] + [axis]
        inverse = [perm.index(i) for i in range(len(shape))]
        moved = graph.TransposeOp(op.input, perm)
        applied = type(op)(moved.output, -1)
        back = graph.TransposeOp(applied.output, inverse)
        rewriter.replace(op, _located([moved, applied, back], op), [back.output])


@dataclass(frozen=True)
class GraphLegalizeAxesPass(ModulePass):
    """Rewrites float reductions (sum, mean, max, min) and softmax/log_softmax over
    non-trailing axes into transposes around their trailing-axis form.

    Input:
      Graph-level functions.
    Output:
      Every float reduce_sum/mean/max/min reduces trailing axes (its input a transpose when
      they were not; a reshape restores keepdims); every float softmax/log_softmax works on
      the last axis with a dim > 1 after it, between a transpose and its inverse. Other ops are
      unchanged; ops on integer tensors too (they run on the host).
    Invariants:
      Results are bit-identical in exact arithmetic and equal up to f32 summation order;
      locations (ONNX nodes) carry over to the new ops. Idempotent.
    """

    name = "graph-legalize-axes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = GreedyRewritePatternApplier([TrailingReduction(), TrailingSoftmax()])
        PatternRewriteWalker(patterns, apply_recursively=False).rewrite_module(op)
