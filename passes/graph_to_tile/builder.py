"""`KernelBuilder`: emits the body of one `tile.kernel` for convert-graph-to-tile.

It owns the details every lowering shares:

- index arithmetic on `Index` values (a Python int or an `index` SSA value), folded while both
  sides are constants, with one `arith.constant` per value per kernel;
- `tile.alloc`s of SRAM/ACC working buffers, hoisted to the top of the kernel;
- structured loops: `tiles(extent, tile, body)` emits an `scf.for` over the full tiles and
  calls `body` once more for the remainder, so a loop is never unrolled per tile;
- the cost model: each DMA / matrix / vector op is charged (graph_to_tile_costs) times the
  trip count of its enclosing loops, so the kernel's `dma_bytes` and `est_cycles` describe
  exactly the IR that was emitted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    LocationAttr,
    MemRefType,
    StringAttr,
    UnitAttr,
    UnknownLoc,
    f32,
    f64,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from aitc.dialects import tile
from aitc.passes.graph_to_tile.costs import (
    FILL_DRAIN_ATTR,
    Budget,
    Cost,
    dma_transfers,
    matmul_cycles,
    vector_cycles,
)
from aitc.types import element_bytes, i64_attr

Index = int | SSAValue
"""A window index or loop bound: a constant, or an `index` value computed in the kernel."""


def buffer_shape(buffer: SSAValue) -> tuple[int, ...]:
    assert isinstance(buffer.type, MemRefType)
    return tuple(buffer.type.get_shape())


def buffer_element(buffer: SSAValue) -> Attribute:
    assert isinstance(buffer.type, MemRefType)
    return buffer.type.get_element_type()


@dataclass(frozen=True)
class Win:
    """A window origin: `buffer[idx...]` (the box comes from the op's sizes)."""

    buffer: SSAValue
    idx: tuple[Index, ...]

    @staticmethod
    def at(buffer: SSAValue, *idx: Index) -> Win:
        """`buffer` at `idx`, padded with leading zeros to the buffer's rank."""
        rank = len(buffer_shape(buffer))
        return Win(buffer, (0,) * (rank - len(idx)) + tuple(idx))


class KernelBuilder:
    """Builds one `tile.kernel` (see the module docstring)."""

    def __init__(self, budget: Budget, name: str, location: LocationAttr, op_names: str):
        self.budget = budget
        self.target = budget.target
        self.kernel = tile.KernelOp(name)
        self.kernel.location = location
        self.location = location
        self.op_names = op_names
        self.cost = Cost(depth=budget.depth)
        self.fills_ahead = False
        """Whether the constants a broadcast fills (`elementwise.as_full`) go into scratch tiles no
        load of the kernel writes, so the fills need not wait for the loads (an elementwise
        chain's; `Cost.add_vector`)."""
        self.sram_bytes = 0
        self.acc_bytes = 0
        self._constants: dict[int, SSAValue] = {}
        self._prologue: list[Operation] = []
        self._block = self.kernel.body.block
        self._times = 1
        self._memo: list[dict[tuple, SSAValue]] = [{}]
        self._loaded: set[SSAValue] = set()  # the buffers DRAM reads wrote so far
        self._peeled: Cost | None = None  # the DMA ops of a peeled first trip, once each

    @property
    def times(self) -> int:
        """How many times the ops emitted now will run (the trip counts of the loops around)."""
        return self._times

    # -- ops and index arithmetic
    def emit(self, op: Operation) -> Operation:
        op.location = self.location
        self._block.add_op(op)
        return op

    def index(self, value: Index) -> SSAValue:
        if isinstance(value, SSAValue):
            return value
        if value not in self._constants:
            op = arith.ConstantOp(IntegerAttr(value, IndexType()))
            op.location = self.location
            self._prologue.append(op)
            self._constants[value] = op.result
        return self._constants[value]

    def add(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if isinstance(b, int) and b == 0:
            return a
        if isinstance(a, int) and a == 0:
            return b
        return self._arith(arith.AddiOp, self.index(a), self.index(b))

    def mul(self, a: Index, b: int) -> Index:
        if isinstance(a, int):
            return a * b
        if b == 1:
            return a
        if b == 0:
            return 0
        return self._arith(arith.MuliOp, a, self.index(b))

    def _arith(self, cls: type[arith.AddiOp | arith.MuliOp], a: SSAValue, b: SSAValue) -> SSAValue:
        """One `a <op> b` per loop scope: reused while the scope that computed it encloses us."""
        key = (cls, a, b)
        for scope in reversed(self._memo):
            if key in scope:
                return scope[key]
        result = self.emit(cls(a, b)).results[0]
        self._memo[-1][key] = result
        return result

    def linear(self, terms: Sequence[tuple[Index, int]], offset: Index = 0) -> Index:
        """offset + sum(index * coefficient)."""
        total = offset
        for value, coefficient in terms:
            total = self.add(total, self.mul(value, coefficient))
        return total

    # -- buffers
    def alloc(self, shape: Sequence[int], element_type: Attribute, space: str) -> SSAValue:
        op = tile.AllocOp(tile.buffer_type(list(shape), element_type, space))
        op.location = self.location
        self._prologue.append(op)
        nbytes = math.prod(shape) * element_bytes(element_type)
        if space == "sram":
            self.sram_bytes += nbytes
        elif space == "acc":
            self.acc_bytes += nbytes
        return op.buffer

    # -- loops
    def loop(self, start: int, stop: int, step: int, body: Callable[[Index], None]) -> None:
        """for iv in range(start, stop, step): body(iv), as one scf.for (or inline if one trip)."""
        trips = -(-(stop - start) // step)
        if trips <= 1:
            if trips == 1:
                body(start)
            return
        block = Block(arg_types=[IndexType()])
        self.emit(scf.ForOp(self.index(start), self.index(stop), self.index(step), [], block))
        outer, times = self._block, self._times
        self._block, self._times = block, times * trips
        self._memo.append({})
        try:
            body(block.args[0])
            self.emit(scf.YieldOp())
        finally:
            self._block, self._times = outer, times
            self._memo.pop()

    def tiles(
        self, extent: int, size: int, body: Callable[[Index, int], None], start: int = 0, unroll: int = 0
    ) -> None:
        """body(offset, tile size) over [start, start + extent) in tiles of `size`: a loop
        over the full tiles, then the remainder (nothing when extent <= 0); up to `unroll`
        tiles, each one after the other instead (insert-semaphores then orders them one by one,
        where it waits for a loop as a whole)."""
        if extent <= 0:
            return
        if -(-extent // size) <= unroll:
            for offset in range(start, start + extent, size):
                body(offset, min(size, start + extent - offset))
            return
        full, rest = divmod(extent, size)
        self.loop(start, start + full * size, size, lambda offset: body(offset, size))
        if rest:
            body(start + full * size, rest)

    def own_loads(self, trips: int, bubble: int = 0) -> AbstractContextManager[None]:
        """Charges the DRAM reads emitted inside, the body of a loop of `trips` trips that moves
        data alone and stores nothing, as convert-tile-to-sync binds them (`bubble`: cycles the
        loop's first loads wait behind a store each time it starts; `Cost.loads_of_own_loop`)."""
        return self.cost.loads_of_own_loop(self.target, trips, self._times, bubble)

    @contextmanager
    def peeled_trip(self) -> Iterator[None]:
        """Charges, after the ops emitted inside (the peeled first trip of a pipelined loop,
        e.g. a conv's first channel chunk of an output tile: nothing before it rotates with it),
        a stall as long as its DMA ops take on their queue, once each: at buffer depth 2 its
        compute waits for them (`window_costs._chunks` charges the same)."""
        outer, self._peeled = self._peeled, Cost(depth=1, places_straight=False)
        try:
            yield
        finally:
            peeled, self._peeled = self._peeled, outer
        if self.cost.depth > 1:
            self.cost.add_wait(math.ceil(max(peeled.queues.values(), default=0)), self._times)

    def nest(self, extents: Sequence[int], body: Callable[[list[Index]], None]) -> None:
        """body(indices) for every point of `extents`: one loop per dim larger than 1."""

        def level(depth: int, indices: list[Index]) -> None:
            if depth == len(extents):
                body(indices)
                return
            self.loop(0, extents[depth], 1, lambda iv: level(depth + 1, [*indices, iv]))

        level(0, [])

    # -- window ops
    def _window_op(
        self, cls: type[tile.WindowOp], wins: Sequence[Win], sizes: Sequence[int], **attrs
    ) -> None:
        accesses = [(w.buffer, [self.index(i) for i in w.idx]) for w in wins]
        extra = {k: v for k, v in attrs.items() if v is not None}
        self.emit(cls(accesses, [int(s) for s in sizes], extra))

    def _charge_dma(
        self,
        src: SSAValue,
        dst: SSAValue,
        sizes: Sequence[int],
        transpose: bool = False,
        ahead: bool = False,
        feeds: bool = False,
        spread: bool = False,
        apart: int = -1,
    ) -> None:
        """The DMA instructions convert-sync-to-hw will select for the copy (`dma_transfers`)."""
        element = element_bytes(buffer_element(dst))
        box = [int(s) for s in sizes]
        count, nbytes = dma_transfers(box, buffer_shape(src), buffer_shape(dst), element, transpose)
        spaces = (tile.space_of(src), tile.space_of(dst))
        if spaces[0] == "dram":
            self._loaded.add(tile.base_buffer(dst))
        independent = "dram" not in spaces and tile.base_buffer(src) not in self._loaded
        if self._peeled is not None:
            self._peeled.add_dma(self.target, nbytes, *spaces, count)
        self.cost.add_dma(
            self.target,
            nbytes,
            *spaces,
            self._times * count,
            ahead,
            feeds=feeds,
            looped=self._times > 1,
            independent=independent,
            spread=spread,
            apart=apart,
        )

    def charge_beside_taps(self, cycles: int) -> None:
        """`Cost.add_beside_taps` at the current loop depth (`window_costs.taps_beside`)."""
        self.cost.add_beside_taps(cycles, self._times)

    def _charge_vector(self, op: str, sizes: Sequence[int], ahead: bool = False) -> None:
        rows, cols = (1, *sizes)[-2:]
        self.cost.add_vector(vector_cycles(self.target, op, rows, cols), self._times, ahead)

    def copy(
        self,
        src: Win,
        dst: Win,
        sizes: Sequence[int],
        ahead: bool = False,
        feeds: bool = False,
        spread: bool = False,
        apart: int = -1,
    ) -> None:
        """A DMA copy; `ahead`: into a tile no earlier compute of the kernel reuses, so even at
        buffer depth 1 it need not wait for that compute; `feeds`: an on-chip copy of loaded data
        for the compute, charged as convert-tile-to-sync binds it; `spread`: a load of a loop
        that waits for its loads, over every queue; `apart`: a part of one load split over the
        queues (`Cost.add_dma`)."""
        self._window_op(tile.CopyOp, [src, dst], sizes)
        self._charge_dma(src.buffer, dst.buffer, sizes, ahead=ahead, feeds=feeds, spread=spread, apart=apart)

    def transpose(self, src: Win, dst: Win, sizes: Sequence[int]) -> None:
        self._window_op(tile.TransposeOp, [src, dst], sizes)
        self._charge_dma(src.buffer, dst.buffer, sizes, transpose=True)

    def gather(self, table: Win, indices: Win, dst: Win, sizes: Sequence[int]) -> None:
        self._window_op(tile.GatherOp, [table, indices, dst], sizes)
        nbytes = math.prod(sizes) * element_bytes(buffer_element(dst.buffer))
        self.cost.add_dma(self.target, nbytes, "dram", "sram", self._times)

    def matmul(
        self,
        lhs: Win,
        rhs: Win,
        acc: Win,
        sizes: Sequence[int],
        accumulate: bool,
        transpose_rhs: bool = False,
    ) -> None:
        """acc (+)= lhs @ rhs; `transpose_rhs`: rhs is stored n x k."""
        flags = {"accumulate": accumulate, "transpose_rhs": transpose_rhs}
        self._window_op(
            tile.MatmulOp, [lhs, rhs, acc], sizes, **{k: UnitAttr() for k, v in flags.items() if v}
        )
        m, k, _ = sizes
        self.cost.add_matrix(matmul_cycles(self.target, m, k), self._times)

    def binary(
        self, op: str, a: Win, b: Win, dst: Win, sizes: Sequence[int], broadcast: str = "none"
    ) -> None:
        mode = None if broadcast == "none" else StringAttr(broadcast)
        self._window_op(tile.BinaryOp, [a, b, dst], sizes, op=StringAttr(op), broadcast=mode)
        self._charge_vector(op, sizes)

    def binary_imm(
        self, op: str, a: Win, imm: float, dst: Win, sizes: Sequence[int], ahead: bool = False
    ) -> None:
        """dst = a <op> imm; `ahead`: `a` holds nothing the kernel loads (`Cost.add_vector`)."""
        attrs = {"op": StringAttr(op), "imm": FloatAttr(float(imm), f64)}
        self._window_op(tile.BinaryImmOp, [a, dst], sizes, **attrs)
        self._charge_vector(op, sizes, ahead)

    def unary(self, op: str, a: Win, dst: Win, sizes: Sequence[int]) -> None:
        self._window_op(tile.UnaryOp, [a, dst], sizes, op=StringAttr(op))
        self._charge_vector(op, sizes)

    def select(self, cond: Win, a: Win, b: Win, dst: Win, sizes: Sequence[int]) -> None:
        self._window_op(tile.SelectOp, [cond, a, b, dst], sizes)
        self._charge_vector("select", sizes)

    def reduce(self, op: str, a: Win, dst: Win, sizes: Sequence[int]) -> None:
        self._window_op(tile.ReduceOp, [a, dst], sizes, op=StringAttr(op))
        self._charge_vector("reduce", sizes)

    def cast(self, a: Win, dst: Win, sizes: Sequence[int], scale: float = 1.0, zero: int = 0) -> None:
        """dst = convert(a * scale) with the integer side's `zero` point (tile.cast: to integers
        rounding half to even, adding `zero`, saturating; from integers subtracting it first)."""
        attrs: dict[str, Attribute] = {"scale": FloatAttr(float(scale), f64)} if scale != 1.0 else {}
        if zero:
            attrs["zero"] = i64_attr(int(zero))
        self._window_op(tile.CastOp, [a, dst], sizes, **attrs)
        self._charge_vector("cast", sizes)

    def acc_read(self, a: Win, dst: Win, sizes: Sequence[int], activation: str | None = None) -> None:
        mode = StringAttr(activation) if activation and activation != "none" else None
        self._window_op(tile.AccReadOp, [a, dst], sizes, activation=mode)
        self._charge_vector(activation or "acc_read", sizes)

    # -- result
    def finish(
        self, tiles: Sequence[int], reason: str, extra: Mapping[str, Attribute] | None = None
    ) -> tile.KernelOp:
        """The kernel with its prologue (constants, then allocs) and its recorded decisions
        (`extra` ones right after `tiles`)."""
        block = self.kernel.body.block
        first = block.first_op
        constants = [op for op in self._prologue if isinstance(op, arith.ConstantOp)]
        allocs = [op for op in self._prologue if not isinstance(op, arith.ConstantOp)]
        for op in constants + allocs:
            if first is None:
                block.add_op(op)
            else:
                block.insert_op_before(op, first)
        cycles = self.cost.cycles(self.target)
        attrs: dict[str, Attribute] = {
            "op": StringAttr(self.op_names),
            "tiles": DenseArrayBase.from_list(i64, [int(t) for t in tiles]),
            **(extra or {}),
            "dma_bytes": IntegerAttr(self.cost.dram_bytes, i64),
            "est_cycles": IntegerAttr(cycles, i64),
            "sram_bytes": IntegerAttr(self.sram_bytes, i64),
        }
        if self.acc_bytes:
            attrs["acc_bytes"] = IntegerAttr(self.acc_bytes, i64)
        attrs["reason"] = StringAttr(reason)
        attrs[FILL_DRAIN_ATTR] = DenseArrayBase.from_list(i64, self.cost.fill_and_drain(self.target, cycles))
        self.kernel.attributes.update(attrs)
        return self.kernel


class CostOnlyBuilder(KernelBuilder):
    """A KernelBuilder that charges the cost model for every op and emits none: loops run their
    body once, with the first index, `times` their trip count. A lowering run on it gives the
    estimate of the kernel it would emit (`est_cycles`), to choose between plans or layouts
    before emitting anything."""

    def __init__(self, budget: Budget, op_names: str):
        super().__init__(budget, "estimate", UnknownLoc(), op_names)

    def emit(self, op: Operation) -> Operation:
        return op

    def _window_op(self, cls, wins, sizes, **attrs) -> None:
        return None

    def loop(self, start, stop, step, body) -> None:
        trips = -(-(stop - start) // step)
        if trips < 1:
            return
        times = self._times
        self._times = times * trips
        try:
            body(start)
        finally:
            self._times = times


def dram_buffer(shape: Sequence[int], element_type: Attribute = f32) -> SSAValue:
    """A DRAM buffer of `shape` standing for a tensor in a `CostOnlyBuilder` estimate."""
    return tile.AllocOp(tile.buffer_type(list(shape), element_type, "dram")).buffer
