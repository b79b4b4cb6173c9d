"""The tuning cache of `aitc compile --tune`: per kernel signature (by its key,
`passes.graph_to_tile.tuning.kernel_key`), the cost model's short list with each candidate's
estimate and simulated cycles, as JSON:

    {"format": 1, "kernels": {KEY: {"kind": "conv", "node": "/layer1/conv", "signature": "...",
        "candidates": [{"choice": [...], "estimated": 63096, "measured": 35076, "problem": ""}, ...]}}}

The first candidate is the model's pick; the fastest measured one is the kernel's choice
(`KernelTuning.tuned`). `aitc.tune` fills it; `convert-graph-to-tile{tuning=FILE}` and every
tuned compile apply it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from aitc.diagnostics import AitcError
from aitc.files import read_text, write_atomic
from aitc.passes.graph_to_tile.tuning import TUNING_FORMAT, Tuned


@dataclass
class Candidate:
    """One tiling of a kernel: its choice, the model's estimate and the simulated cycles (None
    with `problem`: why it has no measurement)."""

    choice: tuple
    estimated: int
    measured: int | None = None
    problem: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "choice": list(self.choice),
            "estimated": self.estimated,
            "measured": self.measured,
            "problem": self.problem,
        }

    @staticmethod
    def from_json(data: Mapping[str, object]) -> Candidate:
        choice = data["choice"]
        if not isinstance(choice, list) or not all(isinstance(x, int | str) for x in choice):
            raise ValueError(f"choice {choice!r} is not a list of numbers and names")
        estimated = _optional_int(data["estimated"])
        if estimated is None:
            raise ValueError("a candidate without an estimate")
        return Candidate(tuple(choice), estimated, _optional_int(data["measured"]), str(data["problem"]))


@dataclass
class KernelTuning:
    """The measurements of one kernel signature (a cache entry): `candidates` in the model's
    order, its pick first."""

    kind: str
    node: str
    signature: str
    candidates: list[Candidate] = field(default_factory=list)

    @property
    def best(self) -> int | None:
        """The index of the fastest measured candidate (ties to the model's order)."""
        measured = [(c.measured, i) for i, c in enumerate(self.candidates) if c.measured is not None]
        return min(measured)[1] if measured else None

    def tuned(self) -> Tuned | None:
        """The choice to apply and the note for the kernel's `reason`; None without a
        measurement of the model's pick."""
        best, model = self.best, self.candidates[0]
        if best is None or model.measured is None:
            return None
        chosen = self.candidates[best]
        assert chosen.measured is not None
        count = len(self.candidates)
        which = "the model's pick" if best == 0 else f"candidate {best + 1} of the model's {count}"
        note = (
            f"tuned on the simulator: {which} {list(chosen.choice)} measured {chosen.measured} cycles alone "
            f"(est. {chosen.estimated}); the model's pick measured {model.measured} (est. {model.estimated})"
        )
        return Tuned(chosen.choice, note)

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "node": self.node,
            "signature": self.signature,
            "candidates": [c.to_json() for c in self.candidates],
        }

    @staticmethod
    def from_json(data: Mapping[str, object]) -> KernelTuning:
        candidates = data["candidates"]
        if not isinstance(candidates, list) or not candidates:
            raise ValueError("an entry without candidates")
        return KernelTuning(
            str(data["kind"]),
            str(data["node"]),
            str(data["signature"]),
            [Candidate.from_json(c) for c in candidates],
        )


def _optional_int(value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"cycles {value!r} are not an integer")
    return value


@dataclass
class TuningCache:
    """The kernels measured so far, by kernel key (`passes.graph_to_tile.tuning.kernel_key`),
    kept as JSON at `path`."""

    path: Path
    kernels: dict[str, KernelTuning] = field(default_factory=dict)

    @staticmethod
    def load(path: Path) -> TuningCache:
        """The cache at `path` (empty when there is no file); an AitcError when the file is
        not one aitc wrote."""
        if not path.exists():
            return TuningCache(path)
        if not path.is_file():
            raise AitcError(f"{path}: the tuning cache must be a regular file; give a file with --tune-cache")
        text = read_text(path)
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or data.get("format") != TUNING_FORMAT:
                raise ValueError(f"no 'format': {TUNING_FORMAT} at the top")
            kernels = data["kernels"]
            if not isinstance(kernels, dict):
                raise ValueError("'kernels' is not an object")
            return TuningCache(path, {str(k): KernelTuning.from_json(v) for k, v in kernels.items()})
        except (ValueError, KeyError, TypeError) as error:
            raise AitcError(
                f"{path}: not a tuning cache aitc can read ({error}); delete it to start afresh, or give "
                "another file with --tune-cache"
            ) from None

    def save(self) -> None:
        """Writes the cache (sorted keys: the same measurements give the same bytes)."""
        data = {"format": TUNING_FORMAT, "kernels": {k: v.to_json() for k, v in sorted(self.kernels.items())}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(data, indent=1) + "\n")

    def choices(self) -> dict[str, Tuned]:
        return {key: tuned for key, kernel in self.kernels.items() if (tuned := kernel.tuned()) is not None}


OUT_OF_TIME = "not measured: --tune-seconds ran out"
"""A candidate's `problem` when the time bound ran out before it: its kernel is not cached."""
