"""aitc passes: one file per pass or conversion; `pipelines.py` names the pipelines."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def _graph_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    from aitc.passes import registry

    return registry.ALL_PASSES


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """aitc's passes, name -> factory returning the pass class (lazy, like xDSL's)."""
    return dict(_graph_passes())
