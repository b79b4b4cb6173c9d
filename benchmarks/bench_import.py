"""Frontend benchmark: import time and peak memory for a ~90 MB encoder, and the graph
interpreter's wall time against onnxruntime's on the same model (same process).

    python benchmarks/bench_import.py [--layers 6] [--hidden 512] [--ffn 2048] [--seq 128]

Prints a table; asserts nothing about speed (speed is measured, not tested).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from aitc.frontend.onnx_import import import_onnx
from aitc.interp.run import run_module
from aitc.ir import parse_mlir, print_mlir
from aitc.report import format_table
from aitc.testing.model_zoo import encoder


def _timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def _best_of(n: int, fn, *args):
    times = []
    result = None
    for _ in range(n):
        result, seconds = _timed(fn, *args)
        times.append(seconds)
    return result, min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--ffn", type=int, default=2048)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    model, inputs = encoder(
        layers=args.layers, hidden=args.hidden, heads=args.heads, ffn=args.ffn, seq=args.seq
    )
    weight_bytes = sum(onnx.numpy_helper.to_array(t).nbytes for t in model.graph.initializer)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "encoder.onnx"
        onnx.save(model, path)
        tracemalloc.start()
        module, import_s = _timed(import_onnx, path)
        _, traced_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        text, print_s = _timed(print_mlir, module)
        _, parse_s = _timed(parse_mlir, text)
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        reference, ort_s = _best_of(args.repeat, session.run, None, inputs)
        outputs, interp_s = _best_of(args.repeat, run_module, module, inputs)
    ops = sum(1 for _ in module.walk())
    error = max(float(np.abs(o - r).max()) for o, r in zip(outputs.values(), reference, strict=True))
    scale = max(1.0, max(float(np.abs(r).max()) for r in reference))
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = [
        ("model", f"{args.layers}-layer encoder, hidden {args.hidden}, ffn {args.ffn}, seq {args.seq}"),
        ("weights", f"{weight_bytes / 1e6:.1f} MB in {len(model.graph.initializer)} initializers"),
        ("graph ops", ops),
        ("import time", f"{import_s:.2f} s"),
        ("import peak traced memory", f"{traced_peak / 1e6:.0f} MB"),
        ("process peak RSS", f"{peak_rss_mb:.0f} MB"),
        ("print .mlir", f"{print_s:.2f} s ({len(text) / 1e6:.0f} MB of text)"),
        ("parse .mlir", f"{parse_s:.2f} s"),
        (f"onnxruntime run (best of {args.repeat})", f"{ort_s * 1e3:.1f} ms"),
        (f"graph interpreter run (best of {args.repeat})", f"{interp_s * 1e3:.1f} ms"),
        ("interpreter / onnxruntime", f"{interp_s / ort_s:.1f}x"),
        ("max |error| / max(1, max|ref|)", f"{error / scale:.2e}"),
    ]
    print(format_table(["measure", "value"], rows))


if __name__ == "__main__":
    main()
