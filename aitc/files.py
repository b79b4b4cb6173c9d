"""File I/O with the error policy: atomic writes, friendly read errors."""

from __future__ import annotations

import io
import os
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from aitc.diagnostics import AitcError


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Writes `data` to a temporary file beside `path`, then renames it: never a partial file."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise AitcError(f"cannot write {target}: folder {folder} does not exist")
    if target.is_dir():
        raise AitcError(f"cannot write {target}: it is a folder")
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.")
    except OSError as error:
        raise AitcError(f"cannot write {target}: {error.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file normal permissions
        os.replace(tmp, target)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        raise AitcError(f"cannot write {target}: {error.strerror}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of `path`; a missing, folder or unreadable path is an AitcError."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise AitcError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise AitcError(f"{path} is a folder, not a file") from None
    except OSError as error:
        raise AitcError(f"cannot read {path}: {error.strerror}") from None


def read_text(path: str | os.PathLike) -> str:
    """The text of `path` (an .mlir file); a missing, binary or unreadable file is an AitcError."""
    try:
        return read_bytes(path).decode()
    except UnicodeDecodeError:
        raise AitcError(f"{path} is not a text (.mlir) file") from None


def load_arrays(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Tensors from an .npz (names = model input names) or a single .npy (named after the file)."""
    path = Path(path)
    if not path.is_file():
        raise AitcError(f"no such file: {path}")
    try:
        loaded = np.load(path, allow_pickle=False)
        if isinstance(loaded, np.ndarray):
            arrays = {path.stem: loaded}
        else:
            with loaded:
                arrays = {name: loaded[name] for name in loaded.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError, KeyError) as error:
        raise AitcError(f"{path} is not a readable .npz/.npy file ({error})") from None
    problems = [
        f"{path}: entry '{name}' is not a numeric array ({_describe(value)})"
        for name, value in arrays.items()
        if not isinstance(value, np.ndarray) or value.dtype.kind not in "biuf"
    ]
    if problems:
        raise AitcError(problems, hint="save inputs with numpy.savez(PATH, name=array, ...)")
    return arrays


def _describe(value: object) -> str:
    if isinstance(value, np.ndarray):
        return f"dtype {value.dtype}"
    return f"{type(value).__name__}; the member is not in .npy format"


def save_arrays(path: str | os.PathLike, arrays: Mapping[str, np.ndarray]) -> None:
    """Writes `arrays` as an .npz (keys = names), atomically."""
    buffer = io.BytesIO()
    np.savez(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
    write_atomic(path, buffer.getvalue())
