"""shard-propagate: the plan it records (and that `auto` picks the cheapest strategy), that the
same input gives byte-identical IR (also across Python hash seeds), that it only adds
annotations (valid SSA, the graph unchanged), the errors it reports, and that it never splits
a dim the cores do not divide (12 heads on 5 cores)."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import PassFailedException

from aitc.analysis.signature import entry_function
from aitc.dialects import shard
from aitc.frontend.onnx_import import import_onnx
from aitc.interp.run import run_module
from aitc.interp.shard import run_spmd
from aitc.ir import make_context, parse_mlir, print_mlir
from aitc.passes.pipelines import graph_optimize_pipeline
from aitc.passes.runner import run_pipeline
from aitc.passes.shard.planner import LAYERWISE_MARGIN, STRATEGIES
from aitc.passes.shard.shard_partition import ShardPartitionPass
from aitc.passes.shard.shard_propagate import ShardPropagatePass
from aitc.passes.shard.shard_simplify import ShardSimplifyPass
from aitc.testing import model_zoo

ZOO_SIZES: dict[str, dict] = {
    "mlp": dict(batch=4, features=16, hidden=32, classes=8),
    "cnn_bn_pool": dict(batch=4, image=8),
    "depthwise_separable": dict(batch=4, channels=8, image=6),
    "transformer_encoder_layer": dict(hidden=32, heads=4, seq=8, ffn=64, batch=4),
    "encoder": dict(layers=1, hidden=32, heads=4, ffn=64, seq=8, vocab=50, batch=4),
}


@functools.cache
def zoo_graph(name: str, **sizes) -> tuple[str, dict[str, np.ndarray]]:
    """Graph-level IR text (ONNX import with the example shapes, then graph-optimize)."""
    model, inputs = getattr(model_zoo, name)(**(sizes or ZOO_SIZES[name]))
    module = import_onnx(model, {k: list(v.shape) for k, v in inputs.items()})
    run_pipeline(module, graph_optimize_pipeline())
    return print_mlir(module), inputs


def propagated(text: str, strategy: str, cores: int | None = 4, target: str = "edge") -> ModuleOp:
    module = parse_mlir(text)
    run_pipeline(module, [ShardPropagatePass(strategy=strategy, cores=cores, target=target)])
    return module


def plan_of(module: ModuleOp) -> dict:
    """The module's `shard.plan` as Python values."""
    attr = module.attributes["shard.plan"]
    assert isinstance(attr, DictionaryAttr)
    plan = {}
    for key, value in attr.data.items():
        if isinstance(value, DictionaryAttr):
            plan[key] = {k: v.value.data for k, v in value.data.items()}  # type: ignore[attr-defined]
        elif isinstance(value, IntegerAttr):
            plan[key] = value.value.data
        else:
            assert isinstance(value, StringAttr)
            plan[key] = value.data
    return plan


def decisions(module: ModuleOp, op_name: str | None = None) -> list[str]:
    """The decision recorded on every op (named `op_name`) that carries a plan."""
    found = []
    for op in module.walk():
        plan = op.attributes.get("shard.plan")
        if isinstance(plan, DictionaryAttr) and not isinstance(op, ModuleOp) and op_name in (None, op.name):
            decision = plan.data["decision"]
            assert isinstance(decision, StringAttr)
            found.append(decision.data)
    return found


def splits(module: ModuleOp) -> list[tuple[tuple[int, ...], int]]:
    """(shape, split dim) of every shard.shard that splits its value."""
    found = []
    for op in module.walk():
        if not isinstance(op, shard.ShardOp):
            continue
        sharding = op.sharding.owner
        assert isinstance(sharding, shard.ShardingOp)
        found += [(tuple(op.src.type.get_shape()), d) for d, on in enumerate(sharding.axes) if on]  # type: ignore[attr-defined]
    return found


# --------------------------------------------------------------------------- the plan


@pytest.mark.parametrize("strategy", [*STRATEGIES, "none"])
def test_plan_is_recorded_on_the_module(strategy: str):
    module = propagated(zoo_graph("mlp")[0], strategy)
    plan = plan_of(module)
    assert plan.keys() == {"strategy", "cores", "est_cycles", "collectives"}
    assert (plan["strategy"], plan["cores"]) == (strategy, 4)
    assert plan["est_cycles"] > 0
    grids = [op for op in module.ops if isinstance(op, shard.GridOp)]
    assert [(g.sym_name.data, g.dims) for g in grids] == [("cores", (4,))]


@pytest.mark.parametrize("strategy", [*STRATEGIES, "auto"])
@pytest.mark.parametrize("name", sorted(ZOO_SIZES))
def test_planned_collectives_are_the_ones_partition_inserts(name: str, strategy: str):
    """`collectives` counts what the plan moves (all_slice is free, not counted): the same
    all_gather / all_to_all / all_reduce / reduce_scatter ops shard-partition writes, once
    shard-simplify has merged each all_slice of an all_reduce into a reduce_scatter."""
    module = propagated(zoo_graph(name)[0], strategy)
    planned = plan_of(module)["collectives"]
    run_pipeline(module, [ShardPartitionPass(), ShardSimplifyPass()])
    counts = Counter(
        op.name.removeprefix("shard.") for op in module.walk() if isinstance(op, shard.CollectiveOp)
    )
    counts.pop("all_slice", None)
    assert planned == (", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "none")


def expected_auto(estimates: dict[str, int]) -> str:
    """auto's rule: the cheapest uniform strategy (ties in STRATEGIES order), unless layerwise
    is estimated at least LAYERWISE_MARGIN below it."""
    uniform = min((s for s in STRATEGIES if s != "layerwise"), key=lambda s: estimates[s])
    return "layerwise" if estimates["layerwise"] < (1 - LAYERWISE_MARGIN) * estimates[uniform] else uniform


@pytest.mark.parametrize("cores", [2, 4])
@pytest.mark.parametrize("name", sorted(ZOO_SIZES))
def test_auto_records_every_strategy_and_chooses_the_cheapest(name: str, cores: int):
    text = zoo_graph(name)[0]
    plan = plan_of(propagated(text, "auto", cores))
    alternatives = plan["alternatives"]
    assert alternatives.keys() == set(STRATEGIES)
    assert plan["strategy"] == expected_auto(alternatives)
    assert plan["est_cycles"] == alternatives[plan["strategy"]]
    for strategy, cycles in alternatives.items():  # each estimate is that strategy's own plan
        assert plan_of(propagated(text, strategy, cores))["est_cycles"] == cycles


# --------------------------------------------------------------------------- determinism


@pytest.mark.parametrize("strategy", [*STRATEGIES, "auto"])
@pytest.mark.parametrize("name", ["transformer_encoder_layer", "cnn_bn_pool"])
def test_propagating_twice_gives_identical_ir(name: str, strategy: str):
    text = zoo_graph(name)[0]
    assert print_mlir(propagated(text, strategy)) == print_mlir(propagated(text, strategy))


PROPAGATE_SCRIPT = """
import sys
from aitc.ir import parse_mlir, print_mlir
from aitc.passes.runner import run_pipeline
from aitc.passes.shard.shard_propagate import ShardPropagatePass
module = parse_mlir(open(sys.argv[1]).read())
run_pipeline(module, [ShardPropagatePass(strategy=sys.argv[2], cores=4, target="edge")])
sys.stdout.write(print_mlir(module))
"""


@pytest.mark.parametrize("strategy", ["tp", "auto"])
def test_plan_does_not_depend_on_the_hash_seed(tmp_path: Path, strategy: str):
    """No iteration over a set or a hash-ordered dict decides anything: processes with other
    PYTHONHASHSEEDs print the same IR as this one."""
    text = zoo_graph("transformer_encoder_layer")[0]
    path = tmp_path / "layer.mlir"
    path.write_text(text)
    here = print_mlir(propagated(text, strategy))
    for seed in ("1", "2"):
        result = subprocess.run(
            [sys.executable, "-c", PROPAGATE_SCRIPT, str(path), strategy],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert result.stdout == here


# --------------------------------------------------------------------------- only annotations


def assert_defined_before_used(module: ModuleOp) -> None:
    """SSA dominance in the entry block: every operand is a block argument or the result of
    an earlier op (xDSL's verifier does not check this; MLIR's does)."""
    function = entry_function(module)
    seen: set[SSAValue] = set(function.body.block.args)
    for op in function.body.block.ops:
        late = [v for v in op.operands if v not in seen]
        assert not late, f"`{op}` uses a value that `{late[0].owner}` defines after it"
        seen.update(op.results)


SEEDED_ARGUMENT = """
shard.grid @g(shape = 4)
func.func @main(%x: tensor<8x6xf32>, %w: tensor<6x8xf32>) -> tensor<8x8xf32> {
  %rows = shard.sharding @g split_axes = [[0], []] : !shard.sharding
  %xs = shard.shard %x to %rows : tensor<8x6xf32>
  %e = graph.tanh %xs : tensor<8x6xf32>
  %y = graph.matmul %e, %w : tensor<8x6xf32>, tensor<6x8xf32> -> tensor<8x8xf32>
  func.return %y : tensor<8x8xf32>
}
"""
"""A user's annotation on a function argument: the argument itself is split."""


def test_annotation_of_a_split_argument_follows_its_sharding():
    """The argument's `shard.shard %x to %s` comes after `%s = shard.sharding`, so the printed
    IR parses again (aitc's parser checks dominance)."""
    module = parse_mlir(SEEDED_ARGUMENT)
    ShardPropagatePass(target="edge").apply(make_context(), module)
    assert_defined_before_used(module)
    parse_mlir(print_mlir(module))


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("name", ["transformer_encoder_layer", "cnn_bn_pool"])
def test_only_annotations_are_added(name: str, strategy: str):
    """The graph ops, their types and what the module computes are unchanged; every value is
    defined before it is used."""
    text, inputs = zoo_graph(name)
    before = parse_mlir(text)
    module = propagated(text, strategy)
    assert_defined_before_used(module)

    def graph_ops(m: ModuleOp) -> list[tuple[str, str]]:
        return [
            (op.name, str([r.type for r in op.results])) for op in m.walk() if op.name.startswith("graph.")
        ]

    assert graph_ops(module) == graph_ops(before)
    want, got = run_module(before, inputs), run_module(module, inputs)
    for name_ in want:
        np.testing.assert_array_equal(got[name_], want[name_])


# --------------------------------------------------------------------------- errors

MLP_TEXT = """
func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %w = graph.constant dense<0.5> : tensor<16x16xf32>
  %y = graph.matmul %x, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  func.return %y : tensor<8x16xf32>
}
"""


def with_grid(grid: str, text: str = MLP_TEXT) -> str:
    return grid + "\n" + text


UNEVEN_SEED = """
shard.grid @g(shape = 2)
func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %s = shard.sharding @g split_axes = [[0]] sharded_dims_offsets = [0, 3, 8] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x16xf32>
  %y = graph.tanh %xs : tensor<8x16xf32>
  func.return %y : tensor<8x16xf32>
}
"""

ERRORS = {
    "unknown_strategy": (MLP_TEXT, dict(strategy="megatron", cores=4), "unknown strategy 'megatron'"),
    "two_dim_grid": (with_grid("shard.grid @g(shape = 2x2)"), dict(strategy="tp"), "1-D grid"),
    "zero_cores": (MLP_TEXT, dict(strategy="tp", cores=0), "cores must be >= 1"),
    "negative_cores": (MLP_TEXT, dict(strategy="tp", cores=-2), "cores must be >= 1"),
    "more_cores_than_target": (MLP_TEXT, dict(strategy="tp", cores=5), "target 'edge' has 4"),
    "cores_disagree_with_grid": (
        with_grid("shard.grid @g(shape = 4)"),
        dict(strategy="tp", cores=2),
        "grid @g",
    ),
    "two_grids": (
        with_grid("shard.grid @a(shape = 2)\nshard.grid @b(shape = 2)"),
        dict(strategy="tp"),
        "several",
    ),
    "uneven_seed": (UNEVEN_SEED, dict(strategy="none"), "uneven shards"),
}
"""name -> (module, pass options, a part of the message)."""


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error_names_the_pass(name: str):
    text, options, words = ERRORS[name]
    module = parse_mlir(text)
    with pytest.raises(PassFailedException) as error:
        ShardPropagatePass(**options, target="edge").apply(make_context(), module)
    assert str(error.value).startswith("shard-propagate:")
    assert words in str(error.value)


# --------------------------------------------------------------------------- cores that do not divide


def test_twelve_heads_on_five_cores_split_only_what_five_divides():
    """hidden 768 = 12 heads x 64 on 5 cores: the QKV/output projections (768 columns) and the
    attention (12 heads) cannot split; only the FFN (40 = 5 x 8) does. Every split divides by 5
    and the partitioned layer computes what the layer computes."""
    text, inputs = zoo_graph("transformer_encoder_layer", hidden=768, heads=12, seq=8, ffn=40, batch=1)
    assert "graph.attention" in text  # the fused attention is there
    assert "heads = 12" in text
    module = propagated(text, "tp", cores=5, target="server")
    found = splits(module)
    assert found, "the FFN (40 columns) divides by 5 and should be split"
    assert all(shape[dim] % 5 == 0 for shape, dim in found), found
    want = run_module(parse_mlir(text), inputs)
    run_pipeline(module, [ShardPartitionPass()])
    assert isinstance(entry_function(module), func.FuncOp)
    for outputs in run_spmd(module, [inputs] * 5):
        scale = float(np.max(np.abs(want["y"])))
        assert float(np.max(np.abs(outputs["y"] - want["y"]))) <= 1e-4 * scale
    refused = [
        d for d in decisions(module) if "of 768, which does not divide by 5 (2, 3, 4, 6, 8 cores would)" in d
    ]
    assert refused, decisions(module)
    assert "refused" not in plan_of(module)  # something splits: the plan stands


def test_a_plan_that_splits_nothing_records_why():
    """12 heads (96 columns), FFN 192, 16 tokens on 5 cores: nothing tp splits divides by 5;
    the module's plan says so with the sizes and the core counts that would divide them."""
    text, _ = zoo_graph("transformer_encoder_layer", hidden=96, heads=12, seq=16, ffn=192, batch=1)
    plan = plan_of(propagated(text, "tp", cores=5, target="server"))
    assert not splits(propagated(text, "tp", cores=5, target="server"))
    assert (
        "n (output columns) of 96, which does not divide by 5 (2, 3, 4, 6, 8 cores would)" in plan["refused"]
    )


# --------------------------------------------------------------------------- layerwise and spatial


def test_layerwise_chooses_per_conv_and_says_why():
    """A batch-1 residual block: `layerwise` takes, per conv, the cheapest of tp's output
    channels and sp's output rows (dp has no batch to split), and records every candidate's
    cycles in the decision."""
    text, _ = zoo_graph("residual_block", batch=1, channels=16, image=16)
    module = propagated(text, "layerwise", cores=4)
    found = decisions(module, "graph.conv")
    assert len(found) == 5, found
    for decision in found:
        assert decision.startswith("layerwise: "), decision
        assert "(cycles: tp " in decision, decision
        assert ", sp " in decision, decision
    assert plan_of(module)["strategy"] == "layerwise"


@pytest.mark.parametrize("cores", [2, 4])
def test_sp_splits_conv_rows_with_the_halo_its_window_needs(cores: int):
    """sp on a batch-1 residual block: every conv splits its output rows; a 3x3 conv's input
    is annotated with halo_sizes [1, 1] (stride 1) or [1, 0] (stride 2: the last row of a
    part's windows is its own), the 1x1 downsample's with none."""
    text, _ = zoo_graph("residual_block", batch=1, channels=8, image=16)
    module = propagated(text, "sp", cores=cores)
    halos = Counter(
        tuple(op.halo) if op.halo is not None else None
        for op in module.walk()
        if isinstance(op, shard.ShardingOp)
    )
    assert (1, 1) in halos, halos
    assert (1, 0) in halos, halos
    convs = decisions(module, "graph.conv")
    assert len(convs) == 5, convs
    assert all("split output rows" in decision for decision in convs), convs
