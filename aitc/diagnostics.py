"""User-facing errors: one short message per problem, never a traceback."""

from __future__ import annotations

import os
import re
import sys
import traceback
import warnings
from collections.abc import Callable, Sequence

import numpy as np

_LOCATED = re.compile(
    r"(?P<loc>[^\n]+:\d+:\d+)\n(?P<source>[^\n]*)\n(?P<caret> *\^+)\n(?P<message>.*)", re.DOTALL
)
"""xDSL's parse errors: `file:line:col`, the source line, a caret line, then the message."""


class AitcError(Exception):
    """An error in the user's input (file, model, target, options).

    `problems` holds one line per problem; the CLI prints them, prefixed by the file name,
    then `context` verbatim (e.g. the failing op in its IR), and exits with status 1.
    """

    def __init__(self, message: str | Sequence[str], hint: str | None = None, context: str = ""):
        problems = [message] if isinstance(message, str) else list(message)
        self.problems = problems
        self.hint = hint
        self.context = context
        super().__init__("\n".join(problems))

    def render(self, where: str | None = None) -> str:
        """`where: error: problem` lines (a problem that has its own `file:line:col` keeps it,
        compiler style, followed by the source line and a caret), then `where: note: hint`."""
        prefix = f"{where}: " if where else ""
        lines = []
        for problem in self.problems:
            located = _LOCATED.fullmatch(problem.strip("\n"))
            if located:
                message = " ".join(located["message"].split())
                source, caret = _clip(located["source"], located["caret"])
                lines += [f"{located['loc']}: error: {message}", source, caret]
            else:
                lines.append(f"{prefix}error: {problem}")
        if self.context:
            lines.append(self.context.rstrip("\n"))
        if self.hint:
            lines.append(f"{prefix}note: {self.hint}")
        return "\n".join(lines)


SOURCE_WIDTH = 100
"""A quoted source line is cut to this many characters around the caret (weights and long
attribute lists make lines of megabytes)."""


def _clip(source: str, caret: str) -> tuple[str, str]:
    """`source` and its caret line cut to a window of SOURCE_WIDTH characters around the caret."""
    if len(source) <= SOURCE_WIDTH:
        return source, caret
    column = len(caret) - len(caret.lstrip(" "))
    width = min(len(caret) - column, SOURCE_WIDTH // 2)
    start = max(0, min(column - SOURCE_WIDTH // 4, len(source) - SOURCE_WIDTH))
    head = "..." if start > 0 else ""
    tail = "..." if start + SOURCE_WIDTH < len(source) else ""
    pad = " " * (column - start + len(head))
    return head + source[start : start + SOURCE_WIDTH] + tail, pad + "^" * max(width, 1)


def run_command(where: str | None, command: Callable[[], int], debug: bool = False) -> int:
    """Runs a CLI command under the error policy and returns its exit status: an AitcError is
    printed as `where: error: ...` (status 1); input nested too deeply for Python's recursion
    limit is a user error too; a closed output pipe ends the command quietly (status 141, as for
    SIGPIPE); anything else is an aitc bug, reported in two lines (status 2,
    the traceback only when `debug`). numpy's floating-point warnings are silenced: NaN and inf
    propagate as IEEE 754 says, as in onnxruntime."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return command()
    except AitcError as error:
        print(error.render(where), file=sys.stderr)
        return 1
    except RecursionError:
        message = "the input nests too deeply (or calls itself) for aitc to process"
        print(AitcError(message).render(where), file=sys.stderr)
        return 1
    except MemoryError:
        message = "out of memory: the input asks for more memory than this machine has"
        print(AitcError(message).render(where), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader stopped reading (`| head`): stop quietly, as `cat` does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush does not fail again
        return 141  # 128 + SIGPIPE
    except Exception as error:
        if debug:
            traceback.print_exc()
        print(f"{where or 'aitc'}: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        note = "note: this is a bug in aitc; rerun with AITC_DEBUG=1 for a traceback and report it"
        print(note, file=sys.stderr)
        return 2
