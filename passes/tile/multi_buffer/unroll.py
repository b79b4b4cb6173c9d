"""The rewrite of a rotated loop: the self-contained uses of a buffer right around the loop,
and the loop unrolled by the depth, copy k of the body on copy k of the buffers, with the
trip-count remainder as a straight-line epilogue.

    %a ... ; scf.for %i = 0 to 7 step 1 { body(%i, %a) }
        ==>  scf.for %i = 0 to 6 step 2 { body(%i, %a) ; body(%i + 1, %a_1) } ; body(6, %a)
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from aitc.analysis.tile_footprint import loop_bounds, root_of, trip_count
from aitc.dialects import tile
from aitc.passes.tile.multi_buffer.copies import views
from aitc.passes.tile.multi_buffer.exposure import dead_after, following, scan
from aitc.passes.tile.multi_buffer.regions import holders


def segment_before(loop: scf.ForOp, root: SSAValue) -> list[Operation]:
    """The ops right before `loop` (same block) from the nearest one that starts a
    self-contained use of `root` (it writes all it reads) on: they can use any copy."""
    holding = holders(root)
    touching: list[Operation] = []
    node = loop.prev_op
    while node is not None:
        if node in holding:
            touching.insert(0, node)
            if not scan(touching, root, [], holding)[0]:
                return touching if _renamable(touching, root) else []
        node = node.prev_op
    return []


def segment_after(loop: scf.ForOp, root: SSAValue) -> list[Operation]:
    """The ops after `loop` (same block) that use `root`, when they are self-contained and
    nothing after the block reads what they write."""
    holding = holders(root)
    touching = [op for op in following(loop) if op in holding]
    if not touching or scan(touching, root, [], holding)[0] or not _renamable(touching, root):
        return []
    last = touching[-1]
    return touching if dead_after(last, root, [], loop, holding) else []


def _renamable(ops: Sequence[Operation], root: SSAValue) -> bool:
    """Whether a segment may move to another copy of `root`: no loop in it writes `root` (that
    loop rotates it itself), and no view of `root` made inside it is used outside it."""
    inside = {nested for op in ops for nested in op.walk()}
    for loop in inside:
        if isinstance(loop, scf.ForOp) and any(
            isinstance(w, tile.WindowOp) and root_of(w.accesses()[-1][0]) is root for w in loop.walk()
        ):
            return False
    made = [v for v in views(root) if v in inside]
    return all(use.operation in inside for v in made for use in v.result.uses)


def _index(builder: Builder, value: int, loop: scf.ForOp) -> SSAValue:
    """An index constant, located at `loop` (so it names the ONNX node, as the loop does)."""
    constant = arith.ConstantOp(IntegerAttr(value, IndexType()))
    constant.location = loop.location
    constant.result.name_hint = f"c{value}"
    return builder.insert(constant).result


def _clone_body(loop: scf.ForOp, builder: Builder, mapping: dict[SSAValue, SSAValue]) -> None:
    """Appends a copy of the body (terminator aside); `mapping` grows with the copied results."""
    for op in loop.body.block.ops:
        if not isinstance(op, scf.YieldOp):
            builder.insert(op.clone(value_mapper=mapping))


def unroll(loop: scf.ForOp, depth: int, renames: Sequence[dict[SSAValue, SSAValue]]) -> scf.ForOp:
    """Builds, before `loop`, the loop unrolled by `depth` (copy k of the body renamed by
    `renames[k]`, at IV + k x step; `loop`'s attributes) and after it the epilogue (the
    remaining trip-count mod depth iterations, at constant indices); returns the new loop."""
    bounds, trips = loop_bounds(loop), trip_count(loop)
    assert bounds is not None
    assert trips is not None
    lb, _, step = bounds
    main = trips // depth
    outside = Builder(InsertPoint.before(loop))
    body = Block(arg_types=[IndexType()])
    offsets = [_index(outside, k * step, loop) for k in range(1, depth)]
    new_ub, new_step = _index(outside, lb + main * depth * step, loop), _index(outside, depth * step, loop)
    inside = Builder(InsertPoint.at_end(body))
    body.args[0].name_hint = loop.body.block.args[0].name_hint
    for k in range(depth):
        iv = body.args[0] if k == 0 else inside.insert(arith.AddiOp(body.args[0], offsets[k - 1])).result
        iv.name_hint = body.args[0].name_hint
        if isinstance(iv.owner, Operation):  # the added arith.addi (k > 0), not the block argument
            iv.owner.location = loop.location
        _clone_body(loop, inside, {loop.body.block.args[0]: iv, **renames[k]})
    inside.insert(scf.YieldOp())
    main_loop = outside.insert(scf.ForOp(loop.lb, new_ub, new_step, [], body))
    main_loop.location = loop.location
    main_loop.attributes.update(loop.attributes)
    for k in range(trips % depth):
        iv = _index(outside, lb + (main * depth + k) * step, loop)
        _clone_body(loop, outside, {loop.body.block.args[0]: iv, **renames[k]})
    return main_loop
