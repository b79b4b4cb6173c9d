"""Performance verification: `aitc perf MODEL.onnx|X.aitb`, static estimates next to a simulated
run, per ONNX node, with what bounds each and the run's critical path.

    report = profile_model("model.onnx", CompileOptions(target="edge", cores=1))
    print(format_perf(report, 20))
    files = report_files(report)          # {"perf.json": ..., "roofline.svg": ..., ...}

`profile.py` builds the rows, `timeline.py` reads a trace's intervals, `critical.py` walks the
critical path, `output.py` formats the table, JSON, CSV, charts, HTML page and Perfetto trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx

from aitc.compiler import CompileOptions, compile_module, kernel_report
from aitc.diagnostics import AitcError
from aitc.interp.run import random_program_inputs
from aitc.perf.output import FILES, format_perf, report_files
from aitc.perf.profile import PerfReport, build_report
from aitc.sim import Simulator
from aitc.sim.session import load_program_file
from aitc.target import load_target

__all__ = ["FILES", "PerfReport", "format_perf", "profile_model", "report_files"]


def profile_model(
    source: str | Path | onnx.ModelProto,
    options: CompileOptions,
    inputs: Mapping[str, np.ndarray] | None = None,
    seed: int = 0,
) -> PerfReport:
    """Compiles `source` (ONNX or .mlir; a `.aitb` is run as it is) with `options`, simulates it
    once with a trace on `inputs` (seeded random ones when None) and builds the report. The
    estimates are the compile's kernels, or those its hw programs recorded (a multi-core
    program's per core and per collective, a `.aitb`'s from when it was compiled)."""
    name = source if isinstance(source, str | Path) else (source.graph.name or "model")
    if isinstance(source, str | Path) and str(source).endswith(".aitb"):
        target = load_target(options.target) if options.target else None
        module = load_program_file(source, target)
        kernels, model = kernel_report(module), None
    else:
        result = compile_module(source, options)
        target = load_target(result.target) if result.target else None
        module = result.module
        kernels = result.kernels or kernel_report(module)
        model = source if isinstance(source, onnx.ModelProto) else _onnx_model(source)
    simulator = Simulator(module, target)
    run_inputs = dict(inputs) if inputs is not None else random_program_inputs(simulator.inputs, seed)
    run = simulator.run(run_inputs, trace=True)
    if run.trace is None:
        raise AitcError(f"{name}: the simulator recorded no trace")
    stats = run.stats
    report = build_report(
        Path(str(name)).name, simulator.target, run.trace, stats.cycles, stats.utilisation(), kernels, model,
        options.input_shapes,
    )  # fmt: skip
    if not any("est_cycles" in row for row in kernels):
        report.missing = "the program records no estimates (hand-written hw, or a .aitb of an older aitc)"
    return report


def _onnx_model(path: str | Path) -> onnx.ModelProto | None:
    """The ONNX model at `path` (for node op types and shapes), None for other files."""
    if not str(path).endswith(".onnx"):
        return None
    return onnx.load(str(path), load_external_data=False)
