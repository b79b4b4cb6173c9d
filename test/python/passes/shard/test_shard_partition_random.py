"""shard-propagate + shard-partition on random graphs: chains of matmuls by weights and of
activations (x @ x^T), elementwise ops (with broadcast operands and values reused from earlier in the chain),
transposes, reshapes that merge and split dims, softmax and reduce_sum, with random shapes
(dims multiples of 2 and 3), on 2 and 4 cores with strategies tp, sp and dp. Every core's
outputs equal the unsharded ones."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from aitc.interp.run import entry_function, random_inputs, run_module
from aitc.interp.shard import run_spmd
from aitc.ir import parse_mlir, print_mlir
from aitc.passes.runner import run_pipeline
from aitc.passes.shard.planner import STRATEGIES
from aitc.passes.shard.shard_partition import ShardPartitionPass
from aitc.passes.shard.shard_propagate import ShardPropagatePass
from aitc.passes.shard.shard_simplify import ShardSimplifyPass

TOLERANCE = 1e-4
"""Max |partitioned - unsharded| relative to max |unsharded|."""

DIMS = (4, 8, 4, 8, 12, 16, 2, 6, 3)
"""Dim sizes, mostly multiples of 4 so that 4 cores have something to split."""


def tensor(shape: tuple[int, ...]) -> str:
    return f"tensor<{''.join(f'{s}x' for s in shape)}f32>"


def dense(values: np.ndarray) -> str:
    """A dense literal with every element written out (a splat would hide mixed-up columns)."""

    def nested(a: np.ndarray) -> str:
        if a.ndim == 1:
            return "[" + ", ".join(f"{float(v):.6e}" for v in a) + "]"
        return "[" + ", ".join(nested(row) for row in a) + "]"

    return f"dense<{nested(values)}>"


@dataclass
class Chain:
    """A function built one op at a time: `values` are (SSA name, shape) in order."""

    rng: np.random.Generator
    values: list[tuple[str, tuple[int, ...]]]
    lines: list[str] = field(default_factory=list)

    @property
    def last(self) -> tuple[str, tuple[int, ...]]:
        return self.values[-1]

    def fresh(self) -> str:
        return f"%v{len(self.values)}"

    def add(self, line: str, shape: tuple[int, ...]) -> None:
        name = self.fresh()
        self.lines.append(f"  {name} = {line}")
        self.values.append((name, shape))

    def constant(self, shape: tuple[int, ...]) -> str:
        name = f"%c{len(self.lines)}"
        data = self.rng.uniform(-1, 1, shape).astype(np.float32)
        self.lines.append(f"  {name} = graph.constant {dense(data)} : {tensor(shape)}")
        return name

    def text(self, outputs: list[tuple[str, tuple[int, ...]]]) -> str:
        (x, shape) = self.values[0]
        results = ", ".join(tensor(s) for _, s in outputs)
        names = ", ".join(n for n, _ in outputs)
        head = f"func.func @main({x}: {tensor(shape)}) -> ({results}) {{"
        return "\n".join([head, *self.lines, f"  func.return {names} : {results}", "}"])


def matmul(draw, chain: Chain) -> None:
    x, shape = chain.last
    if len(shape) < 2:
        return
    n = draw(st.sampled_from(DIMS))
    weight = chain.constant((shape[-1], n))
    out = (*shape[:-1], n)
    operands, types = [x, weight], [tensor(shape), tensor((shape[-1], n))]
    if draw(st.booleans()):
        operands.append(chain.constant((n,)))
        types.append(tensor((n,)))
    attrs = ' {activation = "relu"}' if draw(st.booleans()) else ""
    chain.add(f"graph.matmul {', '.join(operands)}{attrs} : {', '.join(types)} -> {tensor(out)}", out)


def scores(draw, chain: Chain) -> None:
    """x @ x^T over the last two dims (attention scores): a matmul of two activations."""
    x, shape = chain.last
    if len(shape) < 2:
        return
    rank = len(shape)
    perm = [*range(rank - 2), rank - 1, rank - 2]
    swapped = (*shape[:-2], shape[-1], shape[-2])
    attr = ", ".join(map(str, perm))
    chain.add(
        f"graph.transpose {x} {{perm = array<i64: {attr}>}} : {tensor(shape)} -> {tensor(swapped)}", swapped
    )
    t, out = chain.last[0], (*shape[:-1], shape[-2])
    chain.add(f"graph.matmul {x}, {t} : {tensor(shape)}, {tensor(swapped)} -> {tensor(out)}", out)


def unary(draw, chain: Chain) -> None:
    x, shape = chain.last
    op = draw(st.sampled_from(["tanh", "relu", "neg", "sigmoid"]))
    chain.add(f"graph.{op} {x} : {tensor(shape)}", shape)


def binary(draw, chain: Chain) -> None:
    """The last value with an earlier value of its shape, or with a broadcast constant (a
    row over the last dim, or a column over the first)."""
    x, shape = chain.last
    same = [name for name, s in chain.values[:-1] if s == shape]
    kinds = ["row", "column"] + (["earlier"] * 2 if same else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "earlier":
        other, other_shape = draw(st.sampled_from(same)), shape
    elif kind == "row":
        other_shape = shape[-1:]
        other = chain.constant(other_shape)
    else:
        other_shape = (shape[0], *([1] * (len(shape) - 1)))
        other = chain.constant(other_shape)
    op = draw(st.sampled_from(["add", "mul", "sub", "max"]))
    chain.add(f"graph.{op} {x}, {other} : {tensor(shape)}, {tensor(other_shape)} -> {tensor(shape)}", shape)


def transpose(draw, chain: Chain) -> None:
    x, shape = chain.last
    perm = draw(st.permutations(range(len(shape))))
    out = tuple(shape[p] for p in perm)
    attr = ", ".join(map(str, perm))
    chain.add(f"graph.transpose {x} {{perm = array<i64: {attr}>}} : {tensor(shape)} -> {tensor(out)}", out)


def reshape(draw, chain: Chain) -> None:
    """Merges two adjacent dims, or splits one into two factors (heads)."""
    x, shape = chain.last
    d: int
    splittable = [d for d, s in enumerate(shape) if any(s % f == 0 for f in (2, 3) if f < s)]
    merge = len(shape) > 2 and (len(shape) >= 4 or not splittable or draw(st.booleans()))
    if merge:
        d = draw(st.integers(0, len(shape) - 2))
        out = (*shape[:d], shape[d] * shape[d + 1], *shape[d + 2 :])
    elif splittable:
        d = draw(st.sampled_from(splittable))
        factor = draw(st.sampled_from([f for f in (2, 3, 4, 6) if shape[d] % f == 0 and f < shape[d]]))
        out = (*shape[:d], factor, shape[d] // factor, *shape[d + 1 :])
    else:
        return
    chain.add(f"graph.reshape {x} : {tensor(shape)} -> {tensor(out)}", out)


def normalise(draw, chain: Chain) -> None:
    """softmax over one axis, or reduce_sum over one axis (keeping it or not)."""
    x, shape = chain.last
    axis = draw(st.integers(0, len(shape) - 1))
    if draw(st.booleans()):
        chain.add(f"graph.softmax {x} {{axis = {axis} : i64}} : {tensor(shape)}", shape)
        return
    if len(shape) < 2:
        return
    keep = draw(st.booleans())
    out = (
        tuple(1 if d == axis else s for d, s in enumerate(shape))
        if keep
        else shape[:axis] + shape[axis + 1 :]
    )
    attrs = f"axes = array<i64: {axis}>" + (", keepdims" if keep else "")
    chain.add(f"graph.reduce_sum {x} {{{attrs}}} : {tensor(shape)} -> {tensor(out)}", out)


STEPS = (matmul, matmul, scores, unary, binary, binary, transpose, reshape, reshape, normalise)


@st.composite
def graphs(draw) -> str:
    """A random graph function (as text) whose ops take their operands' shapes as they come."""
    rank = draw(st.integers(2, 3))
    shape = tuple(draw(st.sampled_from(DIMS)) for _ in range(rank))
    chain = Chain(np.random.default_rng(draw(st.integers(0, 2**16))), [("%x", shape)])
    for _ in range(draw(st.integers(2, 7))):
        draw(st.sampled_from(STEPS))(draw, chain)
    outputs = [chain.last]
    if len(chain.values) > 2 and draw(st.booleans()):  # an intermediate result leaves too
        outputs.append(draw(st.sampled_from(chain.values[1:-1])))
    return chain.text(outputs)


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    diff = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if want.size else 0.0
    return diff / scale if scale > 0 else diff


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=graphs(), cores=st.sampled_from([2, 4]), strategy=st.sampled_from(STRATEGIES))
def test_random_graph_partitioned_computes_what_it_computes_unsharded(text: str, cores: int, strategy: str):
    assert_partition_matches(text, cores, strategy)


def assert_partition_matches(text: str, cores: int, strategy: str) -> None:
    """shard-propagate (`strategy`, `cores` of edge), -partition and -simplify on the function
    `text`: every core's outputs equal the unsharded ones (shapes, TOLERANCE)."""
    note(text)
    module = parse_mlir(text)
    inputs = random_inputs(entry_function(module))
    want = run_module(module, inputs)
    run_pipeline(
        module,
        [
            ShardPropagatePass(strategy=strategy, cores=cores, target="edge"),
            ShardPartitionPass(),
            ShardSimplifyPass(),
        ],
    )
    note(print_mlir(module))
    for core, outputs in enumerate(run_spmd(module, [inputs] * cores)):
        for name, expected in want.items():
            assert outputs[name].shape == expected.shape, f"core {core}, {name}"
            error = relative_error(outputs[name], expected)
            assert error <= TOLERANCE, f"core {core}, {name}: relative error {error:.2e}"
