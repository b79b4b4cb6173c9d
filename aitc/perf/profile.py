"""`aitc perf`: per ONNX node, what the compiler predicted and what the simulator measured.

Static (the compile): each kernel's cost-model estimate (`est_cycles` of convert-graph-to-tile,
the sum over the kernels of one node; on a multi-core program the largest of the cores' sums, as
they run their parts at once, at least the shared DRAM's time for all their bytes, and for a
collective the shard cost model's estimate of the pieces the link exchanges; recorded on the hw
program, so a `.aitb` keeps them). Dynamic (one simulated run with a trace): per node its cycles
alone (`aitc.perf.timeline`), the MACs its matmul instructions did and the DRAM bytes its
DMAs moved (counted from the run, so they hold for a `.aitb` as well), its roofline bound
(MACs at the peak of the cores used, or DRAM bytes at the DRAM rate, the larger), efficiency =
bound / cycles, and what limited it: the busiest engine over its time alone, "DRAM" when its
bytes at the DRAM rate take most of that time, "link" when its peer DMAs (a multi-core
program's collectives) at the core-to-core link rate do, "sync" when the engines mostly waited
on each other, else "idle". The error of the estimate is (est - cycles) / cycles; its median and p90
over the nodes summarise the cost model. The run's critical path (`aitc.perf.critical`) names
the engines, nodes and waits that set its length.

Rows are per kernel when the compile or the program reports kernels (a kernel's instructions
carry the names of the ONNX nodes fused into it: they count for the kernel), else per node the
instructions name (a hand-written program).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import onnx

from aitc.diagnostics import AitcError
from aitc.passes.shard.cost_model import shared_dram_floor
from aitc.perf.critical import CriticalPath, critical_path
from aitc.perf.timeline import NO_NODE, Span, Timeline
from aitc.target import Target
from aitc.verify import prepared_model

ESTIMATE_TOLERANCE = 0.05
"""An estimate within 5% of the simulated cycles counts as accurate (issue 13's aim: median
per-layer error at most 5%, p90 at most 15%)."""


TensorInfo = dict[str, Any]
"""One input or output of a node: {"type": ONNX element type in lower case, "shape": dims}."""


@dataclass(frozen=True)
class NodePerf:
    """One row: a kernel (named by its ONNX node) or a node of the run."""

    node: str
    op_type: str
    ops: str
    placement: str
    est: int | None
    macs: int
    dram_bytes: int
    cycles: int
    start: int
    end: int
    bound: float
    limit: str
    inputs: list[TensorInfo] = field(default_factory=list)
    outputs: list[TensorInfo] = field(default_factory=list)
    overlap: int = 0
    """The cycles `est` leaves out of the kernel's estimate on its own: what of it the compiler
    expects to run while the kernel before it finishes, less how much later it expects it to
    end for the kernel after it (`overlap` - `delay` of its kernel rows; negative when the
    delay is the larger)."""

    @property
    def intensity(self) -> float | None:
        """MACs per DRAM byte (None without DRAM traffic)."""
        return self.macs / self.dram_bytes if self.dram_bytes else None

    @property
    def error(self) -> float | None:
        """(est - cycles) / cycles, None without an estimate or cycles."""
        return (self.est - self.cycles) / self.cycles if self.est is not None and self.cycles else None

    @property
    def efficiency(self) -> float | None:
        """bound / cycles, None without cycles."""
        return self.bound / self.cycles if self.cycles else None

    def to_json(self) -> dict[str, Any]:
        """The row as perf.json writes it."""
        return {
            "node": self.node, "op_type": self.op_type, "ops": self.ops, "placement": self.placement,
            "est_cycles": self.est, "est_overlap": self.overlap, "cycles": self.cycles,
            "start": self.start, "end": self.end,
            "error": _rounded(self.error), "macs": self.macs, "dram_bytes": self.dram_bytes,
            "intensity": _rounded(self.intensity), "bound_cycles": round(self.bound),
            "efficiency": _rounded(self.efficiency), "limit": self.limit,
            "inputs": self.inputs, "outputs": self.outputs,
        }  # fmt: skip


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


@dataclass(frozen=True)
class ErrorSummary:
    """The cost model over the rows that have an estimate and cycles."""

    count: int
    median: float | None
    p90: float | None
    within: int

    def text(self, missing: str = "the compile reported no kernels") -> str:
        """One line; `missing`: why there is nothing to compare, when there is not."""
        if not self.count:
            return f"no estimates to compare: {missing}"
        assert self.median is not None
        assert self.p90 is not None
        return (
            f"estimate vs simulated, |est - cycles| / cycles over {self.count} kernels: median "
            f"{self.median:.1%}, p90 {self.p90:.1%}, within {ESTIMATE_TOLERANCE:.0%}: {self.within}"
        )


def error_summary(rows: Sequence[NodePerf]) -> ErrorSummary:
    """Median, p90 (nearest rank) and count within `ESTIMATE_TOLERANCE` of |error|."""
    errors = sorted(abs(e) for row in rows if (e := row.error) is not None)
    if not errors:
        return ErrorSummary(0, None, None, 0)
    p90 = errors[max(0, math.ceil(0.9 * len(errors)) - 1)]
    within = sum(e <= ESTIMATE_TOLERANCE for e in errors)
    return ErrorSummary(len(errors), statistics.median(errors), p90, within)


@dataclass
class PerfReport:
    """Everything `aitc perf` prints and writes."""

    source: str
    target: Target
    cores: int
    cycles: int
    matrix_utilisation: float
    rows: list[NodePerf]
    path: CriticalPath
    trace: dict[str, Any]
    host_nodes: list[tuple[str, str]] = field(default_factory=list)
    missing: str = "the compile reported no kernels"
    """Why the rows have no estimates, when they have none."""

    @property
    def errors(self) -> ErrorSummary:
        """The cost model's error over the rows."""
        return error_summary(self.rows)

    def to_json(self) -> dict[str, Any]:
        """perf.json's content."""
        errors = self.errors
        return {
            "source": self.source,
            "target": self.target.name,
            "cores": self.cores,
            "clock_mhz": self.target.clock_mhz,
            "cycles": self.cycles,
            "matrix_utilisation": round(self.matrix_utilisation, 4),
            "estimate_error": {
                "kernels": errors.count,
                "median": _rounded(errors.median),
                "p90": _rounded(errors.p90),
                "within_5_percent": errors.within,
            },
            "nodes": [row.to_json() for row in self.rows],
            "host_nodes": [{"node": node, "reason": reason} for node, reason in self.host_nodes],
            "critical_path": {
                "engines": dict(sorted(self.path.engines.items())),
                "idle": self.path.idle,
                "waits": [edge.__dict__ for edge in self.path.edges],
                "summary": self.path.summary(),
            },
        }


def node_shapes(
    model: onnx.ModelProto | None, input_shapes: Mapping[str, Sequence[int]] | None = None
) -> dict[str, tuple[str, list[TensorInfo], list[TensorInfo]]]:
    """Per ONNX node name: (op type, its inputs, its outputs), types and shapes as `aitc verify`
    prepares the model (`prepared_model`: the inputs pinned to `input_shapes`, as
    `--input-shape` pins them, and onnx's shape inference); an unknown dim is 0; only names
    and op types for a model it rejects."""
    if model is None:
        return {}
    try:
        inferred = prepared_model(model, input_shapes or {})
    except AitcError:  # shapes are decoration; the compile already checked the model
        inferred = model
    graph = inferred.graph
    known: dict[str, TensorInfo] = {}
    for value in [*graph.input, *graph.output, *graph.value_info]:
        tensor = value.type.tensor_type
        known[value.name] = {
            "type": _type_name(tensor.elem_type),
            "shape": [d.dim_value for d in tensor.shape.dim],
        }
    for initializer in graph.initializer:
        known[initializer.name] = {"type": _type_name(initializer.data_type), "shape": list(initializer.dims)}
    found = {}
    for index, node in enumerate(graph.node):
        name = node.name or f"{node.op_type}_{index}"
        inputs = [known.get(i, {"type": "", "shape": []}) for i in node.input if i]
        outputs = [known.get(o, {"type": "", "shape": []}) for o in node.output if o]
        found[name] = (node.op_type, inputs, outputs)
    return found


def _type_name(elem_type: int) -> str:
    """ "float", "int64", ... (as onnxruntime's profiler names them), "" when unknown."""
    return onnx.TensorProto.DataType.Name(elem_type).lower() if elem_type else ""


def build_report(
    source: str,
    target: Target,
    trace: dict[str, Any],
    cycles: int,
    matrix_utilisation: float,
    kernels: Sequence[Mapping[str, object]],
    model: onnx.ModelProto | None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> PerfReport:
    """The report of one simulated run (`trace` from it) of the program a compile with these
    `kernels` rows made (empty: no static columns), of `model` when it is known."""
    timeline = Timeline(trace)
    owner: dict[str, str] = {}
    per_core: dict[tuple[str, int], int] = defaultdict(int)
    overlaps: dict[str, int] = defaultdict(int)
    moved: dict[str, int] = defaultdict(int)
    ops: dict[str, list[str]] = defaultdict(list)
    host = []
    for row in kernels:
        name = str(row["kernel"])
        if row.get("on") == "host":
            host.append((name, str(row.get("reason", ""))))
            continue
        for node in [name, *row.get("nodes", [])]:  # type: ignore[misc]
            owner.setdefault(str(node), name)
        estimate, overlap, delay = (int(row.get(key, 0)) for key in ("est_cycles", "overlap", "delay"))  # type: ignore[call-overload]
        per_core[name, int(row.get("core", 0))] += estimate - overlap + delay  # type: ignore[call-overload]
        overlaps[name] = max(overlaps[name], overlap - delay)
        moved[name] += int(row.get("dma_bytes", 0))  # type: ignore[call-overload]
        ops[name].append(str(row.get("op", "")))
    estimates: dict[str, int] = {}
    for (name, _), estimate in per_core.items():  # the cores run their parts at once
        estimates[name] = max(estimates.get(name, 0), estimate)
    if len({core for _, core in per_core}) > 1:  # ... through one DRAM, as the shard cost model says
        estimates = {
            name: shared_dram_floor(target, cycles, moved[name]) for name, cycles in estimates.items()
        }
    counts = _counts(trace, owner)
    spans = _grouped_spans(timeline, owner)
    cores = max(timeline.cores, 1)
    peak, dram_rate = target.matrix.macs_per_cycle * cores, target.dram.bytes_per_cycle
    shapes = node_shapes(model, input_shapes)
    rows = []
    link_rate = target.link.bytes_per_cycle * cores  # every core sends on its own link
    for name, (start, end, alone) in spans.items():
        macs, dram, link = counts.get(name, (0, 0, 0))
        bound = max(macs / peak, dram / dram_rate)
        op_type, inputs, outputs = shapes.get(name, ("", [], []))
        est = estimates.get(name) if name in ops else None
        rows.append(NodePerf(
            name, op_type, ",".join(dict.fromkeys(ops.get(name, []))), "npu", est, macs, dram,
            alone, start, end, bound, _limit(timeline, end - alone, end, dram / dram_rate, link / link_rate),
            inputs, outputs, overlaps.get(name, 0),
        ))  # fmt: skip
    return PerfReport(
        source, target, cores, cycles, matrix_utilisation, rows, critical_path(trace), trace, host
    )


def _grouped_spans(timeline: Timeline, owner: Mapping[str, str]) -> dict[str, tuple[int, int, int]]:
    """Per row (a kernel, or a node without one): (first start, last end, time alone), rows in
    order of their last end; the time alone as `Timeline.spans` defines it, for the group. On a
    multi-core program the time alone is the slowest core's on its own timeline
    (`Timeline.core_spans`): what the row took where it took longest."""
    found = _grouped(timeline.spans, owner)
    if timeline.cores <= 1:
        return found
    slowest: dict[str, int] = defaultdict(int)
    for spans in timeline.core_spans.values():
        for name, (_, _, alone) in _grouped(spans, owner).items():
            slowest[name] = max(slowest[name], alone)
    return {name: (first, last, slowest[name]) for name, (first, last, _) in found.items()}


def _grouped(spans: Sequence[Span], owner: Mapping[str, str]) -> dict[str, tuple[int, int, int]]:
    """`spans` grouped by row: (first start, last end, time alone), in order of their last end."""
    bounds: dict[str, list[int]] = {}
    for span in spans:
        name = owner.get(span.node, span.node)
        if name in bounds:
            bounds[name] = [min(bounds[name][0], span.start), max(bounds[name][1], span.end)]
        else:
            bounds[name] = [span.start, span.end]
    found, previous = {}, 0
    for name, (first, last) in sorted(bounds.items(), key=lambda item: (item[1][1], item[1][0], item[0])):
        found[name] = (first, last, max(last - max(first, previous), 0))
        previous = max(previous, last)
    return found


def _counts(trace: dict[str, Any], owner: Mapping[str, str]) -> dict[str, tuple[int, int, int]]:
    """Per row: (MACs of its matmul instructions, bytes its DMAs moved to or from DRAM, bytes
    its peer DMAs sent over the core-to-core links)."""
    macs: dict[str, int] = defaultdict(int)
    dram: dict[str, int] = defaultdict(int)
    link: dict[str, int] = defaultdict(int)
    for event in trace["traceEvents"]:
        if event.get("ph") != "X":
            continue
        args = event["args"]
        name = owner.get(args.get("node", NO_NODE), args.get("node", NO_NODE))
        if "m" in args and "k" in args and "n" in args:
            macs[name] += int(args["m"]) * int(args["k"]) * int(args["n"])
        elif "bytes" in args and any(str(v).startswith("dram[") for v in args.values()):
            dram[name] += int(args["bytes"])
        elif "bytes" in args and str(event.get("name", "")).startswith("dma_peer"):
            link[name] += int(args["bytes"])
    return {name: (macs.get(name, 0), dram.get(name, 0), link.get(name, 0)) for name in {*macs, *dram, *link}}


BUSY_ENOUGH = 0.6
"""An engine busy this share of a node's time is what limits it."""


def _limit(timeline: Timeline, lo: int, hi: int, dram_cycles: float, link_cycles: float = 0.0) -> str:
    """What limited the window [lo, hi), with its share of the window: the DRAM channel (its
    bytes at the DRAM rate take most of it) or the core-to-core links (the peer DMAs' bytes per
    core at the link rate), else the busiest engine when busy enough, else the engines waiting
    on each other ("sync"), else nothing to do ("idle")."""
    window = max(hi - lo, 1)
    engine, share = timeline.busiest(lo, hi)
    channel, channel_cycles = max((("DRAM", dram_cycles), ("link", link_cycles)), key=lambda c: c[1])
    if channel_cycles >= BUSY_ENOUGH * window and channel_cycles / window >= share:
        return f"{channel} {min(channel_cycles / window, 1.0):.0%}"
    if share >= BUSY_ENOUGH:
        return f"{engine} {share:.0%}"
    blocked = timeline.blocked_share(lo, hi)
    if blocked >= SYNC_ENOUGH:
        return f"sync {blocked:.0%}"
    return f"{engine} {share:.0%}" if share >= blocked else f"idle {1 - share:.0%}"


SYNC_ENOUGH = 0.3
"""Engines blocked on each other (none busy) this share of a node's time: synchronisation
limits it."""
