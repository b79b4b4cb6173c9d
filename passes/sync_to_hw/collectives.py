"""Collectives as hw instruction streams: peer DMA between cores' SRAM, cross-core semaphores.

Every core holds the collective's value at the same SRAM address (SPMD: one layout for all
cores): `rows` x `row_elements` f32, row-major (a flat vector is one row). Chunk j, one per
core, is columns [start_j, start_j + width_j) of every row (widths differ by at most one when
the cores do not divide `row_elements`), so an all-gather of [B, S/p, H] parts along dim 1
puts core c's part at columns [c*S/p*H, (c+1)*S/p*H) of each of the B rows of a [B, S*H] value.

    value, row stride row_elements*4 B         receive slot, dense (row stride width_j*4 B)
    | chunk 0 | chunk 1 | chunk 2 |  dma_peer rows=rows, row_bytes=width_j*4  | chunk j |
    | chunk 0 | chunk 1 | chunk 2 |  ----------------------------------------> | chunk j |
                        <---------  hw.vbinary rows x width_j, dst/src_stride=row_elements,
                                    b_stride=width_j (elements)

A slot is sized for the widest chunk. The whole value is contiguous, so direct all-reduce sends
and adds it as one row. A chunk's add costs rows * ceil(width_j / lanes) vector groups: column
blocks much narrower than the lanes cost more than the bytes-only cost model assumes.

Each builder returns one instruction list per core: core c's part of the collective, to run
once the value is in SRAM (the caller signals `ready`: one count for the send engine and one for
the vector engine) and before anything reads the result (the caller then waits, on the send
engine, `last_arrivals` counts of `data` and `last_adds` counts of `local`).

**Ring** (bandwidth-optimal, for large values; p-1 steps per phase, each core sends to its
successor c+1 and receives from its predecessor c-1):

    reduce-scatter   step s: send chunk (c-s-1) into the successor's receive slot s % 2;
                     the vector engine adds the arriving chunk (c-s-2) into its own copy
    all-gather       step s: send chunk (c-s) straight into the successor's value; chunk (c-s-1)
                     arrives from the predecessor

  so after reduce-scatter core c holds the reduced chunk c, and after all-gather every chunk.

**Direct** (latency-optimal, for small values: one step): every core sends its whole value (or,
for reduce-scatter, chunk j to core j; for all-gather its own chunk to everyone) to every other
core; the vector engine reduces what arrived.

Synchronisation, with three semaphores of each core (`Semaphores`):

    data    a peer's writes into this core have landed (signalled by the sender's send engine,
            peer=this core, after its dma_peer: the send engine runs in order)
    credit  ring: a receive slot of the successor is free again (the successor's vector engine
            signals its predecessor after adding a slot; two slots, so sends from step 2 on wait);
            direct all-reduce: this core's sends have read its value (the adds may overwrite it)
    local   this core's vector engine finished an add: the send engine may send that chunk

An all-gather starts with a barrier on the send engine: peers write straight into every core's
value, so every core must have finished with it (all-reduce needs none: its gather phase only
starts after each core's own sends, which follow its `ready`).

The chunks are disjoint sets of bytes whatever `rows` is (column blocks of the same rows never
share a byte, and the simulator tracks strided footprints row by row), so this ordering argument
is the same as for one row. Every signal has exactly one wait (no count is left over), so the
simulator's race, deadlock and unbalanced-semaphore checks see the collective's whole ordering;
deleting any one signal, wait or peer DMA is reported.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation

from aitc.dialects.hw import AddressAttr, BarrierOp, DmaPeerOp, SemSignalOp, SemWaitOp, VBinaryOp

F32 = 4
REDUCE_OPS = {"sum": "add", "max": "max", "min": "min", "prod": "mul"}
SEND_ENGINE = "dma1"
"""The engine that issues peer DMAs (hw.dma_peer's default queue)."""


@dataclass(frozen=True)
class Semaphores:
    """The semaphore numbers a collective uses on every core (see the module docstring)."""

    data: int
    credit: int
    local: int


@dataclass(frozen=True)
class Layout:
    """Where the collective works in every core's SRAM: the value (`rows` x `row_elements` f32,
    row-major, at byte address `value`) and the receive slots from byte address `slots`
    (`slot_bytes` of them). Every chunk is at least one column wide: `row_elements >= cores`."""

    value: int
    rows: int
    row_elements: int
    slots: int
    cores: int
    element: int = F32
    """Bytes of an element (4: f32 or i32; 1: i8). Reductions combine f32 values."""

    def __post_init__(self) -> None:
        if self.rows < 1 or self.cores < 1 or self.row_elements < self.cores:
            raise ValueError(
                f"no collective layout of {self.rows} x {self.row_elements} f32 on {self.cores} cores"
            )

    @property
    def row_bytes(self) -> int:
        """Bytes of one row of the value (its row stride)."""
        return self.row_elements * self.element

    @property
    def nbytes(self) -> int:
        """Bytes of the whole value."""
        return self.rows * self.row_bytes

    def columns(self, j: int) -> tuple[int, int]:
        """(first column, width) of chunk `j` (taken mod cores), in elements."""
        base, extra = divmod(self.row_elements, self.cores)
        j %= self.cores
        return j * base + min(j, extra), base + (1 if j < extra else 0)

    def chunk_address(self, j: int) -> int:
        """Byte address of chunk `j`'s first element (row 0)."""
        return self.value + self.columns(j)[0] * self.element

    @property
    def chunk_slot_bytes(self) -> int:
        """One receive slot of a chunk: `rows` x the widest chunk, dense."""
        return self.rows * self.columns(0)[1] * self.element

    def slot_bytes(self, kind: str, algorithm: str) -> int:
        """SRAM the receive slots of collective `kind` with `algorithm` take, from `slots`."""
        if kind == "all_gather":
            return 0  # peers write straight into the value
        if algorithm == "ring":
            return 2 * self.chunk_slot_bytes
        if kind == "all_reduce":
            return (self.cores - 1) * self.nbytes
        return (self.cores - 1) * self.chunk_slot_bytes


Stream = list[Operation]


def _sram(addr: int) -> AddressAttr:
    return AddressAttr("sram", addr)


def _send_chunk(layout: Layout, j: int, peer: int, slot: int | None = None) -> DmaPeerOp:
    """Chunk `j` of the value to core `peer`: into receive slot `slot` (dense), or with None into
    the same columns of the peer's value."""
    width = layout.columns(j)[1]
    src = layout.chunk_address(j)
    dst, dst_stride = (src, layout.row_bytes) if slot is None else (slot, width * layout.element)
    return DmaPeerOp(
        dst=_sram(dst), src=_sram(src), peer=peer, rows=layout.rows, row_bytes=width * layout.element,
        src_stride=layout.row_bytes, dst_stride=dst_stride,
    )  # fmt: skip


def _send_value(layout: Layout, peer: int, slot: int) -> DmaPeerOp:
    """The whole (contiguous) value to core `peer`'s slot `slot`, as one row."""
    return DmaPeerOp(dst=_sram(slot), src=_sram(layout.value), peer=peer, row_bytes=layout.nbytes)


def _combine_chunk(kind: str, layout: Layout, j: int, slot: int) -> VBinaryOp:
    """value chunk `j` (strided) <op>= the dense rows x width_j tile at `slot`."""
    into, width = layout.chunk_address(j), layout.columns(j)[1]
    return VBinaryOp(
        dst=_sram(into), a=_sram(into), b=_sram(slot), op=REDUCE_OPS[kind], rows=layout.rows, cols=width,
        dst_stride=layout.row_elements, src_stride=layout.row_elements, b_stride=width,
    )  # fmt: skip


def _combine_value(kind: str, layout: Layout, slot: int) -> VBinaryOp:
    """The whole value <op>= the value-sized slot `slot`, as one row."""
    into, cols = _sram(layout.value), layout.rows * layout.row_elements
    return VBinaryOp(dst=into, a=into, b=_sram(slot), op=REDUCE_OPS[kind], cols=cols)


def _signal(sem: int, engine: str, peer: int | None = None) -> SemSignalOp:
    return SemSignalOp(sem=sem, engine=engine, peer=-1 if peer is None else peer)


def _wait(sem: int, engine: str, count: int = 1) -> SemWaitOp:
    return SemWaitOp(sem=sem, engine=engine, count=count)


def _ring_reduce_scatter(core: int, kind: str, layout: Layout, sems: Semaphores) -> tuple[Stream, Stream]:
    """(send-engine stream, vector stream) of core `core`'s ring reduce-scatter."""
    p = layout.cores
    successor, predecessor = (core + 1) % p, (core - 1) % p
    send: Stream = []
    vector: Stream = []
    for step in range(p - 1):
        slot = layout.slots + (step % 2) * layout.chunk_slot_bytes
        if step >= 1:
            send.append(_wait(sems.local, SEND_ENGINE))  # the chunk got its add at step - 1
        if step >= 2:
            send.append(_wait(sems.credit, SEND_ENGINE))  # the successor emptied this slot
        send.append(_send_chunk(layout, core - step - 1, successor, slot))
        send.append(_signal(sems.data, SEND_ENGINE, successor))
        vector.append(_wait(sems.data, "vector"))
        vector.append(_combine_chunk(kind, layout, core - step - 2, slot))
        vector.append(_signal(sems.local, "vector"))
        if step + 2 <= p - 2:  # the predecessor sends into this slot again at step + 2
            vector.append(_signal(sems.credit, "vector", predecessor))
    return send, vector


def _ring_all_gather(core: int, layout: Layout, sems: Semaphores, after_reduce: bool) -> Stream:
    """The send-engine stream of core `core`'s ring all-gather (core c starts with chunk c)."""
    successor = (core + 1) % layout.cores
    send: Stream = []
    for step in range(layout.cores - 1):
        if step >= 1:
            send.append(_wait(sems.data, SEND_ENGINE))  # chunk core - step arrived at step - 1
        elif after_reduce:
            send.append(_wait(sems.local, SEND_ENGINE))  # the last add made chunk core whole
        send.append(_send_chunk(layout, core - step, successor))
        send.append(_signal(sems.data, SEND_ENGINE, successor))
    return send


def _direct_all_reduce(core: int, kind: str, layout: Layout, sems: Semaphores) -> tuple[Stream, Stream]:
    """Every core sends its whole value into slot (sender - receiver - 1) mod p of every other
    core; the vector engine adds the p - 1 arrivals once its own sends have read the value."""
    p, nbytes = layout.cores, layout.nbytes
    send: Stream = []
    for distance in range(1, p):
        peer = (core + distance) % p
        slot = layout.slots + ((core - peer - 1) % p) * nbytes
        send += [_send_value(layout, peer, slot), _signal(sems.data, SEND_ENGINE, peer)]
    send.append(_signal(sems.credit, SEND_ENGINE))  # the value is read: the adds may overwrite it
    vector: Stream = [_wait(sems.data, "vector", p - 1), _wait(sems.credit, "vector")]
    vector += [_combine_value(kind, layout, layout.slots + i * nbytes) for i in range(p - 1)]
    vector.append(_signal(sems.local, "vector"))
    return send, vector


def _direct_reduce_scatter(core: int, kind: str, layout: Layout, sems: Semaphores) -> tuple[Stream, Stream]:
    """Chunk j goes to core j's slot (sender - j - 1) mod p; core c adds its p - 1 arrivals into
    its chunk c."""
    p, slot_bytes = layout.cores, layout.chunk_slot_bytes
    send: Stream = []
    for distance in range(1, p):
        peer = (core + distance) % p
        slot = layout.slots + ((core - peer - 1) % p) * slot_bytes
        send += [_send_chunk(layout, peer, peer, slot), _signal(sems.data, SEND_ENGINE, peer)]
    vector: Stream = [_wait(sems.data, "vector", p - 1)]
    vector += [_combine_chunk(kind, layout, core, layout.slots + i * slot_bytes) for i in range(p - 1)]
    vector.append(_signal(sems.local, "vector"))
    return send, vector


def _direct_all_gather(core: int, layout: Layout, sems: Semaphores) -> Stream:
    """Core c's chunk c goes straight into every other core's value."""
    send: Stream = []
    for distance in range(1, layout.cores):
        peer = (core + distance) % layout.cores
        send += [_send_chunk(layout, core, peer), _signal(sems.data, SEND_ENGINE, peer)]
    return send


@dataclass(frozen=True)
class CoreCollective:
    """Core c's instructions of one collective, by engine, and what the caller still waits."""

    send: Stream
    vector: Stream
    last_arrivals: int
    """`data` signals left for the caller to wait (on the send engine) before reading the result."""
    last_adds: int
    """`local` signals of the vector engine left for the caller to wait before reading it."""

    def after(self, load: Operation, ready: int, sems: Semaphores) -> Stream:
        """The whole stream up to the caller's store: `load` (which fills the value) signals
        semaphore `ready` for each engine that takes part, those engines wait for it, run
        their part, and the send engine waits what is left, so an op after it on the send
        engine may read the result."""
        stream: Stream = [load, SemSignalOp(sem=ready, engine="dma0", count=2 if self.vector else 1)]
        if self.vector:
            stream += [_wait(ready, "vector"), *self.vector]
        stream += [_wait(ready, SEND_ENGINE), *self.send]
        if self.last_arrivals:
            stream.append(_wait(sems.data, SEND_ENGINE, self.last_arrivals))
        if self.last_adds:
            stream.append(_wait(sems.local, SEND_ENGINE, self.last_adds))
        return stream


def build(
    kind: str, algorithm: str, reduction: str, layout: Layout, sems: Semaphores
) -> list[CoreCollective]:
    """Every core's part of collective `kind` (all_reduce, reduce_scatter, all_gather) with
    `algorithm` (ring or direct)."""
    if layout.cores < 2:
        return [CoreCollective([], [], 0, 0)] * layout.cores
    result = []
    p = layout.cores
    for core in range(p):
        if (kind, algorithm) == ("all_reduce", "ring"):
            send, vector = _ring_reduce_scatter(core, reduction, layout, sems)
            send += _ring_all_gather(core, layout, sems, after_reduce=True)
            result.append(CoreCollective(send, vector, 1, 0))
        elif (kind, algorithm) == ("reduce_scatter", "ring"):
            send, vector = _ring_reduce_scatter(core, reduction, layout, sems)
            result.append(CoreCollective(send, vector, 0, 1))
        elif (kind, algorithm) == ("all_gather", "ring"):
            send = [BarrierOp(engine=SEND_ENGINE), *_ring_all_gather(core, layout, sems, False)]
            result.append(CoreCollective(send, [], 1, 0))
        elif (kind, algorithm) == ("all_reduce", "direct"):
            send, vector = _direct_all_reduce(core, reduction, layout, sems)
            result.append(CoreCollective(send, vector, 0, 1))
        elif (kind, algorithm) == ("reduce_scatter", "direct"):
            send, vector = _direct_reduce_scatter(core, reduction, layout, sems)
            result.append(CoreCollective(send, vector, 0, 1))
        elif (kind, algorithm) == ("all_gather", "direct"):
            send = [BarrierOp(engine=SEND_ENGINE), *_direct_all_gather(core, layout, sems)]
            result.append(CoreCollective(send, [], p - 1, 0))
        else:
            raise ValueError(f"no {algorithm} {kind}")
    return result
