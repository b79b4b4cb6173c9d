"""The interface of a model function: its entry, its inputs and outputs, by name.

The importer names a graph-level function's arguments and results with `graph.name` attributes;
at tile level the outputs become buffer arguments marked with the unit attribute `tile.output`
(destination-passing style). Everything that runs a model (the interpreters, the simulator's
schedules, `aitc run`) reads these conventions here:

    f = entry_function(module)             # @main, else the only schedule, else the only function
    input_names(f), output_names(f)       # ["x", "mask"], ["y"] (arg0.../result0... if unnamed)
    args = check_inputs(f, {"x": x, ...})  # positional arrays, after checking names/shapes/dtypes
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import BytesAttr, DictionaryAttr, MemRefType, ModuleOp, StringAttr
from xdsl.ir import Attribute

from aitc.diagnostics import AitcError
from aitc.dialects.exec import is_schedule
from aitc.types import numpy_dtype, shape_and_element

ENTRY = "main"
OUTPUT_ARG = "tile.output"
"""Unit arg attribute marking an output buffer of a tile-level function."""


def entry_function(module: ModuleOp, name: str | None = None) -> func.FuncOp:
    """The function to run: `name`, else @main, else the only schedule, else the only function."""
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
        want_shape, element = shape_and_element(type_)
        want_dtype = numpy_dtype(element)
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
