"""Element types and shapes shared by every aitc level: MLIR type <-> numpy dtype, broadcasting,
interned i64 attributes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import TypeAlias

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    ContainerType,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    ShapedType,
    Signedness,
    TensorType,
    i64,
)
from xdsl.ir import Attribute


@lru_cache(maxsize=1 << 16)
def i64_attr(value: int) -> IntegerAttr:
    """`IntegerAttr(value, i64)`, interned: building one costs ~9 us (xDSL checks the value
    against the type), and a lowered program holds a few thousand distinct values in tens of
    thousands of instruction fields. Attributes are immutable, so sharing them is safe."""
    return IntegerAttr(value, i64)


_SIGNLESS = Signedness.SIGNLESS
_UNSIGNED = Signedness.UNSIGNED

_FLOATS: dict[type, np.dtype] = {
    Float16Type: np.dtype(np.float16),
    Float32Type: np.dtype(np.float32),
    Float64Type: np.dtype(np.float64),
}


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype that holds values of an MLIR element type (i1 -> bool, ui8 -> uint8)."""
    for cls, dtype in _FLOATS.items():
        if isinstance(element_type, cls):
            return dtype
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if width == 1:
            return np.dtype(np.bool_)
        unsigned = element_type.signedness.data == _UNSIGNED
        return np.dtype(f"{'u' if unsigned else 'i'}{width // 8}")
    if isinstance(element_type, BFloat16Type):
        raise TypeError("bf16 tensors are not supported by the numpy reference yet")
    raise TypeError(f"no numpy dtype for element type {element_type}")


def element_bytes(element_type: Attribute) -> int:
    """Bytes one element of `element_type` takes in memory: its bit width rounded up to whole
    bytes (i1 and i8: 1, f16: 2, f32: 4). The one rule for every level and the binary format."""
    bits = getattr(element_type, "bitwidth", None)
    if not isinstance(bits, int):
        raise TypeError(f"element type {element_type} has no size in memory")
    return max(1, (bits + 7) // 8)


def tensor_bytes(type_: Attribute) -> int:
    """Bytes a tensor type takes in memory (`element_bytes` per element); 0 for a non-tensor."""
    if not isinstance(type_, TensorType):
        return 0
    return math.prod(type_.get_shape()) * element_bytes(type_.element_type)


NumpyElementType: TypeAlias = IntegerType | Float16Type | Float32Type | Float64Type
"""The MLIR element types that `element_type_of` makes from numpy dtypes."""


def element_type_of(dtype: np.dtype | type) -> NumpyElementType:
    """The MLIR element type for a numpy dtype (the inverse of `numpy_dtype`)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return IntegerType(1)
    if dtype.kind == "f":
        return {2: Float16Type(), 4: Float32Type(), 8: Float64Type()}[dtype.itemsize]
    if dtype.kind in "iu":
        sign = _UNSIGNED if dtype.kind == "u" else _SIGNLESS
        return IntegerType(dtype.itemsize * 8, sign)
    raise TypeError(f"no MLIR element type for numpy dtype {dtype}")


def shape_and_element(type_: Attribute) -> tuple[tuple[int, ...], Attribute]:
    """The shape and element type of a tensor, memref or vector type. (xDSL 0.74 has `get_shape`
    on ShapedType but `get_element_type` on ContainerType, and no base with both: upstream gap.)"""
    assert isinstance(type_, ShapedType)
    assert isinstance(type_, ContainerType)
    return tuple(type_.get_shape()), type_.get_element_type()


def tensor_type(shape: Sequence[int], dtype: np.dtype | type | Attribute) -> TensorType:
    """`tensor<shape x elem>` from a shape and either a numpy dtype or an MLIR element type."""
    elem = dtype if isinstance(dtype, Attribute) else element_type_of(dtype)
    return TensorType(elem, list(shape))


def is_float(element_type: Attribute) -> bool:
    return isinstance(element_type, Float16Type | Float32Type | Float64Type | BFloat16Type)


def is_bool(element_type: Attribute) -> bool:
    return isinstance(element_type, IntegerType) and element_type.width.data == 1


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """numpy/ONNX multidirectional broadcasting; raises ValueError when shapes are incompatible."""
    rank = max((len(s) for s in shapes), default=0)
    result = []
    for axis in range(rank):
        dims = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise ValueError(f"shapes {' and '.join(str(list(s)) for s in shapes)} do not broadcast")
        result.append(dims.pop() if dims else 1)
    return tuple(result)


def shape_str(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape) or "scalar"
