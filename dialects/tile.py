"""The `tile` dialect: explicit buffers in DRAM/SRAM/ACC, DMA copies and compute on tiles that
fit the target's engines, with loops kept structured (`scf.for`).

This is the level between `graph` (tensors, value semantics) and `hw` (instructions, absolute
addresses). A buffer is a builtin memref whose memory space is "dram", "sram" or "acc":

    %x = ... : memref<128x64xf32, "dram">          function arguments: inputs, then outputs
    %w = tile.const dense_resource<fc_w> : memref<64x32xf32, "dram">
    %a = tile.alloc : memref<32x64xf32, "sram">      plan-memory adds {offset = ...}

Every data access is a window `%buffer[%i, %j]` (one `index` operand per buffer dim) of a static
`sizes [...]` box; compute ops work on 2-D windows (every size but the last two is 1):

    tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [32, 64]
    tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [32, 64, 32] {accumulate}
    tile.acc_read %acc[%c0, %c0] to %y_s[%c0, %c0] sizes [32, 32] {activation = "relu"}

The compute ops mirror the hw instructions one to one (`tile.unary` <-> `hw.vunary`, ...), with
the same operation names (`aitc.dialects.hw.BINARY_OPS`, ...), so `convert-sync-to-hw` is
instruction selection plus address arithmetic. `tile.kernel` groups the ops lowered from one
graph op and records the decisions that shaped them (tile sizes, buffer depth, the cost that
chose them) where reports and readers can find them.

Semantics: `aitc/interp/tile.py` (numpy on whole buffers; windows are numpy slices).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import ParseError, VerifyException

from aitc.dialects.hw import ACTIVATIONS, BINARY_OPS, DTYPES, FLOAT_UNARY, UNARY_OPS
from aitc.types import shape_and_element
from aitc.weights import parse_constant_body, print_constant_body

SPACES = ("dram", "sram", "acc")


def memref_of(buffer: SSAValue) -> MemRefType:
    """The type of a buffer value. (xDSL 0.74 types operands and block arguments as
    `SSAValue[Attribute]`, whatever their constraint: upstream gap.)"""
    assert isinstance(buffer.type, MemRefType)
    return buffer.type


def base_buffer(buffer: SSAValue) -> SSAValue:
    """The buffer a (chain of) tile.reshape views of `buffer` shows: the bytes it names."""
    while isinstance(buffer.owner, ReshapeOp):
        buffer = buffer.owner.source
    return buffer


def space_of(buffer: SSAValue | Attribute) -> str:
    """The memory space of a buffer value or memref type ("dram", "sram" or "acc")."""
    type_ = buffer if isinstance(buffer, Attribute) else buffer.type
    assert isinstance(type_, MemRefType)
    space = type_.memory_space
    return space.data if isinstance(space, StringAttr) else ""


def buffer_type(shape: Sequence[int], element_type: Attribute, space: str) -> MemRefType:
    """`memref<shape x elem, "space">`."""
    return MemRefType(element_type, list(shape), memory_space=StringAttr(space))


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise VerifyException(message)


def _verify_buffer_type(type_: Attribute, what: str) -> MemRefType:
    problem = _buffer_type_problem(type_)
    if problem is not None:  # the message prints the type: only build it on failure
        raise VerifyException(f"{what}{problem}, got {type_}")
    assert isinstance(type_, MemRefType)
    return type_


def _buffer_type_problem(type_: Attribute) -> str | None:
    """What is wrong with `type_` as a tile buffer (the message after the buffer's name)."""
    if not isinstance(type_, MemRefType):
        return " must be a memref"
    if space_of(type_) not in SPACES:
        return " must live in dram, sram or acc"
    if not all(d > 0 for d in type_.get_shape()):
        return " needs a static shape"
    if not isinstance(type_.layout, NoneAttr):
        return " must be dense row-major (no layout)"
    if space_of(type_) == "acc" and element_name(type_) not in ("f32", "i32"):
        return ": ACC holds 32-bit values (f32 or i32)"
    return None


_TYPE_TEXTS: dict[Attribute, str] = {}


def type_text(type_: Attribute) -> str:
    """`str(type_)`, printed once per distinct type (types are immutable; few element types)."""
    text = _TYPE_TEXTS.get(type_)
    if text is None:
        text = str(type_)
        if len(_TYPE_TEXTS) < 1024:
            _TYPE_TEXTS[type_] = text
    return text


def element_name(type_: MemRefType) -> str:
    """The element type of a memref as text ("f32", "i8", ...)."""
    return type_text(type_.get_element_type())


def _constant_index(value: SSAValue) -> int | None:
    """The value of an index defined by `arith.constant`, else None (known only at run time)."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


# --------------------------------------------------------------------------- buffers


@irdl_op_definition
class AllocOp(IRDLOperation):
    """A buffer in one memory space, alive from here to the end of its block (the function, or
    the tile.kernel that uses it). `plan-memory` sets `offset` (bytes from the start of the
    space; absolute in DRAM).

    ```mlir
    %a = tile.alloc : memref<32x64xf32, "sram">
    %b = tile.alloc {offset = 4096 : i64} : memref<32x32xf32, "acc">
    ```
    """

    name = "tile.alloc"
    offset = opt_attr_def(IntegerAttr)
    buffer = result_def(MemRefType)
    assembly_format = "attr-dict `:` type($buffer)"

    def __init__(self, type_: MemRefType):
        super().__init__(result_types=[type_])

    def verify_(self) -> None:
        _verify_buffer_type(self.buffer.type, "tile.alloc")
        if self.offset is not None:
            _require(self.offset.value.data >= 0, "offset must be >= 0")


@irdl_op_definition
class ConstOp(IRDLOperation):
    """A constant buffer in DRAM (weights), bytes-backed like graph.constant; the buffer type is
    the value's shape and element type in "dram".

    ```mlir
    %w = tile.const dense<[1.0, 2.0]> : tensor<2xf32>
    ```
    """

    name = "tile.const"
    value = opt_attr_def(DenseIntOrFPElementsAttr | DenseResourceAttr)
    offset = opt_attr_def(IntegerAttr)
    buffer = result_def(MemRefType)

    def __init__(self, value: DenseIntOrFPElementsAttr | DenseResourceAttr):
        shape, element = shape_and_element(value.get_type())
        type_ = buffer_type(shape, element, "dram")
        super().__init__(attributes={"value": value}, result_types=[type_])

    def verify_(self) -> None:
        type_ = _verify_buffer_type(self.buffer.type, "tile.const")
        _require(space_of(type_) == "dram", "tile.const lives in dram")
        _require(self.value is not None, "tile.const needs a value")
        assert self.value is not None
        value_type = self.value.get_type()
        shape, element = shape_and_element(value_type)
        _require(
            shape == tuple(type_.get_shape()) and element == type_.get_element_type(),
            f"value {value_type} does not match buffer {type_}",
        )

    def print(self, printer: Printer) -> None:
        print_constant_body(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> ConstOp:
        value, extra = parse_constant_body(parser, "tile.const")
        op = cls(value)
        op.attributes.update(extra)
        return op


# --------------------------------------------------------------------------- windowed ops


class WindowOp(IRDLOperation):
    """Base of ops whose operands are windows `%buffer[%i, ...]`: the flat operand list holds,
    for each name in `ACCESSES` (sources first, destination last), the buffer then one index
    per buffer dim. `sizes` is the window box (for matmul: m, k, n)."""

    ACCESSES: ClassVar[tuple[str, ...]] = ()
    SPACES_OF: ClassVar[dict[str, tuple[str, ...]]] = {}
    windows = var_operand_def()
    sizes = opt_attr_def(DenseArrayBase)

    def __init__(
        self,
        accesses: Sequence[tuple[SSAValue, Sequence[SSAValue]]],
        sizes: Sequence[int],
        attributes: dict[str, Attribute] | None = None,
    ):
        flat: list[SSAValue] = []
        for buffer, indices in accesses:
            flat += [buffer, *indices]
        attrs = {"sizes": DenseArrayBase.from_list(i64, list(sizes)), **(attributes or {})}
        super().__init__(operands=[flat], attributes=attrs)

    # -- structure
    def accesses(self) -> list[tuple[SSAValue, tuple[SSAValue, ...]]]:
        """(buffer, indices) per name in ACCESSES: each buffer takes the `index` operands that
        follow it (so a wrong count is reported against the buffer's rank, not misparsed)."""
        return list(self._windows())

    def _windows(self) -> tuple[tuple[SSAValue, tuple[SSAValue, ...]], ...]:
        """`accesses`, memoised against the operand tuple (passes query it in hot loops): xDSL
        keeps the operands in an immutable tuple that any change replaces, so the same tuple
        object means the same operands."""
        # xDSL 0.74 has no public API for the operand tuple itself (`operands` makes a new view
        # on every call) (upstream gap): the memo keys on `Operation._operands`.
        operands = self._operands
        cached = vars(self).get("_accesses")
        if cached is not None and cached[0] is operands:
            return cached[1]
        result = tuple(self._split_accesses(list(operands)))
        vars(self)["_accesses"] = (operands, result)
        return result

    def _split_accesses(self, operands: list[SSAValue]) -> list[tuple[SSAValue, tuple[SSAValue, ...]]]:
        result, position = [], 0
        for _ in self.ACCESSES:
            _require(position < len(operands), f"{self.name} needs {len(self.ACCESSES)} windows")
            buffer = operands[position]
            _require(isinstance(buffer.type, MemRefType), f"{self.name}: operand {position} must be a buffer")
            end = position + 1
            while end < len(operands) and isinstance(operands[end].type, IndexType):
                end += 1
            result.append((buffer, tuple(operands[position + 1 : end])))
            position = end
        _require(position == len(operands), f"{self.name}: {len(operands) - position} extra operand(s)")
        return result

    def access(self, name: str) -> tuple[SSAValue, tuple[SSAValue, ...]]:
        return self._windows()[self.ACCESSES.index(name)]

    def access_type(self, name: str) -> MemRefType:
        """The memref type of access `name`'s buffer (`_split_accesses` checks that it is one)."""
        return memref_of(self.access(name)[0])

    def box(self) -> tuple[int, ...]:
        """The `sizes` values (decoded once per `sizes` attribute: attributes are immutable)."""
        sizes = self.sizes
        cached = vars(self).get("_box")
        if cached is not None and cached[0] is sizes:
            return cached[1]
        box = tuple(int(v) for v in sizes.get_values()) if sizes is not None else ()  # pyright: ignore[reportAttributeAccessIssue]  -- xDSL 0.74 overloads DenseArrayBase.get_values for int or float arrays, not the unparametrized field type (upstream gap)
        vars(self)["_box"] = (sizes, box)
        return box

    # -- verification
    def verify_(self) -> None:
        for name, (buffer, indices) in zip(self.ACCESSES, self._windows(), strict=True):
            type_ = _verify_buffer_type(buffer.type, f"{self.name} '{name}'")
            rank = len(type_.get_shape())
            _require(
                len(indices) == rank,
                f"{self.name} '{name}': a rank-{rank} buffer needs {rank} indices, got {len(indices)}",
            )
            allowed = self.SPACES_OF.get(name, SPACES)
            _require(space_of(type_) in allowed, f"{self.name} '{name}' must be in {'/'.join(allowed)}")
        self.verify_window()

    def verify_window(self) -> None:
        """Per-op rules on `sizes` against the buffers (static parts only)."""

    def window_shape(self, name: str) -> tuple[int, ...]:
        """The box of access `name` (matmul overrides: its accesses have different boxes)."""
        return self.box()

    def _verify_fits(self, name: str) -> None:
        indices = self.access(name)[1]
        shape = tuple(self.access_type(name).get_shape())
        box = self.window_shape(name)
        if len(box) != len(shape):
            raise VerifyException(f"{self.name} '{name}': sizes need {len(shape)} values, got {list(box)}")
        if not all(0 < b <= d for b, d in zip(box, shape, strict=True)):
            raise VerifyException(
                f"{self.name} '{name}': window {list(box)} does not fit buffer {list(shape)}"
            )
        starts = [_constant_index(i) for i in indices]
        if not all(s is None or 0 <= s <= d - b for s, b, d in zip(starts, box, shape, strict=True)):
            raise VerifyException(
                f"{self.name} '{name}': window {list(box)} at constant indices "
                f"{['?' if s is None else s for s in starts]} leaves buffer {list(shape)}"
            )

    # -- syntax: tile.<op> %a[%i, %j], ... to %d[%k, %l] sizes [..] {attrs} : type(a), ..., type(d)
    def print(self, printer: Printer) -> None:
        accesses = self.accesses()
        for index, (buffer, indices) in enumerate(accesses):
            separator = " to " if index == len(accesses) - 1 and index else (", " if index else " ")
            printer.print_string(separator)
            printer.print_operand(buffer)
            printer.print_string("[")
            printer.print_list(indices, printer.print_operand)
            printer.print_string("]")
        printer.print_string(f" sizes [{', '.join(str(v) for v in self.box())}]")
        printer.print_op_attributes(self.attributes, reserved_attr_names=("sizes",))
        printer.print_string(" : ")
        printer.print_list([b.type for b, _ in accesses], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> WindowOp:
        windows: list[tuple[UnresolvedOperand, list[UnresolvedOperand]]] = []
        for index in range(len(cls.ACCESSES)):
            if index == len(cls.ACCESSES) - 1 and index:
                parser.parse_keyword("to")
            elif index:
                parser.parse_punctuation(",")
            buffer = parser.parse_unresolved_operand()
            indices = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, parser.parse_unresolved_operand, " (window indices)"
            )
            windows.append((buffer, indices))
        parser.parse_keyword("sizes")
        sizes = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        if len(types) != len(windows):
            parser.raise_error(f"expected {len(windows)} buffer types, got {len(types)}")
        index_type = IndexType()
        accesses = [
            (parser.resolve_operand(b, t), [parser.resolve_operand(i, index_type) for i in idx])
            for (b, idx), t in zip(windows, types, strict=True)
        ]
        return cls(accesses, sizes, attributes)


class ElementwiseWindowOp(WindowOp):
    """Base of vector-engine ops on 2-D windows; `dtype` is implied by the buffers."""

    MIXED_TYPES: ClassVar[bool] = False
    """Whether the windows may differ in element type (only tile.cast converts)."""

    SOURCE_TYPES: ClassVar[tuple[str, ...]] = ()
    """Element types beyond DTYPES that the `a` window may have (tile.cast: i64 indices)."""

    def element_types(self) -> dict[str, str]:
        """The element type ("f32", "i32", "i8", ...) of each access's buffer, by name."""
        return {name: element_name(self.access_type(name)) for name in self.ACCESSES}

    def dtype(self) -> str:
        """The element type the op computes in (its first window's)."""
        return self.element_types()[self.ACCESSES[0]]

    def verify_window(self) -> None:
        box = self.box()
        _require(len(box) >= 1, f"{self.name}: sizes must describe a window")
        _require(all(b == 1 for b in box[:-2]), f"{self.name}: only the last two sizes may exceed 1")
        for name in self.ACCESSES:
            self._verify_fits(name)
        elements = self.element_types()
        odd = sorted(
            {e for n, e in elements.items() if e not in DTYPES and not (n == "a" and e in self.SOURCE_TYPES)}
        )
        _require(
            not odd, f"{self.name}: the vector engine works on {', '.join(DTYPES)}, not {', '.join(odd)}"
        )
        _require(
            len(set(elements.values())) == 1 or self.MIXED_TYPES,
            f"{self.name}: windows differ in element type",
        )


@irdl_op_definition
class CopyOp(WindowOp):
    """DMA: copies the window of `src` to the window of `dst` (same box, same element type).
    Any space to any space except dram -> dram (no hw DMA does that) and acc <-> dram (ACC data
    is staged through sram at this level, although hw.dma_in/dma_out could address ACC).

    ```mlir
    tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [32, 64]
        : memref<128x64xf32, "dram">, memref<32x64xf32, "sram">
    ```
    """

    name = "tile.copy"
    ACCESSES: ClassVar[tuple[str, ...]] = ("src", "dst")

    def verify_window(self) -> None:
        self._verify_fits("src")
        self._verify_fits("dst")
        (src, _), (dst, _) = self._windows()
        _require(
            self.access_type("src").get_element_type() == self.access_type("dst").get_element_type(),
            "tile.copy keeps the element type",
        )
        pair = {space_of(src), space_of(dst)}
        _require(pair != {"acc", "dram"}, "tile.copy between acc and dram: go through sram")
        _require(pair != {"dram"}, "tile.copy dram -> dram: go through sram")


@irdl_op_definition
class MatmulOp(WindowOp):
    """acc[m x n] (+)= lhs[m x k] @ rhs[k x n] (rhs[n x k] with `transpose_rhs`); f32 -> f32 or
    i8 -> i32. sizes = [m, k, n]; every window is 2-D.

    ```mlir
    tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [32, 64, 32] {accumulate}
        : memref<32x64xf32, "sram">, memref<64x32xf32, "sram">, memref<32x32xf32, "acc">
    ```
    """

    name = "tile.matmul"
    ACCESSES: ClassVar[tuple[str, ...]] = ("lhs", "rhs", "acc")
    SPACES_OF: ClassVar[dict[str, tuple[str, ...]]] = {"lhs": ("sram",), "rhs": ("sram",), "acc": ("acc",)}
    accumulate = opt_attr_def(UnitAttr)
    transpose_rhs = opt_attr_def(UnitAttr)

    def window_shape(self, name: str) -> tuple[int, ...]:
        m, k, n = self.box()
        if name == "lhs":
            return (m, k)
        if name == "rhs":
            return (n, k) if self.transpose_rhs is not None else (k, n)
        return (m, n)

    def verify_window(self) -> None:
        _require(len(self.box()) == 3, "tile.matmul: sizes are [m, k, n]")
        for name in self.ACCESSES:
            self._verify_fits(name)
        lhs, rhs, acc = (self.access_type(n).get_element_type() for n in self.ACCESSES)
        _require(lhs == rhs, "tile.matmul: lhs and rhs need one element type")
        expected = {"f32": "f32", "i8": "i32"}.get(str(lhs))
        _require(
            expected is not None and str(acc) == expected,
            f"tile.matmul: f32 inputs accumulate in f32, i8 inputs in i32; got {lhs} inputs, {acc} acc",
        )


@irdl_op_definition
class BinaryOp(ElementwiseWindowOp):
    """dst = a <op> b on 2-D windows (op from hw.BINARY_OPS); `broadcast` = none | row | col |
    scalar says how b's window spreads (row: b is 1 x cols, col: rows x 1, scalar: 1 x 1).

    ```mlir
    tile.binary %a[%c0, %c0], %b[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "add", broadcast = "row"}
        : memref<8x64xf32, "sram">, memref<1x64xf32, "sram">, memref<8x64xf32, "sram">
    ```
    """

    name = "tile.binary"
    ACCESSES: ClassVar[tuple[str, ...]] = ("a", "b", "dst")
    SPACES_OF: ClassVar[dict[str, tuple[str, ...]]] = {"a": ("sram", "acc"), "b": ("sram",), "dst": ("sram",)}
    op = opt_attr_def(StringAttr)
    broadcast = opt_attr_def(StringAttr)

    def window_shape(self, name: str) -> tuple[int, ...]:
        box = self.box()
        if name != "b":
            return box
        mode = self.broadcast.data if self.broadcast is not None else "none"
        rows, cols = (1, *box)[-2:]  # a 1-D box is one row
        lead = box[:-2]
        return {"none": box, "row": (*lead, 1, cols), "col": (*lead, rows, 1), "scalar": (*lead, 1, 1)}[mode][
            -len(box) :
        ]

    def verify_window(self) -> None:
        _require(
            self.op is not None and self.op.data in BINARY_OPS,
            f"tile.binary: op must be one of {', '.join(BINARY_OPS)}",
        )
        mode = self.broadcast.data if self.broadcast is not None else "none"
        _require(mode in ("none", "row", "col", "scalar"), f"tile.binary: unknown broadcast '{mode}'")
        super().verify_window()
        assert self.op is not None
        _require(self.op.data != "div" or self.dtype() == "f32", "tile.binary: div works on f32 only")


@irdl_op_definition
class BinaryImmOp(ElementwiseWindowOp):
    """dst = a <op> imm with an immediate scalar (e.g. scaling, relu = max with 0); for i8/i32
    windows `imm` is a whole number of that type (as hw.vimm).

    ```mlir
    tile.binary_imm %a[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "mul", imm = 0.125 : f64}
        : memref<8x64xf32, "sram">, memref<8x64xf32, "sram">
    ```
    """

    name = "tile.binary_imm"
    ACCESSES: ClassVar[tuple[str, ...]] = ("a", "dst")
    SPACES_OF: ClassVar[dict[str, tuple[str, ...]]] = {"a": ("sram", "acc"), "dst": ("sram",)}
    op = opt_attr_def(StringAttr)
    imm = opt_attr_def(FloatAttr)

    def verify_window(self) -> None:
        _require(
            self.op is not None and self.op.data in BINARY_OPS,
            f"tile.binary_imm: op must be one of {', '.join(BINARY_OPS)}",
        )
        _require(self.imm is not None, "tile.binary_imm needs imm")
        super().verify_window()
        assert self.imm is not None
        imm, dtype = self.imm.value.data, self.dtype()
        if dtype != "f32":
            bits = 8 * DTYPES[dtype]
            low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            _require(
                float(imm).is_integer() and low <= imm <= high,
                f"tile.binary_imm: imm {imm} must be a whole number in [{low}, {high}] for {dtype}",
            )


@irdl_op_definition
class UnaryOp(ElementwiseWindowOp):
    """dst = f(a) on 2-D windows (f from hw.UNARY_OPS; copy, neg, abs and relu on any dtype, the
    rest on f32).

    ```mlir
    tile.unary %a[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "exp"}
        : memref<8x64xf32, "sram">, memref<8x64xf32, "sram">
    ```
    """

    name = "tile.unary"
    ACCESSES: ClassVar[tuple[str, ...]] = ("a", "dst")
    SPACES_OF: ClassVar[dict[str, tuple[str, ...]]] = {"a": ("sram", "acc"), "dst": ("sram",)}
    op = opt_attr_def(StringAttr)

    def verify_window(self) -> None:
        _require(
            self.op is not None and self.op.data in UNARY_OPS,
            f"tile.unary: op must be one of {', '.join(UNARY_OPS)}",
        )
        super().verify_window()
        assert self.op is not None
        _require(
            self.op.data not in FLOAT_UNARY or self.dtype() == "f32",
            f"tile.unary: {self.op.data} works on f32 only",
        )


@irdl_op_definition
class SelectOp(ElementwiseWindowOp):
    """dst = cond != 0 ? a : b on 2-D windows.

    ```mlir
    tile.select %c[%c0, %c0], %a[%c0, %c0], %b[%c0, %c0] to %d[%c0, %c0] sizes [8, 64]
        : memref<8x64xf32, "sram">, memref<8x64xf32, "sram">, memref<8x64xf32, "sram">,
          memref<8x64xf32, "sram">
    ```
    """

    name = "tile.select"
    ACCESSES: ClassVar[tuple[str, ...]] = ("cond", "a", "b", "dst")
    SPACES_OF: ClassVar[dict[str, tuple[str, ...]]] = {n: ("sram",) for n in ("cond", "a", "b", "dst")}


@irdl_op_definition
class ReduceOp(ElementwiseWindowOp):
    """Row reduction: dst[r, 0] = sum/max over the cols of row r of the window. The dst window
    is a dense column (rows x 1 in a buffer whose last dim is 1), as hw.vreduce writes it.

    ```mlir
    tile.reduce %a[%c0, %c0] to %d[%c0, %c0] sizes [8, 64] {op = "max"}
        : memref<8x64xf32, "sram">, memref<8x1xf32, "sram">
    ```
    """

    name = "tile.reduce"
    ACCESSES: ClassVar[tuple[str, ...]] = ("a", "dst")
    SPACES_OF: ClassVar[dict[str, tuple[str, ...]]] = {"a": ("sram", "acc"), "dst": ("sram",)}
    op = opt_attr_def(StringAttr)

    def window_shape(self, name: str) -> tuple[int, ...]:
        box = self.box()
        return box if name == "a" else (*box[:-1], 1)

    def verify_window(self) -> None:
        _require(self.op is not None and self.op.data in ("sum", "max"), "tile.reduce: op must be sum or max")
        super().verify_window()
        rows = self.box()[-2] if len(self.box()) >= 2 else 1
        dst_shape = self.access_type("dst").get_shape()
        _require(
            rows == 1 or dst_shape[-1] == 1,
            f"tile.reduce: dst must be a dense column (last dim 1), got {list(dst_shape)}",
        )


@irdl_op_definition
class CastOp(ElementwiseWindowOp):
    """dst = convert(a * scale) between f32/i32/i8 (rounding half to even, saturating), as
    hw.vcast, with an optional `zero` point on the integer side (added after rounding when `dst`
    is an integer, subtracted from an integer `a` before scaling when `dst` is f32). Also
    i64 -> i32 without scale, for gather indices (ONNX index tensors are i64): values in the i32
    range are kept; `convert-sync-to-hw` lowers it to a strided copy of the low 32-bit words
    (little-endian), not to hw.vcast.

    ```mlir
    tile.cast %a[%c0, %c0] to %d[%c0, %c0] sizes [8, 32] {scale = 0.0125 : f64}
        : memref<8x32xi32, "acc">, memref<8x32xi8, "sram">
    tile.cast %q[%c0, %c0] to %x[%c0, %c0] sizes [8, 32] {scale = 0.5 : f64, zero = -128 : i64}
        : memref<8x32xi8, "sram">, memref<8x32xf32, "sram">
    tile.cast %ids[%c0, %c0] to %i[%c0, %c0] sizes [16, 1]
        : memref<16x1xi64, "sram">, memref<16x1xi32, "sram">
    ```
    """

    name = "tile.cast"
    ACCESSES: ClassVar[tuple[str, ...]] = ("a", "dst")
    SPACES_OF: ClassVar[dict[str, tuple[str, ...]]] = {"a": ("sram", "acc"), "dst": ("sram",)}
    MIXED_TYPES: ClassVar[bool] = True
    SOURCE_TYPES: ClassVar[tuple[str, ...]] = ("i64",)
    scale = opt_attr_def(FloatAttr)
    zero = opt_attr_def(IntegerAttr)

    @property
    def scale_value(self) -> float:
        return self.scale.value.data if self.scale is not None else 1.0

    @property
    def zero_value(self) -> int:
        return self.zero.value.data if self.zero is not None else 0

    def verify_window(self) -> None:
        super().verify_window()
        elements = self.element_types()
        scale, zero = self.scale_value, self.zero_value
        _require(
            elements["a"] != elements["dst"] or scale != 1.0 or zero != 0, "tile.cast: nothing to convert"
        )
        _require(
            elements["a"] != "i64" or (elements["dst"] == "i32" and scale == 1.0 and zero == 0),
            "tile.cast: i64 converts only to i32, without scale or zero point (index narrowing)",
        )
        _require(
            zero == 0 or (elements["a"], elements["dst"]) != ("f32", "f32"),
            "tile.cast: a zero point needs an integer side (a or dst i8/i32)",
        )
        _require(-(2**31) <= zero < 2**31, f"tile.cast: zero point {zero} does not fit in i32")


@irdl_op_definition
class AccReadOp(ElementwiseWindowOp):
    """ACC -> SRAM with an optional fused activation (hw.acc_read); i32 windows allow none,
    relu and relu6.

    ```mlir
    tile.acc_read %acc[%c0, %c0] to %y[%c0, %c0] sizes [32, 32] {activation = "relu"}
        : memref<32x32xf32, "acc">, memref<32x32xf32, "sram">
    ```
    """

    name = "tile.acc_read"
    ACCESSES: ClassVar[tuple[str, ...]] = ("a", "dst")
    SPACES_OF: ClassVar[dict[str, tuple[str, ...]]] = {"a": ("acc",), "dst": ("sram",)}
    activation = opt_attr_def(StringAttr)

    def verify_window(self) -> None:
        mode = self.activation.data if self.activation is not None else "none"
        _require(mode in ACTIVATIONS, f"tile.acc_read: activation must be one of {', '.join(ACTIVATIONS)}")
        super().verify_window()
        integer_ok = ("none", "relu", "relu6")
        _require(
            self.dtype() == "f32" or mode in integer_ok,
            f"tile.acc_read: activation {mode} needs f32 ({self.dtype()} allows {'/'.join(integer_ok)})",
        )


@irdl_op_definition
class TransposeOp(WindowOp):
    """DMA with a transpose: dst window (cols x rows) = src window (rows x cols) transposed;
    sizes are the src box (2-D). Lowered to column-wise strided DMAs.

    ```mlir
    tile.transpose %a[%c0, %c0] to %t[%c0, %c0] sizes [8, 16]
        : memref<8x16xf32, "sram">, memref<16x8xf32, "sram">
    ```
    """

    name = "tile.transpose"
    ACCESSES: ClassVar[tuple[str, ...]] = ("src", "dst")

    def window_shape(self, name: str) -> tuple[int, ...]:
        box = self.box()
        return box if name == "src" else (*box[:-2], box[-1], box[-2])

    def verify_window(self) -> None:
        _require(len(self.box()) >= 2, "tile.transpose: sizes need at least 2 dims")
        self._verify_fits("src")
        self._verify_fits("dst")
        (src, _), (dst, _) = self._windows()
        _require(
            self.access_type("src").get_element_type() == self.access_type("dst").get_element_type(),
            "tile.transpose keeps the element type",
        )
        pair = {space_of(src), space_of(dst)}
        _require(pair <= {"sram", "dram"}, "tile.transpose moves dram/sram data")
        _require(pair != {"dram"}, "tile.transpose dram -> dram: go through sram")


@irdl_op_definition
class GatherOp(WindowOp):
    """DMA gather (embedding lookup): for r < sizes[0], dst row r = table row indices[r] (i32
    indices in SRAM, a column window rows x 1); sizes = [rows, row length]. An index outside
    the table is an error at run time.

    ```mlir
    tile.gather %table[%c0, %c0], %ids[%c0, %c0] to %e[%c0, %c0] sizes [16, 64]
        : memref<1000x64xf32, "dram">, memref<16x1xi32, "sram">, memref<16x64xf32, "sram">
    ```
    """

    name = "tile.gather"
    ACCESSES: ClassVar[tuple[str, ...]] = ("table", "indices", "dst")
    SPACES_OF: ClassVar[dict[str, tuple[str, ...]]] = {
        "table": ("dram",),
        "indices": ("sram",),
        "dst": ("sram",),
    }

    def window_shape(self, name: str) -> tuple[int, ...]:
        rows, length = self.box()
        table_rows = self.access_type("table").get_shape()[0]
        return {"table": (table_rows, length), "indices": (rows, 1), "dst": (rows, length)}[name]

    def verify_window(self) -> None:
        _require(len(self.box()) == 2, "tile.gather: sizes are [rows, row length]")
        for name in self.ACCESSES:
            self._verify_fits(name)
        index_type = element_name(self.access_type("indices"))
        _require(index_type == "i32", f"tile.gather: indices must be i32, got {index_type}")


@irdl_op_definition
class ReshapeOp(IRDLOperation):
    """A view of the same bytes with another (row-major) shape: no data moves.

    ```mlir
    %v = tile.reshape %b : memref<4x8x16xf32, "dram"> -> memref<32x16xf32, "dram">
    ```
    """

    name = "tile.reshape"
    source = operand_def(MemRefType)
    result = result_def(MemRefType)
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, shape: Sequence[int]):
        type_ = source.type
        assert isinstance(type_, MemRefType)
        result = buffer_type(shape, type_.get_element_type(), space_of(type_))
        super().__init__(operands=[source], result_types=[result])

    def verify_(self) -> None:
        src = _verify_buffer_type(self.source.type, "tile.reshape source")
        dst = _verify_buffer_type(self.result.type, "tile.reshape result")
        _require(space_of(src) == space_of(dst), "tile.reshape keeps the memory space")
        _require(src.get_element_type() == dst.get_element_type(), "tile.reshape keeps the element type")
        count = lambda t: math.prod(t.get_shape())  # noqa: E731
        _require(count(src) == count(dst), f"tile.reshape changes the element count: {src} -> {dst}")


# --------------------------------------------------------------------------- structure


@irdl_op_definition
class KernelOp(IRDLOperation):
    """The tile ops lowered from one graph op, with the decisions that shaped them as attributes
    (e.g. `tiles`, `depth`, `cost`, `dma_bytes`, `reason`) and the ONNX node as location. Runs its
    body once, in place (not isolated: it uses the function's buffers).

    ```mlir
    tile.kernel "fc1" {op = "graph.matmul", tiles = array<i64: 32, 64, 32>} {
      tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [32, 64]
          : memref<32x64xf32, "dram">, memref<32x64xf32, "sram">
    }
    tile.kernel "relu1" {
    }
    ```
    """

    name = "tile.kernel"
    sym = opt_attr_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(
        self, name: str, ops: Sequence[Operation] = (), attributes: dict[str, Attribute] | None = None
    ):
        super().__init__(
            attributes={"sym": StringAttr(name), **(attributes or {})}, regions=[Region(Block(list(ops)))]
        )

    def print(self, printer: Printer) -> None:
        assert self.sym is not None
        printer.print_string(" ")
        printer.print_string_literal(self.sym.data)
        printer.print_op_attributes(self.attributes, reserved_attr_names=("sym",))
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    def verify_(self) -> None:
        _require(self.sym is not None, "tile.kernel needs a name (sym)")

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name = parser.parse_str_literal()
        attributes, body = cls._parse_attributes_and_body(parser)
        op = cls(name, (), attributes)
        if body.blocks:
            op.body.detach_block(0).erase()
            op.body.add_block(body.detach_block(0))
        return op

    @staticmethod
    def _parse_attributes_and_body(parser: Parser) -> tuple[dict[str, Attribute], Region]:
        """`{attrs} {body}`, or just `{body}`: both start with `{`, so try the attribute dict
        first and backtrack when the braces hold ops (`{}` alone is an empty body)."""
        start = parser.pos
        try:
            attributes = parser.parse_optional_attr_dict()
        except ParseError:
            parser._resume_from(start)  # xDSL 0.74 has no public API to backtrack a parser (upstream gap)
            return {}, parser.parse_region()
        braces = parser.pos != start
        body = parser.parse_optional_region()
        if body is not None:
            return attributes, body
        if not braces or attributes:
            parser.raise_error("tile.kernel expects a body { ... }")
        return {}, Region(Block())


def enclosing_kernel(op: Operation) -> KernelOp | None:
    """The innermost tile.kernel holding `op`, None outside any."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, KernelOp):
        parent = parent.parent_op()
    return parent


def narrows_i64(op: CastOp) -> bool:
    """Whether `op` is the i64 -> i32 index narrowing (a DMA of low words, not a vector op)."""
    return element_name(op.access_type("a")) == "i64"


COMPUTE_OPS: tuple[type[WindowOp], ...] = (
    CopyOp, TransposeOp, GatherOp, MatmulOp, BinaryOp, BinaryImmOp, UnaryOp, SelectOp, ReduceOp,
    CastOp, AccReadOp,
)  # fmt: skip
"""The ops that an engine executes (convert-tile-to-sync binds each to one)."""

ENGINE_OF: dict[type[WindowOp], str] = {
    CopyOp: "dma", TransposeOp: "dma", GatherOp: "dma", MatmulOp: "matrix", BinaryOp: "vector",
    BinaryImmOp: "vector", UnaryOp: "vector", SelectOp: "vector", ReduceOp: "vector", CastOp: "vector",
    AccReadOp: "vector",
}  # fmt: skip
"""Engine class of each compute op type (DMA queue chosen by convert-tile-to-sync)."""


def engine_class(op: WindowOp) -> str:
    """ "dma", "matrix" or "vector": the engine class that executes `op`. The i64 -> i32 index
    narrowing cast is a DMA of low words (the vector engine has no i64 lanes)."""
    if isinstance(op, CastOp) and narrows_i64(op):
        return "dma"
    return ENGINE_OF[type(op)]


Tile = Dialect("tile", [AllocOp, ConstOp, ReshapeOp, KernelOp, *COMPUTE_OPS], [])
