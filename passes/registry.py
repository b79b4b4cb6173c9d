"""The registry of aitc passes: CLI name -> factory returning the pass class.

Add a pass here when you add its file; `test/python/test_conventions.py` checks that each key
equals the pass's `name` and that its docstring has Input/Output/Invariants.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass

ALL_PASSES: dict[str, Callable[[], type[ModulePass]]] = {}
