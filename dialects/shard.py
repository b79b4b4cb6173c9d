"""The `shard` dialect: a grid of cores, sharding annotations and collectives (graph level, SPMD).

Modelled on MLIR's upstream `shard` dialect (formerly `mesh`), with the same syntax, so tests
read like upstream's:

    shard.grid @cores(shape = 4)
    func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
      %s = shard.sharding @cores split_axes = [[], [0]] : !shard.sharding
      %y = shard.shard %x to %s : tensor<8x16xf32>          // %x, split by columns over 4 cores
      ...
    }

Two views of the same ops:

- **Annotated (global) view**: tensors have their full shapes; `shard.shard` only says how a
  value is (or should be) split. The graph interpreter runs such a module as if unsharded.
- **SPMD (per-core) view**, after partitioning: every core runs the same function on its own
  shard; tensors have per-core shapes and the collectives combine them
  (`aitc/interp/shard.py`'s `run_spmd` runs all cores and the collectives).

Collectives act on groups of cores: those that share their coordinates on every grid axis *not*
in `grid_axes`; within a group, cores are ordered by their coordinates on `grid_axes`, the first
listed axis most significant. An empty `grid_axes` makes groups of one core (the op is a copy).

Static shapes only (aitc targets have a fixed number of cores): a dynamic grid (`?`) is refused.
A tensor dim split over a group must divide evenly, or say how it is split unevenly with
`sharded_dims_offsets` (the start of each core's part, then the dim size).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import ClassVar, TypeGuard

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IndexType,
    IntegerType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from aitc.dialects.graph import INTS, ints_attr, ints_of

REDUCTIONS = ("sum", "max", "min", "prod")
"""The reductions of all_reduce and reduce_scatter."""


def _parse_ints(parser: Parser) -> list[int]:
    """`[1, 0]` (possibly empty)."""
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)


def _print_ints(printer: Printer, values: Sequence[int]) -> None:
    printer.print_string("[" + ", ".join(str(v) for v in values) + "]")


def _keyword_ints(parser: Parser, keyword: str) -> list[int] | None:
    """`keyword = [..]` if the next token is `keyword`, else None."""
    if parser.parse_optional_keyword(keyword) is None:
        return None
    parser.parse_punctuation("=")
    return _parse_ints(parser)


def _keyword_int(parser: Parser, keyword: str) -> int:
    parser.parse_keyword(keyword)
    parser.parse_punctuation("=")
    return parser.parse_integer()


# --------------------------------------------------------------------------- grid


@irdl_attr_definition
class ShardingType(ParametrizedAttribute, TypeAttribute):
    """`!shard.sharding`: the type of a sharding value (what `shard.sharding` makes)."""

    name = "shard.sharding"


@irdl_op_definition
class GridOp(IRDLOperation):
    """A grid of cores, at the top level of a module; collectives and shardings name it.

    ```mlir
    shard.grid @cores(shape = 2x2)
    ```
    """

    name = "shard.grid"
    sym_name = prop_def(StringAttr)
    shape = prop_def(INTS)
    traits = traits_def(SymbolOpInterface())

    def __init__(self, name: str, shape: Sequence[int]):
        super().__init__(properties={"sym_name": StringAttr(name), "shape": ints_attr(shape)})

    @property
    def dims(self) -> tuple[int, ...]:
        return tuple(ints_of(self.shape))

    @property
    def size(self) -> int:
        return math.prod(self.dims)

    @property
    def text(self) -> str:
        """The shape as written: `2x2`."""
        return "x".join(str(d) for d in self.dims)

    def verify_(self) -> None:
        if not self.dims or any(d < 1 for d in self.dims):
            raise VerifyException(f"shard.grid @{self.sym_name.data}: shape {self.dims} needs dims >= 1")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(f"(shape = {self.text})")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> GridOp:
        name = parser.parse_symbol_name().data
        parser.parse_punctuation("(")
        parser.parse_keyword("shape")
        parser.parse_punctuation("=")
        pos = parser.pos
        dims = _parse_grid_shape(parser)
        if any(d < 0 for d in dims):
            parser.raise_error("aitc grids are static: give every dim of the shape (no '?')", pos, parser.pos)
        parser.parse_punctuation(")")
        op = cls(name, dims)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


def _parse_grid_shape(parser: Parser) -> list[int]:
    """`4`, `2x2`, `2x?` (a '?' is returned as -1). The lexer reads `2x2` as an integer then a
    bare identifier `x2`, so the dims are re-split from the identifiers."""
    dims = [-1 if parser.parse_optional_punctuation("?") else parser.parse_integer(allow_negative=False)]
    while True:
        word = parser.parse_optional_identifier()
        if word is None:
            return dims
        for part in word.split("x")[1:]:
            dims.append(-1 if part == "" else _dim(parser, part))
        if word.endswith("x") and parser.parse_optional_punctuation("?") is not None:
            dims[-1] = -1


def _dim(parser: Parser, text: str) -> int:
    if not text.isdigit():
        parser.raise_error(f"expected a grid dim, got '{text}'")
    return int(text)


def _module_of(op: Operation) -> ModuleOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, ModuleOp):
        parent = parent.parent_op()
    return parent


def grid_of(op: Operation, name: str) -> GridOp | None:
    """The `shard.grid @name` at the top level of the module around `op`."""
    module = _module_of(op)
    if module is None:
        return None
    for top in module.body.block.ops:
        if isinstance(top, GridOp) and top.sym_name.data == name:
            return top
    return None


def _grid_name(attr: SymbolRefAttr) -> str:
    return attr.root_reference.data


def _required_grid(op: Operation, attr: SymbolRefAttr) -> GridOp | None:
    """The grid `op` names; None when `op` is not in a module yet (verified later)."""
    grid = grid_of(op, _grid_name(attr))
    if grid is None and _module_of(op) is not None:
        raise VerifyException(f"{op.name}: no shard.grid @{_grid_name(attr)} in the module")
    return grid


def check_axes(op_name: str, axes: Sequence[int], grid: GridOp) -> None:
    """Grid axes must exist and appear once."""
    bad = [a for a in axes if not 0 <= a < len(grid.dims)]
    if bad:
        raise VerifyException(
            f"{op_name}: grid axes {bad} do not exist in @{grid.sym_name.data} ({grid.text})"
        )
    if len(set(axes)) != len(axes):
        raise VerifyException(f"{op_name}: grid axes {list(axes)} repeat an axis")


def group_size(grid: GridOp, axes: Sequence[int]) -> int:
    """How many cores share a collective over `axes` (1 for no axes)."""
    return math.prod(grid.dims[a] for a in axes)


# --------------------------------------------------------------------------- sharding


@irdl_op_definition
class ShardingOp(IRDLOperation):
    """A sharding: for each tensor dim, the grid axes it is split over (`[]`: not split).
    Axes not named anywhere replicate the tensor. `sharded_dims_offsets` gives uneven splits:
    for each split dim, the start of every core's part and then the dim size. `halo_sizes`
    (upstream's name) widens every core's part of each split dim by `lo` elements before it
    and `hi` after it (its neighbours' elements; zeros beyond the tensor's ends), what a
    convolution split along a spatial dim reads.

    ```mlir
    shard.grid @cores(shape = 4)
    %s = shard.sharding @cores split_axes = [[0], []] : !shard.sharding
    %u = shard.sharding @cores split_axes = [[0]] sharded_dims_offsets = [0, 3, 6, 9, 10] : !shard.sharding
    %h = shard.sharding @cores split_axes = [[], [], [0], []] halo_sizes = [1, 1] : !shard.sharding
    ```
    """

    name = "shard.sharding"
    grid = prop_def(SymbolRefAttr)
    split_axes = prop_def(ArrayAttr)
    sharded_dims_offsets = opt_prop_def(INTS)
    halo_sizes = opt_prop_def(INTS)
    result = result_def(ShardingType)
    traits = traits_def(Pure())

    def __init__(
        self,
        grid: str,
        split_axes: Sequence[Sequence[int]],
        offsets: Sequence[int] | None = None,
        halo: Sequence[int] | None = None,
    ):
        properties: dict[str, Attribute] = {
            "grid": SymbolRefAttr(grid),
            "split_axes": ArrayAttr([ints_attr(axes) for axes in split_axes]),
        }
        if offsets is not None:
            properties["sharded_dims_offsets"] = ints_attr(offsets)
        if halo is not None:
            properties["halo_sizes"] = ints_attr(halo)
        super().__init__(properties=properties, result_types=[ShardingType()])

    @property
    def halo(self) -> tuple[int, int] | None:
        """(lo, hi) of the split dim's halo (None: no halo)."""
        if self.halo_sizes is None:
            return None
        lo, hi = ints_of(self.halo_sizes)[:2]
        return lo, hi

    @property
    def axes(self) -> list[list[int]]:
        """Grid axes per tensor dim."""
        return [list(ints_of(a)) for a in self.split_axes.data if _is_int_list(a)]

    @property
    def offsets(self) -> list[int] | None:
        return list(ints_of(self.sharded_dims_offsets)) if self.sharded_dims_offsets is not None else None

    def verify_(self) -> None:
        if not all(_is_int_list(a) for a in self.split_axes.data):
            raise VerifyException("shard.sharding: split_axes must be lists of integers")
        grid = _required_grid(self, self.grid)
        if grid is None:
            return
        used = [a for axes in self.axes for a in axes]
        check_axes(self.name, used, grid)
        if self.halo_sizes is not None:
            halo = ints_of(self.halo_sizes)
            split = [axes for axes in self.axes if axes]
            if len(halo) != 2 * len(split) or any(h < 0 for h in halo):
                raise VerifyException(
                    f"shard.sharding: halo_sizes needs two values >= 0 (lo, hi) per split dim "
                    f"({len(split)} split), got {list(halo)}"
                )
        offsets = self.offsets
        if offsets is None:
            return
        split = [axes for axes in self.axes if axes]
        expected = sum(group_size(grid, axes) + 1 for axes in split)
        if len(offsets) != expected:
            raise VerifyException(
                f"shard.sharding: sharded_dims_offsets needs {expected} values (each split dim: one start "
                f"per core, then its size), got {len(offsets)}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(_grid_name(self.grid))
        split = ", ".join("[" + ", ".join(str(a) for a in axes) + "]" for axes in self.axes)
        printer.print_string(f" split_axes = [{split}]")
        if self.offsets is not None:
            printer.print_string(" sharded_dims_offsets = ")
            _print_ints(printer, self.offsets)
        if self.halo_sizes is not None:
            printer.print_string(" halo_sizes = ")
            _print_ints(printer, ints_of(self.halo_sizes))
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : !shard.sharding")

    @classmethod
    def parse(cls, parser: Parser) -> ShardingOp:
        grid = parser.parse_symbol_name().data
        parser.parse_keyword("split_axes")
        parser.parse_punctuation("=")
        axes = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: _parse_ints(parser))
        offsets = _keyword_ints(parser, "sharded_dims_offsets")
        halo = _keyword_ints(parser, "halo_sizes")
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        parser.parse_type()
        op = cls(grid, axes, offsets, halo)
        op.attributes.update(attributes)
        return op


def _is_int_list(attr: Attribute) -> TypeGuard[DenseArrayBase[IntegerType]]:
    return isinstance(attr, DenseArrayBase) and attr.elt_type == i64


def _sharding_of(value: SSAValue) -> ShardingOp | None:
    owner = value.owner
    return owner if isinstance(owner, ShardingOp) else None


def dim_parts(size: int, parts: int, offsets: Sequence[int] | None = None) -> list[tuple[int, int]]:
    """(start, stop) of each core's part of a dim of `size` split in `parts`: even, or as
    `offsets` (one start per part, then `size`) say."""
    if offsets is not None:
        return [(offsets[k], offsets[k + 1]) for k in range(parts)]
    step = size // parts
    return [(k * step, (k + 1) * step) for k in range(parts)]


@irdl_op_definition
class ShardOp(IRDLOperation):
    """Annotates `src` with a sharding: the value is split that way from here on (or, with
    `annotate_for_users`, its users want it that way). The result is `src` itself.

    ```mlir
    shard.grid @cores(shape = 4)
    %s = shard.sharding @cores split_axes = [[0]] : !shard.sharding
    %y = shard.shard %x to %s : tensor<8x16xf32>
    ```
    """

    name = "shard.shard"
    src = operand_def(TensorType)
    sharding = operand_def(ShardingType)
    annotate_for_users = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, src: SSAValue, sharding: SSAValue, annotate_for_users: bool = False):
        properties: dict[str, Attribute] = {"annotate_for_users": UnitAttr()} if annotate_for_users else {}
        super().__init__(operands=[src, sharding], result_types=[src.type], properties=properties)

    def verify_(self) -> None:
        if self.result.type != self.src.type:
            raise VerifyException(
                f"shard.shard: result {self.result.type} differs from operand {self.src.type}"
            )
        sharding = _sharding_of(self.sharding)
        grid = grid_of(sharding, _grid_name(sharding.grid)) if sharding is not None else None
        if sharding is None or grid is None:
            return
        assert isinstance(self.src.type, TensorType)
        check_split(self.src.type, sharding, grid)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.src)
        printer.print_string(" to ")
        printer.print_operand(self.sharding)
        if self.annotate_for_users is not None:
            printer.print_string(" annotate_for_users")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)

    @classmethod
    def parse(cls, parser: Parser) -> ShardOp:
        src = parser.parse_unresolved_operand()
        parser.parse_keyword("to")
        sharding = parser.parse_unresolved_operand()
        for_users = parser.parse_optional_keyword("annotate_for_users") is not None
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        src_value, sharding_value = parser.resolve_operands(
            [src, sharding], [type_, ShardingType()], parser.pos
        )
        op = cls(src_value, sharding_value, for_users)
        op.attributes.update(attributes)
        return op


def check_split(type_: TensorType, sharding: ShardingOp, grid: GridOp) -> None:
    """A sharding fits a tensor: no more split dims than the rank, and every split dim divides
    evenly among its cores unless `sharded_dims_offsets` says how it is split."""
    shape, axes = type_.get_shape(), sharding.axes
    if len(axes) > len(shape):
        raise VerifyException(f"shard.shard: {len(axes)} split dims for a rank-{len(shape)} tensor {type_}")
    offsets = sharding.offsets
    cursor = 0
    for dim, dim_axes in enumerate(axes):
        if not dim_axes:
            continue
        parts = group_size(grid, dim_axes)
        if offsets is None and shape[dim] % parts:
            raise VerifyException(
                f"shard.shard: dim {dim} of {type_} has {shape[dim]} elements, which do not divide among "
                f"{parts} cores; split another dim, use {_divisors(shape[dim], parts)} cores, or give "
                f"sharded_dims_offsets for an uneven split"
            )
        if offsets is not None:
            _check_offsets(offsets[cursor : cursor + parts + 1], shape[dim], dim)
            cursor += parts + 1


def _divisors(size: int, parts: int) -> str:
    fitting = [d for d in range(1, parts + 1) if size % d == 0]
    return " or ".join(str(d) for d in fitting[-2:])


def _check_offsets(offsets: Sequence[int], size: int, dim: int) -> None:
    starts_ok = offsets[0] == 0 and all(a <= b for a, b in itertools.pairwise(offsets))
    if not starts_ok or offsets[-1] != size:
        raise VerifyException(
            f"shard.shard: sharded_dims_offsets {list(offsets)} for dim {dim} must rise from 0 to its "
            f"size {size}"
        )


# --------------------------------------------------------------------------- collectives


class CollectiveOp(IRDLOperation):
    """Base of the collectives: `input` on the cores of `grid_axes` of `grid` -> `result`."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    grid = prop_def(SymbolRefAttr)
    grid_axes = prop_def(INTS)
    INT_PROPS: ClassVar[tuple[str, ...]] = ()
    """The integer properties printed after grid_axes, in order (`gather_axis = 1`)."""

    def __init__(self, input: SSAValue, grid: str, grid_axes: Sequence[int], result_type: Attribute, **ints):
        properties: dict[str, Attribute] = {"grid": SymbolRefAttr(grid), "grid_axes": ints_attr(grid_axes)}
        for key in self.INT_PROPS:
            properties[key] = ints_attr([ints[key]])
        super().__init__(operands=[input], result_types=[result_type], properties=properties)

    @property
    def axes(self) -> list[int]:
        return list(ints_of(self.grid_axes))

    def int_prop(self, key: str) -> int:
        attr = self.properties[key]
        assert _is_int_list(attr)  # the property's constraint
        return ints_of(attr)[0]

    @property
    def in_shape(self) -> tuple[int, ...]:
        assert isinstance(self.input.type, TensorType)
        return tuple(self.input.type.get_shape())

    @property
    def out_shape(self) -> tuple[int, ...]:
        assert isinstance(self.result.type, TensorType)
        return tuple(self.result.type.get_shape())

    def expected_shape(self, parts: int) -> tuple[int, ...] | str:
        """The result shape for a group of `parts` cores, or why there is none."""
        return self.in_shape

    def verify_(self) -> None:
        grid = _required_grid(self, self.grid)
        if grid is None:
            return
        check_axes(self.name, self.axes, grid)
        for key in self.INT_PROPS:
            if key.endswith("_axis") and not 0 <= self.int_prop(key) < len(self.in_shape):
                raise VerifyException(
                    f"{self.name}: {key} {self.int_prop(key)} is not a dim of {self.input.type}"
                )
        expected = self.expected_shape(group_size(grid, self.axes))
        if isinstance(expected, str):
            raise VerifyException(f"{self.name}: {expected}")
        if expected != self.out_shape:
            raise VerifyException(
                f"{self.name}: the result of {self.input.type} over {group_size(grid, self.axes)} cores has "
                f"shape {list(expected)}, not {list(self.out_shape)}"
            )

    def print_extra(self, printer: Printer) -> None:
        for key in self.INT_PROPS:
            printer.print_string(f" {key} = {self.int_prop(key)}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(" on ")
        printer.print_symbol_name(_grid_name(self.grid))
        if self.axes:
            printer.print_string(" grid_axes = ")
            _print_ints(printer, self.axes)
        self.print_extra(printer)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse_extra(cls, parser: Parser) -> dict[str, object]:
        return {key: _keyword_int(parser, key) for key in cls.INT_PROPS}

    @classmethod
    def parse(cls, parser: Parser) -> CollectiveOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_keyword("on")
        grid = parser.parse_symbol_name().data
        axes = _keyword_ints(parser, "grid_axes") or []
        extra = cls.parse_extra(parser)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        in_type = parser.parse_type()
        parser.parse_punctuation("->")
        out_type = parser.parse_type()
        (value,) = parser.resolve_operands([operand], [in_type], parser.pos)
        op = cls(value, grid, axes, out_type, **extra)
        op.attributes.update(attributes)
        return op


class ReducingOp(CollectiveOp):
    """A collective that combines the group's values elementwise (`reduction`, default sum)."""

    reduction = opt_prop_def(StringAttr)

    def __init__(self, input: SSAValue, grid: str, grid_axes: Sequence[int], result_type: Attribute, **ints):
        reduction = str(ints.pop("reduction", "sum"))
        super().__init__(input, grid, grid_axes, result_type, **ints)
        if reduction != "sum":
            self.properties["reduction"] = StringAttr(reduction)

    @property
    def kind(self) -> str:
        return self.reduction.data if self.reduction is not None else "sum"

    def verify_(self) -> None:
        if self.kind not in REDUCTIONS:
            raise VerifyException(
                f"{self.name}: reduction '{self.kind}' is not one of {', '.join(REDUCTIONS)}"
            )
        super().verify_()

    def print_extra(self, printer: Printer) -> None:
        super().print_extra(printer)
        if self.kind != "sum":
            printer.print_string(f" reduction = {self.kind}")

    @classmethod
    def parse_extra(cls, parser: Parser) -> dict[str, object]:
        extra = super().parse_extra(parser)
        if parser.parse_optional_keyword("reduction") is not None:
            parser.parse_punctuation("=")
            extra["reduction"] = parser.parse_identifier()
        return extra


@irdl_op_definition
class AllReduceOp(ReducingOp):
    """Every core of a group gets the elementwise reduction of the group's values.

    ```mlir
    shard.grid @cores(shape = 4)
    %y = shard.all_reduce %x on @cores grid_axes = [0] : tensor<8x16xf32> -> tensor<8x16xf32>
    %m = shard.all_reduce %x on @cores grid_axes = [0] reduction = max : tensor<8x16xf32> -> tensor<8x16xf32>
    ```
    """

    name = "shard.all_reduce"
    traits = traits_def(Pure())


@irdl_op_definition
class AllGatherOp(CollectiveOp):
    """Every core of a group gets the group's values concatenated along `gather_axis`, in
    group order.

    ```mlir
    shard.grid @cores(shape = 4)
    %y = shard.all_gather %x on @cores grid_axes = [0] gather_axis = 1 : tensor<8x4xf32> -> tensor<8x16xf32>
    ```
    """

    name = "shard.all_gather"
    gather_axis = prop_def(INTS)
    INT_PROPS: ClassVar[tuple[str, ...]] = ("gather_axis",)
    traits = traits_def(Pure())

    def expected_shape(self, parts: int) -> tuple[int, ...] | str:
        axis, shape = self.int_prop("gather_axis"), list(self.in_shape)
        shape[axis] *= parts
        return tuple(shape)


@irdl_op_definition
class ReduceScatterOp(ReducingOp):
    """The elementwise reduction of the group's values, split along `scatter_axis`: core k of
    the group gets part k.

    ```mlir
    shard.grid @cores(shape = 4)
    %y = shard.reduce_scatter %x on @cores grid_axes = [0] scatter_axis = 0
      : tensor<8x16xf32> -> tensor<2x16xf32>
    ```
    """

    name = "shard.reduce_scatter"
    scatter_axis = prop_def(INTS)
    INT_PROPS: ClassVar[tuple[str, ...]] = ("scatter_axis",)
    traits = traits_def(Pure())

    def expected_shape(self, parts: int) -> tuple[int, ...] | str:
        return _split_shape(self.in_shape, self.int_prop("scatter_axis"), parts)


def _split_shape(shape: Sequence[int], axis: int, parts: int) -> tuple[int, ...] | str:
    if shape[axis] % parts:
        return f"dim {axis} of size {shape[axis]} does not divide among {parts} cores"
    result = list(shape)
    result[axis] //= parts
    return tuple(result)


HALO_FILLS = {"0": 0.0, "-inf": float("-inf")}
"""What `shard.all_slice` may put past a dim's ends (its `fill`): the padding value of the
window op reading the widened part (zeros for a convolution, -inf for a max pool)."""


@irdl_op_definition
class AllSliceOp(CollectiveOp):
    """Core k of a group keeps part k of its (replicated) value along `slice_axis`; nothing is
    sent. With `halo = [lo, hi]`, part k is widened to elements [k w - lo, (k+1) w + hi) of
    the dim (w its size / group size), `fill` where that runs past the dim's ends: the rows a
    window op split along that dim reads, its padding at the two outer cores. `fill` is one of
    HALO_FILLS: "0" (the default, left out; a convolution's padding) or "-inf" (a max pool's).

    ```mlir
    shard.grid @cores(shape = 4)
    %y = shard.all_slice %x on @cores grid_axes = [0] slice_axis = 1 : tensor<8x16xf32> -> tensor<8x4xf32>
    %h = shard.all_slice %x on @cores grid_axes = [0] slice_axis = 2 halo = [1, 1]
      : tensor<1x3x16x16xf32> -> tensor<1x3x6x16xf32>
    %p = shard.all_slice %x on @cores grid_axes = [0] slice_axis = 2 halo = [1, 0] fill = "-inf"
      : tensor<1x3x16x16xf32> -> tensor<1x3x5x16xf32>
    ```
    """

    name = "shard.all_slice"
    slice_axis = prop_def(INTS)
    halo = opt_prop_def(INTS)
    fill = opt_prop_def(StringAttr)
    INT_PROPS: ClassVar[tuple[str, ...]] = ("slice_axis",)
    traits = traits_def(Pure())

    def __init__(
        self,
        input: SSAValue,
        grid: str,
        grid_axes: Sequence[int],
        result_type: Attribute,
        *,
        slice_axis: int,
        halo: Sequence[int] | None = None,
        fill: str = "0",
    ):
        super().__init__(input, grid, grid_axes, result_type, slice_axis=slice_axis)
        if halo is not None and tuple(halo) != (0, 0):
            self.properties["halo"] = ints_attr(halo)
        if fill != "0":
            self.properties["fill"] = StringAttr(fill)

    @property
    def halo_fill(self) -> float:
        """What stands past the dim's ends in a widened part: 0.0 or -inf."""
        return HALO_FILLS[self.fill.data] if self.fill is not None else 0.0

    @property
    def halo_sizes(self) -> tuple[int, int]:
        """(lo, hi): (0, 0) without a halo."""
        if self.halo is None:
            return 0, 0
        lo, hi = ints_of(self.halo)[:2]
        return lo, hi

    def expected_shape(self, parts: int) -> tuple[int, ...] | str:
        if self.halo is not None and (len(ints_of(self.halo)) != 2 or min(ints_of(self.halo)) < 0):
            return f"halo must be [lo, hi], both >= 0, not {list(ints_of(self.halo))}"
        if self.fill is not None and (self.fill.data not in HALO_FILLS or self.halo is None):
            return f'fill "{self.fill.data}" needs a halo and is one of {", ".join(map(repr, HALO_FILLS))}'
        shape = _split_shape(self.in_shape, self.int_prop("slice_axis"), parts)
        if isinstance(shape, str):
            return shape
        widened = list(shape)
        widened[self.int_prop("slice_axis")] += sum(self.halo_sizes)
        return tuple(widened)

    def print_extra(self, printer: Printer) -> None:
        super().print_extra(printer)
        if self.halo is not None:
            printer.print_string(" halo = ")
            _print_ints(printer, ints_of(self.halo))
        if self.fill is not None:
            printer.print_string(f' fill = "{self.fill.data}"')

    @classmethod
    def parse_extra(cls, parser: Parser) -> dict[str, object]:
        extra = super().parse_extra(parser)
        halo = _keyword_ints(parser, "halo")
        if halo is not None:
            extra["halo"] = halo
        if parser.parse_optional_keyword("fill") is not None:
            parser.parse_punctuation("=")
            extra["fill"] = parser.parse_str_literal()
        return extra


@irdl_op_definition
class AllToAllOp(CollectiveOp):
    """Each core splits its value along `split_axis` into one part per group member, sends part
    j to member j, and concatenates what it receives along `concat_axis`, in group order.

    ```mlir
    shard.grid @cores(shape = 4)
    %y = shard.all_to_all %x on @cores grid_axes = [0] split_axis = 1 concat_axis = 0
      : tensor<2x16xf32> -> tensor<8x4xf32>
    ```
    """

    name = "shard.all_to_all"
    split_axis = prop_def(INTS)
    concat_axis = prop_def(INTS)
    INT_PROPS: ClassVar[tuple[str, ...]] = ("split_axis", "concat_axis")
    traits = traits_def(Pure())

    def expected_shape(self, parts: int) -> tuple[int, ...] | str:
        split = _split_shape(self.in_shape, self.int_prop("split_axis"), parts)
        if isinstance(split, str):
            return split
        shape = list(split)
        shape[self.int_prop("concat_axis")] *= parts
        return tuple(shape)


@irdl_op_definition
class BroadcastOp(CollectiveOp):
    """Every core of a group gets the value of the group's `root` core (its coordinates on
    `grid_axes`).

    ```mlir
    shard.grid @cores(shape = 4)
    %y = shard.broadcast %x on @cores grid_axes = [0] root = [0] : tensor<8x16xf32> -> tensor<8x16xf32>
    ```
    """

    name = "shard.broadcast"
    root = prop_def(INTS)
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue, grid: str, grid_axes: Sequence[int], result_type: Attribute, **ints):
        root = ints.pop("root", [0] * len(grid_axes))
        super().__init__(input, grid, grid_axes, result_type)
        self.properties["root"] = ints_attr(root)

    @property
    def root_index(self) -> list[int]:
        return list(ints_of(self.root))

    def verify_(self) -> None:
        super().verify_()
        grid = grid_of(self, _grid_name(self.grid))
        if grid is None:
            return
        root, axes = list(self.root_index), list(self.axes)
        if len(root) != len(axes) or any(not 0 <= r < grid.dims[a] for r, a in zip(root, axes, strict=False)):
            raise VerifyException(
                f"shard.broadcast: root {root} is not a core of grid axes {axes} of "
                f"@{grid.sym_name.data} ({grid.text})"
            )

    def print_extra(self, printer: Printer) -> None:
        printer.print_string(" root = ")
        _print_ints(printer, self.root_index)

    @classmethod
    def parse_extra(cls, parser: Parser) -> dict[str, object]:
        root = _keyword_ints(parser, "root")
        if root is None:
            parser.raise_error("shard.broadcast needs root = [...]")
        return {"root": root}


@irdl_op_definition
class ProcessLinearIndexOp(IRDLOperation):
    """The linear index (row-major over the grid shape) of the core running this code.

    ```mlir
    shard.grid @cores(shape = 2x2)
    %i = shard.process_linear_index on @cores : index
    ```
    """

    name = "shard.process_linear_index"
    grid = prop_def(SymbolRefAttr)
    result = result_def(IndexType)
    traits = traits_def(Pure())

    def __init__(self, grid: str):
        super().__init__(properties={"grid": SymbolRefAttr(grid)}, result_types=[IndexType()])

    def verify_(self) -> None:
        _required_grid(self, self.grid)

    def print(self, printer: Printer) -> None:
        printer.print_string(" on ")
        printer.print_symbol_name(_grid_name(self.grid))
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : index")

    @classmethod
    def parse(cls, parser: Parser) -> ProcessLinearIndexOp:
        parser.parse_keyword("on")
        op = cls(parser.parse_symbol_name().data)
        op.attributes.update(parser.parse_optional_attr_dict())
        parser.parse_punctuation(":")
        parser.parse_type()
        return op


COLLECTIVES: tuple[type[CollectiveOp], ...] = (
    AllReduceOp,
    AllGatherOp,
    ReduceScatterOp,
    AllSliceOp,
    AllToAllOp,
    BroadcastOp,
)

Shard = Dialect(
    "shard",
    [GridOp, ShardingOp, ShardOp, *COLLECTIVES, ProcessLinearIndexOp],
    [ShardingType],
)
