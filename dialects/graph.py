"""The `graph` dialect: tensor-level ops with value semantics, at ONNX granularity or coarser.

This is the level that the ONNX frontend produces and that graph optimisations rewrite. Every
value is a statically shaped builtin `tensor<...>`; weights are `graph.constant` ops holding a
bytes-backed `dense<...>` or an out-of-line `dense_resource<...>` attribute. Elementwise ops
broadcast like numpy/ONNX. Semantics are defined by the numpy reference in
`aitc/interp/graph.py`; each op's verifier checks the shapes and element types that its
semantics need and, where MLIR would infer the result type, that the result type is the inferred one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    f64,
    i32,
    i64,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    AttrConstraint,
    IntConstraint,
    IRDLOperation,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    opt_operand_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.irdl.constraints import VerificationContext
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from aitc.types import broadcast_shapes, is_bool, is_float, shape_str
from aitc.weights import parse_constant_body, print_constant_body

I1 = IntegerType(1)


# --------------------------------------------------------------------------- attribute helpers


def ints_attr(values: Sequence[int]) -> DenseArrayBase[IntegerType]:
    """`array<i64: ...>`, the attribute kind every integer-list option of this dialect uses."""
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


@dataclass(frozen=True)
class IntListConstraint(AttrConstraint[DenseArrayBase[IntegerType]]):
    """Every integer-list option is an `array<i64: ...>`: no i32 or float arrays.

    (`DenseArrayBase.constr(i64)` would say only "Expected attribute i64 but got f32".)
    """

    def verify(self, attr: Attribute, constraint_context: VerificationContext) -> None:
        if not (isinstance(attr, DenseArrayBase) and attr.elt_type == i64):
            raise VerifyException(f"integer-list attributes must be array<i64: ...>, got {attr}")

    def get_bases(self) -> set[type[Attribute]]:
        return {DenseArrayBase}

    def mapping_type_vars(
        self, type_var_mapping: Mapping[TypeVar, AttrConstraint | IntConstraint]
    ) -> IntListConstraint:
        return self


INTS = IntListConstraint()


def ints_of(attr: DenseArrayBase[IntegerType] | None, default: Iterable[int] = ()) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values()) if attr is not None else tuple(default)


def float_attr(value: float) -> FloatAttr:
    return FloatAttr(float(value), f64)


def _shape(value: SSAValue | Attribute) -> tuple[int, ...]:
    type_ = value if isinstance(value, Attribute) else value.type
    assert isinstance(type_, TensorType)
    shape = tuple(type_.get_shape())
    _check(all(d >= 0 for d in shape), f"graph ops need static shapes, got {type_}")
    return shape


def tensor_of(value: SSAValue) -> TensorType:
    """The type of a graph value. Graph ops take and make tensors only, but xDSL 0.74 types every
    operand as `SSAValue[Attribute]` whatever its `operand_def` constraint (upstream gap)."""
    assert isinstance(value.type, TensorType)
    return value.type


def _elem(value: SSAValue) -> Attribute:
    return tensor_of(value).get_element_type()


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise VerifyException(message)


def _normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    _check(-rank <= axis < max(rank, 1), f"{what} {axis} is out of range for rank {rank}")
    return axis % max(rank, 1)


FUSABLE_ACTIVATIONS = ("relu", "sigmoid", "tanh", "gelu", "gelu_tanh", "relu6")
"""Activations that `graph.matmul` and `graph.conv` may apply to their result (`activation`)."""


def _verify_activation(op: IRDLOperation) -> None:
    attr = op.attributes.get("activation")
    if attr is None:
        return
    assert isinstance(attr, StringAttr)
    _check(
        attr.data in FUSABLE_ACTIVATIONS,
        f"unknown fused activation '{attr.data}', expected one of {', '.join(FUSABLE_ACTIVATIONS)}",
    )


# --------------------------------------------------------------------------- constants


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A constant tensor: a weight, a bias, a small scalar.

    Small values are inline `dense<...>`; large ones are `dense_resource<key>`, whose bytes sit in
    the file's `dialect_resources` section (see `aitc/weights.py`).

    ```mlir
    %w = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %big = graph.constant dense_resource<fc1_weight_0a1b2c3d4e5f> : tensor<512x512xf32>
    ```
    """

    name = "graph.constant"
    value = opt_attr_def(DenseIntOrFPElementsAttr | DenseResourceAttr)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, value: DenseIntOrFPElementsAttr | DenseResourceAttr):
        super().__init__(attributes={"value": value}, result_types=[value.get_type()])

    def verify_(self) -> None:
        _check(self.value is not None, "graph.constant needs a 'value' attribute")
        assert self.value is not None
        _check(
            self.value.get_type() == self.output.type,
            f"value type {self.value.get_type()} differs from result type {self.output.type}",
        )

    def print(self, printer: Printer) -> None:
        print_constant_body(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        value, extra = parse_constant_body(parser, "graph.constant")
        op = cls(value)
        op.attributes.update(extra)
        return op


# --------------------------------------------------------------------------- elementwise


class ElementwiseUnaryOp(IRDLOperation):
    """Base of elementwise unary ops: one operand, a result of the same type."""

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    output = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($output)"
    FLOAT_ONLY: ClassVar[bool] = True

    def __init__(self, input: SSAValue, attributes: dict[str, Attribute] | None = None):
        super().__init__(operands=[input], result_types=[input.type], attributes=attributes or {})

    def verify_(self) -> None:
        _shape(self.input)  # static shapes only
        if self.FLOAT_ONLY:
            _check(is_float(_elem(self.input)), f"{self.name} needs a float tensor")


# Unary math ops: float tensors only (FLOAT_ONLY) unless they set FLOAT_ONLY = False.


@irdl_op_definition
class NegOp(ElementwiseUnaryOp):
    """Elementwise negation, -x.

    ```mlir
    %y = graph.neg %x : tensor<4x8xf32>
    ```
    """

    name = "graph.neg"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class AbsOp(ElementwiseUnaryOp):
    """Elementwise absolute value |x|.

    ```mlir
    %y = graph.abs %x : tensor<4x8xf32>
    ```
    """

    name = "graph.abs"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class SignOp(ElementwiseUnaryOp):
    """Elementwise sign: -1, 0 or 1.

    ```mlir
    %y = graph.sign %x : tensor<4x8xf32>
    ```
    """

    name = "graph.sign"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class ExpOp(ElementwiseUnaryOp):
    """Elementwise e**x.

    ```mlir
    %y = graph.exp %x : tensor<4x8xf32>
    ```
    """

    name = "graph.exp"


@irdl_op_definition
class LogOp(ElementwiseUnaryOp):
    """Elementwise natural logarithm.

    ```mlir
    %y = graph.log %x : tensor<4x8xf32>
    ```
    """

    name = "graph.log"


@irdl_op_definition
class SqrtOp(ElementwiseUnaryOp):
    """Elementwise square root.

    ```mlir
    %y = graph.sqrt %x : tensor<4x8xf32>
    ```
    """

    name = "graph.sqrt"


@irdl_op_definition
class ReciprocalOp(ElementwiseUnaryOp):
    """Elementwise 1/x.

    ```mlir
    %y = graph.reciprocal %x : tensor<4x8xf32>
    ```
    """

    name = "graph.reciprocal"


@irdl_op_definition
class TanhOp(ElementwiseUnaryOp):
    """Elementwise hyperbolic tangent.

    ```mlir
    %y = graph.tanh %x : tensor<4x8xf32>
    ```
    """

    name = "graph.tanh"


@irdl_op_definition
class SigmoidOp(ElementwiseUnaryOp):
    """Elementwise logistic function 1/(1+exp(-x)).

    ```mlir
    %y = graph.sigmoid %x : tensor<4x8xf32>
    ```
    """

    name = "graph.sigmoid"


@irdl_op_definition
class ReluOp(ElementwiseUnaryOp):
    """Elementwise max(x, 0).

    ```mlir
    %y = graph.relu %x : tensor<4x8xf32>
    ```
    """

    name = "graph.relu"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class ErfOp(ElementwiseUnaryOp):
    """Elementwise Gauss error function.

    ```mlir
    %y = graph.erf %x : tensor<4x8xf32>
    ```
    """

    name = "graph.erf"


@irdl_op_definition
class SinOp(ElementwiseUnaryOp):
    """Elementwise sine.

    ```mlir
    %y = graph.sin %x : tensor<4x8xf32>
    ```
    """

    name = "graph.sin"


@irdl_op_definition
class CosOp(ElementwiseUnaryOp):
    """Elementwise cosine.

    ```mlir
    %y = graph.cos %x : tensor<4x8xf32>
    ```
    """

    name = "graph.cos"


@irdl_op_definition
class FloorOp(ElementwiseUnaryOp):
    """Elementwise round towards -inf.

    ```mlir
    %y = graph.floor %x : tensor<4x8xf32>
    ```
    """

    name = "graph.floor"


@irdl_op_definition
class CeilOp(ElementwiseUnaryOp):
    """Elementwise round towards +inf.

    ```mlir
    %y = graph.ceil %x : tensor<4x8xf32>
    ```
    """

    name = "graph.ceil"


@irdl_op_definition
class RoundOp(ElementwiseUnaryOp):
    """Elementwise round half to even.

    ```mlir
    %y = graph.round %x : tensor<4x8xf32>
    ```
    """

    name = "graph.round"


@irdl_op_definition
class SoftplusOp(ElementwiseUnaryOp):
    """Elementwise log(1 + exp(x)).

    ```mlir
    %y = graph.softplus %x : tensor<4x8xf32>
    ```
    """

    name = "graph.softplus"


@irdl_op_definition
class SoftsignOp(ElementwiseUnaryOp):
    """Elementwise x / (1 + |x|).

    ```mlir
    %y = graph.softsign %x : tensor<4x8xf32>
    ```
    """

    name = "graph.softsign"


@irdl_op_definition
class HardSwishOp(ElementwiseUnaryOp):
    """Elementwise x * max(0, min(1, x/6 + 1/2)).

    ```mlir
    %y = graph.hard_swish %x : tensor<4x8xf32>
    ```
    """

    name = "graph.hard_swish"


@irdl_op_definition
class NotOp(ElementwiseUnaryOp):
    """Elementwise logical not of an i1 tensor.

    ```mlir
    %y = graph.not %x : tensor<4xi1>
    ```
    """

    name = "graph.not"
    FLOAT_ONLY: ClassVar[bool] = False

    def verify_(self) -> None:
        super().verify_()
        _check(is_bool(_elem(self.input)), "graph.not needs an i1 tensor")


# Unary activations with attributes.


class ParametricUnaryOp(ElementwiseUnaryOp):
    """Base of unary activations with float parameters (`alpha`, `beta`, `gamma`)."""

    alpha = opt_attr_def(FloatAttr)
    beta = opt_attr_def(FloatAttr)
    gamma = opt_attr_def(FloatAttr)
    REQUIRED: ClassVar[tuple[str, ...]] = ("alpha",)

    def __init__(self, input: SSAValue, **params: float):
        super().__init__(input, {k: float_attr(v) for k, v in params.items()})

    def verify_(self) -> None:
        super().verify_()
        for key in self.REQUIRED:
            _check(key in self.attributes, f"{self.name} needs the '{key}' attribute")

    def param(self, key: str) -> float:
        attr = self.attributes[key]
        assert isinstance(attr, FloatAttr)
        return attr.value.data


@irdl_op_definition
class LeakyReluOp(ParametricUnaryOp):
    """x if x >= 0 else alpha * x.

    ```mlir
    %y = graph.leaky_relu %x {alpha = 0.01 : f64} : tensor<4xf32>
    ```
    """

    name = "graph.leaky_relu"


@irdl_op_definition
class EluOp(ParametricUnaryOp):
    """x if x > 0 else alpha * (exp(x) - 1).

    ```mlir
    %y = graph.elu %x {alpha = 1.0 : f64} : tensor<4xf32>
    ```
    """

    name = "graph.elu"


@irdl_op_definition
class SeluOp(ParametricUnaryOp):
    """gamma * (x if x > 0 else alpha * (exp(x) - 1)).

    ```mlir
    %y = graph.selu %x {alpha = 1.67 : f64, gamma = 1.05 : f64} : tensor<4xf32>
    ```
    """

    name = "graph.selu"
    REQUIRED: ClassVar[tuple[str, ...]] = ("alpha", "gamma")


@irdl_op_definition
class HardSigmoidOp(ParametricUnaryOp):
    """max(0, min(1, alpha * x + beta)).

    ```mlir
    %y = graph.hard_sigmoid %x {alpha = 0.2 : f64, beta = 0.5 : f64} : tensor<4xf32>
    ```
    """

    name = "graph.hard_sigmoid"
    REQUIRED: ClassVar[tuple[str, ...]] = ("alpha", "beta")


@irdl_op_definition
class ClipOp(ParametricUnaryOp):
    """min(max(x, alpha), beta): clamps to [alpha, beta]; a missing bound is unbounded.

    ```mlir
    %y = graph.clip %x {alpha = 0.0 : f64, beta = 6.0 : f64} : tensor<4xf32>
    ```
    """

    name = "graph.clip"
    REQUIRED: ClassVar[tuple[str, ...]] = ()


@irdl_op_definition
class GeluOp(ElementwiseUnaryOp):
    """Gaussian error linear unit, exact (erf) or with the tanh approximation.

    ```mlir
    %y = graph.gelu %x : tensor<4xf32>
    %z = graph.gelu %x {approximate = "tanh"} : tensor<4xf32>
    ```
    """

    name = "graph.gelu"
    approximate = opt_attr_def(StringAttr)

    def verify_(self) -> None:
        super().verify_()
        mode = self.approximate.data if self.approximate is not None else "none"
        _check(mode in ("none", "tanh"), f"approximate must be 'none' or 'tanh', got '{mode}'")


class ElementwiseBinaryOp(IRDLOperation):
    """Base of elementwise binary ops with numpy broadcasting.

    Operands share an element type; the result has the broadcast shape and the operands'
    element type (or i1 for comparisons).
    """

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($output)"
    RESULT_IS_BOOL: ClassVar[bool] = False
    OPERAND_KIND: ClassVar[str] = "any"  # "any", "float" or "bool"

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[self.infer(lhs, rhs)])

    @classmethod
    def infer(cls, lhs: SSAValue, rhs: SSAValue) -> TensorType:
        shape = broadcast_shapes(_shape(lhs), _shape(rhs))
        return TensorType(I1 if cls.RESULT_IS_BOOL else _elem(lhs), shape)

    def verify_(self) -> None:
        elem = _elem(self.lhs)
        _check(elem == _elem(self.rhs), f"operand element types differ: {elem} vs {_elem(self.rhs)}")
        if self.OPERAND_KIND == "bool":
            _check(is_bool(elem), f"{self.name} needs i1 operands")
        if self.OPERAND_KIND == "float":
            _check(is_float(elem), f"{self.name} needs float operands")
        try:
            expected = self.infer(self.lhs, self.rhs)
        except ValueError as error:
            raise VerifyException(str(error)) from error
        _check(
            self.output.type == expected,
            f"result type {self.output.type} should be {expected} (broadcast of the operands)",
        )


# Binary arithmetic ops: the result has the operands' element type.


@irdl_op_definition
class AddOp(ElementwiseBinaryOp):
    """Elementwise x + y.

    ```mlir
    %z = graph.add %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    ```
    """

    name = "graph.add"


@irdl_op_definition
class SubOp(ElementwiseBinaryOp):
    """Elementwise x - y.

    ```mlir
    %z = graph.sub %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    ```
    """

    name = "graph.sub"


@irdl_op_definition
class MulOp(ElementwiseBinaryOp):
    """Elementwise x * y.

    ```mlir
    %z = graph.mul %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    ```
    """

    name = "graph.mul"


@irdl_op_definition
class DivOp(ElementwiseBinaryOp):
    """Elementwise x / y (integer division truncates, as in ONNX).

    ```mlir
    %z = graph.div %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    ```
    """

    name = "graph.div"


@irdl_op_definition
class PowOp(ElementwiseBinaryOp):
    """Elementwise x ** y.

    ```mlir
    %z = graph.pow %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    ```
    """

    name = "graph.pow"
    OPERAND_KIND: ClassVar[str] = "float"


@irdl_op_definition
class MaxOp(ElementwiseBinaryOp):
    """Elementwise maximum (NaN propagates).

    ```mlir
    %z = graph.max %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    ```
    """

    name = "graph.max"


@irdl_op_definition
class MinOp(ElementwiseBinaryOp):
    """Elementwise minimum (NaN propagates).

    ```mlir
    %z = graph.min %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    ```
    """

    name = "graph.min"


@irdl_op_definition
class ModOp(ElementwiseBinaryOp):
    """Elementwise remainder. `mode` "fmod" is the C remainder (sign of x), "floor" the floored,
    Python-style one (sign of y); without `mode`, floats use "fmod" and integers "floor".

    ```mlir
    %z = graph.mod %x, %y : tensor<6xi32>, tensor<6xi32> -> tensor<6xi32>
    %r = graph.mod %a, %b {mode = "floor"} : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
    ```
    """

    name = "graph.mod"
    mode = opt_attr_def(StringAttr)

    def default_mode(self) -> str:
        return "fmod" if is_float(_elem(self.lhs)) else "floor"

    def mod_mode(self) -> str:
        return self.mode.data if self.mode is not None else self.default_mode()

    def verify_(self) -> None:
        super().verify_()
        mode = self.mod_mode()
        _check(mode in ("fmod", "floor"), f"mode must be 'fmod' or 'floor', got '{mode}'")


@irdl_op_definition
class PReluOp(ElementwiseBinaryOp):
    """x if x >= 0 else slope * x, slope broadcast to x.

    ```mlir
    %z = graph.prelu %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    ```
    """

    name = "graph.prelu"
    OPERAND_KIND: ClassVar[str] = "float"


# Binary logical ops: i1 operands and result.


@irdl_op_definition
class AndOp(ElementwiseBinaryOp):
    """Elementwise logical and.

    ```mlir
    %z = graph.and %x, %y : tensor<2x3xi1>, tensor<3xi1> -> tensor<2x3xi1>
    ```
    """

    name = "graph.and"
    OPERAND_KIND: ClassVar[str] = "bool"


@irdl_op_definition
class OrOp(ElementwiseBinaryOp):
    """Elementwise logical or.

    ```mlir
    %z = graph.or %x, %y : tensor<2x3xi1>, tensor<3xi1> -> tensor<2x3xi1>
    ```
    """

    name = "graph.or"
    OPERAND_KIND: ClassVar[str] = "bool"


@irdl_op_definition
class XorOp(ElementwiseBinaryOp):
    """Elementwise logical xor.

    ```mlir
    %z = graph.xor %x, %y : tensor<2x3xi1>, tensor<3xi1> -> tensor<2x3xi1>
    ```
    """

    name = "graph.xor"
    OPERAND_KIND: ClassVar[str] = "bool"


# Comparisons: an i1 result.


@irdl_op_definition
class EqualOp(ElementwiseBinaryOp):
    """Elementwise x == y.

    ```mlir
    %z = graph.equal %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
    ```
    """

    name = "graph.equal"
    RESULT_IS_BOOL: ClassVar[bool] = True


@irdl_op_definition
class LessOp(ElementwiseBinaryOp):
    """Elementwise x < y.

    ```mlir
    %z = graph.less %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
    ```
    """

    name = "graph.less"
    RESULT_IS_BOOL: ClassVar[bool] = True


@irdl_op_definition
class LessEqualOp(ElementwiseBinaryOp):
    """Elementwise x <= y.

    ```mlir
    %z = graph.less_equal %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
    ```
    """

    name = "graph.less_equal"
    RESULT_IS_BOOL: ClassVar[bool] = True


@irdl_op_definition
class GreaterOp(ElementwiseBinaryOp):
    """Elementwise x > y.

    ```mlir
    %z = graph.greater %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
    ```
    """

    name = "graph.greater"
    RESULT_IS_BOOL: ClassVar[bool] = True


@irdl_op_definition
class GreaterEqualOp(ElementwiseBinaryOp):
    """Elementwise x >= y.

    ```mlir
    %z = graph.greater_equal %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
    ```
    """

    name = "graph.greater_equal"
    RESULT_IS_BOOL: ClassVar[bool] = True


# Select and cast.


@irdl_op_definition
class WhereOp(IRDLOperation):
    """Elementwise select: cond ? x : y, with three-way broadcasting.

    ```mlir
    %r = graph.where %c, %x, %y : tensor<2x3xi1>, tensor<3xf32>, tensor<f32> -> tensor<2x3xf32>
    ```
    """

    name = "graph.where"
    condition = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs) `,` "
        "type($rhs) `->` type($output)"
    )

    def __init__(self, condition: SSAValue, lhs: SSAValue, rhs: SSAValue):
        shape = broadcast_shapes(_shape(condition), _shape(lhs), _shape(rhs))
        super().__init__(operands=[condition, lhs, rhs], result_types=[TensorType(_elem(lhs), shape)])

    def verify_(self) -> None:
        _check(is_bool(_elem(self.condition)), "the condition must be an i1 tensor")
        _check(_elem(self.lhs) == _elem(self.rhs), "both branches need the same element type")
        try:
            shape = broadcast_shapes(_shape(self.condition), _shape(self.lhs), _shape(self.rhs))
        except ValueError as error:
            raise VerifyException(str(error)) from error
        expected = TensorType(_elem(self.lhs), shape)
        _check(self.output.type == expected, f"result type should be {expected}")


@irdl_op_definition
class CastOp(IRDLOperation):
    """Converts the element type, with ONNX Cast semantics (float -> int truncates).

    ```mlir
    %y = graph.cast %x : tensor<4xi64> -> tensor<4xf32>
    ```
    """

    name = "graph.cast"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def __init__(self, input: SSAValue, element_type: Attribute):
        super().__init__(operands=[input], result_types=[TensorType(element_type, _shape(input))])

    def verify_(self) -> None:
        _check(_shape(self.input) == _shape(self.output), "cast keeps the shape")


QUANTIZED_TYPES = ("i8", "ui8", "i16", "ui16", "i32")
"""Integer element types graph.quantize makes (not i32) and graph.dequantize takes."""


class AffineQuantizationOp(IRDLOperation):
    """Base of graph.quantize and graph.dequantize: `input`, an f32 `scale` and a `zero_point`
    of the integer type that broadcast against it (a scalar, or per axis: the axis's size at
    that dim, ones elsewhere), and a result of the input's shape."""

    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    zero_point = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $scale `,` $zero_point attr-dict `:` type($input) `,` type($scale) `,` "
        "type($zero_point) `->` type($output)"
    )
    INTEGER_TYPES: ClassVar[tuple[str, ...]] = QUANTIZED_TYPES

    def integer_type(self) -> Attribute:
        """The quantized side's element type (the result's, or the input's)."""
        raise NotImplementedError

    def verify_(self) -> None:
        integer = self.integer_type()
        _check(_elem(self.scale) == f32, f"{self.name}: the scale must be f32")
        _check(
            str(integer) in self.INTEGER_TYPES,
            f"{self.name}: the quantized type must be one of {', '.join(self.INTEGER_TYPES)}, got {integer}",
        )
        _check(_elem(self.zero_point) == integer, f"{self.name}: the zero point must be {integer}")
        shape = _shape(self.input)
        for what, value in (("scale", self.scale), ("zero point", self.zero_point)):
            try:
                fits = broadcast_shapes(_shape(value), shape) == shape
            except ValueError:
                fits = False
            fits = fits and len(_shape(value)) <= len(shape)
            _check(fits, f"{self.name}: the {what} must broadcast to the input")
        _check(_shape(self.output) == shape, f"{self.name} keeps the shape")


@irdl_op_definition
class QuantizeOp(AffineQuantizationOp):
    """Affine quantization with ONNX QuantizeLinear semantics: saturate(round_half_even(x / scale)
    + zero_point) into the zero point's integer type, from an f32 input.

    ```mlir
    %q = graph.quantize %x, %s, %z : tensor<8x64xf32>, tensor<f32>, tensor<i8> -> tensor<8x64xi8>
    ```
    """

    name = "graph.quantize"
    INTEGER_TYPES: ClassVar[tuple[str, ...]] = QUANTIZED_TYPES[:-1]

    def __init__(self, input: SSAValue, scale: SSAValue, zero_point: SSAValue):
        result = TensorType(_elem(zero_point), _shape(input))
        super().__init__(operands=[input, scale, zero_point], result_types=[result])

    def integer_type(self) -> Attribute:
        return _elem(self.output)

    def verify_(self) -> None:
        _check(_elem(self.input) == f32, "graph.quantize takes an f32 input")
        super().verify_()


@irdl_op_definition
class DequantizeOp(AffineQuantizationOp):
    """Affine dequantization with ONNX DequantizeLinear semantics: (x - zero_point) * scale as
    f32, the difference taken exactly; the zero point has the input's integer type.

    ```mlir
    %x = graph.dequantize %q, %s, %z : tensor<8x64xi8>, tensor<f32>, tensor<i8> -> tensor<8x64xf32>
    ```
    """

    name = "graph.dequantize"

    def __init__(self, input: SSAValue, scale: SSAValue, zero_point: SSAValue):
        super().__init__(operands=[input, scale, zero_point], result_types=[TensorType(f32, _shape(input))])

    def integer_type(self) -> Attribute:
        return _elem(self.input)

    def verify_(self) -> None:
        _check(_elem(self.output) == f32, "graph.dequantize makes an f32 result")
        super().verify_()


# --------------------------------------------------------------------------- linear algebra


@irdl_op_definition
class MatMulOp(IRDLOperation):
    """Matrix product with numpy `matmul` semantics: batched, broadcast over leading dims,
    1-D operands promoted and their unit dim dropped. An optional `bias` (one value per output
    column) is added and an optional fused `activation` applied, in that order. i8 operands
    multiply exactly into an i32 result (ONNX MatMulInteger without zero points; no bias or
    activation), as `graph-quantized-matmul` makes them.

    ```mlir
    %y = graph.matmul %a, %b : tensor<8x128x64xf32>, tensor<64x32xf32> -> tensor<8x128x32xf32>
    ```
    """

    name = "graph.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    activation = opt_attr_def(StringAttr)
    traits = traits_def(Pure())
    assembly_format = (
        "$lhs `,` $rhs (`,` $bias^)? attr-dict `:` type($lhs) `,` type($rhs) "
        "(`,` type($bias)^)? `->` type($output)"
    )

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs, []], result_types=[self.infer(lhs, rhs)])

    @staticmethod
    def infer(lhs: SSAValue, rhs: SSAValue) -> TensorType:
        a, b = _shape(lhs), _shape(rhs)
        if not a or not b:
            raise ValueError("matmul operands must have rank >= 1")
        a2 = (1, *a) if len(a) == 1 else a
        b2 = (*b, 1) if len(b) == 1 else b
        if a2[-1] != b2[-2]:
            raise ValueError(f"contraction dims differ: {shape_str(a)} @ {shape_str(b)}")
        batch = broadcast_shapes(a2[:-2], b2[:-2])
        out = [*batch] + ([a2[-2]] if len(a) > 1 else []) + ([b2[-1]] if len(b) > 1 else [])
        return TensorType(i32 if str(_elem(lhs)) == "i8" else _elem(lhs), out)

    def verify_(self) -> None:
        _check(_elem(self.lhs) == _elem(self.rhs), "matmul operands need one element type")
        try:
            expected = self.infer(self.lhs, self.rhs)
        except ValueError as error:
            raise VerifyException(str(error)) from error
        _check(self.output.type == expected, f"result type should be {expected}")
        if str(_elem(self.lhs)) == "i8":
            _check(self.bias is None and self.activation is None, "an i8 matmul has no bias or activation")
        if self.bias is not None:
            bias = TensorType(_elem(self.lhs), _shape(self.output)[-1:])
            _check(self.bias.type == bias, f"bias must be {bias}, one value per output column")
        _verify_activation(self)


class WindowOp(IRDLOperation):
    """Base of ops that slide a window over the spatial dims of an N x C x D1 x ... tensor
    (N x D1 x ... x C when the op is `channels_last`).

    `pads` lists the begin pads of every spatial dim, then the end pads (ONNX order).
    """

    strides = opt_attr_def(INTS)
    pads = opt_attr_def(INTS)
    dilations = opt_attr_def(INTS)

    def spatial_rank(self) -> int:
        return len(_shape(self.operands[0])) - 2

    def is_channels_last(self) -> bool:
        """Whether the activations are N x D1 x ... x C (only graph.conv has the attribute)."""
        return "channels_last" in self.attributes

    def spatial_sizes(self) -> tuple[int, ...]:
        """The input's spatial extents D1, ...."""
        x = _shape(self.operands[0])
        return x[1:-1] if self.is_channels_last() else x[2:]

    def channel_dim(self) -> int:
        """The dim of the activations' channels: 1, or the last one when channels_last."""
        return len(_shape(self.operands[0])) - 1 if self.is_channels_last() else 1

    def window(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(strides, pads, dilations), defaults filled in."""
        n = self.spatial_rank()
        return (
            ints_of(self.strides, [1] * n),
            ints_of(self.pads, [0] * (2 * n)),
            ints_of(self.dilations, [1] * n),
        )

    def out_spatial(self, kernel: Sequence[int], ceil: bool = False) -> list[int]:
        strides, pads, dilations = self.window()
        n = self.spatial_rank()
        _check(len(strides) == n and len(dilations) == n, f"strides/dilations need {n} values")
        _check(len(pads) == 2 * n, f"pads needs {2 * n} values (begins, then ends)")
        _check(
            all(s > 0 for s in strides) and all(d > 0 for d in dilations),
            "strides and dilations must be > 0",
        )
        _check(all(p >= 0 for p in pads), "pads must be >= 0")
        sizes = self.spatial_sizes()
        out = []
        for i in range(n):
            total_pad = pads[i] + pads[i + n]
            span = sizes[i] + total_pad - dilations[i] * (kernel[i] - 1) - 1
            _check(
                span >= 0,
                f"window {kernel[i]} (dilation {dilations[i]}) exceeds spatial dim {i}: "
                f"size {sizes[i]}, padded by {total_pad}",
            )
            count = -(-span // strides[i]) + 1 if ceil else span // strides[i] + 1
            if ceil and (count - 1) * strides[i] >= sizes[i] + pads[i]:
                count -= 1  # the last window would start in the end padding
            out.append(count)
        return out


@irdl_op_definition
class ConvOp(WindowOp):
    """N-d grouped convolution (cross-correlation), ONNX Conv semantics; depthwise when
    group == C_in. Weight layout: C_out x C_in/group x K1 x ...; optional bias of C_out;
    an optional fused `activation` is applied to the result. With `channels_last` the input
    and the result are N x D1 x ... x C (NHWC in 2-D; the weight keeps its layout): what
    graph-channels-last gives the convs that run faster that way on the NPU.

    i8 operands multiply exactly into an i32 result, as `graph-quantized-matmul` makes them
    (ONNX ConvInteger with a per-tensor input zero point and none for the weight; no
    activation; an optional i32 bias): `input_zero` is subtracted from every input element and
    the padding contributes nothing, so y = sum over the in-bounds taps of
    (x - input_zero) * w (+ bias).

    ```mlir
    %y = graph.conv %x, %w, %b {group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
       : tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32> -> tensor<1x16x32x32xf32>
    ```
    """

    name = "graph.conv"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    group = opt_attr_def(IntegerAttr)
    activation = opt_attr_def(StringAttr)
    channels_last = opt_attr_def(UnitAttr)
    input_zero = opt_attr_def(IntegerAttr)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,` type($weight) "
        "(`,` type($bias)^)? `->` type($output)"
    )

    def groups(self) -> int:
        return self.group.value.data if self.group is not None else 1

    def is_integer(self) -> bool:
        """Whether the conv multiplies i8 operands into an i32 result."""
        return str(_elem(self.input)) == "i8"

    def input_zero_point(self) -> int:
        """The zero point subtracted from the input (0 when absent)."""
        return self.input_zero.value.data if self.input_zero is not None else 0

    def inferred_type(self) -> TensorType:
        x, w = _shape(self.input), _shape(self.weight)
        spatial = self.out_spatial(w[2:])
        shape = [x[0], *spatial, w[0]] if self.is_channels_last() else [x[0], w[0], *spatial]
        return TensorType(i32 if self.is_integer() else _elem(self.input), shape)

    def verify_(self) -> None:
        x, w = _shape(self.input), _shape(self.weight)
        if len(x) < 3 or len(w) != len(x):  # an `if`, not _check: pyright then knows x[1] exists
            raise VerifyException("conv needs N x C x spatial input and a weight of the same rank")
        g, c_in = self.groups(), x[self.channel_dim()]
        _check(
            g > 0 and c_in % g == 0 and w[0] % g == 0,
            f"group {g} must divide C_in {c_in} and C_out {w[0]}",
        )
        _check(w[1] * g == c_in, f"weight expects {w[1] * g} input channels, input has {c_in}")
        if self.bias is not None:
            bias = TensorType(i32 if self.is_integer() else _elem(self.input), [w[0]])
            _check(self.bias.type == bias, f"bias must be {bias}, one value per output channel")
        _check(_elem(self.input) == _elem(self.weight), "input and weight need one element type")
        if self.is_integer():
            _check(self.activation is None, "an i8 conv has no activation")
        zero = self.input_zero_point()
        _check(
            zero == 0 or (self.is_integer() and -128 <= zero <= 127),
            f"input_zero {zero} needs an i8 conv and must fit i8",
        )
        expected = self.inferred_type()
        _check(self.output.type == expected, f"result type should be {expected}")
        _verify_activation(self)


class PoolOp(WindowOp):
    """Base of max/average pooling over the spatial dims."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    kernel_shape = opt_attr_def(INTS)
    ceil_mode = opt_attr_def(UnitAttr)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def kernel(self) -> tuple[int, ...]:
        return ints_of(self.kernel_shape)

    def verify_(self) -> None:
        x = _shape(self.input)
        _check(len(x) >= 3, "pooling needs an N x C x spatial input")
        _check(len(self.kernel()) == len(x) - 2, f"kernel_shape needs {len(x) - 2} values")
        _check(all(k > 0 for k in self.kernel()), "kernel_shape values must be > 0")
        expected = self.inferred_type()
        _check(self.output.type == expected, f"result type should be {expected}")

    def inferred_type(self) -> TensorType:
        x = _shape(self.input)
        spatial = self.out_spatial(self.kernel(), ceil=self.ceil_mode is not None)
        channels = x[self.channel_dim()]
        out = [x[0], *spatial, channels] if self.is_channels_last() else [x[0], channels, *spatial]
        return TensorType(_elem(self.input), out)


@irdl_op_definition
class MaxPoolOp(PoolOp):
    """Max pooling; padding never wins (it is -inf). With `channels_last` the input and the
    result are N x D1 x ... x C (graph-channels-last gives it to pools inside a region of
    channels-last convs).

    ```mlir
    %y = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
       : tensor<1x8x32x32xf32> -> tensor<1x8x16x16xf32>
    ```
    """

    name = "graph.max_pool"
    channels_last = opt_attr_def(UnitAttr)


@irdl_op_definition
class AvgPoolOp(PoolOp):
    """Average pooling; padding counts in the divisor only with `count_include_pad`.

    ```mlir
    %y = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>}
       : tensor<1x8x32x32xf32> -> tensor<1x8x32x32xf32>
    ```
    """

    name = "graph.avg_pool"
    count_include_pad = opt_attr_def(UnitAttr)


# --------------------------------------------------------------------------- normalisation


@irdl_op_definition
class BatchNormOp(IRDLOperation):
    """Inference batch normalisation over axis 1:
    (x - mean) / sqrt(var + epsilon) * scale + bias.

    ```mlir
    %y = graph.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0e-05 : f64}
       : tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
       -> tensor<1x16x8x8xf32>
    ```
    """

    name = "graph.batch_norm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    output = result_def(TensorType)
    epsilon = opt_attr_def(FloatAttr)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $scale `,` $bias `,` $mean `,` $var attr-dict `:` type($input) `,` "
        "type($scale) `,` type($bias) `,` type($mean) `,` type($var) `->` type($output)"
    )

    def verify_(self) -> None:
        x = _shape(self.input)
        _check(len(x) >= 2, "batch_norm needs N x C x ...")
        _check(is_float(_elem(self.input)), "batch_norm needs a float tensor")
        channel = TensorType(_elem(self.input), [x[1]])
        for operand in (self.scale, self.bias, self.mean, self.var):
            _check(operand.type == channel, f"per-channel operands must be {channel}, got {operand.type}")
        _check(self.output.type == self.input.type, "result type must equal the input type")


@irdl_op_definition
class LayerNormOp(IRDLOperation):
    """Layer normalisation over the dims from `axis` to the end:
    (x - mean) / sqrt(var + epsilon) * scale (+ bias), scale/bias broadcast to those dims.

    ```mlir
    %y = graph.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f64}
       : tensor<1x128x384xf32>, tensor<384xf32>, tensor<384xf32> -> tensor<1x128x384xf32>
    ```
    """

    name = "graph.layer_norm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    axis = opt_attr_def(IntegerAttr)
    epsilon = opt_attr_def(FloatAttr)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $scale (`,` $bias^)? attr-dict `:` type($input) `,` type($scale) "
        "(`,` type($bias)^)? `->` type($output)"
    )

    def norm_axis(self) -> int:
        rank = len(_shape(self.input))
        return _normalize_axis(self.axis.value.data if self.axis is not None else -1, rank)

    def verify_(self) -> None:
        x = _shape(self.input)
        normalized = x[self.norm_axis() :]
        _check(is_float(_elem(self.input)), "layer_norm needs a float tensor")
        for operand in (self.scale, self.bias):
            if operand is None:
                continue
            _check(_elem(operand) == _elem(self.input), "scale/bias need the element type of the input")
            try:
                _check(broadcast_shapes(_shape(operand), normalized) == normalized, "")
            except (ValueError, VerifyException) as error:
                raise VerifyException(
                    f"scale/bias {shape_str(_shape(operand))} must broadcast to the "
                    f"normalised dims {shape_str(normalized)}"
                ) from error
        _check(self.output.type == self.input.type, "result type must equal the input type")


class AxisOp(IRDLOperation):
    """Base of ops that work along one axis and keep the input type (softmax family)."""

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    output = result_def(T)
    axis = opt_attr_def(IntegerAttr)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($output)"

    def __init__(self, input: SSAValue, axis: int):
        super().__init__(
            operands=[input], result_types=[input.type], attributes={"axis": IntegerAttr(axis, i64)}
        )

    def norm_axis(self) -> int:
        return _normalize_axis(self.axis.value.data if self.axis is not None else -1, len(_shape(self.input)))

    def verify_(self) -> None:
        self.norm_axis()
        _check(is_float(_elem(self.input)), f"{self.name} needs a float tensor")


@irdl_op_definition
class SoftmaxOp(AxisOp):
    """exp(x - max) / sum(exp(x - max)) along `axis` (default -1).

    ```mlir
    %p = graph.softmax %s {axis = -1 : i64} : tensor<1x12x128x128xf32>
    ```
    """

    name = "graph.softmax"


@irdl_op_definition
class LogSoftmaxOp(AxisOp):
    """log(softmax(x)) along `axis`, computed stably.

    ```mlir
    %p = graph.log_softmax %s {axis = 1 : i64} : tensor<4x10xf32>
    ```
    """

    name = "graph.log_softmax"


@irdl_op_definition
class AttentionOp(IRDLOperation):
    """Multi-head scaled dot-product attention on packed heads: the projections as their
    matmuls make them, with no head reshapes or transposes. For every batch b and head h:

        Q = q[b, :, h*D:(h+1)*D]   K = k[b, :, h*D:(h+1)*D]   V = v[b, :, h*Dv:(h+1)*Dv]
        out[b, :, h*Dv:(h+1)*Dv] = softmax(Q @ K^T * scale + mask[b, h]) @ V

    q: [B, S, H*D], k: [B, S', H*D], v: [B, S', H*Dv] -> out: [B, S, H*Dv], H = `heads`; the
    optional additive `mask` is [B or 1, H or 1, S or 1, S'] (dims of size 1 broadcast).
    `graph-fuse-attention` makes it from the unfused subgraph.

    ```mlir
    %o = graph.attention %q, %k, %v, %m {heads = 12 : i64, scale = 0.125 : f64}
       : tensor<1x128x384xf32>, tensor<1x128x384xf32>, tensor<1x128x384xf32>,
         tensor<1x1x1x128xf32> -> tensor<1x128x384xf32>
    ```
    """

    name = "graph.attention"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    output = result_def(TensorType)
    heads = opt_attr_def(IntegerAttr)
    scale = opt_attr_def(FloatAttr)
    traits = traits_def(Pure())
    assembly_format = (
        "$q `,` $k `,` $v (`,` $mask^)? attr-dict `:` type($q) `,` type($k) `,` type($v) "
        "(`,` type($mask)^)? `->` type($output)"
    )

    def head_count(self) -> int:
        return self.heads.value.data if self.heads is not None else 1

    def scale_value(self) -> float:
        return self.scale.value.data if self.scale is not None else 1.0

    def dims(self) -> tuple[int, int, int, int, int, int]:
        """(B, S, S', H, D, Dv)."""
        (b, s, e), k, v = _shape(self.q), _shape(self.k), _shape(self.v)
        heads = self.head_count()
        return b, s, k[1], heads, e // heads, v[2] // heads

    def verify_(self) -> None:
        q, k, v, out = (_shape(x) for x in (self.q, self.k, self.v, self.output))
        _check(all(len(x) == 3 for x in (q, k, v, out)), "attention: q, k, v and the result are [B, S, E]")
        heads = self.head_count()
        divides = heads >= 1 and q[2] % heads == 0 and v[2] % heads == 0
        _check(divides, f"attention: {heads} heads do not divide q's {q[2]} and v's {v[2]} features")
        _check(k[2] == q[2], f"attention: k has {k[2]} features, q {q[2]}")
        _check(q[0] == k[0] == v[0] and k[1] == v[1], "attention: q, k, v need one batch, k and v one length")
        _check(out == (q[0], q[1], v[2]), f"attention: the result must be {shape_str((q[0], q[1], v[2]))}")
        elements = {_elem(x) for x in (self.q, self.k, self.v, self.output)}
        _check(
            len(elements) == 1 and is_float(_elem(self.q)),
            "attention: q, k, v and the result: one float type",
        )
        if self.mask is not None:
            m, want = _shape(self.mask), (q[0], heads, q[1], k[1])
            fits = len(m) == 4 and m[3] == k[1]
            fits = fits and all(a in (1, b) for a, b in zip(m[:3], want[:3], strict=True))
            _check(
                fits,
                f"attention: mask {shape_str(m)} must be [B or 1, H or 1, S or 1, S'] = {shape_str(want)}",
            )
            _check(_elem(self.mask) == _elem(self.q), "attention: the mask needs q's element type")


# --------------------------------------------------------------------------- reductions


class ReduceOp(IRDLOperation):
    """Base of reductions over `axes` (non-negative, sorted); `keepdims` keeps them as size 1."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    axes = opt_attr_def(INTS)
    keepdims = opt_attr_def(UnitAttr)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def reduced_axes(self) -> tuple[int, ...]:
        return ints_of(self.axes)

    @staticmethod
    def infer_shape(shape: Sequence[int], axes: Sequence[int], keepdims: bool) -> list[int]:
        if keepdims:
            return [1 if i in axes else d for i, d in enumerate(shape)]
        return [d for i, d in enumerate(shape) if i not in axes]

    def verify_(self) -> None:
        x = _shape(self.input)
        axes = self.reduced_axes()
        _check(list(axes) == sorted(set(axes)), "axes must be sorted and unique")
        _check(all(0 <= a < len(x) for a in axes), f"axes {list(axes)} out of range for rank {len(x)}")
        expected = self.infer_shape(x, axes, self.keepdims is not None)
        _check(list(_shape(self.output)) == expected, f"result shape should be {shape_str(expected)}")
        _check(
            _elem(self.output) == self.result_element(),
            f"result element type should be {self.result_element()}",
        )

    def result_element(self) -> Attribute:
        return _elem(self.input)


# Plain reductions; see ReduceOp.


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    """Sum over `axes`.

    ```mlir
    %s = graph.reduce_sum %x {axes = array<i64: 1>, keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
    """

    name = "graph.reduce_sum"


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    """Arithmetic mean over `axes`.

    ```mlir
    %s = graph.reduce_mean %x {axes = array<i64: 1>, keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
    """

    name = "graph.reduce_mean"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    """Maximum over `axes`.

    ```mlir
    %s = graph.reduce_max %x {axes = array<i64: 1>, keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
    """

    name = "graph.reduce_max"


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    """Minimum over `axes`.

    ```mlir
    %s = graph.reduce_min %x {axes = array<i64: 1>, keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
    """

    name = "graph.reduce_min"


@irdl_op_definition
class ReduceProdOp(ReduceOp):
    """Product over `axes`.

    ```mlir
    %s = graph.reduce_prod %x {axes = array<i64: 1>, keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
    """

    name = "graph.reduce_prod"


class ArgReduceOp(ReduceOp):
    """Base of arg-reductions over one axis; the result holds i64 indices."""

    select_last_index = opt_attr_def(UnitAttr)

    def verify_(self) -> None:
        _check(len(self.reduced_axes()) == 1, f"{self.name} reduces exactly one axis")
        super().verify_()

    def result_element(self) -> Attribute:
        return i64


@irdl_op_definition
class ArgMaxOp(ArgReduceOp):
    """Index of the maximum along one axis (first occurrence unless `select_last_index`).

    ```mlir
    %i = graph.argmax %x {axes = array<i64: 1>} : tensor<4x10xf32> -> tensor<4xi64>
    ```
    """

    name = "graph.argmax"


@irdl_op_definition
class ArgMinOp(ArgReduceOp):
    """Index of the minimum along one axis (first occurrence unless `select_last_index`).

    ```mlir
    %i = graph.argmin %x {axes = array<i64: 1>, keepdims} : tensor<4x10xf32> -> tensor<4x1xi64>
    ```
    """

    name = "graph.argmin"


# --------------------------------------------------------------------------- data movement


@irdl_op_definition
class ReshapeOp(IRDLOperation):
    """Reinterprets the elements (row-major) with the static result shape.

    ```mlir
    %y = graph.reshape %x : tensor<1x12x64xf32> -> tensor<1x768xf32>
    ```
    """

    name = "graph.reshape"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def __init__(self, input: SSAValue, shape: Sequence[int]):
        super().__init__(operands=[input], result_types=[TensorType(_elem(input), list(shape))])

    def verify_(self) -> None:
        _check(_elem(self.input) == _elem(self.output), "reshape keeps the element type")
        n_in, n_out = _count(_shape(self.input)), _count(_shape(self.output))
        _check(n_in == n_out, f"reshape changes the element count: {n_in} -> {n_out}")


def _count(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


@irdl_op_definition
class TransposeOp(IRDLOperation):
    """Permutes dims: result dim i is input dim perm[i].

    ```mlir
    %y = graph.transpose %x {perm = array<i64: 0, 2, 1, 3>}
       : tensor<1x128x12x64xf32> -> tensor<1x12x128x64xf32>
    ```
    """

    name = "graph.transpose"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    perm = opt_attr_def(INTS)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def __init__(self, input: SSAValue, perm: Sequence[int]):
        shape = [_shape(input)[p] for p in perm]
        super().__init__(
            operands=[input],
            result_types=[TensorType(_elem(input), shape)],
            attributes={"perm": ints_attr(perm)},
        )

    def permutation(self) -> tuple[int, ...]:
        return ints_of(self.perm, reversed(range(len(_shape(self.input)))))

    def verify_(self) -> None:
        x, perm = _shape(self.input), self.permutation()
        _check(
            sorted(perm) == list(range(len(x))),
            f"perm {list(perm)} is not a permutation of rank {len(x)}",
        )
        expected = TensorType(_elem(self.input), [x[p] for p in perm])
        _check(self.output.type == expected, f"result type should be {expected}")


@irdl_op_definition
class ConcatOp(IRDLOperation):
    """Joins tensors along `axis` (non-negative); other dims must match.

    ```mlir
    %y = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x8xf32>, tensor<1x4xf32>) -> tensor<1x12xf32>
    ```
    """

    name = "graph.concat"
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    axis = opt_attr_def(IntegerAttr)
    traits = traits_def(Pure())
    assembly_format = "$inputs attr-dict `:` `(` type($inputs) `)` `->` type($output)"

    def __init__(self, inputs: Sequence[SSAValue], axis: int):
        shape = list(_shape(inputs[0]))
        shape[axis] = sum(_shape(v)[axis] for v in inputs)
        super().__init__(
            operands=[list(inputs)],
            result_types=[TensorType(_elem(inputs[0]), shape)],
            attributes={"axis": IntegerAttr(axis, i64)},
        )

    def verify_(self) -> None:
        _check(len(self.inputs) > 0, "concat needs at least one input")
        first = _shape(self.inputs[0])
        axis = self.axis.value.data if self.axis is not None else 0
        _check(0 <= axis < len(first), f"axis {axis} out of range for rank {len(first)}")
        for value in self.inputs:
            s = _shape(value)
            _check(_elem(value) == _elem(self.inputs[0]), "concat inputs need one element type")
            _check(
                len(s) == len(first)
                and all(a == b for i, (a, b) in enumerate(zip(s, first, strict=True)) if i != axis),
                f"{shape_str(s)} and {shape_str(first)} differ outside axis {axis}",
            )
        expected = list(first)
        expected[axis] = sum(_shape(v)[axis] for v in self.inputs)
        _check(list(_shape(self.output)) == expected, f"result shape should be {shape_str(expected)}")


@irdl_op_definition
class SliceOp(IRDLOperation):
    """Strided slice with one (start, step) per dim, normalised: start in range, step != 0;
    the result shape gives the element count per dim, as in `tensor.extract_slice`.

    ```mlir
    %y = graph.slice %x {starts = array<i64: 0, 2>, steps = array<i64: 1, 2>}
       : tensor<4x10xf32> -> tensor<4x4xf32>
    ```
    """

    name = "graph.slice"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    starts = opt_attr_def(INTS)
    steps = opt_attr_def(INTS)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def verify_(self) -> None:
        x, out = _shape(self.input), _shape(self.output)
        starts, steps = ints_of(self.starts, [0] * len(x)), ints_of(self.steps, [1] * len(x))
        _check(len(starts) == len(x) == len(steps) == len(out), "starts/steps need one value per dim")
        _check(_elem(self.input) == _elem(self.output), "slice keeps the element type")
        for dim, start, step, count in zip(x, starts, steps, out, strict=True):
            _check(step != 0, "steps must be non-zero")
            if count == 0:
                continue
            last = start + (count - 1) * step
            _check(
                0 <= start < dim and 0 <= last < dim,
                f"start {start}, step {step}, count {count}: indices {start}..{last} leave [0, {dim})",
            )


@irdl_op_definition
class SplitOp(IRDLOperation):
    """Splits along `axis` into consecutive pieces, sized by the result types.

    ```mlir
    %q, %k, %v = graph.split %x {axis = 2 : i64}
       : tensor<1x128x1152xf32> -> tensor<1x128x384xf32>, tensor<1x128x384xf32>, tensor<1x128x384xf32>
    ```
    """

    name = "graph.split"
    input = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    axis = opt_attr_def(IntegerAttr)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($outputs)"

    def verify_(self) -> None:
        x = _shape(self.input)
        axis = self.axis.value.data if self.axis is not None else 0
        _check(0 <= axis < len(x), f"axis {axis} out of range for rank {len(x)}")
        total = 0
        for value in self.outputs:
            s = _shape(value)
            _check(_elem(value) == _elem(self.input), "split pieces keep the element type")
            _check(
                len(s) == len(x)
                and all(a == b for i, (a, b) in enumerate(zip(s, x, strict=True)) if i != axis),
                "split pieces must match the input outside the axis",
            )
            total += s[axis]
        _check(total == x[axis], f"pieces sum to {total} along axis {axis}, input has {x[axis]}")


@irdl_op_definition
class BroadcastOp(IRDLOperation):
    """Broadcasts (numpy rules) to the static result shape (ONNX Expand).

    ```mlir
    %y = graph.broadcast %x : tensor<1x128xf32> -> tensor<4x128xf32>
    ```
    """

    name = "graph.broadcast"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def verify_(self) -> None:
        x, out = _shape(self.input), _shape(self.output)
        try:
            ok = broadcast_shapes(x, out) == out
        except ValueError:
            ok = False
        _check(ok, f"{shape_str(x)} does not broadcast to {shape_str(out)}")
        _check(_elem(self.input) == _elem(self.output), "broadcast keeps the element type")


@irdl_op_definition
class TileOp(IRDLOperation):
    """Repeats the input `repeats[i]` times along dim i.

    ```mlir
    %y = graph.tile %x {repeats = array<i64: 2, 1>} : tensor<3x4xf32> -> tensor<6x4xf32>
    ```
    """

    name = "graph.tile"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    repeats = opt_attr_def(INTS)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def verify_(self) -> None:
        x, reps = _shape(self.input), ints_of(self.repeats)
        _check(
            len(reps) == len(x) and all(r >= 0 for r in reps),
            "repeats needs one value >= 0 per dim",
        )
        _check(_elem(self.input) == _elem(self.output), "tile keeps the element type")
        expected = [d * r for d, r in zip(x, reps, strict=True)]
        _check(list(_shape(self.output)) == expected, f"result shape should be {shape_str(expected)}")


@irdl_op_definition
class PadOp(IRDLOperation):
    """Pads each dim by (begin, end) amounts: `pads` = all begins, then all ends (ONNX order).
    Mode `constant` (with `value`), `reflect` or `edge`.

    ```mlir
    %y = graph.pad %x {pads = array<i64: 0, 1, 0, 1>, mode = "constant", value = 0.0 : f64}
       : tensor<2x3xf32> -> tensor<2x5xf32>
    ```
    """

    name = "graph.pad"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    pads = opt_attr_def(INTS)
    mode = opt_attr_def(StringAttr)
    value = opt_attr_def(FloatAttr)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def pad_mode(self) -> str:
        return self.mode.data if self.mode is not None else "constant"

    def verify_(self) -> None:
        x, pads = _shape(self.input), ints_of(self.pads)
        _check(len(pads) == 2 * len(x), f"pads needs {2 * len(x)} values")
        _check(
            self.pad_mode() in ("constant", "reflect", "edge"),
            f"unknown pad mode '{self.pad_mode()}'",
        )
        expected = [d + pads[i] + pads[i + len(x)] for i, d in enumerate(x)]
        _check(all(e >= 0 for e in expected), "negative pads remove more than the dim holds")
        _check(_elem(self.input) == _elem(self.output), "pad keeps the element type")
        _check(list(_shape(self.output)) == expected, f"result shape should be {shape_str(expected)}")


def _check_indices(indices: SSAValue) -> None:
    """Gather-style indices are an integer tensor, not a boolean one."""
    element = _elem(indices)
    _check(
        isinstance(element, IntegerType) and not is_bool(element),
        f"indices must be an integer tensor (not i1), got {indices.type}",
    )


class IndexedOp(IRDLOperation):
    """Base of the gathers: `input`, integer `indices`, one result, one syntax."""

    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input `,` $indices attr-dict `:` type($input) `,` type($indices) `->` type($output)"


@irdl_op_definition
class GatherOp(IndexedOp):
    """Takes slices of `input` along `axis` at the (possibly negative) integer `indices`;
    result shape = input[:axis] + indices + input[axis+1:]. Embedding lookups use axis 0.

    ```mlir
    %e = graph.gather %table, %ids {axis = 0 : i64}
       : tensor<30522x384xf32>, tensor<1x128xi64> -> tensor<1x128x384xf32>
    ```
    """

    name = "graph.gather"
    axis = opt_attr_def(IntegerAttr)

    def verify_(self) -> None:
        x, idx = _shape(self.input), _shape(self.indices)
        axis = self.axis.value.data if self.axis is not None else 0
        _check(0 <= axis < len(x), f"axis {axis} out of range for rank {len(x)}")
        _check_indices(self.indices)
        expected = TensorType(_elem(self.input), [*x[:axis], *idx, *x[axis + 1 :]])
        _check(self.output.type == expected, f"result type should be {expected}")


@irdl_op_definition
class GatherNDOp(IndexedOp):
    """ONNX GatherND: gathers slices of `input` addressed by the last dim of `indices`.

    The first `batch_dims` (b) dims of `input` and `indices` are shared batch dims; each
    `indices[..., :]` row holds k (1 <= k <= rank(input) - b) possibly negative coordinates
    into the next k dims of `input`. Result shape = indices[:-1] + input[b+k:].
    Picking one token's hidden state per sequence (rows [batch, position]):

    ```mlir
    %h = graph.gather_nd %x, %idx {batch_dims = 0 : i64}
       : tensor<2x16x64xf32>, tensor<2x2xi64> -> tensor<2x64xf32>
    ```
    """

    name = "graph.gather_nd"
    batch_dims = opt_attr_def(IntegerAttr)

    def batch_rank(self) -> int:
        return self.batch_dims.value.data if self.batch_dims is not None else 0

    @staticmethod
    def infer_shape(x: Sequence[int], idx: Sequence[int], batch_dims: int) -> list[int]:
        """The result shape, or a VerifyException naming the rule that `x`/`idx` break."""
        _check(
            0 <= batch_dims < min(len(x), len(idx)),
            f"batch_dims {batch_dims} must be in [0, min(rank(input), rank(indices)) = "
            f"{min(len(x), len(idx))})",
        )
        _check(
            tuple(x[:batch_dims]) == tuple(idx[:batch_dims]),
            f"batch dims differ: input {shape_str(x[:batch_dims])}, indices {shape_str(idx[:batch_dims])}",
        )
        k = idx[-1]
        _check(
            1 <= k <= len(x) - batch_dims,
            f"indices' last dim {k} must be in [1, {len(x) - batch_dims}] (rank(input) - batch_dims)",
        )
        return [*idx[:-1], *x[batch_dims + k :]]

    def verify_(self) -> None:
        _check_indices(self.indices)
        shape = self.infer_shape(_shape(self.input), _shape(self.indices), self.batch_rank())
        expected = TensorType(_elem(self.input), shape)
        _check(self.output.type == expected, f"result type should be {expected}")


Graph = Dialect(
    "graph",
    [
        ConstantOp,
        NegOp, AbsOp, SignOp, ExpOp, LogOp, SqrtOp, ReciprocalOp, TanhOp, SigmoidOp, ReluOp,
        ErfOp, SinOp, CosOp, FloorOp, CeilOp, RoundOp, SoftplusOp, SoftsignOp, HardSwishOp,
        NotOp, LeakyReluOp, EluOp, SeluOp, HardSigmoidOp, ClipOp, GeluOp,
        AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, ModOp, PReluOp, AndOp, OrOp, XorOp,
        EqualOp, LessOp, LessEqualOp, GreaterOp, GreaterEqualOp, WhereOp, CastOp,
        QuantizeOp, DequantizeOp,
        MatMulOp, ConvOp, MaxPoolOp, AvgPoolOp, BatchNormOp, LayerNormOp, SoftmaxOp, LogSoftmaxOp,
        AttentionOp,
        ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp, ArgMaxOp, ArgMinOp,
        ReshapeOp, TransposeOp, ConcatOp, SliceOp, SplitOp, BroadcastOp, TileOp, PadOp, GatherOp,
        GatherNDOp,
    ],
    [],
)  # fmt: skip
