"""`make demo`: import the bundled example models, optimise them, run them at graph level and
show that they match onnxruntime.

For each examples/models/*.onnx: the per-node support summary (`aitc check`), the imported
graph-dialect op count before and after the `graph-optimize` pipeline, the wall time of each
step, and the largest error against onnxruntime on random inputs.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from aitc.files import write_atomic
from aitc.frontend.onnx_import import check_model, import_onnx
from aitc.interp.run import entry_function, random_inputs, run_module
from aitc.ir import print_mlir
from aitc.passes.pipelines import apply_pipeline
from aitc.report import format_table

HERE = Path(__file__).parent
OUT = HERE.parent / "out"


def graph_ops(module) -> Counter:
    return Counter(op.name for op in module.walk() if op.name.startswith("graph."))


def demo(path: Path) -> tuple:
    model = onnx.load(path)
    support = Counter(row.status for row in check_model(model))
    start = time.perf_counter()
    module = import_onnx(model)
    import_ms = (time.perf_counter() - start) * 1e3
    before = graph_ops(module)
    inputs = random_inputs(entry_function(module))
    plain = run_module(module, inputs)
    start = time.perf_counter()
    apply_pipeline(module, "graph-optimize")
    optimise_ms = (time.perf_counter() - start) * 1e3
    after = graph_ops(module)
    OUT.mkdir(exist_ok=True)
    write_atomic(OUT / f"{path.stem}.mlir", print_mlir(module))
    optimised = run_module(module, inputs)
    reference = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, inputs)
    error = 0.0
    for got_plain, got_opt, want in zip(plain.values(), optimised.values(), reference, strict=True):
        scale = max(1.0, float(np.abs(want).max()))
        worst = max(float(np.abs(got_plain - want).max()), float(np.abs(got_opt - want).max()))
        error = max(error, worst / scale)
    verdict = "MATCH" if error <= 1e-5 else "MISMATCH"
    nodes = f"{len(model.graph.node)} ({support['supported']} direct, {support['decomposed']} decomp.)"
    timings = (f"{import_ms:.0f}", f"{optimise_ms:.0f}")
    return (path.stem, nodes, sum(before.values()), sum(after.values()), *timings, f"{error:.1e}", verdict)


def main() -> None:
    models = sorted((HERE / "models").glob("*.onnx"))
    rows = [demo(path) for path in models]
    print("aitc demo: ONNX -> graph dialect -> graph-optimize -> numpy reference vs onnxruntime\n")
    headers = ["model", "ONNX nodes", "graph ops", "optimised", "import ms", "optimise ms", "rel. error"]
    headers.append("result")
    print(format_table(headers, rows))
    shown = OUT.relative_to(Path.cwd()) if OUT.is_relative_to(Path.cwd()) else OUT
    print(f"\noptimised graph-level IR written to {shown}/")
    if any(row[-1] != "MATCH" for row in rows):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
