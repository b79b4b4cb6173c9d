"""What every instruction computes: the functional semantics of the ISA, in numpy.

Memories are flat `np.uint8` arrays: one DRAM shared by all cores, one SRAM and one ACC per core
(allocated with `np.zeros`, which the OS backs lazily). An operand is a strided view of them,
`np.ndarray((rows, cols), dtype, buffer=mem, offset=addr, strides=(row_stride_bytes, itemsize))`,
so every instruction is a handful of vectorised numpy calls and never loops over elements.
Callers check bounds, alignment and races first (`checks.py`); these functions assume a legal
instruction and apply its whole effect at once.

The arithmetic is `aitc.semantics` (rounding, wraparound, saturation, transcendental functions),
which the tile interpreter shares, so a tile program and the hw program lowered from it compute
the same bits. A copy whose source and destination overlap behaves as if copied through a
buffer (memmove).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from aitc import semantics
from aitc.dialects.hw import DTYPES
from aitc.sim.errors import SimulationError
from aitc.sim.program import Instr
from aitc.target import Target

NP_DTYPES = {"f32": np.dtype(np.float32), "i32": np.dtype(np.int32), "i8": np.dtype(np.int8)}
ACC_DTYPES = {"f32": NP_DTYPES["f32"], "i8": NP_DTYPES["i32"]}
U8 = np.dtype(np.uint8)
assert all(NP_DTYPES[k].itemsize == v for k, v in DTYPES.items())


class Memories:
    """DRAM and every core's SRAM and ACC as flat byte arrays, addressed by a memory key.

    Keys: 0 = DRAM, 1 + 2*core = SRAM of `core`, 2 + 2*core = ACC of `core`.
    """

    def __init__(self, target: Target):
        self.sizes = [target.dram.bytes]
        for _ in range(target.cores):
            self.sizes += [target.sram_bytes, target.acc_bytes]
        self.arrays = [np.zeros(size, U8) for size in self.sizes]

    @staticmethod
    def key(space: str, core: int) -> int:
        """The memory key of `space` on `core` (DRAM is shared)."""
        if space == "dram":
            return 0
        return 1 + 2 * core + (space == "acc")

    @staticmethod
    def describe_key(key: int) -> str:
        """`DRAM`, `SRAM of core N` or `ACC of core N`, for diagnostics."""
        if key == 0:
            return "DRAM"
        return f"{'SRAM' if key % 2 else 'ACC'} of core {(key - 1) // 2}"

    def view(
        self, space: str, core: int, addr: int, rows: int, cols: int, dtype: np.dtype, stride: int
    ) -> np.ndarray:
        """A rows x cols view of `dtype` elements at byte `addr`, rows `stride` elements apart."""
        memory = self.arrays[self.key(space, core)]
        size = dtype.itemsize
        return np.ndarray((rows, cols), dtype, buffer=memory, offset=addr, strides=(stride * size, size))


def _operand(
    mem: Memories, ins: Instr, field: str, rows: int, cols: int, dtype: np.dtype, stride: int
) -> np.ndarray:
    """The view of address field `field` of `ins` on its own core (`stride` 0 = dense)."""
    return mem.view(ins.static.spaces[field], ins.core, ins.addr[field], rows, cols, dtype, stride or cols)


# --------------------------------------------------------------------------- DMA engine


def dma_copy(mem: Memories, ins: Instr) -> None:
    """dma_in / dma_out / dma_local / dma_peer: copy `rows` rows of `row_bytes` bytes from src to
    dst, row starts `src_stride` / `dst_stride` bytes apart (0 = dense). dma_peer writes into the
    SRAM of core `peer`."""
    f, s = ins.static.fields, ins.static
    rows, width = f["rows"], f["row_bytes"]
    dst_core = s.peer if s.mnemonic == "dma_peer" else ins.core
    dst = mem.view(s.spaces["dst"], dst_core, ins.addr["dst"], rows, width, U8, f["dst_stride"] or width)
    src = _operand(mem, ins, "src", rows, width, U8, f["src_stride"])
    np.copyto(dst, src)


def gather_indices(mem: Memories, ins: Instr) -> np.ndarray:
    """The i32 row indices of a dma_gather; any outside [0, table_rows) is an error."""
    f = ins.static.fields
    indices = _operand(mem, ins, "indices", 1, f["rows"], NP_DTYPES["i32"], 0)[0]
    bad = np.flatnonzero((indices < 0) | (indices >= f["table_rows"]))
    if len(bad):
        shown = ", ".join(f"index[{i}] = {indices[i]}" for i in bad[:4])
        raise SimulationError(
            "gather",
            f"{ins.describe()}: {len(bad)} gather indices outside the table of {f['table_rows']} rows: "
            f"{shown}",
            hint="indices must lie in [0, table_rows): check the index tensor (token ids vs vocabulary?)",
        )
    return indices


def dma_gather(mem: Memories, ins: Instr) -> None:
    """dst row r = table row index[r] (i32 indices at `indices`; table rows `src_stride` bytes
    apart, default row_bytes), dst rows `dst_stride` bytes apart."""
    f = ins.static.fields
    rows, width = f["rows"], f["row_bytes"]
    table = _operand(mem, ins, "src", f["table_rows"], width, U8, f["src_stride"])
    dst = _operand(mem, ins, "dst", rows, width, U8, f["dst_stride"])
    dst[...] = table[gather_indices(mem, ins)]


# --------------------------------------------------------------------------- matrix engine


def matmul(mem: Memories, ins: Instr) -> None:
    """acc (m x n) = [acc +] lhs (m x k) @ rhs (k x n, or n x k transposed with `transpose_rhs`).
    f32 inputs accumulate in f32, i8 inputs in int32 (wrapping). Strides are in elements."""
    f = ins.static.fields
    m, k, n = f["m"], f["k"], f["n"]
    in_type, acc_type = NP_DTYPES[f["dtype"]], ACC_DTYPES[f["dtype"]]
    lhs = _operand(mem, ins, "lhs", m, k, in_type, f["lhs_stride"])
    if f["transpose_rhs"]:
        rhs = _operand(mem, ins, "rhs", n, k, in_type, f["rhs_stride"]).T
    else:
        rhs = _operand(mem, ins, "rhs", k, n, in_type, f["rhs_stride"])
    acc = _operand(mem, ins, "acc", m, n, acc_type, f["acc_stride"])
    semantics.matmul_into(acc, lhs, rhs, bool(f["accumulate"]))


# --------------------------------------------------------------------------- vector engine


def _operand_b(mem: Memories, ins: Instr, rows: int, cols: int, dtype: np.dtype) -> np.ndarray:
    """vbinary's b, shaped to broadcast over the rows x cols tile (see `hw.vbinary`)."""
    f = ins.static.fields
    mode = f["broadcast"]
    if mode == "row":
        return _operand(mem, ins, "b", 1, cols, dtype, 0)
    if mode == "col":
        return mem.view(ins.static.spaces["b"], ins.core, ins.addr["b"], rows, 1, dtype, f["b_stride"] or 1)
    if mode == "scalar":
        return _operand(mem, ins, "b", 1, 1, dtype, 0)
    return _operand(mem, ins, "b", rows, cols, dtype, f["b_stride"])


def vbinary(mem: Memories, ins: Instr) -> None:
    """vbinary / vimm: dst = a <op> b elementwise; b broadcasts (none, row, col, scalar) or is the
    immediate `imm` (vimm). Comparisons write 1 or 0 in `dtype`; integers wrap around."""
    f = ins.static.fields
    rows, cols, dtype = f["rows"], f["cols"], NP_DTYPES[f["dtype"]]
    a = _operand(mem, ins, "a", rows, cols, dtype, f["src_stride"])
    if ins.static.mnemonic == "vimm":
        b = np.asarray(f["imm"]).astype(dtype)
    else:
        b = _operand_b(mem, ins, rows, cols, dtype)
    _operand(mem, ins, "dst", rows, cols, dtype, f["dst_stride"])[...] = semantics.binary(f["op"], a, b)


def vunary(mem: Memories, ins: Instr) -> None:
    """dst = op(a) elementwise (copy, neg, abs, relu on any dtype; the rest on f32)."""
    f = ins.static.fields
    rows, cols, dtype = f["rows"], f["cols"], NP_DTYPES[f["dtype"]]
    a = _operand(mem, ins, "a", rows, cols, dtype, f["src_stride"])
    _operand(mem, ins, "dst", rows, cols, dtype, f["dst_stride"])[...] = semantics.unary(f["op"], a, dtype)


def vselect(mem: Memories, ins: Instr) -> None:
    """dst = cond != 0 ? a : b elementwise; cond, a and b share `src_stride`."""
    f = ins.static.fields
    rows, cols, dtype, stride = f["rows"], f["cols"], NP_DTYPES[f["dtype"]], f["src_stride"]
    cond, a, b = (_operand(mem, ins, name, rows, cols, dtype, stride) for name in ("cond", "a", "b"))
    _operand(mem, ins, "dst", rows, cols, dtype, f["dst_stride"])[...] = semantics.select(cond, a, b)


def vreduce(mem: Memories, ins: Instr) -> None:
    """dst[r] = sum or max of row r (rows x cols -> a dense rows x 1 column). Sums accumulate in
    `dtype` (f32, or wrapping integers)."""
    f = ins.static.fields
    rows, cols, dtype = f["rows"], f["cols"], NP_DTYPES[f["dtype"]]
    a = _operand(mem, ins, "a", rows, cols, dtype, f["src_stride"])
    _operand(mem, ins, "dst", rows, 1, dtype, 1)[:, 0] = semantics.reduce_rows(f["op"], a)


def vcast(mem: Memories, ins: Instr) -> None:
    """dst (`to`) = convert(a (`from`) * scale) with the integer side's zero point: f32 -> int
    rounds half to even, adds `zero` and saturates, int -> f32 subtracts `zero` and scales,
    i32 -> i8 requantizes (round, add `zero`, saturate)."""
    f = ins.static.fields
    rows, cols = f["rows"], f["cols"]
    a = _operand(mem, ins, "a", rows, cols, NP_DTYPES[f["from"]], f["src_stride"])
    to = NP_DTYPES[f["to"]]
    _operand(mem, ins, "dst", rows, cols, to, f["dst_stride"])[...] = semantics.convert(
        a, to, f["scale"], f["zero"]
    )


def acc_read(mem: Memories, ins: Instr) -> None:
    """dst (SRAM) = activation(a (ACC)), activation one of none, relu, relu6, sigmoid, tanh, gelu
    (exact, erf), gelu_tanh; integer tiles allow none, relu and relu6."""
    f = ins.static.fields
    rows, cols, dtype = f["rows"], f["cols"], NP_DTYPES[f["dtype"]]
    a = _operand(mem, ins, "a", rows, cols, dtype, f["src_stride"])
    _operand(mem, ins, "dst", rows, cols, dtype, f["dst_stride"])[...] = semantics.unary(
        f["activation"], a, dtype
    )


def _control(mem: Memories, ins: Instr) -> None:
    """Semaphores and barriers have no data effect (see `engine.py`)."""


EXECUTE: dict[str, Callable[[Memories, Instr], None]] = {
    "dma_in": dma_copy, "dma_out": dma_copy, "dma_local": dma_copy, "dma_peer": dma_copy,
    "dma_gather": dma_gather, "matmul": matmul, "vbinary": vbinary, "vimm": vbinary, "vunary": vunary,
    "vselect": vselect, "vreduce": vreduce, "vcast": vcast, "acc_read": acc_read,
    "sem_signal": _control, "sem_wait": _control, "barrier": _control,
}  # fmt: skip
"""Instruction mnemonic -> the function that defines it."""
