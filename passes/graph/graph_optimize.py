"""`graph-optimize`: the whole graph optimisation pipeline as one pass."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass


@dataclass(frozen=True)
class GraphOptimizePass(ModulePass):
    """Runs `GRAPH_OPTIMIZE` from passes/pipelines.py, verifying the IR after every pass.

    Input:
      Any module with graph ops (typically straight from the ONNX frontend).
    Output:
      What the passes listed in `pipelines.GRAPH_OPTIMIZE` produce, in that order: recognised
      GELU/LayerNorm, no no-op ops, folded constants and batch norms, fused bias/activations,
      no common subexpressions and no dead ops.
    Invariants:
      The module verifies after every pass (the first pass that breaks it is named in the
      error). The order lives in pipelines.py only; this pass holds no list of its own.
    """

    name = "graph-optimize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from aitc.passes.pipelines import apply_pipeline

        apply_pipeline(op, self.name, ctx)
