"""Runs fuzz cases: one forked child of the warm interpreter per case, `jobs` at a time.

The parent imports aitc, numpy, onnx and xDSL once; each case then forks, so a case costs its
command's own work, not an interpreter start, and cannot disturb the next one. The child moves
into the case's folder, sends stdout/stderr to files at the fd level, reads stdin from
/dev/null, caps its address space and calls `aitc.tools.aitc_main.main(argv)` (or aitc-opt's),
or, for `Case.subprocess`, execs the installed console script (the real entry path). The parent
polls its children, kills one (and its process group) after `timeout` seconds, drains FIFOs the
case gave as outputs so a writer never blocks, and classifies the result (`aitc.fuzz.classify`).
"""

from __future__ import annotations

import faulthandler
import os
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from aitc.fuzz.case import Case, make_writable, write_case
from aitc.fuzz.classify import Exit, Snapshot, classify, file_findings, snapshot, stream_findings

Tool = Callable[[list[str]], int | None]
"""A command's `main(argv)`: returns (or raises SystemExit with) its exit status."""

MEMORY_LIMIT_BYTES = 4 << 30
"""Address-space cap of a case's process: a huge allocation fails instead of swapping."""
CAPTURE_LIMIT = 1 << 16
"""Bytes of a case's stdout/stderr kept for the report."""
_POLL_SECONDS = 0.003
_CHILD_FAILED = 70  # the child could not even start the command (a fuzzer bug)
_MODULES = {"aitc": "aitc.tools.aitc_main", "aitc-opt": "aitc.tools.aitc_opt"}


@dataclass
class Result:
    """A finished case: its outcome, every finding behind it and what it printed."""

    case: Case
    outcome: str
    findings: list[tuple[str, str]]
    exit: Exit
    stdout: str
    stderr: str
    seconds: float


@dataclass
class _Job:
    case: Case
    root: Path
    pid: int
    started: float
    before: Snapshot
    fifos: list[int] = field(default_factory=list)


def real_tools() -> dict[str, Tool]:
    """The two commands under test, imported (with everything they load lazily) in this process."""
    from aitc.tools import aitc_main, aitc_opt

    warm_up()
    return {"aitc": aitc_main.main, "aitc-opt": aitc_opt.main}


def warm_up() -> None:
    """Imports what the commands import on first use, so forked children start warm."""
    import onnx  # noqa: F401
    import xdsl.xdsl_opt_main  # noqa: F401

    import aitc.binary
    import aitc.compiler
    import aitc.frontend.onnx_import
    import aitc.interp.run
    import aitc.ir
    import aitc.passes
    import aitc.report
    import aitc.sim  # noqa: F401


def run_cases(
    cases: Iterable[Case],
    jobs: int | None = None,
    timeout: float = 20.0,
    tools: Mapping[str, Tool] | None = None,
    on_result: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Runs every case (`jobs` in parallel, default one per CPU) and returns their results in
    completion order; `on_result` sees each as it finishes."""
    tools = tools if tools is not None else real_tools()
    width = max(1, jobs or os.cpu_count() or 1)
    pending, running, results = iter(cases), {}, []
    base = Path(tempfile.mkdtemp(prefix="aitc-fuzz-"))
    try:
        while True:
            while len(running) < width and (case := next(pending, None)) is not None:
                job = _start(case, base, tools)
                running[job.pid] = job
            if not running:
                return results
            for job, exit_ in _reap(running, timeout):
                results.append(_finish(job, exit_))
                if on_result:
                    on_result(results[-1])
            time.sleep(_POLL_SECONDS)
    finally:
        for job in running.values():
            _kill(job.pid)
        _remove(base)


def run_for_artifact(argv: list[str], files: dict[str, str | bytes], output: str | None = None) -> bytes:
    """Runs one good command (a forked child, like a case) and returns the bytes of `output`, or
    its stdout when `output` is None; raises RuntimeError if it fails. Builds the fuzzers' seeds."""
    data = {
        name: content.encode() if isinstance(content, str) else content for name, content in files.items()
    }
    case = Case("artifact", 0, argv, files=data)
    base = Path(tempfile.mkdtemp(prefix="aitc-fuzz-artifact-"))
    try:
        job = _start(case, base, real_tools())
        _, status = os.waitpid(job.pid, 0)
        stderr = (job.root / "stderr").read_text(errors="replace")
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            raise RuntimeError(f"`{case.command_line()}` failed while building a fuzz seed:\n{stderr}")
        return (job.root / "case" / output).read_bytes() if output else (job.root / "stdout").read_bytes()
    finally:
        _remove(base)


def _start(case: Case, base: Path, tools: Mapping[str, Tool]) -> _Job:
    root = Path(tempfile.mkdtemp(dir=base, prefix=f"{case.index}-"))
    (root / "case").mkdir()
    write_case(case, root / "case")
    before = snapshot(root / "case")
    fifos = [
        os.open(root / "case" / s.path, os.O_RDONLY | os.O_NONBLOCK)
        for s in case.specials
        if s.kind == "fifo"
    ]
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    pid = os.fork()
    if pid == 0:
        _child(case, root, tools, fifos)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # the child already did it, or has exited
    return _Job(case, root, pid, time.monotonic(), before, fifos)


def _reap(running: dict[int, _Job], timeout: float) -> list[tuple[_Job, Exit]]:
    """The jobs that ended since the last poll (killing those past the timeout)."""
    done = []
    for pid, job in list(running.items()):
        finished, status = os.waitpid(pid, os.WNOHANG)
        if finished:
            done.append((running.pop(pid), _decode(status)))
        elif time.monotonic() - job.started > timeout:
            _kill(pid)
            os.waitpid(pid, 0)
            done.append((running.pop(pid), Exit(None, signal.SIGKILL, timed_out=True)))
        else:
            _drain(job.fifos)
    return done


def _decode(status: int) -> Exit:
    if os.WIFEXITED(status):
        return Exit(os.WEXITSTATUS(status))
    if os.WIFSIGNALED(status):
        return Exit(None, os.WTERMSIG(status))
    return Exit(None)


def _finish(job: _Job, exit_: Exit) -> Result:
    for fd in job.fifos:
        os.close(fd)
    after = snapshot(job.root / "case")
    stdout, stderr = (_read_capped(job.root / name) for name in ("stdout", "stderr"))
    findings = stream_findings(exit_, stderr)
    findings += file_findings(job.case, job.before, after, succeeded=exit_.status == 0)
    _remove(job.root)
    seconds = time.monotonic() - job.started
    return Result(job.case, classify(findings), findings, exit_, stdout, stderr, seconds)


def _read_capped(path: Path) -> str:
    with open(path, "rb") as handle:
        return handle.read(CAPTURE_LIMIT).decode(errors="replace")


def _drain(fifos: list[int]) -> None:
    for fd in fifos:
        try:
            while os.read(fd, 1 << 16):
                pass
        except BlockingIOError:
            pass


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _remove(folder: Path) -> None:
    make_writable(folder)
    shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------- the child


def _child(case: Case, root: Path, tools: Mapping[str, Tool], fifos: list[int]) -> None:
    """Runs the case's command in this forked process; never returns."""
    status = _CHILD_FAILED
    try:
        os.setpgid(0, 0)
        faulthandler.disable()  # a plain `python` has it off; a test runner may have turned it on
        for fd in fifos:
            os.close(fd)
        _redirect_streams(root)
        os.chdir(root / "case")
        os.environ.pop("AITC_DEBUG", None)
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
        if case.subprocess:
            _exec_console_script(case.argv)
        status = _call_tool(tools[case.argv[0]], case.argv[1:])
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                status = _CHILD_FAILED
        os._exit(status)


def _redirect_streams(root: Path) -> None:
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        handle = os.open(root / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(handle, fd)
        os.close(handle)
    sys.stdin = open(0, encoding="utf-8", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)


def _exec_console_script(argv: list[str]) -> None:
    script = Path(sys.executable).with_name(argv[0])
    if script.exists():
        os.execv(script, argv)
    os.execv(sys.executable, [sys.executable, "-m", _MODULES[argv[0]], *argv[1:]])


def _call_tool(tool: Tool, args: list[str]) -> int:
    """The exit status of `tool(args)`, as the Python interpreter would make it."""
    _default_warning_filters()
    try:
        status = tool(args)
    except SystemExit as exit_:
        status = exit_.code
    except BaseException:
        traceback.print_exc()
        return 1
    if status is None:
        return 0
    if isinstance(status, int):
        return status & 0xFF
    print(status, file=sys.stderr)
    return 1


def _default_warning_filters() -> None:
    """The warning filters of a fresh `python` (a test runner may have changed them), printing
    to this process's stderr."""
    warnings.resetwarnings()
    for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.simplefilter("ignore", category)
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
    warnings.showwarning = _show_warning


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))
