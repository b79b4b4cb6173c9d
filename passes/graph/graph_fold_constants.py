"""`graph-fold-constants`: evaluate graph ops whose operands are all constants."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from aitc.analysis.graph_matching import constant_array, name_hint, new_constant
from aitc.dialects import graph
from aitc.interp.graph import KERNELS, evaluate
from aitc.types import numpy_dtype

DEFAULT_MAX_BYTES = 1 << 26
"""Largest total result size (bytes) that folding may materialise as new constants."""


def _result_bytes(op: Operation) -> int | None:
    """Total size of `op`'s tensor results in bytes, or None if a result is not a tensor."""
    total = 0
    for result in op.results:
        type_ = result.type
        if not isinstance(type_, TensorType):
            return None
        try:
            itemsize = numpy_dtype(type_.get_element_type()).itemsize
        except TypeError:
            return None
        total += math.prod(type_.get_shape()) * itemsize
    return total


def _foldable(op: Operation, max_bytes: int) -> bool:
    if op.dialect_name() != "graph" or isinstance(op, graph.ConstantOp) or not op.operands:
        return False
    if type(op) not in KERNELS:
        return False
    if not all(isinstance(v.owner, graph.ConstantOp) for v in op.operands):
        return False
    size = _result_bytes(op)
    return size is not None and size <= max_bytes


def _result_hints(op: Operation) -> list[str]:
    """One name per result: the op's name if it has one result, else each result's SSA name."""
    base = name_hint(op)
    if len(op.results) == 1:
        return [base]
    return [r.name_hint or f"{base}_{i}" for i, r in enumerate(op.results)]


@dataclass
class FoldConstantOperands(RewritePattern):
    """Replaces a graph op whose operands are all `graph.constant` by constants of its results.

    This pattern looks at every op rather than one op class (it does not use
    `op_type_rewrite_pattern`): folding is generic because the values come from the one
    reference kernel of each op, `aitc.interp.graph.evaluate`.
    """

    max_bytes: int

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not _foldable(op, self.max_bytes):
            return
        arrays = [constant_array(v) for v in op.operands]
        try:
            results = evaluate(op, arrays)
        except (ArithmeticError, IndexError, ValueError):
            return  # e.g. an out-of-range gather: leave it to fail at run time, where it belongs
        hints = _result_hints(op)
        constants = [
            new_constant(np.asarray(array), hint, op.location)
            for hint, array in zip(hints, results, strict=True)
        ]
        rewriter.replace(op, constants, [c.output for c in constants])


@dataclass(frozen=True)
class GraphFoldConstantsPass(ModulePass):
    """Folds graph ops whose operands are all constants into new `graph.constant` ops.

    Input:
      Any module with graph ops.
    Output:
      Every graph op (other than `graph.constant`) whose operands are all `graph.constant` and
      whose results total at most `max-bytes` bytes is replaced by one `graph.constant` per
      result, computed by `aitc.interp.graph.evaluate`; constants left unused are erased.
      New constants are named after the folded op's location (or its SSA name), so their
      `dense_resource` keys stay readable (`fc1_bias_0a1b2c3d4e5f`).
    Invariants:
      Values are bit-identical to what the reference interpreter computes for the original op.
      Ops whose kernel raises (e.g. an out-of-range gather) and ops without a reference kernel
      are kept. Nothing outside the graph dialect is touched.
    """

    name = "graph-fold-constants"

    max_bytes: int = DEFAULT_MAX_BYTES

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([FoldConstantOperands(self.max_bytes)]),
        ).rewrite_module(op)
