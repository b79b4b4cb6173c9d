"""`hw.program`, and the target limits a program must fit: can *this* NPU run the program?

The op verifiers (`structure.py`, `instructions.py`) check what the ISA allows on any target
(memory spaces, required fields, loop indices in scope). The checks here test one program
against one `Target`, and report every problem at once:

- core ids < `cores`; DMA `queue` < `dma.queues`; engines named `dmaN` exist; the `peer` of
  `hw.dma_peer` and of `hw.sem_signal` (when given) is another existing core;
- matmul `k <= matrix.rows`, `n <= matrix.cols`, `dtype` in `matrix.dtypes`;
- semaphore ids < `semaphores`;
- element alignment (f32/i32: 4 bytes) of matmul/vector/gather-index addresses and their loop
  steps (a loop step that breaks alignment breaks it on the second iteration);
- every address range inside its memory (`sram_bytes`, `acc_bytes`, `dram.bytes`), over the
  whole loop iteration box: an address `base + s0*i0 + s1*i1` under loops of counts c0, c1 spans
  [base + sum(min(0, s*(c-1))), base + sum(max(0, s*(c-1)))] plus the bytes one access touches;
- `hw.tensor` / `hw.const` regions inside DRAM and disjoint.

How many bytes one instruction touches from each address is `accesses(op)`; it must agree with
the simulator's footprints (`aitc/sim/footprint.py`, the ISA's living definition), which
`test/python/dialects/test_hw.py` cross-checks instruction by instruction.

`ProgramOp.verify_` runs these checks when the program's `target` names a preset, so
`aitc-opt` rejects a program that does not fit; `aitc asm` runs them for any target. They live
with the op because its verifier needs them, and they need every other op of the dialect.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FileLineColLoc,
    IntegerAttr,
    NameLoc,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.irdl import irdl_op_definition, opt_attr_def, region_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoTerminator

from aitc.diagnostics import AitcError
from aitc.dialects.hw.fields import DTYPES, AddressAttr, require
from aitc.dialects.hw.instructions import (
    BarrierOp,
    DmaGatherOp,
    DmaInOp,
    DmaLocalOp,
    DmaOp,
    DmaOutOp,
    DmaPeerOp,
    MatmulOp,
    SemSignalOp,
    SemWaitOp,
    VBinaryOp,
    VCastOp,
    VectorOp,
    VReduceOp,
)
from aitc.dialects.hw.structure import (
    ConstOp,
    CoreOp,
    InstructionOp,
    LoopOp,
    ProgramBase,
    TensorOp,
    adopt_region,
)
from aitc.target import Target, load_target, preset_names
from aitc.types import element_bytes

KERNELS_ATTR = "aitc.kernels"
"""The attribute of a `hw.program` that keeps the cost model's estimate of each kernel it runs
(`KernelEstimate`), so `aitc perf` on a `.aitb` or on a multi-core program compares them with
the simulated cycles: convert-sync-to-hw records one per tile.kernel, the multi-core link one
per kernel of every core's phases and one per collective."""


@dataclass(frozen=True)
class KernelEstimate:
    """What the compiler estimated for one kernel of a program: `kernel` (its name: the ONNX node
    of its last op, or a collective's label), `op` (its graph ops, comma-separated, or
    "collective"), `est_cycles`, `dma_bytes`, `nodes` (the ONNX nodes its instructions' locations
    name), the `core` that runs it, its `overlap` (the cycles of its estimate that run while the
    kernel before it finishes) and `delay` (how much later it ends for the kernel after it,
    whose loads take the DRAM channel from its last stores): `convert-sync-to-hw`'s `overlap`,
    written only when not 0. Its time in the program is estimated as est - overlap + delay."""

    kernel: str
    op: str
    est_cycles: int
    nodes: tuple[str, ...]
    dma_bytes: int = 0
    core: int = 0
    overlap: int = 0
    delay: int = 0

    def to_attr(self) -> DictionaryAttr:
        """The estimate as an entry of `aitc.kernels` (`from_attr` reads it back)."""
        overlap = {k: IntegerAttr(v, i64) for k, v in (("overlap", self.overlap), ("delay", self.delay)) if v}
        return DictionaryAttr({
            "kernel": StringAttr(self.kernel), "op": StringAttr(self.op),
            "est_cycles": IntegerAttr(self.est_cycles, i64), "dma_bytes": IntegerAttr(self.dma_bytes, i64),
            "nodes": ArrayAttr([StringAttr(n) for n in self.nodes]), "core": IntegerAttr(self.core, i64),
            **overlap,
        })  # fmt: skip

    @classmethod
    def from_attr(cls, attr: Attribute) -> KernelEstimate:
        """The estimate an entry of `aitc.kernels` holds; a VerifyException naming what is wrong."""
        require(isinstance(attr, DictionaryAttr), f"hw.program: {KERNELS_ATTR} entries must be dictionaries")
        assert isinstance(attr, DictionaryAttr)
        fields = attr.data

        def text(name: str) -> str:
            value = fields.get(name)
            require(
                isinstance(value, StringAttr), f"hw.program: {KERNELS_ATTR} entry needs a string '{name}'"
            )
            assert isinstance(value, StringAttr)
            return value.data

        def count(name: str) -> int:
            value = fields.get(name, IntegerAttr(0, i64))
            require(
                isinstance(value, IntegerAttr) and value.value.data >= 0,
                f"hw.program: {KERNELS_ATTR} entry's '{name}' must be an integer >= 0",
            )
            assert isinstance(value, IntegerAttr)
            return value.value.data

        nodes = fields.get("nodes", ArrayAttr([]))
        require(
            isinstance(nodes, ArrayAttr) and all(isinstance(n, StringAttr) for n in nodes.data),
            f"hw.program: {KERNELS_ATTR} entry's 'nodes' must be an array of strings",
        )
        assert isinstance(nodes, ArrayAttr)
        names = tuple(n.data for n in nodes.data if isinstance(n, StringAttr))
        cycles, overlap = count("est_cycles"), count("overlap")
        require(overlap <= cycles, f"hw.program: {KERNELS_ATTR} entry's 'overlap' exceeds its 'est_cycles'")
        return cls(
            text("kernel"),
            text("op"),
            cycles,
            names,
            count("dma_bytes"),
            count("core"),
            overlap,
            count("delay"),
        )

    def row(self) -> dict[str, object]:
        """The estimate as a row of `aitc.compiler.kernel_report`."""
        return {
            "kernel": self.kernel, "op": self.op, "est_cycles": self.est_cycles, "dma_bytes": self.dma_bytes,
            "nodes": list(self.nodes), "core": self.core, "overlap": self.overlap, "delay": self.delay,
        }  # fmt: skip


@irdl_op_definition
class ProgramOp(ProgramBase):
    """A whole NPU program for `target`: data layout ops, then one hw.core per core.

    ```mlir
    hw.program @matmul target "edge" {
      hw.tensor "x" input dram[0x0] : tensor<4x4xf32>
      hw.core 0 {
        hw.end
      }
    }
    ```
    """

    name = "hw.program"
    sym_name = opt_attr_def(StringAttr)
    target = opt_attr_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(self, name: str, target: str, ops: Sequence[Operation] = ()):
        super().__init__(
            attributes={"sym_name": StringAttr(name), "target": StringAttr(target)},
            regions=[Region(Block(ops))],
        )

    def cores(self) -> list[CoreOp]:
        return [op for op in self.body.block.ops if isinstance(op, CoreOp)]

    @property
    def kernel_estimates(self) -> list[KernelEstimate]:
        """The estimates recorded in `aitc.kernels` (empty when none are)."""
        recorded = self.attributes.get(KERNELS_ATTR)
        if not isinstance(recorded, ArrayAttr):
            return []
        return [KernelEstimate.from_attr(entry) for entry in recorded.data]

    @kernel_estimates.setter
    def kernel_estimates(self, estimates: Sequence[KernelEstimate]) -> None:
        if estimates:
            self.attributes[KERNELS_ATTR] = ArrayAttr([e.to_attr() for e in estimates])
        else:
            self.attributes.pop(KERNELS_ATTR, None)

    def verify_(self) -> None:
        ids = [c.core_id() for c in self.cores()]
        require(len(ids) == len(set(ids)), f"hw.program: duplicate core ids {sorted(ids)}")
        for op in self.body.block.ops:
            require(isinstance(op, CoreOp | TensorOp | ConstOp), f"hw.program cannot hold {op.name}")
        recorded = self.attributes.get(KERNELS_ATTR)
        if recorded is not None:
            require(
                isinstance(recorded, ArrayAttr),
                f"hw.program: {KERNELS_ATTR} must be an array of dictionaries",
            )
            assert isinstance(recorded, ArrayAttr)
            for entry in recorded.data:
                KernelEstimate.from_attr(entry)  # raises on an entry that is not one
        self.verify_target()

    def verify_target(self) -> None:
        """When `target` names a preset, checks the program against its limits (every problem
        at once: `preset_violations`). Programs for a TOML target are checked by `aitc asm`."""
        report = preset_violations(self)
        require(not report, report)

    def print(self, printer: Printer) -> None:
        assert self.sym_name
        assert self.target
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(" target ")
        printer.print_string_literal(self.target.data)
        printer.print_op_attributes(
            self.attributes, reserved_attr_names=("sym_name", "target"), print_keyword=True
        )
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> ProgramOp:
        name = parser.parse_symbol_name().data
        parser.parse_keyword("target")
        target = parser.parse_str_literal()
        extra = parser.parse_optional_attr_dict_with_keyword(reserved_attr_names=("sym_name", "target"))
        body = parser.parse_region()
        op = cls(name, target)
        if extra is not None:
            op.attributes.update(extra.data)
        adopt_region(op.body, body)
        return op


ACC_ELEMENT_BYTES = 4
"""Matmul accumulates f32 (f32 inputs) or i32 (i8 inputs): 4 bytes per ACC element."""


@dataclass(frozen=True)
class Access:
    """The bytes one instruction touches from its address field `field`: `extent` bytes from the
    (loop-advanced) address, which with its loop steps must be a multiple of `align`."""

    field: str
    extent: int
    align: int = 1


@dataclass(frozen=True)
class Site:
    """Where an instruction sits: its core, its ordinal in the core's program order, and the
    trip counts of its enclosing loops (outermost first)."""

    core: int
    index: int
    loop_counts: tuple[int, ...]


# --------------------------------------------------------------------------- access extents


def _rows(rows: int, row_bytes: int, stride: int) -> int:
    """Bytes spanned by `rows` rows of `row_bytes`, `stride` bytes apart (0 = dense)."""
    return (rows - 1) * (stride or row_bytes) + row_bytes


def _tile(field: str, rows: int, cols: int, stride: int, element: int) -> Access:
    """A rows x cols tile of `element`-byte values, rows `stride` elements apart (0 = dense)."""
    return Access(field, _rows(rows, cols, stride) * element, element)


def _dma_accesses(op: InstructionOp) -> list[Access]:
    rows, row_bytes = op.get_int("rows"), op.get_int("row_bytes")
    return [
        Access("dst", _rows(rows, row_bytes, op.get_int("dst_stride"))),
        Access("src", _rows(rows, row_bytes, op.get_int("src_stride"))),
    ]


def _gather_accesses(op: InstructionOp) -> list[Access]:
    rows, row_bytes = op.get_int("rows"), op.get_int("row_bytes")
    return [
        Access("dst", _rows(rows, row_bytes, op.get_int("dst_stride"))),
        Access("src", _rows(op.get_int("table_rows"), row_bytes, op.get_int("src_stride"))),
        Access("indices", 4 * rows, 4),
    ]


def _matmul_accesses(op: InstructionOp) -> list[Access]:
    m, k, n, size = op.get_int("m"), op.get_int("k"), op.get_int("n"), DTYPES[op.get_str("dtype")]
    rhs_rows, rhs_cols = (n, k) if op.get("transpose_rhs") else (k, n)
    return [
        _tile("lhs", m, k, op.get_int("lhs_stride"), size),
        _tile("rhs", rhs_rows, rhs_cols, op.get_int("rhs_stride"), size),
        _tile("acc", m, n, op.get_int("acc_stride"), ACC_ELEMENT_BYTES),
    ]


def _vector_accesses(op: InstructionOp) -> list[Access]:
    """dst and every source as rows x cols tiles of `dtype` (vcast reads `from`, writes `to`);
    vreduce's dst is a dense column (one value per row) and vbinary's `b` follows `broadcast`."""
    rows, cols = op.get_int("rows"), op.get_int("cols")
    types = ("from", "to") if isinstance(op, VCastOp) else ("dtype", "dtype")
    src_size, dst_size = (DTYPES[op.get_str(name)] for name in types)
    dst_shape = (rows, 1, 0) if isinstance(op, VReduceOp) else (rows, cols, op.get_int("dst_stride"))
    found = [_tile("dst", *dst_shape, dst_size)]
    for field in op.FIELDS:
        if field.role != "src":
            continue
        if field.name == "b" and isinstance(op, VBinaryOp):
            found.append(_broadcast_operand(op, rows, cols, src_size))
        else:
            found.append(_tile(field.name, rows, cols, op.get_int("src_stride"), src_size))
    return found


def _broadcast_operand(op: InstructionOp, rows: int, cols: int, element: int) -> Access:
    """vbinary's `b`: a full tile, one row, one column or one value, by `broadcast`."""
    shapes = {"none": (rows, cols), "row": (1, cols), "col": (rows, 1), "scalar": (1, 1)}
    shape = shapes[str(op.get("broadcast"))]
    return _tile("b", *shape, op.get_int("b_stride"), element)


_ACCESSES: dict[type[InstructionOp], Callable[[InstructionOp], list[Access]]] = {
    DmaInOp: _dma_accesses,
    DmaOutOp: _dma_accesses,
    DmaLocalOp: _dma_accesses,
    DmaPeerOp: _dma_accesses,
    DmaGatherOp: _gather_accesses,
    MatmulOp: _matmul_accesses,
}


def accesses(op: InstructionOp) -> list[Access]:
    """The memory each address field of `op` touches. Vector ops share one rule; an
    instruction without a rule is checked for its first byte only (extent 1)."""
    rule = _ACCESSES.get(type(op))
    if rule is not None:
        return rule(op)
    if isinstance(op, VectorOp):
        return _vector_accesses(op)
    return [Access(f.name, 1) for f in op.FIELDS if f.kind == "addr"]


# --------------------------------------------------------------------------- address ranges


def address_range(address: AddressAttr, loop_counts: tuple[int, ...]) -> tuple[int, int]:
    """(lowest, highest) value of `address` over the iteration box of its enclosing loops."""
    low = high = address.base.data
    for step, count in zip(address.step_values, loop_counts, strict=False):
        span = step * (count - 1)
        low, high = low + min(0, span), high + max(0, span)
    return low, high


def memory_bytes(target: Target, space: str) -> int:
    """Size of memory `space` (per core for sram/acc, shared for dram)."""
    return {"sram": target.sram_bytes, "acc": target.acc_bytes, "dram": target.dram.bytes}[space]


def _access_problems(op: InstructionOp, site: Site, target: Target) -> Iterator[str]:
    for access in accesses(op):
        address = op.get(access.field)
        if not isinstance(address, AddressAttr):
            continue
        yield from _alignment_problems(address, access)
        yield from _bounds_problems(address, access, site, target)


def _alignment_problems(address: AddressAttr, access: Access) -> Iterator[str]:
    if address.base.data % access.align:
        yield f"'{access.field}' address 0x{address.base.data:x} is not {access.align}-byte aligned"
    for depth, step in enumerate(address.step_values):
        if step % access.align:
            yield f"'{access.field}' step {step} of loop i{depth} is not a multiple of {access.align} bytes"


def _bounds_problems(address: AddressAttr, access: Access, site: Site, target: Target) -> Iterator[str]:
    space = address.space.data
    size = memory_bytes(target, space)
    low, high = address_range(address, site.loop_counts)
    end = high + access.extent
    looped = " over its loop iterations" if address.step_values else ""
    if low < 0:
        yield f"'{access.field}' {address.text()} goes below address 0{looped} (down to {low})"
    if end > size:
        yield (
            f"'{access.field}' {address.text()} reaches byte 0x{end:x}{looped} "
            f"({access.extent} bytes per access), beyond the {size} bytes of {space.upper()}"
        )


# --------------------------------------------------------------------------- per-instruction limits


def _dma_problems(op: InstructionOp, site: Site, target: Target) -> Iterator[str]:
    queue = op.get("queue")
    assert isinstance(queue, int)
    if queue != -1 and not 0 <= queue < target.dma.queues:
        queues = target.dma.queues
        yield f"queue={queue} does not exist (the target has {queues} DMA queues, 0..{queues - 1}; -1 = auto)"
    if isinstance(op, DmaPeerOp):
        yield from _peer_problems(op.get_int("peer"), site, target, "use hw.dma_local")


def _peer_problems(peer: int, site: Site, target: Target, instead: str) -> Iterator[str]:
    """`peer` must name another core of the target (dma_peer, sem_signal with a peer)."""
    if not 0 <= peer < target.cores:
        yield f"peer={peer} is not a core (the target has {target.cores} cores)"
    elif peer == site.core:
        yield f"peer={peer} is this core itself ({instead})"


def _matmul_problems(op: InstructionOp, site: Site, target: Target) -> Iterator[str]:
    matrix = target.matrix
    if op.get_int("k") > matrix.rows:
        yield f"k={op.get('k')} exceeds the matrix engine's {matrix.rows} rows (matrix.rows)"
    if op.get_int("n") > matrix.cols:
        yield f"n={op.get('n')} exceeds the matrix engine's {matrix.cols} cols (matrix.cols)"
    if op.get("dtype") not in matrix.dtypes:
        yield f"dtype={op.get('dtype')} is not one of the matrix engine's dtypes {list(matrix.dtypes)}"


def _engine_problems(op: InstructionOp, target: Target) -> Iterator[str]:
    engine = str(op.get("engine"))
    if engine.startswith("dma") and engine[3:].isdigit() and int(engine[3:]) >= target.dma.queues:
        yield f"engine={engine} does not exist (the target has {target.dma.queues} DMA queues)"


def _semaphore_problems(op: InstructionOp, site: Site, target: Target) -> Iterator[str]:
    sem = op.get("sem")
    assert isinstance(sem, int)
    if not 0 <= sem < target.semaphores:
        count = target.semaphores
        yield f"semaphore {sem} does not exist (the target has {count} per core, 0..{count - 1})"
    if op.get_int("count") < 1:
        yield f"count={op.get('count')} must be >= 1"
    if isinstance(op, SemSignalOp) and op.get_int("peer") != -1:
        yield from _peer_problems(op.get_int("peer"), site, target, "leave peer out to signal this core")
    yield from _engine_problems(op, target)


def _barrier_problems(op: InstructionOp, site: Site, target: Target) -> Iterator[str]:
    yield from _engine_problems(op, target)


_LIMITS: dict[type[InstructionOp], Callable[[InstructionOp, Site, Target], Iterator[str]]] = {
    MatmulOp: _matmul_problems,
    SemSignalOp: _semaphore_problems,
    SemWaitOp: _semaphore_problems,
    BarrierOp: _barrier_problems,
}


def instruction_problems(op: InstructionOp, site: Site, target: Target) -> list[str]:
    """Every target-limit problem of one instruction (without its name/site prefix)."""
    rule = _LIMITS.get(type(op))
    if rule is None and isinstance(op, DmaOp):
        rule = _dma_problems
    found = list(rule(op, site, target)) if rule else []
    return found + list(_access_problems(op, site, target))


# --------------------------------------------------------------------------- program walk


def source_name(location: Attribute) -> str | None:
    """The ONNX node name (or file:line:col) a location names, if any."""
    if isinstance(location, NameLoc):
        return location.desc.data
    if isinstance(location, FileLineColLoc):
        return f"{location.filename.data}:{location.line.data}:{location.column.data}"
    return None


def describe_instruction(op: Operation, site: Site) -> str:
    """`core 0, instruction 3 (hw.matmul, node "fc1")`: how problems name an instruction."""
    node = source_name(op.location)
    where = f', node "{node}"' if node else ""
    return f"core {site.core}, instruction {site.index} ({op.name}{where})"


def _walk_core(
    ops: list[Operation], core: int, counts: tuple[int, ...], counter: list[int]
) -> Iterator[tuple[InstructionOp, Site]]:
    """(instruction, Site) in program order; `counter` numbers instructions across loops."""
    for op in ops:
        if isinstance(op, LoopOp):
            yield from _walk_core(list(op.body.block.ops), core, (*counts, op.trip_count()), counter)
        elif isinstance(op, InstructionOp):
            yield op, Site(core, counter[0], counts)
            counter[0] += 1


def instructions(program: ProgramOp) -> Iterator[tuple[InstructionOp, Site]]:
    """Every instruction of `program` with its Site, core by core, in program order."""
    for core in program.cores():
        yield from _walk_core(list(core.body.block.ops), core.core_id(), (), [0])


def _regions(program: ProgramOp) -> list[tuple[int, int, str]]:
    """(start, end, description) of every hw.tensor and hw.const in DRAM."""
    found = []
    for op in program.body.block.ops:
        if isinstance(op, TensorOp) and op.addr and op.type and op.sym:
            size = math.prod(op.type.get_shape()) * element_bytes(op.type.get_element_type())
            found.append((op.addr.base.data, op.addr.base.data + size, f'hw.tensor "{op.sym.data}"'))
        elif isinstance(op, ConstOp) and op.addr and op.value:
            type_ = op.value.get_type()
            assert isinstance(type_, TensorType)
            size = math.prod(type_.get_shape()) * element_bytes(type_.get_element_type())
            start = op.addr.base.data
            found.append((start, start + size, f"hw.const at dram[0x{start:x}]"))
    return found


def layout_problems(program: ProgramOp, target: Target) -> list[str]:
    """hw.tensor / hw.const regions outside DRAM or overlapping each other."""
    problems = []
    regions = sorted(_regions(program))
    for start, end, what in regions:
        if end > target.dram.bytes:
            problems.append(f"{what} ends at 0x{end:x}, beyond the {target.dram.bytes} bytes of DRAM")
    reach = (0, "")  # the furthest end so far, and whose it is
    for start, end, what in regions:
        if start < reach[0]:
            problems.append(f"{what} (from 0x{start:x}) overlaps {reach[1]} (up to 0x{reach[0]:x})")
        reach = max(reach, (end, what))
    return problems


def program_problems(program: ProgramOp, target: Target) -> list[str]:
    """Every way `program` exceeds `target`, one line each (empty when it fits)."""
    problems = [
        f"hw.core {core.core_id()} does not exist (the target has {target.cores} cores)"
        for core in program.cores()
        if core.core_id() >= target.cores
    ]
    problems += layout_problems(program, target)
    for op, site in instructions(program):
        prefix = describe_instruction(op, site)
        problems += [f"{prefix}: {problem}" for problem in instruction_problems(op, site, target)]
    return problems


def check_program(program: ProgramOp, target: Target) -> None:
    """Raises one AitcError listing every way `program` exceeds `target`."""
    problems = program_problems(program, target)
    if problems:
        raise AitcError(
            [f"target '{target.name}': {p}" for p in problems],
            hint=f"see `aitc target show {_target_argument(target)}` for the target's limits",
        )


def _target_argument(target: Target) -> str:
    return target.name if target.name in preset_names() else "FILE.toml"


@functools.cache
def preset(name: str) -> Target | None:
    """The preset target called `name`, or None if there is no such preset (cached)."""
    return load_target(name) if name in preset_names() else None


def preset_violations(program: ProgramOp) -> str:
    """A one-screen report of how `program` exceeds the preset its `target` names; "" when it
    fits or when `target` is not a preset (a TOML target is checked by `aitc asm`)."""
    target = preset(program.target.data) if program.target else None
    if target is None:
        return ""
    problems = program_problems(program, target)
    if not problems:
        return ""
    name = program.sym_name.data if program.sym_name else "?"
    header = f"hw.program @{name} does not fit target '{target.name}' ({len(problems)} problem(s)):"
    return "\n  ".join([header, *problems])
