"""The `hw` dialect: the instruction set of aitc's virtual NPU, one op per instruction.

A program is a `hw.program` holding its data layout (`hw.tensor` input/output descriptors and
`hw.const` weight segments, all at absolute DRAM addresses) and one `hw.core` per core, whose
body is that core's instruction stream ending in `hw.end`. Instructions read like assembly:

    hw.dma_in sram[0x4000] <- dram[0x100000], rows=32, row_bytes=128, src_stride=512
    hw.matmul acc[0x0] <- sram[0x0], sram[0x1000], m=32, k=32, n=32, accumulate
    hw.sem_signal 3, engine=matrix
    hw.loop 8 {
      hw.dma_in sram[0x0 + 0x200*i0] <- dram[0x8000 + 0x800*i0], rows=4, row_bytes=512
    }

Addresses are byte addresses `space[base + step*iD ...]`; `iD` is the index of the enclosing
`hw.loop` at nesting depth D (outermost = i0), so hardware loops advance addresses without
unrolling. Engines per core: `dma0` .. `dma{q-1}` (q = target DMA queues; `dma0` is the default
for loads, `dma1` for stores), `matrix`, `vector`. Semaphores are per-core counters; a wait
names the engine that blocks.

The simulator (`aitc/sim/`) is the living definition of every instruction: each op's docstring
points at the function that executes it. Field lists (`FIELDS`) drive one generic parser/printer,
the binary encoder (`aitc/binary.py`) and the simulator's decoder, so they cannot drift apart.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, ParametrizedAttribute, Region
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    opt_attr_def,
    region_def,
    traits_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, NoTerminator
from xdsl.utils.exceptions import VerifyException

from aitc.xdsl_fixes import float_literal, parse_float_literal

SPACES = ("dram", "sram", "acc")
DTYPES = {"f32": 4, "i32": 4, "i8": 1}
"""Element types the engines understand, with their sizes in bytes."""

# --------------------------------------------------------------------------- addresses


@irdl_attr_definition
class AddressAttr(ParametrizedAttribute):
    """A byte address in one memory space, advanced by enclosing hardware loops:
    `#hw.addr<sram[0x4000 + 0x200*i0]>` = 0x4000 + 0x200 * (index of the depth-0 loop)."""

    name = "hw.addr"
    space: StringAttr
    base: IntAttr
    steps: ArrayAttr[IntAttr]

    def __init__(self, space: str, base: int, steps: Sequence[int] = ()):
        trimmed = list(steps)
        while trimmed and trimmed[-1] == 0:
            trimmed.pop()
        super().__init__(StringAttr(space), IntAttr(base), ArrayAttr([IntAttr(s) for s in trimmed]))

    @property
    def step_values(self) -> tuple[int, ...]:
        return tuple(s.data for s in self.steps.data)

    def text(self) -> str:
        parts = [f"0x{self.base.data:x}"]
        for depth, step in enumerate(self.step_values):
            if step:
                parts.append(f"{'-' if step < 0 else '+'} 0x{abs(step):x}*i{depth}")
        return f"{self.space.data}[{' '.join(parts)}]"

    def verify(self) -> None:
        if self.space.data not in SPACES:
            raise VerifyException(f"unknown memory space '{self.space.data}' (expected {', '.join(SPACES)})")
        if self.base.data < 0:
            raise VerifyException(f"negative address {self.base.data}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            value = parse_address(parser)
        return (value.space, value.base, value.steps)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.text()}>")


def parse_address(parser: AttrParser) -> AddressAttr:
    """`space[base (+|-) step*iD ...]`, the assembly form of an address."""
    space = parser.parse_identifier(" (memory space: dram, sram or acc)")
    if space not in SPACES:
        parser.raise_error(f"unknown memory space '{space}' (expected {', '.join(SPACES)})")
    parser.parse_punctuation("[")
    base = parser.parse_integer(allow_boolean=False)
    steps: dict[int, int] = {}
    while True:
        sign = 1
        if parser.parse_optional_punctuation("+") is None:
            if parser.parse_optional_punctuation("-") is None:
                break
            sign = -1
        step = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_punctuation("*")
        index = parser.parse_identifier(" (loop index i0, i1, ...)")
        if not (index.startswith("i") and index[1:].isdigit()):
            parser.raise_error(f"expected a loop index like i0, got '{index}'")
        steps[int(index[1:])] = steps.get(int(index[1:]), 0) + sign * step
    parser.parse_punctuation("]")
    depth = max(steps) + 1 if steps else 0
    return AddressAttr(space, base, [steps.get(d, 0) for d in range(depth)])


# --------------------------------------------------------------------------- instruction fields


@dataclass(frozen=True)
class Field:
    """One operand field of an instruction.

    kind: "addr" (positional, `spaces` allowed), "int", "float", "enum" (`choices`), "flag".
    Positional address fields print before (`dst`) or after (`src`) the `<-` arrow; the rest
    print as `key=value` (flags as a bare word) after a comma, omitted when equal to `default`.
    """

    name: str
    kind: str
    spaces: tuple[str, ...] = ()
    default: object = None
    choices: tuple[str, ...] = ()
    role: str = ""  # for addr: "dst" or "src"; for others: "" (keyword) or "pos" (before the arrow)


def dst(name: str, *spaces: str) -> Field:
    return Field(name, "addr", spaces=spaces, role="dst")


def src(name: str, *spaces: str) -> Field:
    return Field(name, "addr", spaces=spaces, role="src")


def num(name: str, default: int | None = None) -> Field:
    return Field(name, "int", default=default)


def real(name: str, default: float | None = None) -> Field:
    return Field(name, "float", default=default)


def enum(name: str, choices: Sequence[str], default: str | None = None) -> Field:
    return Field(name, "enum", choices=tuple(choices), default=default)


def flag(name: str) -> Field:
    return Field(name, "flag", default=False)


def positional_int(name: str) -> Field:
    return Field(name, "int", role="pos")


ENGINES_DOC = "dma0..dma{q-1}, matrix, vector (aliases: dma_in = dma0, dma_out = dma1)"


def _encode(field: Field, value: object) -> Attribute:
    if field.kind == "addr":
        assert isinstance(value, AddressAttr)
        return value
    if field.kind == "int":
        return IntegerAttr(int(value), i64)  # pyright: ignore
    if field.kind == "float":
        return FloatAttr(float(value), f64)  # pyright: ignore
    if field.kind == "enum":
        return StringAttr(str(value))
    return UnitAttr()


def _decode(field: Field, attr: Attribute | None) -> object:
    if attr is None:
        return False if field.kind == "flag" else field.default
    if field.kind == "addr":
        return attr
    if field.kind == "int":
        assert isinstance(attr, IntegerAttr)
        return attr.value.data
    if field.kind == "float":
        assert isinstance(attr, FloatAttr)
        return attr.value.data
    if field.kind == "enum":
        assert isinstance(attr, StringAttr)
        return attr.data
    return True


class InstructionOp(IRDLOperation):
    """Base of every hw instruction: fields are discardable attributes named after `FIELDS`,
    parsed and printed by one generic assembly syntax (see `Field`)."""

    FIELDS: ClassVar[tuple[Field, ...]] = ()
    ENGINE: ClassVar[str] = ""  # engine class: "dma", "matrix", "vector", "control"
    traits = lazy_traits_def(lambda: (HasParent(CoreOp, LoopOp),))

    def __init__(self, **values: object):
        """Fields by name; fields at their default are left out, so built, printed and
        parsed instructions (and their binaries) are identical."""
        attributes = {}
        for field in self.FIELDS:
            value = values.pop(field.name, None)
            if value is None or (field.kind == "flag" and not value):
                continue
            if field.default is not None and value == field.default:
                continue  # canonical: a field at its default is absent, as the custom syntax prints it
            attributes[field.name] = _encode(field, value)
        if values:
            raise TypeError(f"{self.name}: unknown fields {sorted(values)}")
        super().__init__(attributes=attributes)

    def get(self, name: str) -> object:
        """The decoded value of field `name` (AddressAttr, int, float, str or bool)."""
        field = self.field(name)
        return _decode(field, self.attributes.get(name))

    def values(self) -> dict[str, object]:
        return {f.name: self.get(f.name) for f in self.FIELDS}

    @classmethod
    def field(cls, name: str) -> Field:
        for f in cls.FIELDS:
            if f.name == name:
                return f
        raise KeyError(f"{cls.name} has no field '{name}'")

    # -- verification shared by every instruction
    def verify_(self) -> None:
        depth = loop_depth(self)
        for field in self.FIELDS:
            attr = self.attributes.get(field.name)
            if attr is None:
                if field.default is None and field.kind != "flag":
                    raise VerifyException(f"{self.name} needs '{field.name}'")
                continue
            self._verify_field(field, attr, depth)
        unknown = set(self.attributes) - {f.name for f in self.FIELDS}
        if unknown:
            raise VerifyException(f"{self.name}: unknown field(s) {sorted(unknown)}")
        self.verify_instruction()

    def _verify_field(self, field: Field, attr: Attribute, depth: int) -> None:
        expected = {
            "addr": AddressAttr,
            "int": IntegerAttr,
            "float": FloatAttr,
            "enum": StringAttr,
            "flag": UnitAttr,
        }
        if not isinstance(attr, expected[field.kind]):
            raise VerifyException(f"{self.name}: field '{field.name}' must be {field.kind}")
        if isinstance(attr, AddressAttr):
            if field.spaces and attr.space.data not in field.spaces:
                raise VerifyException(
                    f"{self.name}: '{field.name}' must be in {'/'.join(field.spaces)}, got {attr.space.data}"
                )
            if len(attr.step_values) > depth:
                raise VerifyException(
                    f"{self.name}: '{field.name}' uses loop index i{depth} outside its loops"
                )
        if isinstance(attr, StringAttr) and field.choices and attr.data not in field.choices:
            raise VerifyException(
                f"{self.name}: '{field.name}' must be one of {', '.join(field.choices)}, got '{attr.data}'"
            )

    def verify_instruction(self) -> None:
        """Instruction-specific rules (sizes, alignment); target limits are checked by
        `aitc.hw_checks.check_program` against a Target."""

    # -- assembly syntax
    def print(self, printer: Printer) -> None:
        printer.print_string(" " + self.assembly_operands())

    def assembly_operands(self) -> str:
        pos = [str(self.get(f.name)) for f in self.FIELDS if f.role == "pos"]
        dsts = [self.get(f.name).text() for f in self.FIELDS if f.role == "dst"]  # pyright: ignore
        srcs = [self.get(f.name).text() for f in self.FIELDS if f.role == "src"]  # pyright: ignore
        head = ", ".join(pos + dsts)
        if srcs:
            head += (" <- " if head else "<- ") + ", ".join(srcs)
        keywords = []
        for f in self.FIELDS:
            if f.role:
                continue
            value = self.get(f.name)
            if f.kind == "flag":
                if value:
                    keywords.append(f.name)
            elif value is not None and value != f.default:
                keywords.append(f"{f.name}={_format_value(value)}")
        return ", ".join(p for p in [head, *keywords] if p)

    @classmethod
    def parse(cls, parser: Parser) -> InstructionOp:
        values: dict[str, object] = {}
        pos = [f for f in cls.FIELDS if f.role == "pos"]
        dsts = [f for f in cls.FIELDS if f.role == "dst"]
        srcs = [f for f in cls.FIELDS if f.role == "src"]
        leading = [*pos, *dsts]
        for index, field in enumerate(leading):
            if index:
                parser.parse_punctuation(",")
            values[field.name] = _parse_positional(parser, field)
        if srcs:
            parser.parse_punctuation("<")
            parser.parse_punctuation("-")
            for index, field in enumerate(srcs):
                if index:
                    parser.parse_punctuation(",")
                values[field.name] = parse_address(parser)
        keywords = {f.name: f for f in cls.FIELDS if not f.role}
        first = not (leading or srcs)
        while (first and keywords) or parser.parse_optional_punctuation(",") is not None:
            first = False
            key = parser.parse_identifier(" (instruction field)")
            if key not in keywords:
                parser.raise_error(f"{cls.name} has no field '{key}' (fields: {', '.join(keywords)})")
            field = keywords[key]
            if field.kind == "flag":
                values[key] = True
                continue
            parser.parse_punctuation("=")
            values[key] = _parse_value(parser, field)
        return cls(**values)


_PLAIN_FLOAT = re.compile(r"-?\d+\.\d*(e[+-]?\d+)?")
"""Python's repr of a float that is also an MLIR float literal (`0.5`, `1.5e-07`)."""


def _format_value(value: object) -> str:
    if isinstance(value, float):
        text = repr(value)  # shortest exact form; `1e+20`, `inf`, `nan` are no MLIR literals
        return text if _PLAIN_FLOAT.fullmatch(text) else float_literal(value)
    return str(value)


def _parse_positional(parser: Parser, field: Field) -> object:
    if field.kind == "addr":
        return parse_address(parser)
    return parser.parse_integer(allow_boolean=False)


def _parse_value(parser: Parser, field: Field) -> object:
    if field.kind == "int":
        return parser.parse_integer(allow_boolean=False)
    if field.kind == "float":
        return parse_float_literal(parser)
    value = parser.parse_identifier(f" (one of {', '.join(field.choices)})")
    if field.choices and value not in field.choices:
        parser.raise_error(f"'{field.name}' must be one of {', '.join(field.choices)}, got '{value}'")
    return value


def _adopt(region: Region, parsed: Region) -> None:
    """Replaces the (empty) block of `region` with the block parsed into `parsed` (`{ }` parses
    to a region without blocks: then the empty block stays)."""
    if not parsed.blocks:
        return
    region.detach_block(0).erase()
    region.add_block(parsed.detach_block(0))


def loop_depth(op: IRDLOperation) -> int:
    depth = 0
    parent = op.parent_op()
    while isinstance(parent, LoopOp):
        depth += 1
        parent = parent.parent_op()
    return depth


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise VerifyException(message)


# --------------------------------------------------------------------------- DMA engine

_DMA_COMMON = (num("rows", 1), num("row_bytes"), num("src_stride", 0), num("dst_stride", 0), num("queue", -1))


class DmaOp(InstructionOp):
    """Base of DMA instructions: `rows` rows of `row_bytes` bytes; strides in bytes between row
    starts (0 = dense, i.e. row_bytes). `queue` picks the DMA engine (-1 = the default)."""

    ENGINE: ClassVar[str] = "dma"

    def verify_instruction(self) -> None:
        _require(
            self.get("rows") >= 1 and self.get("row_bytes") >= 1,
            f"{self.name}: rows and row_bytes must be >= 1",
        )  # pyright: ignore
        for key in ("src_stride", "dst_stride"):
            _require(self.get(key) >= 0, f"{self.name}: {key} must be >= 0")  # pyright: ignore


@irdl_op_definition
class DmaInOp(DmaOp):
    """Strided copy DRAM -> SRAM (default engine dma0). Simulator: `aitc/sim/execute.py:dma_copy`.

    ```mlir
    hw.dma_in sram[0x4000] <- dram[0x100000], rows=32, row_bytes=128, src_stride=512
    ```
    """

    name = "hw.dma_in"
    FIELDS: ClassVar[tuple[Field, ...]] = (dst("dst", "sram", "acc"), src("src", "dram"), *_DMA_COMMON)


@irdl_op_definition
class DmaOutOp(DmaOp):
    """Strided copy SRAM -> DRAM (default engine dma1). Simulator: `aitc/sim/execute.py:dma_copy`.

    ```mlir
    hw.dma_out dram[0x200000] <- sram[0x0], rows=32, row_bytes=128, dst_stride=512
    ```
    """

    name = "hw.dma_out"
    FIELDS: ClassVar[tuple[Field, ...]] = (dst("dst", "dram"), src("src", "sram", "acc"), *_DMA_COMMON)


@irdl_op_definition
class DmaLocalOp(DmaOp):
    """Strided copy within one core: SRAM <-> SRAM, SRAM <-> ACC (default engine dma0).
    Simulator: `aitc/sim/execute.py:dma_copy`.

    ```mlir
    hw.dma_local sram[0x8000] <- acc[0x0], rows=32, row_bytes=128
    ```
    """

    name = "hw.dma_local"
    FIELDS: ClassVar[tuple[Field, ...]] = (dst("dst", "sram", "acc"), src("src", "sram", "acc"), *_DMA_COMMON)


@irdl_op_definition
class DmaPeerOp(DmaOp):
    """Strided copy from this core's SRAM into core `peer`'s SRAM over the core-to-core link
    (default engine dma1); the building block of collectives. Simulator: `aitc/sim/execute.py:dma_copy`.

    ```mlir
    hw.dma_peer sram[0x1000] <- sram[0x0], peer=1, rows=4, row_bytes=256
    ```
    """

    name = "hw.dma_peer"
    FIELDS: ClassVar[tuple[Field, ...]] = (dst("dst", "sram"), src("src", "sram"), num("peer"), *_DMA_COMMON)


@irdl_op_definition
class DmaGatherOp(DmaOp):
    """Indexed row gather DRAM -> SRAM: for r < rows, copies table row `index[r]` (i32 indices at
    `indices` in SRAM; table rows are `src_stride` bytes apart, `table_rows` of them) to
    dst + r * dst_stride. An index outside [0, table_rows) is a simulator error. Embedding lookup.
    Simulator: `aitc/sim/execute.py:dma_gather`.

    ```mlir
    hw.dma_gather sram[0x0] <- dram[0x100000], sram[0x8000], rows=128, row_bytes=1536, table_rows=30522
    ```
    """

    name = "hw.dma_gather"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("dst", "sram"),
        src("src", "dram"),
        src("indices", "sram"),
        *_DMA_COMMON,
        num("table_rows"),
    )

    def verify_instruction(self) -> None:
        super().verify_instruction()
        _require(self.get("table_rows") >= 1, "hw.dma_gather: table_rows must be >= 1")  # pyright: ignore


# --------------------------------------------------------------------------- matrix engine


@irdl_op_definition
class MatmulOp(InstructionOp):
    """acc (m x n) (+)= lhs (m x k) @ rhs (k x n; n x k with `transpose_rhs`), on the matrix
    engine. f32 x f32 -> f32 or i8 x i8 -> i32 (`dtype` names the input type). Strides are in
    elements between rows (0 = dense). k <= matrix rows and n <= matrix cols of the target.
    Cycles: latency + k (weights shift in) + m (rows stream through).
    Simulator: `aitc/sim/execute.py:matmul`.

    ```mlir
    hw.matmul acc[0x0] <- sram[0x0], sram[0x1000], m=64, k=32, n=32, accumulate
    ```
    """

    name = "hw.matmul"
    ENGINE: ClassVar[str] = "matrix"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("acc", "acc"), src("lhs", "sram"), src("rhs", "sram"),
        num("m"), num("k"), num("n"), enum("dtype", ("f32", "i8"), "f32"),
        num("lhs_stride", 0), num("rhs_stride", 0), num("acc_stride", 0),
        flag("accumulate"), flag("transpose_rhs"),
    )  # fmt: skip

    def verify_instruction(self) -> None:
        for key in ("m", "k", "n"):
            _require(self.get(key) >= 1, f"hw.matmul: {key} must be >= 1")  # pyright: ignore


# --------------------------------------------------------------------------- vector engine

_TILE = (num("rows", 1), num("cols"), enum("dtype", tuple(DTYPES), "f32"))
_STRIDES = (num("dst_stride", 0), num("src_stride", 0))


class VectorOp(InstructionOp):
    """Base of vector-engine instructions on rows x cols tiles (strides in elements between
    rows, 0 = dense). Cycles: latency + rows * ceil(cols / lanes) * op cycles. An operand in
    ACC holds 32-bit values (f32 or i32): the simulator refuses i8 views of ACC."""

    ENGINE: ClassVar[str] = "vector"
    FLOAT_ONLY: ClassVar[bool] = False

    def verify_instruction(self) -> None:
        rows, cols = self.get("rows"), self.get("cols")
        _require(rows >= 1 and cols >= 1, f"{self.name}: rows and cols must be >= 1")  # pyright: ignore
        if self.FLOAT_ONLY:
            _require(self.get("dtype") == "f32", f"{self.name} works on f32 only")
        source = self.attributes.get("a")
        if (
            isinstance(source, AddressAttr)
            and source.space.data == "acc"
            and "dtype" in {f.name for f in self.FIELDS}
        ):
            _require(self.get("dtype") in ("f32", "i32"), f"{self.name}: ACC holds 32-bit values, not i8")


BINARY_OPS = ("add", "sub", "mul", "div", "max", "min", "cmp_eq", "cmp_lt", "cmp_le", "cmp_gt", "cmp_ge")
UNARY_OPS = (
    "copy",
    "neg",
    "abs",
    "exp",
    "log",
    "tanh",
    "erf",
    "sqrt",
    "rsqrt",
    "recip",
    "relu",
    "sigmoid",
    "gelu",
)
FLOAT_UNARY = {"exp", "log", "tanh", "erf", "sqrt", "rsqrt", "recip", "sigmoid", "gelu"}
ACTIVATIONS = ("none", "relu", "relu6", "sigmoid", "tanh", "gelu", "gelu_tanh")


@irdl_op_definition
class VBinaryOp(VectorOp):
    """dst = a <op> b elementwise; `broadcast` says how b spreads over the tile: none (b is a
    rows x cols tile), row (b is one row of cols values), col (b is rows x 1), scalar (b is one
    value). Comparisons write 1 or 0 in `dtype`. Simulator: `aitc/sim/execute.py:vbinary`.

    ```mlir
    hw.vbinary sram[0x2000] <- sram[0x0], sram[0x1000], op=add, rows=8, cols=64, broadcast=row
    ```
    """

    name = "hw.vbinary"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("dst", "sram"), src("a", "sram", "acc"), src("b", "sram"), enum("op", BINARY_OPS),
        *_TILE, enum("broadcast", ("none", "row", "col", "scalar"), "none"), *_STRIDES, num("b_stride", 0),
    )  # fmt: skip

    def verify_instruction(self) -> None:
        super().verify_instruction()
        _require(
            not (self.get("op") == "div" and self.get("dtype") != "f32"), "hw.vbinary: div works on f32 only"
        )


@irdl_op_definition
class VImmOp(VectorOp):
    """dst = a <op> imm elementwise with an immediate scalar (e.g. relu = max with 0.0); for
    i8/i32 tiles `imm` must be an integer value of that type.
    Simulator: `aitc/sim/execute.py:vbinary`.

    ```mlir
    hw.vimm sram[0x2000] <- sram[0x0], op=mul, imm=0.125, rows=8, cols=64
    ```
    """

    name = "hw.vimm"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("dst", "sram"),
        src("a", "sram", "acc"),
        enum("op", BINARY_OPS),
        real("imm"),
        *_TILE,
        *_STRIDES,
    )

    def verify_instruction(self) -> None:
        super().verify_instruction()
        imm, dtype = self.get("imm"), self.get("dtype")
        if dtype != "f32":
            bits = 8 * DTYPES[str(dtype)]
            low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            _require(
                float(imm).is_integer() and low <= imm <= high,  # pyright: ignore
                f"hw.vimm: imm {imm} must be a whole number in [{low}, {high}] for {dtype}",
            )


@irdl_op_definition
class VUnaryOp(VectorOp):
    """dst = f(a) elementwise. Simulator: `aitc/sim/execute.py:vunary`.

    ```mlir
    hw.vunary sram[0x2000] <- sram[0x0], op=exp, rows=8, cols=64
    ```
    """

    name = "hw.vunary"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("dst", "sram"),
        src("a", "sram", "acc"),
        enum("op", UNARY_OPS),
        *_TILE,
        *_STRIDES,
    )

    def verify_instruction(self) -> None:
        super().verify_instruction()
        _require(
            not (self.get("op") in FLOAT_UNARY and self.get("dtype") != "f32"),
            f"hw.vunary: {self.get('op')} works on f32 only",
        )


@irdl_op_definition
class VSelectOp(VectorOp):
    """dst = cond != 0 ? a : b elementwise (cond in `dtype`, e.g. from a comparison).
    Simulator: `aitc/sim/execute.py:vselect`.

    ```mlir
    hw.vselect sram[0x3000] <- sram[0x0], sram[0x1000], sram[0x2000], rows=8, cols=64
    ```
    """

    name = "hw.vselect"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("dst", "sram"),
        src("cond", "sram"),
        src("a", "sram"),
        src("b", "sram"),
        *_TILE,
        *_STRIDES,
    )


@irdl_op_definition
class VReduceOp(VectorOp):
    """Row reduction: dst[r] = sum/max over the cols of row r (dst is rows x 1, dense: the
    simulator refuses a nonzero dst_stride).
    Simulator: `aitc/sim/execute.py:vreduce`.

    ```mlir
    hw.vreduce sram[0x2000] <- sram[0x0], op=max, rows=8, cols=64
    ```
    """

    name = "hw.vreduce"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("dst", "sram"),
        src("a", "sram", "acc"),
        enum("op", ("sum", "max")),
        *_TILE,
        *_STRIDES,
    )

    def verify_instruction(self) -> None:
        super().verify_instruction()
        _require(
            self.get("dst_stride") == 0, "hw.vreduce writes a dense rows x 1 column: dst_stride must be 0"
        )


@irdl_op_definition
class VCastOp(VectorOp):
    """Converts `from` -> `to` with a scale: f32 -> i8/i32 rounds half to even after multiplying
    by `scale` and saturates; i8/i32 -> f32 multiplies by `scale`; i32 -> i8 requantizes.
    Simulator: `aitc/sim/execute.py:vcast`.

    ```mlir
    hw.vcast sram[0x2000] <- acc[0x0], rows=8, cols=32, from=i32, to=i8, scale=0.0125
    ```
    """

    name = "hw.vcast"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("dst", "sram"), src("a", "sram", "acc"), num("rows", 1), num("cols"),
        enum("from", tuple(DTYPES)), enum("to", tuple(DTYPES)), real("scale", 1.0), *_STRIDES,
    )  # fmt: skip

    def verify_instruction(self) -> None:
        _require(self.get("rows") >= 1 and self.get("cols") >= 1, "hw.vcast: rows and cols must be >= 1")  # pyright: ignore
        _require(
            self.get("from") != self.get("to") or self.get("scale") != 1.0, "hw.vcast: nothing to convert"
        )


@irdl_op_definition
class AccReadOp(VectorOp):
    """ACC -> SRAM on the vector engine with an optional fused activation (a bias row is added
    by `hw.vbinary` with `a` in ACC and `broadcast=row`; acc_read has no bias operand).
    Simulator: `aitc/sim/execute.py:acc_read`.

    ```mlir
    hw.acc_read sram[0x4000] <- acc[0x0], rows=32, cols=32, activation=relu
    ```
    """

    name = "hw.acc_read"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("dst", "sram"), src("a", "acc"), *_TILE, enum("activation", ACTIVATIONS, "none"), *_STRIDES,
    )  # fmt: skip

    def verify_instruction(self) -> None:
        super().verify_instruction()
        integer_ok = ("none", "relu", "relu6")
        _require(
            self.get("dtype") == "f32" or self.get("activation") in integer_ok,
            f"hw.acc_read: activation {self.get('activation')} needs f32 (i32 allows {'/'.join(integer_ok)})",
        )


# --------------------------------------------------------------------------- control

ENGINE_NAMES = (
    "dma0",
    "dma1",
    "dma2",
    "dma3",
    "dma4",
    "dma5",
    "dma6",
    "dma7",
    "matrix",
    "vector",
    "dma_in",
    "dma_out",
)


class SemaphoreOp(InstructionOp):
    """Base of sem_signal / sem_wait: semaphore `sem` of this core, on `engine`, by `count`."""

    ENGINE: ClassVar[str] = "control"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        positional_int("sem"),
        enum("engine", ENGINE_NAMES),
        num("count", 1),
    )


@irdl_op_definition
class SemSignalOp(SemaphoreOp):
    """Increments semaphore `sem` of this core when every earlier instruction of `engine` has
    completed. Simulator: `aitc/sim/engine.py` (semaphores).

    ```mlir
    hw.sem_signal 3, engine=matrix
    ```
    """

    name = "hw.sem_signal"


@irdl_op_definition
class SemWaitOp(SemaphoreOp):
    """Blocks `engine` until semaphore `sem` >= count, then subtracts count. The only way
    (with barriers) to order instructions of different engines. Simulator: `aitc/sim/engine.py`.

    ```mlir
    hw.sem_wait 3, engine=vector, count=2
    ```
    """

    name = "hw.sem_wait"


@irdl_op_definition
class BarrierOp(InstructionOp):
    """Cross-core barrier: `engine` of every core blocks at its n-th barrier until all cores
    have reached their n-th barrier. Simulator: `aitc/sim/engine.py` (barriers).

    ```mlir
    hw.barrier engine=dma0
    ```
    """

    name = "hw.barrier"
    ENGINE: ClassVar[str] = "control"
    FIELDS: ClassVar[tuple[Field, ...]] = (enum("engine", ENGINE_NAMES),)


def _count(op: IRDLOperation) -> int:
    attr = op.attributes.get("count")
    assert isinstance(attr, IntegerAttr)
    return attr.value.data


class IntegerRegionOp(IRDLOperation):
    """Base of `hw.<op> N { ... }` ops (loops, cores): one integer, then one region whose
    single block the op's constructor `cls(N)` creates."""

    body = region_def("single_block")
    INTEGER_ATTR: ClassVar[str] = "count"

    def leading_integer(self) -> int:
        attr = self.attributes.get(self.INTEGER_ATTR)
        assert isinstance(attr, IntegerAttr), f"{self.name} needs its '{self.INTEGER_ATTR}'"
        return attr.value.data

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.leading_integer()} ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> IntegerRegionOp:
        number = parser.parse_integer(allow_boolean=False, allow_negative=False)
        body = parser.parse_region()
        op = cls(number)  # pyright: ignore[reportCallIssue]
        _adopt(op.body, body)
        return op


@irdl_op_definition
class LoopOp(IntegerRegionOp):
    """Hardware loop: runs its body `count` times; addresses in the body advance by their
    `step*iD` terms, D being this loop's nesting depth. Simulator: `aitc/sim/program.py`.

    ```mlir
    hw.loop 4 {
      hw.dma_in sram[0x0 + 0x100*i0] <- dram[0x1000 + 0x100*i0], rows=1, row_bytes=256
    }
    ```
    """

    name = "hw.loop"
    count = opt_attr_def(IntegerAttr)
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (NoTerminator(), HasParent(CoreOp, LoopOp)))

    def __init__(self, count: int, ops: Sequence[IRDLOperation] = ()):
        super().__init__(attributes={"count": IntegerAttr(count, i64)}, regions=[Region(Block(ops))])

    def trip_count(self) -> int:
        return _count(self)

    def verify_(self) -> None:
        _require(self.count is not None and self.trip_count() >= 1, "hw.loop: count must be >= 1")


# --------------------------------------------------------------------------- program structure


@irdl_op_definition
class EndOp(IRDLOperation):
    """End of a core's instruction stream.

    ```mlir
    hw.end
    ```
    """

    name = "hw.end"
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(CoreOp)))
    assembly_format = "attr-dict"


@irdl_op_definition
class CoreOp(IntegerRegionOp):
    """The instruction stream of core `id`, in program order.

    ```mlir
    hw.core 0 {
      hw.end
    }
    ```
    """

    name = "hw.core"
    INTEGER_ATTR: ClassVar[str] = "id"
    id = opt_attr_def(IntegerAttr)
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (HasParent(ProgramOp),))

    def __init__(self, core: int, ops: Sequence[IRDLOperation] = ()):
        super().__init__(attributes={"id": IntegerAttr(core, i64)}, regions=[Region(Block(ops))])

    def core_id(self) -> int:
        assert self.id is not None
        return self.id.value.data


@irdl_op_definition
class TensorOp(IRDLOperation):
    """An input or output tensor of the program at a DRAM address (row-major, dense).

    ```mlir
    hw.tensor "x" input dram[0x0] : tensor<4x16xf32>
    ```
    """

    name = "hw.tensor"
    sym = opt_attr_def(StringAttr)
    kind = opt_attr_def(StringAttr)
    addr = opt_attr_def(AddressAttr)
    type = opt_attr_def(TensorType)
    traits = lazy_traits_def(lambda: (HasParent(ProgramOp),))

    def __init__(self, sym: str, kind: str, addr: int, type_: TensorType):
        super().__init__(
            attributes={
                "sym": StringAttr(sym),
                "kind": StringAttr(kind),
                "addr": AddressAttr("dram", addr),
                "type": type_,
            }
        )

    def verify_(self) -> None:
        _require(
            self.kind is not None and self.kind.data in ("input", "output"),
            "hw.tensor: kind must be input or output",
        )
        _require(self.addr is not None and self.addr.space.data == "dram", "hw.tensor: lives in dram")
        _require(self.sym is not None and self.type is not None, "hw.tensor needs a name and a type")

    def print(self, printer: Printer) -> None:
        assert self.sym
        assert self.kind
        assert self.addr
        assert self.type
        printer.print_string(" ")
        printer.print_string_literal(self.sym.data)
        printer.print_string(f" {self.kind.data} {self.addr.text()} : ")
        printer.print_attribute(self.type)

    @classmethod
    def parse(cls, parser: Parser) -> TensorOp:
        sym = parser.parse_str_literal()
        kind = parser.parse_identifier()
        if kind not in ("input", "output"):
            parser.raise_error("expected 'input' or 'output'")
        addr = parse_address(parser)
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        if not isinstance(type_, TensorType):
            parser.raise_error("expected a tensor type")
        return cls(sym, kind, addr.base.data, type_)


@irdl_op_definition
class ConstOp(IRDLOperation):
    """A constant (weight) segment: bytes placed at a DRAM address before the program starts.

    ```mlir
    hw.const dram[0x1000] = dense<[1.0, 2.0]> : tensor<2xf32>
    ```
    """

    name = "hw.const"
    addr = opt_attr_def(AddressAttr)
    value = opt_attr_def(DenseIntOrFPElementsAttr | DenseResourceAttr)
    traits = lazy_traits_def(lambda: (HasParent(ProgramOp),))

    def __init__(self, addr: int, value: DenseIntOrFPElementsAttr | DenseResourceAttr):
        super().__init__(attributes={"addr": AddressAttr("dram", addr), "value": value})

    def verify_(self) -> None:
        _require(self.addr is not None and self.addr.space.data == "dram", "hw.const: lives in dram")
        _require(self.value is not None, "hw.const needs a value")

    def print(self, printer: Printer) -> None:
        assert self.addr
        assert self.value
        printer.print_string(f" {self.addr.text()} = ")
        printer.print_attribute(self.value)

    @classmethod
    def parse(cls, parser: Parser) -> ConstOp:
        addr = parse_address(parser)
        parser.parse_punctuation("=")
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr | DenseResourceAttr):
            parser.raise_error("expected dense<...> or dense_resource<...>")
        return cls(addr.base.data, value)


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """A whole NPU program for `target`: data layout ops, then one hw.core per core.

    ```mlir
    hw.program @matmul target "edge" {
      hw.tensor "x" input dram[0x0] : tensor<4x4xf32>
      hw.core 0 {
        hw.end
      }
    }
    ```
    """

    name = "hw.program"
    sym_name = opt_attr_def(StringAttr)
    target = opt_attr_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(self, name: str, target: str, ops: Sequence[IRDLOperation] = ()):
        super().__init__(
            attributes={"sym_name": StringAttr(name), "target": StringAttr(target)},
            regions=[Region(Block(ops))],
        )

    def cores(self) -> list[CoreOp]:
        return [op for op in self.body.block.ops if isinstance(op, CoreOp)]

    def verify_(self) -> None:
        ids = [c.core_id() for c in self.cores()]
        _require(len(ids) == len(set(ids)), f"hw.program: duplicate core ids {sorted(ids)}")
        for op in self.body.block.ops:
            _require(isinstance(op, CoreOp | TensorOp | ConstOp), f"hw.program cannot hold {op.name}")
        self.verify_target()

    def verify_target(self) -> None:
        """When `target` names a preset, checks the program against its limits (every problem
        at once; see `aitc.hw_checks`). Programs for a TOML target are checked by `aitc asm`."""
        from aitc.hw_checks import preset_violations

        report = preset_violations(self)
        _require(not report, report)

    def print(self, printer: Printer) -> None:
        assert self.sym_name
        assert self.target
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(" target ")
        printer.print_string_literal(self.target.data)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> ProgramOp:
        name = parser.parse_symbol_name().data
        parser.parse_keyword("target")
        target = parser.parse_str_literal()
        body = parser.parse_region()
        op = cls(name, target)
        _adopt(op.body, body)
        return op


INSTRUCTIONS: tuple[type[InstructionOp], ...] = (
    DmaInOp, DmaOutOp, DmaLocalOp, DmaPeerOp, DmaGatherOp, MatmulOp, VBinaryOp, VImmOp, VUnaryOp, VSelectOp,
    VReduceOp, VCastOp, AccReadOp, SemSignalOp, SemWaitOp, BarrierOp,
)  # fmt: skip
"""Every instruction, in opcode order (the binary encoding numbers them by this tuple)."""

Hw = Dialect(
    "hw",
    [ProgramOp, CoreOp, EndOp, LoopOp, TensorOp, ConstOp, *INSTRUCTIONS],
    [AddressAttr],
)
