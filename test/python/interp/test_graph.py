"""Reference semantics details of the graph interpreter that the model tests would not notice."""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation

from aitc.dialects import graph
from aitc.interp.graph import KERNELS
from aitc.interp.run import run_module
from aitc.ir import parse_mlir

LAYER_NORM_EPSILON_0 = """
func.func @main(%x: tensor<2x4xf32>, %g: tensor<4xf32>) -> tensor<2x4xf32> {
  %y = graph.layer_norm %x, %g {axis = -1 : i64, epsilon = 0.0 : f64}
    : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
"""


def test_an_explicit_zero_epsilon_is_zero_not_the_default():
    """Attributes holding 0 / 0.0 are falsy in xDSL: presence must be tested with `is not None`."""
    x = np.array([[1, 2, 3, 4], [0, 0, 0, 1e-3]], np.float32)
    gamma = np.ones(4, np.float32)
    [y] = run_module(parse_mlir(LAYER_NORM_EPSILON_0), [x, gamma]).values()
    centered = x - x.mean(-1, keepdims=True)
    expected = centered / np.sqrt((centered**2).mean(-1, keepdims=True))
    np.testing.assert_allclose(y, expected, rtol=1e-5)


# Graph ops that deliberately have no reference kernel, each with the reason (none today).
WITHOUT_KERNEL: dict[type[Operation], str] = {}


def test_every_graph_op_has_a_reference_kernel():
    """The interpreter, constant folding and the frontend's shape folding all run KERNELS: a new
    graph op without an entry there (or a reason in WITHOUT_KERNEL) would be silently unsupported."""
    ops = set(graph.Graph.operations)
    missing = sorted(op.__name__ for op in ops - KERNELS.keys() - WITHOUT_KERNEL.keys())
    assert not missing, f"graph ops without a kernel in aitc/interp/graph.py KERNELS: {missing}"
    stale = sorted(op.__name__ for op in KERNELS.keys() - ops)
    assert not stale, f"KERNELS entries that are not graph ops: {stale}"
