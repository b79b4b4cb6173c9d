"""The cost model of `convert-graph-to-tile`: pure functions of a Target and static sizes.

Two users: the planners (below, `matmul_costs.py` and `window_costs.py`) choose tile sizes by
estimating every candidate in closed form, and `builder.KernelBuilder` charges each op it emits
(times the trip count of its loops), so the `dma_bytes` / `est_cycles` recorded on a kernel are
the model applied to the IR that was actually produced.

Per instruction the costs are the simulator's (`aitc/sim/timing.py`): a DMA instruction takes
latency + bytes / min(DMA, DRAM) bandwidth on its queue (a tile.copy becomes one instruction
per point of the loops `convert-sync-to-hw` puts around it: `dma_transfers`), a matmul
latency + k + m, a vector op latency + rows * ceil(cols / lanes) * op cycles. Loads in loops
run on DMA queue dma0 and stores on dma1; on-chip copies (im2col taps, staging) are spread
over every queue (`spread`: they fill the least busy queues, as
`aitc.analysis.dma.spread_queues` places them in `convert-tile-to-sync`); the loads outside
loops are placed one by one as that pass places them (`Cost.placed`: the largest first on the
least busy queue, off dma1 once a store precedes them). A GEMM's bias row and kept lhs panel
load on dma1 beside its first weight tile: 32x64 @ 64x64 + bias on edge, 1,100 cycles
estimated, 1,104 simulated (1,420 estimated with every load on dma0).
`Cost` adds them up per engine and follows the program to find the fill (`lead`: one instance
of each load before the first compute op) and the drain (`tail`: one instance of each op after
the last load). With `multi-buffer` pipelining the loops (buffer depth >= 2) the engines
overlap and the busiest one sets the pace:

    cycles = max(loads + drain, lead + matrix + drain after it, lead + vector + stores after it,
                 lead + stores, DRAM channel) + waits

and at depth 1 every load waits for the compute before it (serial: loads + on-chip copies
split over the queues + matrix + vector + the last store; loads into tiles of their own run
ahead). `waits` are stalls the lowering
knows of (semaphore drains at loop exits, stores a block waits for, panel loads).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import Protocol, TypeVar

from aitc.analysis.dma import dma_queue, merge_dims, transfer_dims
from aitc.target import Target

F32 = 4

FILL_DRAIN_ATTR = "est_fill_drain"
"""The tile.kernel attribute holding `Cost.fill_and_drain`: array<i64: fill, drain, the drain's
stores>."""


@dataclass(frozen=True)
class Budget:
    """What one kernel may use: `sram` is half of the target's SRAM (one copy of the working
    set; the other half is left for double buffering by `multi-buffer`), `acc` half of ACC (a
    conv's accumulator may take all of it, single-buffered: `single_acc`).
    `depth` is the buffer depth multi-buffer will use (the estimates depend on it; the half
    left for the copies holds depth 2). A matmul counts its copies itself (`sram_need`): its
    block summed in SRAM is too large to be double-buffered and may take more than half."""

    target: Target
    sram: int
    acc: int
    depth: int = 2

    @staticmethod
    def of(target: Target, depth: int = 2) -> Budget:
        return Budget(target, target.sram_bytes // 2, target.acc_bytes // 2, depth)

    def holds_acc(self, nbytes: int) -> bool:
        """Whether a kernel's accumulators of `nbytes` fit ACC: within `acc`, or up to the half
        left for their copy (`single_acc`)."""
        return nbytes <= 2 * self.acc

    def single_acc(self, nbytes: int) -> bool:
        """Whether accumulators of `nbytes` take more than `acc`, so multi-buffer keeps one copy
        and each output tile's products wait for the previous tile's epilogue to read it
        (`Cost.reading_acc`). A 1x1 conv of 1024 channels into 256 on 14 x 14, channels first,
        then takes its 196 positions in one block (128 x 196 f32, 98 KiB) and streams its
        weights once instead of once per block of 112: 3.9 MB -> 2.9 MB of DRAM traffic, 114k
        -> 98k cycles on edge."""
        return nbytes > self.acc

    def acc_note(self, nbytes: int) -> str:
        """The clause a kernel's `reason` adds when its accumulators are single (`single_acc`)."""
        if not self.single_acc(nbytes):
            return ""
        return (
            f"; accumulators of {nbytes / 1024:.0f} KiB, over half of ACC, so not double-buffered (each "
            "tile's products wait for the previous tile's epilogue to read them)"
        )

    @property
    def rows(self) -> int:
        """Matrix-engine contraction lanes: k of one tile.matmul."""
        return self.target.matrix.rows

    @property
    def cols(self) -> int:
        """Matrix-engine output lanes: n of one tile.matmul."""
        return self.target.matrix.cols


def split(extent: int, tile: int, unroll: int = 0) -> list[tuple[int, int]]:
    """`extent` cut into tiles of `tile`: [(size, count)] for the full tiles and the remainder,
    or one entry per tile when there are at most `unroll` (`KernelBuilder.tiles`)."""
    if extent <= 0:
        return []
    if -(-extent // tile) <= unroll:
        return [(min(tile, extent - offset), 1) for offset in range(0, extent, tile)]
    full, rest = divmod(extent, tile)
    return [(size, count) for size, count in ((tile, full), (rest, 1)) if size and count]


def balanced(extent: int, limit: int) -> int:
    """The smallest tile <= limit that covers `extent` in as few tiles as `limit` does (so
    16 rows with limit 13 become 2 tiles of 8, not 13 + 3)."""
    limit = max(1, min(limit, extent))
    return -(-extent // -(-extent // limit))


def dram_bandwidth(target: Target) -> int:
    return min(target.dma.bytes_per_cycle, target.dram.bytes_per_cycle)


def dma_instruction_cycles(target: Target, nbytes: int, dram: bool = True) -> int:
    """One DMA as the simulator times it on its queue: latency + transfer at the path's rate."""
    bandwidth = dram_bandwidth(target) if dram else target.dma.bytes_per_cycle
    return target.dma.latency + -(-nbytes // bandwidth)


def add_kernel_cycles(target: Target, nbytes: int) -> int:
    """An elementwise add of two DRAM tensors of `nbytes` each as its own kernel: both loads on
    its load queue (what a residual add fused into its producer saves)."""
    return 2 * dma_instruction_cycles(target, nbytes)


def matmul_cycles(target: Target, m: int, k: int) -> int:
    """One tile.matmul: latency + k (weights shift in) + m (rows stream through)."""
    return target.matrix.latency + k + m


def rotated_trip(cycles: Sequence[int], queues: int, depth: int, compute: int, shared: int = 0) -> int:
    """The pace of a loop's trips whose tiles (`cycles` on a queue each, largest first) spread
    over the queues copy by copy of the body multi-buffer unrolled by `depth` (each copy's
    tiles on the queues it has loaded least, then the body's: `spread_queues`): at least each
    queue's share of a trip, and the loads of one trip (its busier queue) after the `compute`
    of the trip `depth` before it, which frees their buffers, spread over `depth` trips. One
    large tile a trip (ResNet-50's fc, 1 x 2048 x 1000, K steps of 32: a 4,064-cycle B tile and
    1,632 cycles of matmuls and adds) alternates queues, so a trip takes 2,848, not 4,064
    (simulated: 2,961 with the DRAM channel's contention). `shared`: at least what the loads
    of one trip take on the DRAM channel they share (ResNet-50's layer4 3x3 convs: a weight
    tile in two parts side by side, 3,740 cycles on the busier queue alone, about 4,300 beside
    the other). At depth 1: the trip's loads (`Cost` charges the serial pace there)."""
    depth = max(depth, 1)
    body = [0] * queues
    trip = 0
    for _ in range(depth):
        copy = [0] * queues
        for c in cycles:
            queue = min(range(queues), key=lambda q: (copy[q], body[q], q))
            copy[queue] += c
            body[queue] += c
        trip = max(trip, max(copy), shared)
    if depth == 1:
        return trip
    return max(-(-max(body) // depth), -(-(compute + trip) // depth))


def vector_cycles(target: Target, op: str, rows: int, cols: int) -> int:
    vector = target.vector
    return vector.latency + rows * -(-cols // vector.lanes) * vector.cycles_per_group(op)


def contiguous_strides(shape: Sequence[int]) -> list[int]:
    """Row-major element strides of a buffer (every tile buffer and view is dense)."""
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return strides[::-1]


def dma_transfers(
    box: Sequence[int], src: Sequence[int], dst: Sequence[int], element: int, transpose: bool = False
) -> tuple[int, int]:
    """(instructions, bytes each) of one tile.copy (or tile.transpose) of `box` from a buffer
    of shape `src` to one of shape `dst`, as convert-sync-to-hw selects it: inner dims that are
    contiguous on both sides fold into the row, outer dims that nest exactly merge, the
    longest remaining dim is the instruction's rows and every other one a loop around it
    (`aitc.analysis.dma`, which convert-sync-to-hw shares; a transpose swaps the last two dst
    strides and loops over the shorter side)."""
    return _transfers(tuple(box), tuple(src), tuple(dst), element, transpose)


@cache
def _transfers(
    box: tuple[int, ...], src: tuple[int, ...], dst: tuple[int, ...], element: int, transpose: bool
) -> tuple[int, int]:
    dims = transfer_dims(box, contiguous_strides(src), contiguous_strides(dst), element, transpose)
    row_bytes, remaining = merge_dims(dims, element)
    if not remaining:
        return 1, row_bytes
    return math.prod(d.count for d in remaining[:-1]), remaining[-1].count * row_bytes


LIGHT_STORES = 8
"""A kernel whose stores keep dma1 busy for less than 1/LIGHT_STORES of its other DMA ops'
time lets its reads queue behind them: the few cycles a read waits there cost less than the
second queue gains (a GEMM streaming its weights with a small output: ResNet-50's fc, 261,830
-> 208,543 cycles on edge). convert-tile-to-sync binds so, `Cost.placed` charges so."""


COPY_BOUND = 2
"""On-chip copies of loaded data for the compute go on the stores' queue (dma1) too only when a
loop's loads and copies (L) take more than COPY_BOUND times its compute (C): on dma1 they wait
behind the previous trip's store, i.e. for its compute, so a trip takes about C + L / 2 spread
against max(C, L) on dma0 alone, and spreading pays when L > 2 C (convert-tile-to-sync binds
them so, `Cost.filled` charges them so). ResNet's stem with a merged tap row: L = 5.5k, C = 6.1k
cycles a block, 311k cycles spread against 234k on dma0; its all-taps patch: L = 4.1k, C = 1.9k,
320k against 501k."""


def _filled(busy: dict[str, float], copies: float) -> dict[str, float]:
    """`busy` (cycles per DMA queue) once `copies` cycles have raised its least busy queues to
    a common level."""
    if not copies:
        return busy
    heights, left = sorted(busy.values()), copies
    level = heights[0]
    for lowest in range(1, len(heights) + 1):  # raise the `lowest` queues to the next one
        ceiling = heights[lowest] if lowest < len(heights) else math.inf
        if (ceiling - level) * lowest >= left:
            level += left / lowest
            break
        left -= (ceiling - level) * lowest
        level = ceiling
    return {queue: max(b, level) for queue, b in busy.items()}


@dataclass(frozen=True)
class StraightRead:
    """A DRAM read outside any loop (`Cost.straight`): `cycles` on its queue, `lead` of them
    before the first compute op, `ahead` as `Cost.add_dma` says; `behind`: after the kernel's
    first store, so not on the stores' queue (unless the stores are light)."""

    cycles: float
    lead: int
    ahead: bool
    behind: bool
    apart: int = -1
    """>= 0: a part of one load split over the queues (the parts of one number go on different
    queues, `linear.panel_parts`)."""


@dataclass(frozen=True)
class Placed:
    """A kernel's DMA queues once its straight reads are placed (`Cost.placed`): busy cycles
    per queue, the fill (the longest queue's share of it) and the load cycles that run ahead."""

    queues: dict[str, float]
    lead: float
    ahead: float
    loads_lead: float
    """The fill's loads on dma0 alone (they run one after the other)."""
    queued_lead: float
    """The fill with its independent copies after the loads on dma0 (`Cost.cycles`, pipelined)."""


@dataclass
class Cost:
    """Engine time and DRAM traffic of a kernel, accumulated op by op (module docstring).

    `queues`: busy cycles per DMA queue of the loads and stores; `spread`: busy cycles of the
    on-chip copies, which fill the least busy of the target's `spread_over` queues (at depth 1
    they run between the loads and the compute, split over the queues); `fed`: the part of
    `spread` that copies loaded data for the compute (`filled`: a channels-last conv's merged
    patch; a channels-first conv's im2col copies are still charged as `spread`, which kept
    ResNet-50's layer4 3x3 convs within 2% of the simulator where `fed` put them 9% over);
    `lead`: one instance of each load before the first compute op; `drain`: per engine kind
    ("matrix", "vector", "store"), one instance of each op after the last load or on-chip
    copy; `depth`: the buffer depth (1 = serial); `overlap`: the
    matrix and vector engines take turns on several tiles, so they overlap even at depth 1;
    `ahead`: load cycles that need not wait for earlier compute at depth 1 (`add_dma`);
    `staged`: a copy through one SRAM stage, whose next load waits for its store at depth 1;
    `straight`: the DRAM reads outside any loop, which convert-tile-to-sync places one by one
    (`placed`), before the kernel's first store on any queue; `stored`: a store was charged;
    `lead_copies`: on-chip copies of the fill that read nothing the kernel loads (a stage's
    padding from tiles of zeros), which run on the queues beside its loads; `lead_fed`: the
    other on-chip copies of the fill (of data it loads: im2col taps), after its loads, over
    every queue (at depth 1; the pipelined estimate keeps both after the loads on dma0,
    `Placed.queued_lead`); `places_straight`: whether straight reads are placed at all (False:
    on dma0 like the others, `window_costs.places_straight`); `vector_ahead`: one instance of
    the vector ops that read nothing the kernel loads (a broadcast constant's fill), which run
    while the first loads do; `drain_ahead`: those of the drain, which run while the last loads
    do; `beside_taps`: vector work of a depthwise block's taps that runs while its later taps
    are copied (`window_costs.taps_beside`), taken off the serial pace at depth 1 (`drain_beside`:
    the last block's, off the drain); `taps_overlap`:
    whether the kernel may have such work (its `floor` then allows for it); `store_busy`: the
    stores' cycles (the stores' queue also takes loads and copies); `burst`: the on-chip copies
    in a row so far (copies a run, the longest one's cycles, runs), which go round the queues a
    round at a time, and `partial_rounds`: what the last rounds of the finished ones left idle
    (`rounds_idle`): mobilenet_block's 9 tap copies take 5 rounds of 2 queues, not 4.5."""

    depth: int = 2
    queues: dict[str, float] = field(default_factory=dict)
    spread: float = 0
    fed: float = 0
    spread_over: int = 1
    dram_bytes: int = 0
    dram_cycles: int = 0
    matrix: int = 0
    vector: int = 0
    transfers: int = 0
    lead: int = 0
    drain: dict[str, int] = field(default_factory=dict)
    waits: int = 0
    started: bool = False
    overlap: bool = False
    ahead: int = 0
    staged: bool = False
    straight: list[StraightRead] = field(default_factory=list)
    stored: bool = False
    lead_copies: int = 0
    lead_fed: int = 0
    places_straight: bool = True
    vector_ahead: int = 0
    ahead_closed: bool = False
    drain_ahead: int = 0
    beside_taps: int = 0
    taps_overlap: bool = False
    drain_beside: int = 0
    frame: list[tuple[int, int, int]] | None = None
    store_busy: float = 0
    burst: tuple[int, int, int] = (0, 0, 0)
    partial_rounds: float = 0

    def add_dma(
        self,
        target: Target,
        nbytes: int,
        src: str,
        dst: str,
        times: int = 1,
        ahead: bool = False,
        ops: int = 1,
        feeds: bool = False,
        looped: bool | None = None,
        independent: bool = False,
        spread: bool = False,
        apart: int = -1,
    ) -> None:
        """`times` DMA instructions of `nbytes` each from space `src` to `dst`, for each of `ops`
        identical ops in a row (each is one op of the lead or drain); `ahead`: loads into tiles
        that only their own step uses, which do not wait for earlier compute even at buffer
        depth 1 (they run ahead of it); `feeds`: an on-chip copy of data a DRAM read of the
        kernel loaded (convert-tile-to-sync keeps it off the stores' queue, `filled`); `looped`:
        the op is inside a loop (default: `times` > 1; `times` also counts the instructions
        of one op). A DRAM read outside loops is `straight`;
        `independent`: an on-chip copy that reads nothing the kernel loads (`lead_copies`);
        `spread`: a DRAM read in a loop that waits for its loads, which convert-tile-to-sync
        spreads evenly over the queues (`tile_to_sync._bound_by_loads`); `apart`: a straight
        read that is part `apart` of one load split over the queues (`StraightRead.apart`)."""
        dram = "dram" in (src, dst)
        once = dma_instruction_cycles(target, nbytes, dram)
        count = times * ops
        self._in_burst(not dram, ops, once, times)
        looped = times > 1 if looped is None else looped
        straight = src == "dram" and dst != "dram" and not looped and self.places_straight
        straight = straight and target.dma.queues > 1
        if self.frame is not None and src == "dram" and dst != "dram":
            self.frame.append((once, count, nbytes))
        if straight:
            lead = 0 if self.started else times * once
            self.straight += [StraightRead(times * once, lead, ahead, self.stored, apart)] * ops
        elif dram and spread and dst != "dram":
            queues = max(target.dma.queues, 1)
            for q in range(queues):
                self.queues[f"dma{q}"] = self.queues.get(f"dma{q}", 0) + count * once / queues
        elif dram:
            queue = dma_queue(src, dst, target.dma.queues)
            self.queues[queue] = self.queues.get(queue, 0) + count * once
        else:
            self.spread += count * once
            self.fed += count * once if feeds else 0
            self.spread_over = max(1, target.dma.queues)
        self.ahead += count * once if ahead and not straight else 0
        self.transfers += count
        if dram:
            self.dram_bytes += count * nbytes
            self.dram_cycles += count * -(-nbytes // target.dram.bytes_per_cycle)
        if dst == "dram":
            self.stored = True
            self.store_busy += count * once
            self._drain("store", ops * once)
            return
        if not self.started and not dram:
            self.lead_copies += ops * once if independent else 0
            self.lead_fed += 0 if independent else ops * once
        elif not self.started and not straight:
            self.lead += ops * once
        self.drain, self.drain_ahead, self.drain_beside = {}, 0, 0

    def add_matrix(self, once: int, times: int = 1) -> None:
        """A matrix op of `once` cycles, run `times` times."""
        self.matrix += times * once
        self.ahead_closed = True
        self._compute("matrix", once)

    def add_vector(self, once: int, times: int = 1, ahead: bool = False) -> None:
        """A vector op of `once` cycles, run `times` times; `ahead`: it reads nothing the kernel
        loads, so its first instance runs during the first loads (`vector_ahead`)."""
        self.vector += times * once
        if ahead and not self.ahead_closed:  # only the kernel's first such ops
            self.vector_ahead += once
        self.drain_ahead += once if ahead else 0
        self.ahead_closed = self.ahead_closed or not ahead
        self._compute("vector", once)

    def add_beside_taps(self, once: int, times: int = 1) -> None:
        """`once` cycles of vector work, `times` times, that run beside the copies of later taps
        (`drain_beside`: the last block's, of the drain)."""
        self.beside_taps += times * once
        self.drain_beside = once

    def add_wait(self, once: int, times: int = 1, queue: str | None = None) -> None:
        """Cycles the pipeline stalls (`queue`: cycles that DMA queue idles, waiting for an
        engine, before it can go on), e.g. at the exit of a loop whose semaphores are drained."""
        if queue is None:
            self.waits += times * once
        else:
            self.queues[queue] = self.queues.get(queue, 0) + times * once

    @contextmanager
    def reading_acc(self, single: bool) -> Iterator[None]:
        """Charges the vector ops added inside (an output tile's epilogue ops that read ACC) a
        second time, as a stall, when the accumulator is `single` (`Budget.single_acc`): the
        next tile's products wait for them."""
        before = self.vector
        yield
        if single:
            self.add_wait(self.vector - before)

    @contextmanager
    def loads_of_own_loop(self, target: Target, trips: int, runs: int, bubble: int) -> Iterator[None]:
        """Charges the DRAM reads added inside (the body of a loop of `trips` trips that moves
        data alone and stores nothing, the loop itself run `runs` times, e.g. a conv's
        channel-chunk loop; one trip is no loop: nothing changes) as convert-tile-to-sync binds
        them: over every queue when they keep
        dma0 busier than the loop's matrix or vector ops keep their engine
        (`tile_to_sync._bound_by_loads`), each unrolled copy of the body over the queues; plus
        what the loop's pace (`rotated_trip`) exceeds the busier engine, queue share or DRAM
        time of a trip by, and `bubble` cycles each time the loop starts (its first trips'
        loads on the stores' queue wait behind the store before the loop)."""
        loads, matrix, vector, outer = self.loads, self.matrix, self.vector, self.frame
        self.frame = []
        try:
            yield
        finally:
            reads, self.frame = self.frame, outer
        added = self.loads - loads
        compute = max(self.matrix - matrix, self.vector - vector)
        queues = max(target.dma.queues, 1)
        if queues < 2 or added <= compute or trips < 2 or runs < 1:
            return
        trips *= runs  # the body's runs in all
        for q in range(queues):
            self.queues[f"dma{q}"] = self.queues.get(f"dma{q}", 0) + added / queues - added * (q == 0)
        tiles = sorted((once for once, count, _ in reads for _ in range(count // trips)), reverse=True)
        dram = sum(nbytes * count for _, count, nbytes in reads) / trips / target.dram.bytes_per_cycle
        # a trip's loads side by side on the queues share the DRAM channel: their transfers
        # take its rate, their fixed latencies overlap across the queues
        latencies = target.dma.latency * sum(count for _, count, _ in reads) / trips
        shared = round(latencies / queues + dram)
        per_trip = max(compute / trips, added / trips / queues, dram)
        pace = max(rotated_trip(tiles, queues, self.depth, round(compute / trips), shared), dram)
        self.add_wait(round(max(0.0, pace - per_trip)), trips)
        self.add_wait(bubble, runs)

    def _in_burst(self, on_chip: bool, ops: int, once: int, times: int) -> None:
        """Counts `ops` on-chip copies of `once` cycles, run `times` times, into the copies in a
        row (`burst`); anything else, or copies run another number of times, ends it."""
        if not on_chip or times != self.burst[2]:
            self._end_burst()
        if on_chip:
            self.burst = (self.burst[0] + ops, max(self.burst[1], once), times)

    def _end_burst(self) -> None:
        """Charges the idle queues of the last round of the on-chip copies in a row just added."""
        self.partial_rounds, self.burst = self.rounds_idle, (0, 0, 0)

    @property
    def rounds_idle(self) -> float:
        """`partial_rounds` with the copies in a row still open."""
        copies, once, times = self.burst
        return self.partial_rounds + times * (-copies % self.spread_over) * once / self.spread_over

    def _compute(self, kind: str, once: int) -> None:
        """A compute op ends the fill once something was loaded (a fill of a block before its
        first load does not wait for it)."""
        self._end_burst()
        self.started = self.started or self.lead > 0
        self._drain(kind, once)

    def _drain(self, kind: str, once: int) -> None:
        self.drain[kind] = self.drain.get(kind, 0) + once

    @property
    def loads(self) -> float:
        """Busy cycles of the queue the loads run on."""
        return self.queues.get("dma0", 0)

    @property
    def stores(self) -> float:
        return self.queues.get("dma1", 0)

    def placed(self, target: Target) -> Placed:
        """The queues with the straight reads placed as convert-tile-to-sync places them
        (`aitc.analysis.dma.spread_queues`): the largest first (ties in program order), each on
        the least busy queue it may use (one behind a store not on dma1, unless the stores are
        light: `LIGHT_STORES`; the parts of one split load each on another queue), the loads
        in loops and the stores already counted. The fill is
        the longest queue's part of it (the other loads of the fill run on dma0, its
        independent copies (`lead_copies`) on the queues least busy in it, then its other
        copies (`lead_fed`) over every queue)."""
        queues = target.dma.queues
        busy = {f"dma{q}": self.queues.get(f"dma{q}", 0.0) for q in range(max(queues, 1))}
        busy.update(self.queues)
        lead = dict.fromkeys(busy, 0.0) | {"dma0": float(self.lead)}  # loads in loops: dma0
        ahead = float(self.ahead)
        stores = self.queues.get("dma1", 0)
        light = LIGHT_STORES * stores < sum(busy.values()) - stores + self.spread + self.work_of_straight()
        used: dict[int, set[str]] = {}  # the queues of each split load's parts so far
        for read in sorted(self.straight, key=lambda r: -r.cycles):
            allowed = [q for q in busy if not (read.behind and not light and q == "dma1")]
            allowed = [q for q in allowed if q not in used.get(read.apart, ())] or allowed
            queue = min(allowed, key=lambda q: (busy[q], int(q[3:])))
            if read.apart >= 0:
                used.setdefault(read.apart, set()).add(queue)
            busy[queue] += read.cycles
            lead[queue] += read.lead
            ahead += read.cycles if read.ahead and queue == "dma0" else 0
        queued = max(lead["dma0"] + self.lead_copies + self.lead_fed, *lead.values())
        fed = self.lead_fed / max(queues, 1)
        spread = max(_filled(lead, self.lead_copies).values()) + fed
        return Placed(busy, spread, ahead, lead["dma0"] + fed, queued)

    def work_of_straight(self) -> float:
        """Busy cycles of the straight reads."""
        return sum(read.cycles for read in self.straight)

    def filled(self, placed: Placed) -> dict[str, float]:
        """Busy cycles per DMA queue once the on-chip copies (`spread`) have raised the least
        busy of the `placed` queues to a common level; those that copy loaded data for the
        compute (`fed`) first, over the queues other than the stores' (dma1) unless the loads
        and copies take more than twice the compute, as convert-tile-to-sync binds them
        (`tile_to_sync._bound_by_loads`, on_chip)."""
        busy = dict(placed.queues)
        feeding = sum(b for queue, b in busy.items() if queue != "dma1") + self.spread
        if self.fed and len(busy) > 1 and feeding <= COPY_BOUND * max(self.matrix, self.vector):
            loads = {queue: b for queue, b in busy.items() if queue != "dma1"}
            busy |= _filled(loads, self.fed)
            return _filled(busy, self.spread - self.fed)
        return _filled(busy, self.spread)

    def cycles(self, target: Target) -> int:
        drain = self.drain
        after_matrix = self._after_matrix
        placed = self.placed(target)
        lead = placed.queued_lead
        queues = self.filled(placed)
        feeding = max((busy for queue, busy in queues.items() if queue != "dma1"), default=0)
        stores = queues.get("dma1", 0)
        if self.depth < 2:
            compute = max(self.matrix, self.vector) if self.overlap else self.matrix + self.vector
            loads = placed.queues.get("dma0", 0)
            copies = self.spread / self.spread_over + self.rounds_idle
            serial = loads - placed.ahead + copies + compute - self._beside(placed)
            serial -= self.beside_taps + min(self.vector_ahead, loads - placed.ahead)
            serial += self.stores - drain.get("store", 0) if self.staged else 0
            paces = (
                serial + drain.get("store", 0),
                self.stores + placed.lead,
                feeding + sum(drain.values()) - self.drain_beside,
                self.dram_cycles,
            )
            return math.ceil(max(paces) + self.waits)
        paces = (
            feeding + sum(drain.values()) - min(self.drain_ahead, feeding),
            lead + self.matrix + after_matrix - min(self.drain_ahead, lead + self.matrix),
            max(lead, self.vector_ahead) + self.vector - self.vector_ahead + drain.get("store", 0),
            lead + max(stores - self.store_busy, self._first_tile) + self.store_busy,
            self.dram_cycles,
        )
        return math.ceil(max(paces) + self.waits)

    def fill_and_drain(self, target: Target, total: int) -> list[int]:
        """[fill, drain, the drain's stores, unloaded] as `cycles` counts them, at most `total`
        (its value): the fill before the first compute op, the drain after the last load (one
        instance of each op: matrix, then vector, then the stores), and the kernel's pace with
        every load already done (its matrix, vector and store chains). What of the kernel may
        overlap the kernel before it (its fill, while that one drains) and the one after it
        (`FILL_DRAIN_ATTR`, read by `convert-sync-to-hw`'s `overlap`)."""
        drain = sum(self.drain.values())
        stores = self.drain.get("store", 0)
        unloaded = max(
            self.matrix + self._after_matrix, self.vector + stores, self._first_tile + self.store_busy
        )
        fill_drain = (self.placed(target).queued_lead, drain, stores, unloaded)
        return [min(math.ceil(value), total) for value in fill_drain]

    @property
    def _after_matrix(self) -> int:
        """The drain's work after its last product: its vector ops, then its stores."""
        return self.drain.get("vector", 0) + self.drain.get("store", 0)

    @property
    def _first_tile(self) -> int:
        """What the first store waits for: its tile's products and epilogue (the drain's)."""
        return self.drain.get("matrix", 0) + self.drain.get("vector", 0) - self.drain_ahead

    def _beside(self, placed: Placed) -> float:
        """What runs side by side in the fill at depth 1: its dma0 loads and its copies (split
        over the queues), one after the other in `serial`, take the fill over every queue."""
        one_by_one = placed.loads_lead + self.lead_copies / self.spread_over
        return max(0.0, one_by_one - placed.lead)

    def floor(self, matrix_to_come: int = 0) -> int:
        """A lower bound of `cycles` once `matrix_to_come` more matrix cycles are added, that
        never decreases as ops are added, so a tile planner can stop estimating a candidate once
        it exceeds the best one found: at depth 1 the loads and the compute run one after the
        other (`serial`); deeper, each engine's busy time and the DRAM channel's."""
        matrix = self.matrix + matrix_to_come
        if self.depth < 2:
            compute = max(matrix, self.vector) if self.overlap else matrix + self.vector
            # at most `_beside`, and the ahead fills taken off beside the loads
            beside = self.lead_copies / self.spread_over + self.vector_ahead
            copies = self.spread / self.spread_over
            if self.taps_overlap:  # beside_taps, still to come, is at most one of the two
                return math.ceil(self.loads - self.ahead + max(copies, compute) - beside)
            return math.ceil(self.loads - self.ahead + copies + compute - beside)
        return max(matrix, self.vector, self.dram_cycles)

    def work(self) -> int:
        """Busy time of all engines together (fewer, larger instructions win ties)."""
        dma = sum(self.queues.values()) + self.work_of_straight() + self.spread
        return round(dma + self.matrix + self.vector)


# --------------------------------------------------------------------------- row kernels


@dataclass(frozen=True)
class RowFootprint:
    """SRAM bytes of a row-tiled kernel as a function of its tile (tr rows x tc cols):
    `per_element` * tr * tc (full tiles) + `per_row` * tr (column vectors) + `per_col` * tc
    (row vectors) + `fixed` (scalars)."""

    per_element: int
    per_row: int = 0
    per_col: int = 0
    fixed: int = 0

    def bytes(self, tr: int, tc: int) -> int:
        return self.per_element * tr * tc + self.per_row * tr + self.per_col * tc + self.fixed


HEIGHT_CANDIDATES = 6
"""How many tile heights `tile_heights` estimates at most: the most rows that fit, then halved."""


def tile_heights(
    rows: int, most: int, row_bytes: int, target: Target, estimate: Callable[[int], int]
) -> dict[int, int]:
    """`estimate` (cycles) of each tile height tried for a kernel over `rows` rows in tiles of
    whole rows: the most that fit, then halved (balanced over the rows), at most
    `HEIGHT_CANDIDATES`, stopping where a tile's widest transfer (`row_bytes` a row) would take
    less time than the DMA latency (there the simulator adds per-tile waits the estimate leaves
    out: bert's 32 x 16 mask kernel, 472 estimated and 468 simulated in one tile, 432 and 513 in
    two). With few tall tiles the first load and the last store run alone, with many short ones
    every transfer's latency and every op's start are paid more often."""
    estimates: dict[int, int] = {}
    tr = most
    while len(estimates) < HEIGHT_CANDIDATES and tr not in estimates:
        estimates[tr] = estimate(tr)
        tr = balanced(rows, max(1, tr // 2))
        if tr * row_bytes < target.dma.latency * target.dma.bytes_per_cycle:
            break  # shorter tiles' transfers would take less time than their latency
    return estimates


def fastest_height(estimates: dict[int, int]) -> int:
    """The tile height of the fewest estimated cycles in `tile_heights`' result, the taller of equals."""
    return min(estimates, key=lambda height: (estimates[height], -height))


def plan_rows(
    rows: int, cols: int, footprint: RowFootprint, budget: int, whole_rows: bool
) -> tuple[int, int] | None:
    """(tr, tc) for a rows x cols iteration space: whole rows when they fit (always when
    `whole_rows`, e.g. a softmax), then as many rows as fit, balanced; None if nothing fits."""
    tc = cols
    if footprint.bytes(1, cols) > budget:
        if whole_rows:
            return None
        spare = budget - footprint.per_row - footprint.fixed
        tc = spare // (footprint.per_element + footprint.per_col) if spare > 0 else 0
        if tc < 1:
            return None
        tc = balanced(cols, tc)
    per_row = footprint.per_element * tc + footprint.per_row
    spare = budget - footprint.per_col * tc - footprint.fixed
    tr = balanced(rows, max(1, spare // per_row)) if per_row else rows
    return tr, tc


def plan_box(
    shape: tuple[int, ...], tileable: tuple[bool, ...], elem: int, budget: int
) -> tuple[int, ...] | None:
    """Tile sizes for copying an n-d box through SRAM: innermost tileable dims whole first,
    then as much of the next dim as fits; untileable dims (strided) get 1. None if a single
    element does not fit."""
    if elem > budget:
        return None
    sizes = [1] * len(shape)
    room = budget // elem
    for dim in reversed(range(len(shape))):
        if not tileable[dim]:
            continue
        take = min(shape[dim], room)
        sizes[dim] = balanced(shape[dim], take)
        room //= max(sizes[dim], 1)
        if take < shape[dim]:
            break
    return tuple(sizes)


# --------------------------------------------------------------------------- plan search


class Plan(Protocol):
    """What the tile searches compare: estimated cycles first, then the rest of `key`."""

    @property
    def cycles(self) -> int: ...

    def key(self) -> tuple[int, ...]: ...


P = TypeVar("P", bound=Plan)
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def cheapest_few(
    floors: Sequence[int], estimate: Callable[[int, int | None], P | None], count: int
) -> list[P]:
    """The `count` plans with the least `key()` among candidates 0 .. len(floors) - 1, best
    first, ties to the lowest index, by branch and bound. `floors[i]` is a lower bound of
    candidate i's cycles: candidates are visited by it, and the search stops once it exceeds
    the count-th best cycles found (no later candidate can enter). `estimate(i, bound)` is
    candidate i's plan, or None when it cannot beat `bound` cycles (None: fewer than `count`
    plans yet). Finds what ranking every candidate's estimate would."""
    best: list[tuple[tuple[int, ...], P]] = []
    for index in sorted(range(len(floors)), key=lambda i: (floors[i], i)):
        bound = best[-1][1].cycles if len(best) == count else None
        if bound is not None and floors[index] > bound:
            break
        plan = estimate(index, bound)
        if plan is None:
            continue
        key = (*plan.key(), index)
        if bound is None or key < best[-1][0]:
            best = sorted([*best, (key, plan)], key=lambda entry: entry[0])[:count]
    return [plan for _, plan in best]


MEMO_LIMIT = 4096
"""Entries a planner's memo holds before `remembered` empties it."""


def remembered(memo: dict[K, V], key: K, compute: Callable[[], V]) -> V:
    """`memo[key]`, computed once: the planners are pure functions of their problem and budget,
    and a model repeats a few shapes (the memo is emptied at `MEMO_LIMIT` entries)."""
    if key not in memo:
        if len(memo) >= MEMO_LIMIT:
            memo.clear()
        memo[key] = compute()
    return memo[key]
