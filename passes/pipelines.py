"""The pipelines of aitc: the one place that says which passes run, in which order.

A pipeline is a list of pass instances. `run_pipeline` (passes/runner.py) is the one runner
(xDSL's `PassPipeline` with a callback that verifies the module after every pass, naming the
pass that broke it, and times every pass); `pipeline_spec` prints a pipeline as the `-p` string
`aitc-opt` runs. The graph-level list lives with its pass (`graph_optimize_pipeline`, in
passes/graph/graph_optimize.py); every other list is here.

    graph ──graph-optimize──▶ graph [──shard-propagate, shard-partition, shard-simplify──▶ per-core
    graph, with more than one core] ──graph-legalize-axes, graph-polyphase-conv, place-on-host,
    convert-graph-to-tile──▶
    tile ──multi-buffer, plan-memory──▶ tile ──convert-tile-to-sync, schedule-engines,
    insert-semaphores, optimize-sync──▶ sync ──convert-sync-to-hw──▶ hw

The target is not part of any pipeline: it is the module's `aitc.target` attribute
(`aitc.module_target`), recorded by `aitc compile --target` or given once to the first
target-dependent pass of a hand-written pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields, replace

from xdsl.passes import ModulePass, PassPipeline
from xdsl.transforms import get_all_passes as xdsl_passes

from aitc.passes import get_all_passes
from aitc.passes.graph.graph_channels_last import GraphChannelsLastPass
from aitc.passes.graph.graph_legalize_axes import GraphLegalizeAxesPass
from aitc.passes.graph.graph_optimize import graph_optimize_pipeline
from aitc.passes.graph.graph_polyphase_conv import GraphPolyphaseConvPass
from aitc.passes.graph.place_on_host import PlaceOnHostPass
from aitc.passes.graph_to_tile import ConvertGraphToTilePass
from aitc.passes.runner import run_pipeline
from aitc.passes.shard.shard_partition import ShardPartitionPass
from aitc.passes.shard.shard_propagate import ShardPropagatePass
from aitc.passes.shard.shard_simplify import ShardSimplifyPass
from aitc.passes.sync.insert_semaphores import InsertSemaphoresPass
from aitc.passes.sync.optimize_sync import OptimizeSyncPass
from aitc.passes.sync.schedule_engines import ScheduleEnginesPass
from aitc.passes.sync_to_hw import ConvertSyncToHwPass
from aitc.passes.tile.multi_buffer import MultiBufferPass
from aitc.passes.tile.plan_memory import PlanMemoryPass
from aitc.passes.tile_to_sync import ConvertTileToSyncPass

__all__ = [
    "available_passes",
    "graph_optimize_pipeline",
    "lowering_pipeline",
    "lowering_stages",
    "parse_pipeline",
    "pipeline_spec",
    "run_pipeline",
    "shard_pipeline",
    "with_target",
]

Stage = tuple[str, str, list[ModulePass]]
"""(level consumed, level produced, passes): one step of the end-to-end pipeline."""


def shard_pipeline(cores: int, strategy: str = "auto") -> list[ModulePass]:
    """Graph -> per-core graph for `cores` cores: plan (`strategy`), partition, simplify."""
    return [ShardPropagatePass(strategy=strategy, cores=cores), ShardPartitionPass(), ShardSimplifyPass()]


def lowering_stages(
    depth: int = 2,
    optimize: bool = True,
    host_fallback: bool = True,
    cores: int = 1,
    shard: str = "auto",
    conv_layout: str = "auto",
) -> list[Stage]:
    """The end-to-end pipeline graph -> hw, in stages. `aitc compile` runs the stages between
    the input's level and `--emit`; `aitc-opt -p` can run any prefix of `lowering_pipeline`.
    With `cores` > 1 the graph is sharded (`shard_pipeline`) after graph-optimize;
    `conv_layout` is graph-channels-last's `layout`."""
    stages: list[Stage] = [("graph", "graph", graph_optimize_pipeline())] if optimize else []
    if cores > 1:
        stages.append(("graph", "graph", shard_pipeline(cores, shard)))
    return [
        *stages,
        (
            "graph",
            "tile",
            [
                GraphLegalizeAxesPass(),  # non-trailing reductions/softmax: transposes, then the NPU's form
                GraphPolyphaseConvPass(),  # strided convs: sums of stride-1 convs over the input's phases
                GraphChannelsLastPass(layout=conv_layout),  # regions of convs faster channels last: NHWC
                PlaceOnHostPass(fallback=host_fallback),
                ConvertGraphToTilePass(depth=depth),
            ],
        ),
        ("tile", "tile", [MultiBufferPass(depth=depth), PlanMemoryPass()]),
        (
            "tile",
            "sync",
            [ConvertTileToSyncPass(), ScheduleEnginesPass(), InsertSemaphoresPass(), OptimizeSyncPass()],
        ),
        ("sync", "hw", [ConvertSyncToHwPass()]),
    ]


def lowering_pipeline(
    depth: int = 2, optimize: bool = True, host_fallback: bool = True, conv_layout: str = "auto"
) -> list[ModulePass]:
    """The end-to-end pipeline as one flat list of passes."""
    stages = lowering_stages(depth, optimize, host_fallback, conv_layout=conv_layout)
    return [p for _, _, passes in stages for p in passes]


def with_target(passes: Sequence[ModulePass], target: str) -> list[ModulePass]:
    """`passes` with `target` given to the first pass that takes a target option: a
    hand-written pipeline for a module without `aitc.target` needs it once."""
    result = list(passes)
    for index, pass_ in enumerate(result):
        if "target" in {f.name for f in fields(pass_)}:
            result[index] = replace(pass_, target=target)
            break
    return result


def pipeline_spec(passes: Sequence[ModulePass]) -> str:
    """The `-p` string of `passes` (options at their defaults left out): `aitc-opt -p` runs it."""
    return ",".join(str(p.pipeline_pass_spec()) for p in passes)


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's passes and aitc's (aitc's win on a name clash), name -> factory: what `-p` names."""
    return {**xdsl_passes(), **get_all_passes()}


def parse_pipeline(spec: str) -> list[ModulePass]:
    """The passes of a `-p` string (the inverse of `pipeline_spec`)."""
    return list(PassPipeline.parse_spec(available_passes(), spec).passes)
