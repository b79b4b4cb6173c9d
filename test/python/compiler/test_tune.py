"""`aitc compile --tune`: the short lists are the cost model's best, a forced choice is the plan
it names, tuned programs stay correct, the cache makes a second compile measure nothing and give
the same bytes, and bad caches, stale choices, wrong candidates and the time bound are handled."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import aitc.tune as tune_module
from aitc.binary import save_program
from aitc.compiler import CompileOptions, compile_module
from aitc.diagnostics import AitcError
from aitc.dialects.tile import KernelOp
from aitc.passes.graph_to_tile.costs import Budget, cheapest_few
from aitc.passes.graph_to_tile.matmul_costs import (
    estimate_matmul,
    matmul_options,
    matmul_plan_of,
    plan_matmul,
    ranked_matmul,
)
from aitc.passes.graph_to_tile.matmul_tiling import MatmulProblem
from aitc.passes.graph_to_tile.tuning import TuningSession, kernel_key, kernel_signature, tuning_session
from aitc.passes.graph_to_tile.tuning_cache import TuningCache
from aitc.passes.graph_to_tile.window import Geometry, WindowDim
from aitc.passes.graph_to_tile.window_costs import (
    WINDOW_DEPTH,
    WindowProblem,
    plan_window,
    ranked_window,
    window_candidates,
    window_plan_of,
)
from aitc.reference import assert_close, onnxruntime_outputs
from aitc.sim import Simulator
from aitc.target import load_target
from aitc.tools.aitc_main import main as aitc
from aitc.tune import TuneOptions, compile_tuned

# --------------------------------------------------------------------------- short lists


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 50), min_size=1, max_size=12),
    st.lists(st.integers(0, 30), min_size=12, max_size=12),
    st.integers(1, 5),
)
def test_cheapest_few_is_the_sorted_prefix_of_every_estimate(floors, extra, count):
    """Branch and bound with the count-th best as the bound keeps what sorting every
    candidate's (cycles, index) would."""

    class Plan:
        def __init__(self, cycles: int):
            self.cycles = cycles

        def key(self) -> tuple[int, ...]:
            return (self.cycles,)

    cycles = [floor + extra[i] for i, floor in enumerate(floors)]

    def estimate(index: int, bound: int | None):
        return None if bound is not None and cycles[index] > bound else Plan(cycles[index])

    got = [plan.cycles for plan in cheapest_few(floors, estimate, count)]
    assert got == sorted(cycles)[:count]


@pytest.mark.parametrize(
    ("target", "m", "k", "n"), [("tiny", 32, 48, 20), ("edge", 128, 384, 384), ("edge", 1, 2048, 1000)]
)
def test_ranked_matmul_is_the_best_estimates_in_order_and_plan_of_finds_each(target, m, k, n):
    problem, budget = MatmulProblem(1, m, k, n), Budget.of(load_target(target))
    ranked = ranked_matmul(problem, budget, 6)
    options = list(matmul_options(problem, budget))
    every = sorted(
        ((*estimate_matmul(problem, budget, *o).key(), i), estimate_matmul(problem, budget, *o))
        for i, o in enumerate(options)
    )
    assert [plan.choice for plan in ranked] == [plan.choice for _, plan in every[:6]]
    assert ranked[0] == plan_matmul(problem, budget)
    for plan in ranked:
        assert matmul_plan_of(problem, budget, plan.choice) == plan
    assert matmul_plan_of(problem, budget, (3, 5, 7, "m", 7, "acc", "none")) is None


def _conv_problem(channels: int, outs: int, size: int, stride: int) -> WindowProblem:
    out = (size + 2 - 3) // stride + 1
    dim = WindowDim(size=size, out=out, kernel=3, stride=stride, pad=1, pad_end=1)
    geometry = Geometry(1, channels, 1, outs, dim, dim)
    return WindowProblem(geometry, "matrix", True, False, ("add", "relu"), tap_major=True)


@pytest.mark.parametrize(("channels", "outs", "size", "stride"), [(8, 8, 6, 1), (4, 8, 7, 2)])
def test_ranked_window_is_the_best_estimates_in_order_and_plan_of_finds_each(channels, outs, size, stride):
    problem, budget = _conv_problem(channels, outs, size, stride), Budget.of(load_target("edge"))
    ranked = ranked_window(problem, budget, 5)
    fitting = replace(budget, depth=WINDOW_DEPTH)
    estimated = [window_plan_of(problem, budget, plan.choice) for plan in window_candidates(problem, fitting)]
    every = sorted((*plan.key(), i) for i, plan in enumerate(estimated) if plan is not None)
    assert [plan.key() for plan in ranked] == [entry[:-1] for entry in every[:5]]
    assert ranked[0] == plan_window(problem, budget)
    for plan in ranked:
        assert window_plan_of(problem, budget, plan.choice) == plan
    assert window_plan_of(problem, budget, ("matrix", 999, 1, 1, 1, False, False)) is None


# --------------------------------------------------------------------------- tuned compiles


def _model() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """conv 3x3 (16 -> 32 channels, 14x14) + relu, global average pool, a 32 -> 100 Gemm."""
    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array((rng.standard_normal((32, 16, 3, 3)) * 0.1).astype(np.float32), "W"),
        numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "B"),
        numpy_helper.from_array((rng.standard_normal((32, 100)) * 0.1).astype(np.float32), "F"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "F"], ["y"], name="fc"),
    ]
    graph = helper.make_graph(
        nodes,
        "tuned",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 14, 14])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 100])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, {"x": rng.standard_normal((1, 16, 14, 14)).astype(np.float32)}


def _tuned(tmp_path: Path, **options) -> tuple:
    model, inputs = _model()
    tune = TuneOptions(cache=tmp_path / "cache.json", **options)
    return compile_tuned(model, CompileOptions(target="edge", cores=1), tune), model, inputs


def _binary(result, path: Path) -> bytes:
    save_program(path, result.module, load_target("edge"))
    return path.read_bytes()


def test_a_tuned_compile_matches_onnxruntime_and_a_warm_cache_measures_nothing(tmp_path):
    cold, model, inputs = _tuned(tmp_path)
    outputs = Simulator(cold.module, load_target("edge"), verified=True).run(inputs).outputs
    assert_close(dict(zip(["y"], outputs.values(), strict=True)), onnxruntime_outputs(model, inputs), 1e-4)
    cache = TuningCache.load(tmp_path / "cache.json")
    kinds = sorted(kernel.kind for kernel in cache.kernels.values())
    assert kinds == ["conv", "matmul"]
    for kernel in cache.kernels.values():
        assert [c.problem for c in kernel.candidates] == [""] * len(kernel.candidates)
        best = kernel.candidates[kernel.best or 0]
        assert best.measured is not None
        assert kernel.candidates[0].measured is not None
        assert best.measured <= kernel.candidates[0].measured
    assert "2 kernel signature(s), 2 measured" in (cold.tuning or "")
    warm, _, _ = _tuned(tmp_path)
    assert "2 kernel signature(s), 0 measured" in (warm.tuning or "")
    assert "cache" in (warm.tuning or "")
    assert _binary(cold, tmp_path / "cold.aitb") == _binary(warm, tmp_path / "warm.aitb")


def test_each_kernel_uses_the_fastest_measured_candidate(tmp_path):
    """The tile-level kernels of a tuned compile name the fastest candidate and its cycles."""
    _tuned(tmp_path)
    cache = TuningCache.load(tmp_path / "cache.json")
    model, _ = _model()
    tiled = compile_tuned(model, CompileOptions(target="edge", cores=1, emit="tile"), TuneOptions(cache.path))
    reasons = [str(op.attributes["reason"]) for op in tiled.module.walk() if isinstance(op, KernelOp)]
    for kernel in cache.kernels.values():
        chosen = kernel.candidates[kernel.best or 0]
        note = f"{list(chosen.choice)} measured {chosen.measured} cycles alone"
        assert sum(note in reason for reason in reasons) == 1, reasons


def test_out_of_time_keeps_the_models_plans_and_caches_nothing(tmp_path):
    model, _ = _model()
    untuned = compile_module(model, CompileOptions(target="edge", cores=1))
    result, _, _ = _tuned(tmp_path, seconds=0)
    assert "not tuned: time ran out" in (result.tuning or "")
    assert not (tmp_path / "cache.json").exists()
    assert _binary(result, tmp_path / "a.aitb") == _binary(untuned, tmp_path / "b.aitb")


def test_a_stale_choice_is_measured_again(tmp_path):
    _tuned(tmp_path)
    path = tmp_path / "cache.json"
    data = json.loads(path.read_text())
    for kernel in data["kernels"].values():
        for candidate in kernel["candidates"]:
            candidate["choice"] = [1, 2, 3]  # no candidate of any problem
    path.write_text(json.dumps(data))
    result, _, _ = _tuned(tmp_path)
    assert "2 measured" in (result.tuning or "")
    repaired = TuningCache.load(path)
    assert all(c.choice != (1, 2, 3) for k in repaired.kernels.values() for c in k.candidates)


def test_a_candidate_with_wrong_results_is_refused(tmp_path, monkeypatch):
    """The graph interpreter is the judge: with its results perturbed every candidate is wrong,
    nothing is cached and the model's plans stay."""
    real = tune_module.run_module
    monkeypatch.setattr(tune_module, "run_module", lambda *a: {k: v + 1 for k, v in real(*a).items()})
    result, _, _ = _tuned(tmp_path)
    assert "not tuned: wrong results: relative error" in (result.tuning or "")
    assert not (tmp_path / "cache.json").exists()


def test_the_sharding_cost_model_is_not_tuned_and_per_core_kernels_are(tmp_path):
    model, inputs = _model()
    options = CompileOptions(target="edge", cores=2, shard="tp")
    session = TuningSession(record=True)
    with tuning_session(session):
        compile_module(model, options)
    assert {r.node for r in session.requests.values()} <= {"relu", "fc"}  # no nameless probe
    tuned = compile_tuned(model, options, TuneOptions(cache=tmp_path / "cache.json"))
    outputs = Simulator(tuned.module, load_target("edge"), verified=True).run(inputs).outputs
    assert_close(dict(zip(["y"], outputs.values(), strict=True)), onnxruntime_outputs(model, inputs), 1e-4)


def test_kernel_keys_differ_by_target_and_budget():
    problem = MatmulProblem(1, 32, 48, 20)
    keys = {
        kernel_key(kernel_signature("matmul", [problem], budget))
        for budget in (
            Budget.of(load_target("tiny")),
            Budget.of(load_target("edge")),
            Budget.of(load_target("edge"), depth=3),
        )
    }
    assert len(keys) == 3


# --------------------------------------------------------------------------- the command line


def _save(tmp_path: Path) -> Path:
    model, _ = _model()
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    return path


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not a tuning cache aitc can read"),
        ('{"format": 99, "kernels": {}}', "not a tuning cache aitc can read (no 'format': 1 at the top)"),
        ('{"format": 1, "kernels": {"k": {"kind": "conv"}}}', "not a tuning cache aitc can read"),
        (
            '{"format": 1, "kernels": {"k": {"kind": "c", "node": "n", "signature": "s", "candidates": '
            '[{"choice": [1], "estimated": "x", "measured": null, "problem": ""}]}}}',
            "not a tuning cache aitc can read",
        ),
    ],
)
def test_a_bad_cache_is_an_error_naming_it_and_nothing_is_written(tmp_path, capsys, content, message):
    model = _save(tmp_path)
    cache = tmp_path / "cache.json"
    cache.write_text(content)
    status = aitc(
        ["compile", str(model), "-o", str(tmp_path / "m.aitb"), "--tune", "--tune-cache", str(cache)]
    )
    err = capsys.readouterr().err
    assert status == 1
    assert message in err
    assert "Traceback" not in err
    assert not (tmp_path / "m.aitb").exists()
    assert cache.read_text() == content


def test_a_cache_that_is_a_directory_or_a_fifo_is_refused(tmp_path, capsys):
    model = _save(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for cache in (tmp_path, fifo):
        status = aitc(
            ["compile", str(model), "-o", str(tmp_path / "m.aitb"), "--tune", "--tune-cache", str(cache)]
        )
        err = capsys.readouterr().err
        assert status == 1, err
        assert "Traceback" not in err
        assert not (tmp_path / "m.aitb").exists()


def test_the_cache_cannot_be_the_model_or_the_output(tmp_path, capsys):
    model = _save(tmp_path)
    before = model.read_bytes()
    status = aitc(
        ["compile", str(model), "-o", str(tmp_path / "m.aitb"), "--tune", "--tune-cache", str(model)]
    )
    assert status == 1
    assert "is the input" in capsys.readouterr().err
    assert model.read_bytes() == before
    out = tmp_path / "m.aitb"
    status = aitc(["compile", str(model), "-o", str(out), "--tune", "--tune-cache", str(out)])
    assert status == 1
    assert "same file" in capsys.readouterr().err


def test_the_command_line_reports_tuned_against_modelled_choices(tmp_path, capsys):
    model = _save(tmp_path)
    cache = tmp_path / "cache.json"
    args = [
        "compile",
        str(model),
        "-o",
        str(tmp_path / "m.aitb"),
        "--cores",
        "1",
        "--tune",
        "--tune-cache",
        str(cache),
    ]
    assert aitc([*args, "--tune-candidates", "3"]) == 0
    out = capsys.readouterr().out
    assert "kernel  kind    count  model est  model measured  tuned" in out
    assert "tuning: 2 kernel signature(s), 2 measured" in out
    assert all(len(k.candidates) == 3 for k in TuningCache.load(cache).kernels.values())
    with pytest.raises(SystemExit) as exit_:
        aitc([*args, "--tune-seconds", "-1"])
    assert exit_.value.code == 2
    assert "expected a number of seconds >= 0" in capsys.readouterr().err


def test_zero_candidates_is_an_error():
    with pytest.raises(AitcError, match="--tune-candidates must be at least 1"):
        compile_tuned(
            _model()[0], CompileOptions(target="edge"), TuneOptions(Path("unused.json"), candidates=0)
        )


def test_the_python_api_tunes_as_the_command_line_does(tmp_path):
    import aitc as api

    model, inputs = _model()
    compiled = api.compile(model, "edge", cores=1, tune=api.TuneOptions(cache=tmp_path / "cache.json"))
    assert "tuning: 2 kernel signature(s), 2 measured" in compiled.report()
    got = dict(zip(["y"], compiled.run(inputs).values(), strict=True))
    assert_close(got, onnxruntime_outputs(model, inputs), 1e-4)


def test_a_longer_short_list_than_the_cache_holds_is_measured_again(tmp_path):
    _tuned(tmp_path, candidates=2)
    assert all(len(k.candidates) == 2 for k in TuningCache.load(tmp_path / "cache.json").kernels.values())
    again, _, _ = _tuned(tmp_path, candidates=2)
    assert "0 measured" in (again.tuning or "")
    longer, _, _ = _tuned(tmp_path, candidates=4)
    assert "2 measured" in (longer.tuning or "")
    assert all(len(k.candidates) == 4 for k in TuningCache.load(tmp_path / "cache.json").kernels.values())


def test_the_short_list_is_the_best_half_then_one_of_each_other_family():
    from aitc.passes.graph_to_tile.tuning import WIDEN, short_list

    class Plan:
        def __init__(self, cycles: int, family: str):
            self.cycles, self.family, self.choice = cycles, (family,), (cycles,)

    # estimates in order; families a a b a c c d ...
    plans = [Plan(c, f) for c, f in zip(range(100, 120), "aabaccdaaeaaaaaaaaaa", strict=True)]
    asked = []

    def ranked(count: int) -> list[Plan]:
        asked.append(count)
        return plans[:count]

    got = [p.cycles for p in short_list(ranked, 6)]
    assert asked == [WIDEN * 6]
    assert got == [100, 101, 102, 104, 106, 109]  # best 3, then the first c, d, e, nothing else new
    assert [p.cycles for p in short_list(ranked, 1)] == [100]  # the model's pick is always first


def test_tune_flags_without_tune_are_an_error(tmp_path, capsys):
    model = _save(tmp_path)
    status = aitc(["compile", str(model), "-o", str(tmp_path / "m.aitb"), "--tune-seconds", "5"])
    assert status == 1
    assert "--tune-seconds without --tune does nothing: add --tune, or drop them" in capsys.readouterr().err
    assert not (tmp_path / "m.aitb").exists()


def test_a_candidate_that_fails_on_the_simulator_is_refused(tmp_path, monkeypatch):
    """A candidate whose program the simulator rejects (a race, a deadlock) is not measured,
    the report says why, and the model's plans stay."""

    def failing(self, inputs, trace=False):
        raise AitcError("deadlock: every engine waits (injected)")

    monkeypatch.setattr(tune_module.Simulator, "run", failing)
    result, _, _ = _tuned(tmp_path)
    expected = "not tuned: fails on the simulator: deadlock: every engine waits (injected)"
    assert expected in (result.tuning or "")
    assert not (tmp_path / "cache.json").exists()
