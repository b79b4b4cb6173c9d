"""How each kernel's time in a program differs from its estimate on its own.

The cost model estimates a kernel alone (`est_cycles`): its fill (the loads before its first
compute op), its body and its drain (what follows its last load: the last compute, then the
last stores), recorded as `est_fill_drain` with the drain's stores and the kernel's pace
with every load done. In a program a kernel's loads are issued as soon
as the kernel before it has issued its last load, unless they must wait for it: the two
kernels share SRAM or ACC bytes (insert-semaphores orders accesses to shared bytes; plan-memory
keeps neighbours apart where they fit side by side), or they read what it stores. So

    overlap = 0                 they share scratchpad bytes, or the kernel reads the previous
                                kernel's results after its fill (its compute waits for them)
            = `_ahead`          a matmul or conv whose loads need nothing of the previous
                                kernel: its dma0 loads run in that kernel's drain, its fill's
                                dma1 loads behind that kernel's stores, then its products and
                                stores (the fourth recorded number: its pace unloaded)
            = min(fill - the part of the fill that waits: the loads of the previous kernel's
                  results and those after them on their queue (queues run in order) and,
                  with them, the fill's on-chip copies,
                  previous drain - its stores (they hold the stores' DMA queue))

Those early loads take the DRAM channel, which the simulator serves first come, first served:
when the previous kernel's stores ask for it, they wait for the loads that started before them
(`delay`: the previous kernel ends that much later; the kernel adds that much less after it
when it overlaps, and as much as before when its compute waits for the previous results, as
it then ends later too). A kernel's time in the program after the kernel before it ends is
estimated as

    est_cycles - overlap (with the previous kernel's delay) + delay (for the next kernel)

(what `aitc perf` compares with the simulated time alone; the times alone add up to the
program's cycles).

Measured on edge, one core (`aitc perf`, |est - simulated time alone| / simulated per kernel,
median / p90): tiny_transformer 11.2% / 35.7% without either, 7.2% / 13.8% with the overlap,
4.5% / 8.2% with the delay too: its mask kernel, 142 cycles on its own, ran 294 while the key
projection's first 8 KiB weight load held the channel (estimated 278); the query projection
after the value projection ran 675 cycles alone, estimated 916 on its own and 755 here.
tiny_cnn 5.2% / 25.2% -> 3.4% / 9.0% with the delay of kernels whose successor reads their
results: its average pool, 672 on its own, ran 898 (estimated 906).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, StringAttr
from xdsl.ir import Operation, SSAValue

from aitc.analysis.dma import LOAD_QUEUE, STORE_QUEUE
from aitc.analysis.liveness import byte_size
from aitc.analysis.tile_footprint import planned_offset
from aitc.dialects import sync, tile
from aitc.passes.graph_to_tile.costs import FILL_DRAIN_ATTR, dma_instruction_cycles
from aitc.passes.tile_to_sync import dma_instructions
from aitc.target import Target

ACC_BASE = 1 << 48
"""Where ACC byte ranges start in `_scratch` (apart from every SRAM range)."""


@dataclass(frozen=True)
class Overlap:
    """How a kernel's time in the program differs from its estimate on its own: `overlap`
    cycles of it run while the kernel before it finishes; `delay`: the kernel after it, loading
    during its drain, holds the DRAM channel its last stores need for that long."""

    overlap: int = 0
    delay: int = 0


@dataclass(frozen=True)
class _Kernel:
    """What `_overlap` asks of one kernel: its `FILL_DRAIN_ATTR` (None: not recorded), the
    SRAM/ACC byte ranges it accesses (None: not planned), the DRAM buffers it reads and writes."""

    op: tile.KernelOp
    fill_drain: tuple[int, int, int, int | None] | None
    scratch: list[tuple[int, int]] | None
    reads: set[SSAValue]
    writes: set[SSAValue]

    @staticmethod
    def of(kernel: tile.KernelOp) -> _Kernel:
        ops = [op for op in kernel.walk() if isinstance(op, tile.WindowOp)]
        reads = {tile.base_buffer(buffer) for op in ops for buffer, _ in op.accesses()[:-1]}
        writes = {tile.base_buffer(op.accesses()[-1][0]) for op in ops}
        return _Kernel(kernel, _fill_drain(kernel), _scratch(ops), _in_dram(reads), _in_dram(writes))


def kernel_overlaps(function: func.FuncOp, target: Target) -> dict[Operation, Overlap]:
    """Per tile.kernel of `function` that records `est_cycles`: its `Overlap` with its
    neighbours in program order (module docstring), the overlap at most the estimate; none for
    the first kernel and where the fill/drain or the memory plan is missing."""
    found: dict[Operation, Overlap] = {}
    previous: _Kernel | None = None
    for op in [op for op in function.walk() if isinstance(op, tile.KernelOp)]:
        kernel = _Kernel.of(op)
        estimate = op.attributes.get("est_cycles")
        if isinstance(estimate, IntegerAttr):
            overlap, delay = _overlap(previous, kernel, target) if previous is not None else (0, 0)
            found[op] = Overlap(min(overlap, max(estimate.value.data, 0)))
            if previous is not None and previous.op in found:
                found[previous.op] = replace(found[previous.op], delay=delay)
        previous = kernel
    return found


def _overlap(previous: _Kernel, kernel: _Kernel, target: Target) -> tuple[int, int]:
    """(overlap, delay): how much of `kernel` runs while `previous` drains, counting the delay
    when it does, and how much later `previous` ends for it (`_delay`)."""
    before, after = previous.fill_drain, kernel.fill_drain
    if before is None or after is None or kernel.scratch is None or previous.scratch is None:
        return 0, 0
    if _share(kernel.scratch, previous.scratch):
        return 0, 0
    written = previous.writes
    fill, drain, stores = after[0], before[1], before[2]
    delay = _delay(kernel.op, written, target, drain - stores)
    waiting = _waiting_fill(kernel.op, written, target)
    if not waiting and kernel.reads & written:
        return 0, delay
    if not waiting and after[3] is not None and _on_the_matrix_engine(kernel.op):
        overlap = _ahead(kernel, written, target, drain + delay, after[3])
        return (overlap, delay) if overlap else (0, delay)
    overlap = max(0, min(fill - waiting, drain - stores))
    return (overlap + delay, delay) if overlap else (0, delay)


def _ahead(kernel: _Kernel, written: set[SSAValue], target: Target, window: int, unloaded: int) -> int:
    """How much of a kernel that reads nothing of the previous kernel's results runs before that
    kernel ends, `window` cycles after its last load (its drain, and the delay): its loads on
    the load queue (dma0) start then, its fill's other loads behind that kernel's stores (dma1),
    so its time after it is

        max(est - min(its dma0 loads, window), its fill's dma1 loads and copies + unloaded)

    (`unloaded`: its pace with every load done). tiny_transformer's projections: their weight
    loads run in the previous projection's drain, then the lhs behind its stores, the products
    and the stores; resnet_block's 1x1 downsample: its weights on dma1 behind the previous
    conv's stores."""
    estimate = kernel.op.attributes.get("est_cycles")
    if not isinstance(estimate, IntegerAttr):
        return 0
    loads = _prefetchable(kernel.op, written, target)
    behind = sum(
        dma_instruction_cycles(target, transfer.nbytes, transfer.dram)
        for transfer in _fill(kernel.op)
        if not transfer.dram or transfer.queue == STORE_QUEUE
    )
    alone = max(estimate.value.data - min(loads, window), behind + unloaded)
    return max(0, estimate.value.data - alone)


def _on_the_matrix_engine(kernel: tile.KernelOp) -> bool:
    """Whether the kernel is a matmul or a conv (its first op), where `_ahead` was measured; a
    gather or an elementwise kernel keeps the fill-and-drain overlap (bert's token type gather
    after the word gather: 821 simulated, 856 estimated with it, 536 with `_ahead`)."""
    names = kernel.attributes.get("op")
    return isinstance(names, StringAttr) and names.data.split(",")[0] in ("graph.matmul", "graph.conv")


def _prefetchable(kernel: tile.KernelOp, written: set[SSAValue], target: Target) -> int:
    """Cycles of the kernel's DRAM reads on the load queue (dma0), each op once, in program
    order up to the first that reads `written` (the queue runs in order)."""
    total = 0
    for transfer in map(_transfer, _dma_ops(kernel)):
        if not transfer.dram or transfer.queue != LOAD_QUEUE:
            continue
        if transfer.source in written:
            break
        total += transfer.count * dma_instruction_cycles(target, transfer.nbytes)
    return total


def _delay(kernel: tile.KernelOp, written: set[SSAValue], target: Target, before_stores: int) -> int:
    """How long the kernel's first loads on its load queue (dma0), issued as the previous
    kernel drains (`before_stores` cycles before that kernel's stores ask for the DRAM channel),
    hold the channel past that moment: the simulator serves the channel first come, first
    served, so the stores wait. The loads of its fill that read nothing of `written` and start
    before then, in order, each holding the channel for its bytes at the DRAM rate."""
    issued, channel = 0, 0
    for transfer in _fill(kernel):
        if not transfer.dram or transfer.source in written or transfer.queue != LOAD_QUEUE:
            continue
        if issued >= before_stores:
            break
        channel = max(channel, issued) + -(-transfer.nbytes // target.dram.bytes_per_cycle)
        issued += dma_instruction_cycles(target, transfer.nbytes)
    return max(0, channel - before_stores)


@dataclass(frozen=True)
class _Transfer:
    """One DMA op of a kernel: what it reads (`dram`: from DRAM), its queue, its instructions
    and their bytes each."""

    source: SSAValue
    queue: str
    nbytes: int
    dram: bool
    count: int = 1


def _dma_ops(kernel: tile.KernelOp) -> Iterator[tile.WindowOp]:
    return (op for op in kernel.walk() if isinstance(op, tile.WindowOp) and tile.engine_class(op) == "dma")


def _transfer(op: tile.WindowOp) -> _Transfer:
    """DMA op `op` as a `_Transfer`, its queue its `sync.engine` (dma0 before engines are bound)."""
    source = tile.base_buffer(op.accesses()[0][0])
    count, nbytes, _ = dma_instructions(op)
    return _Transfer(source, sync.engine_of(op) or LOAD_QUEUE, nbytes, tile.space_of(source) == "dram", count)


def _fill(kernel: tile.KernelOp) -> Iterator[_Transfer]:
    """The kernel's fill as `Cost` counts it: its DMA ops before the first compute op after a
    DRAM read (compute before any, e.g. a padding fill, does not end it)."""
    loaded = False
    for op in kernel.walk():
        if not isinstance(op, tile.WindowOp):
            continue
        if tile.engine_class(op) != "dma":
            if loaded:
                return
            continue
        transfer = _transfer(op)
        loaded = loaded or transfer.dram
        yield transfer


def _fill_drain(kernel: tile.KernelOp) -> tuple[int, int, int, int | None] | None:
    """(fill, drain, stores, unloaded) of `FILL_DRAIN_ATTR` (unloaded None when a kernel
    records three)."""
    attr = kernel.attributes.get(FILL_DRAIN_ATTR)
    if not isinstance(attr, DenseArrayBase):
        return None
    values = [int(value) for value in attr.get_values()]
    if len(values) not in (3, 4):
        return None
    return (values[0], values[1], values[2], values[3] if len(values) == 4 else None)


def _scratch(ops: list[tile.WindowOp]) -> list[tuple[int, int]] | None:
    """The SRAM and ACC byte ranges (ACC's from `ACC_BASE`) that `ops` access; None when one
    has no planned offset (before plan-memory)."""
    ranges = set()
    for op in ops:
        for buffer, _ in op.accesses():
            base = tile.base_buffer(buffer)
            space = tile.space_of(base)
            if space == "dram":
                continue
            offset = planned_offset(base)
            if offset is None:
                return None
            start = offset + (ACC_BASE if space == "acc" else 0)
            ranges.add((start, start + byte_size(tile.memref_of(base))))
    return sorted(ranges)


def _share(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> bool:
    return any(lo < other_hi and other_lo < hi for lo, hi in a for other_lo, other_hi in b)


def _in_dram(buffers: set[SSAValue]) -> set[SSAValue]:
    return {buffer for buffer in buffers if tile.space_of(buffer) == "dram"}


def _waiting_fill(kernel: tile.KernelOp, written: set[SSAValue], target: Target) -> int:
    """Cycles of the kernel's fill (`_fill`: one instruction per transfer, as `Cost` counts it)
    that wait for the kernel before it, which writes `written`: the longest DMA queue's part
    from its first read of `written` on (a queue runs in order), then, when there is one, the
    fill's on-chip copies (of what it loads)."""
    waiting: dict[str, int] = {}
    on_chip = 0
    for transfer in _fill(kernel):
        if not transfer.dram:
            on_chip += dma_instruction_cycles(target, transfer.nbytes, False)
        elif transfer.queue in waiting or transfer.source in written:
            waiting[transfer.queue] = waiting.get(transfer.queue, 0) + dma_instruction_cycles(
                target, transfer.nbytes
            )
    return max(waiting.values()) + on_chip if waiting else 0
