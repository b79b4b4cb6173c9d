"""The one pipeline runner: xDSL's `PassPipeline` with a callback that verifies the module after
every pass (naming the pass that broke it) and times every pass. Used by `aitc compile`, the
pipelines of passes/pipelines.py and `graph-optimize`.

Verifying a large module costs about as much as a lowering pass (xDSL verifies every op in
Python: ~1 s for ResNet-50 at tile level), so `verify` chooses: "each" (after every pass, the
default), "end" (after the last pass, naming all of them when it fails) or "none" (the caller
verifies later: `aitc compile` verifies its result once unless asked to verify each pass, as
LLVM's `opt` does without `-verify-each`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import DiagnosticException, PassFailedException

from aitc import progress
from aitc.diagnostics import AitcError
from aitc.ir import make_context


@dataclass
class _Monitor:
    """PassPipeline's callback: verifies the module after each pass (with `verify_each`) and
    times each pass (its verification included)."""

    verify_each: bool = True
    seconds: list[tuple[str, float]] = field(default_factory=list)
    running: ModulePass | None = None
    started: float = 0.0

    def __call__(self, previous: ModulePass | None, module: ModuleOp, following: ModulePass | None) -> None:
        if previous is not None:
            if self.verify_each:
                _verify(module, previous.name, "the IR is invalid after this pass")
            self.seconds.append((previous.name, time.perf_counter() - self.started))
            progress.pass_done(previous.name)
        self.running = following
        self.started = time.perf_counter()


def _verify(module: ModuleOp, names: str, problem: str) -> None:
    """Verifies `module`, raising a failure that starts with `names` (the pass or passes that
    ran since the last verification)."""
    try:
        module.verify()
    except DiagnosticException as error:
        raise _failure(names, f"{problem}: {error}", error) from error


def _failure(pass_name: str, message: str, cause: Exception) -> PassFailedException:
    """A PassFailedException whose message starts with `pass_name:`, keeping `cause`'s notes
    (xDSL's annotated IR)."""
    text = message if message.startswith(f"{pass_name}:") else f"{pass_name}: {message}"
    failure = PassFailedException(text)
    for note in getattr(cause, "__notes__", []):
        failure.add_note(note)
    return failure


VERIFY_MODES = ("each", "end", "none")
"""When `run_pipeline` verifies the module: after every pass, after the last, or never."""


def run_pipeline(
    module: ModuleOp, passes: Sequence[ModulePass], ctx: Context | None = None, verify: str = "each"
) -> list[tuple[str, float]]:
    """Runs `passes` on `module` in order, verifying it as `verify` says (`VERIFY_MODES`); returns
    each pass's wall seconds (with "end", the last one's include the verification). A pass that
    fails, or leaves IR that does not verify, raises a PassFailedException whose message starts
    with that pass's name (with "end", an invalid result names every pass of the list)."""
    assert verify in VERIFY_MODES, verify
    monitor = _Monitor(verify == "each")
    try:
        PassPipeline(tuple(passes), monitor).apply(ctx if ctx is not None else make_context(), module)
    except (PassFailedException, DiagnosticException) as error:
        running = monitor.running
        if running is None or str(error).startswith(f"{running.name}:"):
            raise
        raise _failure(running.name, str(error), error) from error
    if verify == "end" and monitor.seconds:
        start = time.perf_counter()
        names = ", ".join(p.name for p in passes)
        _verify(module, names, "the IR is invalid after these passes (--verify-each finds which one)")
        name, seconds = monitor.seconds[-1]
        monitor.seconds[-1] = (name, seconds + time.perf_counter() - start)
    return monitor.seconds


def run_pipeline_reporting(
    module: ModuleOp, passes: Sequence[ModulePass], verify: str = "each"
) -> list[tuple[str, float]]:
    """`run_pipeline`, a failure (which names the pass) raised as one AitcError diagnostic: the
    message up to the IR dump xDSL appends after a blank line."""
    try:
        return run_pipeline(module, passes, verify=verify)
    except (PassFailedException, DiagnosticException) as error:
        raise AitcError(str(error).split("\n\n")[0].strip()) from None
