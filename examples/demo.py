"""`make demo`: the toolchain end to end on the bundled example models.

For each examples/models/*.onnx:
  1. import (aitc check's per-node summary), graph-optimize, run at graph level (numpy reference);
  2. compile for the `edge` NPU (graph -> tile -> sync -> hw), write the binary, run it on the
     cycle-approximate simulator;
  3. compile for every core of `edge` (sharded by the cost model's strategy: --cores 4 --shard
     auto), run it on the simulator, next to the single-core cycles, and print one plan;
and compare each with onnxruntime on the same inputs; then
  4. verify each on one core as `aitc perf` and `aitc verify` do: the cost model's per-kernel
     error against the simulator, the critical path's busiest engine, and every node's output
     at hw level against onnxruntime (lowest SQNR);
  5. quantize to int8 (`aitc quantize`: QDQ, per-channel weights) the digits MLP (trained on
     scikit-learn's digits, calibrated on 100 training images, measured on the 597 held-out
     ones) and resnet_block, and run each next to its float original: cycles, DRAM traffic,
     accuracy;
  6. `aitc perf` of resnet_block: its per-kernel table, the critical path, and the report
     folder with the roofline and timeline charts.
Prints the tables and where the binaries, the optimised IR, a Chrome/Perfetto trace and the
perf report were written.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import numpy as np
import onnx

from aitc import api
from aitc.binary import save_program
from aitc.compiler import CompileOptions, compile_module, shard_plan_report
from aitc.diagnostics import AitcError
from aitc.files import write_atomic
from aitc.frontend.onnx_import import import_onnx, node_support
from aitc.interp.run import entry_function, random_inputs, run_module
from aitc.ir import print_mlir
from aitc.passes.pipelines import graph_optimize_pipeline, run_pipeline
from aitc.perf import format_perf, profile_model, report_files
from aitc.quantize import quantize_model
from aitc.reference import onnxruntime_outputs, relative_error
from aitc.report import format_table
from aitc.sim import Simulator, write_trace
from aitc.target import load_target
from aitc.testing import model_zoo
from aitc.verify import verify_model

HERE = Path(__file__).parent
OUT = HERE.parent / "out"
TARGET = "edge"
TOLERANCE = 1e-4
"""Max error relative to the output magnitude (the simulator's f32 sums run in another order)."""


def graph_level(path: Path, model: onnx.ModelProto, inputs, reference) -> tuple:
    support = Counter(row.status for row in node_support(model))
    module = import_onnx(model)
    before = sum(1 for op in module.walk() if op.name.startswith("graph."))
    start = time.perf_counter()
    run_pipeline(module, graph_optimize_pipeline())
    optimise_ms = (time.perf_counter() - start) * 1e3
    after = sum(1 for op in module.walk() if op.name.startswith("graph."))
    write_atomic(OUT / f"{path.stem}.mlir", print_mlir(module))
    error = relative_error(run_module(module, inputs), reference)
    nodes = f"{len(model.graph.node)} ({support['supported']} direct, {support['decomposed']} decomp.)"
    return (path.stem, nodes, before, after, f"{optimise_ms:.0f}", f"{error:.1e}", _verdict(error))


def npu_level(path: Path, model: onnx.ModelProto, inputs, reference) -> tuple:
    start = time.perf_counter()
    result = compile_module(model, CompileOptions(target=TARGET))
    compile_s = time.perf_counter() - start
    target = load_target(TARGET)
    save_program(OUT / f"{path.stem}.aitb", result.module, target)
    run = Simulator(result.module, target).run(inputs, trace=True)
    assert run.trace is not None
    write_trace(run.trace, OUT / f"{path.stem}.trace.json")
    stats = run.stats
    error = relative_error(run.outputs, reference)
    return (
        path.stem, sum(1 for row in result.kernels if row.get("on") != "host"), _placement(result),
        f"{compile_s:.2f}", stats.instructions, stats.cycles,
        f"{stats.seconds * 1e6:.1f}", f"{stats.utilisation():.1%}", f"{error:.1e}", _verdict(error),
    )  # fmt: skip


def multicore_level(path: Path, model: onnx.ModelProto, inputs, reference, single_cycles: int) -> tuple:
    """Compiled for every core of the target (`--cores 4 --shard auto`), run on the simulator."""
    target = load_target(TARGET)
    start = time.perf_counter()
    try:
        result = compile_module(model, CompileOptions(target=TARGET, cores=target.cores, shard="auto"))
    except AitcError as error:  # e.g. a plan that splits nothing
        reason = str(error).split(";")[0]
        return (path.stem, "-", "-", "-", single_cycles, "-", "-", "-", reason, "SKIPPED")  # fmt: skip
    compile_s = time.perf_counter() - start
    save_program(OUT / f"{path.stem}.{target.cores}cores.aitb", result.module, target)
    run = Simulator(result.module, target).run(inputs)
    error = relative_error(run.outputs, reference)
    lines = (result.plan or "").splitlines()  # a model with host segments: one plan per NPU segment
    plans = [line.split("sharding plan: ", 1)[1] for line in lines if "sharding plan: " in line]
    plans = [plan.split(" on ")[0] for plan in plans]
    strategy = "/".join(dict.fromkeys(plans)) or "-"
    moved = [line.split(": ", 1)[1] for line in lines if "after shard-simplify" in line]
    return (
        path.stem, strategy, " + ".join(moved) if moved else "none", f"{compile_s:.2f}", single_cycles,
        run.stats.cycles, f"{single_cycles / run.stats.cycles:.2f}x",
        sum(c.cycles for c in run.stats.collectives), f"{error:.1e}", _verdict(error),
    )  # fmt: skip


def verification(path: Path, model: onnx.ModelProto, inputs) -> tuple:
    """`aitc perf` and `aitc verify` (entire mode, hw level) on one core."""
    shapes = {name: list(value.shape) for name, value in inputs.items()}
    options = CompileOptions(target=TARGET, cores=1, input_shapes=shapes)
    report = profile_model(model, options, inputs)
    errors = report.errors
    estimate = "-" if errors.median is None else f"{errors.median:.0%} / {errors.p90:.0%}"
    path_line = report.path.summary(0)[0].removeprefix("by engine: ")
    checked = verify_model(model, options, "hw", ("entire",), inputs)
    compared = [c.comparison for c in checked.checks if c.comparison is not None]
    lowest = min((c.sqnr_db for c in compared if c.profile.startswith("float")), default=float("inf"))
    verdict = "MATCH" if not checked.failures else f"{len(checked.failures)} OUTSIDE TOLERANCE"
    busiest = ", ".join(path_line.split(", ")[:2])
    return (path.stem, report.cycles, estimate, busiest, len(compared), f"{lowest:.0f}", verdict)


def _simulated(model: onnx.ModelProto, inputs: dict[str, np.ndarray]):
    """(outputs, cycles, DRAM bytes, int8 matmul instructions) of `model` compiled for one
    core of the target."""
    shapes = {name: list(value.shape) for name, value in inputs.items()}
    compiled = api.compile(model, TARGET, input_shapes=shapes, cores=1)
    run = compiled.simulate(inputs)
    int8 = sum(line.count("dtype=i8") for line in compiled.mlir().splitlines() if "hw.matmul" in line)
    return run.outputs, run.stats.cycles, run.stats.dram_read + run.stats.dram_write, int8


def int8_row(name: str, model: onnx.ModelProto, calibration, inputs, labels=None) -> tuple:
    """`model` and its `aitc quantize` (per channel) side by side (one core): cycles, DRAM MB,
    accuracy (top-1 against `labels` and the two models' agreement, else the int8 output's
    SQNR against the float one)."""
    quantized, _ = quantize_model(model, calibration, per_channel=True)
    (float_out, float_cycles, float_dram, _), (int8_out, int8_cycles, int8_dram, matmuls) = (
        _simulated(m, inputs) for m in (model, quantized)
    )
    output = model.graph.output[0].name
    want, got = float_out[output], int8_out[output]
    if labels is not None:
        top_float, top_int8 = want.argmax(axis=1), got.argmax(axis=1)
        accuracy = (
            f"top-1 {np.mean(top_float == labels):.2%} float, {np.mean(top_int8 == labels):.2%} int8, "
            f"agreement {np.mean(top_float == top_int8):.2%}"
        )
    else:
        noise = float(np.sum((got.astype(np.float64) - want) ** 2))
        sqnr = 10 * np.log10(float(np.sum(want.astype(np.float64) ** 2)) / noise) if noise else float("inf")
        accuracy = f"SQNR {sqnr:.1f} dB against float"
    return (
        name, float_cycles, int8_cycles, f"{int8_cycles / float_cycles:.2f}", f"{float_dram / 1e6:.3f}",
        f"{int8_dram / 1e6:.3f}", matmuls, accuracy,
    )  # fmt: skip


def int8_rows(models: dict[str, tuple[onnx.ModelProto, dict[str, np.ndarray]]]) -> list[tuple]:
    """Section 5: the digits MLP and resnet_block, float against int8."""
    digits, images, labels = model_zoo.digits_mlp()
    held_out = slice(model_zoo.DIGITS_TRAIN, None)
    rows = [int8_row("digits_mlp", digits, {"x": images[:100]}, {"x": images[held_out]}, labels[held_out])]
    if "resnet_block" in models:
        model, inputs = models["resnet_block"]
        rows.append(int8_row("resnet_block", model, inputs, inputs))
    return rows


def perf_report(path: Path, model: onnx.ModelProto, inputs) -> Path:
    """Section 6: `aitc perf` of one model (one core), its table printed and its report files
    (`aitc perf -o`) written to out/perf_<model>/; the folder."""
    shapes = {name: list(value.shape) for name, value in inputs.items()}
    report = profile_model(model, CompileOptions(target=TARGET, cores=1, input_shapes=shapes), inputs)
    print(format_perf(report, 8))
    folder = OUT / f"perf_{path.stem}"
    folder.mkdir(exist_ok=True)
    for name, data in report_files(report).items():
        write_atomic(folder / name, data)
    return folder


def example_inputs(path: Path, model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """`<stem>.inputs.npz` next to the model (token ids and masks), else seeded random inputs."""
    saved = path.with_suffix(".inputs.npz")
    if saved.exists():
        with np.load(saved) as arrays:
            return dict(arrays)
    return random_inputs(entry_function(import_onnx(model)))


def _placement(result) -> str:
    """`npu` when the whole model runs on the NPU, else the host node count and segments."""
    host = [row for row in result.kernels if row.get("on") == "host"]
    if not host:
        return "npu"
    segments = len({row["segment"] for row in result.kernels})
    return f"{len(host)} host nodes, {segments} segments"


def _verdict(error: float) -> str:
    return "MATCH" if error <= TOLERANCE else "MISMATCH"


def main() -> None:
    OUT.mkdir(exist_ok=True)
    graph_rows, npu_rows, multi_rows, verify_rows = [], [], [], []
    models = {}
    for path in sorted((HERE / "models").glob("*.onnx")):
        model = onnx.load(path)
        inputs = example_inputs(path, model)
        models[path.stem] = (model, inputs)
        reference = onnxruntime_outputs(model, inputs)
        graph_rows.append(graph_level(path, model, inputs, reference))
        npu_rows.append(npu_level(path, model, inputs, reference))
        multi_rows.append(multicore_level(path, model, inputs, reference, int(npu_rows[-1][5])))
        verify_rows.append(verification(path, model, inputs))
    print("aitc demo: the bundled ONNX models through the toolchain, checked against onnxruntime\n")
    print("1. graph level: import -> graph-optimize -> numpy reference interpreter")
    graph_headers = ["model", "ONNX nodes", "graph ops", "optimised", "optimise ms", "rel. error", "result"]
    print(format_table(graph_headers, graph_rows))
    print(f"\n2. compiled for the '{TARGET}' NPU (graph -> tile -> sync -> hw), run on the simulator")
    headers = [
        "model",
        "kernels",
        "placement",
        "compile s",
        "instructions",
        "cycles",
        "us @clock",
        "matrix util",
        "rel. error",
    ]
    print(format_table([*headers, "result"], npu_rows))
    cores = load_target(TARGET).cores
    flags = f"--cores {cores} --shard auto"
    print(f"\n3. sharded over the {cores} cores of '{TARGET}' ({flags}), run on the simulator")
    multi_headers = ["model", "strategy", "collectives", "compile s", "1-core cycles", f"{cores}-core cycles",
                     "speed-up", "collective cycles", "rel. error", "result"]  # fmt: skip
    print(format_table(multi_headers, multi_rows))
    transformer = HERE / "models" / "tiny_transformer.onnx"
    if transformer.exists():
        print(f"\nthe plan for {transformer.stem} on {cores} cores, as `aitc compile {flags}` reports it:")
        options = CompileOptions(target=TARGET, cores=cores, emit="graph")
        print(shard_plan_report(compile_module(onnx.load(transformer), options).module))
    print(f"\n4. verified on one core of '{TARGET}' (aitc perf MODEL --cores 1; aitc verify MODEL)")
    verify_headers = ["model", "cycles", "est. error median / p90", "critical path (busiest)",
                      "tensors vs onnxruntime", "lowest SQNR dB", "result"]  # fmt: skip
    print(format_table(verify_headers, verify_rows))
    print(f"\n5. int8 next to float on one core of '{TARGET}' (aitc quantize MODEL --per-channel)")
    int8_headers = ["model", "float cycles", "int8 cycles", "int8/float", "float DRAM MB", "int8 DRAM MB",
                    "int8 matmuls", "accuracy"]  # fmt: skip
    print(format_table(int8_headers, int8_rows(models)))
    shown = OUT.relative_to(Path.cwd()) if OUT.is_relative_to(Path.cwd()) else OUT
    folder = None
    if "resnet_block" in models:
        print(f"\n6. aitc perf resnet_block --cores 1 -o {shown}/perf_resnet_block")
        folder = perf_report(HERE / "models" / "resnet_block.onnx", *models["resnet_block"])
    print(f"\nwritten to {shown}/: optimised graph IR (*.mlir), binaries (*.aitb), traces (*.trace.json:")
    print("open in https://ui.perfetto.dev or chrome://tracing)")
    if folder is not None:
        report = folder.relative_to(Path.cwd()) if folder.is_relative_to(Path.cwd()) else folder
        print(f"perf report: {report}/perf.html, roofline chart: {report}/roofline.png")
    if any(row[-1] != "MATCH" for row in graph_rows + npu_rows + verify_rows) or any(
        row[-1] == "MISMATCH" for row in multi_rows
    ):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
