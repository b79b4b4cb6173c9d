"""One core's copy of a per-core (SPMD) graph function: the core index made concrete.

`shard-partition` writes one function for every core; the only core-dependent ops in it are
`shard.all_slice` (each core keeps its own part) and `shard.process_linear_index`. For core c:

    all_slice of a constant         -> a constant holding core c's part (weights are sliced at
                                       compile time; every core's program carries only its part)
    all_slice of an input           -> stays: the linker copies core c's part from the shared
                                       input (`phases.Slice`; a graph.slice of an integer input
                                       would be host work, which a core's phase cannot hold)
    all_slice of any other value    -> graph.slice at core c's offset (a local copy)
    all_slice with a halo           -> graph.slice of core c's widened part, clipped to the
                                       value; past its ends, padding of the window op reading
                                       it when its padding is the halo's fill (a conv's zeros,
                                       a max pool's -inf), else a graph.pad with the fill
    process_linear_index            -> graph.constant c

The other collectives stay: they are what the cores do together (`phases.py` cuts there).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, TensorType, f64, i64
from xdsl.ir import Attribute, BlockArgument, Operation

from aitc.diagnostics import AitcError
from aitc.dialects import graph, shard
from aitc.interp.shard import groups, halo_part
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


def _window(op: shard.AllSliceOp, core: int) -> tuple[int, int]:
    """[start, stop) of core `core`'s part along the slice axis, widened by the halo (it may
    run past the dim's ends)."""
    position, parts = _position(op, core)
    lo, hi = op.halo_sizes
    width = op.in_shape[op.int_prop("slice_axis")] // parts
    return position * width - lo, (position + 1) * width + hi


def _slice_of(op: shard.AllSliceOp, core: int) -> Operation:
    """Core `core`'s part of the all_slice's input: a sliced constant (zeros past its ends),
    or a graph.slice (clipped to the value's ends)."""
    axis = op.int_prop("slice_axis")
    out = op.result.type
    assert isinstance(out, TensorType)
    source = op.input.owner
    if isinstance(source, graph.ConstantOp) and source.value is not None:
        position, parts = _position(op, core)
        part = halo_part(attr_to_array(source.value), axis, position, parts, *op.halo_sizes, op.halo_fill)
        return graph.ConstantOp(array_to_attr(np.ascontiguousarray(part), op.result.name_hint or "w"))
    start, stop = _window(op, core)
    shape = list(out.get_shape())
    shape[axis] = min(stop, op.in_shape[axis]) - max(start, 0)
    starts = [max(start, 0) if d == axis else 0 for d in range(len(shape))]
    return graph.SliceOp.create(
        operands=[op.input],
        result_types=[TensorType(out.element_type, shape)],
        attributes={
            "starts": DenseArrayBase.from_list(i64, starts),
            "steps": DenseArrayBase.from_list(i64, [1] * len(shape)),
        },
    )


def _padding_reader(op: shard.AllSliceOp) -> graph.ConvOp | graph.MaxPoolOp | None:
    """The only user of `op`'s result when it is a window op reading it as its input whose own
    padding is what the halo's fill stands for (zeros for a conv, -inf for a max pool)."""
    users = [use.operation for use in op.result.uses]
    if len(users) != 1 or op.int_prop("slice_axis") < 2:
        return None
    reader = users[0]
    if isinstance(reader, graph.ConvOp) and reader.input == op.result and op.halo_fill == 0.0:
        return reader
    if isinstance(reader, graph.MaxPoolOp) and op.halo_fill == float("-inf"):
        return reader
    return None


def _specialize_slice(op: shard.AllSliceOp, core: int) -> None:
    """Replaces `op` by core `core`'s part. Where its halo runs past the dim's ends, the fill
    becomes padding of the window op that reads it (`_padding_reader`), else a graph.pad."""
    part = _slice_of(op, core)
    axis, size = op.int_prop("slice_axis"), op.in_shape[op.int_prop("slice_axis")]
    start, stop = _window(op, core)
    before, after = max(-start, 0), max(stop - size, 0)
    if isinstance(part, graph.ConstantOp) or not before + after:
        _replace(op, part)
        return
    reader = _padding_reader(op)
    if reader is not None:
        _, pads, _ = reader.window()
        pads = list(pads)
        pads[axis - 2] += before
        pads[axis - 2 + reader.spatial_rank()] += after
        reader.attributes["pads"] = graph.ints_attr(pads)
        _replace(op, part)
        return
    block = op.parent_block()
    assert block is not None
    part.location = op.location
    block.insert_op_before(part, op)
    rank = len(op.in_shape)
    pads = [before if d == axis else 0 for d in range(rank)] + [
        after if d == axis else 0 for d in range(rank)
    ]
    attributes: dict[str, Attribute] = {"pads": graph.ints_attr(pads)}
    if op.halo_fill:
        attributes["value"] = FloatAttr(op.halo_fill, f64)
    padded = graph.PadOp.create(
        operands=[part.results[0]], result_types=[op.result.type], attributes=attributes
    )
    _replace(op, padded)


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
        if isinstance(op, shard.AllSliceOp) and op.halo is not None:
            _specialize_slice(op, core)  # an input's widened part too: not one contiguous part
        elif isinstance(op, shard.AllSliceOp) and not isinstance(op.input, BlockArgument):
            _replace(op, _slice_of(op, core))  # an input's part is copied by the linker
        elif isinstance(op, shard.ProcessLinearIndexOp):
            value = array_to_attr(np.array(core, dtype=np.int64), "core")
            _replace(op, graph.ConstantOp(value))
    for op in list(function.body.block.ops):  # constants only the folded slices read
        if isinstance(op, graph.ConstantOp) and not op.output.uses:
            op.detach()
            op.erase()
