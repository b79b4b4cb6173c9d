"""Input files read by `aitc` (`aitc.files.load_arrays`, `read_text`): every bad file is a short
diagnostic naming it, never a traceback, a huge allocation or numpy's advice about pickles."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from aitc import files
from aitc.diagnostics import AitcError
from aitc.tools.aitc_main import main

EXAMPLE_HW = Path(__file__).parents[3] / "examples" / "hw" / "tiled_matmul.mlir"


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def _npz(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(f"{name}.npy", data)
    return buffer.getvalue()


def _huge_header() -> bytes:
    """An .npy member whose header declares shape (2**40,) but holds 16 bytes."""
    buffer = io.BytesIO()
    header = {"descr": "<f4", "fortran_order": False, "shape": (1 << 40,)}
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue() + bytes(16)


BAD_FILES = {
    "random bytes": (bytes(range(7, 71)), "is not an .npz or .npy file"),
    "empty": (b"", "is not an .npz or .npy file"),
    "truncated zip": (_npz({"a": _npy(np.ones(3, np.float32))})[:40], "is a damaged .npz file"),
    "huge header": (_npz({"a": _huge_header()}), "declares shape (1099511627776,)"),
    "pickled objects": (_npz({"a": _npy(np.array([{"x": 1}], dtype=object))}), "Python object (pickled)"),
    "strings": (_npz({"a": _npy(np.array(["x"]))}), "aitc reads numeric arrays only"),
    "short data": (_npz({"a": _npy(np.ones(8, np.float32))[:-4]}), "but holds 28 bytes"),
    "bad header": (_npz({"a": b"\x93NUMPY\x01\x00\x10\x00{'descr': <f4}   \n"}), "is not a valid .npy array"),
}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_a_bad_inputs_file_is_a_diagnostic(tmp_path, kind):
    data, message = BAD_FILES[kind]
    path = tmp_path / "in.npz"
    path.write_bytes(data)
    with pytest.raises(AitcError) as error:
        files.load_arrays(path)
    text = error.value.render()
    assert message in text
    assert "allow_pickle" not in text
    assert "pickle" not in text.replace("(pickled)", "")


def test_the_huge_header_fixture_really_declares_2_to_the_40(tmp_path):
    header = _huge_header()
    version = np.lib.format.read_magic(io.BytesIO(header))
    assert version == (1, 0)
    assert np.lib.format.read_array_header_1_0(io.BytesIO(header[8:]))[0] == (1 << 40,)


def test_a_folder_or_device_as_inputs_is_named_as_such(tmp_path):
    with pytest.raises(AitcError, match="is a folder, not a file"):
        files.load_arrays(tmp_path)
    with pytest.raises(AitcError, match="no such file"):
        files.load_arrays(tmp_path / "missing.npz")
    with pytest.raises(AitcError, match="is a special file, not a file"):
        files.load_arrays("/dev/zero")  # would read forever


def test_good_arrays_round_trip_with_byte_order_and_layout(tmp_path):
    arrays = {
        "big_endian": np.arange(6, dtype=">f4").reshape(2, 3),
        "fortran": np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3)),
        "scalar": np.array(3.5, np.float32),
        "empty": np.zeros((0, 4), np.float32),
    }
    np.savez(tmp_path / "in.npz", **arrays)
    loaded = files.load_arrays(tmp_path / "in.npz")
    for name, array in arrays.items():
        assert loaded[name].dtype.isnative
        np.testing.assert_array_equal(loaded[name], array)
    np.save(tmp_path / "x.npy", arrays["fortran"])
    np.testing.assert_array_equal(files.load_arrays(tmp_path / "x.npy")["x"], arrays["fortran"])


def test_nan_inputs_run_without_numpy_warnings(capsys, tmp_path):
    program = tmp_path / "p.mlir"
    program.write_text(EXAMPLE_HW.read_text())
    nan = np.full((16, 16), np.nan, np.float32)
    np.savez(tmp_path / "in.npz", a=nan, b=np.full((16, 16), np.inf, np.float32))
    assert main(["run", str(program), "--inputs", str(tmp_path / "in.npz")]) == 0
    assert "Warning" not in capsys.readouterr().err


def test_a_target_file_that_is_not_utf8_is_a_diagnostic(capsys, tmp_path):
    target = tmp_path / "t.toml"
    target.write_bytes(b'name = "caf\xe9"\n')
    assert main(["target", "show", str(target)]) == 1
    err = capsys.readouterr().err
    assert "is not a UTF-8 text file" in err
    assert "Traceback" not in err


def _damage_first_blob(text: str, how: str) -> str:
    """`text` with the first dialect_resources blob made non-hex, or cut by two bytes (under
    its own key, whose digest then disagrees, or renamed to a key of another tool)."""
    start = text.index('"0x', text.index("dialect_resources"))
    if how == "not hex":
        return text[: start + 12] + "zz" + text[start + 14 :]
    text = text[: start + 12] + text[start + 16 :]
    if how == "cut short, foreign key":
        key = text[text.rindex(" ", 0, start - 2) + 1 : start - 2]
        text = text.replace(key, "weights0")
    return text


DAMAGE = {
    "not hex": "its blob is not hex digits",
    "cut short": "its bytes do not match the digest in its name (the file is damaged)",
    "cut short, foreign key": "dense_resource<weights0> holds",
}


@pytest.mark.parametrize("how", sorted(DAMAGE))
@pytest.mark.parametrize("command", ["compile", "asm", "run"])
def test_a_damaged_weight_blob_is_a_located_diagnostic(capsys, tmp_path, command, how):
    """Once a traceback in `aitc compile X.mlir` and `aitc asm` (only `run` checked blobs)."""
    from aitc.testing import model_zoo

    model, _ = model_zoo.mlp(batch=2)
    onnx_path = tmp_path / "m.onnx"
    onnx_path.write_bytes(model_zoo.with_static_batch(model, 2).SerializeToString())
    level = "graph" if command == "compile" else "hw"
    good = tmp_path / "good.mlir"
    argv = ["compile", str(onnx_path), "--target", "tiny", "--cores", "1", "--emit", level, "-o", str(good)]
    assert main(argv) == 0
    bad = tmp_path / "bad.mlir"
    bad.write_text(_damage_first_blob(good.read_text(), how))
    capsys.readouterr()
    out = tmp_path / "out"
    argv = {
        "compile": ["compile", str(bad), "--target", "tiny", "-o", str(out)],
        "asm": ["asm", str(bad), "-o", str(out)],
        "run": ["run", str(bad), "--outputs", str(out)],
    }[command]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "bad.mlir:" in err
    assert DAMAGE[how] in err
    assert "Traceback" not in err
    assert "internal error" not in err
    assert not out.exists()
