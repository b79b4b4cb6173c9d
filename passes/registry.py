"""The registry of aitc passes: CLI name -> factory returning the pass class.

Add a pass here when you add its file; `test/python/test_conventions.py` checks that each key
equals the pass's `name` and that its docstring has Input/Output/Invariants.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def _graph_canonicalize() -> type[ModulePass]:
    from aitc.passes.graph_canonicalize import GraphCanonicalizePass

    return GraphCanonicalizePass


def _graph_fold_constants() -> type[ModulePass]:
    from aitc.passes.graph_fold_constants import GraphFoldConstantsPass

    return GraphFoldConstantsPass


def _graph_fold_batch_norm() -> type[ModulePass]:
    from aitc.passes.graph_fold_batch_norm import GraphFoldBatchNormPass

    return GraphFoldBatchNormPass


def _graph_fuse_bias_activation() -> type[ModulePass]:
    from aitc.passes.graph_fuse_bias_activation import GraphFuseBiasActivationPass

    return GraphFuseBiasActivationPass


def _graph_recognize_patterns() -> type[ModulePass]:
    from aitc.passes.graph_recognize_patterns import GraphRecognizePatternsPass

    return GraphRecognizePatternsPass


def _graph_optimize() -> type[ModulePass]:
    from aitc.passes.graph_optimize import GraphOptimizePass

    return GraphOptimizePass


ALL_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "graph-canonicalize": _graph_canonicalize,
    "graph-fold-constants": _graph_fold_constants,
    "graph-fold-batch-norm": _graph_fold_batch_norm,
    "graph-fuse-bias-activation": _graph_fuse_bias_activation,
    "graph-recognize-patterns": _graph_recognize_patterns,
    "graph-optimize": _graph_optimize,
}
