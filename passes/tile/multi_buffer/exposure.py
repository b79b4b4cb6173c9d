"""Exposed reads: whether ops may read a byte of a buffer that they did not write first.

Rotating a buffer in a loop is safe when no read can tell the copies apart: every byte an
iteration reads it wrote earlier in the same iteration (`private`), and nothing after the loop
reads a byte before rewriting it (`dead_after`). Both run `scan` over ops in program order,
with the regions of `regions.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from aitc.analysis.tile_footprint import trip_count
from aitc.dialects import tile
from aitc.passes.tile.multi_buffer.regions import Box, Effect, Window, covers, effects, holders, merge, swept

NO_ACCESS = (tile.ReshapeOp, tile.AllocOp, arith.ConstantOp, scf.YieldOp)
"""Ops that `scan` passes over even when they name the buffer (a view, its definition)."""


def scan(
    ops: Iterable[Operation],
    root: SSAValue,
    covered: list[Box],
    touching: set[Operation] | None = None,
    written: tuple[Window, ...] = (),
) -> tuple[bool, list[Box]]:
    """Runs `ops` in program order: (whether one may read a byte of `root` that no earlier op
    of the sequence wrote, starting from `covered`; the regions certainly written after it).
    Only the ops in `touching` (`holders(root)`) can change either, so only those are looked at.
    Besides the boxes, the windows written so far are kept by name (`written`): a read of a
    window at the same index values as an earlier write, no larger, reads what that write
    wrote, even where an index varies with a loop, so its box is not known exactly (the first,
    non-accumulating matmul of each column block of an accumulator, then the accumulating
    ones: `iv` is the same value at both). A window written inside a loop at values the loop
    defines names other bytes once the loop moves on, so it is dropped at the loop's end."""
    return _scan(ops, root, covered, holders(root) if touching is None else touching, list(written))[:2]


def _scan(
    ops: Iterable[Operation],
    root: SSAValue,
    covered: list[Box],
    touching: set[Operation],
    written: list[Window],
) -> tuple[bool, list[Box], list[Window]]:
    covered = list(covered)
    for op in ops:
        if op not in touching or isinstance(op, NO_ACCESS):
            continue
        if isinstance(op, scf.ForOp | tile.KernelOp):
            exposed, after, inside = _scan(op.body.block.ops, root, covered, touching, list(written))
            if exposed:
                return True, covered, written
            if isinstance(op, tile.KernelOp):
                covered, written = after, inside
            elif (trip_count(op) or 0) >= 1:
                covered = merge(after + swept(op, root))
                written = [w for w in inside if not any(_defined_in(op, value) for value in w[1])]
        elif isinstance(op, tile.WindowOp):
            found = effects(op, root)
            if any(e.read is not None and not _read_covered(e, covered, written) for e in found):
                return True, covered, written
            covered = merge(covered + [e.write for e in found if e.write is not None])
            written += [e.window for e in found if e.writes and e.window is not None]
        else:
            return True, covered, written  # an op this model does not know: assume it reads everything
    return False, covered, written


def _read_covered(effect: Effect, covered: list[Box], written: list[Window]) -> bool:
    """Whether what `effect` reads was written before: inside the `covered` boxes, or a window
    at the same buffer value and index values as one in `written`, no larger in any dim."""
    assert effect.read is not None
    if covers(covered, effect.read):
        return True
    if effect.window is None:
        return False
    buffer, indices, box = effect.window
    return any(
        value is buffer and at == indices and all(a <= b for a, b in zip(box, size, strict=True))
        for value, at, size in written
    )


def _defined_in(loop: Operation, value: SSAValue) -> bool:
    """Whether `value` is defined inside `loop` (its induction variable included)."""
    owner = value.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    return op is not None and (op is loop or loop.is_ancestor(op))


def following(op: Operation) -> Iterator[Operation]:
    """The ops after `op` in its block."""
    node = op.next_op
    while node is not None:
        yield node
        node = node.next_op


def _prefix(container: Operation, target: Operation) -> Iterator[Operation]:
    """The ops that run from the start of `container`'s body until `target` starts (descending
    into the ops on the way that hold `target`)."""
    for op in container.regions[0].block.ops:
        if op is target:
            return
        if op.is_ancestor(target):
            yield from _prefix(op, target)
            return
        yield op


def private(loop: scf.ForOp, root: SSAValue, touching: set[Operation] | None = None) -> bool:
    """Every byte of `root` an iteration of `loop` reads was written earlier in the iteration."""
    return not scan(loop.body.block.ops, root, [], touching)[0]


def dead_after(
    item: Operation,
    root: SSAValue,
    covered: list[Box] | None = None,
    loop: Operation | None = None,
    touching: set[Operation] | None = None,
) -> bool:
    """Nothing that runs after `item` reads a byte of `root` before writing it: the rest of
    the block, then (the block being a loop body) the next iteration up to `loop` (which
    rewrites `root` first), then what follows the enclosing op, up to the function's end."""
    loop = loop or item
    touching = holders(root) if touching is None else touching
    exposed, covered = scan(following(item), root, covered or [], touching)
    if exposed:
        return False
    parent = item.parent_op()
    if parent is None or isinstance(parent, func.FuncOp | ModuleOp):
        return True
    if isinstance(parent, scf.ForOp):
        if scan(_prefix(parent, loop), root, covered, touching)[0]:
            return False
    elif not isinstance(parent, tile.KernelOp):
        return False
    return dead_after(parent, root, covered, loop, touching)
