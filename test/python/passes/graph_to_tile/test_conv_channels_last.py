"""Channels-last convs: graph-channels-last (passes/graph/graph_channels_last.py) and their
lowering (passes/graph_to_tile/conv_channels_last.py). The tile program computes what the
graph computes for random shapes, pads, dilations and epilogues on tiny and edge; compiled
models match onnxruntime in every layout; the pass converts whole regions, leaves what the
lowering cannot take, and follows the cost model; the plan's estimate is the emitted kernel's.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import StringAttr
from xdsl.utils.exceptions import PassFailedException

from aitc.compiler import CompileOptions, compile_module
from aitc.dialects import graph, sync, tile
from aitc.frontend.onnx_import import import_onnx
from aitc.ir import make_context, parse_mlir
from aitc.passes.graph import graph_channels_last
from aitc.passes.graph.graph_channels_last import GraphChannelsLastPass, regions
from aitc.passes.graph_to_tile import conv_channels_last
from aitc.passes.graph_to_tile.costs import Budget
from aitc.passes.pipelines import graph_optimize_pipeline, run_pipeline
from aitc.reference import assert_close, onnxruntime_outputs
from aitc.sim import Simulator
from aitc.target import load_target
from aitc.testing import model_zoo

from .test_conv import (
    TARGETS,
    check_lowering,
    const_conv_module,
    int_attr,
    kernels,
    lower,
    pool_module,
    text_attr,
)

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def channels_last(module, target: str, layout: str = "nhwc"):
    GraphChannelsLastPass(layout=layout, target=target).apply(make_context(), module)
    module.verify()
    return module


def convs(module) -> list[graph.ConvOp]:
    return [op for op in module.walk() if isinstance(op, graph.ConvOp)]


def _random_conv(
    x: list[int], w: list[int], pad: int, dilation: int, bias: bool, activation: str | None, seed: int
):
    """A conv of input `x` (N, C, H, W) and `w` = (outs, kh, kw) with the given epilogue, or None
    when its dilated kernel does not fit the padded input."""
    outs, *kernel = w
    if any(dilation * (k - 1) + 1 > s + 2 * pad for k, s in zip(kernel, x[2:], strict=True)):
        return None
    module = const_conv_module(
        x, [outs, x[1], *kernel], pads=[pad] * 4, dilations=[dilation] * 2, bias=bias, seed=seed
    )
    if activation:
        convs(module)[0].attributes["activation"] = StringAttr(activation)
    return module


@SETTINGS
@given(
    batch=st.integers(1, 2),
    channels=st.integers(1, 40),
    outs=st.integers(1, 40),
    size=st.tuples(st.integers(1, 12), st.integers(1, 12)),
    kernel=st.sampled_from([1, 2, 3, 5]),
    pad=st.integers(0, 2),
    dilation=st.integers(1, 2),
    bias=st.booleans(),
    activation=st.sampled_from([None, "relu", "relu6", "gelu_tanh"]),
    target=st.sampled_from(TARGETS),
    seed=st.integers(0, 2**16),
)
def test_random_channels_last_convs_match_the_graph_level(
    batch, channels, outs, size, kernel, pad, dilation, bias, activation, target, seed
):
    module = _random_conv(
        [batch, channels, *size], [outs, kernel, kernel], pad, dilation, bias, activation, seed
    )
    if module is None:
        return
    channels_last(module, target)
    assert all(op.is_channels_last() for op in convs(module))
    lowered = check_lowering(module, target)
    reasons = [text_attr(k, "reason") for k in kernels(lowered)]
    assert any(r.startswith("channels-last per-tap GEMM") for r in reasons), reasons


@SETTINGS
@given(
    batch=st.integers(1, 2),
    channels=st.integers(1, 40),
    size=st.tuples(st.integers(1, 12), st.integers(1, 12)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    pad=st.integers(0, 1),
    dilation=st.integers(1, 2),
    ceil_mode=st.booleans(),
    target=st.sampled_from(TARGETS),
)
def test_random_channels_last_max_pools_match_the_graph_level(
    batch, channels, size, kernel, stride, pad, dilation, ceil_mode, target
):
    spans = [dilation * (k - 1) + 1 for k in kernel]
    if any(span > n + 2 * pad for span, n in zip(spans, size, strict=True)) or pad >= min(kernel):
        return
    module = pool_module(
        "max", [batch, channels, *size], list(kernel), ceil_mode=ceil_mode,
        strides=list(stride), pads=[pad] * 4, dilations=[dilation] * 2,
    )  # fmt: skip
    (pool,) = [op for op in module.walk() if isinstance(op, graph.MaxPoolOp)]
    block = pool.parent_block()
    assert block is not None
    graph_channels_last.convert(graph_channels_last.Region([pool]))
    module.verify()
    lowered = check_lowering(module, target)
    reasons = [text_attr(k, "reason") for k in kernels(lowered)]
    assert any(r.startswith("channels-last max pool") for r in reasons), reasons


@pytest.mark.parametrize("target", TARGETS)
def test_the_plan_estimate_is_the_emitted_kernel_estimate(target: str):
    module = channels_last(
        const_conv_module([1, 48, 14, 14], [72, 48, 3, 3], pads=[1, 1, 1, 1], bias=True), target
    )
    (conv,) = convs(module)
    plan = conv_channels_last.estimate(conv, Budget.of(load_target(target)))
    assert plan is not None
    (kernel,) = [k for k in kernels(check_lowering(module, target)) if "per-tap" in text_attr(k, "reason")]
    assert int_attr(kernel, "est_cycles") == plan.cycles


def test_strided_grouped_and_non_constant_convs_keep_their_layout():
    strided = const_conv_module([1, 8, 9, 9], [8, 8, 3, 3], pads=[1] * 4, strides=[2, 2])
    grouped = const_conv_module([1, 8, 7, 7], [8, 4, 3, 3], group=2, pads=[1] * 4)
    for module in (strided, grouped):
        channels_last(module, "edge")
        assert not any(op.is_channels_last() for op in convs(module))
    assert "stride" in (conv_channels_last.supported(convs(strided)[0]) or "")
    assert "group" in (conv_channels_last.supported(convs(grouped)[0]) or "")


def _bottlenecks(image: int = 28, width: int = 32):
    """Two ResNet-50 bottlenecks (the second strided, phase convs after graph-polyphase-conv)
    after graph-optimize, at graph level."""
    builder = model_zoo.GraphBuilder("bottlenecks", opset=17, seed=5)
    x = builder.input("x", [1, 4 * width, image, image])
    h = model_zoo._bottleneck(builder, x, "layer1.0", 4 * width, width, 1)
    h = model_zoo._bottleneck(builder, h, "layer2.0", 4 * width, width, 2)
    builder.output(h, "y", [1, 4 * width, image // 2, image // 2])
    inputs = {"x": builder.rng.standard_normal((1, 4 * width, image, image)).astype(np.float32)}
    return builder.model(), inputs


def test_a_max_pool_joins_the_region_of_the_convs_it_feeds():
    """Stem-like conv, max pool, bottleneck: one region; the pool is channels last too."""
    builder = model_zoo.GraphBuilder("stem", opset=17, seed=2)
    x = builder.input("x", [1, 16, 28, 28])
    h = model_zoo._conv(builder, x, "stem", 16, 64, 3)
    h = builder.node("MaxPool", [h], "/pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    h = model_zoo._bottleneck(builder, h, "layer1.0", 64, 16, 1)
    builder.output(h, "y", [1, 64, 14, 14])
    model = builder.model()
    inputs = {"x": builder.rng.standard_normal((1, 16, 28, 28)).astype(np.float32)}
    module = import_onnx(model)
    run_pipeline(module, graph_optimize_pipeline())
    channels_last(module, "edge")
    pools = [op for op in module.walk() if isinstance(op, graph.MaxPoolOp)]
    assert [p.is_channels_last() for p in pools] == [True]
    options = CompileOptions(target="edge", cores=1, input_shapes={"x": [1, 16, 28, 28]}, conv_layout="nhwc")
    outputs = (
        Simulator(compile_module(model, options).module, load_target("edge"), verified=True)
        .run(inputs)
        .outputs
    )
    assert_close(outputs, onnxruntime_outputs(model, inputs), 1e-4)


def test_a_region_of_convs_goes_channels_last_with_transposes_only_at_its_edges():
    model, _ = _bottlenecks()
    module = import_onnx(model)
    run_pipeline(module, graph_optimize_pipeline())
    from aitc.passes.graph.graph_polyphase_conv import GraphPolyphaseConvPass

    GraphPolyphaseConvPass().apply(make_context(), module)
    block = convs(module)[0].parent_block()
    assert block is not None
    (region,) = regions(list(block.ops))  # the residual adds join both blocks
    assert len(region.inputs()) == 1
    assert len(region.outputs()) == 1
    channels_last(module, "edge")
    assert all(op.is_channels_last() for op in convs(module))
    transposes = [op for op in module.walk() if isinstance(op, graph.TransposeOp)]
    assert [t.permutation() for t in transposes] == [(0, 2, 3, 1), (0, 3, 1, 2)]


def test_auto_follows_the_cost_model():
    """A lone conv between NCHW tensors goes channels last when its estimate there plus the two
    transposes (their kernels' estimates) beats its estimate channels first: a 64-channel 3x3
    conv at 56x56 does (simulated on edge: 250,874 cycles against 269,470), the same conv at
    28x28 does not (its transposes cost more than it gains: 79,507 against 68,601), nor does a
    512-channel 3x3 conv at 7x7, whose output channels stream well (353,200 against 300,852)."""
    budget = Budget.of(load_target("edge"))
    outcomes = []
    for module in (
        const_conv_module([1, 64, 56, 56], [64, 64, 3, 3], pads=[1] * 4),
        const_conv_module([1, 64, 28, 28], [64, 64, 3, 3], pads=[1] * 4),
        const_conv_module([1, 512, 7, 7], [512, 512, 3, 3], pads=[1] * 4),
    ):
        (conv,) = convs(module)
        block = conv.parent_block()
        assert block is not None
        (region,) = regions(list(block.ops))
        choice = graph_channels_last.choose(region, budget)
        assert choice is not None
        channels_last(module, "edge", "auto")
        assert convs(module)[0].is_channels_last() == choice.pays
        outcomes.append(choice.pays)
    assert outcomes == [True, False, False]


def test_a_transpose_that_cancels_costs_nothing():
    """A region edge whose value already comes out of channels last (or only goes into it)
    needs no transpose kernel: graph-canonicalize composes the two away."""
    budget = Budget.of(load_target("edge"))
    module = const_conv_module([1, 64, 28, 28], [64, 64, 3, 3], pads=[1] * 4)
    (conv,) = convs(module)
    assert graph_channels_last.transpose_cycles(conv.input, budget) > 0
    assert graph_channels_last.transpose_cycles(conv.output, budget, into_last=False) > 0
    back = graph.TransposeOp(conv.input, graph_channels_last.TO_FIRST)
    assert graph_channels_last.transpose_cycles(back.output, budget) == 0
    assert graph_channels_last.transpose_cycles(back.output, budget, into_last=False) > 0
    graph.TransposeOp(back.output, graph_channels_last.TO_LAST)  # its only use
    assert graph_channels_last.transpose_cycles(back.output, budget, into_last=False) == 0


def test_the_transpose_estimate_is_the_emitted_kernel_estimate():
    from aitc.passes.graph_to_tile.transpose import transpose_estimate

    budget = Budget.of(load_target("edge"))
    for shape, perm in (([1, 64, 28, 28], (0, 2, 3, 1)), ([1, 28, 28, 64], (0, 3, 1, 2))):
        builder = model_zoo.GraphBuilder("t", opset=17, seed=1)
        x = builder.input("x", shape)
        builder.output(builder.node("Transpose", [x], "/t", perm=list(perm)), "y", [shape[p] for p in perm])
        tiled = compile_module(builder.model(), CompileOptions(target="edge", cores=1, emit="tile")).module
        (kernel,) = kernels(tiled)
        assert int_attr(kernel, "est_cycles") == transpose_estimate(shape, perm, budget) > 0


def test_a_conv_cheaper_channels_first_even_with_transposes_stays_out_of_the_regions():
    """A 1024-channel 3x3 conv on 7x7 streams 1024 rows channels first and 61 channels last: it
    stays channels first (`kept_first`) and its region is cut there; a 64-channel one joins."""
    budget = Budget.of(load_target("edge"))
    big = const_conv_module([1, 1024, 7, 7], [1024, 1024, 3, 3], pads=[1] * 4)
    small = const_conv_module([1, 64, 28, 28], [64, 64, 3, 3], pads=[1] * 4)
    assert graph_channels_last.stays_first(convs(big)[0], budget)
    assert not graph_channels_last.stays_first(convs(small)[0], budget)
    block = convs(big)[0].parent_block()
    assert block is not None
    kept = graph_channels_last.kept_first(list(block.ops), budget)
    assert kept == {convs(big)[0]}
    assert regions(list(block.ops), kept) == []
    channels_last(big, "edge", "auto")
    assert not convs(big)[0].is_channels_last()


@pytest.mark.parametrize("layout", ["auto", "nchw", "nhwc"])
def test_bottlenecks_compiled_in_every_layout_match_onnxruntime(layout: str):
    model, inputs = _bottlenecks(image=14, width=16)
    options = CompileOptions(target="edge", cores=1, input_shapes={"x": [1, 64, 14, 14]}, conv_layout=layout)
    result = compile_module(model, options)
    outputs = Simulator(result.module, load_target("edge"), verified=True).run(inputs).outputs
    assert_close(outputs, onnxruntime_outputs(model, inputs), 1e-4)


def test_residual_blocks_compiled_channels_last_on_two_cores_match_onnxruntime():
    model, inputs = model_zoo.residual_block(batch=2, channels=8, image=12)
    shapes = {"x": [2, 8, 12, 12]}
    options = CompileOptions(target="tiny", cores=2, input_shapes=shapes, conv_layout="nhwc")
    result = compile_module(model, options)
    outputs = Simulator(result.module, load_target("tiny"), verified=True).run(inputs).outputs
    assert_close(outputs, onnxruntime_outputs(model, inputs), 1e-4)


def _forced_merge(monkeypatch: pytest.MonkeyPatch, merge: str) -> None:
    """Channels-last conv plans restricted to those merging taps as `merge` (`MERGES`)."""
    candidates = conv_channels_last._candidates
    monkeypatch.setattr(conv_channels_last, "_MEMO", {})
    monkeypatch.setattr(conv_channels_last, "_merges", lambda g, budget: (merge,))
    monkeypatch.setattr(
        conv_channels_last,
        "_candidates",
        lambda p, budget: [c for c in candidates(p, budget) if c.merge == merge],
    )


@SETTINGS
@given(
    merge=st.sampled_from(["row", "all"]),
    batch=st.integers(1, 2),
    channels=st.integers(1, 20),
    outs=st.integers(1, 40),
    size=st.tuples(st.integers(2, 12), st.integers(2, 12)),
    kernel=st.tuples(st.sampled_from([2, 3, 5]), st.sampled_from([1, 2, 3])),
    pad=st.integers(0, 2),
    dilation=st.integers(1, 2),
    bias=st.booleans(),
    activation=st.sampled_from([None, "relu", "gelu_tanh"]),
    target=st.sampled_from(TARGETS),
    seed=st.integers(0, 2**16),
)
def test_convs_with_merged_taps_match_the_graph_level(
    merge, batch, channels, outs, size, kernel, pad, dilation, bias, activation, target, seed
):
    """Every tap merge the cost model may pick computes the conv: odd channel counts, kernels
    wider or taller than one tap, dilations, pads, border blocks, epilogues."""
    kh, kw = kernel if merge == "all" else kernel[::-1]  # a row merge needs kw > 1
    module = _random_conv([batch, channels, *size], [outs, kh, kw], pad, dilation, bias, activation, seed)
    if module is None:
        return
    with pytest.MonkeyPatch.context() as monkeypatch:
        _forced_merge(monkeypatch, merge)
        channels_last(module, target)
        problem = conv_channels_last.problem_of(convs(module)[0], None)
        assume(conv_channels_last.ranked(problem, Budget.of(load_target(target))))  # the patch fits
        lowered = check_lowering(module, target)
    reasons = [text_attr(k, "reason") for k in kernels(lowered)]
    assert any("merged" in r for r in reasons), reasons


@pytest.mark.parametrize("merge", conv_channels_last.MERGES)
def test_merged_taps_compiled_to_hw_match_onnxruntime(monkeypatch: pytest.MonkeyPatch, merge: str):
    """A small CNN (3, 8 and 16 input channels) compiled channels last with each tap merge runs
    on the simulator and matches onnxruntime."""
    _forced_merge(monkeypatch, merge)
    model, inputs = model_zoo.cnn_bn_pool(batch=1, image=16)
    options = CompileOptions(
        target="edge", cores=1, input_shapes={"image": [1, 3, 16, 16]}, conv_layout="nhwc"
    )
    result = compile_module(model, options)
    gemms = [str(row["reason"]) for row in result.kernels if "per-tap GEMM" in str(row["reason"])]
    assert len(gemms) == 3
    assert all(("merged" in reason) == (merge != "tap") for reason in gemms), gemms
    outputs = Simulator(result.module, load_target("edge"), verified=True).run(inputs).outputs
    assert_close(outputs, onnxruntime_outputs(model, inputs), 1e-4)


def test_the_cost_model_merges_the_taps_of_a_conv_with_few_channels():
    """ResNet's stem after graph-polyphase-conv (12 channels, a 4 x 4 kernel, 112 x 112): a
    per-tap product fills 12 of 32 matrix rows, so a merged plan is cheaper and taken; the
    estimate is the emitted kernel's."""
    module = channels_last(const_conv_module([1, 12, 115, 115], [64, 12, 4, 4]), "edge")
    (conv,) = convs(module)
    budget = Budget.of(load_target("edge"))
    plans = conv_channels_last.ranked(conv_channels_last.problem_of(conv, None), budget)
    per_tap = min(p.cycles for p in plans if p.merge == "tap")
    assert plans[0].merge != "tap"
    assert plans[0].cycles < per_tap


@pytest.mark.parametrize(("merge", "rows", "queues"), [("row", 3, {"dma0"}), ("all", 1, {"dma0", "dma1"})])
def test_merged_patch_copies_stay_off_the_store_queue_unless_the_block_waits_for_them(
    monkeypatch: pytest.MonkeyPatch, merge: str, rows: int, queues: set[str]
):
    """convert-tile-to-sync binds the copies of the stage into the merged patch like loads: on
    dma1 they would wait behind the previous block's store, i.e. for its compute. A tap row
    (4 copies of 3 output rows, 5.5k cycles of loads and copies against 6.1k of matmuls a
    block) keeps them on dma0; the all-taps patch of one output row (16 copies, 4.1k against
    1.9k) needs both queues."""
    candidates = conv_channels_last._candidates
    monkeypatch.setattr(conv_channels_last, "_MEMO", {})
    monkeypatch.setattr(
        conv_channels_last,
        "_candidates",
        lambda p, budget: [
            c for c in candidates(p, budget) if (c.merge, c.rows, c.tn, c.keep) == (merge, rows, 32, True)
        ],
    )
    module = channels_last(const_conv_module([1, 12, 43, 115], [64, 12, 4, 4], bias=True), "edge")
    result = compile_module(module, CompileOptions(target="edge", cores=1, emit="sync"))
    copies = [
        op
        for op in result.module.walk()
        if isinstance(op, tile.CopyOp)
        and [tile.space_of(buffer) for buffer, _ in op.accesses()] == ["sram", "sram"]
        and tile.memref_of(op.accesses()[1][0]).get_shape()[1] == 16 * 12 // (4 if merge == "row" else 1)
    ]
    assert copies
    assert {sync.engine_of(op) for op in copies} == queues


def test_a_channels_last_row_that_does_not_fit_acc_is_reported_with_sizes():
    """One output row of 600 positions x 4 output channels needs 9.4 KiB of accumulator; tiny's
    ACC holds 2 KiB, all of which a single-buffered accumulator may take: the error says so."""
    module = channels_last(const_conv_module([1, 2, 1, 600], [4, 2, 1, 3], pads=[0, 1, 0, 1]), "tiny")
    with pytest.raises(
        PassFailedException,
        match=r"needs 9.4 KiB of ACC .* allows 2048 bytes \(all of its ACC, single-buffered\)",
    ):
        lower(module, "tiny")


def _pointwise_conv(channels: int, outs: int, size: int) -> str:
    x, y, w = (
        f"tensor<1x{size}x{size}x{channels}xf32>",
        f"tensor<1x{size}x{size}x{outs}xf32>",
        f"tensor<{outs}x{channels}x1x1xf32>",
    )
    return f"""func.func @main(%x: {x}, %b: tensor<{outs}xf32>) -> {y} {{
  %w = graph.constant dense<0.01> : {w}
  %y = graph.conv %x, %w, %b {{activation = "relu", channels_last}} : {x}, {w}, tensor<{outs}xf32> -> {y}
  func.return %y : {y}
}}"""


@pytest.mark.parametrize(("channels", "outs", "size"), [(512, 128, 28), (1024, 256, 14), (2048, 512, 7)])
def test_a_chunk_loop_that_waits_for_its_loads_is_estimated_as_it_runs(channels: int, outs: int, size: int):
    """ResNet-50's 1x1 reductions channels last stream their weights per chunk of channels: a
    trip's stage and weight tiles load more than its matmuls take, so convert-tile-to-sync
    spreads the chunk loop's loads over both queues, each unrolled copy's tiles side by side
    (`Cost.loads_of_own_loop`: the spread, the trips' pace, the wait behind the previous output
    tile's store and the peeled chunk's loads). Estimated on one queue they were 14-20% over the
    simulator (95,344 against 79,519 cycles at 1024 -> 256 on 14 x 14); now within 6%."""
    module = parse_mlir(_pointwise_conv(channels, outs, size))
    result = compile_module(module, CompileOptions(target="edge", cores=1))
    (kernel,) = result.kernels
    rng = np.random.default_rng(0)
    inputs = {
        "arg0": rng.standard_normal((1, size, size, channels)).astype(np.float32),
        "arg1": rng.standard_normal(outs).astype(np.float32),
    }
    cycles = Simulator(result.module).run(inputs).stats.cycles
    estimate = int(str(kernel["est_cycles"]))
    assert abs(estimate / cycles - 1) <= 0.06, (estimate, cycles)
