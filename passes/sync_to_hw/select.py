"""Instruction selection of `convert-sync-to-hw`: one tile compute op -> hw instructions.

Every selector takes the op and the `Addressing` of the enclosing loops and returns the
instructions in program order (`grep -n "op: tile.MatmulOp" passes/` finds the matmul one).

DMA (tile.copy, tile.transpose): a window is a list of dims (count, src stride, dst stride) in
bytes (`aitc.analysis.dma`, which the cost model of convert-graph-to-tile shares). Inner dims
contiguous on both sides merge into `row_bytes`; the longest remaining dim becomes `rows`
with its strides; dims outside it become hw.loops around the DMA, which advance both addresses
(`+ stride*iD`). A transpose is a copy whose dst strides are swapped:

    src 8 x 2 (pitch 64 B) -> dst 2 x 8:   hw.loop 2 {                      (the shorter side)
                                             hw.dma_local sram[d + 32*i0] <- sram[s + 4*i0],
                                                 rows=8, row_bytes=4, src_stride=64 }

Vector and matrix ops take their strides in elements (0 = dense) from the buffers' row pitches.
An operand layout the instruction cannot express (vselect's sources share one stride, vreduce
writes a dense column, gather indices are a dense vector) becomes an hw.loop over rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.ir import Operation

from aitc.analysis.dma import Dim, merge_dims, transfer_dims
from aitc.dialects import hw, tile
from aitc.dialects.sync import engine_of
from aitc.passes.legality import fail
from aitc.passes.sync_to_hw.address import Address, Addressing, Window


def nest(counts: Sequence[int], op: Operation) -> Operation:
    """`op` inside hw.loops of `counts` trips (outermost first)."""
    for count in reversed(counts):
        op = hw.LoopOp(count, [op])
    return op


# --------------------------------------------------------------------------- DMA


def _dense(stride: int, row_bytes: int, rows: int) -> int:
    """A DMA stride field: 0 (dense) when it equals the row or there is one row."""
    return 0 if rows == 1 or stride == row_bytes else stride


def strided_dma(
    kind: type[hw.DmaOp],
    src: Address,
    dst: Address,
    dims: Sequence[Dim],
    element: int,
    depth: int,
    queue: int | None,
) -> Operation:
    """One DMA (or a loop nest of them) moving the elements `dims` describe."""
    row_bytes, remaining = merge_dims(dims, element)
    *loops, inner = remaining or [Dim(1, 0, 0)]
    for level, dim in enumerate(loops):
        src, dst = src.plus(depth + level, dim.src), dst.plus(depth + level, dim.dst)
    rows = inner.count
    instruction = kind(
        dst=dst.attr(), src=src.attr(), rows=rows, row_bytes=row_bytes, queue=queue,
        src_stride=_dense(inner.src, row_bytes, rows), dst_stride=_dense(inner.dst, row_bytes, rows),
    )  # fmt: skip
    return nest([d.count for d in loops], instruction)


def dma_kind(op: tile.WindowOp, src: Window, dst: Window) -> type[hw.DmaOp]:
    """dma_in (from DRAM), dma_out (to DRAM) or dma_local (on chip)."""
    spaces = (src.buffer.space, dst.buffer.space)
    if spaces == ("dram", "dram") or {"dram", "acc"} <= set(spaces):
        fail(op, f"{op.name} from {spaces[0]} to {spaces[1]} has no DMA instruction (stage it in sram)")
    if spaces[0] == "dram":
        return hw.DmaInOp
    return hw.DmaOutOp if spaces[1] == "dram" else hw.DmaLocalOp


def dma_queue(op: Operation, kind: type[hw.DmaOp]) -> int | None:
    """`queue` of the engine `op` is bound to ("dmaN" -> N), None when it is the default."""
    engine = engine_of(op) or ""
    queue = int(engine[3:])
    return None if queue == hw.DEFAULT_DMA_QUEUE[kind.name.removeprefix("hw.")] else queue


def select_copy(op: tile.CopyOp, at: Addressing) -> list[Operation]:
    """tile.copy -> hw.dma_in / dma_out / dma_local, looped over non-contiguous outer dims."""
    src, dst = at.access(op, "src"), at.access(op, "dst")
    kind = dma_kind(op, src, dst)
    element = src.buffer.elem_bytes
    dims = transfer_dims(op.box(), src.buffer.strides, dst.buffer.strides, element)
    return [strided_dma(kind, src.address, dst.address, dims, element, at.depth, dma_queue(op, kind))]


def select_transpose(op: tile.TransposeOp, at: Addressing) -> list[Operation]:
    """tile.transpose -> strided DMAs, one per column or per row of the src window (whichever
    side is shorter), each moving single elements with the other side's pitch as stride."""
    src, dst = at.access(op, "src"), at.access(op, "dst")
    kind = dma_kind(op, src, dst)
    element = src.buffer.elem_bytes
    dims = transfer_dims(op.box(), src.buffer.strides, dst.buffer.strides, element, transpose=True)
    return [strided_dma(kind, src.address, dst.address, dims, element, at.depth, dma_queue(op, kind))]


def select_gather(op: tile.GatherOp, at: Addressing) -> list[Operation]:
    """tile.gather -> hw.dma_gather over the whole table (rows one by one when the indices are
    not a dense column)."""
    table, indices, dst = (at.access(op, name) for name in op.ACCESSES)
    rows, length = op.box()
    start = at.index(op.access("table")[1][0])
    if not start.is_constant:
        fail(op, "tile.gather: the table window must not move with a loop")
    per_row = rows > 1 and indices.buffer.pitch != 1
    index_address, dst_address = indices.address, dst.address
    if per_row:
        index_address = index_address.plus(at.depth, indices.pitch_bytes)
        dst_address = dst_address.plus(at.depth, dst.pitch_bytes)
    count = 1 if per_row else rows
    row_bytes = length * dst.buffer.elem_bytes
    gather = hw.DmaGatherOp(
        dst=dst_address.attr(), src=table.address.attr(), indices=index_address.attr(), rows=count,
        row_bytes=row_bytes, src_stride=_dense(table.pitch_bytes, row_bytes, 2),
        dst_stride=_dense(dst.pitch_bytes, row_bytes, count), queue=dma_queue(op, hw.DmaGatherOp),
        table_rows=table.buffer.shape[0] - start.const,
    )  # fmt: skip
    return [nest([rows] if per_row else [], gather)]


# --------------------------------------------------------------------------- matrix engine


def _stride(window: Window, rows: int, cols: int) -> int:
    """A stride field in elements: the row pitch, 0 when dense (or a single row)."""
    return 0 if rows == 1 or window.buffer.pitch == cols else window.buffer.pitch


def dtype_of(op: Operation, window: Window) -> str:
    """The hw dtype ("f32", "i32", "i8") of a window's elements."""
    name = tile.type_text(window.buffer.element)
    if name not in hw.DTYPES:
        fail(op, f"{op.name}: element type {name} is not one of {', '.join(hw.DTYPES)}")
    return name


def select_matmul(op: tile.MatmulOp, at: Addressing) -> list[Operation]:
    """tile.matmul -> hw.matmul, strides = the buffers' row pitches in elements."""
    lhs, rhs, acc = (at.access(op, name) for name in op.ACCESSES)
    m, k, n = op.box()
    rhs_rows, rhs_cols = op.window_shape("rhs")
    matmul = hw.MatmulOp(
        acc=acc.address.attr(), lhs=lhs.address.attr(), rhs=rhs.address.attr(), m=m, k=k, n=n,
        dtype=dtype_of(op, lhs), lhs_stride=_stride(lhs, m, k), rhs_stride=_stride(rhs, rhs_rows, rhs_cols),
        acc_stride=_stride(acc, m, n), accumulate=op.accumulate is not None,
        transpose_rhs=op.transpose_rhs is not None,
    )  # fmt: skip
    return [matmul]


# --------------------------------------------------------------------------- vector engine


@dataclass(frozen=True)
class Operand:
    """A vector operand: its window, the stride field it uses (None: must be dense) and its
    width in elements (0: one row whatever `rows` is, as a row- or scalar-broadcast `b`)."""

    window: Window
    stride_field: str | None
    width: int


@dataclass
class VectorPlan:
    """One vector instruction before strides are chosen."""

    kind: type[hw.InstructionOp]
    rows: int
    cols: int
    operands: dict[str, Operand]
    fields: dict[str, Any] = field(default_factory=dict)

    def strides(self, rows: int) -> dict[str, int] | None:
        """Stride fields for `rows` rows, or None if the operands need different strides."""
        chosen: dict[str, int] = {}
        for operand in self.operands.values():
            if rows == 1 or operand.width == 0:
                continue
            pitch = operand.window.buffer.pitch
            stride = 0 if pitch == operand.width else pitch
            if operand.stride_field is None:
                if stride:
                    return None
                continue
            if chosen.setdefault(operand.stride_field, stride) != stride:
                return None
        return chosen

    def build(self, addresses: dict[str, Address], rows: int, strides: dict[str, int]) -> Operation:
        attrs = {name: address.attr() for name, address in addresses.items()}
        return self.kind(**attrs, rows=rows, cols=self.cols, **self.fields, **strides)

    def select(self, depth: int) -> list[Operation]:
        """One instruction, or an hw.loop over rows when no stride choice fits every operand."""
        addresses = {name: o.window.address for name, o in self.operands.items()}
        strides = self.strides(self.rows)
        if strides is not None:
            return [self.build(addresses, self.rows, strides)]
        stepped = {
            name: o.window.address.plus(depth, o.window.pitch_bytes if o.width else 0)
            for name, o in self.operands.items()
        }
        return [nest([self.rows], self.build(stepped, 1, {}))]


def tile_shape(op: tile.WindowOp) -> tuple[int, int]:
    """(rows, cols) of a vector op's 2-D window (a 1-D window is one row)."""
    rows, cols = (1, *op.box())[-2:]
    return rows, cols


def _plan(
    source: tile.WindowOp, at: Addressing, kind: type[hw.InstructionOp], fields: dict[str, Any]
) -> VectorPlan:
    """The plan of an elementwise op: sources on `src_stride`, dst on `dst_stride`; `fields`
    set to None keep their default."""
    rows, cols = tile_shape(source)
    operands = {}
    for name in source.ACCESSES:
        window = at.access(source, name)
        operands[name] = Operand(window, "dst_stride" if name == "dst" else "src_stride", cols)
    fields = {key: value for key, value in fields.items() if value is not None}
    return VectorPlan(kind, rows, cols, operands, fields)


def select_binary(op: tile.BinaryOp, at: Addressing) -> list[Operation]:
    """tile.binary -> hw.vbinary; `b` follows `broadcast` (a column uses b_stride)."""
    mode = op.broadcast.data if op.broadcast else "none"
    assert op.op is not None
    plan = _plan(op, at, hw.VBinaryOp, {"op": op.op.data, "broadcast": None if mode == "none" else mode})
    plan.fields["dtype"] = dtype_of(op, plan.operands["a"].window)
    b = plan.operands["b"].window
    width = {"none": plan.cols, "col": 1}.get(mode, 0)
    plan.operands["b"] = Operand(b, "b_stride", width)
    return plan.select(at.depth)


def select_binary_imm(op: tile.BinaryImmOp, at: Addressing) -> list[Operation]:
    """tile.binary_imm -> hw.vimm."""
    assert op.op is not None and op.imm is not None  # noqa: PT018 (verified op)
    plan = _plan(op, at, hw.VImmOp, {"op": op.op.data, "imm": op.imm.value.data})
    plan.fields["dtype"] = dtype_of(op, plan.operands["a"].window)
    return plan.select(at.depth)


def select_unary(op: tile.UnaryOp, at: Addressing) -> list[Operation]:
    """tile.unary -> hw.vunary."""
    assert op.op is not None
    plan = _plan(op, at, hw.VUnaryOp, {"op": op.op.data})
    plan.fields["dtype"] = dtype_of(op, plan.operands["a"].window)
    return plan.select(at.depth)


def select_select(op: tile.SelectOp, at: Addressing) -> list[Operation]:
    """tile.select -> hw.vselect (cond, a and b share src_stride, else one row at a time)."""
    plan = _plan(op, at, hw.VSelectOp, {})
    plan.fields["dtype"] = dtype_of(op, plan.operands["a"].window)
    return plan.select(at.depth)


def select_reduce(op: tile.ReduceOp, at: Addressing) -> list[Operation]:
    """tile.reduce -> hw.vreduce (which writes a dense column, else one row at a time)."""
    assert op.op is not None
    plan = _plan(op, at, hw.VReduceOp, {"op": op.op.data})
    plan.fields["dtype"] = dtype_of(op, plan.operands["a"].window)
    plan.operands["dst"] = Operand(plan.operands["dst"].window, None, 1)
    return plan.select(at.depth)


def select_cast(op: tile.CastOp, at: Addressing) -> list[Operation]:
    """tile.cast -> hw.vcast (`from` / `to` from the windows' element types); i64 -> i32 index
    narrowing -> a DMA of each element's low 32-bit word (little endian), 8-byte src steps."""
    if tile.narrows_i64(op):
        src, dst = at.access(op, "a"), at.access(op, "dst")
        dims = [
            Dim(n, s * 8, d * 4)
            for n, s, d in zip(op.box(), src.buffer.strides, dst.buffer.strides, strict=True)
        ]
        kind = dma_kind(op, src, dst)
        return [strided_dma(kind, src.address, dst.address, dims, 4, at.depth, dma_queue(op, kind))]
    fields: dict[str, Any] = {
        "from": dtype_of(op, at.access(op, "a")),
        "to": dtype_of(op, at.access(op, "dst")),
    }
    fields["scale"] = op.scale.value.data if op.scale else None
    fields["zero"] = op.zero.value.data if op.zero else None
    return _plan(op, at, hw.VCastOp, fields).select(at.depth)


def select_acc_read(op: tile.AccReadOp, at: Addressing) -> list[Operation]:
    """tile.acc_read -> hw.acc_read with its fused activation."""
    activation = op.activation.data if op.activation else "none"
    plan = _plan(op, at, hw.AccReadOp, {"activation": None if activation == "none" else activation})
    plan.fields["dtype"] = dtype_of(op, plan.operands["a"].window)
    return plan.select(at.depth)


SELECTORS: dict[type[tile.WindowOp], Callable[[Any, Addressing], list[Operation]]] = {
    tile.CopyOp: select_copy, tile.TransposeOp: select_transpose, tile.GatherOp: select_gather,
    tile.MatmulOp: select_matmul, tile.BinaryOp: select_binary, tile.BinaryImmOp: select_binary_imm,
    tile.UnaryOp: select_unary, tile.SelectOp: select_select, tile.ReduceOp: select_reduce,
    tile.CastOp: select_cast, tile.AccReadOp: select_acc_read,
}  # fmt: skip
"""Instruction selector of every tile compute op (`tile.COMPUTE_OPS`)."""
