"""The simulator's one error type: a user-facing `AitcError` whose `kind` names the failed check."""

from __future__ import annotations

from collections.abc import Sequence

from aitc.diagnostics import AitcError

KINDS = ("program", "input", "bounds", "alignment", "gather", "race", "deadlock", "unbalanced", "cap")
"""What went wrong: an invalid program for the target, bad inputs, an out-of-bounds or misaligned
access, a gather index outside its table, a data race, a deadlock, semaphores left above zero at
the end (the next run would start with stale credits), or an exceeded cap."""


class SimulationError(AitcError):
    """A program that cannot be simulated, or that misbehaved while running.

    The message fits on one screen and names the instruction(s) involved with their core,
    engine, cycle and ONNX node. `kind` is one of `KINDS`, so callers and tests can tell a
    race from a deadlock without parsing text.
    """

    def __init__(self, kind: str, message: str | Sequence[str], hint: str | None = None):
        assert kind in KINDS, kind
        super().__init__(message, hint)
        self.kind = kind
