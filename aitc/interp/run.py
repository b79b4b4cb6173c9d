"""Run a module's entry function on numpy inputs with the xDSL interpreter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import BytesAttr, ModuleOp, StringAttr, TensorType
from xdsl.interpreter import Interpreter
from xdsl.interpreters.func import FuncFunctions

from aitc.diagnostics import AitcError
from aitc.interp.graph import GraphFunctions
from aitc.types import numpy_dtype

ENTRY = "main"


def entry_function(module: ModuleOp, name: str | None = None) -> func.FuncOp:
    """The function to run: `name`, else @main, else the only public function."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    wanted = name or ENTRY
    for f in funcs:
        if f.sym_name.data == wanted:
            return f
    if name is None and len(funcs) == 1:
        return funcs[0]
    names = ", ".join("@" + f.sym_name.data for f in funcs) or "none"
    raise AitcError(f"no function @{wanted} to run (functions: {names}); pass --entry NAME")


def _names(f: func.FuncOp, key: str, count: int, prefix: str) -> list[str]:
    attrs = f.arg_attrs if key == "arg" else f.res_attrs
    names = []
    for i in range(count):
        name = None
        if attrs is not None and i < len(attrs.data):
            value = attrs.data[i].data.get("graph.name")
            if isinstance(value, StringAttr):
                name = value.data
            elif isinstance(value, BytesAttr):  # non-ASCII names print as escaped bytes
                name = value.data.decode("utf-8", "replace")
        names.append(name or f"{prefix}{i}")
    return names


def input_names(f: func.FuncOp) -> list[str]:
    """Model input names (`graph.name` arg attributes set by the importer, else arg0...)."""
    return _names(f, "arg", len(f.function_type.inputs.data), "arg")


def output_names(f: func.FuncOp) -> list[str]:
    return _names(f, "res", len(f.function_type.outputs.data), "result")


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
    types = f.function_type.inputs.data
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
    for name, type_ in zip(names, f.function_type.inputs.data, strict=True):
        if name not in inputs:
            continue
        assert isinstance(type_, TensorType)
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
    """Executes the graph-level `module` and returns its outputs by name."""
    f = entry_function(module, entry)
    if not isinstance(inputs, Mapping):
        inputs = dict(zip(input_names(f), inputs, strict=True))
    args = check_inputs(f, inputs)
    interpreter = Interpreter(module)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(GraphFunctions())
    results = interpreter.call_op(f, tuple(args))
    return dict(zip(output_names(f), (np.asarray(r) for r in results), strict=True))
