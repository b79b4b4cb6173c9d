"""`convert-sync-to-hw`: sync-level functions -> `hw.program`s (instructions, absolute addresses).

    func.func @main(%x: memref<8x16xf32, "dram"> {graph.name = "x", tile.offset = 0}, ...) {
      %a = tile.alloc {offset = 0} : memref<4x16xf32, "sram">
      scf.for %i = %c0 to %c2 step %c1 {
        %r = arith.muli %i, %c4 : index
        tile.copy %x[%r, %c0] to %a[%c0, %c0] sizes [4, 16] {sync.engine = "dma0"} : ...
        sync.signal 0 on "dma0"
        ...
    ==>
    hw.program @main target "tiny" {
      hw.tensor "x" input dram[0x0] : tensor<8x16xf32>
      hw.core 0 {
        hw.loop 2 {
          hw.dma_in sram[0x0] <- dram[0x0 + 0x100*i0], row_bytes=256
          hw.sem_signal 0, engine=dma0
          ...

Walk of one function body (`CoreLowering`): buffers are placed first (arguments at their
`tile.offset`, tile.alloc / tile.const at their `offset`, tile.reshape at its source's), then
ops are lowered in program order: scf.for -> hw.loop (trip count; the loop at nesting depth D
advances addresses by their `step*iD` terms; 0 trips: gone, 1 trip: inlined), tile.kernel ->
its body inlined, compute ops -> instructions (`sync_to_hw_select.py`), sync ops -> hw control
instructions. arith ops are not lowered: they are evaluated as index arithmetic where windows
use them (`sync_to_hw_address.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    IntegerAttr,
    LocationAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Block, Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from aitc.analysis.graph_matching import location_name
from aitc.diagnostics import AitcError
from aitc.dialects import exec as exec_dialect
from aitc.dialects import hw, sync, tile
from aitc.dialects.hw import program as hw_program
from aitc.module_target import TARGET_ATTR, module_target_spec
from aitc.passes.legality import check_no_ops_left, fail
from aitc.passes.sync_to_hw.address import Addressing, Buffer, NotAffineError
from aitc.passes.sync_to_hw.overlap import kernel_overlaps
from aitc.passes.sync_to_hw.select import SELECTORS
from aitc.target import Target
from aitc.types import shape_and_element

LOWERED_DIALECTS = ("tile", "sync", "func", "scf", "arith")
"""Dialects of the input that no op may remain of."""

OFFSET_HINT = "run plan-memory first"


# --------------------------------------------------------------------------- data layout


def _offset(attr: Attribute | None, op: Operation, what: str) -> int:
    if not isinstance(attr, IntegerAttr):
        fail(op, f"{what} has no byte offset: {OFFSET_HINT}")
    return attr.value.data


def _arg_name(attrs: Mapping[str, Attribute], index: int) -> str:
    """`graph.name` of an argument (non-ASCII names are bytes), else `arg<index>`."""
    name = attrs.get("graph.name")
    if isinstance(name, StringAttr):
        return name.data
    return name.data.decode("utf-8", "replace") if isinstance(name, BytesAttr) else f"arg{index}"


def place_arguments(function: func.FuncOp, at: Addressing) -> list[hw.TensorOp]:
    """One hw.tensor per argument (named by `graph.name`, at `tile.offset`); places them."""
    tensors = []
    attrs = function.arg_attrs.data if function.arg_attrs else ()
    for index, arg in enumerate(function.args):
        arg_attrs = attrs[index].data if index < len(attrs) else {}
        name = _arg_name(arg_attrs, index)
        what = f"argument #{index} ('{name}') of @{function.sym_name.data} (tile.offset)"
        offset = _offset(arg_attrs.get("tile.offset"), function, what)
        if not isinstance(arg.type, MemRefType) or tile.space_of(arg.type) != "dram":
            fail(function, f"argument #{index} ('{name}') must be a dram memref, got {arg.type}")
        at.buffers[arg] = Buffer.of(arg.type, offset)
        kind = "output" if isinstance(arg_attrs.get("tile.output"), UnitAttr) else "input"
        type_ = TensorType(arg.type.get_element_type(), arg.type.get_shape())
        tensors.append(hw.TensorOp(name, kind, offset, type_))
    return tensors


def _as_tensor(
    value: DenseIntOrFPElementsAttr | DenseResourceAttr,
) -> DenseIntOrFPElementsAttr | DenseResourceAttr:
    """The same constant with a tensor type (a memref-typed dense attribute is retyped)."""
    type_ = value.get_type()
    if isinstance(type_, TensorType):
        return value
    if isinstance(value, DenseResourceAttr):
        shape, element = shape_and_element(type_)
        return DenseResourceAttr(value.resource_handle, TensorType(element, shape))
    return DenseIntOrFPElementsAttr(TensorType(value.get_element_type(), value.get_shape()), value.data)


def place_buffers(function: func.FuncOp, at: Addressing) -> list[hw.ConstOp]:
    """Places every tile.alloc / tile.const / tile.reshape; one hw.const per tile.const."""
    consts = []
    for op in function.walk():
        if isinstance(op, tile.AllocOp | tile.ConstOp):
            offset = _offset(op.offset, op, op.name)
            at.buffers[op.buffer] = Buffer.of(op.buffer.type, offset)
        if isinstance(op, tile.ConstOp):
            assert op.value is not None
            consts.append(hw.ConstOp(at.buffers[op.buffer].offset, _as_tensor(op.value)))
        elif isinstance(op, tile.ReshapeOp):
            at.buffers[op.result] = Buffer.of(op.result.type, at.buffers[op.source].offset)
    return consts


# --------------------------------------------------------------------------- instruction stream


def _locate(ops: list[Operation], location: LocationAttr) -> list[Operation]:
    """Gives every op in `ops` (nested ones too) without a location `location`."""
    for op in ops:
        for nested in op.walk():
            if isinstance(nested.location, UnknownLoc):
                nested.location = location
    return ops


def _check_engine(op: tile.WindowOp) -> None:
    """The op is bound (`sync.engine`) to an engine of its class."""
    engine, expected = sync.engine_of(op), tile.engine_class(op)
    if engine is None:
        fail(op, f"{op.name} is not bound to an engine (sync.engine): run convert-tile-to-sync first")
    valid = engine[3:].isdigit() if expected == "dma" else engine == expected
    if not (engine.startswith(expected) and valid):
        fail(op, f"{op.name} runs on a {expected} engine, not on '{engine}'")


class CoreLowering:
    """Lowers one function body to the instruction stream of one core."""

    def __init__(self, at: Addressing):
        self.at = at

    def block(self, block: Block, location: LocationAttr) -> list[Operation]:
        """The instructions of `block`; ops without a location get `location` (their kernel's)."""
        lowered = []
        for op in block.ops:
            here = location if isinstance(op.location, UnknownLoc) else op.location
            lowered += _locate(self.op(op, here), here)
        return lowered

    def op(self, op: Operation, location: LocationAttr) -> list[Operation]:
        if isinstance(op, scf.ForOp):
            return self.loop(op, location)
        if isinstance(op, tile.KernelOp):
            return self.block(op.body.block, location)
        if isinstance(op, tile.WindowOp):
            return self.compute(op)
        if isinstance(op, sync.SignalOp | sync.WaitOp | sync.BarrierOp):
            return [control(op)]
        if op.dialect_name() in ("arith", "tile") or isinstance(op, scf.YieldOp | func.ReturnOp):
            return []  # index arithmetic and buffers: no instruction
        fail(op, f"convert-sync-to-hw cannot lower {op.name}")

    def loop(self, op: scf.ForOp, location: LocationAttr) -> list[Operation]:
        """scf.for -> hw.loop (trip count); 0 trips: nothing, 1 trip: the body once."""
        if op.iter_args:
            fail(op, "scf.for with iter_args has no hw.loop form")
        try:
            lb, ub, step = (self.at.constant(v) for v in (op.lb, op.ub, op.step))
        except NotAffineError as error:
            fail(op, f"scf.for needs constant bounds and step ({error})")
        if step <= 0:
            fail(op, f"scf.for needs a positive step, got {step}")
        trips = max(0, -(-(ub - lb) // step))
        index = op.body.block.args[0]
        if trips <= 1:
            self.at.bind_constant(index, lb)
            return self.block(op.body.block, location) if trips else []
        self.at.bind_loop_index(index, lb, step)
        self.at.depth += 1
        body = self.block(op.body.block, location)
        self.at.depth -= 1
        return [hw.LoopOp(trips, body)] if body else []

    def compute(self, op: tile.WindowOp) -> list[Operation]:
        """Instruction selection for a compute op bound to an engine."""
        selector = SELECTORS.get(type(op))
        if selector is None:
            fail(op, f"convert-sync-to-hw has no instruction for {op.name}")
        _check_engine(op)
        try:
            return selector(op, self.at)
        except NotAffineError as error:
            fail(
                op,
                f"{op.name}: a window index is not an affine function of the enclosing scf.for indices "
                f"({error}; supported: arith.constant, addi, subi, muli by a constant)",
            )


def control(op: sync.SignalOp | sync.WaitOp | sync.BarrierOp) -> hw.InstructionOp:
    """sync.signal / wait / barrier -> hw.sem_signal / sem_wait / barrier (same engine names;
    a signal's `peer` core carries over)."""
    if isinstance(op, sync.BarrierOp):
        assert op.engine is not None
        return hw.BarrierOp(engine=op.engine.data)
    count = op.amount()
    fields = {"sem": op.semaphore(), "engine": op.engine_name(), "count": None if count == 1 else count}
    if isinstance(op, sync.SignalOp):
        return hw.SemSignalOp(**fields, peer=op.peer_core())
    return hw.SemWaitOp(**fields)


def lower_core(core: int, block: Block, at: Addressing, location: LocationAttr) -> hw.CoreOp:
    """The hw.core `core` running `block` (a sharded program lowers one block per core)."""
    body = CoreLowering(at).block(block, location)
    return hw.CoreOp(core, [*body, hw.EndOp()])


def lower_function(function: func.FuncOp, target: str, resolved: Target) -> hw.ProgramOp:
    """The hw.program of a destination-passing function for `target` (`resolved`): layout, then
    one core; the estimates of its kernels recorded on it (`hw.KERNELS_ATTR`)."""
    at = Addressing()
    tensors = place_arguments(function, at)
    consts = place_buffers(function, at)
    estimates = kernel_estimates(function, resolved)
    core = lower_core(0, function.body.block, at, function.location)
    program = hw.ProgramOp(function.sym_name.data, target, [*tensors, *consts, core])
    program.location = function.location
    program.kernel_estimates = estimates
    return program


def kernel_nodes(kernel: tile.KernelOp) -> list[str]:
    """The ONNX nodes a kernel carries: its name, then the nodes its ops' locations name (what
    its instructions' locations will hold), each once."""
    assert kernel.sym is not None
    carried = (location_name(inner.location) for inner in kernel.walk())
    return list(dict.fromkeys([kernel.sym.data, *filter(None, carried)]))


def kernel_estimates(function: func.FuncOp, target: Target) -> list[hw.KernelEstimate]:
    """The cost model's estimate of every tile.kernel of `function` that recorded one
    (`est_cycles`, convert-graph-to-tile), with its overlap with its neighbours
    (`overlap.kernel_overlaps` on `target`), in program order."""
    overlaps = kernel_overlaps(function, target)
    found = []
    for op in function.walk():
        if not isinstance(op, tile.KernelOp) or op.sym is None:
            continue
        cycles, moved, ops = (op.attributes.get(name) for name in ("est_cycles", "dma_bytes", "op"))
        if isinstance(cycles, IntegerAttr):
            found.append(hw.KernelEstimate(
                op.sym.data, ops.data if isinstance(ops, StringAttr) else "", max(cycles.value.data, 0),
                tuple(kernel_nodes(op)), max(moved.value.data, 0) if isinstance(moved, IntegerAttr) else 0,
                overlap=overlaps[op].overlap, delay=overlaps[op].delay,
            ))  # fmt: skip
    return found


def check_fits(program: hw.ProgramOp, target: Target) -> None:
    """The program fits `target` (`check_program`: memory bounds over whole loop nests, engines,
    semaphores, matrix shape). The op verifiers are left to the pipeline runner, which applies
    them to the pass's result (after the pass, or with the rest of its lowering stage)."""
    try:
        hw_program.check_program(program, target)
    except AitcError as error:
        raise PassFailedException(
            f"convert-sync-to-hw produced a program that does not fit: {error}"
        ) from None


@dataclass(frozen=True)
class ConvertSyncToHwPass(ModulePass):
    """Lowers sync-level functions to hw programs: instruction selection, absolute addresses,
    hardware loops.

    Input:
      Destination-passing `func.func`s whose arguments are dram memrefs with `graph.name`,
      `tile.offset` (absolute DRAM address) and `tile.output` on outputs; every tile.alloc and
      tile.const has an `offset` (plan-memory); every tile compute op has `sync.engine`; scf.for
      loops have constant bounds and window indices are affine in the loop indices.
      The target: the module's `aitc.target`, else the `target` option (`aitc.module_target`).
    Output:
      One `hw.program @<function> target "<target>"` per function (schedules and host
      segments, `aitc.dialects.exec`, are left as they are): an hw.tensor per argument,
      an hw.const per tile.const, one hw.core 0 whose body is the instruction stream (hw.loop for
      scf.for, the DMA queue from `sync.engine`, ONNX locations on instructions). The module's
      `aitc.target` moves onto the programs (`target "<target>"`): the hw level says it once.
    Invariants:
      No tile, sync, func, scf or arith op is left; every program verifies and fits the target
      (`aitc.dialects.hw.program`; the limits are checked here, the op verifiers by the
      pipeline runner); the program computes what the sync-level function did, with the same
      semaphore protocol, so it is race-free and deadlock-free exactly when the input was.
    """

    name = "convert-sync-to-hw"
    target: str | None = None
    """A preset name or FILE.toml, for a module without `aitc.target` (`aitc.module_target`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        spec, target = module_target_spec(op, self.target, self.name)
        block = op.body.block
        for function in [f for f in block.ops if exec_dialect.lowered_here(f)]:
            program = lower_function(function, spec, target)
            block.insert_op_before(program, function)
            function.detach()
            function.erase()
        del op.attributes[TARGET_ATTR]  # each hw.program records it
        kept = exec_dialect.kept_functions(op)
        for dialect in LOWERED_DIALECTS:
            check_no_ops_left(op, dialect, self.name, skip=kept)
        for program in [p for p in block.ops if isinstance(p, hw.ProgramOp)]:
            check_fits(program, target)
