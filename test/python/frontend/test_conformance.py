"""ONNX backend node-test conformance (see `aitc/testing/conformance.py`): every selected float32 node test
of every claimed op imports, runs on the numpy reference and matches onnx's expected outputs.

The tests are generated once per onnx version into the cache folder ($AITC_ONNX_TEST_CACHE or
`.cache/onnx-node-tests`), offline, from the case definitions of the installed onnx package.
"""

from __future__ import annotations

import functools
from collections import Counter

import numpy as np
import onnx
import pytest

from aitc.frontend.onnx_ops import ONNX_OPS
from aitc.testing import conformance


@functools.cache
def _selected() -> tuple[conformance.NodeTest, ...]:
    return tuple(conformance.select(conformance.load_tests(), ONNX_OPS))


@functools.cache
def _all_tests() -> dict[str, conformance.NodeTest]:
    return {t.name: t for t in conformance.load_tests()}


def _tests_of(op_type: str) -> list[conformance.NodeTest]:
    return [t for t in _selected() if t.op_type == op_type]


@pytest.mark.parametrize("op_type", sorted(ONNX_OPS))
def test_claimed_op_passes_its_node_tests(op_type: str):
    results = conformance.run_tests(_tests_of(op_type))
    failures = [f"{r.test}: {r.detail}" for r in results if r.status == "fail"]
    assert not failures, "\n".join(failures)
    unsupported = {r.test for r in results if r.status == "unsupported"}
    documented = {t.name for t in _tests_of(op_type)} & set(conformance.UNSUPPORTED_VARIANTS)
    assert unsupported == documented, "rejected by a precheck != conformance.UNSUPPORTED_VARIANTS"


def test_every_claimed_op_has_a_selected_test_or_a_documented_reason():
    covered = {t.op_type for t in _selected()}
    missing = sorted(set(ONNX_OPS) - covered - set(conformance.NO_FLOAT32_NODE_TESTS))
    assert not missing, f"claimed ops without any selected float32 node test: {missing}"
    stale = sorted(set(conformance.NO_FLOAT32_NODE_TESTS) & covered)
    assert not stale, f"NO_FLOAT32_NODE_TESTS lists ops that do have selected tests: {stale}"
    unclaimed = sorted(set(conformance.NO_FLOAT32_NODE_TESTS) - set(ONNX_OPS))
    assert not unclaimed, f"NO_FLOAT32_NODE_TESTS lists unclaimed ops: {unclaimed}"


def test_unsupported_variants_are_few_and_selected():
    selected = {t.name for t in _selected()}
    assert set(conformance.UNSUPPORTED_VARIANTS) <= selected
    assert len(conformance.UNSUPPORTED_VARIANTS) <= 0.05 * len(selected)


def test_at_least_60_op_types_are_claimed():
    assert len(ONNX_OPS) >= 60


def test_selection_rules():
    by_name = {t.name: t for t in conformance.load_tests()}
    claimed = set(ONNX_OPS)
    assert conformance.out_of_scope(by_name["test_relu"], claimed) is None
    assert conformance.out_of_scope(by_name["test_add_uint8"], claimed) == "not a float32 test"
    assert conformance.out_of_scope(by_name["test_max_float64"], claimed) == "not a float32 test"
    assert (conformance.out_of_scope(by_name["test_and2d"], claimed) or "").startswith("opset 7")
    assert conformance.out_of_scope(by_name["test_softmax_axis_0_expanded"], claimed) is None
    assert by_name["test_softmax_axis_0_expanded"].op_type == "Softmax"


def test_a_wrong_kernel_is_reported_as_a_mismatch(monkeypatch):
    from aitc.dialects import graph
    from aitc.interp import graph as kernels

    relu = kernels.KERNELS[graph.ReluOp]

    def wrong(op, x):
        result = relu(op, x)
        assert isinstance(result, np.ndarray)  # one result
        return result + 0.01

    monkeypatch.setitem(kernels.KERNELS, graph.ReluOp, wrong)
    (result,) = conformance.run_tests(t for t in _tests_of("Relu") if t.name == "test_relu")
    assert result.status == "fail"
    assert "max abs error 0.01" in result.detail


def test_report_lists_every_claimed_op_and_the_totals():
    results = [
        conformance.Result("test_a", "Relu", "pass"),
        conformance.Result("test_b", "Relu", "fail", "mismatch"),
        conformance.Result("test_c", "MaxPool", "unsupported", "Indices"),
    ]
    report = conformance.format_report(results, ["Relu", "MaxPool", "Add"], Counter())
    assert "Relu | 2 | 1 | 1 | 0 | test_b" in report
    assert "MaxPool | 1 | 0 | 0 | 1 |  | test_c (Indices)" in report
    assert "Add | 0 | 0 | 0 | 0" in report
    assert report.splitlines()[-1] == "1 passed, 1 failed"


MASK_ARITHMETIC_TESTS = (
    "test_gathernd_example_int32",
    "test_gathernd_example_int32_batch_dim1",
    "test_equal",
    "test_equal_bcast",
    "test_equal_int8",
    "test_equal_int16",
    "test_equal_uint8",
    "test_where_long_example",
    "test_constantofshape_int_zeros",
    "test_constantofshape_int_shape_zero",
    "test_range_int32_type_negative_delta",
    "test_and2d",
    "test_and_bcast4v3d",
    "test_not_2d",
    "test_not_4d",
)
"""Integer/bool-only node tests of the ops in a BERT export's mask and index arithmetic: outside
the float32 selection, but those ops run on int64/bool tensors there. And (opset 7) and Not
(opset 1) have not changed since, so their tests run re-declared at opset 13."""


def _at_opset_13(test: conformance.NodeTest) -> conformance.NodeTest:
    model = onnx.ModelProto()
    model.CopyFrom(test.model)
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            entry.version = max(entry.version, conformance.MIN_OPSET)
    return conformance.NodeTest(test.name, test.op_type, test.folder, model)


@pytest.mark.parametrize("name", MASK_ARITHMETIC_TESTS)
def test_integer_and_bool_node_tests_of_mask_ops_pass(name: str):
    test = _all_tests()[name]
    assert not conformance.is_float32_test(test.model), "now selected: drop it from this list"
    (result,) = conformance.run_tests([_at_opset_13(test)])
    assert result.status == "pass", result.detail
