"""`aitc compile`: ONNX or .mlir at any level -> hw program (or a stop at an earlier level).

    graph ──graph-optimize──▶ graph ──convert-graph-to-tile──▶ tile ──multi-buffer, plan-memory──▶
    tile ──convert-tile-to-sync, schedule-engines, insert-semaphores, optimize-sync──▶ sync
    ──convert-sync-to-hw──▶ hw

The stages are those of `aitc.passes.pipelines.lowering_stages` (the one place that orders
passes), run by its `run_pipeline` (which verifies between passes and times every pass); this
module picks where to start (the level the input is at) and where to stop (`emit`), records the
target on the module once (`aitc.target`, which every target-dependent pass reads) and builds the
compile report.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import onnx
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from aitc import progress
from aitc.analysis.graph_matching import location_name, node_name
from aitc.analysis.signature import entry_function
from aitc.collector import fewer_collections
from aitc.diagnostics import AitcError
from aitc.dialects.exec import (
    REASON_ATTR,
    CallOp,
    is_host_function,
    is_schedule,
    kept_functions,
    lowered_here,
    symbol_name,
)
from aitc.dialects.graph import ConstantOp
from aitc.dialects.hw import InstructionOp, ProgramOp
from aitc.dialects.shard import CollectiveOp
from aitc.dialects.tile import KernelOp
from aitc.files import read_text
from aitc.frontend.onnx_import import import_onnx
from aitc.interp.run import random_inputs
from aitc.ir import parse_mlir, require_weights
from aitc.module_target import LEGACY_TARGET_ATTR, TARGET_ATTR, record_target, recorded_target
from aitc.passes.graph.graph_legalize_axes import GraphLegalizeAxesPass
from aitc.passes.graph.place_on_host import PlaceOnHostPass
from aitc.passes.pipelines import lowering_stages, pipeline_spec, with_target
from aitc.passes.runner import run_pipeline_reporting
from aitc.passes.shard.planner import LAYERWISE_MARGIN, STRATEGIES, Planner
from aitc.passes.shard.shard_propagate import PLAN_ATTR, ShardPropagatePass
from aitc.passes.sync_to_hw import kernel_nodes
from aitc.passes.sync_to_hw.overlap import kernel_overlaps
from aitc.report import format_table, peak_rss_mib
from aitc.sim import Simulator
from aitc.spmd import grid_size, lower_spmd
from aitc.target import Target, load_target
from aitc.types import numpy_dtype

LEVELS = ("graph", "tile", "sync", "hw")

DEFAULT_TARGET = "edge"
"""What `aitc compile` compiles for when neither `--target` nor the input names a target."""


@dataclass(frozen=True)
class CompileOptions:
    """What to compile for and where to stop."""

    target: str | None = None
    """A preset name or FILE.toml; None: the input's `aitc.target` (or `tile.target`), else
    DEFAULT_TARGET. A target that contradicts the input's is an error."""
    depth: int = 2
    emit: str = "hw"
    optimize: bool = True
    host_fallback: bool = True
    """Place ops the NPU cannot run on the host (False: report them as an error)."""
    input_shapes: Mapping[str, Sequence[int]] = field(default_factory=dict)
    cores: int | None = 1
    """Cores to shard the model over (1: the single-core program). None: every core of the
    target when the cost model expects them to beat one core, else one (`choose_cores`; only
    for a graph-level input compiled to hw, anything else compiles for one core)."""
    shard: str = "auto"
    """The sharding strategy with cores > 1: auto, tp, sp, dp, tp-sp, layerwise, measure (every
    strategy compiled and simulated, the fastest kept) or none."""
    conv_layout: str = "auto"
    """The activations' layout around convs: auto (the cost model chooses per region of
    connected convs; a multi-core program's phases keep channels first, `_phase_layout`), nhwc
    (channels last wherever the lowering can) or nchw (graph-channels-last)."""
    verify_each: bool = field(default_factory=lambda: os.environ.get("AITC_VERIFY_EACH") == "1")
    """Verify the IR after every pass (a failure names the pass); by default only the result is
    verified, which saves a quarter of a large compile (`AITC_VERIFY_EACH=1` makes it the
    default: the test suite verifies every pass)."""


@dataclass
class CompileResult:
    """The compiled module, the report rows and per-pass wall times."""

    module: ModuleOp
    level: str
    kernels: list[dict[str, object]]
    pass_seconds: list[tuple[str, float]]
    segments: list[dict[str, object]] = field(default_factory=list)
    """One row per segment of a split model (`segment_report`), empty otherwise."""
    target: str | None = None
    """The target compiled for (a preset name or FILE.toml); None when no pass ran and no
    target was given."""
    plan: str | None = None
    """The sharding plan's report when the module was lowered for several cores (its graph
    ops, which carry the plan, are gone from the hw module)."""
    cores_note: str | None = None
    """Why this many cores, when `CompileOptions.cores` left the choice to the compiler."""
    verified: bool = False
    """Whether `module` was verified as it is (`compile_module` makes sure)."""
    tuning: str | None = None
    """The report of `aitc compile --tune` (`aitc.tune.tuning_report`), None without."""
    phase_notes: list[str] = field(default_factory=list)
    """A multi-core compile's phases lowered at buffer depth 1 for want of semaphores."""


def level_of(module: ModuleOp) -> str:
    """graph, tile, sync or hw: the lowest level whose ops the module holds."""
    names = {op.name.split(".")[0] for op in module.walk()}
    if "hw" in names:
        return "hw"
    if "sync" in names or any("sync.engine" in op.attributes for op in module.walk()):
        return "sync"
    if "tile" in names or _takes_buffers(module):
        return "tile"
    return "graph"


def _takes_buffers(module: ModuleOp) -> bool:
    from xdsl.dialects.builtin import MemRefType

    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    return any(isinstance(t, MemRefType) for f in functions for t in f.function_type.inputs.data)


def load_input(source: str | Path | onnx.ModelProto | ModuleOp, options: CompileOptions) -> ModuleOp:
    """An ONNX model (path or proto), a .mlir path, or a module (copied, never changed)."""

    if isinstance(source, ModuleOp):
        return source.clone()
    if isinstance(source, onnx.ModelProto) or str(source).endswith(".onnx"):
        return import_onnx(source, dict(options.input_shapes))
    module = parse_mlir(read_text(source), str(source))
    require_weights(module)
    return module


def _phase_layout(options: CompileOptions) -> str:
    """The conv layout of a multi-core program's phases: `conv_layout`, but channels first for
    `auto`. Its phases are cut at every collective, so graph-channels-last sees regions of a
    few convs whose edges are transposes on each core; on ResNet-50 over edge's 4 cores that
    measured 8,250,551 cycles against 8,089,862 channels first."""
    return "nchw" if options.conv_layout == "auto" else options.conv_layout


def stage_passes(start: str, options: CompileOptions) -> list[tuple[str, list[ModulePass]]]:
    """(level produced, passes) of every stage that consumes a level at or below `start` and
    produces one at or above `options.emit`, in pipeline order."""

    first, last = LEVELS.index(start), LEVELS.index(options.emit)
    return [
        (produces, passes)
        for consumes, produces, passes in lowering_stages(
            options.depth,
            options.optimize,
            options.host_fallback,
            options.cores or 1,
            options.shard,
            options.conv_layout,
        )
        if LEVELS.index(consumes) >= first and LEVELS.index(produces) <= last
    ]


def record_compile_target(module: ModuleOp, options: CompileOptions) -> str:
    """Records the target on `module` as `aitc.target` (once, before the pipeline): `--target`,
    else the module's own, else DEFAULT_TARGET. Returns it; a contradiction is an AitcError."""
    names_one = TARGET_ATTR in module.attributes or LEGACY_TARGET_ATTR in module.attributes
    given = options.target if options.target is not None or names_one else DEFAULT_TARGET
    return record_target(module, given, given_by="--target")[0]


def _start(module: ModuleOp, options: CompileOptions) -> str:
    if options.emit not in LEVELS:
        raise AitcError(f"--emit must be one of {', '.join(LEVELS)}, got '{options.emit}'")
    start = level_of(module)
    if LEVELS.index(start) > LEVELS.index(options.emit):
        raise AitcError(f"the input is already at level '{start}', below --emit {options.emit}")
    return start


def compile_pipeline_spec(source, options: CompileOptions) -> str:
    """The `-p` string of the passes `compile_module` would run on `source`, the target given
    on the first pass that takes one: `aitc-opt -p` on the input gives the same IR. Below the
    graph level that is the single-core compile's: a multi-core one links per-core programs
    after the graph passes, which is no pass (`--cores N` is refused there; without --cores
    the printed pipeline is `--cores 1`'s)."""
    if (options.cores or 1) > 1 and options.emit != "graph":
        raise AitcError(
            f"--print-pipeline with --cores {options.cores}: below the graph level a multi-core compile "
            "links per-core programs, which no aitc-opt pipeline does; print --emit graph's passes "
            "(the per-core graph) or --cores 1's"
        )
    module = load_input(source, options)
    stages = stage_passes(_start(module, options), options)
    if not stages:
        return ""
    target = record_compile_target(module, options)
    return pipeline_spec(with_target([p for _, passes in stages for p in passes], target))


def compile_module(source, options: CompileOptions) -> CompileResult:
    """Lowers `source` to `options.emit`; see the module docstring. The result is verified once
    (and after every pass with `verify_each`): an invalid one is an AitcError naming the flag
    that finds the pass."""
    result = _compile(source, options)
    if not result.verified:
        start = time.perf_counter()
        try:
            result.module.verify()
        except DiagnosticException as error:
            first = str(error).split("\n\n")[0].strip()
            raise AitcError(
                f"the compiled module is invalid (--verify-each finds the pass that broke it): {first}"
            ) from None
        result.verified = True
        if result.pass_seconds:
            name, seconds = result.pass_seconds[-1]
            result.pass_seconds[-1] = (name, seconds + time.perf_counter() - start)
    return result


def _compile(source, options: CompileOptions) -> CompileResult:
    """`compile_module` without the final verification (also the choices of
    `_compile_choosing_cores`)."""
    module = load_input(source, options)
    if any(isinstance(op, CollectiveOp) for op in module.walk()):
        return _compile_per_core_graph(module, options)
    if options.cores is None:
        return _compile_choosing_cores(module, options)
    if options.shard == MEASURE and options.cores > 1 and options.emit == "hw":
        return _compile_measuring(module, options)
    stages = stage_passes(_start(module, options), options)
    target = record_compile_target(module, options) if stages else options.target
    if (options.cores or 1) > 1 and options.emit != "graph":
        return _compile_multicore(module, stages, options, target)
    kernels: list[dict[str, object]] = []
    timings: list[tuple[str, float]] = []
    with fewer_collections(), progress.passes(sum(len(passes) for _, passes in stages)):
        for level, passes in stages:
            timings += _run_passes(module, passes, options)
            if level == "sync":
                kernels = kernel_report(module)
    if not kernels and LEVELS.index(options.emit) >= 1:
        kernels = kernel_report(module)
    if options.emit == "hw":
        _count_instructions(module, kernels)
    return CompileResult(module, options.emit, kernels, timings, segment_report(module), target)


def _compile_per_core_graph(module: ModuleOp, options: CompileOptions) -> CompileResult:
    """An input that is already per-core (shard-partition's output, `--emit graph --cores N`):
    lowered for the cores of its grid as it is, no graph pass runs again."""
    cores = grid_size(module)
    if options.cores not in (None, cores):
        raise AitcError(
            f"the input is a per-core program for {cores} cores (its shard.grid); --cores {options.cores} "
            f"contradicts it: leave --cores out, or start again from the unsharded model"
        )
    if options.emit not in ("graph", "hw"):
        raise AitcError(f"--emit {options.emit}: every core of a per-core program has its own IR; use hw")
    target = record_compile_target(module, replace(options, cores=cores))
    if options.emit == "graph":
        return CompileResult(module, "graph", [], [], [], target)
    start = time.perf_counter()
    notes: list[str] = []
    with fewer_collections():
        lowered = lower_spmd(module, options.depth, _verify_mode(options), notes, _phase_layout(options))
    timings = [("lower-spmd (per-core phases, collectives, link)", time.perf_counter() - start)]
    plan = shard_plan_report(module)
    return CompileResult(lowered, "hw", [], timings, [], target, plan, phase_notes=notes)


MEASURE = "measure"
"""`--shard measure`: every strategy compiled and simulated, the fastest kept."""


def _compile_measuring(module: ModuleOp, options: CompileOptions) -> CompileResult:
    """`--shard measure`: graph-optimize once, then every strategy's plan (STRATEGIES) compiled
    for the cores and simulated on seeded random inputs; the fastest by simulated cycles is
    kept (ties to the first), and the report lists every measurement next to its estimate."""
    timings: list[tuple[str, float]] = []
    start = _start(module, options)
    target = load_target(record_compile_target(module, options))
    with fewer_collections():
        for _, passes in stage_passes(start, replace(options, cores=1, emit="graph")):
            timings += _run_passes(module, passes, options)
    inputs = random_inputs(entry_function(module))
    measured: list[tuple[str, int, CompileResult]] = []
    rows: list[list[object]] = []
    for strategy in STRATEGIES:
        try:
            result = compile_module(module.clone(), replace(options, shard=strategy, optimize=False))
            cycles = Simulator(result.module, target, verified=True).run(inputs).stats.cycles
        except AitcError as error:
            rows.append([strategy, "failed", "", str(error).splitlines()[0]])
            continue
        estimates = re.findall(r"sharding plan: \S+ on \d+ cores, estimated (\d+) cycles", result.plan or "")
        rows.append([strategy, cycles, sum(map(int, estimates)) if estimates else "", ""])
        measured.append((strategy, cycles, result))
    if not measured:
        failures = "; ".join(f"{row[0]}: {row[3]}" for row in rows)
        raise AitcError(f"--shard measure: no strategy compiled for {options.cores} cores: {failures}")
    strategy, _, best = min(measured, key=lambda entry: entry[1])
    table = format_table(["strategy", "cycles", "estimated", "why not"], rows)
    best.plan = (best.plan or "") + (
        f"\nmeasured on the simulator (--shard measure, seeded random inputs): kept {strategy}\n{table}\n"
    )
    best.pass_seconds[:0] = timings
    return best


SPEEDUP_TO_SHARD = 1.1
"""The estimated speed-up over one core below which `cores=None` compiles for one core."""


def _compile_choosing_cores(module: ModuleOp, options: CompileOptions) -> CompileResult:
    """`cores=None`: graph-optimize once, estimate one core against every core of the target
    with the sharding cost model, compile for the faster (one core when the multi-core path
    cannot take the model, e.g. it needs host segments); the report says which and why."""
    single = replace(options, cores=1)
    start = _start(module, single)
    if options.emit != "hw" or start != "graph":
        return _compile(module, single)
    spec = record_compile_target(module, single)
    target = load_target(spec)
    if target.cores == 1:
        return _compile(module, single)
    timings: list[tuple[str, float]] = []
    with fewer_collections():
        for level, passes in stage_passes(start, replace(single, emit="graph")):
            timings += _run_passes(module, passes, options)
    one, many = estimate_cores(module, target, "auto" if options.shard == MEASURE else options.shard)
    ratio = one / max(many, 1)
    note = (
        f"cores: {target.cores} of {target.cores}, estimated {many} cycles against {one} on one core "
        f"(x{ratio:.2f})"
    )
    result = None
    if ratio >= SPEEDUP_TO_SHARD:
        try:
            result = _compile(module, replace(options, cores=target.cores, optimize=False))
        except AitcError as error:
            reason = str(error).split("\n")[0].split("; compile with")[0].rstrip(":")
            note = f"cores: 1 of {target.cores}: the multi-core program failed ({reason})"
    else:
        note = (
            f"cores: 1 of {target.cores}: sharding over {target.cores} was estimated at {many} cycles "
            f"against {one} on one core (x{ratio:.2f}, below x{SPEEDUP_TO_SHARD}); --cores N forces it"
        )
    if result is None:
        result = _compile(module, replace(single, optimize=False))
    result.pass_seconds[:0] = timings
    result.cores_note = note
    return result


def estimate_cores(module: ModuleOp, target: Target, strategy: str) -> tuple[int, int]:
    """(estimated cycles on one core, on every core of `target` with `strategy`) of a graph
    module, from the sharding cost model (the module is not changed)."""
    function = entry_function(module)
    one = Planner(target, 1, "none", {}).run(function).total
    sharded = module.clone()
    run_pipeline_reporting(sharded, [ShardPropagatePass(strategy=strategy, cores=target.cores)])
    summary = sharded.attributes[PLAN_ATTR]
    assert isinstance(summary, DictionaryAttr)
    estimate = summary.data["est_cycles"]
    assert isinstance(estimate, IntegerAttr)
    return one, estimate.value.data


def _compile_multicore(
    module: ModuleOp, stages: list[tuple[str, list[ModulePass]]], options: CompileOptions, target: str | None
) -> CompileResult:
    """Graph stages (optimize, shard), then `aitc.spmd.lower_spmd`: one hw.program whose cores
    each run their part. Per-core tile and sync IR is not printed (each core has its own)."""
    if options.emit != "hw":
        raise AitcError(
            f"--emit {options.emit} with --cores {options.cores}: every core has its own "
            f"{options.emit}-level IR, which is not printed; use --emit graph (the per-core graph) or hw"
        )
    timings: list[tuple[str, float]] = []
    shard_passes = [passes for level, passes in stages if level == "graph" and _is_shard_stage(passes)]
    with fewer_collections():
        for level, passes in stages:
            if level == "graph" and not _is_shard_stage(passes):
                timings += _run_passes(module, passes, options)
        segmented = _placed_on_host(module, options.host_fallback)
        if segmented is not None and shard_passes:
            return _compile_multicore_segments(segmented, shard_passes[0], options, target, timings)
        for passes in shard_passes:
            timings += _run_passes(module, passes, options)
        _refuse_an_empty_plan(module, options)
        plan = shard_plan_report(module)
        start = time.perf_counter()
        notes: list[str] = []
        lowered = lower_spmd(module, options.depth, _verify_mode(options), notes, _phase_layout(options))
        timings.append(("lower-spmd (per-core phases, collectives, link)", time.perf_counter() - start))
    return CompileResult(lowered, "hw", [], timings, [], target, plan, phase_notes=notes)


def _is_shard_stage(passes: list[ModulePass]) -> bool:
    return bool(passes) and isinstance(passes[0], ShardPropagatePass)


def _placed_on_host(module: ModuleOp, fallback: bool) -> ModuleOp | None:
    """The module split into NPU and host segments by place-on-host (after legalize-axes, as
    the single-core pipeline places), or None when every op runs on the NPU (without
    `fallback`, an op that needs the host is an error listing them)."""
    split = module.clone()
    run_pipeline_reporting(split, [GraphLegalizeAxesPass(), PlaceOnHostPass(fallback=fallback)])
    return split if any(is_schedule(op) for op in split.ops) else None


def _compile_multicore_segments(
    module: ModuleOp,
    shard_passes: list[ModulePass],
    options: CompileOptions,
    target: str | None,
    timings: list[tuple[str, float]],
) -> CompileResult:
    """A model with host segments on several cores: every NPU segment is sharded on its own
    (its plan, its collectives) and lowered to a multi-core hw.program of the segment's name;
    the host segments and the schedule stay as the single-core pipeline leaves them."""
    plans, notes = [], []
    for function in [op for op in module.ops if lowered_here(op)]:
        segment = ModuleOp([function.clone()])
        segment.attributes.update(module.attributes)
        timings += _run_passes(segment, shard_passes, options)
        name = function.sym_name.data
        plans.append(f"segment @{name}: " + (shard_plan_report(segment) or "not sharded\n"))
        start = time.perf_counter()
        segment_notes: list[str] = []
        lowered = lower_spmd(
            segment, options.depth, _verify_mode(options), segment_notes, _phase_layout(options)
        )
        notes += [f"segment @{name}, {note}" for note in segment_notes]
        timings.append((f"lower-spmd @{name}", time.perf_counter() - start))
        (program,) = [op for op in lowered.ops if isinstance(op, ProgramOp)]
        program.detach()
        module.body.block.insert_op_before(program, function)
        function.detach()
        function.erase()
    if not plans:
        raise AitcError("every op of the model runs on the host: there is nothing to shard; use --cores 1")
    return CompileResult(
        module, "hw", kernel_report(module), timings, segment_report(module), target, "".join(plans),
        phase_notes=notes,
    )  # fmt: skip


def _refuse_an_empty_plan(module: ModuleOp, options: CompileOptions) -> None:
    """A plan that splits nothing because the strategy's dims do not divide among the cores
    (12 heads on 5 cores) would run the whole model on every core: an error naming the sizes
    and the core counts that divide them."""
    summary = module.attributes.get(PLAN_ATTR)
    refused = summary.data.get("refused") if isinstance(summary, DictionaryAttr) else None
    if isinstance(refused, StringAttr):
        raise AitcError(
            f"--shard {options.shard} on {options.cores} cores splits nothing: {refused.data}; "
            "use a core count that divides, another --shard, or --cores 1"
        )


def _run_passes(
    module: ModuleOp, passes: list[ModulePass], options: CompileOptions
) -> list[tuple[str, float]]:
    """`run_pipeline_reporting`: a failing pass is one AitcError naming it; the module is
    verified after every pass with `verify_each` (else `compile_module` verifies the result)."""
    return run_pipeline_reporting(module, passes, _verify_mode(options))


def _verify_mode(options: CompileOptions) -> str:
    return "each" if options.verify_each else "none"


def _attr_value(value) -> object:
    if isinstance(value, IntegerAttr):
        return value.value.data
    if isinstance(value, StringAttr):
        return value.data
    if hasattr(value, "get_values"):
        return "x".join(str(v) for v in value.get_values())
    return str(value)


def kernel_report(module: ModuleOp) -> list[dict[str, object]]:
    """One row per tile.kernel (its name, every recorded decision attribute, and `nodes`: the
    ONNX nodes its ops carry, whose names its instructions' locations hold), or at hw level per
    kernel a program recorded (`ProgramOp.kernel_estimates`: name, ops, estimate, nodes, core;
    a multi-core program's also per collective) and, for a model split by place-on-host, one
    per host node (`on` = "host", its `reason`), in schedule order. Rows of a split model name
    their `segment`."""

    split = bool(kept_functions(module))
    spec = recorded_target(module)
    target = load_target(spec) if spec is not None else None
    rows = []
    for top in module.ops:
        segment = {"segment": symbol_name(top) or ""} if split else {}
        if is_host_function(top):
            for op in top.walk():
                if op.name.startswith("graph.") and not isinstance(op, ConstantOp):
                    reason = op.attributes.get(REASON_ATTR)
                    rows.append({"kernel": node_name(op), "op": op.name, "on": "host", **segment,
                                 "reason": _attr_value(reason) if reason is not None else ""})  # fmt: skip
            continue
        if isinstance(top, ProgramOp):
            recorded = [estimate.row() for estimate in top.kernel_estimates]
            rows += [{**row, "on": "npu", **segment} if split else row for row in recorded]
            continue
        overlaps = kernel_overlaps(top, target) if isinstance(top, func.FuncOp) and target else {}
        for op in top.walk():
            if isinstance(op, KernelOp) and op.sym is not None:
                row: dict[str, object] = {"kernel": op.sym.data}
                row.update({k: _attr_value(v) for k, v in op.attributes.items() if k != "sym"})
                row["nodes"] = kernel_nodes(op)
                if op in overlaps:
                    row.update(overlap=overlaps[op].overlap, delay=overlaps[op].delay)
                if split:
                    row.update(on="npu", **segment)
                rows.append(row)
    return rows


def segment_report(module: ModuleOp) -> list[dict[str, object]]:
    """Per segment of a split model, in schedule order: where it runs and the tensors handed
    over to it and from it (count and bytes: what the runtime moves through DRAM)."""

    def size(values) -> str:
        total = sum(
            math.prod(v.type.get_shape()) * numpy_dtype(v.type.get_element_type()).itemsize for v in values
        )
        return f"{len(values)} ({total} B)"

    rows = []
    for schedule in [op for op in module.ops if is_schedule(op)]:
        for call in schedule.walk():
            if isinstance(call, CallOp):
                rows.append({"segment": call.callee_name, "on": call.placement.data,
                             "in": size(list(call.arguments)), "out": size(list(call.res))})  # fmt: skip
    return rows


def _count_instructions(module: ModuleOp, kernels: list[dict[str, object]]) -> None:
    """Adds `instructions` (static hw instruction count) to each kernel row, by ONNX location."""

    counts: dict[str, int] = {}
    for op in module.walk():
        if isinstance(op, InstructionOp):
            name = location_name(op.location) or "?"
            counts[name] = counts.get(name, 0) + 1
    for row in kernels:
        if row.get("on") != "host":
            row["instructions"] = counts.get(str(row["kernel"]), 0)


REPORT_COLUMNS = (
    "kernel",
    "op",
    "on",
    "segment",
    "tiles",
    "buffer_depth",
    "sram_peak",
    "dma_bytes",
    "est_cycles",
    "instructions",
)


def multicore_summary(module: ModuleOp) -> str:
    """One line per core of a multi-core program (of each NPU segment's, named, when host
    segments run between them): its static instruction count."""
    programs = [op for op in module.walk() if isinstance(op, ProgramOp)]
    lines = ["", f"multi-core program: {len(programs[0].cores()) if programs else 0} cores"]
    for program in programs:
        if len(programs) > 1:
            lines.append(f" segment @{symbol_name(program)}:")
        for core in program.cores():
            count = sum(1 for op in core.walk() if isinstance(op, InstructionOp))
            lines.append(f"  core {core.core_id()}: {count} instructions (static)")
    return "\n".join(lines) + "\n"


def shard_plan_report(module: ModuleOp) -> str:
    """The sharding plan `shard-propagate` recorded: strategy and estimates, then one row per
    op that is split or needs a collective ("" for a module that was not sharded)."""
    summary = module.attributes.get(PLAN_ATTR)
    if not isinstance(summary, DictionaryAttr):
        return ""
    values = {key: _attr_value(value) for key, value in summary.data.items()}
    lines = [
        f"sharding plan: {values['strategy']} on {values['cores']} cores, "
        f"estimated {values['est_cycles']} cycles, collectives: {values['collectives']}"
    ]
    moved = Counter(op.name.removeprefix("shard.") for op in module.walk() if isinstance(op, CollectiveOp))
    moved.pop("all_slice", None)  # local: moves nothing
    if moved:
        lines.append(
            "  collectives in the per-core program (after shard-simplify): "
            + ", ".join(f"{count} {kind}" for kind, count in sorted(moved.items()))
        )
    alternatives = summary.data.get("alternatives")
    if isinstance(alternatives, DictionaryAttr):
        others = ", ".join(f"{k} {_attr_value(v)}" for k, v in alternatives.data.items())
        lines.append(
            f"  estimated cycles per strategy (auto keeps the least; layerwise when "
            f"{LAYERWISE_MARGIN:.0%} below the rest): {others}"
        )
    rows = []
    for op in module.walk():
        plan = op.attributes.get(PLAN_ATTR)
        if isinstance(plan, DictionaryAttr) and not isinstance(op, ModuleOp):
            entry = {key: _attr_value(value) for key, value in plan.data.items()}
            rows.append(
                [node_name(op), op.name, entry["decision"], entry["cycles"], entry.get("collectives", "")]
            )
    if rows:
        lines.append(format_table(["node", "op", "decision", "est_cycles", "collectives"], rows))
    return "\n".join(lines) + "\n"


def format_report(result: CompileResult) -> str:
    """The compile report: per kernel the tile choice, buffer depth, SRAM peak, instructions."""

    columns = [c for c in REPORT_COLUMNS if any(c in row for row in result.kernels)]
    rows = [[row.get(c, "") for c in columns] for row in result.kernels]
    table = format_table(columns, rows) if rows else "(no kernels)"
    if result.plan is not None:
        table = "(per-core kernels: each core's phases were lowered on their own)"
    total = sum(seconds for _, seconds in result.pass_seconds)
    summary = placement_summary(result.kernels)
    handed_over = ""
    if result.segments:
        columns = ["segment", "on", "in", "out"]
        handed = format_table(columns, [[row[c] for c in columns] for row in result.segments])
        handed_over = (
            f"\nsegments in order, with the tensors handed over through DRAM (count, bytes):\n{handed}\n"
        )
        summary += handed_over
    plan = result.plan if result.plan is not None else shard_plan_report(result.module)
    plan = f"\n{plan}" if plan else ""
    if result.cores_note:
        plan += f"\n{result.cores_note}\n"
    if result.plan is not None:
        programs = sum(1 for op in result.module.ops if isinstance(op, ProgramOp))
        placed = placement_summary(result.kernels, programs) + handed_over if result.segments else ""
        summary = multicore_summary(result.module) + placed
        if result.phase_notes:
            summary += "phases lowered at buffer depth 1:\n" + "".join(f"  {n}\n" for n in result.phase_notes)
    if result.tuning:
        plan += f"\n{result.tuning}\n"
    return (
        f"{table}\n{summary}{plan}\n{len(result.pass_seconds)} passes, {total:.2f} s, "
        f"peak RSS {peak_rss_mib():.0f} MiB"
    )


def placement_summary(rows: list[dict[str, object]], multicore_segments: int = 0) -> str:
    """Where the nodes run: one line when everything is on the NPU, else the host nodes and why
    (`multicore_segments`: the NPU segments are multi-core programs, not kernels)."""
    host = [row for row in rows if row.get("on") == "host"]
    if not host:
        return "\nplacement: every node on the NPU\n"
    npu = [row for row in rows if row.get("on") == "npu"]
    segments = {str(row.get("segment")): str(row.get("on")) for row in rows}
    count = {on: sum(1 for s in segments.values() if s == on) for on in ("npu", "host")}
    on_npu = f"{len(npu)} kernel(s) on the NPU in {count['npu']} segment(s)"
    if multicore_segments:
        on_npu = f"{multicore_segments} multi-core NPU segment(s)"
    lines = ["", f"placement: {on_npu}, {len(host)} node(s) on the host in {count['host']} segment(s):"]
    lines += [f"  {row['kernel']} ({row['op']}): {row['reason']}" for row in host]
    return "\n".join(lines) + "\n"
