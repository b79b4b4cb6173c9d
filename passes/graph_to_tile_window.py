"""Sliding windows for convert-graph-to-tile: the geometry of conv and pooling, the blocks of
output positions, and im2col by DMA (shared by graph_to_tile_conv and graph_to_tile_pool).

An op is seen as 2-D (a 1-D op has height 1): input [B*C, H, W] and output [B*M, OH, OW] as
DRAM views. The output is cut into blocks of R rows x Q cols, with Q = OW whenever R > 1, so
a block is contiguous both in the output rows and in the flattened positions (R*Q columns of
a patch). Per block and chunk of tc channels:

    stage [tc, Hs, Ws]  SRAM <- ONE tile.copy of the block's receptive field (in-bounds part);
                               padding is the stage's fill value (0, or -inf for max pooling)
    patch [.., R*Q]     SRAM <- ONE tile.copy per tap (i, j), from the stage viewed as
                               [tc, Hs/sh, sh, Ws/sw, sw] at (0, i*dh // sh, i*dh % sh, ...):
                               a box of that view picks every stride-th element, so stride and
                               dilation are window offsets (Hs, Ws are rounded up to a multiple
                               of the stride for the view)

Patch rows are channel-major, (c, tap), for the matrix engine (the contraction order of the
weight [M, C/g * kh * kw]) and tap-major, (tap, c), for the vector engine (one [tc, R*Q]
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
from aitc.passes.graph_to_tile_builder import Index, KernelBuilder, Win
from aitc.passes.graph_to_tile_costs import vector_cycles
from aitc.passes.graph_to_tile_elementwise import fill
from aitc.passes.graph_to_tile_lowering import tensor_element, tensor_shape
from aitc.passes.graph_to_tile_movement import kernel_view
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


class Im2col:
    """The stage and patch of one window kernel and the DMAs that fill them (module doc).
    `order` is "channel" (matrix engine) or "tap" (vector engine)."""

    def __init__(
        self, kb: KernelBuilder, g: Geometry, block: tuple[int, int, int], order: str, pad_value: float = 0.0
    ):
        """`block` = (R, Q, tc): output rows, output cols and channels per chunk."""
        self.kb, self.g, self.order, self.pad_value = kb, g, order, pad_value
        self.rows, self.cols, self.tc = block
        tc, element = self.tc, f32
        hs, ws = g.h.stage(self.rows), g.w.stage(self.cols)
        self.stage = kb.alloc([tc, hs, ws], element, "sram")
        self._views: dict[tuple[int, ...], SSAValue] = {}
        runs = [run for dim, tile in ((g.h, self.rows), (g.w, self.cols)) for run in block_runs(dim, tile)]
        if not all(run.inside for run in runs):  # views for the padding fills
            self.fill_views = {"planes": self._view([tc, hs * ws]), "lines": self._view([tc * hs, ws])}
        positions = self.rows * self.cols
        if g.direct:
            self.patch = self._view([tc, positions])
        else:
            self.stage5 = self._view([tc, hs // g.h.stride, g.h.stride, ws // g.w.stride, g.w.stride])
            self.patch = kb.alloc([g.taps * tc, positions], element, "sram")
            by_channel = [tc, g.taps * self.rows, 1, self.cols, 1]
            by_tap = [g.taps * tc, self.rows, 1, self.cols, 1]
            self.patch5 = kernel_view(kb, self.patch, by_channel if order == "channel" else by_tap)
        self.prefill()

    def _view(self, shape: list[int]) -> SSAValue:
        """A view of the stage: one tile.reshape per shape, emitted before the loops."""
        key = tuple(shape)
        if key not in self._views:
            self._views[key] = kernel_view(self.kb, self.stage, shape)
        return self._views[key]

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
                    self._tap(i, j, cs, hb.size, wb.size)

    def _field(self, dim: WindowDim, block: Block) -> tuple[Index, int, int]:
        if block.inside:
            return self.kb.add(self.kb.mul(block.o0, dim.stride), -dim.pad), 0, dim.span(block.size)
        assert isinstance(block.o0, int)
        return dim.field(block.o0, block.size)

    def _tap(self, i: int, j: int, cs: int, th: int, tw: int) -> None:
        (hq, hr), (wq, wr) = self.g.h.tap(i), self.g.w.tap(j)
        tap = i * self.g.w.kernel + j
        at = (0, tap * self.rows, 0, 0, 0) if self.order == "channel" else (tap * self.tc, 0, 0, 0, 0)
        self.kb.copy(Win(self.stage5, (0, hq, hr, wq, wr)), Win(self.patch5, at), [cs, th, 1, tw, 1])

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
        self.y3 = kernel_view(kb, y, [cols.tc, cols.rows, cols.cols])

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
