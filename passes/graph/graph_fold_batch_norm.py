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

from aitc.analysis.graph_matching import constant_array, name_hint, new_constant, shape_of, single_use
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


def _per_channel(array: np.ndarray, rank: int) -> np.ndarray:
    """A [C] array shaped [C, 1, ...] to broadcast along axis 1 of a rank-`rank` tensor."""
    return array.reshape(-1, *([1] * (rank - 2)))


class FoldBatchNormIntoDequantize(RewritePattern):
    """batch_norm(dequantize(acc, s, z) [+ b]) with constant s, b and batch-norm params ->
    dequantize(acc, s * f, z) + (b - mean) * f + beta, f = scale / sqrt(var + eps) per
    channel: an int8 conv's (or matmul's) scaling back to f32 absorbs the batch norm that
    follows it, as graph-quantized-matmul leaves a QDQ model whose batch norms were not folded
    before quantization."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BatchNormOp, rewriter: PatternRewriter) -> None:
        params = _batch_norm_params(op)
        add = op.input.owner if isinstance(op.input.owner, graph.AddOp) else None
        scaled = add.lhs if add is not None else op.input
        dequantize = scaled.owner
        if params is None or not isinstance(dequantize, graph.DequantizeOp) or not single_use(scaled):
            return
        if add is not None and not single_use(add.output):
            return
        rank = len(shape_of(op.input))
        bias = constant_array(add.rhs) if add is not None else np.zeros((), np.float32)
        scale = constant_array(dequantize.scale)
        if scale is None or bias is None or bias.dtype != np.float32:
            return
        epsilon = op.epsilon.value.data if op.epsilon is not None else DEFAULT_EPSILON
        gamma, beta, mean, var = params
        factor = _per_channel(gamma / np.sqrt(var + epsilon), rank)
        try:
            new_scale = (scale.astype(np.float64) * factor).astype(np.float32)
            new_bias = (bias.astype(np.float64) - _per_channel(mean, rank)) * factor + _per_channel(
                beta, rank
            )
        except ValueError:  # a scale or bias that does not broadcast per channel
            return
        if new_scale.ndim > rank or new_bias.ndim > rank:
            return
        hint = name_hint(op)
        scale_op = new_constant(new_scale, hint + "_scale", op.location)
        bias_op = new_constant(new_bias.astype(np.float32), hint + "_bias", op.location)
        rescaled = graph.DequantizeOp(dequantize.input, scale_op.output, dequantize.zero_point)
        shifted = graph.AddOp(rescaled.output, bias_op.output)
        rescaled.location, shifted.location = dequantize.location, op.location
        rescaled.output.name_hint, shifted.output.name_hint = f"{hint}_scaled", op.output.name_hint
        rewriter.replace(op, [scale_op, rescaled, bias_op, shifted], [shifted.output])
        if add is not None:
            rewriter.erase(add)
        rewriter.erase(dequantize)


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
      batch_norm(dequantize(acc, s, z) [+ b]) with constant s, b and parameters (an int8
      conv's or matmul's result scaled back, graph-quantized-matmul) becomes
      dequantize(acc, s * f, z) + ((b - mean) * f + beta), f = scale / sqrt(var + eps) per
      channel, when the dequantize and add have no other use.
    Invariants:
      The folded values are computed in float64 and rounded once to the weight's type, so the
      result matches the unfolded pair to float rounding. Integer convs are never folded.
    """

    name = "graph-fold-batch-norm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = GreedyRewritePatternApplier([FoldBatchNormIntoConv(), FoldBatchNormIntoDequantize()])
        PatternRewriteWalker(patterns).rewrite_module(op)
