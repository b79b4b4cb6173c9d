"""`aitc verify --bisect`: the first pass of the compile whose output disagrees with onnxruntime.

Every level is executable (graph, tile and sync on aitc's interpreters, hw on the simulator),
so the module after any prefix of the pipeline can run. The model's node outputs are exposed as
graph outputs (as entire mode does), each probe imports the model afresh, runs the first N
passes, runs the result and compares every exposed tensor with onnxruntime's under the
tolerance profiles. A binary search over N finds the smallest N that disagrees (passes are
assumed to keep a disagreement once it appears, as LLVM's `-opt-bisect-limit` assumes), and the
first diverging node is the first tensor, in node order, that disagrees after pass N. Probes
print as LLVM's bisection does: `BISECT: running pass (N) name`, and `BISECT: NOT running pass
(N) name` past the limit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import onnx
from xdsl.passes import ModulePass

from aitc.compiler import CompileOptions, load_input, record_compile_target, stage_passes
from aitc.diagnostics import AitcError
from aitc.interp.run import run_any_level
from aitc.passes.runner import run_pipeline_reporting
from aitc.verify.metrics import Tolerance, compare

Log = Callable[[str], None]


@dataclass(frozen=True)
class Divergence:
    """The first tensor (in node order) outside tolerance after a prefix of the pipeline."""

    tensor: str
    node: str
    problem: str


@dataclass(frozen=True)
class BisectResult:
    """The pipeline's passes, the first that disagrees (its 1-based index, 0: the imported
    model already does; None: none does) and the first diverging tensor there. When the
    modules after some passes cannot run (a sync module before insert-semaphores races), the
    search narrows to a run of passes: `since` is its first, `culprit` its last, and `unrunnable`
    why the modules inside it could not run."""

    passes: list[str]
    culprit: int | None
    divergence: Divergence | None
    probes: int
    since: int | None = None
    unrunnable: str = ""

    def to_json(self) -> dict[str, object]:
        """The finding as report.json writes it."""
        node = self.divergence.node if self.divergence is not None else None
        return {"passes": self.passes, "first_diverging_pass": self.culprit, "since": self.since,
                "first_diverging_node": node, "probes": self.probes, "text": self.text()}  # fmt: skip

    def text(self) -> str:
        """The BISECT lines that state the finding."""
        if self.culprit is None:
            return f"BISECT: no pass diverges: all {len(self.passes)} passes agree with onnxruntime"
        where = "the imported model (before any pass)"
        if self.culprit and self.since is not None and self.since < self.culprit:
            run = ", ".join(f"({i}) {self.passes[i - 1]}" for i in range(self.since, self.culprit + 1))
            where = f"one of passes {run} (the modules between them cannot run: {self.unrunnable})"
        elif self.culprit:
            where = f"pass ({self.culprit}) {self.passes[self.culprit - 1]}"
        found = f"BISECT: first diverging: {where}, found in {self.probes} probes"
        if self.divergence is not None:
            d = self.divergence
            found += f"\nBISECT: first diverging node: '{d.node}' (tensor '{d.tensor}'): {d.problem}"
        return found


def pipeline_passes(options: CompileOptions, level: str) -> list[ModulePass]:
    """The single-core compile's passes from the graph level down to `level`."""
    return [p for _, passes in stage_passes("graph", replace(options, emit=level, cores=1)) for p in passes]


def bisect_passes(
    exposed: onnx.ModelProto,
    tensors: Sequence[tuple[str, str, str]],
    reference: Mapping[str, np.ndarray],
    options: CompileOptions,
    inputs: Mapping[str, np.ndarray],
    passes: Sequence[ModulePass],
    log: Log = print,
    profiles: Mapping[str, Tolerance] | None = None,
) -> BisectResult:
    """The first of `passes` after which the exposed model's `tensors` ((tensor, node, op type)
    in node order) disagree with `reference`, onnxruntime's values of them on `inputs`
    (module docstring)."""
    if (options.cores or 1) > 1:
        raise AitcError("--bisect checks the single-core pipeline: use --cores 1")
    probe = _Probe(exposed, tensors, reference, options, inputs, passes, log, profiles)
    names = [p.name for p in passes]
    last = probe(len(passes))
    if isinstance(last, Unrunnable):
        raise AitcError(f"--bisect: the compiled module does not run: {last.reason}")
    if last is None:
        return BisectResult(names, None, None, probe.count)
    first = probe(0)
    if first is not None:
        return BisectResult(names, 0, None if isinstance(first, Unrunnable) else first, probe.count)
    low, high = 0, len(passes)  # probe(low) agrees, probe(high) does not
    skipped: list[str] = []
    while high - low > 1:
        middle = _runnable_between(probe, low, high, skipped)
        if middle is None:
            break
        if probe(middle) is None:
            low = middle
        else:
            high = middle
    found = probe(high)
    assert isinstance(found, Divergence)
    return BisectResult(names, high, found, probe.count, low + 1, skipped[0] if skipped else "")


def _runnable_between(probe: _Probe, low: int, high: int, skipped: list[str]) -> int | None:
    """A limit strictly between `low` and `high` whose module runs, the nearest to the middle
    first; None when none does (each one that does not is noted in `skipped`)."""
    middle = (low + high) // 2
    order = sorted(range(low + 1, high), key=lambda limit: (abs(limit - middle), limit))
    for limit in order:
        found = probe(limit)
        if not isinstance(found, Unrunnable):
            return limit
        skipped.append(found.reason)
    return None


@dataclass(frozen=True)
class Unrunnable:
    """A probe whose module could not run (why)."""

    reason: str


class _Probe:
    """Runs the first N passes on a fresh import and finds the first diverging tensor; each N
    once (`count` probes so far)."""

    def __init__(
        self,
        exposed: onnx.ModelProto,
        tensors: Sequence[tuple[str, str, str]],
        reference: Mapping[str, np.ndarray],
        options: CompileOptions,
        inputs: Mapping[str, np.ndarray],
        passes: Sequence[ModulePass],
        log: Log,
        profiles: Mapping[str, Tolerance] | None = None,
    ):
        self.exposed, self.tensors, self.reference, self.profiles = exposed, tensors, reference, profiles
        self.options, self.inputs, self.passes, self.log = options, inputs, list(passes), log
        self.seen: dict[int, Divergence | Unrunnable | None] = {}
        self.count = 0

    def __call__(self, limit: int) -> Divergence | Unrunnable | None:
        if limit not in self.seen:
            self.count += 1
            self.seen[limit] = self._run(limit)
        return self.seen[limit]

    def _run(self, limit: int) -> Divergence | Unrunnable | None:
        self.log(f"BISECT: probe {self.count}: the first {limit} of {len(self.passes)} passes")
        module = load_input(self.exposed, self.options)
        if limit:
            record_compile_target(module, self.options)
        for index, compile_pass in enumerate(self.passes, start=1):
            running = "running" if index <= limit else "NOT running"
            self.log(f"BISECT: {running} pass ({index}) {compile_pass.name} on module")
        run_pipeline_reporting(module, self.passes[:limit], "none")
        try:
            got = run_any_level(module, self.inputs)
        except AitcError as error:
            reason = str(error).splitlines()[0][:160]
            self.log(f"BISECT: the module after {limit} passes does not run: {reason}")
            return Unrunnable(reason)
        for tensor, node, _ in self.tensors:
            if tensor in got:
                comparison = compare(np.asarray(got[tensor]), self.reference[tensor], self.profiles)
                if not comparison.passed:
                    return Divergence(tensor, node, comparison.problem)
        return None
