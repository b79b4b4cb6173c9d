"""The hw dialect (the virtual NPU's ISA) from Python: construction, field defaults, printing,
verifier errors, and the target-limit checks of `aitc.dialects.hw.program`."""

from __future__ import annotations

import re

import pytest
from xdsl.dialects.builtin import ModuleOp, NameLoc, NoneAttr, StringAttr, TensorType, f32
from xdsl.utils.exceptions import VerifyException

from aitc.diagnostics import AitcError
from aitc.dialects import hw
from aitc.dialects.hw.program import (
    accesses,
    address_range,
    check_program,
    instructions,
    preset_violations,
    program_problems,
)
from aitc.ir import parse_mlir, print_mlir
from aitc.target import load_target


def A(space: str, base: int, *steps: int) -> hw.AddressAttr:
    return hw.AddressAttr(space, base, steps)


SAMPLES: dict[type[hw.InstructionOp], dict[str, object]] = {
    hw.DmaInOp: {"dst": A("sram", 0), "src": A("dram", 0x100), "rows": 4, "row_bytes": 16},
    hw.DmaOutOp: {"dst": A("dram", 0x100), "src": A("sram", 0), "row_bytes": 64, "queue": 1},
    hw.DmaLocalOp: {"dst": A("acc", 0), "src": A("sram", 0x40), "rows": 2, "row_bytes": 16},
    hw.DmaPeerOp: {"dst": A("sram", 0x1000), "src": A("sram", 0), "peer": 1, "row_bytes": 16},
    hw.DmaGatherOp: {
        "dst": A("sram", 0),
        "src": A("dram", 0),
        "indices": A("sram", 0x800),
        "rows": 4,
        "row_bytes": 8,
        "src_stride": 8,
        "table_rows": 2,
    },
    hw.MatmulOp: {
        "acc": A("acc", 0),
        "lhs": A("sram", 0),
        "rhs": A("sram", 0x40),
        "m": 4,
        "k": 4,
        "n": 4,
        "accumulate": True,
    },
    hw.VBinaryOp: {"dst": A("sram", 0x200), "a": A("sram", 0), "b": A("sram", 0x40), "op": "add", "cols": 4},
    hw.VImmOp: {"dst": A("sram", 0x200), "a": A("acc", 0), "op": "mul", "imm": 0.5, "rows": 4, "cols": 4},
    hw.VUnaryOp: {"dst": A("sram", 0x200), "a": A("sram", 0), "op": "exp", "cols": 4},
    hw.VSelectOp: {
        "dst": A("sram", 0x300),
        "cond": A("sram", 0),
        "a": A("sram", 0x40),
        "b": A("sram", 0x80),
        "cols": 4,
    },
    hw.VReduceOp: {"dst": A("sram", 0x200), "a": A("sram", 0), "op": "sum", "rows": 4, "cols": 4},
    hw.VCastOp: {
        "dst": A("sram", 0x200),
        "a": A("acc", 0),
        "cols": 4,
        "from": "i32",
        "to": "i8",
        "scale": 0.5,
    },
    hw.AccReadOp: {"dst": A("sram", 0x200), "a": A("acc", 0), "rows": 4, "cols": 4, "activation": "relu"},
    hw.SemSignalOp: {"sem": 3, "engine": "matrix", "peer": 1},
    hw.SemWaitOp: {"sem": 3, "engine": "vector", "count": 2},
    hw.BarrierOp: {"engine": "dma0"},
}
"""A valid instance of every instruction on the tiny target (a new instruction needs one)."""


def program(*ops, target: str = "tiny", cores: int = 2) -> hw.ProgramOp:
    """A program whose core 0 runs `ops`; the other cores only end."""
    core_ops = [hw.CoreOp(0, [*ops, hw.EndOp()])] + [hw.CoreOp(i, [hw.EndOp()]) for i in range(1, cores)]
    return hw.ProgramOp("p", target, core_ops)


def verify_error(*ops, target: str = "tiny") -> str:
    with pytest.raises(VerifyException) as caught:
        ModuleOp([program(*ops, target=target)]).verify()
    return str(caught.value)


# --------------------------------------------------------------------------- construction


def test_every_instruction_has_a_sample():
    assert set(SAMPLES) == set(hw.INSTRUCTIONS)


@pytest.mark.parametrize("cls", hw.INSTRUCTIONS, ids=lambda c: c.name)
def test_construct_print_parse(cls: type[hw.InstructionOp]):
    op = cls(**SAMPLES[cls])
    module = ModuleOp([program(op)])
    module.verify()
    text = print_mlir(module)
    assert f"{cls.name} {op.assembly_operands()}" in text
    assert print_mlir(parse_mlir(text)) == text


@pytest.mark.parametrize("cls", hw.INSTRUCTIONS, ids=lambda c: c.name)
def test_values_return_what_was_given(cls: type[hw.InstructionOp]):
    op = cls(**SAMPLES[cls])
    values = op.values()
    assert set(values) == {f.name for f in cls.FIELDS}
    for name, value in SAMPLES[cls].items():
        assert values[name] == value


def test_field_defaults():
    dma = hw.DmaInOp(dst=A("sram", 0), src=A("dram", 0), row_bytes=4)
    assert (dma.get("rows"), dma.get("src_stride"), dma.get("queue")) == (1, 0, -1)
    assert "rows" not in dma.attributes, "a field left at its default is not stored"
    matmul = hw.MatmulOp(**SAMPLES[hw.MatmulOp])
    assert matmul.get("dtype") == "f32"
    assert matmul.get("accumulate") is True
    assert matmul.get("transpose_rhs") is False
    assert hw.SemSignalOp(sem=0, engine="matrix").get("count") == 1
    assert hw.AccReadOp(**SAMPLES[hw.AccReadOp]).get("dst_stride") == 0


def test_default_fields_are_omitted_from_the_custom_form():
    op = hw.DmaInOp(dst=A("sram", 0), src=A("dram", 0), rows=1, row_bytes=4, queue=-1)
    assert op.assembly_operands() == "sram[0x0] <- dram[0x0], row_bytes=4"


def test_sem_signal_peer_defaults_to_this_core():
    local = hw.SemSignalOp(sem=3, engine="dma1", peer=-1)
    assert local.get("peer") == -1
    assert "peer" not in local.attributes, "peer=-1 (this core) is the default: not stored"
    assert local.assembly_operands() == "3, engine=dma1"
    remote = hw.SemSignalOp(sem=3, engine="dma1", count=2, peer=1)
    assert remote.assembly_operands() == "3, engine=dma1, count=2, peer=1"


def test_sem_signal_with_peer_round_trips_through_text():
    text = print_mlir(ModuleOp([program(hw.SemSignalOp(sem=5, engine="dma1", peer=1))]))
    assert "hw.sem_signal 5, engine=dma1, peer=1\n" in text
    parsed = parse_mlir(text)
    assert print_mlir(parsed) == text
    signal = next(op for op in parsed.walk() if isinstance(op, hw.SemSignalOp))
    assert signal.get("peer") == 1


def test_only_sem_signal_has_a_peer():
    with pytest.raises(TypeError, match="unknown fields"):
        hw.SemWaitOp(sem=0, engine="vector", peer=1)


def test_unknown_field_is_a_type_error():
    with pytest.raises(TypeError, match="unknown fields"):
        hw.BarrierOp(engine="dma0", colour="red")


def test_field_lookup_names_the_op():
    with pytest.raises(KeyError, match=r"hw\.barrier has no field 'sem'"):
        hw.BarrierOp.field("sem")


def test_address_text_and_trimming():
    address = A("sram", 0x100, 0x10, -0x4, 0, 0)
    assert address.step_values == (0x10, -0x4)
    assert address.text() == "sram[0x100 + 0x10*i0 - 0x4*i1]"
    assert A("dram", 0, 0, 8).text() == "dram[0x0 + 0x8*i1]"


@pytest.mark.parametrize(
    ("space", "base", "message"), [("vram", 0, "unknown memory space"), ("sram", -4, "negative")]
)
def test_address_verifier(space: str, base: int, message: str):
    with pytest.raises(VerifyException, match=message):
        hw.AddressAttr(space, base)


def test_loop_and_core_accessors():
    loop = hw.LoopOp(3, [hw.BarrierOp(engine="vector")])
    core = hw.CoreOp(1, [loop, hw.EndOp()])
    assert loop.trip_count() == 3
    assert core.core_id() == 1
    first = loop.body.block.first_op
    assert first is not None
    assert hw.loop_depth(first) == 1


# --------------------------------------------------------------------------- dialect verifier


def test_missing_field():
    assert "hw.dma_in needs 'row_bytes'" in verify_error(hw.DmaInOp(dst=A("sram", 0), src=A("dram", 0)))


def test_wrong_memory_space():
    op = hw.MatmulOp(**{**SAMPLES[hw.MatmulOp], "acc": A("sram", 0)})
    assert "'acc' must be in acc, got sram" in verify_error(op)


def test_rows_zero():
    op = hw.VUnaryOp(**{**SAMPLES[hw.VUnaryOp], "rows": 0})
    assert "rows and cols must be >= 1" in verify_error(op)


def test_loop_index_outside_its_loops():
    op = hw.DmaInOp(dst=A("sram", 0, 4), src=A("dram", 0), row_bytes=4)
    assert "'dst' uses loop index i0 outside its loops" in verify_error(op)
    inside = hw.LoopOp(2, [op.clone()])
    ModuleOp([program(inside)]).verify()


def test_loop_count_zero():
    assert "count must be >= 1" in verify_error(hw.LoopOp(0, []))


def test_float_only_rules():
    op = hw.VUnaryOp(**{**SAMPLES[hw.VUnaryOp], "dtype": "i32"})
    assert "exp works on f32 only" in verify_error(op)


def test_duplicate_core_ids():
    prog = hw.ProgramOp("p", "tiny", [hw.CoreOp(0, [hw.EndOp()]), hw.CoreOp(0, [hw.EndOp()])])
    with pytest.raises(VerifyException, match=r"duplicate core ids \[0, 0\]"):
        ModuleOp([prog]).verify()


def test_program_holds_only_layout_and_cores():
    prog = hw.ProgramOp("p", "tiny", [hw.CoreOp(0, [hw.EndOp()])])
    prog.body.block.add_op(hw.LoopOp(1, []))
    with pytest.raises(VerifyException):
        ModuleOp([prog]).verify()


# --------------------------------------------------------------------------- target limits


def test_every_sample_fits_every_preset():
    ops = [cls(**sample) for cls, sample in SAMPLES.items()]
    prog = program(*ops)
    for name in ("tiny", "edge", "server"):
        assert program_problems(prog, load_target(name)) == [], name


def test_preset_target_is_checked_by_the_verifier():
    op = hw.MatmulOp(**{**SAMPLES[hw.MatmulOp], "k": 8})
    op.location = NameLoc(StringAttr("fc1"), NoneAttr())
    message = verify_error(op)
    assert "hw.program @p does not fit target 'tiny' (1 problem(s))" in message
    assert 'core 0, instruction 0 (hw.matmul, node "fc1"): k=8 exceeds' in message
    ModuleOp([program(op.clone(), target="edge", cores=4)]).verify()  # 32x32 on edge: fine


def test_non_preset_target_is_not_checked_by_the_verifier():
    op = hw.MatmulOp(**{**SAMPLES[hw.MatmulOp], "k": 4096})
    prog = program(op, target="custom.toml")
    ModuleOp([prog]).verify()
    assert preset_violations(prog) == ""
    with pytest.raises(AitcError, match="k=4096 exceeds"):
        check_program(prog, load_target("tiny"))


def test_check_program_lists_every_problem():
    ops = [
        hw.SemSignalOp(sem=40, engine="dma5"),
        hw.DmaInOp(dst=A("sram", 0x3FF0), src=A("dram", 0), row_bytes=32, queue=7),
        hw.MatmulOp(**{**SAMPLES[hw.MatmulOp], "n": 9, "acc": A("acc", 2)}),
    ]
    with pytest.raises(AitcError) as caught:
        check_program(program(*ops), load_target("tiny"))
    problems = caught.value.problems
    assert len(problems) == 6, problems
    assert all(p.startswith("target 'tiny': core 0, instruction ") for p in problems)
    assert "see `aitc target show tiny`" in (caught.value.hint or "")


@pytest.mark.parametrize(
    ("core", "peer", "problem"),
    [
        (0, 2, "peer=2 is not a core (the target has 2 cores)"),
        (1, 1, "peer=1 is this core itself (leave peer out to signal this core)"),
    ],
)
def test_sem_signal_peer_is_another_core_of_the_target(core: int, peer: int, problem: str):
    prog = hw.ProgramOp(
        "p", "tiny", [hw.CoreOp(core, [hw.SemSignalOp(sem=0, engine="dma1", peer=peer), hw.EndOp()])]
    )
    assert program_problems(prog, load_target("tiny")) == [
        f"core {core}, instruction 0 (hw.sem_signal): {problem}"
    ]
    with pytest.raises(VerifyException, match=re.escape(problem)):
        ModuleOp([prog]).verify()  # tiny is a preset: its verifier checks the limits
    on_edge = program_problems(prog, load_target("edge"))  # 4 cores: core 2 exists there
    assert on_edge == ([] if core != peer else [f"core {core}, instruction 0 (hw.sem_signal): {problem}"])


def test_sem_signal_peer_below_minus_one_is_refused_by_the_op():
    assert "hw.sem_signal: peer must be a core id (or -1: this core)" in verify_error(
        hw.SemSignalOp(sem=0, engine="dma1", peer=-2)
    )


def test_address_range_over_the_loop_box():
    address = A("sram", 0x100, 0x10, -0x40)
    assert address_range(address, (4, 3)) == (0x100 - 0x80, 0x100 + 0x30)
    assert address_range(address, (1, 1)) == (0x100, 0x100)
    assert address_range(A("dram", 8), ()) == (8, 8)


def test_loops_widen_the_checked_range():
    dma = hw.DmaInOp(dst=A("sram", 0x3E00, 0x40), src=A("dram", 0), row_bytes=512)
    problems = program_problems(program(hw.LoopOp(8, [dma])), load_target("tiny"))
    assert problems == [
        "core 0, instruction 0 (hw.dma_in): 'dst' sram[0x3e00 + 0x40*i0] reaches byte 0x41c0 over its "
        "loop iterations (512 bytes per access), beyond the 16384 bytes of SRAM"
    ]
    ((_, site),) = instructions(program(hw.LoopOp(8, [dma.clone()])))
    assert site.loop_counts == (8,)


def test_access_extents():
    matmul = hw.MatmulOp(
        **{**SAMPLES[hw.MatmulOp], "m": 2, "k": 3, "n": 4, "transpose_rhs": True, "dtype": "i8"}
    )
    extents = {a.field: (a.extent, a.align) for a in accesses(matmul)}
    assert extents == {"lhs": (6, 1), "rhs": (12, 1), "acc": (32, 4)}
    strided = hw.DmaOutOp(dst=A("dram", 0), src=A("sram", 0), rows=3, row_bytes=8, dst_stride=100)
    assert {a.field: a.extent for a in accesses(strided)} == {"dst": 208, "src": 24}
    row = hw.VBinaryOp(**{**SAMPLES[hw.VBinaryOp], "rows": 4, "broadcast": "row"})
    assert {a.field: a.extent for a in accesses(row)} == {"dst": 64, "a": 64, "b": 16}
    reduce = hw.VReduceOp(**SAMPLES[hw.VReduceOp])
    assert {a.field: a.extent for a in accesses(reduce)}["dst"] == 16


def test_dram_layout_checks():
    layout = [
        hw.TensorOp("x", "input", 0, TensorType(f32, [4, 4])),
        hw.TensorOp("y", "output", 0x3FFFF0, TensorType(f32, [8])),
        hw.TensorOp("z", "output", 0x10, TensorType(f32, [2])),
    ]
    prog = hw.ProgramOp("p", "tiny", layout)
    assert program_problems(prog, load_target("tiny")) == [
        'hw.tensor "y" ends at 0x400010, beyond the 4194304 bytes of DRAM',
        'hw.tensor "z" (from 0x10) overlaps hw.tensor "x" (up to 0x40)',
    ]


VARIANTS: list[hw.InstructionOp] = [
    hw.VReduceOp(**{**SAMPLES[hw.VReduceOp], "dst_stride": 3}),
    hw.AccReadOp(**{**SAMPLES[hw.AccReadOp], "dtype": "i8", "src_stride": 8}),
    hw.VBinaryOp(**{**SAMPLES[hw.VBinaryOp], "rows": 3, "broadcast": "col", "b_stride": 2}),
    hw.VBinaryOp(**{**SAMPLES[hw.VBinaryOp], "rows": 3, "broadcast": "scalar"}),
    hw.VBinaryOp(**{**SAMPLES[hw.VBinaryOp], "rows": 3, "b_stride": 6}),
    hw.VCastOp(**{**SAMPLES[hw.VCastOp], "rows": 2, "dst_stride": 8}),
    hw.MatmulOp(**{**SAMPLES[hw.MatmulOp], "dtype": "i8", "transpose_rhs": True, "n": 3, "rhs_stride": 5}),
    hw.DmaInOp(**{**SAMPLES[hw.DmaInOp], "src_stride": 4, "dst_stride": 100}),
]


@pytest.mark.parametrize(
    "op", [cls(**sample) for cls, sample in SAMPLES.items()] + VARIANTS, ids=lambda op: op.name
)
def test_access_extents_agree_with_the_simulator(op: hw.InstructionOp):
    """The static checks and the simulator's footprints (the ISA's living definition) must
    agree on how many bytes each operand spans and on its alignment."""
    from aitc.sim.footprint import footprint

    spaces = {f.name: op.get_address(f.name).space.data for f in op.FIELDS if f.kind == "addr"}
    simulated = footprint(op.name.removeprefix("hw."), op.values(), spaces)
    assert {r.field: (r.extent, r.align) for r in simulated} == {
        a.field: (a.extent, a.align) for a in accesses(op)
    }
