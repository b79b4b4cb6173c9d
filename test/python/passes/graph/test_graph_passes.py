"""Execution tests of the graph passes: each pass must change the IR and keep its results.

Every test runs a small module with the reference interpreter before and after a pass and
compares the outputs (within 1e-5 of the output magnitude); it also checks op counts, so a
pass that does nothing cannot pass.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
from xdsl.transforms.dead_code_elimination import DeadCodeElimination
from xdsl.utils.exceptions import PassFailedException

from aitc.analysis.graph_matching import shape_of
from aitc.dialects import graph
from aitc.interp.run import run_module
from aitc.ir import make_context, parse_mlir, print_mlir
from aitc.passes import pipelines
from aitc.passes.graph.graph_canonicalize import GraphCanonicalizePass, holds_every_value
from aitc.passes.graph.graph_fold_batch_norm import GraphFoldBatchNormPass
from aitc.passes.graph.graph_fold_constants import GraphFoldConstantsPass
from aitc.passes.graph.graph_fuse_bias_activation import GraphFuseBiasActivationPass
from aitc.passes.graph.graph_optimize import GraphOptimizePass
from aitc.passes.graph.graph_polyphase_conv import GraphPolyphaseConvPass
from aitc.passes.graph.graph_recognize_patterns import GraphRecognizePatternsPass
from aitc.passes.registry import ALL_PASSES
from aitc.passes.tile.plan_memory import PlanMemoryPass
from aitc.types import element_type_of
from aitc.weights import array_to_attr

RNG = np.random.default_rng(0)
CTX: Context = make_context()


def const(name: str, array: np.ndarray) -> str:
    """One `graph.constant` line holding `array` (inline or a resource, as array_to_attr picks)."""
    return f"%{name} = graph.constant {array_to_attr(np.asarray(array), name)}"


def rand(*shape: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    return RNG.uniform(low, high, shape).astype(np.float32)


def scalar(value: float) -> np.ndarray:
    return np.asarray(value, dtype=np.float32)


def module(args: str, result: str, body: list[str], ret: str) -> ModuleOp:
    lines = "\n  ".join(body)
    text = f"func.func @main({args}) -> {result} {{\n  {lines}\n  func.return {ret} : {result}\n}}\n"
    return parse_mlir(text)


def op_counts(m: ModuleOp) -> Counter[str]:
    return Counter(op.name for op in m.walk() if op.name.startswith("graph."))


def assert_same_outputs(before: dict[str, np.ndarray], after: dict[str, np.ndarray]) -> None:
    assert before.keys() == after.keys()
    for name, expected in before.items():
        scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
        np.testing.assert_allclose(after[name], expected, rtol=0, atol=1e-5 * scale, err_msg=name)


def check_pass(m: ModuleOp, pass_: ModulePass, inputs: list[np.ndarray]) -> tuple[Counter, Counter]:
    """Runs `pass_` on `m`, checks the outputs did not change and returns op counts (before, after)."""
    before_counts, expected = op_counts(m), run_module(m, inputs)
    pass_.apply(CTX, m)
    m.verify()
    assert_same_outputs(expected, run_module(m, inputs))
    return before_counts, op_counts(m)


# --------------------------------------------------------------------------- graph-fold-constants


def test_fold_constants_weight_preprocessing():
    """transpose(W) and a bias sum are computed once at compile time; x stays an input."""
    body = [
        const("w", rand(8, 16)),
        const("b0", rand(8)),
        const("b1", rand(8)),
        "%wt = graph.transpose %w {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>",
        "%b = graph.add %b0, %b1 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>",
        "%m = graph.matmul %x, %wt : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>",
        "%y = graph.add %m, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>",
    ]
    m = module("%x: tensor<4x16xf32>", "tensor<4x8xf32>", body, "%y")
    before, after = check_pass(m, GraphFoldConstantsPass(), [rand(4, 16)])
    assert before["graph.transpose"] == 1
    assert after["graph.transpose"] == 0
    assert after["graph.constant"] == 2
    assert after["graph.add"] == 1


def test_fold_constants_respects_max_bytes():
    body = [const("c", scalar(2.0)), "%y = graph.broadcast %c : tensor<f32> -> tensor<64x64xf32>"]
    m = module("", "tensor<64x64xf32>", body, "%y")
    _, after = check_pass(m, GraphFoldConstantsPass(max_bytes=1024), [])
    assert after["graph.broadcast"] == 1
    _, after = check_pass(m, GraphFoldConstantsPass(), [])
    assert after["graph.broadcast"] == 0
    assert "dense_resource<y_" in print_mlir(m)


# --------------------------------------------------------------------------- graph-canonicalize


def transpose(result: str, operand: str, perm: list[int], shape: list[int]) -> str:
    """A `graph.transpose` line; `shape` is the operand's shape."""
    out = [shape[p] for p in perm]
    return (
        f"%{result} = graph.transpose %{operand} {{perm = array<i64: {', '.join(map(str, perm))}>}} "
        f": tensor<{'x'.join(map(str, shape))}xf32> -> tensor<{'x'.join(map(str, out))}xf32>"
    )


def test_canonicalize_transpose_pairs_and_reshape_chains():
    body = [
        transpose("t1", "x", [0, 2, 3, 1], [2, 3, 4, 5]),
        transpose("t2", "t1", [0, 3, 1, 2], [2, 4, 5, 3]),
        transpose("t3", "t2", [1, 0, 2, 3], [2, 3, 4, 5]),
        transpose("t4", "t3", [0, 1, 3, 2], [3, 2, 4, 5]),
        "%r1 = graph.reshape %t4 : tensor<3x2x5x4xf32> -> tensor<6x20xf32>",
        "%r2 = graph.reshape %r1 : tensor<6x20xf32> -> tensor<120xf32>",
        "%r3 = graph.reshape %r2 : tensor<120xf32> -> tensor<2x60xf32>",
    ]
    m = module("%x: tensor<2x3x4x5xf32>", "tensor<2x60xf32>", body, "%r3")
    before, after = check_pass(m, GraphCanonicalizePass(), [rand(2, 3, 4, 5)])
    assert (before["graph.transpose"], after["graph.transpose"]) == (4, 1)
    assert (before["graph.reshape"], after["graph.reshape"]) == (3, 1)


@pytest.mark.parametrize("seed", range(20))
def test_canonicalize_random_transpose_pairs(seed: int):
    """Composed permutations agree with numpy for random pairs (identity or not)."""
    rng = np.random.default_rng(seed)
    shape = (2, 3, 4, 5)
    p1, p2 = [int(p) for p in rng.permutation(4)], [int(p) for p in rng.permutation(4)]
    mid = [shape[i] for i in p1]
    out = "x".join(str(mid[i]) for i in p2)
    body = [transpose("a", "x", p1, list(shape)), transpose("b", "a", p2, mid)]
    m = module("%x: tensor<2x3x4x5xf32>", f"tensor<{out}xf32>", body, "%b")
    _, after = check_pass(m, GraphCanonicalizePass(), [rand(*shape)])
    assert after["graph.transpose"] <= 1


def test_canonicalize_neutral_elements_and_casts():
    body = [
        const("zero", np.zeros(8, np.float32)),
        const("one", scalar(1.0)),
        "%a = graph.add %x, %zero : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>",
        "%b = graph.mul %one, %a : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>",
        "%c = graph.cast %b : tensor<4x8xf32> -> tensor<4x8xf64>",
        "%d = graph.cast %c : tensor<4x8xf64> -> tensor<4x8xf32>",
        "%e = graph.slice %d {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} "
        ": tensor<4x8xf32> -> tensor<4x8xf32>",
        "%y = graph.cast %e : tensor<4x8xf32> -> tensor<4x8xi32>",
    ]
    m = module("%x: tensor<4x8xf32>", "tensor<4x8xi32>", body, "%y")
    _, after = check_pass(m, GraphCanonicalizePass(), [rand(4, 8, low=-50, high=50)])
    assert after == Counter({"graph.cast": 1})


@pytest.mark.parametrize(
    ("src", "mid", "expected"),
    [
        (np.int8, np.int32, True),
        (np.uint8, np.int16, True),
        (np.int16, np.float32, True),
        (np.int32, np.float32, False),
        (np.int32, np.float64, True),
        (np.float16, np.float32, True),
        (np.float32, np.float16, False),
        (np.float32, np.int64, False),
        (np.int8, np.uint32, False),
        (np.int64, np.bool_, False),
        (np.bool_, np.int8, True),
    ],
)
def test_lossless_cast_table(src, mid, expected):
    assert holds_every_value(element_type_of(src), element_type_of(mid)) is expected


# --------------------------------------------------------------------------- graph-fuse-bias-activation


def test_fuse_matmul_bias_gelu():
    body = [
        const("w", rand(16, 8)),
        const("bias", rand(1, 8)),
        "%m = graph.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>",
        "%a = graph.add %bias, %m : tensor<1x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>",
        "%y = graph.gelu %a : tensor<4x8xf32>",
    ]
    m = module("%x: tensor<4x16xf32>", "tensor<4x8xf32>", body, "%y")
    _, after = check_pass(m, GraphFuseBiasActivationPass(), [rand(4, 16)])
    assert after == Counter({"graph.constant": 2, "graph.matmul": 1})
    matmul = next(op for op in m.walk() if isinstance(op, graph.MatMulOp))
    assert matmul.bias is not None
    assert matmul.activation is not None
    assert matmul.activation.data == "gelu"


def test_fuse_conv_bias_relu6_with_existing_bias():
    body = [
        const("w", rand(4, 3, 3, 3)),
        const("b0", rand(4)),
        const("b1", rand(1, 4, 1, 1)),
        "%c = graph.conv %x, %w, %b0 {pads = array<i64: 1, 1, 1, 1>} "
        ": tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<1x4x6x6xf32>",
        "%a = graph.add %c, %b1 : tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32> -> tensor<1x4x6x6xf32>",
        "%y = graph.clip %a {alpha = 0.0 : f64, beta = 6.0 : f64} : tensor<1x4x6x6xf32>",
    ]
    m = module("%x: tensor<1x3x6x6xf32>", "tensor<1x4x6x6xf32>", body, "%y")
    _, after = check_pass(m, GraphFuseBiasActivationPass(), [rand(1, 3, 6, 6, low=-8, high=8)])
    assert after == Counter({"graph.constant": 2, "graph.conv": 1})


def test_fuse_skips_multi_use():
    body = [
        const("w", rand(16, 8)),
        "%m = graph.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>",
        "%r = graph.relu %m : tensor<4x8xf32>",
        "%y = graph.add %r, %m : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>",
    ]
    m = module("%x: tensor<4x16xf32>", "tensor<4x8xf32>", body, "%y")
    before, after = check_pass(m, GraphFuseBiasActivationPass(), [rand(4, 16)])
    assert before == after


# --------------------------------------------------------------------------- graph-fold-batch-norm


def conv_bn_relu_body(prefix: str = "") -> list[str]:
    return [
        const(f"{prefix}w", rand(4, 3, 3, 3)),
        const(f"{prefix}cb", rand(4)),
        const(f"{prefix}s", rand(4, low=0.5, high=2.0)),
        const(f"{prefix}b", rand(4)),
        const(f"{prefix}mean", rand(4)),
        const(f"{prefix}var", rand(4, low=0.1, high=2.0)),
        f"%{prefix}c = graph.conv %x, %{prefix}w, %{prefix}cb {{pads = array<i64: 1, 1, 1, 1>}} "
        ": tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<1x4x6x6xf32>",
        f"%{prefix}n = graph.batch_norm %{prefix}c, %{prefix}s, %{prefix}b, %{prefix}mean, %{prefix}var "
        "{epsilon = 1.0e-05 : f64} : tensor<1x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, "
        "tensor<4xf32> -> tensor<1x4x6x6xf32>",
        f"%{prefix}r = graph.relu %{prefix}n : tensor<1x4x6x6xf32>",
    ]


def test_fold_batch_norm_conv_bn_relu():
    m = module("%x: tensor<1x3x6x6xf32>", "tensor<1x4x6x6xf32>", conv_bn_relu_body(), "%r")
    inputs = [rand(1, 3, 6, 6)]
    before, after = check_pass(m, GraphFoldBatchNormPass(), inputs)
    assert before["graph.batch_norm"] == 1
    assert after["graph.batch_norm"] == 0
    assert after["graph.conv"] == 1
    assert after["graph.relu"] == 1
    _, fused = check_pass(m, GraphFuseBiasActivationPass(), inputs)
    assert fused == Counter({"graph.constant": 2, "graph.conv": 1})


# --------------------------------------------------------------------------- graph-polyphase-conv


def _tensor(shape: Sequence[int]) -> str:
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def _conv_module(
    x: Sequence[int],
    w: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    extra: str = "",
    seed: int = 0,
) -> tuple[ModuleOp, list[np.ndarray]]:
    """One conv (input shape `x`, constant weight `w` and bias, `strides`, ONNX `pads`, more
    attributes `extra`, dilation from `extra` too) and an input for it."""
    rng = np.random.default_rng(seed)
    rank = len(x) - 2
    dilation = 2 if "dilations" in extra else 1
    spans = [dilation * (k - 1) + 1 for k in w[2:]]
    out = [
        x[0],
        w[0],
        *((x[2 + i] + pads[i] + pads[rank + i] - spans[i]) // strides[i] + 1 for i in range(rank)),
    ]
    stride_list, pad_list = ", ".join(map(str, strides)), ", ".join(map(str, pads))
    attrs = f"strides = array<i64: {stride_list}>, pads = array<i64: {pad_list}>"
    body = [
        const("w", rng.uniform(-1, 1, w).astype(np.float32)),
        const("b", rng.uniform(-1, 1, w[0]).astype(np.float32)),
        f"%y = graph.conv %x, %w, %b {{{attrs}{extra}}} : {_tensor(x)}, {_tensor(w)}, {_tensor(w[:1])} "
        f"-> {_tensor(out)}",
    ]
    m = module(f"%x: {_tensor(x)}", _tensor(out), body, "%y")
    return m, [rng.uniform(-1, 1, x).astype(np.float32)]


@pytest.mark.parametrize(
    ("x", "w", "strides", "pads", "extra", "phases"),
    [
        ((1, 4, 9, 9), (6, 4, 3, 3), (2, 2), (1, 1, 1, 1), ', activation = "relu"', 4),  # ResNet's 3x3 s2
        ((1, 3, 12, 12), (5, 3, 7, 7), (2, 2), (3, 3, 3, 3), "", 4),  # the stem
        ((2, 4, 8, 7), (3, 4, 3, 2), (2, 3), (0, 1, 1, 0), "", 4),  # mixed strides, uneven pads
        ((1, 4, 9, 9), (6, 4, 1, 1), (2, 2), (0, 0, 0, 0), "", 1),  # 1x1 s2: one phase
        ((1, 4, 10), (2, 4, 4), (3,), (1, 2), "", 3),  # 1-D, stride 3
        ((1, 4, 6, 6), (8, 2, 3, 3), (2, 2), (1, 1, 1, 1), ", group = 2 : i64", 4),  # grouped
        ((1, 2, 9, 9), (2, 2, 2, 2), (4, 4), (0, 0, 0, 0), "", 4),  # stride above the kernel
    ],
)
def test_polyphase_conv_sums_stride_1_convs_over_the_phases(x, w, strides, pads, extra, phases: int):
    """The strided conv becomes `phases` slices and stride-1 convs summed by adds (a relu
    after the sum), with the conv's results; a single phase is bit for bit the same."""
    m, inputs = _conv_module(x, w, strides, pads, extra)
    expected = run_module(m, inputs)
    GraphPolyphaseConvPass(min_channels=1).apply(CTX, m)
    m.verify()
    counts = op_counts(m)
    assert counts["graph.conv"] == counts["graph.slice"] == phases
    assert counts["graph.add"] == phases - 1
    assert counts["graph.relu"] == ("relu" in extra)
    assert all(op.window()[0] == (1,) * (len(x) - 2) for op in m.walk() if isinstance(op, graph.ConvOp))
    got = run_module(m, inputs)
    if phases == 1:
        assert all(np.array_equal(got[k], expected[k]) for k in expected)
    assert_same_outputs(expected, got)


@pytest.mark.parametrize(
    ("channels", "strides", "extra"),
    [
        (16, (1, 1), ""),  # stride 1
        (16, (2, 2), ", dilations = array<i64: 2, 2>"),  # dilated
        (16, (2, 2), ', activation = "sigmoid"'),  # not relu: it cannot follow the sum
        (8, (2, 2), ""),  # fewer input channels than min-channels (16)
    ],
)
def test_polyphase_conv_keeps_other_convs(channels: int, strides, extra: str):
    m, _ = _conv_module((1, channels, 9, 9), (4, channels, 3, 3), strides, (1, 1, 1, 1), extra)
    before = print_mlir(m)
    GraphPolyphaseConvPass().apply(CTX, m)
    assert print_mlir(m) == before


@pytest.mark.parametrize(
    ("x", "w", "strides", "pads", "kernel"),
    [
        ((1, 3, 16, 16), (8, 3, 7, 7), (2, 2), (3, 3, 3, 3), (4, 4)),  # ResNet's stem
        ((2, 4, 6, 9), (5, 4, 3, 4), (2, 3), (1, 1, 1, 2), (2, 2)),  # two strides, uneven pads
        ((1, 2, 12), (3, 2, 5), (3,), (2, 2), (2,)),  # 1-D
    ],
)
def test_polyphase_conv_stacks_the_phases_of_a_conv_with_few_channels(x, w, strides, pads, kernel):
    """Fewer input channels than min-channels: space-to-depth (reshape, transpose, reshape)
    and one stride-1 conv over stride-product x C channels with the `kernel` the phases span."""
    m, inputs = _conv_module(x, w, strides, pads, ', activation = "relu"')
    expected = run_module(m, inputs)
    GraphPolyphaseConvPass().apply(CTX, m)
    m.verify()
    counts = op_counts(m)
    assert counts["graph.conv"] == counts["graph.transpose"] == 1
    assert counts["graph.reshape"] == 2
    (conv,) = (op for op in m.walk() if isinstance(op, graph.ConvOp))
    assert shape_of(conv.weight)[1:] == (x[1] * math.prod(strides), *kernel)
    assert conv.window()[0] == (1,) * len(kernel)
    assert_same_outputs(expected, run_module(m, inputs))


@settings(max_examples=40, deadline=None)
@given(rank=st.integers(1, 2), data=st.data())
def test_polyphase_conv_on_random_windows(rank: int, data):
    """Random kernels, strides (up to 3, above the kernel too), pads and sizes: the sum over
    the phases, or the stacked conv (2 channels < min-channels 16, where it applies), equals
    the strided conv."""
    kernel = [data.draw(st.integers(1, 4)) for _ in range(rank)]
    strides = [data.draw(st.integers(1, 3)) for _ in range(rank)]
    begins = [data.draw(st.integers(0, k - 1)) for k in kernel]
    ends = [data.draw(st.integers(0, k - 1)) for k in kernel]
    sizes = [
        data.draw(st.integers(max(1, k - b - e), 9)) for k, b, e in zip(kernel, begins, ends, strict=True)
    ]
    m, inputs = _conv_module(
        (1, 2, *sizes), (3, 2, *kernel), strides, begins + ends, seed=data.draw(st.integers(0, 99))
    )
    expected = run_module(m, inputs)
    GraphPolyphaseConvPass(min_channels=1).apply(CTX, m)
    m.verify()
    assert_same_outputs(expected, run_module(m, inputs))


# --------------------------------------------------------------------------- graph-recognize-patterns

TORCH_GELU = [
    const("sqrt2", scalar(1.4142135381698608)),
    const("one", scalar(1.0)),
    const("half", scalar(0.5)),
    "%d = graph.div %x, %sqrt2 : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>",
    "%e = graph.erf %d : tensor<4x8xf32>",
    "%p = graph.add %e, %one : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>",
    "%q = graph.mul %x, %p : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>",
    "%y = graph.mul %q, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>",
]

TANH_GELU = [
    const("three", scalar(3.0)),
    const("k", scalar(0.044715)),
    const("c", scalar(math.sqrt(2 / math.pi))),
    const("one", scalar(1.0)),
    const("half", scalar(0.5)),
    "%p = graph.pow %x, %three : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>",
    "%q = graph.mul %p, %k : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>",
    "%i = graph.add %x, %q : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>",
    "%s = graph.mul %i, %c : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>",
    "%t = graph.tanh %s : tensor<4x8xf32>",
    "%a = graph.add %t, %one : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>",
    "%h = graph.mul %x, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>",
    "%y = graph.mul %h, %a : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>",
]


@pytest.mark.parametrize(("body", "mode"), [(TORCH_GELU, None), (TANH_GELU, "tanh")])
def test_recognize_gelu(body: list[str], mode: str | None):
    m = module("%x: tensor<4x8xf32>", "tensor<4x8xf32>", body, "%y")
    _, after = check_pass(m, GraphRecognizePatternsPass(), [rand(4, 8, low=-4, high=4)])
    assert after == Counter({"graph.gelu": 1})
    gelu = next(op for op in m.walk() if isinstance(op, graph.GeluOp))
    assert (gelu.approximate.data if gelu.approximate else None) == mode


def layer_norm_body(x: str = "x", width: int = 16) -> list[str]:
    """Decomposed LayerNorm over the last axis of a 2x{width} tensor, as torch exports it at opset 13."""
    t, r = f"tensor<2x{width}xf32>", "tensor<2x1xf32>"
    return [
        const("gamma", rand(width, low=0.5, high=1.5)),
        const("beta", rand(width)),
        const("two", scalar(2.0)),
        const("eps", scalar(1e-5)),
        f"%mean = graph.reduce_mean %{x} {{axes = array<i64: 1>, keepdims}} : {t} -> {r}",
        f"%sub = graph.sub %{x}, %mean : {t}, {r} -> {t}",
        f"%sq = graph.pow %sub, %two : {t}, tensor<f32> -> {t}",
        f"%var = graph.reduce_mean %sq {{axes = array<i64: 1>, keepdims}} : {t} -> {r}",
        f"%ve = graph.add %var, %eps : {r}, tensor<f32> -> {r}",
        f"%sd = graph.sqrt %ve : {r}",
        f"%n = graph.div %sub, %sd : {t}, {r} -> {t}",
        f"%sc = graph.mul %n, %gamma : {t}, tensor<{width}xf32> -> {t}",
        f"%ln = graph.add %sc, %beta : {t}, tensor<{width}xf32> -> {t}",
    ]


def test_recognize_layer_norm():
    m = module("%x: tensor<2x16xf32>", "tensor<2x16xf32>", layer_norm_body(), "%ln")
    _, after = check_pass(m, GraphRecognizePatternsPass(), [rand(2, 16, low=-3, high=3)])
    assert after == Counter({"graph.layer_norm": 1, "graph.constant": 2})
    norm = next(op for op in m.walk() if isinstance(op, graph.LayerNormOp))
    assert norm.epsilon is not None
    assert math.isclose(norm.epsilon.value.data, 1e-5, rel_tol=1e-6)


def test_recognize_skips_wrong_constant():
    body = [line.replace("dense<5.000000e-01>", "dense<6.000000e-01>") for line in TORCH_GELU]
    assert body != TORCH_GELU
    m = module("%x: tensor<4x8xf32>", "tensor<4x8xf32>", body, "%y")
    before, after = check_pass(m, GraphRecognizePatternsPass(), [rand(4, 8)])
    assert before == after


# --------------------------------------------------------------------------- cse / dce / pipeline


def test_xdsl_cse_and_dce_on_graph_ops():
    body = [
        const("c1", rand(8)),
        "%a = graph.add %x, %c1 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>",
        "%b = graph.add %x, %c1 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>",
        "%dead = graph.exp %b : tensor<4x8xf32>",
        "%y = graph.mul %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>",
    ]
    m = module("%x: tensor<4x8xf32>", "tensor<4x8xf32>", body, "%y")
    _, after = check_pass(m, CommonSubexpressionElimination(), [rand(4, 8)])
    assert after["graph.add"] == 1
    m = module("%x: tensor<4x8xf32>", "tensor<4x8xf32>", body, "%y")
    _, after = check_pass(m, DeadCodeElimination(), [rand(4, 8)])
    assert after["graph.exp"] == 0
    assert after["graph.add"] == 2


def test_graph_optimize_small_model():
    """conv+BN+relu -> flatten -> matmul+bias -> decomposed GELU -> decomposed LayerNorm."""
    gelu = [line.replace("4x8", "2x16") for line in TORCH_GELU]
    gelu = [line.replace("%x", "%h").replace("%y", "%g") for line in gelu]
    body = [
        *conv_bn_relu_body("bn_"),
        "%f1 = graph.reshape %bn_r : tensor<1x4x6x6xf32> -> tensor<144xf32>",
        "%f2 = graph.reshape %f1 : tensor<144xf32> -> tensor<2x72xf32>",
        const("fw", rand(72, 16, low=-0.2, high=0.2)),
        const("fb", rand(16)),
        "%mm = graph.matmul %f2, %fw : tensor<2x72xf32>, tensor<72x16xf32> -> tensor<2x16xf32>",
        "%h = graph.add %mm, %fb : tensor<2x16xf32>, tensor<16xf32> -> tensor<2x16xf32>",
        *gelu,
        *layer_norm_body("g"),
    ]
    m = module("%x: tensor<1x3x6x6xf32>", "tensor<2x16xf32>", body, "%ln")
    _, after = check_pass(m, GraphOptimizePass(), [rand(1, 3, 6, 6)])
    assert after == Counter(
        {"graph.constant": 6, "graph.conv": 1, "graph.reshape": 1, "graph.matmul": 1, "graph.layer_norm": 1}
    )
    activations = {
        op.activation.data if op.activation else None
        for op in m.walk()
        if isinstance(op, graph.MatMulOp | graph.ConvOp)
    }
    assert activations == {"relu", "gelu"}


def test_pipeline_spec_round_trips():
    """`pipeline_spec` prints what `-p` parses back into equal passes, options included."""
    for passes in (
        pipelines.graph_optimize_pipeline(),
        pipelines.lowering_pipeline(depth=3, optimize=False, host_fallback=False),
        pipelines.with_target(pipelines.lowering_pipeline(), "edge"),
    ):
        assert pipelines.parse_pipeline(pipelines.pipeline_spec(passes)) == passes
    assert (
        pipelines.pipeline_spec([GraphFoldConstantsPass(max_bytes=4)]) == "graph-fold-constants{max_bytes=4}"
    )


@dataclass(frozen=True)
class BreakTypesPass(ModulePass):
    """Test only: makes the IR invalid (a matmul with an unknown fused activation)."""

    name = "test-break-types"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        matmul = next(o for o in op.walk() if isinstance(o, graph.MatMulOp))
        matmul.attributes["activation"] = StringAttr("swish")


def test_run_pipeline_names_the_pass_that_broke_the_ir():
    matmul = "%y = graph.matmul %x, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>"
    m = module("%x: tensor<4x4xf32>", "tensor<4x4xf32>", [matmul], "%y")
    with pytest.raises(PassFailedException, match=r"^test-break-types: the IR is invalid after this pass"):
        pipelines.run_pipeline(m, [GraphCanonicalizePass(), BreakTypesPass(), GraphCanonicalizePass()], CTX)


def test_run_pipeline_verifying_once_names_every_pass_of_the_stage():
    """verify="end": the IR is verified after the last pass, and a failure names the passes of
    the list and the flag that finds the one."""
    matmul = "%y = graph.matmul %x, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>"
    m = module("%x: tensor<4x4xf32>", "tensor<4x4xf32>", [matmul], "%y")
    passes = [GraphCanonicalizePass(), BreakTypesPass(), GraphCanonicalizePass()]
    expected = (
        r"^graph-canonicalize, test-break-types, graph-canonicalize: "
        r"the IR is invalid after these passes \(--verify-each"
    )
    with pytest.raises(PassFailedException, match=expected):
        pipelines.run_pipeline(m, passes, CTX, verify="end")
    m = module("%x: tensor<4x4xf32>", "tensor<4x4xf32>", [matmul], "%y")
    seconds = pipelines.run_pipeline(m, pipelines.graph_optimize_pipeline(), CTX, verify="end")
    assert [name for name, _ in seconds] == [p.name for p in pipelines.graph_optimize_pipeline()]


def test_run_pipeline_times_every_pass_and_names_a_failing_one():
    matmul = "%y = graph.matmul %x, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>"
    m = module("%x: tensor<4x4xf32>", "tensor<4x4xf32>", [matmul], "%y")
    seconds = pipelines.run_pipeline(m, pipelines.graph_optimize_pipeline(), CTX)
    assert [name for name, _ in seconds] == [p.name for p in pipelines.graph_optimize_pipeline()]
    assert all(s >= 0 for _, s in seconds)
    with pytest.raises(PassFailedException, match=r"^plan-memory: no target"):
        pipelines.run_pipeline(m, [GraphCanonicalizePass(), PlanMemoryPass()], CTX)


# --------------------------------------------------------------------------- conventions


@pytest.mark.parametrize("key", sorted(ALL_PASSES))
def test_registry_conventions(key: str):
    """Registry key == pass name; the docstring has a summary line and the three sections."""
    pass_class = ALL_PASSES[key]()
    assert pass_class.name == key
    doc = pass_class.__doc__ or ""
    assert doc.strip()
    assert not doc.startswith("\n")
    for heading in ("Input:", "Output:", "Invariants:"):
        assert f"\n    {heading}\n" in doc, f"{key}: missing '{heading}'"
