"""The shard dialect's semantics (aitc/interp/shard.py): every collective against numpy on 1-D
and 2-D grids of 2, 3, 4 and 8 cores; annotations change nothing in the global view; a
hand-partitioned MLP (Megatron: column then row split, one all-reduce) on 2 and 4 cores computes
what the unsharded one does; and the errors of SPMD runs."""

from __future__ import annotations

import numpy as np
import pytest

from aitc.analysis.signature import entry_function
from aitc.diagnostics import AitcError
from aitc.interp.run import run_module
from aitc.interp.shard import groups, run_spmd, split_inputs
from aitc.ir import parse_mlir

RNG = np.random.default_rng(7)


def _module(grid: str, body: str, arg: str, result: str) -> str:
    return (
        f"shard.grid @g(shape = {grid})\n"
        f'func.func @main(%x: {arg} {{graph.name = "x"}}) -> ({result} {{graph.name = "y"}}) {{\n'
        f"  {body}\n  func.return %y : {result}\n}}"
    )


def _per_core(cores: int, shape: tuple[int, ...]) -> list[np.ndarray]:
    return [RNG.standard_normal(shape).astype(np.float32) for _ in range(cores)]


def _run(text: str, values: list[np.ndarray]) -> list[np.ndarray]:
    return [out["y"] for out in run_spmd(parse_mlir(text), [{"x": v} for v in values])]


def _tensor(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


# --------------------------------------------------------------------------- groups


def test_groups_of_a_2x3_grid():
    assert groups((2, 3), [1]) == [[0, 1, 2], [3, 4, 5]]
    assert groups((2, 3), [0]) == [[0, 3], [1, 4], [2, 5]]
    assert groups((2, 3), [0, 1]) == [[0, 1, 2, 3, 4, 5]]
    assert groups((2, 3), [1, 0]) == [[0, 3, 1, 4, 2, 5]]  # the first listed axis is most significant
    assert groups((2, 3), []) == [[c] for c in range(6)]


# --------------------------------------------------------------------------- each collective


@pytest.mark.parametrize("cores", [2, 3, 4, 8])
@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod"])
def test_all_reduce(cores: int, kind: str):
    values = _per_core(cores, (3, 4))
    reduction = "" if kind == "sum" else f" reduction = {kind}"
    body = f"%y = shard.all_reduce %x on @g grid_axes = [0]{reduction} : tensor<3x4xf32> -> tensor<3x4xf32>"
    got = _run(_module(str(cores), body, "tensor<3x4xf32>", "tensor<3x4xf32>"), values)
    want = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}[kind](np.stack(values), axis=0)
    for result in got:
        np.testing.assert_allclose(result, want, rtol=1e-6)


@pytest.mark.parametrize("cores", [2, 3, 4, 8])
@pytest.mark.parametrize("axis", [0, 1])
def test_all_gather(cores: int, axis: int):
    values = _per_core(cores, (2, 3))
    out = [2, 3]
    out[axis] *= cores
    gather = f"shard.all_gather %x on @g grid_axes = [0] gather_axis = {axis}"
    body = f"%y = {gather} : tensor<2x3xf32> -> {_tensor(tuple(out))}"
    got = _run(_module(str(cores), body, "tensor<2x3xf32>", _tensor(tuple(out))), values)
    for result in got:
        np.testing.assert_array_equal(result, np.concatenate(values, axis=axis))


@pytest.mark.parametrize("cores", [2, 3, 4, 8])
def test_reduce_scatter(cores: int):
    values = _per_core(cores, (cores * 2, 3))
    body = (
        f"%y = shard.reduce_scatter %x on @g grid_axes = [0] scatter_axis = 0 : "
        f"{_tensor((cores * 2, 3))} -> tensor<2x3xf32>"
    )
    got = _run(_module(str(cores), body, _tensor((cores * 2, 3)), "tensor<2x3xf32>"), values)
    total = np.sum(np.stack(values), axis=0)
    for core, result in enumerate(got):
        np.testing.assert_allclose(result, total[2 * core : 2 * core + 2], rtol=1e-6)


@pytest.mark.parametrize("cores", [2, 4, 8])
def test_all_slice_keeps_each_cores_part(cores: int):
    values = _per_core(cores, (3, cores))
    types = f"{_tensor((3, cores))} -> {_tensor((3, 1))}"
    body = f"%y = shard.all_slice %x on @g grid_axes = [0] slice_axis = 1 : {types}"
    got = _run(_module(str(cores), body, _tensor((3, cores)), "tensor<3x1xf32>"), values)
    for core, result in enumerate(got):
        np.testing.assert_array_equal(result, values[core][:, core : core + 1])


@pytest.mark.parametrize(("cores", "halo"), [(2, (1, 1)), (4, (2, 0)), (4, (0, 3)), (3, (5, 5))])
def test_all_slice_with_a_halo_widens_each_part_with_zeros_past_the_ends(cores: int, halo: tuple[int, int]):
    """Core k keeps rows [4k - lo, 4k + 4 + hi) of its value: its neighbours' rows, zeros past
    the ends (a halo wider than a part reaches past the neighbour)."""
    lo, hi = halo
    rows = 4 * cores
    values = _per_core(cores, (rows, 2))
    types = f"{_tensor((rows, 2))} -> {_tensor((4 + lo + hi, 2))}"
    body = f"%y = shard.all_slice %x on @g grid_axes = [0] slice_axis = 0 halo = [{lo}, {hi}] : {types}"
    got = _run(_module(str(cores), body, _tensor((rows, 2)), _tensor((4 + lo + hi, 2))), values)
    for core, result in enumerate(got):
        padded = np.concatenate(
            [np.zeros((lo + 8, 2), np.float32), values[core], np.zeros((hi + 8, 2), np.float32)]
        )
        start = 4 * core + 8  # row 4 core - lo of the value, in the padded copy
        np.testing.assert_array_equal(result, padded[start : start + 4 + lo + hi])


def test_all_slice_halo_fill_stands_past_the_ends():
    """fill = "-inf" (a max pool's padding): the outer cores' rows past the ends are -inf,
    the inner rows their neighbours'."""
    values = _per_core(2, (8, 1))
    body = '%y = shard.all_slice %x on @g grid_axes = [0] slice_axis = 0 halo = [1, 1] fill = "-inf" : '
    body += f"{_tensor((8, 1))} -> {_tensor((6, 1))}"
    first, second = _run(_module("2", body, _tensor((8, 1)), _tensor((6, 1))), values)
    np.testing.assert_array_equal(first[:, 0], [-np.inf, *values[0][:5, 0]])
    np.testing.assert_array_equal(second[:, 0], [*values[1][3:, 0], -np.inf])


@pytest.mark.parametrize("cores", [2, 3, 4])
def test_all_to_all(cores: int):
    values = _per_core(cores, (2, cores * 2))
    out = (2 * cores, 2)
    body = (
        f"%y = shard.all_to_all %x on @g grid_axes = [0] split_axis = 1 concat_axis = 0 : "
        f"{_tensor((2, cores * 2))} -> {_tensor(out)}"
    )
    got = _run(_module(str(cores), body, _tensor((2, cores * 2)), _tensor(out)), values)
    for receiver, result in enumerate(got):
        want = np.concatenate([v[:, 2 * receiver : 2 * receiver + 2] for v in values], axis=0)
        np.testing.assert_array_equal(result, want)


@pytest.mark.parametrize("root", [0, 2])
def test_broadcast(root: int):
    values = _per_core(3, (4,))
    body = f"%y = shard.broadcast %x on @g grid_axes = [0] root = [{root}] : tensor<4xf32> -> tensor<4xf32>"
    for result in _run(_module("3", body, "tensor<4xf32>", "tensor<4xf32>"), values):
        np.testing.assert_array_equal(result, values[root])


def test_collectives_on_one_axis_of_a_2x2_grid_stay_in_their_group():
    values = _per_core(4, (2,))
    body = "%y = shard.all_gather %x on @g grid_axes = [1] gather_axis = 0 : tensor<2xf32> -> tensor<4xf32>"
    got = _run(_module("2x2", body, "tensor<2xf32>", "tensor<4xf32>"), values)
    for core in range(4):
        row = core // 2
        np.testing.assert_array_equal(got[core], np.concatenate(values[2 * row : 2 * row + 2]))


def test_process_linear_index_and_graph_ops_run_per_core():
    text = """
shard.grid @g(shape = 4)
func.func @main(%x: tensor<2xf32> {graph.name = "x"}) -> (tensor<8xf32> {graph.name = "y"}) {
  %d = graph.mul %x, %x : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %y = shard.all_gather %d on @g grid_axes = [0] gather_axis = 0 : tensor<2xf32> -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}"""
    values = _per_core(4, (2,))
    got = _run(text, values)
    np.testing.assert_array_equal(got[0], np.concatenate([v * v for v in values]))


# --------------------------------------------------------------------------- a partitioned model

MLP = """
shard.grid @g(shape = {cores})
func.func @main(%x: tensor<4x8xf32> {{graph.name = "x"}}, %w1: tensor<8x{h}xf32> {{graph.name = "w1"}},
                %w2: tensor<{h}x6xf32> {{graph.name = "w2"}}) -> (tensor<4x6xf32> {{graph.name = "y"}}) {{
  %h = graph.matmul %x, %w1 {{activation = "relu"}} : tensor<4x8xf32>, tensor<8x{h}xf32> -> tensor<4x{h}xf32>
  %p = graph.matmul %h, %w2 : tensor<4x{h}xf32>, tensor<{h}x6xf32> -> tensor<4x6xf32>
  %y = shard.all_reduce %p on @g grid_axes = [0] : tensor<4x6xf32> -> tensor<4x6xf32>
  func.return %y : tensor<4x6xf32>
}}"""
"""Tensor parallel (Megatron): w1 split by columns, w2 by rows, one all-reduce of the partial sums."""

UNSHARDED = """
func.func @main(%x: tensor<4x8xf32> {graph.name = "x"}, %w1: tensor<8x16xf32> {graph.name = "w1"},
                %w2: tensor<16x6xf32> {graph.name = "w2"}) -> (tensor<4x6xf32> {graph.name = "y"}) {
  %h = graph.matmul %x, %w1 {activation = "relu"} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %y = graph.matmul %h, %w2 : tensor<4x16xf32>, tensor<16x6xf32> -> tensor<4x6xf32>
  func.return %y : tensor<4x6xf32>
}"""


@pytest.mark.parametrize("cores", [2, 4])
def test_tensor_parallel_mlp_matches_the_unsharded_one(cores: int):
    inputs = {
        "x": RNG.standard_normal((4, 8)).astype(np.float32),
        "w1": RNG.standard_normal((8, 16)).astype(np.float32),
        "w2": RNG.standard_normal((16, 6)).astype(np.float32),
    }
    want = run_module(parse_mlir(UNSHARDED), inputs)["y"]
    module = parse_mlir(MLP.format(cores=cores, h=16 // cores))
    per_core = split_inputs(entry_function(module), inputs, {"w1": 1, "w2": 0}, cores)
    for outputs in run_spmd(module, per_core):
        np.testing.assert_allclose(outputs["y"], want, rtol=1e-5, atol=1e-5)


def test_annotations_change_nothing_in_the_global_view():
    annotated = UNSHARDED.replace(
        "  %h = graph.matmul",
        "  %s = shard.sharding @g split_axes = [[], [0]] : !shard.sharding\n"
        "  %w1s = shard.shard %w1 to %s : tensor<8x16xf32>\n  %h = graph.matmul",
    ).replace("%x, %w1 {", "%x, %w1s {")
    inputs = {
        "x": RNG.standard_normal((4, 8)).astype(np.float32),
        "w1": RNG.standard_normal((8, 16)).astype(np.float32),
        "w2": RNG.standard_normal((16, 6)).astype(np.float32),
    }
    got = run_module(parse_mlir("shard.grid @g(shape = 4)\n" + annotated), inputs)
    np.testing.assert_array_equal(got["y"], run_module(parse_mlir(UNSHARDED), inputs)["y"])


# --------------------------------------------------------------------------- errors


def test_run_module_runs_a_per_core_function_on_every_core():
    """`aitc run` on a partitioned module: every core gets the whole inputs; the results
    are core 0's once every core agrees."""
    body = "%y = shard.all_reduce %x on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>"
    module = parse_mlir(_module("2", body, "tensor<4xf32>", "tensor<4xf32>"))
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(run_module(module, {"x": x})["y"], 2 * x)


def test_run_module_refuses_results_that_differ_between_cores():
    body = "%y = shard.all_slice %x on @g grid_axes = [0] slice_axis = 0 : tensor<4xf32> -> tensor<2xf32>"
    module = parse_mlir(_module("2", body, "tensor<4xf32>", "tensor<2xf32>"))
    with pytest.raises(AitcError, match="core 1 returns another 'y' than core 0"):
        run_module(module, {"x": np.arange(4, dtype=np.float32)})


def test_one_input_set_per_core():
    body = "%y = shard.all_reduce %x on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>"
    module = parse_mlir(_module("4", body, "tensor<4xf32>", "tensor<4xf32>"))
    with pytest.raises(AitcError, match="grid @g of 4 cores, but 3 input sets"):
        run_spmd(module, [{"x": np.zeros(4, np.float32)}] * 3)


def test_a_wrong_per_core_shape_is_refused():
    body = "%y = shard.all_reduce %x on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>"
    module = parse_mlir(_module("2", body, "tensor<4xf32>", "tensor<4xf32>"))
    with pytest.raises(AitcError, match="x"):
        run_spmd(module, [{"x": np.zeros(4, np.float32)}, {"x": np.zeros(5, np.float32)}])
