"""The dispatch table of convert-graph-to-tile, written out in one place: every graph op the NPU
runs, with its lowering and the check that refuses the variants it cannot run.

`LOWERINGS` is what convert-graph-to-tile dispatches on and what place-on-host asks
(`missing_reason`) to decide which ops go to the host. To add a lowering: write `lower_<op>` (and
`<op>_unsupported` if some variants cannot be lowered) in the family module, and add one line
here; `test/python/passes/graph_to_tile/test_graph_to_tile.py` checks every entry has a lit or
execution test.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from aitc.dialects import graph
from aitc.passes.graph_to_tile import (
    attention,
    conv,
    conv_channels_last,
    gather,
    linear,
    movement,
    pool,
    rows,
    transpose,
    vector,
)
from aitc.passes.graph_to_tile.elementwise import EMITTERS
from aitc.passes.graph_to_tile.lowering import Lowering


def _table(*entries: tuple[tuple[type[Operation], ...], Lowering]) -> dict[type[Operation], Lowering]:
    table: dict[type[Operation], Lowering] = {}
    for op_types, lowering in entries:
        for op_type in op_types:
            assert op_type not in table, f"{op_type.__name__} has two lowerings"
            table[op_type] = lowering
    return table


LOWERINGS: dict[type[Operation], Lowering] = _table(
    # data movement (DMA only)
    ((graph.ReshapeOp,), Lowering(movement.lower_reshape)),
    ((graph.ConcatOp,), Lowering(movement.lower_concat)),
    ((graph.SplitOp,), Lowering(movement.lower_split)),
    ((graph.SliceOp,), Lowering(movement.lower_slice)),
    ((graph.TileOp,), Lowering(movement.lower_tile)),
    ((graph.PadOp,), Lowering(movement.lower_pad, movement.pad_unsupported)),
    ((graph.TransposeOp,), Lowering(transpose.lower_transpose)),
    ((graph.GatherOp,), Lowering(gather.lower_gather, gather.gather_unsupported)),
    # matrix engine
    ((graph.MatMulOp,), Lowering(linear.lower_matmul, linear.matmul_unsupported)),
    ((graph.ConvOp,), Lowering(conv.lower_conv, conv_channels_last.window_op_problem)),
    ((graph.AttentionOp,), Lowering(attention.lower_attention, attention.attention_unsupported)),
    # vector engine: windows, rows, elementwise chains
    ((graph.MaxPoolOp, graph.AvgPoolOp), Lowering(pool.lower_pool, conv_channels_last.window_op_problem)),
    ((graph.BatchNormOp,), Lowering(pool.lower_batch_norm, pool.batch_norm_problem)),
    ((graph.SoftmaxOp, graph.LogSoftmaxOp), Lowering(rows.lower_softmax, rows.softmax_axis_problem)),
    ((graph.LayerNormOp,), Lowering(rows.lower_layer_norm, rows.layer_norm_problem)),
    (tuple(rows.REDUCERS), Lowering(rows.lower_reduce, rows.reduce_problem)),
    (tuple(EMITTERS), Lowering(vector.lower_chain, vector.elementwise_unsupported, fusable=True)),
)
"""Graph op class -> its lowering."""

MISSING: dict[type[Operation], str] = {
    graph.ReduceProdOp: "the vector engine has no product reduction",
    graph.ArgMaxOp: "the vector engine has no arg-reduction",
    graph.ArgMinOp: "the vector engine has no arg-reduction",
    graph.ModOp: "the vector engine has no remainder",
}
"""Why an op without a lowering has none (others: the vector engine lacks the function)."""


def missing_reason(op: Operation) -> str | None:
    """Why the NPU cannot run `op` (no lowering, or its lowering refuses this variant), or None."""
    if any(has_no_elements(v) for v in (*op.operands, *op.results)):
        return "a zero-element tensor: no kernel to run (the host passes it through)"
    lowering = LOWERINGS.get(type(op))
    if lowering is None:
        generic = f"no tile lowering for {op.name}: the vector engine has no such function"
        return MISSING.get(type(op), generic)
    return lowering.unsupported(op)


def has_no_elements(value: SSAValue) -> bool:
    """A tensor with a zero-size dim: nothing to compute or copy."""
    return isinstance(value.type, TensorType) and 0 in value.type.get_shape()


def is_fusable(op: Operation) -> bool:
    """Whether `op` joins elementwise chains (one kernel, no DRAM round trip inside)."""
    lowering = LOWERINGS.get(type(op))
    return lowering is not None and lowering.fusable
