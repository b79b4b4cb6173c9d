"""numpy semantics of the `tile` dialect, and its xDSL interpreter functions.

A buffer value is one numpy array of its memref's shape and dtype: zeros from `tile.alloc`, a
writable copy of the constant from `tile.const`, a view from `tile.reshape`. A window
`%buf[%i, %j] ... sizes [s0, s1]` is the view `buf[i:i+s0, j:j+s1]`, so every op writes through
it into its buffer; compute ops see their window as the rows x cols tile an engine sees (the
leading sizes are 1). Index values are Python ints (xDSL's arith and scf functions).

The arithmetic is `aitc.semantics` (binary ops, unary functions and activations, select,
reductions, casts, matmul accumulation), which the simulator shares, so a tile program and the
hw program lowered from it compute the same bits. Each op is a handful of vectorised numpy
calls, never a loop over elements.

Checked at run time, as AitcErrors that name the op, its location and its kernel: a window
whose (dynamic) indices leave its buffer, a gather index outside its table.

`run_tile_module` runs a tile-level function in destination-passing style (inputs, then the
output buffers marked `tile.output`). Sync-level IR runs too: the `sync.engine` attribute is
ignored, and implementations of the sync ops come in through `functions=`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp, UnknownLoc
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.func import FuncFunctions
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from aitc import semantics
from aitc.analysis.signature import check_inputs, entry_function, is_output_arg, output_names
from aitc.diagnostics import AitcError
from aitc.dialects import sync, tile
from aitc.interp.loops import BoundedScfFunctions, LoopBudget
from aitc.types import numpy_dtype
from aitc.weights import attr_to_array

# --------------------------------------------------------------------------- windows


def describe(op: Operation) -> str:
    """Where `op` is, for diagnostics: `tile.copy at loc("fc1") in tile.kernel "fc1"`."""
    where = [op.name]
    if not isinstance(op.location, UnknownLoc):
        where.append(f"at {op.location}")
    parent = tile.enclosing_kernel(op)
    if parent is not None and parent.sym is not None:
        where.append(f'in tile.kernel "{parent.sym.data}"')
    return " ".join(where)


def _view(op: tile.WindowOp, name: str, buffer: np.ndarray, starts: Sequence[int]) -> np.ndarray:
    """The window `name` of `op` as a view of `buffer`, after checking it lies inside."""
    box = op.window_shape(name)
    if any(s < 0 or s + b > d for s, b, d in zip(starts, box, buffer.shape, strict=True)):
        window = ", ".join(f"{s}:{s + b}" for s, b in zip(starts, box, strict=True))
        raise AitcError(
            f"{describe(op)}: window '{name}' [{window}] leaves its buffer of shape {list(buffer.shape)}",
            hint="the window's indices are computed at run time: check the loop bounds and steps",
        )
    return buffer[tuple(slice(s, s + b) for s, b in zip(starts, box, strict=True))]


def windows(op: tile.WindowOp, args: PythonValues) -> dict[str, np.ndarray]:
    """The view of every window of `op`, by access name. `args` is the flat operand list: per
    access a buffer (array) followed by one index per buffer dim."""
    views: dict[str, np.ndarray] = {}
    position = 0
    for name in op.ACCESSES:
        buffer = args[position]
        starts = args[position + 1 : position + 1 + buffer.ndim]
        views[name] = _view(op, name, buffer, starts)
        position += 1 + buffer.ndim
    return views


def _plane(view: np.ndarray) -> np.ndarray:
    """A window as the rows x cols tile the engines see (every size but the last two is 1)."""
    if view.ndim == 1:
        return view[np.newaxis, :]
    return view[(0,) * (view.ndim - 2)]


def tiles(op: tile.WindowOp, args: PythonValues) -> dict[str, np.ndarray]:
    """The windows of a vector- or matrix-engine op as 2-D views, by access name."""
    return {name: _plane(view) for name, view in windows(op, args).items()}


def _gather_rows(op: tile.GatherOp, indices: np.ndarray, table_rows: int) -> np.ndarray:
    """The gather's row indices; any outside [0, table_rows) is an error."""
    bad = np.flatnonzero((indices < 0) | (indices >= table_rows))
    if len(bad):
        shown = ", ".join(f"index[{i}] = {indices[i]}" for i in bad[:4])
        raise AitcError(
            f"{describe(op)}: {len(bad)} gather indices outside the table of {table_rows} rows: {shown}",
            hint="indices must lie in [0, table rows): check the index tensor (token ids vs vocabulary?)",
        )
    return indices


# --------------------------------------------------------------------------- interpreter functions


@register_impls
class TileFunctions(InterpreterFunctions):
    """xDSL interpreter functions of the tile dialect: numpy on whole buffers (see module doc)."""

    @impl(tile.AllocOp)
    def run_alloc(self, interpreter: Interpreter, op: tile.AllocOp, args: PythonValues) -> PythonValues:
        type_ = op.buffer.type
        assert isinstance(type_, MemRefType)
        return (np.zeros(type_.get_shape(), numpy_dtype(type_.get_element_type())),)

    @impl(tile.ConstOp)
    def run_const(self, interpreter: Interpreter, op: tile.ConstOp, args: PythonValues) -> PythonValues:
        assert op.value is not None
        return (np.array(attr_to_array(op.value)),)  # a copy: constants are read-only arrays

    @impl(tile.ReshapeOp)
    def run_reshape(self, interpreter: Interpreter, op: tile.ReshapeOp, args: PythonValues) -> PythonValues:
        type_ = op.result.type
        assert isinstance(type_, MemRefType)
        return (np.reshape(args[0], type_.get_shape(), copy=False),)  # a view: writes go through

    @impl(tile.KernelOp)
    def run_kernel(self, interpreter: Interpreter, op: tile.KernelOp, args: PythonValues) -> PythonValues:
        name = op.sym.data if op.sym is not None else "?"
        interpreter.run_ssacfg_region(op.body, (), f"tile.kernel {name}")
        return ()

    # -- DMA
    @impl(tile.CopyOp)
    def run_copy(self, interpreter: Interpreter, op: tile.CopyOp, args: PythonValues) -> PythonValues:
        view = windows(op, args)
        view["dst"][...] = view["src"]  # numpy copies through a buffer when the two overlap
        return ()

    @impl(tile.TransposeOp)
    def run_transpose(
        self, interpreter: Interpreter, op: tile.TransposeOp, args: PythonValues
    ) -> PythonValues:
        view = windows(op, args)
        view["dst"][...] = np.swapaxes(view["src"], -1, -2)
        return ()

    @impl(tile.GatherOp)
    def run_gather(self, interpreter: Interpreter, op: tile.GatherOp, args: PythonValues) -> PythonValues:
        view = windows(op, args)
        table = view["table"]
        view["dst"][...] = table[_gather_rows(op, view["indices"][:, 0], len(table))]
        return ()

    # -- matrix engine
    @impl(tile.MatmulOp)
    def run_matmul(self, interpreter: Interpreter, op: tile.MatmulOp, args: PythonValues) -> PythonValues:
        view = windows(op, args)
        lhs, rhs, acc = view["lhs"], view["rhs"], view["acc"]
        if op.transpose_rhs is not None:
            rhs = rhs.T
        semantics.matmul_into(acc, lhs, rhs, op.accumulate is not None)
        return ()

    # -- vector engine
    @impl(tile.BinaryOp)
    def run_binary(self, interpreter: Interpreter, op: tile.BinaryOp, args: PythonValues) -> PythonValues:
        assert op.op is not None
        tile_ = tiles(op, args)
        tile_["dst"][...] = semantics.binary(op.op.data, tile_["a"], tile_["b"])
        return ()

    @impl(tile.BinaryImmOp)
    def run_binary_imm(
        self, interpreter: Interpreter, op: tile.BinaryImmOp, args: PythonValues
    ) -> PythonValues:
        assert op.op is not None
        assert op.imm is not None
        tile_ = tiles(op, args)
        imm = np.asarray(op.imm.value.data).astype(tile_["a"].dtype)
        tile_["dst"][...] = semantics.binary(op.op.data, tile_["a"], imm)
        return ()

    @impl(tile.UnaryOp)
    def run_unary(self, interpreter: Interpreter, op: tile.UnaryOp, args: PythonValues) -> PythonValues:
        assert op.op is not None
        tile_ = tiles(op, args)
        tile_["dst"][...] = semantics.unary(op.op.data, tile_["a"], tile_["a"].dtype)
        return ()

    @impl(tile.SelectOp)
    def run_select(self, interpreter: Interpreter, op: tile.SelectOp, args: PythonValues) -> PythonValues:
        tile_ = tiles(op, args)
        tile_["dst"][...] = semantics.select(tile_["cond"], tile_["a"], tile_["b"])
        return ()

    @impl(tile.ReduceOp)
    def run_reduce(self, interpreter: Interpreter, op: tile.ReduceOp, args: PythonValues) -> PythonValues:
        assert op.op is not None
        tile_ = tiles(op, args)
        tile_["dst"][:, 0] = semantics.reduce_rows(op.op.data, tile_["a"])
        return ()

    @impl(tile.CastOp)
    def run_cast(self, interpreter: Interpreter, op: tile.CastOp, args: PythonValues) -> PythonValues:
        tile_ = tiles(op, args)
        tile_["dst"][...] = semantics.convert(tile_["a"], tile_["dst"].dtype, op.scale_value, op.zero_value)
        return ()

    @impl(tile.AccReadOp)
    def run_acc_read(self, interpreter: Interpreter, op: tile.AccReadOp, args: PythonValues) -> PythonValues:
        tile_ = tiles(op, args)
        activation = op.activation.data if op.activation is not None else "none"
        tile_["dst"][...] = semantics.unary(activation, tile_["a"], tile_["a"].dtype)
        return ()


# --------------------------------------------------------------------------- running a module


def tile_interpreter(
    module: ModuleOp, functions: Sequence[InterpreterFunctions] = (), budget: LoopBudget | None = None
) -> Interpreter:
    """An interpreter for tile-level `module`: func, arith, scf and tile ops, plus `functions`
    (e.g. the sync ops' implementations); its loops spend `budget` (a fresh one by default)."""
    interpreter = Interpreter(module)
    scf = BoundedScfFunctions(budget)
    for implementations in (FuncFunctions(), ArithFunctions(), scf, TileFunctions(), *functions):
        interpreter.register_implementations(implementations)
    return interpreter


def _check_signature(f: func.FuncOp) -> None:
    """A tile-level entry takes only buffers and returns nothing."""
    name = f.sym_name.data
    problems = [
        f"@{name} argument {i} is {t}, not a buffer (memref)"
        for i, t in enumerate(f.function_type.inputs.data)
        if not isinstance(t, MemRefType)
    ]
    if f.function_type.outputs.data:
        problems.append(f"@{name} returns values; a tile-level function writes its outputs into arguments")
    if problems:
        raise AitcError(
            problems, hint="tile-level functions take buffers: inputs, then outputs marked tile.output"
        )


@register_impls
class SyncInProgramOrder(InterpreterFunctions):
    """sync ops as no-ops, for running sync-level IR in program order with `run_tile_module(...,
    functions=[SyncInProgramOrder()])`: program order already satisfies every wait (use
    `aitc.interp.sync` to execute the engines concurrently)."""

    @impl(sync.SignalOp)
    def run_signal(self, interpreter: Interpreter, op: sync.SignalOp, args: PythonValues) -> PythonValues:
        return ()

    @impl(sync.WaitOp)
    def run_wait(self, interpreter: Interpreter, op: sync.WaitOp, args: PythonValues) -> PythonValues:
        return ()

    @impl(sync.BarrierOp)
    def run_barrier(self, interpreter: Interpreter, op: sync.BarrierOp, args: PythonValues) -> PythonValues:
        return ()


def run_tile_module(
    module: ModuleOp,
    inputs: Mapping[str, np.ndarray],
    entry: str | None = None,
    functions: Sequence[InterpreterFunctions] = (),
) -> dict[str, np.ndarray]:
    """Runs the tile-level entry function (@main, or the only one) on `inputs` (by `graph.name`)
    and returns the output buffers by name. Output buffers start as zeros; inputs are copied, so
    the caller's arrays are never written."""
    f = entry_function(module, entry)
    name = f.sym_name.data
    _check_signature(f)
    given = iter(check_inputs(f, inputs))
    args, outputs = [], []
    for index, type_ in enumerate(f.function_type.inputs.data):
        assert isinstance(type_, MemRefType)
        if is_output_arg(f, index):
            outputs.append(np.zeros(type_.get_shape(), numpy_dtype(type_.get_element_type())))
            args.append(outputs[-1])
        else:
            args.append(np.array(next(given), order="C"))
    try:
        tile_interpreter(module, functions).call_op(f, tuple(args))
    except InterpretationError as error:
        if "Could not find interpretation function" not in str(error):
            raise
        raise AitcError(
            f"@{name}: {error}", hint="the tile interpreter runs func, arith, scf and tile ops"
        ) from None
    return dict(zip(output_names(f), outputs, strict=True))
