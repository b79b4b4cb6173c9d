"""Plain-text tables and summaries printed by the tools."""

from __future__ import annotations

import resource
import sys
from collections.abc import Mapping, Sequence

import numpy as np


def peak_rss_mib() -> float:
    """The process's peak resident set so far, in MiB (getrusage: KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def summarize_outputs(outputs: Mapping[str, np.ndarray]) -> str:
    rows = []
    for name, value in outputs.items():
        flat = value.reshape(-1)
        stats = ("", "", "")
        if flat.size and value.dtype.kind in "fiub":
            numeric = flat.astype(np.float64)
            stats = (f"{numeric.min():.6g}", f"{numeric.max():.6g}", f"{numeric.mean():.6g}")
        head = np.array2string(flat[:4], precision=4, separator=", ")
        rows.append((name, f"{value.dtype}{list(value.shape)}", *stats, head))
    return format_table(["output", "type", "min", "max", "mean", "first values"], rows)
