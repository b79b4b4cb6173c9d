"""Which bytes each instruction reads and writes: its footprint, one `Region` per operand.

A region is a 2-D strided byte range: `rows` rows of `row_bytes` bytes, `stride` bytes apart,
starting at the (dynamic) address of one address field. Everything but the start address is
fixed by the instruction's fields, so footprints are computed once per static instruction and
only shifted per executed instance. The simulator uses them for bounds and alignment checks and
for race detection, which needs them as sorted, disjoint byte intervals (`lo_off`, `hi_off`,
relative to the start): one interval per row, or a single one when rows touch or overlap.

`dma_gather` also reads table rows chosen by data (its indices); those intervals are computed
when it executes (`gather_intervals`), the static part (destination, index vector) is here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from aitc.dialects.hw import DTYPES

Fields = Mapping[str, Any]
"""Decoded instruction fields (see `InstructionOp.values`); addresses are not among them."""


class Region:
    """`rows` x `row_bytes` bytes at `field`'s address in `space`, rows `stride` bytes apart.

    `align` is the element size the address must be a multiple of; `peer` marks the
    destination of `dma_peer`, which lives in the SRAM of core `peer` instead of the issuing core;
    `gathered` marks a gather's table: its whole declared extent must lie in memory, but only the
    rows its indices select are read (see `gather_intervals`).
    """

    __slots__ = (
        "align", "extent", "field", "gathered", "hi_off", "key_offset", "lo_off", "peer", "row_bytes", "rows",
        "space", "stride", "write",
    )  # fmt: skip

    def __init__(
        self, field: str, space: str, rows: int, row_bytes: int, stride: int, *, write: bool = False,
        align: int = 1, peer: bool = False, gathered: bool = False,
    ):  # fmt: skip
        self.field, self.space, self.write, self.align, self.peer = field, space, write, align, peer
        self.gathered = gathered
        self.key_offset = {"dram": 0, "sram": 1, "acc": 2}[
            space
        ]  # memory key = offset + 2 * core (see Memories)
        self.rows, self.row_bytes = rows, row_bytes
        self.stride = stride if rows > 1 else row_bytes
        self.extent = (rows - 1) * self.stride + row_bytes
        if rows == 1 or self.stride <= row_bytes:
            self.lo_off = np.zeros(1, np.int64)
            self.hi_off = np.full(1, self.extent, np.int64)
        else:
            self.lo_off = np.arange(rows, dtype=np.int64) * self.stride
            self.hi_off = self.lo_off + row_bytes

    @property
    def overlapping_rows(self) -> bool:
        """True when rows share bytes (allowed for reads, meaningless for writes)."""
        return self.rows > 1 and self.stride < self.row_bytes

    def __repr__(self) -> str:
        kind = "write" if self.write else "read"
        return f"Region({kind} {self.field}: {self.space} {self.rows}x{self.row_bytes}B stride {self.stride})"


def _tile(
    field: str, spaces: Mapping[str, str], rows: int, cols: int, stride: int, size: int, write: bool = False
) -> Region:
    """A rows x cols tile of `size`-byte elements, `stride` elements (0 = cols) between rows."""
    return Region(field, spaces[field], rows, cols * size, (stride or cols) * size, write=write, align=size)


def _dma(mnemonic: str, f: Fields, spaces: Mapping[str, str]) -> tuple[Region, ...]:
    """DMA copies and gathers: dst and src rows (plus a gather's index vector)."""
    rows, width = f["rows"], f["row_bytes"]
    dst = Region(
        "dst", spaces["dst"], rows, width, f["dst_stride"] or width, write=True,
        peer=mnemonic == "dma_peer",
    )  # fmt: skip
    if mnemonic == "dma_gather":
        table = Region("src", spaces["src"], f["table_rows"], width, f["src_stride"] or width, gathered=True)
        return dst, Region("indices", spaces["indices"], 1, 4 * rows, 4 * rows, align=4), table
    src = Region("src", spaces["src"], rows, width, f["src_stride"] or width)
    return dst, src


def _matmul(mnemonic: str, f: Fields, spaces: Mapping[str, str]) -> tuple[Region, ...]:
    """lhs and rhs tiles (rhs n x k with transpose_rhs) and the 32-bit ACC tile."""
    m, k, n = f["m"], f["k"], f["n"]
    size = DTYPES[f["dtype"]]
    lhs = _tile("lhs", spaces, m, k, f["lhs_stride"], size)
    rhs_shape = (n, k) if f["transpose_rhs"] else (k, n)
    rhs = _tile("rhs", spaces, *rhs_shape, f["rhs_stride"], size)
    acc = _tile("acc", spaces, m, n, f["acc_stride"], 4, write=True)
    return lhs, rhs, acc


def _operand_b(f: Fields, spaces: Mapping[str, str], rows: int, cols: int, size: int) -> Region:
    """vbinary's `b`: a full tile, one row, one column (rows x 1) or one scalar."""
    mode, stride = f["broadcast"], f["b_stride"]
    if mode == "row":
        return _tile("b", spaces, 1, cols, 0, size)
    if mode == "col":
        return Region("b", spaces["b"], rows, size, (stride or 1) * size, align=size)
    if mode == "scalar":
        return _tile("b", spaces, 1, 1, 0, size)
    return _tile("b", spaces, rows, cols, stride, size)


def _vector(mnemonic: str, f: Fields, spaces: Mapping[str, str]) -> tuple[Region, ...]:
    """dst (vreduce: a dense column) and every source tile; vbinary's b by `broadcast`."""
    rows, cols = f["rows"], f["cols"]
    if mnemonic == "vcast":
        dst_size, src_size = DTYPES[f["to"]], DTYPES[f["from"]]
    else:
        dst_size = src_size = DTYPES[f["dtype"]]
    if mnemonic == "vreduce":
        dst = _tile("dst", spaces, rows, 1, 0, dst_size, write=True)
    else:
        dst = _tile("dst", spaces, rows, cols, f["dst_stride"], dst_size, write=True)
    sources = ("cond", "a", "b") if mnemonic == "vselect" else ("a",)
    regions = [dst, *(_tile(s, spaces, rows, cols, f["src_stride"], src_size) for s in sources)]
    if mnemonic == "vbinary":
        regions.append(_operand_b(f, spaces, rows, cols, src_size))
    return tuple(regions)


def _control(mnemonic: str, f: Fields, spaces: Mapping[str, str]) -> tuple[Region, ...]:
    """Semaphores and barriers touch no memory."""
    return ()


_FOOTPRINTS: dict[str, Callable[[str, Fields, Mapping[str, str]], tuple[Region, ...]]] = {
    "dma_in": _dma, "dma_out": _dma, "dma_local": _dma, "dma_peer": _dma, "dma_gather": _dma,
    "matmul": _matmul,
    "vbinary": _vector, "vimm": _vector, "vunary": _vector, "vselect": _vector, "vreduce": _vector,
    "vcast": _vector, "acc_read": _vector,
    "sem_signal": _control, "sem_wait": _control, "barrier": _control,
}  # fmt: skip


def footprint(mnemonic: str, fields: Fields, spaces: Mapping[str, str]) -> tuple[Region, ...]:
    """The static regions instruction `mnemonic` touches (writes first, then reads)."""
    return _FOOTPRINTS[mnemonic](mnemonic, fields, spaces)


def gather_intervals(
    src: int, indices: np.ndarray, row_bytes: int, stride: int
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted, disjoint byte intervals of the table rows a gather reads (duplicates merged)."""
    lo = src + np.unique(indices.astype(np.int64)) * stride
    return merge_intervals(lo, lo + row_bytes)


def merge_intervals(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merges sorted-by-start intervals [lo, hi) into disjoint ones (vectorised)."""
    if len(lo) <= 1:
        return lo, hi
    reach = np.maximum.accumulate(hi)
    starts = np.flatnonzero(np.concatenate(([True], lo[1:] > reach[:-1])))
    ends = np.concatenate((starts[1:], [len(lo)])) - 1
    return lo[starts], reach[ends]
