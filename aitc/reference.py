"""Accuracy against onnxruntime: the reference outputs and how far aitc's are from them.

    want = onnxruntime_outputs(model, inputs)          # by output name, ORT optimisations off
    error = relative_error(got, want)                  # max |got - want| / max(1, max |want|)
    assert_close(got, want, tolerance=1e-4)            # AssertionError naming the output

onnxruntime runs with its graph optimisations disabled: its fusions are not a reference
(onnxruntime 1.32's LayerNormFusion also fuses Pow(2, x) as if it were x^2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import numpy as np
import onnx


def onnxruntime_session(model: onnx.ModelProto):
    """An `onnxruntime.InferenceSession` of `model` on the CPU, graph optimisations off."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def onnxruntime_outputs(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """onnxruntime's outputs of `model` on `inputs`, by output name, in graph order."""
    session = onnxruntime_session(model)
    names = [o.name for o in model.graph.output]
    outputs = cast(list[np.ndarray], session.run(names, dict(inputs)))  # aitc models output tensors only
    return dict(zip(names, outputs, strict=True))


def output_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| relative to max(1, max |want|) (f64 arithmetic; 0 for empty outputs)."""
    if want.size == 0:
        return 0.0
    scale = max(1.0, float(np.abs(want.astype(np.float64)).max()))
    return float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max()) / scale


def relative_error(got: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray]) -> float:
    """The largest `output_error` over the outputs of `want` (all must be in `got`)."""
    return max((output_error(got[name], value) for name, value in want.items()), default=0.0)


def assert_close(
    got: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray], tolerance: float = 1e-5
) -> None:
    """Same output names, shapes and dtypes, and every `output_error` <= `tolerance`."""
    assert list(got) == list(want), f"outputs {list(got)}, expected {list(want)}"
    for name, expected in want.items():
        actual = np.asarray(got[name])
        assert actual.shape == expected.shape, f"{name}: shape {actual.shape}, expected {expected.shape}"
        assert actual.dtype == expected.dtype, f"{name}: dtype {actual.dtype}, expected {expected.dtype}"
        error = output_error(actual, expected)
        assert error <= tolerance, f"{name}: relative error {error:.3g} > {tolerance:.3g}"
