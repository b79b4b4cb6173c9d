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

The planner adds `staging_cycles`: the lowering loads a collective's input from DRAM and
stores its result on every core, through the shared DRAM.

Each collective takes the cheaper algorithm: the ring moves the bandwidth-optimal 2 (p-1)/p n
bytes per core for an all-reduce but pays 2 (p-1) latencies; direct pays p-1 latencies but
moves (p-1) n bytes, so it wins for small values (on edge, 4 cores: below about 1 K floats).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeGuard

from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from aitc.dialects import graph
from aitc.dialects.tile import KernelOp
from aitc.passes.graph_to_tile import convert_function, tuning
from aitc.passes.graph_to_tile.costs import Budget
from aitc.passes.graph_to_tile.matmul_costs import plan_matmul
from aitc.passes.graph_to_tile.matmul_tiling import MatmulProblem
from aitc.passes.shard.rules import shape_of
from aitc.target import Target
from aitc.types import tensor_bytes as type_bytes


def tensor_bytes(value: SSAValue) -> int:
    """Bytes of a tensor value (0 for anything else)."""
    return type_bytes(value.type)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class CollectiveEstimate:
    """A collective's estimated cycles, the algorithm that gives them and the bytes each core
    sends."""

    cycles: int
    algorithm: str
    bytes_per_core: int


STAGING_FACTOR = {"all_reduce": (1, 1), "reduce_scatter": (1, 0), "all_gather": (0, 1), "all_to_all": (0, 1)}
"""Per collective, whether its input and its result are the whole value (1) or one core's part (0)."""


def staging_cycles(target: Target, kind: str, nbytes: int, parts: int) -> int:
    """What the multi-core program spends around a collective besides the link: every core
    loads its input from DRAM and stores its result (each whole or a part,
    `STAGING_FACTOR`), all through the shared DRAM, and two fences drain the engines."""
    if parts <= 1 or kind not in STAGING_FACTOR:
        return 0
    whole_in, whole_out = STAGING_FACTOR[kind]
    part = ceil_div(nbytes, parts)
    moved = parts * ((nbytes if whole_in else part) + (nbytes if whole_out else part))
    return ceil_div(moved, target.dram.bytes_per_cycle) + 2 * target.dma.latency


HALO_KERNELS = {"slice": 1, "exchange": 7}
"""Copy kernels that widen a core's part by a halo: a slice of the whole value's window; or the
exchange's (two boundary slices, their concat, two neighbour slices, the outer cores' zero pad,
the concat of the widened part)."""


def halo_copy_cycles(target: Target, how: str, window_bytes: int, parts: int) -> int:
    """What widening every core's part by a halo costs besides the collective: `how`'s copy
    kernels (`HALO_KERNELS`, two DMA latencies each) moving the window once in and once out,
    every core at once through the shared DRAM."""
    moved = 2 * window_bytes
    streaming = max(
        ceil_div(moved, target.dma.bytes_per_cycle), ceil_div(parts * moved, target.dram.bytes_per_cycle)
    )
    return HALO_KERNELS[how] * 2 * target.dma.latency + streaming


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


def linked_piece_cycles(
    target: Target,
    kind: str,
    algorithm: str,
    nbytes: int,
    parts: int,
    exchange: bool,
    to_root: bool,
) -> int:
    """The estimate of one piece of `nbytes` of a collective as the multi-core link runs it:
    staging (`staging_cycles`: loaded from DRAM, stored back) plus `algorithm`'s exchange
    (`algorithm_cycles`). Without `exchange` (a final all_gather: every core writes its own part
    of the output) only its part goes in and out; `to_root` (an all_reduce only core 0 reads:
    reduce-scatter, then every other core sends its chunk into core 0, whose one ingress port
    takes them in turn) adds that gather."""
    if parts <= 1:
        return 0
    if not exchange:  # each core loads and stores its part, all of them through the one DRAM
        part = ceil_div(nbytes, parts)
        one_core = 2 * (target.dma.latency + ceil_div(part, target.dma.bytes_per_cycle))
        return max(one_core, ceil_div(2 * nbytes, target.dram.bytes_per_cycle))
    cycles = algorithm_cycles(target, kind, algorithm, nbytes, parts)
    cycles += staging_cycles(target, kind, nbytes, parts)
    if to_root:
        chunk = ceil_div(nbytes, parts)
        cycles += target.link.latency + (parts - 1) * ceil_div(chunk, target.link.bytes_per_cycle)
    return cycles


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


_TILED: dict[tuple, tuple[int, int] | None] = {}
"""`tiled_estimate` results by (op, local shapes, target): ops repeat (every layer's)."""


def tiled_estimate(
    op: Operation,
    local: list[tuple[int, ...]],
    target: Target,
    attributes: dict[str, Attribute] | None = None,
) -> tuple[int, int] | None:
    """(cycles, DRAM bytes) that `convert-graph-to-tile` records on the kernels of `op` alone
    on its per-core shapes (`est_cycles`, `dma_bytes`: the tiling the compiler would choose,
    costed by its own model), with `attributes` (default: the op's) on the core's copy; None
    when the op does not lower on its own (then the roofline)."""
    attributes = {
        k: v for k, v in (op.attributes if attributes is None else attributes).items() if k != "shard.plan"
    }
    elements = tuple(str(getattr(v.type, "element_type", v.type)) for v in (*op.operands, *op.results))
    key = (op.name, str(sorted((k, str(v)) for k, v in attributes.items())),
           str(dict(op.properties)), tuple(local), elements, target.fingerprint())  # fmt: skip
    if key not in _TILED:
        if len(_TILED) >= 4096:
            _TILED.clear()
        _TILED[key] = _lower_alone(op, local, target, attributes)
    return _TILED[key]


def _lower_alone(
    op: Operation, local: list[tuple[int, ...]], target: Target, attributes: dict[str, Attribute]
) -> tuple[int, int] | None:
    operand_types = [_local_type(v, shape) for v, shape in zip(op.operands, local, strict=False)]
    result_types = [
        _local_type(v, shape) for v, shape in zip(op.results, local[len(op.operands) :], strict=True)
    ]
    if not _all_tensors(operand_types) or not _all_tensors(result_types):
        return None
    block = Block(arg_types=operand_types)
    attributes = dict(attributes)
    if isinstance(op, graph.ConvOp) and op.groups() > 1:  # a split grouped conv keeps whole groups
        attributes["group"] = IntegerAttr(op.groups() * local[1][0] // shape_of(op.weight)[0], i64)
    clone = op.__class__.create(
        operands=list(block.args),
        result_types=result_types,
        properties=dict(op.properties),
        attributes=attributes,
    )
    block.add_ops([clone, func.ReturnOp(*clone.results)])
    function = func.FuncOp("main", FunctionType.from_lists(operand_types, result_types), Region(block))
    module = ModuleOp([function])
    try:
        with tuning.tuning_session(None):  # an estimate: the model's plans, not a kernel to measure
            convert_function(module, function, Budget.of(target))
    except Exception:  # an estimate: an op that does not lower on its own gets the roofline
        return None
    cycles = dram = 0
    for kernel in module.walk():
        if isinstance(kernel, KernelOp):
            cycles += _int_attr(kernel, "est_cycles")
            dram += _int_attr(kernel, "dma_bytes")
    return cycles, dram


def _all_tensors(types: list[TensorType | None]) -> TypeGuard[list[TensorType]]:
    return all(t is not None for t in types)


def _int_attr(op: Operation, name: str) -> int:
    attr = op.attributes.get(name)
    return attr.value.data if isinstance(attr, IntegerAttr) else 0


def _local_type(value: SSAValue, shape: tuple[int, ...]) -> TensorType | None:
    return TensorType(value.type.element_type, list(shape)) if isinstance(value.type, TensorType) else None


def shared_dram_floor(target: Target, cycles: int, nbytes: int) -> int:
    """`cycles` of work whose cores together move `nbytes` through the shared DRAM, at least the
    DRAM's time for them."""
    return max(cycles, ceil_div(nbytes, target.dram.bytes_per_cycle))


def op_cycles(
    op: Operation,
    local: list[tuple[int, ...]],
    parts: int,
    target: Target,
    attributes: dict[str, Attribute] | None = None,
) -> int:
    """Estimated cycles of `op` on one core given its local shapes (operands..., results...)
    and attributes (default: the op's),
    all `parts` cores running their part at once: a matmul from the matmul tiler's plan
    (`plan_matmul`), at least the shared DRAM carrying each core's operands and result once;
    any other op from the tiling model's estimate of its kernels (`tiled_estimate`: their
    cycles, at least the shared DRAM carrying every core's kernel traffic); a roofline for an
    op that does not lower on its own. A replicated op's traffic counts `parts` times, a split
    op's once."""
    moved = sum(math.prod(shape) * 4 for shape in local)  # f32 bytes one core reads and writes
    dram = ceil_div(moved * parts, target.dram.bytes_per_cycle)
    if isinstance(op, graph.MatMulOp):  # the matmul tiler's plan; DRAM: each operand once per core
        planned = _matmul_cycles(op, local, target)
        if planned is not None:
            return max(planned, dram)
    tiled = tiled_estimate(op, local, target, attributes)
    if tiled is not None:
        cycles, nbytes = tiled
        return shared_dram_floor(target, cycles, nbytes * parts)
    dma = ceil_div(moved, target.dma.bytes_per_cycle)
    macs = _macs(op, local)
    if macs:
        work = ceil_div(macs, target.matrix.rows * target.matrix.cols)
    else:
        work = ceil_div(math.prod(local[-1]) if local else 0, target.vector.lanes)
    return max(work, dma, dram)
