"""File I/O with the error policy: outputs checked before any work and written all or none,
inputs read with friendly errors.

Output rules (every command, every output flag):

- a path ending in `/`, or naming a folder, is a folder: refused (name a file inside it);
- the folder must exist; a file name longer than the file system allows is refused;
- an output that is one of the command's inputs (same file, by any path) is refused;
- a symlink is written through: its target is replaced, the link stays;
- a character device or a FIFO (`-o /dev/null`, `-o /dev/stdout`) is written through, never
  replaced by a regular file; other special files are refused;
- a regular file is written to a temporary file beside it (a short name of its own, so legal
  long names stay legal) and renamed into place, so a reader never sees a partial file and a
  failed run leaves none; new files get the umask's mode, replaced files keep theirs.

`check_outputs` applies the rules before a command starts its work; `write_outputs` writes
every output of a command at the end, all or none.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aitc.diagnostics import AitcError

PathLike = str | os.PathLike


# --------------------------------------------------------------------------- outputs


@dataclass(frozen=True)
class OutputFile:
    """Where an output really goes: `real` is `path` with symlinks followed; `special` when it
    is a character device or FIFO (written through, not replaced)."""

    path: str
    real: Path
    special: bool


def check_outputs(
    outputs: Iterable[PathLike | None], inputs: Iterable[PathLike | None] = ()
) -> list[OutputFile]:
    """Where each output goes, in order (`None` entries skipped); raises one AitcError listing
    every output path that the rules refuse (see the module docstring), including two outputs
    that are the same file."""
    problems = []
    resolved = []
    seen: dict[Path, str] = {}
    sources = [str(p) for p in inputs if p is not None]
    for path in (str(p) for p in outputs if p is not None):
        try:
            output = resolve_output(path, sources)
        except AitcError as error:
            problems += error.problems
            continue
        resolved.append(output)
        if output.real in seen and not output.special:
            problems.append(f"cannot write {path}: it is the same file as the output {seen[output.real]}")
        seen.setdefault(output.real, path)
    if problems:
        raise AitcError(problems)
    return resolved


def resolve_output(path: PathLike, inputs: Iterable[PathLike] = ()) -> OutputFile:
    """The checked destination of output `path` (AitcError when the rules refuse it)."""
    path = str(path)
    problem = _path_problem(path)
    if problem:
        raise AitcError(f"cannot write {path}: {problem}")
    real = Path(os.path.realpath(path))
    mode = _mode(real)
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        raise AitcError(f"cannot write {path}: it is {_kind(mode)}, not a file")
    for source in inputs:
        if mode is not None and _same_file(real, source):
            raise AitcError(
                f"cannot write {path}: it is the input {source}; choose another output name",
            )
    special = mode is not None and not stat.S_ISREG(mode)
    return OutputFile(path, real, special)


def _path_problem(path: str) -> str | None:
    """Why `path` cannot name an output file, from its spelling and its folder (or None)."""
    if not path:
        return "the output path is empty"
    if os.path.isdir(path):
        return "it is a folder; name a file inside it"
    if path.endswith(("/", os.sep)):
        return "a trailing '/' names a folder, and there is none; name a file"
    name = len(os.fsencode(os.path.basename(path)))
    name_max = _name_max(os.path.dirname(path) or ".")
    if name > name_max:
        return f"the file name is {name} bytes long; the file system allows {name_max}"
    try:
        os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "it is a symlink loop"
        if error.errno != errno.ENOENT:
            return _folder_problem(path, error)
    return _folder_problem(os.path.realpath(path) if os.path.islink(path) else path, None)


def _folder_problem(path: str, error: OSError | None) -> str | None:
    folder = os.path.dirname(path) or "."
    if not os.path.exists(folder):
        return f"folder {folder} does not exist"
    if not os.path.isdir(folder):
        return f"{folder} is not a folder"
    if error is not None:
        return error.strerror
    if not os.access(folder, os.W_OK) and not os.path.exists(path):
        return f"folder {folder} is not writable"
    return None


def _name_max(folder: str) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _mode(path: Path) -> int | None:
    """The st_mode of `path` (symlinks followed), None when it does not exist."""
    try:
        return path.stat().st_mode
    except OSError:
        return None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _same_file(real: Path, source: PathLike) -> bool:
    try:
        return os.path.samefile(real, source)
    except OSError:
        return False


def write_outputs(contents: Mapping[PathLike, str | bytes], inputs: Iterable[PathLike | None] = ()) -> None:
    """Writes every `path -> data` of a command, all or none: the paths are checked again
    (see `check_outputs`), regular files are staged as temporary files, special files written
    through, and only then are the staged files renamed into place."""
    resolved = check_outputs(contents, inputs)
    outputs = [(output, _as_bytes(data)) for output, data in zip(resolved, contents.values(), strict=True)]
    staged: list[tuple[str, OutputFile]] = []
    current = outputs[0][0] if outputs else None
    try:
        for current, data in outputs:
            if not current.special:
                staged.append((_stage(current, data), current))
        for current, data in outputs:
            if current.special:
                _write_through(current, data)
        for temporary, current in staged:
            os.replace(temporary, current.real)
    except OSError as error:
        where = current.path if current is not None else "output"
        raise AitcError(f"cannot write {where}: {error.strerror or error}") from None
    finally:
        for temporary, _ in staged:
            Path(temporary).unlink(missing_ok=True)


def write_atomic(path: PathLike, data: str | bytes) -> None:
    """Writes one output file by the rules of the module docstring (never a partial file)."""
    write_outputs({path: data})


def _as_bytes(data: str | bytes) -> bytes:
    return data.encode() if isinstance(data, str) else data


def _stage(output: OutputFile, data: bytes) -> str:
    """A temporary file beside `output.real` holding `data`, with the mode the output will have."""
    existing = _mode(output.real)
    mode = stat.S_IMODE(existing) if existing is not None else 0o666 & ~_umask()
    fd, temporary = tempfile.mkstemp(dir=output.real.parent, prefix=".aitc-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, mode)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return temporary


def _write_through(output: OutputFile, data: bytes) -> None:
    """Writes into a character device or FIFO (a FIFO nobody reads is an error, not a hang)."""
    try:
        fd = os.open(output.real, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as error:
        if error.errno == errno.ENXIO:
            raise AitcError(f"cannot write {output.path}: no process is reading this FIFO") from None
        raise
    os.set_blocking(fd, True)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# --------------------------------------------------------------------------- inputs


def read_bytes(path: PathLike) -> bytes:
    """The bytes of input `path`; a missing, folder, device or unreadable path is an AitcError."""
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            raise AitcError(f"{path} is a folder, not a file")
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise AitcError(f"{path} is {_kind(mode)}, not a file")
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise AitcError(f"no such file: {path}") from None
    except OSError as error:
        raise AitcError(f"cannot read {path}: {error.strerror}") from None


def read_text(path: PathLike) -> str:
    """The text of `path` (an .mlir file); a missing, binary or unreadable file is an AitcError."""
    try:
        return read_bytes(path).decode()
    except UnicodeDecodeError as error:
        raise AitcError(f"{path} is not a UTF-8 text file (byte {error.start} is not UTF-8)") from None


# --------------------------------------------------------------------------- arrays

_NPZ_HINT = "save inputs with numpy.savez(PATH, name=array, ...)"


def load_arrays(path: PathLike) -> dict[str, np.ndarray]:
    """Tensors from an .npz (names = model input names) or a single .npy (named after the file).

    Every member's header is checked against the bytes it holds before anything is allocated,
    and only numeric arrays are read (never pickled objects)."""
    data = read_bytes(path)
    if data.startswith(b"PK"):
        arrays = _read_npz(str(path), data)
    elif data.startswith(b"\x93NUMPY"):
        arrays = {Path(path).stem: _read_npy(io.BytesIO(data), len(data), str(path))}
    else:
        raise AitcError(f"{path} is not an .npz or .npy file", hint=_NPZ_HINT)
    return arrays


def _read_npz(where: str, data: bytes) -> dict[str, np.ndarray]:
    arrays = {}
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                name = info.filename.removesuffix(".npy")
                with archive.open(info) as member:
                    arrays[name] = _read_npy(member, info.file_size, f"{where}: entry '{name}'")
    except AitcError:
        raise
    except Exception as error:  # BadZipFile, EOFError, OSError, zlib.error, NotImplementedError, ...
        raise AitcError(f"{where} is a damaged .npz file ({type(error).__name__})", hint=_NPZ_HINT) from None
    return arrays


def _read_npy(stream, size: int, where: str) -> np.ndarray:
    """One .npy array from `stream` holding `size` bytes, its header checked first."""
    try:
        version = np.lib.format.read_magic(stream)
        read_header = np.lib.format.read_array_header_1_0
        if version != (1, 0):
            read_header = np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read_header(stream)
    except (ValueError, TypeError, SyntaxError, EOFError) as error:
        raise AitcError(f"{where} is not a valid .npy array ({_first_line(error)})", hint=_NPZ_HINT) from None
    if dtype.kind not in "biuf":
        raise AitcError(
            f"{where} holds {_dtype_text(dtype)} values; aitc reads numeric arrays only", hint=_NPZ_HINT
        )
    expected = dtype.itemsize * _product(shape)
    held = size - stream.tell()
    if expected != held:
        raise AitcError(
            f"{where} declares shape {tuple(shape)} of {dtype} ({expected:,} bytes) but holds {held:,} bytes",
            hint="the file is damaged or cut short",
        )
    flat = np.frombuffer(stream.read(expected), dtype=dtype).astype(dtype.newbyteorder("="))
    return flat.reshape(shape, order="F" if fortran else "C")


def _product(shape) -> int:
    total = 1
    for dim in shape:
        total *= int(dim)
    return total


def _dtype_text(dtype: np.dtype) -> str:
    return "Python object (pickled)" if dtype.hasobject else f"{dtype} ({dtype.kind})"


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0][:120] if lines else type(error).__name__


def arrays_to_npz(arrays: Mapping[str, np.ndarray]) -> bytes:
    """The bytes of an .npz holding `arrays` (keys = names)."""
    buffer = io.BytesIO()
    np.savez(buffer, **{k: np.asarray(v) for k, v in arrays.items()})  # pyright: ignore[reportArgumentType]  -- numpy's stub: a **dict of arrays could bind savez's allow_pickle: bool
    return buffer.getvalue()
