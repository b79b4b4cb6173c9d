"""The virtual NPU target: a TOML description, validated, with presets shipped in the package.

Schema (every key required unless a default is given; sizes in bytes, rates per cycle):

    name = "edge"                      # identifier used by --target NAME
    description = "..."                # optional, free text
    clock_mhz = 1000                   # > 0; converts cycles to seconds in reports
    cores = 4                          # 1..64 identical cores
    semaphores = 32                    # counting semaphores per core, 1..1024

    [core]   sram_bytes, acc_bytes     # per-core scratchpad and matrix accumulator
    [matrix] rows, cols, latency,      # systolic array: rows = contraction (K) lanes, cols = N lanes
             dtypes = ["f32", "i8"]    # input types: f32 (acc f32) and/or i8 (acc i32)
    [vector] lanes, latency,           # SIMD width in elements, pipeline latency
             [vector.op_cycles]        # cycles per group of `lanes` elements, per op; `default` required
    [dma]    bytes_per_cycle, latency, queues   # per DMA engine; queues = DMA engines per core (>= 2)
    [dram]   bytes, bytes_per_cycle    # shared by all cores (bandwidth is contended)
    [link]   bytes_per_cycle, latency  # core-to-core SRAM link (collectives)

Validation reports every problem at once, naming the key: unknown keys, missing keys, wrong
types, non-positive sizes, and combinations that cannot work (a matrix engine that one cycle of
SRAM reads could not feed, an accumulator smaller than one matrix tile, ...).
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path

from aitc.diagnostics import AitcError
from aitc.files import read_text

MATRIX_DTYPES = {"f32": "f32", "i8": "i32"}
"""Matrix input dtype -> accumulator dtype."""


@dataclass(frozen=True)
class MatrixEngine:
    rows: int
    cols: int
    latency: int
    dtypes: tuple[str, ...]

    @property
    def macs_per_cycle(self) -> int:
        return self.rows * self.cols


COST_ALIASES = {"gelu": "erf", "gelu_tanh": "tanh", "sigmoid": "exp", "none": "default"}
"""Vector ops and activations charged as another op's `op_cycles` entry: exact gelu as erf, its
tanh approximation as tanh, sigmoid as exp; acc_read without an activation as `default`."""


@dataclass(frozen=True)
class VectorEngine:
    lanes: int
    latency: int
    op_cycles: dict[str, int] = field(default_factory=dict)

    def cycles_per_group(self, op: str) -> int:
        """Cycles per group of `lanes` elements of vector op or activation `op`: its
        `op_cycles` entry, or that of the op it costs as (`COST_ALIASES`), else `default`."""
        op = COST_ALIASES.get(op, op)
        return self.op_cycles.get(op, self.op_cycles["default"])


@dataclass(frozen=True)
class Dma:
    bytes_per_cycle: int
    latency: int
    queues: int


@dataclass(frozen=True)
class Dram:
    bytes: int
    bytes_per_cycle: int


@dataclass(frozen=True)
class Link:
    bytes_per_cycle: int
    latency: int


@dataclass(frozen=True)
class Target:
    """A validated virtual-NPU description (see the module docstring for the schema)."""

    name: str
    description: str
    clock_mhz: int
    cores: int
    semaphores: int
    sram_bytes: int
    acc_bytes: int
    matrix: MatrixEngine
    vector: VectorEngine
    dma: Dma
    dram: Dram
    link: Link

    def fingerprint(self) -> bytes:
        """8 bytes that identify every parameter; binaries record it to refuse a wrong target."""
        canonical = json.dumps(asdict(self), sort_keys=True, default=list).encode()
        return hashlib.blake2b(canonical, digest_size=8).digest()

    def to_dict(self) -> dict:
        return asdict(self)


_SCHEMA: dict[str, dict[str, type] | type] = {
    "name": str,
    "description": str,
    "clock_mhz": int,
    "cores": int,
    "semaphores": int,
    "core": {"sram_bytes": int, "acc_bytes": int},
    "matrix": {"rows": int, "cols": int, "latency": int, "dtypes": list},
    "vector": {"lanes": int, "latency": int, "op_cycles": dict},
    "dma": {"bytes_per_cycle": int, "latency": int, "queues": int},
    "dram": {"bytes": int, "bytes_per_cycle": int},
    "link": {"bytes_per_cycle": int, "latency": int},
}
_OPTIONAL = {"description"}
_MAY_BE_ZERO = {"matrix.latency", "vector.latency", "dma.latency", "link.latency"}
_LARGEST = 1 << 32
"""Any integer parameter is below this (a larger one is a typo, and would overflow the binary format)."""
_LARGEST_BYTES = {"core.sram_bytes": 1 << 30, "core.acc_bytes": 1 << 30, "dram.bytes": 1 << 36}
"""Memory sizes the simulator can allocate (1 GiB of SRAM or ACC per core, 64 GiB of DRAM)."""


def _check_scalar(path: str, kind: type, value: object, problems: list[str]) -> None:
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        problems.append(f"'{path}' must be an integer, got {value!r}")
    elif not isinstance(value, kind):
        problems.append(f"'{path}' must be a {kind.__name__}, got {value!r}")
    elif kind is int and isinstance(value, int) and (value < 0 or (value == 0 and path not in _MAY_BE_ZERO)):
        problems.append(f"'{path}' must be {'>= 0' if path in _MAY_BE_ZERO else '> 0'}, got {value}")
    elif kind is int and isinstance(value, int) and value >= _LARGEST_BYTES.get(path, _LARGEST):
        problems.append(f"'{path}' must be below {_LARGEST_BYTES.get(path, _LARGEST):,}, got {value:,}")


def _check_keys(data: dict, schema: dict, prefix: str, problems: list[str]) -> None:
    expected = ", ".join(schema)
    unknown = [key for key in data if key not in schema]
    problems.extend(f"unknown key '{prefix}{key}' (expected one of: {expected})" for key in unknown)
    for key, kind in schema.items():
        path = f"{prefix}{key}"
        if key not in data:
            if key not in _OPTIONAL:
                problems.append(f"missing key '{path}'")
        elif not isinstance(kind, dict):
            _check_scalar(path, kind, data[key], problems)
        elif isinstance(data[key], dict):
            _check_keys(data[key], kind, f"{path}.", problems)
        else:
            problems.append(f"'{path}' must be a table [{path}]")


def _check_engines(d: dict, problems: list[str]) -> None:
    m, v = d["matrix"], d["vector"]
    if not m["dtypes"] or any(t not in MATRIX_DTYPES for t in m["dtypes"]):
        problems.append(f"'matrix.dtypes' must list some of {sorted(MATRIX_DTYPES)}, got {m['dtypes']}")
    if "default" not in v["op_cycles"]:
        problems.append("'vector.op_cycles' needs a 'default' entry")
    for op, cycles in v["op_cycles"].items():
        if not isinstance(cycles, int) or isinstance(cycles, bool) or not 0 < cycles < _LARGEST:
            wanted = f"an integer in 1..{_LARGEST - 1}"
            problems.append(f"'vector.op_cycles.{op}' must be {wanted}, got {cycles!r}")
    if d["dma"]["queues"] < 2:
        queues = d["dma"]["queues"]
        problems.append(f"'dma.queues' must be >= 2 (a DMA-in and a DMA-out engine), got {queues}")


def _check_sizes(d: dict, problems: list[str]) -> None:
    m, core = d["matrix"], d["core"]
    if not 1 <= d["cores"] <= 64:
        problems.append(f"'cores' must be 1..64, got {d['cores']}")
    if not 1 <= d["semaphores"] <= 1024:
        problems.append(f"'semaphores' must be 1..1024, got {d['semaphores']}")
    tile_bytes = 4 * m["rows"] * m["cols"]
    if core["acc_bytes"] < tile_bytes:
        problems.append(
            f"'core.acc_bytes' ({core['acc_bytes']}) cannot hold one {m['rows']}x{m['cols']} f32 "
            f"accumulator tile ({tile_bytes} bytes)"
        )
    if core["sram_bytes"] < 3 * tile_bytes:
        problems.append(
            f"the {m['rows']}x{m['cols']} matrix engine is wider than SRAM can feed: 'core.sram_bytes' "
            f"({core['sram_bytes']}) must hold at least 3 f32 tiles ({3 * tile_bytes} bytes)"
        )
    if d["dram"]["bytes"] < d["cores"] * core["sram_bytes"]:
        problems.append("'dram.bytes' is smaller than the SRAM of all cores together")


def target_from_dict(data: dict, source: str = "<target>") -> Target:
    """Validates `data` (parsed TOML) and builds a Target; all problems in one AitcError."""
    problems: list[str] = []
    _check_keys(data, _SCHEMA, "", problems)
    if not problems:
        _check_engines(data, problems)
        _check_sizes(data, problems)
    if problems:
        hint = "see `aitc target show edge` for a valid target"
        raise AitcError([f"{source}: {p}" for p in problems], hint=hint)
    m, v = data["matrix"], data["vector"]
    return Target(
        name=data["name"],
        description=data.get("description", ""),
        clock_mhz=data["clock_mhz"],
        cores=data["cores"],
        semaphores=data["semaphores"],
        sram_bytes=data["core"]["sram_bytes"],
        acc_bytes=data["core"]["acc_bytes"],
        matrix=MatrixEngine(m["rows"], m["cols"], m["latency"], tuple(m["dtypes"])),
        vector=VectorEngine(v["lanes"], v["latency"], dict(sorted(v["op_cycles"].items()))),
        dma=Dma(**data["dma"]),
        dram=Dram(**data["dram"]),
        link=Link(**data["link"]),
    )


def preset_names() -> list[str]:
    folder = resources.files("aitc") / "targets"
    return sorted(p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml"))


def _parse_toml(text: str, source: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise AitcError(f"{source}: not valid TOML: {error}") from None


def load_target(name_or_path: str | Path) -> Target:
    """A preset by name (`tiny`, `edge`, `server`) or a TOML file path."""
    text = str(name_or_path)
    if text in preset_names():
        resource = resources.files("aitc") / "targets" / f"{text}.toml"
        return target_from_dict(_parse_toml(resource.read_text(), f"preset {text}"), f"preset {text}")
    path = Path(text)
    exists = _exists(path)
    if path.suffix == ".toml" or exists:
        if not exists:
            raise AitcError(f"no such target file: {_clip(text)}")
        return target_from_dict(_parse_toml(read_text(path), str(path)), str(path))
    raise AitcError(
        f"unknown target '{_clip(text)}' (presets: {', '.join(preset_names())}; or pass FILE.toml)"
    )


def _exists(path: Path) -> bool:
    """Whether `path` names a file system entry; a name the OS refuses (too long, NUL bytes) does not."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def describe(target: Target) -> str:
    """Human-readable summary for `aitc target show`."""
    peak_macs = target.matrix.macs_per_cycle * target.cores
    lines = [
        f"target {target.name}: {target.description}",
        f"  clock            {target.clock_mhz} MHz",
        f"  cores            {target.cores}, {target.semaphores} semaphores each",
        f"  SRAM / ACC       {target.sram_bytes // 1024} KiB / {target.acc_bytes // 1024} KiB per core",
        f"  matrix engine    {target.matrix.rows}x{target.matrix.cols} ({', '.join(target.matrix.dtypes)}), "
        f"latency {target.matrix.latency}, {target.matrix.macs_per_cycle} MAC/cycle/core",
        f"  vector engine    {target.vector.lanes} lanes, latency {target.vector.latency}, "
        f"op cycles {target.vector.op_cycles}",
        f"  DMA              {target.dma.queues} engines/core, {target.dma.bytes_per_cycle} B/cycle, "
        f"latency {target.dma.latency}",
        f"  DRAM             {target.dram.bytes // (1 << 20)} MiB, "
        f"{target.dram.bytes_per_cycle} B/cycle shared",
        f"  link             {target.link.bytes_per_cycle} B/cycle, latency {target.link.latency}",
        f"  peak             {peak_macs} MAC/cycle = {peak_macs * 2 * target.clock_mhz / 1e6:.2f} TFLOP/s",
    ]
    return "\n".join(lines)
