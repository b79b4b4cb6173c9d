"""End-to-end benchmark: compile (graph -> hw) and simulate example models and a large matmul.

    python benchmarks/bench_compile.py [--target edge] [--depths 1 2] [--models mlp matmul ...]
                                       [--kernels]

For each model and buffer depth: compile time, static instruction count, simulated cycles, the
compiler's estimate (sum of the kernels' `est_cycles`), the roofline bound of the program on one
core (max of MACs / peak MACs per cycle and minimal DRAM bytes / DRAM bytes per cycle, minimal
bytes = inputs + weights + outputs read or written once), efficiency = bound / cycles,
matrix-engine utilisation, cycles the matrix engine was not busy, DRAM bytes moved and their
ratio to the minimal bytes, and the simulator's wall time against onnxruntime's on the same model
in this process. `--kernels` adds one row per kernel: its span in the simulation (first compute
or DMA instruction start to last instruction end, from the trace: semaphore waits before its
first instruction are time spent on earlier kernels; kernels may overlap), its time alone (the
part of the span after the previous kernels ended), its estimate and its ratio to that time,
and for a matmul its own roofline (its MACs, and its operands and result read or written once)
and efficiency (over the span). Prints tables; asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import scf

from aitc.compiler import CompileOptions, compile_module
from aitc.dialects.hw import InstructionOp
from aitc.dialects.tile import CopyOp, KernelOp, MatmulOp, space_of
from aitc.reference import onnxruntime_session, relative_error
from aitc.report import format_table
from aitc.sim import Simulator
from aitc.target import load_target
from aitc.testing import model_zoo


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
    "bert-torch-export": lambda: model_zoo.bert_torch_export(),  # host segments: mask, GatherND
    "matmul512": matmul_model,
}


def _best(fn, repeat: int = 3) -> tuple[object, float]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return result, best


def minimal_dram_bytes(model: onnx.ModelProto, inputs: dict[str, np.ndarray], outputs) -> int:
    weights = sum(numpy_helper.to_array(t).nbytes for t in model.graph.initializer)
    return weights + sum(v.nbytes for v in inputs.values()) + sum(v.nbytes for v in outputs.values())


def _kernel_rows(result, trace: dict, target) -> list[list[object]]:
    """One row per kernel: span in the simulation vs its estimate, and for a matmul its roofline."""
    spans: dict[str, list[int]] = {}
    for event in trace["traceEvents"]:
        if event.get("ph") == "X" and not event["name"].startswith(("sem_", "barrier")):
            span = spans.setdefault(event["args"].get("node", "?"), [1 << 62, 0])
            span[0], span[1] = min(span[0], event["ts"]), max(span[1], event["ts"] + event["dur"])
    rows, previous = [], 0
    for kernel in result.module.walk():
        if not isinstance(kernel, KernelOp):
            continue
        name, attrs = kernel.sym.data, kernel.attributes  # pyright: ignore
        first, last = spans.get(name, (0, 0))
        cycles, est = max(last - first, 1), _attr(attrs["est_cycles"])
        alone, previous = max(last - max(first, previous), 1), max(previous, last)
        roofline = efficiency = ""
        if "graph.matmul" in str(attrs.get("op")):
            macs, minimal = matmul_work(kernel)
            bound = max(macs / target.matrix.macs_per_cycle, minimal / target.dram.bytes_per_cycle)
            roofline, efficiency = f"{bound:.0f}", f"{bound / cycles:.2f}"
        rows.append([
            name[-32:], attrs["op"].data[:22], _attr(attrs["tiles"]), _attr(attrs.get("block")),  # pyright: ignore
            _attr(attrs.get("buffer_depth")), cycles, alone, est, f"{est / alone:.2f}", roofline, efficiency,
        ])  # fmt: skip
    return rows


def _attr(value) -> object:
    if value is None:
        return ""
    if hasattr(value, "get_values"):
        return "x".join(str(v) for v in value.get_values())
    return value.value.data if hasattr(value, "value") else str(value)


def matmul_work(kernel: KernelOp) -> tuple[int, int]:
    """(MACs, minimal DRAM bytes) of a matmul kernel, from its tile.matmul trip counts and the
    DRAM buffers it reads and writes (each counted once, whole)."""
    macs, buffers = 0, {}
    for op in kernel.walk():
        if isinstance(op, MatmulOp):
            m, k, n = op.box()
            macs += m * k * n * trips(op)
        if isinstance(op, CopyOp):
            for buffer, _ in op.accesses():
                if space_of(buffer) == "dram":
                    buffers[buffer] = math.prod(buffer.type.get_shape()) * 4  # pyright: ignore
    return macs, sum(buffers.values())


def trips(op) -> int:
    count, parent = 1, op.parent_op()
    while parent is not None:
        if isinstance(parent, scf.ForOp):
            lb, ub, step = (v.owner.value.value.data for v in (parent.lb, parent.ub, parent.step))
            count *= -(-(ub - lb) // step)
        parent = parent.parent_op()
    return count


def bench(name: str, target_name: str, depth: int, kernels: list[list[object]] | None = None) -> list[object]:
    model, inputs = MODELS[name]()
    shapes = {k: list(v.shape) for k, v in inputs.items()}
    target = load_target(target_name)
    start = time.perf_counter()
    result = compile_module(model, CompileOptions(target=target_name, depth=depth, input_shapes=shapes))
    compile_s = time.perf_counter() - start
    instructions = sum(1 for op in result.module.walk() if isinstance(op, InstructionOp))
    estimate = sum(int(row.get("est_cycles", 0)) for row in result.kernels)  # pyright: ignore
    if kernels is not None:
        tile_level = compile_module(
            model, CompileOptions(target=target_name, depth=depth, input_shapes=shapes, emit="tile")
        )
        traced = Simulator(result.module, target).run(inputs, trace=True).trace
        kernels += [[name, depth, *row] for row in _kernel_rows(tile_level, traced, target)]  # pyright: ignore
    simulator = Simulator(result.module, target)
    run, sim_s = _best(lambda: simulator.run(inputs), repeat=1)
    stats = run.stats  # pyright: ignore
    session = onnxruntime_session(model)
    reference, ort_s = _best(lambda: session.run(None, inputs))
    names = [o.name for o in model.graph.output]
    error = relative_error(run.outputs, dict(zip(names, reference, strict=True)))  # pyright: ignore
    compute_bound = stats.macs / target.matrix.macs_per_cycle
    minimal = minimal_dram_bytes(model, inputs, run.outputs)  # pyright: ignore
    bound = max(compute_bound, minimal / target.dram.bytes_per_cycle)
    matrix_busy = sum(e.busy for e in stats.engines if e.engine == "matrix")
    moved = stats.dram_read + stats.dram_write
    return [
        name, depth, f"{compile_s:.2f}", instructions, stats.instructions, stats.cycles, estimate,
        f"{bound:.0f}", f"{bound / stats.cycles:.2f}", f"{stats.utilisation():.1%}",
        stats.cycles - matrix_busy, f"{moved / 2**20:.2f}", f"{moved / minimal:.2f}", f"{sim_s:.2f}",
        f"{sim_s / ort_s:.0f}x", f"{error:.1e}",
    ]  # fmt: skip


HEADERS = [
    "model", "depth", "compile s", "static instr", "executed", "cycles", "est", "roofline", "efficiency",
    "matrix util", "matrix idle", "DRAM MiB", "x minimal", "sim s", "sim/ort", "rel err",
]  # fmt: skip
KERNEL_HEADERS = [
    "model", "depth", "kernel", "op", "tiles", "block", "buffer depth", "cycles", "alone", "est", "est/alone",
    "roofline", "efficiency",
]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--target", default="edge")
    parser.add_argument("--depths", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--kernels", action="store_true", help="also one row per kernel")
    args = parser.parse_args()
    kernels: list[list[object]] | None = [] if args.kernels else None
    rows = [bench(name, args.target, depth, kernels) for name in args.models for depth in args.depths]
    print(f"end-to-end on target '{args.target}' (one core)\n")
    print(format_table(HEADERS, rows))
    if kernels:
        print("\nkernels (cycles: span in the simulation; kernels may overlap)\n")
        print(format_table(KERNEL_HEADERS, kernels))


if __name__ == "__main__":
    main()
