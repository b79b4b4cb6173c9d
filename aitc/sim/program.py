"""Decoding a `hw.program` into the simulator's instruction model.

    decode_program(module_or_program, target) -> Program
        .tensors, .consts        the data layout: hw.tensor inputs/outputs and hw.const segments
        .cores[i].instructions() one core's dynamic instructions in program order (a generator:
                                 hw.loop bodies are expanded lazily, never materialised)

Each instruction op is decoded once into a `StaticInstr` (fields, address fields, engine, footprint,
static cost, ONNX location, assembly text); each executed instance is an `Instr` holding the
concrete byte addresses `base + sum(step[d] * index[d])` for the enclosing loop indices.

Engines of a core are `engine_names(target)`: dma0 .. dma{q-1}, matrix, vector. A DMA op runs on
`dma{queue}` when `queue` >= 0, else on dma0 (dma_in, dma_local, dma_gather) or dma1 (dma_out,
dma_peer), as `hw.DEFAULT_DMA_QUEUE` says; matmul on `matrix`; vector ops on `vector`; control
ops on the engine they name (aliases dma_in = dma0, dma_out = dma1).

Decoding first validates the program (`SimulationError` kind "program", every problem at once):
the op verifiers, then the target limits of `aitc.dialects.hw.program` (core ids, engines and
queues, semaphores, matrix shape and dtypes, peers, alignment, bounds over whole loop nests,
data layout), then what only the simulator needs: written rows that overlap, 8-bit views of the 32-bit ACC,
a strided vreduce result, immediates an integer dtype cannot hold, zero semaphore counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, NameLoc, TensorType
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException

from aitc.dialects.hw import (
    DEFAULT_DMA_QUEUE,
    ConstOp,
    CoreOp,
    EndOp,
    InstructionOp,
    LoopOp,
    ProgramOp,
    TensorOp,
)
from aitc.dialects.hw.program import preset, program_problems
from aitc.sim.errors import SimulationError
from aitc.sim.footprint import Region, footprint
from aitc.sim.timing import Cost, static_cost
from aitc.target import Target
from aitc.types import numpy_dtype, shape_str
from aitc.weights import attr_to_array

ENGINE_ALIASES = {"dma_in": "dma0", "dma_out": "dma1"}
CONTROL_KINDS = {"sem_signal": "signal", "sem_wait": "wait", "barrier": "barrier"}


def engine_names(target: Target) -> tuple[str, ...]:
    """The engines of one core, in the order the simulator numbers them."""
    return (*(f"dma{q}" for q in range(target.dma.queues)), "matrix", "vector")


@dataclass(frozen=True)
class TensorSpec:
    """A program input or output: a dense row-major tensor at a DRAM address."""

    name: str
    kind: str
    shape: tuple[int, ...]
    dtype: np.dtype
    addr: int

    @property
    def nbytes(self) -> int:
        """Size in bytes."""
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def describe(self) -> str:
        """`input 'x' (4x16 float32)`, for diagnostics."""
        return f"{self.kind} '{self.name}' ({shape_str(self.shape)} {self.dtype})"


@dataclass(frozen=True)
class ConstSegment:
    """Bytes placed in DRAM at `addr` before the program starts (weights)."""

    addr: int
    data: np.ndarray  # uint8

    @property
    def nbytes(self) -> int:
        """Size in bytes."""
        return len(self.data)


class StaticInstr:
    """One instruction op, decoded once (see the module docstring)."""

    __slots__ = (
        "_text", "addr_fields", "collective", "cost", "count", "engine", "fields", "fixed_addr", "kind",
        "location", "mnemonic", "op", "peer", "regions", "sem", "spaces",
    )  # fmt: skip

    def __init__(self, op: InstructionOp, engine: int, target: Target):
        self.op = op
        self.mnemonic = op.name.removeprefix("hw.")
        self.kind = CONTROL_KINDS.get(self.mnemonic, "exec")
        values = op.values()
        addresses = {name: op.get_address(name) for name in values if op.field(name).kind == "addr"}
        self.fields: dict[str, Any] = {k: v for k, v in values.items() if k not in addresses}
        self.spaces = {name: a.space.data for name, a in addresses.items()}
        self.addr_fields = tuple(
            (name, a.base.data, tuple((depth, step) for depth, step in enumerate(a.step_values) if step))
            for name, a in addresses.items()
        )  # (field, base, its nonzero (loop depth, step) pairs)
        steady = not any(moves for _, _, moves in self.addr_fields)
        self.fixed_addr = {name: base for name, base, _ in self.addr_fields} if steady else None
        self.engine = engine
        self.regions: tuple[Region, ...] = footprint(self.mnemonic, self.fields, self.spaces)
        self.cost: Cost = static_cost(self.mnemonic, self.fields, self.spaces, target)
        self.sem: int = self.fields.get("sem", 0)
        self.count: int = self.fields.get("count", 1)
        self.peer: int = self.fields.get("peer", -1)
        self.location = location_name(op)
        self.collective: str | None = self.location if self.location.startswith(COLLECTIVE_PREFIX) else None
        self._text: str | None = None

    @property
    def text(self) -> str:
        """The instruction's assembly, for diagnostics (printed on first use)."""
        if self._text is None:
            self._text = f"{self.op.name} {self.op.assembly_operands()}".rstrip()
        return self._text

    def addresses(self, indices: Sequence[int]) -> dict[str, int]:
        """Concrete byte address of every address field for loop indices `indices`."""
        if self.fixed_addr is not None:
            return self.fixed_addr
        addresses = {}
        for name, base, moves in self.addr_fields:
            for depth, step in moves:
                base += step * indices[depth]
            addresses[name] = base
        return addresses


class Instr:
    """One executed instance of a static instruction on core `core`."""

    __slots__ = ("addr", "barrier", "core", "indices", "static")

    def __init__(self, static: StaticInstr, core: int, addr: dict[str, int], indices: tuple[int, ...]):
        self.static, self.core, self.addr, self.indices = static, core, addr, indices
        self.barrier = -1  # the core's barrier number, set at dispatch

    def describe(self, engine: str = "", cycle: int | None = None) -> str:
        """`hw.op operands [i0=1] (core 0, matrix, cycle 12, node 'MatMul_3')` for diagnostics."""
        text = self.static.text
        if self.indices:
            text += " [" + " ".join(f"i{d}={i}" for d, i in enumerate(self.indices)) + "]"
        where = (
            [f"core {self.core}"]
            + ([engine] if engine else [])
            + ([f"cycle {cycle}"] if cycle is not None else [])
        )
        if self.static.location:
            where.append(f"node '{self.static.location}'")
        return f"{text} ({', '.join(where)})"


@dataclass(frozen=True)
class Loop:
    count: int
    body: tuple[StaticInstr | Loop, ...]


@dataclass(frozen=True)
class CoreProgram:
    """One core's instruction stream; `counts[e]` = dynamic instructions on engine index e."""

    core: int
    body: tuple[StaticInstr | Loop, ...]
    counts: tuple[int, ...]

    def instructions(self) -> Iterator[Instr]:
        """Dynamic instructions in program order, loops expanded lazily."""
        return _expand(self.body, (), self.core)

    def statics(self) -> Iterator[StaticInstr]:
        """Every static instruction of the core (loop bodies once)."""
        return _statics(self.body)

    @property
    def total(self) -> int:
        """Dynamic instructions of the core, all engines."""
        return sum(self.counts)


def _expand(body: tuple[StaticInstr | Loop, ...], indices: tuple[int, ...], core: int) -> Iterator[Instr]:
    """Dynamic instructions of `body` under loop indices `indices`."""
    for node in body:
        if isinstance(node, Loop):
            for i in range(node.count):
                yield from _expand(node.body, (*indices, i), core)
        else:
            yield Instr(node, core, node.addresses(indices), indices)


def _statics(body: tuple[StaticInstr | Loop, ...]) -> Iterator[StaticInstr]:
    """Static instructions of `body`, loop bodies once."""
    for node in body:
        if isinstance(node, Loop):
            yield from _statics(node.body)
        else:
            yield node


@dataclass(frozen=True)
class Program:
    """A decoded hw.program for one target."""

    name: str
    target: Target
    tensors: tuple[TensorSpec, ...]
    consts: tuple[ConstSegment, ...]
    cores: tuple[CoreProgram, ...]
    engines: tuple[str, ...]

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        """The hw.tensor inputs, in program order."""
        return tuple(t for t in self.tensors if t.kind == "input")

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        """The hw.tensor outputs, in program order."""
        return tuple(t for t in self.tensors if t.kind == "output")

    @property
    def total_instructions(self) -> int:
        """Dynamic instructions of the whole program."""
        return sum(core.total for core in self.cores)


COLLECTIVE_PREFIX = "collective "
"""Instructions of one collective carry `loc("collective <kind>#<n> <bytes>B <node>")`
(aitc/spmd/link.py writes it); the simulator's statistics group them (`CollectiveStats`)."""


def location_name(op: Operation) -> str:
    """The ONNX node name an op carries as `loc("name")` (or file:line:col), else ''."""
    loc = op.location
    if isinstance(loc, NameLoc):
        return loc.desc.data
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return ""


def find_program(source: ModuleOp | ProgramOp) -> ProgramOp:
    """The single hw.program of a module (or the program itself)."""
    if isinstance(source, ProgramOp):
        return source
    programs = [op for op in source.walk() if isinstance(op, ProgramOp)]
    if len(programs) != 1:
        found = "no hw.program" if not programs else f"{len(programs)} hw.program ops"
        raise SimulationError("program", f"expected one hw.program in the module, found {found}")
    return programs[0]


def decode_program(source: ModuleOp | ProgramOp, target: Target, verified: bool = False) -> Program:
    """Decodes and validates a program for `target` (see the module docstring); `verified`: the
    caller has just verified it (compiling, parsing and loading a binary do), so the op
    verifiers are not run again."""
    program = find_program(source)
    check_limits(program, target, verified)
    decoder = _Decoder(target)
    cores = tuple(decoder.core(core) for core in program.cores())
    if decoder.problems:
        raise SimulationError(
            "program", _first(decoder.problems), hint="the simulator cannot run these instructions"
        )
    tensors = tuple(_tensor(op) for op in program.body.block.ops if isinstance(op, TensorOp))
    consts = tuple(_const(op) for op in program.body.block.ops if isinstance(op, ConstOp))
    name = program.sym_name.data if program.sym_name else "program"
    return Program(name, target, tensors, consts, cores, decoder.names)


def check_limits(program: ProgramOp, target: Target, verified: bool = False) -> None:
    """The ISA verifiers (unless the program is `verified`), then the target limits of
    `aitc.dialects.hw.program` (bounds over whole loop nests, alignment, engines, semaphores,
    matrix shape, data layout): one source of truth for what fits a target. The verifier already
    checks a program against the preset it names."""
    try:
        if not verified:
            program.verify()
    except DiagnosticException as error:
        raise SimulationError("program", f"invalid hw program: {error}") from None
    if program.target is not None and preset(program.target.data) == target:
        return
    problems = program_problems(program, target)
    if problems:
        raise SimulationError(
            "program",
            _first([f"target '{target.name}': {p}" for p in problems]),
            hint="the program does not fit",
        )


def _first(problems: list[str], limit: int = 20) -> list[str]:
    """The first `limit` problems and a count of the rest (one screen)."""
    more = [f"... and {len(problems) - limit} more problems"] if len(problems) > limit else []
    return problems[:limit] + more


class _Decoder:
    """Decodes core bodies for one target, collecting every problem found on the way."""

    def __init__(self, target: Target):
        self.target = target
        self.names = engine_names(target)
        self.problems: list[str] = []

    def core(self, op: CoreOp) -> CoreProgram:
        """Decodes one hw.core (instruction counts per engine included)."""
        core, cores = op.core_id(), self.target.cores
        if core >= cores:
            self.problems.append(
                f"hw.core {core}: target '{self.target.name}' has {cores} cores (0..{cores - 1})"
            )
        counts = [0] * len(self.names)
        return CoreProgram(core, self.block(op.body.block.ops, core, counts, 1), tuple(counts))

    def block(
        self, ops: Iterable[Operation], core: int, counts: list[int], trips: int
    ) -> tuple[StaticInstr | Loop, ...]:
        """Decodes `ops`, adding each instruction's dynamic count (`trips`) to its engine's count."""
        body: list[StaticInstr | Loop] = []
        for op in ops:
            if isinstance(op, LoopOp):
                n = op.trip_count()
                loop_body = self.block(op.body.block.ops, core, counts, trips * n)
                if loop_body:  # a loop without instructions does nothing: never iterate it
                    body.append(Loop(n, loop_body))
            elif isinstance(op, InstructionOp):
                static = StaticInstr(op, max(self.engine_index(op, core), 0), self.target)
                self.problems += [f"core {core}: {static.text}: {p}" for p in instruction_problems(static)]
                counts[static.engine] += trips
                body.append(static)
            elif not isinstance(op, EndOp):
                self.problems.append(f"core {core}: unexpected op {op.name} in a core body")
        return tuple(body)

    def engine_index(self, op: InstructionOp, core: int) -> int:
        """The engine (index into `names`) that runs `op`, or -1 (and a problem) if none."""
        mnemonic = op.name.removeprefix("hw.")
        if op.ENGINE in ("matrix", "vector"):
            return self.names.index(op.ENGINE)
        if op.ENGINE == "dma":
            queue = op.get_int("queue")
            name = f"dma{queue if queue >= 0 else DEFAULT_DMA_QUEUE[mnemonic]}"
        else:
            name = str(op.get("engine"))
            name = ENGINE_ALIASES.get(name, name)
        if name in self.names:
            return self.names.index(name)
        queues = len(self.names) - 2
        self.problems.append(
            f"core {core}: {op.name}: engine '{name}' does not exist (the target has {queues} DMA queues)"
        )
        return -1


def instruction_problems(s: StaticInstr) -> list[str]:
    """Rules the simulator needs beyond the op verifiers and the target limits of
    `aitc.dialects.hw.program` (which `check_limits` has already applied): a write whose rows
    overlap has no defined result."""
    return [
        f"rows of '{r.field}' overlap (stride {r.stride} < {r.row_bytes} bytes)"
        for r in s.regions
        if r.write and r.overlapping_rows
    ]


def _tensor(op: TensorOp) -> TensorSpec:
    """The TensorSpec of a hw.tensor."""
    assert op.sym is not None and op.kind is not None and op.addr is not None  # noqa: PT018 (verified op)
    assert isinstance(op.type, TensorType)
    shape = tuple(op.type.get_shape())
    return TensorSpec(
        op.sym.data, op.kind.data, shape, numpy_dtype(op.type.get_element_type()), op.addr.base.data
    )


def _const(op: ConstOp) -> ConstSegment:
    """The bytes of a hw.const."""
    assert op.addr is not None
    assert op.value is not None
    array = np.ascontiguousarray(attr_to_array(op.value))
    return ConstSegment(op.addr.base.data, array.reshape(-1).view(np.uint8))
