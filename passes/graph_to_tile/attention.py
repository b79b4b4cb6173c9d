"""Lowering of `graph.attention` for convert-graph-to-tile: one kernel, every head's scores in
SRAM/ACC only (no DRAM round trip between QK^T, the mask, the softmax and the product with V).

Per batch b, head h and tile of tq query rows (the heads are column windows of the packed
projections, so no transpose is needed: K^T comes from `tile.matmul {transpose_rhs}`):

    Q <- q[b*S + q0 : +tq, h*D : +D];  Q *= scale (unless 1)      (scaling Q: tq x D, not S)
    whole key rows (tkv = S'):            K, V <- k, v rows of (b, h), once per head
      S_acc = Q @ K^T [+ 1 @ mask];  m = rowmax(S_acc);  S = exp(S_acc - m)
      l = rowsum(S);  O = acc_read(S @ V) * (1 / l)                (normalising O, not S)
    key chunks of tkv (FlashAttention's online softmax, when a head's K/V or a score row does
    not fit): per chunk c, with K_c, V_c loaded per query tile
      S_acc = Q @ K_c^T [+ 1 @ mask_c];  m' = max(m, rowmax(S_acc));  a = exp(m - m');  m = m'
      S = exp(S_acc - m);  l = l * a + rowsum(S);  O = O * a + acc_read(S @ V_c)
    out[b*S + q0 : +tq, h*Dv : +Dv] <- O

Matmuls: k <= matrix rows per tile.matmul (D for the scores, the keys for O), n <= matrix cols
(keys for the scores, Dv for O). A mask row shared by the query rows is added by the matrix
engine (a column of ones times the mask row, accumulated onto the scores: k = 1), and the row
max and the subtraction read the scores from ACC: no vector pass copies or masks them (the
softmax is vector-bound; MiniLM's attention kernel 58,448 -> 54,429 cycles). A mask of its own
per query row is added by the vector engine. The plan takes whole key rows when they fit, then
the most query rows; `reason` records the choice.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from aitc.dialects import graph
from aitc.passes.graph_to_tile.builder import Index, KernelBuilder, Win
from aitc.passes.graph_to_tile.costs import F32, Budget, balanced, matmul_cycles, split, vector_cycles
from aitc.passes.graph_to_tile.elementwise import fill
from aitc.passes.graph_to_tile.lowering import CannotFit, LoweringContext, tensor_element, tensor_shape
from aitc.passes.graph_to_tile.matmul_tiling import MAX_UNROLL


@dataclass(frozen=True)
class AttentionDims:
    """(B, S, S', H, D, Dv) of a graph.attention and its mask's broadcast dims."""

    batch: int
    queries: int
    keys: int
    heads: int
    width: int
    value_width: int
    mask: tuple[int, int, int] | None

    @staticmethod
    def of(op: graph.AttentionOp) -> AttentionDims:
        mask = tensor_shape(op.mask)[:3] if op.mask is not None else None
        return AttentionDims(*op.dims(), mask)  # pyright: ignore[reportArgumentType]

    def mask_rows(self, tq: int) -> int:
        """Rows of the mask tile: one (broadcast over the query rows) or tq."""
        return 0 if self.mask is None else (1 if self.mask[2] == 1 else tq)


@dataclass(frozen=True)
class AttentionPlan:
    """tq query rows per tile, key chunks of tkv (= S': whole rows, plain softmax)."""

    tq: int
    tkv: int

    def sram(self, d: AttentionDims) -> int:
        """SRAM bytes: Q, K, V, the scores, O, the row statistics and the mask tile."""
        tq, tkv = self.tq, self.tkv
        columns = (4 if tkv < d.keys else 2) * tq  # m, l (+ m', a for the online softmax)
        columns += tq if d.mask_rows(tq) == 1 else 0  # the ones the mask row is multiplied by
        elements = tq * d.width + tkv * (d.width + d.value_width) + tq * tkv + tq * d.value_width
        return F32 * (elements + columns + d.mask_rows(tq) * tkv)

    def acc(self, d: AttentionDims) -> int:
        return F32 * self.tq * (self.tkv + d.value_width)


def plan_attention(d: AttentionDims, budget: Budget) -> AttentionPlan | None:
    """Whole key rows if a tile of them fits (the most query rows that do), else the largest
    chunk of keys (a multiple of the matrix cols) with the most query rows."""
    chunks = [d.keys] + [c for c in range(d.keys - d.keys % budget.cols, 0, -budget.cols) if c < d.keys]
    for tkv in chunks:
        for tq in sorted({balanced(d.queries, limit) for limit in range(1, d.queries + 1)}, reverse=True):
            plan = AttentionPlan(tq, tkv)
            if plan.sram(d) <= budget.sram and plan.acc(d) <= budget.acc:
                return plan
    return None


def attention_unsupported(op: Operation) -> str | None:
    assert isinstance(op, graph.AttentionOp)
    if str(tensor_element(op.q)) != "f32":
        return f"attention is lowered for f32 only, got {tensor_element(op.q)}"
    if 0 in tensor_shape(op.q) or 0 in tensor_shape(op.k) or 0 in tensor_shape(op.v):
        return "zero-size tensors have no buffers"
    return None


class _Emitter:
    """Emits the loop nest of one planned attention (module docstring)."""

    def __init__(
        self,
        kb: KernelBuilder,
        d: AttentionDims,
        plan: AttentionPlan,
        views: dict[str, SSAValue],
        scale: float,
    ):
        self.kb, self.d, self.plan, self.views, self.scale = kb, d, plan, views, scale
        f32 = views["q"].type.get_element_type()  # pyright: ignore[reportAttributeAccessIssue]
        tq, tkv = plan.tq, plan.tkv
        alloc = lambda shape, space="sram": kb.alloc(shape, f32, space)  # noqa: E731
        self.q, self.k, self.v = alloc([tq, d.width]), alloc([tkv, d.width]), alloc([tkv, d.value_width])
        self.s, self.o = alloc([tq, tkv]), alloc([tq, d.value_width])
        self.s_acc, self.o_acc = alloc([tq, tkv], "acc"), alloc([tq, d.value_width], "acc")
        self.m, self.total = alloc([tq, 1]), alloc([tq, 1])  # row max, row sum
        self.online = tkv < d.keys
        if self.online:
            self.m_next, self.alpha = alloc([tq, 1]), alloc([tq, 1])
        self.mask = alloc([d.mask_rows(tq), tkv]) if d.mask is not None else None
        self.ones = alloc([tq, 1]) if d.mask_rows(tq) == 1 else None

    def run(self) -> None:
        if self.ones is not None:
            fill(self.kb, Win.at(self.ones), 1.0, [self.plan.tq, 1], ahead=True)
        # a mask row shared by every batch, head and query tile is loaded once
        self.shared_mask = self.d.mask == (1, 1, 1) and not self.online
        if self.shared_mask:
            self._load_mask(0, 0, 0, 0, self.d.keys)
        self.kb.nest([self.d.batch, self.d.heads], lambda at: self._head(at[0], at[1]))
        cost = self.kb.cost
        if not self.online and cost.vector >= max([cost.matrix, *cost.queues.values()]):
            depth = max(1, self.kb.budget.depth)
            cost.add_wait(self._turn_stall(), self.d.batch * -(-self.d.heads // depth) - 1)

    def _turn_stall(self) -> int:
        """What the vector engine, when it is the busiest, waits where the head loop's next
        (unrolled) iteration starts: the matrix engine runs the iterations in order, so the next
        iteration's first scores come after this one's last product with V, which waits for the
        last softmax; only the last tile's normalisation (acc_read, scaling) runs meanwhile.
        multi-buffer unrolls the head loop by the buffer depth, and schedule-engines interleaves
        the heads of one iteration, so this happens once an iteration (MiniLM: about 760 cycles
        every 2 heads of its 12, which the estimate missed: 50,080 against 53,846)."""
        kb, d, tq = self.kb, self.d, self.plan.tq
        target, rows, cols = kb.target, kb.budget.rows, kb.budget.cols
        contract = lambda extent: sum(n * matmul_cycles(target, tq, k) for k, n in split(extent, rows))  # noqa: E731
        mask = matmul_cycles(target, tq, 1) if self.ones is not None else 0
        scores = -(-d.keys // cols) * (contract(d.width) + mask)
        weighted = -(-d.value_width // cols) * contract(d.keys)
        tail = sum(vector_cycles(target, op, tq, d.value_width) for op in ("acc_read", "mul"))
        return max(0, weighted + scores - tail)

    def _load_mask(self, b: Index, h: Index, q0: Index, c0: Index, cs: int) -> None:
        """The mask tile of batch b, head h, query rows from q0, keys c0 .. c0 + cs."""
        assert self.mask is not None
        assert self.d.mask is not None
        kb, (bm, hm, sm) = self.kb, self.d.mask
        row = kb.linear([(b, hm * sm)] * (bm > 1) + [(h, sm)] * (hm > 1) + [(q0, 1)] * (sm > 1))
        kb.copy(Win(self.views["mask"], (row, c0)), Win.at(self.mask), [self.qs if sm > 1 else 1, cs])

    def _head(self, b: Index, h: Index) -> None:
        kb, d = self.kb, self.d
        self.b, self.h = b, h
        if not self.online:
            self._load_kv(0, d.keys)
        kb.tiles(d.queries, self.plan.tq, self._query_tile)

    def _load_kv(self, c0: Index, cs: int) -> None:
        kb, d = self.kb, self.d
        row = kb.add(kb.mul(self.b, d.keys), c0)
        kb.copy(Win(self.views["k"], (row, kb.mul(self.h, d.width))), Win.at(self.k), [cs, d.width])
        kb.copy(
            Win(self.views["v"], (row, kb.mul(self.h, d.value_width))), Win.at(self.v), [cs, d.value_width]
        )

    def _query_tile(self, q0: Index, qs: int) -> None:
        kb, d = self.kb, self.d
        self.q0, self.qs = q0, qs
        row = kb.add(kb.mul(self.b, d.queries), q0)
        kb.copy(Win(self.views["q"], (row, kb.mul(self.h, d.width))), Win.at(self.q), [qs, d.width])
        if self.scale != 1.0:  # (graph-fuse-attention folds it into a constant Q projection)
            kb.binary_imm("mul", Win.at(self.q), self.scale, Win.at(self.q), [qs, d.width])
        if not self.online:
            self._chunk(0, d.keys, first=True)
        else:
            self._chunk(0, self.plan.tkv, first=True)
            kb.tiles(
                d.keys - self.plan.tkv,
                self.plan.tkv,
                lambda c0, cs: self._chunk(c0, cs, False),
                self.plan.tkv,
            )
        kb.unary("recip", Win.at(self.total), Win.at(self.total), [qs, 1])
        kb.binary("mul", Win.at(self.o), Win.at(self.total), Win.at(self.o), [qs, d.value_width], "col")
        out_col = kb.mul(self.h, d.value_width)
        kb.copy(Win.at(self.o), Win(self.views["out"], (row, out_col)), [qs, d.value_width])

    def _scores(self, c0: Index, cs: int) -> Win:
        """The scores of keys c0 .. c0 + cs: Q @ K_c^T [+ mask] per group of matrix cols of keys
        (the contraction over D in steps of matrix rows; a shared mask row as one more
        product, the ones column times it). Where they are: S_acc, or S when a mask of
        its own per query row was added by the vector engine."""
        kb, d, qs = self.kb, self.d, self.qs
        rows, cols = kb.budget.rows, kb.budget.cols
        if self.mask is not None and not self.shared_mask:
            self._load_mask(self.b, self.h, self.q0, c0, cs)

        def group(j0: Index, js: int) -> None:
            def product(k0: Index, ks: int) -> None:
                lhs, rhs = Win(self.q, (0, k0)), Win(self.k, (j0, k0))
                kb.matmul(lhs, rhs, Win(self.s_acc, (0, j0)), [qs, ks, js], k0 != 0, transpose_rhs=True)

            _steps(kb, d.width, rows, product)
            if self.ones is not None and self.mask is not None:
                kb.matmul(
                    Win.at(self.ones), Win(self.mask, (0, j0)), Win(self.s_acc, (0, j0)), [qs, 1, js], True
                )

        _steps(kb, cs, cols, group)
        if self.mask is None or self.ones is not None:
            return Win.at(self.s_acc)
        kb.binary("add", Win.at(self.s_acc), Win.at(self.mask), Win.at(self.s), [qs, cs])
        return Win.at(self.s)

    def _chunk(self, c0: Index, cs: int, first: bool) -> None:
        kb, d, qs = self.kb, self.d, self.qs
        if self.online:
            self._load_kv(c0, cs)
        scores = self._scores(c0, cs)
        s, sizes, column = Win.at(self.s), [qs, cs], [qs, 1]
        if first:
            kb.reduce("max", scores, Win.at(self.m), sizes)
        else:  # m' = max(m, rowmax(S)); a = exp(m - m'); m = m'
            m, m_next, alpha = Win.at(self.m), Win.at(self.m_next), Win.at(self.alpha)
            kb.reduce("max", scores, m_next, sizes)
            kb.binary("max", m, m_next, m_next, column)
            kb.binary("sub", m, m_next, alpha, column)
            kb.unary("exp", alpha, alpha, column)
            kb.unary("copy", m_next, m, column)
        kb.binary("sub", scores, Win.at(self.m), s, sizes, "col")
        kb.unary("exp", s, s, sizes)
        o, o_sizes = Win.at(self.o), [qs, d.value_width]
        if first:
            kb.reduce("sum", s, Win.at(self.total), sizes)
        else:
            total, part = Win.at(self.total), Win.at(self.m_next)
            kb.reduce("sum", s, part, sizes)
            kb.binary("mul", total, Win.at(self.alpha), total, column)
            kb.binary("add", total, part, total, column)
            kb.binary("mul", o, Win.at(self.alpha), o, o_sizes, "col")
        self._weighted(cs)
        if first:
            kb.acc_read(Win.at(self.o_acc), o, o_sizes)
        else:
            kb.binary("add", Win.at(self.o_acc), o, o, o_sizes)

    def _weighted(self, cs: int) -> None:
        """O_acc = S[:, 0:cs] @ V_c: per group of matrix cols of Dv, the contraction over the
        keys in steps of matrix rows."""
        kb, qs = self.kb, self.qs
        rows, cols = kb.budget.rows, kb.budget.cols

        def group(j0: Index, js: int) -> None:
            def product(k0: Index, ks: int) -> None:
                lhs, rhs = Win(self.s, (0, k0)), Win(self.v, (k0, j0))
                kb.matmul(lhs, rhs, Win(self.o_acc, (0, j0)), [qs, ks, js], k0 != 0)

            _steps(kb, cs, rows, product)

        _steps(kb, self.d.value_width, cols, group)


def _steps(kb: KernelBuilder, extent: int, size: int, body) -> None:
    """body(offset, size) over [0, extent) in steps of `size`: one after the other up to
    MAX_UNROLL steps (the first with offset 0, so a contraction knows where it starts), else the
    first step and an scf.for over the rest (`KernelBuilder.tiles`)."""
    count = -(-extent // size)
    if count <= MAX_UNROLL:
        for start in range(0, extent, size):
            body(start, min(size, extent - start))
        return
    body(0, size)
    kb.tiles(extent - size, size, body, size)


def _reason(plan: AttentionPlan, d: AttentionDims) -> str:
    keys = (
        f"whole key rows ({d.keys}) per head: plain softmax, K and V loaded once per head"
        if plan.tkv >= d.keys
        else f"online softmax over chunks of {plan.tkv} keys (a head's K/V or a score row does not fit)"
    )
    return (
        f"fused attention, {d.heads} head(s) of {d.width}: {plan.tq} query row(s) per tile, {keys}; "
        "QK^T, mask, softmax and the product with V stay in SRAM/ACC; the most rows that fit half of SRAM "
        "and ACC"
    )


def lower_attention(ctx: LoweringContext, ops: list[Operation]) -> None:
    (op,) = ops
    assert isinstance(op, graph.AttentionOp)
    d = AttentionDims.of(op)
    plan = plan_attention(d, ctx.budget)
    if plan is None:
        smallest = AttentionPlan(1, min(d.keys, ctx.budget.cols))
        raise CannotFit(
            op, "one query row and one chunk of keys of the attention", smallest.sram(d), ctx.budget
        )
    b, s, keys = d.batch, d.queries, d.keys
    views = {
        "q": ctx.value_view(op.q, [b * s, d.heads * d.width]),
        "k": ctx.value_view(op.k, [b * keys, d.heads * d.width]),
        "v": ctx.value_view(op.v, [b * keys, d.heads * d.value_width]),
        "out": ctx.value_view(op.output, [b * s, d.heads * d.value_width]),
    }
    if op.mask is not None and d.mask is not None:
        views["mask"] = ctx.value_view(op.mask, [d.mask[0] * d.mask[1] * d.mask[2], keys])
    kb = ctx.kernel(ops)
    _Emitter(kb, d, plan, views, op.scale_value()).run()
    ctx.add(kb, [plan.tq, plan.tkv], _reason(plan, d))
