"""Writes the bundled example models, examples/models/*.onnx, from `aitc.testing.model_zoo`.

    .venv/bin/python examples/make_example_models.py

The models are small (each well under 300 KB), deterministic (seeded weights: rerunning this
script rewrites identical bytes) and have a static batch of 1, so `aitc import` and
`make demo` need no --input-shape. Every file is checked with onnx.checker and run once in
onnxruntime before it is written.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from aitc.testing import model_zoo

MODELS = Path(__file__).parent / "models"
MAX_BYTES = 300_000

EXAMPLES: dict[str, Callable[[], tuple[onnx.ModelProto, dict]]] = {
    "tiny_cnn": lambda: model_zoo.cnn_bn_pool(batch=1),
    "resnet_block": lambda: model_zoo.residual_block(batch=1),
    "mobilenet_block": lambda: model_zoo.depthwise_separable(batch=1),
    "tiny_transformer": lambda: model_zoo.transformer_encoder_layer(opset=17, batch=1),
    "tiny_transformer_opset13": lambda: model_zoo.transformer_encoder_layer(opset=13, batch=1),
    "bert_torch_export": lambda: model_zoo.bert_torch_export(layers=1),
}
"""File stem -> zoo builder (batch 1, except the BERT's static batch of 2: one padded row)."""

EXAMPLE_INPUTS = ("bert_torch_export",)
"""Models whose inputs are token ids and masks, not noise: their example inputs are written
next to them as `<stem>.inputs.npz`, which `make demo` uses."""


def build(name: str) -> tuple[bytes, dict]:
    """The serialized example `name` (checked and smoke-run in onnxruntime) and its inputs."""
    model, inputs = EXAMPLES[name]()
    model = model_zoo.with_static_batch(model, 1)
    model.graph.name = name
    data = model.SerializeToString()
    onnx.checker.check_model(model, full_check=True)
    ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, inputs)
    if len(data) > MAX_BYTES:
        raise SystemExit(f"{name}: {len(data)} bytes, over the {MAX_BYTES}-byte budget for examples")
    return data, inputs


def main() -> None:
    """Writes every example and prints its size."""
    MODELS.mkdir(exist_ok=True)
    for name in EXAMPLES:
        data, inputs = build(name)
        path = MODELS / f"{name}.onnx"
        path.write_bytes(data)
        if name in EXAMPLE_INPUTS:
            np.savez(MODELS / f"{name}.inputs.npz", **inputs)
        print(
            f"{path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}: {len(data)} bytes"
        )


if __name__ == "__main__":
    sys.exit(main())
