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
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_text(path: str | os.PathLike) -> str:
    try:
        return Path(path).read_text()
    except FileNotFoundError:
        raise AitcError(f"no such file: {path}") from None
    except UnicodeDecodeError:
        raise AitcError(f"{path} is not a text (.mlir) file") from None
    except OSError as error:
        raise AitcError(f"cannot read {path}: {error.strerror}") from None


def load_arrays(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Tensors from an .npz (names = model input names) or a single .npy."""
    path = Path(path)
    if not path.is_file():
        raise AitcError(f"no such file: {path}")
    try:
        loaded = np.load(path, allow_pickle=False)
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as error:
        raise AitcError(f"{path} is not a readable .npz/.npy file ({error})") from None
    if isinstance(loaded, np.ndarray):
        return {path.stem: loaded}
    with loaded:
        return {name: loaded[name] for name in loaded.files}


def save_arrays(path: str | os.PathLike, arrays: Mapping[str, np.ndarray]) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
    write_atomic(path, buffer.getvalue())
