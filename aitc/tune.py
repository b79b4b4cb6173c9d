"""`aitc compile --tune`: each distinct kernel's tiling measured on the simulator, the fastest kept,
the result cached on disk by (kernel signature, target).

    result = compile_tuned("model.onnx", CompileOptions(target="edge"), TuneOptions(cache=path))
    print(result.tuning)          # per kernel: the model's pick against the fastest measured

How:

    1. compile as usual inside a recording `tuning_session`, applying the cache's choices: every
       matmul, conv and pooling kernel is recorded once per signature (`passes.graph_to_tile.tuning`),
       with its graph ops as a module of their own and the cost model's short list
    2. every signature the cache lacks (or whose cached choice is no candidate any more, or
       whose cached short list is shorter than asked for),
       largest estimate x count first, until `TuneOptions.seconds` run out: each candidate of
       the short list is forced on the kernel alone, compiled to hw, simulated on seeded random
       inputs and checked against the graph interpreter; the fewest cycles win (ties to the
       model's order, so the model's pick stays unless another is faster)
    3. the cache is written (atomically) with the kernels measured in full, and the model is
       compiled again with the choices, when any were measured

A kernel whose short list was not measured in full (time ran out) keeps the model's plan and is
not cached, so the next --tune measures it. The output is a function of the input, the options
and the cache: a second compile with a warm cache measures nothing and gives the same bytes.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xdsl.utils.exceptions import DiagnosticException

from aitc.analysis.signature import entry_function
from aitc.compiler import CompileOptions, CompileResult, compile_module
from aitc.diagnostics import AitcError
from aitc.interp.run import random_inputs, run_module
from aitc.module_target import TARGET_ATTR
from aitc.passes.graph_to_tile.tuning import SHORT_LIST, Request, Tuned, TuningSession, tuning_session
from aitc.passes.graph_to_tile.tuning_cache import OUT_OF_TIME, Candidate, KernelTuning, TuningCache
from aitc.reference import relative_error
from aitc.report import format_table
from aitc.sim import Simulator
from aitc.target import load_target

CACHE_ENV = "AITC_TUNE_CACHE"
"""Environment variable: the tuning cache's path when --tune-cache does not give one."""

DEFAULT_SECONDS = 300.0
"""The default time bound of the measurements of one tuned compile."""

TOLERANCE = 1e-4
"""A candidate whose results differ more from the graph interpreter's (`relative_error`) is
refused: a wrong kernel is never the fastest."""


def default_cache_path() -> Path:
    """$AITC_TUNE_CACHE, else $XDG_CACHE_HOME/aitc/tuning.json, else ~/.cache/aitc/tuning.json."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aitc" / "tuning.json"


@dataclass(frozen=True)
class TuneOptions:
    """Where the cache is, how long measuring may take, how many candidates per kernel."""

    cache: Path | None = None
    """None: `default_cache_path()`."""
    seconds: float = DEFAULT_SECONDS
    candidates: int = SHORT_LIST


def compile_tuned(source, options: CompileOptions, tune: TuneOptions) -> CompileResult:
    """`compile_module` with every kernel's tiling measured (see the module docstring); the
    result's `tuning` is the report of what was measured and chosen."""
    if tune.candidates < 1 or tune.seconds < 0:
        raise AitcError("--tune-candidates must be at least 1 and --tune-seconds at least 0")
    cache = TuningCache.load(tune.cache or default_cache_path())
    first = TuningSession(cache.choices(), record=True, candidates=tune.candidates)
    with tuning_session(first):
        result = compile_module(source, options)
    target = result.target or options.target
    pending = [r for r in first.requests.values() if _needs_measuring(r, cache, first)]
    pending.sort(key=lambda r: -r.ranked[0][1] * first.counts[r.key])
    deadline = time.monotonic() + tune.seconds
    start = time.perf_counter()
    measured: dict[str, KernelTuning] = {}
    for request in pending:
        kernel = _tune_kernel(request, target, options.depth, deadline)
        measured[request.key] = kernel
        complete = all(c.problem != OUT_OF_TIME for c in kernel.candidates)
        if complete and kernel.tuned() is not None:
            cache.kernels[request.key] = kernel
    seconds = time.perf_counter() - start
    if any(key in cache.kernels for key in measured):
        cache.save()
        with tuning_session(TuningSession(cache.choices())):
            result = compile_module(source, options)
    result.tuning = tuning_report(first, cache, measured, seconds)
    return result


def _needs_measuring(request: Request, cache: TuningCache, session: TuningSession) -> bool:
    """Not in the cache, or its cached choice is no candidate any more, or the cache measured
    a shorter list than this compile asks for."""
    cached = cache.kernels.get(request.key)
    return cached is None or request.key in session.stale or len(cached.candidates) < len(request.ranked)


def _tune_kernel(request: Request, target: str | None, depth: int, deadline: float) -> KernelTuning:
    """Every candidate of `request`'s short list measured alone, until `deadline`."""
    kernel = KernelTuning(request.kind, request.node, request.signature)
    unit = request.unit
    inputs = random_inputs(entry_function(unit))
    expected = run_module(unit, inputs)
    spec = None if TARGET_ATTR in unit.attributes else target
    for choice, estimated in request.ranked:
        candidate = Candidate(choice, estimated)
        kernel.candidates.append(candidate)
        if time.monotonic() > deadline:
            candidate.problem = OUT_OF_TIME
            continue
        candidate.measured, candidate.problem = _measure(request, choice, spec, depth, inputs, expected)
    return kernel


def _measure(
    request: Request,
    choice: tuple,
    target: str | None,
    depth: int,
    inputs: Mapping[str, np.ndarray],
    expected: Mapping[str, np.ndarray],
) -> tuple[int | None, str]:
    """(simulated cycles, "") of the kernel alone with `choice` forced, or (None, why not)."""
    session = TuningSession({request.key: Tuned(choice, "")})
    options = CompileOptions(target=target, depth=depth, optimize=False, host_fallback=False, cores=1)
    try:
        with tuning_session(session):
            compiled = compile_module(request.unit.clone(), options)
    except (AitcError, DiagnosticException) as error:
        return None, f"does not compile: {str(error).splitlines()[0]}"
    if request.key not in session.applied:
        return None, "lowered alone, the kernel is planned as another problem"
    try:
        simulator = Simulator(compiled.module, load_target(compiled.target or target or ""), verified=True)
        run = simulator.run(inputs)
    except AitcError as error:  # a race, a deadlock, an access out of bounds: refused, reported
        return None, f"fails on the simulator: {str(error).splitlines()[0]}"
    got = dict(zip(expected, run.outputs.values(), strict=True))  # same order; the names differ
    error = relative_error(got, expected)
    if not error <= TOLERANCE:
        return None, f"wrong results: relative error {error:.2g} against the graph interpreter"
    return run.stats.cycles, ""


def tuning_report(
    session: TuningSession, cache: TuningCache, measured: Mapping[str, KernelTuning], seconds: float
) -> str:
    """Per kernel signature: how many kernels have it, the model's pick (estimate, measured),
    the tuned pick, the gain and where the figures come from; then a summary with the model's
    estimate error over the measured picks."""
    rows: list[list[object]] = []
    errors: list[float] = []
    changed = 0
    for key, request in session.requests.items():
        kernel = cache.kernels.get(key) or measured.get(key)
        source = "measured now" if key in measured else "cache"
        if key in measured and key not in cache.kernels:
            source = "not tuned: " + _why_not(measured[key])
        if kernel is None:
            estimate = request.ranked[0][1]
            rows.append([request.node, request.kind, session.counts[key], estimate, "", "", "", source])
            continue
        model, best = kernel.candidates[0], kernel.best
        chosen = kernel.candidates[best] if best is not None and key in cache.kernels else model
        if chosen is not model:
            changed += 1
        if model.measured:
            errors.append(abs(model.estimated - model.measured) / model.measured)
        gain = f"{model.measured / chosen.measured:.3f}x" if model.measured and chosen.measured else ""
        pick = "model's" if chosen is model else f"#{kernel.candidates.index(chosen) + 1}"
        rows.append(
            [
                request.node, request.kind, session.counts[key], model.estimated, model.measured or "",
                f"{pick} {chosen.measured or ''}".strip(), gain, source,
            ]
        )  # fmt: skip
    header = ["kernel", "kind", "count", "model est", "model measured", "tuned", "gain", "from"]
    table = format_table(header, rows) if rows else "(no matmul, conv or pooling kernels)"
    summary = (
        f"tuning: {len(session.requests)} kernel signature(s), {len(measured)} measured in {seconds:.1f} s, "
        f"{changed} not the model's pick; cache {cache.path}"
    )
    if errors:
        summary += (
            f"; model's estimate off by median {100 * statistics.median(errors):.1f}%, "
            f"max {100 * max(errors):.1f}% on its picks"
        )
    return f"{table}\n{summary}"


def _why_not(kernel: KernelTuning) -> str:
    problems = [c.problem for c in kernel.candidates if c.problem]
    if OUT_OF_TIME in problems:
        return "time ran out"
    return problems[0] if problems else "no measurement"
