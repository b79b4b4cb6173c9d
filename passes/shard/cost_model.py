"""The sharding cost model: per-core compute, shared DRAM and collectives, in cycles.

Everything is a pure function of the target and static sizes, so a plan is reproducible and
the numbers recorded on the IR can be checked by hand.

**Compute of one op on one core** (`op_cycles`), from its per-core (local) shapes:

- matmul: the estimate of the tiling that `convert-graph-to-tile` would choose
  (`plan_matmul` of `graph_to_tile/matmul_costs.py`, the same model that records
  `est_cycles` on a kernel), floored by the shared DRAM (below);
- every other op: a roofline, max(vector work, DMA, shared DRAM), where vector work is
  elements / lanes (conv and pooling: MACs / (rows * cols) on the matrix engine).

**Shared DRAM**: all `p` cores read and write through one DRAM channel of
`dram.bytes_per_cycle`; an op whose cores together move B bytes takes at least B / bandwidth.
A replicated op's operands are read by every core (p times); a split op's once in total. This
is why sequence parallelism (every core reads every weight) loses to tensor parallelism
(each weight read once) when weights dominate the traffic.

**Collectives** (`collective_cycles`), alpha-beta with a = `link.latency` and
b = `link.bytes_per_cycle` per direction, for a message of n bytes (the whole tensor) on p cores:

    all_reduce      ring: 2 (p-1) (a + n/(p b))       tree (recursive doubling, p a power of
                                                       two): log2(p) (a + n/b); the cheaper wins
    reduce_scatter  ring: (p-1) (a + n/(p b))
    all_gather      ring: (p-1) (a + n/(p b))
    all_to_all      direct: (p-1) (a + n/(p^2 b))
    all_slice       0 (each core takes its own part of a value it holds)

The ring moves the bandwidth-optimal 2 (p-1)/p n bytes per core; the tree pays log2(p)
latencies instead of 2 (p-1), so it wins for small messages: the crossover is where the two
formulas meet (`all_reduce_algorithm`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from aitc.dialects import graph
from aitc.passes.graph_to_tile.costs import Budget
from aitc.passes.graph_to_tile.matmul_costs import plan_matmul
from aitc.passes.graph_to_tile.matmul_tiling import MatmulProblem
from aitc.target import Target


def tensor_bytes(value: SSAValue) -> int:
    """Bytes of a tensor value (4 per element for f32; element width otherwise)."""
    t = value.type
    if not isinstance(t, TensorType):
        return 0
    width = getattr(t.element_type, "bitwidth", 32)
    return math.prod(t.get_shape()) * max(1, width // 8)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class CollectiveEstimate:
    """A collective's estimated cycles, the algorithm that gives them and the bytes each core
    sends."""

    cycles: int
    algorithm: str
    bytes_per_core: int


def all_reduce_algorithm(target: Target, nbytes: int, parts: int) -> CollectiveEstimate:
    """Ring or tree all-reduce, whichever the alpha-beta model says is faster."""
    alpha, beta = target.link.latency, target.link.bytes_per_cycle
    ring = 2 * (parts - 1) * (alpha + ceil_div(nbytes, parts * beta))
    ring_bytes = 2 * (parts - 1) * ceil_div(nbytes, parts)
    if parts & (parts - 1) == 0:
        steps = parts.bit_length() - 1
        tree = steps * (alpha + ceil_div(nbytes, beta))
        if tree < ring:
            return CollectiveEstimate(tree, "tree", steps * nbytes)
    return CollectiveEstimate(ring, "ring", ring_bytes)


def collective_cycles(target: Target, kind: str, nbytes: int, parts: int) -> CollectiveEstimate:
    """The alpha-beta estimate of collective `kind` on `nbytes` (the whole tensor) over `parts` cores."""
    if parts <= 1 or kind == "all_slice":
        return CollectiveEstimate(0, "local", 0)
    alpha, beta = target.link.latency, target.link.bytes_per_cycle
    if kind == "all_reduce":
        return all_reduce_algorithm(target, nbytes, parts)
    if kind in ("all_gather", "reduce_scatter"):
        chunk = ceil_div(nbytes, parts)
        return CollectiveEstimate((parts - 1) * (alpha + ceil_div(chunk, beta)), "ring", (parts - 1) * chunk)
    if kind == "all_to_all":
        chunk = ceil_div(nbytes, parts * parts)
        return CollectiveEstimate(
            (parts - 1) * (alpha + ceil_div(chunk, beta)), "direct", (parts - 1) * chunk
        )
    raise ValueError(f"no cost for collective {kind}")


def _matmul_cycles(op: graph.MatMulOp, local: list[tuple[int, ...]], target: Target) -> int | None:
    """The tiling model's estimate of a local matmul (None: shapes it does not plan)."""
    a, b, out = local[0], local[1], local[-1]
    if len(a) < 2 or len(b) < 2:
        return None
    batches = math.prod(out[:-2])
    problem = MatmulProblem(batches, a[-2], a[-1], b[-1], bias=op.bias is not None)
    plan = plan_matmul(problem, Budget.of(target))
    return None if plan is None else plan.cycles


def _macs(op: Operation, local: list[tuple[int, ...]]) -> int:
    """Multiply-accumulates of a conv (per output element: C_in/group * kernel)."""
    if isinstance(op, graph.ConvOp):
        w = local[1]
        return math.prod(local[-1]) * math.prod(w[1:])
    return 0


def op_cycles(op: Operation, local: list[tuple[int, ...]], parts: int, target: Target) -> int:
    """Estimated cycles of `op` on one core given its local shapes (operands..., results...),
    all `parts` cores running their part at once: the shared DRAM carries every core's
    traffic (a replicated op's operands `parts` times, a split op's once)."""
    moved = sum(math.prod(shape) * 4 for shape in local)  # f32 bytes one core reads and writes
    dram = ceil_div(moved * parts, target.dram.bytes_per_cycle)
    dma = ceil_div(moved, target.dma.bytes_per_cycle)
    if isinstance(op, graph.MatMulOp):
        planned = _matmul_cycles(op, local, target)
        if planned is not None:
            return max(planned, dram)
    macs = _macs(op, local)
    if macs:
        work = ceil_div(macs, target.matrix.rows * target.matrix.cols)
    else:
        work = ceil_div(math.prod(local[-1]) if local else 0, target.vector.lanes)
    return max(work, dma, dram)
