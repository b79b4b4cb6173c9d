"""What `aitc perf` prints and writes: the terminal table, JSON and CSV for CI, a roofline chart
and a per-node timeline (PNG and SVG, matplotlib), one self-contained HTML page holding them,
and the Perfetto trace with one "Node" event per row in the style of onnxruntime's profiler
(`cat` "Node", `name` "<node>_kernel_time", `args.op_name`, `args.input_type_shape`, ...), so
scripts written for onnxruntime profiles read it.

Every file is a function of the report: the same run gives byte-identical files (SVG ids are
salted with a constant, no dates are written).
"""

from __future__ import annotations

import copy
import csv
import html
import io
import json
from typing import Any

from aitc.perf.profile import NodePerf, PerfReport
from aitc.report import format_table

HEADERS = [
    "node", "op", "est", "cycles", "error", "MACs", "DRAM bytes", "MACs/B", "bound", "efficiency", "limit",
]  # fmt: skip

FILES = (
    "perf.json",
    "perf.csv",
    "trace.json",
    "roofline.png",
    "roofline.svg",
    "timeline.png",
    "timeline.svg",
    "perf.html",
)
"""The files `aitc perf -o DIR` writes into DIR."""


def _short(name: str, width: int) -> str:
    """`name`, or its last `width` - 1 characters after an ellipsis."""
    return name if len(name) <= width else "…" + name[-(width - 1) :]


def _op_label(row: NodePerf) -> str:
    """The graph ops of a kernel ("conv", "matmul,add"), else the ONNX op type of the node."""
    return ",".join(op.removeprefix("graph.") for op in row.ops.split(",")) if row.ops else row.op_type


def _cells(row: NodePerf) -> list[object]:
    error, intensity, efficiency = row.error, row.intensity, row.efficiency
    return [
        _short(row.node, 40), _op_label(row)[:18], "-" if row.est is None else row.est, row.cycles,
        "-" if error is None else f"{error:+.1%}", row.macs, row.dram_bytes,
        "-" if intensity is None else f"{intensity:.2f}", f"{row.bound:.0f}",
        "-" if efficiency is None else f"{efficiency:.2f}", row.limit,
    ]  # fmt: skip


def format_perf(report: PerfReport, count: int | None = None) -> str:
    """The terminal report: the run, the `count` longest rows (all when None), the cost
    model's error, and the critical path's summary."""
    rows = sorted(report.rows, key=lambda r: (-r.cycles, r.node))
    shown = rows if count is None else rows[:count]
    lines = [
        f"{report.source} on '{report.target.name}' ({report.cores} core{'s' * (report.cores != 1)}): "
        f"{report.cycles} cycles ({report.cycles / report.target.clock_mhz:.1f} us at "
        f"{report.target.clock_mhz} MHz), matrix utilisation {report.matrix_utilisation:.1%}",
        "",
        format_table(HEADERS, [_cells(r) for r in shown]),
    ]
    if len(shown) < len(rows):
        lines.append(f"({len(rows) - len(shown)} shorter rows in perf.json / perf.csv)")
    if report.host_nodes:
        lines.append(f"{len(report.host_nodes)} node(s) run on the host (not simulated): "
                     + ", ".join(node for node, _ in report.host_nodes[:5]))  # fmt: skip
    lines += ["", report.errors.text(report.missing), "", "critical path:"]
    lines += [f"  {line}" for line in report.path.summary()] or ["  (empty run)"]
    return "\n".join(lines)


def perf_json(report: PerfReport) -> str:
    """`PerfReport.to_json` as indented JSON text."""
    return json.dumps(report.to_json(), indent=1, sort_keys=False) + "\n"


def perf_csv(report: PerfReport) -> str:
    """One CSV row per report row (the JSON fields but the tensor lists)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    keys = [k for k in report.rows[0].to_json() if k not in ("inputs", "outputs")] if report.rows else []
    writer.writerow(keys)
    for row in report.rows:
        data = row.to_json()
        writer.writerow(["" if data[k] is None else data[k] for k in keys])
    return out.getvalue()


def node_trace(report: PerfReport) -> dict[str, Any]:
    """The run's trace plus one process "ONNX nodes" holding a "Node" event per row over its
    time alone, with onnxruntime-profiler args."""
    trace = copy.deepcopy(report.trace)
    pid = 1 + max((e.get("pid", 0) for e in trace["traceEvents"]), default=0)
    events = trace["traceEvents"]
    events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "ONNX nodes"}})
    events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": -1}})
    for row in report.rows:
        events.append({
            "ph": "X", "cat": "Node", "name": f"{row.node}_kernel_time", "pid": pid, "tid": 0,
            "ts": row.end - row.cycles, "dur": row.cycles,
            "args": {
                "op_name": row.op_type or row.ops, "provider": f"aitc:{report.target.name}",
                "input_type_shape": [{t["type"] or "unknown": t["shape"]} for t in row.inputs],
                "output_type_shape": [{t["type"] or "unknown": t["shape"]} for t in row.outputs],
                "est_cycles": row.est, "macs": row.macs, "dram_bytes": row.dram_bytes, "limit": row.limit,
            },
        })  # fmt: skip
    return trace


def _figure_bytes(figure, kind: str) -> bytes:
    import matplotlib

    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "aitc", "svg.fonttype": "none"}):
        metadata = {"Date": None} if kind == "svg" else {"Software": None}
        figure.savefig(buffer, format=kind, metadata=metadata, bbox_inches="tight")
    return buffer.getvalue()


def roofline_figure(report: PerfReport):
    """Achieved MACs per cycle against MACs per DRAM byte, per row, under the target's roof."""
    from matplotlib.figure import Figure

    target, cores = report.target, report.cores
    peak, rate = target.matrix.macs_per_cycle * cores, target.dram.bytes_per_cycle
    points = [r for r in report.rows if r.macs and r.dram_bytes and r.cycles]
    intensities = [r.macs / r.dram_bytes for r in points]
    figure = Figure(figsize=(7, 4.5))
    axes = figure.subplots()
    low = min([*intensities, peak / rate / 10])
    high = max([*intensities, peak / rate * 10])
    xs = [low / 2, peak / rate, high * 2]
    axes.plot(xs, [min(peak, x * rate) for x in xs], color="black", linewidth=1.5, label="roofline")
    axes.scatter(intensities, [r.macs / r.cycles for r in points], s=18, color="tab:blue")
    for row in sorted(points, key=lambda r: (-r.cycles, r.node))[:5]:
        axes.annotate(_short(row.node, 24), (row.macs / row.dram_bytes, row.macs / row.cycles), fontsize=7,
                      xytext=(4, 2), textcoords="offset points")  # fmt: skip
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("arithmetic intensity (MACs per DRAM byte)")
    axes.set_ylabel("achieved MACs per cycle")
    axes.set_title(f"roofline: {target.name}, {cores} core(s), peak {peak} MACs/cycle, DRAM {rate} B/cycle")
    axes.legend(loc="lower right")
    return figure


LIMIT_COLOURS = {
    "matrix": "tab:blue",
    "vector": "tab:green",
    "dma": "tab:orange",
    "DRAM": "tab:red",
    "sync": "tab:purple",
    "idle": "tab:gray",
}


def _colour(limit: str) -> str:
    kind = limit.split()[0]
    return LIMIT_COLOURS.get("dma" if kind.startswith("dma") else kind, "tab:brown")


def timeline_figure(report: PerfReport):
    """One bar per row over its time alone (lighter: the part that overlapped earlier rows),
    coloured by what limited it."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    rows = sorted(report.rows, key=lambda r: (r.end, r.node))
    figure = Figure(figsize=(9, max(2.5, 0.2 * len(rows) + 1)))
    axes = figure.subplots()
    for y, row in enumerate(rows):
        alone_start = row.end - row.cycles
        axes.barh(y, alone_start - row.start, left=row.start, color=_colour(row.limit), alpha=0.3, height=0.8)
        axes.barh(y, row.cycles, left=alone_start, color=_colour(row.limit), height=0.8)
    axes.set_yticks(range(len(rows)), [_short(r.node, 36) for r in rows], fontsize=6)
    axes.invert_yaxis()
    axes.set_xlabel("cycle")
    axes.set_title(f"per-node timeline: {report.cycles} cycles")
    handles = [Patch(color=colour, label=kind) for kind, colour in LIMIT_COLOURS.items()]
    axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7, title="limit")
    return figure


def charts(report: PerfReport) -> dict[str, bytes]:
    """roofline.{png,svg} and timeline.{png,svg}."""
    found = {}
    for name, make in (("roofline", roofline_figure), ("timeline", timeline_figure)):
        figure = make(report)
        for kind in ("png", "svg"):
            found[f"{name}.{kind}"] = _figure_bytes(figure, kind)
    return found


def perf_html(report: PerfReport, svgs: dict[str, bytes]) -> str:
    """One self-contained page: the summary, both charts inline, every row."""
    escape = html.escape
    head = "".join(f"<th>{escape(h)}</th>" for h in HEADERS)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in _cells(r)) + "</tr>"
        for r in sorted(report.rows, key=lambda r: (-r.cycles, r.node))
    )
    summary = "".join(f"<li>{escape(line)}</li>" for line in report.path.summary())
    first = format_perf(report, 0).splitlines()[0]
    errors = report.errors.text(report.missing)
    inline = "".join(
        f"<figure>{svgs[name].decode().split('?>', 1)[-1]}</figure>"
        for name in ("roofline.svg", "timeline.svg")
    )
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>aitc perf: '
        f"{escape(report.source)}</title><style>body{{font-family:sans-serif;margin:1.5em}}"
        "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;"
        "text-align:right}td:first-child,th:first-child{text-align:left}figure{margin:1em 0}</style>"
        f"</head><body><h1>aitc perf</h1><p>{escape(first)}</p><p>{escape(errors)}</p>"
        f"<h2>critical path</h2><ul>{summary}</ul><h2>charts</h2>{inline}"
        f"<h2>per node</h2><table><tr>{head}</tr>{body}</table></body></html>\n"
    )


def report_files(report: PerfReport) -> dict[str, bytes | str]:
    """Every file of `FILES`, by name."""
    images = charts(report)
    files: dict[str, bytes | str] = {
        "perf.json": perf_json(report),
        "perf.csv": perf_csv(report),
        "trace.json": json.dumps(node_trace(report), separators=(",", ":")),
        **images,
        "perf.html": perf_html(report, images),
    }
    assert sorted(files) == sorted(FILES)
    return files
