"""Parsing bad text never hangs and never raises anything but AitcError (aitc/ir.py's
parse_mlir, with aitc/xdsl_fixes.py): out-of-range literals, hex floats, use before
definition, bad resources and mutated files are diagnostics with file:line:col."""

from __future__ import annotations

import random
import re
import struct
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp
from xdsl.parser import Parser
from xdsl.utils.mlir_lexer import MLIRLexer

from aitc import xdsl_fixes
from aitc.diagnostics import AitcError
from aitc.ir import make_context, parse_mlir, parse_unverified

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((REPO / "examples" / "hw").glob("*.mlir"))


def diagnostic(text: str) -> str:
    """The rendered AitcError that parsing `text` (as `t.mlir`) raises."""
    with pytest.raises(AitcError) as caught:
        parse_mlir(text, "t.mlir")
    return caught.value.render()


# --------------------------------------------------------------------------- the xDSL fixes


def test_xdsl_is_the_version_the_fixes_were_written_for():
    """Fails on an xDSL upgrade: re-check each fix in aitc/xdsl_fixes.py (drop those xDSL has
    made), then update XDSL_VERSION and ORIGINAL_SOURCE_SHA256."""
    assert version("xdsl") == xdsl_fixes.XDSL_VERSION
    assert xdsl_fixes.changed_originals() == []


def test_fixes_are_installed_once():
    xdsl_fixes.apply()
    # the lexer's private regex is what fix 1 replaces (xDSL 0.74 has no public hook: upstream gap)
    assert MLIRLexer._unescaped_characters_regex.pattern == xdsl_fixes.LINEAR_STRING_REGEX


@pytest.mark.parametrize(
    "literal",
    ['""', '"abc"', r'"a\"b"', r'"\n\t\\"', r'"\41\ff"', '"a"b"', r'"\q"', '"a\nb"', r'"\"'],
)
def test_linear_string_regex_matches_what_xdsl_matched(literal: str):
    old = re.compile(xdsl_fixes.XDSL_STRING_REGEX)
    new = re.compile(xdsl_fixes.LINEAR_STRING_REGEX)
    old_match, new_match = old.match(literal), new.match(literal)
    assert (old_match and old_match.group()) == (new_match and new_match.group())


def test_unterminated_string_is_a_quick_diagnostic():
    """xDSL 0.74's regex backtracks exponentially here (it never returns); a generous timeout
    in a subprocess, so a slow machine cannot make this flaky."""
    script = (
        "from aitc.ir import parse_mlir\n"
        "from aitc.diagnostics import AitcError\n"
        "try:\n"
        "    parse_mlir('builtin.module attributes {a = \"' + 'ab c' * 25000, 'big.mlir')\n"
        "except AitcError as e:\n"
        "    print(e.render().splitlines()[0])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=20, check=True
    )
    assert result.stdout.startswith("big.mlir:1:32: error: End of file reached before closing string")


# --------------------------------------------------------------------------- literal diagnostics


RANGE = "is out of range for type"
HEX_MINUS = "hexadecimal float literal should not have a leading minus"
HEX_WIDE = "hexadecimal float constant out of range for type"
DEEP = "builtin.module attributes {a = " + "[" * 3000 + "]" * 3000 + "} {}"
BAD_LITERALS = [
    (f"%0 = arith.constant -{2**63 + 1} : i64", f"1:21: error: integer value -{2**63 + 1} {RANGE} i64"),
    ("%0 = arith.constant 1248 : si8", f"1:21: error: integer value 1248 {RANGE} si8"),
    ("%0 = arith.constant 9223372036854775808 : index", f"{RANGE} index"),
    (f"builtin.module attributes {{a = {10**20}}} {{}}", f"1:32: error: integer value {10**20} {RANGE} i64"),
    ("%0 = graph.constant dense<[1, 300]> : tensor<2xi8>", f"1:31: error: integer value 300 {RANGE} i8"),
    ("%0 = graph.constant dense<[-1]> : tensor<1xui8>", "1:28: error: Expected non-negative integer values"),
    ("%0 = graph.constant dense<[70000.0]> : tensor<1xf16>", f"1:28: error: float value 70000.0 {RANGE} f16"),
    ("%0 = graph.constant dense<[-0x7fc00000]> : tensor<1xf32>", f"1:28: error: {HEX_MINUS}"),
    ("%0 = graph.constant dense<0x1ffff> : tensor<2xf16>", f"1:27: error: {HEX_WIDE} f16"),
    ("%0 = arith.constant -0x7fc00000 : f32", f"1:21: error: {HEX_MINUS}"),
    ("%0 = arith.constant 0x1ffffffff : f32", f"1:21: error: {HEX_WIDE} f32"),
    ("builtin.module attributes {a = array<f32: -0x1>} {}", HEX_MINUS),
    ("%0 = graph.constant dense<1.0> : tensor<1000000000xf32>", "use dense_resource"),
    ('%0 = graph.constant dense<"0x0000803F"> : tensor<1000000000xf32>', "use dense_resource"),
    (DEEP, "error: IR nested too deeply"),
]  # fmt: skip
"""Bad text and a part of its diagnostic (xDSL 0.74 raised VerifyException, ValueError or
OverflowError for most, or read the hex float as an integer)."""


@pytest.mark.parametrize(("text", "expected"), BAD_LITERALS, ids=range(len(BAD_LITERALS)))
def test_bad_literal_is_a_located_diagnostic(text: str, expected: str):
    rendered = diagnostic(text)
    assert rendered.startswith("t.mlir:1:")
    assert expected in rendered.splitlines()[0]


def test_hex_floats_are_bit_patterns():
    module = parse_mlir(
        "%0 = graph.constant dense<[0xff800000, 0x7f800001]> : tensor<2xf32>\n"
        "%1 = arith.constant 0xfff0000000000000 : f64\n"
        "%2 = graph.constant dense<[0xfc00, 0x7c01]> : tensor<2xf16>\n"
        "%3 = graph.constant dense<0x7f81> : tensor<2xbf16>\n"
        "%4 = graph.constant dense<[1, 0x10]> : tensor<2xi32>"
    )
    values = [op.attributes.get("value") or op.properties.get("value") for op in module.ops]
    assert [v.data.data.hex() for v in values if isinstance(v, DenseIntOrFPElementsAttr)] == [
        "000080ff0100807f",
        "00fc017c",
        "817f817f",
        "0100000010000000",
    ]
    assert str(values[1]) == "0xfff0000000000000 : f64"


@pytest.mark.parametrize("value", [1e20, 1e-26, -0.0, 5e-324, float("inf"), float("-inf"), 0.125, 3.0])
def test_float_literal_helpers_round_trip_f64(value: float):
    """What a custom assembly format (e.g. hw's `imm=`) can print and parse for an f64."""
    text = xdsl_fixes.float_literal(value)
    parsed = xdsl_fixes.parse_float_literal(Parser(make_context(), text))
    assert struct.pack("<d", parsed) == struct.pack("<d", value)


def test_float_literal_keeps_a_nan_payload():
    nan = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000123))[0]
    text = xdsl_fixes.float_literal(nan)
    assert text == "0x7ff8000000000123"
    parsed = xdsl_fixes.parse_float_literal(Parser(make_context(), text))
    assert struct.pack("<d", parsed) == struct.pack("<d", nan)


def test_parse_errors_of_a_file_not_utf8():
    with pytest.raises(Exception, match="the input is not UTF-8 text"):
        parse_unverified(b"%0 = \xff", "t.mlir", make_context())


# --------------------------------------------------------------------------- use before definition

FUNC = """func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.relu %a : tensor<2xf32>
  %1 = graph.add %0, %a : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  func.return %1 : tensor<2xf32>
}"""


def swap_lines(text: str, first: int, second: int) -> str:
    lines = text.splitlines()
    lines[first - 1], lines[second - 1] = lines[second - 1], lines[first - 1]
    return "\n".join(lines)


def test_use_before_definition():
    assert isinstance(parse_mlir(FUNC), ModuleOp)
    rendered = diagnostic(swap_lines(FUNC, 2, 3))
    assert rendered.splitlines()[0] == (
        "t.mlir:2:3: error: graph.add uses %0 before its definition by graph.relu on line 3"
    )


NESTED = """func.func @f(%n: index, %x: i32) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> (i32) {
    %s = arith.addi %acc, %x : i32
    scf.yield %s : i32
  }
  func.return %r : i32
}"""


def test_values_of_enclosing_blocks_are_visible_in_regions():
    assert isinstance(parse_mlir(NESTED), ModuleOp)


def test_use_in_a_loop_before_an_outer_definition():
    constant = "  %c1 = arith.constant 1 : index\n"
    text = NESTED.replace(constant, "").replace("  func.return", constant + "  func.return")
    assert diagnostic(text).splitlines()[0] == (
        "t.mlir:3:3: error: scf.for uses %c1 before its definition by arith.constant on line 7"
    )


def test_operand_defined_inside_the_users_own_region():
    text = NESTED.replace(
        "    scf.yield %s : i32\n", "    %c1 = arith.constant 1 : index\n    scf.yield %s : i32\n"
    )
    text = text.replace("  %c1 = arith.constant 1 : index\n  %r", "  %r")
    assert "scf.for uses %c1" in diagnostic(text)


def test_dominance_in_a_real_model():
    text = (REPO / "examples" / "hw" / "tiled_matmul.mlir").read_text()
    assert isinstance(parse_mlir(text), ModuleOp)


# --------------------------------------------------------------------------- verifier, resources


def test_verifier_errors_name_the_op_and_its_line():
    text = FUNC.replace(
        "-> tensor<2xf32>\n  func.return %1 : tensor<2xf32>",
        "-> tensor<3xf32>\n  func.return %1 : tensor<3xf32>",
    )
    text = text.replace(") -> tensor<2xf32> {", ") -> tensor<3xf32> {")
    rendered = diagnostic(text)
    assert rendered.startswith("t.mlir:3:3: error: ")


def test_resource_of_the_wrong_size():
    text = """%0 = graph.constant dense_resource<w_bad_size_1> : tensor<4xf32>
{-#
  dialect_resources: {
    builtin: {
      w_bad_size_1: "0x1000000000000000"
    }
  }
#-}"""
    assert (
        "t.mlir:1:1: error: dense_resource<w_bad_size_1> holds 4 bytes, but tensor<4xf32> needs 16"
        in diagnostic(text)
    )


# --------------------------------------------------------------------------- mutated files

REPLACEMENTS = ["-9223372036854775809", "18446744073709551616", "1248", "-1", "0x7fc00000", "-0x1"]
REPLACEMENTS += ["1.0e39", "true", "f16", "i1", "index", '"', "<", "[", "{", "%", "^", "#", ":", ""]


def mutate(text: str, rng: random.Random) -> str:
    """`text` with one token replaced, or two lines swapped."""
    if rng.random() < 0.2:
        lines = text.splitlines()
        return swap_lines(text, rng.randrange(1, len(lines) + 1), rng.randrange(1, len(lines) + 1))
    tokens = list(re.finditer(r"%\w+|[\w.]+|[^\s\w]", text))
    token = rng.choice(tokens)
    return text[: token.start()] + rng.choice(REPLACEMENTS) + text[token.end() :]


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_mutated_files_parse_or_fail_with_a_diagnostic(path: Path):
    rng = random.Random(path.stem)
    text = path.read_text()
    refused = 0
    for _ in range(100):
        try:
            parse_mlir(mutate(text, rng), path.name)
        except AitcError:
            refused += 1
    assert refused > 50
