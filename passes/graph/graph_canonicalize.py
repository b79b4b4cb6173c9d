"""`graph-canonicalize`: remove no-op graph ops and merge chains of data-movement ops."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerType, ModuleOp, Signedness, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from aitc.analysis.graph_matching import is_splat, producer, replace_with_value, shape_of
from aitc.dialects import graph
from aitc.types import is_bool, is_float, numpy_dtype


class ElideIdentityReshape(RewritePattern):
    """reshape(x) with the type of x -> x; reshape(reshape(x)) -> reshape(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReshapeOp, rewriter: PatternRewriter) -> None:
        if op.input.type == op.output.type:
            replace_with_value(rewriter, op, op.input)
            return
        inner = producer(op.input, graph.ReshapeOp)
        if inner is None:
            return
        merged = graph.ReshapeOp(inner.input, shape_of(op.output))
        merged.location = op.location
        rewriter.replace(op, merged)


def _compose(inner: tuple[int, ...], outer: tuple[int, ...]) -> tuple[int, ...]:
    """transpose(transpose(x, inner), outer) == transpose(x, result)."""
    return tuple(inner[p] for p in outer)


class ComposeTransposes(RewritePattern):
    """transpose with the identity perm -> x; transpose(transpose(x)) -> one transpose, or x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp, rewriter: PatternRewriter) -> None:
        perm = op.permutation()
        if perm == tuple(range(len(perm))):
            replace_with_value(rewriter, op, op.input)
            return
        inner = producer(op.input, graph.TransposeOp)
        if inner is None:
            return
        composed = _compose(inner.permutation(), perm)
        if composed == tuple(range(len(composed))):
            replace_with_value(rewriter, op, inner.input)
            return
        merged = graph.TransposeOp(inner.input, composed)
        merged.location = op.location
        rewriter.replace(op, merged)


def _is_identity_operand(op: graph.ElementwiseBinaryOp, constant: SSAValue, neutral: float) -> bool:
    """`constant` is a splat of `neutral` and does not widen the result by broadcasting."""
    other = op.rhs if constant is op.lhs else op.lhs
    return other.type == op.output.type and is_splat(constant, neutral, rel=0)


class ElideNeutralElement(RewritePattern):
    """x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1 -> x, when the result type is the type of x.

    For floats this drops the sign of a zero result (-0.0 + 0.0 is +0.0), as MLIR's
    `arith` folders do not; graph tensors are compared by value, where -0.0 == 0.0.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: graph.AddOp | graph.SubOp | graph.MulOp | graph.DivOp, rewriter: PatternRewriter
    ) -> None:
        neutral = 0.0 if isinstance(op, graph.AddOp | graph.SubOp) else 1.0
        commutative = isinstance(op, graph.AddOp | graph.MulOp)
        if _is_identity_operand(op, op.rhs, neutral):
            replace_with_value(rewriter, op, op.lhs)
        elif commutative and _is_identity_operand(op, op.lhs, neutral):
            replace_with_value(rewriter, op, op.rhs)


class ElideFullSlice(RewritePattern):
    """A slice that starts at 0 with step 1 and keeps every element -> its input."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.SliceOp, rewriter: PatternRewriter) -> None:
        rank = len(shape_of(op.input))
        starts = graph.ints_of(op.starts, [0] * rank)
        steps = graph.ints_of(op.steps, [1] * rank)
        if op.input.type != op.output.type or any(starts) or any(s != 1 for s in steps):
            return
        replace_with_value(rewriter, op, op.input)


class ElideSameTypeBroadcast(RewritePattern):
    """broadcast(x) to the shape of x -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BroadcastOp, rewriter: PatternRewriter) -> None:
        if op.input.type == op.output.type:
            replace_with_value(rewriter, op, op.input)


class ElideSingleConcat(RewritePattern):
    """concat of one input -> that input."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ConcatOp, rewriter: PatternRewriter) -> None:
        if len(op.inputs) == 1 and op.inputs[0].type == op.output.type:
            replace_with_value(rewriter, op, op.inputs[0])


def _int_range(elem: IntegerType) -> tuple[int, int]:
    info = numpy_dtype(elem)
    if info.kind == "b":
        return (0, 1)
    width = elem.width.data
    if elem.signedness.data == Signedness.UNSIGNED:
        return (0, (1 << width) - 1)
    return (-(1 << (width - 1)), (1 << (width - 1)) - 1)


_FLOAT_MANTISSA_BITS = {2: 11, 4: 24, 8: 53}


def holds_every_value(src: Attribute, mid: Attribute) -> bool:
    """True when casting `src` elements to `mid` is exact for every value (a widening), so
    cast(cast(x, mid), dst) == cast(x, dst). Unsure cases (bf16, ...) answer False."""
    try:
        src_dtype, mid_dtype = numpy_dtype(src), numpy_dtype(mid)
    except TypeError:
        return False
    if is_float(src):
        return is_float(mid) and mid_dtype.itemsize >= src_dtype.itemsize
    if not isinstance(src, IntegerType):
        return False
    low, high = _int_range(src)
    if is_float(mid):
        bits = _FLOAT_MANTISSA_BITS[mid_dtype.itemsize]
        return max(-low, high) <= 1 << bits
    if not isinstance(mid, IntegerType) or is_bool(mid):
        return is_bool(src) and is_bool(mid)
    mid_low, mid_high = _int_range(mid)
    return mid_low <= low and high <= mid_high


def _elem(value: SSAValue) -> Attribute:
    assert isinstance(value.type, TensorType)
    return value.type.get_element_type()


class SquashCasts(RewritePattern):
    """cast(x) to the type of x -> x; cast(cast(x, T1), T2) -> cast(x, T2) when T1 holds every
    value of x's element type exactly (a pure widening), and only then."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.CastOp, rewriter: PatternRewriter) -> None:
        if op.input.type == op.output.type:
            replace_with_value(rewriter, op, op.input)
            return
        inner = producer(op.input, graph.CastOp)
        if inner is None or not holds_every_value(_elem(inner.input), _elem(inner.output)):
            return
        if inner.input.type == op.output.type:
            replace_with_value(rewriter, op, inner.input)
            return
        squashed = graph.CastOp(inner.input, _elem(op.output))
        squashed.location = op.location
        rewriter.replace(op, squashed)


CANONICALIZATION_PATTERNS: tuple[type[RewritePattern], ...] = (
    ElideIdentityReshape,
    ComposeTransposes,
    ElideNeutralElement,
    ElideFullSlice,
    ElideSameTypeBroadcast,
    ElideSingleConcat,
    SquashCasts,
)


@dataclass(frozen=True)
class GraphCanonicalizePass(ModulePass):
    """Removes no-op graph ops, merges reshape/transpose/cast chains and erases dead graph ops.

    Input:
      Any module with graph ops.
    Output:
      No reshape/broadcast/cast to the operand's own type, no identity transpose, no
      full-range slice, no one-input concat, no add/sub of a zero splat or mul/div by a one
      splat that leaves the other operand's type unchanged. reshape(reshape(x)) is one reshape;
      transpose(transpose(x)) is one transpose (or x); cast(cast(x)) is one cast when the
      middle type holds every value of x exactly. Unused pure ops are erased.
    Invariants:
      Results are unchanged except for the sign of zero in `x + 0.0`. Casts that may round,
      wrap or truncate are never merged.
    """

    name = "graph-canonicalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [pattern() for pattern in CANONICALIZATION_PATTERNS]
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(op)
