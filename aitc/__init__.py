"""aitc: an open AI toolchain (ONNX -> graph -> tile -> sync -> hw for a virtual NPU) on xDSL.

The short API (`aitc/api.py`):

    import aitc

    compiled = aitc.compile("model.onnx", target="edge")   # ONNX -> hw, as `aitc compile`
    print(compiled.report())
    outputs = compiled.run({"x": x})                        # on the cycle-approximate simulator
    compiled.save("model.aitb")

`aitc.import_onnx` (ONNX -> graph-level module), `aitc.run` (execute a module at its level) and
`aitc.Session` (onnxruntime-style runs of a .mlir/.aitb program) complete it. The names load on
first use, so `import aitc` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what `__getattr__` loads on first use, for type checkers
    from aitc.api import Compiled, TuneOptions, compile, import_onnx, run
    from aitc.sim.session import Session

__all__ = ["Compiled", "Session", "TuneOptions", "compile", "import_onnx", "run"]


def __getattr__(name: str) -> Any:
    if name == "Session":
        from aitc.sim.session import Session

        return Session
    if name in __all__:
        from aitc import api

        return getattr(api, name)
    raise AttributeError(f"module 'aitc' has no attribute {name!r}")
