"""Lowering of the matmul family (`graph.matmul`: batched, broadcast batch dims, 1-D operands,
optional bias and fused activation) for convert-graph-to-tile.

Every batch is C[M x N] = A[M x K] @ B[K x N] on 2-D DRAM views; a rhs without batch dims folds
the lhs batch into M. The plan (`graph_to_tile_matmul_costs.plan_matmul`) cuts C into blocks of
tm x bn and K into steps of tk. Loop nest for order "m" (order "n" swaps the block loops and
keeps the K x bn panel of B instead of the tm x K panel of A):

    bias row <- bias                              (once: 1 x N)
    for batch:                                    (one scf.for per batch dim > 1)
      for m0 in M step tm:
        [A panel <- lhs[m0, 0:K]]                 (keep = lhs: reused by every block of the row)
        for n0 in N step bn:                      (a block)
          for each K step k0 (tk):                (the first peeled; "sram" mode peels the last)
            A tile <- lhs[m0, k0], B tile <- rhs[k0, n0]      (unless kept; the last step's
                                                               before the loop)
            for each column group j0 (tn <= matrix cols; one after the other up to MAX_UNROLL
                                      of them, taking turns on 2-3 ACC / output tiles):
              tile.matmul A[:, kk], B[kk, j0] -> acc          (one per matrix rows of the step)
              "acc" mode, one step:  epilogue: acc_read {activation}, or bias add + activation;
                                     out[m0, n0 + j0] <- y
              "sram" mode:           C[:, j0] = acc (first step: acc_read, or + bias) or
                                     C[:, j0] + acc; last step: activation in place,
                                     out[m0, n0 + j0] <- C[:, j0]
          "acc" mode, several steps: the block accumulates in ACC (tm x bn); then per group the
                                     epilogue and the store

Why it is shaped so (insert-semaphores orders a loop as a whole, and drains its semaphores at
its exit): column groups emitted one by one are ordered op by op, where a group loop would make
the next step wait for its last vector op; the peeled first and last steps load into tiles of
their own (`graph_to_tile_costs.peeled_tiles`), so the step loop does not wait at its entry
for the first step's matmuls and the last step's tiles are already loaded when the loop
drains; a block in SRAM starts with its first step's acc_read (no zero fill) and stores each
column group as soon as its last step is done.

Every buffer is written before it is read in the loop iteration or straight-line segment that
uses it (a remainder uses a window of the full-size tile), so `multi-buffer` rotates the A/B
tiles of the K steps, the accumulator and output tiles of group loops, and the panels and
blocks of the block loops when SRAM holds the copies, and the DMA of the next tiles overlaps
the matmuls of the current ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import DenseArrayBase, i32, i64
from xdsl.ir import Operation, SSAValue

from aitc.dialects import graph
from aitc.passes.graph_to_tile.builder import Index, KernelBuilder, Win, buffer_element
from aitc.passes.graph_to_tile.costs import F32, Budget, add_kernel_cycles, dma_instruction_cycles
from aitc.passes.graph_to_tile.elementwise import (
    ACTIVATION_TEMPS,
    Operand,
    activation_ops,
    apply_activation,
)
from aitc.passes.graph_to_tile.epilogue import EpilogueChain, epilogue_chain, row_types, tile_types
from aitc.passes.graph_to_tile.lowering import (
    CannotFit,
    LoweringContext,
    residual_operand,
    tensor_element,
    tensor_shape,
)
from aitc.passes.graph_to_tile.matmul_costs import (
    LoopPace,
    block_waits,
    charge_block_waits,
    charge_loop_paces,
    loop_pace,
    matmul_minimum,
    matmul_plan_of,
    panel_parts,
    plan_matmul,
    ranked_matmul,
    spread_step_loads,
)
from aitc.passes.graph_to_tile.matmul_tiling import (
    MAX_UNROLL,
    MatmulPlan,
    MatmulProblem,
    engines_overlap,
    group_slots,
    matmul_buffers,
    matmul_steps,
    slot_role,
    step_slot,
    step_tile,
    steps_alternate,
)
from aitc.passes.graph_to_tile.tuning import choose, noted
from aitc.passes.graph_to_tile.vector import SLOT_TYPES
from aitc.types import broadcast_shapes, element_bytes


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


def matmul_unsupported(op: Operation) -> str | None:
    assert isinstance(op, graph.MatMulOp)
    if str(tensor_element(op.lhs)) not in ("f32", "i8"):
        return f"the matrix engine multiplies f32 or i8 (got {tensor_element(op.lhs)})"
    return None


@dataclass
class _Views:
    """The DRAM operands as 2-D views (`residual`: added to the result, `out`'s shape; `rows`:
    the 1 x n rows a fused epilogue chain reads)."""

    lhs: SSAValue
    rhs: SSAValue
    out: SSAValue
    bias: SSAValue | None
    residual: SSAValue | None = None
    rows: tuple[SSAValue, ...] = ()
    tiles: tuple[SSAValue, ...] = ()


class _MatmulEmitter:
    """Emits the loop nest of one planned matmul (see the module docstring); the order of the
    ops is the one `graph_to_tile_costs.charge_matmul` charges."""

    def __init__(
        self,
        kb: KernelBuilder,
        g: MatmulGeometry,
        p: MatmulProblem,
        plan: MatmulPlan,
        views: _Views,
        chain: EpilogueChain | None = None,
    ):
        self.kb, self.g, self.p, self.plan, self.views, self.chain = kb, g, p, plan, views, chain
        self.activation: str | None = None
        shapes = matmul_buffers(p, plan.tm, plan.tk, plan.tn, plan.bn, plan.mode, plan.keep, plan.peeled)
        operand = buffer_element(views.lhs)
        product = i32 if str(operand) == "i8" else operand
        self.bufs = {
            role: kb.alloc(
                b.shape, SLOT_TYPES[b.dtype] if b.dtype else operand if b.operand else product, b.space
            )
            for role, b in shapes.items()
        }
        self.block_acc = plan.mode == "acc" and plan.tk < g.k
        self.peeled = plan.peeled
        self.panels = 0  # kept panels emitted so far
        self.paces: list[LoopPace] = []  # the step loops of the block shapes emitted so far
        self.alternate = steps_alternate(g.k, plan.tk, plan.bn, plan.tn, plan.mode)
        kb.cost.overlap = engines_overlap(g.k, plan.tk, plan.bn, plan.tn, plan.mode)

    def run(self, activation: str | None) -> None:
        self.activation = activation
        g, plan = self.g, self.plan
        panels = -(-g.m // plan.tm) if plan.order == "m" else -(-g.n // plan.bn)
        # the rows after the kernel's only panel when it loads outside any loop: on its queue
        # each waits for the DRAM channel the panel's other part books first (first come,
        # first served), and the panel's part behind it would wait for that too
        self.rows_pending = plan.keep in ("lhs", "rhs") and panels == 1 and math.prod(g.batch) == 1
        if not self.rows_pending:
            self.load_rows()
        self.kb.nest(self.g.batch, self.batch)
        charge_loop_paces(self.kb.cost, self.paces)

    def load_rows(self) -> None:
        """The bias row and the epilogue chain's rows, loaded once."""
        self.rows_pending = False
        if self.views.bias is not None:
            self.kb.copy(Win(self.views.bias, (0, 0)), Win.at(self.bufs["bias"]), [1, self.g.n])
        for i, row in enumerate(self.views.rows):
            self.kb.copy(Win(row, (0, 0)), Win.at(self.bufs[f"row{i}"]), [1, self.g.n])

    def batch(self, indices: list[Index]) -> None:
        g, kb = self.g, self.kb
        operands = ((g.lhs_batch, g.m), (g.rhs_batch, g.k), (g.batch, g.m))
        self.lr, self.rr, self.orow = (
            kb.linear(g.row_terms(indices, batch, count)) for batch, count in operands
        )
        if self.plan.order == "n":
            kb.tiles(g.n, self.plan.bn, self.n_panel)
        else:
            kb.tiles(g.m, self.plan.tm, self.m_panel)

    def m_panel(self, m0: Index, msz: int) -> None:
        if self.plan.keep == "lhs":
            self.panel(
                Win(self.views.lhs, (self.kb.add(self.lr, m0), 0)), Win.at(self.bufs["a"]), [msz, self.g.k]
            )
        self.kb.tiles(self.g.n, self.plan.bn, lambda n0, nsz: self.block(m0, msz, n0, nsz))

    def n_panel(self, n0: Index, nsz: int) -> None:
        if self.plan.keep == "rhs":
            self.panel(Win(self.views.rhs, (self.rr, n0)), Win.at(self.bufs["b"]), [self.g.k, nsz])
        self.kb.tiles(self.g.m, self.plan.tm, lambda m0, msz: self.block(m0, msz, n0, nsz))

    def panel(self, src: Win, dst: Win, sizes: list[int]) -> None:
        """A kept panel's load (and the stall `charge_panel` models): the kernel's only panel
        in one copy per DMA queue (`panel_parts`), so its rows load side by side."""
        kb = self.kb
        rows, cols = sizes
        g, plan = self.g, self.plan
        panels = -(-g.m // plan.tm) if plan.order == "m" else -(-g.n // plan.bn)
        only = kb.times == 1 and panels == 1
        parts = panel_parts(rows, self.p.operand_bytes * cols, kb.target, only)
        for r0, rs in parts:
            at = Win(src.buffer, (kb.add(src.idx[0], r0), src.idx[1]))
            kb.copy(at, Win(dst.buffer, (r0, 0)), [rs, cols], apart=self.panels if len(parts) > 1 else -1)
        once = dma_instruction_cycles(kb.target, self.p.operand_bytes * rows * cols)
        kb.cost.add_wait(once, kb.times - (not self.panels))
        self.panels += 1
        if self.rows_pending:
            self.load_rows()

    # -- one C block
    def block(self, m0: Index, msz: int, n0: Index, nsz: int) -> None:
        kb, plan, k = self.kb, self.plan, self.g.k
        at = (m0, msz, n0, nsz)
        steps = matmul_steps(k, plan.tk, plan.mode)
        if steps[0][0] == "only":
            self.step("only", at, 0, k)
            return
        first, last = steps[0][1], steps[-1][1]
        self.step("first", at, 0, first)
        if plan.mode == "sram":
            hoisted = "last" in self.peeled
            if hoisted:  # the last step's tiles are its own: loaded before the loop
                self.load("last", at, k - last, last)
            kb.tiles(k - first - last, plan.tk, lambda k0, ks: self.step("next", at, k0, ks), first)
            self.step("last", at, k - last, last, load=not hoisted)
        else:
            kb.tiles(k - first, plan.tk, lambda k0, ks: self.step("next", at, k0, ks), first)
            acc = self.bufs["acc"]
            self.groups(nsz, lambda j0, group: self.epilogue(at, Win(acc, (0, j0)), j0, group))
        args = (plan.tk, plan.tn, plan.mode, plan.keep, plan.rotates, plan.peeled)
        waits = block_waits(self.p, kb.budget, args, (msz, nsz))
        charge_block_waits(kb.cost, waits, kb.times, not self.paces)
        self.paces.append(loop_pace(self.p, kb.budget, (msz, nsz), args[:4], kb.times))

    def groups(self, nsz: int, body) -> None:
        """body(j0, (gsz, slot)) for the column groups of a block: one after the other, taking
        turns on the slots' tiles, or (more than MAX_UNROLL groups) as an scf.for."""
        tn, slots = self.plan.tn, group_slots(self.plan.bn, self.plan.tn)
        if -(-nsz // tn) > MAX_UNROLL:
            self.kb.tiles(nsz, tn, lambda j0, gsz: body(j0, (gsz, 0)))
            return
        for i, j0 in enumerate(range(0, nsz, tn)):
            body(j0, (min(tn, nsz - j0), i % slots))

    def load(self, kind: str, at: tuple, k0: Index, ks: int) -> None:
        """The A and B tiles of a K step (unless kept as panels)."""
        kb, plan, v = self.kb, self.plan, self.views
        m0, msz, n0, nsz = at
        ahead = kind in self.peeled
        spread = spread_step_loads(
            self.p, kb.budget, (msz, ks, nsz), (plan.tk, plan.tn, plan.mode, plan.keep), kind
        )
        if plan.keep != "lhs":
            a = self.tile("a", kind)
            kb.copy(Win(v.lhs, (kb.add(self.lr, m0), k0)), Win.at(a), [msz, ks], ahead, spread=spread)
        if plan.keep != "rhs":
            b = self.tile("b", kind)
            kb.copy(Win(v.rhs, (kb.add(self.rr, k0), n0)), Win.at(b), [ks, nsz], ahead, spread=spread)

    def tile(self, role: str, kind: str) -> SSAValue:
        """The A ("a") or B ("b") tile a step of `kind` uses (a kept panel for all steps)."""
        kept = {"a": "lhs", "b": "rhs"}[role] == self.plan.keep
        return self.bufs[role if kept else step_tile(role, kind, self.peeled)]

    def step(self, kind: str, at: tuple, k0: Index, ks: int, load: bool = True) -> None:
        if load:
            self.load(kind, at, k0, ks)
        if kind in ("first", "only"):
            # the block's residual or chain inputs, after the first step's tiles (needed first)
            m0, msz, n0, nsz = at
            row = self.kb.add(self.orow, m0)
            loads = [(self.views.residual, "r")] if self.views.residual is not None else []
            loads += [(view, f"full{i}") for i, view in enumerate(self.views.tiles)]
            for view, role in loads:
                self.kb.copy(Win(view, (row, n0)), Win.at(self.bufs[role]), [msz, nsz])
        a0 = k0 if self.plan.keep == "lhs" else 0
        b0 = k0 if self.plan.keep == "rhs" else 0
        self.groups(at[3], lambda j0, group: self.group(kind, at, (a0, b0, ks), j0, group))

    def group(self, kind: str, at: tuple, ks: tuple, j0: Index, group: tuple[int, int]) -> None:
        """The matmuls of one column group of one step and what follows them (module doc)."""
        kb, bufs, rows = self.kb, self.bufs, self.kb.budget.rows
        msz, (gsz, slot) = at[1], group
        a0, b0, size = ks
        if self.alternate:
            slot = step_slot(kind, self.g.k, self.plan.tk, self.plan.mode)
        acc = Win(bufs["acc"], (0, j0)) if self.block_acc else Win.at(bufs[slot_role("acc", slot)])
        fresh = kind in ("first", "only") or self.plan.mode == "sram"

        a, b = self.tile("a", kind), self.tile("b", kind)

        def product(kk: Index, kks: int, accumulate: bool) -> None:
            lhs, rhs = Win(a, (0, kb.add(a0, kk))), Win(b, (kb.add(b0, kk), j0))
            kb.matmul(lhs, rhs, acc, [msz, kks, gsz], accumulate)

        product(0, min(rows, size), not fresh)
        kb.tiles(size - rows, rows, lambda kk, kks: product(kk, kks, True), rows)
        if kind == "only":
            self.epilogue(at, acc, j0, group)
        elif self.plan.mode == "sram":
            self.join(kind, at, acc, j0, gsz)

    def join(self, kind: str, at: tuple, acc: Win, j0: Index, gsz: int) -> None:
        """ "sram" mode: the group's product joins the block in SRAM: the first step writes it
        (+ bias), the others add it; the last one applies the activation and stores the group."""
        kb, bufs = self.kb, self.bufs
        m0, msz, n0, _ = at
        c, sizes = Win(bufs["c"], (0, j0)), [msz, gsz]
        if kind == "first" and "bias" in bufs:
            kb.binary("add", acc, Win(bufs["bias"], (0, kb.add(n0, j0))), c, sizes, "row")
        elif kind == "first":
            kb.acc_read(acc, c, sizes)
        else:
            kb.binary("add", acc, c, c, sizes)
        if kind == "last" and self.chain is not None:
            self.run_chain(c, (m0, n0, j0), sizes)
        elif kind == "last":
            apply_activation(kb, self.activation, c, self._temp(), sizes)
            self.store(c, (m0, n0, j0), sizes)

    def epilogue(self, at: tuple, acc: Win, j0: Index, group: tuple[int, int]) -> None:
        """The whole product is in ACC: activation (or bias + activation) into y, then store."""
        kb, bufs = self.kb, self.bufs
        m0, msz, n0, _ = at
        gsz, slot = group
        sizes = [msz, gsz]
        if self.chain is not None:
            self.run_chain(acc, (m0, n0, j0), sizes)
            return
        y = Win.at(bufs[slot_role("y", slot)])
        if "bias" not in bufs:
            kb.acc_read(acc, y, sizes, self.activation)
        else:
            kb.binary("add", acc, Win(bufs["bias"], (0, kb.add(n0, j0))), y, sizes, "row")
            apply_activation(kb, self.activation, y, self._temp(), sizes)
        self.store(y, (m0, n0, j0), sizes)

    def run_chain(self, product: Win, at: tuple[Index, Index, Index], sizes: list[int]) -> None:
        """The fused epilogue chain on one finished output tile (`product`: in ACC or the block
        in SRAM), in its working tiles; stores the chain's result."""
        chain, kb = self.chain, self.kb
        assert chain is not None
        column = kb.add(at[1], at[2])
        # a tensor input: the tile's window of the block's input (loaded by `step`)
        inputs = {
            v: Operand("full", Win(self.bufs[f"full{i}"], (0, at[2]))) for i, v in enumerate(chain.tiles)
        }
        inputs |= {
            v: Operand("row", Win(self.bufs[f"row{i}"], (0, column))) for i, v in enumerate(chain.rows)
        }
        slots = [Win.at(self.bufs[f"chain{i}"]) for i in range(len(chain.slot_types))]
        self.store(chain.emit(kb, product, inputs, slots, sizes), at, sizes)

    def store(self, tile_: Win, at: tuple[Index, Index, Index], sizes: list[int]) -> None:
        """Output tile `tile_` of column group j0 of block (m0, n0) (+ its part of the block's
        residual) to DRAM."""
        kb, (m0, n0, j0) = self.kb, at
        if self.views.residual is not None:
            kb.binary("add", tile_, Win(self.bufs["r"], (0, j0)), tile_, sizes)
        kb.copy(tile_, Win(self.views.out, (kb.add(self.orow, m0), kb.add(n0, j0))), sizes)

    def _temp(self) -> Win | None:
        return Win.at(self.bufs["temp0"]) if "temp0" in self.bufs else None


def _problem(
    op: graph.MatMulOp,
    g: MatmulGeometry,
    residual: bool,
    budget: Budget,
    chain: EpilogueChain | None = None,
) -> MatmulProblem:
    activation = op.activation.data if op.activation else None
    temps = ACTIVATION_TEMPS.get(activation or "", 0)
    batches = math.prod(g.batch)
    element = element_bytes(tensor_element(op.lhs))
    if chain is not None:
        fused = (chain.vector_ops(budget), tuple(chain.slot_types), row_types(chain), tile_types(chain))
        stored = element_bytes(tensor_element(chain.result))
        return MatmulProblem(batches, g.m, g.k, g.n, False, 0, ("acc_read",), False, element, *fused, stored)
    if op.bias is None:  # the activation rides on acc_read (or runs in place after a sum in SRAM)
        epilogue = (activation or "acc_read",)
        return MatmulProblem(batches, g.m, g.k, g.n, False, temps, epilogue, residual, element)
    epilogue = ("add", *activation_ops(activation))
    return MatmulProblem(batches, g.m, g.k, g.n, True, temps, epilogue, residual, element)


def _views(
    ctx: LoweringContext,
    op: graph.MatMulOp,
    g: MatmulGeometry,
    add: graph.AddOp | None,
    chain: EpilogueChain | None = None,
) -> _Views:
    lhs = ctx.value_view(op.lhs, [math.prod(g.lhs_batch) * g.m, g.k])
    rhs = ctx.value_view(op.rhs, [math.prod(g.rhs_batch) * g.k, g.n])
    rows = [math.prod(g.batch) * g.m, g.n]
    bias = ctx.value_view(op.bias, [1, g.n]) if op.bias is not None else None
    if chain is not None:
        loaded = tuple(ctx.value_view(row, [1, g.n]) for row in chain.rows)
        tiles = tuple(ctx.value_view(value, rows) for value in chain.tiles)
        return _Views(lhs, rhs, ctx.value_view(chain.result, rows), bias, rows=loaded, tiles=tiles)
    if add is None:
        return _Views(lhs, rhs, ctx.value_view(op.output, rows), bias)
    residual = add.rhs if add.lhs is op.output else add.lhs
    return _Views(lhs, rhs, ctx.value_view(add.output, rows), bias, ctx.value_view(residual, rows))


def residual_add(matmul: Operation, add: Operation) -> bool:
    """Whether `add` adds a residual to `matmul`'s result that the matmul kernel can fuse
    (`residual_operand`) and the matmul has no activation (it would come before the add)."""
    if (
        not isinstance(matmul, graph.MatMulOp)
        or matmul.activation
        or str(tensor_element(matmul.lhs)) != "f32"
    ):
        return False
    return residual_operand(matmul.output, add) is not None


def fusion_estimates(
    matmul: graph.MatMulOp, budget: Budget, add_apart: int | None = None
) -> tuple[int, int] | None:
    """(cycles of the matmul with its residual add fused, cycles of the matmul alone plus the
    add apart), or None when a plan does not fit. The add apart is its own kernel, which reads
    two tensors of the result's size on its load queue, unless `add_apart` gives its cost as
    the prologue of the row op after it (`residual._add_apart`: MiniLM's output layer norm
    hides it, 18,964 cycles with it against 18,888; counting its own kernel had fused FFN2 at
    116,244 cycles where apart it runs 110,886)."""
    g = MatmulGeometry.of(matmul)
    fused, alone = (plan_matmul(_problem(matmul, g, residual, budget), budget) for residual in (True, False))
    if fused is None or alone is None:
        return None
    nbytes = F32 * math.prod(g.batch) * g.m * g.n
    apart = add_kernel_cycles(budget.target, nbytes) if add_apart is None else add_apart
    return fused.cycles, alone.cycles + apart


def fusion_pays(matmul: graph.MatMulOp, budget: Budget, add_apart: int | None = None) -> bool:
    """Whether the cost model expects the fused kernel to take no more cycles than the two
    (`fusion_estimates`): a DMA-bound matmul gets slower by the residual's load."""
    estimates = fusion_estimates(matmul, budget, add_apart)
    return estimates is not None and estimates[0] <= estimates[1]


def _reason(plan: MatmulPlan, budget: Budget, residual: str = "") -> str:
    keep = {"lhs": "keeps the lhs row panel in SRAM", "rhs": "keeps the rhs column panel in SRAM"}
    where = "in SRAM (vector adds)" if plan.mode == "sram" else "in ACC"
    model = (
        f"pipelined at depth {plan.depth}: max(engines) + fill + drain"
        if plan.depth >= 2
        else "serial at depth 1: DMA + matrix + vector"
    )
    return (
        f"fewest est. cycles, then DMA bytes, of {plan.candidates} tilings (tn <= matrix cols, tk a "
        f"multiple of matrix rows or K); blocks of {plan.tm} x {plan.bn} summed {where} over K steps "
        f"of {plan.tk}; {keep.get(plan.keep, 'streams K tiles')}; loop order {plan.order}; {model}"
        + (f"; {residual}" if residual else "")
        + _sharing_note(plan, budget)
    )


def _sharing_note(plan: MatmulPlan, budget: Budget) -> str:
    """What the plan's tiles share to fit: ACC tiles over half of ACC (`matmul_fits`: the
    engines take turns on them), the first K step's tiles (`fitting_peels`)."""
    note = ""
    if budget.single_acc(plan.acc_bytes):
        note += (
            f"; ACC tiles of {plan.acc_bytes / 1024:.0f} KiB, over half of ACC, so not double-buffered "
            "(the matrix and vector engines take turns on them)"
        )
    if plan.mode == "sram" and "first" not in plan.peeled and "last" in plan.peeled:
        note += "; the first K step loads into the rotated tiles (SRAM holds no tiles of its own for it)"
    return note


def lower_matmul(ctx: LoweringContext, ops: list[Operation]) -> None:
    """One matmul, or a matmul and the residual add fused into it (`fuse_residuals`), or an
    int8 matmul and the elementwise chain of its epilogue (`fuse_epilogue_chains`)."""
    op, *rest = ops
    assert isinstance(op, graph.MatMulOp)
    chain = epilogue_chain(op, rest) if rest and isinstance(rest[0], graph.DequantizeOp) else None
    add = rest[0] if rest and chain is None else None
    assert add is None or isinstance(add, graph.AddOp)
    g = MatmulGeometry.of(op)
    problem = _problem(op, g, add is not None, ctx.budget, chain)
    plan = plan_matmul(problem, ctx.budget)
    note = ""
    if plan is not None:
        plan, note = choose(
            "matmul",
            [problem],
            ctx.budget,
            ops,
            plan,
            lambda count: ranked_matmul(problem, ctx.budget, count),
            lambda choice: matmul_plan_of(problem, ctx.budget, choice),
        )
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
    emitter = _MatmulEmitter(kb, g, problem, plan, _views(ctx, op, g, add, chain), chain)
    emitter.run(op.activation.data if op.activation else None)
    block = {"block": DenseArrayBase.from_list(i64, [plan.tm, plan.bn])}
    fused = ""
    if chain is not None:
        fused = (
            f"the epilogue runs the {len(chain.ops)}-op elementwise chain on each output tile "
            f"({', '.join(o.name.removeprefix('graph.') for o in chain.ops)}); the i32 product stays on chip"
        )
    if add is not None:
        estimates = fusion_estimates(op, ctx.budget) or (plan.cycles, 0)
        fused = (
            f"the residual add is fused (est. {estimates[0]} cycles against {estimates[1]} for the matmul "
            "and the add apart): each block loads its residual window, each tile adds its part"
        )
    ctx.kernels.append(
        kb.finish([plan.tm, plan.tk, plan.tn], noted(_reason(plan, ctx.budget, fused), note), block)
    )
