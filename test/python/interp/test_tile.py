"""The tile interpreter (aitc/interp/tile.py): every tile op against numpy, loops, dispatch, CLI.

Most cases run one op through `on_chip`, which builds a function that stages each input from
dram into sram (or acc) at a window offset of zero, runs the op and copies each output back.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pytest
from scipy import special

from aitc.diagnostics import AitcError
from aitc.dialects.hw import ACTIVATIONS, BINARY_OPS, UNARY_OPS
from aitc.dialects.tile import Tile
from aitc.interp.run import run_module
from aitc.interp.tile import SyncInProgramOrder, TileFunctions, run_tile_module
from aitc.ir import parse_mlir
from aitc.tools.aitc_main import main

RNG = np.random.default_rng(7)
ELEMENT = {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32", np.dtype(np.int8): "i8"}


def memref(shape: Sequence[int], dtype: np.dtype | type, space: str) -> str:
    return f'memref<{"x".join(map(str, shape))}x{ELEMENT[np.dtype(dtype)]}, "{space}">'


def _move(src: str, dst: str, shape: Sequence[int], src_type: str, dst_type: str) -> str:
    zeros = ", ".join(["%c0"] * len(shape))
    sizes = ", ".join(map(str, shape))
    return f"tile.copy %{src}[{zeros}] to %{dst}[{zeros}] sizes [{sizes}] : {src_type}, {dst_type}"


def _stage_in(name: str, array: np.ndarray, space: str) -> list[str]:
    """Lines that bring input `name` (argument %name_in) into buffer %name in `space`."""
    dram = memref(array.shape, array.dtype, "dram")
    if space == "dram":
        return [f"%{name} = tile.reshape %{name}_in : {dram} -> {dram}"]
    sram = memref(array.shape, array.dtype, "sram")
    lines = [f"%{name}_s = tile.alloc : {sram}", _move(f"{name}_in", f"{name}_s", array.shape, dram, sram)]
    if space == "sram":
        return [*lines, f"%{name} = tile.reshape %{name}_s : {sram} -> {sram}"]
    acc = memref(array.shape, array.dtype, "acc")
    return [*lines, f"%{name} = tile.alloc : {acc}", _move(f"{name}_s", name, array.shape, sram, acc)]


def _stage_out(name: str, shape: Sequence[int], dtype: np.dtype, space: str) -> list[str]:
    """Lines that copy buffer %name in `space` to the output argument %name_out."""
    dram, sram = memref(shape, dtype, "dram"), memref(shape, dtype, "sram")
    if space == "sram":
        return [_move(name, f"{name}_out", shape, sram, dram)]
    acc = memref(shape, dtype, "acc")
    return [
        f"%{name}_s = tile.alloc : {sram}",
        _move(name, f"{name}_s", shape, acc, sram),
        _move(f"{name}_s", f"{name}_out", shape, sram, dram),
    ]


def on_chip(
    op: str,
    inputs: Mapping[str, np.ndarray],
    outputs: Mapping[str, tuple[Sequence[int], type]],
    spaces: Mapping[str, str] | None = None,
) -> dict[str, np.ndarray]:
    """Runs `op` (MLIR text; `%name` is the on-chip buffer of each input and output, `$name` its
    type, `%cN` an index constant) with inputs and outputs in sram unless `spaces` says
    otherwise ("acc", or "dram" for inputs)."""
    spaces = spaces or {}
    types = {n: memref(a.shape, a.dtype, spaces.get(n, "sram")) for n, a in inputs.items()}
    types |= {n: memref(shape, dtype, spaces.get(n, "sram")) for n, (shape, dtype) in outputs.items()}
    args = [f'%{n}_in: {memref(a.shape, a.dtype, "dram")} {{graph.name = "{n}"}}' for n, a in inputs.items()]
    args += [
        f'%{n}_out: {memref(s, d, "dram")} {{graph.name = "{n}", tile.output}}'
        for n, (s, d) in outputs.items()
    ]
    constants = sorted({int(c) for c in re.findall(r"%c(\d+)\b", op)} | {0})
    body = [f"%c{c} = arith.constant {c} : index" for c in constants]
    for name, array in inputs.items():
        body += _stage_in(name, array, spaces.get(name, "sram"))
    body += [f"%{n} = tile.alloc : {types[n]}" for n in outputs]
    body.append(re.sub(r"\$(\w+)", lambda m: types[m[1]], op))
    for name, (shape, dtype) in outputs.items():
        body += _stage_out(name, shape, np.dtype(dtype), spaces.get(name, "sram"))
    text = f"func.func @main({', '.join(args)}) {{\n  " + "\n  ".join([*body, "func.return"]) + "\n}\n"
    return run_tile_module(parse_mlir(text), dict(inputs))


def floats(*shape: int, low: float = -3.0, high: float = 3.0) -> np.ndarray:
    return RNG.uniform(low, high, shape).astype(np.float32)


def ints(dtype: type, *shape: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def wrap32(values: np.ndarray) -> np.ndarray:
    """int64 values wrapped to int32 (two's complement)."""
    return ((values.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


# --------------------------------------------------------------------------- buffers and DMA


def test_every_tile_op_has_an_implementation():
    # xDSL 0.74 has no public way to list the ops an InterpreterFunctions class implements (upstream gap)
    implemented = {op for op, _ in TileFunctions._impls()}
    missing = [op.name for op in Tile.operations if op not in implemented]
    assert not missing, f"aitc/interp/tile.py does not run {missing}"


def test_copy_windows_at_offsets_leave_the_rest_of_the_buffer_alone():
    x = floats(8, 12)
    op = "tile.copy %x[%c2, %c3] to %y[%c1, %c0] sizes [4, 8] : $x, $y"
    y = on_chip(op, {"x": x}, {"y": ((6, 8), np.float32)})["y"]
    expected = np.zeros((6, 8), np.float32)
    expected[1:5, 0:8] = x[2:6, 3:11]
    assert np.array_equal(y, expected)


def test_copy_from_dram_with_three_dims():
    x = floats(4, 3, 5)
    op = "tile.copy %x[%c1, %c0, %c2] to %y[%c0, %c1, %c0] sizes [2, 2, 3] : $x, $y"
    y = on_chip(op, {"x": x}, {"y": ((2, 3, 3), np.float32)}, {"x": "dram"})["y"]
    expected = np.zeros((2, 3, 3), np.float32)
    expected[:, 1:3, :] = x[1:3, 0:2, 2:5]
    assert np.array_equal(y, expected)


def test_copy_between_overlapping_windows_of_one_buffer_is_a_memmove():
    x = floats(6, 4)
    text = f"""
    func.func @main(%x: {memref((6, 4), np.float32, "dram")} {{graph.name = "x"}},
                    %y: {memref((6, 4), np.float32, "dram")} {{graph.name = "y", tile.output}}) {{
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %s = tile.alloc : memref<6x4xf32, "sram">
      tile.copy %x[%c0, %c0] to %s[%c0, %c0] sizes [6, 4] : memref<6x4xf32, "dram">, memref<6x4xf32, "sram">
      tile.copy %s[%c0, %c0] to %s[%c2, %c0] sizes [4, 4] : memref<6x4xf32, "sram">, memref<6x4xf32, "sram">
      tile.copy %s[%c0, %c0] to %y[%c0, %c0] sizes [6, 4] : memref<6x4xf32, "sram">, memref<6x4xf32, "dram">
      func.return
    }}
    """
    y = run_tile_module(parse_mlir(text), {"x": x})["y"]
    assert np.array_equal(y, np.concatenate([x[:2], x[:4]]))


def test_transpose_window():
    x = floats(5, 7)
    op = "tile.transpose %x[%c1, %c2] to %y[%c0, %c1] sizes [3, 4] : $x, $y"
    y = on_chip(op, {"x": x}, {"y": ((5, 4), np.float32)}, {"x": "dram"})["y"]
    expected = np.zeros((5, 4), np.float32)
    expected[0:4, 1:4] = x[1:4, 2:6].T
    assert np.array_equal(y, expected)


def test_gather_rows_of_a_table():
    table, ids = floats(10, 6), np.array([[3], [0], [9], [3]], np.int32)
    op = "tile.gather %table[%c0, %c1], %ids[%c0, %c0] to %e[%c0, %c0] sizes [4, 5] : $table, $ids, $e"
    e = on_chip(op, {"table": table, "ids": ids}, {"e": ((4, 5), np.float32)}, {"table": "dram"})["e"]
    assert np.array_equal(e, table[ids[:, 0], 1:6])


def test_gather_index_outside_the_table_is_an_error():
    table, ids = floats(10, 6), np.array([[3], [10], [-1], [0]], np.int32)
    op = "tile.gather %table[%c0, %c0], %ids[%c0, %c0] to %e[%c0, %c0] sizes [4, 6] : $table, $ids, $e"
    with pytest.raises(AitcError, match=r"tile.gather: 2 gather indices outside the table of 10 rows"):
        on_chip(op, {"table": table, "ids": ids}, {"e": ((4, 6), np.float32)}, {"table": "dram"})


def test_reshape_is_a_view_that_writes_through():
    x = floats(4, 4)
    text = """
    func.func @main(%x: memref<4x4xf32, "dram"> {graph.name = "x"},
                    %y: memref<2x8xf32, "dram"> {graph.name = "y", tile.output}) {
      %c0 = arith.constant 0 : index
      %s = tile.alloc : memref<2x8xf32, "sram">
      %v = tile.reshape %s : memref<2x8xf32, "sram"> -> memref<4x4xf32, "sram">
      tile.copy %x[%c0, %c0] to %v[%c0, %c0] sizes [4, 4] : memref<4x4xf32, "dram">, memref<4x4xf32, "sram">
      tile.copy %s[%c0, %c0] to %y[%c0, %c0] sizes [2, 8] : memref<2x8xf32, "sram">, memref<2x8xf32, "dram">
      func.return
    }
    """
    assert np.array_equal(run_tile_module(parse_mlir(text), {"x": x})["y"], x.reshape(2, 8))


def test_constants_inline_and_out_of_line():
    blob = np.arange(1, 9, dtype=np.float32)
    text = f"""
    func.func @main(%y: memref<2x8xf32, "dram"> {{graph.name = "y", tile.output}}) {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %small = tile.const dense<[[0.5, -1.0, 2.0, 4.0, 0.0, 1.0, 3.0, 7.0]]> : tensor<1x8xf32>
      %big = tile.const dense_resource<test_interp_tile_w> : tensor<1x8xf32>
      %s = tile.alloc : memref<2x8xf32, "sram">
      tile.copy %small[%c0, %c0] to %s[%c0, %c0] sizes [1, 8]
          : memref<1x8xf32, "dram">, memref<2x8xf32, "sram">
      tile.copy %big[%c0, %c0] to %s[%c1, %c0] sizes [1, 8]
          : memref<1x8xf32, "dram">, memref<2x8xf32, "sram">
      tile.copy %s[%c0, %c0] to %y[%c0, %c0] sizes [2, 8] : memref<2x8xf32, "sram">, memref<2x8xf32, "dram">
      func.return
    }}
    {{-# dialect_resources: {{ builtin: {{ test_interp_tile_w: "0x04000000{blob.tobytes().hex()}" }} }} #-}}
    """
    y = run_tile_module(parse_mlir(text), {})["y"]
    assert np.array_equal(y[0], [0.5, -1.0, 2.0, 4.0, 0.0, 1.0, 3.0, 7.0])
    assert np.array_equal(y[1], blob)


# --------------------------------------------------------------------------- matrix engine


@pytest.mark.parametrize("transpose_rhs", [False, True])
def test_matmul_f32_at_offsets(transpose_rhs: bool):
    a, b = floats(6, 10), floats(8, 9)
    attrs = " {transpose_rhs}" if transpose_rhs else ""
    op = f"tile.matmul %a[%c1, %c2], %b[%c0, %c1] to %acc[%c1, %c0] sizes [4, 8, 6]{attrs} : $a, $b, $acc"
    if transpose_rhs:
        b = floats(6, 9)
        rhs = b[0:6, 1:9].T
    else:
        rhs = b[0:8, 1:7]
    out = on_chip(op, {"a": a, "b": b}, {"acc": ((5, 6), np.float32)}, {"acc": "acc"})["acc"]
    expected = np.zeros((5, 6), np.float32)
    expected[1:5] = a[1:5, 2:10] @ rhs
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_matmul_accumulates_onto_acc():
    a, b, a2, b2 = floats(4, 8), floats(8, 4), floats(4, 8), floats(8, 4)
    op = (
        "tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [4, 8, 4] : $a, $b, $acc\n"
        "tile.matmul %a2[%c0, %c0], %b2[%c0, %c0] to %acc[%c0, %c0] sizes [4, 8, 4] {accumulate}"
        " : $a2, $b2, $acc\n"
        "tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %fresh[%c0, %c0] sizes [4, 8, 4] : $a, $b, $fresh\n"
        "tile.matmul %a2[%c0, %c0], %b2[%c0, %c0] to %fresh[%c0, %c0] sizes [4, 8, 4] : $a2, $b2, $fresh"
    )
    outputs = {"acc": ((4, 4), np.float32), "fresh": ((4, 4), np.float32)}
    got = on_chip(op, {"a": a, "b": b, "a2": a2, "b2": b2}, outputs, {"acc": "acc", "fresh": "acc"})
    np.testing.assert_allclose(got["acc"], a @ b + a2 @ b2, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["fresh"], a2 @ b2, rtol=1e-5, atol=1e-5)


def test_matmul_int8_accumulates_in_int32_with_wraparound():
    a, b = ints(np.int8, 4, 16), ints(np.int8, 16, 4)
    start = np.full((4, 4), np.iinfo(np.int32).max - 1000, np.int32)
    start[0] = np.iinfo(np.int32).min + 5
    op = (
        "tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %exact[%c0, %c0] sizes [4, 16, 4] : $a, $b, $exact\n"
        "tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %start[%c0, %c0] sizes [4, 16, 4] {accumulate}"
        " : $a, $b, $start\n"
        "tile.copy %start[%c0, %c0] to %wrapped[%c0, %c0] sizes [4, 4] : $start, $wrapped"
    )
    got = on_chip(
        op,
        {"a": a, "b": b, "start": start},
        {"exact": ((4, 4), np.int32), "wrapped": ((4, 4), np.int32)},
        {"exact": "acc", "start": "acc"},
    )
    product = a.astype(np.int64) @ b.astype(np.int64)
    assert np.array_equal(got["exact"], product.astype(np.int32))
    assert np.array_equal(got["wrapped"], wrap32(start.astype(np.int64) + product))


# --------------------------------------------------------------------------- vector engine

REFERENCE_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum,
    "min": np.minimum, "cmp_eq": np.equal, "cmp_lt": np.less, "cmp_le": np.less_equal,
    "cmp_gt": np.greater, "cmp_ge": np.greater_equal,
}  # fmt: skip
B_SHAPES = {"none": (4, 8), "row": (1, 8), "col": (4, 1), "scalar": (1, 1)}


def test_reference_tables_cover_the_isa():
    assert set(REFERENCE_BINARY) == set(BINARY_OPS)
    assert set(REFERENCE_UNARY) == set(UNARY_OPS)
    assert set(REFERENCE_ACTIVATIONS) == set(ACTIVATIONS)


@pytest.mark.parametrize("broadcast", list(B_SHAPES))
@pytest.mark.parametrize("name", BINARY_OPS)
def test_binary_f32_with_broadcast(name: str, broadcast: str):
    a = np.round(floats(6, 10))  # whole numbers, so comparisons see ties
    b = np.round(floats(*B_SHAPES[broadcast]))
    b[b == 0] = 1.0  # no division by zero
    op = (
        f"tile.binary %a[%c2, %c1], %b[%c0, %c0] to %d[%c1, %c0] sizes [4, 8] "
        f'{{op = "{name}", broadcast = "{broadcast}"}} : $a, $b, $d'
    )
    d = on_chip(op, {"a": a, "b": b}, {"d": ((5, 8), np.float32)})["d"]
    expected = np.zeros((5, 8), np.float32)
    expected[1:5] = REFERENCE_BINARY[name](a[2:6, 1:9], b)
    np.testing.assert_allclose(d, expected, rtol=1e-6)


def test_binary_reads_a_from_acc():
    a, b = floats(4, 8), floats(1, 8)
    op = 'tile.binary %a[%c0, %c0], %b[%c0, %c0] to %d[%c0, %c0] sizes [4, 8] {op = "add", broadcast = "row"}'
    op += " : $a, $b, $d"
    d = on_chip(op, {"a": a, "b": b}, {"d": ((4, 8), np.float32)}, {"a": "acc"})["d"]
    assert np.array_equal(d, a + b)


def test_binary_int8_wraps_around():
    a = np.array([[100, -100, 127, 5]], np.int8)
    b = np.array([[100, -100, 1, -7]], np.int8)
    op = 'tile.binary %a[%c0, %c0], %b[%c0, %c0] to %d[%c0, %c0] sizes [1, 4] {op = "add"} : $a, $b, $d'
    d = on_chip(op, {"a": a, "b": b}, {"d": ((1, 4), np.int8)})["d"]
    assert d.tolist() == [[-56, 56, -128, -2]]


def test_binary_comparison_on_integers_writes_one_or_zero():
    a, b = np.array([[1, 2, 3]], np.int32), np.array([[2, 2, 2]], np.int32)
    op = 'tile.binary %a[%c0, %c0], %b[%c0, %c0] to %d[%c0, %c0] sizes [1, 3] {op = "cmp_ge"} : $a, $b, $d'
    assert on_chip(op, {"a": a, "b": b}, {"d": ((1, 3), np.int32)})["d"].tolist() == [[0, 1, 1]]


def test_binary_imm_f32_and_int8():
    x, q = floats(3, 5), np.array([[100, -100, 20]], np.int8)
    op = (
        'tile.binary_imm %x[%c1, %c0] to %y[%c0, %c0] sizes [2, 5] {op = "mul", imm = 0.125 : f64} : $x, $y\n'
        'tile.binary_imm %q[%c0, %c0] to %r[%c0, %c0] sizes [1, 3] {op = "add", imm = 100.0 : f64} : $q, $r'
    )
    got = on_chip(op, {"x": x, "q": q}, {"y": ((2, 5), np.float32), "r": ((1, 3), np.int8)})
    assert np.array_equal(got["y"], x[1:3] * np.float32(0.125))
    assert got["r"].tolist() == [[-56, 0, 120]]


def _gelu(x: np.ndarray) -> np.ndarray:
    return x / 2 * (1 + special.erf(x / math.sqrt(2)))


REFERENCE_UNARY = {
    "copy": lambda x: x, "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log,
    "tanh": np.tanh, "erf": special.erf, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "recip": lambda x: 1 / x, "relu": lambda x: np.maximum(x, 0), "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "gelu": _gelu,
}  # fmt: skip
POSITIVE_ONLY = {"log", "sqrt", "rsqrt", "recip"}


@pytest.mark.parametrize("name", UNARY_OPS)
def test_unary_f32(name: str):
    x = floats(4, 6, low=0.25, high=3.0) if name in POSITIVE_ONLY else floats(4, 6)
    op = f'tile.unary %x[%c1, %c1] to %y[%c0, %c0] sizes [3, 5] {{op = "{name}"}} : $x, $y'
    y = on_chip(op, {"x": x}, {"y": ((3, 5), np.float32)})["y"]
    expected = REFERENCE_UNARY[name](x[1:4, 1:6].astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-7)


def test_unary_int8_neg_wraps():
    q = np.array([[-128, -3, 0, 127]], np.int8)
    op = 'tile.unary %q[%c0, %c0] to %r[%c0, %c0] sizes [1, 4] {op = "neg"} : $q, $r'
    assert on_chip(op, {"q": q}, {"r": ((1, 4), np.int8)})["r"].tolist() == [[-128, 3, 0, -127]]


def test_select_takes_a_where_cond_is_nonzero():
    cond = np.array([[1.0, 0.0, -2.0, 0.0]], np.float32)
    a, b = floats(1, 4), floats(1, 4)
    op = "tile.select %cond[%c0, %c0], %a[%c0, %c0], %b[%c0, %c0] to %d[%c0, %c0] sizes [1, 4]"
    op += " : $cond, $a, $b, $d"
    d = on_chip(op, {"cond": cond, "a": a, "b": b}, {"d": ((1, 4), np.float32)})["d"]
    assert np.array_equal(d, np.where(cond != 0, a, b))


@pytest.mark.parametrize("name", ["sum", "max"])
def test_reduce_rows_of_a_window(name: str):
    x = floats(6, 9)
    op = f'tile.reduce %x[%c1, %c2] to %r[%c1, %c0] sizes [4, 7] {{op = "{name}"}} : $x, $r'
    r = on_chip(op, {"x": x}, {"r": ((5, 1), np.float32)})["r"]
    window = x[1:5, 2:9]
    expected = window.sum(axis=1, dtype=np.float32) if name == "sum" else window.max(axis=1)
    assert r[0, 0] == 0
    np.testing.assert_allclose(r[1:, 0], expected, rtol=1e-6)


def test_reduce_sum_int32_wraps():
    x = np.array([[2**31 - 1, 1, 0], [-5, 7, 1]], np.int32)
    op = 'tile.reduce %x[%c0, %c0] to %r[%c0, %c0] sizes [2, 3] {op = "sum"} : $x, $r'
    assert on_chip(op, {"x": x}, {"r": ((2, 1), np.int32)})["r"].tolist() == [[-(2**31)], [3]]


def test_cast_f32_to_int8_rounds_half_to_even_and_saturates():
    x = np.array([[0.5, 1.5, 2.5, -0.5, -1.5, 300.0, -300.0, np.nan]], np.float32)
    op = "tile.cast %x[%c0, %c0] to %q[%c0, %c0] sizes [1, 8] : $x, $q"
    q = on_chip(op, {"x": x}, {"q": ((1, 8), np.int8)})["q"]
    assert q.tolist() == [[0, 2, 2, 0, -2, 127, -128, 0]]


def test_cast_scales_int32_from_acc_to_int8_and_int8_to_f32():
    acc = np.array([[1000, -1000, 45, 55, 5000]], np.int32)
    q = np.array([[-128, 0, 127]], np.int8)
    op = (
        "tile.cast %acc[%c0, %c0] to %r[%c0, %c0] sizes [1, 5] {scale = 0.1 : f64} : $acc, $r\n"
        "tile.cast %q[%c0, %c0] to %f[%c0, %c0] sizes [1, 3] {scale = 0.5 : f64} : $q, $f"
    )
    got = on_chip(
        op, {"acc": acc, "q": q}, {"r": ((1, 5), np.int8), "f": ((1, 3), np.float32)}, {"acc": "acc"}
    )
    assert got["r"].tolist() == [[100, -100, 4, 6, 127]]  # 4.5 -> 4, 5.5 -> 6 (half to even)
    assert got["f"].tolist() == [[-64.0, 0.0, 63.5]]


REFERENCE_ACTIVATIONS = {
    "none": lambda x: x, "relu": lambda x: np.maximum(x, 0), "relu6": lambda x: np.clip(x, 0, 6),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "tanh": np.tanh, "gelu": _gelu,
    "gelu_tanh": lambda x: x / 2 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
}  # fmt: skip


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_acc_read_applies_the_activation(activation: str):
    acc = floats(4, 8, low=-8.0, high=8.0)
    op = f'tile.acc_read %acc[%c0, %c2] to %y[%c0, %c0] sizes [4, 6] {{activation = "{activation}"}}'
    op += " : $acc, $y"
    y = on_chip(op, {"acc": acc}, {"y": ((4, 6), np.float32)}, {"acc": "acc"})["y"]
    expected = REFERENCE_ACTIVATIONS[activation](acc[:, 2:8].astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-7)


def test_acc_read_int32_relu6():
    acc = np.array([[-5, 0, 3, 6, 100]], np.int32)
    op = 'tile.acc_read %acc[%c0, %c0] to %y[%c0, %c0] sizes [1, 5] {activation = "relu6"} : $acc, $y'
    y = on_chip(op, {"acc": acc}, {"y": ((1, 5), np.int32)}, {"acc": "acc"})["y"]
    assert y.tolist() == [[0, 0, 3, 6, 6]]


# --------------------------------------------------------------------------- whole programs

TILED_MATMUL_RELU = """
// y = relu(x @ w): row tiles of 16 (outer loop), k tiles of 16 accumulated (inner loop).
func.func @main(%x: memref<64x48xf32, "dram"> {graph.name = "x"},
                %w: memref<48x32xf32, "dram"> {graph.name = "w"},
                %y: memref<64x32xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c48 = arith.constant 48 : index
  %c64 = arith.constant 64 : index
  tile.kernel "fc1" {op = "graph.matmul", tiles = array<i64: 16, 16, 32>} {
    %ws = tile.alloc : memref<48x32xf32, "sram">
    %xs = tile.alloc : memref<16x48xf32, "sram">
    %acc = tile.alloc : memref<16x32xf32, "acc">
    %ys = tile.alloc : memref<16x32xf32, "sram">
    tile.copy %w[%c0, %c0] to %ws[%c0, %c0] sizes [48, 32] {sync.engine = "dma0"}
        : memref<48x32xf32, "dram">, memref<48x32xf32, "sram">
    scf.for %i = %c0 to %c64 step %c16 {
      tile.copy %x[%i, %c0] to %xs[%c0, %c0] sizes [16, 48]
          : memref<64x48xf32, "dram">, memref<16x48xf32, "sram">
      tile.matmul %xs[%c0, %c0], %ws[%c0, %c0] to %acc[%c0, %c0] sizes [16, 16, 32] {sync.engine = "matrix"}
          : memref<16x48xf32, "sram">, memref<48x32xf32, "sram">, memref<16x32xf32, "acc">
      scf.for %k = %c16 to %c48 step %c16 {
        tile.matmul %xs[%c0, %k], %ws[%k, %c0] to %acc[%c0, %c0] sizes [16, 16, 32] {accumulate}
            : memref<16x48xf32, "sram">, memref<48x32xf32, "sram">, memref<16x32xf32, "acc">
      }
      tile.acc_read %acc[%c0, %c0] to %ys[%c0, %c0] sizes [16, 32] {activation = "relu"}
          : memref<16x32xf32, "acc">, memref<16x32xf32, "sram">
      tile.copy %ys[%c0, %c0] to %y[%i, %c0] sizes [16, 32]
          : memref<16x32xf32, "sram">, memref<64x32xf32, "dram">
    }
  }
  func.return
}
"""


@pytest.fixture
def matmul_relu() -> tuple[str, dict[str, np.ndarray], np.ndarray]:
    x, w = floats(64, 48), floats(48, 32)
    return TILED_MATMUL_RELU, {"x": x, "w": w}, np.maximum(x @ w, 0)


def test_tiled_matmul_relu_loop_matches_numpy(matmul_relu):
    text, inputs, expected = matmul_relu
    y = run_tile_module(parse_mlir(text), inputs)["y"]
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


def test_run_module_dispatches_tile_level_functions(matmul_relu):
    text, inputs, expected = matmul_relu
    module = parse_mlir(text)
    by_name = run_module(module, inputs)
    by_position = run_module(module, [inputs["x"], inputs["w"]])
    assert list(by_name) == ["y"]
    np.testing.assert_allclose(by_name["y"], expected, rtol=1e-5, atol=1e-5)
    assert np.array_equal(by_position["y"], by_name["y"])


def test_inputs_are_never_written(matmul_relu):
    text, inputs, _ = matmul_relu
    before = {name: array.copy() for name, array in inputs.items()}
    run_tile_module(parse_mlir(text), inputs)
    assert all(np.array_equal(inputs[name], before[name]) for name in inputs)


def test_aitc_run_on_tile_level_mlir(tmp_path, capsys, matmul_relu):
    text, inputs, expected = matmul_relu
    (tmp_path / "fc.mlir").write_text(text)
    np.savez(tmp_path / "in.npz", **inputs)
    argv = ["run", tmp_path / "fc.mlir", "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "out.npz"]
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "wrote 1 output(s)" in out
    with np.load(tmp_path / "out.npz") as saved:
        assert saved.files == ["y"]
        np.testing.assert_allclose(saved["y"], expected, rtol=1e-5, atol=1e-5)


def test_aitc_run_on_tile_level_mlir_makes_random_inputs_for_inputs_only(tmp_path, capsys):
    (tmp_path / "fc.mlir").write_text(TILED_MATMUL_RELU)
    code = main(["run", str(tmp_path / "fc.mlir"), "--seed", "2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.splitlines()[0] == "no --inputs: using random inputs (seed 2) for x, w"
    assert re.search(r"^y\s+float32\[64, 32\]", out, re.MULTILINE), out


def test_dynamic_window_out_of_bounds_names_the_op_and_its_location():
    # The row loop reads one tile too far: rows 64..80 of a 64-row input.
    load = "tile.copy %x[%i, %c0] to %xs[%c0, %c0] sizes [16, 48]"
    text = TILED_MATMUL_RELU.replace("scf.for %i = %c0 to %c64", "scf.for %i = %c16 to %c64")
    text = text.replace(load, load.replace("%x[%i,", "%x[%next,"))
    text = text.replace(
        "scf.for %i = %c16 to %c64 step %c16 {",
        "scf.for %i = %c16 to %c64 step %c16 {\n      %next = arith.addi %i, %c16 : index",
    )
    text = text.replace(
        'memref<16x48xf32, "sram">\n      tile.matmul',
        'memref<16x48xf32, "sram"> loc("fc1_load")\n      tile.matmul',
    )
    with pytest.raises(AitcError) as error:
        run_tile_module(parse_mlir(text), {"x": floats(64, 48), "w": floats(48, 32)})
    assert str(error.value) == (
        'tile.copy at loc("fc1_load") in tile.kernel "fc1": '
        "window 'src' [64:80, 0:48] leaves its buffer of shape [64, 48]"
    )
    assert "run time" in (error.value.hint or "")


@pytest.mark.parametrize(
    ("inputs", "problem"),
    [
        ({"x": np.zeros((64, 48), np.float32)}, "missing input(s): w"),
        (
            {"x": np.zeros((64, 48), np.float64), "w": np.zeros((48, 32), np.float32)},
            "input 'x' is float64[64, 48], the model expects float32[64, 48]",
        ),
        (
            {"x": np.zeros((64, 48), np.float32), "w": np.zeros((48, 32), np.float32), "y": np.zeros(1)},
            "unknown input(s): y (model inputs: x, w)",
        ),
    ],
)
def test_inputs_are_checked_like_the_graph_runner(inputs: dict[str, np.ndarray], problem: str):
    with pytest.raises(AitcError) as error:
        run_tile_module(parse_mlir(TILED_MATMUL_RELU), inputs)
    assert problem in error.value.problems


def test_unnamed_outputs_and_a_function_that_returns_values():
    unnamed = """
    func.func @main(%x: memref<2xf32, "dram">, %y: memref<2xf32, "dram"> {tile.output}) {
      func.return
    }
    """
    outputs = run_tile_module(parse_mlir(unnamed), {"arg0": np.ones(2, np.float32)})
    assert list(outputs) == ["result0"]
    assert np.array_equal(outputs["result0"], np.zeros(2, np.float32))
    returns = """
    func.func @main(%x: memref<2xf32, "dram">) -> index {
      %c0 = arith.constant 0 : index
      func.return %c0 : index
    }
    """
    with pytest.raises(AitcError, match="a tile-level function writes its outputs into arguments"):
        run_tile_module(parse_mlir(returns), {"arg0": np.ones(2, np.float32)})


SYNC_LEVEL = """
func.func @main(%x: memref<4x8xf32, "dram"> {graph.name = "x"},
                %y: memref<4x8xf32, "dram"> {graph.name = "y", tile.output}) {
  %c0 = arith.constant 0 : index
  %s = tile.alloc : memref<4x8xf32, "sram">
  tile.copy %x[%c0, %c0] to %s[%c0, %c0] sizes [4, 8] {sync.engine = "dma0"}
      : memref<4x8xf32, "dram">, memref<4x8xf32, "sram">
  sync.signal 0 on "dma0"
  sync.wait 0 on "dma1"
  tile.copy %s[%c0, %c0] to %y[%c0, %c0] sizes [4, 8] {sync.engine = "dma1"}
      : memref<4x8xf32, "sram">, memref<4x8xf32, "dram">
  func.return
}
"""


def test_sync_level_ops_need_their_functions_and_sync_engine_is_ignored():
    module, x = parse_mlir(SYNC_LEVEL), floats(4, 8)
    with pytest.raises(AitcError, match=r"Could not find interpretation function for op sync\.signal"):
        run_tile_module(module, {"x": x})
    assert np.array_equal(run_tile_module(module, {"x": x}, functions=[SyncInProgramOrder()])["y"], x)


@pytest.mark.parametrize("interpreter", ["tile", "sync"])
def test_a_loop_bound_far_too_large_is_an_error_not_a_hang(interpreter: str):
    # A damaged trip count (10**12 iterations of an empty loop) must stop at the interpreter's
    # loop budget with the loop named, in the tile and the sync interpreter alike.
    from aitc.interp.sync import run_sync_module

    text = TILED_MATMUL_RELU.replace(
        "%c64 = arith.constant 64 : index",
        "%c64 = arith.constant 64 : index\n  %huge = arith.constant 1000000000000 : index\n"
        "  scf.for %spin = %c0 to %huge step %c16 {\n  }",
    )
    run = run_tile_module if interpreter == "tile" else run_sync_module
    inputs = {"x": floats(64, 48), "w": floats(48, 32)}
    with pytest.raises(AitcError, match=r"scf.for.*the loops run more than 5,000,000 iterations"):
        run(parse_mlir(text), inputs)
