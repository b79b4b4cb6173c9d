"""Linking per-core phase programs and collectives into one multi-core hw.program.

Input: for every core, its steps (`phases.Steps`) with each phase already lowered to a
single-core hw.program. Output: one hw.program with a hw.core per core, in which core c runs
its phases in order and, between them, its part of each collective (`collectives.py`).

**DRAM**: the function's inputs are shared (one copy, read by every core); its outputs are
written by core 0 (the others write theirs to private buffers, so no two cores write one
byte). Everything else is per core: each phase program's image (constants, scratch) is moved
to a region of its own, and every value handed between steps (a phase's output, a
collective's input or result) gets a per-core buffer; a phase's instructions are relocated so
its input and output tensors are those buffers.

**Ordering**: phases were lowered as whole programs, so between steps every engine of the core
must be done: a fence makes each engine signal semaphore F, one engine wait for them all, and
release the others through semaphore G. Before a collective the fence also holds a hw.barrier
(peers write into this core's SRAM, which the phase before may still have been using). A
collective loads its input from DRAM into SRAM, runs the ring or direct algorithm the cost
model prefers (that fits in SRAM), and stores its result; values too large for SRAM are
all-reduced in pieces, a barrier between pieces.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from xdsl.dialects.builtin import ModuleOp, NameLoc, NoneAttr, StringAttr, TensorType
from xdsl.ir import Attribute, Operation

from aitc.diagnostics import AitcError
from aitc.dialects.hw import (
    AddressAttr,
    BarrierOp,
    ConstOp,
    CoreOp,
    DmaInOp,
    DmaOutOp,
    DmaPeerOp,
    EndOp,
    KernelEstimate,
    LoopOp,
    ProgramOp,
    SemSignalOp,
    SemWaitOp,
    TensorOp,
)
from aitc.dialects.hw.program import accesses, address_range, instructions
from aitc.passes.shard.cost_model import collective_cycles, linked_piece_cycles
from aitc.passes.sync_to_hw.collectives import F32, SEND_ENGINE, Layout, Semaphores, build
from aitc.sim.program import COLLECTIVE_PREFIX
from aitc.spmd.phases import Collective, Phase, Slice, Steps
from aitc.target import Target
from aitc.types import element_bytes, tensor_bytes

ALIGN = 64
COLLECTIVE_SEMS = Semaphores(data=0, credit=1, local=2)
READY = 3
FENCE_SEMAPHORES = 2
"""The top semaphores of a core that its fences use (F, G). Phases are synchronised without
them: at a fence an engine that finished the phase signals F while another may still wait
inside the phase, which must not take that unit."""


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


@dataclass
class Dram:
    """A bump allocator over the shared DRAM."""

    top: int = 0

    def take(self, nbytes: int) -> int:
        at = self.top
        self.top = _aligned(at + max(nbytes, 1))
        return at


def program_of(module: ModuleOp) -> ProgramOp:
    found = [op for op in module.walk() if isinstance(op, ProgramOp)]
    if len(found) != 1:
        raise AitcError(f"a phase lowered to {len(found)} hw programs; a multi-core phase needs exactly one")
    return found[0]


def _scratch_span(program: ProgramOp, mapped: list[tuple[int, int, int]]) -> tuple[int, int]:
    """(lowest, one past the highest) DRAM byte the program's instructions touch outside the
    `mapped` (old start, old end, new) ranges of its tensors and constants: its scratch;
    (0, 0) for none."""
    low, high = None, 0
    for op, site in instructions(program):
        for access in accesses(op):
            address = op.attributes.get(access.field)
            if not isinstance(address, AddressAttr) or address.space.data != "dram":
                continue
            first, last = address_range(address, site.loop_counts)
            if any(start <= first < end for start, end, _ in mapped):
                continue
            low = first if low is None else min(low, first)
            high = max(high, last + access.extent)
    return (0, 0) if low is None else (low, high)


@dataclass
class Relocation:
    """Where a phase program's DRAM goes: its I/O tensors to given buffers, the rest shifted."""

    tensors: list[tuple[int, int, int]] = field(default_factory=list)
    """(old start, old end, new start) per input/output tensor."""
    shift: int = 0

    def __call__(self, address: int) -> int:
        for start, end, new in self.tensors:
            if start <= address < end:
                return new + address - start
        return address + self.shift


def _relocate(ops: list[Operation], move: Relocation, counts: tuple[int, ...] = ()) -> list[Operation]:
    """Clones of `ops` (instructions and loops) with every DRAM address moved by `move`."""
    result: list[Operation] = []
    for op in ops:
        if isinstance(op, EndOp):
            continue
        clone = op.clone()
        result.append(clone)
        if isinstance(op, LoopOp):
            inner = _relocate(list(op.body.block.ops), move, (*counts, op.trip_count()))
            assert isinstance(clone, LoopOp)
            for old in list(clone.body.block.ops):
                old.detach()
                old.erase()
            for new in inner:
                clone.body.block.add_op(new)
            continue
        for name, attr in list(clone.attributes.items()):
            if isinstance(attr, AddressAttr) and attr.space.data == "dram":
                low = address_range(attr, counts)[0]
                clone.attributes[name] = AddressAttr(
                    "dram", move(low) + attr.base.data - low, attr.step_values
                )
    return result


class Linker:
    """Builds the multi-core program (see the module docstring)."""

    def __init__(self, target: Target, target_spec: str, cores: int):
        self.target, self.spec, self.cores = target, target_spec, cores
        self.dram = Dram()
        self.data: list[Operation] = []
        self.streams: list[list[Operation]] = [[] for _ in range(cores)]
        self.buffers: list[dict[str, int]] = [{} for _ in range(cores)]
        self.shared: dict[str, int] = {}
        engines = [f"dma{q}" for q in range(target.dma.queues)] + ["matrix", "vector"]
        self.engines = engines
        if target.semaphores < READY + FENCE_SEMAPHORES:
            raise AitcError(
                f"a multi-core program needs {READY + FENCE_SEMAPHORES} semaphores per core (collectives "
                f"and fences); target '{target.name}' has {target.semaphores}"
            )
        self.fence_sems = (target.semaphores - 1, target.semaphores - FENCE_SEMAPHORES)
        self.collective_numbers = [0] * cores
        self.outputs: dict[str, int] = {}
        """Function output values -> their shared DRAM tensor (core 0 writes them)."""
        self.scratch_regions: dict[int, tuple[int, int]] = {}
        """Per core, (base, size) of the DRAM its phases' scratch shares (`scratch`)."""
        self.constants: dict[Attribute, int] = {}
        """Each constant's DRAM address, placed once for every core and phase that reads it."""
        self.in_dram: set[str] = set()
        """All_gathers done through shared DRAM (`gather_in_dram`): a barrier is all they need."""
        self.aliased: set[str] = set()
        """Final all_gathers whose parts were written in place (`alias_final_parts`)."""
        self.reduced_in_dram: dict[str, int] = {}
        """Reduce-scatters done through shared DRAM (`reduce_in_dram`) -> the whole sum's buffer."""
        self.final_outputs: set[str] = set()
        """Collective results that are function outputs no later step reads (see `_piece`)."""
        self.estimates: list[KernelEstimate] = []
        """What the cost model estimated for every core's kernels and collectives, in link order
        (recorded on the program: `ProgramOp.kernel_estimates`)."""

    # -- DRAM

    def declare(self, steps: Steps, output_types: dict[str, TensorType]) -> None:
        for name, type_ in steps.inputs:
            self.shared[name] = self.dram.take(tensor_bytes(type_))
            self.data.append(TensorOp(name, "input", self.shared[name], type_))
        for output, value in steps.outputs:
            at = self.dram.take(tensor_bytes(output_types[value]))
            self.data.append(TensorOp(output, "output", at, output_types[value]))
            self.buffers[0][value] = self.outputs[value] = at

    def gather_in_dram(self, steps: Steps) -> None:
        """An all_gather whose parts are contiguous (split along the outermost dim) goes through
        the shared DRAM instead of the links: every core makes its part straight into one shared
        buffer, a barrier, then every core reads the whole from there. DRAM moves the value once
        in and once per reader, where the link version also loads and stores it on every core.
        A value gathered again (two consumers, each with its own all_gather) is read from the
        first gather's buffer."""
        gathered: dict[str, int] = {}
        for step in steps.steps:
            if (
                not isinstance(step, Collective)
                or step.kind != "all_gather"
                or step.result in self.final_outputs
            ):
                continue
            rows, row_elements = _matrix(step)
            placed = any(step.result in b for b in self.buffers)
            if rows == 1 and step.source in gathered and not placed:
                for core in range(self.cores):
                    self.buffers[core][step.result] = gathered[step.source]
                self.in_dram.add(step.result)
                continue
            if rows != 1 or placed or any(step.source in b for b in self.buffers):
                continue
            shared = self.dram.take(tensor_bytes(step.result_type))
            layout = Layout(0, rows, row_elements, 0, self.cores, _element(step))
            for core in range(self.cores):
                self.buffers[core][step.source] = shared + layout.columns(core)[0] * layout.element
                self.buffers[core][step.result] = shared
            self.in_dram.add(step.result)
            gathered[step.source] = shared

    def reduce_in_dram(self, steps: Steps) -> None:
        """A reduce_scatter whose parts are contiguous (split along the outermost dim) and whose
        one row does not fit in SRAM with its receive slots is reduced as an all_reduce cut into
        column ranges (`_pieces`), each core writing its reduced chunk of every range into one
        shared buffer of the whole sum; after a barrier each core reads its part there in place
        (ResNet-50's layer3 downsample split over input channels: 1 x 1024 x 14 x 14, 802,816
        bytes a row)."""
        for step in steps.steps:
            if (
                not isinstance(step, Collective)
                or step.kind != "reduce_scatter"
                or step.result in self.final_outputs
                or any(step.result in b for b in self.buffers)
            ):
                continue
            rows, row_elements = _matrix(step)
            if rows != 1 or self._fitting_pieces(step) is not None:
                continue
            shared = self.dram.take(tensor_bytes(step.source_type))
            layout = Layout(0, rows, row_elements, 0, self.cores, _element(step))
            for core in range(self.cores):
                self.buffers[core][step.result] = shared + layout.columns(core)[0] * layout.element
            self.reduced_in_dram[step.result] = shared

    def alias_final_parts(self, steps: Steps) -> None:
        """A final all_gather whose parts are contiguous (split along the outermost dim): each
        core's part is made straight in its place in the shared output, and the gather is
        dropped (`collective` skips it)."""
        for step in steps.steps:
            if not (
                isinstance(step, Collective)
                and step.kind == "all_gather"
                and step.result in self.final_outputs
            ):
                continue
            rows, row_elements = _matrix(step)
            if rows != 1:
                continue
            layout = Layout(0, rows, row_elements, 0, self.cores, _element(step))
            for core in range(self.cores):
                self.buffers[core][step.source] = (
                    self.outputs[step.result] + layout.columns(core)[0] * layout.element
                )
            self.aliased.add(step.result)

    def buffer(self, core: int, name: str, type_: TensorType) -> int:
        if name in self.shared:
            return self.shared[name]
        if name not in self.buffers[core]:
            self.buffers[core][name] = self.dram.take(tensor_bytes(type_))
        return self.buffers[core][name]

    def scratch(self, core: int, extent: int) -> int:
        """Where a phase's scratch (its program's DRAM beyond the tensors and constants) goes:
        one region per core that every phase of the core reuses (they run one after the other,
        fenced), grown to the largest phase."""
        base, size = self.scratch_regions.get(core, (0, 0))
        if extent > size:
            base, size = self.dram.take(extent), extent
            self.scratch_regions[core] = (base, size)
        return base

    # -- ordering

    def fence(self, core: int, barrier: bool) -> None:
        """Every engine of `core` done with what came before (and, with `barrier`, every core)."""
        first, second = self.fence_sems
        ops: list[Operation] = [SemSignalOp(sem=first, engine=e) for e in self.engines]
        ops.append(SemWaitOp(sem=first, engine=SEND_ENGINE, count=len(self.engines)))
        if barrier:
            ops.append(BarrierOp(engine=SEND_ENGINE))
        others = [e for e in self.engines if e != SEND_ENGINE]
        ops.append(SemSignalOp(sem=second, engine=SEND_ENGINE, count=len(others)))
        ops += [SemWaitOp(sem=second, engine=e) for e in others]
        self.streams[core] += ops

    # -- steps

    def phase(self, core: int, phase: Phase, module: ModuleOp) -> None:
        program = program_of(module)
        move = Relocation()
        for op in program.body.block.ops:
            if isinstance(op, TensorOp) and op.sym is not None and op.addr is not None:
                assert isinstance(op.type, TensorType)  # the verifier's
                start = op.addr.base.data
                new = self.buffer(core, op.sym.data, op.type)
                move.tensors.append((start, start + tensor_bytes(op.type), new))
        for op in program.body.block.ops:  # constants: placed once, shared by every core and phase
            if isinstance(op, ConstOp) and op.addr is not None and op.value is not None:
                start, size = op.addr.base.data, tensor_bytes(op.value.get_type())
                if op.value not in self.constants:
                    self.constants[op.value] = self.dram.take(size)
                    self.data.append(ConstOp(self.constants[op.value], op.value))
                move.tensors.append((start, start + size, self.constants[op.value]))
        self.estimates += [replace(estimate, core=core) for estimate in program.kernel_estimates]
        low, high = _scratch_span(program, move.tensors)
        move.shift = self.scratch(core, high - low) - low
        for core_op in program.cores():
            self.streams[core] += _relocate(list(core_op.body.block.ops), move)

    def collective(self, core: int, step: Collective, to_root: bool = False) -> None:
        """Core `core`'s part of `step`: per piece (all of it when it fits in SRAM), load from
        DRAM, exchange, store; fenced on both sides. `to_root`: only core 0 reads the result
        (an all_reduce then reduce-scatters and sends every chunk to core 0)."""
        if step.result in self.aliased:
            return  # every core wrote its part in place
        if step.result in self.in_dram:
            label = f"{COLLECTIVE_PREFIX}all_gather_dram#{self.collective_numbers[core]} 0B {step.node}"
            self.collective_numbers[core] += 1
            start = len(self.streams[core])
            self.fence(core, barrier=True)  # every core's part is in the shared buffer
            for op in self.streams[core][start:]:
                op.location = NameLoc(StringAttr(label), NoneAttr())
            return
        source = self.buffer(core, step.source, step.source_type)
        result = self.buffer(core, step.result, step.result_type)
        rows, row_elements = _matrix(step)
        final = step.result in self.final_outputs
        if step.result in self.reduced_in_dram:  # `reduce_in_dram`: an all_reduce's reduce half
            step = replace(step, kind="all_reduce", result_type=step.source_type)
            result, final = self.reduced_in_dram[step.result], True
        pieces = self.pieces_of(step)
        if final and step.result in self.outputs:
            result = self.outputs[step.result]
        root = to_root and not final and step.kind == "all_reduce"
        number = self.collective_numbers[core]
        self.collective_numbers[core] += 1
        kind = (
            {"all_reduce": "reduce_scatter", "all_gather": "write_parts"}[step.kind] if final else step.kind
        )
        kind = "reduce_to_core0" if root else kind
        kind = "reduce_scatter_dram" if step.result in self.reduced_in_dram else kind
        label = f"{COLLECTIVE_PREFIX}{kind}#{number} {rows * row_elements * _element(step)}B {step.node}"
        where = NameLoc(StringAttr(label), NoneAttr())
        exchange = "reduce_scatter" if final or root else step.kind
        exchanged = not (final and step.kind == "all_gather")
        estimate = sum(
            linked_piece_cycles(
                self.target, exchange, piece.algorithm, piece.rows * piece.columns * _element(step),
                self.cores, exchanged, root,
            )
            for piece in pieces
        )  # fmt: skip
        self.estimates.append(KernelEstimate(label, "collective", estimate, (label,), core=core))
        for piece in pieces:
            self.fence(core, barrier=exchanged)  # a final all_gather's parts meet no peer's
            stream = self._piece(core, step, piece, source, result, final, root)
            for op in stream:
                op.location = where
            self.streams[core] += stream
            self.fence(core, barrier=False)
        if step.result in self.reduced_in_dram:
            self.fence(core, barrier=True)  # every core's chunks are in the shared sum

    def slice_input(self, core: int, step: Slice) -> None:
        """Core `core`'s part of a shared input: read in place when it is contiguous (a split
        along the outermost dim), else copied into the core's own buffer through SRAM (the part
        is a column block of the input seen as rows x columns, `_matrix`), rows at a time."""
        element = element_bytes(step.source_type.element_type)
        shape = step.source_type.get_shape()
        rows, row_elements = math.prod(shape[: step.axis]), math.prod(shape[step.axis :])
        width = row_elements // self.cores
        source = self.shared[step.source] + step.position * width * element
        if rows == 1 and step.result not in self.buffers[core]:  # contiguous: read in place
            self.buffers[core][step.result] = source
            return
        result = self.buffer(core, step.result, step.result_type)
        per = max(1, min(rows, self.target.sram_bytes // max(width * element, 1)))
        if width * element > self.target.sram_bytes:
            raise AitcError(
                f"a part of input '{step.source}' ({width * element} bytes a row) does not fit in SRAM"
            )
        stream: list[Operation] = []
        for first in range(0, rows, per):
            count = min(per, rows - first)
            stream += [
                _dma(DmaInOp, "sram", 0, "dram", source + first * row_elements * element, count,
                     width * element, src_stride=row_elements * element),
                SemSignalOp(sem=READY, engine="dma0"),
                SemWaitOp(sem=READY, engine=SEND_ENGINE),
                _dma(DmaOutOp, "dram", result + first * width * element, "sram", 0, 1,
                     count * width * element),
                SemSignalOp(sem=READY + 1, engine=SEND_ENGINE),
                SemWaitOp(sem=READY + 1, engine="dma0"),
            ]  # fmt: skip
        self.fence(core, barrier=False)
        self.streams[core] += stream
        self.fence(core, barrier=False)

    def _piece(
        self, core: int, step: Collective, piece: Piece, source: int, result: int, final: bool, root: bool
    ) -> list[Operation]:
        """One piece: load, exchange, store. `final`: the result is a function output that no
        later step reads, so each core writes only its own part of it into the shared output
        (an all_gather needs no exchange at all, an all_reduce only its reduce-scatter half).
        `root`: an all_reduce only core 0 needs: reduce-scatter, then each chunk to core 0."""
        layout = piece.layout(self.cores, _element(step))
        start, width = layout.columns(core)
        whole, element = layout.nbytes, layout.element
        if step.kind == "all_reduce":  # a column range of the one-row value
            load = _dma(DmaInOp, "sram", 0, "dram", source + piece.first * element, 1, whole)
            store = _dma(DmaOutOp, "dram", result + piece.first * element, "sram", 0, 1, whole)
            if final:
                at = result + (piece.first + start) * element
                store = _dma(DmaOutOp, "dram", at, "sram", start * element, 1, width * element)
        elif step.kind == "all_gather":  # this core's column block in, every row whole out
            load = _dma(DmaInOp, "sram", start * element, "dram", source + piece.first * width * element,
                        layout.rows, width * element, dst_stride=layout.row_bytes)  # fmt: skip
            store = _dma(DmaOutOp, "dram", result + piece.first * layout.row_bytes, "sram", 0, 1, whole)
            if final:
                at = result + piece.first * layout.row_bytes + start * element
                store = _dma(DmaOutOp, "dram", at, "sram", start * element, layout.rows, width * element,
                             layout.row_bytes, layout.row_bytes)  # fmt: skip
        else:  # reduce_scatter: every row whole in, this core's column block out
            load = _dma(DmaInOp, "sram", 0, "dram", source + piece.first * layout.row_bytes, 1, whole)
            store = _dma(DmaOutOp, "dram", result + piece.first * width * element, "sram", start * element,
                         layout.rows, width * element, src_stride=layout.row_bytes)  # fmt: skip
        if final and step.kind == "all_gather":
            ready = [SemSignalOp(sem=READY, engine="dma0"), SemWaitOp(sem=READY, engine=SEND_ENGINE)]
            return [load, *ready, store]
        kind = "reduce_scatter" if final or root else step.kind
        part = build(kind, piece.algorithm, step.reduction, layout, COLLECTIVE_SEMS)[core]
        stream = part.after(load, READY, COLLECTIVE_SEMS)
        if root:
            stream += self._to_core_0(core, layout, store)
        else:
            stream.append(store)
        return stream

    def _to_core_0(self, core: int, layout: Layout, store: Operation) -> list[Operation]:
        """After a reduce-scatter: every other core sends its reduced chunk into core 0's value,
        core 0 waits for them all and stores the whole."""
        if core == 0:
            return [SemWaitOp(sem=COLLECTIVE_SEMS.data, engine=SEND_ENGINE, count=self.cores - 1), store]
        at = layout.chunk_address(core)
        _, width = layout.columns(core)
        send = DmaPeerOp(
            dst=AddressAttr("sram", at), src=AddressAttr("sram", at), peer=0, rows=layout.rows,
            row_bytes=width * layout.element, src_stride=layout.row_bytes, dst_stride=layout.row_bytes,
        )  # fmt: skip
        return [send, SemSignalOp(sem=COLLECTIVE_SEMS.data, engine=SEND_ENGINE, peer=0)]

    def pieces_of(self, step: Collective) -> list[Piece]:
        """The pieces `step` is exchanged in through SRAM (its cost model's algorithm, else a
        ring); an AitcError when not even one row fits."""
        if step.kind != "all_gather" and str(step.source_type.element_type) != "f32":
            raise AitcError(
                f"shard.{step.kind} (node {step.node}) of {step.source_type}: the cores combine f32 "
                "values only; compile with --cores 1 or --shard layerwise"
            )
        pieces = self._fitting_pieces(step)
        if pieces is None:
            row_bytes = _matrix(step)[1] * _element(step)
            raise AitcError(
                f"shard.{step.kind} (node {step.node}) of {step.source_type}: not even one row of "
                f"{row_bytes} bytes fits in {self.target.sram_bytes} bytes of SRAM with its "
                "receive slots"
            )
        return pieces

    def _fitting_pieces(self, step: Collective) -> list[Piece] | None:
        """The pieces of `step` with its cost model's algorithm, else a ring; None when not even
        one row fits."""
        rows, row_elements = _matrix(step)
        element = _element(step)
        algorithm = collective_cycles(
            self.target, step.kind, rows * row_elements * element, self.cores
        ).algorithm
        return self._pieces(step.kind, algorithm, rows, row_elements, element) or self._pieces(
            step.kind, "ring", rows, row_elements, element
        )

    def _pieces(
        self, kind: str, algorithm: str, rows: int, row_elements: int, element: int
    ) -> list[Piece] | None:
        """The pieces the value is exchanged in, each fitting in SRAM with its receive slots
        (None when even the smallest piece does not fit): an all_reduce is cut into column
        ranges of its one row, a gather or scatter into groups of rows."""

        def fits(piece_rows: int, piece_columns: int) -> bool:
            layout = Layout(0, piece_rows, piece_columns, 0, self.cores, element)
            need = _aligned(layout.nbytes) + layout.slot_bytes(kind, algorithm)
            return need <= self.target.sram_bytes

        if kind == "all_reduce":
            count = 1
            while not fits(1, -(-row_elements // count)):
                count *= 2
                if -(-row_elements // count) < self.cores:
                    return None
            size = -(-row_elements // count)
            return [Piece(algorithm, s, 1, min(size, row_elements - s)) for s in range(0, row_elements, size)]
        if not fits(1, row_elements):
            return None
        per = rows
        while not fits(per, row_elements):
            per = (per + 1) // 2
        return [Piece(algorithm, r, min(per, rows - r), row_elements) for r in range(0, rows, per)]

    def module(self, name: str) -> ModuleOp:
        if self.dram.top > self.target.dram.bytes:
            raise AitcError(
                f"the {self.cores}-core program needs {self.dram.top} bytes of DRAM (shared inputs and "
                f"outputs, every core's weights and buffers); target '{self.target.name}' has "
                f"{self.target.dram.bytes}; use fewer cores or a target with more DRAM"
            )
        cores = [CoreOp(c, [*ops, EndOp()]) for c, ops in enumerate(self.streams)]
        program = ProgramOp(name, self.spec, [*self.data, *cores])
        program.kernel_estimates = self.estimates
        return ModuleOp([program])


@dataclass(frozen=True)
class Piece:
    """A part of a collective's value exchanged at once: `rows` x `columns` from row (all_gather,
    reduce_scatter) or column (all_reduce) `first`."""

    algorithm: str
    first: int
    rows: int
    columns: int

    def layout(self, cores: int, element: int = F32) -> Layout:
        value_bytes = self.rows * self.columns * element
        return Layout(0, self.rows, self.columns, _aligned(value_bytes), cores, element)


def _element(step: Collective) -> int:
    """Bytes of an element of the collective's value."""
    return element_bytes(step.source_type.element_type)


def _matrix(step: Collective) -> tuple[int, int]:
    """(rows, row elements) of the collective's whole value seen as a matrix whose column
    blocks are the cores' parts: the dims before the gather/scatter axis are the rows."""
    if step.kind == "all_reduce":
        return 1, math.prod(step.source_type.get_shape())
    assert step.axis is not None
    whole = step.result_type if step.kind == "all_gather" else step.source_type
    shape = whole.get_shape()
    return math.prod(shape[: step.axis]), math.prod(shape[step.axis :])


def _dma(
    op: type[DmaInOp] | type[DmaOutOp], dst_space: str, dst: int, src_space: str, src: int,
    rows: int, row_bytes: int, dst_stride: int = 0, src_stride: int = 0,
) -> Operation:  # fmt: skip
    return op(
        dst=AddressAttr(dst_space, dst), src=AddressAttr(src_space, src), rows=rows, row_bytes=row_bytes,
        dst_stride=dst_stride, src_stride=src_stride,
    )  # fmt: skip


def check_collectives(target: Target, steps: Steps, cores: int) -> None:
    """Raises the error `link` would for a collective of `steps` that cannot go through SRAM at
    all, before any phase is lowered (lowering every core's phases is most of a multi-core
    compile). The collectives that take a DRAM path instead are decided as `link` decides them:
    `declare` (only the outputs' names matter here, not their addresses), then
    `alias_final_parts`, `gather_in_dram` and `reduce_in_dram`."""
    linker = Linker(target, "", cores)
    for _, value in steps.outputs:
        linker.buffers[0][value] = linker.outputs[value] = 0
    linker.final_outputs = _final_outputs(steps)
    linker.alias_final_parts(steps)
    linker.gather_in_dram(steps)
    linker.reduce_in_dram(steps)
    done = linker.aliased | linker.in_dram | set(linker.reduced_in_dram)
    for step in steps.steps:
        if isinstance(step, Collective) and step.result not in done:
            linker.pieces_of(step)


def link(
    target: Target, target_spec: str, per_core: list[tuple[Steps, list[ModuleOp | None]]], name: str
) -> ModuleOp:
    """The multi-core program of every core's steps; `per_core[c]` pairs core c's steps with the
    lowered module of each step (None for a collective)."""
    cores = len(per_core)
    linker = Linker(target, target_spec, cores)
    steps0, lowered0 = per_core[0]
    output_types = _output_types(steps0, lowered0)
    linker.declare(steps0, output_types)
    linker.final_outputs = _final_outputs(steps0)
    linker.alias_final_parts(steps0)
    linker.gather_in_dram(steps0)
    linker.reduce_in_dram(steps0)
    needed, results_needed = _needed_beyond_core_0(steps0)
    for core, (steps, lowered) in enumerate(per_core):
        for index, (step, module) in enumerate(zip(steps.steps, lowered, strict=True)):
            if core and not needed[index]:
                continue  # only core 0's outputs are kept: the other cores skip work that feeds only them
            if isinstance(step, Collective):
                linker.collective(core, step, to_root=not results_needed[index])
            elif isinstance(step, Slice):
                linker.slice_input(core, step)
            else:
                assert module is not None
                linker.phase(core, step, module)
    return linker.module(name)


def _needed_beyond_core_0(steps: Steps) -> tuple[list[bool], list[bool]]:
    """Per step: whether cores other than 0 run it (a collective always: every core
    contributes; a phase or slice when a later step they run reads what it makes), and whether
    they need a collective's result (an all_reduce whose result only core 0 reads becomes a
    reduce to core 0). The function outputs are core 0's."""
    needed = [False] * len(steps.steps)
    results = [False] * len(steps.steps)
    live: set[str] = set()
    for index in reversed(range(len(steps.steps))):
        step = steps.steps[index]
        if isinstance(step, Collective):
            needed[index], results[index] = True, step.result in live
            live.add(step.source)
        elif isinstance(step, Slice):
            needed[index] = step.result in live
        elif any(name in live for name in step.outputs):
            needed[index] = True
            live |= set(step.inputs)
    return needed, results


def _final_outputs(steps: Steps) -> set[str]:
    """Results of all_gather/all_reduce that are function outputs and that no step reads."""
    read = set()
    for step in steps.steps:
        read |= set(step.inputs) if isinstance(step, Phase) else {step.source}
    outputs = {value for _, value in steps.outputs}
    return {
        step.result
        for step in steps.steps
        if isinstance(step, Collective)
        and step.kind in ("all_gather", "all_reduce")
        and step.result in outputs
        and step.result not in read
    }


def _output_types(steps: Steps, lowered: list[ModuleOp | None]) -> dict[str, TensorType]:
    """The type of every value a step produces, by name."""
    types: dict[str, TensorType] = {}
    for step, module in zip(steps.steps, lowered, strict=True):
        if isinstance(step, Collective | Slice):
            types[step.result] = step.result_type
            continue
        assert module is not None
        for op in program_of(module).body.block.ops:
            if isinstance(op, TensorOp) and op.sym is not None and isinstance(op.type, TensorType):
                types[op.sym.data] = op.type
    return types
