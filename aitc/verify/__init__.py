"""Accuracy verification: `aitc verify MODEL.onnx`, every node's output compiled at a level
against onnxruntime on the float model.

Two modes, as vendor toolchains offer them:

- **entire**: the model runs once with every node's output exposed (each becomes a graph output
  of a copy of the model, in onnxruntime and in aitc alike), so errors accumulate through the
  network as they do in deployment. Exposing a tensor keeps it from being fused away, so the
  compiled program materialises every intermediate; the final outputs are those of the model.
- **single**: each node runs alone (a one-node model), fed onnxruntime's values of its inputs,
  so a node's own error shows whatever came before it. Integer inputs (shapes, axes, indices)
  are frozen into constants, as aitc needs them at compile time.

At `--level graph` aitc's graph interpreter runs the imported model; at tile and sync level
the interpreters of those levels run the compiled module; at hw level the simulator runs the
program. Metrics and tolerance profiles: `aitc.verify.metrics`. `snapshot_files` holds the
reference and compiled tensors (.npy, names mapped in names.json) and the report.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import onnx
from xdsl.passes import ModulePass

from aitc.compiler import CompileOptions, compile_module, load_input, record_compile_target
from aitc.diagnostics import AitcError
from aitc.frontend.onnx_import import graph_inputs, load_model, typed_model
from aitc.interp.run import random_tensor, run_any_level
from aitc.passes.runner import run_pipeline_reporting
from aitc.reference import onnxruntime_outputs
from aitc.report import format_table
from aitc.verify.bisect import BisectResult, Log, bisect_passes, pipeline_passes
from aitc.verify.metrics import QUANTIZED_TOLERANCES, TOLERANCES, Comparison, Tolerance, compare

LEVELS = ("graph", "tile", "sync", "hw")


@dataclass(frozen=True)
class TensorCheck:
    """One tensor of one node in one mode: its comparison, or why it was not compared."""

    mode: str
    node: str
    op_type: str
    tensor: str
    dtype: str
    comparison: Comparison | None
    skipped: str = ""

    @property
    def failed(self) -> bool:
        """Compared, and outside its profile."""
        return self.comparison is not None and not self.comparison.passed

    def to_json(self) -> dict[str, object]:
        """The check as report.json writes it."""
        metrics = self.comparison.to_json() if self.comparison is not None else {}
        return {"mode": self.mode, "node": self.node, "op_type": self.op_type, "tensor": self.tensor,
                "dtype": self.dtype, **metrics, "skipped": self.skipped}  # fmt: skip


@dataclass
class VerifyReport:
    """The checks of one `aitc verify` run, and the tensors they compared (for the snapshot)."""

    source: str
    level: str
    target: str
    checks: list[TensorCheck]
    reference: dict[str, np.ndarray] = field(default_factory=dict)
    compiled: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    """Per mode, the compiled tensors by name."""
    bisect: BisectResult | None = None
    """`--bisect`'s finding, when entire mode disagreed and it ran."""
    profiles: Mapping[str, Tolerance] = field(default_factory=lambda: TOLERANCES)
    """The tolerance profiles the checks used (`tolerances_for`)."""

    @property
    def failures(self) -> list[TensorCheck]:
        """The checks outside tolerance, in order."""
        return [check for check in self.checks if check.failed]

    def to_json(self) -> dict[str, object]:
        """report.json's content."""
        return {
            "source": self.source,
            "level": self.level,
            "target": self.target,
            "tolerances": {name: tolerance.text() for name, tolerance in self.profiles.items()},
            "compared": sum(c.comparison is not None for c in self.checks),
            "failed": len(self.failures),
            "skipped": sum(bool(c.skipped) for c in self.checks),
            "tensors": [check.to_json() for check in self.checks],
            "bisect": None if self.bisect is None else self.bisect.to_json(),
        }


def prepared_model(model: onnx.ModelProto, input_shapes: Mapping[str, Sequence[int]]) -> onnx.ModelProto:
    """A copy of `model` checked as `aitc import` checks it, with its inputs pinned to
    `input_shapes` and every value's type and shape inferred."""
    pinned = onnx.ModelProto()
    pinned.CopyFrom(model)
    del pinned.graph.value_info[:]  # inferred again from the pinned inputs
    return typed_model(pinned, None, input_shapes)


def _node_label(node: onnx.NodeProto, index: int) -> str:
    return node.name or f"{node.op_type}_{index}"


def _infos(model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    """The typed value infos of a prepared model (with a shape, which aitc requires of an
    output), inputs and initializers included, by name."""
    graph = model.graph
    found = {
        v.name: v
        for v in [*graph.input, *graph.value_info, *graph.output]
        if v.type.tensor_type.elem_type and v.type.tensor_type.HasField("shape")
    }
    for tensor in graph.initializer:
        found.setdefault(
            tensor.name, onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type, tensor.dims)
        )
    return found


def exposed_model(
    model: onnx.ModelProto, constants: bool = True
) -> tuple[onnx.ModelProto, list[tuple[str, str, str]]]:
    """`model` with every node output of a known type and shape also a graph output, and the
    list of (tensor, node, op type) it compares, in node order (the model's outputs included).
    Without `constants`, a tensor computed from initializers alone (a QDQ model's dequantized
    weights) is neither exposed nor compared: a multi-core program cannot return a constant."""
    infos = _infos(model)
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    outputs = {o.name for o in exposed.graph.output}
    tensors = []
    constant = {i.name for i in model.graph.initializer}
    for index, node in enumerate(model.graph.node):
        if node.op_type == "Constant" or all(not i or i in constant for i in node.input):
            constant.update(node.output)
            if not constants:
                continue
        for name in node.output:
            if not name or (name not in infos and name not in outputs) or node.op_type == "Constant":
                continue
            tensors.append((name, _node_label(node, index), node.op_type))
            if name not in outputs:
                exposed.graph.output.append(infos[name])
                outputs.add(name)
    return exposed, tensors


def reference_inputs(
    model: onnx.ModelProto, given: Mapping[str, np.ndarray] | None, seed: int
) -> dict[str, np.ndarray]:
    """`given`, else seeded random values for the model's inputs (a prepared model: static
    shapes; a dim still unknown is an error naming it)."""
    if given is not None:
        return _checked(model, given)
    rng = np.random.default_rng(seed)
    found = {}
    for value in graph_inputs(model):
        dims = _dims(value)
        if any(d is None for d in dims):
            raise AitcError(
                f"input '{value.name}' has dynamic dims ({_shown(dims)}): pin them with --input-shape"
            )
        dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
        found[value.name] = random_tensor(rng, dims, dtype)  # type: ignore[arg-type]
    return found


def _dims(value: onnx.ValueInfoProto) -> list[int | None]:
    """A value's dims, None where unknown."""
    return [d.dim_value if d.HasField("dim_value") else None for d in value.type.tensor_type.shape.dim]


def _shown(dims: Sequence[int | None]) -> str:
    return "x".join("?" if d is None else str(d) for d in dims)


def _checked(model: onnx.ModelProto, given: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`given`, when it holds exactly the model's inputs with their element types and (known)
    dims; else an AitcError listing what is wrong."""
    problems = []
    declared = graph_inputs(model)
    for value in declared:
        if value.name not in given:
            problems.append(f"input '{value.name}' is missing from --inputs")
            continue
        want = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
        array = np.asarray(given[value.name])
        dims = _dims(value)
        if array.dtype != want:
            problems.append(f"input '{value.name}' is {array.dtype}, the model takes {want}")
        elif len(dims) != array.ndim or any(d is not None and d != n for d, n in zip(dims, array.shape)):
            problems.append(
                f"input '{value.name}' has shape {list(array.shape)}, the model takes {_shown(dims)}"
            )
    known = {v.name for v in declared}
    problems += [
        f"--inputs has '{name}', which is no input of the model" for name in given if name not in known
    ]
    if problems:
        raise AitcError(problems)
    return {name: np.asarray(given[name]) for name in known}


def compiled_outputs(
    model: onnx.ModelProto,
    level: str,
    options: CompileOptions,
    inputs: Mapping[str, np.ndarray],
    passes: Sequence[ModulePass] | None = None,
) -> dict[str, np.ndarray]:
    """The outputs of `model` compiled to `level` (by `passes` instead of the compile's
    pipeline, when given) and run there."""
    if passes is None:
        return run_any_level(compile_module(model, replace(options, emit=level)).module, inputs)
    module = load_input(model, options)
    record_compile_target(module, options)
    run_pipeline_reporting(module, list(passes), "none")
    return run_any_level(module, inputs)


def tensor_checks(
    tensors: Sequence[tuple[str, str, str]],
    reference: Mapping[str, np.ndarray],
    compiled: Mapping[str, np.ndarray],
    mode: str = "entire",
    profiles: Mapping[str, Tolerance] | None = None,
) -> list[TensorCheck]:
    """One check per (tensor, node, op type) of `tensors`: its compiled value against its
    reference (skipped when the compiled run does not output it)."""
    checks = []
    for tensor, node, op_type in tensors:
        want, got = reference[tensor], compiled.get(tensor)
        comparison = None if got is None else compare(np.asarray(got), want, profiles)
        skipped = "not an output" if got is None else ""
        checks.append(TensorCheck(mode, node, op_type, tensor, str(want.dtype), comparison, skipped))
    return checks


def _single_node_model(
    model: onnx.ModelProto, node: onnx.NodeProto, reference: Mapping[str, np.ndarray]
) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A model of `node` alone: initializers it reads and integer or boolean inputs as constants
    (their reference values), float inputs as graph inputs (fed their reference values)."""
    initializers = {t.name: t for t in model.graph.initializer}
    _infos(model)
    inputs, graph_inputs, constants = {}, [], []
    for name in dict.fromkeys(i for i in node.input if i):
        if name in initializers:
            constants.append(initializers[name])
        elif reference[name].dtype.kind in "biu":
            constants.append(onnx.numpy_helper.from_array(reference[name], name))
        else:
            value = reference[name]
            elem = onnx.helper.np_dtype_to_tensor_dtype(value.dtype)
            graph_inputs.append(onnx.helper.make_tensor_value_info(name, elem, list(value.shape)))
            inputs[name] = value
    outputs = [_declared(o, reference[o]) for o in node.output if o and o in reference]
    graph = onnx.helper.make_graph([node], f"single_{node.op_type}", graph_inputs, outputs, constants)
    single = onnx.helper.make_model(
        graph, opset_imports=list(model.opset_import), ir_version=model.ir_version
    )
    return single, inputs


def _declared(name: str, value: np.ndarray) -> onnx.ValueInfoProto:
    """An output declaration of `name` with the type and shape of its reference value."""
    return onnx.helper.make_tensor_value_info(
        name, onnx.helper.np_dtype_to_tensor_dtype(value.dtype), value.shape
    )


def verify_single(
    model: onnx.ModelProto,
    level: str,
    options: CompileOptions,
    reference: Mapping[str, np.ndarray],
    profiles: Mapping[str, Tolerance] | None = None,
) -> tuple[list[TensorCheck], dict[str, np.ndarray]]:
    """Single mode (module docstring), with `reference` holding every tensor's reference value
    (the model's inputs and every node output)."""
    checks, compiled = [], {}
    initializers = _initializer_names(model)
    for index, node in enumerate(model.graph.node):
        label = _node_label(node, index)
        outputs = [o for o in node.output if o and o in reference]
        if node.op_type == "Constant" or not outputs:
            continue

        def skipped(reason: str, node=node, label=label, outputs=outputs) -> list[TensorCheck]:
            return [
                TensorCheck("single", label, node.op_type, name, str(reference[name].dtype), None, reason)
                for name in outputs
            ]

        missing = [i for i in node.input if i and i not in reference and i not in initializers]
        if missing:
            checks += skipped(f"input '{missing[0]}' has no reference value")
            continue
        single, inputs = _single_node_model(model, node, reference)
        try:
            got = compiled_outputs(single, level, replace_shapes(options, inputs), inputs)
        except AitcError as error:
            checks += skipped(str(error).splitlines()[0][:160])
            continue
        for name in outputs:
            want = reference[name]
            if name not in got:
                checks.append(
                    TensorCheck("single", label, node.op_type, name, str(want.dtype), None, "not an output")
                )
                continue
            compiled[name] = np.asarray(got[name])
            comparison = compare(compiled[name], want, profiles)
            checks.append(TensorCheck("single", label, node.op_type, name, str(want.dtype), comparison))
    return checks, compiled


def _initializer_names(model: onnx.ModelProto) -> set[str]:
    return {t.name for t in model.graph.initializer}


def replace_shapes(options: CompileOptions, inputs: Mapping[str, np.ndarray]) -> CompileOptions:
    """`options` with the input shapes of a single-node model (its inputs' reference shapes)."""
    return replace(options, input_shapes={name: list(value.shape) for name, value in inputs.items()})


def verify_model(
    source: str | Path | onnx.ModelProto,
    options: CompileOptions,
    level: str = "hw",
    modes: Sequence[str] = ("entire",),
    inputs: Mapping[str, np.ndarray] | None = None,
    seed: int = 0,
    bisect: bool = False,
    passes: Sequence[ModulePass] | None = None,
    log: Log = print,
) -> VerifyReport:
    """Every node's outputs compiled to `level` against onnxruntime, in the given modes; with
    `bisect`, when entire mode disagrees, the first pass that does (`aitc.verify.bisect`, its
    probes printed by `log`). `passes`: the pipeline entire mode and the bisection run instead
    of the compile's down to `level` (a test pipeline)."""
    if level not in LEVELS:
        raise AitcError(f"--level must be one of {', '.join(LEVELS)}, not '{level}'")
    model = load_checked(source)
    prepared = prepared_model(model, options.input_shapes)
    run_inputs = reference_inputs(prepared, inputs, seed)
    report = VerifyReport(
        Path(str(source)).name if not isinstance(source, onnx.ModelProto) else (model.graph.name or "model"),
        level,
        options.target or "edge",
        [],
        profiles=tolerances_for(model),
    )
    exposed, tensors = exposed_model(prepared, constants=options.cores == 1)
    reference = onnxruntime_outputs(exposed, run_inputs)
    report.reference = {**run_inputs, **reference}
    checks: list[TensorCheck] = []
    if "entire" in modes or bisect:  # --bisect starts from entire mode's disagreement
        compiled = compiled_outputs(exposed, level, options, run_inputs, passes)
        checks = tensor_checks(tensors, reference, compiled, profiles=report.profiles)
    if "entire" in modes:
        report.checks += checks
        report.compiled["entire"] = compiled
    if "single" in modes:
        single, outputs = verify_single(prepared, level, options, report.reference, report.profiles)
        report.checks += single
        report.compiled["single"] = outputs
    if bisect and any(check.failed for check in checks):
        chosen = list(passes) if passes is not None else pipeline_passes(options, level)
        report.bisect = bisect_passes(
            exposed, tensors, reference, options, run_inputs, chosen, log, report.profiles
        )
    return report


QUANTIZATION_OPS = ("QuantizeLinear", "DequantizeLinear")


def tolerances_for(model: onnx.ModelProto) -> Mapping[str, Tolerance]:
    """`QUANTIZED_TOLERANCES` for a quantized (QDQ) model, else `TOLERANCES`."""
    quantized = any(node.op_type in QUANTIZATION_OPS for node in model.graph.node)
    return QUANTIZED_TOLERANCES if quantized else TOLERANCES


def load_checked(source: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    """The model at `source` with its external data (a broken file is an AitcError), or the
    given model."""
    return source if isinstance(source, onnx.ModelProto) else load_model(str(source))


HEADERS = ["mode", "node", "op", "tensor", "dtype", "cosine", "SQNR dB", "max abs", "max rel", "result"]


def format_verify(report: VerifyReport, every: bool = False) -> str:
    """The per-tensor table (every row, or the failures and the 10 worst by SQNR of each mode)
    and the verdict."""
    rows = report.checks if every else _worth_showing(report.checks)
    cells = []
    for check in rows:
        c = check.comparison
        if c is None:
            cells.append([check.mode, check.node[-36:], check.op_type, check.tensor[-30:], check.dtype,
                          "", "", "", "", f"skipped: {check.skipped}"])  # fmt: skip
            continue
        verdict = "ok" if c.passed else f"FAIL: {c.problem}"
        cells.append([
            check.mode, check.node[-36:], check.op_type, check.tensor[-30:], check.dtype, f"{c.cosine:.6f}",
            f"{c.sqnr_db:.1f}", f"{c.max_abs:.3g}", f"{c.max_rel:.3g}", verdict,
        ])  # fmt: skip
    compared = [c for c in report.checks if c.comparison is not None]
    skipped = [c for c in report.checks if c.skipped]
    lines = [
        f"{report.source} at level {report.level} on '{report.target}' against onnxruntime on the same model",
        "",
        format_table(HEADERS, cells) if cells else "(nothing to show)",
        "",
        f"{len(compared)} tensors compared, {len(report.failures)} outside tolerance, {len(skipped)} skipped",
        "tolerances: " + "; ".join(f"{name}: {t.text()}" for name, t in report.profiles.items()),
    ]
    if not every and len(rows) < len(report.checks):
        lines.append(f"({len(report.checks) - len(rows)} more rows in report.json; --all prints every row)")
    if report.bisect is not None:
        lines.append(report.bisect.text())
    return "\n".join(lines)


def _worth_showing(checks: Sequence[TensorCheck]) -> list[TensorCheck]:
    """Failures and skips first, then each mode's 10 lowest SQNRs, in model order."""
    chosen = {id(c) for c in checks if c.failed or c.skipped}
    for mode in dict.fromkeys(c.mode for c in checks):
        compared = [c for c in checks if c.mode == mode and c.comparison is not None]
        for check in sorted(compared, key=lambda c: c.comparison.sqnr_db if c.comparison else 0)[:10]:
            chosen.add(id(check))
    return [c for c in checks if id(c) in chosen]


def _stem(name: str, taken: set[str]) -> str:
    """A file name stem for tensor `name`: [A-Za-z0-9._-] only, unique among `taken`."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip("._") or "tensor"
    stem, base, count = stem[:100], stem[:100], 1
    while stem in taken:
        count += 1
        stem = f"{base}_{count}"
    taken.add(stem)
    return stem


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def snapshot_files(report: VerifyReport) -> dict[str, bytes | str]:
    """The snapshot folder's files by relative path: reference/<stem>.npy (inputs and every
    compared tensor), <mode>/<stem>.npy (the compiled tensors of each mode), names.json (tensor
    name -> stem) and report.json."""
    taken: set[str] = set()
    names = {name: _stem(name, taken) for name in report.reference}
    for tensors in report.compiled.values():
        for name in tensors:
            if name not in names:
                names[name] = _stem(name, taken)
    files: dict[str, bytes | str] = {
        f"reference/{names[n]}.npy": _npy(v) for n, v in report.reference.items()
    }
    for mode, tensors in report.compiled.items():
        files.update({f"{mode}/{names[n]}.npy": _npy(v) for n, v in tensors.items()})
    files["names.json"] = json.dumps(names, indent=1) + "\n"
    files["report.json"] = json.dumps(report.to_json(), indent=1) + "\n"
    return files
