"""The `exec` dialect: which processor runs which part of a model, and in what order.

A model the NPU cannot run whole is split by `place-on-host` into segment functions, each run
by one processor, and a schedule function that calls them in order:

    func.func @main(%ids: tensor<2x16xi64>) -> tensor<2x16x64xf32> attributes {exec.schedule} {
      %mask = exec.call host @main_host0(%ids) : (tensor<2x16xi64>) -> tensor<2x1x1x16xf32>
      %y = exec.call npu @main_npu1(%ids, %mask) : (tensor<2x16xi64>, tensor<2x1x1x16xf32>)
                                                   -> tensor<2x16x64xf32>
      func.return %y : tensor<2x16x64xf32>
    }
    func.func @main_host0(...) attributes {exec.placement = "host"} { graph ops }
    func.func @main_npu1(...) attributes {exec.placement = "npu"} { graph ops }

Host segments stay graph-level functions for the whole pipeline: the runtime executes them
with the numpy reference kernels (`aitc.interp.graph`). NPU segments are lowered like any other
function, down to one `hw.program` each, and keep their symbol name, so the schedule's callees
resolve at every level. The values an `exec.call` takes and returns are the hand-over tensors:
at hw level each is an `hw.tensor` I/O descriptor (name, DRAM address, type) of the program,
which is where the runtime writes a host result before the NPU segment starts and reads an NPU
result after it ends.

Both attributes are discardable (the `exec.` prefix): `exec.schedule` (unit) marks the
schedule, `exec.placement` ("host" | "npu") a segment.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeGuard

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    FlatSymbolRefAttrConstr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def, var_operand_def, var_result_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

SCHEDULE_ATTR = "exec.schedule"
"""Unit attribute of a schedule function (its body: exec.call ops and func.return)."""

PLACEMENT_ATTR = "exec.placement"
"""String attribute of a segment function: "host" or "npu"."""

REASON_ATTR = "exec.reason"
"""String attribute on a graph op placed on the host: why the NPU does not run it."""

PLACEMENTS = ("npu", "host")


def placement_of(op: Operation) -> str | None:
    """ "host" or "npu" for a segment function, None otherwise."""
    attr = op.attributes.get(PLACEMENT_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


def is_schedule(op: Operation) -> TypeGuard[func.FuncOp]:
    """Whether `op` is a schedule function."""
    return isinstance(op, func.FuncOp) and SCHEDULE_ATTR in op.attributes


def is_host_function(op: Operation) -> TypeGuard[func.FuncOp]:
    """Whether `op` is a host segment (a graph-level function the runtime executes)."""
    return isinstance(op, func.FuncOp) and placement_of(op) == "host"


def lowered_here(op: Operation) -> TypeGuard[func.FuncOp]:
    """Whether the NPU lowering passes lower `op`: a function with a body that is neither a
    schedule nor a host segment."""
    if not isinstance(op, func.FuncOp) or not op.body.blocks:
        return False
    return not is_schedule(op) and not is_host_function(op)


def kept_functions(module: ModuleOp) -> list[func.FuncOp]:
    """The schedules and host segments of `module`: what NPU lowering leaves alone."""
    return [op for op in module.ops if is_schedule(op) or is_host_function(op)]


def symbol_name(op: Operation) -> str | None:
    """The symbol of a func.func (a property) or hw.program (an attribute), else None."""
    sym = op.properties.get("sym_name") or op.attributes.get("sym_name")
    return sym.data if isinstance(sym, StringAttr) else None


def lookup(module: Operation, name: str) -> Operation | None:
    """The function or hw.program named `name` at the top level of `module`."""
    for op in module.regions[0].block.ops if module.regions else ():
        if symbol_name(op) == name:
            return op
    return None


def _shape_of(type_: Attribute) -> tuple[tuple[int, ...], Attribute] | None:
    if isinstance(type_, TensorType | MemRefType):
        return tuple(type_.get_shape()), type_.get_element_type()
    return None


def callee_interface(callee: Operation) -> tuple[list[Attribute], list[Attribute]] | None:
    """(input types, output types) of a segment at any level, as tensors or buffers: the
    function type at graph level; the non-output / `tile.output` arguments of a
    destination-passing function; the input / output hw.tensor descriptors of a hw.program."""
    if isinstance(callee, func.FuncOp):
        types = list(callee.function_type.inputs.data)
        if not any(isinstance(t, MemRefType) for t in types):
            return types, list(callee.function_type.outputs.data)
        attrs = callee.arg_attrs.data if callee.arg_attrs else [None] * len(types)
        outputs = [a is not None and "tile.output" in a.data for a in attrs]
        return (
            [t for t, out in zip(types, outputs, strict=True) if not out],
            [t for t, out in zip(types, outputs, strict=True) if out],
        )
    if callee.name == "hw.program":
        tensors = [op for op in callee.regions[0].block.ops if op.name == "hw.tensor"]
        kinds = [getattr(op.attributes["kind"], "data", None) for op in tensors]
        types = [op.attributes["type"] for op in tensors]
        return (
            [t for t, k in zip(types, kinds, strict=True) if k == "input"],
            [t for t, k in zip(types, kinds, strict=True) if k == "output"],
        )
    return None


@irdl_op_definition
class CallOp(IRDLOperation):
    """Runs one segment of a schedule on `placement` ("npu" or "host") and waits for it.

    ```mlir
    func.func @seg(%x: tensor<4xf32>) -> tensor<4xf32> attributes {exec.placement = "host"} {
      %y = graph.sin %x : tensor<4xf32>
      func.return %y : tensor<4xf32>
    }
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {exec.schedule} {
      %y = exec.call host @seg(%x) : (tensor<4xf32>) -> tensor<4xf32>
      func.return %y : tensor<4xf32>
    }
    ```

    The callee is a func.func or hw.program at the top level of the module. Its interface
    (`callee_interface`) must match the operand and result shapes and element types; a host
    callee must be a host segment function of exactly this type.
    """

    name = "exec.call"
    arguments = var_operand_def()
    res = var_result_def()
    callee = prop_def(FlatSymbolRefAttrConstr)
    placement = prop_def(StringAttr)

    def __init__(
        self, placement: str, callee: str, arguments: Sequence[SSAValue], result_types: Sequence[Attribute]
    ):
        super().__init__(
            operands=[arguments],
            result_types=[result_types],
            properties={"callee": SymbolRefAttr(callee), "placement": StringAttr(placement)},
        )

    @property
    def callee_name(self) -> str:
        return self.callee.root_reference.data

    def verify_(self) -> None:
        if self.placement.data not in PLACEMENTS:
            raise VerifyException(f"exec.call: placement must be npu or host, got '{self.placement.data}'")
        module = self.parent_op()
        while module is not None and not isinstance(module, ModuleOp):
            module = module.parent_op()
        if module is None:
            return
        callee = lookup(module, self.callee_name)
        if callee is None:
            raise VerifyException(f"exec.call: no function or hw.program @{self.callee_name}")
        if self.placement.data == "host" and not is_host_function(callee):
            raise VerifyException(f"exec.call host: @{self.callee_name} is not a host segment function")
        interface = callee_interface(callee)
        if interface is None:
            raise VerifyException(f"exec.call: @{self.callee_name} is a {callee.name}, not a segment")
        self._check_types("operand", [a.type for a in self.arguments], interface[0])
        self._check_types("result", list(self.res.types), interface[1])

    def _check_types(self, what: str, have: list[Attribute], want: list[Attribute]) -> None:
        if len(have) != len(want):
            raise VerifyException(
                f"exec.call: @{self.callee_name} takes {len(want)} {what}(s), the call has {len(have)}"
            )
        for index, (a, b) in enumerate(zip(have, want, strict=True)):
            if _shape_of(a) != _shape_of(b):
                raise VerifyException(
                    f"exec.call: {what} #{index} of @{self.callee_name} is {b}, the call has {a}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.placement.data} ")
        printer.print_symbol_name(self.callee_name)
        printer.print_string("(")
        printer.print_list(self.arguments, printer.print_operand)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type([a.type for a in self.arguments], self.res.types)

    @classmethod
    def parse(cls, parser: Parser) -> CallOp:
        placement = parser.parse_identifier()
        callee = parser.parse_symbol_name().data
        arguments = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        function_type = parser.parse_function_type()
        operands = parser.resolve_operands(arguments, function_type.inputs.data, parser.pos)
        op = cls(placement, callee, operands, function_type.outputs.data)
        op.attributes.update(attributes)
        return op


Exec = Dialect("exec", [CallOp], [])
