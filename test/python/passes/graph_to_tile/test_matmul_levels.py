"""Matmuls through every level of the pipeline: the graph interpreter's result is what the tile
level computes right after convert-graph-to-tile, after multi-buffer and plan-memory, what the
sync interpreter computes after insert-semaphores (with its race and deadlock checks) and what
the simulator computes from the hw program. Shapes are drawn so the plans cover ACC tiles over
half of ACC that the engines take turns on and blocks whose first K step loads into the
rotated tiles (`matmul_tiling.fitting_peels`), besides the usual ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aitc.analysis.signature import entry_function
from aitc.dialects import tile
from aitc.interp.run import random_inputs, run_module
from aitc.ir import parse_mlir
from aitc.passes.graph_to_tile import ConvertGraphToTilePass
from aitc.passes.graph_to_tile.costs import Budget
from aitc.passes.graph_to_tile.matmul_costs import plan_matmul
from aitc.passes.graph_to_tile.matmul_tiling import MatmulProblem
from aitc.passes.pipelines import lowering_pipeline, with_target
from aitc.passes.runner import run_pipeline
from aitc.reference import assert_close
from aitc.sim import Simulator
from aitc.target import load_target


def matmul_module(m: int, k: int, n: int) -> str:
    x, w, y = (f"tensor<{a}x{b}xf32>" for a, b in ((m, k), (k, n), (m, n)))
    args = f'%x: {x} {{graph.name = "x"}}, %w: {w} {{graph.name = "w"}}'
    return (
        f'func.func @main({args}) -> ({y} {{graph.name = "y"}}) {{\n'
        f"  %y = graph.matmul %x, %w : {x}, {w} -> {y}\n"
        f"  func.return %y : {y}\n}}"
    )


LEVELS = {"convert-graph-to-tile": "tile", "plan-memory": "tile", "insert-semaphores": "sync"}


def check_every_level(m: int, k: int, n: int, target: str) -> None:
    text = matmul_module(m, k, n)
    inputs = random_inputs(entry_function(parse_mlir(text)), seed=5)
    expected = run_module(parse_mlir(text), inputs)
    module = parse_mlir(text)
    passes = with_target(lowering_pipeline(depth=2, host_fallback=False), target)
    checked = set()
    for index, pass_ in enumerate(passes):
        run_pipeline(module, [pass_])
        if pass_.name in LEVELS:
            assert_close(run_module(module, inputs), expected, tolerance=1e-5)
            checked.add(pass_.name)
        if index == len(passes) - 1:
            assert_close(Simulator(module, target).run(inputs).outputs, expected, tolerance=1e-5)
    assert checked == set(LEVELS)


def plan_of(m: int, k: int, n: int, target: str):
    budget = Budget.of(load_target(target))
    return budget, plan_matmul(MatmulProblem(1, m, k, n), budget)


def test_shared_first_step_and_acc_tiles_on_turns():
    """128x32 @ 32x32 on tiny: both features in one plan (the lit test
    test/passes/convert-graph-to-tile-shared-tiles.mlir shows its nest)."""
    budget, plan = plan_of(128, 32, 32, "tiny")
    assert plan is not None
    assert plan.peeled == ("last",)
    assert budget.single_acc(plan.acc_bytes)
    check_every_level(128, 32, 32, "tiny")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([8, 24, 64, 96, 128]),
    st.sampled_from([12, 32, 48, 64]),
    st.sampled_from([8, 20, 32, 48]),
)
def test_every_level_computes_the_matmul_on_tiny(m: int, k: int, n: int):
    check_every_level(m, k, n, "tiny")


@pytest.mark.parametrize(("m", "k", "n"), [(384, 384, 512), (64, 256, 96), (128, 384, 384)])
def test_every_level_computes_the_matmul_on_edge(m: int, k: int, n: int):
    """(384, 384, 512): blocks of 384 x 192 whose ACC tiles take all of ACC and whose first K
    step shares the rotated tiles; (128, 384, 384): the kept lhs panel loads in two parts, one
    per queue (test/passes/convert-tile-to-sync-split-panel.mlir)."""
    if (m, k, n) == (384, 384, 512):
        budget, plan = plan_of(m, k, n, "edge")
        assert plan is not None
        assert plan.peeled == ("last",)
        assert budget.single_acc(plan.acc_bytes)
    check_every_level(m, k, n, "edge")


def test_inputs_are_not_all_equal():
    """The check compares real numbers: random inputs, not a constant that any tiling gets right."""
    inputs = random_inputs(entry_function(parse_mlir(matmul_module(8, 12, 8))), seed=5)
    assert np.std(inputs["x"]) > 0.1


def test_the_bias_loads_after_the_only_kept_panel():
    """A MiniLM projection (128 x 384 x 384 + bias) keeps its lhs row panel, loaded once in two
    parts side by side on the DMA queues: its bias row loads after them, so on its queue it
    does not take the DRAM channel (first come, first served) ahead of the panel's part there,
    which the first matmul waits for. Every level still computes the product."""
    m, k, n = 128, 384, 384
    x, w, b, y = (f"tensor<{s}xf32>" for s in (f"{m}x{k}", f"{k}x{n}", f"{n}", f"{m}x{n}"))
    text = (
        f'func.func @main(%x: {x} {{graph.name = "x"}}, %w: {w} {{graph.name = "w"}}, '
        f'%b: {b} {{graph.name = "b"}}) -> ({y} {{graph.name = "y"}}) {{\n'
        f"  %y = graph.matmul %x, %w, %b : {x}, {w}, {b} -> {y}\n"
        f"  func.return %y : {y}\n}}"
    )
    inputs = random_inputs(entry_function(parse_mlir(text)), seed=5)
    expected = run_module(parse_mlir(text), inputs)
    module = parse_mlir(text)
    run_pipeline(module, with_target(lowering_pipeline(depth=2, host_fallback=False), "edge"))
    assert_close(Simulator(module, "edge").run(inputs).outputs, expected, tolerance=1e-5)
    tiled = parse_mlir(text)
    run_pipeline(tiled, with_target([ConvertGraphToTilePass()], "edge"))
    (kernel,) = [op for op in tiled.walk() if isinstance(op, tile.KernelOp)]
    loads = [op for op in kernel.walk() if isinstance(op, tile.CopyOp) and op.parent_op() is kernel]
    panel = [op for op in loads if op.box()[0] > 1 and op.box()[1] == k]
    bias = [op for op in loads if tuple(op.box()) == (1, n)]
    assert len(panel) == 2
    assert len(bias) == 1
    order = {op: index for index, op in enumerate(loads)}
    assert order[bias[0]] > max(order[op] for op in panel)
