"""`plan-memory`: byte offsets for every buffer of a tile-level function.

    SRAM / ACC (per core, from 0)         DRAM (absolute)
    +---------+ 0                         +-----------------+ 0
    | %a  %c  |  %a and %c share bytes:   | inputs, outputs |  function arguments, in order
    +---------+  their lifetimes are      | tile.const      |  program order
    | %b      |  disjoint                 | intermediates   |  liveness reuse among these only
    +---------+ sram_peak                 +-----------------+ dram_bytes

Lifetimes and packing: `aitc.analysis.liveness`. `check_plan` re-checks a planned module
independently of how it was planned (tests use it; so can later passes).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FileLineColLoc,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NameLoc,
)
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.diagnostic import Diagnostic
from xdsl.utils.exceptions import PassFailedException

from aitc.analysis.liveness import (
    ALIGNMENT,
    Lifetime,
    Span,
    align_up,
    byte_size,
    live_span,
    overlaps,
    pack,
    program_spans,
    users,
)
from aitc.diagnostics import AitcError
from aitc.dialects import tile
from aitc.module_target import TARGET_ATTR, module_target, recorded_target
from aitc.target import Target, load_target
from aitc.types import i64_attr

OFFSET_ARG_ATTR = "tile.offset"
PEAK_ATTRS = {"sram": "tile.sram_peak", "acc": "tile.acc_peak", "dram": "tile.dram_bytes"}
FIXES = {
    "sram": "use smaller tiles, a lower multi-buffer depth, or a target with more SRAM (core.sram_bytes)",
    "acc": "use smaller output tiles (fewer accumulator rows x cols), or a target with more core.acc_bytes",
    "dram": "use a target with more DRAM (dram.bytes), or a smaller model / batch",
}
WHOLE_PROGRAM: Span = (0, 1 << 62)
"""The span of buffers that are never reused: inputs, outputs and constants."""


def _i64(value: int) -> IntegerAttr:
    return i64_attr(value)


def _memref(value: SSAValue) -> MemRefType | None:
    return value.type if isinstance(value.type, MemRefType) else None


def describe(op: Operation) -> str:
    """`kernel "fc1" (loc)` for the tile.kernel around `op`, else `function @main`."""
    node: Operation | None = op
    while node is not None and not isinstance(node, tile.KernelOp | func.FuncOp):
        node = node.parent_op()
    if isinstance(node, tile.KernelOp):
        where = f'kernel "{node.sym.data if node.sym else "?"}"'
    else:
        where = f"function @{node.sym_name.data}" if isinstance(node, func.FuncOp) else "module"
    loc = node.location if node is not None else None
    if isinstance(loc, NameLoc):
        where += f" ({loc.desc.data})"
    elif isinstance(loc, FileLineColLoc):
        where += f" ({loc.filename.data}:{loc.line.data}:{loc.column.data})"
    return where


def _alloc_lifetimes(allocs: list[tile.AllocOp], spans: dict[Operation, Span], space: str) -> list[Lifetime]:
    return [
        Lifetime(op.buffer, op, byte_size(op.buffer.type), live_span(op.buffer, spans))
        for op in allocs
        if tile.space_of(op.buffer) == space
    ]


def _fail_overflow(
    function: func.FuncOp, plans: dict[str, list[Lifetime]], spans: dict[Operation, Span], target: Target
) -> None:
    """Raises if a memory overflows, naming where: for SRAM/ACC the kernel of the first access
    to the buffer that ends highest (its alloc may sit outside any kernel), for DRAM the function."""
    for space, lifetimes in plans.items():
        capacity = {"sram": target.sram_bytes, "acc": target.acc_bytes, "dram": target.dram.bytes}[space]
        worst = max(lifetimes, key=lambda item: item.end, default=None)
        if worst is None or worst.end <= capacity:
            continue
        accesses = sorted(users(worst.value), key=lambda op: spans[op][0]) if space != "dram" else []
        _raise_overflow(function, lifetimes, worst, (accesses or [worst.op])[0], capacity, target)


def _raise_overflow(
    function: func.FuncOp,
    lifetimes: list[Lifetime],
    worst: Lifetime,
    where_op: Operation,
    capacity: int,
    target: Target,
) -> None:
    space = tile.space_of(worst.value)
    live = sum(item.size for item in lifetimes if overlaps(item.span, worst.span))
    where = "DRAM" if space == "dram" else f"{space.upper()} per core"
    message = (
        f"plan-memory: {describe(where_op)} needs {worst.end} bytes of {where} "
        f"({live} bytes live at once), target '{target.name}' has {capacity}: {FIXES[space]}"
    )
    diagnostic = Diagnostic()
    name = worst.value.name_hint or "buffer"
    diagnostic.add_message(worst.op, f"%{name} ends at byte {worst.end} of {capacity} in {space}")
    diagnostic.raise_exception(function, PassFailedException(message))


def plan_scratchpad(
    allocs: list[tile.AllocOp], spans: dict[Operation, Span], space: str, capacity: int
) -> list[Lifetime]:
    """The SRAM or ACC allocs among `allocs` (a function's, in program order), packed from 0.
    Buffers that one kernel uses share no bytes with each other, nor with those of the kernel
    before it where two neighbours fit side by side, when the kernels fit that way
    (`_beside_previous`); else no bytes within a kernel (`_kernel_wide`): sharing them would
    order the kernel's engines by its false dependences (a depthwise conv's sum placed on its
    input stage waited for every tap copy); else they share by their own lifetimes."""
    lifetimes = _alloc_lifetimes(allocs, spans, space)
    owners = [_only_kernel(item) for item in lifetimes]
    apart = _beside_previous(lifetimes, owners, spans, capacity)
    for widened in (apart, _kernel_wide(lifetimes, owners, spans)):
        if pack(widened) <= capacity:
            for own, wide in zip(lifetimes, widened, strict=True):
                own.offset = wide.offset
            return lifetimes
    pack(lifetimes)
    return lifetimes


def _only_kernel(item: Lifetime) -> tile.KernelOp | None:
    """The tile.kernel that is the only one to use the buffer of `item`, else None."""
    kernels = {tile.enclosing_kernel(user) for user in users(item.value)}
    return next(iter(kernels)) if len(kernels) == 1 else None


def _kernel_wide(
    lifetimes: list[Lifetime], owners: list[tile.KernelOp | None], spans: dict[Operation, Span]
) -> list[Lifetime]:
    """`lifetimes` with the span of each buffer that only one tile.kernel uses widened to that
    kernel's span."""
    return [
        Lifetime(item.value, item.op, item.size, spans[kernel] if kernel is not None else item.span)
        for item, kernel in zip(lifetimes, owners, strict=True)
    ]


def _beside_previous(
    lifetimes: list[Lifetime],
    owners: list[tile.KernelOp | None],
    spans: dict[Operation, Span],
    capacity: int,
) -> list[Lifetime]:
    """`_kernel_wide`, and each kernel's own buffers also live through the kernel before it
    when the two kernels' own buffers fit the memory side by side: the next kernel's first
    loads (its weights, inputs the previous kernel does not write) then go to bytes the
    previous kernel does not use, so they run while it computes and stores instead of waiting
    for it (insert-semaphores orders accesses to shared bytes). On tiny_transformer, edge: an
    FFN matmul's weight loads waited 670 cycles for the layer norm before it to store."""
    kernels = sorted({kernel for kernel in owners if kernel is not None}, key=lambda k: spans[k][0])
    own = dict.fromkeys(kernels, 0)
    for item, kernel in zip(lifetimes, owners, strict=True):
        if kernel is not None:
            own[kernel] += align_up(item.size)
    start = {kernel: spans[kernel][0] for kernel in kernels}
    for previous, kernel in itertools.pairwise(kernels):
        if own[previous] + own[kernel] <= capacity:
            start[kernel] = spans[previous][0]
    return [
        Lifetime(item.value, item.op, item.size, (start[kernel], spans[kernel][1]))
        if kernel is not None
        else Lifetime(item.value, item.op, item.size, item.span)
        for item, kernel in zip(lifetimes, owners, strict=True)
    ]


def plan_dram(
    function: func.FuncOp, allocs: list[tile.AllocOp], spans: dict[Operation, Span]
) -> list[Lifetime]:
    """Arguments, then constants, one after the other; then the intermediates (among `allocs`),
    packed."""
    fixed: list[Lifetime] = []
    for arg in function.body.block.args:
        type_ = _memref(arg)
        if type_ is not None and tile.space_of(type_) == "dram":
            fixed.append(Lifetime(arg, function, byte_size(type_), WHOLE_PROGRAM))
    consts = [op for op in spans if isinstance(op, tile.ConstOp)]  # program order
    fixed += [Lifetime(op.buffer, op, byte_size(op.buffer.type), WHOLE_PROGRAM) for op in consts]
    cursor = 0
    for item in fixed:
        item.offset, cursor = cursor, align_up(cursor + item.size)
    intermediates = _alloc_lifetimes(allocs, spans, "dram")
    pack(intermediates, base=cursor)
    return fixed + intermediates


def _write_offsets(function: func.FuncOp, lifetimes: list[Lifetime]) -> None:
    """`offset` on ops, `tile.offset` on the arguments (whose lifetime's op is the function)."""
    args = {
        item.value.index: item.offset
        for item in lifetimes
        if item.op is function and isinstance(item.value, BlockArgument)
    }
    for item in lifetimes:
        if item.op is not function:
            item.op.attributes["offset"] = _i64(item.offset)
    if not args:
        return
    count = len(function.body.block.args)
    old = function.arg_attrs.data if function.arg_attrs else (DictionaryAttr({}),) * count
    function.arg_attrs = ArrayAttr(
        [
            DictionaryAttr({**a.data, OFFSET_ARG_ATTR: _i64(args[i])}) if i in args else a
            for i, a in enumerate(old)
        ]
    )


def _peak(lifetimes: list[Lifetime], span: Span = WHOLE_PROGRAM) -> int:
    return max((item.end for item in lifetimes if overlaps(item.span, span)), default=0)


class Peaks:
    """`_peak` of fixed lifetimes for many spans: one vectorised pass over them per span."""

    def __init__(self, lifetimes: list[Lifetime]):
        self.firsts = np.array([item.span[0] for item in lifetimes], np.int64)
        self.lasts = np.array([item.span[1] for item in lifetimes], np.int64)
        self.ends = np.array([item.end for item in lifetimes], np.int64)

    def during(self, span: Span) -> int:
        live = (self.firsts <= span[1]) & (span[0] <= self.lasts)
        return int(self.ends[live].max()) if live.any() else 0


def plan_function(function: func.FuncOp, target: Target) -> None:
    """Plans all three memories, fails before writing anything if one overflows, then records
    offsets, the function's peaks and each kernel's `sram_peak` / `acc_peak` (the highest byte
    in use while it runs)."""
    spans = program_spans(function)
    allocs = [op for op in spans if isinstance(op, tile.AllocOp)]  # program order
    capacity = {"sram": target.sram_bytes, "acc": target.acc_bytes}
    plans = {space: plan_scratchpad(allocs, spans, space, capacity[space]) for space in ("sram", "acc")}
    plans["dram"] = plan_dram(function, allocs, spans)
    _fail_overflow(function, plans, spans, target)
    for space, lifetimes in plans.items():
        _write_offsets(function, lifetimes)
        function.attributes[PEAK_ATTRS[space]] = _i64(_peak(lifetimes))
    peaks = {space: Peaks(plans[space]) for space in ("sram", "acc")}
    for kernel in spans:
        if isinstance(kernel, tile.KernelOp):
            for space in ("sram", "acc"):
                kernel.attributes[f"{space}_peak"] = _i64(peaks[space].during(spans[kernel]))


# --------------------------------------------------------------------------- checking


def planned_offset(value: SSAValue) -> int | None:
    """The offset plan-memory gave a buffer (alloc, const or argument), else None; a
    tile.reshape view has none (its bytes are its source's)."""
    owner = value.owner
    if isinstance(owner, tile.AllocOp | tile.ConstOp):
        return owner.offset.value.data if owner.offset is not None else None
    if not isinstance(value, BlockArgument):
        return None
    function = value.owner.parent_op()
    if not isinstance(function, func.FuncOp) or function.arg_attrs is None:
        return None
    attr: Attribute | None = function.arg_attrs.data[value.index].data.get(OFFSET_ARG_ATTR)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def _planned_buffers(function: func.FuncOp) -> list[SSAValue]:
    args = [a for a in function.body.block.args if _memref(a) is not None]
    ops = [op.buffer for op in function.walk() if isinstance(op, tile.AllocOp | tile.ConstOp)]
    return [*args, *ops]


def _placed(function: func.FuncOp, target: Target, problems: list[str]) -> list[tuple[str, Lifetime]]:
    """(space, lifetime with its planned offset) per buffer; bad offsets go to `problems`."""
    spans = program_spans(function)
    capacity = {"sram": target.sram_bytes, "acc": target.acc_bytes, "dram": target.dram.bytes}
    placed: list[tuple[str, Lifetime]] = []
    for value in _planned_buffers(function):
        offset, space, size = planned_offset(value), tile.space_of(value), byte_size(tile.memref_of(value))
        if offset is None or offset % ALIGNMENT or offset + size > capacity[space]:
            problems.append(
                f"@{function.sym_name.data}: %{value.name_hint} in {space} has a bad offset {offset}"
            )
            continue
        span = live_span(value, spans) if isinstance(value.owner, tile.AllocOp) else WHOLE_PROGRAM
        placed.append((space, Lifetime(value, function, size, span, offset)))
    return placed


def _check_function(function: func.FuncOp, target: Target) -> list[str]:
    problems: list[str] = []
    placed = _placed(function, target, problems)
    for index, (space, a) in enumerate(placed):
        for other_space, b in placed[index + 1 :]:
            if space != other_space or not overlaps(a.span, b.span):
                continue
            if a.offset < b.end and b.offset < a.end:
                names = f"%{a.value.name_hint} and %{b.value.name_hint}"
                problems.append(
                    f"@{function.sym_name.data}: {names} are live together and share {space} bytes"
                )
    return problems + _check_peaks(function, placed)


def _check_peaks(function: func.FuncOp, placed: list[tuple[str, Lifetime]]) -> list[str]:
    problems = []
    for space, key in PEAK_ATTRS.items():
        attr = function.attributes.get(key)
        peak = attr.value.data if isinstance(attr, IntegerAttr) else -1
        needed = max((item.end for s, item in placed if s == space), default=0)
        if peak < needed:
            problems.append(f"@{function.sym_name.data}: {key} = {peak}, but {space} buffers end at {needed}")
    return problems


def check_plan(module: ModuleOp, target: str | None = None) -> list[str]:
    """Problems with a planned module (empty when the plan is sound): every buffer has an
    aligned offset inside its memory, no two buffers live at the same time share bytes,
    inputs/outputs/constants share bytes with nothing, and the recorded peaks cover them.
    The memories are `target`'s (a preset name or FILE.toml), by default the module's."""
    spec = target if target is not None else recorded_target(module)
    if spec is None:
        raise AitcError(f"check_plan: the module has no {TARGET_ATTR}; pass the target")
    resolved = load_target(spec)
    problems: list[str] = []
    for function in module.walk():
        if isinstance(function, func.FuncOp) and function.body.blocks and _planned_buffers(function):
            problems += _check_function(function, resolved)
    return problems


@dataclass(frozen=True)
class PlanMemoryPass(ModulePass):
    """Assigns byte offsets to every buffer, reusing bytes between buffers whose lifetimes are
    disjoint: between kernels (but not between neighbours whose buffers fit side by side, so
    the next kernel's loads run while the previous one finishes), within a kernel only when
    its buffers do not fit apart (two buffers sharing bytes order the engines that use them,
    although no data flows).

    Input:
      Tile-level functions (memref arguments in "dram", destination-passing style), after
      multi-buffer. Offsets already present are recomputed; functions without buffers (e.g.
      graph level) are left alone.
      The target: the module's `aitc.target`, else the `target` option (`aitc.module_target`).
    Output:
      `offset` on every tile.alloc (SRAM/ACC: bytes from the start of the core's memory; DRAM:
      absolute) and every tile.const; the arg attribute `tile.offset` on every memref argument.
      tile.reshape results alias their source and get no offset. The function gets `tile.sram_peak`,
      `tile.acc_peak` and `tile.dram_bytes` (i64), each tile.kernel `sram_peak` and `acc_peak`.
      A memory that cannot hold its buffers fails the pass, naming the kernel, the bytes needed
      and available, and a fix.
    Invariants:
      Offsets are multiples of 64 (ALIGNMENT). Two buffers share bytes only if their lifetimes
      (tile_liveness: first to last use, whole loops) are disjoint in program order, two
      buffers of one kernel only if the memory cannot hold all its buffers apart, and buffers
      of neighbouring kernels only if the two kernels' do not fit side by side; inputs,
      outputs and constants share bytes with nothing. The same input gives the same offsets.
      Byte sharing is only safe under program order: engines that run concurrently (sync) must
      order accesses to overlapping byte ranges, not only to the same buffer value.
    """

    name = "plan-memory"
    target: str | None = None
    """A preset name or FILE.toml, for a module without `aitc.target` (`aitc.module_target`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op, self.target, self.name)
        for function in op.walk():
            if isinstance(function, func.FuncOp) and function.body.blocks and _planned_buffers(function):
                plan_function(function, target)
