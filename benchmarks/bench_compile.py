"""End-to-end benchmark: compile (graph -> hw) and simulate example models and a large matmul.

    python benchmarks/bench_compile.py [--target edge] [--depths 1 2] [--models mlp matmul ...]

For each model and buffer depth: compile time, static instruction count, simulated cycles, the
roofline bound of the program on one core (max of MACs / peak MACs per cycle and minimal DRAM
bytes / DRAM bytes per cycle, minimal bytes = inputs + weights + outputs read or written once),
efficiency = bound / cycles, matrix-engine utilisation, exposed DMA time (cycles in which the
matrix engine had no work while a DMA engine was busy... approximated as cycles - matrix busy),
and the simulator's wall time against onnxruntime's on the same model in this process. Prints
a table; asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from aitc import model_zoo
from aitc.compiler import CompileOptions, compile_module
from aitc.dialects.hw import InstructionOp
from aitc.report import format_table
from aitc.sim import Simulator
from aitc.target import load_target


def matmul_model(size: int = 512) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """y = x @ w with x: size x size input and w: size x size weights."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((size, size)).astype(np.float32) / size**0.5, "w")
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")
    graph = helper.make_graph(
        [node],
        "matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [size, size])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, {"x": rng.standard_normal((size, size)).astype(np.float32)}


MODELS = {
    "mlp": lambda: model_zoo.mlp(batch=16),
    "cnn": lambda: model_zoo.cnn_bn_pool(batch=1),
    "resnet-block": lambda: model_zoo.residual_block(batch=1),
    "mobilenet-block": lambda: model_zoo.depthwise_separable(batch=1),
    "transformer": lambda: model_zoo.transformer_encoder_layer(batch=1),
    "matmul512": matmul_model,
}


def _best(fn, repeat: int = 3) -> tuple[object, float]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return result, best


def _minimal_dram_bytes(model: onnx.ModelProto, inputs: dict[str, np.ndarray], outputs) -> int:
    weights = sum(numpy_helper.to_array(t).nbytes for t in model.graph.initializer)
    return weights + sum(v.nbytes for v in inputs.values()) + sum(v.nbytes for v in outputs.values())


def bench(name: str, target_name: str, depth: int) -> list[object]:
    model, inputs = MODELS[name]()
    shapes = {k: list(v.shape) for k, v in inputs.items()}
    target = load_target(target_name)
    start = time.perf_counter()
    result = compile_module(model, CompileOptions(target=target_name, depth=depth, input_shapes=shapes))
    compile_s = time.perf_counter() - start
    instructions = sum(1 for op in result.module.walk() if isinstance(op, InstructionOp))
    simulator = Simulator(result.module, target)
    run, sim_s = _best(lambda: simulator.run(inputs), repeat=1)
    stats = run.stats  # pyright: ignore
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    reference, ort_s = _best(lambda: session.run(None, inputs))
    error = max(
        float(np.abs(got - want).max()) / max(1.0, float(np.abs(want).max()))
        for got, want in zip(run.outputs.values(), reference, strict=True)  # pyright: ignore
    )
    compute_bound = stats.macs / target.matrix.macs_per_cycle
    memory_bound = _minimal_dram_bytes(model, inputs, run.outputs) / target.dram.bytes_per_cycle  # pyright: ignore
    bound = max(compute_bound, memory_bound)
    matrix_busy = sum(e.busy for e in stats.engines if e.engine == "matrix")
    return [
        name, depth, f"{compile_s:.2f}", instructions, stats.instructions, stats.cycles, f"{bound:.0f}",
        f"{bound / stats.cycles:.2f}", f"{stats.utilisation():.1%}", stats.cycles - matrix_busy,
        f"{sim_s:.2f}", f"{sim_s / ort_s:.0f}x", f"{error:.1e}",
    ]  # fmt: skip


HEADERS = [
    "model", "depth", "compile s", "static instr", "executed", "cycles", "roofline", "efficiency",
    "matrix util", "matrix idle", "sim s", "sim/ort", "rel err",
]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--target", default="edge")
    parser.add_argument("--depths", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    args = parser.parse_args()
    rows = [bench(name, args.target, depth) for name in args.models for depth in args.depths]
    print(f"end-to-end on target '{args.target}' (one core)\n")
    print(format_table(HEADERS, rows))


if __name__ == "__main__":
    main()
