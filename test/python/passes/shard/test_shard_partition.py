"""shard-partition, executed: the per-core (SPMD) function computes on every core what the
unsharded graph computes.

Two sets of cases, both through shard-propagate -> shard-partition (-> shard-simplify) and
`run_spmd` against `run_module`:

- the model zoo, imported the way `aitc compile --emit graph` does (ONNX import with the
  example shapes pinned, then graph-optimize), on 2 and 4 cores with every strategy; plus
  the structure each strategy must give (Megatron's all-reduce count, per-core ops that
  really are smaller);
- hand-written regressions for ops whose operand is split along a dim the op reshapes,
  gathers, reduces or normalises (the places where a partitioner silently goes wrong).
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, TensorType

from aitc.analysis.signature import entry_function, input_names
from aitc.dialects import graph, shard
from aitc.frontend.onnx_import import import_onnx
from aitc.interp.run import run_module
from aitc.interp.shard import run_spmd
from aitc.ir import parse_mlir, print_mlir
from aitc.passes.pipelines import graph_optimize_pipeline
from aitc.passes.runner import run_pipeline
from aitc.passes.shard.planner import STRATEGIES as PLANNED
from aitc.passes.shard.shard_partition import ShardPartitionPass
from aitc.passes.shard.shard_propagate import ShardPropagatePass
from aitc.passes.shard.shard_simplify import ShardSimplifyPass
from aitc.testing import model_zoo
from aitc.types import numpy_dtype, shape_and_element

TOLERANCE = 1e-4
"""Max |partitioned - unsharded| relative to max |unsharded| (reductions reassociate)."""


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    diff = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if want.size else 0.0
    return diff / scale if scale > 0 else diff


def assert_every_core_matches(per_core: list[dict[str, np.ndarray]], want: dict[str, np.ndarray]) -> None:
    for core, outputs in enumerate(per_core):
        assert outputs.keys() == want.keys()
        for name, expected in want.items():
            got = outputs[name]
            assert got.shape == expected.shape, f"core {core}, {name}: shape {got.shape} != {expected.shape}"
            assert got.dtype == expected.dtype, f"core {core}, {name}: dtype {got.dtype} != {expected.dtype}"
            error = relative_error(got, expected)
            assert error <= TOLERANCE, f"core {core}, {name}: relative error {error:.2e}"


def collective_counts(module: ModuleOp) -> Counter[str]:
    """How many of each shard collective the module holds, by op name without `shard.`."""
    return Counter(
        op.name.removeprefix("shard.") for op in module.walk() if isinstance(op, shard.CollectiveOp)
    )


def graph_ops(module: ModuleOp) -> list:
    return [
        op for op in module.walk() if op.name.startswith("graph.") and not isinstance(op, graph.ConstantOp)
    ]


def result_size(op) -> int:
    return max(
        (int(np.prod(r.type.get_shape())) for r in op.results if isinstance(r.type, TensorType)), default=0
    )


def shrunk_ops(original: ModuleOp, partitioned: ModuleOp) -> list[str]:
    """Ops of the original (by name and location) of which some per-core copy computes a
    smaller result: the ops the partitioning really split."""
    before: dict[tuple[str, str], int] = {}
    for op in graph_ops(original):
        key = (op.name, str(op.location))
        before[key] = min(before.get(key, result_size(op)), result_size(op))
    return sorted(
        f"{op.name} {op.location}"
        for op in graph_ops(partitioned)
        if (op.name, str(op.location)) in before and result_size(op) < before[(op.name, str(op.location))]
    )


def shard_pipeline(strategy: str, cores: int | None = None, target: str | None = None) -> list:
    return [
        ShardPropagatePass(strategy=strategy, cores=cores, target=target),
        ShardPartitionPass(),
        ShardSimplifyPass(),
    ]


# --------------------------------------------------------------------------- the model zoo

ZOO_SIZES: dict[str, dict] = {
    "mlp": dict(batch=4, features=16, hidden=32, classes=8),
    "cnn_bn_pool": dict(batch=4, image=8),
    "residual_block": dict(batch=4, channels=4, image=8),
    "depthwise_separable": dict(batch=4, channels=8, image=8),
    "transformer_encoder_layer": dict(hidden=32, heads=4, seq=8, ffn=64, batch=4),
    "encoder": dict(layers=2, hidden=32, heads=4, ffn=64, seq=8, vocab=50, batch=4, dynamic_batch=True),
    "bert_torch_export": dict(
        layers=1, hidden=32, heads=4, ffn=64, seq=8, vocab=50, max_positions=16, batch=4, dynamic_batch=True
    ),
}
"""Small sizes: batch, channels, image rows, heads and tokens divide by 4, so every strategy has a
dim to split on 2 and on 4 cores."""

STRATEGIES = (*PLANNED, "auto")

REPLICATED: set[tuple[str, str]] = set()
"""(model, strategy) that split nothing (none today: sp splits a CNN's conv output rows)."""


@functools.cache
def zoo_graph(name: str) -> tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(graph-level IR text after graph-optimize, example inputs, unsharded outputs)."""
    model, inputs = getattr(model_zoo, name)(**ZOO_SIZES[name])
    module = import_onnx(model, {k: list(v.shape) for k, v in inputs.items()})  # pins dynamic dims
    run_pipeline(module, graph_optimize_pipeline())
    return print_mlir(module), inputs, run_module(module, inputs)


@functools.cache
def zoo_partitioned(name: str, cores: int, strategy: str) -> tuple[ModuleOp, ModuleOp]:
    """(graph-level module, its partition for `cores` cores with `strategy`)."""
    text, _, _ = zoo_graph(name)
    module = parse_mlir(text)
    run_pipeline(module, shard_pipeline(strategy, cores, "edge"))
    return parse_mlir(text), module


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("cores", [2, 4])
@pytest.mark.parametrize("name", sorted(ZOO_SIZES))
def test_zoo_model_partitioned_computes_what_it_computes_unsharded(name: str, cores: int, strategy: str):
    _, inputs, want = zoo_graph(name)
    _, module = zoo_partitioned(name, cores, strategy)
    assert_every_core_matches(run_spmd(module, [inputs] * cores), want)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("cores", [2, 4])
@pytest.mark.parametrize("name", sorted(ZOO_SIZES))
def test_zoo_strategy_really_splits(name: str, cores: int, strategy: str):
    """A strategy that splits leaves per-core ops on smaller tensors than the original (so
    silently replicating everything fails here); one that does not split moves nothing."""
    original, module = zoo_partitioned(name, cores, strategy)
    chosen = module.attributes["shard.plan"].data["strategy"].data  # type: ignore[attr-defined]
    if (name, chosen) in REPLICATED:
        assert not shrunk_ops(original, module)
        assert not collective_counts(module)
    else:
        assert shrunk_ops(original, module), f"{name} {strategy} on {cores} cores split nothing"


@pytest.mark.parametrize("cores", [2, 4])
@pytest.mark.parametrize(("name", "layers"), [("transformer_encoder_layer", 1), ("encoder", 2)])
def test_transformer_tp_is_megatron(name: str, layers: int, cores: int):
    """Tensor parallelism on encoder layers: QKV and FFN-up split by columns, the output
    projection and FFN-down by rows: two all_reduces per layer, nothing gathered or
    transposed (the embedding and the layer norms run whole, the heads split)."""
    _, module = zoo_partitioned(name, cores, "tp")
    counts = collective_counts(module)
    assert counts["all_reduce"] == 2 * layers
    assert counts["all_gather"] == counts["all_to_all"] == counts["reduce_scatter"] == 0


@pytest.mark.parametrize("cores", [2, 4])
def test_mlp_tp_has_one_all_reduce(cores: int):
    _, module = zoo_partitioned("mlp", cores, "tp")
    assert collective_counts(module)["all_reduce"] == 1


@pytest.mark.parametrize("cores", [2, 4])
@pytest.mark.parametrize("name", ["mlp", "transformer_encoder_layer", "cnn_bn_pool"])
def test_dp_splits_the_batch_without_reductions(name: str, cores: int):
    """Data parallel: every core runs its part of the batch; the only collective that moves
    data is the final gather of the outputs (no all_reduce, no all_to_all)."""
    _, module = zoo_partitioned(name, cores, "dp")
    counts = collective_counts(module)
    assert counts["all_reduce"] == counts["all_to_all"] == 0
    assert counts["all_gather"] == len(entry_function(module).function_type.outputs.data)


# --------------------------------------------------------------------------- split-dim regressions


def case_inputs(module: ModuleOp, seed: int) -> dict[str, np.ndarray]:
    """Random inputs: normal floats; integers in [0, 4) (valid indices of every table here)."""
    f = entry_function(module)
    rng = np.random.default_rng(seed)
    inputs = {}
    for name, arg in zip(input_names(f), f.body.block.args, strict=True):
        shape, element = shape_and_element(arg.type)
        dtype = numpy_dtype(element)
        inputs[name] = (
            rng.standard_normal(shape).astype(dtype)
            if dtype.kind == "f"
            else rng.integers(0, 4, shape).astype(dtype)
        )
    return inputs


def tensor(shape: tuple[int, ...], element: str = "f32") -> str:
    return f"tensor<{''.join(f'{s}x' for s in shape)}{element}>"


def split_axes(rank: int, dim: int | None) -> str:
    return "[" + ", ".join("[0]" if d == dim else "[]" for d in range(rank)) + "]"


def one_op_case(
    cores: int,
    args: list[tuple[tuple[int, ...], str, int | None]],
    op: str,
    result: tuple[int, ...],
) -> str:
    """A function of `args` ((shape, element, split dim)) whose split float args go through
    tanh (an op that keeps the split) and then reach `op`, written with %a0, %a1, ... for its
    operands and %y for its result."""
    signature = ", ".join(f"%x{i}: {tensor(shape, el)}" for i, (shape, el, _) in enumerate(args))
    lines = [f"shard.grid @g(shape = {cores})", f"func.func @main({signature}) -> {tensor(result)} {{"]
    for i, (shape, element, dim) in enumerate(args):
        t = tensor(shape, element)
        source = f"%x{i}"
        if dim is not None:
            lines.append(
                f"  %s{i} = shard.sharding @g split_axes = {split_axes(len(shape), dim)} : !shard.sharding"
            )
            lines.append(f"  %x{i}s = shard.shard %x{i} to %s{i} : {t}")
            source = f"%x{i}s"
        if element == "f32":
            lines.append(f"  %a{i} = graph.tanh {source} : {t}")
        else:
            lines.append(f"  %a{i} = graph.abs {source} : {t}")
    lines += [f"  %y = {op}", f"  func.return %y : {tensor(result)}", "}"]
    return "\n".join(lines)


def reshape(src: tuple[int, ...], dim: int, dst: tuple[int, ...]):
    return [(src, "f32", dim)], f"graph.reshape %a0 : {tensor(src)} -> {tensor(dst)}", dst


def reduce(kind: str, src: tuple[int, ...], dim: int, axes: list[int], keep: bool):
    kept = (
        tuple(1 if d in axes else s for d, s in enumerate(src))
        if keep
        else tuple(s for d, s in enumerate(src) if d not in axes)
    )
    attrs = f"axes = array<i64: {', '.join(map(str, axes))}>" + (", keepdims" if keep else "")
    return [(src, "f32", dim)], f"graph.reduce_{kind} %a0 {{{attrs}}} : {tensor(src)} -> {tensor(kept)}", kept


def gather(table: tuple[int, ...], table_dim, ids: tuple[int, ...], ids_dim, axis: int):
    out = (*table[:axis], *ids, *table[axis + 1 :])
    types = f"{tensor(table)}, {tensor(ids, 'i64')} -> {tensor(out)}"
    op = f"graph.gather %a0, %a1 {{axis = {axis} : i64}} : {types}"
    return [(table, "f32", table_dim), (ids, "i64", ids_dim)], op, out


LN = "{axis = -1 : i64, epsilon = 1.0e-05 : f64}"

SPLIT_DIM_CASES = {
    # reshapes that merge dims: the split dim leads its group (stays split) or does not (moves)
    "reshape_merge_split_dim0": reshape((8, 4, 6), 0, (32, 6)),
    "reshape_merge_split_dim1": reshape((8, 4, 6), 1, (8, 24)),
    "reshape_merge_split_inner_dim": reshape((8, 4, 6), 1, (32, 6)),
    # head splits: cores divide the heads (stays split) or not (resharded, never wrong)
    "reshape_heads_divide": reshape((2, 16, 64), 2, (2, 16, 4, 16)),
    "reshape_heads_do_not_divide": reshape((2, 16, 64), 2, (2, 16, 2, 32)),
    "reshape_merge_heads": reshape((2, 16, 4, 16), 2, (2, 16, 64)),
    "reshape_merge_heads_split_head_dim": reshape((2, 16, 4, 16), 3, (2, 16, 64)),
    # a contraction split from the user's annotations: partial products, one all_reduce,
    # then the bias once (not once per core)
    "matmul_contraction_split_with_bias": (
        [((4, 8), "f32", 1), ((8, 6), "f32", 0), ((6,), "f32", None)],
        f"graph.matmul %a0, %a1, %a2 : {tensor((4, 8))}, {tensor((8, 6))}, {tensor((6,))}"
        f" -> {tensor((4, 6))}",
        (4, 6),
    ),
    "conv_input_channels_split_with_bias": (
        [((2, 8, 6, 6), "f32", 1), ((4, 8, 3, 3), "f32", None), ((4,), "f32", None)],
        f"graph.conv %a0, %a1, %a2 {{group = 1 : i64}} : {tensor((2, 8, 6, 6))}, {tensor((4, 8, 3, 3))},"
        f" {tensor((4,))} -> {tensor((2, 4, 4, 4))}",
        (2, 4, 4, 4),
    ),
    "grouped_conv_channels_split": (
        [((2, 8, 6, 6), "f32", 1), ((8, 2, 3, 3), "f32", None)],
        f"graph.conv %a0, %a1 {{group = 4 : i64}} : {tensor((2, 8, 6, 6))}, {tensor((8, 2, 3, 3))}"
        f" -> {tensor((2, 8, 4, 4))}",
        (2, 8, 4, 4),
    ),
    "add_row_to_split_columns": (
        [((4, 8), "f32", 1), ((8,), "f32", None)],
        f"graph.add %a0, %a1 : {tensor((4, 8))}, {tensor((8,))} -> {tensor((4, 8))}",
        (4, 8),
    ),
    "mul_column_by_split_rows": (
        [((4, 8), "f32", 0), ((4, 1), "f32", None)],
        f"graph.mul %a0, %a1 : {tensor((4, 8))}, {tensor((4, 1))} -> {tensor((4, 8))}",
        (4, 8),
    ),
    "transpose_split_dim": (
        [((4, 8, 12), "f32", 1)],
        f"graph.transpose %a0 {{perm = array<i64: 2, 0, 1>}} : {tensor((4, 8, 12))} -> {tensor((12, 4, 8))}",
        (12, 4, 8),
    ),
    "gather_table_split_on_gathered_axis": gather((16, 8), 0, (2, 4), None, 0),
    "gather_table_split_on_other_axis": gather((16, 8), 1, (2, 4), None, 0),
    "gather_axis1_table_split_on_gathered_axis": gather((4, 8, 12), 1, (4,), None, 1),
    "gather_indices_split": gather((16, 8), None, (2, 8), 1, 0),
    "reduce_sum_split_dim": reduce("sum", (4, 8), 1, [1], False),
    "reduce_sum_split_dim_keepdims": reduce("sum", (4, 8, 4), 1, [1], True),
    "reduce_max_split_dim": reduce("max", (4, 8), 1, [1], False),
    "reduce_min_all_dims": reduce("min", (4, 8), 0, [0, 1], False),
    "reduce_prod_split_dim": reduce("prod", (4, 8), 0, [0], False),
    "reduce_mean_split_dim": reduce("mean", (4, 8), 1, [1], False),
    "reduce_sum_other_dim": reduce("sum", (4, 8), 1, [0], False),
    "softmax_split_axis": (
        [((4, 8), "f32", 1)],
        f"graph.softmax %a0 {{axis = -1 : i64}} : {tensor((4, 8))}",
        (4, 8),
    ),
    "layer_norm_split_normalised_dim": (
        [((2, 4, 8), "f32", 2), ((8,), "f32", None), ((8,), "f32", None)],
        f"graph.layer_norm %a0, %a1, %a2 {LN} : {tensor((2, 4, 8))}, {tensor((8,))}, {tensor((8,))}"
        f" -> {tensor((2, 4, 8))}",
        (2, 4, 8),
    ),
    "concat_split_axis": (
        [((4, 8), "f32", 1), ((4, 4), "f32", 1)],
        f"graph.concat %a0, %a1 {{axis = 1 : i64}} : ({tensor((4, 8))}, {tensor((4, 4))})"
        f" -> {tensor((4, 12))}",
        (4, 12),
    ),
    "slice_split_dim": (
        [((8, 6), "f32", 0)],
        f"graph.slice %a0 {{starts = array<i64: 2, 0>, steps = array<i64: 1, 1>}}"
        f" : {tensor((8, 6))} -> {tensor((4, 6))}",
        (4, 6),
    ),
    "strided_slice_split_dim": (
        [((8, 6), "f32", 0)],
        f"graph.slice %a0 {{starts = array<i64: 1, 0>, steps = array<i64: 2, 1>}}"
        f" : {tensor((8, 6))} -> {tensor((4, 6))}",
        (4, 6),
    ),
}
"""name -> (args as (shape, element, split dim), the op on %a0.., its result shape)."""


def partition_case(name: str, cores: int) -> tuple[ModuleOp, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(partitioned module, inputs, unsharded outputs) of one regression case."""
    return partition(SPLIT_DIM_CASES[name], cores, seed=sorted(SPLIT_DIM_CASES).index(name))


def partition(
    case, cores: int, seed: int = 0
) -> tuple[ModuleOp, dict[str, np.ndarray], dict[str, np.ndarray]]:
    text = one_op_case(cores, *case)
    module = parse_mlir(text)
    inputs = case_inputs(module, seed)
    want = run_module(parse_mlir(text), inputs)
    run_pipeline(module, [ShardPropagatePass(target="edge"), ShardPartitionPass()])
    return module, inputs, want


@pytest.mark.parametrize("cores", [2, 4])
@pytest.mark.parametrize("name", sorted(SPLIT_DIM_CASES))
def test_op_on_a_split_dim_computes_what_it_computes_unsharded(name: str, cores: int):
    module, inputs, want = partition_case(name, cores)
    assert not [op for op in module.walk() if isinstance(op, shard.ShardOp | shard.ShardingOp)]
    assert_every_core_matches(run_spmd(module, [inputs] * cores), want)


def the_op(module: ModuleOp, op_name: str) -> Any:
    """The one `op_name` op of `module` (typed Any: tests read its named operands)."""
    (op,) = [op for op in module.walk() if op.name == op_name]
    return op


def shape(value) -> tuple[int, ...]:
    return tuple(value.type.get_shape())


def test_reshape_keeps_a_leading_split_dim_split():
    module, _, _ = partition_case("reshape_merge_split_dim0", 4)
    op = the_op(module, "graph.reshape")
    assert (shape(op.input), shape(op.output)) == ((2, 4, 6), (8, 6))
    module, _, _ = partition_case("reshape_merge_split_dim1", 4)
    op = the_op(module, "graph.reshape")
    assert (shape(op.input), shape(op.output)) == ((8, 1, 6), (8, 6))


@pytest.mark.parametrize("name", ["reshape_merge_split_inner_dim", "reshape_merge_heads_split_head_dim"])
def test_reshape_never_keeps_a_split_inner_dim_split(name: str):
    """A split dim that is not the leading dim of its merged group would give each core a
    strided, not contiguous, part of the result: the operand is resharded first."""
    module, _, _ = partition_case(name, 4)
    op = the_op(module, "graph.reshape")
    (src, _, inner), *_ = SPLIT_DIM_CASES[name][0]
    assert shape(op.input)[inner] == src[inner]  # the inner dim is whole on every core


def test_reshape_splits_heads_when_the_cores_divide_them():
    module, _, _ = partition_case("reshape_heads_divide", 4)
    op = the_op(module, "graph.reshape")
    assert (shape(op.input), shape(op.output)) == ((2, 16, 16), (2, 16, 1, 16))
    assert collective_counts(module) == Counter({"all_slice": 1, "all_gather": 1})


def test_reshape_into_fewer_heads_than_cores_does_not_split_the_heads():
    """2 heads on 4 cores: the head dim cannot be split, so the reshape runs on another split
    (or whole); its per-core result never has a part of a head."""
    module, _, _ = partition_case("reshape_heads_do_not_divide", 4)
    op = the_op(module, "graph.reshape")
    assert shape(op.output)[2:] == (2, 32)


def test_transpose_moves_the_split_to_the_transposed_dim():
    module, _, _ = partition_case("transpose_split_dim", 4)
    op = the_op(module, "graph.transpose")
    assert (shape(op.input), shape(op.output)) == ((4, 2, 12), (12, 4, 2))


@pytest.mark.parametrize(
    "name", ["gather_table_split_on_gathered_axis", "gather_axis1_table_split_on_gathered_axis"]
)
def test_gather_never_gathers_from_a_table_split_on_its_gathered_axis(name: str):
    """Each core would only hold some of the rows the indices address: the table is first
    gathered, or moved to a split on another axis, so the gathered axis is whole."""
    module, _, _ = partition_case(name, 4)
    op = the_op(module, "graph.gather")
    table, axis = SPLIT_DIM_CASES[name][0][0][0], op.axis.value.data
    assert shape(op.input)[axis] == table[axis]
    assert collective_counts(module).keys() & {"all_gather", "all_to_all"}


def test_gather_keeps_split_indices_and_other_table_dims_split():
    module, _, _ = partition_case("gather_indices_split", 4)
    op = the_op(module, "graph.gather")
    assert (shape(op.indices), shape(op.output)) == ((2, 2), (2, 2, 8))
    module, _, _ = partition_case("gather_table_split_on_other_axis", 4)
    op = the_op(module, "graph.gather")
    assert (shape(op.input), shape(op.output)) == ((16, 2), (2, 4, 2))


LONG_REDUCTIONS = {
    "sum": reduce("sum", (4, 4096), 1, [1], False),
    "sum_keepdims": reduce("sum", (2, 4096, 2), 1, [1], True),
    "max": reduce("max", (4, 4096), 1, [1], False),
    "min_all_dims": reduce("min", (64, 256), 0, [0, 1], False),
    "prod": reduce("prod", (4, 4096), 1, [1], False),
}
"""Reductions of a long split dim to a small result: a partial reduction per core and an
all_reduce of the small result moves far less than gathering the operand (the small cases
above may rightly gather instead: for a few bytes, latency decides). `min_all_dims`
all-reduces a rank-0 tensor."""


@pytest.mark.parametrize("name", sorted(LONG_REDUCTIONS))
def test_reduction_over_a_split_dim_is_a_partial_then_all_reduce(name: str):
    case = LONG_REDUCTIONS[name]
    module, inputs, want = partition(case, 4)
    reduce_op: Any
    (reduce_op,) = [op for op in module.walk() if op.name.startswith("graph.reduce_")]
    (src, _, dim), *_ = case[0]
    assert shape(reduce_op.input)[dim] == src[dim] // 4  # each core reduces its part
    (all_reduce,) = [op for op in module.walk() if isinstance(op, shard.AllReduceOp)]
    assert all_reduce.kind == name.split("_")[0]
    assert_every_core_matches(run_spmd(module, [inputs] * 4), want)
    assert all_reduce.input == reduce_op.results[0]


@pytest.mark.parametrize(
    ("name", "op_name", "dim"),
    [
        ("softmax_split_axis", "graph.softmax", 1),
        ("layer_norm_split_normalised_dim", "graph.layer_norm", 2),
        ("reduce_mean_split_dim", "graph.reduce_mean", 1),
        ("concat_split_axis", "graph.concat", 1),
        ("slice_split_dim", "graph.slice", 0),
        ("strided_slice_split_dim", "graph.slice", 0),
    ],
)
def test_op_that_needs_a_whole_dim_gets_it_whole(name: str, op_name: str, dim: int):
    module, _, _ = partition_case(name, 4)
    op = the_op(module, op_name)
    assert shape(op.operands[0])[dim] == SPLIT_DIM_CASES[name][0][0][0][dim]


def test_contraction_split_adds_the_bias_once_after_the_all_reduce():
    module, _, _ = partition_case("matmul_contraction_split_with_bias", 4)
    matmul = the_op(module, "graph.matmul")
    assert [shape(v) for v in matmul.operands] == [(4, 2), (2, 6)]  # no bias on the partial product
    (all_reduce,) = [op for op in module.walk() if isinstance(op, shard.AllReduceOp)]
    assert all_reduce.input == matmul.output
    (add,) = [op for op in module.walk() if isinstance(op, graph.AddOp)]
    assert add.lhs == all_reduce.result


@pytest.mark.parametrize(("name", "dim"), [("add_row_to_split_columns", 1), ("mul_column_by_split_rows", 0)])
def test_broadcast_operand_follows_the_split(name: str, dim: int):
    """The small operand is sliced along the split dim it has (or kept whole when it is a
    broadcast size-1 dim); the elementwise op stays split."""
    module, _, _ = partition_case(name, 4)
    (op,) = [op for op in module.walk() if isinstance(op, graph.AddOp | graph.MulOp)]
    assert shape(op.results[0])[dim] == SPLIT_DIM_CASES[name][2][dim] // 4
