"""Collectives on the NPU (passes/sync_to_hw/collectives.py), executed by the simulator: every
collective with every algorithm on 2, 3, 4 and 8 cores, on one row and on several (chunks are
column blocks of every row), for sizes the cores divide and sizes they do not, against numpy;
the ring/direct crossover the alpha-beta model predicts; and every single deleted signal, wait,
barrier or peer DMA reported as a race, deadlock, unbalanced semaphore or wrong value, never a
hang."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from xdsl.ir import Operation

import aitc.target
from aitc.dialects.hw import AddressAttr, DmaInOp, DmaOutOp, DmaPeerOp, VBinaryOp
from aitc.passes.shard.cost_model import algorithm_cycles, collective_cycles
from aitc.passes.sync_to_hw.collectives import F32, Layout, Semaphores, build
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
    kind: str,
    algorithm: str,
    reduction: str,
    cores: int,
    row_elements: int,
    rows: int = 1,
    timing: int | None = None,
):
    """(module, layout): every core loads its input, runs the collective, stores the result.
    The value is `rows` x `row_elements` f32; all_gather inputs and reduce_scatter outputs are
    each core's column block of it (strided in SRAM, dense in DRAM).
    `timing`: load and store only that many elements (the collective's cycles without the
    DRAM traffic around it; its values are then not checked); 0 also leaves out the collective."""
    layout = Layout(
        value=0x0,
        rows=rows,
        row_elements=row_elements,
        slots=_aligned(rows * row_elements * F32),
        cores=cores,
    )
    parts = build(kind, algorithm, reduction, layout, SEMS)
    if timing == 0:
        parts = [
            dataclasses.replace(part, send=[], vector=[], last_arrivals=0, last_adds=0) for part in parts
        ]
    data: list[Operation] = []
    cores_ops = []
    addr = 0
    for c, part in enumerate(parts):
        whole = (0, rows, row_elements)
        block = (layout.columns(c)[0] * F32, rows, layout.columns(c)[1])
        loaded = block if kind == "all_gather" else whole  # all_gather: each core holds its block
        stored = block if kind == "reduce_scatter" else whole  # reduce_scatter: each core's block
        if timing is not None:
            loaded = stored = (0, 1, timing or 16)
        data.append(tensor(f"x{c}", "input", addr, loaded[1:]))
        load = DmaInOp(dst=AddressAttr("sram", layout.value + loaded[0]), src=AddressAttr("dram", addr),
                       rows=loaded[1], row_bytes=loaded[2] * F32, dst_stride=layout.row_bytes)  # fmt: skip
        addr = _aligned(addr + loaded[1] * loaded[2] * F32)
        data.append(tensor(f"y{c}", "output", addr, stored[1:]))
        store = DmaOutOp(dst=AddressAttr("dram", addr), src=AddressAttr("sram", layout.value + stored[0]),
                         rows=stored[1], row_bytes=stored[2] * F32, src_stride=layout.row_bytes)  # fmt: skip
        addr = _aligned(addr + stored[1] * stored[2] * F32)
        ops = [*part.after(load, READY, SEMS), store]
        cores_ops.append(core(c, ops))
    return program(cores_ops, data, target=SPECS[cores]), layout


def _block(value: np.ndarray, layout: Layout, c: int) -> np.ndarray:
    """Core c's column block of a rows x row_elements value."""
    start, width = layout.columns(c)
    return value[:, start : start + width]


def random_inputs(kind: str, layout: Layout, seed: int) -> list[np.ndarray]:
    """Every core's input: its column block (all_gather) or a whole value."""
    rng = np.random.default_rng(seed)
    shapes = [
        (layout.rows, layout.columns(c)[1] if kind == "all_gather" else layout.row_elements)
        for c in range(layout.cores)
    ]
    return [rng.standard_normal(shape).astype(np.float32) for shape in shapes]


def expected(kind: str, reduction: str, inputs: list[np.ndarray], layout: Layout) -> list[np.ndarray]:
    cores = layout.cores
    if kind == "all_gather":
        return [np.concatenate(inputs, axis=1)] * cores
    reduce = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}[reduction]
    total = reduce(np.stack(inputs), axis=0).astype(np.float32)
    if kind == "all_reduce":
        return [total] * cores
    return [_block(total, layout, c) for c in range(cores)]


def run(
    kind: str, algorithm: str, reduction: str, cores: int, row_elements: int, rows: int = 1, seed: int = 0
):
    module, layout = collective_program(kind, algorithm, reduction, cores, row_elements, rows)
    inputs = random_inputs(kind, layout, seed)
    simulator = Simulator(module, target=target_with(cores))
    result = simulator.run({f"x{c}": x for c, x in enumerate(inputs)})
    got = [result.outputs[f"y{c}"].reshape(rows, -1) for c in range(cores)]
    return result, got, expected(kind, reduction, inputs, layout)


@pytest.mark.parametrize("cores", [2, 3, 4, 8])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("elements", [64, 61])  # divides by 2, 4, 8; divides by nothing
def test_collective_matches_numpy(kind: str, algorithm: str, cores: int, elements: int):
    _, got, want = run(kind, algorithm, "sum", cores, elements)
    for c in range(cores):
        np.testing.assert_allclose(got[c], want[c], rtol=1e-5, atol=1e-5, err_msg=f"core {c}")


@pytest.mark.parametrize("cores", [2, 3, 4])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("row_elements", [24, 25])  # divides by 2, 3, 4; divides by nothing
def test_2d_collective_matches_numpy(kind: str, algorithm: str, cores: int, rows: int, row_elements: int):
    """A rows x row_elements value, chunk j = columns [start_j, start_j + width_j) of every row:
    all_gather concatenates the parts along the columns, reduce_scatter leaves each core its
    column block of the reduction."""
    _, got, want = run(kind, algorithm, "sum", cores, row_elements, rows)
    for c in range(cores):
        np.testing.assert_allclose(got[c], want[c], rtol=1e-5, atol=1e-5, err_msg=f"core {c}")


def test_all_gather_of_a_sharded_tensor_along_dim_1():
    """The case the 2-D layout is for: [B, S/p, H] parts gathered along dim 1 are core c's
    columns [c*S/p*H, (c+1)*S/p*H) of every one of the B rows of the [B, S*H] view."""
    batch, seq, hidden, cores = 2, 6, 4, 3
    rng = np.random.default_rng(5)
    parts = [rng.standard_normal((batch, seq // cores, hidden)).astype(np.float32) for _ in range(cores)]
    feeds = {f"x{c}": part.reshape(batch, -1) for c, part in enumerate(parts)}
    for algorithm in ALGORITHMS:
        module, _ = collective_program("all_gather", algorithm, "sum", cores, seq * hidden, batch)
        outputs = Simulator(module, target=target_with(cores)).run(feeds).outputs
        for c in range(cores):
            gathered = outputs[f"y{c}"].reshape(batch, seq, hidden)
            np.testing.assert_array_equal(gathered, np.concatenate(parts, axis=1), err_msg=algorithm)


def test_layout_splits_every_row_into_column_blocks():
    """Blocks tile [0, row_elements) in order, widths differ by at most one (the first ones are
    wider); a block narrower than one column is refused."""
    layout = Layout(value=0x100, rows=3, row_elements=25, slots=0x1000, cores=4)
    assert [layout.columns(j) for j in range(4)] == [(0, 7), (7, 6), (13, 6), (19, 6)]
    assert layout.columns(-1) == layout.columns(3)
    assert layout.chunk_address(1) == 0x100 + 7 * F32
    assert (layout.row_bytes, layout.nbytes, layout.chunk_slot_bytes) == (100, 300, 3 * 7 * F32)
    with pytest.raises(ValueError, match="3 x 3 f32 on 4 cores"):
        Layout(value=0, rows=3, row_elements=3, slots=0, cores=4)


def test_ring_reduce_scatter_fields_on_three_rows():
    """The exact strided ops: core 0's first send is chunk 2 (columns 17..24, 8 wide) into the
    successor's dense slot 0; its first add is chunk 1 (columns 9..16) with that slot. DMA
    strides are bytes, vector strides elements."""
    layout = Layout(value=0x0, rows=3, row_elements=25, slots=0x200, cores=3)
    part = build("reduce_scatter", "ring", "sum", layout, SEMS)[0]
    send = next(op for op in part.send if isinstance(op, DmaPeerOp))
    add = next(op for op in part.vector if isinstance(op, VBinaryOp))
    assert send.values() == {
        "dst": AddressAttr("sram", 0x200), "src": AddressAttr("sram", 17 * F32), "peer": 1, "rows": 3,
        "row_bytes": 8 * F32, "src_stride": 25 * F32, "dst_stride": 8 * F32, "queue": -1,
    }  # fmt: skip
    fields = {k: v for k, v in add.values().items() if k not in ("dtype", "broadcast")}
    assert fields == {
        "dst": AddressAttr("sram", 9 * F32), "a": AddressAttr("sram", 9 * F32),
        "b": AddressAttr("sram", 0x200), "op": "add", "rows": 3, "cols": 8,
        "dst_stride": 25, "src_stride": 25, "b_stride": 8,
    }  # fmt: skip


def _written(op: Operation) -> tuple[int, int] | None:
    """[first, last + 1) bytes a dma_peer writes into its peer's SRAM (None for other ops)."""
    if not isinstance(op, DmaPeerOp):
        return None
    dst, rows, row_bytes = op.get("dst"), op.get_int("rows"), op.get_int("row_bytes")
    assert isinstance(dst, AddressAttr)
    stride = op.get_int("dst_stride") or row_bytes
    return dst.base.data, dst.base.data + (rows - 1) * stride + row_bytes


@pytest.mark.parametrize(("kind", "algorithm"), [(k, a) for k in KINDS for a in ALGORITHMS])
@pytest.mark.parametrize("cores", [2, 3, 4])
def test_peers_write_only_the_value_and_the_declared_slots(kind: str, algorithm: str, cores: int):
    """`slot_bytes(kind, algorithm)` covers every receive: each peer write lies inside the value
    or inside [slots, slots + slot_bytes)."""
    layout = Layout(value=0x40, rows=3, row_elements=25, slots=0x1000, cores=cores)
    value = (layout.value, layout.value + layout.nbytes)
    slots = (layout.slots, layout.slots + layout.slot_bytes(kind, algorithm))
    for part in build(kind, algorithm, "sum", layout, SEMS):
        for span in filter(None, map(_written, part.send)):
            inside = [lo <= span[0] and span[1] <= hi for lo, hi in (value, slots)]
            assert any(inside), (span, value, slots)


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


@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize(("kind", "algorithm"), [(k, a) for k in KINDS for a in ALGORITHMS])
def test_deleting_any_sync_op_is_reported(kind: str, algorithm: str, rows: int):
    """Sync mutation: remove one signal, wait, barrier or peer DMA from one core; the simulator
    reports a race, a deadlock or unbalanced semaphores, or the values differ (a deleted peer
    DMA with its signal kept) — it never hangs and never silently agrees. With 3 rows every
    chunk is 3 strided pieces: column blocks of the same rows must not hide a race."""
    cores, row_elements = 3, 30 if rows == 1 else 10
    module, layout = collective_program(kind, algorithm, "sum", cores, row_elements, rows)
    inputs = random_inputs(kind, layout, seed=1)
    want = expected(kind, "sum", inputs, layout)
    feeds = {f"x{c}": x for c, x in enumerate(inputs)}
    target = target_with(cores)
    sites = _deletable(module)
    assert sites
    for c, i in sites:
        mutant, _ = collective_program(kind, algorithm, "sum", cores, row_elements, rows)
        victim = list(_cores(mutant)[c].body.block.ops)[i]
        victim.detach()
        victim.erase()
        outcome = _simulate(mutant, target, feeds)
        if isinstance(outcome, str):
            assert outcome in ("race", "deadlock", "unbalanced"), (victim.name, outcome)
            continue
        same = all(
            np.allclose(outcome[f"y{k}"].reshape(want[k].shape), want[k], atol=1e-5) for k in range(cores)
        )
        assert not same, f"deleting core {c}'s {victim} went unnoticed"


def _simulate(module, target: Target, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray] | str:
    """The outputs, or the kind of the SimulationError the run raised."""
    try:
        return Simulator(module, target=target).run(inputs).outputs
    except SimulationError as error:
        return error.kind


def collective_only_cycles(kind: str, algorithm: str, cores: int, row_elements: int, rows: int = 1) -> int:
    """Simulated cycles of the collective alone: with 16-float loads and stores around it,
    minus the same program without it."""
    target = target_with(cores)
    cycles = []
    for timing in (16, 0):
        module, _ = collective_program(kind, algorithm, "sum", cores, row_elements, rows, timing=timing)
        zeros = {f"x{c}": np.zeros((1, 16), np.float32) for c in range(cores)}
        cycles.append(Simulator(module, target=target).run(zeros).stats.cycles)
    return cycles[0] - cycles[1]


@pytest.mark.parametrize(("kind", "algorithm"), [(k, a) for k in KINDS for a in ALGORITHMS])
@pytest.mark.parametrize("cores", [2, 4, 8])
@pytest.mark.parametrize("rows", [1, 4])
def test_the_cost_model_predicts_the_simulated_cycles(kind: str, algorithm: str, cores: int, rows: int):
    """The alpha-beta formulas of cost_model.py are within 15% of the simulator from 256 B to
    256 KiB, on one row or on 4 (the model knows only bytes: peer DMA costs bytes whatever the
    rows, and a combine of column blocks at least a few lanes wide costs about what one row of
    the same elements does)."""
    target = target_with(cores)
    for elements in (64, 1024, 16384):
        measured = collective_only_cycles(kind, algorithm, cores, elements // rows, rows)
        model = algorithm_cycles(target, kind, algorithm, elements * F32, cores)
        assert abs(model - measured) <= 0.15 * measured, (elements, model, measured)
