"""`aitc.spmd.specialize`: one core's copy of a per-core function. An all_slice with a halo
becomes a graph.slice of the core's widened part, clipped to the value; the fill past the
value's ends becomes the padding of the window op that reads it when that padding is the
fill (a conv's zeros, a max pool's -inf), or a graph.pad of the fill for any other user.
Every core's specialized function computes what the SPMD function computes on that core."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType

from aitc.dialects import graph, shard
from aitc.interp.run import entry_function, run_module
from aitc.interp.shard import run_spmd
from aitc.ir import parse_mlir
from aitc.spmd.specialize import specialize

RNG = np.random.default_rng(7)

ADD = """
shard.grid @g(shape = 4)
func.func @main(%x: tensor<2x16xf32> {graph.name = "x"}) -> (tensor<2x7xf32> {graph.name = "y"}) {
  %h = shard.all_slice %x on @g grid_axes = [0] slice_axis = 1 halo = [2, 1]
    : tensor<2x16xf32> -> tensor<2x7xf32>
  %y = graph.add %h, %h : tensor<2x7xf32>, tensor<2x7xf32> -> tensor<2x7xf32>
  func.return %y : tensor<2x7xf32>
}
"""

CONV = """
shard.grid @g(shape = 2)
func.func @main(%x: tensor<1x2x8x8xf32> {graph.name = "x"}) -> (tensor<1x3x4x8xf32> {graph.name = "y"}) {
  %w = graph.constant dense<[[[[0.5, -1.0, 0.25]]], [[[1.0, 2.0, -0.5]]], [[[0.1, 0.2, 0.3]]]]>
    : tensor<3x1x1x3xf32>
  %wb = graph.broadcast %w : tensor<3x1x1x3xf32> -> tensor<3x2x3x3xf32>
  %h = shard.all_slice %x on @g grid_axes = [0] slice_axis = 2 halo = [1, 1]
    : tensor<1x2x8x8xf32> -> tensor<1x2x6x8xf32>
  %y = graph.conv %h, %wb {pads = array<i64: 0, 1, 0, 1>}
    : tensor<1x2x6x8xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x4x8xf32>
  func.return %y : tensor<1x3x4x8xf32>
}
"""


MAX_POOL = """
shard.grid @g(shape = 2)
func.func @main(%x: tensor<1x2x8x8xf32> {graph.name = "x"}) -> (tensor<1x2x2x4xf32> {graph.name = "y"}) {
  %h = shard.all_slice %x on @g grid_axes = [0] slice_axis = 2 halo = [1, 0] fill = "-inf"
    : tensor<1x2x8x8xf32> -> tensor<1x2x5x8xf32>
  %y = graph.max_pool %h
    {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 1, 0, 1>}
    : tensor<1x2x5x8xf32> -> tensor<1x2x2x4xf32>
  func.return %y : tensor<1x2x2x4xf32>
}
"""

LOWEST = """
shard.grid @g(shape = 4)
func.func @main(%x: tensor<2x16xf32> {graph.name = "x"}) -> (tensor<2x6xf32> {graph.name = "y"}) {
  %h = shard.all_slice %x on @g grid_axes = [0] slice_axis = 1 halo = [1, 1] fill = "-inf"
    : tensor<2x16xf32> -> tensor<2x6xf32>
  %y = graph.max %h, %h : tensor<2x6xf32>, tensor<2x6xf32> -> tensor<2x6xf32>
  func.return %y : tensor<2x6xf32>
}
"""


@pytest.mark.parametrize(
    ("text", "cores"),
    [(ADD, 4), (CONV, 2), (MAX_POOL, 2), (LOWEST, 4)],
    ids=["pad", "conv-padding", "max-pool-padding", "pad-lowest"],
)
def test_each_cores_copy_computes_its_spmd_result(text: str, cores: int):
    (argument,) = entry_function(parse_mlir(text)).function_type.inputs.data
    assert isinstance(argument, TensorType)
    inputs = {"x": RNG.standard_normal(argument.get_shape()).astype(np.float32)}
    spmd = run_spmd(parse_mlir(text), [inputs] * cores)
    for core in range(cores):
        module = parse_mlir(text)
        specialize(entry_function(module), core)
        ops = list(entry_function(module).body.block.ops)
        assert not any(isinstance(op, shard.AllSliceOp) for op in ops)
        outer = core in (0, cores - 1)
        if text in (ADD, LOWEST):  # the fill past an end: a graph.pad on the outer cores
            pads = [op for op in ops if isinstance(op, graph.PadOp)]
            assert bool(pads) == outer
            fill = float("-inf") if text is LOWEST else 0.0
            assert all((pad.value.value.data if pad.value else 0.0) == fill for pad in pads)
        else:  # the window op pads the clipped rows instead (its padding is the fill)
            window = next(op for op in ops if isinstance(op, graph.ConvOp | graph.MaxPoolOp))
            _, pads, _ = window.window()
            top = 1 if core == 0 else 0
            bottom = 0 if text is MAX_POOL else 1 - top
            assert (pads[0], pads[2]) == (top, bottom)
        for op in list(module.walk()):
            if isinstance(op, shard.GridOp):
                op.detach()
                op.erase()
        got = run_module(module, inputs)
        np.testing.assert_allclose(got["y"], spmd[core]["y"], rtol=1e-6, atol=1e-6)
