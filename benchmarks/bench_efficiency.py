"""Per-core efficiency on real models: how close each model and each of its kernels comes to the
roofline of the target, and what limits it.

    python benchmarks/bench_efficiency.py [--target edge] [--models matmul1024 minilm resnet50]
                                          [--cores 1 4] [--kernels 12]

Per model and core count (compiled with `compile_module`, simulated once with a trace):

- cycles, and the roofline bound: max(MACs / peak MACs per cycle of the cores used, minimal
  DRAM bytes / DRAM bytes per cycle), MACs = the model's (its matmuls, convs and attention
  after graph-optimize, `model_macs`; not the simulator's count, which grows with the work a
  tiling wastes), minimal bytes = inputs + weights + outputs once;
- efficiency = bound / cycles, and matrix utilisation (the simulator's);
- exposed DMA: the share of the cycles in which a DMA queue of core 0 is busy while neither its
  matrix nor its vector engine is (the DMA nothing hides);
- the limit: the engine of core 0 busiest over the run, with its busy share.

Per kernel (one core, the `--kernels` longest by time alone, i.e. after the kernels before it
ended; the kernels of one ONNX node together): its time alone, the compiler's estimate and
their ratio, its bound (its MACs at peak, or its vector work at one group per cycle, or its
DRAM bytes, the largest), efficiency, exposed
DMA within its span and its limit (busiest engine within its span). Kernels may overlap, so
the times alone add up to the program's cycles.

MiniLM-L6 is `model_zoo.encoder(layers=6, hidden=384, heads=12, ffn=1536, seq=128)`, ResNet-50
`model_zoo.resnet50()`, both with random weights; matmul1024 is one 1024^3 product with
constant weights. `--tune` adds the cycles of `aitc compile --tune` (every kernel measured from
an empty cache) and the seconds tuning took. A last table gives, per model on one core, the
median and p90 of |est - alone| / alone over every kernel and how many are within 5% (the
issue's aim for the cost model). Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench_compile import matmul_model, matmul_work, minimal_dram_bytes

from aitc.analysis.graph_matching import shape_of
from aitc.compiler import CompileOptions, compile_module
from aitc.diagnostics import AitcError
from aitc.dialects import graph
from aitc.dialects.tile import KernelOp
from aitc.report import format_table
from aitc.sim import Simulator
from aitc.target import Target, load_target
from aitc.testing import model_zoo
from aitc.tune import TuneOptions, compile_tuned

COMPUTE = ("matrix", "vector")


MODELS = {
    "matmul1024": lambda: matmul_model(1024),
    "minilm": lambda: model_zoo.encoder(layers=6, hidden=384, heads=12, ffn=1536, seq=128),
    "resnet50": model_zoo.resnet50,
}


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _length(intervals: list[tuple[int, int]], lo: int = 0, hi: int = 1 << 62) -> int:
    return sum(max(0, min(end, hi) - max(start, lo)) for start, end in intervals)


def _intersection(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


class Timeline:
    """Busy intervals per engine of core 0 (instructions, not semaphore waits), per kernel."""

    def __init__(self, trace: dict):
        names = {}
        for event in trace["traceEvents"]:
            if event.get("ph") == "M" and event.get("name") == "thread_name" and event["pid"] == 0:
                names[event["tid"]] = event["args"]["name"]
        self.busy: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.kernel_busy: dict[str, dict[str, list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
        for event in trace["traceEvents"]:
            if event.get("ph") != "X" or event["pid"] != 0 or event["name"].startswith(("sem_", "barrier")):
                continue
            engine = names.get(event["tid"], str(event["tid"]))
            span = (event["ts"], event["ts"] + event["dur"])
            self.busy[engine].append(span)
            self.kernel_busy[event["args"].get("node", "?")][engine].append(span)
        self.busy = {engine: _union(spans) for engine, spans in self.busy.items()}

    def exposed_dma(self, lo: int, hi: int) -> int:
        """Cycles in [lo, hi) with a DMA queue busy and no compute engine busy."""
        dma = _union([s for engine, spans in self.busy.items() if engine.startswith("dma") for s in spans])
        compute = _union([s for engine in COMPUTE for s in self.busy.get(engine, [])])
        return _length(dma, lo, hi) - _length(_intersection(dma, compute), lo, hi)

    def limit(self, lo: int, hi: int) -> tuple[str, float]:
        """The busiest engine over [lo, hi) and its busy share."""
        shares = {engine: _length(spans, lo, hi) / max(hi - lo, 1) for engine, spans in self.busy.items()}
        engine = max(shares, key=lambda e: (shares[e], e))
        return engine, shares[engine]


def _kernel_rows(tiled, timeline: Timeline, target: Target, count: int) -> list[list[object]]:
    """One row per ONNX node that has kernels (a node lowered to several kernels, e.g. a
    strided conv's phase slices and convs, is one row: their estimates, DMA bytes and MACs
    summed; the trace's events carry the node, so its span covers them all)."""
    spans = {}
    for node, engines in timeline.kernel_busy.items():
        spans[node] = (
            min(s for e in engines.values() for s, _ in e),
            max(t for e in engines.values() for _, t in e),
        )
    by_node: dict[str, list[KernelOp]] = defaultdict(list)
    for kernel in tiled.module.walk():
        if isinstance(kernel, KernelOp) and kernel.sym is not None and kernel.sym.data in spans:
            by_node[kernel.sym.data].append(kernel)
    rows, previous = [], 0
    for name, kernels in by_node.items():
        first, last = spans[name]
        alone, previous = max(last - max(first, previous), 1), max(previous, last)
        dram = sum(int(k.attributes["dma_bytes"].value.data) for k in kernels)  # pyright: ignore[reportAttributeAccessIssue]
        est = sum(int(k.attributes["est_cycles"].value.data) for k in kernels)  # pyright: ignore[reportAttributeAccessIssue]
        macs = sum(matmul_work(k)[0] for k in kernels)
        ops = ",".join(dict.fromkeys(str(k.attributes["op"].data) for k in kernels))  # pyright: ignore[reportAttributeAccessIssue]
        bound = max(macs / target.matrix.macs_per_cycle, dram / target.dram.bytes_per_cycle)
        engine, share = timeline.limit(last - alone, last)
        exposed = timeline.exposed_dma(last - alone, last)
        rows.append([
            name[-34:], ops[:18], alone, est, f"{est / alone:.2f}", f"{bound:.0f}",
            f"{bound / alone:.2f}", f"{exposed / alone:.0%}", f"{engine} {share:.0%}",
        ])  # fmt: skip
    return sorted(rows, key=lambda row: -int(row[2]))[:count]


def bench(
    name: str, target_name: str, cores: int, kernels: int, tune: bool = False
) -> tuple[list[object], list[list[object]]]:
    model, inputs = MODELS[name]()
    shapes = {k: list(v.shape) for k, v in inputs.items()}
    target = load_target(target_name)
    options = CompileOptions(target=target_name, cores=cores, input_shapes=shapes)
    start = time.perf_counter()
    try:
        result = compile_module(model, options)
    except AitcError as error:
        return [
            name,
            cores,
            "-",
            "-",
            "-",
            "-",
            "-",
            "-",
            "-",
            f"fails: {str(error).splitlines()[0][:60]}",
        ] + ["-"] * 3 * tune, []
    seconds = time.perf_counter() - start
    run = Simulator(result.module, target).run(inputs, trace=True)
    stats, timeline = run.stats, Timeline(run.trace)  # pyright: ignore[reportArgumentType]
    used = len({e.core for e in stats.engines if e.instructions})
    compute = model_macs(model, shapes) / (target.matrix.macs_per_cycle * used)
    bound = max(compute, minimal_dram_bytes(model, inputs, run.outputs) / target.dram.bytes_per_cycle)
    engine, share = timeline.limit(0, stats.cycles)
    exposed = timeline.exposed_dma(0, stats.cycles)
    row = [
        name, used, f"{seconds:.1f}", stats.cycles, f"{bound:.0f}", f"{bound / stats.cycles:.3f}",
        f"{stats.utilisation():.1%}", f"{exposed / stats.cycles:.1%}", f"{engine} {share:.0%}", "",
    ]  # fmt: skip
    if tune:
        row += _tuned(model, options, inputs, target, bound)
    rows: list[list[object]] = []
    if kernels and cores == 1:
        tiled = compile_module(
            model, CompileOptions(target=target_name, cores=1, input_shapes=shapes, emit="tile")
        )
        every = _kernel_rows(tiled, timeline, target, 1 << 30)
        ESTIMATE_ERRORS.append([name, *_estimate_errors(every)])
        rows = [[name, *r] for r in every[:kernels]]
    return row, rows


def model_macs(model, shapes: dict[str, list[int]]) -> int:
    """The multiply-accumulates the model asks for: every matmul, conv and attention of its
    graph-level form (after graph-optimize, before any lowering choice)."""
    module = compile_module(model, CompileOptions(input_shapes=shapes, emit="graph")).module
    total = 0
    for op in module.walk():
        if isinstance(op, graph.ConvOp):
            total += math.prod(shape_of(op.output)) * math.prod(shape_of(op.weight)[1:])
        elif isinstance(op, graph.MatMulOp):
            total += math.prod(shape_of(op.output)) * shape_of(op.lhs)[-1]
        elif isinstance(op, graph.AttentionOp):
            (batch, queries, width), keys = shape_of(op.q), shape_of(op.k)[1]
            total += batch * queries * keys * (width + shape_of(op.v)[-1])
    return total


ESTIMATE_ERRORS: list[list[object]] = []
"""Per model (one core): how far the kernels' estimates are from their time alone."""


def _estimate_errors(rows: list[list[object]]) -> list[object]:
    """[kernels, median and p90 of |est - alone| / alone, kernels within 5%, the share of the
    cycles those kernels take] over `_kernel_rows`."""
    errors = sorted(abs(int(r[3]) - int(r[2])) / int(r[2]) for r in rows)  # pyright: ignore[reportArgumentType]
    if not errors:
        return [0, "-", "-", "-", "-"]
    within = [r for r in rows if abs(int(r[3]) - int(r[2])) <= 0.05 * int(r[2])]  # pyright: ignore
    share = sum(int(r[2]) for r in within) / sum(int(r[2]) for r in rows)  # pyright: ignore
    p90 = errors[min(len(errors) - 1, int(0.9 * len(errors)))]
    return [len(errors), f"{statistics.median(errors):.1%}", f"{p90:.1%}", len(within), f"{share:.0%}"]


def _tuned(model, options: CompileOptions, inputs, target: Target, bound: float) -> list[object]:
    """[tuned cycles, tuned efficiency, tuning seconds]: `compile_tuned` with an empty cache of
    its own (every kernel measured, none remembered from another run)."""
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        tune = TuneOptions(cache=Path(folder) / "tuning.json", seconds=1800)
        result = compile_tuned(model, options, tune)
        seconds = time.perf_counter() - start
    cycles = Simulator(result.module, target).run(inputs).stats.cycles
    return [cycles, f"{bound / cycles:.3f}", f"{seconds:.0f}"]


HEADERS = [
    "model", "cores", "compile s", "cycles", "roofline", "efficiency", "matrix util", "exposed DMA",
    "limit (core 0)", "note",
]  # fmt: skip
TUNE_HEADERS = ["tuned cycles", "tuned efficiency", "tune s"]
KERNEL_HEADERS = [
    "model", "kernel", "op", "alone", "est", "est/alone", "bound", "efficiency", "exposed DMA", "limit",
]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--target", default="edge")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--cores", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--kernels", type=int, default=8, help="kernel rows per model (one core)")
    parser.add_argument(
        "--tune", action="store_true", help="also compile with --tune (an empty cache) and simulate that"
    )
    args = parser.parse_args()
    rows, kernel_rows = [], []
    for name in args.models:
        for cores in args.cores:
            row, kernels = bench(name, args.target, cores, args.kernels, args.tune)
            rows.append(row)
            kernel_rows += kernels
    print(f"efficiency on target '{args.target}' (roofline = max(MACs at peak, minimal DRAM bytes))\n")
    print(format_table(HEADERS + TUNE_HEADERS * args.tune, rows))
    if kernel_rows:
        print("\nlongest kernels (one core; alone: cycles after the kernels before it ended)\n")
        print(format_table(KERNEL_HEADERS, kernel_rows))
    if ESTIMATE_ERRORS:
        print("\nthe cost model per kernel (one core): |est - alone| / alone over every kernel\n")
        headers = ["model", "kernels", "median error", "p90 error", "within 5%", "their cycles"]
        print(format_table(headers, ESTIMATE_ERRORS))


if __name__ == "__main__":
    main()
