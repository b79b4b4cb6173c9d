"""numpy reference semantics of the `graph` dialect, and its xDSL interpreter functions.

`KERNELS` maps each graph op class to a function `(op, *operand_arrays) -> array | tuple`.
The same table serves the interpreter (`GraphFunctions`), constant folding and the ONNX
frontend's shape folding, so there is exactly one definition of what each op computes.

The kernels come first, one section per op family; `KERNELS`, the one table listing every op
with its kernel, follows them; `evaluate` and `GraphFunctions` run an op through the table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal, cast

import numpy as np
from scipy import special
from xdsl.dialects.builtin import NameLoc, StringAttr, TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation

from aitc.diagnostics import AitcError
from aitc.dialects import graph
from aitc.types import numpy_dtype
from aitc.weights import attr_to_array

Kernel = Callable[..., "np.ndarray | tuple[np.ndarray, ...]"]


def _shape(type_: TensorType) -> tuple[int, ...]:
    return tuple(type_.get_shape())


def _result_type(op: Operation) -> TensorType:
    type_ = op.results[0].type
    assert isinstance(type_, TensorType)
    return type_


# --------------------------------------------------------------------------- elementwise


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Kernel:
    """The kernel of a unary op that is `fn` of its operand (no attributes)."""

    def apply(op: Operation, x: np.ndarray) -> np.ndarray:
        return fn(x)

    return apply


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    """The kernel of a binary op that is `fn` of its operands (no attributes)."""

    def apply(op: Operation, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return fn(a, b)

    return apply


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0)


def _relu6(x: np.ndarray) -> np.ndarray:
    return np.clip(x, 0, 6)


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + special.erf(x / math.sqrt(2.0)))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "relu": _relu,
    "relu6": _relu6,
    "sigmoid": special.expit,
    "tanh": np.tanh,
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
}
"""The activations a matmul or conv may fuse (its `activation` attribute)."""


def apply_activation(op: Operation, value: np.ndarray) -> np.ndarray:
    attr = op.attributes.get("activation")
    if attr is None:
        return value
    assert isinstance(attr, StringAttr)  # the op verifier checks it
    return ACTIVATIONS[attr.data](value)


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(x, 0)


def _softsign(x: np.ndarray) -> np.ndarray:
    return x / (1 + np.abs(x))


def _hard_swish(x: np.ndarray) -> np.ndarray:
    return x * np.clip(x / 6 + 0.5, 0, 1)


def _gelu_op(op: graph.GeluOp, x: np.ndarray) -> np.ndarray:
    tanh = op.approximate is not None and op.approximate.data == "tanh"
    return _gelu_tanh(x) if tanh else _gelu(x)


def _leaky_relu(op: graph.LeakyReluOp, x: np.ndarray) -> np.ndarray:
    return np.where(x >= 0, x, op.param("alpha") * x)


def _elu(op: graph.EluOp, x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, op.param("alpha") * np.expm1(np.minimum(x, 0)))


def _selu(op: graph.SeluOp, x: np.ndarray) -> np.ndarray:
    return op.param("gamma") * np.where(x > 0, x, op.param("alpha") * np.expm1(np.minimum(x, 0)))


def _hard_sigmoid(op: graph.HardSigmoidOp, x: np.ndarray) -> np.ndarray:
    return np.clip(op.param("alpha") * x + op.param("beta"), 0, 1)


def _clip(op: graph.ClipOp, x: np.ndarray) -> np.ndarray:
    """A missing bound (alpha: low, beta: high) is unbounded; bounds are cast to x's dtype."""
    low = op.param("alpha") if "alpha" in op.attributes else None
    high = op.param("beta") if "beta" in op.attributes else None
    out = x if low is None else np.maximum(x, np.asarray(low).astype(x.dtype))
    return out if high is None else np.minimum(out, np.asarray(high).astype(x.dtype))


def _prelu(op: graph.PReluOp, x: np.ndarray, slope: np.ndarray) -> np.ndarray:
    return np.where(x >= 0, x, x * slope)


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """True division for floats; for integers, the quotient truncated toward zero (as ONNX)."""
    if a.dtype.kind == "f":
        return a / b
    quotient = a // b
    inexact = (a % b != 0) & ((a < 0) ^ (b < 0))
    return quotient + inexact


def _mod(op: graph.ModOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.fmod(a, b) if op.mod_mode() == "fmod" else np.mod(a, b)


def _where(op: graph.WhereOp, condition: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(condition, a, b)


def _constant(op: graph.ConstantOp) -> np.ndarray:
    assert op.value is not None
    return attr_to_array(op.value)


def _cast(op: graph.CastOp, x: np.ndarray) -> np.ndarray:
    dtype = numpy_dtype(_result_type(op).get_element_type())
    if x.dtype.kind == "f" and dtype.kind in "iu":
        with np.errstate(invalid="ignore"):
            return np.trunc(x).astype(dtype)
    return x.astype(dtype)


def _quantize(op: graph.QuantizeOp, x: np.ndarray, scale: np.ndarray, zero: np.ndarray) -> np.ndarray:
    """ONNX QuantizeLinear: x / scale rounded half to even (np.rint), + zero point, saturated
    (a NaN quotient counts as 0, as the vector engine's rounding cast makes it)."""
    info = np.iinfo(zero.dtype)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        rounded = np.rint(np.nan_to_num(x / scale, nan=0.0)) + zero.astype(np.float32)
    return np.clip(rounded, info.min, info.max).astype(zero.dtype)


def _dequantize(op: graph.DequantizeOp, x: np.ndarray, scale: np.ndarray, zero: np.ndarray) -> np.ndarray:
    """ONNX DequantizeLinear: (x - zero point) exactly (in int64), then * scale in f32."""
    difference = x.astype(np.int64) - zero.astype(np.int64)
    return (difference.astype(np.float32) * scale).astype(np.float32)


# --------------------------------------------------------------------------- linear algebra


def _matmul(op: graph.MatMulOp, a: np.ndarray, b: np.ndarray, bias: np.ndarray | None = None):
    if a.dtype == np.int8:  # i8 x i8 -> i32, exactly (MatMulInteger)
        return np.matmul(a.astype(np.int32), b.astype(np.int32))
    out = np.matmul(a, b)
    if bias is not None:
        out = out + bias
    return apply_activation(op, out)


def _windows(x: np.ndarray, kernel: Sequence[int], strides, dilations) -> np.ndarray:
    """View of all windows of the (already padded) N x C x spatial `x`:
    shape N x C x out1 x ... x k1 x ..."""
    n = len(kernel)
    spans = [d * (k - 1) + 1 for k, d in zip(kernel, dilations, strict=True)]
    view = np.lib.stride_tricks.sliding_window_view(x, spans, axis=tuple(range(2, 2 + n)))
    index = (slice(None), slice(None))
    index += tuple(slice(None, None, s) for s in strides)
    index += tuple(slice(None, None, d) for d in dilations)
    return view[index]


def _pad_spatial(x: np.ndarray, pads: Sequence[int], value: float, extra=None) -> np.ndarray:
    n = x.ndim - 2
    extra = extra or [0] * n
    widths = [(0, 0), (0, 0)] + [(pads[i], pads[i + n] + extra[i]) for i in range(n)]
    return np.pad(x, widths, constant_values=value)


def _conv(op: graph.ConvOp, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None):
    if op.is_integer():  # exact in float64: |sum| <= K * 255 * 128 < 2**53
        x = x.astype(np.float64) - op.input_zero_point()
        offset = None if bias is None else bias.astype(np.float64)
        return _conv_any_layout(op, x, w.astype(np.float64), offset).astype(np.int32)
    return _conv_any_layout(op, x, w, bias)


def _conv_any_layout(op: graph.ConvOp, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None):
    if op.is_channels_last():  # the same conv on N x C x spatial views
        return np.moveaxis(_conv_channels_first(op, np.moveaxis(x, -1, 1), w, bias), 1, -1)
    return _conv_channels_first(op, x, w, bias)


def _conv_channels_first(op: graph.ConvOp, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None):
    strides, pads, dilations = op.window()
    groups = op.groups()
    n_spatial = x.ndim - 2
    win = _windows(_pad_spatial(x, pads, 0.0), w.shape[2:], strides, dilations)
    batch, channels = x.shape[:2]
    out_spatial = win.shape[2 : 2 + n_spatial]
    c_group, m_group = channels // groups, w.shape[0] // groups
    # N x G x Cg x out... x k...  ->  N x G x out(flat) x (Cg * k...)
    win = win.reshape(batch, groups, c_group, -1, *w.shape[2:])
    win = np.moveaxis(win, 3, 2).reshape(batch, groups, -1, c_group * math.prod(w.shape[2:]))
    weight = w.reshape(groups, m_group, -1).transpose(0, 2, 1)  # G x (Cg*k) x Mg
    out = np.matmul(win, weight)  # N x G x out(flat) x Mg
    out = np.moveaxis(out, 3, 2).reshape(batch, groups * m_group, *out_spatial)
    if bias is not None:
        out = out + bias.reshape(-1, *([1] * n_spatial))
    return apply_activation(op, out)


def _ceil_extra(op: graph.PoolOp, shape: Sequence[int]) -> list[int]:
    """End padding that ceil_mode's last, partial windows need beyond the explicit pads."""
    strides, pads, dilations = op.window()
    out = op.out_spatial(op.kernel(), ceil=op.ceil_mode is not None)
    n = len(out)
    extra = []
    for i in range(n):
        needed = (out[i] - 1) * strides[i] + dilations[i] * (op.kernel()[i] - 1) + 1
        extra.append(max(0, needed - (shape[2 + i] + pads[i] + pads[i + n])))
    return extra


def _max_pool(op: graph.MaxPoolOp, x: np.ndarray) -> np.ndarray:
    if op.is_channels_last():  # the same pool on N x C x spatial views
        return np.moveaxis(_max_pool_channels_first(op, np.moveaxis(x, -1, 1)), 1, -1)
    return _max_pool_channels_first(op, x)


def _max_pool_channels_first(op: graph.MaxPoolOp, x: np.ndarray) -> np.ndarray:
    strides, pads, dilations = op.window()
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    padded = _pad_spatial(x, pads, fill, _ceil_extra(op, x.shape))
    win = _windows(padded, op.kernel(), strides, dilations)
    n = len(op.kernel())
    return win.max(axis=tuple(range(-n, 0)))


def _avg_pool(op: graph.AvgPoolOp, x: np.ndarray) -> np.ndarray:
    strides, pads, dilations = op.window()
    extra = _ceil_extra(op, x.shape)
    n = len(op.kernel())
    axes = tuple(range(-n, 0))
    total = _windows(_pad_spatial(x, pads, 0.0, extra), op.kernel(), strides, dilations).sum(axis=axes)
    if op.count_include_pad is not None:
        padded_sizes = [x.shape[2 + i] + pads[i] + pads[i + n] for i in range(n)]
        mask = np.pad(np.ones((1, 1, *padded_sizes), x.dtype), [(0, 0), (0, 0)] + [(0, e) for e in extra])
    else:
        mask = _pad_spatial(np.ones((1, 1, *x.shape[2:]), x.dtype), pads, 0.0, extra)
    count = _windows(mask, op.kernel(), strides, dilations).sum(axis=axes)
    return total / count


# --------------------------------------------------------------------------- normalisation


def _batch_norm(op: graph.BatchNormOp, x, scale, bias, mean, var) -> np.ndarray:
    eps = op.epsilon.value.data if op.epsilon is not None else 1e-5
    shape = (-1, *([1] * (x.ndim - 2)))
    inv = scale / np.sqrt(var + np.asarray(eps, dtype=var.dtype))
    return (x - mean.reshape(shape)) * inv.reshape(shape) + bias.reshape(shape)


def _layer_norm(op: graph.LayerNormOp, x, scale, bias=None) -> np.ndarray:
    eps = op.epsilon.value.data if op.epsilon is not None else 1e-5
    axes = tuple(range(op.norm_axis(), x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=axes, keepdims=True)
    out = centered / np.sqrt(var + np.asarray(eps, dtype=x.dtype)) * scale
    return out if bias is None else out + bias


def _softmax(op: graph.SoftmaxOp, x: np.ndarray) -> np.ndarray:
    axis = op.norm_axis()
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _attention(op: graph.AttentionOp, q, k, v, mask=None) -> np.ndarray:
    """Per batch and head: softmax(Q @ K^T * scale + mask) @ V, heads packed in the last dim."""
    b, s, s_kv, heads, d, dv = op.dims()
    query = q.reshape(b, s, heads, d).transpose(0, 2, 1, 3)
    key_t = k.reshape(b, s_kv, heads, d).transpose(0, 2, 3, 1)
    value = v.reshape(b, s_kv, heads, dv).transpose(0, 2, 1, 3)
    scores = np.matmul(query, key_t) * np.asarray(op.scale_value(), q.dtype)
    if mask is not None:
        scores = scores + mask
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    out = np.matmul(e / e.sum(axis=-1, keepdims=True), value)
    return out.transpose(0, 2, 1, 3).reshape(b, s, heads * dv)


def _log_softmax(op: graph.LogSoftmaxOp, x: np.ndarray) -> np.ndarray:
    axis = op.norm_axis()
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


# --------------------------------------------------------------------------- reductions


def _empty_identity(op: graph.ReduceOp, dtype: np.dtype) -> dict[str, object]:
    """max/min of an empty set: ONNX defines -inf/+inf (the dtype's lowest/highest for integers)."""
    if not isinstance(op, graph.ReduceMaxOp | graph.ReduceMinOp):
        return {}
    if dtype.kind == "f":
        low, high = -np.inf, np.inf
    elif dtype.kind == "b":
        low, high = False, True
    else:
        low, high = np.iinfo(dtype).min, np.iinfo(dtype).max
    return {"initial": low if isinstance(op, graph.ReduceMaxOp) else high}


def _reduction(reducer: Callable[..., np.ndarray]) -> Kernel:
    """The kernel of a reduce op that is `reducer` (np.sum, ...) over the op's axes."""

    def reduce(op: graph.ReduceOp, x: np.ndarray) -> np.ndarray:
        extra = _empty_identity(op, x.dtype) if x.size == 0 else {}
        return reducer(x, axis=op.reduced_axes(), keepdims=op.keepdims is not None, **extra)

    return reduce


def _arg_reduce(op: graph.ArgReduceOp, x: np.ndarray) -> np.ndarray:
    (axis,) = op.reduced_axes()
    find = np.argmax if isinstance(op, graph.ArgMaxOp) else np.argmin
    if op.select_last_index is not None:
        index = x.shape[axis] - 1 - find(np.flip(x, axis=axis), axis=axis)
    else:
        index = find(x, axis=axis)
    return np.expand_dims(index, axis) if op.keepdims is not None else index


# --------------------------------------------------------------------------- data movement


def _reshape(op: graph.ReshapeOp, x: np.ndarray) -> np.ndarray:
    return x.reshape(_shape(_result_type(op)))


def _transpose(op: graph.TransposeOp, x: np.ndarray) -> np.ndarray:
    return np.transpose(x, op.permutation())


def _broadcast(op: graph.BroadcastOp, x: np.ndarray) -> np.ndarray:
    return np.broadcast_to(x, _shape(_result_type(op)))


def _tile(op: graph.TileOp, x: np.ndarray) -> np.ndarray:
    return np.tile(x, graph.ints_of(op.repeats))


def _concat(op: graph.ConcatOp, *xs: np.ndarray) -> np.ndarray:
    return np.concatenate(xs, axis=op.axis.value.data if op.axis is not None else 0)


def _slice(op: graph.SliceOp, x: np.ndarray) -> np.ndarray:
    out = _shape(_result_type(op))
    starts = graph.ints_of(op.starts, [0] * x.ndim)
    steps = graph.ints_of(op.steps, [1] * x.ndim)
    index = []
    for start, step, count in zip(starts, steps, out, strict=True):
        stop = start + count * step
        index.append(slice(start, stop if stop >= 0 else None, step))
    return x[tuple(index)]


def _split(op: graph.SplitOp, x: np.ndarray) -> tuple[np.ndarray, ...]:
    axis = op.axis.value.data if op.axis is not None else 0
    sizes = [v.type.get_shape()[axis] for v in op.outputs]
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=axis))


def _pad(op: graph.PadOp, x: np.ndarray) -> np.ndarray:
    pads = graph.ints_of(op.pads)
    n = x.ndim
    crop = tuple(slice(max(0, -pads[i]), x.shape[i] - max(0, -pads[i + n])) for i in range(n))
    widths = [(max(0, pads[i]), max(0, pads[i + n])) for i in range(n)]
    mode = op.pad_mode()
    if mode == "constant":
        value = op.value.value.data if op.value is not None else 0.0
        return np.pad(x[crop], widths, mode="constant", constant_values=value)
    return np.pad(x[crop], widths, mode=cast(Literal["reflect", "edge"], mode))  # as the verifier checks


class IndexOutOfRange(AitcError, IndexError):
    """An index tensor (of a gather or gather_nd) points outside its dim: bad input data, which
    the CLI reports as such, not an aitc bug. Also an IndexError, as numpy's would be, so that
    constant folding declines the op."""


def _op_label(op: Operation) -> str:
    """`graph.gather_nd ('/pool/GatherND')`: the op and, when it has one, its ONNX node name."""
    location = getattr(op, "location", None)
    return f"{op.name} ('{location.desc.data}')" if isinstance(location, NameLoc) else op.name


def _gather(op: graph.GatherOp, x: np.ndarray, indices: np.ndarray) -> np.ndarray:
    axis = op.axis.value.data if op.axis is not None else 0
    size = x.shape[axis]
    if indices.size and (indices.min() < -size or indices.max() >= size):
        raise IndexOutOfRange(f"gather index out of range [-{size}, {size - 1}] at {_op_label(op)}")
    return np.take(x, indices.astype(np.int64), axis=axis)


def _gather_nd(op: graph.GatherNDOp, x: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Flattens the batch dims to one (B) and the index rows to one (M), then one fancy index:
    x[batch, i0, i1, ...] with batch broadcast to B x M."""
    b, k = op.batch_rank(), indices.shape[-1]
    batch = math.prod(x.shape[:b])
    dims = np.asarray(x.shape[b : b + k], np.int64)
    rows = indices.astype(np.int64).reshape(batch, math.prod(indices.shape[b:-1]), k)
    bad = (rows < -dims) | (rows >= dims)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad.reshape(indices.shape))[0])
        raise IndexOutOfRange(
            f"gather_nd index {int(indices[where])} at indices{list(where)} is out of range "
            f"[-{dims[where[-1]]}, {dims[where[-1]] - 1}] at {_op_label(op)}"
        )
    rows = np.where(rows < 0, rows + dims, rows)
    batch_index = np.broadcast_to(np.arange(batch)[:, None], rows.shape[:2])
    picked = x.reshape(batch, *x.shape[b:])[(batch_index, *np.moveaxis(rows, -1, 0))]
    return picked.reshape((*indices.shape[:-1], *x.shape[b + k :]))


# --------------------------------------------------------------------------- the table

KERNELS: dict[type[Operation], Kernel] = {
    # constants and casts
    graph.ConstantOp: _constant,
    graph.CastOp: _cast,
    graph.QuantizeOp: _quantize,
    graph.DequantizeOp: _dequantize,
    # elementwise unary
    graph.NegOp: _unary(np.negative),
    graph.AbsOp: _unary(np.abs),
    graph.SignOp: _unary(np.sign),
    graph.ExpOp: _unary(np.exp),
    graph.LogOp: _unary(np.log),
    graph.SqrtOp: _unary(np.sqrt),
    graph.ReciprocalOp: _unary(np.reciprocal),
    graph.ErfOp: _unary(special.erf),
    graph.SinOp: _unary(np.sin),
    graph.CosOp: _unary(np.cos),
    graph.FloorOp: _unary(np.floor),
    graph.CeilOp: _unary(np.ceil),
    graph.RoundOp: _unary(np.round),
    # elementwise binary
    graph.AddOp: _binary(np.add),
    graph.SubOp: _binary(np.subtract),
    graph.MulOp: _binary(np.multiply),
    graph.DivOp: _binary(_int_div),
    graph.PowOp: _binary(np.power),
    graph.MaxOp: _binary(np.maximum),
    graph.MinOp: _binary(np.minimum),
    graph.ModOp: _mod,
    # comparisons and logic
    graph.EqualOp: _binary(np.equal),
    graph.LessOp: _binary(np.less),
    graph.LessEqualOp: _binary(np.less_equal),
    graph.GreaterOp: _binary(np.greater),
    graph.GreaterEqualOp: _binary(np.greater_equal),
    graph.AndOp: _binary(np.logical_and),
    graph.OrOp: _binary(np.logical_or),
    graph.XorOp: _binary(np.logical_xor),
    graph.NotOp: _unary(np.logical_not),
    graph.WhereOp: _where,
    # activations
    graph.ReluOp: _unary(_relu),
    graph.SigmoidOp: _unary(special.expit),
    graph.TanhOp: _unary(np.tanh),
    graph.GeluOp: _gelu_op,
    graph.SoftplusOp: _unary(_softplus),
    graph.SoftsignOp: _unary(_softsign),
    graph.HardSwishOp: _unary(_hard_swish),
    graph.LeakyReluOp: _leaky_relu,
    graph.EluOp: _elu,
    graph.SeluOp: _selu,
    graph.HardSigmoidOp: _hard_sigmoid,
    graph.ClipOp: _clip,
    graph.PReluOp: _prelu,
    # matmul, conv, pooling
    graph.MatMulOp: _matmul,
    graph.ConvOp: _conv,
    graph.MaxPoolOp: _max_pool,
    graph.AvgPoolOp: _avg_pool,
    # normalisation
    graph.BatchNormOp: _batch_norm,
    graph.LayerNormOp: _layer_norm,
    graph.AttentionOp: _attention,
    graph.SoftmaxOp: _softmax,
    graph.LogSoftmaxOp: _log_softmax,
    # reductions
    graph.ReduceSumOp: _reduction(np.sum),
    graph.ReduceMeanOp: _reduction(np.mean),
    graph.ReduceMaxOp: _reduction(np.max),
    graph.ReduceMinOp: _reduction(np.min),
    graph.ReduceProdOp: _reduction(np.prod),
    graph.ArgMaxOp: _arg_reduce,
    graph.ArgMinOp: _arg_reduce,
    # data movement
    graph.ReshapeOp: _reshape,
    graph.TransposeOp: _transpose,
    graph.BroadcastOp: _broadcast,
    graph.TileOp: _tile,
    graph.ConcatOp: _concat,
    graph.SliceOp: _slice,
    graph.SplitOp: _split,
    graph.PadOp: _pad,
    graph.GatherOp: _gather,
    graph.GatherNDOp: _gather_nd,
}


# --------------------------------------------------------------------------- evaluation


def evaluate(op: Operation, args: Sequence[np.ndarray | None]) -> tuple[np.ndarray, ...]:
    """Runs one graph op on numpy arrays; results carry exactly the result types' dtypes
    and shapes (a mismatch is a bug in the kernel, reported as such)."""
    fn = KERNELS.get(type(op))
    if fn is None:
        raise NotImplementedError(f"no reference kernel for {op.name}")
    with np.errstate(all="ignore"):
        raw = fn(op, *args)
    results = raw if isinstance(raw, tuple) else (raw,)
    out = []
    for value, result in zip(results, op.results, strict=True):
        type_ = result.type
        assert isinstance(type_, TensorType)
        array = np.asarray(value).astype(numpy_dtype(type_.get_element_type()), copy=False)
        if array.shape != tuple(type_.get_shape()):
            raise AssertionError(f"{op.name} produced {array.shape}, type says {type_}")
        out.append(array)
    return tuple(out)


class GraphFunctions(InterpreterFunctions):
    """xDSL interpreter functions of the graph dialect: every op runs its `KERNELS` entry
    through `evaluate`."""

    def run_graph_op(self, interpreter: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        return evaluate(op, args)


# xDSL's Interpreter looks an op's implementation up by the op's exact class, and `register_impls`
# collects only methods that `@impl(op_type)` tagged, one class per method; xDSL has no public way
# to send many classes to one method. So `run_graph_op` is tagged once per KERNELS entry here, and
# the class registered after that.
for _op_type in KERNELS:
    setattr(GraphFunctions, f"run_{_op_type.__name__}", impl(_op_type)(GraphFunctions.run_graph_op))
register_impls(GraphFunctions)
