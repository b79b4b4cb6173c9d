"""The file-system fuzz families: bad `--inputs` files, and output paths a command must refuse
or write without collateral damage (a missing folder, a symlink, a FIFO, its own input, ...)."""

from __future__ import annotations

import io
import itertools
import random
import struct
import warnings
import zipfile
from collections.abc import Callable

import numpy as np

from aitc.fuzz import bases
from aitc.fuzz.case import Case, Special, can_make_char_device, numpy_rng

_OUTPUT_FLAGS = ("-o", "--output", "--outputs", "--trace", "--tune-cache")


def outputs_of(argv: list[str]) -> list[str]:
    """The paths an argv asks to write (the values of -o, --output, --outputs, --trace, --tune-cache)."""
    return [value for flag, value in itertools.pairwise(argv) if flag in _OUTPUT_FLAGS]


_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
"""Every zip member's timestamp, so a case's .npz bytes never depend on the clock."""


def _npz(**arrays: np.ndarray) -> bytes:
    """`numpy.savez` output, but byte-for-byte reproducible (fixed member timestamps)."""
    return _zip([(f"{name}.npy", _npy_bytes(array)) for name, array in arrays.items()])


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asanyarray(array), allow_pickle=True)
    return buffer.getvalue()


def _zip(members: list[tuple[str, bytes]], compression: int = zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate names we want
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, data in members:
                info = zipfile.ZipInfo(name, date_time=_ZIP_EPOCH)
                info.compress_type = compression
                archive.writestr(info, data)
    return buffer.getvalue()


def _npy(header: str, payload: bytes = b"", version: bytes = b"\x01\x00") -> bytes:
    """An .npy file with a hand-written header dict (numpy's format 1.0 layout)."""
    text = header.encode("latin-1")
    padding = -(10 + len(text) + 1) % 64
    return (
        b"\x93NUMPY"
        + version
        + struct.pack("<H", len(text) + padding + 1)
        + text
        + b" " * padding
        + b"\n"
        + payload
    )


_BAD_HEADERS = (
    "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
    "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }",
    "{'descr': '<f3', 'fortran_order': False, 'shape': (2,), }",
    "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 8), }",
    "['not', 'a', 'dict']",
    "{'descr': '<f4', 'shape': (2, 8)}",
    "{'descr': '<f4', 'fortran_order': False, 'shape': 5, }",
)


def _bad_inputs(rng: random.Random, good: dict[str, np.ndarray]) -> tuple[bytes | None, str]:
    """(bytes of in.npz, note); None means in.npz is a folder."""
    generator = numpy_rng(rng)
    name, array = sorted(good.items())[0]
    dtype = rng.choice(["int64", "float64", "complex64", "bool", "float16", "U3", "datetime64[s]", ">f4"])
    shape = rng.choice([(3, 8), (*array.shape, 1), (), (0, *array.shape[1:]), (array.size,)])
    special = rng.choice([np.nan, np.inf, -np.inf, 3e38])
    choices: dict[str, Callable[[], bytes | None]] = {
        "random bytes": lambda: rng.randbytes(rng.randrange(2000)),
        "empty file": lambda: b"",
        "truncated zip": lambda: _npz(**good)[: rng.randrange(len(_npz(**good)))],
        "bad .npy header": lambda: _zip([(f"{name}.npy", _npy(rng.choice(_BAD_HEADERS), b"\0" * 64))]),
        "object array": lambda: _npz(**{name: np.array([1, "a", None], dtype=object)}),
        "wrong names": lambda: _npz(**{"nobody": array}) if rng.random() < 0.5 else _npz(),
        "extra name": lambda: _npz(**good, extra=array),
        f"dtype {dtype}": lambda: _npz(**{**good, name: np.zeros(array.shape, dtype)}),
        f"shape {shape}": lambda: _npz(**{**good, name: generator.standard_normal(shape).astype(np.float32)}),
        f"values {special}": lambda: _npz(**{**good, name: np.full(array.shape, special, np.float32)}),
        "a folder": lambda: None,
        "a .npy file": lambda: _npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 8), }", b"\0" * 64
        ),
        "duplicate members": lambda: _zip([(f"{name}.npy", _npy("{}")), (f"{name}.npy", _npz())]),
        "large compressed": lambda: _savez_compressed_zeros(name),
    }
    note = rng.choice(sorted(choices))
    return choices[note](), note


def _savez_compressed_zeros(name: str) -> bytes:
    """A 32 MiB array of zeros that compresses to ~32 KiB (and has the wrong shape)."""
    return _zip([(f"{name}.npy", _npy_bytes(np.zeros((2048, 4096), np.float32)))], zipfile.ZIP_DEFLATED)


def _program(name: str) -> bytes:
    files = {
        "mlp.onnx": lambda: bases.model_bytes("mlp"),
        "mlp.mlir": lambda: bases.graph_mlir("mlp").encode(),
        "tiled_matmul.aitb": lambda: bases.binaries()["tiled_matmul"],
        "mlp.aitb": lambda: bases.binaries()["mlp"],
    }
    return files[name]()


def npz_inputs_case(rng: random.Random) -> Case:
    """`aitc run PROGRAM --inputs BAD` for random bytes, broken zips and .npy headers, pickled
    objects, wrong names/dtypes/shapes, NaN/inf, a folder, an empty file."""
    program = rng.choice(["mlp.onnx", "mlp.mlir", "tiled_matmul.aitb", "mlp.aitb"])
    data, note = _bad_inputs(rng, bases.program_inputs(program.split(".")[0]))
    argv = ["aitc", "run", program, "--inputs", "in.npz", *rng.choice([[], ["--outputs", "out.npz"]])]
    files = {program: _program(program)}
    specials = [Special("dir", "in.npz")] if data is None else []
    if data is not None:
        files["in.npz"] = data
    inputs = [*files, *(["in.npz"] if data is None else [])]
    return Case("", 0, argv, files, specials, inputs=inputs, outputs=outputs_of(argv), note=note)


# --------------------------------------------------------------------------- output paths

_WRITERS = (
    ("aitc import m.onnx -o OUT", "m.onnx"),
    ("aitc compile m.onnx --target tiny -o OUT", "m.onnx"),
    ("aitc compile m.onnx --target tiny --emit tile -o OUT", "m.onnx"),
    ("aitc compile m.onnx --target tiny --cores 1 --tune --tune-cache OUT -o out.aitb", "m.onnx"),
    ("aitc run p.aitb --inputs in.npz --outputs OUT", "in.npz"),
    ("aitc run p.aitb --trace OUT", "p.aitb"),
    ("aitc run m.mlir --outputs OUT", "m.mlir"),
    ("aitc asm p.mlir -o OUT", "p.mlir"),
    ("aitc perf m.onnx --target tiny -o OUT", "m.onnx"),
    ("aitc perf p.aitb --inputs in.npz -o OUT", "p.aitb"),
    ("aitc verify m.onnx --target tiny --mode both -o OUT", "m.onnx"),
    ("aitc quantize m.onnx --calibration cal.npz --no-cache -o OUT", "m.onnx"),
    ("aitc disasm p.aitb -o OUT", "p.aitb"),
    ("aitc-opt m.mlir -o OUT", "m.mlir"),
    ("aitc-opt m.mlir -p graph-optimize -o OUT", "m.mlir"),
)
_FAILING_WRITERS = (
    "aitc run p.aitb --trace t.json --outputs OUT",
    "aitc run p.aitb --inputs missing.npz --trace t.json --outputs OUT",
    "aitc run p.aitb --inputs in.npz --outputs OUT --target missing.toml",
    "aitc compile m.onnx --target missing.toml -o OUT",
    "aitc import bad.onnx -o OUT",
    "aitc-opt bad.mlir -o OUT",
    "aitc asm p.mlir --target nosuch -o OUT",
    "aitc run p.aitb --stats --inputs bad.npz --trace OUT",
    "aitc perf bad.onnx -o OUT",
    "aitc perf p.aitb --inputs bad.npz -o OUT",
    "aitc verify bad.onnx -o OUT",
    "aitc verify m.onnx --inputs bad.npz -o OUT",
    "aitc quantize m.onnx --calibration bad.npz --no-cache -o OUT",
    "aitc quantize bad.onnx --calibration cal.npz --no-cache -o OUT",
)
"""Commands with one bad argument besides the output: whatever OUT is, nothing may be written."""


def _standard_files() -> dict[str, bytes]:
    """The inputs every output-paths case carries (all must survive the run byte for byte)."""
    return {
        "m.onnx": bases.model_bytes("mlp"),
        "m.mlir": bases.graph_mlir("mlp").encode(),
        "p.mlir": bases.example_programs().get("tiled_matmul", bases.level_mlir("mlp", "hw")).encode(),
        "p.aitb": bases.binaries()["tiled_matmul"],
        "in.npz": _npz(**bases.program_inputs("tiled_matmul")),
        "bad.onnx": b"\x08\x07garbage",
        "bad.mlir": b"builtin.module {\n  %0 = \n",
        "bad.npz": b"PK\x03\x04 not really",
        "cal.npz": _npz(
            x=np.random.default_rng(0).standard_normal((4, 2, 8)).reshape(8, 8).astype(np.float32)
        ),
    }


PathPlan = tuple[str, list[Special], dict[str, bytes], list[str]]
"""(output path, special files, extra files, other paths a successful run may write)."""


def _output_path(rng: random.Random, main_input: str) -> tuple[PathPlan, str]:
    """An awkward output path (and the files around it) and its description."""
    device = "chardev" if can_make_char_device() else "fifo"
    length = rng.choice([254, 255])
    link, dangling = (
        Special("symlink", "link.out", "real.out"),
        Special("symlink", "dangling.out", "absent.out"),
    )
    loop = [Special("symlink", "loop1", "loop2"), Special("symlink", "loop2", "loop1")]
    plans: dict[str, Callable[[], PathPlan]] = {
        "missing folder": lambda: ("newdir/x.out", [], {}, ["newdir"]),
        "trailing slash": lambda: (rng.choice(["newdir/", "x.out/"]), [], {}, []),
        "under a file": lambda: (f"{main_input}/x.out", [], {}, []),
        "existing folder": lambda: (
            rng.choice(["outdir", "outdir/", "."]),
            [Special("dir", "outdir")],
            {},
            [],
        ),
        "name > 255": lambda: ("a" * 256 + ".out", [], {}, []),
        f"{length}-char name": lambda: ("b" * length, [], {}, []),
        "symlink to file": lambda: ("link.out", [link], {"real.out": b"old\n"}, ["real.out"]),
        "dangling symlink": lambda: ("dangling.out", [dangling], {}, ["absent.out"]),
        "symlink loop": lambda: ("loop1", loop, {}, []),
        "fifo": lambda: ("pipe.out", [Special("fifo", "pipe.out")], {}, []),
        device: lambda: ("null.out", [Special(device, "null.out")], {}, []),
        "same as input": lambda: (main_input, [], {}, []),
        "read-only folder": lambda: ("ro/x.out", [Special("dir", "ro"), Special("readonly", "ro")], {}, []),
        "existing file": lambda: ("old.out", [], {"old.out": b"previous\n"}, []),
        "dash": lambda: ("-", [], {}, []),
    }
    note = rng.choice(sorted(plans))
    return plans[note](), note


def output_paths_case(rng: random.Random) -> Case:
    """A writing command whose -o/--outputs/--trace is an awkward path, sometimes with another
    bad argument so the command must fail without writing anything."""
    failing = rng.random() < 0.25
    if failing:
        template, main_input = rng.choice(_FAILING_WRITERS), "p.aitb"
    else:
        template, main_input = rng.choice(_WRITERS)
    (out, specials, extra, allowed), note = _output_path(rng, main_input)
    argv = [out if part == "OUT" else part for part in template.split()]
    files = _standard_files()
    outputs = [path for path in [*outputs_of(argv), *allowed] if path not in files]
    note += "; another argument is bad" if failing else ""
    return Case("", 0, argv, {**files, **extra}, specials, inputs=sorted(files), outputs=outputs, note=note)
