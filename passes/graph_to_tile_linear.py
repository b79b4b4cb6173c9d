"""Lowering of the matmul family (`graph.matmul`: batched, broadcast batch dims, 1-D operands,
optional bias and fused activation) for convert-graph-to-tile.

Every batch is C[M x N] = A[M x K] @ B[K x N] on 2-D DRAM views; a rhs without batch dims folds
the lhs batch into M. The tile sizes come from `plan_matmul` (graph_to_tile_costs). Loop nest
for order "m" (order "n" swaps the m and n loops and keeps the K x tn panel of B instead):

    for batch:                                   (one scf.for per batch dim > 1)
      for m0 in M step tm:
        [A tile <- lhs[m0, 0:K]]                 (keep = lhs: A is reused by every n tile)
        for n0 in N step tn:                     (tn <= matrix cols)
          A/B tiles <- lhs/rhs, first K tile     (peeled: its first matmul does not accumulate)
          tile.matmul ... sizes [tm, rows, tn]   (one per `rows` of the K tile, a loop)
          for k0 in tk..K step tk:  load, tile.matmul {accumulate}
          epilogue: acc_read {activation}, or   tile.binary add(acc, bias row) + activation
          out[m0, n0] <- C tile
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from aitc.dialects import graph
from aitc.passes.graph_to_tile_builder import Index, KernelBuilder, Win
from aitc.passes.graph_to_tile_costs import MatmulPlan, MatmulProblem, matmul_minimum, plan_matmul
from aitc.passes.graph_to_tile_elementwise import ACTIVATION_TEMPS, activation_ops, apply_activation
from aitc.passes.graph_to_tile_lowering import (
    CannotFit,
    LoweringContext,
    register,
    tensor_element,
    tensor_shape,
)
from aitc.types import broadcast_shapes


@dataclass(frozen=True)
class MatmulGeometry:
    """A graph.matmul as batches of 2-D products: per operand its batch shape (aligned to the
    output batch, 1 = broadcast) and the 2-D DRAM view shapes."""

    m: int
    k: int
    n: int
    batch: tuple[int, ...]
    lhs_batch: tuple[int, ...]
    rhs_batch: tuple[int, ...]

    @staticmethod
    def of(op: graph.MatMulOp) -> MatmulGeometry:
        a, b = tensor_shape(op.lhs), tensor_shape(op.rhs)
        a2 = (1, *a) if len(a) == 1 else a
        b2 = (*b, 1) if len(b) == 1 else b
        m, k, n = a2[-2], a2[-1], b2[-1]
        if math.prod(b2[:-2]) == 1:  # shared rhs: the lhs batch folds into M
            return MatmulGeometry(math.prod(a2[:-2]) * m, k, n, (), (), ())
        batch = broadcast_shapes(a2[:-2], b2[:-2])
        align = lambda s: (1,) * (len(batch) - len(s)) + tuple(s)  # noqa: E731
        return MatmulGeometry(m, k, n, batch, align(a2[:-2]), align(b2[:-2]))

    def row_terms(
        self, indices: list[Index], operand_batch: tuple[int, ...], rows: int
    ) -> list[tuple[Index, int]]:
        """(batch index, row stride) terms of an operand's first row in its 2-D view, whose
        batches hold `rows` rows each (broadcast batch dims contribute nothing)."""
        terms, stride = [], rows
        for d in reversed(range(len(self.batch))):
            if operand_batch[d] == self.batch[d]:
                terms.append((indices[d], stride))
            stride *= operand_batch[d]
        return terms


def _matmul_unsupported(op: Operation) -> str | None:
    assert isinstance(op, graph.MatMulOp)
    if str(tensor_element(op.lhs)) != "f32":
        return f"only f32 matmuls are lowered (got {tensor_element(op.lhs)}; i8 comes with quantization)"
    return None


@dataclass
class _Buffers:
    lhs: SSAValue
    rhs: SSAValue
    out: SSAValue
    bias: SSAValue | None
    a: SSAValue
    b: SSAValue
    acc: SSAValue
    y: SSAValue
    bias_tile: SSAValue | None
    temp: SSAValue | None


class _MatmulEmitter:
    """Emits the loop nest of one planned matmul (see the module docstring)."""

    def __init__(
        self, kb: KernelBuilder, geometry: MatmulGeometry, plan: MatmulPlan, bufs: _Buffers, activation
    ):
        self.kb, self.g, self.plan, self.bufs, self.activation = kb, geometry, plan, bufs, activation

    def batch(self, rows: tuple[Index, Index, Index]) -> None:
        self.lr, self.rr, self.orow = rows
        if self.plan.order == "n":
            self.kb.tiles(self.g.n, self.plan.tn, self.n_panel)
        else:
            self.kb.tiles(self.g.m, self.plan.tm, self.m_tile)

    # -- order m: A kept across n tiles when tk == K
    def m_tile(self, m0: Index, msz: int) -> None:
        if self.plan.keep == "lhs":
            self.kb.copy(
                Win(self.bufs.lhs, (self.kb.add(self.lr, m0), 0)), Win.at(self.bufs.a), [msz, self.g.k]
            )
        self.kb.tiles(self.g.n, self.plan.tn, lambda n0, nsz: self.mn_tile(m0, msz, n0, nsz))

    def mn_tile(self, m0: Index, msz: int, n0: Index, nsz: int) -> None:
        first = min(self.plan.tk, self.g.k)
        self.k_tile(m0, msz, n0, nsz, 0, first, True)
        self.kb.tiles(
            self.g.k - first,
            self.plan.tk,
            lambda k0, ksz: self.k_tile(m0, msz, n0, nsz, k0, ksz, False),
            first,
        )
        self.epilogue(m0, msz, n0, nsz, load_bias=True)

    # -- order n: the K x tn panel of B kept across m tiles
    def n_panel(self, n0: Index, nsz: int) -> None:
        self.kb.copy(Win(self.bufs.rhs, (self.rr, n0)), Win.at(self.bufs.b), [self.g.k, nsz])
        self.load_bias(n0, nsz)
        self.kb.tiles(self.g.m, self.plan.tm, lambda m0, msz: self.m_in_panel(m0, msz, n0, nsz))

    def m_in_panel(self, m0: Index, msz: int, n0: Index, nsz: int) -> None:
        self.k_tile(m0, msz, n0, nsz, 0, self.g.k, True)
        self.epilogue(m0, msz, n0, nsz, load_bias=False)

    # -- shared pieces
    def k_tile(self, m0: Index, msz: int, n0: Index, nsz: int, k0: Index, ksz: int, first: bool) -> None:
        kb, bufs, rows = self.kb, self.bufs, self.kb.budget.rows
        if self.plan.keep != "lhs":
            kb.copy(Win(bufs.lhs, (kb.add(self.lr, m0), k0)), Win.at(bufs.a), [msz, ksz])
        if self.plan.keep != "rhs":
            kb.copy(Win(bufs.rhs, (kb.add(self.rr, k0), n0)), Win.at(bufs.b), [ksz, nsz])
        acc = Win.at(bufs.acc)
        kb.matmul(Win.at(bufs.a), Win.at(bufs.b), acc, [msz, min(rows, ksz), nsz], accumulate=not first)
        kb.tiles(
            ksz - rows,
            rows,
            lambda ks, kss: kb.matmul(Win(bufs.a, (0, ks)), Win(bufs.b, (ks, 0)), acc, [msz, kss, nsz], True),
            rows,
        )

    def load_bias(self, n0: Index, nsz: int) -> None:
        if self.bufs.bias is not None and self.bufs.bias_tile is not None:
            self.kb.copy(Win(self.bufs.bias, (0, n0)), Win.at(self.bufs.bias_tile), [1, nsz])

    def epilogue(self, m0: Index, msz: int, n0: Index, nsz: int, load_bias: bool) -> None:
        kb, bufs, sizes = self.kb, self.bufs, [msz, nsz]
        y = Win.at(bufs.y)
        if bufs.bias_tile is None:
            kb.acc_read(Win.at(bufs.acc), y, sizes, self.activation)
        else:
            if load_bias:
                self.load_bias(n0, nsz)
            kb.binary("add", Win.at(bufs.acc), Win.at(bufs.bias_tile), y, sizes, "row")
            temp = Win.at(bufs.temp) if bufs.temp is not None else None
            apply_activation(kb, self.activation, y, temp, sizes)
        kb.copy(y, Win(bufs.out, (kb.add(self.orow, m0), n0)), sizes)


def _problem(op: graph.MatMulOp, g: MatmulGeometry) -> MatmulProblem:
    activation = op.activation.data if op.activation else None
    if op.bias is None:  # the activation rides on acc_read
        return MatmulProblem(math.prod(g.batch), g.m, g.k, g.n, epilogue=(activation or "acc_read",))
    temps = ACTIVATION_TEMPS.get(activation or "", 0)
    epilogue = ("add", *activation_ops(activation))
    return MatmulProblem(math.prod(g.batch), g.m, g.k, g.n, True, temps, epilogue)


def _allocate(
    kb: KernelBuilder, ctx: LoweringContext, op: graph.MatMulOp, g: MatmulGeometry, plan, temps
) -> _Buffers:
    f32 = tensor_element(op.lhs)
    lhs = ctx.value_view(op.lhs, [math.prod(g.lhs_batch) * g.m, g.k])
    rhs = ctx.value_view(op.rhs, [math.prod(g.rhs_batch) * g.k, g.n])
    out = ctx.value_view(op.output, [math.prod(g.batch) * g.m, g.n])
    bias = ctx.value_view(op.bias, [1, g.n]) if op.bias is not None else None
    tm, tn = plan.tm, plan.tn
    a = kb.alloc([tm, g.k if plan.keep == "lhs" else plan.tk], f32, "sram")
    b = kb.alloc([plan.tk, tn], f32, "sram")
    acc = kb.alloc([tm, tn], f32, "acc")
    y = kb.alloc([tm, tn], f32, "sram")
    bias_tile = kb.alloc([1, tn], f32, "sram") if bias is not None else None
    temp = kb.alloc([tm, tn], f32, "sram") if temps else None
    return _Buffers(lhs, rhs, out, bias, a, b, acc, y, bias_tile, temp)


def _reason(plan: MatmulPlan) -> str:
    keep = {"lhs": "keeps the lhs row panel in SRAM", "rhs": "keeps the rhs column panel in SRAM"}
    return (
        f"fewest est. cycles, then DMA bytes, of {plan.candidates} tilings (tn <= matrix cols, tk a "
        f"multiple of matrix rows or K); {keep.get(plan.keep, 'streams K tiles')}; loop order {plan.order}"
    )


@register(graph.MatMulOp, unsupported=_matmul_unsupported)
def lower_matmul(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.MatMulOp)
    g = MatmulGeometry.of(op)
    problem = _problem(op, g)
    plan = plan_matmul(problem, ctx.budget)
    if plan is None:
        sram, acc = matmul_minimum(problem, ctx.budget)
        if acc > ctx.budget.acc:
            raise CannotFit(op, "one accumulator row of the matmul", acc, ctx.budget, "ACC")
        raise CannotFit(
            op,
            f"a matmul tile 1 x {min(g.k, ctx.budget.rows)} x {min(g.n, ctx.budget.cols)}",
            sram,
            ctx.budget,
        )
    kb = ctx.kernel(ops)
    bufs = _allocate(kb, ctx, op, g, plan, problem.temps)
    emitter = _MatmulEmitter(kb, g, plan, bufs, op.activation.data if op.activation else None)

    def batch(indices: list[Index]) -> None:
        operands = ((g.lhs_batch, g.m), (g.rhs_batch, g.k), (g.batch, g.m))
        rows = tuple(kb.linear(g.row_terms(indices, batch, count)) for batch, count in operands)
        emitter.batch(rows)  # pyright: ignore

    kb.nest(g.batch, batch)
    ctx.add(kb, [plan.tm, plan.tk, plan.tn], _reason(plan))
