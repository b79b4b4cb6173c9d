"""One fuzz case: a command line plus the files it runs on, materialised in its own folder.

A case is plain data (paths are relative to the case folder), so the same case can be written
to a temporary folder for a run or to `--keep DIR` for a person to reproduce it by hand.
"""

from __future__ import annotations

import os
import random
import shlex
import stat
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Special:
    """A non-regular file a case needs: `kind` is one of
    `dir`, `symlink` (to `target`), `fifo`, `chardev` (a /dev/null-like device), `readonly` (chmod
    0o555 on an existing folder)."""

    kind: str
    path: str
    target: str = ""


@dataclass
class Case:
    """A command (`argv[0]` is `aitc` or `aitc-opt`) and what it may and may not touch.

    `inputs` must be byte-identical after the run; `outputs` are the only paths a successful run
    may create or change; `note` says what was mutated, for the report."""

    family: str
    index: int
    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    specials: list[Special] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    note: str = ""
    subprocess: bool = False

    def command_line(self) -> str:
        """The shell command that runs this case from inside its folder."""
        return shlex.join(self.argv)


def case_rng(seed: int, index: int) -> random.Random:
    """The random source of case `index` of run `seed` (the same on every machine and run)."""
    return random.Random(f"aitc-fuzz:{seed}:{index}")


def numpy_rng(rng: random.Random) -> np.random.Generator:
    """A numpy generator derived from a case's `random.Random` (so it is seeded by it too)."""
    return np.random.default_rng(rng.getrandbits(64))


def write_case(case: Case, folder: Path) -> None:
    """Writes the case's files, then its special files, into `folder` (which must exist)."""
    for relative, data in case.files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for special in case.specials:
        _make_special(special, folder / special.path)


def _make_special(special: Special, path: Path) -> None:
    if special.kind == "dir":
        path.mkdir(parents=True, exist_ok=True)
    elif special.kind == "symlink":
        os.symlink(special.target, path)
    elif special.kind == "fifo":
        os.mkfifo(path)
    elif special.kind == "chardev":
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    elif special.kind == "readonly":
        path.chmod(0o555)
    else:
        raise ValueError(f"unknown special file kind '{special.kind}'")


@cache
def can_make_char_device() -> bool:
    """Whether this process may `mknod` a character device (root in most containers)."""
    with tempfile.TemporaryDirectory(prefix="aitc-fuzz-mknod-") as folder:
        try:
            _make_special(Special("chardev", "null"), Path(folder) / "null")
        except OSError:
            return False
    return True


def make_writable(folder: Path) -> None:
    """Gives the owner write access to every folder below `folder`, so it can be removed."""
    for root, dirs, _ in os.walk(folder):
        for name in dirs:
            path = Path(root) / name
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IRWXU)
