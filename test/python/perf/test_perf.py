"""`aitc perf`: the metrics on hand-made traces, and the command on a small transformer layer
(files, figures consistent with `aitc run --stats-json`, determinism, error paths)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest

from aitc.perf.critical import Edge, critical_path
from aitc.perf.output import FILES
from aitc.perf.profile import NodePerf, build_report, error_summary
from aitc.perf.timeline import Timeline
from aitc.target import load_target
from aitc.testing import model_zoo
from aitc.tools.aitc_main import main

ENGINES = {0: "dma0", 1: "dma1", 2: "matrix", 3: "vector"}


def _trace(events: Sequence[tuple], cores: int = 1) -> dict:
    """A trace in the simulator's format from (core, engine, name, ts, dur, args) tuples."""
    meta = [
        {"ph": "M", "name": "thread_name", "pid": core, "tid": tid, "args": {"name": name}}
        for core in range(cores)
        for tid, name in ENGINES.items()
    ]
    slices = [
        {"ph": "X", "name": name, "pid": core, "tid": tid, "ts": ts, "dur": dur, "args": args}
        for core, tid, name, ts, dur, args in events
    ]
    return {"traceEvents": meta + slices}


# A load of node "x" on dma0 (0..100), its signal; the matrix blocked on sem 1 meanwhile, then
# the product of node "y" (101..301); the store of "y" on dma1 waits for the matrix's signal.
PIPELINE = _trace([
    (0, 0, "dma_in x", 0, 100, {"node": "x", "bytes": 3200, "src": "dram[0x0]", "dst": "sram[0x0]"}),
    (0, 0, "sem_signal x", 100, 1, {"node": "x", "sem": 1}),
    (0, 2, "sem_wait y", 0, 101, {"node": "y", "sem": 1, "stalled": 100}),
    (0, 2, "matmul y", 101, 200, {"node": "y", "m": 32, "k": 32, "n": 32}),
    (0, 2, "sem_signal y", 301, 1, {"node": "y", "sem": 2}),
    (0, 1, "sem_wait y", 0, 302, {"node": "y", "sem": 2, "stalled": 301}),
    (0, 1, "dma_out y", 302, 40, {"node": "y", "bytes": 1024, "src": "sram[0x0]", "dst": "dram[0x100]"}),
])  # fmt: skip


def test_the_critical_path_follows_semaphore_edges_back_to_the_first_load():
    path = critical_path(PIPELINE)
    assert path.cycles == 342
    assert path.engines == {"dma1": 40, "matrix": 200, "dma0": 100}
    assert path.nodes == {("dma1", "y"): 40, ("matrix", "y"): 200, ("dma0", "x"): 100}
    assert path.edges == [
        Edge("dma1", "sem 2", "matrix", "y", 301, 1),
        Edge("matrix", "sem 1", "dma0", "x", 100, 1),
    ]
    assert path.idle == 0
    assert path.summary(1) == [
        "by engine: matrix 58%, dma0 29%, dma1 12%, idle 0%",
        "matrix runs y: 58% of the cycles on the critical path",
        "dma1 waits on sem 2 for matrix (y): 88% of cycles (1 wait)",
    ]


def test_a_barrier_jumps_to_the_core_that_arrived_last():
    trace = _trace(
        [
            (0, 3, "vbinary a", 0, 50, {"node": "a"}),
            (0, 3, "barrier a", 50, 251, {"node": "a", "stalled": 250}),
            (1, 3, "vbinary b", 0, 300, {"node": "b"}),
            (1, 3, "barrier b", 300, 1, {"node": "b"}),
            (0, 3, "vbinary c", 301, 10, {"node": "c"}),
        ],
        cores=2,
    )
    path = critical_path(trace)
    assert path.nodes == {("vector", "c"): 10, ("vector", "b"): 300}
    assert path.edges == [Edge("vector", "a barrier", "vector", "b", 250, 1)]


def test_an_empty_trace_has_an_empty_path():
    path = critical_path({"traceEvents": []})
    assert (path.cycles, path.engines, path.edges) == (0, {}, [])


def test_time_alone_counts_each_overlap_once_for_the_later_node():
    trace = _trace([
        (0, 0, "dma_in a", 0, 100, {"node": "a"}),
        (0, 2, "matmul a", 100, 100, {"node": "a"}),
        (0, 1, "dma_in b", 150, 100, {"node": "b"}),  # b's load overlaps a's compute
        (0, 2, "matmul b", 250, 50, {"node": "b"}),
    ])  # fmt: skip
    spans = {s.node: s for s in Timeline(trace).spans}
    assert (spans["a"].start, spans["a"].end, spans["a"].alone) == (0, 200, 200)
    assert (spans["b"].start, spans["b"].end, spans["b"].alone) == (150, 300, 100)
    assert spans["a"].alone + spans["b"].alone == 300


def test_rows_count_macs_and_dram_bytes_and_name_the_limit():
    target = load_target("edge")
    kernels = [{"kernel": "y", "op": "graph.matmul", "est_cycles": 330, "nodes": ["y"]},
               {"kernel": "x", "op": "graph.add", "est_cycles": 90, "nodes": ["x"]}]  # fmt: skip
    report = build_report("m", target, PIPELINE, 342, 0.1, kernels, None)
    rows = {r.node: r for r in report.rows}
    assert [r.node for r in report.rows] == ["x", "y"]
    assert (rows["y"].macs, rows["y"].dram_bytes, rows["y"].est) == (32 * 32 * 32, 1024, 330)
    assert (rows["x"].macs, rows["x"].dram_bytes) == (0, 3200)
    assert rows["y"].cycles == 342 - 101  # from its first instruction (x ended before)
    assert rows["y"].error == pytest.approx((330 - 241) / 241)
    assert rows["x"].limit == "dma0 100%"  # 3200 B at 51 B/cycle take 63 of its 100 cycles
    assert rows["y"].limit == "matrix 83%"
    assert rows["y"].bound == pytest.approx(max(32768 / 1024, 1024 / 51))


def test_a_kernels_estimate_leaves_out_its_overlap_with_the_kernel_before_it():
    """A row's estimate is the time it adds after the kernel before it: `est_cycles` less its
    recorded `overlap`, plus its `delay` (convert-sync-to-hw's `kernel_overlaps`), what the
    time alone measures."""
    target = load_target("edge")
    kernels = [
        {"kernel": "x", "op": "graph.add", "est_cycles": 90, "nodes": ["x"]},
        {"kernel": "y", "op": "graph.matmul", "est_cycles": 330, "nodes": ["y"], "overlap": 60, "delay": 5},
    ]
    rows = {r.node: r for r in build_report("m", target, PIPELINE, 342, 0.1, kernels, None).rows}
    assert (rows["x"].est, rows["y"].est) == (90, 275)
    assert (rows["x"].overlap, rows["y"].overlap) == (0, 55)
    assert rows["y"].to_json()["est_overlap"] == 55
    assert rows["y"].error == pytest.approx((275 - 241) / 241)


def test_a_node_whose_bytes_take_the_dram_channel_longest_is_dram_bound():
    load = {"node": "z", "bytes": 4096, "src": "dram[0x0]", "dst": "sram[0x0]"}
    trace = _trace([(0, 0, "dma_in z", 0, 100, load), (0, 1, "dma_in z", 0, 100, load)])
    report = build_report("m", load_target("edge"), trace, 100, 0.0, [], None)
    assert report.rows[0].limit == "DRAM 100%"  # 8192 B at 51 B/cycle: 161 cycles of work in 100
    assert report.rows[0].est is None


def test_a_collective_whose_peer_dmas_take_the_links_longest_is_link_bound():
    """Two cores each sending 6400 B to the other over a 32 B/cycle link in 100 cycles: 200
    cycles of link work each, no DRAM traffic and the DMA engines busy only half the time."""
    send = {"node": "c", "bytes": 6400, "src": "sram[0x0]", "dst": "sram[0x100]", "peer": 1}
    trace = _trace([(0, 1, "dma_peer c", 0, 50, send), (1, 1, "dma_peer c", 0, 50, {**send, "peer": 0}),
                    (0, 3, "vbinary c", 90, 10, {"node": "c"})], cores=2)  # fmt: skip
    report = build_report("m", load_target("edge"), trace, 100, 0.0, [], None)
    assert report.rows[0].dram_bytes == 0
    assert report.rows[0].limit == "link 100%"


def _row(est: int | None, cycles: int) -> NodePerf:
    return NodePerf("n", "", "", "npu", est, 0, 0, cycles, 0, cycles, 0.0, "")


def test_error_summary_is_median_and_nearest_rank_p90_of_absolute_errors():
    rows = [_row(est, 100) for est in (100, 104, 90, 130, 60)] + [_row(None, 100), _row(50, 0)]
    summary = error_summary(rows)
    assert summary.count == 5  # no estimate, or no cycles: not compared
    assert summary.median == pytest.approx(0.10)
    assert summary.p90 == pytest.approx(0.40)
    assert summary.within == 2
    assert error_summary([]).count == 0


# --------------------------------------------------------------------------- the command


@pytest.fixture(scope="module")
def layer(tmp_path_factory) -> tuple[Path, dict[str, np.ndarray]]:
    model, inputs = model_zoo.transformer_encoder_layer(hidden=16, heads=2, seq=4, ffn=32, batch=2)
    folder = tmp_path_factory.mktemp("perf")
    path = folder / "layer.onnx"
    onnx.save(model, path)
    np.savez(folder / "inputs.npz", **inputs)
    return path, inputs


SHAPES = ["--input-shape", "x=2x4x16", "--input-shape", "attention_mask=2x4"]


def run_cli(capsys, argv: Sequence[str | os.PathLike]) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_perf_writes_every_file_and_agrees_with_aitc_run(capsys, tmp_path, layer):
    model, _ = layer
    inputs = model.with_name("inputs.npz")
    out = tmp_path / "report"
    code, stdout, err = run_cli(capsys, ["perf", model, *SHAPES, "--inputs", inputs, "-o", out, "--top", "3"])
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    data = json.loads((out / "perf.json").read_text())
    rows = data["nodes"]
    assert {r["node"] for r in rows} >= {"/layer.0/attention/Softmax", "/layer.0/attention/key/Add"}
    assert all(r["est_cycles"] is not None and r["cycles"] > 0 for r in rows)
    assert sum(r["cycles"] for r in rows) <= data["cycles"]
    assert data["estimate_error"]["kernels"] == len(rows)
    assert sum(r["macs"] for r in rows) > 0
    softmax = next(r for r in rows if r["op_type"] == "Softmax")
    assert softmax["inputs"][0] == {"type": "float", "shape": [2, 2, 4, 4]}
    # the same program through the user's other path: the same cycles
    binary, stats = tmp_path / "layer.aitb", tmp_path / "stats.json"
    assert run_cli(capsys, ["compile", model, *SHAPES, "-o", binary, "-q"])[0] == 0
    assert run_cli(capsys, ["run", binary, "--inputs", inputs, "--stats-json", stats])[0] == 0
    assert json.loads(stats.read_text())["cycles"] == data["cycles"]
    assert f"{data['cycles']} cycles" in stdout
    assert "critical path:" in stdout
    assert "(7 shorter rows" in stdout
    # onnxruntime-profiler style node events in the Perfetto trace
    trace = json.loads((out / "trace.json").read_text())
    nodes = [e for e in trace["traceEvents"] if e.get("cat") == "Node"]
    assert len(nodes) == len(rows)
    assert {e["args"]["op_name"] for e in nodes} >= {"Softmax", "LayerNormalization"}
    assert all(e["name"].endswith("_kernel_time") for e in nodes)
    csv_lines = (out / "perf.csv").read_text().splitlines()
    assert csv_lines[0].startswith("node,op_type,ops,placement,est_cycles,est_overlap,cycles")
    assert len(csv_lines) == len(rows) + 1
    page = (out / "perf.html").read_text()
    assert page.count("<svg") == 2
    assert "/layer.0/attention/Softmax" in page
    assert "<script" not in page
    assert (out / "roofline.png").read_bytes().startswith(b"\x89PNG")


def test_perf_is_deterministic(capsys, tmp_path, layer):
    model, _ = layer
    for name in ("a", "b"):
        assert run_cli(capsys, ["perf", model, *SHAPES, "-o", tmp_path / name])[0] == 0
    for name in FILES:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


@pytest.mark.parametrize("cores", [1, 2])
def test_perf_of_a_binary_reports_the_estimates_of_its_compile(capsys, tmp_path, layer, cores):
    """The program keeps its kernels' estimates (`aitc.kernels`), so a .aitb's report is the
    model's: the same rows, estimates and cycles (without the ONNX op types and shapes)."""
    model, _ = layer
    binary = tmp_path / "layer.aitb"
    options = [*SHAPES, "--cores", str(cores)]
    assert run_cli(capsys, ["compile", model, *options, "-o", binary, "-q"])[0] == 0
    for source, out in ((model, "from_model"), (binary, "from_binary")):
        code, stdout, err = run_cli(
            capsys, ["perf", source, *(options if source == model else []), "-o", tmp_path / out]
        )
        assert code == 0, err
        assert "/layer.0/attention/Softmax" in stdout
        assert "no estimates to compare" not in stdout
    from_model, from_binary = (
        json.loads((tmp_path / d / "perf.json").read_text()) for d in ("from_model", "from_binary")
    )
    onnx_only = ("op_type", "inputs", "outputs")  # a .aitb holds no ONNX model to read them from

    def measured(report: dict) -> list[dict]:
        return [{k: v for k, v in row.items() if k not in onnx_only} for row in report["nodes"]]

    assert measured(from_binary) == measured(from_model)
    assert from_binary["estimate_error"] == from_model["estimate_error"]
    assert from_model["estimate_error"]["kernels"] == len(from_model["nodes"]) > 0


def test_perf_on_two_cores_estimates_every_kernel_and_collective(capsys, tmp_path):
    """One sequence on two cores: the heads split, the attention output reduce-scattered."""
    model = tmp_path / "layer.onnx"
    onnx.save(model_zoo.transformer_encoder_layer(hidden=16, heads=2, seq=8, ffn=32, batch=1)[0], model)
    shapes = ["--input-shape", "x=1x8x16", "--input-shape", "attention_mask=1x8"]
    code, stdout, err = run_cli(capsys, ["perf", model, *shapes, "--cores", "2", "-o", tmp_path])
    assert code == 0, err
    assert "(2 cores)" in stdout
    rows = json.loads((tmp_path / "perf.json").read_text())["nodes"]
    collectives = [r for r in rows if r["ops"] == "collective"]
    assert collectives, "the two-core layer exchanges values"
    assert all(r["node"].startswith("collective ") and r["est_cycles"] > 0 for r in collectives)
    assert all(abs(r["error"]) <= 0.25 for r in collectives), collectives  # measured: -0.5%
    assert all(r["est_cycles"] is not None for r in rows if r["node"] != "(no node)")


def test_a_hand_written_program_has_no_estimates_and_says_why(capsys, tmp_path):
    program = tmp_path / "p.mlir"
    program.write_text(
        'hw.program @p target "tiny" {\n  hw.tensor "x" input dram[0x0] : tensor<4xf32>\n'
        "  hw.core 0 {\n    hw.dma_in sram[0x0] <- dram[0x0], row_bytes=16\n    hw.end\n  }\n}\n"
    )
    assert run_cli(capsys, ["asm", program, "-o", tmp_path / "p.aitb"])[0] == 0
    code, stdout, err = run_cli(capsys, ["perf", tmp_path / "p.aitb"])
    assert code == 0, err
    assert "no estimates to compare: the program records no estimates" in stdout


def test_a_multi_core_estimate_is_the_slowest_core_floored_by_the_shared_dram():
    """Two cores run their parts of kernel "k" at once: its estimate is the larger of their
    estimates (300), or the DRAM's time for both cores' bytes when longer (2 x 10200 B at 51
    B/cycle = 400); its cycles are the slowest core's on its own timeline (core 1: 250)."""
    trace = _trace([
        (0, 2, "matmul k", 0, 200, {"node": "k"}), (1, 2, "matmul k", 0, 250, {"node": "k"}),
        (0, 3, "vbinary j", 200, 100, {"node": "j"}), (1, 3, "vbinary j", 250, 20, {"node": "j"}),
    ], cores=2)  # fmt: skip
    kernels = [
        {
            "kernel": "k",
            "op": "graph.matmul",
            "est_cycles": est,
            "dma_bytes": 10200,
            "nodes": ["k"],
            "core": core,
        }
        for core, est in ((0, 300), (1, 280))
    ] + [
        {"kernel": "j", "op": "graph.add", "est_cycles": 90, "nodes": ["j"], "core": core} for core in (0, 1)
    ]
    rows = {r.node: r for r in build_report("m", load_target("edge"), trace, 300, 0.0, kernels, None).rows}
    assert (rows["k"].est, rows["k"].cycles) == (400, 250)
    assert (rows["j"].est, rows["j"].cycles) == (90, 100)  # core 0's: 200 -> 300


@pytest.mark.parametrize("case", ["a file", "no parent", "a long name", "dash", "bad model", "bad inputs"])
def test_perf_errors_write_nothing(capsys, monkeypatch, tmp_path, layer, case):
    model, _ = layer
    monkeypatch.chdir(tmp_path)
    out = {"no parent": "missing/report", "a long name": "a" * 300, "dash": "-"}.get(case, "report")
    argv = ["perf", model, *SHAPES, "-o", out]
    if case == "a file":
        Path(out).write_text("keep me")
    elif case == "bad model":
        Path("broken.onnx").write_bytes(b"not a model")
        argv[1] = "broken.onnx"
    elif case == "bad inputs":
        np.savez("wrong.npz", y=np.zeros(3, np.float32))
        argv += ["--inputs", "wrong.npz"]
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    code, _, err = run_cli(capsys, argv)
    assert code == 1
    assert "error:" in err
    assert "Traceback" not in err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
