"""`aitc compile` without --cores: every core of the target when the sharding cost model expects
them to beat one core by SPEEDUP_TO_SHARD, else one; a model the multi-core path cannot take
(host segments) compiles for one core; the report says which and why."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from aitc.compiler import SPEEDUP_TO_SHARD, CompileOptions, compile_module, estimate_cores, format_report
from aitc.dialects.hw import InstructionOp, ProgramOp
from aitc.reference import onnxruntime_outputs, relative_error
from aitc.sim import Simulator
from aitc.target import load_target
from aitc.testing import model_zoo
from aitc.tools.aitc_main import main

MODELS = Path(__file__).parents[3] / "examples" / "models"


def busy_cores(module) -> int:
    """Cores of the program that run at least one instruction."""
    (program,) = [op for op in module.walk() if isinstance(op, ProgramOp)]
    return sum(1 for core in program.cores() if any(isinstance(op, InstructionOp) for op in core.walk()))


def test_a_transformer_layer_takes_every_core_and_says_why():
    """Hidden 256 (x1.30 on the simulator, x1.16 estimated); at hidden 128 the gain (x1.17) is
    within the sharding model's error (x1.09 estimated) and the layer stays on one core."""
    model, inputs = model_zoo.transformer_encoder_layer(hidden=256, heads=4, seq=32, ffn=1024, batch=1)
    result = compile_module(
        model, CompileOptions(target="edge", cores=None, input_shapes={k: v.shape for k, v in inputs.items()})
    )
    assert busy_cores(result.module) == 4
    assert result.cores_note is not None
    assert result.cores_note.startswith("cores: 4 of 4, estimated")
    assert "cores: 4 of 4" in format_report(result)
    outputs = Simulator(result.module).run(inputs).outputs
    assert relative_error(outputs, onnxruntime_outputs(model, inputs)) <= 1e-4


def elementwise_model() -> onnx.ModelProto:
    """y = relu(x): nothing for a strategy to split, every core would redo it all."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_model_estimated_slower_on_every_core_stays_on_one():
    result = compile_module(elementwise_model(), CompileOptions(target="edge", cores=None))
    assert busy_cores(result.module) == 1
    assert result.cores_note is not None
    assert result.cores_note.startswith("cores: 1 of 4: sharding over 4 was estimated at")
    assert f"below x{SPEEDUP_TO_SHARD}" in result.cores_note


def test_the_choice_follows_the_estimates():
    """The rule itself: every core exactly when one core's estimate is at least SPEEDUP_TO_SHARD
    times the sharded one."""
    edge = load_target("edge")
    for path in ("tiny_transformer.onnx", "resnet_block.onnx", "tiny_cnn.onnx"):
        graph = compile_module(onnx.load(MODELS / path), CompileOptions(target="edge", emit="graph")).module
        one, many = estimate_cores(graph, edge, "auto")
        result = compile_module(onnx.load(MODELS / path), CompileOptions(target="edge", cores=None))
        assert busy_cores(result.module) == (4 if one >= SPEEDUP_TO_SHARD * many else 1), path


@pytest.mark.parametrize("cores", [None, 4])
def test_a_model_with_host_segments_is_sharded_segment_by_segment(capsys, tmp_path, cores: int | None):
    """The bundled BERT (host segments for its mask and pooling): by default one core, as the
    estimate says (its fused attention makes one core 26.4k cycles; four 27.8k, measured); with
    --cores 4 each NPU segment gets its own plan. `aitc run` of either binary matches
    onnxruntime."""
    out, outputs = tmp_path / "bert.aitb", tmp_path / "out.npz"
    forced = [] if cores is None else ["--cores", str(cores)]
    assert main(["compile", str(MODELS / "bert_torch_export.onnx"), *forced, "-o", str(out)]) == 0
    report = capsys.readouterr().out
    if cores is None:
        assert re.search(r"^cores: 1 of 4: sharding over 4 was estimated at \d+ cycles", report, re.M), report
    else:
        assert re.search(r"^segment @\w+: sharding plan: ", report, re.M), report
    inputs = MODELS / "bert_torch_export.inputs.npz"
    assert main(["run", str(out), "--inputs", str(inputs), "--outputs", str(outputs)]) == 0
    model = onnx.load(MODELS / "bert_torch_export.onnx")
    want = onnxruntime_outputs(model, dict(np.load(inputs)))
    with np.load(outputs) as got:
        for name, expected in want.items():
            scale = float(np.max(np.abs(expected)))
            assert float(np.max(np.abs(got[name] - expected))) <= 1e-4 * scale, name


@pytest.mark.parametrize("emit", ["graph", "tile", "sync"])
def test_only_a_compile_to_hw_shards_by_default(emit: str):
    model, inputs = model_zoo.transformer_encoder_layer(hidden=128, heads=4, seq=32, ffn=512, batch=1)
    options = CompileOptions(
        target="edge", cores=None, emit=emit, input_shapes={k: v.shape for k, v in inputs.items()}
    )
    result = compile_module(model, options)
    assert not any(op.name.startswith("shard.") for op in result.module.walk())
    assert result.cores_note is None


def test_explicit_cores_one_is_the_single_core_program():
    model, inputs = model_zoo.mlp()
    shapes = {k: v.shape for k, v in inputs.items()}
    one = compile_module(model, CompileOptions(target="edge", cores=1, input_shapes=shapes))
    assert busy_cores(one.module) == 1
    assert one.cores_note is None
