"""The fuzz report: outcome counts per family, every bad case with a reproduce command, and the
bad cases grouped into distinct behaviours (same outcome, same message once numbers and quoted
names are masked)."""

from __future__ import annotations

import re
import shlex
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from aitc.fuzz.classify import BAD_OUTCOMES, CRASH, DESTROYED_FILE, HANG, OUTCOMES, PARTIAL_OUTPUT
from aitc.fuzz.runner import Result
from aitc.report import format_table

_COMMAND_WIDTH = 100
_EXCEPTION_LINE = re.compile(r"^[\w.]+(Error|Exception|Exit|Interrupt)\b")
_HEADLINE_WIDTH = 140


@dataclass(frozen=True)
class RunSettings:
    """What a reproduce command must repeat: the seed, the family list and subprocess cadence."""

    seed: int
    families: tuple[str, ...]
    all_families: tuple[str, ...]
    subprocess_every: int
    keep: str | None = None

    def reproduce(self, index: int) -> str:
        """The command that regenerates case `index`, writes its files and reruns it."""
        argv = ["python", "-m", "aitc.fuzz", "--seed", str(self.seed)]
        if self.families != self.all_families:
            argv += ["--families", ",".join(self.families)]
        if self.subprocess_every != 50:
            argv += ["--subprocess-every", str(self.subprocess_every)]
        folder = f"{self.keep}/case-{index}" if self.keep else f"/tmp/aitc-fuzz-case-{index}"
        return shlex.join([*argv, "--case", str(index), "--keep", folder])


def stderr_headline(result: Result) -> str:
    """The stderr line that best names what went wrong: the exception line of a traceback, the
    `internal error` line, or the first line ("" if stderr is empty)."""
    lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    if not lines:
        return ""
    if "Traceback" in result.stderr:
        return next((x for x in reversed(lines) if _EXCEPTION_LINE.match(x)), lines[-1])
    return next((x for x in lines if "internal error" in x), lines[0])


def message(result: Result) -> str:
    """What went wrong in one line: the file finding for partial output and destroyed files,
    the stderr headline for tracebacks, the command for hangs and crashes."""
    if result.outcome in (PARTIAL_OUTPUT, DESTROYED_FILE):
        return next(detail for outcome, detail in result.findings if outcome == result.outcome)
    if result.outcome in (HANG, CRASH):
        tool = " ".join(result.case.argv[:2] if result.case.argv[0] == "aitc" else result.case.argv[:1])
        return f"{tool}: {result.findings[0][1]}"
    return stderr_headline(result)


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def outcome_table(results: Sequence[Result], families: Sequence[str]) -> str:
    """Rows = families, columns = the seven outcomes and the total."""
    counts: dict[str, dict[str, int]] = {family: defaultdict(int) for family in families}
    for result in results:
        counts[result.case.family][result.outcome] += 1
    rows = [[name, *(counts[name][o] for o in OUTCOMES), sum(counts[name].values())] for name in families]
    totals = [sum(row[i] for row in rows) for i in range(1, len(OUTCOMES) + 2)]
    return format_table(["family", *OUTCOMES, "total"], [*rows, ["all", *totals]])


def bad_case_list(results: Sequence[Result], settings: RunSettings) -> str:
    """One block per bad case: family, index, outcome, command, headline, details, reproduce."""
    blocks = []
    for result in sorted(results, key=lambda r: r.case.index):
        if result.outcome not in BAD_OUTCOMES:
            continue
        case = result.case
        details = "; ".join(d for o, d in result.findings if o in BAD_OUTCOMES)
        blocks.append(
            f"{case.family} #{case.index}: {result.outcome}{' (subprocess)' if case.subprocess else ''}\n"
            f"  command:   {_shorten(case.command_line(), _COMMAND_WIDTH)}\n"
            f"  mutation:  {_shorten(case.note, _COMMAND_WIDTH)}\n"
            f"  stderr:    {_shorten(stderr_headline(result), _HEADLINE_WIDTH)}\n"
            f"  details:   {_shorten(details, _HEADLINE_WIDTH)}\n"
            f"  reproduce: {settings.reproduce(case.index)}"
        )
    return "\n".join(blocks)


_MASKS = (
    (re.compile(r"^\S+\.(onnx|mlir|aitb|npz|npy|toml|json|out)\S*: "), "FILE: "),
    (re.compile(r"'[^']*'|\"[^\"]*\""), "'…'"),
    (re.compile(r"0x[0-9a-fA-F]+|\d+"), "N"),
    (re.compile(r"\S*/\S*"), "PATH"),
)


def behaviour_key(result: Result) -> tuple[str, str]:
    """(outcome, `message` with quoted names, numbers and paths masked): one distinct bug."""
    text = message(result)
    for pattern, mask in _MASKS:
        text = pattern.sub(mask, text)
    return result.outcome, text


def distinct_behaviours(results: Sequence[Result]) -> str:
    """Bad cases grouped by `behaviour_key`, most frequent first, one example each."""
    groups: dict[tuple[str, str], list[Result]] = defaultdict(list)
    for result in results:
        if result.outcome in BAD_OUTCOMES:
            groups[behaviour_key(result)].append(result)
    rows = []
    for (outcome, _), members in sorted(groups.items(), key=lambda item: -len(item[1])):
        example = min(members, key=lambda r: r.case.index)
        families = ",".join(sorted({r.case.family for r in members}))
        message_text = _shorten(message(example), _HEADLINE_WIDTH)
        rows.append((len(members), outcome, families, message_text, f"--case {example.case.index}"))
    return format_table(["cases", "outcome", "families", "message", "example"], rows)


def format_report(results: Sequence[Result], settings: RunSettings, seconds: float) -> str:
    """The whole report: table, bad cases, distinct behaviours, timing."""
    bad = [r for r in results if r.outcome in BAD_OUTCOMES]
    parts = [outcome_table(results, settings.families)]
    if bad:
        parts += ["", f"bad cases ({len(bad)}):", bad_case_list(results, settings)]
        parts += ["", "distinct bad behaviours:", distinct_behaviours(results)]
    rate = len(results) / seconds if seconds > 0 else 0.0
    parts += ["", f"{len(results)} cases in {seconds:.1f} s ({rate:.1f} cases/s), {len(bad)} bad"]
    return "\n".join(parts)
