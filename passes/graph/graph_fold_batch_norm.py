"""`graph-fold-batch-norm`: fold inference batch normalisation into the preceding conv."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from aitc.analysis.graph_matching import constant_array, name_hint, new_constant, single_use
from aitc.dialects import graph

DEFAULT_EPSILON = 1e-5
"""ONNX's BatchNormalization default, also the reference kernel's."""


def _batch_norm_params(op: graph.BatchNormOp) -> tuple[np.ndarray, ...] | None:
    """(scale, bias, mean, var) as float64 arrays when all four are constants."""
    arrays = [constant_array(v) for v in (op.scale, op.bias, op.mean, op.var)]
    if any(a is None for a in arrays):
        return None
    return tuple(np.asarray(a, dtype=np.float64) for a in arrays)


def fold_into_conv(
    weight: np.ndarray, bias: np.ndarray | None, params: tuple[np.ndarray, ...], epsilon: float
) -> tuple[np.ndarray, np.ndarray]:
    """Weight and bias of conv' = batch_norm(conv(x, weight, bias)), computed in float64:
    w' = w * s, b' = (b - mean) * s + beta, with s = scale / sqrt(var + eps) per out channel."""
    scale, beta, mean, var = params
    factor = scale / np.sqrt(var + epsilon)
    old_bias = np.zeros_like(mean) if bias is None else bias.astype(np.float64)
    new_weight = weight.astype(np.float64) * factor.reshape(-1, *([1] * (weight.ndim - 1)))
    new_bias = (old_bias - mean) * factor + beta
    return new_weight.astype(weight.dtype), new_bias.astype(weight.dtype)


class FoldBatchNormIntoConv(RewritePattern):
    """batch_norm(conv(x, W, b)) with constant W, b and batch-norm params -> conv(x, W', b')."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BatchNormOp, rewriter: PatternRewriter) -> None:
        conv = op.input.owner
        if not isinstance(conv, graph.ConvOp) or conv.activation is not None:
            return
        weight = constant_array(conv.weight)
        bias = None if conv.bias is None else constant_array(conv.bias)
        params = _batch_norm_params(op)
        if weight is None or (conv.bias is not None and bias is None) or params is None:
            return
        if weight.dtype.kind != "f" or not single_use(conv.output):
            return
        epsilon = op.epsilon.value.data if op.epsilon is not None else DEFAULT_EPSILON
        new_weight, new_bias = fold_into_conv(weight, bias, params, epsilon)
        hint = name_hint(op)
        weight_op = new_constant(new_weight, hint + "_weight")
        bias_op = new_constant(new_bias, hint + "_bias")
        folded = graph.ConvOp.create(
            operands=[conv.input, weight_op.output, bias_op.output],
            result_types=[conv.output.type],
            attributes=dict(conv.attributes),
        )
        folded.location = op.location
        folded.output.name_hint = op.output.name_hint
        rewriter.replace(op, [weight_op, bias_op, folded])
        rewriter.erase(conv)


@dataclass(frozen=True)
class GraphFoldBatchNormPass(ModulePass):
    """Folds `graph.batch_norm` after a `graph.conv` into the conv's weight and bias.

    Input:
      Any module with graph ops.
    Output:
      batch_norm(conv(x, W, b?)) becomes conv(x, W', b') when W, b (if present) and the four
      batch-norm parameters are `graph.constant`, the conv result has no other use and the conv
      has no fused activation yet (run this pass before graph-fuse-bias-activation). W' and b'
      are new constants named after the batch norm. A batch_norm that does not follow such a
      conv (e.g. one on a network input, or with computed parameters) stays as it is: it is a
      valid graph op with a reference kernel, lowered later like any other elementwise op.
    Invariants:
      The folded values are computed in float64 and rounded once to the weight's type, so the
      result matches the unfolded pair to float rounding. Integer convs are never folded.
    """

    name = "graph-fold-batch-norm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier([FoldBatchNormIntoConv()])).rewrite_module(op)
