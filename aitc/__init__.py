"""aitc: an open AI toolchain (ONNX -> graph -> tile -> sync -> hw for a virtual NPU) on xDSL.

`aitc.Session` runs a compiled program (hw-level .mlir or .aitb) on the simulator, in the style
of onnxruntime's `InferenceSession`; it is imported lazily so `import aitc` stays cheap.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Session"]


def __getattr__(name: str) -> Any:
    if name == "Session":
        from aitc.sim.session import Session

        return Session
    raise AttributeError(f"module 'aitc' has no attribute {name!r}")
