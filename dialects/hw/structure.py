"""The structure of a `hw` program below `hw.program`: the instruction base class and the ops
that hold instructions or data.

`InstructionOp` is the base of every instruction (`instructions.py`): its `FIELDS` give it one
generic assembly syntax. Instructions sit in a `hw.core` (one core's stream, ending in
`hw.end`) or in a `hw.loop` inside it; `hw.tensor` and `hw.const` describe the program's DRAM
layout. `hw.program` itself is in `program.py`, with the target limits its verifier checks;
the ops here name it as their parent through `ProgramBase`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    f64,
)
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    opt_attr_def,
    region_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, NoTerminator
from xdsl.utils.exceptions import VerifyException

from aitc.dialects.hw.fields import (
    AddressAttr,
    Field,
    parse_address,
    require,
)
from aitc.types import i64_attr
from aitc.xdsl_fixes import float_literal, parse_float_literal


def _encode(field: Field, value: object) -> Attribute:
    if field.kind == "addr":
        assert isinstance(value, AddressAttr)
        return value
    if field.kind == "int":
        assert isinstance(value, int | np.integer)  # an int, bool or numpy integer (a concrete
        # type check: isinstance against the SupportsInt protocol costs ~7 us)
        return i64_attr(int(value))
    if field.kind == "float":
        assert isinstance(value, float | int | np.floating | np.integer)
        return FloatAttr(float(value), f64)
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

    def get_int(self, name: str) -> int:
        """`get` for an int field (or a flag)."""
        value = self.get(name)
        assert isinstance(value, int)
        return value

    def get_float(self, name: str) -> float:
        value = self.get(name)
        assert isinstance(value, float)
        return value

    def get_str(self, name: str) -> str:
        """`get` for an enum field."""
        value = self.get(name)
        assert isinstance(value, str)
        return value

    def get_address(self, name: str) -> AddressAttr:
        value = self.get(name)
        assert isinstance(value, AddressAttr)
        return value

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
        `program.check_program` against a Target."""

    # -- assembly syntax
    def print(self, printer: Printer) -> None:
        printer.print_string(" " + self.assembly_operands())

    def assembly_operands(self) -> str:
        pos = [str(self.get(f.name)) for f in self.FIELDS if f.role == "pos"]
        dsts = [self.get_address(f.name).text() for f in self.FIELDS if f.role == "dst"]
        srcs = [self.get_address(f.name).text() for f in self.FIELDS if f.role == "src"]
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


def adopt_region(region: Region, parsed: Region) -> None:
    """Replaces the (empty) block of `region` with the block parsed into `parsed` (`{ }` parses
    to a region without blocks: then the empty block stays)."""
    if not parsed.blocks:
        return
    region.detach_block(0).erase()
    region.add_block(parsed.detach_block(0))


def loop_depth(op: Operation) -> int:
    depth = 0
    parent = op.parent_op()
    while isinstance(parent, LoopOp):
        depth += 1
        parent = parent.parent_op()
    return depth


def _count(op: IRDLOperation) -> int:
    attr = op.attributes.get("count")
    assert isinstance(attr, IntegerAttr)
    return attr.value.data


class IntegerRegionOp(IRDLOperation):
    """Base of `hw.<op> N { ... }` ops (loops, cores): one integer, then one region whose
    single block the op's constructor `cls(N)` creates."""

    body = region_def("single_block")
    INTEGER_ATTR: ClassVar[str] = "count"

    def __init__(self, number: int, ops: Sequence[Operation] = ()):
        super().__init__(attributes={self.INTEGER_ATTR: i64_attr(number)}, regions=[Region(Block(ops))])

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
        op = cls(number)
        adopt_region(op.body, body)
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

    def trip_count(self) -> int:
        return _count(self)

    def verify_(self) -> None:
        require(self.count is not None and self.trip_count() >= 1, "hw.loop: count must be >= 1")


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
    traits = lazy_traits_def(lambda: (HasParent(ProgramBase),))

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
    traits = lazy_traits_def(lambda: (HasParent(ProgramBase),))

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
        require(
            self.kind is not None and self.kind.data in ("input", "output"),
            "hw.tensor: kind must be input or output",
        )
        require(self.addr is not None and self.addr.space.data == "dram", "hw.tensor: lives in dram")
        require(self.sym is not None and self.type is not None, "hw.tensor needs a name and a type")

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
    traits = lazy_traits_def(lambda: (HasParent(ProgramBase),))

    def __init__(self, addr: int, value: DenseIntOrFPElementsAttr | DenseResourceAttr):
        super().__init__(attributes={"addr": AddressAttr("dram", addr), "value": value})

    def verify_(self) -> None:
        require(self.addr is not None and self.addr.space.data == "dram", "hw.const: lives in dram")
        require(self.value is not None, "hw.const needs a value")

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


class ProgramBase(IRDLOperation):
    """The parent that hw.core, hw.tensor and hw.const require: `program.ProgramOp` derives from
    it, so the program op (whose verifier checks the target limits, which need every op here)
    can be defined above this module."""

    name = "hw.program"
