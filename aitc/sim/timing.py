"""How many cycles each instruction takes on a target (all integer cycles, fractions rounded up).

    DMA (dma_in/out/local/gather)   latency + ceil(bytes / dma.bytes_per_cycle)
        ... touching DRAM            also holds the shared DRAM channel for ceil(bytes / dram.bytes_per_cycle)
                                     cycles from max(start, channel free); the transfer completes at
                                     max(own transfer end, channel end) + latency, so cores contend
    dma_peer (core a -> core b)      link.latency + ceil(bytes / link.bytes_per_cycle) when uncontended;
                                     every core has one egress and one ingress link port, each moving
                                     link.bytes_per_cycle: the copy holds a's egress and b's ingress for
                                     ceil(bytes / link.bytes_per_cycle) cycles from
                                     max(start, a's egress free, b's ingress free) and completes at that
                                     end + link.latency, so two senders to one core (or one core's sends
                                     on two queues) serialise, while a ring runs fully in parallel
    matmul                           matrix.latency + k + m          (weights shift in, rows stream through)
    vector ops                       vector.latency + rows * ceil(cols / lanes) * op_cycles(op)
    sem_signal / sem_wait / barrier  1 (plus the time a wait or barrier spends blocked)

`op_cycles(op)` is the target's `vector.op_cycles` entry for the op, or `default`: vbinary, vimm
and vunary use their `op` (gelu costs as erf, gelu_tanh as tanh, sigmoid as exp), acc_read its
activation (none costs `default`), vreduce `reduce`, vcast `cast`, vselect `select`.

Everything except the DRAM channel and the link ports is fixed per static instruction, so
`static_cost` runs once at decode time and the scheduler only does the channel and port
arithmetic (`dma_end`, `link_end`), serving each first come, first served.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aitc.target import Target


@dataclass(frozen=True, slots=True)
class Cost:
    """The static cost of one instruction.

    cycles: busy cycles when nothing contends (latency included); transfer/latency: the DMA's
    own transfer time and fixed latency; dram: DRAM-channel occupancy (0 = no DRAM traffic);
    link: link-port occupancy of a dma_peer (0 = no link traffic); bytes: bytes moved by a DMA;
    macs: multiply-accumulates of a matmul.
    """

    cycles: int
    transfer: int = 0
    latency: int = 0
    dram: int = 0
    link: int = 0
    bytes: int = 0
    macs: int = 0


def ceil_div(a: int, b: int) -> int:
    """a / b rounded up (integer cycles)."""
    return -(-a // b)


def vector_cost_name(mnemonic: str, f: Mapping[str, Any]) -> str:
    """The op an instruction is charged as (`VectorEngine.cycles_per_group` maps it to its
    `vector.op_cycles` entry)."""
    fixed = {"vreduce": "reduce", "vcast": "cast", "vselect": "select"}
    if mnemonic in fixed:
        return fixed[mnemonic]
    op: str = f["activation"] if mnemonic == "acc_read" else f["op"]
    return op


def _dma_cost(mnemonic: str, f: Mapping[str, Any], spaces: Mapping[str, str], target: Target) -> Cost:
    """DMA cost: engine (or link) transfer, latency, DRAM-channel occupancy."""
    size = f["rows"] * f["row_bytes"]
    if mnemonic == "dma_peer":
        transfer, latency = ceil_div(size, target.link.bytes_per_cycle), target.link.latency
        return Cost(transfer + latency, transfer, latency, link=transfer, bytes=size)
    transfer, latency = ceil_div(size, target.dma.bytes_per_cycle), target.dma.latency
    touches_dram = "dram" in (spaces.get("src"), spaces.get("dst"))
    dram = ceil_div(size, target.dram.bytes_per_cycle) if touches_dram else 0
    return Cost(max(transfer, dram) + latency, transfer, latency, dram, bytes=size)


def static_cost(mnemonic: str, f: Mapping[str, Any], spaces: Mapping[str, str], target: Target) -> Cost:
    """The cost of one instruction from its fields (see the module docstring for the formulas)."""
    if mnemonic.startswith("dma_"):
        return _dma_cost(mnemonic, f, spaces, target)
    if mnemonic == "matmul":
        return Cost(target.matrix.latency + f["k"] + f["m"], macs=f["m"] * f["k"] * f["n"])
    if mnemonic in ("sem_signal", "sem_wait", "barrier"):
        return Cost(1)
    vector = target.vector
    groups = f["rows"] * ceil_div(f["cols"], vector.lanes)
    return Cost(vector.latency + groups * vector.cycles_per_group(vector_cost_name(mnemonic, f)))


def dma_end(cost: Cost, start: int, dram_free: int) -> tuple[int, int]:
    """(completion cycle, new DRAM-channel free cycle) of a DRAM transfer starting at `start`."""
    channel_end = max(start, dram_free) + cost.dram
    return max(start + cost.transfer, channel_end) + cost.latency, channel_end


def link_end(cost: Cost, start: int, egress_free: int, ingress_free: int) -> tuple[int, int]:
    """(completion cycle, new free cycle of both ports) of a dma_peer starting at `start` whose
    sender's egress port is free from `egress_free` and receiver's ingress port from `ingress_free`."""
    ports_end = max(start, egress_free, ingress_free) + cost.link
    return ports_end + cost.latency, ports_end
