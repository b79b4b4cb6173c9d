"""Per-core (SPMD) graph -> one multi-core hw.program.

`shard-partition` leaves one function that every core runs on its own part. To give each core
its instruction stream:

1. `specialize.py`: core c's copy, its slices made concrete (its part of every weight), an
   all_to_all made an all_gather and a local slice;
2. `phases.py`: the copy cut at its collectives into graph phases;
3. every phase lowered by the single-core pipeline (graph -> tile -> sync -> hw), with the
   fences' 2 semaphores kept free (again at buffer depth 1 when its kernels need more
   semaphores than that leaves);
4. `link.py`: the cores' phases and their parts of each collective (peer DMA, cross-core
   semaphores, `passes/sync_to_hw/collectives.py`) joined into one hw.program, with fences
   between steps and DRAM relocated so the cores share the inputs and nothing else.

The result runs on the simulator like any program; its outputs are core 0's.
"""

from __future__ import annotations

from dataclasses import replace

from xdsl.dialects.builtin import ModuleOp

from aitc import progress
from aitc.analysis.graph_matching import node_name
from aitc.analysis.signature import entry_function
from aitc.diagnostics import AitcError
from aitc.dialects import shard
from aitc.module_target import record_target
from aitc.passes.pipelines import lowering_pipeline
from aitc.passes.runner import run_pipeline_reporting
from aitc.passes.sync.insert_semaphores import InsertSemaphoresPass
from aitc.spmd.link import FENCE_SEMAPHORES, check_collectives, link
from aitc.spmd.phases import Phase, Steps, cut
from aitc.spmd.specialize import expand_all_to_all, specialize
from aitc.target import Target


def grid_size(module: ModuleOp) -> int:
    grids = [op for op in module.ops if isinstance(op, shard.GridOp)]
    if len(grids) != 1 or len(grids[0].dims) != 1:
        raise AitcError(
            "a multi-core program is made from a module with one 1-D shard.grid (shard-partition's output)"
        )
    return grids[0].dims[0]


def lower_spmd(
    module: ModuleOp,
    depth: int = 2,
    verify: str = "each",
    notes: list[str] | None = None,
    conv_layout: str = "auto",
) -> ModuleOp:
    """The multi-core hw module of a partitioned graph module (see the module docstring). Each
    phase's lowering is verified as `verify` says (`run_pipeline`); the linked program is not
    verified here (`aitc compile` verifies its result). `notes` receives one line per phase
    lowered at buffer depth 1 for want of semaphores (the compile report prints them);
    `conv_layout` is graph-channels-last's `layout` in every phase."""
    spec, target = record_target(module, None)
    cores = grid_size(module)
    if cores > target.cores:
        raise AitcError(f"the module runs on {cores} cores; target '{target.name}' has {target.cores}")
    name = entry_function(module).sym_name.data
    per_core = []
    with progress.paused(), progress.bar(cores, "lower per core", unit="core") as lowered_cores:
        for core in range(cores):
            lowering = (depth, verify, conv_layout)
            per_core.append(_lower_core(module, (spec, target, cores), core, lowering, notes))
            lowered_cores.update(1)
    return link(target, spec, per_core, name)


def _lower_core(
    module: ModuleOp,
    grid: tuple[str, Target, int],
    core: int,
    lowering: tuple[int, str, str],
    notes: list[str] | None = None,
) -> tuple[Steps, list[ModuleOp | None]]:
    """Core `core`'s steps, and each phase lowered to a single-core hw module (None for a
    collective or slice step); `grid`: the target's spec, the target, the cores; `lowering`:
    the buffer depth, the verify mode and the conv layout (`lower_spmd`). A collective
    that cannot be exchanged fails before the phases are lowered (`check_collectives`); a
    phase lowered at depth 1 instead of `depth` adds a line to `notes`."""
    spec, target, cores = grid
    depth, verify, conv_layout = lowering
    copy = module.clone()
    function = entry_function(copy)
    expand_all_to_all(function)
    specialize(function, core)
    steps = cut(function, spec, core)
    check_collectives(target, steps, cores)
    pipelines = [_phase_pipeline(d, conv_layout) for d in dict.fromkeys((depth, 1))]
    lowered: list[ModuleOp | None] = []
    for index, step in enumerate(steps.steps):
        if isinstance(step, Phase):
            kernels = _lower_phase(step, pipelines, verify)
            if kernels is not None and notes is not None:
                notes.append(
                    f"core {core}, step {index} ({', '.join(kernels)}): lowered at buffer depth 1, its "
                    f"kernels needed more semaphores at depth {depth} than the "
                    f"{target.semaphores - FENCE_SEMAPHORES} a phase may use"
                )
            lowered.append(step.module)
        else:
            lowered.append(None)
    return steps, lowered


def _phase_pipeline(depth: int, conv_layout: str) -> list:
    """The single-core pipeline at buffer depth `depth`, its phases leaving the fences'
    semaphores alone (`link.FENCE_SEMAPHORES`)."""
    return [
        replace(p, reserved=FENCE_SEMAPHORES) if isinstance(p, InsertSemaphoresPass) else p
        for p in lowering_pipeline(depth, optimize=False, host_fallback=False, conv_layout=conv_layout)
    ]


SEMAPHORES_RAN_OUT = "semaphores of target"
"""What insert-semaphores' error says when a kernel needs more semaphores than it may use."""


def _kernel_names(module: ModuleOp, limit: int = 3) -> list[str]:
    """The ONNX node names of a phase's first `limit` named graph ops (and how many more; ops
    made by the partitioning, e.g. a core's slice, have none)."""
    ops = [op for op in entry_function(module).walk() if op.name.startswith("graph.")]
    names = list(dict.fromkeys(name for op in ops if (name := node_name(op)) != op.name))
    return names[:limit] + ([f"{len(names) - limit} more"] if len(names) > limit else [])


def _lower_phase(phase: Phase, pipelines: list[list], verify: str) -> list[str] | None:
    """Runs the single-core pipeline on a phase; ops only the host runs are refused here. A
    phase whose kernels need more semaphores than a phase may use (the fences keep 2) is
    lowered again at the next pipeline's depth (1: no multi-buffering, whose loop-carried
    protocols take most of them); its loops then record depth 1. Returns, when it was, the
    names of its kernels (`_kernel_names`), else None."""
    original = phase.module.clone() if len(pipelines) > 1 else phase.module
    for index, pipeline in enumerate(pipelines):
        try:
            run_pipeline_reporting(phase.module, pipeline, verify)
            return _kernel_names(original) if index > 0 else None
        except AitcError as error:
            text = str(error)
            if SEMAPHORES_RAN_OUT in text and index + 1 < len(pipelines):
                phase.module = original.clone()
                continue
            _refuse_host_ops(text)
            raise
    raise AssertionError("no pipeline to lower the phase with")


def _refuse_host_ops(text: str) -> None:
    """Raises the error for a phase that place-on-host refused (nothing for other errors)."""
    if not text.startswith("place-on-host:"):
        return
    first, _, ops = text.partition("\n")
    count = first.removeprefix("place-on-host:").split(" cannot run")[0].strip()
    raise AitcError(
        f"a multi-core program runs on the NPU only, but {count} need the host; compile with "
        f"--cores 1 to run them in host segments:\n{ops}"
    ) from None
