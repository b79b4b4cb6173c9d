"""Performance and accuracy verification on the example models and a MiniLM-size encoder.

    python benchmarks/bench_verification.py [--target edge] [--models NAME ...]

Per model, one core:

- `aitc perf` (`aitc.perf.profile_model`): simulated cycles, kernels, and how far the cost
  model's per-kernel estimates are from the simulated cycles alone: median and p90 of
  |est - cycles| / cycles, kernels within 5% (issue 13's aim: median <= 5%, p90 <= 15%);
- `aitc verify` (`aitc.verify.verify_model`, entire mode at hw level): tensors compared against
  onnxruntime, the lowest SQNR, tensors outside tolerance;
- the wall time of each.

Then fp32 against int8 (`aitc quantize`, minmax, per-tensor weights; calibrated on the
model's own inputs, on a seeded random input for the CNN examples (measured on another), or
for the digits MLP on 100 training images): simulated cycles and DRAM
bytes of both compiled for one core, the int8 matmul instructions (MatMuls and Convs), and accuracy
(the int8 output's SQNR against the fp32 output; for the digits MLP top-1 on the 597 held-out
images, float and int8, and their agreement).

Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import onnx

from aitc import api
from aitc.compiler import CompileOptions
from aitc.files import load_arrays
from aitc.perf import profile_model
from aitc.quantize import quantize_model
from aitc.report import format_table
from aitc.testing import model_zoo
from aitc.verify import verify_model

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "models"


def _examples() -> dict[str, tuple[onnx.ModelProto, dict[str, np.ndarray] | None]]:
    found: dict[str, tuple[onnx.ModelProto, dict[str, np.ndarray] | None]] = {}
    for path in sorted(EXAMPLES.glob("*.onnx")):
        inputs = path.with_suffix(".inputs.npz")
        found[path.stem] = (onnx.load(str(path)), load_arrays(inputs) if inputs.exists() else None)
    model, inputs = model_zoo.encoder(layers=6, hidden=384, heads=12, ffn=1536, seq=128)
    found["minilm"] = (model, inputs)
    return found


def _shapes(inputs: dict[str, np.ndarray] | None) -> dict[str, list[int]]:
    return {name: list(value.shape) for name, value in (inputs or {}).items()}


def bench(name: str, model: onnx.ModelProto, inputs, target: str) -> list[object]:
    options = CompileOptions(target=target, cores=1, input_shapes=_shapes(inputs))
    start = time.perf_counter()
    report = profile_model(model, options, inputs)
    perf_seconds = time.perf_counter() - start
    errors = report.errors
    start = time.perf_counter()
    checked = verify_model(model, options, "hw", ("entire",), inputs)
    verify_seconds = time.perf_counter() - start
    compared = [c.comparison for c in checked.checks if c.comparison is not None]
    lowest = min((c.sqnr_db for c in compared if c.profile.startswith("float")), default=float("inf"))
    median = "-" if errors.median is None else f"{errors.median:.1%}"
    p90 = "-" if errors.p90 is None else f"{errors.p90:.1%}"
    return [
        name, report.cycles, errors.count, median, p90, errors.within, f"{perf_seconds:.1f}",
        len(compared), f"{lowest:.1f}", len(checked.failures), f"{verify_seconds:.1f}",
    ]  # fmt: skip


HEADERS = [
    "model", "cycles", "kernels", "median est err", "p90 est err", "within 5%", "perf s",
    "tensors", "min SQNR dB", "outside tol", "verify s",
]  # fmt: skip


def _compiled_run(model: onnx.ModelProto, inputs: dict[str, np.ndarray], target: str):
    """(outputs, cycles, DRAM bytes, int8 matmul instructions) of `model` compiled for one core."""
    compiled = api.compile(model, target, input_shapes=_shapes(inputs), cores=1)
    run = compiled.simulate(inputs)
    int8 = sum("dtype=i8" in line for line in compiled.mlir().splitlines() if "hw.matmul" in line)
    return run.outputs, run.stats.cycles, run.stats.dram_read + run.stats.dram_write, int8


def _sqnr(got: np.ndarray, want: np.ndarray) -> float:
    noise = float(np.sum((got.astype(np.float64) - want) ** 2))
    return float("inf") if noise == 0 else 10 * np.log10(float(np.sum(want.astype(np.float64) ** 2)) / noise)


def int8_row(
    name: str, model: onnx.ModelProto, inputs, calibration, target: str, labels=None
) -> list[object]:
    """fp32 against int8 for one model (module docstring)."""
    start = time.perf_counter()
    quantized, _ = quantize_model(model, calibration)
    float_out, float_cycles, float_dram, _ = _compiled_run(model, inputs, target)
    int8_out, int8_cycles, int8_dram, int8_matmuls = _compiled_run(quantized, inputs, target)
    output = next(iter(float_out))
    accuracy = f"SQNR {_sqnr(int8_out[output], float_out[output]):.1f} dB"
    if labels is not None:
        top_float, top_int8 = float_out[output].argmax(axis=1), int8_out[output].argmax(axis=1)
        accuracy = (
            f"top-1 {np.mean(top_float == labels):.2%} -> {np.mean(top_int8 == labels):.2%}, "
            f"agreement {np.mean(top_float == top_int8):.2%}"
        )
    return [
        name, float_cycles, int8_cycles, f"{int8_cycles / float_cycles:.2f}", f"{float_dram / 1e6:.2f}",
        f"{int8_dram / 1e6:.2f}", int8_matmuls, accuracy, f"{time.perf_counter() - start:.1f}",
    ]  # fmt: skip


INT8_HEADERS = [
    "model", "fp32 cycles", "int8 cycles", "int8/fp32", "fp32 DRAM MB", "int8 DRAM MB", "int8 matmuls",
    "accuracy", "wall s",
]  # fmt: skip


def int8_rows(models, names: list[str], target: str) -> list[list[object]]:
    digits, images, labels = model_zoo.digits_mlp()
    held_out = slice(model_zoo.DIGITS_TRAIN, None)
    rows = [
        int8_row("digits_mlp", digits, {"x": images[held_out]}, {"x": images[:100]}, target, labels[held_out])
    ]  # fmt: skip
    for name in names:
        model, inputs = models[name]
        if not any(n.op_type in ("MatMul", "Gemm", "Conv") for n in model.graph.node):
            continue
        if inputs is None:  # calibrated on one seeded random input, measured on another
            rows.append(int8_row(name, model, _random_inputs(model, 1), _random_inputs(model, 0), target))
        else:
            rows.append(int8_row(name, model, inputs, inputs, target))
    return rows


def _random_inputs(model: onnx.ModelProto, seed: int) -> dict[str, np.ndarray]:
    """Standard normal f32 inputs of the model's (static) input shapes."""
    rng = np.random.default_rng(seed)
    initializers = {i.name for i in model.graph.initializer}
    return {
        i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
        for i in model.graph.input
        if i.name not in initializers
    }


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--target", default="edge")
    parser.add_argument("--models", nargs="+", help="model names (default: every example and minilm)")
    args = parser.parse_args()
    models = _examples()
    rows = []
    for name in args.models or list(models):
        model, inputs = models[name]
        rows.append(bench(name, model, inputs, args.target))
    print(f"performance and accuracy verification on '{args.target}', one core (aitc perf, aitc verify)\n")
    print(format_table(HEADERS, rows))
    print(f"\nfp32 against int8 (aitc quantize) on '{args.target}', one core\n")
    print(format_table(INT8_HEADERS, int8_rows(models, args.models or list(models), args.target)))


if __name__ == "__main__":
    main()
