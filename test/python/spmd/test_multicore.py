"""Multi-core compilation end to end (`aitc.compile(..., cores=N, shard=S)`): graph-optimize,
shard-propagate/partition/simplify, then `aitc.spmd` (specialize, cut into phases, lower every
phase, link with peer-DMA collectives) into one hw.program, simulated.

- Sharded vs onnxruntime: the zoo models (bert_torch_export with its host segments: every NPU
  segment sharded on its own) on tiny with 2 cores and edge with 2 and 4, every output within
  1e-4 of max |reference|. The full model x (target, cores) x strategy matrix takes well
  over the ~120 s budget on a 2-core machine (the 2-layer encoder on tiny alone takes
  20-40 s a strategy), so:
    * `auto` runs on every model and every (target, cores);
    * `tp`, `sp` and `dp` run on a representative subset: the MLP on all three (target,
      cores), the CNN on tiny (convs under a small SRAM), the residual block on edge x 4, the
      depthwise-separable block on tiny (depthwise convs under a small SRAM), the transformer
      layer on edge x 4 and the encoder on edge x 2 (embedding gather, two layers).
  Nothing is skipped: a model or strategy the compiler cannot do is a failing case; dp on 4
  cores of a batch of 2 splits nothing and is refused (REFUSED checks the error).
- Levels agree: the per-core graph (`emit="graph"`, every core run in lockstep by
  `run_module`) and the simulated hw program of the transformer layer on edge x 4.
- Determinism: two compiles of the same model for 4 cores give byte-identical .aitb files.
- The compile report shows the sharding plan (strategy, cores, per-op decisions) and each
  core's static instruction count.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import numpy as np
import onnx
import pytest
from xdsl.dialects.builtin import NameLoc

import aitc
from aitc.api import Compiled
from aitc.diagnostics import AitcError
from aitc.dialects.hw import InstructionOp, ProgramOp
from aitc.interp.run import run_module
from aitc.passes.shard.planner import LAYERWISE_MARGIN
from aitc.reference import onnxruntime_outputs
from aitc.spmd import grid_size
from aitc.target import load_target
from aitc.testing import model_zoo

TOLERANCE = 1e-4
"""max |simulated - onnxruntime| / max |onnxruntime|, per output (sharded reductions reassociate)."""

LEVELS_TOLERANCE = 1e-5
"""max |hw - per-core graph| / max |per-core graph|."""

MODELS: dict[str, Callable[[], tuple[onnx.ModelProto, dict[str, np.ndarray]]]] = {
    "mlp": model_zoo.mlp,
    "cnn_bn_pool": model_zoo.cnn_bn_pool,
    "residual_block": model_zoo.residual_block,
    "depthwise_separable": model_zoo.depthwise_separable,
    "transformer_encoder_layer": model_zoo.transformer_encoder_layer,
    "encoder": functools.partial(
        model_zoo.encoder, layers=2, hidden=128, heads=4, ffn=256, seq=32, vocab=500, batch=2
    ),
    "bert_torch_export": model_zoo.bert_torch_export,
}

MACHINES = [("tiny", 2), ("edge", 2), ("edge", 4)]
"""(target, cores) every model is compiled for."""

EXPLICIT = {
    "mlp": MACHINES,
    "cnn_bn_pool": [("tiny", 2)],
    "residual_block": [("edge", 4)],
    "depthwise_separable": [("tiny", 2)],
    "transformer_encoder_layer": [("edge", 4)],
    "encoder": [("edge", 2)],
}
"""Where tp, sp and dp are each run as well (see the module docstring)."""

REFUSED = {("residual_block", "edge", 4, "dp"), ("transformer_encoder_layer", "edge", 4, "dp")}
"""Cases whose strategy splits nothing (a batch of 2 on 4 cores): the compile is refused."""

CASES = [
    *[(model, target, cores, "auto") for model in MODELS for target, cores in MACHINES],
    *[
        (model, target, cores, strategy)
        for model, machines in EXPLICIT.items()
        for target, cores in machines
        for strategy in ("tp", "sp", "dp")
    ],
]


@functools.cache
def example(name: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(model, example inputs, onnxruntime's outputs)."""
    model, inputs = MODELS[name]()
    return model, inputs, onnxruntime_outputs(model, inputs)


def shapes(inputs: dict[str, np.ndarray]) -> dict[str, tuple[int, ...]]:
    return {name: value.shape for name, value in inputs.items()}


@functools.cache
def compiled(name: str, target: str, cores: int, strategy: str) -> Compiled:
    """The hw program of zoo model `name` (its dynamic dims pinned to the example's)."""
    model, inputs, _ = example(name)
    return aitc.compile(model, target, cores=cores, shard=strategy, input_shapes=shapes(inputs))


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| / max |want| in f64 (the plain difference when `want` is all zeros)."""
    diff = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    scale = float(np.max(np.abs(want.astype(np.float64))))
    return diff / scale if scale > 0 else diff


def assert_outputs_close(got: dict[str, np.ndarray], want: dict[str, np.ndarray], tolerance: float) -> None:
    assert sorted(got) == sorted(want), f"outputs {sorted(got)}, expected {sorted(want)}"
    for name, expected in want.items():
        actual = got[name]
        assert actual.shape == expected.shape, f"{name}: shape {actual.shape}, expected {expected.shape}"
        assert actual.dtype == expected.dtype, f"{name}: dtype {actual.dtype}, expected {expected.dtype}"
        error = relative_error(actual, expected)
        assert error <= tolerance, f"{name}: relative error {error:.3g} > {tolerance:.3g}"


def programs(compiled_model: Compiled) -> list[ProgramOp]:
    """Its hw.programs: one, or one per NPU segment of a model with host segments."""
    found = [op for op in compiled_model.module.walk() if isinstance(op, ProgramOp)]
    assert found
    return found


def program(compiled_model: Compiled) -> ProgramOp:
    (found,) = programs(compiled_model)
    return found


def test_phases_leave_the_fence_semaphores_alone():
    """At a fence an engine that finished its phase signals F while another may still wait
    inside it: the phases are synchronised with the top 2 semaphores (F, G) kept free, so no
    unit of the fence can pass a phase's wait (a race the simulator caught when a phase needed
    all 16 of tiny's semaphores)."""
    from aitc.dialects.hw import SemSignalOp, SemWaitOp
    from aitc.spmd.link import FENCE_SEMAPHORES

    result = compiled("cnn_bn_pool", "tiny", 2, "sp")
    limit = load_target("tiny").semaphores - FENCE_SEMAPHORES
    phase_sems = [
        op.get_int("sem")
        for op in program(result).walk()
        if isinstance(op, SemSignalOp | SemWaitOp)
        and isinstance(op.location, NameLoc)
        and not str(op.location.name).startswith("collective")
    ]
    assert phase_sems
    assert max(phase_sems) < limit


def test_a_phase_short_of_semaphores_is_lowered_again_without_multi_buffering(monkeypatch):
    """cnn_bn_pool split over tiny's 2 cores with per-tap convs (offered on tiny here) and
    accumulators within half of ACC (a single one takes fewer semaphores): a phase's
    double-buffered conv needs more than the 14 semaphores a phase may use; the phase is
    lowered again at buffer depth 1, the report says which, and the program still matches
    onnxruntime. The conv plans this needs are the ones chosen with a chunk loop's loads
    estimated on one queue (`Cost.loads_of_own_loop` left out) and each streamed per-tap weight
    tile loaded in one part (`window_costs.tap_parts`): with the loop's loads over both queues,
    or a tile's two parts side by side, the model takes plans that fit a phase's semaphores at
    depth 2."""
    from contextlib import nullcontext

    from aitc.passes.graph_to_tile import conv, window_costs
    from aitc.passes.graph_to_tile.costs import Budget, Cost
    from aitc.spmd import SEMAPHORES_RAN_OUT, run_pipeline_reporting

    monkeypatch.setattr(conv, "PER_TAP_SEMAPHORES", 0)
    monkeypatch.setattr(Budget, "holds_acc", lambda budget, nbytes: nbytes <= budget.acc)
    monkeypatch.setattr(Cost, "loads_of_own_loop", lambda cost, *args: nullcontext())
    monkeypatch.setattr(window_costs, "_PLANS", {})
    one_part = lambda g, plan, queues: [(0, g.taps)]  # noqa: E731
    monkeypatch.setattr(window_costs, "tap_parts", one_part)
    monkeypatch.setattr(conv, "tap_parts", one_part)
    failures: list[str] = []

    def recording(module, passes, verify):
        try:
            return run_pipeline_reporting(module, passes, verify)
        except AitcError as error:
            failures.append(str(error))
            raise

    monkeypatch.setattr(aitc.spmd, "run_pipeline_reporting", recording)
    model, inputs, want = example("cnn_bn_pool")
    result = aitc.compile(model, "tiny", cores=2, shard="sp", input_shapes=shapes(inputs))
    assert any(SEMAPHORES_RAN_OUT in failure for failure in failures)
    assert_outputs_close(result.run(inputs), want, tolerance=1e-5)
    report = result.report()
    assert "phases lowered at buffer depth 1:\n  core 0, step " in report
    assert "its kernels needed more semaphores at depth 2 than the 14 a phase may use" in report


def test_a_value_gathered_twice_goes_through_dram_both_times():
    """A ResNet stage's input split over 4 cores feeds two convs (the block's first conv and its
    downsample), each after its own all_gather of it: layer4's input, 1x1024x14x14 gathered
    from channel parts, is larger than edge's SRAM, so both gathers go through the shared
    DRAM, the second reading the first's buffer (it used to be sent through SRAM and failed:
    "not even one row ... fits"). Matches onnxruntime."""
    model, inputs = model_zoo.resnet50(image=224, blocks=(1, 1, 1, 1), classes=10)
    result = aitc.compile(model, "edge", cores=4, input_shapes=shapes(inputs))
    got = result.run(inputs)
    assert_outputs_close(got, onnxruntime_outputs(model, inputs), tolerance=1e-4)


def test_stem_max_pool_split_by_rows_pads_with_minus_infinity():
    """ResNet's stem without its relu (a 7x7/2 conv, then a 3x3/2 max pool padded by 1), so
    negative values reach the pool: sp splits both by rows, the pool reading one row of
    halo from its neighbour, -inf past the ends (the outer cores' padding; a zero there
    would beat a row of negatives). The simulated binary matches onnxruntime."""
    b = model_zoo.GraphBuilder("stem", opset=17, seed=3)
    x = b.input("x", [1, 3, 64, 64])
    w = b.weight("conv.weight", [16, 3, 7, 7], fan_in=3 * 49)
    h = b.node("Conv", [x, w], "/conv/Conv", kernel_shape=[7, 7], strides=[2, 2], pads=[3, 3, 3, 3])
    h = b.node("MaxPool", [h], "/maxpool/MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    b.output(h, "y", [1, 16, 16, 16])
    model, inputs = b.model(), {"x": b.rng.standard_normal((1, 3, 64, 64)).astype(np.float32)}
    result = aitc.compile(model, "edge", cores=4, shard="sp", input_shapes=shapes(inputs))
    pool_row = next(line for line in result.report().splitlines() if line.startswith("/maxpool/MaxPool"))
    assert "split output rows (halo 1+0)" in pool_row
    assert_outputs_close(result.run(inputs), onnxruntime_outputs(model, inputs), tolerance=TOLERANCE)


# --------------------------------------------------------------------------- vs onnxruntime


@pytest.mark.parametrize(
    ("name", "target", "cores", "strategy"), CASES, ids=[f"{m}-{t}{c}-{s}" for m, t, c, s in CASES]
)
def test_sharded_model_matches_onnxruntime(name: str, target: str, cores: int, strategy: str):
    _, inputs, want = example(name)
    if (name, target, cores, strategy) in REFUSED:
        with pytest.raises(
            AitcError, match=f"--shard dp on {cores} cores splits nothing: .* of 2, which does not"
        ):
            compiled(name, target, cores, strategy)
        return
    result = compiled(name, target, cores, strategy)
    assert result.level == "hw"
    assert all(len(p.cores()) == cores for p in programs(result))
    assert_outputs_close(result.simulate(inputs).outputs, want, TOLERANCE)


# --------------------------------------------------------------------------- levels agree


@pytest.mark.parametrize(("strategy", "cores"), [("auto", 4), ("tp", 4), ("sp", 4), ("dp", 2)])
def test_per_core_graph_and_hw_simulation_agree(strategy: str, cores: int):
    """The transformer layer on edge (dp on 2 cores: its batch is 2): `emit="graph"` is the
    per-core (SPMD) graph, which `run_module` runs on all cores in lockstep (and checks they
    agree); the hw program is the same computation lowered per core and linked."""
    model, inputs, _ = example("transformer_encoder_layer")
    graph = aitc.compile(
        model, "edge", emit="graph", cores=cores, shard=strategy, input_shapes=shapes(inputs)
    )
    assert graph.level == "graph"
    assert grid_size(graph.module) == cores
    per_core_graph = run_module(graph.module, inputs)
    simulated = compiled("transformer_encoder_layer", "edge", cores, strategy).simulate(inputs).outputs
    assert_outputs_close(simulated, per_core_graph, LEVELS_TOLERANCE)


@pytest.mark.parametrize(
    ("target", "cores", "strategy"), [("edge", 4, "sp"), ("tiny", 2, "sp"), ("edge", 4, "layerwise")]
)
def test_spatial_split_cnn_matches_onnxruntime_and_its_per_core_graph(target: str, cores: int, strategy: str):
    """A batch-1 residual block (3x3 convs, a strided 3x3 and a strided 1x1 downsample): sp
    splits every conv's output rows, each core reading its input rows plus the halo (the
    outer cores' zero padding folded into their convs); the simulated binary matches
    onnxruntime and the per-core graph run in lockstep."""
    model, inputs = model_zoo.residual_block(batch=1, channels=8, image=16)
    want = onnxruntime_outputs(model, inputs)
    graph = aitc.compile(
        model, target, emit="graph", cores=cores, shard=strategy, input_shapes=shapes(inputs)
    )
    per_core_graph = run_module(graph.module, inputs)
    result = aitc.compile(model, target, cores=cores, shard=strategy, input_shapes=shapes(inputs))
    if strategy == "sp":
        assert "split output rows (halo 1+1)" in result.report()
    simulated = result.simulate(inputs).outputs
    assert_outputs_close(simulated, want, TOLERANCE)
    assert_outputs_close(simulated, per_core_graph, LEVELS_TOLERANCE)


# --------------------------------------------------------------------------- determinism


def test_compiling_twice_gives_identical_binaries(tmp_path):
    """The transformer layer on edge x 4 (auto: every strategy is costed, several collectives)."""
    model, inputs, _ = example("transformer_encoder_layer")
    paths = [tmp_path / "first.aitb", tmp_path / "second.aitb"]
    for path in paths:
        aitc.compile(model, "edge", cores=4, shard="auto", input_shapes=shapes(inputs)).save(path)
    first, second = (path.read_bytes() for path in paths)
    assert first, "an empty binary"
    assert first == second


# --------------------------------------------------------------------------- the report


def instruction_counts(compiled_model: Compiled) -> dict[int, int]:
    return {
        core.core_id(): sum(1 for op in core.walk() if isinstance(op, InstructionOp))
        for core in program(compiled_model).cores()
    }


def test_report_shows_the_plan_and_instructions_per_core():
    """The MLP on tiny x 2, tp: strategy and cores, one row per split op with its decision
    (and the collective it needs), each core's static instruction count as in the program."""
    result = compiled("mlp", "tiny", 2, "tp")
    report = result.report()
    assert re.search(r"^sharding plan: tp on 2 cores, estimated \d+ cycles", report, re.M), report
    header = re.search(r"^node\s+op\s+decision\s+est_cycles\s+collectives$", report, re.M)
    assert header, report
    rows = report[header.end() :].splitlines()[2:]  # after the dashes
    decisions = {row.split()[0]: row for row in rows if row.startswith("/")}
    assert "tp: split n (output columns)" in decisions["/relu1/Relu"]
    assert "tp: split k (contraction, all_reduce)" in decisions["/fc3/Gemm"]
    assert "all_reduce" in decisions["/fc3/Gemm"].split("all_reduce)", 1)[1]  # the collective column
    counts = instruction_counts(result)
    assert sorted(counts) == [0, 1]
    for core, count in counts.items():
        assert count > 0
        assert f"core {core}: {count} instructions" in report, report


def test_auto_report_keeps_the_cheapest_strategy():
    """With auto the report lists every strategy's estimate and the plan is the least uniform
    one, or layerwise when it is LAYERWISE_MARGIN below that."""
    result = compiled("transformer_encoder_layer", "edge", 4, "auto")
    report = result.report()
    chosen = re.search(r"^sharding plan: (\S+) on 4 cores, estimated (\d+) cycles", report, re.M)
    assert chosen, report
    line = re.search(r"estimated cycles per strategy \(auto keeps the least[^)]*\): (.*)$", report, re.M)
    assert line, report
    estimates = {name: int(cycles) for name, cycles in re.findall(r"(\S+) (\d+)(?:,|$)", line.group(1))}
    assert set(estimates) == {"tp", "sp", "dp", "tp-sp", "layerwise"}, estimates
    uniform = min((s for s in estimates if s != "layerwise"), key=lambda s: estimates[s])
    mixed = estimates["layerwise"] < (1 - LAYERWISE_MARGIN) * estimates[uniform]
    assert chosen.group(1) == ("layerwise" if mixed else uniform)
    assert int(chosen.group(2)) == estimates[chosen.group(1)]
    assert len(instruction_counts(result)) == 4
    for core, count in instruction_counts(result).items():
        assert f"core {core}: {count} instructions" in report


def test_a_reduce_scatter_whose_row_does_not_fit_in_sram_sums_in_shared_dram():
    """tp splits ResNet's 1x1 convs over their input channels, so each core holds a partial sum
    of the whole output, reduce-scattered over output channels: layer3's downsample gives
    1 x 1024 x 14 x 14 (one row of 802,816 bytes: more than edge's SRAM), layer4's last conv
    1 x 2048 x 7 x 7 (which of them tp reduce-scatters follows the conv estimates). Such a
    reduce_scatter runs as an all_reduce cut into column ranges, each
    core writing its reduced chunks into one shared sum and reading its part there after a
    barrier (it used to fail: "not even one row ... fits"). Matches onnxruntime."""
    model, inputs = model_zoo.resnet50(image=224, blocks=(1, 1, 1, 1), classes=10)
    result = aitc.compile(model, "edge", cores=4, shard="tp", input_shapes=shapes(inputs))
    labels = {str(op.location) for op in result.module.walk() if "reduce_scatter_dram#" in str(op.location)}
    sizes = [int(size) for label in labels for size in re.findall(r" (\d+)B ", label)]
    assert any(size > load_target("edge").sram_bytes for size in sizes), labels
    assert_outputs_close(result.run(inputs), onnxruntime_outputs(model, inputs), tolerance=1e-4)
