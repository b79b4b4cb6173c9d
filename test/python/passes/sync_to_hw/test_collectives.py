"""Collectives on the NPU (passes/sync_to_hw/collectives.py), executed by the simulator: every
collective with every algorithm on 2, 3, 4 and 8 cores, for sizes the cores divide and sizes
they do not, against numpy; the ring/direct crossover the alpha-beta model predicts; and every
single deleted signal, wait, barrier or peer DMA reported as a race, deadlock, unbalanced
semaphore or wrong value, never a hang."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from xdsl.ir import Operation

import aitc.target
from aitc.dialects.hw import AddressAttr, DmaInOp, DmaOutOp, SemSignalOp, SemWaitOp
from aitc.passes.shard.cost_model import algorithm_cycles, collective_cycles
from aitc.passes.sync_to_hw.collectives import F32, SEND_ENGINE, Layout, Semaphores, build
from aitc.sim.build import core, program, tensor
from aitc.sim.errors import SimulationError
from aitc.sim.simulator import Simulator
from aitc.target import Target, load_target

SEMS = Semaphores(data=0, credit=1, local=2)
READY = 3
KINDS = ("all_reduce", "reduce_scatter", "all_gather")
ALGORITHMS = ("ring", "direct")


SPECS: dict[int, str] = {4: "edge", 8: "server"}
"""The target each core count runs on (2 and 3 cores: edge's TOML with fewer, see `fewer_cores`)."""


@pytest.fixture(autouse=True, scope="module")
def fewer_cores(tmp_path_factory):
    """Edge with 2 and 3 cores, as TOML files: the program names its target, its checks use it."""
    text = (Path(aitc.target.__file__).parent / "targets" / "edge.toml").read_text()
    for cores in (2, 3):
        path = tmp_path_factory.mktemp("targets") / f"edge{cores}.toml"
        path.write_text(
            text.replace("cores = 4", f"cores = {cores}").replace('name = "edge"', f'name = "edge{cores}"')
        )
        SPECS[cores] = str(path)
    yield
    for cores in (2, 3):
        del SPECS[cores]


def target_with(cores: int) -> Target:
    return load_target(SPECS[cores])


def _aligned(n: int) -> int:
    return (n + 63) // 64 * 64


def collective_program(
    kind: str, algorithm: str, reduction: str, cores: int, elements: int, timing: int | None = None
):
    """(module, layout): every core loads its input, runs the collective, stores the result.
    `timing`: load and store only that many elements (the collective's cycles without the
    DRAM traffic around it; its values are then not checked); 0 also leaves out the collective."""
    layout = Layout(value=0x0, elements=elements, slots=_aligned(elements * F32), cores=cores)
    parts = build(kind, algorithm, reduction, layout, SEMS)
    if timing == 0:
        parts = [
            dataclasses.replace(part, send=[], vector=[], last_arrivals=0, last_adds=0) for part in parts
        ]
    data: list[Operation] = []
    cores_ops = []
    addr = 0
    for c, part in enumerate(parts):
        offset, count = layout.chunk(c)
        in_elements = count if kind == "all_gather" else elements
        out_elements = count if kind == "reduce_scatter" else elements
        if timing is not None:
            in_elements = out_elements = timing or 16
        in_at = offset if kind == "all_gather" else 0  # all_gather: each core holds its chunk
        out_at = offset if kind == "reduce_scatter" else 0  # reduce_scatter: each core's chunk
        data.append(tensor(f"x{c}", "input", addr, (in_elements,)))
        load = DmaInOp(
            dst=AddressAttr("sram", layout.value + in_at),
            src=AddressAttr("dram", addr),
            row_bytes=in_elements * F32,
        )
        addr = _aligned(addr + in_elements * F32)
        data.append(tensor(f"y{c}", "output", addr, (out_elements,)))
        store = DmaOutOp(
            dst=AddressAttr("dram", addr),
            src=AddressAttr("sram", layout.value + out_at),
            row_bytes=out_elements * F32,
        )
        addr = _aligned(addr + out_elements * F32)
        ops: list[Operation] = [load, SemSignalOp(sem=READY, engine="dma0", count=2 if part.vector else 1)]
        if part.vector:
            ops += [SemWaitOp(sem=READY, engine="vector"), *part.vector]
        ops += [SemWaitOp(sem=READY, engine=SEND_ENGINE), *part.send]
        if part.last_arrivals:
            ops.append(SemWaitOp(sem=SEMS.data, engine=SEND_ENGINE, count=part.last_arrivals))
        if part.last_adds:
            ops.append(SemWaitOp(sem=SEMS.local, engine=SEND_ENGINE, count=part.last_adds))
        ops.append(store)
        cores_ops.append(core(c, ops))
    return program(cores_ops, data, target=SPECS[cores]), layout


def expected(kind: str, reduction: str, inputs: list[np.ndarray], layout: Layout) -> list[np.ndarray]:
    cores = layout.cores
    if kind == "all_gather":
        return [np.concatenate(inputs)] * cores
    reduce = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}[reduction]
    total = reduce(np.stack(inputs), axis=0).astype(np.float32)
    if kind == "all_reduce":
        return [total] * cores
    return [total[layout.chunk(c)[0] // F32 :][: layout.chunk(c)[1]] for c in range(cores)]


def run(kind: str, algorithm: str, reduction: str, cores: int, elements: int, seed: int = 0):
    module, layout = collective_program(kind, algorithm, reduction, cores, elements)
    rng = np.random.default_rng(seed)
    inputs = []
    for c in range(cores):
        count = layout.chunk(c)[1] if kind == "all_gather" else elements
        inputs.append(rng.standard_normal(count).astype(np.float32))
    simulator = Simulator(module, target=target_with(cores))
    result = simulator.run({f"x{c}": x for c, x in enumerate(inputs)})
    return result, [result.outputs[f"y{c}"] for c in range(cores)], expected(kind, reduction, inputs, layout)


@pytest.mark.parametrize("cores", [2, 3, 4, 8])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("elements", [64, 61])  # divides by 2, 4, 8; divides by nothing
def test_collective_matches_numpy(kind: str, algorithm: str, cores: int, elements: int):
    _, got, want = run(kind, algorithm, "sum", cores, elements)
    for c in range(cores):
        np.testing.assert_allclose(got[c], want[c], rtol=1e-5, atol=1e-5, err_msg=f"core {c}")


@pytest.mark.parametrize("reduction", ["max", "min", "prod"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_reductions_other_than_sum(reduction: str, algorithm: str):
    _, got, want = run("all_reduce", algorithm, reduction, 4, 40)
    for c in range(4):
        np.testing.assert_allclose(got[c], want[c], rtol=1e-5, atol=1e-6)


def test_fewer_elements_than_cores():
    """Some chunks are empty-sized neighbours of one element: still exact."""
    _, got, want = run("all_reduce", "ring", "sum", 8, 9)
    for c in range(8):
        np.testing.assert_allclose(got[c], want[c], rtol=1e-5, atol=1e-6)


def test_the_ring_sends_each_core_2_p_minus_1_chunks():
    """The bandwidth-optimal volume: 2 (p-1)/p of the value leaves every core (NCCL's bus
    bandwidth counts exactly these bytes)."""
    elements, cores = 4096, 4
    result, _, _ = run("all_reduce", "ring", "sum", cores, elements)
    for c in range(cores):
        assert result.stats.links[c].bytes_sent == 2 * (cores - 1) * elements * F32 // cores


def test_ring_wins_for_large_values_and_direct_for_small_ones():
    """The crossover the cost model predicts is where the simulator finds it: on edge's 4
    cores direct all-reduce is faster for 64 floats, ring for 16384."""
    edge = load_target("edge")
    for elements, faster in [(64, "direct"), (16384, "ring")]:
        cycles = {a: run("all_reduce", a, "sum", 4, elements)[0].stats.cycles for a in ALGORITHMS}
        assert min(cycles, key=lambda a: cycles[a]) == faster, cycles
        assert collective_cycles(edge, "all_reduce", elements * F32, 4).algorithm == faster


def _cores(module) -> list:
    return [op for op in module.body.block.first_op.body.block.ops if op.name == "hw.core"]


def _deletable(module) -> list[tuple[int, int]]:
    """(core index, op index) of every sem_signal, sem_wait, barrier and dma_peer."""
    found = []
    for c, core_op in enumerate(_cores(module)):
        for i, op in enumerate(core_op.body.block.ops):
            if op.name in ("hw.sem_signal", "hw.sem_wait", "hw.barrier", "hw.dma_peer"):
                found.append((c, i))
    return found


@pytest.mark.parametrize(("kind", "algorithm"), [(k, a) for k in KINDS for a in ALGORITHMS])
def test_deleting_any_sync_op_is_reported(kind: str, algorithm: str):
    """Sync mutation: remove one signal, wait, barrier or peer DMA from one core; the simulator
    reports a race, a deadlock or unbalanced semaphores, or the values differ (a deleted peer
    DMA with its signal kept) — it never hangs and never silently agrees."""
    cores, elements = 3, 30
    module, layout = collective_program(kind, algorithm, "sum", cores, elements)
    rng = np.random.default_rng(1)
    inputs = {
        f"x{c}": rng.standard_normal(layout.chunk(c)[1] if kind == "all_gather" else elements).astype(
            np.float32
        )
        for c in range(cores)
    }
    want = expected(kind, "sum", [inputs[f"x{c}"] for c in range(cores)], layout)
    target = target_with(cores)
    sites = _deletable(module)
    assert sites
    for c, i in sites:
        mutant, _ = collective_program(kind, algorithm, "sum", cores, elements)
        victim = list(_cores(mutant)[c].body.block.ops)[i]
        victim.detach()
        victim.erase()
        outcome = _simulate(mutant, target, inputs)
        if isinstance(outcome, str):
            assert outcome in ("race", "deadlock", "unbalanced"), (victim.name, outcome)
            continue
        same = all(np.allclose(outcome[f"y{k}"], want[k], atol=1e-5) for k in range(cores))
        assert not same, f"deleting core {c}'s {victim} went unnoticed"


def _simulate(module, target: Target, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray] | str:
    """The outputs, or the kind of the SimulationError the run raised."""
    try:
        return Simulator(module, target=target).run(inputs).outputs
    except SimulationError as error:
        return error.kind


def collective_only_cycles(kind: str, algorithm: str, cores: int, elements: int) -> int:
    """Simulated cycles of the collective alone: with 16-float loads and stores around it,
    minus the same program without it."""
    target = target_with(cores)
    cycles = []
    for timing in (16, 0):
        module, _ = collective_program(kind, algorithm, "sum", cores, elements, timing=timing)
        zeros = {f"x{c}": np.zeros(16, np.float32) for c in range(cores)}
        cycles.append(Simulator(module, target=target).run(zeros).stats.cycles)
    return cycles[0] - cycles[1]


@pytest.mark.parametrize(("kind", "algorithm"), [(k, a) for k in KINDS for a in ALGORITHMS])
@pytest.mark.parametrize("cores", [2, 4, 8])
def test_the_cost_model_predicts_the_simulated_cycles(kind: str, algorithm: str, cores: int):
    """The alpha-beta formulas of cost_model.py are within 15% of the simulator from 256 B to
    256 KiB, and their choice of algorithm is the simulator's faster one."""
    target = target_with(cores)
    for elements in (64, 1024, 16384):
        measured = collective_only_cycles(kind, algorithm, cores, elements)
        model = algorithm_cycles(target, kind, algorithm, elements * F32, cores)
        assert abs(model - measured) <= 0.15 * measured, (elements, model, measured)
