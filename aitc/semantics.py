"""The numeric semantics of the compute ops, in numpy: one definition for every executor.

The tile interpreter (`aitc.interp.tile`) and the simulator (`aitc.sim.execute`) both compute
through these functions, so a tile program and the hw program lowered from it compute the same
bits. Operands are numpy arrays (the simulator's strided views of its memories, the interpreter's
windows); each function applies one op to a whole tile at once.

Numerics (the reference the compiler and the binary must match):

- f32 arithmetic (add, sub, mul, div, max, min, matmul, sum) is IEEE float32 as numpy does it;
  matmul accumulates into the f32 ACC tile; i8 x i8 matmul accumulates in int32 with wraparound.
- Integer vector arithmetic wraps around in its dtype (i8 or i32); comparisons write 1 or 0.
- Transcendental functions (exp, log, tanh, erf, sqrt, rsqrt, recip, sigmoid, gelu, and the
  activations of acc_read) are evaluated in float64 and rounded once to float32.
  gelu is exact: x/2 * (1 + erf(x / sqrt 2)); gelu_tanh is the tanh approximation.
- A cast multiplies by `scale` in float64, then converts once: to an integer type by rounding
  half to even and saturating (NaN -> 0); to f32 by rounding to nearest.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import special

BINARY: dict[str, Callable[..., np.ndarray]] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum,
    "min": np.minimum, "cmp_eq": np.equal, "cmp_lt": np.less, "cmp_le": np.less_equal,
    "cmp_gt": np.greater, "cmp_ge": np.greater_equal,
}  # fmt: skip
"""Binary op name (`hw.vbinary` / `tile.binary` `op`) -> its numpy ufunc."""


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU: x/2 * (1 + erf(x / sqrt 2))."""
    return 0.5 * x * (1.0 + special.erf(x / np.sqrt(2.0)))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """GELU's tanh approximation."""
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


FLOAT_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "copy": np.positive, "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "tanh": np.tanh,
    "erf": special.erf, "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x), "recip": lambda x: 1.0 / x,
    "relu": lambda x: np.maximum(x, 0.0), "sigmoid": special.expit, "gelu": gelu, "gelu_tanh": gelu_tanh,
    "relu6": lambda x: np.clip(x, 0.0, 6.0), "none": np.positive,
}  # fmt: skip
"""Unary function or activation -> its float64 definition (rounded to f32 by `unary`)."""

INT_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "copy": np.positive, "neg": np.negative, "abs": np.abs, "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6), "none": np.positive,
}  # fmt: skip
"""The unary functions and activations integer tiles allow, computed in their dtype."""


def binary(op: str, a: np.ndarray, b: np.ndarray | np.generic) -> np.ndarray:
    """a <op> b elementwise (b broadcasts); integers wrap, comparisons give 1 or 0."""
    with np.errstate(all="ignore"):
        return BINARY[op](a, b)


def unary(op: str, x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """op(x) as `dtype`: float ops in float64 then rounded to f32; integer ops in their dtype
    (wrapping). `op` is a unary function or an activation ("none" copies)."""
    with np.errstate(all="ignore"):
        if dtype.kind == "f":
            return FLOAT_UNARY[op](x.astype(np.float64)).astype(dtype)
        return INT_UNARY[op](x).astype(dtype)


def select(cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cond != 0 ? a : b elementwise."""
    return np.where(cond != 0, a, b)


def reduce_rows(op: str, a: np.ndarray) -> np.ndarray:
    """The sum or max of every row of `a`; sums accumulate in `a`'s dtype (f32, or wrapping)."""
    return a.sum(axis=1, dtype=a.dtype) if op == "sum" else a.max(axis=1)


def convert(x: np.ndarray, to: np.dtype, scale: float, zero: int = 0) -> np.ndarray:
    """x * scale (in float64) converted to `to`: integers round half to even and saturate.
    `zero` is the integer side's zero point: added after rounding when converting to integers,
    subtracted from an integer `x` before scaling when converting to float (both steps exact in
    float64 for 8/16-bit integers and an f32 scale, so only the final conversion rounds)."""
    if to.kind == "f":
        return ((x.astype(np.float64) - zero) * scale).astype(to)
    scaled = x.astype(np.float64) * scale
    info = np.iinfo(to)
    rounded = np.clip(np.nan_to_num(np.rint(scaled), nan=0.0) + zero, info.min, info.max)
    return rounded.astype(to)


def matmul_into(acc: np.ndarray, lhs: np.ndarray, rhs: np.ndarray, accumulate: bool) -> None:
    """acc = [acc +] lhs @ rhs, in acc's dtype: f32 inputs in f32, i8 inputs in int32 (wrapping)."""
    if lhs.dtype != acc.dtype:
        lhs, rhs = lhs.astype(acc.dtype), rhs.astype(acc.dtype)
    product = np.matmul(lhs, rhs)
    if accumulate:
        acc += product
    else:
        acc[...] = product
