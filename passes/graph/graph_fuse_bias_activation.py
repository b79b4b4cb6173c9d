"""`graph-fuse-bias-activation`: fold bias adds and activations into matmul and conv."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import LocationAttr, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from aitc.analysis.graph_matching import (
    constant_array,
    name_hint,
    new_constant,
    other_operand,
    shape_of,
    single_use,
)
from aitc.dialects import graph

Producer = graph.MatMulOp | graph.ConvOp


def _bias_axis(op: Producer) -> int:
    """The output axis that a bias runs along: the last for matmul, channels for conv."""
    return -1 if isinstance(op, graph.MatMulOp) else 1


def _is_per_channel(bias: SSAValue, op: Producer) -> bool:
    """`bias` broadcasts against `op`'s output as one value per channel (shape [1, C, 1, 1] or
    [C, 1, 1] for conv, [N] or [1, N] for matmul), without widening the output."""
    out, shape = shape_of(op.output), shape_of(bias)
    if not out or len(shape) > len(out):
        return False
    padded = (1,) * (len(out) - len(shape)) + shape
    axis = _bias_axis(op) % len(out)
    return all(d == (out[axis] if i == axis else 1) for i, d in enumerate(padded))


def _find_producer(add: graph.AddOp) -> tuple[Producer, SSAValue] | None:
    """The matmul/conv operand of `add` that a bias could join, and the bias."""
    for value in (add.lhs, add.rhs):
        owner = value.owner
        if not isinstance(owner, graph.MatMulOp | graph.ConvOp) or owner.activation is not None:
            continue
        bias = other_operand(add, value)
        if single_use(value) and add.output.type == value.type and _is_per_channel(bias, owner):
            return owner, bias
    return None


def _combined_bias(op: Producer, bias: SSAValue, hint: str) -> tuple[list[Operation], SSAValue]:
    """Ops computing the 1-D bias that replaces `op`'s bias plus `bias`, and its value."""
    channels = shape_of(op.output)[_bias_axis(op)]
    new_bias, existing = constant_array(bias), op.bias
    old_bias = None if existing is None else constant_array(existing)
    if new_bias is not None and (existing is None or old_bias is not None):
        total = new_bias.reshape(channels) if old_bias is None else old_bias + new_bias.reshape(channels)
        constant = new_constant(np.asarray(total, dtype=new_bias.dtype), hint)
        return [constant], constant.output
    ops: list[Operation] = []
    if shape_of(bias) != (channels,):
        ops.append(graph.ReshapeOp(bias, [channels]))
        bias = ops[-1].results[0]
    if existing is not None:
        ops.append(graph.AddOp(existing, bias))
        bias = ops[-1].results[0]
    return ops, bias


def rebuild(op: Producer, bias: SSAValue | None, activation: str | None, location: LocationAttr) -> Producer:
    """A copy of matmul/conv `op` with `bias` and `activation` (None keeps no activation)."""
    attributes = dict(op.attributes)
    if activation is not None:
        attributes["activation"] = StringAttr(activation)
    operands = [op.operands[0], op.operands[1], *([bias] if bias is not None else [])]
    new = type(op).create(operands=operands, result_types=[op.output.type], attributes=attributes)
    new.location = location
    return new


class FuseBiasAdd(RewritePattern):
    """add(matmul(a, b), bias[N]) -> matmul(a, b, bias); add(conv(x, w), bias[C,1,1]) ->
    conv(x, w, bias). An existing bias is summed with the new one."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.AddOp, rewriter: PatternRewriter) -> None:
        found = _find_producer(op)
        if found is None:
            return
        producer, bias = found
        hint = name_hint(op) + "_bias"
        bias_ops, bias_value = _combined_bias(producer, bias, hint)
        for bias_op in bias_ops:
            bias_op.location = op.location
            bias_op.results[0].name_hint = hint
        fused = rebuild(producer, bias_value, None, op.location)
        fused.output.name_hint = op.output.name_hint
        rewriter.replace(op, [*bias_ops, fused])
        rewriter.erase(producer)


def activation_name(op: Operation) -> str | None:
    """The `activation` value that applies `op`, if it is one a matmul/conv can fuse."""
    simple = {graph.ReluOp: "relu", graph.SigmoidOp: "sigmoid", graph.TanhOp: "tanh"}
    if type(op) in simple:
        return simple[type(op)]
    if isinstance(op, graph.GeluOp):
        tanh = op.approximate is not None and op.approximate.data == "tanh"
        return "gelu_tanh" if tanh else "gelu"
    if isinstance(op, graph.ClipOp) and "gamma" not in op.attributes:
        low = op.param("alpha") if "alpha" in op.attributes else None
        high = op.param("beta") if "beta" in op.attributes else None
        return {(0.0, 6.0): "relu6", (0.0, None): "relu"}.get((low, high))
    return None


class FuseActivation(RewritePattern):
    """relu/sigmoid/tanh/gelu/clip(0, 6) of a single-use matmul or conv result -> the matmul
    or conv with `activation` set."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: graph.ReluOp | graph.SigmoidOp | graph.TanhOp | graph.GeluOp | graph.ClipOp,
        rewriter: PatternRewriter,
    ) -> None:
        producer = op.input.owner
        if not isinstance(producer, graph.MatMulOp | graph.ConvOp) or producer.activation is not None:
            return
        activation = activation_name(op)
        if activation is None or not single_use(op.input):
            return
        fused = rebuild(producer, producer.bias, activation, op.location)
        fused.output.name_hint = op.output.name_hint
        rewriter.replace(op, fused)
        rewriter.erase(producer)


@dataclass(frozen=True)
class GraphFuseBiasActivationPass(ModulePass):
    """Fuses per-channel bias adds and then activations into `graph.matmul` and `graph.conv`.

    Input:
      Any module with graph ops.
    Output:
      `add(matmul, b)` with b of shape [N] or [1, .., N] (N = last output dim) becomes a matmul
      with a 1-D bias; `add(conv, b)` with b of shape [C, 1, 1] or [1, C, 1, 1] becomes a conv
      with a bias (constants are reshaped and summed with an existing constant bias; other
      values go through graph.reshape / graph.add). relu, sigmoid, tanh, gelu (exact -> "gelu",
      tanh -> "gelu_tanh"), clip(0, 6) -> "relu6" and clip(0, inf) -> "relu" after a matmul or
      conv become its `activation`. The fused op keeps the location of the op it replaces
      (the add or the activation).
    Invariants:
      Only a matmul/conv result with a single use is fused, and never one that already has an
      activation (a bias cannot come after it). Results are unchanged up to float rounding
      of a summed bias.
    """

    name = "graph-fuse-bias-activation"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns: list[RewritePattern] = [FuseBiasAdd(), FuseActivation()]
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(op)
