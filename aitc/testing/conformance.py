"""ONNX backend node-test conformance of the importer and the numpy reference interpreter.

    python -m aitc.testing.conformance [--cache DIR] [--op OPTYPE] [-v]

1. Writes the node tests defined by the installed onnx package (`onnx.backend.test.case.node`)
   into a cache folder (default `<repo>/.cache/onnx-node-tests`, or $AITC_ONNX_TEST_CACHE), in
   the layout of onnx's own generated data: `node/<test>/model.onnx` and
   `node/<test>/test_data_set_N/{input,output}_J.pb`. This happens once per onnx version
   (a stamp file records it); nothing is downloaded.
2. Selects the tests in aitc's scope: the op under test is claimed in `ONNX_OPS`, every node of
   the model is a claimed op type (function-expanded `*_expanded` tests included, counted for
   the op they expand), the model's default opset is at least 13, and it is a float32 test:
   every graph input/output is float32 or an integer/bool type aitc supports (int8..int64,
   uint8, uint16, bool), and one is float32. Tests with f16/f64/bf16/float8, strings, int2/int4,
   uint32, uint64 or sequences are out of scope.
3. Imports each selected test (input shapes from its data), runs it with `run_module` and
   compares every output with the onnx backend tolerances (rtol=1e-3, atol=1e-7; same dtype
   and shape; integer and bool outputs exactly). aitc's shapes are static, so graph inputs that
   feed an op's `static_inputs` (a Reshape's shape, Slice bounds, reduction axes, pads...) are
   bound as initializers holding the test data, as an exporter emits them; every other input
   stays a run-time input.

A test that an op's precheck rejects ("unsupported: <reason>") is an *unsupported variant*:
a documented feature outside aitc's scope, listed apart from failures. The exit status is 1 if
any selected test fails.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shutil
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from aitc.diagnostics import AitcError

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CACHE = REPO / ".cache" / "onnx-node-tests"
CACHE_ENV = "AITC_ONNX_TEST_CACHE"
STAMP = "generated.stamp"
RTOL, ATOL = 1e-3, 1e-7
MIN_OPSET = 13
_EXPANDED = re.compile(r"_expanded(_ver\d+)?$")
NO_FLOAT32_NODE_TESTS: dict[str, str] = {
    "And": "its node tests are bool-only and at opset 7",
    "Or": "its node tests are bool-only and at opset 7",
    "Xor": "its node tests are bool-only and at opset 7",
    "Not": "its node tests are bool-only and at opset 1",
    "Equal": "its node tests compare int or string tensors only",
    "Cast": "its node tests convert float32 only to/from f16, f64, bf16, float8/float4, int2/int4 or string",
    "CastLike": "its node tests convert only to/from f16, f64, bf16, float8/float4, int2/int4",
}
"""Claimed ops without any selected test, and why (the element types of their onnx node tests)."""

UNSUPPORTED_VARIANTS: dict[str, str] = {
    "test_batchnorm_epsilon_training_mode": "BatchNormalization training_mode=1 (batch statistics)",
    "test_batchnorm_example_training_mode": "BatchNormalization training_mode=1 (batch statistics)",
    "test_maxpool_with_argmax_2d_precomputed_pads": "MaxPool's second output, Indices",
    "test_maxpool_with_argmax_2d_precomputed_strides": "MaxPool's second output, Indices",
    "test_training_dropout": "Dropout training_mode input (random mask)",
    "test_training_dropout_default": "Dropout training_mode input (random mask)",
    "test_training_dropout_default_mask": "Dropout training_mode input (random mask)",
    "test_training_dropout_mask": "Dropout training_mode input (random mask)",
    "test_training_dropout_zero_ratio": "Dropout training_mode input (random mask)",
    "test_training_dropout_zero_ratio_mask": "Dropout training_mode input (random mask)",
    "test_dequantizelinear_blocked": "DequantizeLinear block_size (blocked quantization)",
    "test_quantizelinear_blocked_asymmetric": "QuantizeLinear block_size (blocked quantization)",
    "test_quantizelinear_blocked_symmetric": "QuantizeLinear block_size (blocked quantization)",
}
"""Selected tests that use a feature outside aitc's scope, which a precheck rejects at import
("unsupported: <reason>"); the conformance pytest checks that exactly these are rejected."""

_INDEX_TYPES = {
    TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8,
    TensorProto.UINT16, TensorProto.BOOL,
}  # fmt: skip
"""Non-float element types a float32 test may also use: the integer/bool types aitc supports."""


# --------------------------------------------------------------------------- generation


def cache_dir(override: str | os.PathLike | None = None) -> Path:
    """The cache folder: `override`, else $AITC_ONNX_TEST_CACHE, else `<repo>/.cache/onnx-node-tests`."""
    return Path(override or os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


def _stamp_text() -> str:
    return f"onnx=={onnx.__version__}\n"


def ensure_generated(cache: Path) -> Path:
    """Writes the onnx node tests into `cache` unless this onnx version already did; returns `cache/node`."""
    stamp = cache / STAMP
    if stamp.is_file() and stamp.read_text() == _stamp_text():
        return cache / "node"
    if cache.exists() and any(cache.iterdir()) and not (stamp.is_file() or (cache / "node").is_dir()):
        raise AitcError(f"{cache} is not empty and not an aitc test cache; refusing to overwrite it")
    cache.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=cache.name + ".tmp-", dir=cache.parent))
    try:
        for case in _collect_node_cases():
            _write_case(case, staging / "node" / case.name)
        (staging / STAMP).write_text(_stamp_text())
        if stamp.is_file() and stamp.read_text() == _stamp_text():
            return cache / "node"  # another process finished first
        if cache.exists():
            shutil.rmtree(cache)
        staging.rename(cache)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return cache / "node"


def _collect_node_cases() -> list:
    """onnx's node test cases (they compute their expected outputs with numpy at import)."""
    from onnx.backend.test.case import node

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        return list(node.collect_testcases())


def _write_case(case, folder: Path) -> None:
    """One test case in the layout of `onnx.backend.test.cmd_tools.generate_data`."""
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(case.model.SerializeToString())
    graph = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets):
        data = folder / f"test_data_set_{i}"
        data.mkdir()
        for kind, values, infos in (("input", inputs, graph.input), ("output", outputs, graph.output)):
            for j, value in enumerate(values):
                (data / f"{kind}_{j}.pb").write_bytes(_serialize(value, infos[j]))


def _serialize(value, info: onnx.ValueInfoProto) -> bytes:
    type_ = info.type
    if type_.HasField("map_type"):
        return numpy_helper.from_dict(value, info.name).SerializeToString()
    if type_.HasField("sequence_type"):
        return numpy_helper.from_list(value, info.name).SerializeToString()
    if type_.HasField("optional_type"):
        return numpy_helper.from_optional(value, info.name).SerializeToString()
    if isinstance(value, TensorProto):
        return value.SerializeToString()
    return numpy_helper.from_array(value, info.name).SerializeToString()


# --------------------------------------------------------------------------- selection


@dataclass
class NodeTest:
    """One generated node test: its folder, the op under test and the model."""

    name: str
    op_type: str
    folder: Path
    model: onnx.ModelProto

    def data_sets(self) -> list[Path]:
        return sorted(self.folder.glob("test_data_set_*"))


def discover(node_dir: Path) -> list[NodeTest]:
    """Every generated test; `*_expanded` tests belong to the op of the test they expand."""
    models = {d.name: onnx.load(str(d / "model.onnx")) for d in sorted(node_dir.iterdir())}
    tests = []
    for name, model in models.items():
        base = models.get(_EXPANDED.sub("", name), model)
        op_type = base.graph.node[0].op_type if len(base.graph.node) == 1 else ""
        tests.append(NodeTest(name, op_type, node_dir / name, model))
    return tests


def _default_opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def _io_elem_types(model: onnx.ModelProto) -> list[int] | None:
    """Element types of the graph inputs/outputs, or None if one is not a tensor."""
    types = []
    for info in [*model.graph.input, *model.graph.output]:
        if not info.type.HasField("tensor_type"):
            return None
        types.append(info.type.tensor_type.elem_type)
    return types


def is_float32_test(model: onnx.ModelProto) -> bool:
    """Every graph input/output is float32 or an integer/bool tensor, and one is float32.

    Tests with other floats (f16, f64, bf16, float8...), strings, sub-byte or wide unsigned
    integers (int4, uint32...) or non-tensor values are out of scope."""
    types = _io_elem_types(model)
    if types is None:
        return False
    return TensorProto.FLOAT in types and all(t == TensorProto.FLOAT or t in _INDEX_TYPES for t in types)


def out_of_scope(test: NodeTest, claimed: Iterable[str]) -> str | None:
    """Why `test` is not selected, or None if it is."""
    claimed = set(claimed)
    if test.op_type not in claimed:
        return "op not claimed"
    unclaimed = sorted(
        {n.op_type for n in test.model.graph.node if n.domain not in ("", "ai.onnx")}
        | {n.op_type for n in test.model.graph.node if n.op_type not in claimed}
    )
    if unclaimed:
        return f"uses unclaimed op(s) {', '.join(unclaimed)}"
    if _default_opset(test.model) < MIN_OPSET:
        return f"opset {_default_opset(test.model)} < {MIN_OPSET}"
    if not is_float32_test(test.model):
        return "not a float32 test"
    return None


def exclusions(tests: Sequence[NodeTest], claimed: Iterable[str], op: str | None = None) -> Counter[str]:
    """How many tests of claimed ops are out of scope, by kind of reason."""
    claimed = set(claimed)
    counts: Counter[str] = Counter()
    for test in tests:
        reason = out_of_scope(test, claimed) if op in (None, test.op_type) else None
        if reason and reason != "op not claimed":
            kind = {"opset": f"opset < {MIN_OPSET}", "uses": "use an unclaimed op"}.get(reason.split()[0])
            counts[kind or reason] += 1
    return counts


def select(tests: Sequence[NodeTest], claimed: Iterable[str], op: str | None = None) -> list[NodeTest]:
    claimed = set(claimed)
    return [t for t in tests if (op is None or t.op_type == op) and out_of_scope(t, claimed) is None]


# --------------------------------------------------------------------------- running


@dataclass
class Result:
    test: str
    op_type: str
    status: str  # "pass", "fail" or "unsupported"
    detail: str = ""


def _load_tensor(path: Path) -> np.ndarray:
    tensor = TensorProto()
    tensor.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(tensor)


def _load_data_set(folder: Path, model: onnx.ModelProto) -> tuple[dict, list[np.ndarray]]:
    inputs = {info.name: _load_tensor(folder / f"input_{j}.pb") for j, info in enumerate(model.graph.input)}
    outputs = [_load_tensor(folder / f"output_{j}.pb") for j in range(len(model.graph.output))]
    return inputs, outputs


def bind_static_inputs(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> onnx.ModelProto:
    """Turns graph inputs that feed an op's `static_inputs` (a Reshape's shape, a Slice's starts,
    reduction axes...) into initializers holding the test data, as an exporter emits them for a
    static-shape model; they leave `inputs`. Every other input stays a run-time input."""
    from aitc.frontend.onnx_ops import ONNX_OPS

    static = set()
    for node in model.graph.node:
        slots = ONNX_OPS[node.op_type].static_inputs if node.op_type in ONNX_OPS else ()
        static.update(node.input[i] for i in slots if i < len(node.input) and node.input[i] in inputs)
    if not static:
        return model
    bound = onnx.ModelProto()
    bound.CopyFrom(model)
    kept = [info for info in bound.graph.input if info.name not in static]
    del bound.graph.input[:]
    bound.graph.input.extend(kept)
    bound.graph.initializer.extend(numpy_helper.from_array(inputs.pop(name), name) for name in sorted(static))
    return bound


def compare(name: str, actual: np.ndarray, expected: np.ndarray) -> str | None:
    """None if `actual` matches `expected` within the onnx backend tolerances, else the mismatch."""
    actual = np.asarray(actual)
    if actual.dtype != expected.dtype:
        return f"output '{name}': dtype {actual.dtype}, expected {expected.dtype}"
    if actual.shape != expected.shape:
        return f"output '{name}': shape {list(actual.shape)}, expected {list(expected.shape)}"
    if expected.dtype.kind not in "fc":
        bad = int(np.count_nonzero(actual != expected))
        return f"output '{name}': {bad} of {expected.size} elements differ" if bad else None
    try:
        np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL)
    except AssertionError:
        with np.errstate(invalid="ignore"):
            error = np.nanmax(np.abs(actual.astype(np.float64) - expected), initial=0.0)
        return f"output '{name}': mismatch, max abs error {error:.3g}"
    return None


def _import(model: onnx.ModelProto, inputs: dict[str, np.ndarray]):
    """The imported module, or the Result of a test that does not import."""
    from aitc.frontend.onnx_import import import_onnx

    try:
        return import_onnx(model, {k: list(v.shape) for k, v in inputs.items()})
    except AitcError as error:
        message = str(error).splitlines()[0]
        if "unsupported: " in message:
            return Result("", "", "unsupported", message.split("unsupported: ", 1)[1])
        return Result("", "", "fail", f"import: {message}")
    except Exception as error:  # an importer crash fails this test, not the harness
        return Result("", "", "fail", f"import crashed: {type(error).__name__}: {error}")


def _check_data_set(test: NodeTest, folder: Path) -> Result | None:
    """None if the test passes on the data set in `folder`."""
    from aitc.interp.run import run_module

    inputs, expected = _load_data_set(folder, test.model)
    module = _import(bind_static_inputs(test.model, inputs), inputs)
    if isinstance(module, Result):
        return module
    try:
        actual = run_module(module, inputs)
    except Exception as error:  # a kernel crash fails this test, not the harness
        return Result("", "", "fail", f"run: {type(error).__name__}: {error}")
    for info, want in zip(test.model.graph.output, expected, strict=True):
        problem = compare(info.name, actual[info.name], want)
        if problem:
            return Result("", "", "fail", problem)
    return None


def run_test(test: NodeTest) -> Result:
    """Imports and runs one test on each of its data sets."""
    if not test.data_sets():
        return Result(test.name, test.op_type, "fail", "no test_data_set_* folder")
    for folder in test.data_sets():
        outcome = _check_data_set(test, folder)
        if outcome is not None:
            return Result(test.name, test.op_type, outcome.status, outcome.detail)
    return Result(test.name, test.op_type, "pass")


def run_tests(tests: Iterable[NodeTest]) -> list[Result]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [run_test(t) for t in tests]


def load_tests(cache: str | os.PathLike | None = None) -> list[NodeTest]:
    """Every generated node test (generating them first if needed)."""
    return discover(ensure_generated(cache_dir(cache)))


def run(op: str | None = None, cache: str | os.PathLike | None = None) -> list[Result]:
    """Generates (once), selects and runs the conformance tests, optionally of one op type."""
    from aitc.frontend.onnx_ops import ONNX_OPS

    return run_tests(select(load_tests(cache), ONNX_OPS, op))


# --------------------------------------------------------------------------- report


@dataclass
class OpRow:
    op_type: str
    results: list[Result] = field(default_factory=list)

    def names(self, status: str) -> list[str]:
        return [r.test for r in self.results if r.status == status]


def per_op(results: Sequence[Result], claimed: Iterable[str]) -> list[OpRow]:
    rows = {op: OpRow(op) for op in sorted(claimed)}
    for result in results:
        rows.setdefault(result.op_type, OpRow(result.op_type)).results.append(result)
    return list(rows.values())


def _by_reason(results: Iterable[Result]) -> str:
    reasons: dict[str, list[str]] = {}
    for r in results:
        reasons.setdefault(r.detail, []).append(r.test)
    return "; ".join(f"{', '.join(tests)} ({reason})" for reason, tests in reasons.items())


def format_table(rows: Sequence[OpRow]) -> str:
    header = (
        "op type",
        "selected",
        "passed",
        "failed",
        "unsupported",
        "failing tests",
        "unsupported variants",
    )
    lines = [" | ".join(header), " | ".join("-" * len(h) for h in header)]
    for row in rows:
        passed, failed = row.names("pass"), row.names("fail")
        unsupported = [r for r in row.results if r.status == "unsupported"]
        note = _by_reason(unsupported)
        if not row.results and row.op_type in NO_FLOAT32_NODE_TESTS:
            note = f"no float32 node test: {NO_FLOAT32_NODE_TESTS[row.op_type]}"
        cells = [row.op_type, len(row.results), len(passed), len(failed), len(unsupported), ", ".join(failed)]
        lines.append(" | ".join(str(c) for c in [*cells, note]).rstrip())
    return "\n".join(lines)


def format_report(
    results: Sequence[Result], claimed: Iterable[str], excluded: Counter[str], verbose: bool = False
) -> str:
    lines = []
    if verbose:
        lines += [f"{r.status.upper():11} {r.test}  {r.detail}".rstrip() for r in results]
        lines.append("")
    lines.append(format_table(per_op(results, claimed)))
    failed = [r for r in results if r.status == "fail"]
    if failed:
        lines += ["", "failures:"] + [f"  {r.test}: {r.detail}" for r in failed]
    counts = {s: sum(r.status == s for r in results) for s in ("pass", "fail", "unsupported")}
    skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(excluded.items()))
    lines += [
        "",
        f"{sum(excluded.values())} tests of claimed ops out of scope: {skipped or 'none'}",
        f"{len(results)} selected: {counts['unsupported']} unsupported variant(s), rejected by a precheck",
        f"{counts['pass']} passed, {counts['fail']} failed",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from aitc.frontend.onnx_ops import ONNX_OPS

    assert __doc__ is not None  # python -OO strips it (and this assert)
    parser = argparse.ArgumentParser(
        prog="python -m aitc.testing.conformance", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--cache", help=f"test cache folder (default ${CACHE_ENV} or {DEFAULT_CACHE})")
    parser.add_argument("--op", help="only the tests of this ONNX op type")
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per test")
    args = parser.parse_args(argv)
    try:
        tests = load_tests(args.cache)
    except AitcError as error:
        print(error.render("aitc.testing.conformance"), file=sys.stderr)
        return 2
    results = run_tests(select(tests, ONNX_OPS, args.op))
    claimed = [args.op] if args.op else list(ONNX_OPS)
    print(format_report(results, claimed, exclusions(tests, ONNX_OPS, args.op), args.verbose))
    return 1 if any(r.status == "fail" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
