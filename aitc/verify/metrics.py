"""How far a tensor is from its reference, and the tolerance profiles that judge it.

Per pair (compiled `got`, reference `want`), in float64:

    cosine     sum(g w) / (|g| |w|); 1 when both are all zero, 0 when one is
    SQNR (dB)  10 log10(sum(w^2) / sum((g - w)^2)); inf when they are equal
    max abs    max |g - w|
    max rel    max |g - w| / max(|w|, floor), floor = 1e-3 max |w|: relative where the
               reference is at least 0.1% of its largest magnitude, relative to that floor
               below (a tiled sum's rounding on a near-zero value is no error, one element
               wrong by more than a percent of the tensor's scale is)

Integer and boolean tensors are compared exactly (their max abs must be 0). A float tensor
passes its dtype's profile (`TOLERANCES`) when its cosine, SQNR and max rel all meet it; NaN
where the reference has NaN is a match, anywhere else a failure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

REL_FLOOR = 1e-3
"""Below this share of a reference's largest magnitude, relative errors are taken relative to
it (module docstring)."""


@dataclass(frozen=True)
class Tolerance:
    """What a tensor of one dtype must meet (None: not checked)."""

    cosine: float | None = None
    sqnr_db: float | None = None
    max_rel: float | None = None
    exact: bool = False
    max_abs: float | None = None

    def text(self) -> str:
        """The profile as one line ("exact", or its bounds)."""
        if self.exact:
            return "exact"
        parts = [
            f"cosine >= {self.cosine}" if self.cosine is not None else "",
            f"SQNR >= {self.sqnr_db} dB" if self.sqnr_db is not None else "",
            f"max rel <= {self.max_rel:g}" if self.max_rel is not None else "",
            f"max abs <= {self.max_abs:g}" if self.max_abs is not None else "",
        ]
        return ", ".join(p for p in parts if p)


TOLERANCES: dict[str, Tolerance] = {
    "float32": Tolerance(cosine=0.99999, sqnr_db=60.0, max_rel=1e-2),
    "float16": Tolerance(cosine=0.9999, sqnr_db=40.0, max_rel=5e-2),
    "int8": Tolerance(cosine=0.99, sqnr_db=20.0),
    "integer": Tolerance(exact=True),
    "bool": Tolerance(exact=True),
}
"""The tolerance profiles, one place for all: float32 allows the summation-order differences of
a tiled matmul (on the example models aitc's tensors are 128 dB or more above their difference
from onnxruntime's, max rel at most 3e-4); int8 is for quantized models' dequantized tensors;
integer and boolean tensors must be equal."""


QUANTIZED_TOLERANCES: dict[str, Tolerance] = {
    **TOLERANCES,
    "float32": Tolerance(cosine=0.9999, sqnr_db=40.0),
    "int8": Tolerance(max_abs=1.0),
}
"""The profiles of a quantized (QDQ) model against onnxruntime running the same model: its int8
tensors may differ by one step where a value lies within float rounding of a rounding boundary
(x / scale computed from inputs that differ in the last bits, e.g. a tiled sum); a float tensor
after such a step differs by up to one quantization step in those elements, so float tensors
are judged in aggregate (cosine, SQNR), not element by element."""


def profile_of(dtype: np.dtype) -> str:
    """The `TOLERANCES` key of a tensor dtype."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return "bool"
    if dtype.kind in "iu":
        return "int8" if dtype.itemsize == 1 else "integer"
    return "float16" if dtype.itemsize <= 2 else "float32"


@dataclass(frozen=True)
class Comparison:
    """One tensor against its reference."""

    cosine: float
    sqnr_db: float
    max_abs: float
    max_rel: float
    profile: str
    passed: bool
    problem: str = ""

    def to_json(self) -> dict[str, object]:
        """The metrics as report.json writes them (inf and NaN as strings)."""
        return {
            "cosine": _finite(self.cosine),
            "sqnr_db": _finite(self.sqnr_db),
            "max_abs": _finite(self.max_abs),
            "max_rel": _finite(self.max_rel),
            "profile": self.profile,
            "passed": self.passed,
            "problem": self.problem,
        }


def _finite(value: float) -> float | str:
    """JSON has no inf or NaN: those become strings."""
    return round(value, 9) if math.isfinite(value) else str(value)


def compare(got: np.ndarray, want: np.ndarray, profiles: Mapping[str, Tolerance] | None = None) -> Comparison:
    """The metrics of `got` against `want` and whether they meet want's dtype profile."""
    profiles = TOLERANCES if profiles is None else profiles
    profile = profile_of(want.dtype)
    tolerance = profiles[profile]
    if got.shape != want.shape:
        problem = f"shape {list(got.shape)}, reference {list(want.shape)}"
        return Comparison(0.0, -math.inf, math.inf, math.inf, profile, False, problem)
    g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    nan = np.isnan(w)
    if np.any(np.isnan(g) != nan):
        return Comparison(
            0.0, -math.inf, math.inf, math.inf, profile, False, "NaN where the reference has none"
        )
    g, w = g[~nan], w[~nan]
    cosine, sqnr, max_abs, max_rel = _metrics(g, w)
    if tolerance.exact:
        passed = max_abs == 0
        return Comparison(cosine, sqnr, max_abs, max_rel, profile, passed, "" if passed else "not equal")
    failed = [
        f"cosine {cosine:.6f} < {tolerance.cosine}"
        if tolerance.cosine is not None and cosine < tolerance.cosine
        else "",
        f"SQNR {sqnr:.1f} dB < {tolerance.sqnr_db}"
        if tolerance.sqnr_db is not None and sqnr < tolerance.sqnr_db
        else "",
        f"max rel {max_rel:.3g} > {tolerance.max_rel:g}"
        if tolerance.max_rel is not None and max_rel > tolerance.max_rel
        else "",
        f"max abs {max_abs:.3g} > {tolerance.max_abs:g}"
        if tolerance.max_abs is not None and max_abs > tolerance.max_abs
        else "",
    ]
    problem = "; ".join(f for f in failed if f)
    return Comparison(cosine, sqnr, max_abs, max_rel, profile, not problem, problem)


def _metrics(g: np.ndarray, w: np.ndarray) -> tuple[float, float, float, float]:
    """(cosine, SQNR dB, max abs, max rel) of finite float64 vectors (module docstring)."""
    if g.size == 0:
        return 1.0, math.inf, 0.0, 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        diff = g - w
        max_abs = float(np.max(np.abs(diff)))
        norms = float(np.linalg.norm(g)) * float(np.linalg.norm(w))
        if norms == 0:
            cosine = 1.0 if not np.any(g) and not np.any(w) else 0.0
        else:
            cosine = min(1.0, max(-1.0, float(np.dot(g, w) / norms)))  # rounding may pass 1
        noise, signal = float(np.dot(diff, diff)), float(np.dot(w, w))
        sqnr = math.inf if noise == 0 else (10 * math.log10(signal / noise) if signal > 0 else -math.inf)
        floor = max(REL_FLOOR * float(np.max(np.abs(w))), 1e-30)
        max_rel = float(np.max(np.abs(diff) / np.maximum(np.abs(w), floor)))
    return cosine, sqnr, max_abs, max_rel
