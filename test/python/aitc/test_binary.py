"""The `.aitb` binary format (`aitc/binary.py`): lossless round trips, and refusal of every kind
of damaged, foreign, future or wrong-target binary with one clear AitcError line."""

from __future__ import annotations

import hashlib
import random
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, NameLoc, NoneAttr, StringAttr

from aitc import binary
from aitc.diagnostics import AitcError
from aitc.dialects import hw
from aitc.ir import parse_mlir, print_mlir
from aitc.target import load_target
from aitc.tools.aitc_main import main
from aitc.weights import array_to_attr, attr_to_array

ROUNDTRIP_MLIR = Path(__file__).resolve().parents[2] / "dialects" / "hw" / "asm-roundtrip.mlir"
"""Every instruction, loops with negative steps, locations, inline and resource weights."""

TINY = load_target("tiny")

SMALL = """
hw.program @small target "tiny" {
  hw.tensor "x" input dram[0x0] : tensor<4xf32>
  hw.core 0 {
    hw.loop 2 {
      hw.dma_in sram[0x0 + 0x10*i0] <- dram[0x0], row_bytes=16 loc("load")
    }
    hw.end
  }
}
"""


def full_module() -> ModuleOp:
    return parse_mlir(ROUNDTRIP_MLIR.read_text(), str(ROUNDTRIP_MLIR))


@pytest.fixture(scope="module")
def data() -> bytes:
    return binary.assemble(full_module(), TINY)


def reseal(blob: bytes | bytearray) -> bytes:
    """`blob` with a fresh checksum, so the decoder (not the checksum) meets the damage."""
    body = bytes(blob[: -binary.CHECKSUM_BYTES])
    return body + hashlib.blake2b(body, digest_size=binary.CHECKSUM_BYTES).digest()


def refused(blob: bytes, target=None) -> str:
    """The message of the BinaryError that disassembling `blob` raises."""
    with pytest.raises(binary.BinaryError) as caught:
        binary.disassemble(blob, target)
    message = str(caught.value)
    assert "\n" not in message, message
    return message


def code_binary(code: bytes) -> bytes:
    """A binary whose single core holds `code` (crafted, valid envelope)."""
    meta, empty, debug = binary._Writer(), binary._Writer(), binary._Writer()
    meta.text("crafted")
    meta.text("tiny")
    meta.uv(1)
    meta.u8(2)
    empty.uv(0)
    debug.uv(0)
    sections = [
        (binary.PROGRAM, 0, bytes(meta.out)),
        (binary.CODE, 0, code),
        (binary.CONST, 0, bytes(empty.out)),
        (binary.IO, 0, bytes(empty.out)),
        (binary.DEBUG, 0, bytes(debug.out)),
        (binary.ATTRS, 0, bytes(debug.out)),
    ]
    return binary._pack(TINY, sections)


# --------------------------------------------------------------------------- lossless round trips


def test_round_trip_is_lossless(data: bytes):
    module = full_module()
    decoded = binary.disassemble(data, TINY)
    assert print_mlir(decoded) == print_mlir(module)
    assert print_mlir(decoded, generic=True) == print_mlir(module, generic=True)
    assert binary.assemble(decoded, TINY) == data


def test_text_binary_text_is_byte_identical():
    text = print_mlir(full_module())
    again = print_mlir(binary.disassemble(binary.assemble(parse_mlir(text), TINY)))
    assert again == text
    assert 'loc("model.onnx":3:7)' in text
    assert 'loc(fused["fc1", "relu1"])' in text


def test_weights_and_locations_built_in_python():
    weights = np.arange(256, dtype=np.float32).reshape(16, 16)
    value = array_to_attr(weights, "fc.weight")
    const = hw.ConstOp(0x1000, value)
    const.location = NameLoc(StringAttr("fc.weight"), NoneAttr())
    dma = hw.DmaInOp(dst=hw.AddressAttr("sram", 0), src=hw.AddressAttr("dram", 0x1000), rows=16, row_bytes=64)
    dma.location = NameLoc(StringAttr("fc"), NoneAttr())
    program = hw.ProgramOp("fc", "tiny", [const, hw.CoreOp(0, [dma, hw.EndOp()])])
    module = ModuleOp([program])
    decoded = binary.disassemble(binary.assemble(program, TINY))
    assert print_mlir(decoded) == print_mlir(module)
    (decoded_const,) = [op for op in decoded.walk() if isinstance(op, hw.ConstOp)]
    assert decoded_const.value is not None
    np.testing.assert_array_equal(attr_to_array(decoded_const.value), weights)
    assert 'loc("fc")' in print_mlir(decoded)


def test_save_and_load(tmp_path: Path):
    path = tmp_path / "small.aitb"
    size = binary.save_program(path, parse_mlir(SMALL), TINY)
    assert path.stat().st_size == size
    assert print_mlir(binary.load_program(path, TINY)) == print_mlir(parse_mlir(SMALL))
    assert [p.name for p in tmp_path.iterdir()] == ["small.aitb"], "no temporary file left behind"


def test_header(data: bytes):
    header = binary.read_header(data)
    assert data[:4] == b"AITB"
    assert header.version == binary.PROGRAM_VERSION  # one program: still version 1
    assert header.size == len(data)
    assert header.target_name == "tiny"
    assert header.target_fingerprint == TINY.fingerprint()
    kinds = [binary.SECTION_KINDS[s.kind] for s in header.sections]
    assert kinds == ["PROGRAM", "CODE", "CODE", "CONST", "IO", "DEBUG", "ATTRS"]
    assert [s.index for s in header.sections if s.kind == binary.CODE] == [0, 1]


def test_opcodes_follow_the_instruction_tuple():
    body = binary._Writer()
    barrier = hw.BarrierOp(engine="vector")
    binary._encode_instruction(body, barrier)
    assert body.out[0] == hw.INSTRUCTIONS.index(hw.BarrierOp)


def test_sem_signal_peer_is_the_last_field_of_its_record():
    """peer was appended to hw.sem_signal's FIELDS: presence bit 3, a signed varint payload."""
    body = binary._Writer()
    binary._encode_instruction(body, hw.SemSignalOp(sem=2, engine="dma1", peer=1))
    opcode = hw.INSTRUCTIONS.index(hw.SemSignalOp)
    assert bytes(body.out) == bytes([opcode, 0b1011, 2 * 2, hw.ENGINE_NAMES.index("dma1"), 2 * 1])
    program = hw.ProgramOp(
        "p", "tiny", [hw.CoreOp(0, [hw.SemSignalOp(sem=2, engine="dma1", peer=1), hw.EndOp()])]
    )
    decoded = binary.disassemble(binary.assemble(program, TINY), TINY)
    assert "hw.sem_signal 2, engine=dma1, peer=1\n" in print_mlir(decoded)


ISA_BEFORE_PEER = bytes.fromhex("38fb2ec927fa7009")
"""The opcode table before hw.sem_signal had its `peer` field (and hw.vcast its `zero`)."""
ISA_BEFORE_ZERO = bytes.fromhex("3d9fbc6f8dc2bef9")
"""The opcode table before hw.vcast had its `zero` field."""


def test_earlier_isas_are_this_one_without_the_appended_fields(monkeypatch: pytest.MonkeyPatch):
    assert {ISA_BEFORE_PEER, ISA_BEFORE_ZERO} <= set(binary.EARLIER_ISAS)
    assert hw.VCastOp.FIELDS[-1].name == "zero"
    assert hw.SemSignalOp.FIELDS[-1].name == "peer"
    monkeypatch.setattr(hw.VCastOp, "FIELDS", hw.VCastOp.FIELDS[:-1])
    assert binary.isa_fingerprint() == ISA_BEFORE_ZERO
    monkeypatch.setattr(hw.SemSignalOp, "FIELDS", hw.SemSignalOp.FIELDS[:-1])
    assert binary.isa_fingerprint() == ISA_BEFORE_PEER


SIGNALS = """
hw.program @signals target "tiny" {
  hw.core 0 {
    hw.sem_signal 1, engine=dma0, count=2
    hw.sem_wait 1, engine=vector, count=2
    hw.end
  }
}
"""


def test_binaries_of_an_earlier_isa_still_load():
    """A program without a peer signal encodes the same under the earlier opcode table, so its
    old binary (these bytes under the old ISA fingerprint) decodes to the same IR."""
    module = parse_mlir(SIGNALS)
    for earlier in (ISA_BEFORE_PEER, ISA_BEFORE_ZERO):
        old = bytearray(binary.assemble(module, TINY))
        old[24:32] = earlier
        assert print_mlir(binary.disassemble(reseal(old), TINY)) == print_mlir(module)


# --------------------------------------------------------------------------- refusing to assemble


def test_assemble_refuses_a_program_that_exceeds_the_target(tmp_path: Path):
    """A program for a TOML target is not checked by the verifier, but assembling checks it."""
    copy = tmp_path / "tiny_copy.toml"
    copy.write_text((Path(binary.__file__).parent / "targets" / "tiny.toml").read_text())
    text = SMALL.replace("row_bytes=16", "row_bytes=16, queue=5").replace('"tiny"', f'"{copy}"')
    with pytest.raises(AitcError) as caught:
        binary.assemble(parse_mlir(text), load_target(copy))
    assert "queue=5 does not exist" in str(caught.value)


def test_assemble_refuses_another_targets_program():
    with pytest.raises(AitcError, match="compiled for target 'tiny', not 'edge'"):
        binary.assemble(parse_mlir(SMALL), load_target("edge"))


def test_assemble_needs_exactly_one_program():
    with pytest.raises(AitcError, match=r"no hw\.program"):
        binary.assemble(ModuleOp([]), TINY)
    two = parse_mlir(SMALL + SMALL.replace("@small", "@other"))
    with pytest.raises(AitcError, match=r"exactly one hw\.program"):
        binary.assemble(two, TINY)


def test_assemble_refuses_what_it_cannot_reproduce():
    text = SMALL.replace("row_bytes=16", "rows=1").replace(
        "hw.dma_in sram[0x0 + 0x10*i0] <- dram[0x0], rows=1",
        '"hw.dma_in"() {dst = #hw.addr<sram[0x0]>, src = #hw.addr<dram[0x0]>, row_bytes = 16 : i32} '
        ": () -> ()",
    )
    with pytest.raises(AitcError, match="holds i32; the binary format holds i64"):
        binary.assemble(parse_mlir(text), TINY)


def test_assemble_refuses_loops_nested_deeper_than_a_binary_may_hold():
    body: list = [hw.BarrierOp(engine="vector")]
    for _ in range(binary.MAX_LOOP_DEPTH + 1):
        body = [hw.LoopOp(1, body)]
    program = hw.ProgramOp("deep", "tiny", [hw.CoreOp(0, [*body, hw.EndOp()])])
    with pytest.raises(AitcError, match="nest deeper than 64"):
        binary.assemble(program, TINY)


def test_save_leaves_no_file_on_error(tmp_path: Path):
    path = tmp_path / "bad.aitb"
    with pytest.raises(AitcError):
        binary.save_program(path, parse_mlir(SMALL), load_target("edge"))
    assert not list(tmp_path.iterdir())
    with pytest.raises(AitcError, match="does not exist"):
        binary.save_program(tmp_path / "missing" / "x.aitb", parse_mlir(SMALL), TINY)


# --------------------------------------------------------------------------- refusing to load


def test_empty():
    assert "empty file" in refused(b"")


def test_wrong_magic(data: bytes):
    assert "not an aitc binary" in refused(b"\x7fELF" + data[4:])
    assert "not an aitc binary" in refused(ROUNDTRIP_MLIR.read_bytes())


def test_future_version(data: bytes):
    future = data[:4] + struct.pack("<H", binary.FORMAT_VERSION + 1) + data[6:]
    assert f"newer aitc (format version {binary.FORMAT_VERSION + 1}" in refused(future)
    assert "unsupported format version 0" in refused(data[:4] + b"\0\0" + data[6:])


def test_wrong_target(data: bytes):
    assert "assembled for target 'tiny', not 'edge'" in refused(data, load_target("edge"))


def test_same_name_different_description(data: bytes, tmp_path: Path):
    preset = Path(binary.__file__).parent / "targets" / "tiny.toml"
    changed = tmp_path / "tiny.toml"
    changed.write_text(preset.read_text().replace("clock_mhz = 100", "clock_mhz = 200"))
    assert "different description of target 'tiny'" in refused(data, load_target(changed))


def test_other_instruction_set(data: bytes):
    other = bytearray(data)
    other[24:32] = bytes(8)
    assert "different hw instruction set" in refused(reseal(other))


def test_trailing_bytes(data: bytes):
    assert "unexpected bytes after the end" in refused(data + b"\0")


def test_truncation_at_every_offset(data: bytes):
    for cut in range(len(data)):
        message = refused(data[:cut])
        assert any(word in message for word in ("empty", "truncated", "not an aitc binary")), (cut, message)


def test_truncation_at_section_boundaries(data: bytes):
    header = binary.read_header(data)
    for section in header.sections:
        for cut in (section.offset - 1, section.offset, section.offset + section.size - 1):
            assert "truncated" in refused(data[:cut])


def test_a_flipped_bit_anywhere_is_caught(data: bytes):
    rng = random.Random(0)
    for position in range(len(data)):
        damaged = bytearray(data)
        damaged[position] ^= 1 << rng.randrange(8)
        refused(bytes(damaged))


def test_damage_behind_a_valid_checksum_never_crashes(data: bytes):
    """Bit flips and byte overwrites that the checksum would not catch (it is recomputed): the
    decoder either refuses with a BinaryError or yields IR that verifies."""
    rng = random.Random(1)
    start = binary.read_header(data).sections[0].offset - 60
    messages = []
    for _ in range(1500):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            position = rng.randrange(start, len(data) - binary.CHECKSUM_BYTES)
            damaged[position] = (
                rng.randrange(256) if rng.random() < 0.3 else damaged[position] ^ 1 << rng.randrange(8)
            )
        try:
            module = binary.disassemble(reseal(damaged))
        except binary.BinaryError as error:
            messages.append(str(error))
        else:
            module.verify()
    assert all("\n" not in m for m in messages)
    assert len(messages) > 1000, "most damage is refused"


def test_crafted_code_is_refused():
    assert "unknown opcode 0xee" in refused(code_binary(b"\xee"))
    assert "ends early" in refused(code_binary(bytes([hw.INSTRUCTIONS.index(hw.BarrierOp)])))
    assert "sets fields it does not have" in refused(
        code_binary(bytes([hw.INSTRUCTIONS.index(hw.BarrierOp), 0x7F]))
    )
    assert "over-long number" in refused(code_binary(bytes([binary.OP_LOOP]) + b"\xff" * 12))
    nested = _nested_loops(binary.MAX_LOOP_DEPTH + 1)
    assert "deeper than" in refused(code_binary(nested))
    assert "decodes to invalid IR" in refused(code_binary(bytes([binary.OP_END, binary.OP_END])))


def _nested_loops(depth: int) -> bytes:
    body = bytes([binary.OP_END])
    for _ in range(depth):
        w = binary._Writer()
        w.u8(binary.OP_LOOP)
        w.uv(1)
        w.uv(len(body))
        w.raw(body)
        body = bytes(w.out)
    return body


# --------------------------------------------------------------------------- command line


def test_cli_round_trip(tmp_path: Path, capsys):
    aitb, out = tmp_path / "p.aitb", tmp_path / "p.mlir"
    assert main(["asm", str(ROUNDTRIP_MLIR), "-o", str(aitb)]) == 0
    assert main(["disasm", str(aitb), "-o", str(out), "--target", "tiny"]) == 0
    assert out.read_text() == print_mlir(full_module())
    assert "wrote" in capsys.readouterr().out


def test_cli_default_output_name(tmp_path: Path):
    source = tmp_path / "small.mlir"
    source.write_text(SMALL)
    assert main(["asm", str(source)]) == 0
    assert (tmp_path / "small.aitb").is_file()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d[:100], "truncated"),
        (lambda d: b"", "empty file"),
        (lambda d: d[:40] + bytes([d[40] ^ 4]) + d[41:], "corrupted binary: checksum mismatch"),
        (lambda d: b"PK\x03\x04" + d[4:], "not an aitc binary"),
    ],
)
def test_cli_refuses_damaged_binaries(tmp_path: Path, capsys, data: bytes, damage, message: str):
    path = tmp_path / "bad.aitb"
    path.write_bytes(damage(data))
    assert main(["disasm", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}: error: ")
    assert message in err
    assert "Traceback" not in err


def test_cli_wrong_target_and_missing_file(tmp_path: Path, capsys, data: bytes):
    path = tmp_path / "p.aitb"
    path.write_bytes(data)
    assert main(["disasm", str(path), "--target", "server"]) == 1
    assert "assembled for target 'tiny', not 'server'" in capsys.readouterr().err
    assert main(["disasm", str(tmp_path / "nope.aitb")]) == 1
    assert "no such file" in capsys.readouterr().err
    assert main(["disasm", str(tmp_path)]) == 1
    assert "is a folder" in capsys.readouterr().err


def test_cli_asm_of_an_invalid_program(tmp_path: Path, capsys):
    source = tmp_path / "big.mlir"
    source.write_text(SMALL.replace("row_bytes=16", "row_bytes=99999"))
    assert main(["asm", str(source), "-o", str(tmp_path / "big.aitb")]) == 1
    err = capsys.readouterr().err
    assert "beyond the 16384 bytes of SRAM" in err
    assert not (tmp_path / "big.aitb").exists()


def test_cli_process_exits_1_without_traceback(tmp_path: Path, data: bytes):
    path = tmp_path / "cut.aitb"
    path.write_bytes(data[: len(data) // 2])
    aitc = Path(sys.executable).parent / "aitc"
    result = subprocess.run([str(aitc), "disasm", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert "truncated" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
