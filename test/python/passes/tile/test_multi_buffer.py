"""Tests of `multi-buffer`: same outputs before and after (tile interpreter) for every trip count
and depth, the IR it builds (buffer count, loop step, epilogue, no modulo), its budget and
its refusals; then plan-memory on the result."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr
from xdsl.utils.exceptions import PassFailedException

from aitc.dialects import tile
from aitc.interp.run import entry_function, random_inputs, run_module
from aitc.ir import make_context, parse_mlir, print_mlir
from aitc.module_target import TARGET_ATTR
from aitc.passes.tile.multi_buffer import DEPTH_ATTR, REASON_ATTR, MultiBufferPass
from aitc.passes.tile.plan_memory import PlanMemoryPass, check_plan

CTX = make_context()
R = 4
"""Rows per tile: the loops step over rows R at a time."""


def _buf(rows: int, cols: int, space: str = "sram") -> str:
    return f'memref<{rows}x{cols}xf32, "{space}">'


def _bounds(trips: int, lb: int, slack: int) -> tuple[int, int, int]:
    """(lb, ub, rows of the input) of a loop stepping by R with `trips` iterations; a `slack`
    below R pulls ub back without changing the trip count (and below lb when trips = 0)."""
    ub = lb + trips * R - slack if trips else lb - slack
    return lb, ub, lb + max(trips, 1) * R


def single(trips: int, lb: int = 0, slack: int = 0, cols: int = 16) -> str:
    """y[i] = 2 * x[i] tile by tile: one loaded buffer, one stored."""
    lb, ub, rows = _bounds(trips, lb, slack)
    x, t = _buf(rows, cols, "dram"), _buf(R, cols)
    return f"""
func.func @main(%x: {x} {{graph.name = "x"}}, %y: {x} {{graph.name = "y", tile.output}}) {{
  %c0 = arith.constant 0 : index
  %lb = arith.constant {lb} : index
  %ub = arith.constant {ub} : index
  %step = arith.constant {R} : index
  tile.kernel "scale" {{
    %a = tile.alloc : {t}
    %b = tile.alloc : {t}
    scf.for %i = %lb to %ub step %step {{
      tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [{R}, {cols}] : {x}, {t}
      tile.binary_imm %a[%c0, %c0] to %b[%c0, %c0] sizes [{R}, {cols}] {{op = "mul", imm = 2.0 : f64}}
          : {t}, {t}
      tile.copy %b[%c0, %c0] to %y[%i, %c0] sizes [{R}, {cols}] : {t}, {x}
    }}
  }}
  func.return
}}"""


def two_loads(trips: int, lb: int = 0, slack: int = 0) -> str:
    """y[i] = x[i] + w[i]: two loaded buffers rotate together."""
    lb, ub, rows = _bounds(trips, lb, slack)
    x, t = _buf(rows, 8, "dram"), _buf(R, 8)
    return f"""
func.func @main(%x: {x} {{graph.name = "x"}}, %w: {x} {{graph.name = "w"}},
                %y: {x} {{graph.name = "y", tile.output}}) {{
  %c0 = arith.constant 0 : index
  %lb = arith.constant {lb} : index
  %ub = arith.constant {ub} : index
  %step = arith.constant {R} : index
  tile.kernel "add" {{
    %a = tile.alloc : {t}
    %c = tile.alloc : {t}
    %b = tile.alloc : {t}
    scf.for %i = %lb to %ub step %step {{
      tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [{R}, 8] : {x}, {t}
      tile.copy %w[%i, %c0] to %c[%c0, %c0] sizes [{R}, 8] : {x}, {t}
      tile.binary %a[%c0, %c0], %c[%c0, %c0] to %b[%c0, %c0] sizes [{R}, 8] {{op = "add"}} : {t}, {t}, {t}
      tile.copy %b[%c0, %c0] to %y[%i, %c0] sizes [{R}, 8] : {t}, {x}
    }}
  }}
  func.return
}}"""


def through_view(trips: int, lb: int = 0, slack: int = 0) -> str:
    """y[i] = -x[i], loading through a view of the tile made before the loop (rotates with it)."""
    lb, ub, rows = _bounds(trips, lb, slack)
    x, y, v, t = (
        f'memref<{rows}x1x16xf32, "dram">',
        _buf(rows, 16, "dram"),
        f'memref<{R}x1x16xf32, "sram">',
        _buf(R, 16),
    )
    return f"""
func.func @main(%x: {x} {{graph.name = "x"}}, %y: {y} {{graph.name = "y", tile.output}}) {{
  %c0 = arith.constant 0 : index
  %lb = arith.constant {lb} : index
  %ub = arith.constant {ub} : index
  %step = arith.constant {R} : index
  tile.kernel "neg" {{
    %a = tile.alloc : {t}
    %b = tile.alloc : {t}
    %v = tile.reshape %a : {t} -> {v}
    scf.for %i = %lb to %ub step %step {{
      tile.copy %x[%i, %c0, %c0] to %v[%c0, %c0, %c0] sizes [{R}, 1, 16] : {x}, {v}
      tile.unary %a[%c0, %c0] to %b[%c0, %c0] sizes [{R}, 16] {{op = "neg"}} : {t}, {t}
      tile.copy %b[%c0, %c0] to %y[%i, %c0] sizes [{R}, 16] : {t}, {y}
    }}
  }}
  func.return
}}"""


def matmul(trips: int, lb: int = 0, slack: int = 0) -> str:
    """y = x @ w over a K loop: both operand tiles rotate, the accumulator carries across."""
    lb, ub, k = _bounds(trips, lb, slack)
    x, w, t, acc, y = (
        _buf(4, k, "dram"),
        _buf(k, 4, "dram"),
        _buf(4, R),
        _buf(4, 4, "acc"),
        _buf(4, 4, "dram"),
    )
    return f"""
func.func @main(%x: {x} {{graph.name = "x"}}, %w: {w} {{graph.name = "w"}},
                %y: {y} {{graph.name = "y", tile.output}}) {{
  %c0 = arith.constant 0 : index
  %lb = arith.constant {lb} : index
  %ub = arith.constant {ub} : index
  %step = arith.constant {R} : index
  tile.kernel "fc" {{
    %lhs = tile.alloc : {t}
    %rhs = tile.alloc : {_buf(R, 4)}
    %acc = tile.alloc : {acc}
    %out = tile.alloc : {_buf(4, 4)}
    scf.for %k = %lb to %ub step %step {{
      tile.copy %x[%c0, %k] to %lhs[%c0, %c0] sizes [4, {R}] : {x}, {t}
      tile.copy %w[%k, %c0] to %rhs[%c0, %c0] sizes [{R}, 4] : {w}, {_buf(R, 4)}
      tile.matmul %lhs[%c0, %c0], %rhs[%c0, %c0] to %acc[%c0, %c0] sizes [4, {R}, 4] {{accumulate}}
          : {t}, {_buf(R, 4)}, {acc}
    }}
    tile.acc_read %acc[%c0, %c0] to %out[%c0, %c0] sizes [4, 4] : {acc}, {_buf(4, 4)}
    tile.copy %out[%c0, %c0] to %y[%c0, %c0] sizes [4, 4] : {_buf(4, 4)}, {y}
  }}
  func.return
}}"""


def peeled(trips: int, lb: int = 0, slack: int = 0) -> str:
    """y = -x with the first tile peeled before the loop and a 2-row remainder after it, all on
    the same tiles: the peel and the remainder rotate along with the loop."""
    lb, ub, _ = _bounds(trips, lb, slack)
    rest = lb + R + trips * R
    rows = rest + 2
    x, t = _buf(rows, 8, "dram"), _buf(R, 8)
    return f"""
func.func @main(%x: {x} {{graph.name = "x"}}, %y: {x} {{graph.name = "y", tile.output}}) {{
  %c0 = arith.constant 0 : index
  %peel = arith.constant {lb} : index
  %lb = arith.constant {lb + R} : index
  %ub = arith.constant {ub + R} : index
  %rest = arith.constant {rest} : index
  %step = arith.constant {R} : index
  tile.kernel "neg" {{
    %a = tile.alloc : {t}
    %b = tile.alloc : {t}
    tile.copy %x[%peel, %c0] to %a[%c0, %c0] sizes [{R}, 8] : {x}, {t}
    tile.unary %a[%c0, %c0] to %b[%c0, %c0] sizes [{R}, 8] {{op = "neg"}} : {t}, {t}
    tile.copy %b[%c0, %c0] to %y[%peel, %c0] sizes [{R}, 8] : {t}, {x}
    scf.for %i = %lb to %ub step %step {{
      tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [{R}, 8] : {x}, {t}
      tile.unary %a[%c0, %c0] to %b[%c0, %c0] sizes [{R}, 8] {{op = "neg"}} : {t}, {t}
      tile.copy %b[%c0, %c0] to %y[%i, %c0] sizes [{R}, 8] : {t}, {x}
    }}
    tile.copy %x[%rest, %c0] to %a[%c0, %c0] sizes [2, 8] : {x}, {t}
    tile.unary %a[%c0, %c0] to %b[%c0, %c0] sizes [2, 8] {{op = "neg"}} : {t}, {t}
    tile.copy %b[%c0, %c0] to %y[%rest, %c0] sizes [2, 8] : {t}, {x}
  }}
  func.return
}}"""


def acc_tiles(trips: int, lb: int = 0, slack: int = 0) -> str:
    """y[:, j] = x @ w[:, j] column tile by column tile: the rhs tile, the accumulator (matrix ->
    vector) and the output tile (vector -> DMA) all rotate."""
    lb, ub, cols = _bounds(trips, lb, slack)
    x, w, y = _buf(4, R, "dram"), _buf(R, cols, "dram"), _buf(4, cols, "dram")
    lhs, rhs, acc, out = _buf(4, R), _buf(R, 4), _buf(4, 4, "acc"), _buf(4, 4)
    return f"""
func.func @main(%x: {x} {{graph.name = "x"}}, %w: {w} {{graph.name = "w"}},
                %y: {y} {{graph.name = "y", tile.output}}) {{
  %c0 = arith.constant 0 : index
  %lb = arith.constant {lb} : index
  %ub = arith.constant {ub} : index
  %step = arith.constant {R} : index
  tile.kernel "fc" {{
    %lhs = tile.alloc : {lhs}
    %rhs = tile.alloc : {rhs}
    %acc = tile.alloc : {acc}
    %out = tile.alloc : {out}
    tile.copy %x[%c0, %c0] to %lhs[%c0, %c0] sizes [4, {R}] : {x}, {lhs}
    scf.for %j = %lb to %ub step %step {{
      tile.copy %w[%c0, %j] to %rhs[%c0, %c0] sizes [{R}, 4] : {w}, {rhs}
      tile.matmul %lhs[%c0, %c0], %rhs[%c0, %c0] to %acc[%c0, %c0] sizes [4, {R}, 4] : {lhs}, {rhs}, {acc}
      tile.acc_read %acc[%c0, %c0] to %out[%c0, %c0] sizes [4, 4] {{activation = "relu"}} : {acc}, {out}
      tile.copy %out[%c0, %c0] to %y[%c0, %j] sizes [4, 4] : {out}, {y}
    }}
  }}
  func.return
}}"""


def acc_blocks(trips: int, lb: int = 0, slack: int = 0) -> str:
    """y[:, j-tile] = x @ w[:, j-tile] with the accumulator filled column block by column block
    in an inner loop (first a plain matmul, then an accumulating one at the same %n, as a conv's
    positions): the accumulator rotates in the outer loop although the inner loop's writes are
    at a varying index."""
    lb, ub, cols = _bounds(trips, lb, slack)
    x, w, y = _buf(4, 2 * R, "dram"), _buf(2 * R, cols * 4, "dram"), _buf(4, cols * 4, "dram")
    lhs, rhs, acc, out = _buf(4, 2 * R), _buf(2 * R, 16), _buf(4, 16, "acc"), _buf(4, 16)
    return f"""
func.func @main(%x: {x} {{graph.name = "x"}}, %w: {w} {{graph.name = "w"}},
                %y: {y} {{graph.name = "y", tile.output}}) {{
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %lb = arith.constant {lb} : index
  %ub = arith.constant {ub} : index
  %step = arith.constant {R} : index
  tile.kernel "fc" {{
    %lhs = tile.alloc : {lhs}
    %rhs = tile.alloc : {rhs}
    %acc = tile.alloc : {acc}
    %out = tile.alloc : {out}
    tile.copy %x[%c0, %c0] to %lhs[%c0, %c0] sizes [4, {2 * R}] : {x}, {lhs}
    scf.for %j = %lb to %ub step %step {{
      %col = arith.muli %j, %c4 : index
      tile.copy %w[%c0, %col] to %rhs[%c0, %c0] sizes [{2 * R}, 16] : {w}, {rhs}
      scf.for %n = %c0 to %c16 step %c4 {{
        tile.matmul %lhs[%c0, %c0], %rhs[%c0, %n] to %acc[%c0, %n] sizes [4, {R}, 4] : {lhs}, {rhs}, {acc}
        tile.matmul %lhs[%c0, %c4], %rhs[%c4, %n] to %acc[%c0, %n] sizes [4, {R}, 4] {{accumulate}}
            : {lhs}, {rhs}, {acc}
      }}
      tile.acc_read %acc[%c0, %c0] to %out[%c0, %c0] sizes [4, 16] {{activation = "relu"}} : {acc}, {out}
      tile.copy %out[%c0, %c0] to %y[%c0, %col] sizes [4, 16] : {out}, {y}
    }}
  }}
  func.return
}}"""


def blocks(trips: int, lb: int = 0, slack: int = 0, zero: str = "fill") -> str:
    """y[i] = 2 * x[i] for blocks of R rows: each block is zeroed (`zero`: the fill idiom, or
    a bare `cmp_eq` that keeps what the block held), summed into column group by column group
    in an inner loop, then stored group by group: the block tile is private to an outer
    iteration only because the inner loop's windows together cover it."""
    lb, ub, rows = _bounds(trips, lb, slack)
    x, t, c = _buf(rows, 8, "dram"), _buf(R, 4), _buf(R, 8)
    whole = "%c[%c0, %c0] to %c[%c0, %c0]"
    cmp = f'tile.binary_imm {whole} sizes [{R}, 8] {{op = "cmp_eq", imm = 0.0 : f64}} : {c}, {c}'
    mul = f'tile.binary_imm {whole} sizes [{R}, 8] {{op = "mul", imm = 0.0 : f64}} : {c}, {c}'
    return f"""
func.func @main(%x: {x} {{graph.name = "x"}}, %y: {x} {{graph.name = "y", tile.output}}) {{
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %lb = arith.constant {lb} : index
  %ub = arith.constant {ub} : index
  %step = arith.constant {R} : index
  tile.kernel "blocks" {{
    %a = tile.alloc : {t}
    %c = tile.alloc : {c}
    scf.for %i = %lb to %ub step %step {{
      {cmp}
      {mul if zero == "fill" else ""}
      scf.for %j = %c0 to %c8 step %c4 {{
        tile.copy %x[%i, %j] to %a[%c0, %c0] sizes [{R}, 4] : {x}, {t}
        tile.binary %a[%c0, %c0], %c[%c0, %j] to %c[%c0, %j] sizes [{R}, 4] {{op = "add"}} : {t}, {c}, {c}
        tile.binary %a[%c0, %c0], %c[%c0, %j] to %c[%c0, %j] sizes [{R}, 4] {{op = "add"}} : {t}, {c}, {c}
      }}
      scf.for %j = %c0 to %c8 step %c4 {{
        tile.copy %c[%c0, %j] to %y[%i, %j] sizes [{R}, 4] : {c}, {x}
      }}
    }}
  }}
  func.return
}}"""


def nested(outer: int, inner: int) -> str:
    """y[i, j] = x[i, j] + bias[j]: the inner loop loads x tiles, the outer one bias rows."""
    rows, cols = R * max(inner, 1), 8 * max(outer, 1)
    x, bias, w, t = _buf(rows, cols, "dram"), _buf(1, cols, "dram"), _buf(1, 8), _buf(R, 8)
    return f"""
func.func @main(%x: {x} {{graph.name = "x"}}, %bias: {bias} {{graph.name = "bias"}},
                %y: {x} {{graph.name = "y", tile.output}}) {{
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %step = arith.constant {R} : index
  %jub = arith.constant {8 * outer} : index
  %iub = arith.constant {R * inner} : index
  tile.kernel "bias" {{
    %w = tile.alloc : {w}
    %a = tile.alloc : {t}
    %b = tile.alloc : {t}
    scf.for %j = %c0 to %jub step %c8 {{
      tile.copy %bias[%c0, %j] to %w[%c0, %c0] sizes [1, 8] : {bias}, {w}
      scf.for %i = %c0 to %iub step %step {{
        tile.copy %x[%i, %j] to %a[%c0, %c0] sizes [{R}, 8] : {x}, {t}
        tile.binary %a[%c0, %c0], %w[%c0, %c0] to %b[%c0, %c0] sizes [{R}, 8]
            {{op = "add", broadcast = "row"}} : {t}, {w}, {t}
        tile.copy %b[%c0, %c0] to %y[%i, %j] sizes [{R}, 8] : {t}, {x}
      }}
    }}
  }}
  func.return
}}"""


def multi_buffer(text: str, depth: int, target: str | None = "tiny") -> ModuleOp:
    module = parse_mlir(text)
    MultiBufferPass(depth=depth, target=target).apply(CTX, module)
    module.verify()
    return module


def assert_same_results(text: str, depth: int) -> ModuleOp:
    before = parse_mlir(text)
    inputs = random_inputs(entry_function(before), seed=depth)
    expected = run_module(before, inputs)
    after = multi_buffer(text, depth)
    got = run_module(after, inputs)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=f"output {name}, depth {depth}")
    return after


def ops_of(module: ModuleOp, kind: type) -> list:
    return [op for op in module.walk() if isinstance(op, kind)]


FAMILIES = {
    "single": single,
    "two_loads": two_loads,
    "through_view": through_view,
    "matmul": matmul,
    "peeled": peeled,
    "acc_tiles": acc_tiles,
    "acc_blocks": acc_blocks,
    "blocks": blocks,
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("trips", range(8))
def test_same_results_for_every_trip_count(family: str, depth: int, trips: int):
    assert_same_results(FAMILIES[family](trips, lb=R, slack=trips % R), depth)


@pytest.mark.parametrize("depth", [2, 3])
@pytest.mark.parametrize(("outer", "inner"), [(0, 3), (1, 1), (2, 3), (3, 2), (3, 5)])
def test_nested_loops_keep_results(depth: int, outer: int, inner: int):
    module = assert_same_results(nested(outer, inner), depth)
    kernel = ops_of(module, tile.KernelOp)[0]
    used = max(min(depth, trips) if trips >= 2 else 1 for trips in (outer, inner))
    assert kernel.attributes[DEPTH_ATTR] == IntegerAttr(used, 64)


@pytest.mark.parametrize("depth", [2, 3])
@pytest.mark.parametrize("trips", [2, 3, 5, 7])
def test_unrolled_shape(depth: int, trips: int):
    """depth copies of the loaded buffer, step x depth, trips % depth epilogue copies, no modulo."""
    module = multi_buffer(single(trips), depth)
    used = min(depth, trips)
    allocs = [op for op in ops_of(module, tile.AllocOp) if (op.buffer.name_hint or "").startswith("a")]
    assert len(allocs) == used
    (loop,) = ops_of(module, scf.ForOp)
    step = loop.step.owner
    assert isinstance(step, arith.ConstantOp)
    assert step.value == IntegerAttr.from_index_int_value(used * R)
    assert loop.attributes[DEPTH_ATTR] == IntegerAttr(used, 64)
    assert isinstance(loop.attributes[REASON_ATTR], StringAttr)
    loads = [op for op in ops_of(module, tile.CopyOp) if tile.space_of(op.access("src")[0]) == "dram"]
    assert len(loads) == used + trips % used
    assert not [op for op in module.walk() if op.name in ("arith.remsi", "arith.remui", "arith.floordivsi")]


def test_one_iteration_or_depth_one_changes_nothing():
    text = print_mlir(parse_mlir(single(5)))
    assert print_mlir(multi_buffer(text, 1, target=None)) == text  # and needs no target
    recorded = multi_buffer(text, 1)  # a target option is still recorded, for the passes after it
    assert recorded.attributes.pop(TARGET_ATTR) == StringAttr("tiny")
    assert print_mlir(recorded) == text
    once = multi_buffer(single(1), 2)
    assert len(ops_of(once, tile.AllocOp)) == 2
    assert ops_of(once, scf.ForOp)[0].attributes[REASON_ATTR] == StringAttr(
        "depth 1: trip count 1, nothing to overlap"
    )


def test_second_run_changes_nothing():
    once = print_mlir(multi_buffer(two_loads(7), 3))
    assert print_mlir(multi_buffer(once, 3)) == once


def test_sram_budget_falls_back_and_bigger_target_does_not():
    text = single(4, cols=320)  # 5 KiB tiles: 2 + 1 fit the tiny target's 16 KiB, 2 + 2 do not
    loop = ops_of(multi_buffer(text, 3), scf.ForOp)[0]
    assert loop.attributes[DEPTH_ATTR] == IntegerAttr(2, 64)
    assert "SRAM budget: depth 3 needs 20 KiB of 16 KiB" in loop.attributes[REASON_ATTR].data
    loop = ops_of(multi_buffer(text, 3, "edge"), scf.ForOp)[0]
    assert loop.attributes[DEPTH_ATTR] == IntegerAttr(3, 64)


@pytest.mark.parametrize(
    ("depth", "target", "message"), [(0, "tiny", "depth must be >= 1"), (2, "nope", "unknown target 'nope'")]
)
def test_bad_options_fail_the_pass(depth: int, target: str, message: str):
    with pytest.raises(PassFailedException, match=message):
        multi_buffer(single(3), depth, target)


def test_plan_memory_after_multi_buffer_keeps_rotating_buffers_apart():
    module = multi_buffer(two_loads(7), 3)
    PlanMemoryPass().apply(CTX, module)
    assert check_plan(module) == []
    offsets = [op.offset.value.data for op in ops_of(module, tile.AllocOp) if op.offset is not None]
    assert len(offsets) == len(set(offsets)) == 9  # 3 x %a, %c and %b: all live in the loop


@settings(max_examples=40, deadline=None)
@given(
    family=st.sampled_from(sorted(FAMILIES)),
    trips=st.integers(0, 12),
    depth=st.integers(1, 4),
    lb=st.integers(0, 9),
    slack=st.integers(0, R - 1),
)
def test_random_trip_counts_and_depths_keep_results(family: str, trips: int, depth: int, lb: int, slack: int):
    assert_same_results(FAMILIES[family](trips, lb, slack), depth)


@pytest.mark.parametrize("trips", [2, 3, 4])
def test_peel_and_remainder_take_the_neighbouring_copies(trips: int):
    """The peeled tile takes copy 1 (iteration -1), the remainder copy trips mod 2: neither
    shares a buffer with the loop iteration next to it."""
    module = assert_same_results(peeled(trips), 2)
    kernel = ops_of(module, tile.KernelOp)[0]
    loads = [
        op
        for op in kernel.walk()
        if isinstance(op, tile.CopyOp) and tile.space_of(op.access("src")[0]) == "dram"
    ]
    first, second = [op.buffer for op in ops_of(module, tile.AllocOp) if op.buffer.name_hint == "a"]
    targets = [op.access("dst")[0] for op in loads]
    assert targets[0] is second  # the peel: copy 1
    assert targets[-1] is (second if trips % 2 else first)  # the remainder, after iteration trips - 1


@pytest.mark.parametrize("trips", [2, 5])
def test_accumulator_and_output_tiles_rotate_without_loads_deciding(trips: int):
    module = assert_same_results(acc_tiles(trips), 2)
    hints = [op.buffer.name_hint for op in ops_of(module, tile.AllocOp)]
    assert [hints.count(name) for name in ("rhs", "acc", "out", "lhs")] == [2, 2, 2, 1]  # lhs: loaded once


@pytest.mark.parametrize("trips", [2, 5])
def test_an_accumulator_filled_block_by_block_in_an_inner_loop_rotates(trips: int):
    module = assert_same_results(acc_blocks(trips), 2)
    hints = [op.buffer.name_hint for op in ops_of(module, tile.AllocOp)]
    assert [hints.count(name) for name in ("rhs", "acc", "out", "lhs")] == [2, 2, 2, 1]


def test_a_buffer_read_in_the_next_outer_iteration_does_not_rotate():
    big, row = _buf(16, 16, "dram"), _buf(4, 16)
    text = f"""
func.func @main(%x: {big} {{graph.name = "x"}}, %y: {big} {{graph.name = "y", tile.output}}) {{
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  tile.kernel "carry" {{
    %a = tile.alloc : {row}
    tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [4, 16] : {big}, {row}
    scf.for %j = %c0 to %c16 step %c8 {{
      tile.copy %a[%c0, %c0] to %y[%j, %c0] sizes [4, 16] : {row}, {big}
      scf.for %i = %c0 to %c8 step %c4 {{
        tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [4, 16] : {big}, {row}
        %r = arith.addi %i, %c4 : index
        tile.copy %a[%c0, %c0] to %y[%r, %c0] sizes [4, 16] : {row}, {big}
      }}
    }}
  }}
  func.return
}}"""
    module = assert_same_results(text, 2)
    assert len(ops_of(module, tile.AllocOp)) == 1


@pytest.mark.parametrize("trips", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("depth", [2, 3])
def test_a_block_zeroed_then_summed_group_by_group_rotates(trips: int, depth: int):
    module = assert_same_results(blocks(trips, lb=R, slack=trips % R), depth)
    copies = [op for op in ops_of(module, tile.AllocOp) if op.buffer.name_hint == "c"]
    assert len(copies) == (min(depth, trips) if trips >= 2 else 1)


def test_a_block_that_is_not_fully_zeroed_does_not_rotate():
    """`cmp_eq` alone maps what the block held to 0 or 1: the sums depend on it, so the block
    carries over between iterations and stays one buffer."""
    module = assert_same_results(blocks(3, zero="cmp_eq only"), 2)
    assert len([op for op in ops_of(module, tile.AllocOp) if op.buffer.name_hint == "c"]) == 1
