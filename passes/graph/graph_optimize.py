"""`graph-optimize`: the graph optimisation pipeline as one pass, and that pipeline's list."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from aitc.passes.graph.graph_canonicalize import GraphCanonicalizePass
from aitc.passes.graph.graph_fold_batch_norm import GraphFoldBatchNormPass
from aitc.passes.graph.graph_fold_constants import GraphFoldConstantsPass
from aitc.passes.graph.graph_fuse_attention import GraphFuseAttentionPass
from aitc.passes.graph.graph_fuse_bias_activation import GraphFuseBiasActivationPass
from aitc.passes.graph.graph_quantized_matmul import GraphQuantizedMatmulPass
from aitc.passes.graph.graph_recognize_patterns import GraphRecognizePatternsPass
from aitc.passes.runner import run_pipeline


def graph_optimize_pipeline() -> list[ModulePass]:
    """Graph-level optimisation, as run by `aitc-opt -p graph-optimize`."""
    return [
        GraphRecognizePatternsPass(),  # decomposed GELU / LayerNorm -> one op (before anything reorders)
        GraphCanonicalizePass(),  # drop no-op reshapes/transposes/casts, merge chains
        GraphQuantizedMatmulPass(),  # matmul of dequantized int8 -> i8 x i8 -> i32 matmul (QDQ models)
        GraphFoldConstantsPass(),  # shape arithmetic and weight preprocessing become constants
        GraphFoldBatchNormPass(),  # conv + batch_norm -> conv, while the conv has no activation
        GraphFuseBiasActivationPass(),  # matmul/conv + bias add + activation -> one op
        GraphFuseAttentionPass(),  # softmax(Q K^T * scale + mask) V on packed heads -> one op
        GraphCanonicalizePass(),  # clean up what fusion exposed
        CommonSubexpressionElimination(),  # xDSL's: graph ops are Pure, equal constants merge too
        DeadCodeElimination(),  # xDSL's: erase what nothing uses any more
    ]


@dataclass(frozen=True)
class GraphOptimizePass(ModulePass):
    """Runs `graph_optimize_pipeline()`, verifying the IR after every pass.

    Input:
      Any module with graph ops (typically straight from the ONNX frontend).
    Output:
      What the passes of `graph_optimize_pipeline` produce, in that order: recognised
      GELU/LayerNorm, no no-op ops, int8 matmuls of QDQ operands, folded constants and batch
      norms, fused bias/activations, fused attention, no common subexpressions and no dead ops.
    Invariants:
      The module verifies after every pass (the first pass that breaks it is named in the
      error). The order lives in `graph_optimize_pipeline` only; `aitc compile` runs the same
      list as its first stage (passes/pipelines.py).
    """

    name = "graph-optimize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_pipeline(op, graph_optimize_pipeline(), ctx)
