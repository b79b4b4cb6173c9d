"""The one pipeline runner: xDSL's `PassPipeline` with a callback that verifies the module after
every pass (naming the pass that broke it) and times every pass. Used by `aitc compile`, the
pipelines of passes/pipelines.py and `graph-optimize`.

Verifying a large module costs about as much as a lowering pass (xDSL verifies every op in
Python: ~1 s for ResNet-50 at tile level), so `aitc compile` verifies once per lowering stage
(`verify_each=False`: after the last pass of the list, naming all of them when it fails) unless
asked to verify after every pass, as LLVM's `opt -verify-each` does.
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


def run_pipeline(
    module: ModuleOp, passes: Sequence[ModulePass], ctx: Context | None = None, verify_each: bool = True
) -> list[tuple[str, float]]:
    """Runs `passes` on `module` in order, verifying it after every pass (`verify_each`) or after
    the last one; returns each pass's wall seconds (the last one's include a final
    verification). A pass that fails, or leaves IR that does not verify, raises a
    PassFailedException whose message starts with that pass's name (without `verify_each`, an
    invalid result names every pass of the list)."""
    monitor = _Monitor(verify_each)
    try:
        PassPipeline(tuple(passes), monitor).apply(ctx if ctx is not None else make_context(), module)
    except (PassFailedException, DiagnosticException) as error:
        running = monitor.running
        if running is None or str(error).startswith(f"{running.name}:"):
            raise
        raise _failure(running.name, str(error), error) from error
    if not verify_each and monitor.seconds:
        start = time.perf_counter()
        names = ", ".join(p.name for p in passes)
        _verify(module, names, "the IR is invalid after these passes (--verify-each finds which one)")
        name, seconds = monitor.seconds[-1]
        monitor.seconds[-1] = (name, seconds + time.perf_counter() - start)
    return monitor.seconds


def run_pipeline_reporting(
    module: ModuleOp, passes: Sequence[ModulePass], verify_each: bool = True
) -> list[tuple[str, float]]:
    """`run_pipeline`, a failure (which names the pass) raised as one AitcError diagnostic: the
    message up to the IR dump xDSL appends after a blank line."""
    try:
        return run_pipeline(module, passes, verify_each=verify_each)
    except (PassFailedException, DiagnosticException) as error:
        raise AitcError(str(error).split("\n\n")[0].strip()) from None
