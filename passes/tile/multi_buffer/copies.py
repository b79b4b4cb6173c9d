"""The extra copies of a rotated buffer: new tile.allocs of its type (with copies of its views),
or the copies an earlier loop made for the same buffer, which a later loop reuses.

Copy k of a buffer is a renaming: the buffer and each view made of it before the loop that
created the copy, mapped to their counterparts (`Families.copies`).

    %a = tile.alloc          %a = tile.alloc      %a_1 = tile.alloc
    %v = tile.reshape %a     %v = tile.reshape %a %v_1 = tile.reshape %a_1    copy 1: {%a: %a_1, %v: %v_1}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.builder import Builder
from xdsl.dialects import scf
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint

from aitc.analysis.liveness import users
from aitc.dialects import tile


@dataclass
class Families:
    """The extra copies made so far, per original buffer: copy k (k >= 1) renames the buffer
    and its views made before the loop that created it."""

    copies: dict[SSAValue, list[dict[SSAValue, SSAValue]]] = field(default_factory=dict)
    copy_of: dict[SSAValue, SSAValue] = field(default_factory=dict)

    def reusable(self, buffer: SSAValue, loop: scf.ForOp) -> int:
        """How many copies of `buffer` `loop` could reuse (none that it already uses)."""
        return sum(
            not any(loop.is_ancestor(user) for user in users(rename[buffer]))
            for rename in self.copies.get(buffer, [])
        )


def views(buffer: SSAValue) -> list[tile.ReshapeOp]:
    """The tile.reshape views of `buffer`, views of views included, sources before their views."""
    found: list[tile.ReshapeOp] = []
    for use in buffer.uses:
        if isinstance(use.operation, tile.ReshapeOp):
            found += [use.operation, *views(use.operation.result)]
    return found


def _extra_buffers(
    buffer: SSAValue, first: int, count: int, loop: scf.ForOp
) -> list[dict[SSAValue, SSAValue]]:
    """`count` new tile.allocs of the type of `buffer` (named `first`, `first` + 1, ...), right
    after its alloc, each with copies of the views made of `buffer` outside `loop`: per copy,
    what it renames."""
    alloc = buffer.owner
    assert isinstance(alloc, tile.AllocOp)
    builder = Builder(InsertPoint.after(alloc))
    renames = []
    for k in range(first, first + count):
        new = builder.insert(tile.AllocOp(alloc.buffer.type))
        new.location = alloc.location
        new.buffer.name_hint = f"{buffer.name_hint or 'buf'}_{k}"
        renames.append({buffer: new.buffer})
    for rename in renames:
        for view in views(buffer):
            if not loop.is_ancestor(view):
                clone = view.clone(value_mapper=rename)  # maps the view's result too
                Builder(InsertPoint.after(view)).insert(clone)
    return renames


def copies(
    buffer: SSAValue, depth: int, loop: scf.ForOp, families: Families
) -> list[dict[SSAValue, SSAValue]]:
    """Copies 1 .. depth - 1 of `buffer`: those an earlier rotation made (unless `loop` already
    uses them, e.g. an inner loop rotating the buffer), then new ones."""
    family = families.copies.setdefault(buffer, [])
    needed = {view.result for view in views(buffer) if not loop.is_ancestor(view)}
    usable = [
        rename
        for rename in family
        if needed <= rename.keys() and not any(loop.is_ancestor(user) for user in users(rename[buffer]))
    ]
    if len(usable) < depth - 1:
        new = _extra_buffers(buffer, len(family) + 1, depth - 1 - len(usable), loop)
        families.copy_of.update((rename[buffer], buffer) for rename in new)
        family += new
        usable += new
    return usable[: depth - 1]


def rename_in(ops: Sequence[Operation], mapping: dict[SSAValue, SSAValue]) -> None:
    """Moves `ops` (and the ops nested in them) onto a copy: operands renamed by `mapping`."""
    for op in ops:
        for nested in op.walk():
            if any(v in mapping for v in nested.operands):
                nested.operands = tuple(mapping.get(v, v) for v in nested.operands)
