"""`convert-graph-to-tile`: graph ops on tensors -> tile kernels on DRAM/SRAM/ACC buffers.

The conversion of one function:

    1. check every graph op against the dispatch table; report all that cannot be lowered
    2. signature: tensors -> memref<..., "dram"> inputs, then one output buffer per result
    3. DRAM: inputs are the arguments, constants tile.const, results that are returned are
       computed straight into their output buffer, other intermediates get a dram tile.alloc
       and reshapes are tile.reshape views
    4. group elementwise chains (vector.fuse_elementwise), matmuls/convs with the residual add
       that consumes them (residual.fuse_residuals) and row ops (softmax, layer norm,
       reductions) with the chain that computes their input (rows.fuse_row_prologues), lower
       each unit with its `Lowering` (table.LOWERINGS) into one tile.kernel
    5. outputs that are inputs, constants or views are copied through SRAM
"""

from __future__ import annotations

import re
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.diagnostic import Diagnostic
from xdsl.utils.exceptions import PassFailedException

from aitc.analysis.graph_matching import is_graph_level, node_name
from aitc.dialects import exec as exec_dialect
from aitc.dialects import graph, tile
from aitc.module_target import module_target
from aitc.passes.graph_to_tile.costs import Budget
from aitc.passes.graph_to_tile.epilogue import fuse_epilogue_chains
from aitc.passes.graph_to_tile.lowering import CannotFit, LoweringContext
from aitc.passes.graph_to_tile.movement import copy_value
from aitc.passes.graph_to_tile.residual import fuse_residuals
from aitc.passes.graph_to_tile.rows import fuse_row_prologues
from aitc.passes.graph_to_tile.table import LOWERINGS, has_no_elements, is_fusable, missing_reason
from aitc.passes.graph_to_tile.tuning import TuningSession, tuning_session
from aitc.passes.graph_to_tile.tuning_cache import TuningCache
from aitc.passes.graph_to_tile.vector import fuse_elementwise
from aitc.passes.legality import check_no_ops_left, refuse_sharded
from aitc.target import Target


def check_lowerable(module: ModuleOp, ops: list[Operation], target: Target) -> None:
    """Raises one PassFailedException listing every op that cannot be lowered, with its node."""
    problems = [(op, reason) for op in ops if (reason := missing_reason(op))]
    if not problems:
        return
    diagnostic = Diagnostic()
    for op, reason in problems:
        diagnostic.add_message(op, f"cannot lower to tile: {reason}")
    lines = "\n".join(f"  {op.name} '{node_name(op)}': {reason}" for op, reason in problems)
    header = f"convert-graph-to-tile: {len(problems)} op(s) cannot be lowered for target '{target.name}'"
    message = f"{header}:\n{lines}"
    diagnostic.raise_exception(module, PassFailedException(message))


def _buffer_type(type_: Attribute) -> Attribute:
    assert isinstance(type_, TensorType)
    return tile.buffer_type(type_.get_shape(), type_.get_element_type(), "dram")


def _hint(text: str) -> str | None:
    clean = re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_")
    return clean if clean and (clean[0].isalpha() or clean[0] == "_") else None


def _written_in_place(value: SSAValue, taken: dict[SSAValue, SSAValue]) -> bool:
    """Whether a returned value can be computed straight into its output buffer."""
    owner = value.owner
    return (
        isinstance(owner, Operation)
        and not isinstance(owner, graph.ConstantOp | graph.ReshapeOp)
        and value not in taken
    )


def _signature(f: func.FuncOp, results: list[SSAValue]) -> tuple[Block, list[DictionaryAttr]]:
    """The new entry block (inputs, then outputs) and its argument attributes."""
    inputs = list(f.function_type.inputs.data)
    block = Block(arg_types=[_buffer_type(t) for t in inputs] + [_buffer_type(v.type) for v in results])
    old_args = f.arg_attrs.data if f.arg_attrs else [DictionaryAttr({}) for _ in inputs]
    old_results = f.res_attrs.data if f.res_attrs else [DictionaryAttr({}) for _ in results]
    attrs = list(old_args) + [DictionaryAttr({**a.data, "tile.output": UnitAttr()}) for a in old_results]
    fallback = [a.name_hint for a in f.body.block.args] + [f"result{j}" for j in range(len(results))]
    for arg, attr, hint in zip(block.args, attrs, fallback, strict=True):
        name = attr.data.get("graph.name")
        arg.name_hint = (_hint(name.data) if isinstance(name, StringAttr) else None) or hint
    return block, attrs


def convert_function(module: ModuleOp, f: func.FuncOp, budget: Budget) -> None:
    """Rewrites `f` (graph ops, tensors) into destination-passing tile form."""
    old = f.body.block
    ret = old.last_op
    assert isinstance(ret, func.ReturnOp)
    ops = [op for op in old.ops if op.name.startswith("graph.") and not isinstance(op, graph.ConstantOp)]
    check_lowerable(module, ops, budget.target)
    results = list(ret.arguments)
    block, attrs = _signature(f, results)
    ctx = LoweringContext(budget)
    ctx.buffers.update(zip(old.args, block.args, strict=False))
    copies = []
    for value, out in zip(results, block.args[len(old.args) :], strict=True):
        if _written_in_place(value, ctx.buffers):
            ctx.buffers[value] = out
        else:
            copies.append((value, out))
    _lower_units(module, ctx, ops)
    for value, out in copies:
        if has_no_elements(value):
            continue  # a zero-element output: nothing to copy
        copy_value(ctx, ret, ctx.buffer(value), out, f"copy to output {out.name_hint or ''}".strip())
    block.add_ops([*ctx.decls, *ctx.kernels, func.ReturnOp()])
    f.body.detach_block(old)
    old.drop_all_references()
    f.body.add_block(block)
    f.function_type = FunctionType.from_lists([a.type for a in block.args], [])
    f.arg_attrs = ArrayAttr(attrs)
    f.res_attrs = None


def _lower_units(module: ModuleOp, ctx: LoweringContext, ops: list[Operation]) -> None:
    units = fuse_epilogue_chains(fuse_residuals(fuse_elementwise(ops, is_fusable), ctx.budget))
    for unit in fuse_row_prologues(units, ctx.budget):
        try:
            # a chain is lowered by its last op's lowering, a matmul or conv with its residual add by its own
            fused = isinstance(unit[0], graph.MatMulOp | graph.ConvOp)
            LOWERINGS[type(unit[0] if fused else unit[-1])].lower(ctx, unit)
        except CannotFit as error:
            diagnostic = Diagnostic()
            diagnostic.add_message(error.op, error.message)
            diagnostic.raise_exception(module, PassFailedException(f"convert-graph-to-tile: {error.message}"))


@dataclass(frozen=True)
class ConvertGraphToTilePass(ModulePass):
    """Lowers graph ops to tile kernels whose tiles fit the target's SRAM, ACC and engines.

    Input:
      Graph-level functions (graph ops on static tensors), typically after graph-optimize and
      place-on-host; schedules and host segments (`aitc.dialects.exec`) are left as they are.
    Output:
      Destination-passing functions: `(inputs..., outputs...)` as memref<..., "dram"> arguments
      (outputs marked `tile.output`), no results. Constants become tile.const, intermediates
      dram tile.allocs, reshapes tile.reshape views. One tile.kernel per graph op or fused
      elementwise chain, named and located after its ONNX node, recording `op`, `tiles`,
      `dma_bytes`, `est_cycles`, `sram_bytes` (and `acc_bytes`) and a `reason`; its SRAM/ACC
      tile.allocs, structured scf.for loops over `index` and compute ops inside. The module
      records `aitc.target` (`aitc.module_target`: the module's, else the `target` option),
      `tile.target` (the target's name), `tile.sram_budget` and `tile.acc_budget`.
    Invariants:
      No graph op is left. Every kernel's SRAM allocs fit half the target's SRAM (the other
      half is for multi-buffering), ACC allocs half of ACC; every tile.matmul has k <= matrix
      rows and n <= matrix cols. Estimates that model pipelining (the matmul family's
      `est_cycles`) assume the buffer depth given as `depth` (the pipeline passes multi-buffer's).
      Fused chains never round-trip through DRAM. Results equal the
      graph level's up to f32 rounding. Ops that cannot be lowered are all reported at once;
      a tensor that cannot fit is reported with the sizes needed and a fix.
    """

    name = "convert-graph-to-tile"
    target: str | None = None
    """A preset name or FILE.toml, for a module without `aitc.target` (`aitc.module_target`)."""
    depth: int = 2
    """The buffer depth multi-buffer will use: estimates that model pipelining assume it."""
    tuning: str | None = None
    """FILE.json, a tuning cache (`aitc compile --tune`): its measured tilings replace the cost
    model's for the kernels whose signature it holds (the kernel's `reason` says so)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op, self.target, self.name)
        budget = Budget.of(target, max(1, self.depth))
        refuse_sharded(op, self.name)
        with self._tuning():
            for f in [f for f in op.walk() if exec_dialect.lowered_here(f)]:
                if is_graph_level(f):
                    convert_function(op, f, budget)
        op.attributes["tile.target"] = StringAttr(target.name)
        op.attributes["tile.sram_budget"] = IntegerAttr(budget.sram, i64)
        op.attributes["tile.acc_budget"] = IntegerAttr(budget.acc, i64)
        check_no_ops_left(op, "graph", self.name, skip=exec_dialect.kept_functions(op))

    def _tuning(self) -> AbstractContextManager[object]:
        """The `tuning` file's choices applied while the pass runs; without one, whatever
        session the caller runs (`aitc.tune`), if any."""
        if self.tuning is None:
            return nullcontext()
        return tuning_session(TuningSession(TuningCache.load(Path(self.tuning)).choices()))
