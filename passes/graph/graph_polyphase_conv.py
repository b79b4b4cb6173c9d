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

A conv with few input channels per group (a 3-channel stem) would give phase convs that
contract over too few channels for the matrix engine; there the phases are stacked along the
channels instead (space-to-depth: a reshape, a transpose, a reshape), and one stride-1 conv
reads them with the taps rearranged, zeros where a phase has no tap (`space_to_depth`; a 7x7
stride-2 conv becomes a 4x4 conv on 4 x C channels: 16 x 4 / 49 = 1.31 times the multiply-adds,
in one product of k = 4 C per tap).

Why: on the NPU a strided conv gathers its patch of every s-th pixel inside its kernel, where
the rows and columns it skips still take SRAM and its weight tiles are reloaded per small
block (ResNet-50's stride-2 3x3 convs ran at 0.14 of the roofline, its 3x3 stride-1 ones at
0.4); the slices are DMA-only kernels over 1/s^d of the input each, and stride-1 convs with
the running sum added as a residual are what the conv planner does best.
"""

from __future__ import annotations

import itertools
import math
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


MIN_STACKED_INT8_CHANNELS = 5
"""An i8 conv's phases are stacked only below this many input channels (a 3-channel stem:
953,437 -> 476,667 cycles at 224 x 224 on edge): its int8 transpose moves 1-byte runs, and
resnet_block's 8-channel stride-2 conv on 12 x 12 ran 2,962 cycles slower with it."""


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


@dataclass(frozen=True)
class Stacked:
    """Space-to-depth of one spatial dim: the stride, the per-phase taps as (phase, tap, kernel
    index in the stacked conv), the stacked kernel size and the stacked conv's pads."""

    stride: int
    taps: tuple[tuple[int, int, int], ...]
    kernel: int
    pad_begin: int
    pad_end: int


def stacked_dim(size: int, kernel: int, stride: int, pad: int, out: int) -> Stacked | None:
    """The space-to-depth form of one spatial dim, when every phase has a tap, the size is a
    multiple of the stride, and the stacked conv (stride 1) gives exactly `out` outputs with
    pads >= 0; else None."""
    if size % stride:
        return None
    shifts = {kh: (kh - pad - (kh - pad) % stride) // stride for kh in range(kernel)}
    if {(kh - pad) % stride for kh in range(kernel)} != set(range(stride)):
        return None  # a phase without a tap would stack channels of zeros
    low, high, length = min(shifts.values()), max(shifts.values()), size // stride
    pad_begin, pad_end = -low, out + high - length
    if pad_begin < 0 or pad_end < 0:
        return None
    taps = tuple(((kh - pad) % stride, kh, shifts[kh] - low) for kh in range(kernel))
    return Stacked(stride, taps, high - low + 1, pad_begin, pad_end)


def _space_to_depth_ops(op: graph.ConvOp, dims: list[Stacked]) -> list[Operation]:
    """x [N, C, H, W] -> reshape [N, C, H/sh, sh, W/sw, sw] -> transpose [N, sh, sw, C, H/sh,
    W/sw] -> reshape [N, sh sw C, H/sh, W/sw] (channel (ah sw + aw) C + c holds phase (ah, aw)
    of channel c); then one stride-1 conv whose weight puts tap (kh, kw) of channel c at
    channel (ah sw + aw) C + c, kernel index (th, tw) of the stacked dims."""
    x = shape_of(op.input)
    n, channels, sizes = x[0], x[1], x[2:]
    rank = len(sizes)
    reduced = [size // d.stride for size, d in zip(sizes, dims, strict=True)]
    split = [n, channels, *(v for r, d in zip(reduced, dims, strict=True) for v in (r, d.stride))]
    phases_first = [0, *(3 + 2 * i for i in range(rank)), 1, *(2 + 2 * i for i in range(rank))]
    stacked_channels = channels * math.prod(d.stride for d in dims)
    ops: list[Operation] = [graph.ReshapeOp(op.input, split)]
    ops.append(graph.TransposeOp(ops[-1].results[0], phases_first))
    ops.append(graph.ReshapeOp(ops[-1].results[0], [n, stacked_channels, *reduced]))
    weight = constant_array(op.weight)
    assert weight is not None
    stacked = np.zeros((weight.shape[0], stacked_channels, *(d.kernel for d in dims)), weight.dtype)
    for combo in itertools.product(*(d.taps for d in dims)):
        phase = 0
        for (offset, _, _), d in zip(combo, dims, strict=True):
            phase = phase * d.stride + offset
        target = (slice(None), slice(phase * channels, (phase + 1) * channels), *(t[2] for t in combo))
        stacked[target] = weight[(slice(None), slice(None), *(t[1] for t in combo))]
    hint = op.output.name_hint or "conv"
    for new, name in zip(ops, ("phases_split", "phases_first", "stacked_input"), strict=True):
        new.results[0].name_hint = f"{hint}_{name}"
    stacked_weight = new_constant(stacked, f"{hint}_stacked_weight")
    attributes = {k: v for k, v in op.attributes.items() if k not in ("strides", "pads")}
    pads = [d.pad_begin for d in dims] + [d.pad_end for d in dims]
    if any(pads):
        attributes["pads"] = DenseArrayBase.from_list(i64, pads)
    operands = [ops[-1].results[0], stacked_weight.output, *([op.bias] if op.bias is not None else [])]
    conv = graph.ConvOp.create(operands=operands, result_types=[op.output.type], attributes=attributes)
    conv.output.name_hint = op.output.name_hint
    return [*ops, stacked_weight, conv]


def space_to_depth(op: graph.ConvOp) -> list[Stacked] | None:
    """The stacked form of every spatial dim of a strided, undilated, ungrouped conv with
    constant weights (`stacked_dim`), else None."""
    strides, pads, dilations = op.window()
    if op.groups() != 1 or any(d != 1 for d in dilations) or all(s == 1 for s in strides):
        return None
    if constant_array(op.weight) is None:
        return None
    x, out, kernel = shape_of(op.input), shape_of(op.output), shape_of(op.weight)[2:]
    rank = len(kernel)
    dims = [stacked_dim(x[2 + i], kernel[i], strides[i], pads[i], out[2 + i]) for i in range(rank)]
    return None if any(d is None for d in dims) else [d for d in dims if d is not None]


class DecomposeStridedConv(RewritePattern):
    """conv_s(x, W, b) -> relu?(conv_1(x_0, W_0, b) + conv_1(x_1, W_1) + ...) (module doc)."""

    def __init__(self, min_channels: int):
        super().__init__()
        self.min_channels = min_channels

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ConvOp, rewriter: PatternRewriter) -> None:
        few = MIN_STACKED_INT8_CHANNELS if op.is_integer() else self.min_channels
        if shape_of(op.weight)[1] < few and (dims := space_to_depth(op)) is not None:
            # exact for an i8 conv too: its stacked padding is the original's, the taps a
            # phase lacks are zero weights, and `input_zero` carries over
            new_ops = _space_to_depth_ops(op, dims)
            for new in new_ops:
                new.location = op.location
            rewriter.replace(op, new_ops)
            return
        if not decomposable(op, self.min_channels) or op.is_integer():
            return  # an i8 conv's phases would sum i32 partial products through DRAM, unfused
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
      Every f32 `graph.conv` that is strided in some dim, has no dilation, constant weights, no
      activation or relu, and at least `min-channels` input channels per group becomes, per
      phase that reads input (module docstring), a `graph.slice {steps = strides}` of its input
      and a stride-1 `graph.conv` with that phase's taps of the weights (a new constant); the
      phase convs are summed with `graph.add` in phase order, the first one carries the bias, a
      relu follows the sum. All at the conv's location; the last op's result keeps the conv's
      name. A strided conv with fewer input channels (f32; i8 below `MIN_STACKED_INT8_CHANNELS`;
      group 1, undilated, constant weights, sizes multiples of the strides, a tap in every
      phase, `space_to_depth`) becomes reshape, transpose, reshape (its phases stacked along the
      channels, `<conv>_stacked_input`) and one stride-1 conv with the rearranged weight
      (`<conv>_stacked_weight`), bias, activation and input zero point. Other convs (i8 ones
      with many channels: their phases would sum i32 partial products) are unchanged.
    Invariants:
      Every weight tap is used by exactly one phase conv: the same multiply-adds, summed in
      another order (results equal up to float rounding; a conv with one phase, e.g. 1x1
      stride 2, is bit for bit the same). The stacked conv adds products with zero weights
      only.
    """

    name = "graph-polyphase-conv"
    min_channels: int = MIN_CHANNELS
    """Input channels per group below which a strided conv is kept (`MIN_CHANNELS`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = DecomposeStridedConv(self.min_channels)
        PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
