"""Collectives as hw instruction streams: peer DMA between cores' SRAM, cross-core semaphores.

Every core holds the collective's value at the same SRAM address (SPMD: one layout for all
cores), `elements` f32 values as one row; the value is split into one chunk per core (sizes
differ by at most one element when the cores do not divide it: chunk j has
`elements // p + (j < elements % p)` elements). Each builder returns one instruction list per
core: core c's part of the collective, to run once the value is in SRAM (the caller signals
`ready`: one count for the send engine and one for the vector engine) and before anything reads
the result (the caller waits `data` once more on the send engine when `last_arrival` says so).

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

Every signal has exactly one wait (no count is left over), so the simulator's race, deadlock and
unbalanced-semaphore checks see the collective's whole ordering; deleting any one signal, wait or
peer DMA is reported.
"""

from __future__ import annotations

from collections.abc import Callable
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
    """Where the collective works in every core's SRAM: the value (`elements` f32 at `value`)
    and the receive slots at `slots` (`slot_bytes` each; ring: 2 slots of the largest chunk,
    direct: one per peer of the whole value)."""

    value: int
    elements: int
    slots: int
    cores: int

    def chunk(self, j: int) -> tuple[int, int]:
        """(byte offset, elements) of chunk `j`."""
        base, extra = divmod(self.elements, self.cores)
        j %= self.cores
        start = j * base + min(j, extra)
        return start * F32, base + (1 if j < extra else 0)

    @property
    def ring_slot_bytes(self) -> int:
        return self.chunk(0)[1] * F32

    def slot_bytes(self, algorithm: str) -> int:
        """SRAM the receive slots take, from `slots`."""
        if algorithm == "ring":
            return 2 * self.ring_slot_bytes
        return (self.cores - 1) * self.elements * F32


Stream = list[Operation]


def _peer_copy(dst: int, src: int, peer: int, nbytes: int) -> DmaPeerOp:
    return DmaPeerOp(dst=AddressAttr("sram", dst), src=AddressAttr("sram", src), peer=peer, row_bytes=nbytes)


def _combine(kind: str, into: int, other: int, elements: int) -> VBinaryOp:
    return VBinaryOp(
        dst=AddressAttr("sram", into), a=AddressAttr("sram", into), b=AddressAttr("sram", other),
        op=REDUCE_OPS[kind], cols=elements,
    )  # fmt: skip


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
        offset, elements = layout.chunk(core - step - 1)
        slot = layout.slots + (step % 2) * layout.ring_slot_bytes
        if step >= 1:
            send.append(_wait(sems.local, SEND_ENGINE))  # the chunk got its add at step - 1
        if step >= 2:
            send.append(_wait(sems.credit, SEND_ENGINE))  # the successor emptied this slot
        send.append(_peer_copy(slot, layout.value + offset, successor, elements * F32))
        send.append(_signal(sems.data, SEND_ENGINE, successor))
        arriving, count = layout.chunk(core - step - 2)
        vector.append(_wait(sems.data, "vector"))
        vector.append(_combine(kind, layout.value + arriving, slot, count))
        vector.append(_signal(sems.local, "vector"))
        if step + 2 <= p - 2:  # the predecessor sends into this slot again at step + 2
            vector.append(_signal(sems.credit, "vector", predecessor))
    return send, vector


def _ring_all_gather(core: int, layout: Layout, sems: Semaphores, after_reduce: bool) -> Stream:
    """The send-engine stream of core `core`'s ring all-gather (core c starts with chunk c)."""
    p = layout.cores
    successor = (core + 1) % p
    send: Stream = []
    for step in range(p - 1):
        offset, elements = layout.chunk(core - step)
        if step >= 1:
            send.append(_wait(sems.data, SEND_ENGINE))  # chunk core - step arrived at step - 1
        elif after_reduce:
            send.append(_wait(sems.local, SEND_ENGINE))  # the last add made chunk core whole
        send.append(_peer_copy(layout.value + offset, layout.value + offset, successor, elements * F32))
        send.append(_signal(sems.data, SEND_ENGINE, successor))
    return send


def _direct_all_reduce(core: int, kind: str, layout: Layout, sems: Semaphores) -> tuple[Stream, Stream]:
    """Every core sends its whole value into slot (sender - receiver - 1) mod p of every other
    core; the vector engine adds the p - 1 arrivals once its own sends have read the value."""
    p, nbytes = layout.cores, layout.elements * F32
    send: Stream = []
    for distance in range(1, p):
        peer = (core + distance) % p
        slot = layout.slots + ((core - peer - 1) % p) * nbytes
        send += [_peer_copy(slot, layout.value, peer, nbytes), _signal(sems.data, SEND_ENGINE, peer)]
    send.append(_signal(sems.credit, SEND_ENGINE))  # the value is read: the adds may overwrite it
    vector: Stream = [_wait(sems.data, "vector", p - 1), _wait(sems.credit, "vector")]
    vector += [_combine(kind, layout.value, layout.slots + i * nbytes, layout.elements) for i in range(p - 1)]
    vector.append(_signal(sems.local, "vector"))
    return send, vector


def _direct_reduce_scatter(core: int, kind: str, layout: Layout, sems: Semaphores) -> tuple[Stream, Stream]:
    """Chunk j goes to core j's slot (sender - j - 1) mod p; core c adds its p - 1 arrivals into
    its chunk c."""
    p = layout.cores
    chunk_bytes = layout.ring_slot_bytes
    send: Stream = []
    for distance in range(1, p):
        peer = (core + distance) % p
        offset, elements = layout.chunk(peer)
        slot = layout.slots + ((core - peer - 1) % p) * chunk_bytes
        send += [
            _peer_copy(slot, layout.value + offset, peer, elements * F32),
            _signal(sems.data, SEND_ENGINE, peer),
        ]
    offset, elements = layout.chunk(core)
    vector: Stream = [_wait(sems.data, "vector", p - 1)]
    vector += [
        _combine(kind, layout.value + offset, layout.slots + i * chunk_bytes, elements) for i in range(p - 1)
    ]
    vector.append(_signal(sems.local, "vector"))
    return send, vector


def _direct_all_gather(core: int, layout: Layout, sems: Semaphores) -> Stream:
    """Core c's chunk c goes straight into every other core's value."""
    p = layout.cores
    offset, elements = layout.chunk(core)
    send: Stream = []
    for distance in range(1, p):
        peer = (core + distance) % p
        send += [
            _peer_copy(layout.value + offset, layout.value + offset, peer, elements * F32),
            _signal(sems.data, SEND_ENGINE, peer),
        ]
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


Builder = Callable[[int, str, Layout, Semaphores], CoreCollective]


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
