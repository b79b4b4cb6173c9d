"""One core's copy of a per-core (SPMD) graph function: the core index made concrete.

`shard-partition` writes one function for every core; the only core-dependent ops in it are
`shard.all_slice` (each core keeps its own part) and `shard.process_linear_index`. For core c:

    all_slice of a constant         -> a constant holding core c's part (weights are sliced at
                                       compile time; every core's program carries only its part)
    all_slice of an input           -> stays: the linker copies core c's part from the shared
                                       input (`phases.Slice`; a graph.slice of an integer input
                                       would be host work, which a core's phase cannot hold)
    all_slice of any other value    -> graph.slice at core c's offset (a local copy)
    process_linear_index            -> graph.constant c

The other collectives stay: they are what the cores do together (`phases.py` cuts there).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, TensorType, i64
from xdsl.ir import BlockArgument, Operation

from aitc.diagnostics import AitcError
from aitc.dialects import graph, shard
from aitc.interp.shard import groups
from aitc.weights import array_to_attr, attr_to_array


def _position(op: shard.CollectiveOp, core: int) -> tuple[int, int]:
    """(position of `core` in its group, group size) for `op`'s grid axes."""
    grid = shard.grid_of(op, op.grid.root_reference.data)
    if grid is None:
        raise AitcError(f"{op.name}: no shard.grid @{op.grid.root_reference.data}")
    for members in groups(grid.dims, op.axes):
        if core in members:
            return members.index(core), len(members)
    raise AitcError(f"{op.name}: core {core} is not on grid @{grid.sym_name.data}")


def _replace(op: Operation, new: Operation) -> None:
    new.location = op.location
    block = op.parent_block()
    assert block is not None
    block.insert_op_before(new, op)
    for old, value in zip(op.results, new.results, strict=True):
        value.name_hint = old.name_hint
        old.replace_all_uses_with(value)
    op.detach()
    op.erase()


def _slice_of(op: shard.AllSliceOp, core: int) -> Operation:
    """Core `core`'s part of the all_slice's input: a sliced constant or a graph.slice."""
    position, _ = _position(op, core)
    axis = op.int_prop("slice_axis")
    out = op.result.type
    assert isinstance(out, TensorType)
    width = out.get_shape()[axis]
    source = op.input.owner
    if isinstance(source, graph.ConstantOp) and source.value is not None:
        array = attr_to_array(source.value)
        part = np.take(array, np.arange(position * width, (position + 1) * width), axis=axis)
        return graph.ConstantOp(array_to_attr(np.ascontiguousarray(part), op.result.name_hint or "w"))
    rank = len(out.get_shape())
    starts = [position * width if d == axis else 0 for d in range(rank)]
    return graph.SliceOp.create(
        operands=[op.input],
        result_types=[out],
        attributes={
            "starts": DenseArrayBase.from_list(i64, starts),
            "steps": DenseArrayBase.from_list(i64, [1] * rank),
        },
    )


def expand_all_to_all(function: func.FuncOp) -> None:
    """all_to_all(x, split a, concat b) -> all_slice(all_gather(x, b), a): every core gathers
    the whole value along b and keeps its part along a. The same values with (p-1)/p of the
    value on the links instead of (p-1)/p^2, but from collectives the NPU has."""
    for op in list(function.body.block.ops):
        if not isinstance(op, shard.AllToAllOp):
            continue
        grid, axes = op.grid.root_reference.data, op.axes
        split, concat = op.int_prop("split_axis"), op.int_prop("concat_axis")
        source, result = op.input.type, op.result.type
        assert isinstance(source, TensorType)
        assert isinstance(result, TensorType)
        whole = list(source.get_shape())
        whole[concat] = result.get_shape()[concat]
        gathered = shard.AllGatherOp(
            op.input, grid, axes, TensorType(source.element_type, whole), gather_axis=concat
        )
        sliced = shard.AllSliceOp(gathered.result, grid, axes, result, slice_axis=split)
        for new in (gathered, sliced):
            new.location = op.location
            block = op.parent_block()
            assert block is not None
            block.insert_op_before(new, op)
        op.result.replace_all_uses_with(sliced.result)
        op.detach()
        op.erase()


def specialize(function: func.FuncOp, core: int) -> None:
    """Makes `function` (changed in place) core `core`'s copy (see the module docstring)."""
    for op in list(function.body.block.ops):
        if isinstance(op, shard.AllSliceOp) and not isinstance(op.input, BlockArgument):
            _replace(op, _slice_of(op, core))  # an input's part is copied by the linker
        elif isinstance(op, shard.ProcessLinearIndexOp):
            value = array_to_attr(np.array(core, dtype=np.int64), "core")
            _replace(op, graph.ConstantOp(value))
    for op in list(function.body.block.ops):  # constants only the folded slices read
        if isinstance(op, graph.ConstantOp) and not op.output.uses:
            op.detach()
            op.erase()
