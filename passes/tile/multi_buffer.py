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
was written earlier in the same iteration (`_scan`: reads, as index ranges, against the regions
that writes certainly cover: windows at constant indices, the union of a loop's windows at
`iv + c` that tile each step, and a fill (`x = (x == 0) * 0`, which reads nothing that
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
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import PassFailedException

from aitc.analysis.liveness import align_up, byte_size, users
from aitc.dialects import tile
from aitc.module_target import module_target
from aitc.target import Target

DEPTH_ATTR = "buffer_depth"
REASON_ATTR = "buffer_depth_reason"

Range = tuple[int, int]
Box = tuple[Range, ...]
"""A region of a buffer: per dim an inclusive (first, last) index range."""


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


def root_of(buffer: SSAValue) -> SSAValue:
    """The buffer a (chain of) tile.reshape view(s) looks at."""
    while isinstance(buffer.owner, tile.ReshapeOp):
        buffer = buffer.owner.source
    return buffer


def _name(buffer: SSAValue) -> str:
    return f"%{buffer.name_hint}" if buffer.name_hint else f"the {buffer.type} buffer"


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


# --------------------------------------------------------------------------- regions


def _iv_range(loop: scf.ForOp) -> Range | None:
    bounds, trips = loop_bounds(loop), trip_count(loop)
    if bounds is None or not trips:
        return None
    return bounds[0], bounds[0] + (trips - 1) * bounds[2]


def _index_range(value: SSAValue) -> Range | None:
    """The values an index takes: constants, loop induction variables (constant bounds) and
    addi/subi/muli of those; None when unknown."""
    constant = constant_index(value)
    if constant is not None:
        return constant, constant
    owner = value.owner
    if isinstance(owner, Block):
        loop = owner.parent_op()
        return _iv_range(loop) if isinstance(loop, scf.ForOp) and value is owner.args[0] else None
    folds = {
        arith.AddiOp: lambda x, y: x + y,
        arith.SubiOp: lambda x, y: x - y,
        arith.MuliOp: lambda x, y: x * y,
    }
    fold = folds.get(type(owner))  # pyright: ignore
    if fold is None:
        return None
    a, b = _index_range(owner.operands[0]), _index_range(owner.operands[1])  # pyright: ignore
    if a is None or b is None:
        return None
    corners = [fold(x, y) for x in a for y in b]
    return min(corners), max(corners)


@dataclass(frozen=True)
class Access:
    """What one window op does to a buffer: the region it may read (None: no read) and the
    region it certainly writes (None: none, or not known exactly)."""

    read: Box | None
    write: Box | None
    writes: bool


def _whole(shape: Sequence[int]) -> Box:
    return tuple((0, d - 1) for d in shape)


def _window_region(buffer: SSAValue, indices: Sequence[SSAValue], box: Sequence[int]) -> tuple[Box, bool]:
    """(region covered, exact?) of a window on `buffer` itself (not a view)."""
    shape = tuple(buffer.type.get_shape())  # pyright: ignore
    region, exact = [], True
    for index, size, dim in zip(indices, box, shape, strict=True):
        known = _index_range(index)
        exact = exact and known is not None and known[0] == known[1]
        first, last = (0, dim - 1) if known is None else (max(0, known[0]), min(dim - 1, known[1] + size - 1))
        region.append((first, last))
    return tuple(region), exact


def _fills(op: tile.WindowOp) -> bool:
    """`op` starts a fill (graph_to_tile_elementwise.fill): x = (x == 0) in place, then
    x = x * 0, so what x held does not matter (0 or 1, even for NaN or inf, times 0)."""
    after = op.next_op
    return (
        isinstance(op, tile.BinaryImmOp)
        and op.op is not None
        and op.op.data == "cmp_eq"
        and isinstance(after, tile.BinaryImmOp)
        and after.op is not None
        and after.op.data == "mul"
        and after.imm is not None
        and after.imm.value.data == 0.0
        and op.accesses()[0] == op.accesses()[1] == after.accesses()[0] == after.accesses()[1]
        and op.box() == after.box()
    )


def accesses(op: tile.WindowOp, root: SSAValue) -> list[Access]:
    """The accesses of `op` to the bytes of `root` (directly or through a view). A window on a
    view reads the whole root, and writes all of it only when it covers the whole view. The
    first op of a fill reads nothing that matters: it only writes."""
    found = []
    names, windows = op.ACCESSES, op.accesses()
    fills = _fills(op)
    for name, (buffer, indices) in zip(names, windows, strict=True):
        if root_of(buffer) is not root or (fills and name != names[-1]):
            continue
        is_dst = name == names[-1]
        reads = not is_dst or (isinstance(op, tile.MatmulOp) and op.accumulate is not None)
        box = op.window_shape(name)
        shape = tuple(buffer.type.get_shape())  # pyright: ignore
        whole = _whole(root.type.get_shape())  # pyright: ignore
        if buffer is root:
            region, exact = _window_region(buffer, indices, box)
        else:
            exact = tuple(box) == shape and all(constant_index(i) == 0 for i in indices)
            region = whole
        found.append(Access(region if reads else None, region if is_dst and exact else None, is_dst))
    return found


def _covers(covered: Iterable[Box], region: Box) -> bool:
    return any(
        all(c[0] <= r[0] and r[1] <= c[1] for c, r in zip(box, region, strict=True)) for box in covered
    )


def holders(root: SSAValue) -> set[Operation]:
    """The ops that access the bytes of `root` (directly or through views; making a view is no
    access) and the ops around them: `op` or an op nested in it touches `root` exactly when `op`
    is in the set. From the uses of `root`, so it costs the uses, not the size of the IR; compute
    it again after the IR changes."""
    found: set[Operation] = set()
    if isinstance(root.owner, tile.ReshapeOp):
        return found  # a view is no root: nothing accesses it as one
    for user in users(root):
        node: Operation | None = user
        while node is not None and node not in found:  # an op in the set has its parents there
            found.add(node)
            node = node.parent_op()
    return found


def _merge(boxes: list[Box]) -> list[Box]:
    """`boxes` with the ones that differ in one dim only and touch there joined."""
    boxes = list(dict.fromkeys(boxes))
    joined = True
    while joined:
        joined = False
        for i, a in enumerate(boxes):
            for j in range(i + 1, len(boxes)):
                b = boxes[j]
                differ = [d for d in range(len(a)) if a[d] != b[d]]
                if len(differ) > 1:
                    continue
                if differ:
                    d = differ[0]
                    if a[d][1] + 1 < b[d][0] or b[d][1] + 1 < a[d][0]:
                        continue
                    a = (*a[:d], (min(a[d][0], b[d][0]), max(a[d][1], b[d][1])), *a[d + 1 :])
                boxes[i] = a
                del boxes[j]
                joined = True
                break
            if joined:
                break
    return boxes


def _iv_offset(index: SSAValue, iv: SSAValue) -> int | None:
    """c when `index` is `iv + c` (c constant), else None."""
    if index is iv:
        return 0
    owner = index.owner
    if isinstance(owner, arith.AddiOp):
        a, b = owner.operands
        if a is iv and constant_index(b) is not None:
            return constant_index(b)
        if b is iv and constant_index(a) is not None:
            return constant_index(a)
    return None


def _swept(loop: scf.ForOp, root: SSAValue) -> list[Box]:
    """Regions that all iterations of `loop` together certainly write: windows of `root` at
    `iv + c` in one dim (constant elsewhere) whose boxes tile a whole step."""
    bounds, trips = loop_bounds(loop), trip_count(loop)
    if bounds is None or not trips:
        return []
    lb, _, step = bounds
    iv = loop.body.block.args[0]
    runs: dict[tuple, list[Range]] = {}
    for op in loop.body.block.ops:
        if not isinstance(op, tile.WindowOp):
            continue
        name, (buffer, indices) = op.ACCESSES[-1], op.accesses()[-1]
        if buffer is not root:
            continue
        box, shape = op.window_shape(name), root.type.get_shape()  # pyright: ignore
        offsets = [_iv_offset(i, iv) for i in indices]
        fixed = [constant_index(i) for i in indices]
        swept = [d for d, c in enumerate(offsets) if c is not None and fixed[d] is None]
        if len(swept) != 1 or any(fixed[d] is None for d in range(len(indices)) if d != swept[0]):
            continue
        d = swept[0]
        others = tuple(
            (0, 0) if e == d else (fixed[e], min(shape[e] - 1, fixed[e] + box[e] - 1))  # pyright: ignore
            for e in range(len(indices))
        )
        runs.setdefault((d, others), []).append((offsets[d], offsets[d] + box[d] - 1))  # pyright: ignore
    regions = []
    for (d, others), intervals in runs.items():
        merged = _merge([(r,) for r in intervals])
        for ((first, last),) in merged:
            if last - first + 1 >= step:
                full = (lb + first, min(shape_dim(root, d) - 1, lb + (trips - 1) * step + last))
                regions.append((*others[:d], full, *others[d + 1 :]))
    return regions


def shape_dim(root: SSAValue, dim: int) -> int:
    return root.type.get_shape()[dim]  # pyright: ignore


_NO_ACCESS = (tile.ReshapeOp, tile.AllocOp, arith.ConstantOp, scf.YieldOp)
"""Ops that `_scan` passes over even when they name the buffer (a view, its definition)."""


def _scan(
    ops: Iterable[Operation], root: SSAValue, covered: list[Box], touching: set[Operation] | None = None
) -> tuple[bool, list[Box]]:
    """Runs `ops` in program order: (whether one may read a byte of `root` that no earlier op
    of the sequence wrote, starting from `covered`; the regions certainly written after it).
    Only the ops in `touching` (`holders(root)`) can change either, so only those are looked at."""
    touching = holders(root) if touching is None else touching
    covered = list(covered)
    for op in ops:
        if op not in touching or isinstance(op, _NO_ACCESS):
            continue
        if isinstance(op, scf.ForOp | tile.KernelOp):
            exposed, after = _scan(op.body.block.ops, root, covered, touching)  # pyright: ignore
            if exposed:
                return True, covered
            if isinstance(op, tile.KernelOp):
                covered = after
            elif (trip_count(op) or 0) >= 1:
                covered = _merge(after + _swept(op, root))
        elif isinstance(op, tile.WindowOp):
            found = accesses(op, root)
            if any(a.read is not None and not _covers(covered, a.read) for a in found):
                return True, covered
            covered = _merge(covered + [a.write for a in found if a.write is not None])
        else:
            return True, covered  # an op this model does not know: assume it reads everything
    return False, covered


def _after(op: Operation) -> Iterator[Operation]:
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
    return not _scan(loop.body.block.ops, root, [], touching)[0]


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
    exposed, covered = _scan(_after(item), root, covered or [], touching)
    if exposed:
        return False
    parent = item.parent_op()
    if parent is None or isinstance(parent, func.FuncOp | ModuleOp):
        return True
    if isinstance(parent, scf.ForOp):
        if _scan(_prefix(parent, loop), root, covered, touching)[0]:
            return False
    elif not isinstance(parent, tile.KernelOp):
        return False
    return dead_after(parent, root, covered, loop, touching)


# --------------------------------------------------------------------------- candidates


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


def _engine(op: Operation) -> str:
    return tile.ENGINE_OF.get(type(op), "?")  # pyright: ignore


@dataclass
class Candidate:
    """A buffer a loop could rotate: `loaded` (a DRAM load writes it) or a compute tile."""

    root: SSAValue
    loaded: bool
    problem: str | None = None
    nested: bool = False
    item: Operation | None = None
    """The op of the loop's body that holds the first access (an inner loop, when nested)."""


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
            a.writes and a.read is None for a in accesses(first, root)
        ):
            continue
        loaded = isinstance(first, tile.CopyOp) and tile.space_of(first.access("src")[0]) == "dram"
        readers = {_engine(user) for user in users(root) if loop.is_ancestor(user) and user is not first}
        if not loaded and not (readers - {_engine(first)}):
            continue  # written and read on one engine: in order anyway, nothing to overlap
        nested = first.parent_op() is not loop
        item = first
        while item.parent_op() is not loop:
            item = item.parent_op()  # pyright: ignore
        found[root] = Candidate(root, loaded, _rotation_problem(loop, root, touching), nested, item)
    return list(found.values())


def _rotation_problem(loop: scf.ForOp, root: SSAValue, touching: set[Operation]) -> str | None:
    """Why `root` cannot rotate in `loop` (None if it can); `touching` is `holders(root)`."""
    if loop.is_ancestor(root.owner):  # pyright: ignore
        return f"{_name(root)} is not a tile.alloc outside the loop"
    if not private(loop, root, touching):
        return f"{_name(root)} is read before the loop body rewrites all of it"
    if not dead_after(loop, root, touching=touching):
        return f"{_name(root)} is used outside the loop"
    return None


def rotatable_buffers(loop: scf.ForOp) -> tuple[list[SSAValue], str | None]:
    """The buffers the loop body loads from DRAM that can rotate, and why others cannot."""
    found = [c for c in candidates(loop) if c.loaded]
    reason = next((c.problem for c in found if c.problem is not None), None)
    return [c.root for c in found if c.problem is None], reason


# --------------------------------------------------------------------------- budget


def _scope(loop: Operation) -> Operation:
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
        sizes[space] = sizes.get(space, 0) + align_up(byte_size(b.type))  # pyright: ignore
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


@dataclass
class Families:
    """The extra copies made so far, per original buffer: copy k (k >= 1) renames the buffer
    and its views made before the loop that created it."""

    copies: dict[SSAValue, list[dict[SSAValue, SSAValue]]] = field(default_factory=dict)
    copy_of: dict[SSAValue, SSAValue] = field(default_factory=dict)

    def used_inside(self, buffer: SSAValue, loop: scf.ForOp) -> bool:
        """Whether `loop` uses a copy of `buffer` (an inner loop rotates it)."""
        return any(
            loop.is_ancestor(user) for rename in self.copies.get(buffer, []) for user in users(rename[buffer])
        )

    def reusable(self, buffer: SSAValue, loop: scf.ForOp) -> int:
        """How many copies of `buffer` `loop` could reuse (none that it already uses)."""
        return sum(
            not any(loop.is_ancestor(user) for user in users(rename[buffer]))
            for rename in self.copies.get(buffer, [])
        )


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
    working = working_sets(_scope(loop)) if working is None else working
    result = []
    for space, capacity in (("sram", target.sram_bytes), ("acc", target.acc_bytes)):
        mine = [b for b in buffers if tile.space_of(b) == space]
        if not mine:
            continue
        per_copy = sum(align_up(byte_size(b.type)) for b in mine)  # pyright: ignore
        reused = sum(
            align_up(byte_size(b.type)) * min(families.reusable(b, loop), depth - 1)  # pyright: ignore
            for b in mine
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
    working = working_sets(_scope(loop)) if working is None else working

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
        new = builder.insert(tile.AllocOp(alloc.buffer.type))  # pyright: ignore
        new.location = alloc.location
        new.buffer.name_hint = f"{buffer.name_hint or 'buf'}_{k}"
        renames.append({buffer: new.buffer})
    for rename in renames:
        for view in views(buffer):
            if not loop.is_ancestor(view):
                clone = view.clone(value_mapper=rename)  # maps the view's result too
                Builder(InsertPoint.after(view)).insert(clone)
    return renames


def _copies(
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


def _rename_in(ops: Sequence[Operation], mapping: dict[SSAValue, SSAValue]) -> None:
    for op in ops:
        for nested in op.walk():
            if any(v in mapping for v in nested.operands):
                nested.operands = tuple(mapping.get(v, v) for v in nested.operands)


def _segment_before(loop: scf.ForOp, root: SSAValue) -> list[Operation]:
    """The ops right before `loop` (same block) from the nearest one that starts a
    self-contained use of `root` (it writes all it reads) on: they can use any copy."""
    holding = holders(root)
    touching: list[Operation] = []
    node = loop.prev_op
    while node is not None:
        if node in holding:
            touching.insert(0, node)
            if not _scan(touching, root, [], holding)[0]:
                return touching if _renamable(touching, root) else []
        node = node.prev_op
    return []


def _segment_after(loop: scf.ForOp, root: SSAValue) -> list[Operation]:
    """The ops after `loop` (same block) that use `root`, when they are self-contained and
    nothing after the block reads what they write."""
    holding = holders(root)
    touching = [op for op in _after(loop) if op in holding]
    if not touching or _scan(touching, root, [], holding)[0] or not _renamable(touching, root):
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


def rotate(
    loop: scf.ForOp, buffers: Sequence[SSAValue], depth: int, reason: str, families: Families | None = None
) -> None:
    """Unrolls `loop` by `depth`, copy k of the body using buffer copy k, plus an epilogue; the
    self-contained uses right before and after the loop take copies depth - 1 and trips mod depth."""
    families = families or Families()
    renames: list[dict[SSAValue, SSAValue]] = [{} for _ in range(depth)]
    bounds, trips = loop_bounds(loop), trip_count(loop)
    assert bounds is not None
    assert trips is not None
    for buffer in buffers:
        before, after = _segment_before(loop, buffer), _segment_after(loop, buffer)
        mine: list[dict[SSAValue, SSAValue]] = [{}, *_copies(buffer, depth, loop, families)]
        for k in range(1, depth):
            renames[k].update(mine[k])
        _rename_in(before, mine[depth - 1])  # each segment moves this buffer only
        _rename_in(after, mine[trips % depth])
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


def pipeline_loop(loop: scf.ForOp, depth: int, target: Target, families: Families | None = None) -> int:
    """Multi-buffers one loop if it rewrites buffers every iteration; returns the depth used
    (0: nothing to rotate). The DRAM loads of the loop's own body decide the depth (or, without
    them, the first rotatable buffers below); then, while the memories hold them at that depth,
    the loop's compute tiles (accumulators, output tiles), then the buffers first written in
    inner loops (loads, then tiles) join."""
    families = families or Families()
    found = candidates(loop)
    loads = [c for c in found if c.loaded and not c.nested]
    ok = sorted((c for c in found if c.problem is None), key=lambda c: (c.nested, not c.loaded))
    ranked = [c.root for c in ok]
    if not loads and not ranked:
        return 0
    if trip_count(loop) is None or loop.iter_args:
        if not loads:
            return 0
        what = "loop-carried values" if loop.iter_args else "bounds or step not constant (index)"
        _annotate(loop, 1, f"depth 1: {what}; unrolling needs a known trip count")
        return 1
    leading = [c.root for c in loads if c.problem is None]
    if loads and not leading:
        _annotate(loop, 1, f"depth 1: {next(c.problem for c in loads if c.problem is not None)}")
        return 1
    working = working_sets(_scope(loop))  # the IR stays as it is until `rotate`
    chosen, reason = choose_depth(loop, leading or ranked[:1], depth, target, families, working)
    if chosen == 1:
        if not loads:
            return 0
        _annotate(loop, 1, reason)
        return 1
    rotating = list(leading or ranked[:1])
    for group in _groups(ok, families):  # whole groups only (see _groups)
        extra = [b for b in group if b not in rotating]
        if extra and choose_depth(loop, [*rotating, *extra], chosen, target, families, working)[0] == chosen:
            rotating += extra
    reason = choose_depth(loop, rotating, depth, target, families, working)[1]
    rotate(loop, rotating, chosen, reason, families)
    return chosen


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
            kernel = _scope(loop)
            used = pipeline_loop(loop, self.depth, target, families)
            if isinstance(kernel, tile.KernelOp) and used:
                previous = kernel.attributes.get(DEPTH_ATTR)
                best = max(used, previous.value.data if isinstance(previous, IntegerAttr) else 0)
                kernel.attributes[DEPTH_ATTR] = IntegerAttr(best, i64)
