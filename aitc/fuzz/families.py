"""The fuzz families: each turns a seeded `random.Random` into one `Case`. `FAMILIES` is the table.

Case `index` of run `seed` belongs to family `families[index % len(families)]` and draws all
its randomness from `case_rng(seed, index)`, so it is the same case on every run and machine.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import struct
from collections.abc import Callable

from aitc.fuzz import bases
from aitc.fuzz.case import Case, Special, case_rng
from aitc.fuzz.io_families import npz_inputs_case, output_paths_case, outputs_of
from aitc.fuzz.mutate import flip_bytes, mutate_bytes, mutate_text
from aitc.fuzz.onnx_mutations import mutate_model
from aitc.fuzz.options_family import cli_options_case

FamilyGenerator = Callable[[random.Random], Case]

COMPILE_SHARE = 0.15
"""Fraction of ONNX/.mlir cases that run `aitc compile` (slower than import or run)."""
TINY = ["--target", "tiny"]


ODD_INPUT_SHARE = 0.04
"""Fraction of cases whose main input is replaced by a folder, a dangling symlink, nothing, or
an empty file."""


def _case(argv: list[str], files: dict[str, bytes], note: str, rng: random.Random) -> Case:
    """A case whose every file is an input and whose outputs are the -o/--outputs/--trace paths;
    sometimes its first file is swapped for an odd kind of path."""
    specials: list[Special] = []
    if rng.random() < ODD_INPUT_SHARE:
        files, specials, note = _odd_main_input(rng, files)
    inputs = sorted([*files, *(special.path for special in specials)])
    outputs = outputs_of(argv)
    return Case("", 0, argv, files=files, specials=specials, inputs=inputs, outputs=outputs, note=note)


def _odd_main_input(
    rng: random.Random, files: dict[str, bytes]
) -> tuple[dict[str, bytes], list[Special], str]:
    """`files` with the first one replaced by a folder, a dangling symlink, nothing, or nothing
    inside (an empty file)."""
    main = next(iter(files))
    others = {name: data for name, data in files.items() if name != main}
    kind = rng.choice(["folder", "dangling symlink", "missing", "empty"])
    if kind == "empty":
        others[main] = b""
    odd = {"folder": [Special("dir", main)], "dangling symlink": [Special("symlink", main, "gone")]}
    return others, odd.get(kind, []), f"{main} is {kind}"


def _onnx_command(rng: random.Random, path: str) -> list[str]:
    if rng.random() < COMPILE_SHARE:
        sharded = [
            "aitc",
            "compile",
            path,
            *TINY,
            "--cores",
            "2",
            "--shard",
            rng.choice(["auto", "tp", "sp", "tp-sp", "layerwise"]),
        ]
        layout = ["--conv-layout", rng.choice(["auto", "nchw", "nhwc"])]
        return rng.choice(
            [
                ["aitc", "compile", path, *TINY, "-o", "out.aitb"],
                ["aitc", "compile", path, *TINY, *layout, "-o", "out.aitb"],
                [*sharded, "--emit", "graph", "-o", "out.mlir"],
                [*sharded, *layout, "-o", "out.aitb"],
            ]
        )
    return rng.choice(
        [["aitc", "check", path], ["aitc", "import", path, "-o", "out.mlir"], ["aitc", "run", path]]
    )


def onnx_bytes_case(rng: random.Random) -> Case:
    """Byte flips, truncation and insertion in a serialized base model."""
    name = rng.choice(bases.MODELS)
    data, note = mutate_bytes(rng, bases.model_bytes(name))
    return _case(_onnx_command(rng, "m.onnx"), {"m.onnx": data}, f"{name}: {note}", rng)


def onnx_semantic_case(rng: random.Random) -> Case:
    """A structurally valid protobuf holding a semantically broken model."""
    data, note = mutate_model({name: bases.model(name) for name in bases.MODELS}, rng)
    return _case(_onnx_command(rng, "m.onnx"), {"m.onnx": data}, note, rng)


def _mlir_seed(rng: random.Random) -> tuple[str, str, str]:
    """(level, name, text) of a valid .mlir file: graph (plain or sharded), tile, sync or hw level."""
    kind = rng.choice(["graph", "lowered", "example", "sharded"])
    if kind == "sharded":
        return "graph", "shard", bases.SHARD_MLIR
    programs = bases.example_programs()
    if kind == "example" and programs:
        name = rng.choice(sorted(programs))
        return "hw", name, programs[name]
    if kind == "lowered":
        name, level = rng.choice(bases.COMPILED_MODELS), rng.choice(bases.LEVELS)
        return level, name, bases.level_mlir(name, level)
    name = rng.choice(["mlp", "cnn", "reshape", "host"])
    return "graph", name, bases.graph_mlir(name)


PASS_SPECS = (
    "graph-optimize", "graph-canonicalize", "graph-fold-batch-norm", "graph-fold-constants",
    "graph-fold-constants{max-bytes=0}", "graph-fold-constants{max-bytes=-1}", "graph-fuse-bias-activation",
    "graph-polyphase-conv", "graph-polyphase-conv{min-channels=1}", "graph-fuse-attention",
    "graph-legalize-axes", "graph-recognize-patterns", "convert-graph-to-tile",
    "convert-graph-to-tile{target=tiny}", "convert-graph-to-tile{target=tiny depth=0}",
    "convert-graph-to-tile{target=nosuch}", "multi-buffer{target=tiny depth=3}", "plan-memory{target=tiny}",
    "plan-memory", "convert-tile-to-sync{target=tiny}", "insert-semaphores{target=tiny}", "optimize-sync",
    "convert-sync-to-hw{target=tiny}", "place-on-host{target=tiny}",
    "place-on-host{target=edge fallback=false}", "shard-simplify", "cse", "canonicalize", "dce",
    "shard-propagate{strategy=tp target=edge}", "shard-propagate{strategy=auto target=tiny}",
    "shard-propagate{strategy=sp cores=2 target=edge},shard-partition", "shard-partition",
    "shard-propagate{strategy=dp cores=8 target=edge}",
)  # fmt: skip
"""Passes (with odd options) for `aitc-opt -p`; fixed so cases do not change with the registry."""


def _pipeline(rng: random.Random, level: str) -> str:
    if level == "graph" and rng.random() < 0.3:
        return "graph-optimize"
    return ",".join(rng.choice(PASS_SPECS) for _ in range(rng.randint(1, 3)))


def _mlir_command(rng: random.Random, level: str, path: str) -> list[str]:
    opt = ["aitc-opt", path, *rng.choice([[], ["-o", "out.mlir"]])]
    if rng.random() < 0.5:
        opt += ["-p", _pipeline(rng, level)]
    run = ["aitc", "run", path, *(["--stats"] if level == "hw" and rng.random() < 0.5 else [])]
    if level == "hw":
        return rng.choice([opt, run, ["aitc", "asm", path, "-o", "out.aitb"]])
    if rng.random() < COMPILE_SHARE:
        return ["aitc", "compile", path, *TINY, "-o", "out.aitb"]
    return rng.choice([opt, run])


def mlir_text_case(rng: random.Random) -> Case:
    """Text mutations of a graph/tile/sync/hw-level .mlir file (sometimes made non-UTF-8)."""
    level, name, text = _mlir_seed(rng)
    argv = _mlir_command(rng, level, "f.mlir")
    mutated, note = (text, "valid") if "-p" in argv and rng.random() < 0.4 else mutate_text(rng, text)
    data = mutated.encode()
    if rng.random() < 0.05:
        data, byte_note = mutate_bytes(rng, data, rounds=1)
        note += f"; {byte_note}"
    return _case(argv, {"f.mlir": data}, f"{level} {name}: {note}", rng)


# --------------------------------------------------------------------------- .aitb binaries

_CHECKSUM = 32


def reseal(data: bytes, fix_size: bool = True) -> bytes:
    """`data` with its size field (bytes 8..16) and blake2b checksum (last 32 bytes) made to match
    its content, so damage inside passes the envelope checks (see aitc/binary.py)."""
    if len(data) < 16 + _CHECKSUM:
        return data
    if fix_size:
        data = data[:8] + struct.pack("<Q", len(data)) + data[16:]
    body = data[:-_CHECKSUM]
    return body + hashlib.blake2b(body, digest_size=_CHECKSUM).digest()


def _damage_header(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Sets a header or section-table field to a boundary value, then reseals the checksum."""
    name_length = struct.unpack_from("<H", data, 32)[0] if len(data) >= 34 else 0
    count_at = 34 + name_length
    fields = {"version": (4, 2), "size": (8, 8), "name length": (32, 2), "section count": (count_at, 2)}
    sections = struct.unpack_from("<H", data, count_at)[0] if len(data) >= count_at + 2 else 0
    if sections:
        entry = count_at + 2 + 20 * rng.randrange(sections)
        fields |= {
            "section kind": (entry, 2),
            "section offset": (entry + 4, 8),
            "section size": (entry + 12, 8),
        }
    name = rng.choice(sorted(fields))
    at, width = fields[name]
    value = rng.choice([0, 1, 2, 3, 2 ** (8 * width) - 1, 2 ** (8 * width - 1), rng.getrandbits(8 * width)])
    damaged = data[:at] + value.to_bytes(width, "little") + data[at + width :]
    return reseal(damaged, fix_size=name != "size"), f"header {name} -> {value} (resealed)"


_SEGMENT = 8  # a bundle's section holding a complete version-1 binary


def _damage_segment(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Flips bytes inside one NPU segment of a bundle, reseals the segment's own checksum, then
    the bundle's: damage that only the segment decoder can catch."""
    name_length = struct.unpack_from("<H", data, 32)[0]
    count = struct.unpack_from("<H", data, 34 + name_length)[0]
    entries = [struct.unpack_from("<HHQQ", data, 36 + name_length + 20 * i) for i in range(count)]
    segments = [(offset, size) for kind, _, offset, size in entries if kind == _SEGMENT]
    if not segments:
        return _damage_header(rng, data)
    offset, size = rng.choice(segments)
    flipped, note = flip_bytes(rng, data[offset : offset + size - _CHECKSUM])
    segment = reseal(flipped + data[offset + size - _CHECKSUM : offset + size], fix_size=False)
    return reseal(data[:offset] + segment + data[offset + size :]), f"segment at {offset}: {note} (resealed)"


def _mutate_binary(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    choice = rng.random()
    if choice < 0.1:
        return _damage_header(rng, data)
    if choice < 0.2:
        return _damage_segment(rng, data)
    damaged, note = mutate_bytes(rng, data)
    if choice < 0.7:
        return reseal(damaged), note + " (resealed)"
    return damaged, note


def aitb_bytes_case(rng: random.Random) -> Case:
    """Damaged .aitb binaries, often resealed so the damage passes the checksum."""
    name, data = rng.choice(sorted(bases.binaries().items()))
    damaged, note = _mutate_binary(rng, data)
    argv = rng.choice(
        [
            ["aitc", "disasm", "p.aitb"],
            ["aitc", "disasm", "p.aitb", "-o", "out.mlir", *TINY],
            ["aitc", "run", "p.aitb"],
            ["aitc", "run", "p.aitb", "--stats", "--trace", "t.json"],
            ["aitc", "run", "p.aitb", "--outputs", "out.npz"],
            ["aitc", "run", "p.aitb", "--target", "edge"],
        ]
    )
    return _case(argv, {"p.aitb": damaged}, f"{name}: {note}", rng)


# --------------------------------------------------------------------------- target TOML


def _toml_mutations(rng: random.Random, text: str) -> tuple[bytes, str]:
    lines = text.splitlines(keepends=True)
    keyed = [i for i, line in enumerate(lines) if "=" in line and not line.startswith("#")]
    at = rng.choice(keyed)
    key = lines[at].split("=")[0].strip()
    value = rng.choice(["0", "-1", str(2**80), "1.5", '"x"', "[]", "nan", "inf", "true", "1e400", str(2**63)])
    choices = {
        "not UTF-8": lambda: text.encode()[:40] + b"\xff\xfe\xc3(" + text.encode()[40:],
        "latin-1 text": lambda: text.replace("test target", "t\u00e9st target").encode("latin-1"),
        "not TOML": lambda: (text + rng.choice(["[[[", "= =", 'name = "unclosed', "[core]\n"])).encode(),
        f"no key {key}": lambda: "".join(lines[:at] + lines[at + 1 :]).encode(),
        f"{key} = {value}": lambda: "".join([*lines[:at], f"{key} = {value}\n", *lines[at + 1 :]]).encode(),
        "unknown key": lambda: (
            rng.choice(["bogus = 1\n", ""]).encode() + text.encode() + b"[core.extra]\nx = 1\n"
        ),
        "empty file": lambda: b"",
        "BOM": lambda: b"\xef\xbb\xbf" + text.encode(),
        "odd name": lambda: text.replace(
            '"tiny"', rng.choice(['""', '"a\\nb"', '"' + "n" * 70000 + '"'])
        ).encode(),
        "truncated": lambda: text.encode()[: rng.randrange(len(text))],
    }
    note = rng.choice(sorted(choices))
    return choices[note](), note


def target_toml_case(rng: random.Random) -> Case:
    """--target files that are not UTF-8, not TOML, or hold missing, unknown or absurd keys."""
    data, note = _toml_mutations(rng, bases.tiny_target_toml())
    files = {
        "t.toml": data,
        "p.aitb": bases.binaries()["mlp"],
        "p.mlir": bases.level_mlir("mlp", "hw").encode(),
    }
    commands = [
        ["aitc", "target", "show", "t.toml"],
        ["aitc", "asm", "p.mlir", "--target", "t.toml", "-o", "out.aitb"],
        ["aitc", "run", "p.aitb", "--target", "t.toml"],
        ["aitc", "run", "p.mlir", "--target", "t.toml"],
        ["aitc", "disasm", "p.aitb", "--target", "t.toml"],
    ]
    if rng.random() < COMPILE_SHARE:
        files["m.onnx"] = bases.model_bytes("mlp")
        commands = [["aitc", "compile", "m.onnx", "--target", "t.toml", "-o", "out.aitb"]]
    return _case(rng.choice(commands), files, note, rng)


FAMILIES: dict[str, FamilyGenerator] = {
    "onnx-bytes": onnx_bytes_case,
    "onnx-semantic": onnx_semantic_case,
    "mlir-text": mlir_text_case,
    "aitb-bytes": aitb_bytes_case,
    "npz-inputs": npz_inputs_case,
    "output-paths": output_paths_case,
    "target-toml": target_toml_case,
    "cli-options": cli_options_case,
}
"""Family name -> case generator, in report order."""


def generate_case(seed: int, index: int, families: list[str], subprocess_every: int = 50) -> Case:
    """Case `index` of run `seed` (families cycle); every `subprocess_every`-th case runs the
    installed console script in a real subprocess instead of the forked interpreter."""
    family = families[index % len(families)]
    case = FAMILIES[family](case_rng(seed, index))
    real = subprocess_every > 0 and index % subprocess_every == subprocess_every - 1
    return dataclasses.replace(case, family=family, index=index, subprocess=real)
