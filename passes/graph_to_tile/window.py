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
window per tap) and per-tap matrix plans. When there is one tap and stride 1 (1x1 conv), the
stage is the patch; a per-tap plan with stride 1 reads the stage in place too.

Blocks are peeled per dim (`for_blocks`): the blocks whose field lies inside the input are
one scf.for and read whole fields; border blocks and the remainder get constant offsets, so
their in-bounds part is computed here. The padding a border block reads is the strips of the
stage outside that part, refilled by the block (earlier loads may have written there): rows
strips on the stage viewed [tc, Hs*Ws], column strips on it viewed [tc*Hs, Ws]. A dim with a
single block always loads the same part, so its strips are filled once, before the loops.

This module is the geometry (dims, blocks, padding strips); `patch_layout.py` is where the
patch puts each output position, `im2col.py` builds the stage and patch and the vector-engine
loop nest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

from xdsl.ir import Operation

from aitc.dialects import graph
from aitc.passes.graph_to_tile.builder import Index, KernelBuilder
from aitc.passes.graph_to_tile.costs import vector_cycles
from aitc.passes.graph_to_tile.lowering import tensor_element, tensor_shape
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
        field of the block at constant o0 (a field all in the padding, as when the padding is
        wider than the window: count 0 at the stage's end)."""
        start = o0 * self.stride - self.pad
        low, high = max(0, start), min(self.size, start + self.span(t))
        return low, min(low - start, self.span(t)), max(0, high - low)


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
    def unit_stride(self) -> bool:
        return self.h.stride == self.w.stride == 1

    @property
    def direct(self) -> bool:
        """One tap, stride 1: the stage already is the patch (no tap copies)."""
        return self.taps == 1 and self.unit_stride


def conv_geometry(op: graph.ConvOp) -> Geometry:
    """A conv as its window geometry (channels first or last)."""
    x, w = tensor_shape(op.input), tensor_shape(op.weight)
    h, wd = window_dims(op, w[2:])
    groups = op.groups()
    return Geometry(x[0], x[op.channel_dim()] // groups, groups, w[0] // groups, h, wd)


def tap_major_order(rank: int) -> tuple[int, ...]:
    """The permutation of a conv weight [C_out, C/g, k...] into its tap-major layout
    [C_out, k..., C/g] (OHWI in 2-D; `WindowPlan.per_tap`)."""
    return (0, *range(2, rank), 1)


def window_problem(op: Operation) -> str | None:
    """Why a conv or pooling op is not lowered (f32, or an i8 conv in channels-first layout;
    1-D or 2-D, non-empty), else None."""
    element = str(tensor_element(op.operands[0]))
    conv = op if isinstance(op, graph.ConvOp) and op.is_integer() and not op.is_channels_last() else None
    int8_max_pool = isinstance(op, graph.MaxPoolOp) and element == "i8" and not op.is_channels_last()
    if element != "f32" and conv is None and not int8_max_pool:
        return f"{op.name} is lowered for f32, and channels-first i8 convs and max pools, got {element}"
    if (
        conv is not None
        and (conv.input_zero_point() or conv.bias is not None)
        and not all(v is None or isinstance(v.owner, graph.ConstantOp) for v in (conv.weight, conv.bias))
    ):
        return (
            "an i8 conv with an input zero point or a bias needs a constant weight and bias (the "
            "column that corrects the padding and adds the bias is computed at compile time)"
        )
    rank = len(tensor_shape(op.operands[0]))
    if rank not in (3, 4):
        return f"{rank - 2}-D {op.name} is not lowered (only 1-D and 2-D)"
    if 0 in tensor_shape(op.operands[0]) or 0 in tensor_shape(op.results[0]):
        return "zero-size tensors have no buffers"
    return None


def window_dims(op: graph.WindowOp, kernel: Sequence[int]) -> tuple[WindowDim, WindowDim]:
    """The (h, w) dims of a 1-D or 2-D conv/pool (1-D: h is a trivial dim of size 1)."""
    strides, pads, dilations = op.window()
    out = tensor_shape(op.results[0])
    sizes, outs = op.spatial_sizes(), (out[1:-1] if op.is_channels_last() else out[2:])
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


@cache
def block_runs(dim: WindowDim, tile: int) -> tuple[BlockRun, ...]:
    """The blocks of `tile` outputs: leading border blocks, the run of blocks inside the input
    (contiguous: both bounds are monotone in o0), trailing border blocks, the remainder.
    Remembered: the tile planner asks for the same runs for every candidate of a dim."""
    full = dim.out // tile
    inner = [b for b in range(full) if dim.inside(b * tile, tile)]
    first, stop = (inner[0], inner[-1] + 1) if inner else (full, full)
    runs = [BlockRun(b * tile, tile, 1, False) for b in range(first)]
    runs += [BlockRun(first * tile, tile, stop - first, True)] if stop > first else []
    runs += [BlockRun(b * tile, tile, 1, False) for b in range(stop, full)]
    rest = dim.out - full * tile
    runs += [BlockRun(full * tile, rest, 1, dim.inside(full * tile, rest))] if rest else []
    return tuple(runs)


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
    g: Geometry,
    block: tuple[int, int, int],
    strips: list[tuple[str, int, int]],
    target: Target | None,
) -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    """(view, origin, sizes) of the fills covering `strips`: each row strip on the stage viewed
    [tc, Hs*Ws] ("planes"), each column strip on it viewed [tc*Hs, Ws] ("lines"), or, for the
    vector engine (`target` given), the whole stage at once when that costs fewer vector
    cycles (narrow column strips waste the lanes)."""
    if not strips:
        return []
    rows, cols, tc = block
    hs, ws = g.h.stage(rows), g.w.stage(cols)

    def window(name: str, low: int, high: int) -> tuple[str, tuple[int, int], tuple[int, int]]:
        if name == "h":
            return "planes", (0, low * ws), (tc, (high - low) * ws)
        return "lines", (0, low), (tc * hs, high - low)

    each = [window(*strip) for strip in strips]
    if target is None:
        return each
    on = target

    def cycles(fills: list[tuple[str, tuple[int, int], tuple[int, int]]]) -> int:
        return sum(vector_cycles(on, "mul", *size) for _, _, size in fills)

    return min(each, [("lines", (0, 0), (tc * hs, ws))], key=cycles)


def refill_windows(
    g: Geometry, block: tuple[int, int, int], blocks: tuple[Block | BlockRun, Block | BlockRun]
) -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    """(view, origin, sizes) of all the padding strips of the stage of `blocks` (those of the
    dims with a single block too), as `fill_windows` cuts them, for copies from a tile of the
    padding value (`padding_sources`)."""
    tiles = block[:2]
    strips = padding_strips(g, tiles, blocks, prefill=True) + padding_strips(g, tiles, blocks, prefill=False)
    return fill_windows(g, block, strips, None)


@cache
def padding_sources(g: Geometry, block: tuple[int, int, int]) -> dict[str, tuple[int, int]]:
    """Per stage view ("planes", "lines"), the shape of the tile of padding values that the
    copies of `refill_windows` read from: the largest strip of any block."""
    shapes: dict[str, tuple[int, int]] = {}
    for h in block_runs(g.h, block[0]):
        for w in block_runs(g.w, block[1]):
            for view, _, (rows, cols) in refill_windows(g, block, (h, w)):
                known = shapes.get(view, (0, 0))
                shapes[view] = (max(known[0], rows), max(known[1], cols))
    return shapes
