"""`aitc-opt -p` runs any prefix of the end-to-end pipeline (`passes.pipelines.lowering_pipeline`,
printed by `pipeline_spec`), and what every prefix prints parses back and computes what the model
computes: on the simulator once the prefix reaches hw, on aitc's interpreters before. The model is
split by place-on-host, so schedules and host segments go through every pass too. The one prefix
that must not compute the model is the one ending at convert-tile-to-sync: its engines run
concurrently with nothing ordering them yet, and the sync interpreter reports the race that
insert-semaphores removes. The target is given once, to the first pass that takes one.

`aitc compile --print-pipeline` prints the `-p` string of what `aitc compile` runs: through
`aitc-opt` it gives the IR `aitc compile --emit` gives."""

from __future__ import annotations

import numpy as np
import pytest

from aitc.diagnostics import AitcError
from aitc.frontend.onnx_import import import_onnx
from aitc.interp.run import run_module
from aitc.ir import parse_mlir, print_mlir
from aitc.passes.pipelines import lowering_pipeline, pipeline_spec, with_target
from aitc.reference import assert_close
from aitc.sim import Simulator
from aitc.testing.model_zoo import mlp_with_host_ops
from aitc.tools.aitc_main import main as aitc
from aitc.tools.aitc_opt import main as aitc_opt

PASSES = with_target(lowering_pipeline(depth=2), "tiny")


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory) -> tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]:
    model, inputs = mlp_with_host_ops()
    module = import_onnx(model)
    path = tmp_path_factory.mktemp("prefix") / "model.mlir"
    path.write_text(print_mlir(module))
    return str(path), inputs, run_module(module, inputs)


@pytest.mark.parametrize("length", range(1, len(PASSES) + 1), ids=lambda n: PASSES[n - 1].name)
def test_every_prefix_runs_and_computes_the_model(graph_file, tmp_path, capsys, length: int):
    path, inputs, expected = graph_file
    output = tmp_path / "out.mlir"
    spec = pipeline_spec(PASSES[:length])
    assert aitc_opt([path, "-p", spec, "-o", str(output)]) == 0, capsys.readouterr().err
    module = parse_mlir(output.read_text(), str(output))
    last = PASSES[length - 1].name
    if last in ("convert-tile-to-sync", "schedule-engines"):  # engines bound, no semaphores yet: it must race
        with pytest.raises(AitcError, match="data race"):
            run_module(module, inputs)
        return
    if last == "convert-sync-to-hw":
        outputs = Simulator(module, "tiny").run(inputs).outputs
    else:
        outputs = run_module(module, inputs)
    assert_close(outputs, expected, tolerance=1e-5)


@pytest.mark.parametrize("emit", ["tile", "hw"])
def test_printed_compile_pipeline_through_aitc_opt_is_aitc_compile(graph_file, tmp_path, capsys, emit: str):
    path = graph_file[0]
    options = ["--target", "tiny", "--depth", "3", "--emit", emit]
    assert aitc(["compile", path, *options, "--print-pipeline"]) == 0
    spec = capsys.readouterr().out.strip()
    assert "graph-channels-last{target=" in spec
    assert "depth=3" in spec
    compiled, optimized = tmp_path / "compiled.mlir", tmp_path / "opt.mlir"
    # the printed pipeline is one core's (without --cores, a compile to hw may shard over tiny's 2)
    assert aitc(["compile", path, *options, "--cores", "1", "-o", str(compiled)]) == 0, (
        capsys.readouterr().err
    )
    assert aitc_opt([path, "-p", spec, "--print-debuginfo", "-o", str(optimized)]) == 0, (
        capsys.readouterr().err
    )
    same_printer = [print_mlir(parse_mlir(f.read_text(), str(f))) for f in (optimized, compiled)]
    assert same_printer[0] == same_printer[1]


def test_print_pipeline_with_several_cores_stops_at_the_graph_level(graph_file, capsys):
    """A multi-core compile links per-core programs below the graph level, which no aitc-opt
    pipeline does: --print-pipeline --cores 2 is refused for hw and prints the graph passes
    (optimize, then the shard passes) for --emit graph."""
    path = graph_file[0]
    assert aitc(["compile", path, "--target", "tiny", "--cores", "2", "--print-pipeline"]) == 1
    err = capsys.readouterr().err
    assert "--print-pipeline with --cores 2" in err
    assert "--emit graph" in err
    argv = ["compile", path, "--target", "tiny", "--cores", "2", "--emit", "graph", "--print-pipeline"]
    assert aitc(argv) == 0
    spec = capsys.readouterr().out.strip()
    assert "shard-propagate{" in spec
    assert spec.endswith("shard-partition,shard-simplify")
