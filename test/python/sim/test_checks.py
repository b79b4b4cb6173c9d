"""The simulator's always-on checks: bounds, alignment, races, deadlocks, caps, and clear errors
for programs that do not fit the target or inputs that do not fit the program."""

from __future__ import annotations

import numpy as np
import pytest

from aitc.dialects.hw import (
    AccReadOp,
    AddressAttr,
    BarrierOp,
    DmaInOp,
    DmaOutOp,
    DmaPeerOp,
    LoopOp,
    MatmulOp,
    SemSignalOp,
    SemWaitOp,
    VBinaryOp,
    VImmOp,
    VReduceOp,
    VUnaryOp,
)
from aitc.sim import SimOptions, SimulationError, Simulator, decode_program
from aitc.sim.build import core, named, program, tensor
from aitc.sim.checks import check_region
from aitc.sim.execute import Memories
from aitc.target import load_target

TINY = load_target("tiny")


def sram(addr, steps=()):
    return AddressAttr("sram", addr, steps)


def dram(addr):
    return AddressAttr("dram", addr)


def acc(addr):
    return AddressAttr("acc", addr)


def simulate(cores, data=(), options=None, inputs=None, target="tiny"):
    sim = Simulator(program(cores, data, target), options=options)
    return sim.run(inputs or {spec.name: np.zeros(spec.shape, spec.dtype) for spec in sim.inputs})


def error_of(cores, data=(), options=None, inputs=None, target="tiny") -> SimulationError:
    with pytest.raises(SimulationError) as info:
        simulate(cores, data, options, inputs, target)
    return info.value


# --------------------------------------------------------------------------- bounds and alignment


def test_sram_overflow_is_rejected_before_running():
    error = error_of([core(0, [DmaInOp(dst=sram(0x3FF0), src=dram(0), row_bytes=32)])])
    assert error.kind == "program"
    assert "'dst' sram[0x3ff0] reaches byte 0x4010" in str(error)
    assert "beyond the 16384 bytes of SRAM" in str(error)


def test_bounds_over_a_loop_nest_are_rejected_before_running():
    body = [DmaInOp(dst=sram(0x3000, (0x400,)), src=dram(0), row_bytes=0x400)]
    error = error_of([core(0, [LoopOp(5, body)])])
    assert error.kind == "program"
    assert "over its loop iterations" in str(error)
    body = [DmaInOp(dst=sram(0x10, (-0x10,)), src=dram(0), row_bytes=16)]
    assert "goes below address 0" in str(error_of([core(0, [LoopOp(3, body)])]))


def test_misaligned_element_address_is_rejected():
    error = error_of([core(0, [MatmulOp(acc=acc(0), lhs=sram(0x2), rhs=sram(0x100), m=1, k=4, n=4)])])
    assert error.kind == "program"
    assert "'lhs' address 0x2 is not 4-byte aligned" in str(error)


def test_dma_addresses_need_no_alignment():
    simulate([core(0, [DmaInOp(dst=sram(0x3), src=dram(0x5), row_bytes=7)])])


def _first_instruction(ops):
    decoded = decode_program(program([core(0, ops)]), TINY)
    return next(decoded.cores[0].instructions())


def test_runtime_bounds_check_names_instance_engine_and_cycle():
    # statically checked programs never get here; the runtime check is the backstop
    ins = _first_instruction([DmaInOp(dst=sram(0x3F00), src=dram(0), row_bytes=32)])
    region = ins.static.regions[0]
    with pytest.raises(SimulationError) as info:
        check_region(Memories(TINY), Memories.key("sram", 0), 0x3FF0, region, ins, "dma0", 17)
    assert info.value.kind == "bounds"
    assert "(core 0, dma0, cycle 17)" in str(info.value)
    assert "'dst' writes SRAM of core 0 bytes [0x3ff0, 0x4010), outside its 16384 bytes" in str(info.value)


def test_runtime_alignment_check():
    ins = _first_instruction([MatmulOp(acc=acc(0), lhs=sram(0), rhs=sram(0x100), m=1, k=4, n=4)])
    region = ins.static.regions[0]
    with pytest.raises(SimulationError, match="'lhs' address 0x6 is not a multiple of 4") as info:
        check_region(Memories(TINY), Memories.key("sram", 0), 6, region, ins, "matrix", 0)
    assert info.value.kind == "alignment"


# --------------------------------------------------------------------------- races


def test_race_reports_both_instructions_and_their_nodes():
    ops = [
        named(DmaInOp(dst=sram(0), src=dram(0), row_bytes=64), "load_x"),
        named(MatmulOp(acc=acc(0), lhs=sram(0), rhs=sram(0x40), m=4, k=4, n=4), "MatMul_7"),
    ]
    error = error_of([core(0, ops)])
    assert error.kind == "race"
    text = str(error)
    assert "data race on SRAM of core 0, bytes [0x0, 0x40)" in text
    assert (
        "write  hw.dma_in sram[0x0] <- dram[0x0], row_bytes=64 (core 0, dma0, cycle 0, node 'load_x')" in text
    )
    assert "read   hw.matmul acc[0x0] <- sram[0x0], sram[0x40]" in text
    assert "(core 0, matrix, cycle 0, node 'MatMul_7')" in text
    assert "hw.sem_signal" in (error.hint or "")


def test_write_after_read_race():
    ops = [
        DmaInOp(dst=sram(0), src=dram(0), row_bytes=64),
        SemSignalOp(sem=0, engine="dma0"),
        SemWaitOp(sem=0, engine="matrix"),
        MatmulOp(acc=acc(0), lhs=sram(0), rhs=sram(0), m=4, k=4, n=4),
        named(DmaInOp(dst=sram(0x20), src=dram(0x100), row_bytes=16), "reload"),  # no wait for the matmul
    ]
    error = error_of([core(0, ops)])
    assert error.kind == "race"
    assert "node 'reload'" in str(error)
    assert "hw.matmul" in str(error)


def test_disjoint_accesses_do_not_race():
    ops = [
        DmaInOp(dst=sram(0, ()), src=dram(0), rows=4, row_bytes=16, dst_stride=32),
        VUnaryOp(dst=sram(0x200), a=sram(0x10), op="neg", rows=4, cols=4, src_stride=8),  # the gaps
    ]
    simulate([core(0, ops)])


def test_strided_rows_that_interleave_do_race():
    ops = [
        DmaInOp(dst=sram(0), src=dram(0), rows=4, row_bytes=16, dst_stride=32),
        VUnaryOp(dst=sram(0x200), a=sram(0x60), op="neg", rows=1, cols=4),  # row 3 of the DMA
    ]
    error = error_of([core(0, ops)])
    assert error.kind == "race"
    assert "bytes [0x60, 0x70)" in str(error)


def test_race_between_cores_without_barrier():
    core0 = [DmaPeerOp(dst=sram(0x100), src=sram(0), peer=1, row_bytes=64)]
    core1 = [VUnaryOp(dst=sram(0x200), a=sram(0x100), op="copy", rows=1, cols=16)]
    error = error_of([core(0, core0), core(1, core1)])
    assert error.kind == "race"
    assert "SRAM of core 1" in str(error)
    assert "core 0, dma1" in str(error)
    assert "core 1, vector" in str(error)


def test_barrier_orders_cores():
    core0 = [DmaPeerOp(dst=sram(0x100), src=sram(0), peer=1, row_bytes=64), BarrierOp(engine="dma1")]
    core1 = [BarrierOp(engine="vector"), VUnaryOp(dst=sram(0x200), a=sram(0x100), op="copy", rows=1, cols=16)]
    simulate([core(0, core0), core(1, core1)])


def ring_step(cores: int, *, wait_for_peer: bool = True) -> list:
    """Core i loads row i of x, copies it into core i+1's SRAM (mod `cores`) and signals that
    core's semaphore 1; then adds the row it received to its own and stores row i of y:
    y[i] = x[i] + x[i-1]. Without `wait_for_peer`, the add does not wait for the copy."""
    programs = []
    for i in range(cores):
        right = (i + 1) % cores
        ops = [
            DmaInOp(dst=sram(0), src=dram(32 * i), row_bytes=32),
            SemSignalOp(sem=0, engine="dma0", count=2),
            SemWaitOp(sem=0, engine="dma1"),
            DmaPeerOp(dst=sram(0x100), src=sram(0), peer=right, row_bytes=32),
            SemSignalOp(sem=1, engine="dma1", peer=right),
            SemWaitOp(sem=0, engine="vector"),
            *([SemWaitOp(sem=1, engine="vector")] if wait_for_peer else []),
            VBinaryOp(dst=sram(0x200), a=sram(0), b=sram(0x100), op="add", cols=8),
            SemSignalOp(sem=2, engine="vector"),
            SemWaitOp(sem=2, engine="dma1"),
            DmaOutOp(dst=dram(0x400 + 32 * i), src=sram(0x200), row_bytes=32),
        ]
        programs.append(core(i, ops))
    return programs


@pytest.mark.parametrize("cores", [2, 4])
def test_cross_core_semaphore_orders_a_peer_copy_and_its_reader(cores: int):
    x = np.arange(cores * 8, dtype=np.float32).reshape(cores, 8)
    data = [tensor("x", "input", 0, x.shape), tensor("y", "output", 0x400, x.shape)]
    result = simulate(ring_step(cores), data, inputs={"x": x}, target="tiny" if cores == 2 else "edge")
    # no race, no deadlock, every semaphore back at 0
    np.testing.assert_array_equal(result.outputs["y"], x + np.roll(x, 1, axis=0))


def test_peer_copy_read_without_waiting_for_its_signal_is_a_race():
    core0 = [
        DmaPeerOp(dst=sram(0x100), src=sram(0), peer=1, row_bytes=32),
        SemSignalOp(sem=1, engine="dma1", peer=1),
    ]
    core1 = [VUnaryOp(dst=sram(0x200), a=sram(0x100), op="copy", cols=8)]  # no sem_wait 1 before it
    error = error_of([core(0, core0), core(1, core1)])
    assert error.kind == "race"
    text = str(error)
    assert "data race on SRAM of core 1, bytes [0x100, 0x120)" in text
    assert "read   hw.vunary sram[0x200] <- sram[0x100], op=copy, cols=8 (core 1, vector, cycle 0)" in text
    assert "write  hw.dma_peer sram[0x100] <- sram[0x0], peer=1, row_bytes=32 (core 0, dma1, cycle 0)" in text
    assert "peer=" in (error.hint or "")


def test_four_core_ring_without_the_waits_is_a_race():
    error = error_of(ring_step(4, wait_for_peer=False), target="edge")
    assert error.kind == "race"
    assert "hw.dma_peer sram[0x100] <- sram[0x0]" in str(error)
    assert "hw.vbinary sram[0x200] <- sram[0x0], sram[0x100]" in str(error)


def test_a_peer_signal_counts_up_only_the_core_it_names():
    """Core 0 signals semaphore 3 of core 2; core 1 waits on its own semaphore 3 forever."""
    cores = [
        core(0, [SemSignalOp(sem=3, engine="dma1", peer=2)]),
        core(1, [named(SemWaitOp(sem=3, engine="vector"), "wait_for_core0")]),
        core(2, []),
    ]
    error = error_of(cores, target="edge")
    assert error.kind == "deadlock"
    text = str(error)
    assert "core 1 vector since cycle 0 (semaphore 3 = 0, needs 1): hw.sem_wait 3, engine=vector" in text
    assert "node 'wait_for_core0'" in text
    assert "core 1: sem 3 = 0 (vector waits for 1)" in text
    assert "core 2: sem 3 = 1" in text


def test_too_few_peer_signals_is_a_deadlock():
    cores = [
        core(0, [SemSignalOp(sem=3, engine="dma1", peer=1)]),
        core(1, [SemWaitOp(sem=3, engine="vector", count=2)]),
    ]
    error = error_of(cores)
    assert error.kind == "deadlock"
    assert "core 1 vector since cycle 0 (semaphore 3 = 1, needs 2)" in str(error)
    assert "core 1: sem 3 = 1 (vector waits for 2)" in str(error)


def test_a_peer_signal_to_a_core_without_a_program_ends_unbalanced():
    error = error_of([core(0, [SemSignalOp(sem=4, engine="dma1", peer=1)])])
    assert error.kind == "unbalanced"
    assert "core 1: sem 4 = 1" in str(error)


def test_two_cores_writing_the_same_dram_race():
    def store():
        return [DmaOutOp(dst=dram(0x1000), src=sram(0), row_bytes=64)]

    error = error_of([core(0, store()), core(1, store())])
    assert error.kind == "race"
    assert "DRAM" in str(error)


# --------------------------------------------------------------------------- deadlocks


def test_wait_without_signal_is_a_deadlock():
    ops = [
        DmaInOp(dst=sram(0), src=dram(0), row_bytes=64),
        named(SemWaitOp(sem=3, engine="vector"), "softmax"),
        VUnaryOp(dst=sram(0x100), a=sram(0), op="exp", rows=1, cols=16),
    ]
    error = error_of([core(0, ops)])
    assert error.kind == "deadlock"
    text = str(error)
    assert "core 0 vector since cycle 0 (semaphore 3 = 0, needs 1): hw.sem_wait 3, engine=vector" in text
    assert "node 'softmax'" in text
    assert "core 0: sem 3 = 0 (vector waits for 1)" in text


def test_circular_wait_reports_every_blocked_engine():
    ops = [
        SemSignalOp(sem=5, engine="dma0", count=1),
        SemWaitOp(sem=0, engine="matrix"),
        SemSignalOp(sem=1, engine="matrix"),
        SemWaitOp(sem=1, engine="vector", count=2),
        SemSignalOp(sem=0, engine="vector"),
    ]
    error = error_of([core(0, ops)])
    assert error.kind == "deadlock"
    text = str(error)
    assert "core 0 matrix" in text
    assert "core 0 vector" in text
    assert "sem 0 = 0 (matrix waits for 1)" in text
    assert "sem 5 = 1" in text


def test_missing_barrier_on_one_core_is_a_deadlock():
    core0 = [BarrierOp(engine="dma0"), DmaInOp(dst=sram(0), src=dram(0), row_bytes=4)]
    core1 = [DmaInOp(dst=sram(0), src=dram(0x10), row_bytes=4)]
    error = error_of([core(0, core0), core(1, core1)])
    assert error.kind == "deadlock"
    assert "barrier #0: reached by cores [0]; missing core 1 (finished all its instructions)" in str(error)


def test_deadlock_inside_a_long_loop_does_not_hang():
    body = [SemWaitOp(sem=0, engine="dma0"), DmaInOp(dst=sram(0), src=dram(0), row_bytes=4)]
    ops = [SemSignalOp(sem=0, engine="matrix", count=10), LoopOp(1000, body)]
    error = error_of([core(0, ops)])
    assert error.kind == "deadlock"
    assert "[i0=10]" in str(error)


# --------------------------------------------------------------------------- caps


def test_instruction_cap_stops_before_running():
    ops = [LoopOp(10**9, [SemSignalOp(sem=0, engine="vector")])]
    error = error_of([core(0, ops)], options=SimOptions(max_instructions=1000))
    assert error.kind == "cap"
    assert "1000000000 > 1000" in str(error)


def test_empty_loops_cost_nothing_however_many_iterations():
    """Iterations without instructions count against no cap, so they must not be iterated:
    `hw.loop 1000000 { hw.loop 1000000 { } }` once kept the simulator busy for days."""
    signal, wait = SemSignalOp(sem=0, engine="vector"), SemWaitOp(sem=0, engine="matrix")
    ops = [LoopOp(10**6, [LoopOp(10**6, [])]), signal, wait]
    result = Simulator(program([core(0, ops)])).run({})
    assert result.stats.instructions == 2


def test_cycle_cap():
    ops = [DmaInOp(dst=sram(0), src=dram(0), row_bytes=1024)]
    error = error_of([core(0, ops)], options=SimOptions(max_cycles=100))
    assert error.kind == "cap"
    assert "cycle cap" in str(error)


# --------------------------------------------------------------------------- program and inputs


def test_target_limits_are_reported_together():
    ops = [
        MatmulOp(acc=acc(0), lhs=sram(0), rhs=sram(0), m=4, k=8, n=4),
        SemSignalOp(sem=99, engine="vector"),
        SemWaitOp(sem=0, engine="dma3"),
        DmaPeerOp(dst=sram(0), src=sram(0), peer=0, row_bytes=4),
    ]
    error = error_of([core(0, ops), core(7, [])])
    assert error.kind == "program"
    text = str(error)
    for expected in ("k=8 exceeds", "semaphore 99 does not exist", "engine=dma3 does not exist",
                     "peer=0 is this core itself", "hw.core 7 does not exist"):  # fmt: skip
        assert expected in text


def test_target_limits_of_an_explicit_target():
    def ops():
        return [MatmulOp(acc=acc(0), lhs=sram(0), rhs=sram(0), m=4, k=8, n=4)]

    Simulator(program([core(0, ops())], target="edge"))  # fits edge's 32x32 engine
    with pytest.raises(SimulationError, match=r"target 'tiny': .*k=8 exceeds"):
        Simulator(program([core(0, ops())], target="edge"), "tiny")


def test_simulator_rules_beyond_target_limits():
    """Overlapping written rows have no defined result: refused before running."""
    ops = [VBinaryOp(dst=sram(0), a=sram(0x100), b=sram(0x100), op="add", rows=2, cols=4, dst_stride=2)]
    error = error_of([core(0, ops)])
    assert error.kind == "program"
    assert "rows of 'dst' overlap" in str(error)


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (VUnaryOp(dst=sram(0), a=acc(0), op="copy", rows=1, cols=4, dtype="i8"), "ACC holds 32-bit values"),
        (
            VReduceOp(dst=sram(0), a=sram(0x100), op="sum", rows=2, cols=4, dst_stride=4),
            "dst_stride must be 0",
        ),
        (
            VImmOp(dst=sram(0), a=sram(0), op="add", imm=0.5, rows=1, cols=4, dtype="i32"),
            "imm 0.5 must be a whole",
        ),
        (
            AccReadOp(dst=sram(0), a=acc(0), rows=1, cols=4, dtype="i32", activation="gelu"),
            "activation gelu needs f32",
        ),
    ],
)
def test_invalid_instructions_are_refused_by_the_verifier_before_running(op, message):
    error = error_of([core(0, [op])])
    assert error.kind == "program"
    assert message in str(error)


def test_data_layout_outside_dram():
    error = error_of([core(0, [])], data=[tensor("x", "input", 0x3FFFF0, (8,))])
    assert error.kind == "program"
    assert "beyond the 4194304 bytes of DRAM" in str(error)


def test_inputs_are_checked_all_at_once():
    data = [tensor("x", "input", 0, (4, 4)), tensor("y", "input", 0x100, (4,), np.int32)]
    sim = Simulator(program([core(0, [])], data))
    with pytest.raises(SimulationError) as info:
        sim.run({"x": np.zeros((4, 5), np.float32), "z": np.zeros(1)})
    assert info.value.kind == "input"
    assert info.value.problems == [
        "missing input(s): 'y'",
        "unknown input(s): 'z' (the program takes input 'x' (4x4 float32), input 'y' (4 int32))",
        "input 'x' has shape 4x5, the program expects 4x4",
    ]
    with pytest.raises(SimulationError, match="input 'y' has dtype int64, the program expects int32"):
        sim.run({"x": np.zeros((4, 4), np.float32), "y": np.zeros(4, np.int64)})
