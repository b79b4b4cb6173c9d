"""Compile-time benchmark: a BERT-style encoder (MiniLM size by default) or ResNet-50 from ONNX to
hw on one core, then run.

    python benchmarks/bench_encoder.py [--layers 6] [--hidden 384] [--heads 12] [--ffn 1536]
                                       [--seq 128] [--target edge] [--depth 2] [--scaling]
    python benchmarks/bench_encoder.py --model resnet50 [--image 224] [--no-simulate]

Builds `model_zoo.encoder` with the given sizes (batch 1, static shapes), or
`model_zoo.resnet50`, and compiles it once with `compile_module` for one core. Prints the wall
seconds of each lowering stage (graph optimisation, graph -> tile, the tile passes, tile -> sync,
sync -> hw; the last one includes the verification of the result) and of the 8 slowest passes,
then one summary row: total compile seconds (ONNX import and the compile report included), the
peak RSS after compiling, the static hw instruction count, IREE's compile of the same ONNX model
for this CPU in the same run where IREE is installed (`iree-import-onnx`, then `iree-compile`
with the llvm-cpu backend; `make bench` installs it: `pip install -e '.[iree]'`) and the ratio,
the simulator's wall time and the peak RSS after it, the instructions it executed and the
simulated cycles, onnxruntime's wall time on the same model in this process (best of 3; graph
optimisations off, as its default optimiser mis-fuses a pattern of the encoder) and the ratio,
and the relative error of the simulated outputs against onnxruntime's (max |difference| /
max(1, max |reference|)). `--scaling` (encoder) then compiles the encoder with twice the layers
and prints both compile times, their ratio (linear growth: 2.0) and the process's peak RSS after
each. Prints tables; asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

from aitc.compiler import CompileOptions, CompileResult, compile_module
from aitc.diagnostics import AitcError
from aitc.dialects.hw import InstructionOp
from aitc.passes.pipelines import lowering_stages
from aitc.reference import onnxruntime_session
from aitc.report import format_table, peak_rss_mib
from aitc.sim import Simulator
from aitc.testing import model_zoo

SLOWEST = 8
"""How many passes the per-pass table lists."""


def stage_rows(result: CompileResult, depth: int) -> list[list[object]]:
    """(stage, its passes, seconds) per lowering stage, from the flat per-pass timings."""
    stages = lowering_stages(depth)
    if sum(len(passes) for *_, passes in stages) != len(result.pass_seconds):
        return [["all", len(result.pass_seconds), f"{sum(s for _, s in result.pass_seconds):.2f}"]]
    rows, timings = [], iter(result.pass_seconds)
    for consumes, produces, passes in stages:
        mine = [next(timings) for _ in passes]
        names = [name for name, _ in mine]
        listed = ", ".join(names) if len(names) <= 3 else f"{names[0]} .. {names[-1]} ({len(names)} passes)"
        rows.append([f"{consumes} -> {produces}", listed, f"{sum(s for _, s in mine):.2f}"])
    return rows


def pass_rows(result: CompileResult) -> list[list[object]]:
    """The slowest passes: name, seconds, share of all pass time."""
    total = sum(seconds for _, seconds in result.pass_seconds) or 1.0
    slowest = sorted(result.pass_seconds, key=lambda item: -item[1])[:SLOWEST]
    return [[name, f"{seconds:.2f}", f"{seconds / total:.0%}"] for name, seconds in slowest]


def reference(model, inputs: dict[str, np.ndarray]) -> tuple[list[np.ndarray], float]:
    """onnxruntime's outputs and its best wall time of 3 runs, graph optimisations off."""
    session = onnxruntime_session(model)
    best, outputs = float("inf"), []
    for _ in range(3):
        start = time.perf_counter()
        outputs = session.run(None, inputs)
        best = min(best, time.perf_counter() - start)
    return outputs, best  # pyright: ignore[reportReturnType]


def iree_compile_seconds(model: onnx.ModelProto) -> float | None:
    """Wall seconds of IREE importing and compiling `model` for this CPU; None without IREE."""
    tools = Path(sys.executable).parent
    importer = shutil.which("iree-import-onnx", path=tools) or shutil.which("iree-import-onnx")
    compiler = shutil.which("iree-compile", path=tools) or shutil.which("iree-compile")
    if importer is None or compiler is None:
        return None
    with tempfile.TemporaryDirectory() as scratch:
        source, imported, module = (
            Path(scratch) / name for name in ("model.onnx", "model.mlir", "model.vmfb")
        )
        onnx.save(model, source)
        start = time.perf_counter()
        subprocess.run([importer, source, "-o", imported], check=True, capture_output=True)
        backend = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu"]
        cpu = ["--iree-llvmcpu-target-cpu=host"]
        subprocess.run([compiler, *backend, *cpu, imported, "-o", module], check=True, capture_output=True)
        return time.perf_counter() - start


def depth_scaling(args: argparse.Namespace, options: CompileOptions) -> None:
    """Compile time of the encoder with `args.layers` and twice as many layers, and the ratio."""
    rows, seconds = [], []
    for layers in (args.layers, 2 * args.layers):
        model, _ = model_zoo.encoder(
            layers=layers, hidden=args.hidden, heads=args.heads, ffn=args.ffn, seq=args.seq
        )
        start = time.perf_counter()
        compile_module(model, options)
        seconds.append(time.perf_counter() - start)
        rows.append(
            [layers, f"{seconds[-1]:.2f}", f"{seconds[-1] / seconds[0]:.2f}", f"{peak_rss_mib():.0f}"]
        )
    print()
    print(format_table(["layers", "compile s", "ratio", "peak RSS MiB so far"], rows))


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=384)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--ffn", type=int, default=1536)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--target", default="edge")
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--model", choices=("encoder", "resnet50"), default="encoder")
    parser.add_argument("--image", type=int, default=224, help="resnet50: input height and width")
    parser.add_argument("--no-simulate", action="store_true", help="compile only")
    parser.add_argument("--scaling", action="store_true", help="encoder: also compile twice the layers")
    args = parser.parse_args()

    if args.model == "resnet50":
        model, inputs = model_zoo.resnet50(image=args.image)
        described = f"ResNet-50, {args.image}x{args.image}"
    else:
        model, inputs = model_zoo.encoder(
            layers=args.layers, hidden=args.hidden, heads=args.heads, ffn=args.ffn, seq=args.seq
        )
        described = (
            f"encoder: {args.layers} layers, hidden {args.hidden}, {args.heads} heads, ffn {args.ffn}, "
            f"seq {args.seq}"
        )
    shapes = {name: list(value.shape) for name, value in inputs.items()}
    options = CompileOptions(target=args.target, depth=args.depth, input_shapes=shapes, cores=1)
    start = time.perf_counter()
    try:
        result = compile_module(model, options)
    except AitcError as error:
        raise SystemExit(f"compile failed: {error}") from None
    compile_s = time.perf_counter() - start
    compile_rss = peak_rss_mib()
    instructions = sum(1 for op in result.module.walk() if isinstance(op, InstructionOp))

    print(
        f"{described}; {model_zoo.weight_bytes(model) / 2**20:.1f} MiB of weights; "
        f"target '{args.target}', depth {args.depth}, one core\n"
    )
    print(format_table(["stage", "passes", "s"], stage_rows(result, args.depth)))
    print()
    print(format_table(["pass", "s", "share"], pass_rows(result)))
    print()
    iree_s = iree_compile_seconds(model)
    iree = ["not installed", "-"] if iree_s is None else [f"{iree_s:.2f}", f"{compile_s / iree_s:.2f}"]
    if args.no_simulate:
        headers = ["compile s", "peak RSS MiB", "static instr", "IREE compile s", "aitc/IREE"]
        print(format_table(headers, [[f"{compile_s:.2f}", f"{compile_rss:.0f}", instructions, *iree]]))
        return
    start = time.perf_counter()
    run = Simulator(result.module, args.target).run(inputs)
    sim_s = time.perf_counter() - start
    expected, ort_s = reference(model, inputs)
    error = max(
        float(np.abs(got - want).max()) / max(1.0, float(np.abs(want).max()))
        for got, want in zip(run.outputs.values(), expected, strict=True)
    )
    summary = [
        f"{compile_s:.2f}", f"{compile_rss:.0f}", instructions, *iree,
        f"{sim_s:.2f}", f"{peak_rss_mib():.0f}", run.stats.instructions, run.stats.cycles,
        f"{ort_s:.3f}", f"{sim_s / ort_s:.0f}x", f"{error:.1e}",
    ]  # fmt: skip
    headers = ["compile s", "peak RSS MiB", "static instr", "IREE compile s", "aitc/IREE",
               "sim s", "peak RSS MiB", "executed", "cycles", "ort s", "sim/ort", "rel err"]  # fmt: skip
    print(format_table(headers, [summary]))
    if args.scaling and args.model == "encoder":
        depth_scaling(args, options)


if __name__ == "__main__":
    main()
