"""`multi-buffer`: rotate `depth` copies of each buffer a loop loads from DRAM, so the DMA of
iteration i+1 can overlap the compute of iteration i once engines run concurrently.

    scf.for %i = 0 to 7 step 1 {            %a1 = tile.alloc                (depth 2)
      tile.copy %x[%i] to %a                scf.for %i = 0 to 6 step 2 {
      compute(%a)                 ==>         tile.copy %x[%i] to %a ; compute(%a)
    }                                         tile.copy %x[%i + 1] to %a1 ; compute(%a1)
                                            }
                                            tile.copy %x[6] to %a ; compute(%a)   (epilogue)

Iteration j always uses copy j mod depth, but no modulo is computed: the loop is unrolled by
depth (copy k of the body uses buffer k and index %i + k * step) and the trip-count remainder
becomes straight-line epilogue copies with constant indices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import PassFailedException

from aitc.dialects import tile
from aitc.passes.tile_liveness import align_up, byte_size, users
from aitc.passes.tile_plan_memory import resolve_target
from aitc.target import Target

DEPTH_ATTR = "buffer_depth"
REASON_ATTR = "buffer_depth_reason"


def constant_index(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _kib(size: int) -> str:
    return f"{size // 1024} KiB" if size >= 1024 and size % 1024 == 0 else f"{size} B"


def views(buffer: SSAValue) -> list[tile.ReshapeOp]:
    """The tile.reshape views of `buffer`, views of views included, sources before their views."""
    found: list[tile.ReshapeOp] = []
    for use in buffer.uses:
        if isinstance(use.operation, tile.ReshapeOp):
            found += [use.operation, *views(use.operation.result)]
    return found


def _name(buffer: SSAValue) -> str:
    return f"%{buffer.name_hint}" if buffer.name_hint else f"the {buffer.type} buffer"


def _touches(op: Operation, aliases: set[SSAValue]) -> bool:
    """Whether `op` accesses the bytes of `aliases` (making a view is no access)."""
    return any(
        not isinstance(nested, tile.ReshapeOp) and not aliases.isdisjoint(nested.operands)
        for nested in op.walk()
    )


def _is_full_load(op: Operation, aliases: set[SSAValue]) -> bool:
    """`op` is a DMA load from DRAM that writes every byte of the buffer (or of a view of it)."""
    if not isinstance(op, tile.CopyOp) or tile.space_of(op.access("src")[0]) != "dram":
        return False
    dst, indices = op.access("dst")
    shape = tuple(dst.type.get_shape())  # pyright: ignore
    return dst in aliases and op.box() == shape and all(constant_index(i) == 0 for i in indices)


def _rotation_problem(loop: scf.ForOp, buffer: SSAValue) -> str | None:
    """Why `buffer` cannot rotate in `loop` (None if it can)."""
    alloc = buffer.owner
    if not isinstance(alloc, tile.AllocOp) or loop.is_ancestor(alloc):
        return f"{_name(buffer)} is not a tile.alloc outside the loop"
    if any(not loop.is_ancestor(user) for user in users(buffer)):
        return f"{_name(buffer)} is used outside the loop"
    aliases = {buffer, *(view.result for view in views(buffer))}
    first = next(op for op in loop.body.block.ops if _touches(op, aliases))
    if not _is_full_load(first, aliases):
        return f"{_name(buffer)} is read before the loop body rewrites all of it"
    return None


def rotatable_buffers(loop: scf.ForOp) -> tuple[list[SSAValue], str | None]:
    """The buffers the loop body loads from DRAM (directly or through a view) that can rotate,
    and why others cannot."""
    loaded: list[SSAValue] = []
    for op in loop.body.block.ops:
        if isinstance(op, tile.CopyOp) and tile.space_of(op.access("src")[0]) == "dram":
            root = op.access("dst")[0]
            while isinstance(root.owner, tile.ReshapeOp):
                root = root.owner.source
            if root not in loaded:
                loaded.append(root)
    problems = [(b, _rotation_problem(loop, b)) for b in loaded]
    reason = next((p for _, p in problems if p is not None), None)
    return [b for b, p in problems if p is None], reason


def loop_bounds(loop: scf.ForOp) -> tuple[int, int, int] | None:
    """(lb, ub, step) when all three are `index` constants and step > 0, else None."""
    if not isinstance(loop.lb.type, IndexType):
        return None
    lb, ub, step = (constant_index(v) for v in (loop.lb, loop.ub, loop.step))
    if lb is None or ub is None or step is None or step <= 0:
        return None
    return lb, ub, step


def trip_count(loop: scf.ForOp) -> int | None:
    bounds = loop_bounds(loop)
    if bounds is None:
        return None
    lb, ub, step = bounds
    return max(0, -(-(ub - lb) // step))


# --------------------------------------------------------------------------- budget


def _scope(loop: scf.ForOp) -> Operation:
    """The tile.kernel around `loop`, else its function: whose buffers share the SRAM."""
    node = loop.parent_op()
    while node is not None and not isinstance(node, tile.KernelOp | func.FuncOp):
        node = node.parent_op()
    return node or loop


def working_set(scope: Operation, space: str) -> int:
    """Bytes of the `space` buffers allocated in or used by `scope`, all at once (aligned)."""
    buffers: dict[SSAValue, None] = {}
    for op in scope.walk():
        values = op.results if isinstance(op, tile.AllocOp) else op.operands
        buffers.update((v, None) for v in values if isinstance(v.owner, tile.AllocOp))
    return sum(align_up(byte_size(b.type)) for b in buffers if tile.space_of(b) == space)  # pyright: ignore


@dataclass(frozen=True)
class Budget:
    """One memory that rotated buffers live in: bytes in use, bytes per extra copy, capacity."""

    space: str
    base: int
    per_copy: int
    capacity: int

    def need(self, depth: int) -> int:
        return self.base + (depth - 1) * self.per_copy


def budgets(loop: scf.ForOp, buffers: Sequence[SSAValue], target: Target) -> list[Budget]:
    result = []
    for space, capacity in (("sram", target.sram_bytes), ("acc", target.acc_bytes)):
        per_copy = sum(align_up(byte_size(b.type)) for b in buffers if tile.space_of(b) == space)  # pyright: ignore
        if per_copy:
            result.append(Budget(space.upper(), working_set(_scope(loop), space), per_copy, capacity))
    return result


def choose_depth(loop: scf.ForOp, buffers: Sequence[SSAValue], depth: int, target: Target) -> tuple[int, str]:
    """The depth to use (<= `depth`, <= trip count, within SRAM/ACC) and why."""
    trips = trip_count(loop) or 0
    if trips < 2:
        return 1, f"depth 1: trip count {trips}, nothing to overlap"
    wanted = min(depth, trips)
    memories = budgets(loop, buffers, target)
    over = [m for m in memories if m.need(wanted) > m.capacity]
    chosen = next((d for d in range(wanted, 1, -1) if all(m.need(d) <= m.capacity for m in memories)), 1)
    limit = f"trip count {trips}"
    if over:
        need, capacity = _kib(over[0].need(wanted)), _kib(over[0].capacity)
        limit = f"{over[0].space} budget: depth {wanted} needs {need} of {capacity}"
    if chosen == 1:
        return 1, f"depth 1: {limit}"
    copies = " + ".join(f"{chosen} x {_kib(m.per_copy)} of {m.space}" for m in memories)
    return chosen, f"depth {chosen}: {copies}" + (f" ({limit})" if chosen < depth else "")


# --------------------------------------------------------------------------- rewriting


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


def rotate(loop: scf.ForOp, buffers: Sequence[SSAValue], depth: int, reason: str) -> None:
    """Unrolls `loop` by `depth`, copy k of the body using buffer copy k, plus an epilogue."""
    renames: list[dict[SSAValue, SSAValue]] = [{} for _ in range(depth)]
    for buffer in buffers:
        for k, rename in enumerate(_extra_buffers(buffer, depth, loop), start=1):
            renames[k].update(rename)
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
        iv.name_hint, iv.owner.location = body.args[0].name_hint, loop.location  # pyright: ignore
        _clone_body(loop, inside, {loop.body.block.args[0]: iv, **renames[k]})
    inside.insert(scf.YieldOp())
    main_loop = outside.insert(scf.ForOp(loop.lb, new_ub, new_step, [], body))
    main_loop.location = loop.location
    main_loop.attributes.update(loop.attributes)
    main_loop.attributes[DEPTH_ATTR] = IntegerAttr(depth, i64)
    main_loop.attributes[REASON_ATTR] = StringAttr(reason)
    for k in range(trips % depth):
        iv = _index(outside, lb + (main * depth + k) * step, loop)
        _clone_body(loop, outside, {loop.body.block.args[0]: iv, **renames[k]})
    loop.detach()
    loop.erase()


def _extra_buffers(buffer: SSAValue, depth: int, loop: scf.ForOp) -> list[dict[SSAValue, SSAValue]]:
    """depth - 1 new tile.allocs of the type of `buffer`, right after its alloc, each with copies
    of the views made of `buffer` outside `loop`: per copy k, what copy k of the body renames."""
    alloc = buffer.owner
    assert isinstance(alloc, tile.AllocOp)
    builder = Builder(InsertPoint.after(alloc))
    renames = []
    for k in range(1, depth):
        new = builder.insert(tile.AllocOp(alloc.buffer.type))  # pyright: ignore
        new.location = alloc.location
        new.buffer.name_hint = f"{buffer.name_hint or 'buf'}_{k}"
        rename: dict[SSAValue, SSAValue] = {buffer: new.buffer}
        for view in views(buffer):
            if not loop.is_ancestor(view):
                clone = view.clone(value_mapper=rename)  # maps the view's result too
                Builder(InsertPoint.after(view)).insert(clone)
        renames.append(rename)
    return renames


def _annotate(loop: scf.ForOp, depth: int, reason: str) -> None:
    loop.attributes[DEPTH_ATTR] = IntegerAttr(depth, i64)
    loop.attributes[REASON_ATTR] = StringAttr(reason)


def pipeline_loop(loop: scf.ForOp, depth: int, target: Target) -> int:
    """Multi-buffers one loop if it loads from DRAM; returns the depth used (0: no loads)."""
    buffers, problem = rotatable_buffers(loop)
    if not buffers and problem is None:
        return 0
    if trip_count(loop) is None or loop.iter_args:
        what = "loop-carried values" if loop.iter_args else "bounds or step not constant (index)"
        _annotate(loop, 1, f"depth 1: {what}; unrolling needs a known trip count")
        return 1
    if not buffers:
        _annotate(loop, 1, f"depth 1: {problem}")
        return 1
    chosen, reason = choose_depth(loop, buffers, depth, target)
    if chosen == 1:
        _annotate(loop, 1, reason)
    else:
        rotate(loop, buffers, chosen, reason)
    return chosen


@dataclass(frozen=True)
class MultiBufferPass(ModulePass):
    """Multi-buffers (pipelines) the DRAM loads of tile loops.

    Input:
      Tile-level functions with scf.for loops, before plan-memory (new buffers get no offset).
    Output:
      For each scf.for, innermost first, whose body loads (tile.copy from dram) into a buffer
      (or a tile.reshape view of it) allocated outside the loop, used only inside it, and fully
      rewritten by that load before any other access in each iteration: `depth` - 1 extra
      tile.allocs of the same type (with copies of the views made before the loop); the loop
      unrolled by the depth (step x depth, copy k of the body on buffer k and IV + k x step);
      the remainder of the trip count as straight-line epilogue copies after it. The
      depth shrinks to the trip count and to what the scope's SRAM/ACC holds (the sum of the
      kernel's buffers plus the extra copies, vs the target). The loop gets `buffer_depth` and
      `buffer_depth_reason` (e.g. "depth 2: 2 x 8 KiB of SRAM"); its tile.kernel `buffer_depth`
      (the largest). Loops with loads that cannot be rotated (non-constant bounds, loop-carried
      values, a buffer read before it is rewritten) keep their shape and get depth 1 and why.
    Invariants:
      Same results as before for every trip count (0, 1, < depth, ...); indices stay affine in
      the IVs (no modulo); depth=1 changes nothing; loops already carrying `buffer_depth` are
      left alone, so a second run changes nothing.
    """

    name = "multi-buffer"
    depth: int = 2
    target: str = "tiny"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.depth < 1:
            raise PassFailedException(f"multi-buffer: depth must be >= 1, got {self.depth}")
        if self.depth == 1:
            return
        target = resolve_target(self.target)
        loops = [
            loop for loop in op.walk() if isinstance(loop, scf.ForOp) and DEPTH_ATTR not in loop.attributes
        ]
        for loop in reversed(loops):  # reversed pre-order: inner loops before the loops around them
            kernel = _scope(loop)
            used = pipeline_loop(loop, self.depth, target)
            if isinstance(kernel, tile.KernelOp) and used:
                previous = kernel.attributes.get(DEPTH_ATTR)
                best = max(used, previous.value.data if isinstance(previous, IntegerAttr) else 0)
                kernel.attributes[DEPTH_ATTR] = IntegerAttr(best, i64)
