"""The short public API, re-exported at the package top (`aitc.import_onnx`, `aitc.compile`,
`aitc.run`, `aitc.Session`): the common jobs in three or four lines.

    import aitc

    model = aitc.import_onnx("model.onnx", input_shapes={"x": [1, 3, 224, 224]})
    reference = aitc.run(model, {"x": x})           # the graph-level (numpy) reference
    compiled = aitc.compile("model.onnx", target="edge")
    print(compiled.report())                        # per-kernel decisions, placement, passes
    outputs = compiled.run({"x": x})                # hw level: on the simulator
    compiled.save("model.aitb")                     # .aitb at hw level, else .mlir text

Pass authors keep the module-level API (`aitc.passes.pipelines`, `aitc.ir`, `aitc.interp.run`,
`aitc.sim`): this module only composes it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import onnx
from xdsl.dialects.builtin import ModuleOp

from aitc.binary import save_program
from aitc.compiler import CompileOptions, CompileResult, compile_module, compile_pipeline_spec, format_report
from aitc.files import write_atomic
from aitc.frontend.onnx_import import import_onnx as _import_onnx_model
from aitc.interp.run import run_module
from aitc.ir import print_mlir
from aitc.sim import SimResult, Simulator
from aitc.target import Target, load_target
from aitc.tune import TuneOptions, compile_tuned

ModelSource = str | os.PathLike | onnx.ModelProto | ModuleOp
"""An ONNX model (path or proto), a `.mlir` path at any level, or a module."""


def import_onnx(
    model: str | os.PathLike | onnx.ModelProto, input_shapes: Mapping[str, Sequence[int]] | None = None
) -> ModuleOp:
    """The graph-level module of an ONNX model (`aitc import`); `input_shapes` pins dynamic dims."""
    return _import_onnx_model(
        model if isinstance(model, onnx.ModelProto) else str(model), dict(input_shapes or {})
    )


def run(module: ModuleOp, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Executes `module` at its level (graph, tile, sync: the interpreters; hw: the simulator)
    and returns its outputs by name."""
    if any(op.name == "hw.program" for op in module.walk()):
        return Simulator(module).run(inputs).outputs
    return run_module(module, inputs)


@dataclass
class Compiled:
    """A compiled model: the module at `level`, the target it was compiled for, and what the
    compiler decided (`report()`)."""

    result: CompileResult
    source: ModelSource
    options: CompileOptions

    @property
    def pipeline(self) -> str:
        """The `aitc-opt -p` string of the passes that ran, the target given once (computed on
        request: it loads the input again)."""
        return compile_pipeline_spec(self.source, self.options)

    @property
    def module(self) -> ModuleOp:
        return self.result.module

    @property
    def level(self) -> str:
        return self.result.level

    @property
    def target(self) -> Target:
        assert self.result.target is not None, "no pass ran, so no target was recorded"
        return load_target(self.result.target)

    def report(self) -> str:
        """The compile report `aitc compile` prints: kernels, placement, pass count and time."""
        return format_report(self.result)

    def mlir(self) -> str:
        """The module as `.mlir` text."""
        return print_mlir(self.module)

    def save(self, path: str | os.PathLike) -> None:
        """Writes an `.aitb` binary (hw level, `path` ending in .aitb) or the `.mlir` text,
        atomically."""
        if Path(path).suffix == ".aitb":
            if self.level != "hw":
                raise ValueError(f"an .aitb binary needs the hw level, this is '{self.level}'")
            save_program(path, self.module, self.target)
        else:
            write_atomic(path, self.mlir())

    def simulate(self, inputs: Mapping[str, np.ndarray], trace: bool = False) -> SimResult:
        """One simulated execution (hw level): outputs, cycle statistics, optional trace."""
        if self.level != "hw":
            raise ValueError(f"simulation needs the hw level, this is '{self.level}'")
        return Simulator(self.module, self.target, verified=True).run(inputs, trace)

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The outputs by name: simulated at hw level, interpreted at the others."""
        return self.simulate(inputs).outputs if self.level == "hw" else run_module(self.module, inputs)


def compile(
    model: ModelSource,
    target: str | None = None,
    *,
    emit: str = "hw",
    depth: int = 2,
    optimize: bool = True,
    host_fallback: bool = True,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    cores: int | None = 1,
    shard: str = "auto",
    verify_each: bool | None = None,
    tune: bool | TuneOptions = False,
) -> Compiled:
    """Compiles `model` for `target` (a preset name or FILE.toml; None: the input's own, else
    `edge`) down to `emit` (graph, tile, sync or hw), as `aitc compile` does; with `cores` > 1
    sharded by strategy `shard` (auto, tp, sp, dp, tp-sp, layerwise, measure, none) as
    `aitc compile --cores --shard`;
    `cores=None` lets the cost model choose between one core and all, as the CLI's default;
    `verify_each` verifies the IR after every pass (`aitc compile --verify-each`; None: as
    `CompileOptions` says, i.e. when `AITC_VERIFY_EACH=1`); `tune` measures each kernel's best
    tilings on the simulator as `aitc compile --tune` (True: the default `TuneOptions`, whose
    cache is `aitc.tune.default_cache_path()`)."""
    options = CompileOptions(
        target,
        depth,
        emit,
        optimize,
        host_fallback,
        dict(input_shapes or {}),
        cores=cores,
        shard=shard,
    )
    if verify_each is not None:
        options = replace(options, verify_each=verify_each)
    source = str(model) if isinstance(model, os.PathLike) else model
    if tune:
        result = compile_tuned(source, options, TuneOptions() if tune is True else tune)
    else:
        result = compile_module(source, options)
    return Compiled(result, source, options)
