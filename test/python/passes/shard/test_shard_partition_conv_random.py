"""shard-propagate + shard-partition on random CNN chains: convolutions (kernel 1, 3 or 5,
stride 1 or 2, dilation 1 or 2, "same" or random padding, grouped/depthwise, fused relu),
relus, residual adds, batch norms, non-overlapping max pools and padded 3x3 max and average
pools, batch 1 and 2, on 2 and 4 cores with every strategy. `sp` splits a conv's or pool's
output rows, reading its input with a halo (`shard.all_slice ... halo`, filled past the ends
with the op's padding); every core's outputs equal the unsharded ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aitc.dialects import graph
from aitc.interp.run import entry_function, random_inputs, run_module
from aitc.interp.shard import run_spmd
from aitc.ir import parse_mlir
from aitc.passes.runner import run_pipeline
from aitc.passes.shard.planner import STRATEGIES
from aitc.passes.shard.shard_partition import ShardPartitionPass
from aitc.passes.shard.shard_propagate import ShardPropagatePass
from aitc.passes.shard.shard_simplify import ShardSimplifyPass

from .test_shard_partition_random import Chain, assert_partition_matches, tensor

TOLERANCE = 1e-4


def ints(values) -> str:
    return f"array<i64: {', '.join(map(str, values))}>"


def conv(draw, chain: Chain) -> None:
    x, (n, c, h, w) = chain.last
    kernel = draw(st.sampled_from([1, 3, 3, 5]))
    stride = draw(st.sampled_from([1, 1, 2])) if h % 2 == 0 and h >= 8 else 1
    dilation = draw(st.sampled_from([1, 1, 2])) if kernel > 1 else 1
    extent = dilation * (kernel - 1) + 1
    if draw(st.integers(0, 3)):  # "same": input rows = stride x output rows
        top, bottom = extent // 2, extent - 1 - extent // 2 - (stride - 1 if extent > 1 else 0)
        bottom = max(bottom, 0)
    else:
        top, bottom = draw(st.integers(0, extent - 1)), draw(st.integers(0, extent - 1))
    out_h = (h + top + bottom - extent) // stride + 1
    out_w = (w + top + bottom - extent) // stride + 1
    if out_h < 1 or out_w < 1:
        return
    group = c if draw(st.integers(0, 3)) == 0 else 1
    out_c = c if group > 1 else draw(st.sampled_from([4, 8]))
    weight = chain.constant((out_c, c // group, kernel, kernel))
    operands, types = [x, weight], [tensor((n, c, h, w)), tensor((out_c, c // group, kernel, kernel))]
    if draw(st.booleans()):
        operands.append(chain.constant((out_c,)))
        types.append(tensor((out_c,)))
    attrs = [
        f"pads = {ints([top, top, bottom, bottom])}",
        f"strides = {ints([stride, stride])}",
        f"dilations = {ints([dilation, dilation])}",
        f"group = {group} : i64",
    ]
    if draw(st.booleans()):
        attrs.append('activation = "relu"')
    out = (n, out_c, out_h, out_w)
    chain.add(
        f"graph.conv {', '.join(operands)} {{{', '.join(attrs)}}} : {', '.join(types)} -> {tensor(out)}", out
    )


def relu(draw, chain: Chain) -> None:
    x, shape = chain.last
    chain.add(f"graph.relu {x} : {tensor(shape)}", shape)


def residual(draw, chain: Chain) -> None:
    x, shape = chain.last
    same = [name for name, s in chain.values[:-1] if s == shape]
    if same:
        other = draw(st.sampled_from(same))
        chain.add(f"graph.add {x}, {other} : {tensor(shape)}, {tensor(shape)} -> {tensor(shape)}", shape)


def batch_norm(draw, chain: Chain) -> None:
    x, shape = chain.last
    c = shape[1]
    scale, bias, mean = (chain.constant((c,)) for _ in range(3))
    var = f"%var{len(chain.lines)}"
    chain.lines.append(f"  {var} = graph.constant dense<1.5> : {tensor((c,))}")
    operands = ", ".join([x, scale, bias, mean, var])
    types = ", ".join([tensor(shape), *[tensor((c,))] * 4])
    chain.add(f"graph.batch_norm {operands} {{epsilon = 1.0e-05 : f64}} : {types} -> {tensor(shape)}", shape)


def max_pool(draw, chain: Chain) -> None:
    x, (n, c, h, w) = chain.last
    if h % 2 or w % 2 or h < 4:
        return
    out = (n, c, h // 2, w // 2)
    attrs = f"kernel_shape = {ints([2, 2])}, strides = {ints([2, 2])}"
    chain.add(f"graph.max_pool {x} {{{attrs}}} : {tensor((n, c, h, w))} -> {tensor(out)}", out)


def overlapping_pool(draw, chain: Chain) -> None:
    """A 3x3 pool, stride 1 or 2, padded by 1 ("same" or ResNet's stem pool): max, or average
    counting its padding or not. Split along rows it reads a halo whose fill is its padding
    (-inf for max; zeros counted for average); the one that does not count its padding keeps
    its rows whole. The chain may have negative values here (no relu before), so a zero fill
    in place of -inf shows."""
    x, (n, c, h, w) = chain.last
    stride = draw(st.sampled_from([1, 2])) if h % 2 == 0 and w % 2 == 0 else 1
    out = (n, c, h // stride, w // stride)
    kind = draw(st.sampled_from(["max_pool", "avg_pool", "avg_pool counting"]))
    attrs = f"kernel_shape = {ints([3, 3])}, strides = {ints([stride, stride])}, pads = {ints([1, 1, 1, 1])}"
    if kind.endswith("counting"):
        attrs += ", count_include_pad"
    op = kind.split()[0]
    chain.add(f"graph.{op} {x} {{{attrs}}} : {tensor((n, c, h, w))} -> {tensor(out)}", out)


STEPS = (conv, conv, conv, relu, residual, batch_norm, max_pool, overlapping_pool)


@st.composite
def cnns(draw) -> str:
    shape = (
        draw(st.sampled_from([1, 1, 2])),
        draw(st.sampled_from([3, 4])),
        *[draw(st.sampled_from([8, 16]))] * 2,
    )
    chain = Chain(np.random.default_rng(draw(st.integers(0, 2**16))), [("%x", shape)])
    conv(draw, chain)
    for _ in range(draw(st.integers(1, 5))):
        draw(st.sampled_from(STEPS))(draw, chain)
    return chain.text([chain.last])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=cnns(), cores=st.sampled_from([2, 4]), strategy=st.sampled_from(STRATEGIES))
def test_random_cnn_partitioned_computes_what_it_computes_unsharded(text: str, cores: int, strategy: str):
    assert_partition_matches(text, cores, strategy)


@pytest.mark.parametrize("cores", [2, 4])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("kind", ["max_pool", "avg_pool counting"])
def test_a_padded_pool_split_by_rows_fills_its_halo_with_its_padding(kind: str, stride: int, cores: int):
    """conv (no relu: negative values) -> 3x3 pool padded by 1, large enough that sp splits
    the pool's rows: its halo past the ends must be its padding (-inf for max: zeros there
    would win over negative rows; zeros for an average that counts them)."""
    chain = Chain(np.random.default_rng(stride * 10 + cores), [("%x", (1, 4, 64, 64))])
    weight = chain.constant((8, 4, 3, 3))
    conv_types = f"{tensor((1, 4, 64, 64))}, {tensor((8, 4, 3, 3))} -> {tensor((1, 8, 64, 64))}"
    chain.add(f"graph.conv %x, {weight} {{pads = {ints([1, 1, 1, 1])}}} : {conv_types}", (1, 8, 64, 64))
    op, *counting = kind.split()
    attrs = f"kernel_shape = {ints([3, 3])}, strides = {ints([stride, stride])}, pads = {ints([1, 1, 1, 1])}"
    attrs += ", count_include_pad" if counting else ""
    out = (1, 8, 64 // stride, 64 // stride)
    chain.add(f"graph.{op} {chain.last[0]} {{{attrs}}} : {tensor((1, 8, 64, 64))} -> {tensor(out)}", out)
    module = parse_mlir(chain.text([chain.last]))
    inputs = random_inputs(entry_function(module))
    (want,) = run_module(module, inputs).values()
    run_pipeline(module, [ShardPropagatePass(strategy="sp", cores=cores, target="edge")])
    pool = next(o for o in module.walk() if isinstance(o, graph.PoolOp))
    assert "split output rows (halo 1+" in str(pool.attributes["shard.plan"])
    run_pipeline(module, [ShardPartitionPass(), ShardSimplifyPass()])
    for outputs in run_spmd(module, [inputs] * cores):
        (got,) = outputs.values()
        np.testing.assert_allclose(got, want, rtol=TOLERANCE, atol=TOLERANCE)
