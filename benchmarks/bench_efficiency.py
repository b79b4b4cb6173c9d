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
import tempfile
import time
from pathlib import Path

from bench_compile import matmul_model, minimal_dram_bytes

from aitc.analysis.graph_matching import shape_of
from aitc.compiler import CompileOptions, compile_module
from aitc.diagnostics import AitcError
from aitc.dialects import graph
from aitc.perf.profile import ESTIMATE_TOLERANCE, PerfReport, build_report
from aitc.perf.timeline import Timeline
from aitc.report import format_table
from aitc.sim import Simulator
from aitc.target import Target, load_target
from aitc.testing import model_zoo
from aitc.tune import TuneOptions, compile_tuned

MODELS = {
    "matmul1024": lambda: matmul_model(1024),
    "minilm": lambda: model_zoo.encoder(layers=6, hidden=384, heads=12, ffn=1536, seq=128),
    "resnet50": model_zoo.resnet50,
}


def _kernel_rows(report: PerfReport, timeline: Timeline, count: int) -> list[list[object]]:
    """The `count` longest rows of `aitc perf`'s report (per kernel: its time alone, estimate,
    bound, efficiency), with the DMA nothing hid within each one's time alone."""
    rows = []
    for row in sorted(report.rows, key=lambda r: (-r.cycles, r.node))[:count]:
        alone = max(row.cycles, 1)
        exposed = timeline.exposed_dma(row.end - alone, row.end)
        est = "-" if row.est is None else row.est
        ratio = "-" if row.est is None else f"{row.est / alone:.2f}"
        rows.append([
            row.node[-34:], row.ops[:18], row.cycles, est, ratio, f"{row.bound:.0f}",
            f"{row.bound / alone:.2f}", f"{exposed / alone:.0%}", row.limit,
        ])  # fmt: skip
    return rows


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
    assert run.trace is not None
    stats, timeline = run.stats, Timeline(run.trace)
    used = len({e.core for e in stats.engines if e.instructions})
    compute = model_macs(model, shapes) / (target.matrix.macs_per_cycle * used)
    bound = max(compute, minimal_dram_bytes(model, inputs, run.outputs) / target.dram.bytes_per_cycle)
    engine, share = timeline.busiest(0, stats.cycles, core=0)
    exposed = timeline.exposed_dma(0, stats.cycles)
    row = [
        name, used, f"{seconds:.1f}", stats.cycles, f"{bound:.0f}", f"{bound / stats.cycles:.3f}",
        f"{stats.utilisation():.1%}", f"{exposed / stats.cycles:.1%}", f"{engine} {share:.0%}", "",
    ]  # fmt: skip
    if tune:
        row += _tuned(model, options, inputs, target, bound)
    rows: list[list[object]] = []
    if kernels and cores == 1:
        report = build_report(
            name, target, run.trace, stats.cycles, stats.utilisation(), result.kernels, model
        )
        ESTIMATE_ERRORS.append([name, *_estimate_errors(report)])
        rows = [[name, *r] for r in _kernel_rows(report, timeline, kernels)]
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


def _estimate_errors(report: PerfReport) -> list[object]:
    """[kernels, median and p90 of |est - alone| / alone, kernels within 5%, the share of the
    cycles those kernels take]."""
    errors = report.errors
    if not errors.count:
        return [0, "-", "-", "-", "-"]
    timed = [r for r in report.rows if r.error is not None and r.cycles]
    within = sum(r.cycles for r in timed if abs(r.error or 0) <= ESTIMATE_TOLERANCE)
    share = within / max(sum(r.cycles for r in timed), 1)
    return [errors.count, f"{errors.median:.1%}", f"{errors.p90:.1%}", errors.within, f"{share:.0%}"]


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
