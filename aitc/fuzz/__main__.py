"""`python -m aitc.fuzz`: run N seeded fuzz cases against `aitc`/`aitc-opt`, print the report.

    python -m aitc.fuzz --n 500 --seed 0 [--families a,b] [--jobs J] [--timeout T] [--keep DIR]
    python -m aitc.fuzz --seed 0 --case 17 --keep DIR   # write case 17's files to DIR, rerun it

Exit status 1 if any case had a bad outcome (traceback, hang, crash, partial output, destroyed
file), else 0.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from aitc.fuzz.case import make_writable, write_case
from aitc.fuzz.classify import BAD_OUTCOMES
from aitc.fuzz.families import FAMILIES, generate_case
from aitc.fuzz.report import RunSettings, format_report
from aitc.fuzz.runner import Result, run_cases


def _families(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in FAMILIES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown families {unknown}; choose from {', '.join(FAMILIES)}")
    return names


def build_parser() -> argparse.ArgumentParser:
    """The fuzzer's command line."""
    assert __doc__ is not None  # python -OO strips it (and this assert)
    parser = argparse.ArgumentParser(prog="python -m aitc.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500, help="number of cases (default 500)")
    parser.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    parser.add_argument(
        "--families",
        type=_families,
        default=list(FAMILIES),
        help=f"comma-separated subset of {', '.join(FAMILIES)} (default: all)",
    )
    parser.add_argument("--jobs", type=int, default=None, help="parallel cases (default: CPU count)")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds before a case is a hang")
    parser.add_argument("--keep", metavar="DIR", help="write the files of bad cases (or of --case) here")
    parser.add_argument("--case", type=int, metavar="I", help="only case I: write it to --keep, rerun it")
    parser.add_argument(
        "--subprocess-every", type=int, default=50, help="run every K-th case via the console script"
    )
    return parser


def _progress(total: int) -> Callable[[Result], None]:
    done = [0]
    started = time.monotonic()

    def report(result: Result) -> None:
        done[0] += 1
        if done[0] % max(1, total // 20) == 0 or done[0] == total:
            elapsed = time.monotonic() - started
            print(f"  {done[0]}/{total} cases, {elapsed:.0f} s", file=sys.stderr, flush=True)

    return report


def run_many(args: argparse.Namespace, settings: RunSettings) -> int:
    """Runs cases 0..n-1, prints the report, keeps the bad cases' files if asked."""
    cases = (generate_case(args.seed, i, args.families, args.subprocess_every) for i in range(args.n))
    started = time.monotonic()
    results = run_cases(cases, jobs=args.jobs, timeout=args.timeout, on_result=_progress(args.n))
    results.sort(key=lambda r: r.case.index)
    print(format_report(results, settings, time.monotonic() - started))
    bad = [r for r in results if r.outcome in BAD_OUTCOMES]
    for result in bad if args.keep else []:
        _write_fresh(result.case, Path(args.keep) / f"case-{result.case.index}")
    return 1 if bad else 0


_MARKER = ".aitc-fuzz-case"
"""Marks a folder this tool wrote a case into, so it may replace it (and never anything else)."""


def _write_fresh(case, folder: Path) -> None:
    """Writes `case` into `folder`, replacing an earlier case there; refuses any other folder."""
    if folder.exists():
        if any(folder.iterdir()) and not (folder / _MARKER).exists():
            raise SystemExit(f"error: {folder} exists and does not hold a fuzz case; choose another --keep")
        make_writable(folder)
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    write_case(case, folder)
    (folder / _MARKER).write_text(f"{case.family} #{case.index}: {case.note}\n")


def run_one(args: argparse.Namespace) -> int:
    """Writes case `--case` to `--keep` (or a temporary folder), prints its command, reruns it."""
    case = generate_case(args.seed, args.case, args.families, args.subprocess_every)
    folder = Path(args.keep or f"/tmp/aitc-fuzz-case-{args.case}")
    _write_fresh(case, folder)
    command = shlex.join([str(Path(sys.executable).with_name(case.argv[0])), *case.argv[1:]])
    print(f"case {case.index} ({case.family}): {case.note}")
    print(f"files: {folder}")
    print(f"reproduce: cd {folder} && {command}")
    [result] = run_cases([case], jobs=1, timeout=args.timeout)
    print(f"outcome: {result.outcome} ({'; '.join(detail for _, detail in result.findings)})")
    print(f"exit: {result.exit}, {result.seconds:.2f} s")
    print("--- stdout\n" + result.stdout[-2000:] + "--- stderr\n" + result.stderr[-4000:])
    return 1 if result.outcome in BAD_OUTCOMES else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `python -m aitc.fuzz`."""
    args = build_parser().parse_args(argv)
    settings = RunSettings(args.seed, tuple(args.families), tuple(FAMILIES), args.subprocess_every, args.keep)
    if args.case is not None:
        return run_one(args)
    return run_many(args, settings)


if __name__ == "__main__":
    sys.exit(main())
