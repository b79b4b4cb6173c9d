"""Elementwise chains fused into the epilogue of an int8 matmul or conv (convert-graph-to-tile).

graph-quantized-matmul leaves an i8 x i8 -> i32 matmul followed by its scaling back to f32
and whatever the model does next elementwise (a bias, an activation, the next layer's
quantize):

    %acc = graph.matmul %aq, %wq                  (i32)
    %y = graph.dequantize %acc, %scale, %zero     \\
    %b = graph.add %y, %bias                       |  one elementwise chain
    %h = graph.quantize %b, %s, %z                /

Lowered apart, the i32 product goes to DRAM and comes back. Fused, each finished output tile
runs the chain straight from the accumulator (tile.cast reads ACC) in SRAM working tiles and
stores only the chain's result (int8 for a requantized layer): the epilogue of the matmul
kernel. The chain qualifies when it starts with a dequantize of the product (its only use)
and every other input is an immediate, one value per output column (a `1 x n` row loaded once
per kernel) or a tensor of the product's shape (a residual: each block loads its window when
it starts, so the loads overlap the block's matmuls).

An int8 conv (channels first: an output tile is [output channels, positions]) takes a chain
the same way, whose other inputs are immediates or one value per output channel (`cols`,
[C_out, 1, ...]: a column loaded once per group, broadcast along the tile's rows).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from aitc.analysis.graph_matching import splat_value
from aitc.dialects import graph
from aitc.passes.graph_to_tile.builder import CostOnlyBuilder, KernelBuilder, Win, dram_buffer
from aitc.passes.graph_to_tile.costs import Budget
from aitc.passes.graph_to_tile.elementwise import EMITTERS, Operand
from aitc.passes.graph_to_tile.lowering import tensor_element, tensor_shape
from aitc.passes.graph_to_tile.vector import elementwise_unsupported, plan_slots


@dataclass(frozen=True)
class EpilogueChain:
    """An elementwise chain the matmul or conv kernel runs on each output tile: `ops` in
    order, the product they read (`source`), the 1 x n rows (`rows`, in load order; a matmul's),
    the per-channel columns (`cols`; a conv's), the working tiles (`slot_of`, `temps_of`,
    `slot_types` as `vector.plan_slots` plans them)."""

    ops: tuple[Operation, ...]
    source: SSAValue
    rows: tuple[SSAValue, ...]
    tiles: tuple[SSAValue, ...]
    slot_of: dict[SSAValue, int]
    temps_of: dict[Operation, list[int]]
    slot_types: list[str]
    cols: tuple[SSAValue, ...] = ()

    @property
    def result(self) -> SSAValue:
        return self.ops[-1].results[0]

    def vector_ops(self, budget: Budget) -> tuple[str, ...]:
        """The vector ops one output tile of the chain costs (for the matmul's cost model): its
        emitters run on a recorder with the operand kinds `run_chain` gives them, so the names
        are the emission's (a tanh-approximated gelu is 9 ops, a quantize 2)."""
        recorder = _VectorOpRecorder(budget)
        scratch = Win.at(dram_buffer([1, 1]))

        def operand(value: SSAValue) -> Operand:
            if value is self.source or value in self.tiles or value in self.slot_of:
                return Operand("full", scratch)
            if value in self.rows:
                return Operand("row", scratch)
            if value in self.cols:
                return Operand("col", scratch)
            imm = splat_value(value)
            assert imm is not None  # epilogue_chain admits only these
            return Operand("imm", value=imm)

        for op in self.ops:
            temps = [scratch] * len(self.temps_of[op])
            EMITTERS[type(op)][0](recorder, op, [operand(v) for v in op.operands], scratch, temps, [1, 1])
        return tuple(recorder.names)

    def emit(
        self,
        kb: KernelBuilder,
        product: Win,
        inputs: Mapping[SSAValue, Operand],
        slots: Sequence[Win],
        sizes: list[int],
        first: AbstractContextManager | None = None,
    ) -> Win:
        """Emits the chain on one output tile of the kernel: `product` is what it starts from
        (in ACC or SRAM), `inputs` the operands of its rows, columns and tensor inputs as the
        kernel loaded them, `slots` its working tiles (`slot_types`); the first op runs inside
        `first` (the cost model's ACC read, when it reads ACC). Each op carries its own
        location, then the last op's stays. Returns the slot holding the result."""

        def operand(value: SSAValue) -> Operand:
            if value is self.source:
                return Operand("full", product)
            if value in inputs:
                return inputs[value]
            if value in self.slot_of:
                return Operand("full", slots[self.slot_of[value]])
            imm = splat_value(value)
            assert imm is not None  # epilogue_chain admits only these
            return Operand("imm", value=imm)

        for op in self.ops:
            kb.location = op.location
            temps = [slots[t] for t in self.temps_of[op]]
            result = slots[self.slot_of[op.results[0]]]
            with first if first is not None and op is self.ops[0] else nullcontext():
                EMITTERS[type(op)][0](kb, op, [operand(v) for v in op.operands], result, temps, sizes)
        kb.location = self.ops[-1].location
        return slots[self.slot_of[self.result]]


class _VectorOpRecorder(CostOnlyBuilder):
    """Records the name of every vector op an emission charges, and emits nothing."""

    def __init__(self, budget: Budget):
        super().__init__(budget, "epilogue")
        self.names: list[str] = []

    def _charge_vector(self, op: str, sizes: Sequence[int], ahead: bool = False) -> None:
        self.names.append(op)


def _is_row(value: SSAValue, rank: int, columns: int) -> bool:
    shape = tensor_shape(value)
    return len(shape) <= rank and bool(shape) and shape[-1] == columns and math.prod(shape) == columns


def _is_channel_column(value: SSAValue, shape: tuple[int, ...]) -> bool:
    """Whether `value` holds one value per channel (axis 1) of a tensor of `shape`."""
    own = tensor_shape(value)
    if len(own) > len(shape) or len(shape) < 2:
        return False
    padded = (1,) * (len(shape) - len(own)) + tuple(own)
    return padded[1] == shape[1] and math.prod(padded) == shape[1]


def _integer_producer(op: Operation) -> bool:
    """An int8 matmul, or an int8 channels-first conv: the producers a chain can follow."""
    if isinstance(op, graph.MatMulOp):
        return str(tensor_element(op.lhs)) == "i8"
    return isinstance(op, graph.ConvOp) and op.is_integer() and not op.is_channels_last()


def epilogue_chain(producer: Operation, ops: list[Operation]) -> EpilogueChain | None:
    """The chain `ops` as the epilogue of int8 `producer` (module docstring), or None."""
    if not _integer_producer(producer) or not ops:
        return None
    first, source = ops[0], producer.results[0]
    if not isinstance(first, graph.DequantizeOp) or first.input is not source or not source.has_one_use():
        return None
    shape = tensor_shape(source)
    if not shape or any(value is source for op in ops[1:] for value in op.operands):
        return None
    kinds = _input_kinds(ops, source, shape, isinstance(producer, graph.ConvOp))
    if kinds is None:
        return None
    rows = tuple(value for value, kind in kinds.items() if kind == "row")
    cols = tuple(value for value, kind in kinds.items() if kind == "col")
    tiles = tuple(value for value, kind in kinds.items() if kind == "full" and value is not source)
    slot_of, temps_of, slot_types = plan_slots(list(ops), kinds)
    return EpilogueChain(tuple(ops), source, rows, tiles, slot_of, temps_of, slot_types, cols)


def _input_kinds(
    ops: list[Operation], source: SSAValue, shape: tuple[int, ...], conv: bool = False
) -> dict[SSAValue, str] | None:
    """How the chain reads each input: the product and tensors of its shape "full", splats
    "imm", per-column values "row" (a matmul's), per-channel values "col" (a `conv`'s); None
    when an op is not an elementwise op of the product's shape the vector engine runs, or an
    input is anything else."""
    produced = {op.results[0] for op in ops}
    kinds: dict[SSAValue, str] = {source: "full"}
    for op in ops:
        if type(op) not in EMITTERS or elementwise_unsupported(op) or tensor_shape(op.results[0]) != shape:
            return None
        for value in op.operands:
            if value in produced or value in kinds:
                continue
            if splat_value(value) is not None:
                kinds[value] = "imm"
            elif conv and _is_channel_column(value, shape):
                kinds[value] = "col"
            elif not conv and _is_row(value, len(shape), shape[-1]):
                kinds[value] = "row"
            elif tensor_shape(value) == shape:
                kinds[value] = "full"
            else:
                return None
    return kinds


def row_types(chain: EpilogueChain) -> tuple[str, ...]:
    """The element type of each row the chain loads."""
    return tuple(str(tensor_element(row)) for row in chain.rows)


def tile_types(chain: EpilogueChain) -> tuple[str, ...]:
    """The element type of each tensor the chain loads per output tile."""
    return tuple(str(tensor_element(value)) for value in chain.tiles)


def fuse_epilogue_chains(units: list[list[Operation]]) -> list[list[Operation]]:
    """Lowering units (in order) with each lone int8 matmul or conv merged with the elementwise
    chain unit that starts by dequantizing its product (`epilogue_chain`), placed at the
    chain's position and lowered by the producer's lowering."""
    single = {unit[0]: index for index, unit in enumerate(units) if len(unit) == 1}
    merged: list[list[Operation] | None] = list(units)
    for index, unit in enumerate(units):
        first = unit[0]
        if not isinstance(first, graph.DequantizeOp):
            continue
        producer = first.input.owner
        if isinstance(producer, Operation) and producer in single and epilogue_chain(producer, unit):
            merged[single[producer]] = None
            merged[index] = [producer, *unit]
    return [unit for unit in merged if unit]
