"""Heterogeneous placement end to end: ops the NPU cannot run go to host segments; the split
model runs at every level, on the simulator and from a .aitb bundle, and matches onnxruntime."""

from __future__ import annotations

import hashlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from aitc.binary import BinaryError, assemble, disassemble
from aitc.compiler import CompileOptions, compile_module, format_report
from aitc.diagnostics import AitcError
from aitc.dialects.exec import CallOp, is_schedule
from aitc.dialects.hw import ProgramOp, TensorOp
from aitc.frontend.onnx_import import import_onnx
from aitc.interp.run import run_module
from aitc.ir import print_mlir
from aitc.reference import assert_close
from aitc.reference import onnxruntime_outputs as reference
from aitc.sim import Simulator
from aitc.target import load_target
from aitc.testing.model_zoo import mlp_with_host_ops as mixed_model
from aitc.tools.aitc_main import main


def host_only_model():
    """Every node runs on the host: the schedule holds no NPU segment."""
    node = helper.make_node("Cos", ["x"], ["y"], name="cos")
    graph = helper.make_graph(
        [node],
        "host_only",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 5])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, {"x": np.linspace(-2, 2, 15, dtype=np.float32).reshape(3, 5)}


def placements(module) -> list[tuple[str, str]]:
    schedule = next(op for op in module.ops if is_schedule(op))
    return [(c.placement.data, c.callee_name) for c in schedule.walk() if isinstance(c, CallOp)]


@pytest.mark.parametrize("target", ["tiny", "edge"])
@pytest.mark.parametrize("depth", [1, 2])
def test_split_model_matches_onnxruntime_on_the_simulator(target: str, depth: int):
    model, inputs = mixed_model()
    result = compile_module(model, CompileOptions(target=target, depth=depth))
    assert placements(result.module) == [
        ("host", "main_host0"),
        ("npu", "main_npu1"),
        ("host", "main_host2"),
        ("npu", "main_npu3"),
        ("host", "main_host4"),
    ]
    run = Simulator(result.module, target).run(inputs, trace=True)
    assert_close(run.outputs, reference(model, inputs), 1e-4)
    assert [s.placement for s in run.stats.segments] == ["host", "npu", "host", "npu", "host"]
    assert run.stats.cycles == sum(s.cycles for s in run.stats.segments) > 0
    assert run.trace is not None
    names = {e["name"] for e in run.trace["traceEvents"]}
    assert {"host main_host0", "host main_host2", "host main_host4"} <= names


def test_every_level_of_a_split_model_computes_the_same():
    model, inputs = mixed_model()
    graph = import_onnx(model)
    expected = run_module(graph, inputs)
    assert_close(expected, reference(model, inputs), tolerance=1e-5)
    for level in ("graph", "tile", "sync"):
        lowered = compile_module(graph, CompileOptions(target="tiny", emit=level)).module
        assert_close(run_module(lowered, inputs), expected, tolerance=1e-5)
    hw = compile_module(graph, CompileOptions(target="tiny")).module
    assert_close(run_module(hw, inputs), expected, tolerance=1e-5)  # hw segments on the simulator
    assert_close(Simulator(hw, "tiny").run(inputs).outputs, expected, tolerance=1e-5)


def _tensors(program: ProgramOp) -> list[tuple[str, str]]:
    """(name, kind) of each hw.tensor of `program`."""
    found = []
    for op in program.body.block.ops:
        if isinstance(op, TensorOp):
            assert op.sym is not None
            assert op.kind is not None
            found.append((op.sym.data, op.kind.data))
    return found


def test_hand_over_tensors_are_program_io_descriptors():
    model, _ = mixed_model()
    module = compile_module(model, CompileOptions(target="tiny")).module
    programs = {op.sym_name.data: op for op in module.ops if isinstance(op, ProgramOp) and op.sym_name}
    io = {name: _tensors(p) for name, p in programs.items()}
    assert io == {
        "main_npu1": [("x", "input"), ("fc1", "output")],
        "main_npu3": [("sin", "input"), ("cast_mask", "input"), ("logits", "output")],
    }


def test_report_lists_every_node_with_its_placement():
    model, _ = mixed_model()
    result = compile_module(model, CompileOptions(target="tiny"))
    on = {row["kernel"]: row.get("on") for row in result.kernels}
    assert on == {
        "cast_mask": "host",
        "fc1": "npu",
        "sin": "host",
        "apply_mask": "npu",
        "fc2": "npu",
        "argmax": "host",
    }
    text = format_report(result)
    assert "3 kernel(s) on the NPU in 2 segment(s), 3 node(s) on the host in 3 segment(s)" in text
    assert [(r["segment"], r["on"], r["in"], r["out"]) for r in result.segments] == [
        ("main_host0", "host", "1 (1024 B)", "1 (512 B)"),  # int64 mask in, f32 mask out
        ("main_npu1", "npu", "1 (256 B)", "1 (512 B)"),
        ("main_host2", "host", "1 (512 B)", "1 (512 B)"),
        ("main_npu3", "npu", "2 (1024 B)", "1 (128 B)"),
        ("main_host4", "host", "1 (128 B)", "1 (32 B)"),
    ]
    assert "sin (graph.sin): no tile lowering for graph.sin" in text


def test_all_on_the_npu_is_not_split():
    model, _ = mixed_model()
    kept = [n for n in model.graph.node if n.name in ("fc1", "fc2")]
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
            helper.make_node("MatMul", ["h", "w2"], ["logits"], name="fc2"),
        ],
        "npu_only",
        [model.graph.input[0]],
        [model.graph.output[0]],
        list(model.graph.initializer),
    )
    assert len(kept) == 2
    npu_only = helper.make_model(graph, opset_imports=model.opset_import)
    result = compile_module(npu_only, CompileOptions("tiny"))
    assert not any(is_schedule(op) for op in result.module.ops)
    assert "placement: every node on the NPU" in format_report(result)


def test_model_entirely_on_the_host_runs():
    model, inputs = host_only_model()
    module = compile_module(model, CompileOptions(target="edge")).module
    assert placements(module) == [("host", "main_host0")]
    assert not any(isinstance(op, ProgramOp) for op in module.ops)
    back = disassemble(assemble(module, load_target("edge")), load_target("edge"))
    run = Simulator(back, "edge").run(inputs)
    assert_close(run.outputs, reference(model, inputs), tolerance=1e-6)
    assert run.stats.cycles == 0


def test_zero_element_tensors_pass_through_the_host(tmp_path, capsys):
    """A slice to zero rows and a relu of it have no kernel to run: they go to the host, the
    zero-element output needs no copy, and the rest still runs on the NPU (once a division by
    zero in the copy planner)."""
    nodes = [
        helper.make_node("Slice", ["x", "zero", "zero"], ["empty"], name="slice"),
        helper.make_node("Relu", ["empty"], ["e"], name="relu"),
        helper.make_node("Relu", ["x"], ["y"], name="relu_x"),
    ]
    graph = helper.make_graph(
        nodes,
        "zero_elements",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [
            helper.make_tensor_value_info("e", TensorProto.FLOAT, [0, 8]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8]),
        ],
        [helper.make_tensor("zero", TensorProto.INT64, [1], [0])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    inputs = {"x": np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)}
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", **inputs)  # pyright: ignore[reportArgumentType]  -- numpy's stub: a **dict of arrays could bind savez's allow_pickle: bool
    assert (
        main(["compile", str(tmp_path / "m.onnx"), "--target", "tiny", "-o", str(tmp_path / "m.aitb")]) == 0
    )
    argv = ["run", str(tmp_path / "m.aitb"), "--inputs", str(tmp_path / "in.npz")]
    assert main([*argv, "--outputs", str(tmp_path / "out.npz")]) == 0, capsys.readouterr().err
    outputs = dict(np.load(tmp_path / "out.npz"))
    assert_close(outputs, reference(model, inputs), tolerance=0)
    assert outputs["e"].shape == (0, 8)


def test_bundle_round_trips_byte_identically_and_compiles_deterministically():
    model, inputs = mixed_model()
    target = load_target("edge")
    first = assemble(compile_module(model, CompileOptions(target="edge")).module, target)
    second = assemble(compile_module(model, CompileOptions(target="edge")).module, target)
    assert first == second
    module = disassemble(first, target)
    assert assemble(module, target) == first
    assert print_mlir(module) == print_mlir(compile_module(model, CompileOptions(target="edge")).module)
    assert_close(Simulator(module).run(inputs).outputs, reference(model, inputs), 1e-4)


def _rechecksum(data: bytes) -> bytes:
    body = data[:-32]
    return body + hashlib.blake2b(body, digest_size=32).digest()


def test_damaged_bundles_are_refused_in_one_line():
    model, _ = mixed_model()
    target = load_target("tiny")
    data = assemble(compile_module(model, CompileOptions(target="tiny")).module, target)
    for position in range(0, len(data), max(1, len(data) // 97)):
        damaged = bytearray(data)
        damaged[position] ^= 0x40
        with pytest.raises(BinaryError) as error:
            disassemble(bytes(damaged), target)
        assert "\n" not in str(error.value)
    for cut in (10, len(data) // 2, len(data) - 1):
        with pytest.raises(BinaryError, match="truncated"):
            disassemble(data[:cut], target)
    # a damaged NPU segment inside an intact envelope: the nested checksum catches it
    nested_at = data.rindex(b"AITB")
    damaged = bytearray(data)
    damaged[nested_at + 60] ^= 0x01
    with pytest.raises(BinaryError, match=r"NPU segment 1: corrupted binary: checksum mismatch"):
        disassemble(_rechecksum(bytes(damaged)), target)


def test_no_host_fallback_lists_every_host_node(tmp_path, capsys):
    model, _ = mixed_model()
    path = tmp_path / "mixed.onnx"
    onnx.save(model, path)
    output = tmp_path / "mixed.aitb"
    code = main(["compile", str(path), "--target", "tiny", "-o", str(output), "--no-host-fallback"])
    err = capsys.readouterr().err
    assert code == 1
    assert "3 op(s) cannot run on the NPU and host fallback is off (--no-host-fallback)" in err
    for node in ("'sin' (graph.sin)", "'cast_mask' (graph.cast)", "'argmax' (graph.argmax)"):
        assert node in err
    assert "Traceback" not in err
    assert not output.exists()
    assert list(tmp_path.iterdir()) == [path]
    with pytest.raises(AitcError, match="host fallback is off"):
        compile_module(model, CompileOptions(target="tiny", host_fallback=False))


def test_cli_compiles_and_runs_a_bundle(tmp_path, capsys):
    model, inputs = mixed_model()
    path, binary, npz, out = (tmp_path / n for n in ("m.onnx", "m.aitb", "in.npz", "out.npz"))
    onnx.save(model, path)
    np.savez(npz, **inputs)
    assert main(["compile", str(path), "--target", "edge", "-o", str(binary)]) == 0
    report = capsys.readouterr().out
    assert "on the host in 3 segment(s)" in report
    assert main(["run", str(binary), "--inputs", str(npz), "--outputs", str(out), "--stats"]) == 0
    stats = capsys.readouterr().out
    assert "main_host2" in stats
    assert "main_npu3" in stats
    with np.load(out) as saved:
        assert_close(dict(saved), reference(model, inputs), 1e-4)


BOOL_CROSSING = """
func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = graph.greater %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  %e = graph.exp %x : tensor<4x8xf32>
  %s = graph.sin %e : tensor<4x8xf32>
  %r = graph.where %c, %s, %y : tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}
"""


@pytest.mark.parametrize("target", ["tiny", "edge"])
def test_a_boolean_shared_across_segments_stays_on_the_host(target: str):
    from aitc.ir import parse_mlir

    module = parse_mlir(BOOL_CROSSING)
    rng = np.random.default_rng(3)
    inputs = {name: rng.standard_normal((4, 8)).astype(np.float32) for name in ("arg0", "arg1")}
    expected = run_module(module, inputs)
    compiled = compile_module(module, CompileOptions(target=target)).module
    assert placements(compiled) == [("host", "main_host0"), ("npu", "main_npu1"), ("host", "main_host2")]
    assert_close(Simulator(compiled, target).run(inputs).outputs, expected)


def test_emitted_hw_text_of_a_split_model_assembles(tmp_path, capsys):
    model, inputs = mixed_model()
    path, text, binary = tmp_path / "m.onnx", tmp_path / "m.mlir", tmp_path / "m.aitb"
    onnx.save(model, path)
    assert main(["compile", str(path), "--target", "tiny", "--emit", "hw", "-o", str(text)]) == 0
    assert main(["asm", str(text), "-o", str(binary)]) == 0  # the target comes from the programs
    assert "for target 'tiny'" in capsys.readouterr().out
    assert print_mlir(disassemble(binary.read_bytes())) == text.read_text()
    assert_close(
        Simulator(disassemble(binary.read_bytes())).run(inputs).outputs, reference(model, inputs), 1e-4
    )
