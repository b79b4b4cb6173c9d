"""`graph-fuse-attention`: multi-head attention subgraphs become one `graph.attention`.

Exporters (torch.onnx, the transformers models) spell attention on packed projections as

    Q = transpose(reshape(q, [B, S, H, D]), [0, 2, 1, 3])
    K = transpose(reshape(k, [B, S', H, D]), [0, 2, 3, 1])           (K already transposed)
    V = transpose(reshape(v, [B, S', H, Dv]), [0, 2, 1, 3])
    P = softmax(Q @ K / c + mask)                                     (or * c; scale, mask optional)
    out = reshape(transpose(P @ V, [0, 2, 1, 3]), [B, S, H * Dv])

which becomes `graph.attention(q, k, v, mask) {heads = H, scale = 1/c}`: no head transposes, and
one kernel per head in which the scores never leave the chip (convert-graph-to-tile).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from aitc.analysis.graph_matching import (
    constant_array,
    new_constant,
    other_operand,
    producer,
    shape_of,
    single_use,
    splat_value,
)
from aitc.dialects import graph

HEADS_FIRST = (0, 2, 1, 3)
"""[B, S, H, D] -> [B, H, S, D], and back."""
KEYS_TRANSPOSED = (0, 2, 3, 1)
"""[B, S', H, D] -> [B, H, D, S']."""
OpT = TypeVar("OpT", bound=Operation)


@dataclass(frozen=True)
class Heads:
    """A packed projection [B, S, H * D] seen as heads through reshape + transpose."""

    packed: SSAValue
    heads: int
    width: int


def _heads(value: SSAValue, perm: tuple[int, ...]) -> Heads | None:
    """`value` = transpose(reshape(packed [B, S, E] -> [B, S, H, E / H]), perm), else None."""
    transpose = value.owner
    if not isinstance(transpose, graph.TransposeOp) or tuple(transpose.permutation()) != perm:
        return None
    reshape = transpose.input.owner
    if not isinstance(reshape, graph.ReshapeOp):
        return None
    packed, split = shape_of(reshape.input), shape_of(reshape.output)
    if len(packed) != 3 or len(split) != 4 or packed[:2] != split[:2] or split[2] * split[3] != packed[2]:
        return None
    return Heads(reshape.input, split[2], split[3])


def _single_use_owner(value: SSAValue, op_type: type[OpT]) -> OpT | None:
    """The `op_type` op defining `value` when `value` has no other use, else None."""
    op = producer(value, op_type)
    return op if op is not None and single_use(value) else None


def _scaled(value: SSAValue) -> tuple[graph.MatMulOp, float, list[Operation]] | None:
    """`value` as (Q @ K matmul, scale, the scaling op) when it is [scale *] Q @ K (`* c` or
    `/ c`, c a constant), each intermediate used once."""
    scale, between = 1.0, list[Operation]()
    scaling = _single_use_owner(value, graph.DivOp) or _single_use_owner(value, graph.MulOp)
    if scaling is not None:
        factor = splat_value(scaling.rhs)
        if factor is None or factor == 0.0:
            return None
        scale = 1.0 / factor if isinstance(scaling, graph.DivOp) else factor
        value, between = scaling.lhs, list[Operation]([scaling])
    matmul = _single_use_owner(value, graph.MatMulOp)
    if not isinstance(matmul, graph.MatMulOp) or matmul.bias is not None or matmul.activation is not None:
        return None
    return matmul, scale, between


def _scores(value: SSAValue) -> tuple[graph.MatMulOp, float, SSAValue | None, list[Operation]] | None:
    """softmax's input as (Q @ K matmul, scale, mask, the ops between) when it is
    [mask +] [scale *] Q @ K (the mask on either side of the add)."""
    add = _single_use_owner(value, graph.AddOp)
    if add is not None:
        for candidate in (add.lhs, add.rhs):
            found = _scaled(candidate)
            if found is not None:
                matmul, scale, between = found
                return matmul, scale, other_operand(add, candidate), [add, *between]
    found = _scaled(value)
    return None if found is None else (found[0], found[1], None, found[2])


def _mask_4d(mask: SSAValue, want: tuple[int, int, int, int]) -> tuple[SSAValue, list[Operation]] | None:
    """`mask` as [B or 1, H or 1, S or 1, S'] (a reshape when its rank is lower), else None."""
    shape = shape_of(mask)
    if len(shape) > 4:
        return None
    full = (1,) * (4 - len(shape)) + shape
    if full[3] != want[3] or any(m not in (1, w) for m, w in zip(full[:3], want[:3], strict=True)):
        return None
    if full == shape:
        return mask, []
    reshape = graph.ReshapeOp(mask, list(full))
    reshape.results[0].name_hint = f"{mask.name_hint or 'mask'}_4d"
    return reshape.results[0], [reshape]


@dataclass
class Match:
    """A fusable attention: the head views, scale and mask, and the ops it replaces (in an
    order they can be erased in)."""

    query: Heads
    key: Heads
    value: Heads
    scale: float
    mask: SSAValue | None
    softmax: graph.SoftmaxOp
    replaced: list[Operation]


def _weighted(op: graph.ReshapeOp) -> tuple[graph.TransposeOp, graph.MatMulOp, graph.SoftmaxOp] | None:
    """The reshape(transpose(softmax(..) @ V, [0, 2, 1, 3])) ops above `op`, else None."""
    back = _single_use_owner(op.input, graph.TransposeOp)
    if not isinstance(back, graph.TransposeOp) or tuple(back.permutation()) != HEADS_FIRST:
        return None
    weighted = _single_use_owner(back.input, graph.MatMulOp)
    if not isinstance(weighted, graph.MatMulOp) or weighted.bias is not None or weighted.activation:
        return None
    softmax = _single_use_owner(weighted.lhs, graph.SoftmaxOp)
    if not isinstance(softmax, graph.SoftmaxOp) or softmax.norm_axis() != 3:
        return None
    return back, weighted, softmax


def match_attention(op: graph.ReshapeOp) -> Match | None:
    """The attention whose packed result `op` makes, else None (module docstring)."""
    ops = _weighted(op)
    if ops is None:
        return None
    back, weighted, softmax = ops
    found = _scores(softmax.input)
    value = _heads(weighted.rhs, HEADS_FIRST)
    if found is None or value is None:
        return None
    scores, scale, mask, between = found
    query, key = _heads(scores.lhs, HEADS_FIRST), _heads(scores.rhs, KEYS_TRANSPOSED)
    if query is None or key is None or not query.heads == key.heads == value.heads:
        return None
    b, s, _ = shape_of(query.packed)
    if shape_of(op.output) != (b, s, value.heads * value.width) or query.width != key.width:
        return None
    return Match(query, key, value, scale, mask, softmax, [back, weighted, softmax, *between, scores])


def _prescaled_query(match: Match, head_view: SSAValue) -> tuple[list[Operation], SSAValue] | None:
    """Q's projection with the scale folded into its constant weights and bias, x @ (W * c) +
    b * c, as (new ops, packed Q): the attention kernel then does not scale Q, a vector op per
    query tile in the way of the next tile's scores. None unless packed Q is a matmul with
    constant weights (and bias) and no activation whose only use is the head view `head_view`
    (transpose(reshape(packed))) that the scores use, which the fusion leaves dead."""
    packed, scale = match.query.packed, match.scale
    matmul = producer(packed, graph.MatMulOp)
    if scale == 1.0 or matmul is None or matmul.activation is not None or not single_use(packed):
        return None
    transpose = head_view.owner
    if not (
        single_use(head_view) and isinstance(transpose, graph.TransposeOp) and single_use(transpose.input)
    ):
        return None
    weights = constant_array(matmul.rhs)
    bias = constant_array(matmul.bias) if matmul.bias is not None else None
    if weights is None or (matmul.bias is not None and bias is None) or weights.dtype != np.float32:
        return None
    hint = f"{packed.name_hint or 'query'}_prescaled"
    factor = np.float32(scale)
    constants = [new_constant(weights * factor, f"{hint}_weights")]
    if bias is not None:
        constants.append(new_constant(bias * factor, f"{hint}_bias"))
    operands = [matmul.lhs, *(c.output for c in constants)]
    scaled = graph.MatMulOp.create(
        operands=operands, result_types=[packed.type], attributes=dict(matmul.attributes)
    )
    scaled.output.name_hint = hint
    for op in (*constants, scaled):
        op.location = matmul.location
    return [*constants, scaled], scaled.output


class FuseAttention(RewritePattern):
    """reshape(transpose(softmax(scores) @ V)) -> graph.attention (module docstring)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReshapeOp, rewriter: PatternRewriter) -> None:
        match = match_attention(op)
        if match is None:
            return
        mask, new_ops = match.mask, []
        if mask is not None:
            b, s, _ = shape_of(match.query.packed)
            shaped = _mask_4d(mask, (b, match.query.heads, s, shape_of(match.key.packed)[1]))
            if shaped is None:
                return
            mask, new_ops = shaped
        for new in new_ops:
            new.location = match.softmax.location
        query, scale = match.query.packed, match.scale
        prescaled = _prescaled_query(match, match.replaced[-1].operands[0])
        if prescaled is not None:
            query_ops, query = prescaled
            new_ops, scale = [*query_ops, *new_ops], 1.0
        operands = [query, match.key.packed, match.value.packed, *([mask] if mask is not None else [])]
        attention = graph.AttentionOp.create(
            operands=operands,
            result_types=[op.output.type],
            attributes={"heads": IntegerAttr(match.query.heads, i64), "scale": graph.float_attr(scale)},
        )
        attention.output.name_hint = op.output.name_hint
        attention.location = match.softmax.location
        rewriter.replace(op, [*new_ops, attention])
        for dead in match.replaced:
            rewriter.erase(dead)


@dataclass(frozen=True)
class GraphFuseAttentionPass(ModulePass):
    """Replaces multi-head attention subgraphs on packed projections with `graph.attention`.

    Input:
      Any module with graph ops.
    Output:
      Every `reshape(transpose(softmax([mask +] [scale *] Q @ K) @ V, [0, 2, 1, 3]))` whose
      Q, K, V are head views of packed [B, S, H * D] tensors (module docstring) is one
      `graph.attention(q, k, v[, mask]) {heads, scale}` at the softmax's location; a mask of
      rank < 4 is reshaped to rank 4. The ops it replaces are erased; the head views of q, k
      and v stay where something else uses them (DCE removes the rest).
    Invariants:
      Only subgraphs whose intermediates (scores, scaled scores, masked scores,
      probabilities, weighted values) have one use are fused, with one head count and head
      width for Q and K, and a mask that broadcasts per batch, head and query row. Results
      are unchanged up to float rounding (a division by c becomes a multiplication by 1/c).
      When Q's projection is a matmul with constant weights (and bias) used only by the
      attention, the scale is folded into a copy of them (x @ (W * c) + b * c, at the
      projection's location) and the attention's scale is 1.
    """

    name = "graph-fuse-attention"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FuseAttention(), apply_recursively=False).rewrite_module(op)
