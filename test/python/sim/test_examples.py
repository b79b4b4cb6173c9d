"""The hand-written hw programs in examples/hw/: they run race-free, match numpy, and every one of
their semaphore and barrier ops is necessary (deleting it yields a reported race, deadlock, or
semaphores left above zero at the end)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy import special
from xdsl.dialects.builtin import ModuleOp

from aitc.dialects.hw import BarrierOp, SemSignalOp, SemWaitOp
from aitc.ir import parse_mlir
from aitc.sim import Session, SimOptions, SimulationError, Simulator, write_trace

EXAMPLES = sorted((Path(__file__).parents[3] / "examples" / "hw").glob("*.mlir"))
SYNC_OPS = (SemSignalOp, SemWaitOp, BarrierOp)
NO_HANG = SimOptions(max_cycles=10**6)  # a mutant that ran away would fail with kind "cap"


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + special.erf(x / np.sqrt(2)))


def _pipeline(inputs: dict[str, np.ndarray], sim: Simulator) -> dict[str, np.ndarray]:
    w, b = sim.program.consts[0].data.view(np.float32).reshape(2, 16)
    t = inputs["x"] * w + b
    return {"y": _gelu(t.astype(np.float64)).astype(np.float32)}


def _allreduce(inputs: dict[str, np.ndarray], sim: Simulator) -> dict[str, np.ndarray]:
    total = np.maximum(inputs["x"], 0).sum(axis=0)
    return {"y": np.stack([total, total])}


REFERENCES = {
    "tiled_matmul": lambda inputs, sim: {"c": inputs["a"] @ inputs["b"]},
    "two_core_allreduce": _allreduce,
    "vector_pipeline": _pipeline,
}


def random_inputs(sim: Simulator, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {spec.name: rng.standard_normal(spec.shape).astype(spec.dtype) for spec in sim.inputs}


def test_every_example_has_a_reference():
    assert {path.stem for path in EXAMPLES} == set(REFERENCES)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_matches_numpy(path):
    session = Session(path)
    inputs = random_inputs(session.simulator)
    outputs = session.run(None, inputs)
    expected = REFERENCES[path.stem](inputs, session.simulator)
    for spec, value in zip(session.get_outputs(), outputs, strict=True):
        np.testing.assert_allclose(value, expected[spec.name], rtol=1e-5, atol=1e-6)
    assert session.last_result is not None
    assert session.last_result.stats.cycles > 0


def _mutant(text: str, index: int) -> tuple[ModuleOp, str]:
    """The example with its `index`-th semaphore/barrier op deleted, and that op's text."""
    module = parse_mlir(text)
    victim = [op for op in module.walk() if isinstance(op, SYNC_OPS)][index]
    described = f"{victim.name} {victim.assembly_operands()}"
    victim.detach()
    victim.erase()
    return module, described


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_deleting_any_sync_op_is_reported(path):
    text = path.read_text()
    count = sum(isinstance(op, SYNC_OPS) for op in parse_mlir(text).walk())
    assert count > 0
    inputs = random_inputs(Simulator(parse_mlir(text)))
    kinds = Counter()
    for index in range(count):
        module, deleted = _mutant(text, index)
        with pytest.raises(SimulationError) as info:
            Simulator(module, options=NO_HANG).run(inputs)
        caught = info.value.kind in ("race", "deadlock", "unbalanced")
        assert caught, f"deleting #{index} ({deleted}): {info.value}"
        kinds[info.value.kind] += 1
    assert sum(kinds.values()) == count


def test_chrome_trace_has_a_track_per_core_and_engine(tmp_path):
    path = next(p for p in EXAMPLES if p.stem == "two_core_allreduce")
    sim = Simulator(parse_mlir(path.read_text()))
    result = sim.run(random_inputs(sim), trace=True)
    assert result.trace is not None
    write_trace(result.trace, tmp_path / "trace.json")
    trace = json.loads((tmp_path / "trace.json").read_text())
    events = trace["traceEvents"]
    processes = {
        e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"
    }
    threads = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in events
        if e["ph"] == "M" and e["name"] == "thread_name"
    }
    slices = [e for e in events if e["ph"] == "X"]
    assert processes == {0: "core 0", 1: "core 1"}
    assert set(threads.values()) == {"dma0", "dma1", "vector"}
    assert len(threads) == 6
    assert len(slices) == result.stats.instructions
    assert {(e["pid"], e["tid"]) for e in slices} == set(threads)
    assert all(e["dur"] >= 1 and e["ts"] >= 0 for e in slices)
    assert max(e["ts"] + e["dur"] for e in slices) == result.stats.cycles
    names = Counter(e["name"] for e in slices)
    assert names["dma_peer allreduce"] == 2
    assert names["barrier"] == 2
    peer = next(e for e in slices if e["name"] == "dma_peer allreduce")
    assert peer["args"]["dst"] == "sram[0x200]"
    assert peer["args"]["bytes"] == 64
    assert trace["displayTimeUnit"] == "ns"
    assert "1 cycle" in trace["otherData"]["time_unit"]
