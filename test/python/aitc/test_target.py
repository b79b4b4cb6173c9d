"""Target descriptions (`aitc/target.py`): presets, `aitc target list|show`, validation of TOML
files (every message names the key), and FILE.toml wherever a tool takes --target."""

from __future__ import annotations

from pathlib import Path

import pytest

from aitc import binary
from aitc.diagnostics import AitcError
from aitc.target import describe, load_target, preset_names
from aitc.tools.aitc_main import main

PRESETS = ("edge", "server", "tiny")
TINY_TOML = (Path(binary.__file__).parent / "targets" / "tiny.toml").read_text()

PROGRAM = """
hw.program @p target "{target}" {{
  hw.core 0 {{
    hw.matmul acc[0x0] <- sram[0x0], sram[0x40], m=4, k=4, n=4
    hw.end
  }}
}}
"""


def toml_file(tmp_path: Path, text: str, name: str = "npu.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(AitcError) as caught:
        load_target(path)
    return caught.value.problems


# --------------------------------------------------------------------------- presets


def test_preset_names():
    assert tuple(preset_names()) == PRESETS


@pytest.mark.parametrize("name", PRESETS)
def test_presets_load(name: str):
    target = load_target(name)
    assert target.name == name
    assert target.cores >= 1
    assert target.dma.queues >= 2
    assert len(target.fingerprint()) == 8
    assert target.fingerprint() == load_target(name).fingerprint()
    assert f"target {name}:" in describe(target)


def test_fingerprints_differ_between_presets():
    assert len({load_target(name).fingerprint() for name in PRESETS}) == len(PRESETS)


def test_a_copied_preset_has_the_presets_fingerprint(tmp_path: Path):
    assert load_target(toml_file(tmp_path, TINY_TOML)).fingerprint() == load_target("tiny").fingerprint()


@pytest.mark.parametrize("name", ["x" * 5000, "a\0b", "tiny" + "(" * 100000])
def test_a_name_the_file_system_refuses_is_an_unknown_target(name: str):
    """Too long for a file name, or holding a NUL: not an OSError, the usual message (clipped)."""
    with pytest.raises(AitcError, match="unknown target") as error:
        load_target(name)
    assert len(str(error.value)) < 300


def test_unknown_target_name():
    with pytest.raises(AitcError, match="unknown target 'huge'"):
        load_target("huge")


def test_missing_target_file(tmp_path: Path):
    with pytest.raises(AitcError, match="no such target file"):
        load_target(tmp_path / "absent.toml")


# --------------------------------------------------------------------------- invalid files


@pytest.mark.parametrize(
    ("edit", "key", "message"),
    [
        (lambda t: t.replace("[core]\n", "[core]\ncolour = 3\n"), "core.colour", "unknown key"),
        (lambda t: t.replace("sram_bytes = 16384", "sram_bytes = -5"), "core.sram_bytes", "must be > 0"),
        (lambda t: t.replace("semaphores = 16\n", ""), "semaphores", "missing key"),
        (lambda t: t.replace("cores = 2\n", 'cores = "two"\n'), "cores", "must be an integer"),
        (lambda t: t.replace("queues = 2", "queues = 1"), "dma.queues", "must be >= 2"),
        (lambda t: t.replace('dtypes = ["f32", "i8"]', 'dtypes = ["f16"]'), "matrix.dtypes", "must list"),
        (
            lambda t: t.replace("rows = 4\ncols = 4", "rows = 64\ncols = 64").replace(
                "acc_bytes = 2048", "acc_bytes = 65536"
            ),
            "core.sram_bytes",
            "wider than SRAM can feed",
        ),
    ],
    ids=[
        "unknown-key",
        "negative-size",
        "missing-key",
        "wrong-type",
        "too-few-queues",
        "bad-dtype",
        "matrix-vs-sram",
    ],
)
def test_invalid_file_names_the_key(tmp_path: Path, edit, key: str, message: str):
    path = toml_file(tmp_path, edit(TINY_TOML))
    problems = problems_of(path)
    assert any(f"'{key}'" in p and message in p for p in problems), problems
    assert all(p.startswith(f"{path}: ") for p in problems)


def test_every_problem_is_reported_at_once(tmp_path: Path):
    text = TINY_TOML.replace("sram_bytes = 16384", "sram_bytes = 0").replace("clock_mhz = 100\n", "")
    problems = problems_of(toml_file(tmp_path, text + "\n[extra]\nx = 1\n"))
    assert len(problems) == 3, problems


def test_not_toml(tmp_path: Path):
    (problem,) = problems_of(toml_file(tmp_path, "name = 'x'\n[core\nsram_bytes = 1\n"))
    assert "not valid TOML" in problem
    assert "line 2" in problem


# --------------------------------------------------------------------------- command line


def test_cli_target_list(capsys):
    assert main(["target", "list"]) == 0
    out = capsys.readouterr().out
    for name in PRESETS:
        assert f"\n{name} " in out
    assert "32x32" in out
    assert "test target: 2 cores" in out


@pytest.mark.parametrize("name", PRESETS)
def test_cli_target_show_preset(capsys, name: str):
    assert main(["target", "show", name]) == 0
    assert capsys.readouterr().out == describe(load_target(name)) + "\n"


def test_cli_target_show_file(tmp_path: Path, capsys):
    path = toml_file(tmp_path, TINY_TOML.replace('name = "tiny"', 'name = "mine"'))
    assert main(["target", "show", str(path)]) == 0
    assert capsys.readouterr().out.startswith("target mine: ")


def test_cli_target_show_invalid_file(tmp_path: Path, capsys):
    path = toml_file(tmp_path, TINY_TOML.replace("[core]\n", "[core]\ncolour = 3\n"))
    assert main(["target", "show", str(path)]) == 1
    err = capsys.readouterr().err
    assert "'core.colour'" in err
    assert "Traceback" not in err
    assert main(["target", "show", "huge"]) == 1
    assert "unknown target 'huge'" in capsys.readouterr().err


def test_toml_target_for_asm_and_disasm(tmp_path: Path):
    """A FILE.toml works wherever --target does: for asm and for disasm."""
    source = tmp_path / "p.mlir"
    source.write_text(PROGRAM.format(target="tiny"))
    copy = toml_file(tmp_path, TINY_TOML, "tiny_copy.toml")
    aitb = tmp_path / "p.aitb"
    assert main(["asm", str(source), "-o", str(aitb), "--target", str(copy)]) == 0
    assert main(["disasm", str(aitb), "--target", str(copy)]) == 0


def test_program_naming_a_toml_target(tmp_path: Path):
    """`hw.program ... target "FILE.toml"`: asm loads that file; its limits are enforced."""
    wide = toml_file(tmp_path, TINY_TOML.replace('name = "tiny"', 'name = "wide"'), "wide.toml")
    source = tmp_path / "p.mlir"
    source.write_text(PROGRAM.format(target=wide))
    assert main(["asm", str(source), "-o", str(tmp_path / "p.aitb")]) == 0
    assert binary.read_header((tmp_path / "p.aitb").read_bytes()).target_name == "wide"
    narrow = toml_file(tmp_path, TINY_TOML.replace("rows = 4\ncols = 4", "rows = 2\ncols = 2"), "narrow.toml")
    source.write_text(PROGRAM.format(target=narrow))
    assert main(["asm", str(source), "-o", str(tmp_path / "q.aitb")]) == 1
    assert not (tmp_path / "q.aitb").exists()


def test_disasm_with_a_changed_toml_is_refused(tmp_path: Path, capsys):
    source = tmp_path / "p.mlir"
    source.write_text(PROGRAM.format(target="tiny"))
    aitb = tmp_path / "p.aitb"
    assert main(["asm", str(source), "-o", str(aitb)]) == 0
    slower = toml_file(tmp_path, TINY_TOML.replace("clock_mhz = 100", "clock_mhz = 50"))
    assert main(["disasm", str(aitb), "--target", str(slower)]) == 1
    assert "different description of target 'tiny'" in capsys.readouterr().err


def test_asm_with_a_bad_toml(tmp_path: Path, capsys):
    source = tmp_path / "p.mlir"
    source.write_text(PROGRAM.format(target="tiny"))
    bad = toml_file(tmp_path, "not = [valid")
    assert main(["asm", str(source), "--target", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "not valid TOML" in err
    assert "Traceback" not in err
