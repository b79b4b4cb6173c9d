"""Python API of the graph dialect: builders infer result types, verifiers reject bad IR with
a VerifyException (and nothing else), and every op docstring's ```mlir example is valid IR."""

from __future__ import annotations

import glob
import re
import shutil
import subprocess
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float16Type,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from aitc.dialects import graph
from aitc.ir import make_context, parse_mlir, print_mlir

Shape = Sequence[int]
f16 = Float16Type()
i32 = IntegerType(32)


def t(shape: Shape, elem: Attribute = f32) -> TensorType:
    return TensorType(elem, list(shape))


def args(*types: TensorType) -> tuple[SSAValue, ...]:
    """SSA values of the given types (block arguments, as a function's parameters would be)."""
    return tuple(Block(arg_types=types).args)


def ints(*values: int):
    return graph.ints_attr(values)


# --------------------------------------------------------------------------- builders


@pytest.mark.parametrize(
    ("lhs", "rhs", "expected"),
    [
        ((2, 3), (2, 3), (2, 3)),
        ((2, 3), (3,), (2, 3)),
        ((4, 1), (1, 5), (4, 5)),
        ((), (2, 3), (2, 3)),
        ((), (), ()),
        ((8, 1, 6, 1), (7, 1, 5), (8, 7, 6, 5)),
    ],
)
def test_binary_builder_broadcasts(lhs: Shape, rhs: Shape, expected: Shape):
    a, b = args(t(lhs), t(rhs))
    op = graph.AddOp(a, b)
    assert op.output.type == t(expected)
    op.verify()


def test_comparison_builder_gives_i1():
    a, b = args(t((2, 3), i32), t((3,), i32))
    op = graph.LessOp(a, b)
    assert op.output.type == t((2, 3), i1)
    op.verify()


def test_binary_builder_rejects_incompatible_shapes():
    a, b = args(t((2, 3)), t((4,)))
    with pytest.raises(ValueError, match="do not broadcast"):
        graph.MulOp(a, b)


@pytest.mark.parametrize(
    ("lhs", "rhs", "expected"),
    [
        ((4, 8), (8, 5), (4, 5)),
        ((8, 128, 64), (64, 32), (8, 128, 32)),
        ((2, 1, 4, 8), (3, 8, 5), (2, 3, 4, 5)),
        ((8,), (8, 5), (5,)),
        ((3, 8), (8,), (3,)),
        ((5, 3, 8), (8,), (5, 3)),
        ((8,), (2, 8, 5), (2, 5)),
        ((8,), (8,), ()),
    ],
)
def test_matmul_infer(lhs: Shape, rhs: Shape, expected: Shape):
    a, b = args(t(lhs), t(rhs))
    assert graph.MatMulOp.infer(a, b) == t(expected)
    op = graph.MatMulOp(a, b)
    assert op.output.type == t(expected)
    op.verify()


@pytest.mark.parametrize(
    ("lhs", "rhs", "message"),
    [
        ((4, 8), (6, 5), "contraction dims differ"),
        ((), (8,), "rank >= 1"),
        ((2, 4, 8), (3, 8, 5), "do not broadcast"),
    ],
)
def test_matmul_infer_rejects(lhs: Shape, rhs: Shape, message: str):
    a, b = args(t(lhs), t(rhs))
    with pytest.raises(ValueError, match=message):
        graph.MatMulOp.infer(a, b)


def conv(x: Shape, w: Shape, out: Shape = (1,), bias: Shape | None = None, /, **attrs: Attribute):
    values = args(t(x), t(w), *([t(bias)] if bias is not None else []))
    return graph.ConvOp(
        operands=[values[0], values[1], list(values[2:])], result_types=[t(out)], attributes=attrs
    )


@pytest.mark.parametrize(
    ("x", "w", "attrs", "expected"),
    [
        ((1, 3, 32, 32), (16, 3, 3, 3), {}, (1, 16, 30, 30)),
        ((1, 3, 32, 32), (16, 3, 3, 3), {"pads": ints(1, 1, 1, 1)}, (1, 16, 32, 32)),
        ((1, 3, 32, 32), (16, 3, 3, 3), {"strides": ints(2, 2)}, (1, 16, 15, 15)),
        ((1, 3, 32, 32), (16, 3, 3, 3), {"strides": ints(2, 1), "pads": ints(0, 1, 1, 0)}, (1, 16, 16, 31)),
        ((2, 8, 10, 10), (8, 1, 3, 3), {"group": IntegerAttr(8, i64), "dilations": ints(2, 2)}, (2, 8, 6, 6)),
        (
            (1, 4, 9),
            (6, 2, 3),
            {"group": IntegerAttr(2, i64), "pads": ints(0, 1), "strides": ints(2)},
            (1, 6, 4),
        ),
        ((1, 2, 4, 4, 4), (3, 2, 2, 2, 2), {}, (1, 3, 3, 3, 3)),
    ],
)
def test_conv_inferred_type(x: Shape, w: Shape, attrs: dict[str, Attribute], expected: Shape):
    op = conv(x, w, expected, **attrs)
    assert op.inferred_type() == t(expected)
    op.verify()


def pool(
    op_class: type[graph.PoolOp], x: Shape, kernel: Shape, out: Shape = (1,), **attrs: Attribute
) -> graph.PoolOp:
    (value,) = args(t(x))
    attributes = {"kernel_shape": ints(*kernel), **attrs}
    return op_class(operands=[value], result_types=[t(out)], attributes=attributes)


@pytest.mark.parametrize(
    ("x", "attrs", "expected"),
    [
        ((1, 2, 5, 5), {"strides": ints(2, 2)}, (1, 2, 2, 2)),
        ((1, 2, 5, 5), {"strides": ints(2, 2), "ceil_mode": UnitAttr()}, (1, 2, 3, 3)),
        ((1, 2, 4, 4), {"strides": ints(2, 2), "ceil_mode": UnitAttr()}, (1, 2, 2, 2)),
        # ceil_mode never starts a window in the end padding: 4 + 1 pad, stride 2 gives 2, not 3.
        (
            (1, 2, 4, 4),
            {"strides": ints(2, 2), "pads": ints(0, 0, 1, 1), "ceil_mode": UnitAttr()},
            (1, 2, 2, 2),
        ),
        (
            (1, 2, 6, 6),
            {"strides": ints(2, 2), "pads": ints(1, 1, 1, 1), "ceil_mode": UnitAttr()},
            (1, 2, 4, 4),
        ),
        ((1, 2, 6, 6), {"pads": ints(1, 1, 1, 1)}, (1, 2, 7, 7)),
    ],
)
@pytest.mark.parametrize("op_class", [graph.MaxPoolOp, graph.AvgPoolOp])
def test_pool_inferred_type(
    op_class: type[graph.PoolOp], x: Shape, attrs: dict[str, Attribute], expected: Shape
):
    op = pool(op_class, x, (2, 2), expected, **attrs)
    assert op.inferred_type() == t(expected)
    op.verify()


def test_other_builders_infer_result_types():
    x, c, s = args(t((2, 3)), t((2, 3), i1), t(()))
    built: list[tuple[IRDLOperation, TensorType]] = [
        (graph.WhereOp(c, x, s), t((2, 3))),
        (graph.TransposeOp(x, [1, 0]), t((3, 2))),
        (graph.ConcatOp([x, x, x], 0), t((6, 3))),
        (graph.ReshapeOp(x, [3, 2]), t((3, 2))),
        (graph.CastOp(x, i32), t((2, 3), i32)),
        (graph.SoftmaxOp(x, -1), t((2, 3))),
        (graph.ExpOp(x), t((2, 3))),
        (graph.LeakyReluOp(x, alpha=0.1), t((2, 3))),
        (graph.ConstantOp(DenseIntOrFPElementsAttr.from_list(TensorType(f32, [2]), [1.0, 2.0])), t((2,))),
    ]
    for op, expected in built:
        assert op.results[0].type == expected, op.name
        op.verify()


# --------------------------------------------------------------------------- verifiers


def _bad_ops() -> dict[str, tuple[Callable[[], Operation], str]]:
    """id -> (builder of an op that breaks exactly one rule, expected message regex)."""
    x23, x3, x4, b3 = args(t((2, 3)), t((3,)), t((4,)), t((3,), i1))
    img, w = args(t((1, 3, 8, 8)), t((8, 3, 3, 3)))
    return {
        "broadcast": (lambda: graph.AddOp.create(operands=[x23, x4], result_types=[t((2, 4))]), "broadcast"),
        "binary result": (
            lambda: graph.AddOp.create(operands=[x23, x3], result_types=[t((3,))]),
            r"should be tensor<2x3xf32>",
        ),
        "element types": (
            lambda: graph.SubOp.create(operands=[x3, args(t((3,), f16))[0]], result_types=[t((3,))]),
            "element types differ",
        ),
        "where condition": (
            lambda: graph.WhereOp.create(operands=[x3, x3, x3], result_types=[t((3,))]),
            "condition must be an i1",
        ),
        "logical on float": (
            lambda: graph.AndOp.create(operands=[x3, x3], result_types=[t((3,))]),
            "i1 operands",
        ),
        "compare result": (
            lambda: graph.EqualOp.create(operands=[x3, x3], result_types=[t((3,))]),
            r"should be tensor<3xi1>",
        ),
        "not on float": (lambda: graph.NotOp.create(operands=[x3], result_types=[t((3,))]), "i1 tensor"),
        "exp on int": (
            lambda: graph.ExpOp(args(t((3,), i32))[0]),
            "needs a float tensor",
        ),
        "gelu mode": (
            lambda: graph.GeluOp(x3, {"approximate": StringAttr("fast")}),
            "approximate must be 'none' or 'tanh'",
        ),
        "fused activation": (
            lambda: graph.MatMulOp.create(
                operands=[x23, args(t((3, 4)))[0]],
                result_types=[t((2, 4))],
                attributes={"activation": StringAttr("swish")},
            ),
            "unknown fused activation 'swish'",
        ),
        "matmul bias": (
            lambda: graph.MatMulOp.create(operands=[x23, args(t((3, 4)))[0], x3], result_types=[t((2, 4))]),
            r"bias must be tensor<4xf32>",
        ),
        "conv group": (
            lambda: conv((1, 6, 8, 8), (8, 2, 3, 3), (1, 8, 6, 6), group=IntegerAttr(4, i64)),
            "group 4 must divide",
        ),
        "conv channels": (lambda: conv((1, 3, 8, 8), (8, 4, 3, 3), (1, 8, 6, 6)), "expects 4 input channels"),
        "conv pads length": (
            lambda: conv((1, 3, 8, 8), (8, 3, 3, 3), (1, 8, 8, 8), pads=ints(1, 1)),
            "pads needs 4 values",
        ),
        "conv result": (
            lambda: graph.ConvOp(operands=[img, w, []], result_types=[t((1, 8, 8, 8))]),
            r"should be tensor<1x8x6x6xf32>",
        ),
        "conv float strides": (
            lambda: conv(
                (1, 3, 8, 8),
                (8, 3, 3, 3),
                (1, 8, 6, 6),
                strides=graph.DenseArrayBase.from_list(f32, [1.0, 1.0]),
            ),
            r"array<i64: \.\.\.>",
        ),
        "pool ceil result": (
            lambda: pool(
                graph.MaxPoolOp, (1, 2, 5, 5), (2, 2), (1, 2, 2, 2), strides=ints(2, 2), ceil_mode=UnitAttr()
            ),
            r"should be tensor<1x2x3x3xf32>",
        ),
        "layer_norm scale": (
            lambda: graph.LayerNormOp(
                operands=[args(t((2, 8)))[0], args(t((2,)))[0], []], result_types=[t((2, 8))]
            ),
            "must broadcast to the normalised dims 8",
        ),
        "softmax axis": (lambda: graph.SoftmaxOp(x23, 2), "axis 2 is out of range for rank 2"),
        "reduce axes unsorted": (
            lambda: graph.ReduceSumOp.create(
                operands=[x23], result_types=[t(())], attributes={"axes": ints(1, 0)}
            ),
            "sorted and unique",
        ),
        "reduce axes range": (
            lambda: graph.ReduceSumOp.create(
                operands=[x23], result_types=[t((2,))], attributes={"axes": ints(2)}
            ),
            "out of range",
        ),
        "reshape count": (lambda: graph.ReshapeOp(x23, [4, 2]), "element count: 6 -> 8"),
        "transpose perm": (
            lambda: graph.TransposeOp.create(
                operands=[x23], result_types=[t((2, 2))], attributes={"perm": ints(0, 0)}
            ),
            "not a permutation",
        ),
        "concat mismatch": (
            lambda: graph.ConcatOp.create(
                operands=[x23, args(t((3, 3)))[0]],
                result_types=[t((2, 6))],
                attributes={"axis": IntegerAttr(1, i64)},
            ),
            "differ outside axis 1",
        ),
        "slice range": (
            lambda: graph.SliceOp.create(
                operands=[x23], result_types=[t((2, 2))], attributes={"starts": ints(0, 2)}
            ),
            r"leave \[0, 3\)",
        ),
        "split sizes": (
            lambda: graph.SplitOp.create(operands=[x23], result_types=[t((1, 3)), t((2, 3))]),
            "pieces sum to 3 along axis 0, input has 2",
        ),
        "gather indices": (
            lambda: graph.GatherOp.create(operands=[x23, b3], result_types=[t((3, 3))]),
            "indices must be an integer tensor",
        ),
        "constant type": (
            lambda: graph.ConstantOp.create(
                attributes={"value": DenseIntOrFPElementsAttr.from_list(TensorType(f32, [2]), [1.0, 2.0])},
                result_types=[t((3,))],
            ),
            "differs from result type",
        ),
        "dynamic shape": (lambda: graph.ReluOp(args(TensorType(f32, [-1, 4]))[0]), "static shapes"),
    }


BAD_OPS = _bad_ops()


@pytest.mark.parametrize("case", sorted(BAD_OPS))
def test_verifier_rejects(case: str):
    build, message = BAD_OPS[case]
    with pytest.raises(VerifyException, match=message):
        build().verify()


_small = st.integers(min_value=-1, max_value=5)
_dims = st.lists(st.integers(min_value=0, max_value=6), min_size=0, max_size=5)


@settings(max_examples=300, deadline=None)
@given(
    x=_dims,
    w=_dims,
    strides=st.none() | st.lists(_small, max_size=4),
    pads=st.none() | st.lists(_small, max_size=6),
    dilations=st.none() | st.lists(_small, max_size=4),
    group=st.none() | _small,
)
def test_conv_verifier_never_crashes(x, w, strides, pads, dilations, group):
    """Whatever the shapes and options, the verifier either accepts or raises VerifyException."""
    attrs: dict[str, Attribute] = {
        key: ints(*value)
        for key, value in (("strides", strides), ("pads", pads), ("dilations", dilations))
        if value is not None
    }
    if group is not None:
        attrs["group"] = IntegerAttr(group, i64)
    op = conv(x, w, (1,), **attrs)
    try:
        op.verify()
    except VerifyException:
        pass


@settings(max_examples=300, deadline=None)
@given(
    x=_dims,
    kernel=st.lists(_small, max_size=4),
    strides=st.none() | st.lists(_small, max_size=4),
    pads=st.none() | st.lists(_small, max_size=6),
    ceil=st.booleans(),
)
def test_pool_verifier_never_crashes(x, kernel, strides, pads, ceil):
    attrs: dict[str, Attribute] = {"ceil_mode": UnitAttr()} if ceil else {}
    if strides is not None:
        attrs["strides"] = ints(*strides)
    if pads is not None:
        attrs["pads"] = ints(*pads)
    try:
        pool(graph.AvgPoolOp, x, kernel, (1,), **attrs).verify()
    except VerifyException:
        pass


@settings(max_examples=300, deadline=None)
@given(
    x=_dims,
    out=_dims,
    starts=st.none() | st.lists(_small, max_size=5),
    steps=st.none() | st.lists(_small, max_size=5),
)
def test_slice_verifier_never_crashes(x, out, starts, steps):
    attrs = {key: ints(*v) for key, v in (("starts", starts), ("steps", steps)) if v is not None}
    (value,) = args(t(x))
    try:
        graph.SliceOp.create(operands=[value], result_types=[t(out)], attributes=attrs).verify()
    except VerifyException:
        pass


@settings(max_examples=300, deadline=None)
@given(
    shapes=st.lists(_dims, min_size=1, max_size=3),
    out=st.lists(_dims, min_size=0, max_size=3),
    axis=_small,
    op_kind=st.sampled_from(["concat", "split", "matmul", "gather", "reduce", "transpose", "layer_norm"]),
)
def test_shape_verifiers_never_crash(shapes, out, axis, op_kind):
    values = args(*(t(s) for s in shapes))
    first = values[0]
    other = values[1] if len(values) > 1 else first
    results = [t(s) for s in out] or [t(())]
    axis_attr = {"axis": IntegerAttr(axis, i64)}
    builders: dict[str, Callable[[], Operation]] = {
        "concat": lambda: graph.ConcatOp.create(
            operands=list(values), result_types=results[:1], attributes=axis_attr
        ),
        "split": lambda: graph.SplitOp.create(operands=[first], result_types=results, attributes=axis_attr),
        "matmul": lambda: graph.MatMulOp.create(operands=[first, other], result_types=results[:1]),
        "gather": lambda: graph.GatherOp.create(
            operands=[first, args(t(shapes[-1], i64))[0]], result_types=results[:1], attributes=axis_attr
        ),
        "reduce": lambda: graph.ReduceMeanOp.create(
            operands=[first], result_types=results[:1], attributes={"axes": ints(*[axis] * len(out))}
        ),
        "transpose": lambda: graph.TransposeOp.create(
            operands=[first], result_types=results[:1], attributes={"perm": ints(*[axis] * len(out))}
        ),
        "layer_norm": lambda: graph.LayerNormOp(
            operands=[first, other, []], result_types=[first.type], attributes=axis_attr
        ),
    }
    try:
        builders[op_kind]().verify()
    except VerifyException:
        pass


# --------------------------------------------------------------------------- docstring examples


def _graph_ops() -> list[type[Operation]]:
    return list(graph.Graph.operations)


def _example(op: type[Operation]) -> str:
    found = re.search(r"```mlir\n(.*?)```", op.__doc__ or "", re.DOTALL)
    assert found, f"{op.__name__} has no ```mlir example"
    return textwrap.dedent(found.group(1))


def _free_values(text: str) -> dict[str, Attribute]:
    """The SSA values an example uses without defining, with the types its ops give them.

    Parsing the ops alone leaves each such use as a typed forward reference; those types become
    the parameters of the wrapping function.
    """
    parser = Parser(make_context(), text, "<docstring>")
    while parser.parse_optional_operation() is not None:
        pass
    return {name: refs[0].type for name, refs in parser.forward_ssa_references.items()}


@pytest.mark.parametrize("op", _graph_ops(), ids=lambda op: op.name)
def test_docstring_example_is_valid_ir(op: type[Operation]):
    """Each example, wrapped in a function taking its free values, parses and verifies."""
    example = _example(op)
    params = ", ".join(f"%{name}: {type_}" for name, type_ in _free_values(example).items())
    body = textwrap.indent(example, "  ")
    module = parse_mlir(f"func.func @example({params}) {{\n{body}  func.return\n}}\n", op.__name__)
    used = {inner.name for inner in module.walk()}
    assert op.name in used, f"the example of {op.__name__} does not use {op.name}"


def test_docstring_examples_cover_dense_resource():
    """The constant's example is the one place that shows the out-of-line weight syntax."""
    assert "dense_resource<" in _example(graph.ConstantOp)


# --------------------------------------------------------------------------- upstream MLIR


def _upstream_mlir_opt() -> str | None:
    """An installed upstream `mlir-opt` (Debian names it mlir-opt-NN), or None."""
    found = shutil.which("mlir-opt")
    versioned = sorted(glob.glob("/usr/bin/mlir-opt-[0-9]*") + glob.glob("/usr/lib/llvm-*/bin/mlir-opt"))
    return found or (versioned[-1] if versioned else None)


@pytest.mark.skipif(_upstream_mlir_opt() is None, reason="upstream mlir-opt is not installed")
def test_generic_form_is_accepted_by_upstream_mlir_opt():
    """The generic form (ops, attributes, dense_resource blobs) parses in upstream MLIR, and its
    output parses back in aitc to the same module (blobs come back in upper-case hex)."""
    ops_mlir = Path(__file__).resolve().parents[2] / "dialects" / "graph" / "ops.mlir"
    module = parse_mlir(ops_mlir.read_text(), str(ops_mlir))
    generic = print_mlir(module, generic=True)
    mlir_opt = _upstream_mlir_opt()
    assert mlir_opt is not None
    upstream = subprocess.run(
        [mlir_opt, "--allow-unregistered-dialect", "--mlir-print-op-generic"],
        input=generic,
        capture_output=True,
        text=True,
        check=False,
    )
    assert upstream.returncode == 0, upstream.stderr
    # Upstream renames values and sorts attribute dictionaries; the IR is otherwise the same.
    assert parse_mlir(upstream.stdout, "upstream.mlir").is_structurally_equivalent(module)
