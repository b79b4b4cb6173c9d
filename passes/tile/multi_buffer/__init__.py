"""`multi-buffer`: rotate `depth` copies of each buffer a loop rewrites every iteration, so the
DMA of iteration i+1 can overlap the compute of iteration i once engines run concurrently.

    scf.for %i = 0 to 7 step 1 {            %a1 = tile.alloc                (depth 2)
      tile.copy %x[%i] to %a                scf.for %i = 0 to 6 step 2 {
      compute(%a)                 ==>         tile.copy %x[%i] to %a ; compute(%a)
    }                                         tile.copy %x[%i + 1] to %a1 ; compute(%a1)
                                            }
                                            tile.copy %x[6] to %a ; compute(%a)   (epilogue)

Iteration j always uses copy j mod depth, but no modulo is computed: the loop is unrolled by
depth (copy k of the body uses buffer k and index %i + k * step) and the trip-count remainder
becomes straight-line epilogue copies with constant indices.

Which buffers rotate. A buffer is *private* to an iteration when every byte the iteration reads
was written earlier in the same iteration (`exposure.scan`: reads, as index ranges, against the
regions that writes certainly cover: windows at constant indices, the union of a loop's windows
at `iv + c` that tile each step, and a fill (`x = (x == 0) * 0`, which reads nothing that
matters)), and *dead at the exit* when nothing after the loop (the rest of the block, the next
iterations of the enclosing loops up to the loop itself, what follows them) reads a byte before
rewriting it. Rotating such a buffer cannot change what any read sees. Candidates are the
buffers whose first access in an iteration writes them: loaded from DRAM, or SRAM/ACC tiles
one engine writes for another (an accumulator read by the vector engine, an output tile stored
by DMA, a block summed in SRAM and stored). The loop's own loads set the depth; its compute
tiles, then the buffers first written inside an inner loop (rotated there already: here they
rotate as one group, so the next instance of the inner loop need not wait for all of the
previous one) join while SRAM and ACC hold them.

Straight-line code around the loop (a peeled first iteration, a remainder tile) may use the
same buffer if it is a self-contained segment (it writes what it reads): the segment right
before the loop then takes copy depth - 1 and the one right after it copy trips mod depth, as
iterations -1 and trips would, so its DMA overlaps the loop's compute instead of waiting for it.
A buffer that an earlier loop already rotated reuses that loop's copies (those the loop being
rotated does not use itself).

This module is the driver (`pipeline_loop`, `rotate`: numbered steps) and the pass; the facts
it needs are the shared tile access analysis (`aitc.analysis.tile_footprint`: windows, index
ranges, loop bounds) and the package's modules:

    regions.py     what a window may read and certainly writes, as boxes of indices
    exposure.py    reads not preceded by a write: private to an iteration, dead after the loop
    candidates.py  the buffers a loop could rotate, and why any cannot
    budget.py      the depth the trip count and SRAM/ACC allow
    copies.py      the extra buffers (new, or an earlier loop's), and moving ops onto them
    unroll.py      the segments around the loop, the unrolled loop and its epilogue
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from aitc.analysis.tile_footprint import trip_count
from aitc.dialects import tile
from aitc.module_target import module_target
from aitc.passes.tile.multi_buffer.budget import choose_depth, scope_of, working_sets
from aitc.passes.tile.multi_buffer.candidates import Candidate, candidates
from aitc.passes.tile.multi_buffer.copies import Families, copies, rename_in
from aitc.passes.tile.multi_buffer.unroll import segment_after, segment_before, unroll
from aitc.target import Target

DEPTH_ATTR = "buffer_depth"
REASON_ATTR = "buffer_depth_reason"


def _groups(found: Sequence[Candidate], families: Families) -> list[list[SSAValue]]:
    """What rotates together, in order of first appearance: the buffers first written inside
    one inner loop (all of them, or the next instance of that loop still waits for the previous
    one through the copies they share), else a buffer with the copies made of it."""
    groups: dict[object, list[SSAValue]] = {}
    for c in found:
        origin = c.root
        while origin in families.copy_of:
            origin = families.copy_of[origin]
        groups.setdefault(c.item if c.nested else origin, []).append(c.root)
    return list(groups.values())


def _annotate(loop: scf.ForOp, depth: int, reason: str) -> None:
    loop.attributes[DEPTH_ATTR] = IntegerAttr(depth, i64)
    loop.attributes[REASON_ATTR] = StringAttr(reason)


def _depth_one(loop: scf.ForOp, loads: Sequence[Candidate], reason: str) -> int:
    """A loop that does not rotate: depth 1 and why when it has loads of its own, else 0."""
    if not loads:
        return 0
    _annotate(loop, 1, reason)
    return 1


def _refusal(loop: scf.ForOp, loads: Sequence[Candidate]) -> str | None:
    """Why `loop` cannot rotate whatever the depth (None if it may)."""
    if trip_count(loop) is None or loop.iter_args:
        what = "loop-carried values" if loop.iter_args else "bounds or step not constant (index)"
        return f"depth 1: {what}; unrolling needs a known trip count"
    problems = [c.problem for c in loads if c.problem is not None]
    if loads and len(problems) == len(loads):
        return f"depth 1: {problems[0]}"
    return None


def pipeline_loop(loop: scf.ForOp, depth: int, target: Target, families: Families | None = None) -> int:
    """Multi-buffers one loop if it rewrites buffers every iteration; returns the depth used
    (0: nothing to rotate). The DRAM loads of the loop's own body decide the depth (or, without
    them, the first rotatable buffers below); then, while the memories hold them at that depth,
    the loop's compute tiles (accumulators, output tiles), then the buffers first written in
    inner loops (loads, then tiles) join."""
    families = families or Families()
    # 1. Find the buffers an iteration writes before it reads them, and why any cannot rotate.
    found = candidates(loop)
    loads = [c for c in found if c.loaded and not c.nested]
    ok = sorted((c for c in found if c.problem is None), key=lambda c: (c.nested, not c.loaded))
    if not loads and not ok:
        return 0
    # 2. Refuse a loop that cannot unroll, or whose own loads cannot rotate.
    refusal = _refusal(loop, loads)
    if refusal is not None:
        return _depth_one(loop, loads, refusal)
    # 3. Choose the depth for the leaders (the loop's own loads, else the first candidate).
    leading = [c.root for c in loads if c.problem is None] or [ok[0].root]
    working = working_sets(scope_of(loop))  # the IR stays as it is until `rotate`
    chosen, reason = choose_depth(loop, leading, depth, target, families, working)
    if chosen == 1:
        return _depth_one(loop, loads, reason)
    # 4. Add the other candidates, whole groups only (see _groups), while they fit at that depth.
    rotating = list(leading)
    for group in _groups(ok, families):
        extra = [b for b in group if b not in rotating]
        if extra and choose_depth(loop, [*rotating, *extra], chosen, target, families, working)[0] == chosen:
            rotating += extra
    reason = choose_depth(loop, rotating, depth, target, families, working)[1]
    rotate(loop, rotating, chosen, reason, families)
    return chosen


def rotate(
    loop: scf.ForOp, buffers: Sequence[SSAValue], depth: int, reason: str, families: Families | None = None
) -> None:
    """Unrolls `loop` by `depth`, copy k of the body using buffer copy k, plus an epilogue; the
    self-contained uses right before and after the loop take copies depth - 1 and trips mod depth."""
    families = families or Families()
    trips = trip_count(loop)
    assert trips is not None
    renames: list[dict[SSAValue, SSAValue]] = [{} for _ in range(depth)]
    for buffer in buffers:
        # 5. Find the self-contained uses of the buffer right before and after the loop.
        before, after = segment_before(loop, buffer), segment_after(loop, buffer)
        # 6. Take copies 1 .. depth - 1 of the buffer: an earlier loop's, else new tile.allocs.
        mine: list[dict[SSAValue, SSAValue]] = [{}, *copies(buffer, depth, loop, families)]
        for k in range(1, depth):
            renames[k].update(mine[k])
        # 7. Move the segments onto the copies iterations -1 and trips would use (this buffer only).
        rename_in(before, mine[depth - 1])
        rename_in(after, mine[trips % depth])
    # 8. Unroll: copy k of the body on copy k of the buffers; the remainder as an epilogue.
    _annotate(unroll(loop, depth, renames), depth, reason)
    # 9. Erase the old loop.
    loop.detach()
    loop.erase()


@dataclass(frozen=True)
class MultiBufferPass(ModulePass):
    """Multi-buffers (pipelines) the DRAM loads, accumulator tiles and output tiles of tile loops.

    Input:
      Tile-level functions with scf.for loops, before plan-memory (new buffers get no offset).
      The target: the module's `aitc.target`, else the `target` option (`aitc.module_target`).
    Output:
      For each scf.for, innermost first, whose body rewrites a buffer (or a tile.reshape view of
      it) allocated outside the loop before any other access in each iteration, and whose value
      nothing after the loop reads (module docstring): `depth` - 1 extra tile.allocs of the same
      type (with copies of the views made before the loop; copies an earlier loop made for the
      buffer are reused); the loop unrolled by the depth (step x depth, copy k of the body on
      buffer k and IV + k x step); the remainder of the trip count as straight-line epilogue
      copies after it; the self-contained uses of the buffer right before / after the loop on
      copies depth - 1 / trips mod depth. Rotated: buffers loaded from DRAM, then SRAM/ACC tiles
      written by one engine and read by another (accumulators, output tiles, blocks), then the
      buffers inner loops rotate (as whole groups), while they fit. The depth shrinks to the
      trip count and to what the scope's SRAM/ACC holds (the sum of the kernel's buffers plus
      the extra copies, vs the target). A loop that rotates gets `buffer_depth` and
      `buffer_depth_reason` (e.g. "depth 2: 2 x 8 KiB of SRAM"), its tile.kernel
      `buffer_depth` (the largest). Loops with loads that cannot be rotated
      (non-constant bounds, loop-carried values, a buffer read before it is rewritten or read
      after the loop) keep their shape and get depth 1 and why.
    Invariants:
      Same results as before for every trip count (0, 1, < depth, ...); indices stay affine in
      the IVs (no modulo); depth=1 changes nothing; loops already carrying `buffer_depth` are
      left alone, so a second run changes nothing.
    """

    name = "multi-buffer"
    depth: int = 2
    target: str | None = None
    """A preset name or FILE.toml, for a module without `aitc.target` (`aitc.module_target`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.depth < 1:
            raise PassFailedException(f"multi-buffer: depth must be >= 1, got {self.depth}")
        if self.depth == 1:  # changes nothing, needs no target; a target option is still recorded
            if self.target is not None:
                module_target(op, self.target, self.name)
            return
        target = module_target(op, self.target, self.name)
        families = Families()
        loops = [
            loop for loop in op.walk() if isinstance(loop, scf.ForOp) and DEPTH_ATTR not in loop.attributes
        ]
        for loop in reversed(loops):  # reversed pre-order: inner loops before the loops around them
            kernel = scope_of(loop)
            used = pipeline_loop(loop, self.depth, target, families)
            if isinstance(kernel, tile.KernelOp) and used:
                previous = kernel.attributes.get(DEPTH_ATTR)
                best = max(used, previous.value.data if isinstance(previous, IntegerAttr) else 0)
                kernel.attributes[DEPTH_ATTR] = IntegerAttr(best, i64)
