"""Cross-engine data dependences of a tile-level function bound to engines: the analysis behind
`insert-semaphores`.

The function is seen as a tree of levels: the function body, and the body of every scf.for
(tile.kernel bodies are flattened into their parent, since a kernel runs once, in place). A
level's items are its compute ops and loops, in program order. Loop bounds must be constants.

For two compute ops X, Y on different engines that may touch a common byte, one of them writing
(`sync_footprint`), the dynamic instances where X runs before Y need X to complete before Y
starts. At the deepest level P holding both, X' and Y' are the items of P containing them:

- X' before Y' and a conflict in the same iteration: a *forward* edge, signal after X', wait
  before Y' (distance 0). Later iterations follow by engine order.
- otherwise, P being a loop body: the smallest distance d >= 1 (or >= 0 when X' is before Y')
  with X at iteration i conflicting with Y at iteration i + d gives a *credit* edge of distance
  d (see `insert-semaphores`); no conflict inside one instance of the loop: the dependence is
  between instances, i.e. between iterations of the next enclosing level, where X'' = Y'' =
  the loop itself (distance >= 1). At the function level such a pair needs nothing.

Candidate pairs come from `candidates.py` (which also defines the level tree's `Level` and
`Node`), leaving out pairs whose order follows from a later write covering the earlier access.

Precision: exact per iteration for loop-variant windows (footprints of each iteration are
evaluated, other loop indices taken as ranges) up to `MAX_TRIPS` iterations; beyond, or for
indices computed by unknown ops, conservative (distance d0, whole dimension).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func, scf
from xdsl.ir import Block, Operation, SSAValue

from aitc.analysis.tile_footprint import (
    IndexRanges,
    Intervals,
    Range,
    access_bytes,
    accesses,
    depends_on,
    overlap,
)
from aitc.dialects import sync, tile
from aitc.passes.legality import fail
from aitc.passes.sync.insert_semaphores.candidates import Candidates, Level, Node

MAX_TRIPS = 512
"""Loops longer than this are analysed as if every iteration could conflict with the next."""
MAX_EXACT_CHECKS = 256
"""Candidate iteration pairs checked exactly before settling for the smallest candidate distance."""


@dataclass(frozen=True, eq=False)
class Edge:
    """X' (`level.items[after]`, on `source`) must complete before Y' (`level.items[before]`,
    on `target`) starts, `distance` iterations of the level's loop later (0: same iteration);
    `producer` and `consumer` are the ops in X' and Y' whose conflict gave the edge."""

    level: Level
    after: int
    before: int
    distance: int
    source: str
    target: str
    consumer: Operation
    producer: Operation | None = None

    def key(self) -> tuple[int, int]:
        """When the wait happens: (iterations later, item index)."""
        return self.distance, self.before


# --------------------------------------------------------------------------- the level tree


class Program:
    """The level tree and compute-op nodes of one function."""

    def __init__(self, function: func.FuncOp):
        self.function = function
        self.top = Level(None, None, -1)
        self.nodes: list[Node] = []
        self.levels: dict[scf.ForOp, Level] = {}
        self._walk(function.body.block, self.top, (), {})

    def program_order(self) -> dict[Operation, int]:
        """The position of every op of the function in a preorder walk."""
        return {op: i for i, op in enumerate(self.function.walk())}

    def _walk(self, block: Block, level: Level, path: tuple, loops: dict[SSAValue, Range]) -> None:
        for op in block.ops:
            if isinstance(op, tile.KernelOp):
                self._walk(op.body.block, level, path, loops)
            elif isinstance(op, scf.ForOp):
                self._loop(op, level, path, loops)
            elif isinstance(op, sync.SignalOp | sync.WaitOp | sync.BarrierOp):
                fail(op, "insert-semaphores: the function already has sync ops; run it on unsynchronised IR")
            elif isinstance(op, tile.COMPUTE_OPS):
                engine = sync.engine_of(op)
                if engine is None:
                    fail(op, f"{op.name} is not bound to an engine: run convert-tile-to-sync first")
                assert engine is not None
                here = (*path, (level, len(level.items)))
                level.items.append(op)
                self.nodes.append(Node(op, engine, len(self.nodes), here, accesses(op), dict(loops)))

    def _loop(self, op: scf.ForOp, level: Level, path: tuple, loops: dict[SSAValue, Range]) -> None:
        ranges = IndexRanges(loops)
        bounds = [ranges(v) for v in (op.lb, op.ub, op.step)]
        constants = [b[0] for b in bounds if b is not None and b[0] == b[1]]
        if len(constants) != 3 or op.iter_args:
            fail(op, "insert-semaphores needs scf.for loops with constant bounds and no iter_args")
        first, stop, step = constants
        trips = max(0, -(-(stop - first) // step)) if step > 0 else 0
        if trips == 0:
            return  # never runs: nothing inside can conflict
        child = Level(op, level, len(level.items), first, step, trips)
        self.levels[op] = child
        level.items.append(op)
        induction = op.body.block.args[0]
        inner = {**loops, induction: (first, first + (trips - 1) * step)}
        self._walk(op.body.block, child, (*path, (level, child.position)), inner)


# --------------------------------------------------------------------------- conflicts


@dataclass(frozen=True, eq=False)
class Hull:
    """Byte intervals with their first byte and end as Python ints (cheap to compare)."""

    bytes: Intervals
    low: int
    end: int
    single: bool

    @staticmethod
    def of(found: Intervals) -> Hull:
        return Hull(found, int(found[0][0]), int(found[1][-1]), len(found[0]) == 1)

    def meets(self, other: Hull) -> bool:
        """`overlap(self.bytes, other.bytes)`, deciding on the hulls where they suffice."""
        if not (self.low < other.end and other.low < self.end):
            return False
        return (self.single and other.single) or overlap(self.bytes, other.bytes)


class Dependences:
    """Computes the edges every conflicting pair of nodes needs."""

    def __init__(self, program: Program):
        self.program = program
        self.cache: dict[tuple[int, int, int | None, int], Intervals] = {}
        self.varies: dict[tuple[int, int, int], bool] = {}
        self.unions: dict[int, list[Hull]] = {}

    def footprint(self, node: Node, index: int, level: Level | None, iteration: int) -> Intervals:
        """Bytes of access `index` of `node`, with `level`'s loop at `iteration` (None: all)."""
        key = (node.order, index, id(level) if level else None, iteration)
        if key not in self.cache:
            loops = dict(node.loops)
            if level is not None:
                value = level.first + iteration * level.step
                loops[level.induction()] = (value, value)
            self.cache[key] = access_bytes(node.accesses[index], IndexRanges(loops))
        return self.cache[key]

    def union(self, node: Node, index: int) -> Intervals:
        """Bytes access `index` of `node` may touch over all iterations of its loops."""
        return self.hulls(node)[index].bytes

    def hulls(self, node: Node) -> list[Hull]:
        """Per access of `node`: `union`, with its hull."""
        found = self.unions.get(node.order)
        if found is None:
            found = [Hull.of(self.footprint(node, i, None, 0)) for i in range(len(node.accesses))]
            self.unions[node.order] = found
        return found

    def exact(self, node: Node, index: int) -> bool:
        """Whether access `index` of `node` touches the same bytes in every iteration."""
        ranges = IndexRanges(node.loops)
        return all((r := ranges(i)) is not None and r[0] == r[1] for i in node.accesses[index].indices)

    def edges(self) -> list[Edge]:
        found = []
        for first, second in Candidates(self.program.nodes, self.union, self.exact):
            before, after = first.path[0], second.path[0]
            if before[1] < after[1]:
                # Items of the function body, in order, with a conflict (`Candidates` yields
                # only such pairs): what `_requirement` would give, a forward edge one way, none back.
                found.append(
                    Edge(before[0], before[1], after[1], 0, first.engine, second.engine, second.op, first.op)
                )
                continue
            conflicts = self.conflicts(first, second)
            if not conflicts:
                continue  # no access pair may conflict: neither order needs an edge
            reverse = [(j, i) for i, j in conflicts]
            for x, y, pairs in ((first, second, conflicts), (second, first, reverse)):
                edge = self._requirement(x, y, pairs)
                if edge is not None:
                    found.append(edge)
        return found

    def conflicts(self, x: Node, y: Node) -> list[tuple[int, int]]:
        """The (access of `x`, access of `y`) pairs on one storage, one writing, whose bytes
        over all iterations overlap: only those can conflict at any level."""
        x_hulls, y_hulls = self.hulls(x), self.hulls(y)
        return [
            (i, j)
            for i, ax in enumerate(x.accesses)
            for j, ay in enumerate(y.accesses)
            if ax.view.storage == ay.view.storage and (ax.write or ay.write) and x_hulls[i].meets(y_hulls[j])
        ]

    def _requirement(self, x: Node, y: Node, pairs: list[tuple[int, int]]) -> Edge | None:
        """The edge that orders every instance of `x` before the later instances of `y`
        (`pairs`: their `conflicts`)."""
        depth = next(k for k, (a, b) in enumerate(zip(x.path, y.path, strict=False)) if a[1] != b[1])
        level, after = x.path[depth]
        before = y.path[depth][1]
        d0 = 0 if after < before else 1
        while level.loop is not None:
            distance = self.distance(x, y, pairs, level, d0)
            if distance is not None:
                return Edge(level, after, before, distance, x.engine, y.engine, y.op, x.op)
            assert level.parent is not None
            level, after, before, d0 = level.parent, level.position, level.position, 1
        if d0 == 0 and pairs:
            return Edge(level, after, before, 0, x.engine, y.engine, y.op, x.op)
        return None

    def distance(
        self, x: Node, y: Node, pairs: list[tuple[int, int]], level: Level | None, d0: int
    ) -> int | None:
        """The smallest d >= d0 with x at iteration i and y at i + d of `level` in conflict,
        over the access pairs `pairs` (`conflicts(x, y)`)."""
        best = None
        for i, j in pairs:
            d = self._access_distance(x, i, y, j, level, d0)
            if d is not None and (best is None or d < best):
                best = d
        return best

    def _varies(self, node: Node, index: int, level: Level) -> bool:
        """Whether a window index of access `index` of `node` may vary with `level`'s loop."""
        key = (node.order, index, id(level))
        if key not in self.varies:
            induction = level.induction()
            self.varies[key] = any(depends_on(v, induction) for v in node.accesses[index].indices)
        return self.varies[key]

    def _access_distance(self, x: Node, i: int, y: Node, j: int, level: Level | None, d0: int) -> int | None:
        """As `distance`, for one access pair whose bytes over all iterations overlap."""
        if level is None:
            return 0
        if d0 > level.trips - 1:
            return None
        varies = self._varies(x, i, level) or self._varies(y, j, level)
        if not varies or level.trips > MAX_TRIPS:
            return d0
        xs = [self.footprint(x, i, level, t) for t in range(level.trips)]
        ys = [self.footprint(y, j, level, t) for t in range(level.trips)]
        return first_distance(xs, ys, d0)


def first_distance(xs: list[Intervals], ys: list[Intervals], d0: int) -> int | None:
    """min (t2 - t1) >= d0 with xs[t1] and ys[t2] overlapping; hulls filter the candidates, then up
    to MAX_EXACT_CHECKS are checked exactly (the smallest unchecked one is assumed to conflict)."""
    x_lo, x_hi = np.array([x[0][0] for x in xs]), np.array([x[1][-1] for x in xs])
    y_lo, y_hi = np.array([y[0][0] for y in ys]), np.array([y[1][-1] for y in ys])
    hull = (x_lo[:, None] < y_hi[None, :]) & (y_lo[None, :] < x_hi[:, None])
    t1, t2 = np.nonzero(hull)
    gaps = t2 - t1
    keep = gaps >= d0
    t1, t2, gaps = t1[keep], t2[keep], gaps[keep]
    order = np.argsort(gaps, kind="stable")
    for checked, k in enumerate(order):
        if checked >= MAX_EXACT_CHECKS or overlap(xs[t1[k]], ys[t2[k]]):
            return int(gaps[k])
    return None
