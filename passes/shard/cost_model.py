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

**Collectives** (`collective_cycles`): the algorithms `passes/sync_to_hw/collectives.py`
builds, costed as the simulator runs them (a DMA engine is busy for a transfer's latency too),
with a = `link.latency`, b = `link.bytes_per_cycle`, for a value of n bytes (the whole tensor)
on p cores, chunks of c = ceil(n / p) bytes, and v(x) the vector engine's time to combine x bytes:

    all_reduce      ring    2 (p-1) (a + c/b + 2) + (p-1) (v(c) + 2)   (reduce-scatter, all-gather)
                    direct  (p-1) (a + n/b + 1) + (p-1) v(n) + 2       (everyone sends everything)
    reduce_scatter  ring    (p-1) (a + c/b + v(c) + 4)
                    direct  (p-1) (a + c/b + 1) + (p-1) v(c)
    all_gather      ring    (p-1) (a + c/b + 2)
                    direct  (p-1) (a + c/b + 1)
    all_to_all      direct  (p-1) (a + n/(p^2 b) + 1)
    all_slice       0 (each core takes its own part of a value it holds)

Each collective takes the cheaper algorithm: the ring moves the bandwidth-optimal 2 (p-1)/p n
bytes per core for an all-reduce but pays 2 (p-1) latencies; direct pays p-1 latencies but
moves (p-1) n bytes, so it wins for small values (on edge, 4 cores: below about 1 K floats).
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


def _vector_combine(target: Target, nbytes: int) -> int:
    """Cycles of one vector add of `nbytes` of f32 (one row)."""
    return target.vector.latency + ceil_div(ceil_div(nbytes, 4), target.vector.lanes)


def algorithm_cycles(target: Target, kind: str, algorithm: str, nbytes: int, parts: int) -> int:
    """The estimate of one algorithm of collective `kind` (see the module docstring)."""
    a, b, p = target.link.latency, target.link.bytes_per_cycle, parts
    chunk = ceil_div(nbytes, p)
    formulas = {
        ("all_reduce", "ring"): lambda: (
            2 * (p - 1) * (a + ceil_div(chunk, b) + 2) + (p - 1) * (_vector_combine(target, chunk) + 2)
        ),
        ("all_reduce", "direct"): lambda: (
            (p - 1) * (a + ceil_div(nbytes, b) + 1) + (p - 1) * _vector_combine(target, nbytes) + 2
        ),
        ("reduce_scatter", "ring"): lambda: (
            (p - 1) * (a + ceil_div(chunk, b) + _vector_combine(target, chunk) + 4)
        ),
        ("reduce_scatter", "direct"): lambda: (
            (p - 1) * (a + ceil_div(chunk, b) + 1) + (p - 1) * _vector_combine(target, chunk)
        ),
        ("all_gather", "ring"): lambda: (p - 1) * (a + ceil_div(chunk, b) + 2),
        ("all_gather", "direct"): lambda: (p - 1) * (a + ceil_div(chunk, b) + 1),
        ("all_to_all", "direct"): lambda: (p - 1) * (a + ceil_div(nbytes, p * p * b) + 1),
    }
    return formulas[(kind, algorithm)]()


ALGORITHMS = {"all_reduce": ("ring", "direct"), "reduce_scatter": ("ring", "direct"),
              "all_gather": ("ring", "direct"), "all_to_all": ("direct",)}  # fmt: skip


def collective_cycles(target: Target, kind: str, nbytes: int, parts: int) -> CollectiveEstimate:
    """The cheaper algorithm of collective `kind` on `nbytes` (the whole tensor) over `parts`
    cores, its estimated cycles and the bytes each core sends."""
    if parts <= 1 or kind == "all_slice":
        return CollectiveEstimate(0, "local", 0)
    if kind not in ALGORITHMS:
        raise ValueError(f"no cost for collective {kind}")
    chunk = ceil_div(nbytes, parts)
    sent = {
        ("all_reduce", "ring"): 2 * (parts - 1) * chunk,
        ("all_reduce", "direct"): (parts - 1) * nbytes,
        ("all_to_all", "direct"): (parts - 1) * ceil_div(nbytes, parts * parts),
    }
    options = [(algorithm_cycles(target, kind, name, nbytes, parts), name) for name in ALGORITHMS[kind]]
    cycles, name = min(options)
    return CollectiveEstimate(cycles, name, sent.get((kind, name), (parts - 1) * chunk))


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
