"""The ONNX operators aitc claims, and how each becomes `graph` ops.

`ONNX_OPS` is the one list of claimed op types (`aitc check --ops` prints it). Each entry says
whether the op maps to one graph op ("supported"), to several or to an import-time constant
("decomposed"), an optional `precheck` that finds unsupported attribute combinations before any
work is done, the `lower` function, and `static_inputs`: the inputs (shapes, axes, pads...)
whose values aitc needs at import because all its shapes are static. Lowering functions receive
the node's inputs as `Value`s (an SSA value or, for constants known at import, a numpy array)
and return one `Value` per node output. `invalid_attribute` finds, in any op, attribute values
that ONNX forbids but onnx.checker lets through (a Reshape allowzero of 3, a Conv group of -1).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper
from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType, UnitAttr, i64
from xdsl.ir import Attribute

from aitc.dialects import graph
from aitc.frontend.lowering import Lowering, Unsupported, Value
from aitc.types import element_type_of, numpy_dtype

Lower = Callable[[Lowering, onnx.NodeProto, list[Value | None]], Sequence[Value]]
Precheck = Callable[[onnx.NodeProto], "str | None"]


@dataclass(frozen=True)
class OnnxOp:
    """How aitc handles one ONNX op type."""

    status: str  # "supported" (one graph op) or "decomposed" (several, or folded at import)
    lower: Lower
    precheck: Precheck | None = None
    note: str = ""
    static_inputs: tuple[int, ...] = ()
    """Indices of the inputs whose values aitc needs at import (shapes, axes, pads...): the model
    must give them as initializers or as constant subgraphs; aitc only has static shapes."""


ONNX_OPS: dict[str, OnnxOp] = {}


def attrs(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _attribute(node: onnx.NodeProto, name: str, default: object) -> Any:
    """Attribute `name` as onnx decodes it (`get_attribute_value` is typed Any), else `default`;
    with no default (None) the attribute is required and its absence a KeyError."""
    found = attrs(node)
    return found[name] if default is None else found.get(name, default)


def attr_int(node: onnx.NodeProto, name: str, default: int | None = None) -> int:
    return int(_attribute(node, name, default))


def attr_float(node: onnx.NodeProto, name: str, default: float | None = None) -> float:
    return float(_attribute(node, name, default))


def attr_ints(node: onnx.NodeProto, name: str, default: Sequence[int] | None = None) -> list[int]:
    return list(_attribute(node, name, default))


def attr_str(node: onnx.NodeProto, name: str, default: str) -> str:
    """A string attribute (onnx gives bytes) decoded, `default` when absent."""
    value = _attribute(node, name, default.encode())
    return value.decode() if isinstance(value, bytes) else str(value)


def attr_tensor(node: onnx.NodeProto, name: str) -> onnx.TensorProto | None:
    """A tensor attribute, None when absent."""
    return _attribute(node, name, None) if name in attrs(node) else None


_FLAG_ATTRIBUTES = frozenset({
    "allowzero", "ceil_mode", "count_include_pad", "fmod", "keepdims", "noop_with_empty_axes",
    "select_last_index", "storage_order", "training_mode", "transA", "transB",
})  # fmt: skip
"""Integer attributes that ONNX defines as 0 or 1 in every op that has them. Neither onnx.checker
nor shape inference checks their values (inference, like aitc, reads any non-zero as 1)."""

_ATTRIBUTE_MINIMUM = {
    "blocksize": 1, "dilations": 1, "group": 1, "kernel_shape": 1, "num_groups": 1,
    "num_outputs": 1, "strides": 1, "pads": 0,
}  # fmt: skip
"""Integer attributes (or lists) whose values ONNX requires to be at least this, wherever they
occur; some only fail later in shape inference or verification, others not at all."""


def invalid_attribute(node: onnx.NodeProto) -> str | None:
    """The first attribute whose value ONNX forbids (flags other than 0/1, non-positive strides,
    groups...), so that `aitc check` reports it on its node before any work."""
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.INT:
            shown, values = attribute.i, [attribute.i]
        elif attribute.type == onnx.AttributeProto.INTS:
            shown = values = list(attribute.ints)
        else:
            continue
        if attribute.name in _FLAG_ATTRIBUTES and any(v not in (0, 1) for v in values):
            return f"attribute {attribute.name}={shown} (ONNX allows only 0 or 1)"
        least = _ATTRIBUTE_MINIMUM.get(attribute.name)
        if least is not None and any(v < least for v in values):
            return f"attribute {attribute.name}={shown} (ONNX requires values >= {least})"
    return None


def _register(
    names: Sequence[str],
    status: str,
    precheck: Precheck | None = None,
    note: str = "",
    static_inputs: Sequence[int] = (),
):
    def wrap(fn: Lower) -> Lower:
        for name in names:
            ONNX_OPS[name] = OnnxOp(status, fn, precheck, note, tuple(static_inputs))
        return fn

    return wrap


def _shape(value: Value) -> tuple[int, ...]:
    if isinstance(value, np.ndarray):
        return value.shape
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def _dtype(value: Value) -> np.dtype:
    if isinstance(value, np.ndarray):
        return value.dtype
    assert isinstance(value.type, TensorType)
    return numpy_dtype(value.type.get_element_type())


def _axis(axis: int, rank: int, node: onnx.NodeProto) -> int:
    if not -rank <= axis < max(rank, 1):
        raise Unsupported(f"axis {axis} is out of range for rank {rank}")
    return axis % max(rank, 1)


def _only_first_output(node: onnx.NodeProto) -> str | None:
    if any(name for name in node.output[1:]):
        return f"only output 0 is supported, but {node.op_type} output(s) {list(node.output[1:])} are used"
    return None


def _unary_op(lw: Lowering, op_type: type, x: Value) -> Value:
    return lw.emit(op_type(lw.ssa(x)))[0]


def _square(lw: Lowering, x: Value) -> Value:
    return lw.emit(graph.MulOp(lw.ssa(x), lw.ssa(x)))[0]


# --------------------------------------------------------------------------- elementwise

_UNARY = {
    "Relu": graph.ReluOp, "Neg": graph.NegOp, "Abs": graph.AbsOp, "Sign": graph.SignOp,
    "Exp": graph.ExpOp, "Log": graph.LogOp, "Sqrt": graph.SqrtOp, "Reciprocal": graph.ReciprocalOp,
    "Tanh": graph.TanhOp, "Sigmoid": graph.SigmoidOp, "Erf": graph.ErfOp, "Sin": graph.SinOp,
    "Cos": graph.CosOp, "Floor": graph.FloorOp, "Ceil": graph.CeilOp, "Round": graph.RoundOp,
    "Softplus": graph.SoftplusOp, "Softsign": graph.SoftsignOp, "HardSwish": graph.HardSwishOp,
    "Not": graph.NotOp,
}  # fmt: skip


@_register(list(_UNARY), "supported")
def _lower_unary(lw: Lowering, node, inputs):
    return lw.emit(_UNARY[node.op_type](lw.ssa(inputs[0])))


@_register(["Mish"], "decomposed", note="x * tanh(softplus(x))")
def _lower_mish(lw: Lowering, node, inputs):
    x = inputs[0]
    gate = _unary_op(lw, graph.TanhOp, _unary_op(lw, graph.SoftplusOp, x))
    return lw.emit(graph.MulOp(lw.ssa(x), lw.ssa(gate)))


_PARAMETRIC = {
    "LeakyRelu": (graph.LeakyReluOp, {"alpha": 0.01}),
    "Elu": (graph.EluOp, {"alpha": 1.0}),
    "Selu": (
        graph.SeluOp,
        {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875},
    ),
    "HardSigmoid": (graph.HardSigmoidOp, {"alpha": 0.2, "beta": 0.5}),
}


@_register(list(_PARAMETRIC), "supported")
def _lower_parametric(lw: Lowering, node, inputs):
    op_type, defaults = _PARAMETRIC[node.op_type]
    params = {k: attr_float(node, k, v) for k, v in defaults.items()}
    return lw.emit(op_type(lw.ssa(inputs[0]), **params))


def _gelu_precheck(node) -> str | None:
    mode = attr_str(node, "approximate", "none")
    return None if mode in ("none", "tanh") else f"unknown approximate mode '{mode}'"


@_register(["Gelu"], "supported", _gelu_precheck)
def _lower_gelu(lw: Lowering, node, inputs):
    mode = attr_str(node, "approximate", "none")
    extra: dict[str, Attribute] = {"approximate": StringAttr("tanh")} if mode == "tanh" else {}
    return lw.emit(graph.GeluOp(lw.ssa(inputs[0]), extra))


def _clip_bound(lw: Lowering, node, inputs, index: int, attr_name: str) -> Value | None:
    """A Clip bound: an array when known at import, an SSA value when computed, None if absent."""
    if len(inputs) > index and inputs[index] is not None:
        value = inputs[index]
        return lw.const(value, attr_name).reshape(()) if lw.is_const(value) else value
    if attr_name in attrs(node):
        return np.asarray(attrs(node)[attr_name])
    return None


@_register(["Clip"], "supported", note="bounds computed at run time, or on integers: graph.max/min")
def _lower_clip(lw: Lowering, node, inputs):
    """min(max(x, lo), hi). Float bounds known at import form one graph.clip; the others become
    graph.max/graph.min around it, in the order that gives ONNX's `hi` everywhere when lo > hi."""
    x = inputs[0]
    dtype = _dtype(x)
    low, high = _clip_bound(lw, node, inputs, 1, "min"), _clip_bound(lw, node, inputs, 2, "max")
    folded = {
        key: float(bound)
        for key, bound in (("alpha", low), ("beta", high))
        if isinstance(bound, np.ndarray) and dtype.kind == "f"
    }
    if low is not None and "alpha" not in folded:
        x = lw.emit(graph.MaxOp(lw.ssa(x), lw.ssa(lw.cast(low, dtype))))[0]
    if folded:
        x = lw.emit(graph.ClipOp(lw.ssa(x), **folded))[0]
    if high is not None and "beta" not in folded:
        x = lw.emit(graph.MinOp(lw.ssa(x), lw.ssa(lw.cast(high, dtype))))[0]
    return [x]


_BINARY = {
    "Add": graph.AddOp, "Sub": graph.SubOp, "Mul": graph.MulOp, "Div": graph.DivOp,
    "Pow": graph.PowOp, "Mod": graph.ModOp, "PRelu": graph.PReluOp, "And": graph.AndOp,
    "Or": graph.OrOp, "Xor": graph.XorOp, "Equal": graph.EqualOp, "Less": graph.LessOp,
    "LessOrEqual": graph.LessEqualOp, "Greater": graph.GreaterOp,
    "GreaterOrEqual": graph.GreaterEqualOp,
}  # fmt: skip


@_register(list(_BINARY), "supported")
def _lower_binary(lw: Lowering, node, inputs):
    lhs, rhs = inputs[0], inputs[1]
    assert lhs is not None
    assert rhs is not None
    if node.op_type == "Pow":
        return _lower_pow(lw, lhs, rhs)
    if node.op_type == "Mod":
        return _lower_mod(lw, node, lhs, rhs)
    if node.op_type == "PRelu":
        rhs = _unidirectional(lw, rhs, _shape(lhs))
    return lw.emit(_BINARY[node.op_type](lw.ssa(lhs), lw.ssa(rhs)))


def _lower_pow(lw: Lowering, base: Value, exponent: Value) -> list[Value]:
    """Pow takes the base's type; an integer base is raised in f64 and truncated back."""
    dtype = _dtype(base)
    if dtype.kind == "f":
        return lw.emit(graph.PowOp(lw.ssa(base), lw.ssa(lw.cast(exponent, dtype))))
    wide = np.dtype(np.float64)
    result = lw.emit(graph.PowOp(lw.ssa(lw.cast(base, wide)), lw.ssa(lw.cast(exponent, wide))))[0]
    return [lw.cast(result, dtype)]


def _lower_mod(lw: Lowering, node, lhs: Value, rhs: Value) -> list[Value]:
    """fmod=1: C remainder (sign of x); fmod=0: floored, Python-style (sign of y), also for floats."""
    mode = "fmod" if attrs(node).get("fmod", 0) else "floor"
    op = graph.ModOp(lw.ssa(lhs), lw.ssa(rhs))
    if mode != op.default_mode():
        op.attributes["mode"] = StringAttr(mode)
    return lw.emit(op)


def _unidirectional(lw: Lowering, slope: Value, shape: Sequence[int]) -> Value:
    """PRelu's slope broadcasts to x; ONNX also accepts a per-channel C for N x C x ... x."""
    slope_shape = _shape(slope)
    if len(slope_shape) == 1 and len(shape) > 2 and slope_shape[0] == shape[1] != shape[-1]:
        return lw.reshape(slope, [slope_shape[0], *([1] * (len(shape) - 2))])
    return slope


_VARIADIC = {"Max": graph.MaxOp, "Min": graph.MinOp, "Sum": graph.AddOp, "Mean": graph.AddOp}


@_register(["Max", "Min"], "supported")
@_register(["Sum", "Mean"], "decomposed", note="a chain of graph.add (Mean: then graph.div)")
def _lower_variadic(lw: Lowering, node, inputs):
    values = [v for v in inputs if v is not None]
    result = values[0]
    for value in values[1:]:
        result = lw.emit(_VARIADIC[node.op_type](lw.ssa(result), lw.ssa(value)))[0]
    if node.op_type == "Mean":
        count = np.asarray(len(values), dtype=_dtype(result))
        result = lw.emit(graph.DivOp(lw.ssa(result), lw.ssa(count)))[0]
    return [result]


@_register(["Where"], "supported")
def _lower_where(lw: Lowering, node, inputs):
    c, x, y = (lw.ssa(v) for v in inputs)
    return lw.emit(graph.WhereOp(c, x, y))


@_register(["Cast"], "supported")
def _lower_cast(lw: Lowering, node, inputs):
    to = attr_int(node, "to")
    return [lw.cast(inputs[0], lw.onnx_dtype(to))]


@_register(["CastLike"], "supported", note="graph.cast to the element type of the second input")
def _lower_cast_like(lw: Lowering, node, inputs):
    assert inputs[1] is not None
    return [lw.cast(inputs[0], _dtype(inputs[1]))]


@_register(["Identity"], "decomposed", note="forwards its input")
def _lower_identity(lw: Lowering, node, inputs):
    return [inputs[0]]


def _dropout_precheck(node) -> str | None:
    if len(node.input) > 2 and node.input[2]:
        return "Dropout with a training_mode input is not supported (inference only)"
    return None


@_register(["Dropout"], "decomposed", _dropout_precheck, note="inference: forwards its input, mask all true")
def _lower_dropout(lw: Lowering, node, inputs):
    if len(node.output) < 2 or not node.output[1]:
        return [inputs[0]]
    return [inputs[0], np.ones(_shape(inputs[0]), dtype=np.bool_)]


# --------------------------------------------------------------------------- quantization (QDQ)

_QUANTIZED_TYPES = {
    np.dtype(np.int8): (-128, 127), np.dtype(np.uint8): (0, 255),
    np.dtype(np.int16): (-32768, 32767), np.dtype(np.uint16): (0, 65535),
}  # fmt: skip
"""The integer types QuantizeLinear makes (onnxruntime's QDQ models use 8 bits) and their ranges."""


def _qdq_precheck(node: onnx.NodeProto) -> str | None:
    if attr_int(node, "block_size", 0):
        return f"{node.op_type} with block_size (blocked quantization) is not supported"
    output_dtype = attr_int(node, "output_dtype", 0)
    if output_dtype and output_dtype not in _QUANTIZED_ONNX_TYPES:
        return (
            f"{node.op_type} to {onnx.TensorProto.DataType.Name(output_dtype)} is not supported "
            "(int8, uint8, int16, uint16)"
        )
    return None


_QUANTIZED_ONNX_TYPES = (
    onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.INT16, onnx.TensorProto.UINT16,
)  # fmt: skip


def _quantization(lw: Lowering, node: onnx.NodeProto, inputs: Sequence[Value | None], rank: int):
    """(scale, zero point) of a QuantizeLinear/DequantizeLinear as import-time constants shaped to
    broadcast against its rank-`rank` input (a per-axis 1-D scale along `axis`), and the zero
    point's integer type (when it is absent: `output_dtype`, else uint8, as ONNX says)."""
    scale = lw.const(inputs[1], f"{node.op_type} scale")
    has_zero = len(inputs) > 2 and inputs[2] is not None
    output_dtype = attr_int(node, "output_dtype", 0) or onnx.TensorProto.UINT8
    absent = np.zeros(scale.shape, helper.tensor_dtype_to_np_dtype(output_dtype))
    zero = lw.const(inputs[2], f"{node.op_type} zero point") if has_zero else absent
    if scale.dtype != np.float32:
        raise Unsupported(f"{node.op_type} with a {scale.dtype} scale is not supported (float32)")
    if scale.ndim <= 1 and zero.ndim <= 1 and scale.size == zero.size == 1:
        # one value each, however shaped (onnxruntime writes a bias's scale [1] with a scalar
        # zero point): per tensor, as onnxruntime treats a one-element 1-D scale
        scale, zero = np.asarray(scale.flat[0]), np.asarray(zero.flat[0])
    if scale.ndim > 1 or zero.shape != scale.shape:
        shapes = f"scale {list(scale.shape)} and zero point {list(zero.shape)}"
        raise Unsupported(
            f"{node.op_type}: {shapes} must be scalars or the same 1-D shape (blocked: unsupported)"
        )
    if np.any(~np.isfinite(scale)) or np.any(scale <= 0):
        raise Unsupported(f"{node.op_type}: every scale must be positive and finite")
    shape = [1] * rank
    if scale.ndim == 1:
        axis = _axis(attr_int(node, "axis", 1), rank, node)
        x = inputs[0]
        assert x is not None  # a required input
        size = _shape(x)[axis]
        if scale.shape[0] != size:
            raise Unsupported(f"{node.op_type}: {scale.shape[0]} scales for axis {axis} of size {size}")
        shape[axis] = scale.shape[0]
    return scale.reshape(shape), zero.reshape(shape), zero.dtype


@_register(
    ["QuantizeLinear"], "supported", _qdq_precheck, static_inputs=(1, 2),
    note="graph.quantize: x / scale, round half to even, + zero point, saturated to (u)int8/(u)int16",
)  # fmt: skip
def _lower_quantize_linear(lw: Lowering, node, inputs):
    x = inputs[0]
    if _dtype(x) != np.float32:
        raise Unsupported(f"QuantizeLinear of {_dtype(x)} is not supported (float32)")
    scale, zero, dtype = _quantization(lw, node, inputs, len(_shape(x)))
    if dtype not in _QUANTIZED_TYPES:
        raise Unsupported(f"QuantizeLinear to {dtype} is not supported (8- and 16-bit integers)")
    return lw.emit(graph.QuantizeOp(lw.ssa(x), lw.ssa(scale), lw.ssa(zero.astype(dtype))))


@_register(
    ["DequantizeLinear"], "supported", _qdq_precheck, static_inputs=(1, 2),
    note="graph.dequantize: (x - zero point) * scale; constant int8 weights stay int8 (matrix engine)",
)  # fmt: skip
def _lower_dequantize_linear(lw: Lowering, node, inputs):
    x = inputs[0]
    if _dtype(x) not in (*_QUANTIZED_TYPES, np.dtype(np.int32)):
        raise Unsupported(f"DequantizeLinear of {_dtype(x)} is not supported (8- and 16-bit integers, int32)")
    scale, zero, _ = _quantization(lw, node, inputs, len(_shape(x)))
    return lw.emit_kept(graph.DequantizeOp(lw.ssa(x), lw.ssa(scale), lw.ssa(zero.astype(_dtype(x)))))


# --------------------------------------------------------------------------- linear algebra


@_register(["MatMul"], "supported")
def _lower_matmul(lw: Lowering, node, inputs):
    return lw.emit(graph.MatMulOp(lw.ssa(inputs[0]), lw.ssa(inputs[1])))


@_register(["Gemm"], "decomposed", note="graph.transpose + graph.matmul + graph.mul/add")
def _lower_gemm(lw: Lowering, node, inputs):
    a = attrs(node)
    lhs, rhs = inputs[0], inputs[1]
    if a.get("transA", 0):
        lhs = lw.emit(graph.TransposeOp(lw.ssa(lhs), [1, 0]))[0]
    if a.get("transB", 0):
        rhs = lw.emit(graph.TransposeOp(lw.ssa(rhs), [1, 0]))[0]
    result = lw.emit(graph.MatMulOp(lw.ssa(lhs), lw.ssa(rhs)))[0]
    alpha, beta = attr_float(node, "alpha", 1.0), attr_float(node, "beta", 1.0)
    dtype = _dtype(result)
    if alpha != 1.0:
        result = lw.emit(graph.MulOp(lw.ssa(result), lw.ssa(np.asarray(alpha, dtype))))[0]
    if len(inputs) > 2 and inputs[2] is not None:
        c = inputs[2]
        if beta != 1.0:
            c = lw.emit(graph.MulOp(lw.ssa(c), lw.ssa(np.asarray(beta, dtype))))[0]
        result = lw.emit(graph.AddOp(lw.ssa(result), lw.ssa(c)))[0]
    return [result]


def _auto_pads(node, in_spatial, kernel, strides, dilations) -> list[int]:
    mode = attr_str(node, "auto_pad", "NOTSET")
    n = len(kernel)
    if mode == "NOTSET":
        return attr_ints(node, "pads", [0] * (2 * n))
    if mode == "VALID":
        return [0] * (2 * n)
    begins, ends = [], []
    for size, k, s, d in zip(in_spatial, kernel, strides, dilations, strict=True):
        out = -(-size // s)
        total = max(0, (out - 1) * s + d * (k - 1) + 1 - size)
        small, large = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else large)
        ends.append(large if mode == "SAME_UPPER" else small)
    return begins + ends


def _auto_pad_precheck(node) -> str | None:
    mode = attr_str(node, "auto_pad", "NOTSET")
    if mode not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        return f"unknown auto_pad '{mode}'"
    return None


def _window_attrs(node, x_shape, kernel) -> dict[str, Attribute]:
    n = len(kernel)
    strides = attr_ints(node, "strides", [1] * n)
    dilations = attr_ints(node, "dilations", [1] * n)
    pads = _auto_pads(node, x_shape[2:], kernel, strides, dilations)
    result: dict[str, Attribute] = {"strides": graph.ints_attr(strides)}
    if any(pads):
        result["pads"] = graph.ints_attr(pads)
    if any(d != 1 for d in dilations):
        result["dilations"] = graph.ints_attr(dilations)
    return result


@_register(["Conv"], "supported", _auto_pad_precheck)
def _lower_conv(lw: Lowering, node, inputs):
    x, w = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    kernel = _shape(w)[2:]
    declared = attr_ints(node, "kernel_shape") if "kernel_shape" in attrs(node) else None
    if declared is not None and declared != list(kernel):
        raise Unsupported(f"kernel_shape {declared} disagrees with the weight {list(kernel)}")
    attributes = _window_attrs(node, _shape(x), kernel)
    group = attr_int(node, "group", 1)
    if group != 1:
        attributes["group"] = IntegerAttr(group, i64)
    operands = [lw.ssa(x), lw.ssa(w), [lw.ssa(bias)] if bias is not None else []]
    return lw.emit_inferred(graph.ConvOp, operands, attributes, _dtype(x))


def _pool_precheck(node) -> str | None:
    if len(node.output) > 1 and node.output[1]:
        return "MaxPool's second output, Indices, is not supported"
    return _auto_pad_precheck(node)


@_register(["MaxPool", "AveragePool"], "supported", _pool_precheck)
def _lower_pool(lw: Lowering, node, inputs):
    a = attrs(node)
    kernel = attr_ints(node, "kernel_shape")
    x = inputs[0]
    attributes = _window_attrs(node, _shape(x), kernel)
    attributes["kernel_shape"] = graph.ints_attr(kernel)
    if a.get("ceil_mode", 0):
        attributes["ceil_mode"] = UnitAttr()
    if node.op_type == "AveragePool" and a.get("count_include_pad", 0):
        attributes["count_include_pad"] = UnitAttr()
    op_type = graph.MaxPoolOp if node.op_type == "MaxPool" else graph.AvgPoolOp
    return lw.emit_inferred(op_type, [lw.ssa(x)], attributes, _dtype(x))


@_register(
    ["GlobalAveragePool", "GlobalMaxPool"],
    "decomposed",
    note="graph.reduce_mean/max over spatial dims",
)
def _lower_global_pool(lw: Lowering, node, inputs):
    rank = len(_shape(inputs[0]))
    op_type = graph.ReduceMeanOp if node.op_type == "GlobalAveragePool" else graph.ReduceMaxOp
    return [lw.reduce(op_type, inputs[0], list(range(2, rank)), keepdims=True)]


# --------------------------------------------------------------------------- normalisation


def _bn_precheck(node) -> str | None:
    if attrs(node).get("training_mode", 0):
        return "BatchNormalization in training mode is not supported (inference only)"
    return _only_first_output(node)


@_register(["BatchNormalization"], "supported", _bn_precheck)
def _lower_batch_norm(lw: Lowering, node, inputs):
    eps = attr_float(node, "epsilon", 1e-5)
    operands = [lw.ssa(v) for v in inputs[:5]]
    op = graph.BatchNormOp.create(
        operands=operands,
        result_types=[operands[0].type],
        attributes={"epsilon": graph.float_attr(eps)},
    )
    return lw.emit(op)


def _stash_type_precheck(node) -> str | None:
    stash = attr_int(node, "stash_type", onnx.TensorProto.FLOAT)
    if stash != onnx.TensorProto.FLOAT:
        return f"{node.op_type} stash_type {stash} (only float32 statistics are supported)"
    return None


@_register(["LayerNormalization"], "supported", _stash_type_precheck)
def _lower_layer_norm(lw: Lowering, node, inputs):
    x = lw.ssa(inputs[0])
    rank = len(_shape(x))
    axis = _axis(attr_int(node, "axis", -1), rank, node)
    epsilon = attr_float(node, "epsilon", 1e-5)
    bias = inputs[2] if len(inputs) > 2 else None
    op = graph.LayerNormOp.build(
        operands=[x, lw.ssa(inputs[1]), [lw.ssa(bias)] if bias is not None else []],
        result_types=[x.type],
        attributes={"axis": IntegerAttr(axis - rank, i64), "epsilon": graph.float_attr(epsilon)},
    )
    outputs = lw.emit(op)
    if any(node.output[1:]):
        outputs += _layer_norm_statistics(lw, x, axis, epsilon)
    return outputs


def _layer_norm_statistics(lw: Lowering, x: Value, axis: int, epsilon: float) -> list[Value]:
    """LayerNormalization's optional Mean and InvStdDev outputs (reduced dims kept as 1)."""
    _, mean, inv_std = _moments(lw, x, list(range(axis, len(_shape(x)))), epsilon)
    return [mean, inv_std]


def _moments(lw: Lowering, x: Value, axes: Sequence[int], epsilon: float) -> tuple[Value, Value, Value]:
    """(x - mean, mean, 1 / sqrt(var + epsilon)) over `axes`, which stay as size-1 dims."""
    mean = lw.reduce(graph.ReduceMeanOp, x, axes, keepdims=True)
    centered = lw.emit(graph.SubOp(lw.ssa(x), lw.ssa(mean)))[0]
    var = lw.reduce(graph.ReduceMeanOp, _square(lw, centered), axes, keepdims=True)
    eps = np.asarray(epsilon, dtype=_dtype(x))
    std = _unary_op(lw, graph.SqrtOp, lw.emit(graph.AddOp(lw.ssa(var), lw.ssa(eps)))[0])
    return centered, mean, _unary_op(lw, graph.ReciprocalOp, std)


def _normalize(lw: Lowering, x: Value, axes: Sequence[int], epsilon: float) -> Value:
    centered, _, inv_std = _moments(lw, x, axes, epsilon)
    return lw.emit(graph.MulOp(lw.ssa(centered), lw.ssa(inv_std)))[0]


def _affine(lw: Lowering, x: Value, scale: Value | None, bias: Value | None, axis: int = 1) -> Value:
    """x * scale + bias, with 1-D scale and bias along dim `axis` of x."""
    rank = len(_shape(x))
    for value, op_type in ((scale, graph.MulOp), (bias, graph.AddOp)):
        if value is None:
            raise Unsupported("scale and bias are required")
        shaped = lw.reshape(value, [*_shape(value), *([1] * (rank - axis - 1))])
        x = lw.emit(op_type(lw.ssa(x), lw.ssa(shaped)))[0]
    return x


@_register(["InstanceNormalization"], "decomposed", note="graph.reduce_mean and elementwise ops")
def _lower_instance_norm(lw: Lowering, node, inputs):
    x = inputs[0]
    rank = len(_shape(x))
    if rank < 3:
        raise Unsupported(f"InstanceNormalization needs an N x C x D1 x ... input, got rank {rank}")
    epsilon = attr_float(node, "epsilon", 1e-5)
    normalized = _normalize(lw, x, list(range(2, rank)), epsilon)
    return [_affine(lw, normalized, inputs[1], inputs[2])]


@_register(
    ["GroupNormalization"], "decomposed", _stash_type_precheck, note="graph.reshape + reduce_mean + ..."
)
def _lower_group_norm(lw: Lowering, node, inputs):
    """Normalises each of `num_groups` channel groups, then scales per channel (opset 21; onnx
    rejects the per-group scale of opset 18 as deprecated)."""
    x = inputs[0]
    shape = _shape(x)
    groups = attr_int(node, "num_groups")
    if len(shape) < 2 or groups <= 0 or shape[1] % groups:
        raise Unsupported(f"num_groups {groups} must divide the channels of {list(shape)}")
    epsilon = attr_float(node, "epsilon", 1e-5)
    grouped = lw.reshape(x, [shape[0], groups, int(np.prod(shape[1:])) // groups])
    normalized = _normalize(lw, grouped, [2], epsilon)
    return [_affine(lw, lw.reshape(normalized, shape), inputs[1], inputs[2])]


@_register(["Softmax", "LogSoftmax"], "supported")
def _lower_softmax(lw: Lowering, node, inputs):
    x = lw.ssa(inputs[0])
    rank = len(_shape(x))
    default = -1 if lw.opset >= 13 else 1
    axis = _axis(attr_int(node, "axis", default), rank, node)
    if lw.opset < 13 and axis != rank - 1:
        raise Unsupported("Softmax before opset 13 flattens from `axis`; only the last axis is supported")
    op_type = graph.SoftmaxOp if node.op_type == "Softmax" else graph.LogSoftmaxOp
    return lw.emit(op_type(x, axis - rank))


# --------------------------------------------------------------------------- reductions

_REDUCE = {
    "ReduceSum": graph.ReduceSumOp,
    "ReduceMean": graph.ReduceMeanOp,
    "ReduceMax": graph.ReduceMaxOp,
    "ReduceMin": graph.ReduceMinOp,
    "ReduceProd": graph.ReduceProdOp,
}


def _reduce_axes(lw: Lowering, node, inputs) -> list[int] | None:
    """The sorted non-negative axes to reduce (input 1 from opset 18, else the attribute);
    None when there are none and `noop_with_empty_axes` asks for no reduction."""
    a = attrs(node)
    rank = len(_shape(inputs[0]))
    if len(inputs) > 1 and inputs[1] is not None:
        axes = [int(v) for v in lw.const(inputs[1], "axes").reshape(-1)]
    else:
        axes = attr_ints(node, "axes", [])
    if not axes:
        return None if a.get("noop_with_empty_axes", 0) else list(range(rank))
    return sorted({_axis(int(ax), rank, node) for ax in axes})


@_register(list(_REDUCE), "supported", static_inputs=[1])
def _lower_reduce(lw: Lowering, node, inputs):
    axes = _reduce_axes(lw, node, inputs)
    if axes is None:
        return [inputs[0]]
    keepdims = bool(attrs(node).get("keepdims", 1))
    return [lw.reduce(_REDUCE[node.op_type], inputs[0], axes, keepdims)]


_COMPOSITE_REDUCE: dict[str, tuple[Callable | None, Callable | None]] = {
    "ReduceSumSquare": (_square, None),
    "ReduceL1": (lambda lw, x: _unary_op(lw, graph.AbsOp, x), None),
    "ReduceL2": (_square, lambda lw, x: _unary_op(lw, graph.SqrtOp, x)),
    "ReduceLogSum": (None, lambda lw, x: _unary_op(lw, graph.LogOp, x)),
}
"""f(sum(g(x))) reductions as (g, f); with noop_with_empty_axes and no axes, f(g(x))."""


@_register(
    list(_COMPOSITE_REDUCE), "decomposed", note="elementwise ops around graph.reduce_sum", static_inputs=[1]
)
def _lower_composite_reduce(lw: Lowering, node, inputs):
    before, after = _COMPOSITE_REDUCE[node.op_type]
    x = before(lw, inputs[0]) if before else inputs[0]
    axes = _reduce_axes(lw, node, inputs)
    if axes is not None:
        x = lw.reduce(graph.ReduceSumOp, x, axes, bool(attrs(node).get("keepdims", 1)))
    return [after(lw, x) if after else x]


def _finite_or_zero(lw: Lowering, x: Value) -> Value:
    """x where it is finite (or NaN), else 0: a shift that keeps all -inf rows at -inf, not NaN."""
    inf = np.asarray(np.inf, dtype=_dtype(x))
    infinite = lw.emit(graph.EqualOp(lw.ssa(_unary_op(lw, graph.AbsOp, x)), lw.ssa(inf)))[0]
    zero = np.zeros((), dtype=_dtype(x))
    return lw.emit(graph.WhereOp(lw.ssa(infinite), lw.ssa(zero), lw.ssa(x)))[0]


@_register(["ReduceLogSumExp"], "decomposed", note="max + log(sum(exp(x - max))), stable", static_inputs=[1])
def _lower_log_sum_exp(lw: Lowering, node, inputs):
    x = inputs[0]
    axes = _reduce_axes(lw, node, inputs)
    if axes is None:
        return [x]  # log(exp(x))
    peak = _finite_or_zero(lw, lw.reduce(graph.ReduceMaxOp, x, axes, keepdims=True))
    shifted = _unary_op(lw, graph.ExpOp, lw.emit(graph.SubOp(lw.ssa(x), lw.ssa(peak)))[0])
    total = _unary_op(lw, graph.LogOp, lw.reduce(graph.ReduceSumOp, shifted, axes, keepdims=True))
    result = lw.emit(graph.AddOp(lw.ssa(total), lw.ssa(peak)))[0]
    if attrs(node).get("keepdims", 1):
        return [result]
    return [lw.reshape(result, graph.ReduceOp.infer_shape(_shape(x), axes, keepdims=False))]


@_register(["ArgMax", "ArgMin"], "supported")
def _lower_arg_reduce(lw: Lowering, node, inputs):
    a = attrs(node)
    x = lw.ssa(inputs[0])
    shape = _shape(x)
    axis = _axis(attr_int(node, "axis", 0), len(shape), node)
    keep = bool(a.get("keepdims", 1))
    attributes: dict[str, Attribute] = {"axes": graph.ints_attr([axis])}
    if keep:
        attributes["keepdims"] = UnitAttr()
    if a.get("select_last_index", 0):
        attributes["select_last_index"] = UnitAttr()
    out = graph.ReduceOp.infer_shape(shape, [axis], keep)
    op_type = graph.ArgMaxOp if node.op_type == "ArgMax" else graph.ArgMinOp
    op = op_type.build(operands=[x], result_types=[TensorType(i64, out)], attributes=attributes)
    return lw.emit(op)


# --------------------------------------------------------------------------- data movement


@_register(["Reshape"], "supported", static_inputs=[1])
def _lower_reshape(lw: Lowering, node, inputs):
    x = inputs[0]
    target = [int(v) for v in lw.const(inputs[1], "shape").reshape(-1)]
    allow_zero = bool(attrs(node).get("allowzero", 0))
    shape = _shape(x)
    out = [shape[i] if d == 0 and not allow_zero else d for i, d in enumerate(target)]
    if out.count(-1) > 1:
        raise Unsupported(f"shape {target} has more than one -1")
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1]))
        total = int(np.prod(shape))
        if known == 0 or total % known:
            raise Unsupported(f"cannot reshape {list(shape)} to {target}")
        out[out.index(-1)] = total // known
    if int(np.prod(out)) != int(np.prod(shape)):
        raise Unsupported(f"cannot reshape {list(shape)} ({int(np.prod(shape))} elements) to {target}")
    return [lw.reshape(x, out)]


@_register(["Flatten"], "decomposed", note="graph.reshape")
def _lower_flatten(lw: Lowering, node, inputs):
    shape = _shape(inputs[0])
    axis = attr_int(node, "axis", 1)
    if not -len(shape) <= axis <= len(shape):
        raise Unsupported(f"axis {axis} is out of range for rank {len(shape)}")
    axis = axis + len(shape) if axis < 0 else axis
    return [lw.reshape(inputs[0], [int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))])]


def _axes_input(lw: Lowering, node, inputs) -> list[int] | None:
    if len(inputs) > 1 and inputs[1] is not None:
        return [int(v) for v in lw.const(inputs[1], "axes").reshape(-1)]
    return attr_ints(node, "axes") if "axes" in attrs(node) else None


@_register(["Squeeze"], "decomposed", note="graph.reshape", static_inputs=[1])
def _lower_squeeze(lw: Lowering, node, inputs):
    shape = _shape(inputs[0])
    axes = _axes_input(lw, node, inputs)
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    axes = {_axis(a, len(shape), node) for a in axes}
    if any(shape[a] != 1 for a in axes):
        raise Unsupported(f"cannot squeeze dims {sorted(axes)} of {list(shape)}: not all are 1")
    return [lw.reshape(inputs[0], [d for i, d in enumerate(shape) if i not in axes])]


@_register(["Unsqueeze"], "decomposed", note="graph.reshape", static_inputs=[1])
def _lower_unsqueeze(lw: Lowering, node, inputs):
    shape = list(_shape(inputs[0]))
    axes = _axes_input(lw, node, inputs) or []
    rank = len(shape) + len(axes)
    for a in sorted(_axis(a, rank, node) for a in axes):
        shape.insert(a, 1)
    return [lw.reshape(inputs[0], shape)]


@_register(["Transpose"], "supported")
def _lower_transpose(lw: Lowering, node, inputs):
    rank = len(_shape(inputs[0]))
    perm = attr_ints(node, "perm", list(reversed(range(rank))))
    if sorted(perm) != list(range(rank)):
        raise Unsupported(f"perm {perm} is not a permutation of rank {rank}")
    return lw.emit(graph.TransposeOp(lw.ssa(inputs[0]), perm))


def _block_mode(node) -> str:
    return attr_str(node, "mode", "DCR").upper()


def _block_precheck(node) -> str | None:
    """The mode (a blocksize < 1 is `invalid_attribute`'s, a missing one onnx.checker's)."""
    return None if _block_mode(node) in ("DCR", "CRD") else f"unknown mode '{_block_mode(node)}'"


@_register(["DepthToSpace", "SpaceToDepth"], "decomposed", _block_precheck, note="graph.reshape + transpose")
def _lower_depth_space(lw: Lowering, node, inputs):
    x = inputs[0]
    bs = attr_int(node, "blocksize")
    split, perm, out = _depth_space_plan(node.op_type, _shape(x), bs, _block_mode(node) == "DCR")
    moved = lw.emit(graph.TransposeOp(lw.ssa(lw.reshape(x, split)), perm))[0]
    return [lw.reshape(moved, out)]


def _depth_space_plan(op_type: str, shape, bs: int, dcr: bool) -> tuple[list[int], list[int], list[int]]:
    """(rank-6 shape, permutation, result shape); DCR orders channels depth-column-row, CRD
    column-row-depth."""
    if len(shape) != 4:
        raise Unsupported(f"{op_type} needs an N x C x H x W input, got {list(shape)}")
    n, c, h, w = shape
    if op_type == "DepthToSpace":
        if c % (bs * bs):
            raise Unsupported(f"channels {c} are not a multiple of blocksize^2 = {bs * bs}")
        split = [n, bs, bs, c // bs**2, h, w] if dcr else [n, c // bs**2, bs, bs, h, w]
        perm = [0, 3, 4, 1, 5, 2] if dcr else [0, 1, 4, 2, 5, 3]
        return split, perm, [n, c // bs**2, h * bs, w * bs]
    if h % bs or w % bs:
        raise Unsupported(f"spatial dims {h}x{w} are not multiples of blocksize {bs}")
    perm = [0, 3, 5, 1, 2, 4] if dcr else [0, 1, 3, 5, 2, 4]
    return [n, c, h // bs, bs, w // bs, bs], perm, [n, c * bs * bs, h // bs, w // bs]


@_register(["Concat"], "supported")
def _lower_concat(lw: Lowering, node, inputs):
    values = [v for v in inputs if v is not None]
    rank = len(_shape(values[0]))
    axis = _axis(attr_int(node, "axis"), rank, node)
    nonempty = [v for v in values if _shape(v)[axis] != 0] or values[:1]
    if len(nonempty) == 1:
        return [nonempty[0]]
    return lw.emit(graph.ConcatOp([lw.ssa(v) for v in nonempty], axis))


@_register(["Split"], "supported", static_inputs=[1])
def _lower_split(lw: Lowering, node, inputs):
    a = attrs(node)
    x = inputs[0]
    shape = _shape(x)
    axis = _axis(attr_int(node, "axis", 0), len(shape), node)
    if len(inputs) > 1 and inputs[1] is not None:
        sizes = [int(v) for v in lw.const(inputs[1], "split")]
    elif "split" in a:
        sizes = attr_ints(node, "split")
    else:
        count = attr_int(node, "num_outputs", len(node.output))
        chunk = -(-shape[axis] // count)
        sizes = [min(chunk, shape[axis] - i * chunk) for i in range(count)]
    if sum(sizes) != shape[axis] or len(sizes) != len(node.output):
        raise Unsupported(f"split sizes {sizes} do not cover dim {shape[axis]} in {len(node.output)} outputs")
    types = []
    for size in sizes:
        piece = list(shape)
        piece[axis] = size
        types.append(TensorType(element_type_of(_dtype(x)), piece))
    op = graph.SplitOp.build(
        operands=[lw.ssa(x)], result_types=[types], attributes={"axis": IntegerAttr(axis, i64)}
    )
    return lw.emit(op)


def _slice_params(lw: Lowering, inputs, shape) -> tuple[list[int], list[int], list[int]]:
    starts = lw.const(inputs[1], "starts").astype(np.int64).reshape(-1)
    ends = lw.const(inputs[2], "ends").astype(np.int64).reshape(-1)
    rank = len(shape)
    axes = (
        lw.const(inputs[3], "axes").astype(np.int64).reshape(-1)
        if len(inputs) > 3 and inputs[3] is not None
        else np.arange(len(starts))
    )
    steps = (
        lw.const(inputs[4], "steps").astype(np.int64).reshape(-1)
        if len(inputs) > 4 and inputs[4] is not None
        else np.ones(len(starts), np.int64)
    )
    full_start, full_step, full_count = [0] * rank, [1] * rank, list(shape)
    for s, e, ax, st in zip(starts, ends, axes, steps, strict=True):
        ax = int(ax) % rank
        if st == 0:
            raise Unsupported("Slice step must not be 0")
        rng = range(shape[ax])[slice(int(s), int(e), int(st))]
        full_step[ax] = int(st)
        full_count[ax] = len(rng)
        full_start[ax] = rng.start if len(rng) else 0
    return full_start, full_step, full_count


@_register(["Slice"], "supported", static_inputs=[1, 2, 3, 4])
def _lower_slice(lw: Lowering, node, inputs):
    x = inputs[0]
    shape = _shape(x)
    starts, steps, counts = _slice_params(lw, inputs, shape)
    if counts == list(shape) and all(s == 1 for s in steps):
        return [x]
    op = graph.SliceOp.build(
        operands=[lw.ssa(x)],
        result_types=[TensorType(element_type_of(_dtype(x)), counts)],
        attributes={"starts": graph.ints_attr(starts), "steps": graph.ints_attr(steps)},
    )
    return lw.emit(op)


@_register(["Expand"], "supported", static_inputs=[1])
def _lower_expand(lw: Lowering, node, inputs):
    x = inputs[0]
    target = [int(v) for v in lw.const(inputs[1], "shape").reshape(-1)]
    try:
        out = list(np.broadcast_shapes(_shape(x), tuple(target)))
    except ValueError as error:
        raise Unsupported(f"cannot expand {list(_shape(x))} to {target}") from error
    if out == list(_shape(x)):
        return [x]
    return lw.emit(
        graph.BroadcastOp.build(
            operands=[lw.ssa(x)], result_types=[TensorType(element_type_of(_dtype(x)), out)]
        )
    )


@_register(["Tile"], "supported", static_inputs=[1])
def _lower_tile(lw: Lowering, node, inputs):
    x = inputs[0]
    repeats = [int(v) for v in lw.const(inputs[1], "repeats").reshape(-1)]
    out = [d * r for d, r in zip(_shape(x), repeats, strict=True)]
    op = graph.TileOp.build(
        operands=[lw.ssa(x)],
        result_types=[TensorType(element_type_of(_dtype(x)), out)],
        attributes={"repeats": graph.ints_attr(repeats)},
    )
    return lw.emit(op)


def _pad_precheck(node) -> str | None:
    mode = attr_str(node, "mode", "constant")
    return None if mode in ("constant", "reflect", "edge") else f"pad mode '{mode}' is not supported"


@_register(["Pad"], "supported", _pad_precheck, static_inputs=[1, 2, 3])
def _lower_pad(lw: Lowering, node, inputs):
    x = inputs[0]
    shape = _shape(x)
    rank = len(shape)
    raw = [int(v) for v in lw.const(inputs[1], "pads").reshape(-1)]
    axes = list(range(rank))
    if len(inputs) > 3 and inputs[3] is not None:
        axes = [int(a) % rank for a in lw.const(inputs[3], "axes").reshape(-1)]
    pads = [0] * (2 * rank)
    for i, ax in enumerate(axes):
        pads[ax], pads[ax + rank] = raw[i], raw[i + len(axes)]
    value = 0.0
    if len(inputs) > 2 and inputs[2] is not None:
        value = (
            float(lw.const(inputs[2], "constant_value").reshape(-1)[0])
            if lw.const(inputs[2], "constant_value").size
            else 0.0
        )
    mode = attr_str(node, "mode", "constant")
    out = [d + pads[i] + pads[i + rank] for i, d in enumerate(shape)]
    attributes: dict[str, Attribute] = {
        "pads": graph.ints_attr(pads),
        "mode": StringAttr(mode),
    }
    if mode == "constant":
        attributes["value"] = graph.float_attr(value)
    op = graph.PadOp.build(
        operands=[lw.ssa(x)],
        result_types=[TensorType(element_type_of(_dtype(x)), out)],
        attributes=attributes,
    )
    return lw.emit(op)


@_register(["Gather"], "supported")
def _lower_gather(lw: Lowering, node, inputs):
    x, indices = inputs[0], inputs[1]
    shape = _shape(x)
    axis = _axis(attr_int(node, "axis", 0), len(shape), node)
    out = [*shape[:axis], *_shape(indices), *shape[axis + 1 :]]
    op = graph.GatherOp.build(
        operands=[lw.ssa(x), lw.ssa(indices)],
        result_types=[TensorType(element_type_of(_dtype(x)), out)],
        attributes={"axis": IntegerAttr(axis, i64)},
    )
    return lw.emit(op)


@_register(["GatherND"], "supported")
def _lower_gather_nd(lw: Lowering, node, inputs):
    x, indices = inputs[0], inputs[1]
    batch_dims = attr_int(node, "batch_dims", 0)
    out = graph.GatherNDOp.infer_shape(_shape(x), _shape(indices), batch_dims)
    op = graph.GatherNDOp.build(
        operands=[lw.ssa(x), lw.ssa(indices)],
        result_types=[TensorType(element_type_of(_dtype(x)), out)],
        attributes={"batch_dims": IntegerAttr(batch_dims, i64)},
    )
    return lw.emit(op)


# --------------------------------------------------------------------------- import-time constants


@_register(["Constant"], "decomposed", note="an import-time constant")
def _lower_constant(lw: Lowering, node, inputs):
    a = node.attribute[0]
    if a.name == "value":
        return [numpy_helper.to_array(a.t)]
    scalars = {"value_float": np.float32, "value_int": np.int64, "value_string": None}
    lists = {"value_floats": np.float32, "value_ints": np.int64}
    if a.name in lists:
        return [np.asarray(helper.get_attribute_value(a), dtype=lists[a.name])]
    if a.name in scalars and scalars[a.name] is not None:
        return [np.asarray(helper.get_attribute_value(a), dtype=scalars[a.name])]
    raise Unsupported(f"Constant with attribute '{a.name}' is not supported")


@_register(["Shape"], "decomposed", note="folded to a constant (static shapes)")
def _lower_shape(lw: Lowering, node, inputs):
    shape = np.asarray(_shape(inputs[0]), dtype=np.int64)
    end = attr_int(node, "end") if "end" in attrs(node) else None
    return [shape[attr_int(node, "start", 0) : end]]


@_register(["Size"], "decomposed", note="folded to a constant (static shapes)")
def _lower_size(lw: Lowering, node, inputs):
    return [np.asarray(int(np.prod(_shape(inputs[0]))), dtype=np.int64)]


@_register(["ConstantOfShape"], "decomposed", note="folded to a constant", static_inputs=[0])
def _lower_constant_of_shape(lw: Lowering, node, inputs):
    shape = [int(v) for v in lw.const(inputs[0], "shape").reshape(-1)]
    lw.check_size(shape, node.output[0])
    value = attr_tensor(node, "value")
    fill = numpy_helper.to_array(value).reshape(-1) if value is not None else np.zeros(1, np.float32)
    return [np.full(shape, fill[0], dtype=fill.dtype)]


@_register(["Range"], "decomposed", note="folded to a constant", static_inputs=[0, 1, 2])
def _lower_range(lw: Lowering, node, inputs):
    start, limit, delta = (
        lw.const(v, name).reshape(()) for v, name in zip(inputs, ("start", "limit", "delta"), strict=True)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        steps = np.ceil((limit - start) / delta)
    if not np.isfinite(steps):  # delta 0, or an infinite or NaN bound
        raise Unsupported(f"start {start}, limit {limit} and delta {delta} do not make a finite range")
    count = max(int(steps), 0)
    lw.check_size([count], node.output[0])
    return [(start + np.arange(count) * delta).astype(start.dtype)]
