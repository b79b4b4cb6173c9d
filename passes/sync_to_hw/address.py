"""Address arithmetic of `convert-sync-to-hw`: affine window indices -> hw byte addresses.

A window index is an `index` value built from constants, scf.for induction variables and
`arith.addi` / `arith.subi` / `arith.muli` (by a constant). It evaluates to an `Affine`:
a constant plus one coefficient per hardware-loop depth (the loop that `iD` counts):

    scf.for %i = %c4 to %c12 step %c2     // becomes hw.loop 4 at depth 0: %i = 4 + 2*i0
      %r = arith.muli %i, %c8 : index     // %r = 32 + 16*i0
      tile.copy %x[%r, %c0] ...           // x: memref<64x16xf32>: byte 4*16*(32 + 16*i0)

A window `%buffer[%i, %j]` then has the byte address
`offset + elem * sum(index_d * stride_d)` (row-major strides in elements), whose loop steps
are the `+ step*iD` terms of `hw.AddressAttr`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.ir import Attribute, Operation, SSAValue

from aitc.dialects import hw, tile
from aitc.types import element_bytes


class NotAffineError(Exception):
    """An index that is not an affine function of the enclosing loop indices; `op` is the op
    that defines the offending value (None for a block argument that is no loop index)."""

    def __init__(self, value: SSAValue, op: Operation | None):
        self.value, self.op = value, op
        name = f"%{value.name_hint} " if value.name_hint else ""
        what = f"defined by '{op.name}'" if op else "a block argument but no scf.for index"
        super().__init__(f"{name}is {what}")


@dataclass(frozen=True)
class Affine:
    """`const + sum(coeffs[D] * iD)` over hardware-loop indices iD."""

    const: int
    coeffs: tuple[int, ...] = ()

    @staticmethod
    def loop(start: int, step: int, depth: int) -> Affine:
        """The induction variable `start + step * i<depth>`."""
        return Affine(start, (0,) * depth + (step,))

    @property
    def is_constant(self) -> bool:
        return not any(self.coeffs)

    def __add__(self, other: Affine) -> Affine:
        size = max(len(self.coeffs), len(other.coeffs))
        pad = lambda c: c + (0,) * (size - len(c))  # noqa: E731
        coeffs = tuple(a + b for a, b in zip(pad(self.coeffs), pad(other.coeffs), strict=True))
        return Affine(self.const + other.const, coeffs)

    def scaled(self, factor: int) -> Affine:
        return Affine(self.const * factor, tuple(c * factor for c in self.coeffs))


@dataclass(frozen=True)
class Buffer:
    """A memref placed in memory: `space`, byte `offset` (absolute in DRAM), shape, element."""

    space: str
    offset: int
    shape: tuple[int, ...]
    element: Attribute

    @staticmethod
    def of(type_: Attribute, offset: int) -> Buffer:
        assert isinstance(type_, MemRefType)
        return Buffer(tile.space_of(type_), offset, tuple(type_.get_shape()), type_.get_element_type())

    @property
    def elem_bytes(self) -> int:
        return element_bytes(self.element)

    @property
    def strides(self) -> tuple[int, ...]:
        """Row-major strides in elements."""
        return tuple(math.prod(self.shape[d + 1 :]) for d in range(len(self.shape)))

    @property
    def pitch(self) -> int:
        """Elements between the starts of two rows (the last dim)."""
        return self.shape[-1]


@dataclass(frozen=True)
class Address:
    """A byte address `base + sum(steps[D] * iD)` in `space`."""

    space: str
    base: int
    steps: tuple[int, ...] = ()

    def plus(self, depth: int, step: int) -> Address:
        """This address advanced by `step` bytes per iteration of the loop at `depth`."""
        steps = self.steps + (0,) * (depth + 1 - len(self.steps))
        return Address(self.space, self.base, tuple(s + step * (d == depth) for d, s in enumerate(steps)))

    def attr(self) -> hw.AddressAttr:
        return _address_attr(self)


@functools.lru_cache(maxsize=4096)
def _address_attr(address: Address) -> hw.AddressAttr:
    """The attribute of `address`, built once per address (attributes are immutable values, so
    instructions can share one; unrolled loops repeat the same few addresses)."""
    return hw.AddressAttr(address.space, address.base, address.steps)


@dataclass(frozen=True)
class Window:
    """One access of a tile op: its buffer and the byte address of the window's first element."""

    buffer: Buffer
    address: Address

    @property
    def pitch_bytes(self) -> int:
        return self.buffer.pitch * self.buffer.elem_bytes


def _int_constant(op: arith.ConstantOp) -> int | None:
    value = op.value
    return value.value.data if isinstance(value, IntegerAttr) else None


class Addressing:
    """Buffers by SSA value, loop indices by depth, and index evaluation (memoised)."""

    def __init__(self) -> None:
        self.buffers: dict[SSAValue, Buffer] = {}
        self.values: dict[SSAValue, Affine] = {}
        self.depth = 0

    def bind_loop_index(self, value: SSAValue, start: int, step: int) -> None:
        """`value` counts `start, start + step, ...` in the hw.loop at the current depth."""
        self.values[value] = Affine.loop(start, step, self.depth)

    def bind_constant(self, value: SSAValue, constant: int) -> None:
        self.values[value] = Affine(constant)

    def index(self, value: SSAValue) -> Affine:
        """The affine form of an index value; NotAffineError if it has none."""
        if value not in self.values:
            self.values[value] = self._evaluate(value)
        return self.values[value]

    def _evaluate(self, value: SSAValue) -> Affine:
        op = value.owner
        if not isinstance(op, Operation):
            raise NotAffineError(value, None)
        if isinstance(op, arith.ConstantOp) and (constant := _int_constant(op)) is not None:
            return Affine(constant)
        if isinstance(op, arith.AddiOp):
            return self.index(op.lhs) + self.index(op.rhs)
        if isinstance(op, arith.SubiOp):
            return self.index(op.lhs) + self.index(op.rhs).scaled(-1)
        if isinstance(op, arith.MuliOp):
            lhs, rhs = self.index(op.lhs), self.index(op.rhs)
            if rhs.is_constant:
                return lhs.scaled(rhs.const)
            if lhs.is_constant:
                return rhs.scaled(lhs.const)
        raise NotAffineError(value, op)

    def constant(self, value: SSAValue) -> int:
        """A value that must not depend on any loop index (loop bounds); NotAffineError else."""
        affine = self.index(value)
        if not affine.is_constant:
            raise NotAffineError(value, value.owner if isinstance(value.owner, Operation) else None)
        return affine.const

    def window(self, buffer: SSAValue, indices: Sequence[SSAValue]) -> Window:
        """The buffer of `buffer` and the byte address of element `buffer[indices]`."""
        placed = self.buffers[buffer]
        address = Address(placed.space, placed.offset)
        size = placed.elem_bytes
        for index, stride in zip(indices, placed.strides, strict=True):
            affine = self.index(index)
            address = Address(address.space, address.base + affine.const * stride * size, address.steps)
            for depth, coeff in enumerate(affine.coeffs):
                address = address.plus(depth, coeff * stride * size) if coeff else address
        return Window(placed, address)

    def access(self, op: tile.WindowOp, name: str) -> Window:
        """The window of access `name` (e.g. "src", "dst", "lhs") of `op`."""
        buffer, indices = op.access(name)
        return self.window(buffer, indices)
