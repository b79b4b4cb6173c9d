"""Simulator timing: single instructions cost what `aitc/sim/timing.py` says; engines overlap;
semaphore chains add up; the shared DRAM channel slows concurrent cores down; peer copies
sharing a link port serialise, a ring of them does not."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from aitc.dialects.hw import (
    AccReadOp,
    AddressAttr,
    DmaInOp,
    DmaLocalOp,
    DmaPeerOp,
    MatmulOp,
    SemSignalOp,
    SemWaitOp,
    VBinaryOp,
    VCastOp,
    VReduceOp,
    VUnaryOp,
)
from aitc.sim import Simulator, format_stats
from aitc.sim.build import core, program, tensor
from aitc.sim.segments import merge_stats
from aitc.target import Dram, load_target

TINY = load_target("tiny")


def cycles_of(ops, target=TINY, cores=None, data=()):
    module = program(cores or [core(0, ops)], data)
    sim = Simulator(module, target)
    inputs = {spec.name: np.zeros(spec.shape, spec.dtype) for spec in sim.inputs}
    return sim.run(inputs).stats


def sram(addr):
    return AddressAttr("sram", addr)


def dram(addr):
    return AddressAttr("dram", addr)


def dma_cycles(nbytes, target=TINY):
    return target.dma.latency + math.ceil(nbytes / target.dma.bytes_per_cycle)


def test_dma_in_cycles():
    stats = cycles_of([DmaInOp(dst=sram(0), src=dram(0), rows=5, row_bytes=20)])
    assert stats.cycles == dma_cycles(100) == 10 + 13


def test_dma_in_limited_by_a_slower_dram_channel():
    slow = dataclasses.replace(TINY, dram=Dram(TINY.dram.bytes, 4))
    stats = cycles_of([DmaInOp(dst=sram(0), src=dram(0), row_bytes=64)], target=slow)
    assert stats.cycles == slow.dma.latency + 64 // 4  # the channel (16 cycles), not the engine (8)


def test_dma_local_and_peer_cycles():
    local = cycles_of([DmaLocalOp(dst=sram(0x100), src=sram(0), rows=3, row_bytes=33)])
    assert local.cycles == dma_cycles(99)
    peer = cycles_of([DmaPeerOp(dst=sram(0), src=sram(0), peer=1, row_bytes=30)])
    assert peer.cycles == TINY.link.latency + math.ceil(30 / TINY.link.bytes_per_cycle)


def test_matmul_cycles():
    stats = cycles_of([MatmulOp(acc=AddressAttr("acc", 0), lhs=sram(0), rhs=sram(0x400), m=7, k=3, n=4)])
    assert stats.cycles == TINY.matrix.latency + 3 + 7
    assert stats.macs == 7 * 3 * 4


@pytest.mark.parametrize(
    ("op", "cost_name"),
    [
        (VBinaryOp(dst=sram(0x200), a=sram(0), b=sram(0x100), op="add", rows=3, cols=5), "default"),
        (VBinaryOp(dst=sram(0x200), a=sram(0), b=sram(0x100), op="div", rows=3, cols=5), "div"),
        (VUnaryOp(dst=sram(0x200), a=sram(0), op="exp", rows=3, cols=5), "exp"),
        (VUnaryOp(dst=sram(0x200), a=sram(0), op="gelu", rows=3, cols=5), "erf"),
        (VReduceOp(dst=sram(0x200), a=sram(0), op="sum", rows=3, cols=5), "reduce"),
        (VCastOp(dst=sram(0x200), a=sram(0), rows=3, cols=5, **{"from": "f32", "to": "i8"}), "cast"),
        (AccReadOp(dst=sram(0x200), a=AddressAttr("acc", 0), rows=3, cols=5, activation="tanh"), "tanh"),
    ],
)
def test_vector_cycles(op, cost_name):
    vector = TINY.vector
    expected = vector.latency + 3 * math.ceil(5 / vector.lanes) * vector.cycles_per_group(cost_name)
    assert cycles_of([op]).cycles == expected


def test_control_op_takes_one_cycle():
    # a signal and its wait on one engine: 1 cycle each (a lone signal would end unbalanced)
    ops = [SemSignalOp(sem=0, engine="vector"), SemWaitOp(sem=0, engine="vector")]
    assert cycles_of(ops).cycles == 2


def test_dependent_chain_adds_up():
    # dma -> (sem 0) -> matmul -> (sem 1) -> acc_read: each wait costs its one cycle
    ops = [
        DmaInOp(dst=sram(0), src=dram(0), row_bytes=64),
        SemSignalOp(sem=0, engine="dma0"),
        SemWaitOp(sem=0, engine="matrix"),
        MatmulOp(acc=AddressAttr("acc", 0), lhs=sram(0), rhs=sram(0), m=4, k=4, n=4),
        SemSignalOp(sem=1, engine="matrix"),
        SemWaitOp(sem=1, engine="vector"),
        AccReadOp(dst=sram(0x100), a=AddressAttr("acc", 0), rows=4, cols=4),
    ]
    dma, mm = dma_cycles(64), TINY.matrix.latency + 4 + 4
    vec = TINY.vector.latency + 4 * 1
    stats = cycles_of(ops)
    assert stats.cycles == dma + 1 + mm + 1 + vec
    by_engine = {e.engine: e for e in stats.engines}
    assert by_engine["matrix"].stall == dma
    assert by_engine["vector"].stall == dma + 1 + mm
    for e in stats.engines:
        assert e.busy + e.stall + e.idle == stats.cycles


def test_independent_engines_overlap():
    load = DmaInOp(dst=sram(0x800), src=dram(0), row_bytes=200)
    multiply = MatmulOp(acc=AddressAttr("acc", 0), lhs=sram(0), rhs=sram(0x100), m=30, k=4, n=4)
    both = cycles_of([load, multiply]).cycles
    alone = [dma_cycles(200), TINY.matrix.latency + 4 + 30]
    assert both == max(alone) < sum(alone)


def _loads(count: int, base: int):
    return [DmaInOp(dst=sram(0x100 * i), src=dram(base + 0x100 * i), row_bytes=256) for i in range(count)]


def test_dram_contention_slows_every_core():
    alone = cycles_of(_loads(4, 0))
    together = cycles_of(None, cores=[core(0, _loads(4, 0)), core(1, _loads(4, 0x1000))])
    busy_alone = alone.engines[0].busy
    busy = {e.core: e.busy for e in together.engines}
    assert busy_alone == 4 * dma_cycles(256)
    assert busy[0] > busy_alone
    assert busy[1] > busy_alone
    assert together.cycles > alone.cycles
    assert all(e.dram_wait > 0 for e in together.engines)


def test_sram_only_dma_does_not_contend():
    def local():
        return [DmaLocalOp(dst=sram(0x1000), src=sram(0), row_bytes=256)]

    alone = cycles_of(local()).cycles
    assert cycles_of(None, cores=[core(0, local()), core(1, local())]).cycles == alone


def test_stats_account_bytes_and_dram_traffic():
    ops = [
        DmaInOp(dst=sram(0), src=dram(0), row_bytes=64),
        SemSignalOp(sem=0, engine="dma0"),
        SemWaitOp(sem=0, engine="dma1"),
        DmaLocalOp(dst=sram(0x100), src=sram(0), row_bytes=64, queue=1),
    ]
    data = [tensor("x", "input", 0, (16,))]
    stats = cycles_of(ops, data=data)
    assert stats.dram_read == 64
    assert stats.dram_write == 0
    assert {e.engine: e.bytes for e in stats.engines} == {"dma0": 64, "dma1": 64}
    assert stats.instructions == 4
    assert stats.by_mnemonic == {"dma_in": 1, "dma_local": 1, "sem_signal": 1, "sem_wait": 1}


# --------------------------------------------------------------------------- link ports

EDGE = load_target("edge")  # 4 cores
PEER_BYTES = 4096


def peer_copy(to: int, dst: int = 0x1000, queue: int = -1) -> DmaPeerOp:
    return DmaPeerOp(dst=sram(dst), src=sram(0), peer=to, row_bytes=PEER_BYTES, queue=queue)


def on_edge(cores):
    module = program(cores, target="edge")
    return Simulator(module).run({}).stats


def link_cycles(target=EDGE) -> tuple[int, int]:
    """(port occupancy, latency) of one PEER_BYTES transfer: timing.py's formula."""
    return math.ceil(PEER_BYTES / target.link.bytes_per_cycle), target.link.latency


def ring():
    """Core i copies to core i+1 (mod 4): every egress and every ingress port used once."""
    return on_edge([core(i, [peer_copy((i + 1) % 4)]) for i in range(4)])


def fan_in():
    """Cores 0 and 1 copy to core 2 at once (core 0 goes first: lower engine id)."""
    return on_edge([core(0, [peer_copy(2)]), core(1, [peer_copy(2, dst=0x2000)]), core(2, [])])


def test_a_ring_of_peer_copies_runs_in_parallel():
    transfer, latency = link_cycles()
    stats = ring()
    assert stats.cycles == transfer + latency
    assert all(link.wait == 0 for link in stats.links)


def test_two_senders_serialise_at_the_receivers_ingress():
    transfer, latency = link_cycles()
    stats = fan_in()
    assert stats.cycles == 2 * transfer + latency  # core 1's copy waits for core 0's at core 2
    assert stats.cycles - latency == 2 * (ring().cycles - latency)
    busy = {(e.core, e.engine): e.busy for e in stats.engines}
    assert busy == {(0, "dma1"): transfer + latency, (1, "dma1"): 2 * transfer + latency}


def test_one_sender_serialises_at_its_egress():
    """Two queues of core 0 copy to two different cores: they share core 0's egress port."""
    transfer, latency = link_cycles()
    sends = [peer_copy(1, queue=0), peer_copy(2, queue=1)]
    stats = on_edge([core(0, sends), core(1, []), core(2, [])])
    assert stats.cycles == 2 * transfer + latency
    busy = {e.engine: e.busy for e in stats.engines}
    assert busy == {"dma0": transfer + latency, "dma1": 2 * transfer + latency}


def test_link_statistics_per_core():
    transfer, _ = link_cycles()
    stats = fan_in()
    links = {c["core"]: c["link"] for c in stats.to_dict()["per_core"]}
    assert links == {
        0: {"bytes_sent": PEER_BYTES, "bytes_received": 0, "egress_busy": transfer, "wait": 0},
        1: {"bytes_sent": PEER_BYTES, "bytes_received": 0, "egress_busy": transfer, "wait": transfer},
        2: {"bytes_sent": 0, "bytes_received": 2 * PEER_BYTES, "egress_busy": 0, "wait": 0},
    }
    assert "links" not in stats.to_dict(), "link counters are reported under per_core only"
    text = format_stats(stats)
    assert f"link 0 B sent / {2 * PEER_BYTES} B received (egress busy 0 cycles, 0 waiting for a port)" in text
    assert (
        f"link {PEER_BYTES} B sent / 0 B received (egress busy {transfer} cycles, {transfer} waiting" in text
    )


def test_link_statistics_without_link_traffic():
    stats = cycles_of([DmaLocalOp(dst=sram(0x100), src=sram(0), row_bytes=64)])
    link = stats.to_dict()["per_core"][0]["link"]
    assert link == {"bytes_sent": 0, "bytes_received": 0, "egress_busy": 0, "wait": 0}
    assert "link" not in format_stats(stats)


def test_segments_sum_link_statistics():
    transfer, _ = link_cycles()
    twice = merge_stats([fan_in(), fan_in()], EDGE, ())
    assert [dataclasses.astuple(link) for link in twice.links] == [
        (0, 2 * PEER_BYTES, 0, 2 * transfer, 0),
        (1, 2 * PEER_BYTES, 0, 2 * transfer, 2 * transfer),
        (2, 0, 4 * PEER_BYTES, 0, 0),
    ]
