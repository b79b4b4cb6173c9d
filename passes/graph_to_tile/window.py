"""Sliding windows for convert-graph-to-tile: the geometry of conv and pooling, the blocks of
output positions, and im2col by DMA (shared by graph_to_tile_conv and graph_to_tile_pool).

An op is seen as 2-D (a 1-D op has height 1): input [B*C, H, W] and output [B*M, OH, OW] as
DRAM views. The output is cut into blocks of R rows x Q cols, with Q = OW whenever R > 1, so
a block is contiguous in the output rows. Per block and chunk of tc channels:

    stage [tc, Hs, Ws]  SRAM <- ONE tile.copy of the block's receptive field (in-bounds part);
                               padding is the stage's fill value (0, or -inf for max pooling)
    patch [.., P]       SRAM <- ONE tile.copy per tap (i, j), from the stage viewed as
                               [tc, Hs*Ws/sw, sw] at the tap's first element: output (oh, ow)
                               is patch column p = oh * pitch + ow (pitch = sh*Ws/sw), which
                               reads stage element base(i, j) + sw * p, so stride and dilation
                               are window offsets (Hs, Ws are rounded up to a multiple of the
                               stride for the view) and one copy moves a whole tap (`PatchLayout`)

The P = (R - 1) * pitch + Q columns include garbage ones between output rows (computed, never
stored). Patch rows are channel-major, (c, tap), for the matrix engine (the contraction order
of the weight [M, C/g * kh * kw]) and tap-major, (tap, c), for the vector engine (one [tc, P]
window per tap). When there is one tap and stride 1 (1x1 conv), the stage is the patch.

Blocks are peeled per dim (`for_blocks`): the blocks whose field lies inside the input are
one scf.for and read whole fields; border blocks and the remainder get constant offsets, so
their in-bounds part is computed here. The padding a border block reads is the strips of the
stage outside that part, refilled by the block (earlier loads may have written there): rows
strips on the stage viewed [tc, Hs*Ws], column strips on it viewed [tc*Hs, Ws]. A dim with a
single block always loads the same part, so its strips are filled once, before the loops.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import f32
from xdsl.ir import Operation, SSAValue

from aitc.dialects import graph
from aitc.passes.graph_to_tile.builder import Index, KernelBuilder, Win
from aitc.passes.graph_to_tile.costs import vector_cycles
from aitc.passes.graph_to_tile.elementwise import fill
from aitc.passes.graph_to_tile.lowering import tensor_element, tensor_shape
from aitc.passes.graph_to_tile.movement import kernel_view
from aitc.target import Target


@dataclass(frozen=True)
class WindowDim:
    """One spatial dim: input `size`, `out` positions, `kernel` taps `dilation` apart, `stride`,
    begin pad `pad` (the end pad only matters to avg pooling's divisor: the field beyond the
    input reads the fill value whatever the pads say)."""

    size: int
    out: int
    kernel: int = 1
    stride: int = 1
    dilation: int = 1
    pad: int = 0
    pad_end: int = 0

    def span(self, t: int) -> int:
        """Input elements under a block of t outputs (its receptive field)."""
        return (t - 1) * self.stride + (self.kernel - 1) * self.dilation + 1

    def stage(self, t: int) -> int:
        """Stage extent for blocks of up to t outputs: the span rounded up to the stride."""
        return -(-self.span(t) // self.stride) * self.stride

    def tap(self, i: int) -> tuple[int, int]:
        """(quotient, phase) of tap i's offset in the stage viewed as [.., stride]."""
        return divmod(i * self.dilation, self.stride)

    def inside(self, o0: int, t: int) -> bool:
        start = o0 * self.stride - self.pad
        return start >= 0 and start + self.span(t) <= self.size

    def strips(self, o0: int, t: int) -> list[tuple[int, int]]:
        """The stage ranges [low, high) of the block at constant o0 that lie in the padding."""
        _, at, count = self.field(o0, t)
        return [(low, high) for low, high in ((0, at), (at + count, self.span(t))) if high > low]

    def field(self, o0: int, t: int) -> tuple[int, int, int]:
        """(first input index, its offset in the stage, count) of the in-bounds part of the
        field of the block at constant o0."""
        start = o0 * self.stride - self.pad
        low, high = max(0, start), min(self.size, start + self.span(t))
        return low, low - start, max(0, high - low)


@dataclass(frozen=True)
class Geometry:
    """A window op as `groups` independent problems per image: `channels` inputs per group
    (C/g), `outs` outputs per group (M/g), over `batch` images."""

    batch: int
    channels: int
    groups: int
    outs: int
    h: WindowDim
    w: WindowDim

    @property
    def taps(self) -> int:
        return self.h.kernel * self.w.kernel

    @property
    def direct(self) -> bool:
        """One tap, stride 1: the stage already is the patch (no tap copies)."""
        return self.taps == 1 and self.h.stride == 1 and self.w.stride == 1


def window_problem(op: Operation) -> str | None:
    """Why a conv or pooling op is not lowered (f32, 1-D or 2-D, non-empty), else None."""
    if str(tensor_element(op.operands[0])) != "f32":
        return f"{op.name} is lowered for f32 only, got {tensor_element(op.operands[0])}"
    rank = len(tensor_shape(op.operands[0]))
    if rank not in (3, 4):
        return f"{rank - 2}-D {op.name} is not lowered (only 1-D and 2-D)"
    if 0 in tensor_shape(op.operands[0]) or 0 in tensor_shape(op.results[0]):
        return "zero-size tensors have no buffers"
    return None


def window_dims(op: graph.WindowOp, kernel: Sequence[int]) -> tuple[WindowDim, WindowDim]:
    """The (h, w) dims of a 1-D or 2-D conv/pool (1-D: h is a trivial dim of size 1)."""
    strides, pads, dilations = op.window()
    sizes, outs = tensor_shape(op.operands[0])[2:], tensor_shape(op.results[0])[2:]
    n = len(kernel)
    dims = [
        WindowDim(sizes[i], outs[i], kernel[i], strides[i], dilations[i], pads[i], pads[i + n])
        for i in range(n)
    ]
    if n == 1:
        dims.insert(0, WindowDim(1, 1))
    return dims[0], dims[1]


# --------------------------------------------------------------------------- blocks


@dataclass(frozen=True)
class Block:
    """Outputs [o0, o0 + size) along one dim; o0 is a loop index only when `inside`."""

    o0: Index
    size: int
    inside: bool


@dataclass(frozen=True)
class BlockRun:
    """`count` consecutive blocks of `size` outputs from `o0` on; a run of several blocks lies
    inside the input and becomes one scf.for."""

    o0: int
    size: int
    count: int
    inside: bool

    def in_bounds(self, dim: WindowDim) -> int:
        """Input elements each block of the run loads along `dim`."""
        return dim.span(self.size) if self.inside else dim.field(self.o0, self.size)[2]


def block_runs(dim: WindowDim, tile: int) -> list[BlockRun]:
    """The blocks of `tile` outputs: leading border blocks, the run of blocks inside the input
    (contiguous: both bounds are monotone in o0), trailing border blocks, the remainder."""
    full = dim.out // tile
    inner = [b for b in range(full) if dim.inside(b * tile, tile)]
    first, stop = (inner[0], inner[-1] + 1) if inner else (full, full)
    runs = [BlockRun(b * tile, tile, 1, False) for b in range(first)]
    runs += [BlockRun(first * tile, tile, stop - first, True)] if stop > first else []
    runs += [BlockRun(b * tile, tile, 1, False) for b in range(stop, full)]
    rest = dim.out - full * tile
    runs += [BlockRun(full * tile, rest, 1, dim.inside(full * tile, rest))] if rest else []
    return runs


def for_blocks(kb: KernelBuilder, dim: WindowDim, tile: int, body: Callable[[Block], None]) -> None:
    """body(block) over `block_runs`: one scf.for per run of several blocks."""
    for run in block_runs(dim, tile):
        if run.count == 1:
            body(Block(run.o0, run.size, run.inside))
            continue
        stop = run.o0 + run.count * run.size
        kb.loop(run.o0, stop, run.size, lambda o0, size=run.size: body(Block(o0, size, True)))


# --------------------------------------------------------------------------- padding


def padding_strips(
    g: Geometry, tiles: tuple[int, int], blocks: tuple[Block | BlockRun, Block | BlockRun], prefill: bool
) -> list[tuple[str, int, int]]:
    """The stage strips ("h" or "w", low, high) to fill with the padding value: before the loops
    (`prefill`) those of the dims with a single block, else at a block those of its border dims
    that have several blocks."""
    strips = []
    for name, dim, tile, block in zip("hw", (g.h, g.w), tiles, blocks, strict=True):
        if (dim.out <= tile) != prefill or block.inside:
            continue
        assert isinstance(block.o0, int)
        strips += [(name, low, high) for low, high in dim.strips(block.o0, block.size)]
    return strips


def prefill_strips(g: Geometry, tiles: tuple[int, int]) -> list[tuple[str, int, int]]:
    """The strips to fill before the loops (those of the dims that have a single block)."""
    first = (Block(0, g.h.out, g.h.inside(0, g.h.out)), Block(0, g.w.out, g.w.inside(0, g.w.out)))
    return padding_strips(g, tiles, first, prefill=True)


def fill_windows(
    g: Geometry, block: tuple[int, int, int], strips: list[tuple[str, int, int]], target: Target
) -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    """(view, origin, sizes) of the vector-engine fills covering `strips`: each row strip on the
    stage viewed [tc, Hs*Ws] ("planes"), each column strip on it viewed [tc*Hs, Ws] ("lines"),
    or the whole stage at once when that costs fewer vector cycles (narrow column strips
    waste the lanes)."""
    if not strips:
        return []
    rows, cols, tc = block
    hs, ws = g.h.stage(rows), g.w.stage(cols)

    def window(name: str, low: int, high: int) -> tuple[str, tuple[int, int], tuple[int, int]]:
        if name == "h":
            return "planes", (0, low * ws), (tc, (high - low) * ws)
        return "lines", (0, low), (tc * hs, high - low)

    def cycles(fills: list[tuple[str, tuple[int, int], tuple[int, int]]]) -> int:
        return sum(vector_cycles(target, "mul", *size) for _, _, size in fills)

    each = [window(*strip) for strip in strips]
    return min(each, [("lines", (0, 0), (tc * hs, ws))], key=cycles)


# --------------------------------------------------------------------------- im2col


@dataclass(frozen=True)
class TapCopy:
    """One tap's tile.copy from the stage to the patch: both seen through views of these
    shapes, at these origins, moving `box`."""

    src_shape: tuple[int, ...]
    src_at: tuple[int, ...]
    dst_shape: tuple[int, ...]
    dst_at: tuple[int, ...]
    box: tuple[int, ...]


@dataclass(frozen=True)
class PatchLayout:
    """Where the im2col patch of a window kernel puts each output position of a block of
    R x Q outputs (R rows of Q = OW, or one row of Q), and the buffers that follow from it.

    Positions are *wide*: output (oh, ow) of the block is patch column p = oh * pitch + ow with
    pitch = sh * Ws / sw, so that tap (i, j) of channel c reads the stage (viewed flat per
    channel) at base(i, j) + sw * p, base(i, j) = i*dh*Ws + j*dw: one arithmetic sequence
    over the whole block. A tap is then ONE DMA window [cs, positions, 1] of the stage viewed
    [tc, Hs*Ws/sw, sw] (one instruction when sw == 1, one per channel otherwise) instead of
    one per channel and output row. The columns with ow >= Q between two rows are garbage
    (computed, never stored): `positions(r, q)` = (r - 1) * pitch + q of a block of r x q.

    `flat` (tap-major patch and a column stride: pooling): the patch rows are Hs*Ws/sw wide,
    a whole stage plane each, so the rows of all channels of a tap are one arithmetic sequence
    too: one DMA instruction per tap (the stage has one spare plane the last channel's garbage
    columns run into)."""

    g: Geometry
    rows: int
    cols: int
    tc: int
    order: str = "channel"

    @property
    def hs(self) -> int:
        return self.g.h.stage(self.rows)

    @property
    def ws(self) -> int:
        return self.g.w.stage(self.cols)

    @property
    def pitch(self) -> int:
        """Patch columns from one output row of a block to the next."""
        return self.g.h.stride * self.ws // self.g.w.stride if self.rows > 1 else self.cols

    @property
    def flat(self) -> bool:
        return self.order == "tap" and self.g.w.stride > 1 and not self.g.direct

    @property
    def planes(self) -> int:
        """Stage planes: tc, and a spare one for `flat` taps."""
        return self.tc + int(self.flat)

    def positions(self, rows: int, cols: int) -> int:
        """Patch columns of a block of rows x cols outputs (garbage between rows included)."""
        return (rows - 1) * self.pitch + cols

    @property
    def width(self) -> int:
        """Patch columns: those of a full block (the most any block uses), a plane if `flat`."""
        if self.flat:
            return self.hs * self.ws // self.g.w.stride
        return self.positions(self.rows, self.cols)

    @property
    def compact(self) -> bool:
        """Whether the matrix engine's output tiles are dense [.., R*Q], read out of the wide ACC
        row by row: when blocks of several rows do not cover the image, a wide tile would be
        stored with one DMA instruction per channel, a dense one with one."""
        return 1 < self.rows < self.g.h.out and self.pitch != self.cols

    def out_pitch(self, compact: bool) -> int:
        """Columns from one output row to the next in an output tile."""
        return self.cols if compact else self.pitch

    def out_width(self, compact: bool = False) -> int:
        """Columns of an output tile: R rows of `out_pitch`, so it can be viewed [.., R, pitch]."""
        return self.rows * self.out_pitch(compact)

    def tap_copy(self, i: int, j: int, cs: int, positions: int) -> TapCopy:
        """The copy of tap (i, j) of cs channels for a block of `positions` patch columns."""
        g, sw, width = self.g, self.g.w.stride, self.width
        base = i * g.h.dilation * self.ws + j * g.w.dilation
        tap = i * g.w.kernel + j
        plane = self.hs * self.ws // sw
        if self.flat:
            src = ((self.planes * plane, sw), (base // sw, base % sw))
            dst = ((g.taps * self.tc * width, 1), (tap * self.tc * width, 0))
            return TapCopy(*src[0:1], src[1], *dst[0:1], dst[1], (cs * width, 1))
        if self.order == "channel":  # rows (c, tap)
            dst = ((self.tc, g.taps * width, 1), (0, tap * width, 0))
        else:  # rows (tap, c)
            dst = ((g.taps * self.tc, width, 1), (tap * self.tc, 0, 0))
        src_at = (0, base // sw, base % sw)
        return TapCopy((self.planes, plane, sw), src_at, dst[0], dst[1], (cs, positions, 1))


class Im2col:
    """The stage and patch of one window kernel and the DMAs that fill them (module doc).
    `order` is "channel" (matrix engine) or "tap" (vector engine)."""

    def __init__(
        self, kb: KernelBuilder, g: Geometry, block: tuple[int, int, int], order: str, pad_value: float = 0.0
    ):
        """`block` = (R, Q, tc): output rows, output cols and channels per chunk."""
        self.kb, self.g, self.order, self.pad_value = kb, g, order, pad_value
        self.rows, self.cols, self.tc = block
        self.layout = layout = PatchLayout(g, *block, order)
        tc, element = self.tc, f32
        hs, ws = layout.hs, layout.ws
        self.stage = kb.alloc([layout.planes, hs, ws], element, "sram")
        self._views: dict[tuple, SSAValue] = {}
        runs = [run for dim, tile in ((g.h, self.rows), (g.w, self.cols)) for run in block_runs(dim, tile)]
        planes = layout.planes
        if not all(run.inside for run in runs):  # views for the padding fills
            self.fill_views = {
                "planes": self._view([planes, hs * ws]),
                "lines": self._view([planes * hs, ws]),
            }
        if g.direct:
            self.patch = self._view([tc, hs * ws])
        else:  # the views the tap copies go through, before any loop
            self.patch = kb.alloc([g.taps * tc, layout.width], element, "sram")
            shapes = layout.tap_copy(0, 0, tc, layout.width)
            self._view(shapes.src_shape)
            self._view(shapes.dst_shape, self.patch)
        self.prefill()

    def _view(self, shape: Sequence[int], buffer: SSAValue | None = None) -> SSAValue:
        """A view of the stage (or the patch): one tile.reshape per shape."""
        buffer = self.stage if buffer is None else buffer
        key = (buffer, tuple(shape))
        if key not in self._views:
            self._views[key] = kernel_view(self.kb, buffer, shape)
        return self._views[key]

    def positions(self, hb: Block, wb: Block) -> int:
        """Patch columns of block (hb, wb) (`PatchLayout.positions`)."""
        return self.layout.positions(hb.size, wb.size)

    def prefill(self) -> None:
        """Before the loops: the padding of the dims that have a single block."""
        self._fill(prefill_strips(self.g, (self.rows, self.cols)))

    def prepare(self, hb: Block, wb: Block) -> None:
        """Before the chunks of a border block: its padding (each chunk then writes the same
        in-bounds part)."""
        self._fill(padding_strips(self.g, (self.rows, self.cols), (hb, wb), prefill=False))

    def _fill(self, strips: list[tuple[str, int, int]]) -> None:
        for view, at, sizes in fill_windows(self.g, (self.rows, self.cols, self.tc), strips, self.kb.target):
            fill(self.kb, Win(self.fill_views[view], at), self.pad_value, list(sizes))

    def load(self, src: SSAValue, channel: Index, cs: int, hb: Block, wb: Block) -> None:
        """Channels [channel, channel + cs) of `src` [B*C, H, W] for the block: the field into
        the stage, then (unless direct) every tap into the patch."""
        (h0, h_at, h_n), (w0, w_at, w_n) = self._field(self.g.h, hb), self._field(self.g.w, wb)
        if h_n and w_n:
            self.kb.copy(Win(src, (channel, h0, w0)), Win(self.stage, (0, h_at, w_at)), [cs, h_n, w_n])
        if not self.g.direct:
            for i in range(self.g.h.kernel):
                for j in range(self.g.w.kernel):
                    self._tap(i, j, cs, self.positions(hb, wb))

    def _field(self, dim: WindowDim, block: Block) -> tuple[Index, int, int]:
        if block.inside:
            return self.kb.add(self.kb.mul(block.o0, dim.stride), -dim.pad), 0, dim.span(block.size)
        assert isinstance(block.o0, int)
        return dim.field(block.o0, block.size)

    def _tap(self, i: int, j: int, cs: int, positions: int) -> None:
        copy = self.layout.tap_copy(i, j, cs, positions)
        src = Win(self._view(copy.src_shape), copy.src_at)
        self.kb.copy(src, Win(self._view(copy.dst_shape, self.patch), copy.dst_at), copy.box)

    def tap_rows(self, tap: int) -> Win:
        """The [cs, positions] window of one tap (tap-major patch)."""
        return Win(self.patch, (tap * self.tc, 0))


# --------------------------------------------------------------------------- vector-engine loops


class VectorWindow:
    """The loop nest of a vector-engine window kernel (depthwise conv, pooling):

    for image n:  for row blocks:  for col blocks:        (peeled, see for_blocks)
      [border block: fill the stage]
      for c0 in channels step tc:
        stage + taps (tap-major) <- x[n*C + c0 ...]
        compute(c0, cs, hb, wb) -> y [cs, R*Q]            (the op's vector ops)
        out[n*C + c0, oh0, ow0] <- y
    """

    def __init__(self, kb: KernelBuilder, g: Geometry, cols: Im2col, y: SSAValue, views: tuple):
        self.kb, self.g, self.cols, self.y = kb, g, cols, y
        self.x, self.out = views
        self.y3 = kernel_view(kb, y, [cols.tc, cols.rows, cols.layout.out_pitch(False)])

    def run(self, compute: Callable[[Index, int, Block, Block], None]) -> None:
        self.compute = compute
        self.kb.loop(0, self.g.batch, 1, self._image)

    def _image(self, n: Index) -> None:
        self.row = self.kb.mul(n, self.g.channels)
        kb, g, cols = self.kb, self.g, self.cols
        per_row = lambda hb: for_blocks(kb, g.w, cols.cols, lambda wb: self._block(hb, wb))  # noqa: E731
        for_blocks(kb, g.h, cols.rows, per_row)

    def _block(self, hb: Block, wb: Block) -> None:
        self.cols.prepare(hb, wb)
        self.kb.tiles(self.g.channels, self.cols.tc, lambda c0, cs: self._chunk(c0, cs, hb, wb))

    def _chunk(self, c0: Index, cs: int, hb: Block, wb: Block) -> None:
        kb = self.kb
        channel = kb.add(self.row, c0)
        self.cols.load(self.x, channel, cs, hb, wb)
        self.compute(c0, cs, hb, wb)
        kb.copy(Win.at(self.y3), Win(self.out, (channel, hb.o0, wb.o0)), [cs, hb.size, wb.size])
