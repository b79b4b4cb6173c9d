"""Addresses and instruction fields of the `hw` dialect: the vocabulary every op is built from.

`AddressAttr` is a byte address `space[base + step*iD ...]`; a `Field` describes one field of an
instruction (its name, kind, memory spaces, default), and an instruction's `FIELDS` drive its
parser and printer (`structure.InstructionOp`), the binary codec (`aitc/binary.py`) and the
simulator's decoder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    ArrayAttr,
    IntAttr,
    StringAttr,
)
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import (
    irdl_attr_definition,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

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


def require(condition: bool, message: str) -> None:
    if not condition:
        raise VerifyException(message)
