"""Output paths of every `aitc` command that writes a file (`aitc.files`' rules): checked before
any work, written all or none, never replacing an input, a symlink or a device, no temp files."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest

from aitc import files
from aitc.diagnostics import AitcError
from aitc.testing import model_zoo
from aitc.tools.aitc_main import main

EXAMPLE_HW = Path(__file__).parents[3] / "examples" / "hw" / "tiled_matmul.mlir"


@pytest.fixture
def work(tmp_path, monkeypatch, capsys) -> Path:
    """A folder holding the inputs every command needs: m.onnx, p.mlir, p.aitb, in.npz."""
    monkeypatch.chdir(tmp_path)
    model, _ = model_zoo.mlp(batch=2)
    model = model_zoo.with_static_batch(model, 2)
    onnx.save(model, tmp_path / "m.onnx")
    (tmp_path / "p.mlir").write_text(EXAMPLE_HW.read_text())
    assert main(["asm", "p.mlir", "-o", "p.aitb"]) == 0
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "in.npz", a=rng.random((16, 16), np.float32), b=rng.random((16, 16), np.float32))
    capsys.readouterr()
    return tmp_path


COMMANDS: dict[str, Callable[[str], list[str]]] = {
    "import": lambda out: ["import", "m.onnx", "-o", out],
    "compile": lambda out: ["compile", "m.onnx", "--target", "tiny", "-o", out],
    "compile-emit": lambda out: ["compile", "m.onnx", "--target", "tiny", "--emit", "tile", "-o", out],
    "run-outputs": lambda out: ["run", "p.aitb", "--inputs", "in.npz", "--outputs", out],
    "run-trace": lambda out: ["run", "p.aitb", "--inputs", "in.npz", "--trace", out],
    "run-graph": lambda out: ["run", "m.onnx", "--outputs", out],
    "asm": lambda out: ["asm", "p.mlir", "-o", out],
    "disasm": lambda out: ["disasm", "p.aitb", "-o", out],
}

BAD_PATHS: dict[str, tuple[str, str]] = {
    # name -> (output path, expected message)
    "missing folder": ("newdir/out", "folder newdir does not exist"),
    "trailing slash": ("newdir/", "a trailing '/' names a folder"),
    "under a file": ("m.onnx/out", "m.onnx is not a folder"),
    "a folder": ("sub", "it is a folder; name a file inside it"),
    "name too long": ("n" * 256, "the file name is 256 bytes long"),
    "symlink loop": ("loop", "it is a symlink loop"),
    "empty": ("", "the output path is empty"),
}


def _snapshot(folder: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every entry of `folder`: its mode and its bytes (a symlink: its target text)."""
    entries = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            entries[str(path)] = (info.st_mode, os.readlink(path))
        elif stat.S_ISREG(info.st_mode):
            entries[str(path)] = (info.st_mode, path.read_bytes())
        else:
            entries[str(path)] = (info.st_mode, b"")
    return entries


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("bad", sorted(BAD_PATHS))
def test_a_bad_output_path_is_refused_before_any_work(capsys, work, command, bad):
    (work / "sub").mkdir()
    (work / "loop").symlink_to("loop")
    before = _snapshot(work)
    path, message = BAD_PATHS[bad]
    assert main(COMMANDS[command](path)) == 1
    out, err = capsys.readouterr()
    assert message in err
    assert "Traceback" not in err
    assert "internal error" not in err
    assert out == ""  # refused before any work: no report, no progress
    assert _snapshot(work) == before


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_output_that_is_an_input_is_refused(capsys, work, command):
    argv = COMMANDS[command]("OUT")
    given = [a for a in argv if Path(a).is_file()]
    for source in given:
        before = _snapshot(work)
        assert main([source if a == "OUT" else a for a in argv]) == 1
        assert f"it is the input {source}" in capsys.readouterr().err
        assert _snapshot(work) == before


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_outputs_go_through_symlinks_and_keep_them(capsys, work, command):
    (work / "real").mkdir()
    (work / "link").symlink_to("real/out")
    assert main(COMMANDS[command]("link")) == 0, capsys.readouterr().err
    assert (work / "link").is_symlink()
    assert (work / "real" / "out").stat().st_size > 0
    assert sorted(p.name for p in (work / "real").iterdir()) == ["out"]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_character_device_is_written_through_not_replaced(capsys, work, command):
    device = work / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        device = Path("/dev/null")  # written through, so no harm even there
    assert main(COMMANDS[command](str(device))) == 0, capsys.readouterr().err
    assert stat.S_ISCHR(device.stat().st_mode)


def test_a_fifo_nobody_reads_is_an_error_not_a_hang(capsys, work):
    os.mkfifo(work / "fifo")
    assert main(COMMANDS["import"]("fifo")) == 1
    assert "no process is reading this FIFO" in capsys.readouterr().err
    assert stat.S_ISFIFO((work / "fifo").stat().st_mode)


def test_a_255_byte_name_is_legal_and_no_temp_file_is_left(capsys, work):
    name = "n" * 250 + ".mlir"
    before = set(os.listdir(work))
    assert main(COMMANDS["import"](name)) == 0, capsys.readouterr().err
    assert set(os.listdir(work)) - before == {name}


def test_new_files_follow_the_umask_and_replaced_files_keep_their_mode(capsys, work):
    old = os.umask(0o027)
    try:
        assert main(COMMANDS["import"]("new.mlir")) == 0
        (work / "kept.mlir").write_text("old")
        os.chmod(work / "kept.mlir", 0o604)
        assert main(COMMANDS["import"]("kept.mlir")) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((work / "new.mlir").stat().st_mode) == 0o640
    assert stat.S_IMODE((work / "kept.mlir").stat().st_mode) == 0o604
    assert (work / "kept.mlir").read_text().startswith("builtin.module")


def test_run_writes_trace_and_outputs_together_or_not_at_all(capsys, work):
    (work / "t.json").write_text("previous trace")
    argv = ["run", "p.aitb", "--inputs", "in.npz", "--trace", "t.json", "--outputs", "BAD/"]
    assert main(argv) == 1
    assert (work / "t.json").read_text() == "previous trace"
    argv = ["run", "p.aitb", "--inputs", "in.npz", "--trace", "t.json", "--outputs", "t.json"]
    assert main(argv) == 1
    assert "same file as the output t.json" in capsys.readouterr().err


def test_a_failed_rename_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "out.mlir"
    target.write_text("previous")

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(AitcError, match="No space left on device"):
        files.write_outputs({target: "new", tmp_path / "other": "new"})
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["out.mlir"]
