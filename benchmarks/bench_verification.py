"""Performance and accuracy verification on the example models and a MiniLM-size encoder.

    python benchmarks/bench_verification.py [--target edge] [--models NAME ...]

Per model, one core:

- `aitc perf` (`aitc.perf.profile_model`): simulated cycles, kernels, and how far the cost
  model's per-kernel estimates are from the simulated cycles alone: median and p90 of
  |est - cycles| / cycles, kernels within 5% (issue 13's aim: median <= 5%, p90 <= 15%);
- `aitc verify` (`aitc.verify.verify_model`, entire mode at hw level): tensors compared against
  onnxruntime, the lowest SQNR, tensors outside tolerance;
- the wall time of each.

int8 rows (cycles and accuracy of the quantized models) come once aitc compiles QDQ models.
Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import onnx

from aitc.compiler import CompileOptions
from aitc.files import load_arrays
from aitc.perf import profile_model
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


if __name__ == "__main__":
    main()
