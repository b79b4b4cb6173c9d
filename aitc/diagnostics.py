"""User-facing errors: one short message per problem, never a traceback."""

from __future__ import annotations

import re
from collections.abc import Sequence

_LOCATED = re.compile(
    r"(?P<loc>[^\n]+:\d+:\d+)\n(?P<source>[^\n]*)\n(?P<caret> *\^+)\n(?P<message>.*)", re.DOTALL
)
"""xDSL's parse errors: `file:line:col`, the source line, a caret line, then the message."""


class AitcError(Exception):
    """An error in the user's input (file, model, target, options).

    `problems` holds one line per problem; the CLI prints them, prefixed by the file name,
    and exits with status 1.
    """

    def __init__(self, message: str | Sequence[str], hint: str | None = None):
        problems = [message] if isinstance(message, str) else list(message)
        self.problems = problems
        self.hint = hint
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
                lines += [f"{located['loc']}: error: {message}", located["source"], located["caret"]]
            else:
                lines.append(f"{prefix}error: {problem}")
        if self.hint:
            lines.append(f"{prefix}note: {self.hint}")
        return "\n".join(lines)
