"""A BERT encoder as torch.onnx.export writes it (`model_zoo.bert_torch_export`): int64 token ids
and attention mask, the integer/bool mask arithmetic (Cast, Equal/Not, And, Expand, Where), and
a pooled token picked with GatherND. It imports, and runs at graph level, before and after
`graph-optimize`, as onnxruntime runs it (max abs error <= 1e-5 * max(1, max|reference|)).
Compiled, its integer/bool arithmetic and GatherND run on the host (place-on-host) and the rest
on the NPU; the simulated program matches onnxruntime at both buffer depths.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping

import numpy as np
import onnx
import pytest
from xdsl.dialects.builtin import ModuleOp

from aitc.diagnostics import AitcError
from aitc.frontend.onnx_import import import_onnx
from aitc.interp.run import run_module
from aitc.ir import parse_mlir, print_mlir
from aitc.passes.pipelines import graph_optimize_pipeline, run_pipeline
from aitc.reference import assert_close, onnxruntime_outputs
from aitc.testing import model_zoo

VARIANTS = {
    "static": {},
    "dynamic_batch_no_token_types": {"dynamic_batch": True, "token_type_ids": False, "batch": 3, "seq": 12},
}
"""Test id -> keyword arguments of `bert_torch_export` (the default: 2 layers, hidden 64, 4 heads,
seq 16, vocab 100, batch 2, static shapes)."""

MASK_OPS = {"Cast", "Equal", "Not", "And", "Expand", "Where", "ReduceSum", "Sub", "Concat", "GatherND"}
"""ONNX op types of the mask and pooling arithmetic on integer/bool tensors."""


@functools.cache
def built(variant: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    return model_zoo.bert_torch_export(**VARIANTS[variant])


@functools.cache
def imported(variant: str, optimize: bool) -> ModuleOp:
    model, inputs = built(variant)
    module = import_onnx(model, {name: list(value.shape) for name, value in inputs.items()})
    if optimize:
        run_pipeline(module, graph_optimize_pipeline())
    return module


def unpadded(inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The example with an all-ones mask and real tokens (no pad id 0) everywhere."""
    result = dict(inputs)
    result["attention_mask"] = np.ones_like(inputs["attention_mask"])
    result["input_ids"] = np.where(inputs["input_ids"] == 0, 7, inputs["input_ids"])
    return result


def op_counts(module: ModuleOp) -> Counter:
    return Counter(op.name for op in module.walk() if op.name.startswith("graph."))


# --------------------------------------------------------------------------- the model


def test_builder_is_deterministic_and_passes_the_full_checker():
    model, inputs = model_zoo.bert_torch_export()
    again, inputs_again = model_zoo.bert_torch_export()
    assert model.SerializeToString() == again.SerializeToString()
    assert all(np.array_equal(inputs[k], inputs_again[k]) for k in inputs)
    onnx.checker.check_model(model, full_check=True)
    assert model_zoo.ZOO["bert_torch_export"] is model_zoo.bert_torch_export


def test_model_has_torch_exports_int64_inputs_and_integer_ops():
    model, inputs = built("static")
    int64 = onnx.TensorProto.INT64
    assert [(i.name, i.type.tensor_type.elem_type) for i in model.graph.input] == [
        ("input_ids", int64),
        ("attention_mask", int64),
        ("token_type_ids", int64),
    ]
    assert all(v.dtype == np.int64 for v in inputs.values())
    ops = Counter(n.op_type for n in model.graph.node)
    assert MASK_OPS | {"Gather", "Slice", "Range", "ConstantOfShape", "LayerNormalization"} <= set(ops)
    assert ops["GatherND"] == 1
    casts = {n.name: n.attribute[0].i for n in model.graph.node if n.op_type == "Cast"}
    bool_, float_ = onnx.TensorProto.BOOL, onnx.TensorProto.FLOAT
    assert casts == {"/mask/Cast": bool_, "/mask/Cast_1": float_, "/mask/Cast_2": bool_}
    slices = [n for n in model.graph.node if n.op_type == "Slice"]
    assert [n.input[0] for n in slices] == ["embeddings.position_ids"]


def test_example_mask_pads_later_rows_with_the_pad_id():
    _, inputs = built("static")
    mask, ids = inputs["attention_mask"], inputs["input_ids"]
    assert mask[0].all()
    assert not mask[-1].all()
    assert np.array_equal(ids == 0, mask == 0)


# --------------------------------------------------------------------------- import


@pytest.mark.parametrize("variant", VARIANTS)
def test_runtime_mask_arithmetic_stays_and_shape_arithmetic_folds(variant: str):
    counts = op_counts(imported(variant, optimize=False))
    for op in ("cast", "equal", "not", "and", "broadcast", "where", "reduce_sum", "concat", "gather_nd"):
        assert counts[f"graph.{op}"] >= 1, op
    assert counts["graph.gather_nd"] == counts["graph.broadcast"] == 1
    # Word and token-type lookups run; the position lookup (a constant slice) is folded, and
    # without a token_type_ids input the token types are a folded constant too.
    assert counts["graph.gather"] == (2 if VARIANTS[variant].get("token_type_ids", True) else 1)
    assert counts["graph.cast"] == 3
    assert counts["graph.where"] == 1


def test_gather_nd_picks_batch_and_position_rows():
    (op,) = [op for op in imported("static", optimize=False).walk() if op.name == "graph.gather_nd"]
    assert str(op.operands[0].type) == "tensor<2x16x64xf32>"
    assert str(op.operands[1].type) == "tensor<2x2xi64>"
    assert str(op.results[0].type) == "tensor<2x64xf32>"


def test_printed_module_parses_back_and_computes_the_same():
    _, inputs = built("static")
    module = imported("static", optimize=True)
    again = parse_mlir(print_mlir(module), "bert.mlir")
    assert "graph.gather_nd" in print_mlir(again)
    assert_close(run_module(again, inputs), run_module(module, inputs))


# --------------------------------------------------------------------------- numerics


@pytest.mark.parametrize("optimize", [False, True], ids=["imported", "optimized"])
@pytest.mark.parametrize("mask", ["padded", "all_ones"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_graph_level_matches_onnxruntime(variant: str, mask: str, optimize: bool):
    model, inputs = built(variant)
    if mask == "all_ones":
        inputs = unpadded(inputs)
    assert_close(run_module(imported(variant, optimize), inputs), onnxruntime_outputs(model, inputs))


def test_optimization_keeps_the_mask_arithmetic():
    before, after = op_counts(imported("static", False)), op_counts(imported("static", True))
    assert sum(after.values()) < sum(before.values())
    for op in ("cast", "equal", "not", "and", "broadcast", "where", "reduce_sum", "gather_nd"):
        assert after[f"graph.{op}"] == before[f"graph.{op}"], op


def test_padding_is_invisible_to_the_pooled_token():
    """Other token ids where the mask is 0 change nothing but the padded rows' hidden states."""
    _, inputs = built("static")
    module = imported("static", optimize=True)
    changed = dict(inputs)
    changed["input_ids"] = np.where(inputs["attention_mask"] == 0, 42, inputs["input_ids"])
    base, other = run_module(module, inputs), run_module(module, changed)
    np.testing.assert_allclose(other["pooler_output"], base["pooler_output"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(other["logits"], base["logits"], rtol=0, atol=1e-6)
    real = inputs["attention_mask"] == 1
    np.testing.assert_allclose(
        other["last_hidden_state"][real], base["last_hidden_state"][real], rtol=0, atol=1e-6
    )


def test_pooled_token_is_the_last_unpadded_one():
    """pooler_output == tanh(W h + b) of last_hidden_state[row, length - 1]."""
    model, inputs = built("static")
    outputs = run_module(imported("static", optimize=False), inputs)
    weights = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    last = inputs["attention_mask"].sum(axis=1) - 1
    token = outputs["last_hidden_state"][np.arange(len(last)), last]
    dense = token @ weights["pooler.dense.weight"].T + weights["pooler.dense.bias"]
    np.testing.assert_allclose(outputs["pooler_output"], np.tanh(dense), rtol=0, atol=1e-5)


def test_mask_summing_past_the_sequence_is_a_clear_error():
    """A mask of 2s makes `sum - 1` index past the sequence: the user is told where, not a bug."""
    _, inputs = built("static")
    bad = dict(inputs, attention_mask=np.full_like(inputs["attention_mask"], 2))
    with pytest.raises(AitcError, match=r"gather_nd index 31 at indices\[0, 1\] is out of range \[-16, 15\]"):
        run_module(imported("static", optimize=False), bad)


COMPILED = {
    "tiny": {"layers": 1, "hidden": 32, "heads": 2, "ffn": 64, "seq": 8},
    "edge": {},
}
"""Target -> `bert_torch_export` arguments: tiny's 4x4 matrix engine gets a smaller model."""


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("target", sorted(COMPILED))
def test_compiled_with_host_fallback_matches_onnxruntime(target: str, depth: int):
    from aitc.compiler import CompileOptions, compile_module
    from aitc.dialects.exec import CallOp
    from aitc.sim import Simulator

    model, inputs = model_zoo.bert_torch_export(**COMPILED[target])
    result = compile_module(model, CompileOptions(target=target, depth=depth))
    calls = [op.placement.data for op in result.module.walk() if isinstance(op, CallOp)]
    assert calls == ["host", "npu", "host", "npu"]  # mask + pooling indices, encoder, GatherND, head
    hosted = {str(row["kernel"]) for row in result.kernels if row.get("on") == "host"}
    assert {"/mask/Equal", "/mask/And", "/pool/ReduceSum", "/pool/GatherND"} <= hosted
    assert not any(name.startswith("/encoder/") for name in hosted)
    simulator = Simulator(result.module, target)
    for example in (inputs, unpadded(inputs)):
        assert_close(simulator.run(example).outputs, onnxruntime_outputs(model, example), 1e-4)
