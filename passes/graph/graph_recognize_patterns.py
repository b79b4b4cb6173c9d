"""`graph-recognize-patterns`: turn decomposed GELU and LayerNorm subgraphs into single ops.

Exporters such as torch.onnx at opset 13 spell GELU and LayerNorm as chains of elementwise
ops. Products are matched as a whole: a chain of single-use `mul` (and `div`/`pow` by a
constant) is flattened into a coefficient times a list of factors, so every association order
and operand order of `x * 0.5 * (1 + erf(x / sqrt(2)))` looks the same:

    mul(mul(x, add(erf(div(x, 1.414)), 1)), 0.5)      ->  0.5 * [x, add(...)]
    mul(mul(x, 0.5), add(erf(mul(x, 0.7071)), 1))     ->  0.5 * [x, add(...)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from aitc.analysis.graph_matching import close, is_splat, other_operand, shape_of, single_use, splat_value
from aitc.dialects import graph
from aitc.types import broadcast_shapes, is_float

INV_SQRT2 = 1.0 / math.sqrt(2.0)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
GELU_CUBIC = 0.044715


@dataclass
class Product:
    """value == coefficient * prod(factors)."""

    coefficient: float = 1.0
    factors: list[SSAValue] = field(default_factory=list[SSAValue])


def _power(op: graph.PowOp) -> int | None:
    exponent = splat_value(op.rhs)
    return int(exponent) if exponent in (2.0, 3.0) else None


def _absorb(value: SSAValue, product: Product, is_root: bool) -> None:
    constant = splat_value(value)
    if constant is not None:
        product.coefficient *= constant
        return
    op = value.owner
    if not is_root and not single_use(value):
        product.factors.append(value)
    elif isinstance(op, graph.MulOp):
        _absorb(op.lhs, product, False)
        _absorb(op.rhs, product, False)
    elif isinstance(op, graph.DivOp) and (divisor := splat_value(op.rhs)) is not None and divisor != 0.0:
        product.coefficient /= divisor
        _absorb(op.lhs, product, False)
    elif isinstance(op, graph.PowOp) and (power := _power(op)) is not None:
        product.factors.extend([op.lhs] * power)
    else:
        product.factors.append(value)


def flatten_product(value: SSAValue, is_root: bool = False) -> Product:
    """`value` as coefficient * factors, looking through single-use mul/div/pow (the root, if
    `is_root`, may have any number of uses)."""
    product = Product()
    _absorb(value, product, is_root)
    return product


def _is_scaled(value: SSAValue, coefficient: float, factors: list[SSAValue]) -> bool:
    """`value` is a single-use product equal to coefficient * factors (as a multiset of x)."""
    if not single_use(value):
        return False
    product = flatten_product(value)
    return (
        close(product.coefficient, coefficient)
        and len(product.factors) == len(factors)
        and all(f is g for f, g in zip(product.factors, factors, strict=True))
    )


def _one_plus(value: SSAValue, op_type: type[graph.ElementwiseUnaryOp]) -> SSAValue | None:
    """For value = 1 + op_type(arg) (single-use add and op), the op's input `arg`."""
    add = value.owner
    if not isinstance(add, graph.AddOp) or not single_use(value):
        return None
    for term in (add.lhs, add.rhs):
        unary = term.owner
        if isinstance(unary, op_type) and single_use(term) and is_splat(other_operand(add, term), 1.0):
            return unary.input
    return None


def _is_cubic_inner(value: SSAValue, x: SSAValue) -> bool:
    """value = x + 0.044715 * x**3 (any order; x**3 as pow(x, 3) or x*x*x)."""
    add = value.owner
    if not isinstance(add, graph.AddOp) or not single_use(value) or x not in (add.lhs, add.rhs):
        return False
    return _is_scaled(other_operand(add, x), GELU_CUBIC, [x, x, x])


def _gelu_mode(x: SSAValue, rest: SSAValue) -> str | None:
    """'none' if rest == 1 + erf(x / sqrt(2)), 'tanh' if rest == 1 + tanh(sqrt(2/pi) * (x +
    0.044715 x^3)), else None."""
    erf_arg = _one_plus(rest, graph.ErfOp)
    if erf_arg is not None and _is_scaled(erf_arg, INV_SQRT2, [x]):
        return "none"
    tanh_arg = _one_plus(rest, graph.TanhOp)
    if tanh_arg is None or not single_use(tanh_arg):
        return None
    product = flatten_product(tanh_arg)
    if not close(product.coefficient, SQRT_2_OVER_PI) or len(product.factors) != 1:
        return None
    return "tanh" if _is_cubic_inner(product.factors[0], x) else None


class RecognizeGelu(RewritePattern):
    """0.5 * x * (1 + erf(x / sqrt(2))) -> gelu(x); 0.5 * x * (1 + tanh(sqrt(2/pi) * (x +
    0.044715 * x^3))) -> gelu(x) {approximate = "tanh"}."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MulOp, rewriter: PatternRewriter) -> None:
        product = flatten_product(op.output, is_root=True)
        if not close(product.coefficient, 0.5) or len(product.factors) != 2:
            return
        first, second = product.factors
        for x, rest in ((first, second), (second, first)):
            if x.type != op.output.type or not is_float(op.output.type.get_element_type()):
                continue
            mode = _gelu_mode(x, rest)
            if mode is None:
                continue
            attributes: dict[str, Attribute] = {"approximate": StringAttr("tanh")} if mode == "tanh" else {}
            gelu = graph.GeluOp(x, attributes)
            gelu.location = op.location
            gelu.output.name_hint = op.output.name_hint
            rewriter.replace(op, gelu)
            return


Affine = tuple[SSAValue, SSAValue, SSAValue | None]
"""(normalized, scale, bias) of `normalized * scale (+ bias)`."""


@dataclass
class LayerNormMatch:
    x: SSAValue
    scale: SSAValue
    bias: SSAValue | None
    first_axis: int
    epsilon: float


def _split_scale(mul: graph.MulOp, bias: SSAValue | None) -> Affine | None:
    for value in (mul.lhs, mul.rhs):
        if isinstance(value.owner, graph.DivOp) and single_use(value):
            return value, other_operand(mul, value), bias
    return None


def _split_affine(root: graph.AddOp | graph.MulOp) -> Affine | None:
    """root = normalized * scale (+ bias): (normalized, scale, bias), normalized made by a div."""
    if isinstance(root, graph.MulOp):
        return _split_scale(root, None)
    for value in (root.lhs, root.rhs):
        mul = value.owner
        if isinstance(mul, graph.MulOp) and single_use(value):
            found = _split_scale(mul, other_operand(root, value))
            if found is not None:
                return found
    return None


def _reduce_axes(value: SSAValue) -> tuple[int, ...] | None:
    """Axes of a keepdims reduce_mean over trailing dims, producing `value`; else None."""
    op = value.owner
    if not isinstance(op, graph.ReduceMeanOp) or op.keepdims is None or not single_use(value):
        return None
    axes, rank = op.reduced_axes(), len(shape_of(op.input))
    trailing = tuple(range(rank - len(axes), rank))
    return axes if axes and axes == trailing else None


def _is_square_of(value: SSAValue, centered: SSAValue) -> bool:
    op = value.owner
    if not single_use(value):
        return False
    if isinstance(op, graph.MulOp):
        return op.lhs is centered and op.rhs is centered
    return isinstance(op, graph.PowOp) and op.lhs is centered and is_splat(op.rhs, 2.0)


def _match_normalized(div_value: SSAValue) -> tuple[SSAValue, tuple[int, ...], float] | None:
    """div = (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps): (x, axes, eps)."""
    div = div_value.owner
    assert isinstance(div, graph.DivOp)
    sub, sqrt = div.lhs.owner, div.rhs.owner
    if not isinstance(sub, graph.SubOp) or not isinstance(sqrt, graph.SqrtOp) or not single_use(div.rhs):
        return None
    add = sqrt.input.owner
    if not isinstance(add, graph.AddOp) or not single_use(sqrt.input):
        return None
    var = next((v.owner for v in (add.lhs, add.rhs) if isinstance(v.owner, graph.ReduceMeanOp)), None)
    epsilon = None if var is None else splat_value(other_operand(add, var.output))
    if var is None or epsilon is None or not _is_square_of(var.input, sub.output):
        return None
    x, mean = sub.lhs, sub.rhs
    axes = _reduce_axes(mean)
    if axes is None or axes != _reduce_axes(var.output):
        return None
    mean_op = mean.owner
    assert isinstance(mean_op, graph.ReduceMeanOp)  # as `_reduce_axes` checked
    if mean_op.input is not x:
        return None
    if not all(use.operation in (div, var.input.owner) for use in sub.output.uses):
        return None
    return x, axes, epsilon


def _broadcasts_to(value: SSAValue, shape: tuple[int, ...]) -> bool:
    try:
        return broadcast_shapes(shape_of(value), shape) == shape
    except ValueError:
        return False


def match_layer_norm(root: graph.AddOp | graph.MulOp) -> LayerNormMatch | None:
    affine = _split_affine(root)
    if affine is None:
        return None
    div_value, scale, bias = affine
    normalized = _match_normalized(div_value)
    if normalized is None:
        return None
    x, axes, epsilon = normalized
    norm_shape = shape_of(x)[axes[0] :]
    if root.output.type != x.type or not is_float(graph.tensor_of(x).get_element_type()):
        return None
    if not all(_broadcasts_to(v, norm_shape) for v in (scale, bias) if v is not None):
        return None
    return LayerNormMatch(x, scale, bias, axes[0] - len(shape_of(x)), epsilon)


class RecognizeLayerNorm(RewritePattern):
    """(x - mean) / sqrt(mean((x - mean)^2) + eps) * gamma (+ beta), means over trailing
    axes with keepdims -> layer_norm(x, gamma, beta) {axis, epsilon}."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.AddOp | graph.MulOp, rewriter: PatternRewriter) -> None:
        found = match_layer_norm(op)
        if found is None:
            return
        operands = [found.x, found.scale, *([found.bias] if found.bias is not None else [])]
        norm = graph.LayerNormOp.create(
            operands=operands,
            result_types=[found.x.type],
            attributes={
                "axis": IntegerAttr(found.first_axis, i64),
                "epsilon": graph.float_attr(found.epsilon),
            },
        )
        norm.location = op.location
        norm.output.name_hint = op.output.name_hint
        rewriter.replace(op, norm)


@dataclass(frozen=True)
class GraphRecognizePatternsPass(ModulePass):
    """Replaces decomposed GELU and LayerNorm subgraphs by `graph.gelu` and `graph.layer_norm`.

    Input:
      Any module with graph ops, typically fresh from the ONNX frontend (opset 13 exports).
    Output:
      `0.5 * x * (1 + erf(x / sqrt(2)))` in any association order, with div by 1.4142135 or
      mul by 0.70710678, becomes `graph.gelu`; `0.5 * x * (1 + tanh(0.79788456 * (x + 0.044715
      * x^3)))`, with pow(x, 3) or x*x*x, becomes `graph.gelu {approximate = "tanh"}`.
      `(x - mean) / sqrt(mean((x - mean)^2) + eps) * gamma (+ beta)`, with pow 2 or a self-mul,
      means over trailing axes with keepdims, becomes `graph.layer_norm {axis, epsilon}`
      (axis negative, epsilon taken from the constant). The matched ops left unused are erased.
    Invariants:
      Constants must match within a relative 1e-4 (0.5, 1, sqrt(2), sqrt(2/pi), 0.044715, 2).
      Only chains whose intermediates have no use outside the chain are rewritten, and only
      when the result has the type of x (no broadcast widening), so results are unchanged up to
      float rounding.
    """

    name = "graph-recognize-patterns"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # Reverse walk: the outermost op of a chain (add beta, mul 0.5) is tried before the
        # inner ones, so a LayerNorm with beta is not first matched as one without.
        PatternRewriteWalker(
            GreedyRewritePatternApplier([RecognizeGelu(), RecognizeLayerNorm()]),
            walk_reverse=True,
        ).rewrite_module(op)
