"""Fixes to xDSL 0.74.0's lexer, parser and printer, so that aitc's textual IR is lossless and
parsing bad text ends with a diagnostic (never a hang or a traceback).

`apply()` installs them once; `aitc.ir` calls it on import, so every entry point (`aitc`,
`aitc-opt`, the Python API, `aitc.binary`'s parser) gets them. Each fix replaces one xDSL
function and says why:

1. `MLIRLexer._unescaped_characters_regex`: `"(?:[^"...]+|...)*"` nests `+` in `*`, so an
   unterminated string backtracks exponentially (a one-line file never returns). The
   replacement matches the same language in linear time.
2. `AttrParser._TensorLiteralElement.to_type`: in `dense<...>` of a float type a hex integer
   literal is the element's bit pattern (MLIR's rule, which xDSL's own printer relies on for
   inf, NaN and values whose decimal form does not round-trip); xDSL 0.74 reads `0xff800000`
   as the number 4286578688. Out-of-range integers and floats become located diagnostics
   instead of a ValueError/OverflowError from the packing code.
3. `DenseIntOrFPElementsAttr.from_list`: packs those bit patterns exactly (NaN payloads,
   signalling NaNs included: a Python float cannot carry an f16 payload or an f32 sNaN), and
   stores i1 `true` as the byte 1 (numpy's bool) instead of 0xff.
4. `DenseIntOrFPElementsAttr.print_without_type` and `DenseArrayBase.print_builtin`: a splat is
   detected on bytes (xDSL compares values, so `[0.0, -0.0]` printed as `dense<0.0>`), and NaN
   and inf are printed from the stored bits (xDSL re-packs a Python float, which quiets sNaNs
   and drops f16 NaN payloads).
5. `AttrParser._parse_builtin_densearray_attr`: `array<f32: 0x7fc00000>` (what the printer
   writes for NaN) is read as a bit pattern instead of failing with "Expected float literal".
6. `AttrParser.parse_optional_builtin_int_or_float_attr`: `-0x7fc00000 : f32` (silently a
   huge negative number in 0.74) and a too-wide hex float are refused; `1248 : si8` and
   `9223372036854775808 : i64` are located diagnostics instead of a VerifyException. (A scalar
   `FloatAttr` holds a Python float: f64 keeps every bit, as aitc's attributes are f64; a
   narrower scalar keeps its value, but a signalling NaN is quieted and an f16 NaN payload is
   lost. Tensors and arrays keep every bit.)
7. `AttrParser._parse_dense_literal_type` and `parse_dense_int_or_fp_elements_attr`: a
   `dense<...>` literal of more than MAX_DENSE_ELEMENTS elements is refused before xDSL builds
   a Python list of that many values (a mistyped `tensor<1000000000xf32>` on a splat would
   take minutes and gigabytes). aitc prints anything over 64 bytes as `dense_resource`.

`ORIGINAL_SOURCE_SHA256` pins the source of every replaced xDSL function (and
XDSL_STRING_REGEX the lexer's regex); test/python/test_ir_parse.py fails when an xDSL upgrade
changes one of them, so each fix gets looked at again (and dropped once xDSL has it).
"""

from __future__ import annotations

import hashlib
import inspect
import io
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from xdsl.dialects.builtin import (
    AnyDenseElement,
    AnyFloat,
    BytesAttr,
    ComplexType,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    RankedStructure,
    f64,
    i64,
)
from xdsl.ir import Attribute
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

XDSL_VERSION = "0.74.0"
"""The xDSL release these fixes were written against (pinned in pyproject.toml)."""

XDSL_STRING_REGEX = r'"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'
"""xDSL 0.74's string-literal regex, exponential on an unterminated string."""

LINEAR_STRING_REGEX = r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'
"""xDSL's string-literal regex with `[^...]+` made `[^...]`: the same language, no nested
quantifier, hence no backtracking blow-up on an unterminated string."""

MAX_DENSE_ELEMENTS = 1 << 24
"""The most elements a textual `dense<...>` literal may have (see 7. above)."""

# The xDSL functions these fixes replace are private members (`MLIRLexer._unescaped_characters_regex`,
# `AttrParser._TensorLiteralElement`, `_parse_builtin_densearray_attr`, `_parse_dense_literal_type`):
# xDSL 0.74 has no public hook to change how it lexes strings or parses dense literals (upstream
# gap). ORIGINAL_SOURCE_SHA256 pins each one, so an xDSL upgrade that changes them fails a test.
_ORIGINAL_STRING_REGEX = MLIRLexer._unescaped_characters_regex.pattern

_TensorLiteralElement = AttrParser._TensorLiteralElement

_ORIGINALS: dict[str, Callable[..., Any]] = {
    "to_type": _TensorLiteralElement.to_type,
    "from_list": DenseIntOrFPElementsAttr.from_list,
    "print_without_type": DenseIntOrFPElementsAttr.print_without_type,
    "print_builtin": DenseArrayBase.print_builtin,
    "parse_densearray": AttrParser._parse_builtin_densearray_attr,
    "parse_int_or_float": AttrParser.parse_optional_builtin_int_or_float_attr,
    "parse_dense_type": AttrParser._parse_dense_literal_type,
    "parse_dense": AttrParser.parse_dense_int_or_fp_elements_attr,
    "print_float": Printer.print_float,  # not replaced: used for finite values, relied upon
}

ORIGINAL_SOURCE_SHA256 = {
    "to_type": "8071e2624e306cf1a9149efad8b8c9b161443a3bc470623dc08f4f1140e84610",
    "from_list": "c1b1ac5ce78e7ad690f518b2f885612b6302c0e39b8018679dd727c44013302b",
    "print_without_type": "cb67ddaccc722728ae710d723fef13dabf3dfefde34abbc2012fe9274f12e78a",
    "print_builtin": "092425216daa0633b80d2836015840c9e22856713e2fe212a226b31c8a7caa12",
    "parse_densearray": "e5acf223a3f3cb0d48548c3b59a71f8598a59898cfa438b7db992c7a7b90e683",
    "parse_int_or_float": "b8402b0c28827d5fb0c62c65fdb08b3703ae1b416c94d298486a813e8ef3b35c",
    "parse_dense_type": "b1542ff9dec5f63ed02460648c691cb0bbee38bba64cf8d054b6490d14147817",
    "parse_dense": "20bf934205998b33b0d937c5be0b29ee1190b89602018594e16fb29aa91ee81d",
    "print_float": "7025e6b4fbc4da08ea6f35ba82bd7f288973ea10a30966adade99647f5b4d36a",
}
"""sha256 of `inspect.getsource` of each xDSL function above, as of xDSL 0.74.0."""


def source_digest(function: Callable[..., Any]) -> str:
    """sha256 of a function's source text (what ORIGINAL_SOURCE_SHA256 records)."""
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()


def changed_originals() -> list[str]:
    """Names of the replaced xDSL functions whose source differs from the pinned one, plus
    the lexer regex if xDSL changed it (empty when xDSL is the version the fixes expect)."""
    changed = [
        name
        for name, function in _ORIGINALS.items()
        if source_digest(function) != ORIGINAL_SOURCE_SHA256[name]
    ]
    if _ORIGINAL_STRING_REGEX != XDSL_STRING_REGEX:
        changed.append("MLIRLexer._unescaped_characters_regex")
    return changed


# --- bit patterns of float elements -------------------------------------------------------


class FloatBits(float):
    """A float element read from a hex literal: its value, and the exact bits to store."""

    bits: int

    def __new__(cls, value: float, bits: int) -> FloatBits:
        self = super().__new__(cls, value)
        self.bits = bits
        return self


def float_from_bits(bits: int, type_: AnyFloat) -> float:
    """The value of the bit pattern `bits` of a float type (NaN for every NaN pattern)."""
    return next(type_.iter_unpack(bits.to_bytes(type_.compile_time_size, "little")))


def _element_bits(raw: bytes, size: int) -> list[int]:
    return [int.from_bytes(raw[i : i + size], "little") for i in range(0, len(raw), size)]


def _float_bytes(value: float, type_: AnyFloat) -> bytes:
    if isinstance(value, FloatBits):
        return value.bits.to_bytes(type_.compile_time_size, "little")
    return type_.pack((value,))


def _hex_literal(text: str) -> bool:
    """Whether a literal's text (sign included) is hexadecimal, as xDSL's lexer reads it."""
    return text.lstrip("-").lstrip().startswith("0x")


def _checked_bits(parser: AttrParser, bits: int, negative: bool, type_: AnyFloat, at) -> int:
    """`bits` if it is a bit pattern of `type_`; a located diagnostic otherwise (MLIR's rules)."""
    if negative:
        parser.raise_error("hexadecimal float literal should not have a leading minus", at)
    if bits >= 1 << type_.bitwidth:
        parser.raise_error(f"hexadecimal float constant out of range for type {type_}", at)
    return bits


def _checked_float(parser: AttrParser, value: float, type_: AnyFloat, at) -> float:
    """`value` if `type_` can hold it (rounding allowed); a located diagnostic otherwise."""
    try:
        type_.pack((value,))
    except (OverflowError, ValueError, TypeError):
        parser.raise_error(f"float value {value} is out of range for type {type_}", at)
    return value


def _checked_int(parser: AttrParser, value: int, type_: IntegerType | IndexType, at) -> int:
    """`value` if `type_` can hold it; a located diagnostic naming the range otherwise."""
    if isinstance(type_, IndexType):
        low, high = -(1 << 63), 1 << 63
    else:
        low, high = type_.value_range()
    if not low <= value < high:
        parser.raise_error(f"integer value {value} is out of range for type {type_}", at)
    return value


# --- 2. dense<...> elements, 3. packing ----------------------------------------------------


def _to_type(
    self: _TensorLiteralElement, parser: AttrParser, type: AnyFloat | IntegerType | IndexType | ComplexType
):
    """Replaces `_TensorLiteralElement.to_type` (same signature): hex literals of float types are
    bit patterns; values the element type cannot hold are diagnostics at the element."""
    if isinstance(type, AnyFloat) and isinstance(self.value, int) and _hex_literal(self.span.text):
        bits = _checked_bits(parser, abs(self.value), self.is_negative, type, self.span)
        return FloatBits(float_from_bits(bits, type), bits)
    value = _ORIGINALS["to_type"](self, parser, type)
    if isinstance(type, AnyFloat):
        return _checked_float(parser, value, type, self.span)
    if isinstance(type, IntegerType | IndexType) and isinstance(value, int):
        return _checked_int(parser, value, type, self.span)
    return value


def _from_list(type: RankedStructure[AnyDenseElement], data: Sequence[Any]) -> DenseIntOrFPElementsAttr:
    """Replaces `DenseIntOrFPElementsAttr.from_list` (same parameters): exact bits for FloatBits,
    i1 as 0/1."""
    element = type.get_element_type()
    if isinstance(element, AnyFloat) and any(isinstance(v, FloatBits) for v in data):
        raw = b"".join(_float_bytes(v, element) for v in data)
    elif isinstance(element, IntegerType) and element.width.data == 1:
        raw = bytes(1 if element.get_normalized_value(int(v)) else 0 for v in data)
    else:
        return _ORIGINALS["from_list"](type, data)
    if len(data) == 1:
        raw *= math.prod(type.get_shape())
    return DenseIntOrFPElementsAttr(type, BytesAttr(raw))


# --- 4. printing --------------------------------------------------------------------------


def print_float_bits(printer: Printer, bits: int, type_: AnyFloat) -> None:
    """A float element: xDSL's decimal form when finite (it round-trips), else the raw bits
    in hex (inf, and NaN with its payload), as upstream MLIR prints them."""
    value = float_from_bits(bits, type_)
    if math.isfinite(value):
        printer.print_float(value, type_)
    else:
        printer.print_string(f"0x{bits:0{2 * type_.compile_time_size}x}")


def _print_nested(printer: Printer, items: Sequence[Any], shape: Sequence[int], item) -> None:
    """`[[a, b], [c, d]]`: `items` in row-major order, nested after `shape`."""
    printer.print_string("[")
    if len(shape) > 1:
        k = len(items) // shape[0]
        rows = (items[i : i + k] for i in range(0, len(items), k))
        printer.print_list(rows, lambda row: _print_nested(printer, row, shape[1:], item))
    else:
        printer.print_list(items, item)
    printer.print_string("]")


def _element_printer(attr: DenseIntOrFPElementsAttr, raw: bytes, printer: Printer):
    """The elements held in `raw` (bytes of `attr`) and how to print one (floats as bits)."""
    element = attr.get_element_type()
    size = element.compile_time_size
    if isinstance(element, AnyFloat):
        return _element_bits(raw, size), lambda b: print_float_bits(printer, b, element)
    values = element.unpack(raw, len(raw) // size)
    # xDSL 0.74 has no public API to print one element of a dense attribute (upstream gap)
    return values, lambda v: attr._print_one_elem(v, printer)


def _print_without_type(self: DenseIntOrFPElementsAttr, printer: Printer) -> None:
    """Replaces `DenseIntOrFPElementsAttr.print_without_type` (splats compared as bytes)."""
    printer.print_string("dense")
    raw, length = self.data.data, len(self)
    size = self.get_element_type().compile_time_size
    splat = length > 0 and raw == raw[:size] * length
    with printer.in_angle_brackets():
        if length == 0:
            return
        if splat:
            items, item = _element_printer(self, raw[:size], printer)
            item(items[0])
        elif length > 100:
            printer.print_string(f'"0x{raw.hex().upper()}"')
        else:
            shape = self.get_shape() if self.shape_is_complete else (length,)
            items, item = _element_printer(self, raw, printer)
            _print_nested(printer, items, shape, item)


def _print_dense_array(self: DenseArrayBase, printer: Printer) -> None:
    """Replaces `DenseArrayBase.print_builtin` for float arrays (NaN and inf as bits)."""
    element = self.elt_type
    if not isinstance(element, AnyFloat) or len(self) == 0:
        return _ORIGINALS["print_builtin"](self, printer)
    printer.print_string("array")
    with printer.in_angle_brackets():
        printer.print_attribute(element)
        printer.print_string(": ")
        bits = _element_bits(self.data.data, element.compile_time_size)
        printer.print_list(bits, lambda b: print_float_bits(printer, b, element))


# --- 5. array<f32: ...>, 6. scalar literals ------------------------------------------------


def _parse_float_element(parser: AttrParser, type_: AnyFloat) -> bytes:
    """One element of `array<f32: ...>`: a float literal or a hex bit pattern."""
    start = parser.pos
    # xDSL 0.74's parser has no public API to peek at or consume a token (upstream gap)
    negative = parser._parse_optional_token(MLIRTokenKind.MINUS) is not None
    if parser._current_token.kind == MLIRTokenKind.INTEGER_LIT:
        token = parser._current_token
        if _hex_literal(token.text):
            value = parser.parse_integer(allow_negative=False)
            bits = _checked_bits(parser, value, negative, type_, token.span)
            return bits.to_bytes(type_.compile_time_size, "little")
    value = float(parser.parse_number())
    value = -value if negative else value
    return type_.pack((_checked_float(parser, value, type_, start),))


def float_literal(value: float, type_: AnyFloat = f64) -> str:
    """`value` as a literal that parses back to the same bits of `type_` (for custom assembly
    formats): xDSL's decimal form when finite, else the hex bit pattern (inf, NaN)."""
    stream = io.StringIO()
    print_float_bits(Printer(stream), int.from_bytes(type_.pack((value,)), "little"), type_)
    return stream.getvalue()


def parse_float_literal(parser: AttrParser, type_: AnyFloat = f64) -> float:
    """A float (or integer) literal, or a hex bit pattern of `type_`: what float_literal writes."""
    return float_from_bits(int.from_bytes(_parse_float_element(parser, type_), "little"), type_)


def _parse_dense_array(self: AttrParser) -> DenseArrayBase | None:
    """Replaces `_parse_builtin_densearray_attr` for float arrays (hex bit patterns)."""
    start = self.pos
    self.parse_characters("<", " in dense array")
    element = self.parse_attribute()
    if not isinstance(element, AnyFloat) or self.parse_optional_punctuation(":") is None:
        self._resume_from(start)  # xDSL 0.74 has no public API to backtrack a parser (upstream gap)
        return _ORIGINALS["parse_densearray"](self)
    values = self.parse_comma_separated_list(self.Delimiter.NONE, lambda: _parse_float_element(self, element))
    self.parse_characters(">", " in dense array")
    return DenseArrayBase(element, BytesAttr(b"".join(values)))


def _typed_number(self: AttrParser, value: int | float, text: str, type_: Attribute, at):
    """`value : type_` as an attribute, with MLIR's rules for hex floats and range checks."""
    if isinstance(type_, AnyFloat):
        if isinstance(value, int) and _hex_literal(text):
            bits = _checked_bits(self, abs(value), text.startswith("-"), type_, at)
            return FloatAttr(float_from_bits(bits, type_), type_)
        return FloatAttr(_checked_float(self, float(value), type_, at), type_)
    if isinstance(type_, IntegerType | IndexType):
        if isinstance(value, float):
            self.raise_error("Floating point value is not valid for integer type.", at)
        return IntegerAttr(_checked_int(self, value, type_, at), type_)
    self.raise_error("Invalid type given for integer or float attribute.", at)


def _parse_int_or_float_attr(self: AttrParser) -> IntegerAttr | FloatAttr | None:
    """Replaces `parse_optional_builtin_int_or_float_attr` (see the module docstring, 6.)."""
    if (boolean := self.try_parse_builtin_boolean_attr()) is not None:
        return boolean
    start = self.pos
    if (value := self.parse_optional_number()) is None:
        return None
    literal = Span(start, self.pos, self.lexer.input)
    text = literal.text.strip()
    # xDSL 0.74's parser has no public API to peek at or consume a token (upstream gap)
    if self._current_token.kind != MLIRTokenKind.COLON:
        if isinstance(value, float):
            return FloatAttr(value, f64)
        return IntegerAttr(_checked_int(self, value, i64, literal), i64)
    # as the replaced xDSL function does: `: type` has no public parse API in xDSL 0.74 (upstream gap)
    type_ = self._parse_attribute_type()
    return _typed_number(self, value, text, type_, literal)


# --- 7. size of dense literals ------------------------------------------------------------


def _check_dense_size(parser: AttrParser, type_) -> None:
    count = math.prod(type_.get_shape())
    if count > MAX_DENSE_ELEMENTS:
        parser.raise_error(
            f"dense literal of {count} elements ({type_}) is over the {MAX_DENSE_ELEMENTS} "
            "elements a textual literal may have; use dense_resource"
        )


def _parse_dense_literal_type(self: AttrParser):
    """Wraps `_parse_dense_literal_type`: the type of a `dense<...> : type` literal."""
    type_ = _ORIGINALS["parse_dense_type"](self)
    _check_dense_size(self, type_)
    return type_


def _parse_dense(self: AttrParser, type: RankedStructure[AnyDenseElement] | None) -> DenseIntOrFPElementsAttr:
    """Wraps `parse_dense_int_or_fp_elements_attr` (same signature) when the type is known beforehand."""
    if type is not None:
        _check_dense_size(self, type)
    return _ORIGINALS["parse_dense"](self, type)


# --- installing ---------------------------------------------------------------------------

_applied = False


def apply() -> None:
    """Installs the fixes (idempotent)."""
    global _applied
    if _applied:
        return
    # xDSL 0.74 has no public hooks for these (upstream gap; see the private members above _ORIGINALS)
    MLIRLexer._unescaped_characters_regex = re.compile(LINEAR_STRING_REGEX)
    _TensorLiteralElement.to_type = _to_type
    DenseIntOrFPElementsAttr.from_list = staticmethod(_from_list)  # pyright: ignore[reportAttributeAccessIssue]  -- one function replaces the overloads of xDSL's from_list (typed per element kind)
    DenseIntOrFPElementsAttr.print_without_type = _print_without_type
    DenseArrayBase.print_builtin = _print_dense_array
    AttrParser._parse_builtin_densearray_attr = _parse_dense_array
    AttrParser.parse_optional_builtin_int_or_float_attr = _parse_int_or_float_attr
    AttrParser._parse_dense_literal_type = _parse_dense_literal_type
    AttrParser.parse_dense_int_or_fp_elements_attr = _parse_dense
    _applied = True
