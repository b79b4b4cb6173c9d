"""shard-propagate + shard-partition on random CNN chains: convolutions (kernel 1, 3 or 5,
stride 1 or 2, dilation 1 or 2, "same" or random padding, grouped/depthwise, fused relu),
relus, residual adds, batch norms and non-overlapping max pools, batch 1 and 2, on 2 and 4
cores with every strategy. `sp` splits a conv's output rows, reading its input with a halo
(`shard.all_slice ... halo`); every core's outputs equal the unsharded ones."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aitc.passes.shard.planner import STRATEGIES

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


STEPS = (conv, conv, conv, relu, residual, batch_norm, max_pool)


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
