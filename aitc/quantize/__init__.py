"""Post-training int8 quantization: `aitc quantize MODEL.onnx --calibration DATA.npz -o OUT.onnx`
writes a QDQ model, the format onnxruntime recommends, so onnxruntime runs it as a cross-check.

The scheme (as onnxruntime's `quantize_static` with QInt8 activations and weights):

- the ops that quantize: Conv, MatMul and Gemm (`QUANTIZED_OPS`), unless excluded by name;
- each float activation such an op reads gets one QuantizeLinear -> DequantizeLinear pair
  (shared by every quantized op reading it): int8, scale = (high - low) / 255 and zero point
  round(-128 - low / scale) over its calibrated range (`aitc.quantize.calibrate`; the range
  always holds 0, so 0 is exact);
- each weight becomes an int8 initializer (symmetric: zero point 0, scale = max |w| / 127, per
  tensor, or per output channel with `per_channel`: Conv's axis 0, MatMul's and Gemm's output
  axis) read through a DequantizeLinear;
- a Conv's or Gemm's bias becomes int32 with scale = the input's scale x the weight's (per
  channel), zero point 0, read through a DequantizeLinear.

Rounding is numpy's (half to even), as QuantizeLinear's. Nodes left out stay float. The
calibrated ranges are cached by (model, data, method) in `cache_dir()`, so quantizing again (another
exclusion list, per-channel or not) runs no calibration.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from aitc.diagnostics import AitcError
from aitc.files import write_atomic
from aitc.quantize.calibrate import METHODS, Range, calibrate

QUANTIZED_OPS = {"Conv": (0, 1, 2), "MatMul": (0, 1, None), "Gemm": (0, 1, 2)}
"""Op type -> (activation input, weight input, bias input or None)."""

CACHE_ENV = "AITC_CACHE_DIR"


def cache_dir() -> Path:
    """Where calibration results live: $AITC_CACHE_DIR/calibration, else
    ~/.cache/aitc/calibration."""
    root = os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "aitc"
    return Path(root) / "calibration"


@dataclass
class QuantizeReport:
    """What `quantize_model` did: per quantized node its input's range, scale and zero point and
    its weight's scale(s); the nodes left float and why."""

    method: str
    per_channel: bool
    quantized: list[dict[str, object]] = field(default_factory=list)
    left_float: list[tuple[str, str]] = field(default_factory=list)
    cached: bool = False


def _node_label(node: onnx.NodeProto, index: int) -> str:
    return node.name or f"{node.op_type}_{index}"


def _activation_params(value_range: Range) -> tuple[float, int]:
    """(scale, zero point) of an int8 tensor over `value_range` (module docstring)."""
    low, high = min(value_range.low, 0.0), max(value_range.high, 0.0)
    if high - low <= 0:
        return 1.0, 0
    scale = (high - low) / 255.0
    zero_point = int(np.clip(np.round(-128 - low / scale), -128, 127))
    return float(np.float32(scale)), zero_point


def _weight_params(weight: np.ndarray, axis: int | None) -> np.ndarray:
    """Symmetric int8 scale(s) of a weight: per tensor (axis None) or per slice along `axis`."""
    if axis is None:
        top = float(np.max(np.abs(weight))) if weight.size else 0.0
        return np.array(top / 127.0 if top > 0 else 1.0, np.float32)
    moved = np.moveaxis(weight, axis, 0).reshape(weight.shape[axis], -1)
    top = np.max(np.abs(moved), axis=1) if moved.size else np.zeros(weight.shape[axis])
    return np.where(top > 0, top / 127.0, 1.0).astype(np.float32)


def _quantized_weight(weight: np.ndarray, scale: np.ndarray, axis: int | None) -> np.ndarray:
    shape = [1] * weight.ndim
    if axis is not None:
        shape[axis] = -1
    return np.clip(np.round(weight / scale.reshape(shape)), -127, 127).astype(np.int8)


def _weight_axis(op_type: str, node: onnx.NodeProto, weight: np.ndarray, per_channel: bool) -> int | None:
    """The per-channel axis of a weight: Conv 0, MatMul the last, Gemm's output axis (0 with
    transB, else 1); None per tensor or for a weight of rank < 2."""
    if not per_channel or weight.ndim < 2:
        return None
    if op_type == "Conv":
        return 0
    if op_type == "Gemm":
        trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
        return 0 if trans_b else 1
    return weight.ndim - 1


def plan(
    model: onnx.ModelProto, exclude: Sequence[str]
) -> tuple[list[int], list[str], list[tuple[str, str]]]:
    """(indices of the nodes to quantize, the activations they read, nodes left float and why)."""
    names = [_node_label(n, i) for i, n in enumerate(model.graph.node)]
    unknown = [name for name in exclude if name not in names]
    if unknown:
        raise AitcError(f"--exclude names no node of the model: {', '.join(repr(n) for n in unknown)}")
    initializers = {t.name: t for t in model.graph.initializer}
    chosen, activations, left = [], [], []
    for index, node in enumerate(model.graph.node):
        label = names[index]
        if node.op_type not in QUANTIZED_OPS:
            continue
        if label in exclude:
            left.append((label, "excluded (--exclude)"))
            continue
        x, w, _ = QUANTIZED_OPS[node.op_type]
        weight = initializers.get(node.input[w]) if len(node.input) > w else None
        if weight is None or weight.data_type != TensorProto.FLOAT:
            left.append((label, "its weight is not a float initializer"))
            continue
        chosen.append(index)
        if node.input[x] not in activations:
            activations.append(node.input[x])
    return chosen, activations, left


def _cache_key(
    model: onnx.ModelProto, samples: Mapping[str, np.ndarray], method: str, percentile: float
) -> str:
    digest = hashlib.sha256(model.SerializeToString(deterministic=True))
    for name in sorted(samples):
        array = np.ascontiguousarray(samples[name])
        digest.update(f"{name}:{array.dtype}:{array.shape}".encode())
        digest.update(array.tobytes())
    digest.update(f"{method}:{percentile}".encode())
    return digest.hexdigest()[:32]


def calibrated_ranges(
    model: onnx.ModelProto,
    samples: Mapping[str, np.ndarray],
    tensors: Sequence[str],
    method: str,
    percentile: float,
    cache: Path | None,
) -> tuple[dict[str, Range], bool]:
    """The ranges of `tensors` (from `cache`, a folder, when it holds them; then stored there):
    (ranges, whether they came from the cache)."""
    key = _cache_key(model, samples, method, percentile)
    path = cache / f"{key}.json" if cache is not None else None
    if path is not None and path.is_file():
        try:
            stored = json.loads(path.read_text())
            if all(name in stored for name in tensors):
                return {name: Range(*stored[name]) for name in tensors}, True
        except (OSError, ValueError, TypeError):
            pass  # a damaged cache entry is recomputed
    ranges = calibrate(model, samples, tensors, method, percentile)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps({n: [r.low, r.high] for n, r in ranges.items()}, sort_keys=True))
        except OSError:
            pass  # a cache that cannot be written only costs the next run its calibration
    return ranges, False


def quantize_model(
    model: onnx.ModelProto,
    samples: Mapping[str, np.ndarray],
    method: str = "minmax",
    per_channel: bool = False,
    exclude: Sequence[str] = (),
    percentile: float = 99.999,
    cache: Path | None = None,
) -> tuple[onnx.ModelProto, QuantizeReport]:
    """The QDQ model of `model` calibrated on `samples` (module docstring), and the report."""
    if method not in METHODS:
        raise AitcError(f"--method must be one of {', '.join(METHODS)}, not '{method}'")
    if not 0 < percentile <= 100:  # also refuses NaN
        raise AitcError(f"--percentile must be in (0, 100], not {percentile}")
    _require_opset(model, 13)
    chosen, activations, left = plan(model, exclude)
    report = QuantizeReport(method, per_channel, left_float=left)
    ranges, report.cached = calibrated_ranges(model, samples, activations, method, percentile, cache)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    initializers = {t.name: t for t in graph.initializer}
    params = {name: _activation_params(ranges[name]) for name in activations}
    qdq = _Builder()
    pairs = {name: qdq.quantize_dequantize(name, *params[name]) for name in activations}
    before: dict[int, list[onnx.NodeProto]] = {index: [] for index in chosen}
    for index in chosen:
        node, label = graph.node[index], _node_label(graph.node[index], index)
        x, w, b = QUANTIZED_OPS[node.op_type]
        weight = numpy_helper.to_array(initializers[node.input[w]])
        axis = _weight_axis(node.op_type, node, weight, per_channel)
        w_scale = _weight_params(weight, axis)
        quantized_weight = _quantized_weight(weight, w_scale, axis)
        node.input[w] = qdq.dequantized(
            f"{node.input[w]}_{label}", quantized_weight, w_scale, axis, before[index]
        )
        x_scale, x_zero = params[node.input[x]]
        node.input[x] = pairs[node.input[x]]
        report.quantized.append({"node": label, "op_type": node.op_type, "input_scale": x_scale,
                                 "input_zero_point": x_zero, "weight_scale": w_scale.tolist()})  # fmt: skip
        if b is not None and len(node.input) > b and node.input[b] in initializers:
            bias = numpy_helper.to_array(initializers[node.input[b]]).astype(np.float64)
            b_scale = (np.float64(x_scale) * w_scale.astype(np.float64)).astype(np.float32)
            quantized_bias = np.clip(np.round(bias / b_scale), -(2**31), 2**31 - 1).astype(np.int32)
            b_axis = 0 if b_scale.ndim else None
            node.input[b] = qdq.dequantized(
                f"{node.input[b]}_{label}", quantized_bias, b_scale, b_axis, before[index]
            )
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(_in_order(qdq.pairs, nodes, before, model))
    graph.initializer.extend(qdq.initializers)
    _prune_initializers(graph)
    return out, report


class _Builder:
    """The initializers and nodes a QDQ model adds."""

    def __init__(self) -> None:
        self.initializers: list[onnx.TensorProto] = []
        self.pairs: list[tuple[onnx.NodeProto, onnx.NodeProto]] = []

    def _parameters(self, name: str, scale: np.ndarray, zero_point: np.ndarray) -> list[str]:
        self.initializers += [numpy_helper.from_array(scale, f"{name}_scale"),
                              numpy_helper.from_array(zero_point, f"{name}_zero_point")]  # fmt: skip
        return [f"{name}_scale", f"{name}_zero_point"]

    def quantize_dequantize(self, name: str, scale: float, zero_point: int) -> str:
        """A QuantizeLinear -> DequantizeLinear pair on activation `name`; the DQ's output."""
        parameters = self._parameters(name, np.array(scale, np.float32), np.array(zero_point, np.int8))
        quantize = helper.make_node("QuantizeLinear", [name, *parameters], [f"{name}_quantized"],
                                    name=f"{name}_QuantizeLinear")  # fmt: skip
        dequantize = helper.make_node("DequantizeLinear", [f"{name}_quantized", *parameters],
                                      [f"{name}_dequantized"], name=f"{name}_DequantizeLinear")  # fmt: skip
        self.pairs.append((quantize, dequantize))
        return f"{name}_dequantized"

    def dequantized(
        self, name: str, values: np.ndarray, scale: np.ndarray, axis: int | None, into: list[onnx.NodeProto]
    ) -> str:
        """An integer initializer `values` read through a DequantizeLinear (appended to `into`);
        the DQ's output."""
        self.initializers.append(numpy_helper.from_array(values, f"{name}_quantized"))
        parameters = self._parameters(name, scale, np.zeros(scale.shape, values.dtype))
        inputs, output = [f"{name}_quantized", *parameters], f"{name}_dequantized"
        node = helper.make_node("DequantizeLinear", inputs, [output], name=f"{name}_DequantizeLinear")
        if axis is not None:
            node.attribute.append(helper.make_attribute("axis", axis))
        into.append(node)
        return output


def _in_order(
    pairs: list[tuple[onnx.NodeProto, onnx.NodeProto]],
    nodes: list[onnx.NodeProto],
    before: Mapping[int, list[onnx.NodeProto]],
    model: onnx.ModelProto,
) -> list[onnx.NodeProto]:
    """The nodes in a topological order: each activation's Q/DQ pair right after what makes it
    (graph inputs' first), each quantized node's weight and bias DequantizeLinear right before it."""
    made_by = {out: index for index, node in enumerate(model.graph.node) for out in node.output}
    after: dict[int, list[onnx.NodeProto]] = {}
    ordered: list[onnx.NodeProto] = []
    for pair in pairs:
        producer = made_by.get(pair[0].input[0])
        (ordered if producer is None else after.setdefault(producer, [])).extend(pair)
    for index, node in enumerate(nodes):
        ordered += [*before.get(index, []), node, *after.get(index, [])]
    return ordered


def _prune_initializers(graph: onnx.GraphProto) -> None:
    """Drops the float weights and biases no node reads any more."""
    used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)


def _require_opset(model: onnx.ModelProto, version: int) -> None:
    """QuantizeLinear/DequantizeLinear with per-channel axes need opset 13 or later."""
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version < version:
            raise AitcError(
                f"the model's opset is {opset.version}; per-channel QuantizeLinear/DequantizeLinear needs "
                f"{version} or later: convert it first (onnx.version_converter.convert_version)"
            )
