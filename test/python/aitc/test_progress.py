"""Long work, as a user sees it: progress bars (`aitc.progress`) shown on stderr when it is a
terminal, for the passes of a compile (and the cores of a multi-core one) and the instructions
of a simulation; nothing when stderr is not a terminal or with --quiet; the compiled program
the same either way. The compile report and `aitc run --stats` give wall time and peak RSS."""

from __future__ import annotations

import io
import re

import pytest

from aitc import progress
from aitc.compiler import CompileOptions, compile_module
from aitc.ir import print_mlir
from aitc.sim import Simulator
from aitc.target import load_target
from aitc.testing import model_zoo
from aitc.tools.aitc_main import main


class Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def mlp():
    model, inputs = model_zoo.mlp()
    return model, inputs, {name: value.shape for name, value in inputs.items()}


def compiled_text(model, shapes, cores: int = 1) -> str:
    options = CompileOptions(target="edge", cores=cores, input_shapes=shapes)
    return print_mlir(compile_module(model, options).module)


def test_a_terminal_sees_compile_and_simulate_bars(monkeypatch, mlp):
    model, inputs, shapes = mlp
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    result = compile_module(model, CompileOptions(target="edge", cores=1, input_shapes=shapes))
    Simulator(result.module, load_target("edge")).run(inputs)
    shown = terminal.getvalue()
    assert "compile" in shown
    assert "pass" in shown
    assert "simulate" in shown
    assert "instr" in shown


def test_a_multicore_compile_shows_its_cores(monkeypatch, mlp):
    model, _, shapes = mlp
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    compiled_text(model, shapes, cores=2)
    assert "lower per core" in terminal.getvalue()


@pytest.mark.parametrize("why", ["not a terminal", "quiet"])
def test_no_bar_without_a_terminal_or_when_quiet(monkeypatch, mlp, why: str):
    model, _, shapes = mlp
    stderr = io.StringIO() if why == "not a terminal" else Terminal()
    monkeypatch.setattr("sys.stderr", stderr)
    monkeypatch.setattr(progress, "_quiet", why == "quiet")
    compiled_text(model, shapes)
    assert stderr.getvalue() == ""


def test_bars_change_nothing_compiled(monkeypatch, mlp):
    model, _, shapes = mlp
    plain = compiled_text(model, shapes)
    monkeypatch.setattr("sys.stderr", Terminal())
    assert compiled_text(model, shapes) == plain


@pytest.mark.parametrize("quiet", [False, True])
def test_cli_quiet(capsys, monkeypatch, tmp_path, mlp, quiet: bool):
    """`aitc compile` on a terminal shows the bar on stderr; with --quiet it shows nothing.
    The report on stdout is the same."""
    model, _, shapes = mlp
    path = tmp_path / "mlp.onnx"
    path.write_bytes(model.SerializeToString())
    shape = "x".join(map(str, shapes["x"]))
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    argv = ["compile", str(path), "--input-shape", f"x={shape}", "--cores", "1"]
    argv += ["-o", str(tmp_path / "m.aitb")]
    try:
        assert main([*argv, "--quiet"] if quiet else argv) == 0
    finally:
        progress.set_quiet(False)
    assert "wrote" in capsys.readouterr().out
    assert ("compile" in terminal.getvalue()) != quiet


def test_compile_and_run_report_time_and_peak_memory(capsys, tmp_path, mlp):
    model, _, shapes = mlp
    path, binary = tmp_path / "mlp.onnx", tmp_path / "m.aitb"
    path.write_bytes(model.SerializeToString())
    shape = "x".join(map(str, shapes["x"]))
    assert main(["compile", str(path), "--input-shape", f"x={shape}", "--cores", "1", "-o", str(binary)]) == 0
    report = capsys.readouterr().out
    assert re.search(r"^\d+ passes, \d+\.\d\d s, peak RSS [1-9]\d* MiB$", report, re.M), report
    assert main(["run", str(binary), "--stats"]) == 0
    stats = capsys.readouterr().out
    assert re.search(r"^host: simulated in \d+\.\d\d s, peak RSS [1-9]\d* MiB$", stats, re.M), stats
