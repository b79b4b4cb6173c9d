"""The im2col patch of a window kernel (see window.py's module docstring): where it puts each
output position of a block (`PatchLayout`) and the tile.copy that moves one tap into it
(`TapCopy`). Shared by the window kernels (`im2col.py`) and their cost model (`window_costs.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from aitc.passes.graph_to_tile.window import Geometry


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
    columns run into).

    The derived sizes are computed once per layout (the tile planner asks for them often)."""

    g: Geometry
    rows: int
    cols: int
    tc: int
    order: str = "channel"

    @cached_property
    def hs(self) -> int:
        return self.g.h.stage(self.rows)

    @cached_property
    def ws(self) -> int:
        return self.g.w.stage(self.cols)

    @cached_property
    def pitch(self) -> int:
        """Patch columns from one output row of a block to the next."""
        return self.g.h.stride * self.ws // self.g.w.stride if self.rows > 1 else self.cols

    @cached_property
    def flat(self) -> bool:
        return self.order == "tap" and self.g.w.stride > 1 and not self.g.direct

    @cached_property
    def planes(self) -> int:
        """Stage planes: tc, and a spare one for `flat` taps."""
        return self.tc + int(self.flat)

    def positions(self, rows: int, cols: int) -> int:
        """Patch columns of a block of rows x cols outputs (garbage between rows included)."""
        return (rows - 1) * self.pitch + cols

    @cached_property
    def width(self) -> int:
        """Patch columns: those of a full block (the most any block uses), a plane if `flat`."""
        if self.flat:
            return self.hs * self.ws // self.g.w.stride
        return self.positions(self.rows, self.cols)

    @cached_property
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
