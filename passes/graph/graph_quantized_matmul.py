"""`graph-quantized-matmul`: a matmul of dequantized int8 operands computes on the int8 values.

A QDQ model (as `aitc quantize` or onnxruntime's `quantize_static` write it) multiplies
dequantized tensors in float:

    %a = graph.dequantize %aq, %sa, %za        (an int8 activation, one scale and zero point)
    %w = graph.dequantize %wq, %sw, %zw        (a constant int8 weight [K, N], per tensor or per column)
    %y = graph.matmul %a, %w                   (f32)

Since (aq - za) * sa @ (wq - zw) * sw = sa * sw[n] * (aq @ wq' - za * colsum(wq')[n]) with
wq' = wq - zw, the product is computed exactly on the int8 values and scaled once:

    %acc = graph.matmul %aq, %wq'              (i8 x i8 -> i32 on the matrix engine)
    %y   = graph.dequantize %acc, sa * sw, 0   (f32)
    %y   = graph.sub %y, za * colsum(wq') * sa * sw      (only when za != 0)

The int8 activation stays in DRAM as int8 (4x fewer bytes than f32) and the weight as int8.

A conv of the same operands (weight [C_out, C/g, k...], scale per tensor or per output channel)
becomes an i8 conv that subtracts the activation's zero point from its input (graph.conv's
`input_zero`): the float conv pads with 0.0, which is the zero point in the integer domain, so
a correction by colsum would be wrong at the borders, and `input_zero` keeps it exact:

    %acc = graph.conv %aq, %wq' {input_zero = za}    (i8 x i8 -> i32: sum of (aq - za) * wq')
    %y   = graph.dequantize %acc, sa * sw, 0          (f32, sw per output channel [C_out, 1, 1])
    %y   = graph.add %y, bias                         (the conv's bias, when it has one)

A bias that dequantizes int32 by sa * sw itself (as QDQ quantizers write a conv's bias) is
added to the sum instead, in i32 (`%acc = graph.conv %aq, %wq', %bq`): no f32 add.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, i32, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from aitc.analysis.graph_matching import constant_array, name_hint, new_constant, producer, shape_of
from aitc.dialects import graph

INT8 = (-128, 127)


def _activation(value: SSAValue) -> tuple[graph.DequantizeOp, float, int] | None:
    """The dequantize that makes `value`, with its one scale and integer zero point, if it
    dequantizes int8."""
    dequantize = producer(value, graph.DequantizeOp)
    if dequantize is None or str(graph.tensor_of(dequantize.input).get_element_type()) != "i8":
        return None
    scale, zero = constant_array(dequantize.scale), constant_array(dequantize.zero_point)
    if scale is None or zero is None or np.unique(scale).size != 1 or np.unique(zero).size != 1:
        return None
    return dequantize, float(scale.flat[0]), int(zero.flat[0])


def _weight(op: graph.MatMulOp) -> tuple[graph.DequantizeOp, np.ndarray, np.ndarray] | None:
    """The rhs's dequantize, the constant weight minus its zero point as int8 [K, N], and the
    scale per column [N] (float64), if the weight is one and its scale and zero point are per
    tensor or per column."""
    dequantize = producer(op.rhs, graph.DequantizeOp)
    if dequantize is None or len(shape_of(op.rhs)) != 2:
        return None
    weight = constant_array(dequantize.input)
    scale, zero = constant_array(dequantize.scale), constant_array(dequantize.zero_point)
    if weight is None or scale is None or zero is None or weight.dtype not in (np.int8, np.uint8):
        return None
    k, n = weight.shape
    scales = np.broadcast_to(scale, (k, n)).astype(np.float64)
    zeros = np.broadcast_to(zero, (k, n)).astype(np.int64)
    if np.any(scales != scales[:1]) or np.any(zeros != zeros[:1]):
        return None  # a scale per row (input channel) does not factor out of the sum
    centred = weight.astype(np.int64) - zeros
    if centred.min(initial=0) < INT8[0] or centred.max(initial=0) > INT8[1]:
        return None
    return dequantize, centred.astype(np.int8), scales[0]


def _bias_add(op: graph.MatMulOp) -> tuple[graph.AddOp, np.ndarray] | None:
    """The add of a constant f32 row (one value per column) that is the product's only use,
    and the row."""
    if not op.output.has_one_use():
        return None
    add = next(iter(op.output.uses)).operation
    if not isinstance(add, graph.AddOp) or shape_of(add.output) != shape_of(op.output):
        return None
    other = add.rhs if add.lhs is op.output else add.lhs
    row = constant_array(other)
    columns = shape_of(op.output)[-1]
    if row is None or row.dtype != np.float32 or row.size != columns or row.shape[-1:] != (columns,):
        return None
    return add, row


class QuantizedMatmul(RewritePattern):
    """matmul(dequantize(int8 a), dequantize(constant int8 W)) -> dequantize(i8 matmul)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MatMulOp, rewriter: PatternRewriter) -> None:
        if op.bias is not None or op.activation is not None:
            return
        activation, weight = _activation(op.lhs), _weight(op)
        if activation is None or weight is None:
            return
        (lhs, a_scale, a_zero), (rhs, centred, w_scale) = activation, weight
        hint = name_hint(op)
        scale = (a_scale * w_scale).astype(np.float32)
        per_column = np.unique(scale).size > 1
        new: list[Operation] = [
            weights := new_constant(centred, f"{hint}_int8", op.location),
            product := graph.MatMulOp(lhs.input, weights.output),
            scales := new_constant(
                scale if per_column else scale[:1].reshape(()), f"{hint}_scale", op.location
            ),
            zero := new_constant(np.zeros(1, np.int32), f"{hint}_zero", op.location),
            result := graph.DequantizeOp(product.output, scales.output, zero.output),
        ]
        correction = a_zero * centred.astype(np.int64).sum(axis=0) * (a_scale * w_scale)
        bias = _bias_add(op)
        replaced: Operation = op
        if a_zero and bias is not None:  # the correction joins the bias: one vector op less
            replaced, bias_value = bias
            folded = (bias_value.astype(np.float64) - correction.reshape(bias_value.shape)).astype(np.float32)
            offsets = new_constant(folded, f"{hint}_bias", replaced.location)
            new += [offsets, result := graph.AddOp(result.output, offsets.output)]
        elif a_zero:
            offsets = new_constant(correction.astype(np.float32), f"{hint}_zero_point_sums", op.location)
            new += [offsets, result := graph.SubOp(result.output, offsets.output)]
        for made in new:
            if not isinstance(made, graph.ConstantOp):
                made.location = op.location
        result.location = replaced.location
        product.output.name_hint, new[4].results[0].name_hint = f"{hint}_acc", f"{hint}_scaled"
        result.results[0].name_hint = replaced.results[0].name_hint
        rewriter.insert(new, InsertPoint.before(op))
        rewriter.replace(replaced, [], [result.results[0]])
        if replaced is not op:
            rewriter.erase(op)
        for dequantize in (lhs, rhs):
            if not dequantize.output.uses:
                rewriter.erase(dequantize)


def _conv_weight(op: graph.ConvOp) -> tuple[graph.DequantizeOp, np.ndarray, np.ndarray] | None:
    """The weight's dequantize, the constant weight minus its zero point as int8 [C_out, C/g,
    k...], and the scale per output channel [C_out] (float64), if the weight is one and its
    scale and zero point are per tensor or per output channel (axis 0)."""
    dequantize = producer(op.weight, graph.DequantizeOp)
    if dequantize is None:
        return None
    weight = constant_array(dequantize.input)
    scale, zero = constant_array(dequantize.scale), constant_array(dequantize.zero_point)
    if weight is None or scale is None or zero is None or weight.dtype not in (np.int8, np.uint8):
        return None
    rows = weight.shape[0]
    scales = np.broadcast_to(scale, weight.shape).astype(np.float64).reshape(rows, -1)
    zeros = np.broadcast_to(zero, weight.shape).astype(np.int64).reshape(rows, -1)
    if np.any(scales != scales[:, :1]) or np.any(zeros != zeros[:, :1]):
        return None  # a scale per input channel or tap does not factor out of the sum
    centred = weight.astype(np.int64) - zeros.reshape(weight.shape)
    if centred.min(initial=0) < INT8[0] or centred.max(initial=0) > INT8[1]:
        return None
    return dequantize, centred.astype(np.int8), scales[:, 0]


def _bias_dequantize(
    op: graph.ConvOp,
) -> tuple[graph.DequantizeOp, np.ndarray, np.ndarray, np.ndarray] | None:
    """The dequantize of a constant that makes the conv's bias, with its integer values, scale
    and zero point, else None."""
    dequantize = producer(op.bias, graph.DequantizeOp) if op.bias is not None else None
    if dequantize is None:
        return None
    integer, scale, zero = (
        constant_array(v) for v in (dequantize.input, dequantize.scale, dequantize.zero_point)
    )
    if integer is None or scale is None or zero is None:
        return None
    return dequantize, integer, scale, zero


def _conv_bias_known(op: graph.ConvOp) -> bool:
    """Whether the conv has no bias, a constant one or the dequantize of a constant."""
    return op.bias is None or constant_array(op.bias) is not None or _bias_dequantize(op) is not None


def _conv_bias(op: graph.ConvOp) -> np.ndarray | None:
    """The conv's bias as f32 [C_out] when it is a constant or dequantizes one (as QDQ models
    quantize it to int32), computed as graph.dequantize does; None when there is none; a bias
    computed at run time is not handled (the caller leaves the conv)."""
    if op.bias is None:
        return None
    value = constant_array(op.bias)
    if value is not None:
        return value.astype(np.float32)
    found = _bias_dequantize(op)
    assert found is not None, "checked by _conv_bias_known"
    _, integer, scale, zero = found
    difference = (integer.astype(np.int64) - zero.astype(np.int64)).astype(np.float32)
    return (difference * scale.astype(np.float32)).astype(np.float32)


def _integer_bias(op: graph.ConvOp, scale: np.ndarray) -> np.ndarray | None:
    """The conv's bias as the int32 it dequantizes, [C_out], when that dequantize's scale is
    the product's (`scale`, sa * sw per output channel, as QDQ models quantize a bias) and its
    zero point 0: then it adds to the exact sum in i32, before the one scaling."""
    found = _bias_dequantize(op)
    if found is None:
        return None
    _, integer, bias_scale, zero = found
    columns = scale.shape[0]
    if (
        integer.dtype != np.int32
        or np.any(zero)
        or integer.size != columns
        or bias_scale.size not in (1, columns)
    ):
        return None
    if not np.array_equal(np.broadcast_to(bias_scale.reshape(-1), (columns,)), scale):
        return None
    return integer.reshape(columns)


class QuantizedConv(RewritePattern):
    """conv(dequantize(int8 x), dequantize(constant int8 W)) -> dequantize(i8 conv) + bias.

    The int8 conv subtracts the activation's zero point from its input (`input_zero`), so the
    padding, which is 0 in the float domain, is the zero point in the integer one: the
    product is exact and needs no correction per position."""

    @staticmethod
    def _operands(op: graph.ConvOp):
        """(the activation's dequantize, scale, zero point), (the weight's dequantize, centred
        int8 weight, scale per output channel) when `op` qualifies (the class docstring), else
        None."""
        if op.activation is not None or op.is_channels_last() or op.is_integer():
            return None
        if shape_of(op.weight)[1] == 1 and op.groups() > 1:
            return None  # depthwise: the vector engine's f32 products beat a matmul per channel
        activation, weight = _activation(op.input), _conv_weight(op)
        if activation is None or weight is None or not _conv_bias_known(op):
            return None
        return activation, weight

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ConvOp, rewriter: PatternRewriter) -> None:
        matched = self._operands(op)
        if matched is None:
            return
        (lhs, a_scale, a_zero), (rhs, centred, w_scale) = matched
        hint, rank = name_hint(op), len(shape_of(op.output))
        attributes = {
            k: v for k, v in op.attributes.items() if k in ("strides", "pads", "dilations", "group")
        }
        if a_zero:
            attributes["input_zero"] = IntegerAttr(a_zero, i64)
        scale = (a_scale * w_scale).astype(np.float32)
        per_channel = [-1] + [1] * (rank - 2)
        weights = new_constant(centred, f"{hint}_int8", op.location)
        integer_bias = _integer_bias(op, np.broadcast_to(scale, (centred.shape[0],)))
        new: list[Operation] = [weights]
        operands = [lhs.input, weights.output]
        if integer_bias is not None:  # added to the exact sum: no f32 add after the scaling
            new.append(biases := new_constant(integer_bias, f"{hint}_bias_int32", op.location))
            operands.append(biases.output)
        product = graph.ConvOp.create(
            operands=operands, result_types=[TensorType(i32, shape_of(op.output))], attributes=attributes
        )
        new += [
            product,
            scales := new_constant(
                scale.reshape(per_channel) if np.unique(scale).size > 1 else scale[:1].reshape(()),
                f"{hint}_scale",
                op.location,
            ),
            zero := new_constant(np.zeros(1, np.int32), f"{hint}_zero", op.location),
            result := graph.DequantizeOp(product.output, scales.output, zero.output),
        ]
        bias, bias_dequantize = _conv_bias(op), op.bias and producer(op.bias, graph.DequantizeOp)
        if bias is not None and integer_bias is None:
            offsets = new_constant(bias.reshape(per_channel), f"{hint}_bias", op.location)
            new += [offsets, result := graph.AddOp(result.output, offsets.output)]
        for made in new:
            if not isinstance(made, graph.ConstantOp):
                made.location = op.location
        product.output.name_hint = f"{hint}_acc"
        result.results[0].name_hint = op.output.name_hint
        rewriter.insert(new, InsertPoint.before(op))
        rewriter.replace(op, [], [result.results[0]])
        for dequantize in (lhs, rhs, bias_dequantize):
            if dequantize is not None and not dequantize.output.uses:
                rewriter.erase(dequantize)


def _per_channel_or_scalar(value: SSAValue, rank: int) -> bool:
    """Whether constant `value` is one value, or one per channel (axis 1) of a rank-`rank`
    tensor: what commutes with a max over each channel's windows."""
    array = constant_array(value)
    if array is None or array.ndim > rank:
        return False
    shape = (1,) * (rank - array.ndim) + array.shape
    return all(d == 1 for i, d in enumerate(shape) if i != 1)


class QuantizedMaxPool(RewritePattern):
    """quantize(max_pool(x)) -> max_pool(quantize(x)), and max_pool(dequantize(q)) ->
    dequantize(max_pool(q)): quantizing (a positive scale, rounding, saturation) and
    dequantizing never decrease, so they commute with a max, and the max pool computes on
    int8 (1 byte an element; its padding is -128, which never wins over a value of the
    window, as -inf never does in f32)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MaxPoolOp, rewriter: PatternRewriter) -> None:
        if op.is_channels_last() or str(graph.tensor_of(op.input).get_element_type()) != "f32":
            return
        rank = len(shape_of(op.input))
        users = [use.operation for use in op.output.uses]
        quantize = users[0] if len(users) == 1 and isinstance(users[0], graph.QuantizeOp) else None
        dequantize = producer(op.input, graph.DequantizeOp)
        if quantize is not None and str(graph.tensor_of(quantize.output).get_element_type()) == "i8":
            if not all(_per_channel_or_scalar(v, rank) for v in (quantize.scale, quantize.zero_point)):
                return
            early = graph.QuantizeOp(op.input, quantize.scale, quantize.zero_point)
            pooled = self._pool(op, early.output)
            early.location, early.output.name_hint = quantize.location, f"{name_hint(op)}_input_int8"
            rewriter.insert([early, pooled], InsertPoint.before(quantize))  # after its scale's def
            pooled.output.name_hint = quantize.output.name_hint
            rewriter.replace(quantize, [], [pooled.output])
            rewriter.erase(op)
            return
        if dequantize is None or str(graph.tensor_of(dequantize.input).get_element_type()) != "i8":
            return
        if not all(_per_channel_or_scalar(v, rank) for v in (dequantize.scale, dequantize.zero_point)):
            return
        pooled = self._pool(op, dequantize.input)
        late = graph.DequantizeOp(pooled.output, dequantize.scale, dequantize.zero_point)
        late.location, late.output.name_hint = op.location, op.output.name_hint
        pooled.output.name_hint = f"{name_hint(op)}_int8"
        rewriter.replace(op, [pooled, late], [late.output])
        if not dequantize.output.uses:
            rewriter.erase(dequantize)

    @staticmethod
    def _pool(op: graph.MaxPoolOp, value: SSAValue) -> graph.MaxPoolOp:
        """`op`'s max pool of int8 `value`."""
        result = TensorType(graph.tensor_of(value).get_element_type(), shape_of(op.output))
        pooled = graph.MaxPoolOp.create(
            operands=[value], result_types=[result], attributes=dict(op.attributes)
        )
        pooled.location = op.location
        return pooled


def _signed_zero(zero: np.ndarray, hint: str, location) -> graph.ConstantOp:
    """A uint8 zero point moved into int8 (-128), as a constant."""
    return new_constant((zero.astype(np.int16) - 128).astype(np.int8), f"{hint}_zero_int8", location)


class SignedActivations(RewritePattern):
    """A uint8 quantize whose every use is a dequantize -> an int8 one with the zero point
    moved by -128, and int8 dequantizes: q - 128 = saturate(round(x / s) + z - 128) in
    [-128, 127], and (q - 128) - (z - 128) = q - z, so every value is the same (the NPU holds
    int8, not uint8)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.QuantizeOp, rewriter: PatternRewriter) -> None:
        zero = constant_array(op.zero_point)
        users = [use.operation for use in op.output.uses]
        if zero is None or zero.dtype != np.uint8 or not users:
            return
        dequantizes = [u for u in users if isinstance(u, graph.DequantizeOp) and u.input is op.output]
        if len(dequantizes) != len(users) or any(constant_array(u.zero_point) is None for u in dequantizes):
            return
        hint = name_hint(op)
        signed = _signed_zero(zero, hint, op.location)
        quantize = graph.QuantizeOp(op.input, op.scale, signed.output)
        quantize.location, quantize.output.name_hint = op.location, op.output.name_hint
        rewriter.insert([signed, quantize], InsertPoint.before(op))
        for user in dequantizes:
            own = constant_array(user.zero_point)
            assert own is not None
            moved = _signed_zero(own, hint, user.location)
            dequantize = graph.DequantizeOp(quantize.output, user.scale, moved.output)
            dequantize.location, dequantize.output.name_hint = user.location, user.output.name_hint
            rewriter.replace(user, [moved, dequantize], [dequantize.output])
        rewriter.erase(op)


@dataclass(frozen=True)
class GraphQuantizedMatmulPass(ModulePass):
    """Turns matmuls of dequantized int8 tensors into int8 matmuls with an i32 result, scaled
    back to f32 once (module docstring).

    Input:
      A graph module with `graph.dequantize` ops, as the ONNX frontend imports QDQ models
      (QuantizeLinear/DequantizeLinear): constant int8 weights stay int8 behind a dequantize.
    Output:
      First, every uint8 graph.quantize whose uses are all dequantizes becomes int8 with its
      zero points moved by -128 (`SignedActivations`: the same values, and the NPU holds int8).
      Then
      every f32 graph.matmul (no bias or activation yet: run before
      graph-fuse-bias-activation and graph-fold-constants) whose lhs dequantizes an int8
      tensor with one scale and zero point, and whose rhs dequantizes a constant 2-D int8
      (or uint8) weight with a scale and zero point per tensor or per column, whose centred
      values fit int8, becomes an i8 x i8 -> i32 graph.matmul and a graph.dequantize of the
      product (scale sa * sw per column), minus the constant za * colsum(W) * sa * sw when the
      activation's zero point is not 0. Likewise every channels-first f32 graph.conv without an
      activation whose input dequantizes int8 (one scale and zero point) and whose weight
      dequantizes a constant int8 or uint8 tensor with a scale and zero point per tensor or per
      output channel, centred values fitting int8, that is not depthwise (one input channel per
      group: those run faster on the vector engine in f32), and whose bias (if any) is a
      constant or the dequantize of one, becomes an i8 graph.conv with `input_zero` = za, a
      graph.dequantize by sa * sw ([C_out, 1, ...] when per channel) and a graph.add of the bias
      (an int32 bias dequantized by exactly sa * sw with zero point 0 is the i8 conv's own i32
      bias instead). Other matmuls and convs are left as they are (they compute the dequantized
      values in f32). A channels-first f32 max pool whose only use quantizes to int8, or whose
      input dequantizes int8, with a scale and zero point per tensor or per channel, pools int8:
      quantize(max_pool(x)) -> max_pool(quantize(x)), max_pool(dequantize(q)) ->
      dequantize(max_pool(q)).
    Invariants:
      The integer product is exact (i32 accumulation, |sum| <= K * 128 * 128); the f32 result
      equals the float product of the dequantized operands up to float rounding (one scaling
      of an exact sum instead of K rounded products); so does the conv's, padding included.
      A max pool moved across a quantize or dequantize gives the same values (both never
      decrease; NaN aside).
      The dequantizes left without users are erased.
    """

    name = "graph-quantized-matmul"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier([SignedActivations()])).rewrite_module(op)
        PatternRewriteWalker(
            GreedyRewritePatternApplier([QuantizedMatmul(), QuantizedConv(), QuantizedMaxPool()])
        ).rewrite_module(op)
