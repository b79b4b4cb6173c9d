"""`aitc-opt -p` runs any prefix of the end-to-end pipeline (`passes.pipelines.lowering_specs`),
and what every prefix prints parses back and computes what the model computes: on the simulator
once the prefix reaches hw, on aitc's interpreters before. The model is split by place-on-host,
so schedules and host segments go through every pass too. The one prefix that must not compute
the model is the one ending at convert-tile-to-sync: its engines run concurrently with nothing
ordering them yet, and the sync interpreter reports the race that insert-semaphores removes."""

from __future__ import annotations

import numpy as np
import pytest

from aitc.diagnostics import AitcError
from aitc.frontend.onnx_import import import_onnx
from aitc.interp.run import run_module
from aitc.ir import parse_mlir, print_mlir
from aitc.model_zoo import mlp_with_host_ops
from aitc.passes.pipelines import lowering_specs
from aitc.reference import assert_close
from aitc.sim import Simulator
from aitc.tools.aitc_opt import main as aitc_opt

SPECS = lowering_specs("tiny", depth=2)


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory) -> tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]:
    model, inputs = mlp_with_host_ops()
    module = import_onnx(model)
    path = tmp_path_factory.mktemp("prefix") / "model.mlir"
    path.write_text(print_mlir(module))
    return str(path), inputs, run_module(module, inputs)


@pytest.mark.parametrize("length", range(1, len(SPECS) + 1), ids=lambda n: SPECS[n - 1].split("{")[0])
def test_every_prefix_runs_and_computes_the_model(graph_file, tmp_path, capsys, length: int):
    path, inputs, expected = graph_file
    output = tmp_path / "out.mlir"
    assert aitc_opt([path, "-p", ",".join(SPECS[:length]), "-o", str(output)]) == 0, capsys.readouterr().err
    module = parse_mlir(output.read_text(), str(output))
    last = SPECS[length - 1]
    if last.startswith("convert-tile-to-sync"):  # engines bound, no semaphores yet: it must race
        with pytest.raises(AitcError, match="data race"):
            run_module(module, inputs)
        return
    if last.startswith("convert-sync-to-hw"):
        outputs = Simulator(module, "tiny").run(inputs).outputs
    else:
        outputs = run_module(module, inputs)
    assert_close(outputs, expected, tolerance=1e-5)
