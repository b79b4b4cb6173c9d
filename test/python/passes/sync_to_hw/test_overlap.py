"""The estimated overlap of each kernel with its neighbours (`kernel_overlaps`), on compiled
programs: independent neighbours placed apart overlap by the fill / drain rule (and the next
one's loads delay the previous one's stores), a kernel whose fill loads the previous kernel's
result overlaps only by the rest of its fill, one whose bytes it shares not at all, and the hw
program records what the sync level computed (what `aitc perf` compares)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func

from aitc.compiler import CompileOptions, compile_module, kernel_report
from aitc.dialects import hw, tile
from aitc.passes.graph_to_tile.costs import FILL_DRAIN_ATTR
from aitc.passes.sync_to_hw import overlap
from aitc.passes.sync_to_hw.overlap import kernel_overlaps
from aitc.perf.profile import build_report
from aitc.sim import Simulator
from aitc.target import load_target
from aitc.testing import model_zoo

EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "models"


def two_projections_and_a_norm(rows: int, width: int) -> onnx.ModelProto:
    """y1 = x @ W1 and y2 = x @ W2 (independent of each other), z = LayerNorm(y2)."""
    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.standard_normal((width, width)).astype(np.float32), name)
        for name in ("w1", "w2")
    ] + [
        numpy_helper.from_array(np.ones(width, np.float32), "g"),
        numpy_helper.from_array(np.zeros(width, np.float32), "b"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["y1"], name="proj1"),
        helper.make_node("MatMul", ["x", "w2"], ["y2"], name="proj2"),
        helper.make_node("LayerNormalization", ["y2", "g", "b"], ["z"], name="norm", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "overlap",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, width])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, [rows, width]) for name in ("y1", "z")],
        weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def sync_kernels(model: onnx.ModelProto, target: str) -> tuple[func.FuncOp, dict[str, tile.KernelOp]]:
    result = compile_module(model, CompileOptions(target=target, emit="sync"))
    function = next(op for op in result.module.walk() if isinstance(op, func.FuncOp))
    kernels = {op.sym.data: op for op in function.walk() if isinstance(op, tile.KernelOp) and op.sym}
    return function, kernels


def share_bytes(a: tile.KernelOp, b: tile.KernelOp) -> bool:
    """Whether planned kernels `a` and `b` access some of the same SRAM or ACC bytes."""
    ranges = [overlap._Kernel.of(kernel).scratch for kernel in (a, b)]
    assert ranges[0] is not None
    assert ranges[1] is not None
    return overlap._share(ranges[0], ranges[1])


def fill_drain(kernel: tile.KernelOp) -> list[int]:
    return [int(v) for v in kernel.attributes[FILL_DRAIN_ATTR].get_values()]  # type: ignore[union-attr]


def test_an_independent_kernel_placed_apart_overlaps_the_previous_drain():
    """proj2 reads nothing proj1 writes and, both fitting edge's SRAM side by side, shares no
    bytes with it: its loads on dma0 run during proj1's drain; they then hold the DRAM channel
    when proj1's stores ask for it, so proj1 ends later (its delay) and proj2 adds that much
    less after it (`overlap._ahead`): it overlaps no more than that drain and delay, and what
    is left of it is at least its products and stores (its pace with every load done)."""
    function, kernels = sync_kernels(two_projections_and_a_norm(16, 64), "edge")
    assert list(kernels) == ["proj1", "proj2", "norm"]
    assert not share_bytes(kernels["proj1"], kernels["proj2"])
    found = kernel_overlaps(function, load_target("edge"))
    *_, unloaded = fill_drain(kernels["proj2"])
    _, drain, _, _ = fill_drain(kernels["proj1"])
    estimate = int(str(kernels["proj2"].attributes["est_cycles"]).split(":")[0])
    delay = found[kernels["proj1"]].delay
    assert found[kernels["proj1"]].overlap == 0  # the first kernel
    assert delay > 0
    assert 0 < found[kernels["proj2"]].overlap <= drain + delay
    assert estimate - found[kernels["proj2"]].overlap >= unloaded


@pytest.mark.parametrize(
    ("model", "node"),
    [
        ("tiny_transformer", "/layer.0/attention/value/Add"),
        ("resnet_block", "/layer2.0/downsample/1/BatchNormalization"),
    ],
)
def test_a_kernel_whose_loads_wait_behind_the_previous_stores_is_estimated_as_it_runs(model: str, node: str):
    """tiny_transformer's value projection after the key projection: its weight loads (dma0)
    run in the key's drain, then its lhs loads on dma1 behind the key's stores and its products
    and stores follow (simulated 651 cycles after the key ends; the fill-and-drain overlap
    estimated 768); resnet_block's 1x1 stride-2 downsample: its weights and bias on dma1 wait
    behind the previous conv's stores (simulated 598; 500 estimated before). `aitc perf`'s
    estimate of each is within 10% of its simulated time alone."""
    onnx_model = onnx.load(EXAMPLES / f"{model}.onnx")
    rng = np.random.default_rng(0)
    inputs = {
        i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
        for i in onnx_model.graph.input
    }
    shapes = {name: list(value.shape) for name, value in inputs.items()}
    target = load_target("edge")
    result = compile_module(onnx_model, CompileOptions(target="edge", cores=1, input_shapes=shapes))
    run = Simulator(result.module, target).run(inputs, trace=True)
    assert run.trace is not None
    report = build_report(
        model, target, run.trace, run.stats.cycles, run.stats.utilisation(), result.kernels, onnx_model
    )
    (row,) = [row for row in report.rows if row.node == node]
    assert row.est is not None
    assert abs(row.est - row.cycles) <= 0.10 * row.cycles, (row.est, row.cycles)


def test_only_the_fill_that_loads_nothing_of_the_previous_result_overlaps():
    """The layer norm's fill loads its scale and bias (which may run during proj2's drain) and
    proj2's output rows (which wait for proj2's stores): less than its whole fill overlaps."""
    function, kernels = sync_kernels(two_projections_and_a_norm(16, 64), "edge")
    fill = fill_drain(kernels["norm"])[0]
    _, drain, stores, _ = fill_drain(kernels["proj2"])
    found = kernel_overlaps(function, load_target("edge"))
    assert 0 < found[kernels["norm"]].overlap - found[kernels["proj2"]].delay < min(fill, drain - stores)


def test_loads_run_ahead_of_a_read_of_the_previous_results_delay_its_stores():
    """tiny_cnn's last conv reads the average pool's output after its fill (a padding fill
    ends it), so none of it overlaps the pool; but its first weight loads, issued as the pool
    drains, hold the DRAM channel when the pool's stores ask for it: the pool ends later."""
    model, _ = model_zoo.cnn_bn_pool(batch=1)
    result = compile_module(
        model, CompileOptions(target="edge", emit="sync", input_shapes={"image": [1, 3, 16, 16]})
    )
    function = next(op for op in result.module.walk() if isinstance(op, func.FuncOp))
    kernels = {op.sym.data: op for op in function.walk() if isinstance(op, tile.KernelOp) and op.sym}
    found = kernel_overlaps(function, load_target("edge"))
    assert found[kernels["/relu3/Relu"]].overlap == 0
    assert found[kernels["/pool2/AveragePool"]].delay > 0


def test_kernels_that_share_bytes_do_not_overlap():
    """On tiny (16 KiB of SRAM) the two projections do not fit side by side: plan-memory gives
    them the same bytes, so proj2's loads wait for proj1 to finish with them."""
    function, kernels = sync_kernels(two_projections_and_a_norm(32, 64), "tiny")
    assert share_bytes(kernels["proj1"], kernels["proj2"])
    assert kernel_overlaps(function, load_target("tiny"))[kernels["proj2"]].overlap == 0


def test_the_program_and_the_kernel_report_record_the_overlaps():
    """The hw program keeps each kernel's overlap (a .aitb's `aitc perf` reads it), as the
    sync-level report has it."""
    model = two_projections_and_a_norm(16, 64)
    _, kernels = sync_kernels(model, "edge")
    rows = {
        row["kernel"]: row
        for row in kernel_report(compile_module(model, CompileOptions(target="edge", emit="sync")).module)
    }
    program = next(
        op
        for op in compile_module(model, CompileOptions(target="edge")).module.walk()
        if isinstance(op, hw.ProgramOp)
    )
    recorded = {estimate.kernel: (estimate.overlap, estimate.delay) for estimate in program.kernel_estimates}
    assert recorded == {name: (rows[name]["overlap"], rows[name]["delay"]) for name in kernels}
    assert recorded["proj2"][0] > 0
