"""The sync level: convert-tile-to-sync, insert-semaphores and optimize-sync against the sync
interpreter (`aitc.interp.sync`), on hand-written tile modules.

Each module runs at tile level (program order) and at sync level (engines concurrent, ordered
only by the inserted semaphores): the outputs must be equal, with no race and no deadlock,
whichever engine runs ahead. The mutation tests delete each sync op of the result in turn: the
interpreter must report every mutant as a race, a deadlock or an unbalanced semaphore.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.utils.exceptions import PassFailedException

from aitc.diagnostics import AitcError
from aitc.dialects import sync, tile
from aitc.interp.run import entry_function, random_inputs, run_module
from aitc.interp.sync import run_sync
from aitc.ir import parse_mlir, print_mlir
from aitc.passes.legality import check_all_bound
from aitc.passes.pipelines import parse_pipeline, run_pipeline
from aitc.passes.sync.insert_semaphores import insert_semaphores
from aitc.passes.sync.insert_semaphores.dependences import first_distance
from aitc.target import load_target

HEADER = (
    "%c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  %c2 = arith.constant 2 : index\n"
)
HEADER += (
    "  %c4 = arith.constant 4 : index\n  %c8 = arith.constant 8 : index\n  %c16 = arith.constant 16 : index"
)


def _function(args: str, body: str) -> str:
    return f"func.func @main({args}) {{\n  {HEADER}\n{body}\n  func.return\n}}\n"


IO = '%x: memref<8x16xf32, "dram"> {graph.name = "x"}'
OUT = '%out: memref<8x4xf32, "dram"> {graph.name = "out", tile.output}'
S4 = 'memref<4x4xf32, "sram">'

TILED_MATMUL = _function(
    f'{IO}, %w: memref<16x4xf32, "dram"> {{graph.name = "w"}}, {OUT}',
    f"""  tile.kernel "fc" {{
    %a = tile.alloc : {S4}
    %b = tile.alloc : {S4}
    %acc = tile.alloc : memref<4x4xf32, "acc">
    %y = tile.alloc : {S4}
    scf.for %m = %c0 to %c8 step %c4 {{
      scf.for %k = %c0 to %c16 step %c4 {{
        tile.copy %x[%m, %k] to %a[%c0, %c0] sizes [4, 4] : memref<8x16xf32, "dram">, {S4}
        tile.copy %w[%k, %c0] to %b[%c0, %c0] sizes [4, 4] : memref<16x4xf32, "dram">, {S4}
        tile.matmul %a[%c0, %c0], %b[%c0, %c0] to %acc[%c0, %c0] sizes [4, 4, 4] {{accumulate}}
            : {S4}, {S4}, memref<4x4xf32, "acc">
      }}
      tile.acc_read %acc[%c0, %c0] to %y[%c0, %c0] sizes [4, 4] {{activation = "relu"}}
          : memref<4x4xf32, "acc">, {S4}
      tile.binary_imm %acc[%c0, %c0] to %y[%c0, %c0] sizes [4, 4] {{op = "mul", imm = 0.5 : f64}}
          : memref<4x4xf32, "acc">, {S4}
      tile.copy %y[%c0, %c0] to %out[%m, %c0] sizes [4, 4] : {S4}, memref<8x4xf32, "dram">
    }}
  }}""",
)
"""Row tiles (m) of a matmul accumulating over k; the accumulator is reused by every row tile."""

ROW = 'memref<2x16xf32, "sram">'
ELEMENTWISE_CHAIN = _function(
    f'{IO}, %y: memref<8x16xf32, "dram"> {{graph.name = "y", tile.output}}',
    f"""  tile.kernel "chain" {{
    %t = tile.alloc : {ROW}
    %u = tile.alloc : {ROW}
    scf.for %i = %c0 to %c8 step %c2 {{
      tile.copy %x[%i, %c0] to %t[%c0, %c0] sizes [2, 16] : memref<8x16xf32, "dram">, {ROW}
      tile.unary %t[%c0, %c0] to %u[%c0, %c0] sizes [2, 16] {{op = "abs"}} : {ROW}, {ROW}
      tile.binary %u[%c0, %c0], %t[%c0, %c0] to %u[%c0, %c0] sizes [2, 16] {{op = "mul"}}
          : {ROW}, {ROW}, {ROW}
      tile.copy %u[%c0, %c0] to %y[%i, %c0] sizes [2, 16] : {ROW}, memref<8x16xf32, "dram">
    }}
  }}""",
)
"""load -> unary -> binary -> store per row tile: RAW within, WAR across iterations."""

WEIGHT_BEFORE_LOOP = _function(
    f'{IO}, %bias: memref<1x16xf32, "dram"> {{graph.name = "bias"}}, '
    '%y: memref<8x16xf32, "dram"> {graph.name = "y", tile.output}',
    f"""  tile.kernel "bias_add" {{
    %wb = tile.alloc : memref<1x16xf32, "sram">
    %t = tile.alloc : {ROW}
    tile.copy %bias[%c0, %c0] to %wb[%c0, %c0] sizes [1, 16]
        : memref<1x16xf32, "dram">, memref<1x16xf32, "sram">
    scf.for %i = %c0 to %c8 step %c2 {{
      tile.copy %x[%i, %c0] to %t[%c0, %c0] sizes [2, 16] : memref<8x16xf32, "dram">, {ROW}
      tile.binary %t[%c0, %c0], %wb[%c0, %c0] to %t[%c0, %c0] sizes [2, 16] {{op = "add", broadcast = "row"}}
          : {ROW}, memref<1x16xf32, "sram">, {ROW}
      tile.copy %t[%c0, %c0] to %y[%i, %c0] sizes [2, 16] : {ROW}, memref<8x16xf32, "dram">
    }}
  }}""",
)
"""A bias loaded once before the loop, read by every iteration."""

MULTI_BUFFERED = _function(
    f'{IO}, %y: memref<8x16xf32, "dram"> {{graph.name = "y", tile.output}}',
    f"""  tile.kernel "double_buffered" {{
    %t0 = tile.alloc {{offset = 0 : i64}} : {ROW}
    %t1 = tile.alloc {{offset = 128 : i64}} : {ROW}
    %u = tile.alloc {{offset = 256 : i64}} : {ROW}
    scf.for %i = %c0 to %c8 step %c4 {{
      tile.copy %x[%i, %c0] to %t0[%c0, %c0] sizes [2, 16] : memref<8x16xf32, "dram">, {ROW}
      tile.unary %t0[%c0, %c0] to %u[%c0, %c0] sizes [2, 16] {{op = "neg"}} : {ROW}, {ROW}
      tile.copy %u[%c0, %c0] to %y[%i, %c0] sizes [2, 16] : {ROW}, memref<8x16xf32, "dram">
      %j = arith.addi %i, %c2 : index
      tile.copy %x[%j, %c0] to %t1[%c0, %c0] sizes [2, 16] : memref<8x16xf32, "dram">, {ROW}
      tile.unary %t1[%c0, %c0] to %u[%c0, %c0] sizes [2, 16] {{op = "abs"}} : {ROW}, {ROW}
      tile.copy %u[%c0, %c0] to %y[%j, %c0] sizes [2, 16] : {ROW}, memref<8x16xf32, "dram">
    }}
  }}""",
)
"""Two rotating input buffers (as multi-buffer unrolls a loop by its depth), planned offsets."""

PEELED_THEN_LOOP = _function(
    f'{IO}, %y: memref<8x16xf32, "dram"> {{graph.name = "y", tile.output}}',
    f"""  tile.kernel "peeled" {{
    %t0 = tile.alloc {{offset = 0 : i64}} : {ROW}
    %t1 = tile.alloc {{offset = 128 : i64}} : {ROW}
    %u = tile.alloc {{offset = 256 : i64}} : {ROW}
    tile.copy %x[%c0, %c0] to %t1[%c0, %c0] sizes [2, 16] : memref<8x16xf32, "dram">, {ROW}
    tile.unary %t1[%c0, %c0] to %u[%c0, %c0] sizes [2, 16] {{op = "neg"}} : {ROW}, {ROW}
    tile.copy %u[%c0, %c0] to %y[%c0, %c0] sizes [2, 16] : {ROW}, memref<8x16xf32, "dram">
    scf.for %i = %c0 to %c8 step %c4 {{
      %j = arith.addi %i, %c2 : index
      tile.copy %x[%i, %c0] to %t0[%c0, %c0] sizes [2, 16] : memref<8x16xf32, "dram">, {ROW}
      tile.unary %t0[%c0, %c0] to %u[%c0, %c0] sizes [2, 16] {{op = "abs"}} : {ROW}, {ROW}
      tile.copy %u[%c0, %c0] to %y[%i, %c0] sizes [2, 16] : {ROW}, memref<8x16xf32, "dram">
      tile.copy %x[%j, %c0] to %t1[%c0, %c0] sizes [2, 16] : memref<8x16xf32, "dram">, {ROW}
      tile.unary %t1[%c0, %c0] to %u[%c0, %c0] sizes [2, 16] {{op = "neg"}} : {ROW}, {ROW}
      tile.copy %u[%c0, %c0] to %y[%j, %c0] sizes [2, 16] : {ROW}, memref<8x16xf32, "dram">
    }}
  }}""",
)
"""A step on %t1 before the loop over the rotating %t0 and %t1 (as multi-buffer leaves a
peeled segment; the loop rewrites its output): the step's read of %t1 is waited for inside
the loop, before the load into %t1, not before the loop (`insert_semaphores`)."""

PEELED_IN_OUTER_LOOP = _function(
    f'{IO}, %y: memref<8x16xf32, "dram"> {{graph.name = "y", tile.output}}',
    f"""  tile.kernel "tiles" {{
    %t0 = tile.alloc {{offset = 0 : i64}} : {ROW}
    %t1 = tile.alloc {{offset = 128 : i64}} : {ROW}
    %u = tile.alloc {{offset = 256 : i64}} : {ROW}
    scf.for %m = %c0 to %c8 step %c4 {{
      %last = arith.addi %m, %c2 : index
      tile.copy %x[%m, %c0] to %t1[%c0, %c0] sizes [2, 16] {{sync.engine = "dma0"}}
        : memref<8x16xf32, "dram">, {ROW}
      tile.unary %t1[%c0, %c0] to %u[%c0, %c0] sizes [2, 16] {{op = "neg"}} : {ROW}, {ROW}
      tile.copy %u[%c0, %c0] to %y[%m, %c0] sizes [2, 16] : {ROW}, memref<8x16xf32, "dram">
      scf.for %i = %c0 to %c4 step %c2 {{
        %r = arith.addi %m, %i : index
        tile.copy %x[%r, %c0] to %t0[%c0, %c0] sizes [2, 16] {{sync.engine = "dma0"}}
        : memref<8x16xf32, "dram">, {ROW}
        tile.binary %t0[%c0, %c0], %u[%c0, %c0] to %u[%c0, %c0] sizes [2, 16] {{op = "add"}}
            : {ROW}, {ROW}, {ROW}
        tile.copy %x[%last, %c0] to %t1[%c0, %c0] sizes [2, 16] {{sync.engine = "dma0"}}
        : memref<8x16xf32, "dram">, {ROW}
        tile.binary %t1[%c0, %c0], %u[%c0, %c0] to %u[%c0, %c0] sizes [2, 16] {{op = "max"}}
            : {ROW}, {ROW}, {ROW}
      }}
      tile.copy %x[%last, %c0] to %t0[%c0, %c0] sizes [2, 16] {{sync.engine = "dma0"}}
        : memref<8x16xf32, "dram">, {ROW}
      tile.binary %t0[%c0, %c0], %u[%c0, %c0] to %u[%c0, %c0] sizes [2, 16] {{op = "mul"}}
          : {ROW}, {ROW}, {ROW}
      tile.copy %u[%c0, %c0] to %y[%last, %c0] sizes [2, 16] : {ROW}, memref<8x16xf32, "dram">
    }}
  }}""",
)
"""The same inside an outer loop (each tile's first step peeled, a last step after the inner
loop, as conv and matmul kernels have them; every load on dma0): the peeled step's read of %t1
is still waited for at the inner loop's load into %t1, and the inner loop's first load, into
%t0, waits for the previous tile's last step, which read %t0 (a credit of the outer loop that
`prune` had let the peeled edge's wait before the loop imply: `insert_semaphores._restored`)."""

REMAINDER_AFTER_LOOP = _function(
    f'{IO}, %y: memref<8x16xf32, "dram"> {{graph.name = "y", tile.output}}',
    f"""  tile.kernel "remainder" {{
    %t0 = tile.alloc {{offset = 0 : i64}} : {ROW}
    %t1 = tile.alloc {{offset = 128 : i64}} : {ROW}
    %u0 = tile.alloc {{offset = 256 : i64}} : {ROW}
    %u1 = tile.alloc {{offset = 384 : i64}} : {ROW}
    scf.for %m = %c0 to %c8 step %c4 {{
      scf.for %r = %c0 to %c8 step %c4 {{
        %s = arith.addi %r, %c2 : index
        tile.copy %x[%r, %c0] to %t0[%c0, %c0] sizes [2, 16] {{sync.engine = "dma0"}}
            : memref<8x16xf32, "dram">, {ROW}
        tile.unary %t0[%c0, %c0] to %u0[%c0, %c0] sizes [2, 16] {{op = "neg"}} : {ROW}, {ROW}
        tile.copy %u0[%c0, %c0] to %y[%r, %c0] sizes [2, 16] : {ROW}, memref<8x16xf32, "dram">
        tile.copy %x[%s, %c0] to %t1[%c0, %c0] sizes [2, 16] {{sync.engine = "dma0"}}
            : memref<8x16xf32, "dram">, {ROW}
        tile.unary %t1[%c0, %c0] to %u1[%c0, %c0] sizes [2, 16] {{op = "abs"}} : {ROW}, {ROW}
        tile.copy %u1[%c0, %c0] to %y[%s, %c0] sizes [2, 16] : {ROW}, memref<8x16xf32, "dram">
      }}
      %n = arith.addi %m, %c1 : index
      tile.copy %x[%m, %c0] to %t0[%c0, %c0] sizes [2, 16] {{sync.engine = "dma0"}}
          : memref<8x16xf32, "dram">, {ROW}
      tile.unary %t0[%c0, %c0] to %t0[%c0, %c0] sizes [2, 16] {{op = "exp"}} : {ROW}, {ROW}
      tile.binary %t0[%c0, %c0], %u1[%c0, %c0] to %u0[%c0, %c0] sizes [2, 16] {{op = "add"}}
          : {ROW}, {ROW}, {ROW}
      tile.copy %u0[%c0, %c0] to %y[%n, %c0] sizes [2, 16] : {ROW}, memref<8x16xf32, "dram">
    }}
  }}""",
)
"""A loop over the rotating %t0 and %t1 (as multi-buffer unrolls a loop by its depth) inside an
outer loop, then a remainder step that loads %t0 again (a trip count the depth does not
divide): the remainder's load needs the last iteration's read of %t0, not its read of %t1
(`insert_semaphores.early_drains`)."""

LOOP_THEN_NEXT_KERNEL = _function(
    f'{IO}, %y: memref<8x16xf32, "dram"> {{graph.name = "y", tile.output}}',
    f"""  tile.kernel "first" {{
    %t = tile.alloc {{offset = 0 : i64}} : {ROW}
    %u = tile.alloc {{offset = 128 : i64}} : {ROW}
    scf.for %i = %c0 to %c8 step %c2 {{
      tile.copy %x[%i, %c0] to %t[%c0, %c0] sizes [2, 16] : memref<8x16xf32, "dram">, {ROW}
      tile.unary %t[%c0, %c0] to %u[%c0, %c0] sizes [2, 16] {{op = "abs"}} : {ROW}, {ROW}
      tile.copy %u[%c0, %c0] to %y[%i, %c0] sizes [2, 16] : {ROW}, memref<8x16xf32, "dram">
    }}
  }}
  tile.kernel "second" {{
    %v = tile.alloc {{offset = 256 : i64}} : {ROW}
    %t = tile.alloc {{offset = 0 : i64}} : {ROW}
    tile.copy %x[%c2, %c0] to %v[%c0, %c0] sizes [2, 16] : memref<8x16xf32, "dram">, {ROW}
    tile.copy %x[%c4, %c0] to %t[%c0, %c0] sizes [2, 16] : memref<8x16xf32, "dram">, {ROW}
    tile.binary %v[%c0, %c0], %t[%c0, %c0] to %v[%c0, %c0] sizes [2, 16] {{op = "add"}}
            : {ROW}, {ROW}, {ROW}
    tile.copy %v[%c0, %c0] to %y[%c0, %c0] sizes [2, 16] : {ROW}, memref<8x16xf32, "dram">
  }}""",
)
"""A loop whose loads wait for the vector op that read the previous one (a credit), then a
kernel that first loads into bytes the loop never touches, then into the loop's tile: the
credit drains before the second load only (`drain_points`)."""

SHARED_BYTES = _function(
    f'{IO}, %y: memref<8x16xf32, "dram"> {{graph.name = "y", tile.output}}',
    f"""  tile.kernel "first" {{
    %a = tile.alloc {{offset = 0 : i64}} : memref<8x16xf32, "sram">
    tile.copy %x[%c0, %c0] to %a[%c0, %c0] sizes [8, 16] : memref<8x16xf32, "dram">, memref<8x16xf32, "sram">
    tile.unary %a[%c0, %c0] to %a[%c0, %c0] sizes [8, 16] {{op = "neg"}}
        : memref<8x16xf32, "sram">, memref<8x16xf32, "sram">
    tile.copy %a[%c0, %c0] to %y[%c0, %c0] sizes [8, 16] : memref<8x16xf32, "sram">, memref<8x16xf32, "dram">
  }}
  tile.kernel "second" {{
    %b = tile.alloc {{offset = 0 : i64}} : {ROW}
    %v = tile.reshape %y : memref<8x16xf32, "dram"> -> memref<4x2x16xf32, "dram">
    %bv = tile.reshape %b : {ROW} -> memref<1x2x16xf32, "sram">
    tile.copy %v[%c1, %c0, %c0] to %bv[%c0, %c0, %c0] sizes [1, 2, 16]
        : memref<4x2x16xf32, "dram">, memref<1x2x16xf32, "sram">
    tile.unary %b[%c0, %c0] to %b[%c0, %c0] sizes [2, 16] {{op = "abs"}} : {ROW}, {ROW}
    tile.copy %b[%c0, %c0] to %y[%c0, %c0] sizes [2, 16] : {ROW}, memref<8x16xf32, "dram">
  }}""",
)
"""Two kernels whose SRAM buffers plan-memory placed on the same bytes, and DRAM views."""

MODULES = {
    "tiled_matmul": TILED_MATMUL,
    "elementwise_chain": ELEMENTWISE_CHAIN,
    "weight_before_loop": WEIGHT_BEFORE_LOOP,
    "multi_buffered": MULTI_BUFFERED,
    "peeled_then_loop": PEELED_THEN_LOOP,
    "peeled_in_outer_loop": PEELED_IN_OUTER_LOOP,
    "shared_bytes": SHARED_BYTES,
    "remainder_after_loop": REMAINDER_AFTER_LOOP,
    "loop_then_next_kernel": LOOP_THEN_NEXT_KERNEL,
}
ORDERS = (("dma0", "dma1", "matrix", "vector"), ("vector", "matrix", "dma1", "dma0"))
SYNC_PIPELINES = (
    "convert-tile-to-sync{target=tiny},insert-semaphores",
    "convert-tile-to-sync{target=tiny},insert-semaphores,optimize-sync",
)
"""The target is given once, to the first pass; the others read it from the module."""


def _apply(module: ModuleOp, spec: str) -> ModuleOp:
    run_pipeline(module, parse_pipeline(spec))
    return module


def _sync_ops(module: ModuleOp) -> list[sync.SignalOp | sync.WaitOp]:
    return [op for op in module.walk() if isinstance(op, sync.SignalOp | sync.WaitOp)]


def _case(name: str) -> tuple[ModuleOp, dict[str, np.ndarray], dict[str, np.ndarray]]:
    module = parse_mlir(MODULES[name])
    inputs = random_inputs(entry_function(module), seed=3)
    return module, inputs, run_module(module, inputs)


# --------------------------------------------------------------------------- tile == sync


@pytest.mark.parametrize("spec", SYNC_PIPELINES)
@pytest.mark.parametrize("name", sorted(MODULES))
def test_sync_level_computes_what_tile_level_does(name: str, spec: str):
    module, inputs, expected = _case(name)
    _apply(module, spec)
    assert _sync_ops(module), "every module has cross-engine dependences"
    assert max(op.semaphore() for op in _sync_ops(module)) < load_target("tiny").semaphores
    for order in ORDERS:
        run = run_sync(module, inputs, order=order)
        for key, value in expected.items():
            np.testing.assert_array_equal(run.outputs[key], value)
        assert set(run.semaphores.values()) <= {0}, "every semaphore ends at 0"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_run_module_runs_sync_level_on_the_sync_interpreter(name: str):
    module, inputs, expected = _case(name)
    outputs = run_module(_apply(module, SYNC_PIPELINES[1]), inputs)
    assert outputs.keys() == expected.keys()
    for key, value in expected.items():
        np.testing.assert_array_equal(outputs[key], value)


def test_multi_buffer_and_plan_memory_then_sync():
    module, inputs, expected = _case("tiled_matmul")
    _apply(module, "multi-buffer{depth=2 target=tiny},plan-memory," + SYNC_PIPELINES[1])
    for order in ORDERS:
        np.testing.assert_array_equal(run_sync(module, inputs, order=order).outputs["out"], expected["out"])


def test_a_step_before_a_loop_is_waited_for_inside_it(tmp_path: Path):
    """The peeled step's read of %t1 makes the loop's load into %t1 wait, inside the loop, on a
    semaphore the step signals once per trip; the load into %t0 does not wait for it. A target
    without a semaphore to spare for it waits before the loop instead; both are race-free."""
    module, inputs, expected = _case("peeled_then_loop")
    _apply(module, "convert-tile-to-sync{target=tiny},insert-semaphores")
    (loop,) = [op for op in module.walk() if isinstance(op, scf.ForOp)]
    counted = [
        op
        for op in _sync_ops(module)
        if isinstance(op, sync.SignalOp) and op.amount() == 2 and op.engine_name() == "vector"
    ]
    assert len(counted) == 1
    assert not loop.is_ancestor(counted[0])
    sunk = counted[0].semaphore()
    body = list(loop.body.block.ops)
    wait = next(k for k, op in enumerate(body) if isinstance(op, sync.WaitOp) and op.semaphore() == sunk)
    loads = [k for k, op in enumerate(body) if isinstance(op, tile.CopyOp) and op.box() == (2, 16)]
    assert loads[0] < wait  # the load into %t0 comes first and does not wait
    for order in ORDERS:
        run = run_sync(module, inputs, order=order)
        np.testing.assert_array_equal(run.outputs["y"], expected["y"])
        assert set(run.semaphores.values()) <= {0}
    tiny = (resources.files("aitc.targets") / "tiny.toml").read_text()
    few = tmp_path / "few.toml"
    counts = {
        op.semaphore() for op in _sync_ops(module) if isinstance(op, sync.SignalOp) and op.amount() == 2
    }
    needed = len({op.semaphore() for op in _sync_ops(module)}) - len(counts)  # without the loop's own
    few.write_text(
        tiny.replace("semaphores = 16", f"semaphores = {needed}").replace('name = "tiny"', 'name = "few"')
    )
    module, inputs, expected = _case("peeled_then_loop")
    _apply(module, f'convert-tile-to-sync{{target="{few}"}},insert-semaphores')
    assert not [op for op in _sync_ops(module) if op.amount() == 2]
    for order in ORDERS:
        np.testing.assert_array_equal(run_sync(module, inputs, order=order).outputs["y"], expected["y"])


def test_a_loop_credit_drains_before_the_first_op_that_needs_it():
    """The loop's credit (vector -> dma0) does not drain right after the loop: dma0 first loads
    into %v, which no op of the loop touches, then drains before the load that overwrites the
    loop's tile; race-free and balanced in every engine order."""
    module, inputs, expected = _case("loop_then_next_kernel")
    _apply(module, "convert-tile-to-sync{target=tiny},insert-semaphores")
    (loop,) = [op for op in module.walk() if isinstance(op, scf.ForOp)]
    (credit,) = [
        op.semaphore()
        for op in loop.body.block.ops
        if isinstance(op, sync.WaitOp) and op.engine_name() == "dma0"
    ]
    second = next(
        op
        for op in module.walk()
        if isinstance(op, tile.KernelOp) and op.sym is not None and op.sym.data == "second"
    )
    ops = list(second.body.block.ops)
    loads = [k for k, op in enumerate(ops) if isinstance(op, tile.CopyOp) and sync.engine_of(op) == "dma0"]
    waits = [
        k
        for k, op in enumerate(ops)
        if isinstance(op, sync.WaitOp) and op.semaphore() == credit and op.engine_name() == "dma0"
    ]
    assert waits  # the drain, and the forward edge from the loop sharing its semaphore
    assert all(loads[0] < k < loads[1] for k in waits)
    after_loop = loop.next_op
    assert not (isinstance(after_loop, sync.WaitOp) and after_loop.semaphore() == credit)
    for order in ORDERS:
        run = run_sync(module, inputs, order=order)
        np.testing.assert_array_equal(run.outputs["y"], expected["y"])
        assert set(run.semaphores.values()) <= {0}


def test_a_remainder_after_a_loop_waits_for_the_last_use_of_its_copy_only():
    """The inner loop's two credits (vector -> dma0, one per rotated copy) leave two units at its
    exit. The remainder's load into %t0 waits for one of them, which the last iteration gives
    once it has read %t0 (before it reads %t1), instead of a forward edge from the whole loop;
    the other unit drains later. Race-free and balanced in every engine order (the mutation
    test deletes each sync op of it)."""
    module, inputs, expected = _case("remainder_after_loop")
    _apply(module, "convert-tile-to-sync{target=tiny},insert-semaphores")
    outer, inner = [op for op in module.walk() if isinstance(op, scf.ForOp)]
    body = list(inner.body.block.ops)
    reads = [k for k, op in enumerate(body) if isinstance(op, tile.UnaryOp)]
    signals = [
        (k, op) for k, op in enumerate(body) if isinstance(op, sync.SignalOp) and op.engine_name() == "vector"
    ]
    credit = next(op.semaphore() for k, op in signals if reads[0] < k < reads[1])
    ops = list(outer.body.block.ops)
    load = next(
        k for k, op in enumerate(ops[ops.index(inner) :], ops.index(inner)) if isinstance(op, tile.CopyOp)
    )
    waits = [op for op in ops[ops.index(inner) + 1 : load] if isinstance(op, sync.WaitOp)]
    assert [(op.semaphore(), op.engine_name(), op.amount()) for op in waits] == [(credit, "dma0", 1)]
    later = [op for op in ops[load:] if isinstance(op, sync.WaitOp) and op.semaphore() == credit]
    assert sum(op.amount() for op in later) == 1
    for order in ORDERS:
        run = run_sync(module, inputs, order=order)
        np.testing.assert_array_equal(run.outputs["y"], expected["y"])
        assert set(run.semaphores.values()) <= {0}


def test_a_peeled_steps_wait_sinks_into_the_inner_loop_and_the_last_step_guards_its_first_load():
    """Inside an outer loop, the edge from the peeled step (its load wrote %t1) waits inside the
    inner loop, at the load into %t1 (signalled once per inner trip), not before the loop; the
    inner loop's first load, into %t0, still waits before the loop for the previous tile's last
    step, which read %t0 (a restored credit of the outer loop). Race-free and balanced in every
    engine order (the mutation test deletes each sync op of it)."""
    module, inputs, expected = _case("peeled_in_outer_loop")
    _apply(module, "convert-tile-to-sync{target=tiny},insert-semaphores")
    outer, inner = [op for op in module.walk() if isinstance(op, scf.ForOp)]
    outer_ops = list(outer.body.block.ops)
    before_inner = outer_ops[: outer_ops.index(inner)]
    sunk = {op.semaphore() for op in before_inner if isinstance(op, sync.SignalOp) and op.amount() == 2}
    assert sunk
    inner_waits = {op.semaphore() for op in inner.walk() if isinstance(op, sync.WaitOp)}
    outer_waits = {op.semaphore() for op in outer_ops if isinstance(op, sync.WaitOp)}
    assert sunk <= inner_waits
    assert not sunk & outer_waits
    last_step = next(
        op for op in outer_ops if isinstance(op, tile.BinaryOp) and op.attributes["op"] == StringAttr("mul")
    )
    credit = last_step.next_op
    assert isinstance(credit, sync.SignalOp)
    waits = [op for op in before_inner if isinstance(op, sync.WaitOp)]
    assert any(op.semaphore() == credit.semaphore() and op.engine_name() == "dma0" for op in waits)
    for order in ORDERS:
        run = run_sync(module, inputs, order=order)
        np.testing.assert_array_equal(run.outputs["y"], expected["y"])
        assert set(run.semaphores.values()) <= {0}


@pytest.mark.parametrize("limit", [4, 5, 6])
def test_a_peeled_step_in_an_outer_loop_is_synchronised_with_few_semaphores(limit: int):
    """With fewer semaphores than sinking the peeled step's wait and restoring the credit take
    (7), insert-semaphores leaves some sunk edges' waits before the loop (6, 5) or, at 4, falls
    back to the placement that needs no restored credit: still race-free, balanced and equal
    to the tile level; 3 are too few for any placement."""
    for semaphores in (limit, 3):
        module, inputs, expected = _case("peeled_in_outer_loop")
        _apply(module, "convert-tile-to-sync{target=tiny}")
        function = entry_function(module)
        if semaphores == 3:
            with pytest.raises(PassFailedException, match="needs more than the 3 semaphores"):
                insert_semaphores(function, semaphores, "test")
            continue
        insert_semaphores(function, semaphores, "test")
        assert max(op.semaphore() for op in _sync_ops(module)) < semaphores
        for order in ORDERS:
            run = run_sync(module, inputs, order=order)
            np.testing.assert_array_equal(run.outputs["y"], expected["y"])
            assert set(run.semaphores.values()) <= {0}


# --------------------------------------------------------------------------- mutation


@pytest.mark.parametrize("spec", SYNC_PIPELINES)
@pytest.mark.parametrize("name", sorted(MODULES))
def test_deleting_any_sync_op_is_caught(name: str, spec: str):
    module, inputs, _ = _case(name)
    synced = print_mlir(_apply(module, spec))
    count = len(_sync_ops(module))
    assert count > 0
    for index in range(count):
        mutant = parse_mlir(synced)
        victim = _sync_ops(mutant)[index]
        described = str(victim)
        victim.detach()
        victim.erase()
        for order in ORDERS:
            with pytest.raises(AitcError, match=r"data race|deadlock|unbalanced") as caught:
                run_sync(mutant, inputs, order=order)
            assert caught.value.problems, f"deleting #{index} ({described}) gave an empty report"


# --------------------------------------------------------------------------- interpreter reports

UNSYNCED = _function(
    f'{IO}, %y: memref<8x16xf32, "dram"> {{graph.name = "y", tile.output}}',
    f"""  tile.kernel "k" {{
    %t = tile.alloc : {ROW}
    tile.copy %x[%c0, %c0] to %t[%c0, %c0] sizes [2, 16] {{sync.engine = "dma0"}}
        : memref<8x16xf32, "dram">, {ROW}
    SYNC
    tile.unary %t[%c0, %c0] to %t[%c0, %c0] sizes [2, 16] {{op = "neg", sync.engine = "vector"}}
        : {ROW}, {ROW}
  }}""",
)


ORDERED = 'sync.signal 0 on "dma0"\n    sync.wait 0 on "vector"\n    '


def _unsynced(sync_ops: str = "") -> ModuleOp:
    return parse_mlir(UNSYNCED.replace("SYNC", sync_ops))


def test_race_names_both_ops_their_kernel_and_engines():
    module = _unsynced()
    with pytest.raises(AitcError) as caught:
        run_sync(module, random_inputs(entry_function(module)))
    text = str(caught.value)
    assert text.startswith("data race on %t, bytes [0x0, 0x80)")
    assert 'tile.copy in tile.kernel "k" on dma0' in text
    assert 'tile.unary in tile.kernel "k" on vector' in text
    assert "write 'dst'" in text
    assert "read  'a'" in text


def test_deadlock_lists_blocked_engines_and_semaphores():
    module = _unsynced(ORDERED + 'sync.wait 3 on "vector"\n    sync.signal 2 on "dma0"')
    with pytest.raises(AitcError) as caught:
        run_sync(module, random_inputs(entry_function(module)))
    text = str(caught.value)
    assert "deadlock" in text
    assert "vector: blocked (semaphore 3 = 0, needs 1) at sync.wait" in text
    assert "dma0: finished" in text
    assert "semaphores: 2 = 1" in text


def test_unbalanced_semaphore_is_reported():
    module = _unsynced(ORDERED + 'sync.signal 5 on "dma0" count 2')
    with pytest.raises(AitcError, match="unbalanced semaphores: semaphore 5 = 2"):
        run_sync(module, random_inputs(entry_function(module)))


def test_disjoint_windows_of_one_buffer_do_not_race():
    text = UNSYNCED.replace("SYNC", "").replace(
        "tile.unary %t[%c0, %c0] to %t[%c0, %c0] sizes [2, 16]",
        "tile.unary %t[%c1, %c0] to %t[%c1, %c0] sizes [1, 16]",
    )
    module = parse_mlir(text.replace("sizes [2, 16] {sync", "sizes [1, 16] {sync", 1))
    run_sync(module, random_inputs(entry_function(module)))


# --------------------------------------------------------------------------- semaphore numbers


def _kernels(count: int) -> str:
    body = []
    for k in range(count):
        body.append(f"""  tile.kernel "k{k}" {{
    %t{k} = tile.alloc : {ROW}
    tile.copy %x[%c0, %c0] to %t{k}[%c0, %c0] sizes [2, 16] : memref<8x16xf32, "dram">, {ROW}
    tile.unary %t{k}[%c0, %c0] to %t{k}[%c0, %c0] sizes [2, 16] {{op = "neg"}} : {ROW}, {ROW}
    tile.copy %t{k}[%c0, %c0] to %y[%c{2 * (k % 4)}, %c0] sizes [2, 16] : {ROW}, memref<8x16xf32, "dram">
  }}""")
    return _function(f'{IO}, %y: memref<8x16xf32, "dram"> {{graph.name = "y", tile.output}}', "\n".join(body))


def test_semaphores_are_shared_per_engine_pair_not_per_kernel():
    module = _apply(parse_mlir(_kernels(12).replace("%c6", "%c4")), SYNC_PIPELINES[1])
    # dma0 -> vector and vector -> dma1, whatever the number of kernels (the direct dma0 -> dma1
    # edge of each store is implied through the vector engine: optimize-sync drops it)
    assert len({op.semaphore() for op in _sync_ops(module)}) == 2
    run_sync(module, random_inputs(entry_function(module)))


def test_too_many_semaphores_names_the_kernel(tmp_path: Path):
    tiny = (resources.files("aitc.targets") / "tiny.toml").read_text()
    target = tmp_path / "one_semaphore.toml"
    target.write_text(
        tiny.replace("semaphores = 16", "semaphores = 1").replace('name = "tiny"', 'name = "one"')
    )
    module = _apply(parse_mlir(MODULES["elementwise_chain"]), f'convert-tile-to-sync{{target="{target}"}}')
    with pytest.raises(
        PassFailedException, match="kernel 'chain' needs more than the 1 semaphores of target 'one'"
    ):
        _apply(module, "insert-semaphores")


def test_reserved_semaphores_stay_unused(tmp_path: Path):
    """`reserved=N` keeps the top N semaphores free (a multi-core program's fences): the chain,
    which needs 4 semaphores, gets numbers 0..3 of a 5-semaphore target with 1 reserved, and
    with 2 reserved the target is too small, said with what was kept."""
    tiny = (resources.files("aitc.targets") / "tiny.toml").read_text()
    target = tmp_path / "five.toml"
    target.write_text(
        tiny.replace("semaphores = 16", "semaphores = 5").replace('name = "tiny"', 'name = "five"')
    )
    bound = _apply(parse_mlir(MODULES["elementwise_chain"]), f'convert-tile-to-sync{{target="{target}"}}')
    synced = _apply(bound.clone(), "insert-semaphores{reserved=1}")
    assert {op.semaphore() for op in _sync_ops(synced)} == {0, 1, 2, 3}
    run_sync(synced, random_inputs(entry_function(synced)))
    with pytest.raises(
        PassFailedException,
        match=r"needs more than the 3 semaphores of target 'five' \(2 of its 5 kept free\)",
    ):
        _apply(bound.clone(), "insert-semaphores{reserved=2}")
    with pytest.raises(PassFailedException, match=r"reserved must be 0\.\.4, got 5"):
        _apply(bound.clone(), "insert-semaphores{reserved=5}")


# --------------------------------------------------------------------------- pieces


def test_check_all_bound_names_the_unbound_ops():
    module = parse_mlir(MODULES["elementwise_chain"])
    with pytest.raises(PassFailedException, match=r"4 tile compute op\(s\) not bound .*tile.copy x2"):
        check_all_bound(module, "some-pass")
    check_all_bound(_apply(module, "convert-tile-to-sync{target=tiny}"), "some-pass")


def _intervals(*spans: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([lo for lo, _ in spans]), np.array([hi for _, hi in spans])


def test_first_distance_finds_the_closest_conflicting_iterations():
    slots = [_intervals((64 * (t % 2), 64 * (t % 2) + 64)) for t in range(6)]  # slot t mod 2
    assert first_distance(slots, slots, 1) == 2
    assert first_distance(slots, slots, 0) == 0
    rows = [_intervals((16 * t, 16 * t + 16)) for t in range(4)]  # row t: never again
    assert first_distance(rows, rows, 1) is None


def test_dma_ops_go_back_to_the_load_and_store_queues_when_spreading_needs_too_many_semaphores(
    monkeypatch, tmp_path
):
    """cnn_bn_pool split over the 2 cores of tiny with 12 semaphores: one phase's convolution,
    its DMA ops spread over both queues, needs more than the 10 semaphores left to a phase (2 of
    the 12 are the fences'); insert-semaphores moves that function's DMA ops back to the
    load/store queues, records why, and the program still computes the model. (The convolution
    is kept channels first: channels last, it needs fewer semaphores. With tiny's own 16 it fits
    since its accumulator rotates.)"""
    from aitc.compiler import CompileOptions, compile_module
    from aitc.passes.graph import graph_channels_last
    from aitc.passes.sync import insert_semaphores as pass_module

    monkeypatch.setattr(graph_channels_last, "choose", lambda region, budget: None)
    from aitc.reference import assert_close, onnxruntime_session
    from aitc.sim import Simulator
    from aitc.testing import model_zoo

    moved: list[int] = []
    unspread = pass_module._unspread

    def observed(function, target):
        moved.append(unspread(function, target))
        return moved[-1]

    monkeypatch.setattr(pass_module, "_unspread", observed)
    recorded = []
    synchronize = pass_module.synchronize

    def recording(function, target, reserved):
        synchronize(function, target, reserved)
        recorded.append(function.attributes.get(pass_module.UNSPREAD_ATTR))

    monkeypatch.setattr(pass_module, "synchronize", recording)
    tiny = (resources.files("aitc.targets") / "tiny.toml").read_text()
    target = tmp_path / "tiny12.toml"
    target.write_text(
        tiny.replace('name = "tiny"', 'name = "tiny12"').replace("semaphores = 16", "semaphores = 12")
    )
    model, inputs = model_zoo.cnn_bn_pool()  # a batch of 2
    shapes = {k: list(v.shape) for k, v in inputs.items()}
    result = compile_module(
        model, CompileOptions(target=str(target), cores=2, input_shapes=shapes, shard="tp")
    )
    assert moved
    assert all(count > 0 for count in moved)
    notes = [str(note) for note in recorded if note is not None]
    assert notes
    assert all(
        "needed more than the 10 semaphores of target 'tiny12' (2 of its 12 kept free)" in note
        for note in notes
    )
    want = onnxruntime_session(model).run(None, inputs)
    expected = {o.name: np.asarray(v) for o, v in zip(model.graph.output, want, strict=True)}
    assert_close(Simulator(result.module, str(target)).run(inputs).outputs, expected, tolerance=1e-5)
