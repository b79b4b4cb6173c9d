"""Progress bars for long work on a terminal (tqdm, on stderr): the passes of a compile, the
cores a multi-core compile lowers, the instructions a simulation runs.

Silent unless stderr is a terminal, and silent with `set_quiet(True)` (`aitc compile/run
--quiet`): a pipe, a log file or a test sees nothing. A bar disappears when its work ends, so
what a command prints is the same with or without bars.

Passes report to the innermost `passes` bar (`pass_done`, called by the pipeline runner after
every pass), so the runner needs no handle; `paused` hides that bar while nested work (the
per-core pipelines of a multi-core compile) runs its own.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from tqdm import tqdm

_quiet = False
_pass_bars: list[tqdm | None] = []


class Bar(Protocol):
    def update(self, n: float | None = 1) -> bool | None: ...


class _Silent:
    """A bar that shows nothing."""

    def update(self, n: float | None = 1) -> None:
        del n


def set_quiet(quiet: bool) -> None:
    """`--quiet`: no bar at all."""
    global _quiet
    _quiet = quiet


def enabled() -> bool:
    """Whether bars are shown: stderr is a terminal and nobody asked for quiet."""
    isatty = getattr(sys.stderr, "isatty", None)
    return not _quiet and callable(isatty) and bool(isatty())


@contextmanager
def bar(total: int, description: str, unit: str = "it") -> Iterator[Bar]:
    """A bar of `total` steps (a silent one when bars are off or there is one step at most)."""
    if not enabled() or total <= 1:
        yield _Silent()
        return
    shown = tqdm(total=total, desc=description, unit=unit, leave=False, file=sys.stderr, dynamic_ncols=True)
    try:
        yield shown
    finally:
        shown.close()


@contextmanager
def passes(total: int, description: str = "compile") -> Iterator[None]:
    """A bar of `total` passes that `pass_done` advances."""
    with bar(total, description, unit="pass") as shown:
        _pass_bars.append(shown if isinstance(shown, tqdm) else None)
        try:
            yield
        finally:
            _pass_bars.pop()


@contextmanager
def paused() -> Iterator[None]:
    """Passes run inside do not advance the enclosing `passes` bar."""
    _pass_bars.append(None)
    try:
        yield
    finally:
        _pass_bars.pop()


def pass_done(name: str) -> None:
    """One pass of the innermost `passes` bar done (a no-op without one)."""
    current = _pass_bars[-1] if _pass_bars else None
    if current is not None:
        current.set_postfix_str(name, refresh=False)
        current.update(1)
