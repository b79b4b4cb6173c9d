"""Run a module's entry function on numpy inputs with the xDSL interpreter.

Graph-level functions take tensors and return their outputs. Tile-level functions take buffers
(memrefs) in destination-passing style: inputs first, then the output buffers, marked with the
unit arg attribute `tile.output`; `run_module` hands those to `aitc.interp.tile`, or to
`aitc.interp.sync` once the function is sync level (sync ops, or every compute op bound to an
engine by `sync.engine`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import BytesAttr, DictionaryAttr, MemRefType, ModuleOp, ShapedType, StringAttr
from xdsl.interpreter import Interpreter
from xdsl.interpreters.func import FuncFunctions
from xdsl.ir import Attribute

from aitc.diagnostics import AitcError
from aitc.interp.graph import GraphFunctions
from aitc.types import numpy_dtype

ENTRY = "main"
OUTPUT_ARG = "tile.output"
"""Unit arg attribute marking an output buffer of a tile-level function."""


def entry_function(module: ModuleOp, name: str | None = None) -> func.FuncOp:
    """The function to run: `name`, else @main, else the only schedule, else the only function."""
    from aitc.dialects.exec import is_schedule

    funcs = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    wanted = name or ENTRY
    for f in funcs:
        if f.sym_name.data == wanted:
            return f
    schedules = [f for f in funcs if is_schedule(f)]
    if name is None and len(schedules) == 1:
        return schedules[0]
    if name is None and len(funcs) == 1:
        return funcs[0]
    names = ", ".join("@" + f.sym_name.data for f in funcs) or "none"
    raise AitcError(f"no function @{wanted} to run (functions: {names}); pass --entry NAME")


def _name(attrs: DictionaryAttr | None) -> str | None:
    value = attrs.data.get("graph.name") if attrs is not None else None
    if isinstance(value, StringAttr):
        return value.data
    if isinstance(value, BytesAttr):  # non-ASCII names print as escaped bytes
        return value.data.decode("utf-8", "replace")
    return None


def _arg_attrs(f: func.FuncOp, index: int) -> DictionaryAttr | None:
    attrs = f.arg_attrs
    return attrs.data[index] if attrs is not None and index < len(attrs.data) else None


def is_tile_level(f: func.FuncOp) -> bool:
    """Whether `f` takes buffers (memrefs): a tile-level function in destination-passing style."""
    return any(isinstance(t, MemRefType) for t in f.function_type.inputs.data)


def is_output_arg(f: func.FuncOp, index: int) -> bool:
    """Whether argument `index` of `f` is an output buffer (`tile.output`)."""
    attrs = _arg_attrs(f, index)
    return attrs is not None and OUTPUT_ARG in attrs.data


def input_indices(f: func.FuncOp) -> list[int]:
    """The positions of the arguments that are model inputs (all but `tile.output` ones)."""
    return [i for i in range(len(f.function_type.inputs.data)) if not is_output_arg(f, i)]


def input_names(f: func.FuncOp) -> list[str]:
    """Model input names (`graph.name` arg attributes set by the importer, else arg0...)."""
    return [_name(_arg_attrs(f, i)) or f"arg{i}" for i in input_indices(f)]


def input_types(f: func.FuncOp) -> list[Attribute]:
    """The tensor (graph level) or buffer (tile level) types of the model inputs."""
    types = f.function_type.inputs.data
    return [types[i] for i in input_indices(f)]


def output_names(f: func.FuncOp) -> list[str]:
    """Output names: of the results (graph level) or of the `tile.output` buffers (tile level),
    from their `graph.name` attributes, else result0..."""
    if is_tile_level(f):
        outputs = [i for i in range(len(f.function_type.inputs.data)) if is_output_arg(f, i)]
        return [_name(_arg_attrs(f, i)) or f"result{k}" for k, i in enumerate(outputs)]
    attrs = f.res_attrs.data if f.res_attrs is not None else ()
    count = len(f.function_type.outputs.data)
    return [(_name(attrs[i]) if i < len(attrs) else None) or f"result{i}" for i in range(count)]


def random_tensor(rng: np.random.Generator, shape: Sequence[int], dtype: np.dtype) -> np.ndarray:
    """Test data: standard normal floats, 0/1 booleans, small integers in [-4, 4]."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    low = 0 if dtype.kind == "u" else -4
    return rng.integers(low, 5, shape).astype(dtype)


def random_inputs(f: func.FuncOp, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded random inputs for every argument of `f`, by model input name."""
    rng = np.random.default_rng(seed)
    types = input_types(f)
    return {
        name: random_tensor(rng, t.get_shape(), numpy_dtype(t.get_element_type()))  # pyright: ignore
        for name, t in zip(input_names(f), types, strict=True)
    }


def check_inputs(f: func.FuncOp, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Orders `inputs` by the function's arguments, checking names, shapes and dtypes."""
    names = input_names(f)
    missing = [n for n in names if n not in inputs]
    extra = [n for n in inputs if n not in names]
    problems = []
    if missing:
        problems.append(f"missing input(s): {', '.join(missing)}")
    if extra:
        problems.append(f"unknown input(s): {', '.join(extra)} (model inputs: {', '.join(names)})")
    args = []
    for name, type_ in zip(names, input_types(f), strict=True):
        if name not in inputs:
            continue
        assert isinstance(type_, ShapedType)
        want_shape, want_dtype = tuple(type_.get_shape()), numpy_dtype(type_.get_element_type())
        value = np.asarray(inputs[name])
        if value.shape != want_shape or value.dtype != want_dtype:
            problems.append(
                f"input '{name}' is {value.dtype}{list(value.shape)}, "
                f"the model expects {want_dtype}{list(want_shape)}"
            )
        args.append(value)
    if problems:
        raise AitcError(problems)
    return args


def run_module(
    module: ModuleOp,
    inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray],
    entry: str | None = None,
) -> dict[str, np.ndarray]:
    """Executes `module` (graph, tile or sync level, or a schedule of segments at any level)
    and returns its outputs by name."""
    from aitc.dialects.exec import is_schedule

    f = entry_function(module, entry)
    if not isinstance(inputs, Mapping):
        inputs = dict(zip(input_names(f), inputs, strict=True))
    if is_schedule(f):
        from aitc.interp.schedule import run_npu_reference, run_schedule

        results = run_schedule(module, f, check_inputs(f, inputs), run_npu_reference(module))
        return dict(zip(output_names(f), results, strict=True))
    if is_tile_level(f):
        from aitc.interp.sync import is_sync_level, run_sync_module  # both import this module
        from aitc.interp.tile import run_tile_module

        if is_sync_level(f):
            return run_sync_module(module, inputs, f.sym_name.data)

        return run_tile_module(module, inputs, f.sym_name.data)
    args = check_inputs(f, inputs)
    interpreter = Interpreter(module)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(GraphFunctions())
    results = interpreter.call_op(f, tuple(args))
    return dict(zip(output_names(f), (np.asarray(r) for r in results), strict=True))
