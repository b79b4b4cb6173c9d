"""The registry of aitc passes: CLI name -> factory returning the pass class.

Add a pass here when you add its file; `test/python/test_conventions.py` checks that each key
equals the pass's `name` and that its docstring has Input/Output/Invariants.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def _graph_canonicalize() -> type[ModulePass]:
    from aitc.passes.graph.graph_canonicalize import GraphCanonicalizePass

    return GraphCanonicalizePass


def _graph_fold_constants() -> type[ModulePass]:
    from aitc.passes.graph.graph_fold_constants import GraphFoldConstantsPass

    return GraphFoldConstantsPass


def _graph_quantized_matmul() -> type[ModulePass]:
    from aitc.passes.graph.graph_quantized_matmul import GraphQuantizedMatmulPass

    return GraphQuantizedMatmulPass


def _graph_fold_batch_norm() -> type[ModulePass]:
    from aitc.passes.graph.graph_fold_batch_norm import GraphFoldBatchNormPass

    return GraphFoldBatchNormPass


def _graph_polyphase_conv() -> type[ModulePass]:
    from aitc.passes.graph.graph_polyphase_conv import GraphPolyphaseConvPass

    return GraphPolyphaseConvPass


def _graph_channels_last() -> type[ModulePass]:
    from aitc.passes.graph.graph_channels_last import GraphChannelsLastPass

    return GraphChannelsLastPass


def _graph_fuse_bias_activation() -> type[ModulePass]:
    from aitc.passes.graph.graph_fuse_bias_activation import GraphFuseBiasActivationPass

    return GraphFuseBiasActivationPass


def _graph_fuse_attention() -> type[ModulePass]:
    from aitc.passes.graph.graph_fuse_attention import GraphFuseAttentionPass

    return GraphFuseAttentionPass


def _graph_recognize_patterns() -> type[ModulePass]:
    from aitc.passes.graph.graph_recognize_patterns import GraphRecognizePatternsPass

    return GraphRecognizePatternsPass


def _graph_optimize() -> type[ModulePass]:
    from aitc.passes.graph.graph_optimize import GraphOptimizePass

    return GraphOptimizePass


def _convert_graph_to_tile() -> type[ModulePass]:
    from aitc.passes.graph_to_tile import ConvertGraphToTilePass

    return ConvertGraphToTilePass


def _plan_memory() -> type[ModulePass]:
    from aitc.passes.tile.plan_memory import PlanMemoryPass

    return PlanMemoryPass


def _multi_buffer() -> type[ModulePass]:
    from aitc.passes.tile.multi_buffer import MultiBufferPass

    return MultiBufferPass


def _convert_sync_to_hw() -> type[ModulePass]:
    from aitc.passes.sync_to_hw import ConvertSyncToHwPass

    return ConvertSyncToHwPass


def _convert_tile_to_sync() -> type[ModulePass]:
    from aitc.passes.tile_to_sync import ConvertTileToSyncPass

    return ConvertTileToSyncPass


def _insert_semaphores() -> type[ModulePass]:
    from aitc.passes.sync.insert_semaphores import InsertSemaphoresPass

    return InsertSemaphoresPass


def _schedule_engines() -> type[ModulePass]:
    from aitc.passes.sync.schedule_engines import ScheduleEnginesPass

    return ScheduleEnginesPass


def _optimize_sync() -> type[ModulePass]:
    from aitc.passes.sync.optimize_sync import OptimizeSyncPass

    return OptimizeSyncPass


def _graph_legalize_axes() -> type[ModulePass]:
    from aitc.passes.graph.graph_legalize_axes import GraphLegalizeAxesPass

    return GraphLegalizeAxesPass


def _place_on_host() -> type[ModulePass]:
    from aitc.passes.graph.place_on_host import PlaceOnHostPass

    return PlaceOnHostPass


def _shard_propagate() -> type[ModulePass]:
    from aitc.passes.shard.shard_propagate import ShardPropagatePass

    return ShardPropagatePass


def _shard_partition() -> type[ModulePass]:
    from aitc.passes.shard.shard_partition import ShardPartitionPass

    return ShardPartitionPass


def _shard_simplify() -> type[ModulePass]:
    from aitc.passes.shard.shard_simplify import ShardSimplifyPass

    return ShardSimplifyPass


ALL_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "graph-canonicalize": _graph_canonicalize,
    "graph-fold-constants": _graph_fold_constants,
    "graph-fold-batch-norm": _graph_fold_batch_norm,
    "graph-quantized-matmul": _graph_quantized_matmul,
    "graph-fuse-bias-activation": _graph_fuse_bias_activation,
    "graph-fuse-attention": _graph_fuse_attention,
    "graph-polyphase-conv": _graph_polyphase_conv,
    "graph-channels-last": _graph_channels_last,
    "graph-recognize-patterns": _graph_recognize_patterns,
    "graph-optimize": _graph_optimize,
    "graph-legalize-axes": _graph_legalize_axes,
    "place-on-host": _place_on_host,
    "shard-propagate": _shard_propagate,
    "shard-partition": _shard_partition,
    "shard-simplify": _shard_simplify,
    "convert-graph-to-tile": _convert_graph_to_tile,
    "multi-buffer": _multi_buffer,
    "plan-memory": _plan_memory,
    "convert-tile-to-sync": _convert_tile_to_sync,
    "schedule-engines": _schedule_engines,
    "insert-semaphores": _insert_semaphores,
    "optimize-sync": _optimize_sync,
    "convert-sync-to-hw": _convert_sync_to_hw,
}
