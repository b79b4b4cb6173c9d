"""The `.aitb` binary format: one assembled `hw.program` for one target, lossless; or a bundle
of NPU and host segments (a model split by `place-on-host`).

`assemble` turns a verified hw program into bytes, `disassemble` turns bytes back into the same IR
(printing it gives byte-identical text, locations and weights included). Instructions are encoded
generically from each op's `FIELDS` (`dialects/hw/instructions.py`), so a new instruction or field needs no
code here. Every read of a length or offset is bounds-checked: a damaged file is refused with one
`BinaryError` line, never a traceback, crash or hang.

File layout (integers little-endian; `uv` = unsigned LEB128 varint, at most 10 bytes; `sv` =
zigzag-encoded signed varint; `str` = uv byte length, then UTF-8 bytes):

    offset  size  field
    0       4     magic b"AITB"
    4       2     format version (u16), FORMAT_VERSION
    6       2     reserved, 0
    8       8     file size in bytes (u64), checksum included: tells truncation from corruption
    16      8     target fingerprint, `Target.fingerprint()` of the target it was assembled for
    24      8     ISA fingerprint: hash of hw.INSTRUCTIONS and their FIELDS (the opcode table);
                  this aitc's, or one of `EARLIER_ISAS` (opcode tables it still decodes exactly)
    32      2     target name length N (u16)
    34      N     target name (UTF-8)
    34+N    2     section count S (u16)
    36+N    20*S  section table, per section: kind u16, index u16, offset u64, size u64
    ...           the sections, back to back in table order (offsets from the start of the file)
    end-32  32    checksum: blake2b-256 of every byte before it

Sections (kind: content):

    1 PROGRAM  once: str program name, str `target` attribute, uv n, n x u8 body order
               (0 = next hw.tensor, 1 = next hw.const, 2 = next hw.core)
    2 CODE     one per hw.core, index = core id: code records up to the end of the section
    3 CONST    uv n, n x constant: uv DRAM address, u8 storage (0 dense, 1 dense_resource),
               str resource key, str element type, uv rank, rank x uv dim,
               u32 blob alignment (resources), uv byte count, raw bytes
    4 IO       uv n, n x tensor: u8 kind (0 input, 1 output), str name, uv DRAM address,
               str element type, uv rank, rank x uv dim
    5 DEBUG    uv n, n x (uv op ordinal, str location): source locations (ONNX node names)
    6 ATTRS    uv n, n x (uv op ordinal, u8 0 = attribute / 1 = property, str name, str value):
               attributes that the structural encoding does not hold, as MLIR text

    Op ordinals number `builtin.module` 0, then the program's ops in `walk()` pre-order.

Bundles (format version 2; a module holding an `exec.schedule` function) hold no PROGRAM .. ATTRS
sections of their own, only:

    7 HOST     once: uv n, n x u8 module body order (0 = next function of the text, 1 = next
               SEGMENT), then str: the schedule and host segment functions as MLIR text (host
               weights in its dialect_resources section). The runtime executes host segments
               with the numpy reference kernels.
    8 SEGMENT  one per hw.program, index = its ordinal: a complete version-1 binary of that
               program (its own header, sections and checksum), for the same target

Each hand-over tensor between segments is an IO descriptor (name, DRAM address, type) of the
NPU segment that reads or writes it.

Code records (opcode u8):

    0 .. len(INSTRUCTIONS)-1   hw.INSTRUCTIONS[opcode]: uv presence mask (bit j = FIELDS[j] is
                               set), then each set field, in FIELDS order, by kind:
                                 addr   u8 space (index in hw.SPACES), uv base, uv n, n x sv step
                                 int    sv       float  f64       enum   uv index into choices
                                 flag   nothing (its presence bit is the value)
    0xF0 LOOP                  uv trip count, uv body size in bytes, then the body's records
    0xFF END                   hw.end

Loading checks, in order: empty, magic, version (newer = "upgrade aitc"), declared size
(truncation), checksum, ISA fingerprint, section layout, target fingerprint (when a target is
given), then every record, and finally the decoded IR's verifier. Assembling refuses what it
could not give back exactly (e.g. an `i32` integer field, a dynamic tensor shape) rather than
normalising it. DEBUG holds MLIR location text (`loc("conv1")` for an ONNX node), only for ops
whose location is known.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    AnyFloat,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    UnknownLoc,
    f64,
    i64,
)
from xdsl.ir import Attribute, Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.utils.mlir_lexer import MLIRTokenKind

from aitc.diagnostics import AitcError
from aitc.dialects import hw
from aitc.dialects.exec import is_host_function, is_schedule
from aitc.dialects.hw.program import check_program
from aitc.files import read_bytes, write_atomic
from aitc.ir import make_context, print_mlir
from aitc.target import Target, load_target
from aitc.types import element_bytes, i64_attr
from aitc.weights import RESOURCES

MAGIC = b"AITB"
FORMAT_VERSION = 2
"""Version 1: one hw.program. Version 2 adds bundles (HOST + SEGMENT sections); a binary of one
program is still written as version 1, so such files are unchanged."""
PROGRAM_VERSION = 1
CHECKSUM_BYTES = 32
_FIXED_HEADER = struct.Struct("<4sHHQ8s8sH")  # magic .. target name length: 34 bytes
_SECTION_ENTRY = struct.Struct("<HHQQ")
_I64 = (-(1 << 63), (1 << 63) - 1)
MAX_LOOP_DEPTH = 64
"""Deeper hardware-loop nesting in a binary is refused (it would only come from a damaged file)."""

OP_LOOP, OP_END = 0xF0, 0xFF
SECTION_KINDS = {
    1: "PROGRAM", 2: "CODE", 3: "CONST", 4: "IO", 5: "DEBUG", 6: "ATTRS", 7: "HOST", 8: "SEGMENT",
}  # fmt: skip
PROGRAM, CODE, CONST, IO, DEBUG, ATTRS, HOST, SEGMENT = 1, 2, 3, 4, 5, 6, 7, 8
_BODY_KINDS: tuple[type[Operation], ...] = (hw.TensorOp, hw.ConstOp, hw.CoreOp)
_TENSOR_KINDS = ("input", "output")
_STRUCTURE_ATTRS: dict[type[Operation], set[str]] = {
    ModuleOp: set(),
    hw.ProgramOp: {"sym_name", "target"},
    hw.CoreOp: {"id"},
    hw.LoopOp: {"count"},
    hw.EndOp: set(),
    hw.TensorOp: {"sym", "kind", "addr", "type"},
    hw.ConstOp: {"addr", "value"},
}


class BinaryError(AitcError):
    """A `.aitb` file that cannot be loaded: damaged, foreign, too new or for another target."""


def _corrupt(detail: str) -> BinaryError:
    return BinaryError(f"corrupted binary: {detail}")


EARLIER_ISAS = {
    bytes.fromhex("38fb2ec927fa7009"): "before hw.sem_signal's optional `peer` field",
    bytes.fromhex("3d9fbc6f8dc2bef9"): "before hw.vcast's optional `zero` field",
}
"""ISA fingerprints of earlier opcode tables whose binaries decode to exactly the same IR under
this one: every change since only appended an optional field to an instruction's FIELDS, so the
old records' presence bits and payloads mean what they meant (an absent field is at its
default). A change that renumbers opcodes, or reorders, removes or retypes a field, must empty
this table: such binaries are then refused with "re-assemble it"."""


def isa_fingerprint() -> bytes:
    """8 bytes identifying the opcode table: instruction order, fields, kinds, choices, defaults."""
    table = [
        [cls.name, [[f.name, f.kind, f.spaces, f.choices, f.role, repr(f.default)] for f in cls.FIELDS]]
        for cls in hw.INSTRUCTIONS
    ]
    canonical = json.dumps([hw.SPACES, table]).encode()
    return hashlib.blake2b(canonical, digest_size=8).digest()


# --------------------------------------------------------------------------- byte writer / reader


class _Writer:
    """Appends the format's primitive values to a byte buffer."""

    def __init__(self) -> None:
        self.out = bytearray()

    def u8(self, value: int) -> None:
        self.out.append(value)

    def uv(self, value: int) -> None:
        if not 0 <= value < 1 << 64:
            raise AitcError(f"cannot assemble: value {value} does not fit in 64 bits")
        while value >= 0x80:
            self.out.append(value & 0x7F | 0x80)
            value >>= 7
        self.out.append(value)

    def sv(self, value: int) -> None:
        if not _I64[0] <= value <= _I64[1]:
            raise AitcError(f"cannot assemble: value {value} does not fit in a signed 64-bit integer")
        self.uv(2 * value if value >= 0 else -2 * value - 1)

    def f64(self, value: float) -> None:
        self.out += struct.pack("<d", value)

    def text(self, value: str) -> None:
        data = value.encode()
        self.uv(len(data))
        self.out += data

    def raw(self, data: bytes) -> None:
        self.out += data


class _Reader:
    """Reads primitive values from `data`; any read past the end is a BinaryError naming `what`."""

    def __init__(self, data: bytes | memoryview, what: str) -> None:
        self.data = memoryview(data)
        self.pos = 0
        self.what = what

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def take(self, count: int) -> memoryview:
        if count < 0 or count > self.remaining():
            raise _corrupt(f"{self.what} section ends early (wants {count} bytes at offset {self.pos})")
        self.pos += count
        return self.data[self.pos - count : self.pos]

    def u8(self) -> int:
        return self.take(1)[0]

    def u32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]

    def uv(self) -> int:
        value = 0
        for shift in range(0, 70, 7):
            byte = self.u8()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if value >= 1 << 64:
                    break
                return value
        raise _corrupt(f"{self.what} section holds an over-long number at offset {self.pos}")

    def sv(self) -> int:
        zigzag = self.uv()
        return (zigzag >> 1) ^ -(zigzag & 1)

    def f64(self) -> float:
        return struct.unpack("<d", self.take(8))[0]

    def text(self) -> str:
        try:
            return bytes(self.take(self.uv())).decode()
        except UnicodeDecodeError:
            raise _corrupt(f"{self.what} section holds a string that is not UTF-8") from None

    def count(self, min_bytes: int = 1) -> int:
        """A record count, which cannot exceed what the remaining bytes could hold."""
        value = self.uv()
        if value * min_bytes > self.remaining():
            raise _corrupt(f"{self.what} section claims {value} records but holds {self.remaining()} bytes")
        return value

    def index(self, limit: int, what: str) -> int:
        value = self.uv()
        if value >= limit:
            raise _corrupt(f"{self.what} section: {what} {value} out of range (< {limit})")
        return value

    def finish(self) -> None:
        if not self.at_end():
            raise _corrupt(f"{self.what} section has {self.remaining()} unexpected trailing bytes")


# --------------------------------------------------------------------------- field codecs


def _refuse(op: Operation, detail: str) -> AitcError:
    return AitcError(f"cannot assemble {op.name}: {detail}")


def _write_addr(w: _Writer, op: Operation, field: hw.Field, attr: Attribute) -> None:
    assert isinstance(attr, hw.AddressAttr)
    w.u8(hw.SPACES.index(attr.space.data))
    w.uv(attr.base.data)
    w.uv(len(attr.step_values))
    for step in attr.step_values:
        w.sv(step)


def _read_addr(r: _Reader, field: hw.Field) -> Attribute:
    space = hw.SPACES[r.index(len(hw.SPACES), "memory space")]
    base = r.uv()
    steps = [r.sv() for _ in range(r.count())]
    return hw.AddressAttr(space, base, steps)


def _write_int(w: _Writer, op: Operation, field: hw.Field, attr: Attribute) -> None:
    assert isinstance(attr, IntegerAttr)
    if attr.type != i64:
        raise _refuse(op, f"integer field holds {attr.type}; the binary format holds i64 (write `N : i64`)")
    w.sv(attr.value.data)


def _read_int(r: _Reader, field: hw.Field) -> Attribute:
    return i64_attr(r.sv())


def _write_float(w: _Writer, op: Operation, field: hw.Field, attr: Attribute) -> None:
    assert isinstance(attr, FloatAttr)
    if attr.type != f64:
        raise _refuse(op, f"float field holds {attr.type}; the binary format holds f64")
    w.f64(attr.value.data)


def _read_float(r: _Reader, field: hw.Field) -> Attribute:
    return FloatAttr(r.f64(), f64)


def _write_enum(w: _Writer, op: Operation, field: hw.Field, attr: Attribute) -> None:
    assert isinstance(attr, StringAttr)
    if field.choices:
        w.uv(field.choices.index(attr.data))
    else:
        w.text(attr.data)


def _read_enum(r: _Reader, field: hw.Field) -> Attribute:
    if not field.choices:
        return StringAttr(r.text())
    return StringAttr(field.choices[r.index(len(field.choices), f"'{field.name}' choice")])


def _write_flag(w: _Writer, op: Operation, field: hw.Field, attr: Attribute) -> None:
    """A flag's presence bit is its value: no payload."""


def _read_flag(r: _Reader, field: hw.Field) -> Attribute:
    return UnitAttr()


_Encoder = Callable[[_Writer, Operation, hw.Field, Attribute], None]
_Decoder = Callable[[_Reader, hw.Field], Attribute]
_CODECS: dict[str, tuple[_Encoder, _Decoder]] = {
    "addr": (_write_addr, _read_addr),
    "int": (_write_int, _read_int),
    "float": (_write_float, _read_float),
    "enum": (_write_enum, _read_enum),
    "flag": (_write_flag, _read_flag),
}
"""Field kind -> (encoder, decoder). A new field *kind* in hw.py needs one entry here."""

_OPCODES = {cls: opcode for opcode, cls in enumerate(hw.INSTRUCTIONS)}
assert len(hw.INSTRUCTIONS) < OP_LOOP, "opcodes would collide with the LOOP/END markers"


# --------------------------------------------------------------------------- code sections


def _encode_instruction(w: _Writer, op: hw.InstructionOp) -> None:
    w.u8(_OPCODES[type(op)])
    present = [(j, f) for j, f in enumerate(op.FIELDS) if f.name in op.attributes]
    w.uv(sum(1 << j for j, _ in present))
    for _, field in present:
        _CODECS[field.kind][0](w, op, field, op.attributes[field.name])


def _encode_records(w: _Writer, ops: Iterator[Operation], depth: int = 0) -> None:
    for op in ops:
        if isinstance(op, hw.InstructionOp) and type(op) in _OPCODES:
            _encode_instruction(w, op)
        elif isinstance(op, hw.LoopOp):
            if depth >= MAX_LOOP_DEPTH:
                raise _refuse(op, f"hardware loops nest deeper than {MAX_LOOP_DEPTH}")
            body = _Writer()
            _encode_records(body, iter(op.body.block.ops), depth + 1)
            w.u8(OP_LOOP)
            w.uv(_canonical_int(op, "count"))
            w.uv(len(body.out))
            w.raw(bytes(body.out))
        elif isinstance(op, hw.EndOp):
            w.u8(OP_END)
        else:
            raise _refuse(op, "only hw instructions, hw.loop and hw.end can stand in a hw.core")


def _decode_records(r: _Reader, depth: int) -> list[Operation]:
    ops: list[Operation] = []
    while not r.at_end():
        opcode = r.u8()
        if opcode == OP_END:
            ops.append(hw.EndOp())
        elif opcode == OP_LOOP:
            ops.append(_decode_loop(r, depth))
        elif opcode < len(hw.INSTRUCTIONS):
            ops.append(_decode_instruction(r, hw.INSTRUCTIONS[opcode]))
        else:
            raise _corrupt(f"{r.what} section: unknown opcode 0x{opcode:02x} at offset {r.pos - 1}")
    return ops


def _decode_loop(r: _Reader, depth: int) -> hw.LoopOp:
    if depth >= MAX_LOOP_DEPTH:
        raise _corrupt(f"{r.what} section nests hardware loops deeper than {MAX_LOOP_DEPTH}")
    count = r.uv()
    if count > _I64[1]:
        raise _corrupt(f"{r.what} section: loop count {count} out of range")
    body = _Reader(r.take(r.uv()), r.what)
    return hw.LoopOp(count, _decode_records(body, depth + 1))


def _decode_instruction(r: _Reader, cls: type[hw.InstructionOp]) -> hw.InstructionOp:
    mask = r.uv()
    if mask >> len(cls.FIELDS):
        raise _corrupt(f"{r.what} section: {cls.name} sets fields it does not have (mask 0x{mask:x})")
    attributes = {
        field.name: _CODECS[field.kind][1](r, field) for j, field in enumerate(cls.FIELDS) if mask >> j & 1
    }
    return cls.create(attributes=attributes)


def _canonical_int(op: Operation, name: str) -> int:
    attr = op.attributes.get(name)
    if not isinstance(attr, IntegerAttr) or attr.type != i64:
        raise _refuse(op, f"'{name}' must be an i64 integer")
    return attr.value.data


# --------------------------------------------------------------------------- tensors and constants


def _write_type(w: _Writer, op: Operation, type_: Attribute) -> None:
    if not isinstance(type_, TensorType) or not isinstance(type_.encoding, NoneAttr):
        raise _refuse(op, f"{type_} is not a plain tensor type")
    shape = type_.get_shape()
    if any(d < 0 for d in shape):
        raise _refuse(op, f"{type_} has a dynamic shape")
    w.text(str(type_.get_element_type()))
    w.uv(len(shape))
    for dim in shape:
        w.uv(dim)


def _read_type(r: _Reader, context: _Context) -> TensorType[IntegerType | AnyFloat]:
    element = context.parse(r.text(), "element type", Parser.parse_type)
    if not isinstance(element, IntegerType | AnyFloat):
        raise _corrupt(f"{r.what} section: element type {element} is not an integer or float type")
    shape = [r.uv() for _ in range(r.count())]
    return TensorType(element, shape)


def _dram_base(op: Operation, addr: hw.AddressAttr | None) -> int:
    if addr is None or addr.space.data != "dram" or addr.step_values:
        raise _refuse(op, "its address must be a plain dram[...] address")
    return addr.base.data


def _encode_tensor(w: _Writer, op: hw.TensorOp) -> None:
    if op.kind is None or op.kind.data not in _TENSOR_KINDS or op.sym is None or op.type is None:
        raise _refuse(op, "it needs a name, a kind (input/output) and a type")
    w.u8(_TENSOR_KINDS.index(op.kind.data))
    w.text(op.sym.data)
    w.uv(_dram_base(op, op.addr))
    _write_type(w, op, op.type)


def _decode_tensor(r: _Reader, context: _Context) -> hw.TensorOp:
    kind = _TENSOR_KINDS[r.index(len(_TENSOR_KINDS), "tensor kind")]
    name = r.text()
    address = r.uv()
    return hw.TensorOp(name, kind, address, _read_type(r, context))


def _const_payload(op: hw.ConstOp) -> tuple[int, str, int, bytes]:
    """(storage, resource key, blob alignment, raw bytes) of a constant's value."""
    value = op.value
    if isinstance(value, DenseIntOrFPElementsAttr):
        return 0, "", 0, value.data.data
    assert isinstance(value, DenseResourceAttr)
    key = value.resource_handle.data
    blob = RESOURCES.lookup(key)
    if not blob or len(blob) < 10:
        raise _refuse(op, f"dense_resource<{key}> has no bytes (the file lacks its blob)")
    raw = bytes.fromhex(blob[2:])
    return 1, key, int.from_bytes(raw[:4], "little"), raw[4:]


def _encode_const(w: _Writer, op: hw.ConstOp) -> None:
    if op.value is None:
        raise _refuse(op, "it needs a value")
    storage, key, alignment, data = _const_payload(op)
    w.uv(_dram_base(op, op.addr))
    w.u8(storage)
    w.text(key)
    _write_type(w, op, op.value.get_type())
    w.raw(struct.pack("<I", alignment))
    w.uv(len(data))
    w.raw(data)


def _decode_const(r: _Reader, context: _Context) -> hw.ConstOp:
    address = r.uv()
    storage = r.index(2, "constant storage")
    key = r.text()
    type_ = _read_type(r, context)
    alignment = r.u32()
    data = bytes(r.take(r.uv()))
    if storage == 1:
        return hw.ConstOp(address, _resource(r, key, type_, alignment, data))
    expected = math.prod(type_.get_shape()) * element_bytes(type_.get_element_type())
    if len(data) != expected:
        raise _corrupt(
            f"{r.what} section: constant at dram[0x{address:x}] has {len(data)} bytes, "
            f"{type_} needs {expected}"
        )
    return hw.ConstOp(address, DenseIntOrFPElementsAttr(type_, BytesAttr(data)))


def _resource(r: _Reader, key: str, type_: TensorType, alignment: int, data: bytes) -> DenseResourceAttr:
    """Puts a weight blob back into the process's resource store under its original key."""
    if not key or not all(c.isalnum() or c in "_.-$" for c in key):
        raise _corrupt(f"{r.what} section: bad resource key {key!r}")
    try:
        RESOURCES.parse_resource(key, "0x" + (alignment.to_bytes(4, "little") + data).hex())
    except ValueError as error:
        raise BinaryError(f"cannot load weight '{key}': {error}") from None
    return DenseResourceAttr.from_params(key, type_)


# --------------------------------------------------------------------------- debug info and extra attributes


ParsedT = TypeVar("ParsedT", bound=Attribute)


class _Context:
    """Parses the MLIR text pieces a binary holds (types, locations, attributes)."""

    def __init__(self) -> None:
        self.ctx = make_context()

    def parse(self, text: str, what: str, method: Callable[[Parser], ParsedT | None]) -> ParsedT:
        try:
            parser = Parser(self.ctx, text, "<binary>")
            value = method(parser)
            # xDSL 0.74's parser has no public API to peek at or consume a token (upstream gap)
            complete = parser._current_token.kind == MLIRTokenKind.EOF
        except (ParseError, ValueError, KeyError, IndexError) as error:
            raise _corrupt(f"unreadable {what} {text[:40]!r} ({str(error).splitlines()[-1]})") from None
        if value is None or not complete:
            raise _corrupt(f"unreadable {what} {text[:40]!r}")
        return value


def _encode_debug(w: _Writer, ordered: list[Operation | None]) -> None:
    entries = [
        (ordinal, str(op.location))
        for ordinal, op in enumerate(ordered)
        if op is not None and not isinstance(op.location, UnknownLoc)
    ]
    w.uv(len(entries))
    for ordinal, text in entries:
        w.uv(ordinal)
        w.text(text)


def _decode_debug(r: _Reader, ordered: list[Operation], context: _Context) -> None:
    for _ in range(r.count(2)):
        op = ordered[r.index(len(ordered), "op ordinal")]
        op.location = context.parse(r.text(), "location", Parser.parse_optional_location)


def _extra_attributes(op: Operation) -> Iterator[tuple[int, str, Attribute]]:
    """(0 = attribute / 1 = property, name, value) that the structural encoding does not hold."""
    known = _STRUCTURE_ATTRS.get(type(op))
    if known is None:
        known = {f.name for f in getattr(op, "FIELDS", ())}
    for name, value in op.attributes.items():
        if name not in known:
            yield 0, name, value
    for name, value in op.properties.items():
        yield 1, name, value


def _encode_attrs(w: _Writer, ordered: list[Operation | None]) -> None:
    entries = [
        (i, *extra) for i, op in enumerate(ordered) if op is not None for extra in _extra_attributes(op)
    ]
    w.uv(len(entries))
    for ordinal, where, name, value in entries:
        w.uv(ordinal)
        w.u8(where)
        w.text(name)
        w.text(str(value))


def _decode_attrs(r: _Reader, ordered: list[Operation], context: _Context) -> None:
    for _ in range(r.count(4)):
        op = ordered[r.index(len(ordered), "op ordinal")]
        where = r.index(2, "attribute kind")
        name = r.text()
        value = context.parse(r.text(), f"attribute '{name}'", Parser.parse_attribute)
        (op.properties if where else op.attributes)[name] = value


# --------------------------------------------------------------------------- header and section table


@dataclass(frozen=True)
class Section:
    """One entry of the section table."""

    kind: int
    index: int
    offset: int
    size: int


@dataclass(frozen=True)
class Header:
    """The parsed, validated header of a `.aitb` file."""

    version: int
    size: int
    target_fingerprint: bytes
    isa_fingerprint: bytes
    target_name: str
    sections: tuple[Section, ...]


def _pack(target: Target, sections: list[tuple[int, int, bytes]], version: int = PROGRAM_VERSION) -> bytes:
    name = target.name.encode()
    if len(name) > 0xFFFF or len(sections) > 0xFFFF:
        raise AitcError("cannot assemble: target name or section count too large")
    offset = _FIXED_HEADER.size + len(name) + 2 + _SECTION_ENTRY.size * len(sections)
    table = bytearray()
    for kind, index, payload in sections:
        table += _SECTION_ENTRY.pack(kind, index, offset, len(payload))
        offset += len(payload)
    size = offset + CHECKSUM_BYTES
    fixed = _FIXED_HEADER.pack(MAGIC, version, 0, size, target.fingerprint(), isa_fingerprint(), len(name))
    body = fixed + name + struct.pack("<H", len(sections)) + bytes(table) + b"".join(p for *_, p in sections)
    return body + hashlib.blake2b(body, digest_size=CHECKSUM_BYTES).digest()


def _check_envelope(data: bytes) -> tuple[bytes, int, int, int, bytes, bytes, int]:
    """Magic, version, size and checksum, in the order that gives the most useful message."""
    if not data:
        raise BinaryError("empty file: not an aitc binary (.aitb)")
    if data[:4] != MAGIC:
        raise BinaryError(f"not an aitc binary: starts with {bytes(data[:4])!r}, expected {MAGIC!r}")
    if len(data) < _FIXED_HEADER.size:
        raise BinaryError(f"truncated: {len(data)} bytes, shorter than the {_FIXED_HEADER.size}-byte header")
    fields = _FIXED_HEADER.unpack_from(data)
    version, size = fields[1], fields[3]
    if version > FORMAT_VERSION:
        raise BinaryError(
            f"written by a newer aitc (format version {version}; this aitc reads version "
            f"{FORMAT_VERSION}): upgrade aitc"
        )
    if version < 1:
        raise BinaryError(f"unsupported format version {version} (this aitc reads version {FORMAT_VERSION})")
    if len(data) < size:
        raise BinaryError(f"truncated: the header says {size} bytes, the file has {len(data)}")
    if len(data) > size:
        raise _corrupt(f"{len(data) - size} unexpected bytes after the end ({size} bytes)")
    if hashlib.blake2b(data[:-CHECKSUM_BYTES], digest_size=CHECKSUM_BYTES).digest() != data[-CHECKSUM_BYTES:]:
        raise _corrupt("checksum mismatch (the file was damaged after it was written)")
    return fields


def read_header(data: bytes) -> Header:
    """Validates the envelope (magic, version, size, checksum, ISA) and parses the section table."""
    _, version, _, size, target_fp, isa_fp, name_length = _check_envelope(data)
    if isa_fp != isa_fingerprint() and isa_fp not in EARLIER_ISAS:
        raise BinaryError(
            f"assembled for a different hw instruction set (ISA {isa_fp.hex()}, this aitc's is "
            f"{isa_fingerprint().hex()}): re-assemble it with this aitc"
        )
    r = _Reader(data[: size - CHECKSUM_BYTES], "header")
    r.take(_FIXED_HEADER.size)
    try:
        name = bytes(r.take(name_length)).decode()
    except UnicodeDecodeError:
        raise _corrupt("the target name is not UTF-8") from None
    count = struct.unpack("<H", r.take(2))[0]
    sections = tuple(Section(*_SECTION_ENTRY.unpack(r.take(_SECTION_ENTRY.size))) for _ in range(count))
    _check_layout(sections, r.pos, size - CHECKSUM_BYTES)
    return Header(version, size, target_fp, isa_fp, name, sections)


def _check_layout(sections: tuple[Section, ...], start: int, end: int) -> None:
    """Sections must tile [start, end) exactly, in table order: no gaps, overlaps or overruns."""
    position = start
    for section in sections:
        if section.kind not in SECTION_KINDS:
            raise _corrupt(f"unknown section kind {section.kind}")
        if section.offset != position or section.size > end - position:
            raise _corrupt(
                f"{SECTION_KINDS[section.kind]} section at {section.offset}+{section.size} is out of place"
            )
        position += section.size
    if position != end:
        raise _corrupt(f"{end - position} bytes between the last section and the checksum")


def check_target(header: Header, target: Target) -> None:
    """Refuses a binary assembled for another target (or another version of this one)."""
    if header.target_fingerprint == target.fingerprint():
        return
    if header.target_name == target.name:
        raise BinaryError(
            f"assembled for a different description of target '{target.name}' (fingerprint "
            f"{header.target_fingerprint.hex()}, this one's is {target.fingerprint().hex()}): re-assemble it"
        )
    raise BinaryError(
        f"assembled for target '{header.target_name}', not '{target.name}': "
        f"re-assemble it with --target {target.name}"
    )


# --------------------------------------------------------------------------- assemble


def _program_of(module_or_program: ModuleOp | hw.ProgramOp) -> tuple[ModuleOp | None, hw.ProgramOp]:
    if isinstance(module_or_program, hw.ProgramOp):
        return None, module_or_program
    ops = list(module_or_program.ops)
    programs = [op for op in ops if isinstance(op, hw.ProgramOp)]
    if not programs:
        raise AitcError(
            "no hw.program to assemble (lower the model to the hw dialect first, e.g. `aitc compile`)"
        )
    if len(ops) != 1:
        others = sorted({op.name for op in ops} - {hw.ProgramOp.name})
        detail = f"also holds {', '.join(others)}" if others else f"holds {len(programs)} hw.program ops"
        raise AitcError(f"cannot assemble: the module {detail}; a binary holds exactly one hw.program")
    return module_or_program, programs[0]


def _verify(op: Operation) -> None:
    try:
        op.verify()
    except DiagnosticException as error:
        raise AitcError(f"invalid hw program: {error}") from None


def _check_target_name(program: hw.ProgramOp, target: Target) -> None:
    """The program must have been compiled for `target`: same name, or a loadable target with
    the same fingerprint (e.g. `target "my.toml"`)."""
    assert program.target is not None
    declared = program.target.data
    if declared == target.name:
        return
    try:
        same = load_target(declared).fingerprint() == target.fingerprint()
    except AitcError:
        same = False
    if not same:
        raise AitcError(
            f"the program was compiled for target '{declared}', not '{target.name}': recompile it"
        )


def _encode_program(program: hw.ProgramOp) -> list[tuple[int, int, bytes]]:
    meta, consts, tensors = _Writer(), _Writer(), _Writer()
    order = [_BODY_KINDS.index(type(op)) for op in program.body.block.ops]  # verified: only these three
    assert program.sym_name is not None  # verified, as for printing
    assert program.target is not None
    meta.text(program.sym_name.data)
    meta.text(program.target.data)
    meta.uv(len(order))
    meta.raw(bytes(order))
    code: list[tuple[int, int, bytes]] = []
    for op in program.body.block.ops:
        if isinstance(op, hw.CoreOp):
            code.append((CODE, _core_index(op), _encode_core(op)))
    const_ops = [op for op in program.body.block.ops if isinstance(op, hw.ConstOp)]
    tensor_ops = [op for op in program.body.block.ops if isinstance(op, hw.TensorOp)]
    consts.uv(len(const_ops))
    for op in const_ops:
        _encode_const(consts, op)
    tensors.uv(len(tensor_ops))
    for op in tensor_ops:
        _encode_tensor(tensors, op)
    return [(PROGRAM, 0, bytes(meta.out)), *code, (CONST, 0, bytes(consts.out)), (IO, 0, bytes(tensors.out))]


def _core_index(core: hw.CoreOp) -> int:
    index = _canonical_int(core, "id")
    if index > 0xFFFF:
        raise _refuse(core, f"core id {index} does not fit the section table (max 65535)")
    return index


def _encode_core(core: hw.CoreOp) -> bytes:
    w = _Writer()
    _encode_records(w, iter(core.body.block.ops))
    return bytes(w.out)


def declared_target(module_or_program: ModuleOp | hw.ProgramOp) -> Target:
    """The target the program's `target` attribute names (a preset or a TOML file); for a
    bundle, its programs' (or, without any, the module's `tile.target`)."""
    if isinstance(module_or_program, ModuleOp) and any(is_schedule(op) for op in module_or_program.ops):
        programs = [op for op in module_or_program.ops if isinstance(op, hw.ProgramOp)]
        named = module_or_program.attributes.get("tile.target")
        names = {p.target.data for p in programs if p.target is not None} or (
            {named.data} if isinstance(named, StringAttr) else set()
        )
        if len(names) != 1:
            raise AitcError("the bundle names no single target; pass --target NAME|FILE.toml")
        return load_target(names.pop())
    _, program = _program_of(module_or_program)
    if program.target is None:
        raise AitcError("the hw.program names no target; pass --target NAME|FILE.toml")
    return load_target(program.target.data)


def assemble(module_or_program: ModuleOp | hw.ProgramOp, target: Target) -> bytes:
    """The `.aitb` bytes of a hw program (a module holding one `hw.program`, or the program),
    or of a bundle (a module holding a schedule, its host segments and hw.programs).

    Verifies the IR, checks it against `target`'s limits (every problem in one AitcError) and
    refuses anything the format could not reproduce exactly."""
    if isinstance(module_or_program, ModuleOp) and any(is_schedule(op) for op in module_or_program.ops):
        return _assemble_bundle(module_or_program, target)
    module, program = _program_of(module_or_program)
    _verify(module or program)
    if program.sym_name is None or program.target is None:
        raise AitcError("cannot assemble: hw.program needs a name and a target")
    _check_target_name(program, target)
    check_program(program, target)
    ordered: list[Operation | None] = [module, *program.walk()]
    debug, attrs = _Writer(), _Writer()
    _encode_debug(debug, ordered)
    _encode_attrs(attrs, ordered)
    sections = [*_encode_program(program), (DEBUG, 0, bytes(debug.out)), (ATTRS, 0, bytes(attrs.out))]
    return _pack(target, sections)


def _assemble_bundle(module: ModuleOp, target: Target) -> bytes:
    """HOST (body order, then the schedule and host segments as MLIR text, the module's
    attributes on its module) and one SEGMENT
    (a complete version-1 binary) per hw.program, in module order."""
    _verify(module)
    order, programs, kept = [], [], []
    for op in module.ops:
        if isinstance(op, hw.ProgramOp):
            order.append(1)
            programs.append(op)
        elif isinstance(op, func.FuncOp) and (is_schedule(op) or is_host_function(op)):
            order.append(0)
            kept.append(op)
        else:
            raise AitcError(
                f"cannot assemble: a bundle holds schedules, host functions and hw.programs, not {op.name}"
            )
    text_module = ModuleOp([op.clone() for op in kept])
    text_module.attributes.update(module.attributes)  # kept on the text's module
    w = _Writer()
    w.uv(len(order))
    w.raw(bytes(order))
    w.text(print_mlir(text_module))
    sections = [(HOST, 0, bytes(w.out))]
    for index, program in enumerate(programs):
        if index > 0xFFFF:
            raise AitcError("cannot assemble: more than 65536 NPU segments")
        sections.append((SEGMENT, index, assemble(program, target)))
    return _pack(target, sections, FORMAT_VERSION)


def _decode_bundle(header: Header, data: bytes) -> ModuleOp:
    kinds = [s.kind for s in header.sections]
    if kinds.count(HOST) != 1 or any(kind not in (HOST, SEGMENT) for kind in kinds):
        raise _corrupt("a bundle holds one HOST section and SEGMENT sections only")
    programs: list[hw.ProgramOp] = []
    for number, section in enumerate(s for s in header.sections if s.kind == SEGMENT):
        if section.index != number:
            raise _corrupt(f"SEGMENT sections out of order ({section.index} where {number} belongs)")
        nested = data[section.offset : section.offset + section.size]
        try:
            part = disassemble(nested)
        except BinaryError as error:
            raise BinaryError(f"NPU segment {number}: {error}") from None
        program = part.ops.first
        assert isinstance(program, hw.ProgramOp)
        programs.append(program)
    host = next(s for s in header.sections if s.kind == HOST)
    r = _Reader(data[host.offset : host.offset + host.size], "HOST")
    order = [r.u8() for _ in range(r.count())]
    text = r.text()
    r.finish()
    try:
        parsed = Parser(make_context(), text, "<aitb HOST section>").parse_module()
    except ParseError as error:
        raise _corrupt(f"HOST section is not valid MLIR ({str(error).splitlines()[0]})") from None
    kept = list(parsed.ops)
    if order.count(0) != len(kept) or order.count(1) != len(programs) or any(k > 1 for k in order):
        raise _corrupt("HOST section's body order does not match the segments the file holds")
    queues = {0: iter(kept), 1: iter(programs)}
    ops = []
    for kind in order:
        op = next(queues[kind])
        op.detach()
        ops.append(op)
    module = ModuleOp(ops)
    module.attributes.update(parsed.attributes)
    return module


# --------------------------------------------------------------------------- disassemble


def _sections(header: Header, data: bytes) -> dict[int, list[tuple[int, _Reader]]]:
    found: dict[int, list[tuple[int, _Reader]]] = {}
    for s in header.sections:
        reader = _Reader(data[s.offset : s.offset + s.size], SECTION_KINDS[s.kind])
        found.setdefault(s.kind, []).append((s.index, reader))
    for kind in (PROGRAM, CONST, IO, DEBUG, ATTRS):
        if len(found.get(kind, [])) != 1:
            raise _corrupt(f"expected one {SECTION_KINDS[kind]} section, found {len(found.get(kind, []))}")
    return found


def _decode_program(sections: dict[int, list[tuple[int, _Reader]]], context: _Context) -> hw.ProgramOp:
    meta = sections[PROGRAM][0][1]
    program = hw.ProgramOp(meta.text(), meta.text())
    order = [meta.u8() for _ in range(meta.count())]
    meta.finish()
    if any(kind >= len(_BODY_KINDS) for kind in order):
        raise _corrupt("PROGRAM section lists an op kind other than hw.tensor, hw.const, hw.core")
    consts, tensors = sections[CONST][0][1], sections[IO][0][1]
    queues = {
        0: iter([_decode_tensor(tensors, context) for _ in range(tensors.count(5))]),
        1: iter([_decode_const(consts, context) for _ in range(consts.count(10))]),
        2: iter([_decode_core(index, reader) for index, reader in sections.get(CODE, [])]),
    }
    tensors.finish()
    consts.finish()
    for kind in order:
        op = next(queues[kind], None)
        if op is None:
            raise _corrupt(f"PROGRAM section lists more {_BODY_KINDS[kind].name} ops than the file holds")
        program.body.block.add_op(op)
    if any(next(queue, None) is not None for queue in queues.values()):
        raise _corrupt("the file holds ops that the PROGRAM section does not place")
    return program


def _decode_core(index: int, reader: _Reader) -> hw.CoreOp:
    reader.what = f"CODE (core {index})"
    return hw.CoreOp(index, _decode_records(reader, 0))


def _decode(header: Header, data: bytes) -> ModuleOp:
    sections = _sections(header, data)
    context = _Context()
    program = _decode_program(sections, context)
    module = ModuleOp([program])
    ordered: list[Operation] = [module, *program.walk()]
    debug, attrs = sections[DEBUG][0][1], sections[ATTRS][0][1]
    _decode_debug(debug, ordered, context)
    _decode_attrs(attrs, ordered, context)
    debug.finish()
    attrs.finish()
    return module


_DECODE_ERRORS = (
    ValueError,
    TypeError,
    IndexError,
    KeyError,
    OverflowError,
    struct.error,
    RecursionError,
    ParseError,
)
"""Raised by xDSL constructors on values no valid binary holds; reported as corruption."""


def disassemble(data: bytes, target: Target | None = None) -> ModuleOp:
    """The module (one `hw.program`, or a bundle's schedule, host segments and programs) that
    `data` encodes. With `target`, a binary assembled
    for any other target is refused. Every problem is a one-line BinaryError."""
    header = read_header(bytes(data))
    if target is not None:
        check_target(header, target)
    try:
        if header.version >= 2 and any(s.kind == HOST for s in header.sections):
            module = _decode_bundle(header, bytes(data))
        else:
            module = _decode(header, bytes(data))
    except DiagnosticException as error:
        raise _corrupt(f"undecodable content ({str(error).splitlines()[0]})") from None
    except _DECODE_ERRORS as error:
        raise _corrupt(f"undecodable content ({type(error).__name__}: {error})") from None
    try:
        module.verify()
    except DiagnosticException as error:
        raise BinaryError(f"the binary decodes to invalid IR: {_one_line(str(error))}") from None
    return module


def _one_line(message: str, keep: int = 4) -> str:
    """A multi-line verifier report as one line: its first `keep` lines, then a count."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    more = f"; ... ({len(lines) - keep} more)" if len(lines) > keep else ""
    return "; ".join(lines[:keep]) + more


# --------------------------------------------------------------------------- files


def save_program(path: str | os.PathLike, module_or_program: ModuleOp | hw.ProgramOp, target: Target) -> int:
    """Assembles and writes `path` atomically (never a partial file); returns the size in bytes."""
    data = assemble(module_or_program, target)
    write_atomic(path, data)
    return len(data)


def load_program(path: str | os.PathLike, target: Target | None = None) -> ModuleOp:
    """Reads and disassembles a `.aitb` file (see `disassemble`)."""
    return disassemble(read_bytes(path), target)
