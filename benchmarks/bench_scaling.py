"""Multi-core scaling benchmark: models compiled for 1, 2, 4 (and 8) cores, simulated.

    python benchmarks/bench_scaling.py [--quick] [--models matmul,layer,resnet,minilm,minilm_b8]
                                       [--targets edge,server]

For every model and target, compiles with `aitc.compile(..., cores=p, shard="auto")` for each
core count p the target has (1, 2, 4, and 8 on server), simulates on the model's example
inputs, checks the outputs against onnxruntime, and prints one row per p:

    cycles        simulated cycles
    speedup       T1 / Tp (T1: the single-core program)
    eff           T1 / (p * Tp)
    roofline      the p-core bound max(MACs / (p * MACs per cycle), minimum DRAM bytes / DRAM
                  bytes per cycle): every core's matrix engine busy, or the shared DRAM moving
                  the weights, inputs and outputs once
    of roof       roofline / Tp, the fraction of the bound reached
    bound         which term of the roofline binds (compute or dram)
    coll cyc      cycles spent in collectives (sum of their spans, `SimStats.collectives`)
    busbw         mean bus bandwidth of the collectives (NCCL's definition), B/cycle; the link
                  peak is the target's link.bytes_per_cycle per direction
    auto / best   the strategy auto chose and the best forced one (tp, sp, dp, tp-sp: each
                  compiled and simulated at the largest p) with its cycles
    err           max |out - onnxruntime| / max |onnxruntime|

`--quick` shrinks every model (for a smoke run). Prints tables; asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper

import aitc
from aitc.diagnostics import AitcError
from aitc.passes.shard.planner import STRATEGIES
from aitc.reference import onnxruntime_session
from aitc.report import format_table
from aitc.target import load_target
from aitc.testing import model_zoo


def matmul_model(n: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """y = x @ w, all n x n f32 (w a weight)."""
    rng = np.random.default_rng(0)
    w = helper.make_tensor(
        "w", TensorProto.FLOAT, [n, n], rng.standard_normal((n, n)).astype(np.float32).ravel()
    )
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")],
        "matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, {"x": rng.standard_normal((n, n)).astype(np.float32)}


def models(quick: bool) -> dict[str, Callable[[], tuple[onnx.ModelProto, dict[str, np.ndarray]]]]:
    """The benchmark's models, built on demand (smaller with `quick`)."""
    scale = 4 if quick else 1
    layers = 1 if quick else 6
    sizes = dict(
        hidden=384 // scale, heads=max(1, 12 // scale), ffn=1536 // scale, seq=128 // scale, vocab=7000
    )
    return {
        "matmul": lambda: matmul_model(1024 // scale),
        "layer": lambda: model_zoo.transformer_encoder_layer(
            hidden=384 // scale, heads=max(1, 12 // scale), seq=128 // scale, ffn=1536 // scale, batch=1
        ),
        "resnet": lambda: model_zoo.residual_block(batch=1, channels=64 // scale, image=32 // scale),
        "minilm": lambda: model_zoo.encoder(layers=layers, **sizes),
        "minilm_b8": lambda: model_zoo.encoder(layers=layers, batch=8, **sizes),
    }


def minimum_dram_bytes(
    model: onnx.ModelProto, inputs: dict[str, np.ndarray], outputs: list[np.ndarray]
) -> int:
    """Weights, inputs and outputs, each moved once."""
    return (
        model_zoo.weight_bytes(model)
        + sum(v.nbytes for v in inputs.values())
        + sum(o.nbytes for o in outputs)
    )


def run(model, inputs, target: str, cores: int, shard: str):
    shapes = {k: v.shape for k, v in inputs.items()}
    start = time.perf_counter()
    compiled = aitc.compile(model, target, cores=cores, shard=shard, input_shapes=shapes)
    seconds = time.perf_counter() - start
    plan = compiled.result.plan or ""
    chosen = plan.split(" on ")[0].removeprefix("sharding plan: ") if plan else "-"
    result = compiled.simulate(inputs)
    return result, chosen, seconds


def relative_error(got: dict[str, np.ndarray], want: list[np.ndarray]) -> float:
    return max(
        float(np.max(np.abs(g - w))) / max(float(np.max(np.abs(w))), 1e-30)
        for g, w in zip(got.values(), want, strict=True)
    )


def forced_best(model, inputs, target_name: str, cores: int) -> str:
    """The fastest forced strategy at `cores` and its cycles (strategies that fail are left out)."""
    options = {}
    for strategy in STRATEGIES:
        try:
            options[strategy] = run(model, inputs, target_name, cores, strategy)[0].stats.cycles
        except AitcError:
            continue
    if not options:
        return "-"
    winner = min(options, key=lambda s: options[s])
    return f"{winner} {options[winner]}"


def bench(name: str, model, inputs, target_name: str, forced: bool) -> list[list[object]]:
    """One row per core count of `target_name` (see the module docstring)."""
    target = load_target(target_name)
    reference = onnxruntime_session(model).run(None, inputs)
    counts = [p for p in (1, 2, 4, 8) if p <= target.cores]
    dram = minimum_dram_bytes(model, inputs, reference) / target.dram.bytes_per_cycle
    rows: list[list[object]] = []
    base = macs = 0
    for p in counts:
        try:
            result, chosen, seconds = run(model, inputs, target_name, p, "auto")
        except AitcError as error:
            rows.append([name, target_name, p, f"error: {str(error)[:70]}", *[""] * 11])
            continue
        stats = result.stats
        if p == 1:
            base, macs = stats.cycles, stats.macs
        compute = macs / (p * target.matrix.macs_per_cycle)
        roofline = max(compute, dram)
        busbw = float(np.mean([c.busbw for c in stats.collectives])) if stats.collectives else 0.0
        best = forced_best(model, inputs, target_name, p) if forced and p == counts[-1] and p > 1 else ""
        speedup, efficiency = base / stats.cycles, base / (p * stats.cycles)
        collectives = sum(c.cycles for c in stats.collectives)
        rows.append([
            name, target_name, p, stats.cycles, f"{speedup:.2f}", f"{efficiency:.2f}",
            int(roofline), f"{roofline / stats.cycles:.2f}", "compute" if compute >= dram else "dram",
            collectives, f"{busbw:.1f}/{target.link.bytes_per_cycle}", chosen, best,
            f"{relative_error(result.outputs, reference):.1e}", f"{seconds:.1f}",
        ])  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small models (a smoke run)")
    parser.add_argument("--models", default="matmul,layer,resnet,minilm,minilm_b8")
    parser.add_argument("--targets", default="edge,server")
    parser.add_argument("--no-forced", action="store_true", help="skip compiling every strategy at max cores")
    args = parser.parse_args()
    zoo = models(args.quick)
    headers = [
        "model", "target", "cores", "cycles", "speedup", "eff", "roofline", "of roof", "bound", "coll cyc",
        "busbw/peak", "auto", "best forced", "err", "compile s",
    ]  # fmt: skip
    rows: list[list[object]] = []
    for name in args.models.split(","):
        model, inputs = zoo[name]()
        for target in args.targets.split(","):
            found = bench(name, model, inputs, target, not args.no_forced)
            rows += found
            print(format_table(headers, found), flush=True)
            print()
    print("all:")
    print(format_table(headers, rows))


if __name__ == "__main__":
    main()
