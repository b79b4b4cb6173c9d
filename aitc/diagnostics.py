"""User-facing errors: one short message per problem, never a traceback."""

from __future__ import annotations

from collections.abc import Sequence


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
        prefix = f"{where}: " if where else ""
        lines = [f"{prefix}error: {p}" for p in self.problems]
        if self.hint:
            lines.append(f"{prefix}note: {self.hint}")
        return "\n".join(lines)
