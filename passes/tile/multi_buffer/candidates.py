"""The buffers a loop could rotate, and why any of them cannot.

A candidate's first access in an iteration writes it (and reads nothing of it): a DRAM load, or
an SRAM/ACC tile that one engine writes for another (an accumulator read by the vector engine,
an output tile stored by DMA). A tile written and read on one engine is no candidate: its ops
run in order anyway, so there is nothing to overlap.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.ir import Block, Operation, SSAValue

from aitc.analysis.liveness import users
from aitc.analysis.tile_footprint import root_of
from aitc.dialects import tile
from aitc.passes.tile.multi_buffer.exposure import dead_after, private
from aitc.passes.tile.multi_buffer.regions import effects, holders


@dataclass
class Candidate:
    """A buffer a loop could rotate: `loaded` (a DRAM load writes it) or a compute tile."""

    root: SSAValue
    loaded: bool
    problem: str | None = None
    nested: bool = False
    item: Operation | None = None
    """The op of the loop's body that holds the first access (an inner loop, when nested)."""


def _name(buffer: SSAValue) -> str:
    return f"%{buffer.name_hint}" if buffer.name_hint else f"the {buffer.type} buffer"


def _engine(op: Operation) -> str:
    return tile.ENGINE_OF[type(op)] if isinstance(op, tile.WindowOp) else "?"


def _first_touch(block: Block, root: SSAValue, touching: set[Operation]) -> Operation | None:
    """The first op (nested ones included) of `block` that accesses `root` (`touching`:
    `holders(root)`)."""
    for op in block.ops:
        if op not in touching:
            continue
        if isinstance(op, tile.WindowOp):
            return op
        for region in op.regions:
            found = _first_touch(region.block, root, touching)
            if found is not None:
                return found
        return op
    return None


def candidates(loop: scf.ForOp) -> list[Candidate]:
    """The buffers whose first access in an iteration writes them (and reads nothing of them):
    DRAM loads (as before), and SRAM/ACC tiles written by one engine for another; with why each
    cannot rotate (if so). `nested`: the first access is inside an inner loop (e.g. the tiles
    of a K loop seen from the loop over output blocks; rotating them there too lets the next
    instance of the inner loop start before the previous one has drained)."""
    found: dict[SSAValue, Candidate] = {}
    seen: set[SSAValue] = set()  # what a buffer is here depends on the buffer only
    for op in loop.body.block.walk():
        if not isinstance(op, tile.WindowOp):
            continue
        root = root_of(op.accesses()[-1][0])
        if root in seen or not isinstance(root.owner, tile.AllocOp) or tile.space_of(root) == "dram":
            continue
        seen.add(root)
        touching = holders(root)
        first = _first_touch(loop.body.block, root, touching)
        if not isinstance(first, tile.WindowOp) or not all(
            e.writes and e.read is None for e in effects(first, root)
        ):
            continue
        loaded = isinstance(first, tile.CopyOp) and tile.space_of(first.access("src")[0]) == "dram"
        readers = {_engine(user) for user in users(root) if loop.is_ancestor(user) and user is not first}
        if not loaded and not (readers - {_engine(first)}):
            continue  # written and read on one engine: in order anyway, nothing to overlap
        nested = first.parent_op() is not loop
        item = first
        while (parent := item.parent_op()) is not loop:
            assert parent is not None  # `first` is inside `loop`
            item = parent
        found[root] = Candidate(root, loaded, _rotation_problem(loop, root, touching), nested, item)
    return list(found.values())


def _rotation_problem(loop: scf.ForOp, root: SSAValue, touching: set[Operation]) -> str | None:
    """Why `root` cannot rotate in `loop` (None if it can); `touching` is `holders(root)`."""
    if isinstance(root.owner, Operation) and loop.is_ancestor(root.owner):
        return f"{_name(root)} is not a tile.alloc outside the loop"
    if not private(loop, root, touching):
        return f"{_name(root)} is read before the loop body rewrites all of it"
    if not dead_after(loop, root, touching=touching):
        return f"{_name(root)} is used outside the loop"
    return None
