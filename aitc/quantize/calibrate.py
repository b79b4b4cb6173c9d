"""Calibration: the range of every tensor a quantized op reads, from onnxruntime runs of the
float model on calibration samples.

The samples are one array per model input, stacked along the batch (first) axis. The model
runs with the wanted tensors exposed as graph outputs, in batches of its batch size (a static
first dim) or of `BATCH` samples (a dynamic one). Three methods turn what it saw into a range:

    minmax      the smallest and largest value seen
    percentile  a symmetric range: the `percentile`-th percentile of |x| (a range from 0 when the
                tensor is never negative)
    entropy     the threshold T of |x| whose clipped, 128-level histogram is closest to the
                observed one in KL divergence (TensorRT's calibration), symmetric as above

percentile and entropy read a 2048-bin histogram of |x| over [0, max |x|], filled in a second
pass once the maxima are known.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx

from aitc.diagnostics import AitcError
from aitc.frontend.onnx_import import graph_inputs
from aitc.reference import onnxruntime_session

METHODS = ("minmax", "percentile", "entropy")
BINS = 2048
"""Histogram bins of |x| (percentile, entropy)."""
LEVELS = 128
"""Quantized levels of a symmetric int8 range's magnitude (entropy)."""
BATCH = 32
"""Samples per run of a model whose batch dim is dynamic."""


@dataclass(frozen=True)
class Range:
    """What a tensor is quantized over: [low, high], low <= 0 <= high."""

    low: float
    high: float


def batches(model: onnx.ModelProto, samples: Mapping[str, np.ndarray]) -> Iterator[dict[str, np.ndarray]]:
    """The calibration samples in runs the model accepts (module docstring); an AitcError when
    the samples do not fit the model's inputs."""
    inputs = graph_inputs(model)
    missing = [v.name for v in inputs if v.name not in samples]
    extra = [name for name in samples if name not in {v.name for v in inputs}]
    problems = [f"the calibration data has no '{name}' (one array per model input)" for name in missing]
    problems += [f"the calibration data has '{name}', which is no input of the model" for name in extra]
    counts = {
        np.shape(samples[v.name])[0] if np.ndim(samples[v.name]) else 0
        for v in inputs
        if v.name not in missing
    }
    if len(counts) > 1:
        problems.append(f"the calibration arrays hold different numbers of samples: {sorted(counts)}")
    if problems:
        raise AitcError(problems)
    count = counts.pop() if counts else 0
    if count == 0:
        raise AitcError("the calibration data holds no samples (stack them along the first axis)")
    first = inputs[0].type.tensor_type.shape.dim
    size = first[0].dim_value if first and first[0].HasField("dim_value") else BATCH
    if count % size and size != BATCH:
        raise AitcError(f"{count} calibration samples are not a multiple of the model's batch size {size}")
    for start in range(0, count, size):
        yield {v.name: np.ascontiguousarray(samples[v.name][start : start + size]) for v in inputs}


def _exposing(model: onnx.ModelProto, tensors: Sequence[str]) -> onnx.ModelProto:
    """`model` with `tensors` as graph outputs (typed from onnx's shape inference)."""
    inferred = onnx.shape_inference.infer_shapes(model)
    known = {v.name: v for v in [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]}
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    present = {o.name for o in exposed.graph.output}
    for name in tensors:
        if name in present:
            continue
        if name not in known:
            elem = onnx.TensorProto.FLOAT
            exposed.graph.output.append(onnx.helper.make_tensor_value_info(name, elem, None))
        else:
            exposed.graph.output.append(known[name])
    return exposed


def calibrate(
    model: onnx.ModelProto,
    samples: Mapping[str, np.ndarray],
    tensors: Sequence[str],
    method: str = "minmax",
    percentile: float = 99.999,
) -> dict[str, Range]:
    """The range of each of `tensors` over the calibration samples (module docstring)."""
    if method not in METHODS:
        raise AitcError(f"--method must be one of {', '.join(METHODS)}, not '{method}'")
    session = onnxruntime_session(_exposing(model, tensors))

    def outputs() -> Iterator[tuple[str, np.ndarray]]:
        for batch in batches(model, samples):
            for name, value in zip(tensors, session.run(list(tensors), batch), strict=True):
                finite = np.asarray(value, np.float64)
                yield name, finite[np.isfinite(finite)]

    low, high = dict.fromkeys(tensors, 0.0), dict.fromkeys(tensors, 0.0)
    for name, values in outputs():
        low[name] = min(low[name], float(values.min(initial=0.0)))
        high[name] = max(high[name], float(values.max(initial=0.0)))
    if method == "minmax":
        return {name: Range(low[name], high[name]) for name in tensors}
    histograms = {name: np.zeros(BINS, np.int64) for name in tensors}
    for name, values in outputs():  # a second pass, now that the maxima are known
        top = max(-low[name], high[name])
        if top > 0:
            histograms[name] += np.histogram(np.abs(values), bins=BINS, range=(0.0, top))[0]
    ranges = {}
    for name in tensors:
        top = max(-low[name], high[name])
        found = _percentile(histograms[name], top, percentile) if method == "percentile" else None
        threshold = _entropy(histograms[name], top) if found is None else found
        ranges[name] = Range(-threshold if low[name] < 0 else 0.0, threshold)
    return ranges


def _percentile(histogram: np.ndarray, top: float, percentile: float) -> float:
    """The value of |x| below which `percentile`% of the samples lie (a bin's upper edge)."""
    total = int(histogram.sum())
    if total == 0 or top == 0:
        return top
    index = int(np.searchsorted(np.cumsum(histogram), math.ceil(total * percentile / 100.0)))
    return top * min(index + 1, BINS) / BINS


def _entropy(histogram: np.ndarray, top: float) -> float:
    """TensorRT's KL-divergence threshold over a histogram of |x| on [0, top]."""
    if histogram.sum() == 0 or top == 0:
        return top
    best, best_divergence = BINS, math.inf
    for edge in range(LEVELS, BINS + 1):
        reference = histogram[:edge].astype(np.float64).copy()
        reference[edge - 1] += histogram[edge:].sum()  # clipped outliers land on the last bin
        candidate = _expanded(histogram[:edge].astype(np.float64), LEVELS)
        divergence = _kl(reference, candidate)
        if divergence < best_divergence:
            best, best_divergence = edge, divergence
    return top * best / BINS


def _expanded(bins: np.ndarray, levels: int) -> np.ndarray:
    """`bins` merged into `levels` groups (as np.array_split cuts them), each group's count
    spread evenly over its non-empty bins: what quantizing to `levels` levels keeps of the
    distribution."""
    base, extra = divmod(bins.size, levels)
    sizes = np.full(levels, base)
    sizes[:extra] += 1
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    nonzero = bins != 0
    sums = np.add.reduceat(bins, starts)
    counts = np.add.reduceat(nonzero.astype(np.float64), starts)
    per_bin = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
    return np.repeat(per_bin, sizes) * nonzero


def _kl(p: np.ndarray, q: np.ndarray) -> float:
    """KL(p || q) of two histograms, normalised; inf where q misses mass p has."""
    p, q = p / p.sum(), q / max(q.sum(), 1e-30)
    mask = p > 0
    if np.any(q[mask] == 0):
        return math.inf
    return float(np.sum(p[mask] * np.log(p[mask] / q[mask])))
