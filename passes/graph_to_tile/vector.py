"""Elementwise chains for convert-graph-to-tile: fusion, broadcast layout and emission.

A chain is a set of elementwise graph ops joined through single-use results of the same
shape and compute type (`fuse_elementwise`); it becomes ONE kernel whose intermediate
results stay in SRAM:

    for outer in leading dims that a broadcast operand cannot follow:   (scf.for each)
      for r0 in rows step tr:  for c0 in cols step tc:
        load each external operand once (full tile, 1 x tc row, tr x 1 column or 1 x 1)
        one tile-op sequence per graph op (graph_to_tile_elementwise.EMITTERS), SRAM -> SRAM
        store the chain's result

The iteration space is the result flattened to rows x cols (cols = last dim); leading dims
join the rows as long as every broadcast operand is full, a row (1 x cols), a column
(rows x 1) or a scalar over them, and are looped over otherwise. Splat constants become
immediates. Working tiles are reused once their value is dead (`plan_slots`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import f32, i8, i32
from xdsl.ir import Block, Operation, SSAValue

from aitc.analysis.graph_matching import splat_value
from aitc.dialects import graph
from aitc.dialects.hw import DTYPES
from aitc.passes.graph_to_tile.builder import CostOnlyBuilder, Index, KernelBuilder, Win, element_bytes
from aitc.passes.graph_to_tile.costs import RowFootprint, fastest_height, plan_rows, tile_heights
from aitc.passes.graph_to_tile.elementwise import EMITTERS, Operand, pow_exponent, temp_types
from aitc.passes.graph_to_tile.lowering import (
    CannotFit,
    LoweringContext,
    tensor_element,
    tensor_shape,
)

SLOT_TYPES = {"f32": f32, "i32": i32, "i8": i8}
"""Element type of a working tile, by its compute type's name."""

FLOAT_ONLY_NAMES = {"exp", "log", "sqrt", "recip", "tanh", "sigmoid", "erf", "div"}


def compute_type(value: SSAValue) -> str:
    """The element type a value has in SRAM: booleans are f32 0/1 masks."""
    name = str(tensor_element(value))
    return "f32" if name == "i1" else name


def fuses_into(value: SSAValue, consumer: Operation) -> bool:
    """Whether `value`'s producer joins `consumer`'s chain (no DRAM round trip between them):
    results of one compute type, or the input of a graph.quantize/dequantize (which convert)."""
    producer = value.owner
    converts = isinstance(consumer, graph.QuantizeOp | graph.DequantizeOp) and value is consumer.input
    return (
        isinstance(producer, Operation)
        and type(producer) in EMITTERS
        and type(consumer) in EMITTERS
        and value.has_one_use()
        and tensor_shape(value) == tensor_shape(consumer.results[0])
        and (converts or compute_type(value) == compute_type(consumer.results[0]))
    )


def fuse_elementwise(
    ops: Sequence[Operation], is_fusable: Callable[[Operation], bool]
) -> list[list[Operation]]:
    """`ops` grouped into lowering units in order: each elementwise chain of `is_fusable` ops is
    one unit (placed at its last op), every other op a unit of its own."""
    units: list[list[Operation] | None] = []
    unit_of: dict[Operation | Block, int] = {}
    order = {op: i for i, op in enumerate(ops)}
    for op in ops:
        members = [op]
        if is_fusable(op):
            for operand in dict.fromkeys(op.operands):
                if fuses_into(operand, op) and operand.owner in unit_of:
                    index = unit_of[operand.owner]
                    members += units[index] or []
                    units[index] = None
        members.sort(key=order.__getitem__)
        for member in members:
            unit_of[member] = len(units)
        units.append(members)
    return [unit for unit in units if unit]


# --------------------------------------------------------------------------- static checks


def _i1_problem(op: Operation) -> str | None:
    for operand in op.operands:
        if str(tensor_element(operand)) == "i1" and not fuses_into(operand, op):
            return "reads a boolean (i1) tensor from DRAM: the engines have no boolean type"
    result = op.results[0]
    stored = not all(fuses_into(result, use.operation) for use in result.uses)
    if str(tensor_element(result)) == "i1" and stored:
        return "its boolean (i1) result would be stored in DRAM: use it only inside where/not/and/or"
    return None


def _quantization_problem(op: graph.QuantizeOp | graph.DequantizeOp) -> str | None:
    integer = str(tensor_element(op.output if isinstance(op, graph.QuantizeOp) else op.input))
    allowed = ("i8",) if isinstance(op, graph.QuantizeOp) else ("i8", "i32")
    if integer not in allowed:
        return f"{op.name} of {integer}: the NPU holds {' and '.join(allowed)} (uint8/16-bit run on the host)"
    if splat_value(op.zero_point) is None:
        return f"{op.name} with a zero point per channel: the vector engine takes one zero point per tensor"
    return None


def _type_problem(op: Operation) -> str | None:
    if isinstance(op, graph.QuantizeOp | graph.DequantizeOp):
        return _quantization_problem(op)
    types = {str(tensor_element(v)) for v in (*op.operands, *op.results)} - {"i1"}
    if isinstance(op, graph.CastOp):
        pair = (str(tensor_element(op.input)), str(tensor_element(op.output)))
        ok = pair[0] == pair[1] or (pair[1] in ("f32", "i1") and pair[0] in ("f32", "i32", "i8", "i1"))
        if ok:
            return None
        return f"cast {pair[0]} -> {pair[1]} is not expressible (tile.cast rounds, ONNX truncates)"
    if not types <= {"f32", "i32", "i8"}:
        return f"element type {', '.join(sorted(types))} is not handled by the vector engine (f32, i32, i8)"
    if types and types != {"f32"} and not _integer_ok(op):  # only-i1 ops compute on f32 masks
        return "this op needs f32 operands on the vector engine"
    return None


def _integer_ok(op: Operation) -> bool:
    from aitc.passes.graph_to_tile.elementwise import BINARY_NAMES, UNARY_NAMES

    if isinstance(op, graph.BroadcastOp):
        return True
    name = BINARY_NAMES.get(type(op)) or UNARY_NAMES.get(type(op))
    return name is not None and name not in FLOAT_ONLY_NAMES and not name.startswith("cmp")


def elementwise_unsupported(op: Operation) -> str | None:
    if isinstance(op, graph.PowOp) and pow_exponent(op) is None:
        return "pow needs a constant exponent in {0, +-0.5, +-1, +-2, 3}"
    if any(0 in tensor_shape(v) for v in (*op.operands, *op.results)):
        return "zero-size tensors have no buffers"
    return _type_problem(op) or _i1_problem(op)


# --------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class Layout:
    """The chain's iteration space: result shape `shape` = outer dims [:split] (looped) x a
    rows x cols block (dims [split:], cols = the last)."""

    shape: tuple[int, ...]
    split: int

    @property
    def rows(self) -> int:
        return math.prod(self.shape[self.split : -1])

    @property
    def cols(self) -> int:
        return self.shape[-1]

    def classify(self, shape: tuple[int, ...]) -> str | None:
        """How an operand of (aligned) `shape` looks from the block: full/row/col/scalar."""
        inner, block = shape[self.split :], self.shape[self.split :]
        leading_ones = all(d == 1 for d in inner[:-1])
        if inner == block:
            return "full"
        if leading_ones and inner[-1] == block[-1]:
            return "row"
        if inner[:-1] == block[:-1] and inner[-1] == 1:
            return "col"
        return "scalar" if leading_ones and inner[-1] == 1 else None

    @staticmethod
    def choose(shape: tuple[int, ...], operands: Sequence[tuple[int, ...]]) -> Layout:
        """The layout with the fewest looped dims that every operand fits."""
        for split in range(len(shape)):
            layout = Layout(shape, split)
            if all(layout.classify(s) for s in operands):
                return layout
        return Layout(shape, len(shape) - 1)


@dataclass(frozen=True)
class External:
    """A chain input from DRAM (or an immediate) and where its tiles come from."""

    value: SSAValue
    kind: str
    shape: tuple[int, ...]
    imm: float = 0.0

    def tile_sizes(self, rows: int, cols: int) -> list[int]:
        return [rows if self.kind in ("full", "col") else 1, cols if self.kind in ("full", "row") else 1]

    def view_shape(self, layout: Layout) -> list[int]:
        outer = math.prod(self.shape[: layout.split])
        return [outer * self.tile_sizes(layout.rows, layout.cols)[0], self.tile_sizes(1, layout.cols)[1]]

    def origin(
        self, kb: KernelBuilder, layout: Layout, outer: list[Index], r0: Index, c0: Index
    ) -> tuple[Index, Index]:
        terms, stride = [], 1
        for d in reversed(range(layout.split)):
            if self.shape[d] == layout.shape[d] and layout.shape[d] > 1:
                terms.append((outer[d], stride))
            stride *= self.shape[d]
        per_outer = self.tile_sizes(layout.rows, 1)[0]
        row = kb.add(kb.mul(kb.linear(terms), per_outer), r0 if self.kind in ("full", "col") else 0)
        return row, (c0 if self.kind in ("full", "row") else 0)


def _aligned(shape: tuple[int, ...], rank: int) -> tuple[int, ...]:
    return (1,) * (rank - len(shape)) + shape


def _externals(ops: list[Operation], rank: int) -> list[External]:
    inside = {r for op in ops for r in op.results}
    found: dict[SSAValue, External] = {}
    for op in ops:
        for value in op.operands:
            if value in inside or value in found:
                continue
            splat = splat_value(value)
            kind = "imm" if splat is not None else "full"
            found[value] = External(value, kind, _aligned(tensor_shape(value), rank), splat or 0.0)
    return list(found.values())


def plan_slots(
    ops: list[Operation], kinds: dict[SSAValue, str]
) -> tuple[dict[SSAValue, int], dict[Operation, list[int]], list[str]]:
    """Working tiles: (slot of each result, scratch slots of each op, the element type of each
    slot), given the broadcast kind of each external operand. A result never shares a slot
    with an operand of its own op; a slot is reused, by a value of its type, once its value
    is dead."""
    produced = {r: i for i, op in enumerate(ops) for r in op.results}
    last_use = {v: i for i, op in enumerate(ops) for v in op.operands if v in produced}
    slot_of: dict[SSAValue, int] = {}
    temps_of: dict[Operation, list[int]] = {}
    free: list[int] = []
    types: list[str] = []

    def take(element: str) -> int:
        for slot in reversed(free):
            if types[slot] == element:
                free.remove(slot)
                return slot
        types.append(element)
        return len(types) - 1

    for i, op in enumerate(ops):
        result_type = compute_type(op.results[0])
        slot_of[op.results[0]] = take(result_type)
        temps_of[op] = [
            take(t) for t in temp_types(op, [kinds.get(v, "full") for v in op.operands], result_type)
        ]
        free += temps_of[op] + [slot_of[v] for v in dict.fromkeys(op.operands) if last_use.get(v) == i]
    return slot_of, temps_of, types


# --------------------------------------------------------------------------- lowering


@dataclass
class Chain:
    ops: list[Operation]
    layout: Layout
    externals: list[External]
    slot_of: dict[SSAValue, int]
    temps_of: dict[Operation, list[int]]
    slot_types: list[str]

    @property
    def slots(self) -> int:
        return len(self.slot_types)

    @staticmethod
    def of(ops: list[Operation]) -> Chain:
        result = ops[-1].results[0]
        shape = tensor_shape(result) or (1,)
        externals = _externals(ops, len(shape))
        loaded = [e for e in externals if e.kind != "imm"]
        layout = Layout.choose(shape, [e.shape for e in loaded])
        externals = [
            e if e.kind == "imm" else External(e.value, layout.classify(e.shape) or "full", e.shape)
            for e in externals
        ]
        kinds = {e.value: e.kind for e in externals}
        return Chain(ops, layout, externals, *plan_slots(ops, kinds))

    def footprint(self) -> RowFootprint:
        """SRAM per tile: the working slots, plus each loaded input by its broadcast kind."""
        totals = {"full": sum(DTYPES[t] for t in self.slot_types), "col": 0, "row": 0, "scalar": 0}
        for e in self.externals:
            if e.kind != "imm":
                totals[e.kind] += element_bytes(tensor_element(e.value))
        return RowFootprint(totals["full"], totals["col"], totals["row"], totals["scalar"])


class ChainEmitter:
    """Emits the kernel of one planned chain: buffers once, then the tile body per tile."""

    def __init__(self, ctx: LoweringContext, kb: KernelBuilder, chain: Chain, tiles: tuple[int, int]):
        self.kb, self.chain, self.layout = kb, chain, chain.layout
        result = chain.ops[-1].results[0]
        self.slots = [kb.alloc(tiles, SLOT_TYPES[t], "sram") for t in chain.slot_types]
        self.views: dict[SSAValue, SSAValue] = {}
        self.stage: dict[SSAValue, SSAValue] = {}
        for e in chain.externals:
            if e.kind != "imm":
                self.views[e.value] = ctx.value_view(e.value, e.view_shape(self.layout))
                self.stage[e.value] = kb.alloc(e.tile_sizes(*tiles), tensor_element(e.value), "sram")
        self.ctx, self.result = ctx, result
        self.out: SSAValue | None = None  # the result's DRAM view, once a tile stores to it

    def slot(self, value: SSAValue) -> Win:
        return Win.at(self.slots[self.chain.slot_of[value]])

    def operand(self, value: SSAValue, externals: dict[SSAValue, External]) -> Operand:
        e = externals.get(value)
        if e is None:
            return Operand("full", self.slot(value))
        return Operand(e.kind, None if e.kind == "imm" else Win.at(self.stage[value]), e.imm)

    def invariant(self, e: External, tiles: tuple[int, int]) -> bool:
        """Whether `e`'s tile is the same for every iteration (loaded once, before the loops)."""
        follows_outer = any(e.shape[d] == self.layout.shape[d] > 1 for d in range(self.layout.split))
        return e.kind in ("row", "scalar") and not follows_outer and tiles[1] == self.layout.cols

    def load(self, e: External, outer: list[Index], r0: Index, c0: Index, sizes: tuple[int, int]) -> None:
        origin = e.origin(self.kb, self.layout, outer, r0, c0)
        self.kb.copy(Win(self.views[e.value], origin), Win.at(self.stage[e.value]), e.tile_sizes(*sizes))

    def hoist(self, tiles: tuple[int, int]) -> None:
        """Loads the loop-invariant inputs (a bias row, a scalar) once, before the loops."""
        loaded = [e for e in self.chain.externals if e.kind != "imm"]
        self.hoisted = {e.value for e in loaded if self.invariant(e, tiles)}
        for e in loaded:
            if e.value in self.hoisted:
                self.load(e, [0] * self.layout.split, 0, 0, tiles)

    def tile(self, outer: list[Index], r0: Index, rs: int, c0: Index, cs: int) -> None:
        """Loads the inputs, computes every op of the chain in SRAM, stores the result."""
        result = self.compute(outer, r0, rs, c0, cs)
        if self.out is None:
            outer_rows = math.prod(self.layout.shape[: self.layout.split]) * self.layout.rows
            self.out = self.ctx.value_view(self.result, [outer_rows, self.layout.cols])
        kb = self.kb
        row = kb.add(kb.mul(kb.linear(_outer_terms(self.layout, outer)), self.layout.rows), r0)
        kb.copy(result, Win(self.out, (row, c0)), [rs, cs])

    def compute(self, outer: list[Index], r0: Index, rs: int, c0: Index, cs: int) -> Win:
        """Loads the inputs of one tile and computes every op of the chain in SRAM; the working
        tile that holds the result (a consumer may go on working in it: the next tile's ops
        write it before they read it)."""
        kb, chain, sizes = self.kb, self.chain, [rs, cs]
        externals = {e.value: e for e in chain.externals}
        for e in chain.externals:
            if e.kind != "imm" and e.value not in self.hoisted:
                self.load(e, outer, r0, c0, (rs, cs))
        for op in chain.ops:
            kb.location = op.location
            xs = [self.operand(v, externals) for v in op.operands]
            temps = [Win.at(self.slots[t]) for t in chain.temps_of[op]]
            EMITTERS[type(op)][0](kb, op, xs, self.slot(op.results[0]), temps, sizes)
        kb.location = chain.ops[-1].location
        return self.slot(chain.ops[-1].results[0])


def _outer_terms(layout: Layout, outer: list[Index]) -> list[tuple[Index, int]]:
    terms, stride = [], 1
    for d in reversed(range(layout.split)):
        terms.append((outer[d], stride))
        stride *= layout.shape[d]
    return terms


def _emit_chain(ctx: LoweringContext, kb: KernelBuilder, chain: Chain, tiles: tuple[int, int]) -> None:
    layout = chain.layout
    tr, tc = tiles
    kb.fills_ahead = True  # its broadcast constants are filled in scratch tiles no load writes
    emitter = ChainEmitter(ctx, kb, chain, tiles)
    emitter.hoist(tiles)

    def block(outer: list[Index]) -> None:
        kb.tiles(
            layout.rows,
            tr,
            lambda r0, rs: kb.tiles(layout.cols, tc, lambda c0, cs: emitter.tile(outer, r0, rs, c0, cs)),
        )

    kb.nest(layout.shape[: layout.split], block)


def _fastest_rows(
    ctx: LoweringContext, chain: Chain, largest: tuple[int, int]
) -> tuple[tuple[int, int], str]:
    """The tile height with the lowest estimate among the most rows that fit and its halvings
    (`costs.tile_heights`), and the words the kernel's `reason` gives for the choice."""
    rows, (tr, tc) = chain.layout.rows, largest
    full = [e.value for e in chain.externals if e.kind == "full"] + [chain.ops[-1].results[0]]
    widest = max(element_bytes(tensor_element(value)) for value in full)

    def estimate(height: int) -> int:
        kb = CostOnlyBuilder(ctx.budget, "elementwise")
        _emit_chain(ctx, kb, chain, (height, tc))
        return kb.cost.cycles(ctx.budget.target)

    estimates = tile_heights(rows, tr, tc * widest, ctx.budget.target, estimate)
    best = fastest_height(estimates)
    if len(estimates) == 1:
        return (best, tc), "most rows that fit"
    tried = ", ".join(f"{height} rows {cycles}" for height, cycles in estimates.items())
    return (best, tc), f"the fastest estimate of the heights that fit: {tried} cycles"


def lower_chain(ctx: LoweringContext, ops: list[Operation]) -> None:
    chain = Chain.of(ops)
    layout = chain.layout
    footprint = chain.footprint()
    largest = plan_rows(layout.rows, layout.cols, footprint, ctx.budget.sram, False)
    if largest is None:
        what = f"one column of the fused chain's {chain.slots} working tile(s) and inputs"
        raise CannotFit(ops[-1], what, footprint.bytes(1, 1), ctx.budget)
    tiles, why = _fastest_rows(ctx, chain, largest)
    kb = ctx.kernel(ops)
    _emit_chain(ctx, kb, chain, tiles)
    tr, tc = tiles
    reason = (
        f"{len(ops)} elementwise op(s) in one kernel: one load per input and one store per {tr} x {tc} tile "
        f"of {layout.rows} x {layout.cols} with {chain.slots} working tile(s) ({why})"
    )
    ctx.add(kb, [tr, tc], reason)
