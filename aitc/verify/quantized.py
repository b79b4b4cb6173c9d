"""`aitc verify INT8.onnx --float FLOAT.onnx`: a quantized (QDQ) model, as aitc computes it at a
level, against the float model it came from, and which nodes would gain most from staying float.

Per tensor the two models share (same name and shape: the outputs of the ops the quantizer kept),
the int8 model's value against onnxruntime's value in the float model, judged by the `int8`
tolerance profile. Then, per quantized node (a Conv, MatMul or Gemm reading a DequantizeLinear),
the model's output SQNR against the float model's when that node alone reads float values: its
activations before their QuantizeLinear and its weights from the float model (found by name:
the quantized initializer's name without `_quantized` and the node suffix aitc quantize adds);
the gain over the all-int8 model ranks them. These what-if runs use onnxruntime on the QDQ
graph, whose numerics aitc's graph level matches bit for bit. Each one's speed price is
measured too: the variant compiled for the target and simulated, against the all-int8 model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import onnx

from aitc.compiler import CompileOptions, compile_module
from aitc.diagnostics import AitcError
from aitc.frontend.onnx_import import graph_inputs
from aitc.reference import onnxruntime_outputs
from aitc.report import format_table
from aitc.sim import Simulator
from aitc.target import load_target
from aitc.verify import (
    LEVELS,
    VerifyReport,
    compiled_outputs,
    exposed_model,
    load_checked,
    prepared_model,
    reference_inputs,
    tensor_checks,
)
from aitc.verify.metrics import TOLERANCES, Tolerance, compare

QUANTIZED_OPS = ("Conv", "MatMul", "Gemm")


@dataclass(frozen=True)
class Exclusion:
    """What leaving one quantized node float would give: the model outputs' lowest SQNR
    against the float model, and the gain over the all-int8 model's."""

    node: str
    op_type: str
    sqnr_db: float
    gain_db: float
    cycles: int | None = None
    """Simulated cycles the model takes more with this node float than all int8 (its speed
    price; None when not measured)."""


def _float_profiles() -> dict[str, Tolerance]:
    """TOLERANCES with float tensors judged as int8 results (they are dequantized int8)."""
    return {**TOLERANCES, "float32": TOLERANCES["int8"], "float16": TOLERANCES["int8"]}


def _lowest_sqnr(
    got: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray], names: Sequence[str]
) -> float:
    values = [compare(np.asarray(got[n]), want[n]).sqnr_db for n in names if n in got and n in want]
    return min(values, default=math.inf)


def _float_weight(name: str, node: str, floats: Mapping[str, onnx.TensorProto]) -> onnx.TensorProto | None:
    """The float model's initializer a quantized weight `name` came from (module docstring)."""
    base = name.removesuffix("_quantized")
    for candidate in (base, base.removesuffix(f"_{node}")):
        if candidate in floats:
            return floats[candidate]
    return None


def exclusion_gains(
    quantized: onnx.ModelProto,
    float_model: onnx.ModelProto,
    inputs: Mapping[str, np.ndarray],
    want: Mapping[str, np.ndarray],
    cycles_of: Callable[[onnx.ModelProto], int] | None = None,
) -> list[Exclusion]:
    """Each quantized node's `Exclusion`, the largest gain first; `cycles_of` (a model's
    simulated cycles) measures each one's speed price."""
    outputs = [o.name for o in quantized.graph.output]
    base = _lowest_sqnr(onnxruntime_outputs(quantized, inputs), want, outputs)
    base_cycles = cycles_of(quantized) if cycles_of is not None else 0
    made_by = {out: node for node in quantized.graph.node for out in node.output}
    floats = {t.name: t for t in float_model.graph.initializer}
    found = []
    for index, node in enumerate(quantized.graph.node):
        dequantized = [
            i
            for i, name in enumerate(node.input)
            if getattr(made_by.get(name), "op_type", "") == "DequantizeLinear"
        ]
        if node.op_type not in QUANTIZED_OPS or not dequantized:
            continue
        variant = onnx.ModelProto()
        variant.CopyFrom(quantized)
        target = variant.graph.node[index]
        label = node.name or f"{node.op_type}_{index}"
        for i in dequantized:
            source = made_by[node.input[i]]
            producer = made_by.get(source.input[0])
            if producer is not None and producer.op_type == "QuantizeLinear":
                target.input[i] = producer.input[0]  # the activation before its quantization
                continue
            weight = _float_weight(source.input[0], label, floats)
            if weight is not None:
                copy = onnx.TensorProto()
                copy.CopyFrom(weight)
                copy.name = f"{weight.name}_float_{index}"
                variant.graph.initializer.append(copy)
                target.input[i] = copy.name
        sqnr = _lowest_sqnr(onnxruntime_outputs(variant, inputs), want, outputs)
        cycles = cycles_of(variant) - base_cycles if cycles_of is not None else None
        found.append(Exclusion(label, node.op_type, sqnr, sqnr - base, cycles))
    return sorted(found, key=lambda e: (-e.gain_db, e.node))


def verify_against_float(
    quantized_source: str | onnx.ModelProto,
    float_source: str | onnx.ModelProto,
    options: CompileOptions,
    level: str = "hw",
    inputs: Mapping[str, np.ndarray] | None = None,
    seed: int = 0,
) -> tuple[VerifyReport, list[Exclusion]]:
    """The quantized model at `level` against the float model, tensor by tensor, and the
    exclusion ranking (module docstring)."""
    if level not in LEVELS:
        raise AitcError(f"--level must be one of {', '.join(LEVELS)}, not '{level}'")
    quantized = prepared_model(load_checked(quantized_source), options.input_shapes)
    try:
        float_model = prepared_model(load_checked(float_source), options.input_shapes)
    except AitcError as error:  # name the file: the diagnostic's prefix is the quantized model's
        shown = float_source if isinstance(float_source, str) else "the float model"
        raise AitcError([f"--float {shown}: {p}" for p in error.problems], hint=error.hint) from None
    float_inputs = {v.name for v in graph_inputs(float_model)}
    quantized_inputs = {v.name for v in graph_inputs(quantized)}
    if float_inputs != quantized_inputs:
        both = f"{sorted(quantized_inputs)} and {sorted(float_inputs)}"
        raise AitcError(f"--float: the models take different inputs ({both})")
    run_inputs = reference_inputs(float_model, inputs, seed)
    exposed_float, float_tensors = exposed_model(float_model)
    want = onnxruntime_outputs(exposed_float, run_inputs)
    exposed, tensors = exposed_model(quantized)
    got = compiled_outputs(exposed, level, options, run_inputs)
    shared = {name for name, _, _ in float_tensors}
    both = [
        t for t in tensors if t[0] in shared and t[0] in got and np.shape(got[t[0]]) == np.shape(want[t[0]])
    ]
    checks = tensor_checks(both, want, got, "int8 vs float", _float_profiles())
    name = quantized_source if isinstance(quantized_source, str) else (quantized.graph.name or "model")
    report = VerifyReport(
        str(name).rsplit("/", 1)[-1], level, options.target or "edge", checks, profiles=_float_profiles()
    )
    report.reference = {**run_inputs, **{t: want[t] for t in shared if t in want}}
    report.compiled["int8"] = {c.tensor: np.asarray(got[c.tensor]) for c in checks}
    target = load_target(options.target or "edge")

    def cycles_of(model: onnx.ModelProto) -> int:
        program = compile_module(model, replace(options, emit="hw")).module
        return Simulator(program, target, verified=True).run(run_inputs).stats.cycles

    outputs = {o.name: want[o.name] for o in float_model.graph.output}
    gains = exclusion_gains(quantized, float_model, run_inputs, outputs, cycles_of)
    return report, gains


def format_exclusions(gains: Sequence[Exclusion]) -> str:
    """The exclusion ranking as a table, largest gain first."""
    if not gains:
        return "no quantized Conv, MatMul or Gemm node to leave float"
    rows = [
        [
            g.node,
            g.op_type,
            f"{g.sqnr_db:.1f}",
            f"{g.gain_db:+.1f}",
            "-" if g.cycles is None else f"{g.cycles:+d}",
        ]
        for g in gains
    ]
    return (
        "nodes whose exclusion from quantization helps most (output SQNR vs the float model if left float,\n"
        "and the simulated cycles that costs against the all-int8 model):\n"
        + format_table(["node", "op", "SQNR dB", "gain dB", "cycles"], rows)
    )
