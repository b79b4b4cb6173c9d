"""Generic mutations of bytes and of MLIR text; each returns the damaged value and a short note.

Text mutations aim at what a hand-edited or truncated .mlir file really looks like (a line
lost, two lines swapped so a value is used before its definition, an unterminated string) and
at the limits of the parser and the simulator (integer literals out of range, huge loop trip
counts, deep nesting, damaged hex blobs).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

Mutation = Callable[[random.Random, str], tuple[str, str]]
ByteMutation = Callable[[random.Random, bytes], tuple[bytes, str]]

_INTERESTING = (b"\x00", b"\xff", b"\x7f", b"\x80", b"\xff\xff\xff\xff", b"\x00\x00\x00\x80", b"\xff" * 8)


def _position(rng: random.Random, data: bytes | str) -> int:
    return rng.randrange(len(data) + 1)


def flip_bytes(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """XORs 1..8 random bytes with random non-zero masks."""
    out = bytearray(data)
    spots = [rng.randrange(len(out)) for _ in range(rng.randint(1, 8))] if out else []
    for spot in spots:
        out[spot] ^= rng.randint(1, 255)
    return bytes(out), f"flipped bytes at {sorted(spots)}"


def truncate_bytes(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Cuts the data at a random offset."""
    cut = _position(rng, data)
    return data[:cut], f"truncated to {cut} of {len(data)} bytes"


def insert_bytes(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Inserts 1..16 random bytes at a random offset."""
    at, extra = _position(rng, data), rng.randbytes(rng.randint(1, 16))
    return data[:at] + extra + data[at:], f"inserted {len(extra)} bytes at {at}"


def overwrite_interesting(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Overwrites a few bytes with boundary values (0, 0xff, 0x7f, 0x80, all-ones words)."""
    value = rng.choice(_INTERESTING)
    at = rng.randrange(max(1, len(data) - len(value) + 1))
    return data[:at] + value + data[at + len(value) :], f"wrote {value.hex()} at {at}"


def duplicate_chunk(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Copies a random slice of the data to a random offset."""
    start = _position(rng, data)
    chunk = data[start : start + rng.randint(1, 64)]
    at = _position(rng, data)
    return data[:at] + chunk + data[at:], f"copied {len(chunk)} bytes from {start} to {at}"


BYTE_MUTATIONS: tuple[ByteMutation, ...] = (
    flip_bytes,
    truncate_bytes,
    insert_bytes,
    overwrite_interesting,
    duplicate_chunk,
)


def mutate_bytes(rng: random.Random, data: bytes, rounds: int | None = None) -> tuple[bytes, str]:
    """1..3 random byte mutations in a row."""
    notes = []
    for _ in range(rounds or rng.randint(1, 3)):
        data, note = rng.choice(BYTE_MUTATIONS)(rng, data)
        notes.append(note)
    return data, "; ".join(notes)


# --------------------------------------------------------------------------- MLIR text


def _pick_line(rng: random.Random, lines: list[str]) -> int:
    return rng.randrange(len(lines)) if lines else 0


def delete_line(rng: random.Random, text: str) -> tuple[str, str]:
    """Removes one line."""
    lines = text.splitlines(keepends=True)
    at = _pick_line(rng, lines)
    return "".join(lines[:at] + lines[at + 1 :]), f"deleted line {at + 1}"


def duplicate_line(rng: random.Random, text: str) -> tuple[str, str]:
    """Repeats one line (a value defined twice, a second terminator, ...)."""
    lines = text.splitlines(keepends=True)
    at = _pick_line(rng, lines)
    return "".join(lines[: at + 1] + lines[at : at + 1] + lines[at + 1 :]), f"duplicated line {at + 1}"


def swap_lines(rng: random.Random, text: str) -> tuple[str, str]:
    """Swaps two lines, often putting a use before its definition."""
    lines = text.splitlines(keepends=True)
    if len(lines) < 2:
        return text, "too short to swap lines"
    first = rng.randrange(len(lines) - 1)
    second = first + 1 if rng.random() < 0.5 else rng.randrange(len(lines))
    lines[first], lines[second] = lines[second], lines[first]
    return "".join(lines), f"swapped lines {first + 1} and {second + 1}"


def unterminated_string(rng: random.Random, text: str) -> tuple[str, str]:
    """Inserts a lone `"` (or cuts the text just after an opening one)."""
    quotes = [m.start() for m in re.finditer('"', text)]
    if quotes and rng.random() < 0.5:
        at = rng.choice(quotes) + 1
        return text[:at], f'cut after the " at offset {at - 1}'
    at = _position(rng, text)
    return text[:at] + '"' + text[at:], f'inserted " at offset {at}'


_TYPED_INT = re.compile(r"-?\d+ : (si|ui|i)(\d+)\b")
_BAD_INTS = (
    "-9223372036854775809 : i64",
    "9223372036854775808 : i64",
    "1248 : si8",
    "256 : ui8",
    "-1 : ui32",
)


def integer_out_of_range(rng: random.Random, text: str) -> tuple[str, str]:
    """Replaces a typed integer literal by one that does not fit its type."""
    matches = list(_TYPED_INT.finditer(text))
    if not matches:
        at = _position(rng, text)
        literal = rng.choice(_BAD_INTS)
        return text[:at] + literal + text[at:], f"inserted '{literal}' at offset {at}"
    match = rng.choice(matches)
    signed, width = match.group(1) != "ui", int(match.group(2))
    width = min(max(width, 1), 1024)  # an earlier mutation may have made `i64` into `i6400000`
    value = rng.choice([2 ** (width - 1) if signed else 2**width, -(2 ** (width - 1)) - 1, 2**200])
    literal = f"{value} : {match.group(1)}{match.group(2)}"
    return text[: match.start()] + literal + text[match.end() :], f"'{match.group()}' -> '{literal}'"


_LOOP = re.compile(r"hw\.loop (\d+)")
_CORE = re.compile(r"hw\.core \d+ \{\n")


def huge_loop(rng: random.Random, text: str) -> tuple[str, str]:
    """Sets hw.loop trip counts to 10**6 (or 2**64), or inserts nested empty 10**6 loops."""
    count = rng.choice(["1000000", "18446744073709551616", "4294967296"])
    cores = list(_CORE.finditer(text))
    if not cores and not _LOOP.search(text):
        return replace_token(rng, text)
    if cores and (rng.random() < 0.5 or not _LOOP.search(text)):
        at = rng.choice(cores).end()
        nested = f"hw.loop {count} {{ hw.loop {count} {{ }} }}\n"
        return text[:at] + nested + text[at:], f"inserted '{nested.strip()}'"
    replaced = _LOOP.sub(f"hw.loop {count}", text)
    return replaced, f"every hw.loop count -> {count}"


_HEX_BLOB = re.compile(r'"0x([0-9A-Fa-f]*)"')


def damage_hex(rng: random.Random, text: str) -> tuple[str, str]:
    """Damages a `"0x..."` blob (a dialect_resources entry or a hex dense literal): a non-hex
    digit, an odd length, a lost alignment prefix, a truncated or emptied blob."""
    matches = list(_HEX_BLOB.finditer(text))
    if not matches:
        return _hex_const(rng, text)
    match = rng.choice(matches)
    digits = match.group(1)
    cut = rng.randrange(len(digits) + 1)
    damaged = rng.choice(
        [
            digits[:cut] + "g" + digits[cut + 1 :],
            digits[:-1],
            digits[8:],
            digits[:cut],
            "",
            "ffffffff" + digits[8:],
        ]
    )
    start, end = match.span(1)
    return text[:start] + damaged + text[
        end:
    ], f"hex blob at offset {start}: {len(digits)} -> {len(damaged)} digits"


_DENSE_LIST = re.compile(r"dense<\[[^<>]*\]>")


def _hex_const(rng: random.Random, text: str) -> tuple[str, str]:
    """Replaces a `dense<[...]>` literal by a hex one of a wrong length or with bad digits."""
    matches = list(_DENSE_LIST.finditer(text))
    if not matches:
        return delete_line(rng, text)
    match = rng.choice(matches)
    blob = rng.choice(["0xZZ", "0x", "0x0", "0x" + "ab" * rng.randint(1, 9), "0x" + "0" * 4096])
    return text[: match.start()] + f'dense<"{blob}">' + text[
        match.end() :
    ], f"dense literal -> hex {blob[:12]}"


_TOKEN = re.compile(r'%[\w.$-]+|@[\w.$-]+|"[^"\n]*"|0x[0-9a-fA-F]+|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|[\w.]+|\S')
_NASTY_TOKENS = (
    "%0", "%undefined", "@main", "}", "{", "(", ")", "<", ">", ":", "=", "-1", "0", "1e999", "nan",
    "0x", "tensor<?x4xf32>", "tensor<0x4xf32>", "tensor<9223372036854775807xf32>", "i0", "f8E4M3FN",
    "dense<>", "dense<[[1]]>", "loc(", "#tile.buffer", "!hw.bogus", "hw.bogus", "graph.bogus",
    "builtin.module", "func.return", "-", "[", "]", "\\", "\x00", "é",
)  # fmt: skip


def replace_token(rng: random.Random, text: str) -> tuple[str, str]:
    """Replaces one token by another token of the file or by a nasty one."""
    tokens = list(_TOKEN.finditer(text))
    if not tokens:
        return text + rng.choice(_NASTY_TOKENS), "appended a token"
    victim = rng.choice(tokens)
    new = rng.choice(_NASTY_TOKENS) if rng.random() < 0.5 else rng.choice(tokens).group()
    return text[: victim.start()] + new + text[
        victim.end() :
    ], f"token {victim.group()[:30]!r} -> {new[:30]!r}"


def truncate_text(rng: random.Random, text: str) -> tuple[str, str]:
    """Cuts the text at a random offset."""
    cut = _position(rng, text)
    return text[:cut], f"truncated to {cut} of {len(text)} characters"


def deep_nesting(rng: random.Random, text: str) -> tuple[str, str]:
    """Inserts 10**4..10**5 levels of `(`, `[`, `tensor<` or `{` (parser recursion)."""
    opener = rng.choice(["(", "[", "tensor<", "{", "dense<["])
    depth = rng.choice([10_000, 100_000])
    at = _position(rng, text)
    return text[:at] + opener * depth + text[at:], f"inserted {depth} x {opener!r} at offset {at}"


def bad_dims(rng: random.Random, text: str) -> tuple[str, str]:
    """Replaces one dim of a tensor type by 0, -1 or an absurd size."""
    matches = list(re.finditer(r"(?<=tensor<)(\d+)|(?<=x)(\d+)(?=x)", text))
    if not matches:
        return replace_token(rng, text)
    match = rng.choice(matches)
    new = rng.choice(["0", "-1", str(2**40), str(2**63), "99999999999999999999"])
    return text[: match.start()] + new + text[match.end() :], f"dim {match.group()} -> {new}"


_TENSOR_TYPE = re.compile(r"tensor<\d+x[^<>]*>")


def resize_type(rng: random.Random, text: str) -> tuple[str, str]:
    """Changes the first dim of one tensor type everywhere it occurs, so the IR still verifies
    but holds an empty, a 1-element or a terabyte tensor."""
    types = sorted(set(_TENSOR_TYPE.findall(text)))
    if not types:
        return bad_dims(rng, text)
    old = rng.choice(types)
    new = re.sub(r"\d+", rng.choice(["0", "1", str(2**20), str(2**31), str(2**40)]), old, count=1)
    return text.replace(old, new), f"every {old} -> {new}"


TEXT_MUTATIONS: tuple[Mutation, ...] = (
    delete_line,
    duplicate_line,
    swap_lines,
    unterminated_string,
    integer_out_of_range,
    huge_loop,
    damage_hex,
    replace_token,
    truncate_text,
    deep_nesting,
    bad_dims,
    resize_type,
)


def mutate_text(rng: random.Random, text: str) -> tuple[str, str]:
    """1..2 random text mutations in a row."""
    notes = []
    for _ in range(rng.choice([1, 1, 1, 2])):
        text, note = rng.choice(TEXT_MUTATIONS)(rng, text)
        notes.append(f"{note}")
    return text, "; ".join(notes)
