"""The depth a loop can afford: at most the requested depth and the trip count, and within
what SRAM and ACC hold when every buffer of the scope (its tile.kernel, else its function) is
live at once, plus depth - 1 copies of the rotating buffers (copies an earlier rotation made
being in use already).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import func, scf
from xdsl.ir import Operation, SSAValue

from aitc.analysis.liveness import align_up, byte_size
from aitc.analysis.tile_footprint import trip_count
from aitc.dialects import tile
from aitc.passes.tile.multi_buffer.copies import Families
from aitc.target import Target


def _kib(size: int) -> str:
    return f"{size // 1024} KiB" if size >= 1024 and size % 1024 == 0 else f"{size} B"


def scope_of(loop: Operation) -> Operation:
    """The tile.kernel around `loop`, else its function: whose buffers share the SRAM."""
    node = loop.parent_op()
    while node is not None and not isinstance(node, tile.KernelOp | func.FuncOp):
        node = node.parent_op()
    return node or loop


def working_sets(scope: Operation) -> dict[str, int]:
    """Per space, bytes of the buffers allocated in or used by `scope`, all at once (aligned)."""
    buffers: dict[SSAValue, None] = {}
    for op in scope.walk():
        values = op.results if isinstance(op, tile.AllocOp) else op.operands
        buffers.update((v, None) for v in values if isinstance(v.owner, tile.AllocOp))
    sizes: dict[str, int] = {}
    for b in buffers:
        space = tile.space_of(b)
        sizes[space] = sizes.get(space, 0) + align_up(byte_size(tile.memref_of(b)))
    return sizes


@dataclass(frozen=True)
class Budget:
    """One memory that rotated buffers live in: bytes in use, bytes per extra copy, capacity."""

    space: str
    base: int
    per_copy: int
    capacity: int

    def need(self, depth: int) -> int:
        return self.base + (depth - 1) * self.per_copy


def budgets(
    loop: scf.ForOp,
    buffers: Sequence[SSAValue],
    target: Target,
    depth: int = 2,
    families: Families | None = None,
    working: dict[str, int] | None = None,
) -> list[Budget]:
    """SRAM and ACC: what the kernel uses (`working`: its `working_sets`, if known), and what
    each further copy of `buffers` adds (copies an earlier rotation made are already in use)."""
    families = families or Families()
    working = working_sets(scope_of(loop)) if working is None else working
    result = []
    for space, capacity in (("sram", target.sram_bytes), ("acc", target.acc_bytes)):
        mine = [b for b in buffers if tile.space_of(b) == space]
        if not mine:
            continue
        per_copy = sum(align_up(byte_size(tile.memref_of(b))) for b in mine)
        reused = sum(
            align_up(byte_size(tile.memref_of(b))) * min(families.reusable(b, loop), depth - 1) for b in mine
        )
        base = working.get(space, 0) - reused
        result.append(Budget(space.upper(), base, per_copy, capacity))
    return result


def choose_depth(
    loop: scf.ForOp,
    buffers: Sequence[SSAValue],
    depth: int,
    target: Target,
    families: Families | None = None,
    working: dict[str, int] | None = None,
) -> tuple[int, str]:
    """The depth to use (<= `depth`, <= trip count, within SRAM/ACC) and why (`working`: as
    for `budgets`)."""
    trips = trip_count(loop) or 0
    if trips < 2:
        return 1, f"depth 1: trip count {trips}, nothing to overlap"
    wanted = min(depth, trips)
    working = working_sets(scope_of(loop)) if working is None else working

    def fits(d: int) -> bool:
        return all(m.need(d) <= m.capacity for m in budgets(loop, buffers, target, d, families, working))

    chosen = next((d for d in range(wanted, 1, -1) if fits(d)), 1)
    limit = f"trip count {trips}"
    memories = budgets(loop, buffers, target, wanted, families, working)
    over = [m for m in memories if m.need(wanted) > m.capacity]
    if over:
        need, capacity = _kib(over[0].need(wanted)), _kib(over[0].capacity)
        limit = f"{over[0].space} budget: depth {wanted} needs {need} of {capacity}"
    if chosen == 1:
        return 1, f"depth 1: {limit}"
    copies = " + ".join(f"{chosen} x {_kib(m.per_copy)} of {m.space}" for m in memories)
    return chosen, f"depth {chosen}: {copies}" + (f" ({limit})" if chosen < depth else "")
