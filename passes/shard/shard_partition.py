"""`shard-partition`: an annotated graph function -> the per-core (SPMD) function.

Every core runs the same function on its own part of each split value. For each op, the loop
it splits is read off its operands' shardings (`rules.py`); the op is rebuilt on per-core
types; a reduction loop's partial result goes through `shard.all_reduce` (a matmul's or conv's
bias is added after it, once). Where a value's sharding differs from what a use needs, the
annotation becomes the collective that moves it:

    whole -> split d        shard.all_slice  (local: each core keeps its part)
    split d -> whole        shard.all_gather
    split a -> split b      shard.all_to_all (split_axis = b, concat_axis = a)
    whole -> split d + halo shard.all_slice halo = [lo, hi] (a conv split along its rows)
    split d -> split d + halo   the halo exchange: every core's boundary rows all-gathered,
                            each core widens its part with its neighbours' (`exchange_halo`)
    split a -> split d + halo   all_gather, then the all_slice with a halo

The function keeps its signature: arguments arrive whole on every core, results leave whole
(`shard-propagate` annotates every split return value back to whole), so the partitioned
module runs on the same inputs as the original (`aitc.interp.shard.run_spmd`) and every core
returns the same outputs. This is also where a reshape or gather whose split dim cannot stay
split (a head split that the cores do not divide, a gather along a split table axis) gets
its operand gathered first: the op's rule has no loop for that dim, so it runs on the whole.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from aitc.dialects import graph, shard
from aitc.passes.shard.planner import Split, exchanges_halo
from aitc.passes.shard.rules import Rule, local_attributes, rule_of, shape_of, splittable
from aitc.passes.shard.shard_propagate import graph_function, split_of


def _wanted_split(value: SSAValue) -> Split:
    """The split every use of `value` asks for through shard.shard (None when a use reads it
    directly, or uses disagree)."""
    wants: set[Split] = set()
    for use in value.uses:
        user = use.operation
        sharding = user.sharding.owner if isinstance(user, shard.ShardOp) else None
        if not isinstance(sharding, shard.ShardingOp) or sharding.offsets is not None:
            return None
        wants.add(split_of(sharding))
    return wants.pop() if len(wants) == 1 else None


def _halo_fill(value: SSAValue) -> str:
    """What stands past the ends of `value` read with a halo: the padding of the window ops
    reading it (`rules.Halo.fill`; zeros when they disagree, which shard-propagate avoids by
    giving each use its own annotation)."""
    fills = set()
    for use in value.uses:
        rule = rule_of(use.operation)
        fills.add(rule.halo.fill if rule is not None and rule.halo is not None else "0")
    return fills.pop() if len(fills) == 1 else "0"


def local_type(value: SSAValue, split: Split, parts: int) -> TensorType:
    """The per-core type of `value` split along `split` over `parts` cores."""
    assert isinstance(value.type, TensorType)
    shape = list(value.type.get_shape())
    if split is not None:
        shape[split] //= parts
    return TensorType(value.type.element_type, shape)


class Partitioner:
    """Rewrites one function in place (see the module docstring)."""

    def __init__(self, function: func.FuncOp, grid: shard.GridOp):
        self.block: Block = function.body.block
        self.grid = grid.sym_name.data
        dims = grid.dims
        if len(dims) != 1:
            raise PassFailedException(
                f"shard-partition: needs a 1-D grid; @{self.grid} is {'x'.join(map(str, dims))}"
            )
        self.parts = dims[0]
        self.local: dict[SSAValue, SSAValue] = {}
        self.split: dict[SSAValue, Split] = {}
        self.before: Operation | None = None

    def emit(self, op: Operation, like: Operation) -> Operation:
        op.location = like.location
        assert self.before is not None
        self.block.insert_op_before(op, self.before)
        return op

    def reshard(
        self, value: SSAValue, have: Split, want: Split, like: Operation, global_value: SSAValue
    ) -> SSAValue:
        """`value` (split `have`) as split `want`, through the collective that moves it."""
        if have == want:
            return value
        axes = [0]
        if have is None:
            assert want is not None
            op: Operation = shard.AllSliceOp(
                value, self.grid, axes, local_type(global_value, want, self.parts), slice_axis=want
            )
        elif want is None:
            op = shard.AllGatherOp(
                value, self.grid, axes, local_type(global_value, None, self.parts), gather_axis=have
            )
        else:
            op = shard.AllToAllOp(
                value,
                self.grid,
                axes,
                local_type(global_value, want, self.parts),
                split_axis=want,
                concat_axis=have,
            )
        return self.emit(op, like).results[0]

    def operand(self, op: Operation, index: int, want: Split) -> SSAValue:
        value = op.operands[index]
        return self.reshard(self.local[value], self.split[value], want, op, value)

    def loop_of(self, op: Operation, rule: Rule) -> int | None:
        """The loop the op splits: the one its first split operand's dim is indexed by (the
        other operands are resharded to match), if every tensor of the op divides evenly
        along it; else None (the operands are gathered and the op runs whole)."""
        for index, value in enumerate(op.operands):
            have = self.split[value]
            loop = None if have is None else rule.operands[index][have]
            if loop is not None:
                return loop if splittable(op, rule, loop, self.parts) else None
        return None

    def partition_op(self, op: Operation) -> None:
        rule = rule_of(op)
        loop = self.loop_of(op, rule) if rule is not None else None
        reduction = rule is not None and rule.is_reduction(loop)
        wants = [
            rule.dim_of(rule.operands[i], loop) if rule is not None else None for i in range(len(op.operands))
        ]
        operands = [self.operand(op, i, want) for i, want in enumerate(wants)]
        bias = None
        if reduction and isinstance(op, graph.MatMulOp | graph.ConvOp) and op.bias is not None:
            bias = operands.pop()  # added once, after the all_reduce
        results = []
        for index, value in enumerate(op.results):
            split = None if reduction or rule is None else rule.dim_of(rule.results[index], loop)
            results.append((value, split))
        properties = dict(op.properties)
        attributes = local_attributes(op, rule, loop, self.parts) if rule is not None else dict(op.attributes)
        new = op.__class__.create(
            operands=operands,
            result_types=[local_type(value, split, self.parts) for value, split in results],
            properties=properties,
            attributes=attributes,
        )
        self.emit(new, op)
        for (value, split), local in zip(results, new.results, strict=True):
            local.name_hint = value.name_hint
            if reduction:
                assert rule is not None
                assert loop is not None
                local = self.emit(
                    shard.AllReduceOp(local, self.grid, [0], local.type, reduction=rule.loops[loop]), op
                ).results[0]
                # every user wants one split: take it before the bias, so shard-simplify makes
                # all_slice(all_reduce) one reduce_scatter (tp-sp's sequence-parallel regions)
                split = _wanted_split(value)
                local = self.reshard(local, None, split, op, value)
                if bias is not None:
                    local = self.add_bias(op, local, bias, split)
            self.local[value], self.split[value] = local, split

    def add_bias(self, op: Operation, value: SSAValue, bias: SSAValue, split: Split) -> SSAValue:
        """`value` + `bias` (one per output column of a matmul, per channel of a conv), the bias
        sliced when `value` is split along that dim."""
        rank = len(shape_of(value))
        bias_dim = 1 if isinstance(op, graph.ConvOp) else rank - 1
        if split == bias_dim:
            bias = self.reshard(bias, None, 0, op, bias)
        if isinstance(op, graph.ConvOp):  # per channel: C -> C x 1 x ... to broadcast over N x C x H..
            bias = self.emit(graph.ReshapeOp(bias, [shape_of(bias)[0], *[1] * (rank - 2)]), op).results[0]
        return self.emit(graph.AddOp(value, bias), op).results[0]

    def rows(self, value: SSAValue, axis: int, start: int, count: int, like: Operation) -> SSAValue:
        """`count` elements of `value` along `axis` from `start` (the same on every core)."""
        assert isinstance(value.type, TensorType)
        shape = list(value.type.get_shape())
        shape[axis] = count
        starts = [start if d == axis else 0 for d in range(len(shape))]
        sliced = graph.SliceOp.create(
            operands=[value],
            result_types=[TensorType(value.type.element_type, shape)],
            attributes={"starts": graph.ints_attr(starts), "steps": graph.ints_attr([1] * len(shape))},
        )
        return self.emit(sliced, like).results[0]

    def exchange_halo(
        self, part: SSAValue, axis: int, lo: int, hi: int, like: Operation, fill: str = "0"
    ) -> SSAValue:
        """`part` (this core's part along `axis`) widened by its neighbours' `lo` last and `hi`
        first elements (`fill` past the ends): every core's boundary (its last lo, then its
        first hi elements) is all-gathered, each core keeps the boundaries of itself and its
        two neighbours (an all_slice with a halo of one boundary) and takes the rows it needs.
        Moves p (lo + hi) rows, not the whole value."""
        rows = shape_of(part)[axis]
        width = lo + hi
        pieces = ([self.rows(part, axis, rows - lo, lo, like)] if lo else []) + (
            [self.rows(part, axis, 0, hi, like)] if hi else []
        )
        boundary = pieces[0] if len(pieces) == 1 else self.emit(graph.ConcatOp(pieces, axis), like).results[0]
        assert isinstance(boundary.type, TensorType)
        shape, element = list(boundary.type.get_shape()), boundary.type.element_type

        def rows_of(count: int) -> TensorType:
            return TensorType(element, [count if d == axis else n for d, n in enumerate(shape)])

        gather = shard.AllGatherOp(boundary, self.grid, [0], rows_of(self.parts * width), gather_axis=axis)
        gathered = self.emit(gather, like).results[0]
        neighbours = shard.AllSliceOp(
            gathered, self.grid, [0], rows_of(3 * width), slice_axis=axis, halo=(width, width), fill=fill
        )
        around = self.emit(neighbours, like).results[0]
        widened = ([self.rows(around, axis, 0, lo, like)] if lo else []) + [part]
        widened += [self.rows(around, axis, 2 * width + lo, hi, like)] if hi else []
        return self.emit(graph.ConcatOp(widened, axis), like).results[0]

    def annotation(self, op: shard.ShardOp) -> None:
        """A shard.shard: its operand, moved to the sharding it names."""
        sharding = op.sharding.owner
        if not isinstance(sharding, shard.ShardingOp) or sharding.offsets is not None:
            raise PassFailedException(
                "shard-partition: a shard.shard needs an even shard.sharding (no sharded_dims_offsets)"
            )
        want = split_of(sharding)
        if sharding.halo is not None and want is not None:
            lo, hi = sharding.halo
            fill = _halo_fill(op.result)
            if exchanges_halo(self.split[op.src], want, sharding.halo, shape_of(op.src)[want] // self.parts):
                widened = self.exchange_halo(self.local[op.src], want, lo, hi, op, fill)
            else:  # whole, then every core's widened part
                shape = list(local_type(op.src, want, self.parts).get_shape())
                shape[want] += lo + hi
                assert isinstance(op.src.type, TensorType)
                widened = self.emit(
                    shard.AllSliceOp(
                        self.operand(op, 0, None),
                        self.grid,
                        [0],
                        TensorType(op.src.type.element_type, shape),
                        slice_axis=want,
                        halo=(lo, hi),
                        fill=fill,
                    ),
                    op,
                ).results[0]
            self.local[op.result], self.split[op.result] = widened, want
            return
        self.local[op.result], self.split[op.result] = self.operand(op, 0, want), want

    def step(self, op: Operation) -> None:
        self.before = op
        if isinstance(op, shard.ShardOp):
            self.annotation(op)
        elif isinstance(op, func.ReturnOp):
            self.emit(func.ReturnOp(*[self.operand(op, i, None) for i in range(len(op.operands))]), op)
        elif isinstance(op, graph.ConstantOp):
            self.local[op.output], self.split[op.output] = op.output, None
        elif isinstance(op, shard.CollectiveOp | shard.ProcessLinearIndexOp):
            raise PassFailedException(
                f"shard-partition: {op.name} in the input: the module is already per-core"
            )
        elif not isinstance(op, shard.ShardingOp):
            self.partition_op(op)

    def run(self) -> None:
        for arg in self.block.args:
            self.local[arg], self.split[arg] = arg, None
        old = list(self.block.ops)
        for op in old:
            self.step(op)
        for op in reversed(old):  # users before their operands; constants stay
            if not isinstance(op, graph.ConstantOp):
                op.detach()
                op.erase(safe_erase=False)
        for op in list(self.block.ops):  # constants only the old ops used
            if isinstance(op, graph.ConstantOp) and not op.output.uses:
                op.detach()
                op.erase()


@dataclass(frozen=True)
class ShardPartitionPass(ModulePass):
    """Turns an annotated (global-view) function into the function every core runs.

    Input:
      A module with one 1-D `shard.grid` and one function whose values carry `shard.shard`
      annotations with even shardings (the output of shard-propagate, or written by hand);
      unannotated values are whole.
    Output:
      The same function signature; graph ops on per-core types; shard.all_slice /
      all_gather / all_to_all where a use needs another sharding than its value has;
      shard.all_reduce after every op split along a reduction loop (then its bias, once);
      no shard.shard or shard.sharding ops. `shard-simplify` then fuses collective chains.
    Invariants:
      Run on every core (`run_spmd`), the function returns on every core what the original
      returns (up to float reassociation in the reductions).
    """

    name = "shard-partition"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        grids = [g for g in op.ops if isinstance(g, shard.GridOp)]
        if len(grids) != 1:
            raise PassFailedException(f"shard-partition: expected one shard.grid, found {len(grids)}")
        function = graph_function(op, self.name)
        Partitioner(function, grids[0]).run()
