"""`graph-polyphase-conv`: a strided convolution as the sum of stride-1 convolutions over the
phases of its input (polyphase decomposition).

Along a dim of stride s, output o reads input s*o + kh - p (tap kh, begin pad p). Writing
kh - p = s*t + a with a in [0, s) splits the taps by phase a: the taps of phase a read
x_a[o + t], where x_a[j] = x[s*j + a] is every s-th element from a. So

    conv_s(x, W) = sum over phases a of conv_1(x_a, W[taps of a])

with x_a a strided `graph.slice` (its start and length trimmed to what the outputs read) and
each phase conv stride 1, padded where t < 0 or the phase image ends early; over several dims
the phases are the combinations of the per-dim phases. Every tap lands in exactly one phase, so
the phase convs do the strided conv's multiply-adds and no more. A phase without taps (a 1x1
conv of stride 2 reads only phase 0) is left out: that conv becomes one slice and one conv.

Why: on the NPU a strided conv gathers its patch of every s-th pixel inside its kernel, where
the rows and columns it skips still take SRAM and its weight tiles are reloaded per small
block (ResNet-50's stride-2 3x3 convs ran at 0.14 of the roofline, its 3x3 stride-1 ones at
0.4); the slices are DMA-only kernels over 1/s^d of the input each, and stride-1 convs with
the running sum added as a residual are what the conv planner does best.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, TensorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from aitc.analysis.graph_matching import constant_array, new_constant, shape_of
from aitc.dialects import graph

MIN_CHANNELS = 16
"""Input channels per group below which a strided conv is kept: each phase conv contracts over
C/g channels per tap, which leaves most of the matrix engine's rows idle (a 3-channel stem),
while the strided conv's patch folds all its taps into one contraction."""


@dataclass(frozen=True)
class Phase:
    """One phase of one spatial dim: offset `a`, its taps (kernel indices, in order), the first
    and count of phase-image elements read, and the stride-1 conv's begin and end pads."""

    offset: int
    taps: tuple[int, ...]
    first: int
    count: int
    pad_begin: int
    pad_end: int


def dim_phases(size: int, kernel: int, stride: int, pad: int, out: int) -> list[Phase]:
    """The phases of one spatial dim (input `size`, `kernel` taps, `stride`, begin `pad`,
    `out` outputs) that read at least one input element."""
    phases = []
    for offset in range(stride):
        taps = tuple(kh for kh in range(kernel) if (kh - pad) % stride == offset)
        if not taps:
            continue
        shift_first, shift_last = (taps[0] - pad - offset) // stride, (taps[-1] - pad - offset) // stride
        length = -(-(size - offset) // stride) if size > offset else 0
        first, end = max(0, shift_first), min(length, out + shift_last)
        if end <= first:
            continue  # every tap of this phase reads padding only: it adds nothing
        pad_begin, pad_end = max(0, -shift_first), max(0, out + shift_last - length)
        phases.append(Phase(offset, taps, first, end - first, pad_begin, pad_end))
    return phases


def decomposable(op: graph.ConvOp, min_channels: int) -> bool:
    """Strided in some dim, no dilation, constant weights, no activation or relu (applied once
    after the sum), enough channels per group (`MIN_CHANNELS`)."""
    strides, _, dilations = op.window()
    activation = op.activation.data if op.activation is not None else None
    return (
        any(s > 1 for s in strides)
        and all(d == 1 for d in dilations)
        and activation in (None, "relu")
        and shape_of(op.weight)[1] >= min_channels
        and constant_array(op.weight) is not None
    )


def _phase_ops(op: graph.ConvOp, combo: tuple[Phase, ...], index: int) -> tuple[list[Operation], SSAValue]:
    """The slice of one phase (a combination of per-dim phases) and its stride-1 conv (the
    first phase carries the bias)."""
    strides = op.window()[0]
    x, input_type = shape_of(op.input), op.input.type
    assert isinstance(input_type, TensorType)
    starts = [0, 0, *(s * p.first + p.offset for s, p in zip(strides, combo, strict=True))]
    sliced = graph.SliceOp.create(
        operands=[op.input],
        result_types=[TensorType(input_type.get_element_type(), [*x[:2], *(p.count for p in combo)])],
        attributes={
            "starts": DenseArrayBase.from_list(i64, starts),
            "steps": DenseArrayBase.from_list(i64, [1, 1, *strides]),
        },
    )
    hint = op.output.name_hint or "conv"
    sliced.output.name_hint = f"{hint}_phase{index}_input"
    weight = constant_array(op.weight)
    assert weight is not None
    taps = np.ix_(range(weight.shape[0]), range(weight.shape[1]), *(p.taps for p in combo))
    phase_weight = new_constant(np.ascontiguousarray(weight[taps]), f"{hint}_phase{index}_weight")
    attributes = {k: v for k, v in op.attributes.items() if k not in ("strides", "pads", "activation")}
    pads = [p.pad_begin for p in combo] + [p.pad_end for p in combo]
    if any(pads):
        attributes["pads"] = DenseArrayBase.from_list(i64, pads)
    bias = [op.bias] if index == 0 and op.bias is not None else []
    conv = graph.ConvOp.create(
        operands=[sliced.output, phase_weight.output, *bias],
        result_types=[op.output.type],
        attributes=attributes,
    )
    conv.output.name_hint = f"{hint}_phase{index}"
    return [sliced, phase_weight, conv], conv.output


class DecomposeStridedConv(RewritePattern):
    """conv_s(x, W, b) -> relu?(conv_1(x_0, W_0, b) + conv_1(x_1, W_1) + ...) (module doc)."""

    def __init__(self, min_channels: int):
        super().__init__()
        self.min_channels = min_channels

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ConvOp, rewriter: PatternRewriter) -> None:
        if not decomposable(op, self.min_channels):
            return
        x, out = shape_of(op.input), shape_of(op.output)
        kernel, (strides, pads, _) = shape_of(op.weight)[2:], op.window()
        rank = len(kernel)
        per_dim = [dim_phases(x[2 + i], kernel[i], strides[i], pads[i], out[2 + i]) for i in range(rank)]
        new_ops: list[Operation] = []
        total: SSAValue | None = None
        for index, combo in enumerate(itertools.product(*per_dim)):
            ops, value = _phase_ops(op, combo, index)
            new_ops += ops
            if total is not None:
                new_ops.append(graph.AddOp(value, total))
                value = new_ops[-1].results[0]
                value.name_hint = f"{op.output.name_hint or 'conv'}_sum{index}"
            total = value
        if op.activation is not None:
            new_ops.append(graph.ReluOp(new_ops[-1].results[0]))
        for new in new_ops:
            new.location = op.location
        new_ops[-1].results[0].name_hint = op.output.name_hint
        rewriter.replace(op, new_ops)


@dataclass(frozen=True)
class GraphPolyphaseConvPass(ModulePass):
    """Rewrites strided convolutions as sums of stride-1 convolutions over their input's phases.

    Input:
      Any module with graph ops.
    Output:
      Every `graph.conv` that is strided in some dim, has no dilation, constant weights, no
      activation or relu, and at least `min-channels` input channels per group becomes, per
      phase that reads input (module docstring), a `graph.slice {steps = strides}` of its input
      and a stride-1 `graph.conv` with that phase's taps of the weights (a new constant); the
      phase convs are summed with `graph.add` in phase order, the first one carries the bias,
      a relu follows the sum. All at the conv's location; the last op's result keeps the
      conv's name. Other convs are unchanged.
    Invariants:
      Every weight tap is used by exactly one phase conv: the same multiply-adds, summed in
      another order (results equal up to float rounding; a conv with one phase, e.g. 1x1
      stride 2, is bit for bit the same).
    """

    name = "graph-polyphase-conv"
    min_channels: int = MIN_CHANNELS
    """Input channels per group below which a strided conv is kept (`MIN_CHANNELS`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = DecomposeStridedConv(self.min_channels)
        PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
