"""Semantics of the `shard` dialect: the annotated (global) view and SPMD runs of N cores.

Global view (`ShardFunctions`, registered with the graph interpreter): `shard.sharding` is an
opaque value and `shard.shard` returns its operand, so an annotated module computes exactly what
the unannotated one does. Collectives have no global meaning; running one there is an error that
points to `run_spmd`.

SPMD (`run_spmd`): every core runs the entry function on its own inputs, op by op in lockstep;
graph ops run per core with the graph interpreter's kernels, collectives combine the values of
each group of cores (see `aitc.dialects.shard` for groups):

    cores 0..3, %p = per-core partial sums       shard.all_reduce %p on @g grid_axes = [0]
    [p0, p1, p2, p3]                      ->      [s, s, s, s],  s = ((p0 + p1) + p2) + p3

Reductions add in group order, so a run is deterministic (hardware rings add in another order:
compare with a tolerance).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation, SSAValue

from aitc.analysis.signature import check_inputs, entry_function, input_names, output_names
from aitc.diagnostics import AitcError
from aitc.dialects import shard
from aitc.interp.graph import evaluate
from aitc.types import numpy_dtype

REDUCE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "sum": np.add,
    "max": np.maximum,
    "min": np.minimum,
    "prod": np.multiply,
}


@register_impls
class ShardFunctions(InterpreterFunctions):
    """The annotated (global) view: annotations are identities, collectives are errors."""

    @impl(shard.ShardingOp)
    def run_sharding(
        self, interpreter: Interpreter, op: shard.ShardingOp, args: PythonValues
    ) -> PythonValues:
        return (op,)

    @impl(shard.ShardOp)
    def run_shard(self, interpreter: Interpreter, op: shard.ShardOp, args: PythonValues) -> PythonValues:
        return (args[0],)


def _spmd_only(op_type: type[Operation]) -> None:
    def run(self, interpreter: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
        raise AitcError(
            f"{op.name} combines the values of several cores: run the module with "
            "aitc.interp.shard.run_spmd (one input set per core), not as one program"
        )

    setattr(ShardFunctions, f"run_{op_type.__name__}", impl(op_type)(run))


# xDSL 0.74 registers one op class per @impl method; the SPMD-only ops share one error message.
for _op_type in (*shard.COLLECTIVES, shard.ProcessLinearIndexOp):
    _spmd_only(_op_type)
register_impls(ShardFunctions)


# --------------------------------------------------------------------------- groups


def multi_index(linear: int, dims: Sequence[int]) -> tuple[int, ...]:
    """Row-major coordinates of core `linear` in a grid of `dims`."""
    return tuple(int(i) for i in np.unravel_index(linear, tuple(dims)))


def groups(dims: Sequence[int], axes: Sequence[int]) -> list[list[int]]:
    """The cores of each group of a collective over `axes`, each group in group order (the
    first listed axis most significant)."""
    found: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    sizes = [dims[a] for a in axes]
    for core in range(int(np.prod(dims))):
        index = multi_index(core, dims)
        key = tuple(index[a] for a in range(len(dims)) if a not in axes)
        position = int(np.ravel_multi_index(tuple(index[a] for a in axes), sizes)) if axes else 0
        found.setdefault(key, []).append((position, core))
    return [[core for _, core in sorted(members)] for members in found.values()]


# --------------------------------------------------------------------------- collectives


def halo_part(
    array: np.ndarray, axis: int, position: int, parts: int, lo: int = 0, hi: int = 0, fill: float = 0.0
) -> np.ndarray:
    """Part `position` of `parts` of `array` along `axis`, widened by `lo` elements before and
    `hi` after (`fill` past the array's ends): `shard.all_slice`'s result on that core."""
    width = array.shape[axis] // parts
    start, stop = position * width - lo, (position + 1) * width + hi
    inside = np.take(array, np.arange(max(start, 0), min(stop, array.shape[axis])), axis=axis)
    if start >= 0 and stop <= array.shape[axis]:
        return inside
    pads = [(0, 0)] * array.ndim
    pads[axis] = (max(-start, 0), max(stop - array.shape[axis], 0))
    if not np.issubdtype(array.dtype, np.floating) and fill == float("-inf"):
        fill = np.iinfo(array.dtype).min  # an integer max pool's padding: the lowest value
    return np.pad(inside, pads, constant_values=np.asarray(fill, dtype=array.dtype))


def _reduce(kind: str, values: Sequence[np.ndarray]) -> np.ndarray:
    return functools.reduce(REDUCE[kind], values[1:], values[0])


def _group_results(op: shard.CollectiveOp, values: list[np.ndarray]) -> list[np.ndarray]:
    """The results of one group, in group order, from its members' values in group order."""
    parts = len(values)
    if isinstance(op, shard.AllReduceOp):
        return [_reduce(op.kind, values)] * parts
    if isinstance(op, shard.AllGatherOp):
        return [np.concatenate(values, axis=op.int_prop("gather_axis"))] * parts
    if isinstance(op, shard.ReduceScatterOp):
        return np.split(_reduce(op.kind, values), parts, axis=op.int_prop("scatter_axis"))
    if isinstance(op, shard.AllSliceOp):
        axis, (lo, hi) = op.int_prop("slice_axis"), op.halo_sizes
        return [halo_part(value, axis, k, parts, lo, hi, op.halo_fill) for k, value in enumerate(values)]
    if isinstance(op, shard.AllToAllOp):
        split, concat = op.int_prop("split_axis"), op.int_prop("concat_axis")
        pieces = [np.split(value, parts, axis=split) for value in values]
        return [np.concatenate([pieces[i][j] for i in range(parts)], axis=concat) for j in range(parts)]
    assert isinstance(op, shard.BroadcastOp)
    return [values[_root_position(op)]] * parts


def _root_position(op: shard.BroadcastOp) -> int:
    """The root's position in its group (0 for a group of one)."""
    if not op.axes:
        return 0
    grid = shard.grid_of(op, op.grid.root_reference.data)
    assert grid is not None  # the verifier checked it
    return int(np.ravel_multi_index(tuple(op.root_index), [grid.dims[a] for a in op.axes]))


def run_collective(
    op: shard.CollectiveOp, values: Sequence[np.ndarray], grid: shard.GridOp
) -> list[np.ndarray]:
    """The value every core gets from `op`, given every core's operand (by linear index)."""
    results: list[np.ndarray] = [np.empty(0)] * len(values)
    assert isinstance(op.result.type, TensorType)
    dtype = numpy_dtype(op.result.type.get_element_type())
    for members in groups(grid.dims, op.axes):
        for core, result in zip(members, _group_results(op, [values[c] for c in members]), strict=True):
            results[core] = np.array(result, dtype=dtype, order="C")  # keeps rank 0
    return results


# --------------------------------------------------------------------------- SPMD runs


def spmd_grid(function: func.FuncOp) -> shard.GridOp | None:
    """The one grid the collectives of `function` run on (None without collectives); several
    grids of different sizes in one function are refused."""
    grids: dict[str, shard.GridOp] = {}
    for op in function.walk():
        if isinstance(op, shard.CollectiveOp | shard.ProcessLinearIndexOp):
            name = op.grid.root_reference.data
            grid = shard.grid_of(op, name)
            if grid is None:
                raise AitcError(f"{op.name}: no shard.grid @{name} in the module")
            grids[name] = grid
    if len({g.size for g in grids.values()}) > 1:
        sizes = ", ".join(f"@{name} ({g.size} cores)" for name, g in grids.items())
        raise AitcError(f"an SPMD function runs on one number of cores, but its collectives use {sizes}")
    return next(iter(grids.values()), None)


def run_spmd(
    module: ModuleOp, inputs: Sequence[Mapping[str, np.ndarray]], entry: str | None = None
) -> list[dict[str, np.ndarray]]:
    """Runs the entry function on every core (one input set per core, by input name) and
    returns every core's outputs by name."""
    f = entry_function(module, entry)
    grid = spmd_grid(f)
    cores = len(inputs)
    if grid is not None and grid.size != cores:
        raise AitcError(
            f"@{f.sym_name.data} runs on grid @{grid.sym_name.data} of {grid.size} cores, but {cores} input "
            f"sets were given (one per core)"
        )
    values: dict[SSAValue, list] = {}
    per_core = [check_inputs(f, dict(core_inputs)) for core_inputs in inputs]
    for index, arg in enumerate(f.body.block.args):
        values[arg] = [args[index] for args in per_core]
    for op in f.body.block.ops:
        if isinstance(op, func.ReturnOp):
            names = output_names(f)
            return [{n: values[v][c] for n, v in zip(names, op.arguments, strict=True)} for c in range(cores)]
        _step(op, values, cores)
    raise AitcError(f"@{f.sym_name.data} has no func.return")


def _step(op: Operation, values: dict[SSAValue, list], cores: int) -> None:
    if isinstance(op, shard.CollectiveOp):
        own = shard.grid_of(op, op.grid.root_reference.data)  # grids of one size may differ in shape
        assert own is not None  # spmd_grid found every grid
        values[op.result] = run_collective(op, values[op.input], own)
    elif isinstance(op, shard.ProcessLinearIndexOp):
        values[op.result] = list(range(cores))
    elif isinstance(op, shard.ShardingOp):
        values[op.result] = [op] * cores
    elif isinstance(op, shard.ShardOp):
        values[op.result] = values[op.src]
    elif op.name.startswith("graph."):
        outputs = [evaluate(op, tuple(values[v][c] for v in op.operands)) for c in range(cores)]
        for index, result in enumerate(op.results):
            values[result] = [out[index] for out in outputs]
    else:
        raise AitcError(f"an SPMD run executes graph and shard ops, not {op.name}")


def split_inputs(
    function: func.FuncOp, inputs: Mapping[str, np.ndarray], split_dims: Mapping[str, int], cores: int
) -> list[dict[str, np.ndarray]]:
    """Per-core inputs of a 1-D grid from global ones: an input named in `split_dims` is split
    evenly along that dim (core k gets part k); the others are replicated."""
    result: list[dict[str, np.ndarray]] = [{} for _ in range(cores)]
    for name in input_names(function):
        value = np.asarray(inputs[name])
        pieces = np.split(value, cores, axis=split_dims[name]) if name in split_dims else [value] * cores
        for core, piece in enumerate(pieces):
            result[core][name] = piece
    return result
