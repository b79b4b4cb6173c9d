"""ISA semantics: every hw instruction, run on the simulator, against numpy (target `tiny`)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from aitc.dialects.hw import (
    AccReadOp,
    AddressAttr,
    BarrierOp,
    DmaGatherOp,
    DmaInOp,
    DmaLocalOp,
    DmaOutOp,
    DmaPeerOp,
    LoopOp,
    MatmulOp,
    SemSignalOp,
    SemWaitOp,
    VBinaryOp,
    VCastOp,
    VImmOp,
    VReduceOp,
    VSelectOp,
    VUnaryOp,
)
from aitc.sim import SimulationError, Simulator
from aitc.sim.build import core, kernel, program, tensor

RNG = np.random.default_rng(1234)


def sram(addr: int, steps: tuple[int, ...] = ()) -> AddressAttr:
    return AddressAttr("sram", addr, steps)


def acc(addr: int) -> AddressAttr:
    return AddressAttr("acc", addr)


def dram(addr: int, steps: tuple[int, ...] = ()) -> AddressAttr:
    return AddressAttr("dram", addr, steps)


def run_kernel(ops, engine, loads, stores) -> list[np.ndarray]:
    module, inputs = kernel(ops, engine, loads, stores)
    outputs = Simulator(module).run(inputs).outputs
    return [outputs[f"out{i}"] for i in range(len(stores))]


def out(addr: int, shape: tuple[int, ...], dtype: type = np.float32, space: str = "sram"):
    """A store for `kernel`: read `shape` values of `dtype` at `space[addr]` after the ops."""
    return (space, addr, shape, dtype)


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# --------------------------------------------------------------------------- DMA


def test_dma_in_out_strided_rows():
    x = f32(4, 8)
    ops = [
        DmaInOp(dst=sram(0), src=dram(8), rows=4, row_bytes=16, src_stride=32),
        SemSignalOp(sem=0, engine="dma0"),
        SemWaitOp(sem=0, engine="dma1"),
        DmaOutOp(dst=dram(0x108), src=sram(0), rows=4, row_bytes=16, dst_stride=32),
    ]
    data = [tensor("x", "input", 0, (4, 8)), tensor("y", "output", 0x100, (4, 8))]
    y = Simulator(program([core(0, ops)], data)).run({"x": x}).outputs["y"]
    expected = np.zeros((4, 8), np.float32)
    expected[:, 2:6] = x[:, 2:6]
    np.testing.assert_array_equal(y, expected)


def test_dma_local_gathers_columns_and_spreads_rows():
    x = f32(4, 8)
    ops = [
        DmaLocalOp(dst=sram(0x100), src=sram(0x8), rows=4, row_bytes=16, src_stride=32),
        DmaLocalOp(dst=sram(0x200), src=sram(0x100), rows=4, row_bytes=16, dst_stride=32),
    ]
    packed, spread = run_kernel(ops, "dma0", [("sram", 0, x)], [out(0x100, (4, 4)), out(0x200, (4, 8))])
    np.testing.assert_array_equal(packed, x[:, 2:6])
    np.testing.assert_array_equal(spread[:, :4], x[:, 2:6])
    np.testing.assert_array_equal(spread[:, 4:], 0)


def test_dma_local_into_acc():
    x = f32(2, 4)
    ops = [DmaLocalOp(dst=acc(0x40), src=sram(0), rows=2, row_bytes=16)]
    [y] = run_kernel(ops, "dma0", [("sram", 0, x)], [("acc", 0x40, (2, 4), np.float32)])
    np.testing.assert_array_equal(y, x)


def test_dma_gather_rows():
    table = f32(10, 4)
    indices = np.array([3, 0, 9, 3], np.int32)
    ops = [
        SemSignalOp(sem=2, engine="dma0"),
        SemWaitOp(sem=2, engine="dma0"),
        DmaGatherOp(dst=sram(0x100), src=dram(0x400), indices=sram(0), rows=4, row_bytes=16, table_rows=10),
        SemSignalOp(sem=0, engine="dma0"),
        SemWaitOp(sem=0, engine="dma1"),
        DmaOutOp(dst=dram(0x200), src=sram(0x100), rows=4, row_bytes=16),
    ]
    ops = [DmaInOp(dst=sram(0), src=dram(0), row_bytes=16), *ops]
    data = [tensor("i", "input", 0, (4,), np.int32), tensor("t", "input", 0x400, (10, 4)),
            tensor("y", "output", 0x200, (4, 4))]  # fmt: skip
    y = Simulator(program([core(0, ops)], data)).run({"i": indices, "t": table}).outputs["y"]
    np.testing.assert_array_equal(y, table[indices])


def test_dma_gather_index_out_of_range_is_an_error():
    ops = [
        DmaInOp(dst=sram(0), src=dram(0), row_bytes=8),
        DmaGatherOp(dst=sram(0x100), src=dram(0x400), indices=sram(0), rows=2, row_bytes=16, table_rows=10),
    ]
    data = [tensor("i", "input", 0, (2,), np.int32), tensor("t", "input", 0x400, (10, 4))]
    sim = Simulator(program([core(0, ops)], data))
    with pytest.raises(SimulationError, match=r"index\[1\] = 10") as info:
        sim.run({"i": np.array([2, 10], np.int32), "t": f32(10, 4)})
    assert info.value.kind == "gather"


def test_dma_peer_between_two_cores():
    x = f32(2, 8)
    core0 = [
        DmaInOp(dst=sram(0), src=dram(0), row_bytes=32),
        SemSignalOp(sem=0, engine="dma0"),
        SemWaitOp(sem=0, engine="dma1"),
        DmaPeerOp(dst=sram(0x100), src=sram(0), peer=1, row_bytes=32),
        BarrierOp(engine="dma1"),
    ]
    core1 = [BarrierOp(engine="dma1"), DmaOutOp(dst=dram(0x100), src=sram(0x100), row_bytes=32)]
    data = [tensor("x", "input", 0, (8,)), tensor("y", "output", 0x100, (8,))]
    y = Simulator(program([core(0, core0), core(1, core1)], data)).run({"x": x[0]}).outputs["y"]
    np.testing.assert_array_equal(y, x[0])


def test_sem_signal_to_a_peer_core_orders_its_reader():
    """Core 0 copies into core 1's SRAM, then signals semaphore 1 *of core 1*: core 1's DMA
    waits for it and stores what arrived. The count lands on core 1 (every semaphore ends at 0)."""
    x = f32(8)
    core0 = [
        DmaInOp(dst=sram(0), src=dram(0), row_bytes=32),
        SemSignalOp(sem=0, engine="dma0"),
        SemWaitOp(sem=0, engine="dma1"),
        DmaPeerOp(dst=sram(0x100), src=sram(0), peer=1, row_bytes=32),
        SemSignalOp(sem=1, engine="dma1", peer=1),
    ]
    core1 = [SemWaitOp(sem=1, engine="dma1"), DmaOutOp(dst=dram(0x100), src=sram(0x100), row_bytes=32)]
    data = [tensor("x", "input", 0, (8,)), tensor("y", "output", 0x100, (8,))]
    y = Simulator(program([core(0, core0), core(1, core1)], data)).run({"x": x}).outputs["y"]
    np.testing.assert_array_equal(y, x)


# --------------------------------------------------------------------------- matrix engine


def test_matmul_f32():
    a, b = f32(3, 4), f32(4, 4)
    ops = [MatmulOp(acc=acc(0), lhs=sram(0), rhs=sram(0x100), m=3, k=4, n=4)]
    [y] = run_kernel(ops, "matrix", [("sram", 0, a), ("sram", 0x100, b)], [("acc", 0, (3, 4), np.float32)])
    np.testing.assert_allclose(y, a @ b, rtol=1e-6)


def test_matmul_accumulate_and_overwrite():
    a1, b1, a2, b2 = f32(2, 4), f32(4, 4), f32(2, 4), f32(4, 4)
    ops = [
        MatmulOp(acc=acc(0), lhs=sram(0x200), rhs=sram(0x300), m=2, k=4, n=4),  # overwritten below
        MatmulOp(acc=acc(0), lhs=sram(0), rhs=sram(0x100), m=2, k=4, n=4),
        MatmulOp(acc=acc(0), lhs=sram(0x200), rhs=sram(0x300), m=2, k=4, n=4, accumulate=True),
    ]
    loads = [("sram", 0, a1), ("sram", 0x100, b1), ("sram", 0x200, a2), ("sram", 0x300, b2)]
    [y] = run_kernel(ops, "matrix", loads, [("acc", 0, (2, 4), np.float32)])
    np.testing.assert_allclose(y, a1 @ b1 + a2 @ b2, rtol=1e-5)


def test_matmul_transpose_rhs():
    a, bt = f32(3, 4), f32(2, 4)
    ops = [MatmulOp(acc=acc(0), lhs=sram(0), rhs=sram(0x100), m=3, k=4, n=2, transpose_rhs=True)]
    [y] = run_kernel(ops, "matrix", [("sram", 0, a), ("sram", 0x100, bt)], [("acc", 0, (3, 2), np.float32)])
    np.testing.assert_allclose(y, a @ bt.T, rtol=1e-6)


def test_matmul_strides_in_elements():
    a, b = f32(2, 8), f32(4, 8)
    ops = [MatmulOp(acc=acc(0), lhs=sram(0x10), rhs=sram(0x100), m=2, k=4, n=4, lhs_stride=8, rhs_stride=8,
                    acc_stride=8)]  # fmt: skip
    [y] = run_kernel(ops, "matrix", [("sram", 0, a), ("sram", 0x100, b)], [("acc", 0, (2, 8), np.float32)])
    np.testing.assert_allclose(y[:, :4], a[:, 4:] @ b[:, :4], rtol=1e-6)
    np.testing.assert_array_equal(y[:, 4:], 0)


def test_matmul_int8_accumulates_in_int32_with_wraparound():
    a = RNG.integers(-128, 128, (2, 4), dtype=np.int8)
    b = RNG.integers(-128, 128, (4, 3), dtype=np.int8)
    a[0], b[:, 0] = 127, 127  # a[0] @ b[:, 0] = 64516 overflows the start value below
    start = np.full((2, 3), 2**31 - 20000, np.int32)
    ops = [MatmulOp(acc=acc(0), lhs=sram(0), rhs=sram(0x100), m=2, k=4, n=3, dtype="i8", accumulate=True)]
    loads = [("sram", 0, a), ("sram", 0x100, b), ("acc", 0, start)]
    [y] = run_kernel(ops, "matrix", loads, [("acc", 0, (2, 3), np.int32)])
    exact = start.astype(np.int64) + a.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_array_equal(y, ((exact + 2**31) % 2**32 - 2**31).astype(np.int32))
    assert (exact > 2**31 - 1).any(), "the test should overflow int32"


# --------------------------------------------------------------------------- vector engine

BINARY_REFERENCE = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum,
    "min": np.minimum, "cmp_eq": np.equal, "cmp_lt": np.less, "cmp_le": np.less_equal, "cmp_gt": np.greater,
    "cmp_ge": np.greater_equal,
}  # fmt: skip


@pytest.mark.parametrize("op", sorted(BINARY_REFERENCE))
def test_vbinary_ops(op):
    a, b = f32(3, 5), f32(3, 5)
    b[0, :2] = a[0, :2]  # some equal elements for the comparisons
    ops = [VBinaryOp(dst=sram(0x200), a=sram(0), b=sram(0x100), op=op, rows=3, cols=5)]
    [y] = run_kernel(
        ops, "vector", [("sram", 0, a), ("sram", 0x100, b)], [("sram", 0x200, (3, 5), np.float32)]
    )
    np.testing.assert_array_equal(y, BINARY_REFERENCE[op](a, b).astype(np.float32))


@pytest.mark.parametrize(
    ("broadcast", "b_shape", "view"),
    [("none", (3, 5), lambda b: b), ("row", (5,), lambda b: b[None, :]), ("col", (3,), lambda b: b[:, None]),
     ("scalar", (1,), lambda b: b[0])],
)  # fmt: skip
def test_vbinary_broadcast_modes(broadcast, b_shape, view):
    a, b = f32(3, 5), f32(*b_shape)
    ops = [
        VBinaryOp(dst=sram(0x200), a=sram(0), b=sram(0x100), op="sub", rows=3, cols=5, broadcast=broadcast)
    ]
    [y] = run_kernel(
        ops, "vector", [("sram", 0, a), ("sram", 0x100, b)], [("sram", 0x200, (3, 5), np.float32)]
    )
    np.testing.assert_array_equal(y, a - view(b))


def test_vbinary_strides_and_b_stride_for_columns():
    a, b = f32(3, 8), f32(3, 2)
    ops = [VBinaryOp(dst=sram(0x200), a=sram(0x10), b=sram(0x100), op="mul", rows=3, cols=4, src_stride=8,
                     dst_stride=6, broadcast="col", b_stride=2)]  # fmt: skip
    [y] = run_kernel(
        ops, "vector", [("sram", 0, a), ("sram", 0x100, b)], [("sram", 0x200, (3, 6), np.float32)]
    )
    np.testing.assert_array_equal(y[:, :4], a[:, 4:] * b[:, :1])


def test_vbinary_reads_acc_and_integers_wrap():
    big = np.array([[2**31 - 1, -(2**31), 5, 7]], np.int32)
    ones = np.array([[1, -1, 1, 1]], np.int32)
    a = np.array([[100, -100, 5, 127]], np.int8)
    b = np.array([[100, -100, -5, 1]], np.int8)
    ops = [
        VBinaryOp(dst=sram(0x200), a=acc(0), b=sram(0x100), op="add", rows=1, cols=4, dtype="i32"),
        VBinaryOp(dst=sram(0x300), a=sram(0x40), b=sram(0x80), op="add", rows=1, cols=4, dtype="i8"),
    ]
    loads = [("acc", 0, big), ("sram", 0x100, ones), ("sram", 0x40, a), ("sram", 0x80, b)]
    wide, narrow = run_kernel(
        ops, "vector", loads, [("sram", 0x200, (1, 4), np.int32), ("sram", 0x300, (1, 4), np.int8)]
    )
    np.testing.assert_array_equal(wide, [[-(2**31), 2**31 - 1, 6, 8]])
    np.testing.assert_array_equal(narrow, (a.astype(np.int16) + b).astype(np.int8))


def test_vimm():
    a = f32(2, 6)
    x = np.array([[1, -2, 3, 2**31 - 1]], np.int32)
    ops = [
        VImmOp(dst=sram(0x100), a=sram(0), op="mul", imm=0.125, rows=2, cols=6),
        VImmOp(dst=sram(0x300), a=sram(0x200), op="add", imm=1.0, rows=1, cols=4, dtype="i32"),
    ]
    loads = [("sram", 0, a), ("sram", 0x200, x)]
    y, z = run_kernel(
        ops, "vector", loads, [("sram", 0x100, (2, 6), np.float32), ("sram", 0x300, (1, 4), np.int32)]
    )
    np.testing.assert_array_equal(y, a * np.float32(0.125))
    np.testing.assert_array_equal(z, x + np.int32(1))  # numpy wraps the same way


def _gelu(x):
    return 0.5 * x * (1 + special.erf(x / np.sqrt(2)))


UNARY_REFERENCE = {
    "copy": lambda x: x, "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "tanh": np.tanh,
    "erf": special.erf, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "recip": lambda x: 1 / x,
    "relu": lambda x: np.maximum(x, 0), "sigmoid": special.expit, "gelu": _gelu,
}  # fmt: skip


@pytest.mark.parametrize("op", sorted(UNARY_REFERENCE))
def test_vunary_ops(op):
    a = f32(4, 6)
    if op in ("log", "sqrt", "rsqrt"):
        a = np.abs(a) + np.float32(0.1)
    ops = [VUnaryOp(dst=sram(0x100), a=sram(0), op=op, rows=4, cols=6)]
    [y] = run_kernel(ops, "vector", [("sram", 0, a)], [("sram", 0x100, (4, 6), np.float32)])
    np.testing.assert_allclose(y, UNARY_REFERENCE[op](a.astype(np.float64)).astype(np.float32), rtol=1e-6)


def test_vunary_integer_ops_wrap():
    a = np.array([[-128, -3, 0, 7]], np.int8)
    ops = [VUnaryOp(dst=sram(0x100), a=sram(0), op="abs", rows=1, cols=4, dtype="i8"),
           VUnaryOp(dst=sram(0x200), a=sram(0), op="relu", rows=1, cols=4, dtype="i8")]  # fmt: skip
    stores = [out(0x100, (1, 4), np.int8), out(0x200, (1, 4), np.int8)]
    absolute, relu = run_kernel(ops, "vector", [("sram", 0, a)], stores)
    np.testing.assert_array_equal(absolute, [[-128, 3, 0, 7]])
    np.testing.assert_array_equal(relu, [[0, 0, 0, 7]])


def test_vselect():
    cond = np.array([[1, 0, 2, 0], [0, 0, 1, 1]], np.float32)
    a, b = f32(2, 4), f32(2, 4)
    ops = [VSelectOp(dst=sram(0x300), cond=sram(0), a=sram(0x100), b=sram(0x200), rows=2, cols=4)]
    loads = [("sram", 0, cond), ("sram", 0x100, a), ("sram", 0x200, b)]
    [y] = run_kernel(ops, "vector", loads, [("sram", 0x300, (2, 4), np.float32)])
    np.testing.assert_array_equal(y, np.where(cond != 0, a, b))


def test_vreduce_sum_and_max():
    a = f32(3, 7)
    ops = [VReduceOp(dst=sram(0x100), a=sram(0), op="sum", rows=3, cols=7),
           VReduceOp(dst=sram(0x200), a=sram(0), op="max", rows=3, cols=7, src_stride=0)]  # fmt: skip
    total, peak = run_kernel(ops, "vector", [("sram", 0, a)], [out(0x100, (3,)), out(0x200, (3,))])
    np.testing.assert_allclose(total, a.sum(axis=1), rtol=1e-6)
    np.testing.assert_array_equal(peak, a.max(axis=1))


def test_vcast_f32_to_i8_rounds_half_even_and_saturates():
    a = np.array([[0.5, 1.5, 2.5, -0.5, -1.5, 3.4, 200.0, -200.0, np.nan, 63.75]], np.float32)
    ops = [VCastOp(dst=sram(0x100), a=sram(0), rows=1, cols=10, **{"from": "f32", "to": "i8"}, scale=2.0)]
    [y] = run_kernel(ops, "vector", [("sram", 0, a)], [("sram", 0x100, (1, 10), np.int8)])
    np.testing.assert_array_equal(y, [[1, 3, 5, -1, -3, 7, 127, -128, 0, 127]])


def test_vcast_int_conversions():
    wide = np.array([[1000, -1000, 5, 7, 2**31 - 1]], np.int32)
    small = np.array([[-128, 3, 127, 0]], np.int8)
    big = np.array([[1e10, -1e10, 2.5, 3.5]], np.float32)
    ops = [
        VCastOp(dst=sram(0x100), a=sram(0), rows=1, cols=5, **{"from": "i32", "to": "i8"}, scale=0.1),
        VCastOp(dst=sram(0x200), a=sram(0x40), rows=1, cols=4, **{"from": "i8", "to": "f32"}, scale=0.25),
        VCastOp(dst=sram(0x300), a=sram(0x80), rows=1, cols=4, **{"from": "f32", "to": "i32"}),
    ]
    loads = [("sram", 0, wide), ("sram", 0x40, small), ("sram", 0x80, big)]
    stores = [
        ("sram", 0x100, (1, 5), np.int8),
        ("sram", 0x200, (1, 4), np.float32),
        ("sram", 0x300, (1, 4), np.int32),
    ]
    requantized, scaled, saturated = run_kernel(ops, "vector", loads, stores)
    np.testing.assert_array_equal(requantized, [[100, -100, 0, 1, 127]])
    np.testing.assert_array_equal(scaled, small * np.float32(0.25))
    np.testing.assert_array_equal(saturated, [[2**31 - 1, -(2**31), 2, 4]])


def test_vcast_zero_point_is_the_integer_sides():
    """Quantize: round half to even, add zero, saturate; dequantize: subtract zero, then scale;
    requantize: the zero point is the i8 result's. Each as ONNX's QuantizeLinear/DequantizeLinear."""
    x = np.array([[0.5, 1.5, -2.5, 300.0, -300.0, np.nan]], np.float32)
    q = np.array([[-128, -1, 0, 127]], np.int8)
    acc = np.array([[1000, -1000, 2**31 - 1, -(2**31)]], np.int32)
    ops = [
        VCastOp(dst=sram(0x100), a=sram(0), rows=1, cols=6, **{"from": "f32", "to": "i8"}, zero=-128),
        VCastOp(
            dst=sram(0x200), a=sram(0x40), rows=1, cols=4, **{"from": "i8", "to": "f32"}, scale=0.5, zero=-3
        ),
        VCastOp(
            dst=sram(0x300), a=sram(0x80), rows=1, cols=4, **{"from": "i32", "to": "i8"}, scale=0.1, zero=20
        ),
    ]
    loads = [("sram", 0, x), ("sram", 0x40, q), ("sram", 0x80, acc)]
    stores = [
        ("sram", 0x100, (1, 6), np.int8),
        ("sram", 0x200, (1, 4), np.float32),
        ("sram", 0x300, (1, 4), np.int8),
    ]
    quantized, dequantized, requantized = run_kernel(ops, "vector", loads, stores)
    np.testing.assert_array_equal(quantized, [[-128, -126, -128, 127, -128, -128]])
    np.testing.assert_array_equal(dequantized, (q.astype(np.float32) + 3) * np.float32(0.5))
    np.testing.assert_array_equal(requantized, [[120, -80, 127, -128]])


ACTIVATION_REFERENCE = {
    "none": lambda x: x, "relu": lambda x: np.maximum(x, 0), "relu6": lambda x: np.clip(x, 0, 6),
    "sigmoid": special.expit, "tanh": np.tanh, "gelu": _gelu,
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
}  # fmt: skip


@pytest.mark.parametrize("activation", sorted(ACTIVATION_REFERENCE))
def test_acc_read_activations(activation):
    x = f32(4, 4) * np.float32(4)
    ops = [AccReadOp(dst=sram(0x100), a=acc(0x20), rows=4, cols=4, activation=activation)]
    [y] = run_kernel(ops, "vector", [("acc", 0x20, x)], [("sram", 0x100, (4, 4), np.float32)])
    expected = ACTIVATION_REFERENCE[activation](x.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_acc_read_int32_relu():
    x = np.array([[-5, 7], [2**31 - 1, -(2**31)]], np.int32)
    ops = [AccReadOp(dst=sram(0x100), a=acc(0), rows=2, cols=2, dtype="i32", activation="relu")]
    [y] = run_kernel(ops, "vector", [("acc", 0, x)], [("sram", 0x100, (2, 2), np.int32)])
    np.testing.assert_array_equal(y, np.maximum(x, 0))


# --------------------------------------------------------------------------- loops


def test_loop_address_steps():
    x = f32(8, 4)
    body = [DmaInOp(dst=sram(0, (16,)), src=dram(0, (32,)), row_bytes=16)]  # every other row
    ops = [
        LoopOp(4, body),
        SemSignalOp(sem=0, engine="dma0"),
        SemWaitOp(sem=0, engine="dma1"),
        DmaOutOp(dst=dram(0x200), src=sram(0), row_bytes=64),
    ]
    data = [tensor("x", "input", 0, (8, 4)), tensor("y", "output", 0x200, (4, 4))]
    y = Simulator(program([core(0, ops)], data)).run({"x": x}).outputs["y"]
    np.testing.assert_array_equal(y, x[::2])


def test_nested_loops_transpose_blocks():
    x = f32(4, 4)
    # y[j, i] = x[i, j] element by element: i0 walks rows of x, i1 walks columns
    inner = LoopOp(4, [DmaInOp(dst=sram(0, (4, 16)), src=dram(0, (16, 4)), row_bytes=4)])
    ops = [
        LoopOp(4, [inner]),
        SemSignalOp(sem=0, engine="dma0"),
        SemWaitOp(sem=0, engine="dma1"),
        DmaOutOp(dst=dram(0x100), src=sram(0), row_bytes=64),
    ]
    data = [tensor("x", "input", 0, (4, 4)), tensor("y", "output", 0x100, (4, 4))]
    y = Simulator(program([core(0, ops)], data)).run({"x": x}).outputs["y"]
    np.testing.assert_array_equal(y, x.T)
