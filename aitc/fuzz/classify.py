"""The outcome of one fuzz case, from its exit status, its stderr and its folder before and after.

Outcomes (exactly one per case; when several rules match, the first in this list wins):

    hang            the case ran past its timeout and was killed
    crash           the process died of a signal it was not sent, or left no exit status
    destroyed file  an input's bytes changed or it was removed; a symlink, FIFO or character
                    device given as an output was replaced (e.g. by a regular file); a file that
                    existed before was changed or removed by a failed run, or by a successful run
                    that does not declare it as an output
    traceback       stderr holds "Traceback" or "internal error" (aitc's wrapper for an
                    unexpected exception), or a leaked Python warning line
                    (`file.py:NN: SomethingWarning: ...`); or the exit status is not 0, 1, or 2
                    with an argparse "usage:" message
    partial output  a failed run (non-zero exit) left a new file or folder anywhere in the case
                    folder; a successful run left one that is not a declared output (e.g. a
                    `.name.xxxx` temporary of an atomic write); a new output file whose mode does
                    not follow the umask (reported as "bad mode" in the details)
    clean reject    exit status 1 (or argparse's 2 with "usage:") and none of the above
    accept          exit status 0 and none of the above

`traceback`, `hang`, `crash`, `partial output` and `destroyed file` are the bad outcomes. Every
matching rule is listed in the case's details, so a traceback that also left a temporary file
says both.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from aitc.fuzz.case import Case

ACCEPT = "accept"
CLEAN_REJECT = "clean reject"
TRACEBACK = "traceback"
HANG = "hang"
CRASH = "crash"
PARTIAL_OUTPUT = "partial output"
DESTROYED_FILE = "destroyed file"

OUTCOMES = (ACCEPT, CLEAN_REJECT, TRACEBACK, HANG, CRASH, PARTIAL_OUTPUT, DESTROYED_FILE)
"""Every outcome, in table column order."""
BAD_OUTCOMES = frozenset({TRACEBACK, HANG, CRASH, PARTIAL_OUTPUT, DESTROYED_FILE})
_PRECEDENCE = (HANG, CRASH, DESTROYED_FILE, TRACEBACK, PARTIAL_OUTPUT, CLEAN_REJECT, ACCEPT)

_LEAKED_WARNING = re.compile(r"^\S+\.py:\d+: \w*Warning\b", re.MULTILINE)


@dataclass(frozen=True)
class Entry:
    """What a path in the case folder was: its kind, permission bits and content digest."""

    kind: str
    mode: int
    content: str


Snapshot = dict[str, Entry]
"""Path relative to the case folder -> what it was."""


@dataclass(frozen=True)
class Exit:
    """How the case's process ended: `status` is its exit status (None if it died of a signal)."""

    status: int | None
    signal: int | None = None
    timed_out: bool = False


def snapshot(folder: Path) -> Snapshot:
    """Every path below `folder` (symlinks not followed; FIFOs and devices never opened)."""
    entries: Snapshot = {}
    for root, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            path = Path(root) / name
            entries[str(path.relative_to(folder))] = _entry(path)
    return entries


def _entry(path: Path) -> Entry:
    info = path.lstat()
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        return Entry("symlink", mode, os.readlink(path))
    if stat.S_ISREG(info.st_mode):
        return Entry("file", mode, hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest())
    kinds = {stat.S_ISDIR: "dir", stat.S_ISFIFO: "fifo", stat.S_ISCHR: "chardev", stat.S_ISBLK: "blockdev"}
    kind = next((name for test, name in kinds.items() if test(info.st_mode)), "other")
    return Entry(kind, mode, "")


def current_umask() -> int:
    """The process umask (read without changing it for more than an instant)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def stream_findings(exit_: Exit, stderr: str) -> list[tuple[str, str]]:
    """(outcome, detail) pairs from the exit status and stderr."""
    if exit_.timed_out:
        return [(HANG, "killed after the timeout")]
    if exit_.status is None:
        return [(CRASH, f"killed by signal {exit_.signal}" if exit_.signal else "no exit status")]
    findings = []
    if "Traceback" in stderr:
        findings.append((TRACEBACK, "Python traceback on stderr"))
    if "internal error" in stderr:
        findings.append((TRACEBACK, "'internal error' on stderr"))
    if _LEAKED_WARNING.search(stderr):
        findings.append((TRACEBACK, "leaked Python warning on stderr"))
    usage_error = exit_.status == 2 and "usage:" in stderr
    if exit_.status not in (0, 1) and not usage_error:
        findings.append((TRACEBACK, f"exit status {exit_.status}"))
    if exit_.status == 0:
        findings.append((ACCEPT, "exit 0"))
    elif not findings:
        findings.append((CLEAN_REJECT, "usage error" if usage_error else "exit 1"))
    return findings


def file_findings(case: Case, before: Snapshot, after: Snapshot, succeeded: bool) -> list[tuple[str, str]]:
    """(outcome, detail) pairs from the case folder before and after the run."""
    findings = []
    for path, old in before.items():
        new = after.get(path)
        if new == old or (new is not None and old.kind == new.kind == "dir"):
            continue
        findings.append((DESTROYED_FILE, _damage(case, path, old, new, succeeded)))
    for path in sorted(set(after) - set(before)):
        if not succeeded:
            findings.append((PARTIAL_OUTPUT, f"new {after[path].kind} {path} after a failed run"))
        elif not _is_output(case, path):
            findings.append((PARTIAL_OUTPUT, f"stray {after[path].kind} {path}"))
        elif after[path].kind == "file" and after[path].mode != 0o666 & ~current_umask():
            findings.append((PARTIAL_OUTPUT, f"bad mode {after[path].mode:04o} of {path}"))
    return [f for f in findings if f[1]]


def _damage(case: Case, path: str, old: Entry, new: Entry | None, succeeded: bool) -> str:
    """Why a change to a pre-existing `path` is damage ("" when it is a legitimate output)."""
    if path in case.inputs:
        return f"input {path} {'removed' if new is None else 'changed'}"
    if new is None:
        return f"{path} removed"
    if old.kind in ("symlink", "fifo", "chardev") and new != old:
        return f"{old.kind} {path} replaced by a {new.kind}"
    if not succeeded:
        return f"{path} changed by a failed run"
    return "" if _is_output(case, path) else f"{path} changed, not an output"


def _is_output(case: Case, path: str) -> bool:
    outputs = [os.path.normpath(out) for out in case.outputs]
    return any(path == out or out == "." or path.startswith(out + "/") for out in outputs)


def classify(findings: list[tuple[str, str]]) -> str:
    """The outcome of a case from all its findings (see the module docstring for precedence)."""
    found = {outcome for outcome, _ in findings}
    return next(outcome for outcome in _PRECEDENCE if outcome in found)
