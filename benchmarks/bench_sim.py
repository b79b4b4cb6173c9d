"""Simulator benchmark: a tiled, double-buffered 1024x1024x1024 f32 matmul on the `edge` NPU.

    python benchmarks/bench_sim.py [--size 1024] [--cores 1 4] [--tile 128] [--trace out.json]

The program is generated here (hw.loop keeps it small): core c computes rows
[c*size/cores, (c+1)*size/cores) of c = a @ b in 128x128 output tiles, each accumulated in one of
two ACC buffers over K-chunks of 128 (a-chunk on dma0, b-chunk on dma1, two SRAM buffers each,
so the DMA of chunk i+1 overlaps the matmuls of chunk i), then stored from ACC to DRAM on dma1
while the next tile computes.

Prints, per configuration: instructions simulated, wall time, simulated instructions/second,
numpy's matmul wall time in the same process and the ratio, simulated cycles, the roofline
bound max(MACs / peak MACs per cycle, minimal DRAM bytes / DRAM bytes per cycle), the
efficiency bound / cycles, and how busy the shared DRAM channel was (DRAM bytes moved / (cycles *
DRAM bytes per cycle)). The result is checked against numpy. Speed is measured, not asserted.

With 128x128 output tiles (all a double-buffered 128 KiB ACC holds) each tile re-reads a 128-row
panel of a and a 128-column panel of b: 64 MiB of DRAM traffic instead of the compulsory 12 MiB.
One core keeps both its matrix engine (~95% busy) and DRAM (~92%) nearly saturated; four cores
share edge's 51 B/cycle DRAM and are DRAM-bound (the "DRAM busy" column): beating that takes
larger output tiles than ACC holds, e.g. partial sums kept in SRAM.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from aitc.dialects.hw import AddressAttr, DmaInOp, DmaOutOp, LoopOp, MatmulOp, SemSignalOp, SemWaitOp
from aitc.report import format_table
from aitc.sim import Simulator, format_stats, write_trace
from aitc.sim.build import core, named, program, tensor
from aitc.target import Target, load_target

A_READY, B_READY, A_FREE, B_FREE, ACC_READY, ACC_FREE = range(6)
SUB = 32  # the edge matrix engine is 32x32: k and n per matmul


def at(space: str, base: int, steps: dict[int, int] | None = None) -> AddressAttr:
    """An address with loop steps given as {loop depth: bytes per iteration}."""
    steps = steps or {}
    return AddressAttr(space, base, [steps.get(d, 0) for d in range(max(steps, default=-1) + 1)])


@dataclass(frozen=True)
class Tiling:
    """Sizes (elements) and the memory layout (bytes) of the generated program."""

    size: int
    cores: int
    tile: int = 128  # output tile mt = nt, and K-chunk kc
    row: int = 0  # bytes per matrix row (set in __post_init__)

    def __post_init__(self) -> None:
        object.__setattr__(self, "row", self.size * 4)
        assert self.size % (self.cores * self.tile) == 0, "size must split into cores x tiles"
        assert self.chunks >= 4, "need at least 4 K-chunks"
        assert self.chunks % 2 == 0, "need an even number of K-chunks (two buffers)"

    @property
    def chunks(self) -> int:
        return self.size // self.tile

    @property
    def chunk_bytes(self) -> int:
        return self.tile * self.tile * 4

    def dram(self, matrix: str) -> int:
        return {"a": 0, "b": 1, "c": 2}[matrix] * self.size * self.row

    def sram(self, operand: str, buffer: int) -> int:
        """a-chunks in buffers 0, 1 then b-chunks in buffers 0, 1."""
        return ((operand == "b") * 2 + buffer) * self.chunk_bytes


def load_chunks(t: Tiling, row0: int, col0: int) -> list[Operation]:
    """All K-chunks of one tile: loop (pairs i0) x (buffer i1), a on dma0 and b on dma1."""
    k_step = t.tile * 4  # bytes along a row of a per chunk
    b_step = t.tile * t.row  # bytes down b per chunk
    body = [
        SemWaitOp(sem=A_FREE, engine="dma0"),
        named(DmaInOp(dst=at("sram", t.sram("a", 0), {1: t.chunk_bytes}),
                      src=at("dram", t.dram("a") + row0 * t.row, {0: 2 * k_step, 1: k_step}),
                      rows=t.tile, row_bytes=k_step, src_stride=t.row), "load_a"),
        SemSignalOp(sem=A_READY, engine="dma0"),
        SemWaitOp(sem=B_FREE, engine="dma1"),
        named(DmaInOp(dst=at("sram", t.sram("b", 0), {1: t.chunk_bytes}),
                      src=at("dram", t.dram("b") + col0 * 4, {0: 2 * b_step, 1: b_step}),
                      rows=t.tile, row_bytes=t.tile * 4, src_stride=t.row, queue=1), "load_b"),
        SemSignalOp(sem=B_READY, engine="dma1"),
    ]  # fmt: skip
    return [LoopOp(t.chunks // 2, [LoopOp(2, body)])]


Buffer = tuple[int, dict[int, int]]
"""Which SRAM chunk buffer: (byte offset of the buffer, steps that switch it in enclosing loops)."""


def matmuls(t: Tiling, depth: int, buffer: Buffer, acc0: int, subs: range, accumulate: bool) -> LoopOp:
    """The matmuls of one K-chunk for sub-blocks `subs`: loop s (at `depth`) x loop j (depth + 1),
    each acc[:, j] (+)= a-chunk[:, s] @ b-chunk[s, j] on 32x32 blocks."""
    offset, steps = buffer
    lhs = at("sram", t.sram("a", 0) + offset + subs.start * SUB * 4, {**steps, depth: SUB * 4})
    rhs = at("sram", t.sram("b", 0) + offset + subs.start * SUB * t.tile * 4,
             {**steps, depth: SUB * t.tile * 4, depth + 1: SUB * 4})  # fmt: skip
    op = MatmulOp(acc=at("acc", acc0, {depth + 1: SUB * 4}), lhs=lhs, rhs=rhs, m=t.tile, k=SUB, n=SUB,
                  lhs_stride=t.tile, rhs_stride=t.tile, acc_stride=t.tile, accumulate=accumulate)  # fmt: skip
    return LoopOp(len(subs), [LoopOp(t.tile // SUB, [named(op, "matmul")])])


def chunk(t: Tiling, depth: int, buffer: Buffer, acc0: int, first: bool) -> list[Operation]:
    """Wait for a chunk, multiply it into the ACC tile, free its buffers. The tile's first chunk
    starts with a sub-block that overwrites the accumulator."""
    subs = t.tile // SUB
    ops: list[Operation] = [SemWaitOp(sem=A_READY, engine="matrix"), SemWaitOp(sem=B_READY, engine="matrix")]
    if first:
        ops += [
            matmuls(t, depth, buffer, acc0, range(1), False),
            matmuls(t, depth, buffer, acc0, range(1, subs), True),
        ]
    else:
        ops.append(matmuls(t, depth, buffer, acc0, range(subs), True))
    return [*ops, SemSignalOp(sem=A_FREE, engine="matrix"), SemSignalOp(sem=B_FREE, engine="matrix")]


def compute(t: Tiling, acc0: int) -> list[Operation]:
    """The matrix engine's work for one output tile: chunks 0 and 1 peeled, then pairs of chunks
    alternating between the two buffers."""
    ops: list[Operation] = [SemWaitOp(sem=ACC_FREE, engine="matrix")]
    ops += chunk(t, 0, (0, {}), acc0, first=True)
    ops += chunk(t, 0, (t.chunk_bytes, {}), acc0, first=False)
    pair = chunk(t, 2, (0, {1: t.chunk_bytes}), acc0, first=False)
    return [*ops, LoopOp(t.chunks // 2 - 1, [LoopOp(2, pair)]), SemSignalOp(sem=ACC_READY, engine="matrix")]


def store(t: Tiling, row0: int, col0: int, acc0: int) -> list[Operation]:
    """ACC tile -> c in DRAM on dma1, then free the ACC buffer."""
    out = DmaOutOp(dst=at("dram", t.dram("c") + row0 * t.row + col0 * 4), src=at("acc", acc0), rows=t.tile,
                   row_bytes=t.tile * 4, dst_stride=t.row)  # fmt: skip
    return [
        SemWaitOp(sem=ACC_READY, engine="dma1"),
        named(out, "store_c"),
        SemSignalOp(sem=ACC_FREE, engine="dma1"),
    ]


def core_ops(t: Tiling, core_id: int) -> list[Operation]:
    """One core's program: tiles in order, each store placed after the next tile's loads."""
    ops: list[Operation] = [
        SemSignalOp(sem=A_FREE, engine="dma0", count=2),
        SemSignalOp(sem=B_FREE, engine="dma1", count=2),
        SemSignalOp(sem=ACC_FREE, engine="matrix", count=2),
    ]
    rows = t.size // t.cores
    tiles = [
        (r, c) for r in range(core_id * rows, (core_id + 1) * rows, t.tile) for c in range(0, t.size, t.tile)
    ]
    pending: tuple[int, int, int] | None = None
    for index, (row0, col0) in enumerate(tiles):
        acc0 = (index % 2) * t.tile * t.tile * 4
        ops += load_chunks(t, row0, col0) + compute(t, acc0)
        if pending:
            ops += store(t, *pending)
        pending = (row0, col0, acc0)
    assert pending is not None
    drain = [  # every buffer is free again at the end: consume the free counts (the sim checks balance)
        SemWaitOp(sem=A_FREE, engine="dma0", count=2),
        SemWaitOp(sem=B_FREE, engine="dma1", count=2),
        SemWaitOp(sem=ACC_FREE, engine="matrix", count=2),
    ]
    return ops + store(t, *pending) + drain


def matmul_program(t: Tiling) -> ModuleOp:
    data = [tensor(name, kind, t.dram(name), (t.size, t.size)) for name, kind in
            (("a", "input"), ("b", "input"), ("c", "output"))]  # fmt: skip
    return program([core(c, core_ops(t, c)) for c in range(t.cores)], data, target="edge", name="matmul")


def roofline(t: Tiling, target: Target) -> int:
    """max(MACs / peak MACs per cycle, compulsory DRAM bytes / DRAM bytes per cycle)."""
    macs = t.size**3
    dram_bytes = 3 * t.size * t.size * 4
    peak = target.matrix.macs_per_cycle * t.cores
    return max(-(-macs // peak), -(-dram_bytes // target.dram.bytes_per_cycle))


def run(t: Tiling, trace_path: str | None) -> tuple[list[object], str]:
    """Builds, simulates and checks one configuration; returns its table row and stats text."""
    build_start = time.perf_counter()
    sim = Simulator(matmul_program(t))
    build = time.perf_counter() - build_start
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((t.size, t.size)).astype(np.float32) for _ in range(2))
    start = time.perf_counter()
    result = sim.run({"a": a, "b": b}, trace=trace_path is not None)
    wall = time.perf_counter() - start
    numpy_wall = min(_timed(np.matmul, a, b) for _ in range(3))
    error = float(np.abs(result.outputs["c"] - a @ b).max())
    assert error < 1e-2, f"simulated result differs from numpy by {error}"
    if trace_path and result.trace:
        write_trace(result.trace, trace_path)
    stats, bound = result.stats, roofline(t, sim.target)
    dram_bytes, dram_rate = stats.dram_read + stats.dram_write, sim.target.dram.bytes_per_cycle
    row = [
        t.cores, stats.instructions, f"{build:.2f}", f"{wall:.2f}", f"{stats.instructions / wall:,.0f}",
        f"{numpy_wall * 1e3:.1f}", f"{wall / numpy_wall:,.0f}x", f"{stats.cycles:,}", f"{bound:,}",
        f"{100 * bound / stats.cycles:.1f}%", f"{100 * dram_bytes / (stats.cycles * dram_rate):.1f}%",
        f"{error:.1e}",
    ]  # fmt: skip
    return row, format_stats(stats)


def _timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--cores", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--tile", type=int, default=128)
    parser.add_argument("--trace", help="write the Chrome trace of the last configuration here")
    parser.add_argument("--stats", action="store_true", help="print the per-engine statistics too")
    args = parser.parse_args()
    target = load_target("edge")
    rows = []
    for index, cores in enumerate(args.cores):
        last = index == len(args.cores) - 1
        row, stats = run(Tiling(args.size, cores, args.tile), args.trace if last else None)
        rows.append(row)
        if args.stats:
            print(f"--- {cores} core(s)\n{stats}\n")
    print(f"{args.size}x{args.size}x{args.size} f32 matmul on '{target.name}' ({target.clock_mhz} MHz)")
    headers = ["cores", "instructions", "build s", "sim s", "instr/s", "numpy ms", "sim/numpy", "cycles",
               "roofline", "efficiency", "DRAM busy", "max |err|"]  # fmt: skip
    print(format_table(headers, rows))


if __name__ == "__main__":
    main()
