"""im2col by DMA for the window kernels of convert-graph-to-tile (see window.py's module
docstring): the stage and patch of one kernel and the DMAs that fill them (`Im2col`), and the
loop nest of a vector-engine window kernel (`VectorWindow`). Shared by graph_to_tile_conv and
graph_to_tile_pool.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import f32
from xdsl.ir import Attribute, SSAValue

from aitc.passes.graph_to_tile.builder import Index, KernelBuilder, Win
from aitc.passes.graph_to_tile.elementwise import fill
from aitc.passes.graph_to_tile.movement import kernel_view
from aitc.passes.graph_to_tile.patch_layout import PatchLayout
from aitc.passes.graph_to_tile.window import (
    Block,
    Geometry,
    WindowDim,
    block_runs,
    fill_windows,
    for_blocks,
    padding_sources,
    padding_strips,
    prefill_strips,
    refill_windows,
)


class Im2col:
    """The stage and patch of one window kernel and the DMAs that fill them (window.py's
    module doc). `order` is "channel" (matrix engine) or "tap" (vector engine)."""

    def __init__(
        self,
        kb: KernelBuilder,
        g: Geometry,
        block: tuple[int, int, int],
        order: str,
        pad_value: float = 0.0,
        per_tap: bool = False,
        element: Attribute = f32,
    ):
        """`block` = (R, Q, tc): output rows, output cols and channels per chunk. `per_tap`
        (`WindowPlan.per_tap`): with stride 1 no tap copies, the matmuls read the stage, viewed
        flat per channel (`patch`), at each tap's first element; and `refill`. `element`: the
        input's element type (the stage's and the patch's)."""
        self.kb, self.g, self.order, self.pad_value = kb, g, order, pad_value
        self.in_place = g.direct or (per_tap and g.unit_stride)
        self.refill = per_tap and not g.direct
        """Every load copies all the stage's padding from tiles of the padding value (filled
        once) first, so each load writes the whole stage and multi-buffer can rotate it (the
        matmuls read it in place, so it holds one chunk at a time). Copies, not vector fills:
        the fills of the next chunk would wait for this chunk's epilogue on the in-order vector
        engine, and the next load for them."""
        self.rows, self.cols, self.tc = block
        self.layout = layout = PatchLayout(g, *block, order)
        tc = self.tc
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
        if self.in_place:
            self.patch = self._view([tc, hs * ws])
        else:  # the views the tap copies go through, before any loop
            self.patch = kb.alloc([g.taps * tc, layout.width], element, "sram")
            shapes = layout.tap_copy(0, 0, tc, layout.width)
            self._view(shapes.src_shape)
            self._view(shapes.dst_shape, self.patch)
        self.padding: dict[str, SSAValue] = {}
        if self.refill:
            for view, shape in padding_sources(g, block).items():
                self.padding[view] = kb.alloc(list(shape), element, "sram")
                fill(kb, Win.at(self.padding[view]), pad_value, list(shape), ahead=True)
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
        """Before the loops: the padding of the dims that have a single block (at every load
        when `refill`)."""
        if not self.refill:
            self._fill(prefill_strips(self.g, (self.rows, self.cols)))

    def prepare(self, hb: Block, wb: Block) -> None:
        """Before the chunks of a border block: its padding (each chunk then writes the same
        in-bounds part; at every load when `refill`)."""
        if not self.refill:
            self._fill(padding_strips(self.g, (self.rows, self.cols), (hb, wb), prefill=False))

    def _fill(self, strips: list[tuple[str, int, int]]) -> None:
        for view, at, sizes in fill_windows(self.g, (self.rows, self.cols, self.tc), strips, self.kb.target):
            fill(self.kb, Win(self.fill_views[view], at), self.pad_value, list(sizes))

    def load(self, src: SSAValue, channel: Index, cs: int, hb: Block, wb: Block) -> None:
        """Channels [channel, channel + cs) of `src` [B*C, H, W] for the block: the field into
        the stage, then (unless in place) every tap into the patch."""
        (h0, h_at, h_n), (w0, w_at, w_n) = self._field(self.g.h, hb), self._field(self.g.w, wb)
        for view, at, sizes in (
            refill_windows(self.g, (self.rows, self.cols, self.tc), (hb, wb)) if self.refill else ()
        ):
            self.kb.copy(Win.at(self.padding[view]), Win(self.fill_views[view], at), list(sizes))
        if h_n and w_n:
            self.kb.copy(Win(src, (channel, h0, w0)), Win(self.stage, (0, h_at, w_at)), [cs, h_n, w_n])
        if not self.in_place:
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
