"""`graph-channels-last`: the convs that run faster with their activations N x H x W x C get
that layout (`graph.conv {channels_last}`), region by region, so that chains of such convs hand
each other NHWC tensors without a transpose between them.

On the NPU a channels-first conv streams the output channels of a tile through the matrix
engine and a channels-last one its output positions (passes/graph_to_tile/conv_channels_last.py):
a 64-channel 3x3 conv runs at most at 0.57 of the peak one way and near 0.9 the other, while a
7x7 layer of 2048 channels streams more rows channels first. A layout is a property of the
tensors a conv exchanges with its neighbours, so it is chosen per *region*: the convs and max
pools the channels-last lowering takes (a pool there reads its taps in place on the vector
engine instead of copying each one) and the 4-D ops that work in any layout (elementwise ops without
broadcasting, slices: residual adds, relus, the phases and partial sums of a strided conv after
graph-polyphase-conv), connected through their activations. A region goes channels last when
the cost model's estimates say

    its convs and pools channels last + transposes at its edges  <  the same channels first

(`choose`; a transpose costs what its kernel is estimated to cost, nothing when it cancels
against a transpose already there). A conv that is cheaper channels first
even with transposes around it stays out of the regions (`kept_first`). Then every op of the region is rebuilt
on channels-last values; each activation entering it is transposed (0 2 3 1) before its first
use and each result used outside is transposed back (0 3 1 2):

    %a = graph.conv %x, %w1            %t = graph.transpose %x {perm = 0 2 3 1}
    %b = graph.relu %a          ==>    %a = graph.conv %t, %w1 {channels_last}
    %c = graph.conv %b, %w2            %b = graph.relu %a
    %d = graph.add %c, %x              %c = graph.conv %b, %w2 {channels_last}
                                       %d = graph.add %c, %t
                                       %r = graph.transpose %d {perm = 0 3 1 2}  (uses outside)

Input:
  Graph-level functions after graph-polyphase-conv (strided convs are stride-1 phase convs);
  the target is the module's `aitc.target` or the `target` option.
Output:
  The same functions with the convs of the regions that pay `channels_last`, graph.transpose
  ops at the regions' edges (composed with transposes already there).
Invariants:
  Only f32 2-D convs of one group, stride 1 and a constant weight (or one tap) and f32 2-D
  max pools change (`conv_channels_last.supported`, `pool_supported`); every function
  computes what it computed before.
  `layout=nhwc` converts every region, `nchw` none (`aitc compile --conv-layout`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, TensorType, UnitAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriteWalker
from xdsl.utils.exceptions import PassFailedException

from aitc.dialects import graph
from aitc.dialects.graph import ints_of
from aitc.module_target import module_target
from aitc.passes.graph.graph_canonicalize import ComposeTransposes
from aitc.passes.graph_to_tile import conv as nchw
from aitc.passes.graph_to_tile import conv_channels_last as nhwc
from aitc.passes.graph_to_tile import pool
from aitc.passes.graph_to_tile.costs import Budget
from aitc.passes.graph_to_tile.transpose import transpose_estimate

LAYOUTS = ("auto", "nchw", "nhwc")
"""The pass's `layout` option: the cost model's choice per region, none, or every region."""

TO_LAST = (0, 2, 3, 1)
TO_FIRST = (0, 3, 1, 2)


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def _to_last(value: SSAValue) -> TensorType:
    """The type of `value` (N x C x H x W) channels last."""
    assert isinstance(value.type, TensorType)
    return TensorType(value.type.get_element_type(), [_shape(value)[p] for p in TO_LAST])


def _member(op: Operation) -> bool:
    """Whether `op` can be part of a channels-last region: a conv the channels-last lowering
    takes, or a 4-D op that works on any layout (elementwise without broadcasting, a slice)."""
    if isinstance(op, graph.ConvOp):
        return not op.is_channels_last() and len(_shape(op.input)) == 4 and nhwc.supported(op) is None
    if isinstance(op, graph.MaxPoolOp):
        return not op.is_channels_last() and nhwc.pool_supported(op) is None
    if isinstance(op, graph.SliceOp):
        return len(_shape(op.output)) == 4
    if isinstance(op, graph.ElementwiseUnaryOp | graph.ElementwiseBinaryOp):
        out = _shape(op.results[0])
        return len(out) == 4 and all(isinstance(o.type, TensorType) and _shape(o) == out for o in op.operands)
    return False


def _data_operands(op: Operation) -> list[SSAValue]:
    """The operands that carry activations (a conv's weight and bias keep their layout)."""
    return [op.input] if isinstance(op, graph.ConvOp | graph.MaxPoolOp) else list(op.operands)


@dataclass
class Region:
    """Convs and layout-agnostic ops connected through their activations, in block order."""

    ops: list[Operation]

    def inputs(self) -> list[SSAValue]:
        """The activations the region reads from outside (each once)."""
        inside = set(self.ops)
        found = [v for op in self.ops for v in _data_operands(op) if v.owner not in inside]
        return list(dict.fromkeys(found))

    def outputs(self) -> list[SSAValue]:
        """The region's results that something outside it uses."""
        inside = set(self.ops)
        return [
            op.results[0] for op in self.ops if any(use.operation not in inside for use in op.results[0].uses)
        ]


def regions(block_ops: list[Operation], kept: frozenset[Operation] = frozenset()) -> list[Region]:
    """The regions of one block: connected components of member ops that hold a conv (the
    convs in `kept` stay out: they keep their layout, `kept_first`)."""
    members = [op for op in block_ops if _member(op) and op not in kept]
    parent = {op: op for op in members}

    def find(op: Operation) -> Operation:
        while parent[op] is not op:
            parent[op] = parent[parent[op]]
            op = parent[op]
        return op

    for op in members:
        for value in _data_operands(op):
            owner = value.owner
            if isinstance(owner, Operation) and owner in parent:
                parent[find(owner)] = find(op)
    groups: dict[Operation, list[Operation]] = {}
    for op in members:
        groups.setdefault(find(op), []).append(op)
    return [Region(ops) for ops in groups.values() if any(isinstance(op, graph.ConvOp) for op in ops)]


def transpose_cycles(value: SSAValue, budget: Budget, into_last: bool = True) -> int:
    """The estimate of the transpose kernel a region edge needs for `value` (N x C x H x W):
    into channels last (0 2 3 1) for an input, back (0 3 1 2) from the channels-last value for
    an output (`transpose.transpose_estimate`: element-sized DMA rows, far slower than the
    bytes at the DRAM rate). Free when the transpose cancels against one already there: an
    input made by a transpose out of channels last, an output only transposed into it."""
    if into_last and _transposed_by(value.owner, TO_FIRST):
        return 0
    if not into_last and value.uses and all(_transposed_by(use.operation, TO_LAST) for use in value.uses):
        return 0
    shape = _shape(value)
    if into_last:
        return transpose_estimate(shape, TO_LAST, budget)
    return transpose_estimate([shape[p] for p in TO_LAST], TO_FIRST, budget)


def _transposed_by(op: object, perm: tuple[int, ...]) -> bool:
    return isinstance(op, graph.TransposeOp) and tuple(op.permutation()) == perm


@dataclass(frozen=True)
class Choice:
    """The estimates that decide a region: its convs channels first, channels last, and the
    transposes at its edges."""

    first: int
    last: int
    edges: int

    @property
    def pays(self) -> bool:
        return self.last + self.edges < self.first


def choose(region: Region, budget: Budget) -> Choice | None:
    """The region's estimates, or None when a conv fits only one way."""
    first = last = 0
    for op in region.ops:
        if isinstance(op, graph.ConvOp):
            plan, cycles = nhwc.estimate(op, budget), nchw.estimated_cycles(op, budget)
        elif isinstance(op, graph.MaxPoolOp):
            plan, cycles = nhwc.pool_estimate(op, budget), pool.estimated_cycles(op, budget)
        else:
            continue
        if plan is None or cycles is None:
            return None
        first, last = first + cycles, last + plan.cycles
    edges = sum(transpose_cycles(v, budget) for v in region.inputs())
    edges += sum(transpose_cycles(v, budget, into_last=False) for v in region.outputs())
    return Choice(first, last, edges)


def stays_first(op: graph.ConvOp, budget: Budget) -> bool:
    """Whether `op` is cheaper channels first even with a transpose of its input and of its
    output around it (a 1024-channel 3x3 conv on 7x7: its output channels stream m = 1024
    rows, its 7x7 positions only 61)."""
    plan, cycles = nhwc.estimate(op, budget), nchw.estimated_cycles(op, budget)
    if plan is None or cycles is None:
        return False
    # inside a channels-last region: its input back to channels first, its output into last
    around = transpose_cycles(op.input, budget, into_last=False) + transpose_cycles(op.output, budget)
    return cycles + around < plan.cycles


def kept_first(block_ops: list[Operation], budget: Budget) -> frozenset[Operation]:
    """The convs of the block's regions that `stays_first` leaves channels first."""
    return frozenset(
        op
        for region in regions(block_ops)
        for op in region.ops
        if isinstance(op, graph.ConvOp) and stays_first(op, budget)
    )


def convert(region: Region) -> None:
    """Rewrite `region` channels last: each op on the channels-last values, a transpose of each
    input before its first use and of each output after its op, for the uses outside."""
    inside = set(region.ops)
    outputs = set(region.outputs())
    last: dict[SSAValue, SSAValue] = {}
    for op in region.ops:
        new_ops: list[Operation] = []
        for value in _data_operands(op):
            if value not in last:
                into = graph.TransposeOp(value, TO_LAST)
                into.output.name_hint = _hint(value)
                new_ops.append(into)
                last[value] = into.output
        new = _channels_last_op(op, last)
        new_ops.append(new)
        result = op.results[0]
        new.results[0].name_hint = _hint(result)
        last[result] = new.results[0]
        if result in outputs:
            back = graph.TransposeOp(new.results[0], TO_FIRST)
            back.output.name_hint = result.name_hint
            new_ops.append(back)
            result.replace_uses_with_if(back.output, lambda use: use.operation not in inside)
        for made in new_ops:
            made.location = op.location
        block = op.parent_block()
        assert block is not None
        block.insert_ops_before(new_ops, op)
    for op in reversed(region.ops):
        op.detach()
        op.erase()


def _hint(value: SSAValue) -> str | None:
    """The name of `value` channels last (`x` -> `x_nhwc`)."""
    return f"{value.name_hint}_nhwc" if value.name_hint else None


def _channels_last_op(op: Operation, last: dict[SSAValue, SSAValue]) -> Operation:
    result = op.results[0]
    if isinstance(op, graph.ConvOp | graph.MaxPoolOp):  # the weight and bias keep their layout
        attributes = dict(op.attributes)
        attributes["channels_last"] = UnitAttr()
        operands = [last[op.operands[0]], *op.operands[1:]]
        return type(op).create(operands=operands, result_types=[_to_last(result)], attributes=attributes)
    if isinstance(op, graph.SliceOp):
        rank = len(_shape(op.input))
        starts, steps = ints_of(op.starts, [0] * rank), ints_of(op.steps, [1] * rank)
        return graph.SliceOp.create(
            operands=[last[op.input]],
            result_types=[_to_last(result)],
            attributes={
                "starts": DenseArrayBase.from_list(i64, [starts[p] for p in TO_LAST]),
                "steps": DenseArrayBase.from_list(i64, [steps[p] for p in TO_LAST]),
            },
        )
    return type(op).create(
        operands=[last[o] for o in op.operands],
        result_types=[_to_last(result)],
        attributes=dict(op.attributes),
        properties=dict(op.properties),
    )


@dataclass(frozen=True)
class GraphChannelsLastPass(ModulePass):
    """Gives the regions of convs that the cost model expects to run faster that way the
    channels-last layout (module docstring).

    Input:
      Graph-level functions (after graph-polyphase-conv); the target is the module's
      `aitc.target` or the `target` option.
    Output:
      Some graph.conv ops `channels_last`, with graph.transpose ops where the layout changes.
    Invariants:
      Results are unchanged; `layout` = auto (the cost model chooses per region), nhwc (every
      region) or nchw (none).
    """

    name = "graph-channels-last"
    layout: str = "auto"
    target: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.layout not in LAYOUTS:
            raise PassFailedException(
                f"graph-channels-last: layout must be one of {', '.join(LAYOUTS)}, got '{self.layout}'"
            )
        if self.layout == "nchw":
            return
        budget = Budget.of(module_target(op, self.target, self.name))
        blocks = {id(o.parent_block()): o.parent_block() for o in op.walk() if isinstance(o, graph.ConvOp)}
        for block in blocks.values():
            assert block is not None
            ops = list(block.ops)
            kept = frozenset() if self.layout == "nhwc" else kept_first(ops, budget)
            for region in regions(ops, kept):
                if self.layout == "nhwc" or ((choice := choose(region, budget)) is not None and choice.pays):
                    convert(region)
        PatternRewriteWalker(ComposeTransposes()).rewrite_module(op)
