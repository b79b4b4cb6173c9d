"""The CLI fuzzer (`aitc.fuzz`): its classifier on fake commands, its determinism, and a bounded
smoke run of every family against the real `aitc`/`aitc-opt` that must find nothing bad."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
import warnings
from pathlib import Path

import pytest

from aitc.fuzz.case import Case, Special, can_make_char_device
from aitc.fuzz.classify import (
    ACCEPT,
    BAD_OUTCOMES,
    CLEAN_REJECT,
    CRASH,
    DESTROYED_FILE,
    HANG,
    PARTIAL_OUTPUT,
    TRACEBACK,
    Exit,
    classify,
    stream_findings,
)
from aitc.fuzz.families import FAMILIES, generate_case, reseal
from aitc.fuzz.report import RunSettings, format_report
from aitc.fuzz.runner import run_cases

# --------------------------------------------------------------------------- fake commands


def _write_partial(args: list[str]) -> int:
    Path("out.txt").write_text("half of it")
    return 1


def _sleep(args: list[str]) -> int:
    time.sleep(60)
    return 0


def _raise(args: list[str]) -> int:
    raise ValueError("a bug")


def _segfault(args: list[str]) -> int:
    os.kill(os.getpid(), signal.SIGSEGV)
    return 0


def _clobber_input(args: list[str]) -> int:
    Path("in.txt").write_text("gone")
    return 1


def _usage_error(args: list[str]) -> int:
    argparse.ArgumentParser(prog="fake").parse_args(["--no-such-flag"])
    return 0


def _warn(args: list[str]) -> int:
    warnings.warn("overflow encountered", RuntimeWarning, stacklevel=1)
    return 0


def _write_output(args: list[str]) -> int:
    with open("out.txt", "w") as handle:
        handle.write("x" * (1 << 20))  # more than a pipe holds: a FIFO output must be drained
    return 0


def _write_private(args: list[str]) -> int:
    os.close(os.open("out.txt", os.O_WRONLY | os.O_CREAT, 0o600))
    return 0


def _replace_output(args: list[str]) -> int:
    Path("out.txt").unlink()
    Path("out.txt").write_text("new")
    return 0


def _reject(args: list[str]) -> int:
    print("in.txt: error: not a model", file=sys.stderr)
    return 1


FAKE_TOOLS = {
    "write-partial": _write_partial,
    "sleep": _sleep,
    "raise": _raise,
    "segfault": _segfault,
    "clobber-input": _clobber_input,
    "usage-error": _usage_error,
    "warn": _warn,
    "write-output": _write_output,
    "write-private": _write_private,
    "replace-output": _replace_output,
    "reject": _reject,
}


def _fake(tool: str, specials: list[Special] | None = None) -> Case:
    return Case(
        "fake",
        0,
        [tool, "in.txt", "-o", "out.txt"],
        files={"in.txt": b"input"},
        specials=specials or [],
        inputs=["in.txt"],
        outputs=["out.txt"],
    )


@pytest.mark.parametrize(
    ("tool", "outcome"),
    [
        ("write-partial", PARTIAL_OUTPUT),
        ("sleep", HANG),
        ("raise", TRACEBACK),
        ("segfault", CRASH),
        ("clobber-input", DESTROYED_FILE),
        ("usage-error", CLEAN_REJECT),
        ("warn", TRACEBACK),
        ("write-output", ACCEPT),
        ("write-private", PARTIAL_OUTPUT),
        ("reject", CLEAN_REJECT),
    ],
)
def test_fake_commands_are_classified(tool, outcome):
    [result] = run_cases([_fake(tool)], jobs=1, timeout=2.0, tools=FAKE_TOOLS)
    assert result.outcome == outcome, (result.findings, result.stderr)


def test_fifo_output_is_drained_and_kept():
    [result] = run_cases(
        [_fake("write-output", [Special("fifo", "out.txt")])], jobs=1, timeout=5.0, tools=FAKE_TOOLS
    )
    assert result.outcome == ACCEPT, result.findings


@pytest.mark.skipif(not can_make_char_device(), reason="mknod of a character device is not permitted")
def test_replacing_a_device_output_destroys_it():
    case = _fake("replace-output", [Special("chardev", "out.txt")])
    [result] = run_cases([case], jobs=1, timeout=5.0, tools=FAKE_TOOLS)
    assert result.outcome == DESTROYED_FILE, result.findings


@pytest.mark.parametrize(
    ("exit_", "stderr", "outcome"),
    [
        (Exit(0), "", ACCEPT),
        (Exit(1), "m.onnx: error: bad\n", CLEAN_REJECT),
        (Exit(2), "usage: aitc ...\naitc: error: bad flag\n", CLEAN_REJECT),
        (Exit(2), "m.onnx: internal error: KeyError: 'x'\n", TRACEBACK),
        (Exit(3), "", TRACEBACK),
        (Exit(0), "aitc/sim/execute.py:141: RuntimeWarning: overflow\n", TRACEBACK),
        (Exit(1), "Traceback (most recent call last):\n", TRACEBACK),
        (Exit(None, signal.SIGABRT), "", CRASH),
        (Exit(None, signal.SIGKILL, timed_out=True), "", HANG),
    ],
)
def test_stream_rules(exit_, stderr, outcome):
    assert classify(stream_findings(exit_, stderr)) == outcome


def _fingerprint(case: Case) -> tuple:
    return case.argv, case.files, case.specials, case.inputs, case.outputs, case.note


def test_cases_are_deterministic(monkeypatch):
    """The same case every time, whatever the clock says (zip members carry timestamps)."""
    families = list(FAMILIES)
    indices = range(len(families) * 3)
    monkeypatch.setattr(time, "time", lambda: 1e9)
    first = [_fingerprint(generate_case(7, i, families)) for i in indices]
    monkeypatch.setattr(time, "time", lambda: 2e9)
    assert [_fingerprint(generate_case(7, i, families)) for i in indices] == first


def test_reseal_makes_the_checksum_match():
    sealed = reseal(b"AITB" + bytes(60))
    assert int.from_bytes(sealed[8:16], "little") == len(sealed)
    assert reseal(sealed) == sealed


# --------------------------------------------------------------------------- smoke run

SMOKE_CASES_PER_FAMILY = 15
"""120 cases (8 families): ~8 s on this 2-core machine while nothing hangs (~20 cases/s warm,
4 of them through the console script); each hang adds up to the 10 s timeout."""


def test_smoke_run_finds_nothing_bad():
    families = list(FAMILIES)
    count = SMOKE_CASES_PER_FAMILY * len(families)
    cases = [generate_case(0, i, families, subprocess_every=30) for i in range(count)]
    assert sum(case.subprocess for case in cases) >= 3  # the real console-script entry path
    started = time.monotonic()
    results = run_cases(cases, timeout=10.0)
    settings = RunSettings(0, tuple(families), tuple(families), 30)
    report = format_report(sorted(results, key=lambda r: r.case.index), settings, time.monotonic() - started)
    assert {r.case.family for r in results} == set(families)
    assert not any(r.outcome in BAD_OUTCOMES for r in results), report


def test_out_of_range_literals_of_absurd_widths_are_generated():
    """An earlier mutation can make `i64` into `i6400000`; 2**6399999 has too many digits to print."""
    import random

    from aitc.fuzz.mutate import integer_out_of_range

    text, note = integer_out_of_range(random.Random(0), "%0 = arith.constant 1 : i6400000\n")
    assert ": i6400000" in text, note
