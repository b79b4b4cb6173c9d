"""Weights as bytes, never Python lists.

Small constants are inline `dense<...>` attributes (readable in the IR). Large ones are
`dense_resource<key>` attributes whose bytes live in the module's `dialect_resources` section
at the end of the `.mlir` file, exactly as upstream MLIR prints them, so the ops stay readable
and upstream `mlir-opt` parses the file.

xDSL keeps resource blobs in one store per process (the builtin dialect's
`OpAsmDialectInterface`). aitc makes that store content-addressed: resource keys carry a
digest of their bytes, so two modules in one process never fight over a key, and parsing a
file twice is harmless. A key that is reused for different bytes is an error.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects.builtin import (
    Builtin,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation
from xdsl.parser import Parser
from xdsl.printer import Printer

from aitc import xdsl_fixes
from aitc.types import element_type_of, numpy_dtype

xdsl_fixes.apply()  # lossless dense<...> text wherever aitc builds constants (aitc.ir applies it too)

INLINE_LIMIT_BYTES = 64
"""Constants up to this many bytes are printed inline as `dense<...>`."""

_ALIGNMENT_HEADER = (16).to_bytes(4, "little")


class ContentAddressedResources(OpAsmDialectInterface):
    """The builtin resource store, with keys that are never silently renamed."""

    def __init__(self, blobs: dict[str, str]) -> None:
        super().__init__()
        # xDSL 0.74's OpAsmDialectInterface keeps its blobs in `_blob_storage` with no public API
        # to hand them over or check a key's bytes (upstream gap): this subclass takes over the
        # dict of the interface it replaces and uses `_blob_storage` directly below.
        self._blob_storage = blobs
        self.arrays: dict[str, np.ndarray] = {}
        self.decoded: dict[str, bytes] = {}
        """Blob bytes decoded at parse, until `_resource_array` turns them into an array."""

    def declare_resource(self, key: str) -> str:
        self._blob_storage.setdefault(key, "")
        return key

    def parse_resource(self, key: str, val: str):
        if not val.startswith("0x"):
            raise ValueError(f"blob must be a hex string starting with 0x, got {val[:16]!r}")
        val = "0x" + val[2:].lower()  # upstream mlir-opt prints upper-case hex for the same bytes
        try:
            data = bytes.fromhex(val[2:])
        except ValueError:
            raise ValueError(f"resource '{key}': its blob is not hex digits (the file is damaged)") from None
        if not _digest_matches(key, data):
            raise ValueError(
                f"resource '{key}': its bytes do not match the digest in its name (the file is damaged)"
            )
        self._keep(key, val)
        if key not in self.arrays:  # a file parsed again: its array is already made
            self.decoded[key] = data

    def store(self, key: str, data: bytes) -> None:
        self._keep(key, "0x" + (_ALIGNMENT_HEADER + data).hex())

    def _keep(self, key: str, blob: str) -> None:
        old = self._blob_storage.get(key)
        if old and old != blob:
            raise ValueError(f"resource '{key}' already holds different bytes in this process")
        self._blob_storage[key] = blob


_DIGEST_SUFFIX = re.compile(r"_([0-9a-f]{12})")
"""The end of a key aitc made (`_resource_key`): the blake2b digest of the blob's data."""


def _digest_matches(key: str, blob: bytes) -> bool:
    """Whether the decoded blob of a key aitc made is its data: the digest in the key is that of
    the bytes after the alignment header (a flipped or lost byte changes it). Keys of other tools
    are not checked."""
    digest = _DIGEST_SUFFIX.fullmatch(key[-13:])
    return not digest or len(blob) < 4 or _digest(blob[4:]) == digest.group(1)


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=6).hexdigest()


def _install_store() -> ContentAddressedResources:
    # xDSL 0.74 has no public API to replace a dialect's interface (only `get_interface`) nor to
    # read an interface's blob store (upstream gap): swap the entry in `Dialect._interfaces`.
    interfaces = Builtin._interfaces
    for index, interface in enumerate(interfaces):
        if isinstance(interface, ContentAddressedResources):
            return interface
        if isinstance(interface, OpAsmDialectInterface):
            store = ContentAddressedResources(interface._blob_storage)
            interfaces[index] = store
            return store
    raise RuntimeError("xdsl's builtin dialect has no OpAsmDialectInterface")


RESOURCES = _install_store()


def _resource_key(name_hint: str, data: bytes) -> str:
    clean = re.sub(r"[^A-Za-z0-9_]", "_", name_hint).strip("_")[:48] or "w"
    if not (clean[0].isalpha() or clean[0] == "_"):
        clean = "w_" + clean
    return f"{clean}_{_digest(data)}"


def array_to_attr(array: np.ndarray, name_hint: str = "w") -> DenseIntOrFPElementsAttr | DenseResourceAttr:
    """A typed elements attribute holding `array`: inline when small, a resource otherwise."""
    array = np.asarray(array)
    if not array.flags.c_contiguous:
        array = array.copy(order="C")
    type_ = TensorType(element_type_of(array.dtype), list(array.shape))
    data = array.tobytes()
    if len(data) <= INLINE_LIMIT_BYTES and array.dtype != np.float16:
        return DenseIntOrFPElementsAttr(type_, BytesAttr(data))
    key = _resource_key(name_hint, data)
    RESOURCES.store(key, data)
    RESOURCES.arrays[key] = array
    return DenseResourceAttr.from_params(key, type_)


def attr_to_array(attr: Attribute) -> np.ndarray:
    """The numpy array (read-only) that a `dense` or `dense_resource` attribute holds."""
    if isinstance(attr, DenseIntOrFPElementsAttr):
        array = np.frombuffer(attr.data.data, dtype=numpy_dtype(attr.get_element_type()))
        return array.reshape(attr.get_shape())
    if isinstance(attr, DenseResourceAttr):
        return _resource_array(attr)
    raise TypeError(f"not an elements attribute: {attr}")


def _resource_array(attr: DenseResourceAttr) -> np.ndarray:
    key = attr.resource_handle.data
    type_ = attr.get_type()
    assert isinstance(type_, TensorType)
    cached = RESOURCES.arrays.get(key)
    if cached is not None:
        return cached
    raw = _blob_bytes(key)[4:]
    dtype = numpy_dtype(type_.get_element_type())
    count = int(np.prod(type_.get_shape(), dtype=np.int64))
    if len(raw) != count * dtype.itemsize:
        raise ValueError(
            f"dense_resource<{key}> holds {len(raw)} bytes, but {type_} needs {count * dtype.itemsize}"
        )
    array = np.frombuffer(raw, dtype=dtype).reshape(type_.get_shape())
    RESOURCES.arrays[key] = array
    RESOURCES.decoded.pop(key, None)  # the array holds the bytes now
    return array


def _blob_bytes(key: str) -> bytes:
    """The bytes of resource `key` with their alignment header: decoded at parse, or from the
    hex of a blob stored otherwise."""
    decoded = RESOURCES.decoded.get(key)
    if decoded is not None:
        return decoded
    blob = RESOURCES.lookup(key)
    if not blob:
        raise MissingBlob(f"dense_resource<{key}> has no bytes: the file lacks its blob")
    try:
        return bytes.fromhex(blob[2:])
    except ValueError:
        raise ValueError(f"dense_resource<{key}>: its blob is not hex digits (the file is damaged)") from None


class MissingBlob(ValueError):
    """A `dense_resource` whose bytes the file does not hold (upstream MLIR may elide them)."""


def resource_problem(attr: DenseResourceAttr, require_bytes: bool = True) -> str | None:
    """Why the blob of `attr` cannot be its value (missing, not hex, not the size its type
    needs), or None. Decoding caches the array, so checking costs nothing later. A missing blob
    is a problem only when `require_bytes`: a file may elide blobs, as upstream MLIR does, until
    something needs the values."""
    try:
        _resource_array(attr)
    except MissingBlob as error:
        return str(error) if require_bytes else None
    except (ValueError, TypeError) as error:
        return str(error)
    return None


def print_constant_body(printer: Printer, op: Operation) -> None:
    """` <value> {other attrs}`: the custom syntax of constant ops (graph.constant, tile.const)."""
    printer.print_string(" ")
    printer.print_attribute(op.attributes["value"])
    printer.print_op_attributes(op.attributes, reserved_attr_names=("value",))


def parse_constant_body(
    parser: Parser, op_name: str
) -> tuple[DenseIntOrFPElementsAttr | DenseResourceAttr, dict[str, Attribute]]:
    """The value (a `dense` or `dense_resource` attribute) and other attributes of a constant op."""
    value = parser.parse_attribute()
    if not isinstance(value, DenseIntOrFPElementsAttr | DenseResourceAttr):
        parser.raise_error(f"{op_name} expects a dense<...> or dense_resource<...> value")
    return value, parser.parse_optional_attr_dict()
