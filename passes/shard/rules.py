"""Sharding rules: how each graph op may be split across cores (MLIR's ShardingInterface).

An op's rule names its **loops** (one per independent index of its iteration space) and, for
every operand and result dim, the loop that indexes it (`None`: the dim cannot be split; it
must be whole on every core). Splitting the op over `p` cores means choosing one loop (or
none): every tensor dim indexed by that loop is split into `p` contiguous parts, every other
dim is whole. A **parallel** loop gives every core an independent part of the result; a
**reduction** loop (`sum`, `max`, `min`, `prod`) gives every core a partial result that an
`all_reduce` of that kind completes.

    matmul  A[b.., m, k] @ B[b.., k, n]    loops b.. m n (parallel), k (sum)
    conv    X[N, C, H..] * W[O, C/g, K..]   loops N, O (parallel), C (sum, when group = 1);
                                            depthwise/grouped: C follows O (groups split);
                                            H (the first spatial dim, parallel) reading X
                                            with a halo (below)
    elementwise (numpy broadcasting)        one parallel loop per result dim; a broadcast
                                            (size-1) operand dim is None
    softmax / layer_norm                    the normalised dims are None
    reduce_sum/max/min/prod                 reduced dims are reduction loops of that kind
    reshape                                 per group of dims whose products match, the
                                            leading dims of both sides share a loop
    transpose                               loops follow the permutation
    gather                                  the gathered axis of the table is None
    attention q[B, S, H*D] k, v[B, S', H*..]  loops B, S (query rows; k, v whole), heads (q, k,
                                            v and the result split by whole heads; the mask's
                                            head dim too when it has one)

Ops without a rule (gather_nd, argmax, ...) run replicated: every operand whole.

**Halo.** A convolution split along its output rows H reads, on every core, the input rows of
its part plus `lo` rows before and `hi` after it (the window overhang: `lo` = the top padding,
`hi` = extent - stride - lo). Its rule's `halo` names that loop and operand: a whole input
gives every core its widened part (`shard.all_slice ... halo = [lo, hi]`, zeros past the ends
stand for the padding); an input split along H already gets its neighbours' boundary rows
(`shard-partition`'s halo exchange); the core's convolution has no padding along H
(`local_attributes`). Offered when the input has exactly stride x output rows (each core's
part of the input lines up with its part of the output), as "same"-padded convs do. Pooling
splits H the same way, its halo's `fill` being its padding: -inf for a max pool (`fill =
"-inf"`), zeros for an average pool that counts them; an average pool that does not count its
padding splits H only where it has none.

`splittable(op, rule, loop, parts)` says whether every dim of that loop divides evenly:
uneven shards are refused here (the loop is not a candidate), so a split is only ever
chosen where each core gets the same part.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import IntegerAttr, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue

from aitc.dialects import graph

PARALLEL = "parallel"
REDUCTIONS = {
    "graph.reduce_sum": "sum",
    "graph.reduce_max": "max",
    "graph.reduce_min": "min",
    "graph.reduce_prod": "prod",
}

DimMap = tuple[int | None, ...]
"""Per tensor dim: the loop indexing it, or None (the dim stays whole)."""


@dataclass(frozen=True)
class Halo:
    """Splitting `loop` makes every core read operand `operand`'s dim `dim` widened by `lo`
    elements before its part and `hi` after it."""

    loop: int
    operand: int
    dim: int
    lo: int
    hi: int
    fill: str = "0"
    """What the op's padding is, standing past the dim's ends (`shard.HALO_FILLS`)."""


@dataclass(frozen=True)
class Rule:
    """The iteration space of one op: `loops[i]` is PARALLEL or a reduction kind; `operands`
    and `results` map each tensor dim to a loop; `halo` a loop whose split widens an operand."""

    loops: tuple[str, ...]
    operands: tuple[DimMap, ...]
    results: tuple[DimMap, ...]
    halo: Halo | None = None

    def halo_of(self, operand: int, loop: int | None) -> tuple[int, int] | None:
        """(lo, hi) when splitting `loop` widens operand `operand`, else None (also for a halo
        of nothing: a part then lines up with the split it may already have)."""
        halo = self.halo
        if halo is None or loop != halo.loop or operand != halo.operand or halo.lo == halo.hi == 0:
            return None
        return halo.lo, halo.hi

    def dim_of(self, dims: DimMap, loop: int | None) -> int | None:
        """The dim of a tensor (given by its DimMap) indexed by `loop`, if any."""
        if loop is None:
            return None
        return dims.index(loop) if loop in dims else None

    def is_reduction(self, loop: int | None) -> bool:
        return loop is not None and self.loops[loop] != PARALLEL


def shape_of(value: SSAValue) -> tuple[int, ...]:
    """The static shape of a tensor value (() for anything else)."""
    return tuple(value.type.get_shape()) if isinstance(value.type, TensorType) else ()


def _broadcast_map(operand: Sequence[int], result: Sequence[int]) -> DimMap:
    """An operand broadcast (numpy rules, right-aligned) to `result`: its dim i indexes the
    result loop it lines up with, unless it is a broadcast size-1 dim."""
    offset = len(result) - len(operand)
    return tuple(offset + i if size == result[offset + i] else None for i, size in enumerate(operand))


def _elementwise(op: Operation) -> Rule:
    out = shape_of(op.results[0])
    return Rule(
        (PARALLEL,) * len(out),
        tuple(_broadcast_map(shape_of(v), out) for v in op.operands),
        (tuple(range(len(out))),),
    )


def _whole_dims(op: Operation, whole: Sequence[int]) -> Rule:
    """Every dim is its own parallel loop except the `whole` ones (operands of the same shape
    as the result; others, e.g. scale/bias, broadcast)."""
    out = shape_of(op.results[0])
    loops = tuple(None if d in whole else d for d in range(len(out)))
    operands = tuple(loops if shape_of(v) == out else tuple(None for _ in shape_of(v)) for v in op.operands)
    return Rule((PARALLEL,) * len(out), operands, (loops,))


def _matmul(op: graph.MatMulOp) -> Rule | None:
    a, b, out = shape_of(op.lhs), shape_of(op.rhs), shape_of(op.output)
    if len(a) < 2 or len(b) < 2:
        return None
    batch = len(out) - 2
    m, n, k = batch, batch + 1, batch + 2
    loops = (PARALLEL,) * (batch + 2) + ("sum",)
    a_map = (*_broadcast_map(a[:-2], out[:-2]), m, k)
    b_map = (*_broadcast_map(b[:-2], out[:-2]), k, n)
    operands: tuple[DimMap, ...] = (a_map, b_map) + (((n,),) if op.bias is not None else ())
    integer = str(graph.tensor_of(op.lhs).get_element_type()) == "i8"
    if op.activation is not None or integer:  # a partial sum cannot go through the activation (or i32)
        loops = (*loops[:-1], PARALLEL)
        operands = tuple(tuple(None if d == k else d for d in dims) for dims in operands)
    return Rule(loops, operands, (tuple(range(batch + 2)),))


def _conv_halo(op: graph.ConvOp) -> tuple[int, int] | None:
    """(lo, hi) rows of halo a conv split along its output rows reads (see the module
    docstring), or None when its input rows are not stride x its output rows."""
    x, out = shape_of(op.input), shape_of(op.output)
    strides, pads, dilations = op.window()
    extent = dilations[0] * (shape_of(op.weight)[2] - 1) + 1
    stride, lo = strides[0], pads[0]
    if x[2] != out[2] * stride or lo >= extent:
        return None
    return lo, max(0, extent - stride - lo)


def _conv(op: graph.ConvOp) -> Rule:
    x = shape_of(op.input)
    rest = (None,) * (len(x) - 3)
    groups = op.groups()
    bias = ((1,),) if op.bias is not None else ()
    halo = _conv_halo(op)
    if op.is_integer():
        # an i8 conv: no partial sums (its result is an exact i32 sum, summed again by nothing)
        # and no rows split (a halo's fill would be 0, its padding is the input's zero point)
        channel_in = 1 if groups > 1 else None
        operands = ((0, channel_in, *(None,) * (len(x) - 2)), (1, None, None, *rest), *bias)
        return Rule((PARALLEL, PARALLEL), operands, ((0, 1, None, *rest),))
    if groups == 1 and op.activation is None:
        # loops: 0 = N, 1 = output channel, 2 = input channel (sum), 3 = output rows
        rows = 3 if halo is not None else None
        operands = ((0, 2, rows, *rest), (1, 2, None, *rest), *bias)
        loops = (PARALLEL, PARALLEL, "sum") + ((PARALLEL,) if rows is not None else ())
    else:
        # grouped (depthwise): the input channels follow the output channels' groups (splittable
        # when the cores divide the groups); groups = 1 with an activation: input channels whole
        rows = 2 if halo is not None else None
        channel_in = 1 if groups > 1 else None
        operands = ((0, channel_in, rows, *rest), (1, None, None, *rest), *bias)
        loops = (PARALLEL, PARALLEL) + ((PARALLEL,) if rows is not None else ())
    found = Halo(rows, 0, 2, *halo) if rows is not None and halo is not None else None
    return Rule(loops, operands, ((0, 1, rows, *rest),), found)


def local_attributes(op: Operation, rule: Rule, loop: int | None, parts: int) -> dict[str, Attribute]:
    """`op`'s attributes on one of `parts` cores when it splits `loop`: a conv or pool split
    along its rows has no padding along them (the halo brings its neighbours' rows and the
    padding's fill); a
    grouped conv split along its channels, and an attention split by heads, has its share of
    the groups or heads."""
    attributes = dict(op.attributes)
    if isinstance(op, graph.ConvOp) and op.groups() > 1 and loop == 1:
        attributes["group"] = IntegerAttr(op.groups() // parts, i64)
    if isinstance(op, graph.AttentionOp) and loop == 2:
        attributes["heads"] = IntegerAttr(op.head_count() // parts, i64)
    if rule.halo is not None and loop == rule.halo.loop and isinstance(op, graph.WindowOp):
        _, pads, _ = op.window()
        spatial = op.spatial_rank()
        zeroed = [
            0 if i in (rule.halo.dim - 2, rule.halo.dim - 2 + spatial) else p for i, p in enumerate(pads)
        ]
        if zeroed != list(pads):
            attributes["pads"] = graph.ints_attr(zeroed)
    return attributes


def _pool_rows(op: graph.PoolOp) -> Halo | None:
    """How pooling's output rows split (None: they do not): input rows = stride x output
    rows, and a halo (possibly of nothing) of the window's overhang as for a conv, standing
    for the padding past the ends: a max pool's -inf; an average pool's zeros only when they
    count in the divisor (`count_include_pad`), else only without padding along the rows."""
    x, out = shape_of(op.input), shape_of(op.output)
    strides, pads, dilations = op.window()
    extent = dilations[0] * (op.kernel()[0] - 1) + 1
    padded = pads[0] + pads[op.spatial_rank()] > 0
    if x[2] != out[2] * strides[0] or pads[0] >= extent:
        return None
    if isinstance(op, graph.AvgPoolOp) and padded and op.count_include_pad is None:
        return None
    if padded and str(graph.tensor_of(op.input).get_element_type()) != "f32":
        return None  # an int8 max pool's padding is its type's minimum, not a halo's -inf
    fill = "-inf" if isinstance(op, graph.MaxPoolOp) and padded else "0"
    return Halo(2, 0, 2, pads[0], max(0, extent - strides[0] - pads[0]), fill)


def _channels(op: Operation) -> Rule:
    """Pooling and batch_norm: N and C split (and H: batch_norm always, pooling with the
    halo its windows need, `_pool_rows`); per-channel operands follow C."""
    out = shape_of(op.results[0])
    halo = _pool_rows(op) if isinstance(op, graph.PoolOp) and len(out) >= 3 else None
    rows = len(out) >= 3 and (isinstance(op, graph.BatchNormOp) or halo is not None)
    dims = (0, 1, 2 if rows else None, *(None,) * (len(out) - 3))
    operands = tuple(dims if len(shape_of(v)) == len(out) else (1,) for v in op.operands)
    return Rule((PARALLEL,) * (3 if rows else 2), operands, (dims,), halo)


def _reduce(op: graph.ReduceOp) -> Rule:
    x = shape_of(op.input)
    axes = op.reduced_axes()
    kind = REDUCTIONS.get(op.name)  # None: a mean, whose reduced dims stay whole
    loops = tuple(kind if kind is not None and d in axes else PARALLEL for d in range(len(x)))
    in_map = tuple(None if d in axes and kind is None else d for d in range(len(x)))
    if op.keepdims is not None:
        out_map = tuple(None if d in axes else d for d in range(len(x)))
    else:
        out_map = tuple(d for d in range(len(x)) if d not in axes)
    return Rule(loops, (in_map,), (out_map,))


def reshape_groups(src: Sequence[int], dst: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """Pairs of dim groups (of sizes > 1) whose products match, in order: [2,16,64] ->
    [2,16,4,16] gives ([0],[0]), ([1],[1]), ([2],[2,3])."""
    a = [i for i, s in enumerate(src) if s != 1]
    b = [j for j, s in enumerate(dst) if s != 1]
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        ga, gb = [a[i]], [b[j]]
        pa, pb = src[a[i]], dst[b[j]]
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb and i < len(a):
                ga.append(a[i])
                pa *= src[a[i]]
                i += 1
            elif pb < pa and j < len(b):
                gb.append(b[j])
                pb *= dst[b[j]]
                j += 1
            else:
                return groups
        groups.append((ga, gb))
    return groups


def _reshape(op: graph.ReshapeOp) -> Rule:
    src, dst = shape_of(op.input), shape_of(op.output)
    in_map: list[int | None] = [None] * len(src)
    out_map: list[int | None] = [None] * len(dst)
    for loop, (ga, gb) in enumerate(reshape_groups(src, dst)):
        in_map[ga[0]] = out_map[gb[0]] = loop  # the leading dims: contiguous parts on both sides
    loops = max((d for d in in_map if d is not None), default=-1) + 1
    return Rule((PARALLEL,) * loops, (tuple(in_map),), (tuple(out_map),))


def _transpose(op: graph.TransposeOp) -> Rule:
    perm = op.permutation()
    return Rule((PARALLEL,) * len(perm), (tuple(range(len(perm))),), (tuple(perm),))


def _along_axis(op: Operation, axis: int) -> Rule:
    """concat / split / softmax-like: every dim but `axis` parallel, for every tensor."""
    rank = len(shape_of(op.results[0]))
    dims = tuple(None if d == axis else d for d in range(rank))
    return Rule((PARALLEL,) * rank, tuple(dims for _ in op.operands), tuple(dims for _ in op.results))


def _unchanged_dims(op: Operation, keep: Sequence[bool]) -> Rule:
    """slice / pad / tile: the dims the op leaves unchanged are parallel, the others whole."""
    dims = tuple(d if k else None for d, k in enumerate(keep))
    return Rule((PARALLEL,) * len(keep), (dims,), (dims,))


def _slice(op: graph.SliceOp) -> Rule:
    x, out = shape_of(op.input), shape_of(op.output)
    starts = graph.ints_of(op.starts, [0] * len(x))
    steps = graph.ints_of(op.steps, [1] * len(x))
    keep = [a == b and s == 0 and t == 1 for a, b, s, t in zip(x, out, starts, steps, strict=True)]
    return _unchanged_dims(op, keep)


def _gather(op: graph.GatherOp) -> Rule:
    x, idx = shape_of(op.input), shape_of(op.indices)
    axis = op.axis.value.data if op.axis is not None else 0
    out_rank = len(x) - 1 + len(idx)
    # result dims: x[:axis], idx, x[axis+1:]; loops numbered as the result dims
    x_map = tuple(None if d == axis else (d if d < axis else d - 1 + len(idx)) for d in range(len(x)))
    idx_map = tuple(axis + i for i in range(len(idx)))
    return Rule((PARALLEL,) * out_rank, (x_map, idx_map), (tuple(range(out_rank)),))


def _broadcast(op: graph.BroadcastOp) -> Rule:
    out = shape_of(op.output)
    return Rule((PARALLEL,) * len(out), (_broadcast_map(shape_of(op.input), out),), (tuple(range(len(out))),))


def _layer_norm(op: graph.LayerNormOp) -> Rule:
    return _whole_dims(op, range(op.norm_axis(), len(shape_of(op.input))))


def _attention(op: graph.AttentionOp) -> Rule:
    """Batch, query rows and heads are parallel; keys (the softmax's axis) stay whole."""
    b, s, _, heads, _, _ = op.dims()
    batch, rows, head = 0, 1, 2
    operands: list[DimMap] = [(batch, rows, head), (batch, None, head), (batch, None, head)]
    if op.mask is not None:
        m = shape_of(op.mask)  # [B or 1, H or 1, S or 1, S']: the broadcast dims stay whole
        mapped = [
            loop if size == full > 1 else None
            for loop, size, full in zip((batch, head, rows), m, (b, heads, s))
        ]
        operands.append((*mapped, None))
    return Rule((PARALLEL,) * 3, tuple(operands), ((batch, rows, head),))


def _pad(op: graph.PadOp) -> Rule:
    pads = graph.ints_of(op.pads)
    rank = len(shape_of(op.input))
    return _unchanged_dims(op, [pads[d] == 0 and pads[d + rank] == 0 for d in range(rank)])


def _axis_of(op: graph.ConcatOp | graph.SplitOp) -> Rule:
    return _along_axis(op, op.axis.value.data if op.axis is not None else 0)


_RULES: tuple[tuple[type | tuple[type, ...], Callable[[Any], Rule | None]], ...] = (
    (
        (
            graph.ElementwiseUnaryOp,
            graph.ElementwiseBinaryOp,
            graph.WhereOp,
            graph.CastOp,
            graph.QuantizeOp,
            graph.DequantizeOp,
        ),
        _elementwise,
    ),
    (graph.BroadcastOp, _broadcast),
    (graph.MatMulOp, _matmul),
    (graph.ConvOp, _conv),
    ((graph.PoolOp, graph.BatchNormOp), _channels),
    (graph.LayerNormOp, _layer_norm),
    (graph.AttentionOp, _attention),
    (graph.AxisOp, lambda op: _along_axis(op, op.norm_axis())),
    (graph.ArgReduceOp, lambda op: None),
    (graph.ReduceOp, _reduce),
    (graph.ReshapeOp, _reshape),
    (graph.TransposeOp, _transpose),
    ((graph.ConcatOp, graph.SplitOp), _axis_of),
    (graph.SliceOp, _slice),
    (graph.PadOp, _pad),
    (graph.TileOp, lambda op: _unchanged_dims(op, [r == 1 for r in graph.ints_of(op.repeats)])),
    (graph.GatherOp, _gather),
)
"""The rule of each op class, first match wins (ArgReduceOp before its base ReduceOp)."""


def rule_of(op: Operation) -> Rule | None:
    """The sharding rule of a graph op, or None (the op runs replicated)."""
    for types, make in _RULES:
        if isinstance(op, types):
            return make(op)
    return None


def splittable(op: Operation, rule: Rule, loop: int, parts: int) -> bool:
    """Whether splitting `loop` of `op` over `parts` cores gives every core an equal part of
    every tensor dim the loop indexes (and, for a grouped conv, whole groups)."""
    found = False
    for maps, values in ((rule.operands, op.operands), (rule.results, op.results)):
        for dims, value in zip(maps, values, strict=True):
            shape = shape_of(value)
            for dim, mapped in enumerate(dims):
                if mapped == loop:
                    found = True
                    if shape[dim] % parts:
                        return False
    if isinstance(op, graph.ConvOp) and op.groups() > 1 and loop == 1:
        return op.groups() % parts == 0
    if isinstance(op, graph.AttentionOp) and loop == 2:  # whole heads per core
        return op.head_count() % parts == 0
    return found
