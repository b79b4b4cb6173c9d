"""convert-sync-to-hw, executed: hand-written sync-level modules (offsets written by hand, or
planned by plan-memory) are lowered to hw, run on the simulator (which checks bounds, races and
deadlocks on every run) and must produce what the tile interpreter computes before lowering
(and what the sync interpreter computes, which checks the same protocol one level up).

The tile interpreter runs the sync-level module in program order, which honours every
semaphore; the sync ops themselves have no data effect there.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, NameLoc
from xdsl.utils.exceptions import PassFailedException

from aitc.dialects import hw
from aitc.interp.sync import run_sync_module
from aitc.interp.tile import SyncInProgramOrder, run_tile_module
from aitc.ir import make_context, parse_mlir
from aitc.passes.sync_to_hw import ConvertSyncToHwPass
from aitc.passes.tile.plan_memory import PlanMemoryPass
from aitc.sim import SimulationError, Simulator


def lower(module: ModuleOp, target: str = "tiny") -> ModuleOp:
    lowered = module.clone()
    ConvertSyncToHwPass(target=target).apply(make_context(), lowered)
    lowered.verify()
    return lowered


def check_lowering(text: str, inputs: dict[str, np.ndarray], target: str = "tiny") -> dict[str, np.ndarray]:
    """Lowers `text`, simulates it and compares with the tile interpreter (program order) and
    the sync interpreter (engines concurrent, races and deadlocks checked); returns the outputs."""
    module = parse_mlir(text)
    expected = run_tile_module(module, inputs, functions=[SyncInProgramOrder()])
    result = Simulator(lower(module, target), target).run(inputs)
    for outputs in (result.outputs, run_sync_module(module, inputs)):
        assert outputs.keys() == expected.keys()
        for name, value in expected.items():
            np.testing.assert_array_equal(outputs[name], value, err_msg=f"output '{name}'")
    return result.outputs


def dense(array: np.ndarray) -> str:
    return f"dense<{json.dumps(array.tolist())}> : tensor<{'x'.join(map(str, array.shape))}xf32>"


def instructions(module: ModuleOp) -> list[hw.InstructionOp]:
    return [op for op in module.walk() if isinstance(op, hw.InstructionOp)]


# --------------------------------------------------------------------------- tiled matmul

WEIGHTS = (np.arange(32, dtype=np.float32).reshape(8, 4) - 12) / 8

# y = relu(x @ w), two 4-row tiles of x in a loop; K = 8 runs as two 4-deep matmuls on the 4x4
# engine (the second accumulates), reading halves of the 4x8 SRAM tile (lhs_stride = 8).
# Semaphores: 0 xs loaded, 1 acc ready, 2 ys ready; 4/5/6 say xs/acc/ys are free again
# (signalled once before the loop, so the first iteration does not wait; consumed after it, so
# every semaphore ends at 0).
MATMUL = f"""
func.func @main(%x: memref<8x8xf32, "dram"> {{graph.name = "x", tile.offset = 0 : i64}},
                %y: memref<8x4xf32, "dram"> {{graph.name = "y", tile.output, tile.offset = 256 : i64}}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %w = tile.const {dense(WEIGHTS)} {{offset = 384 : i64}}
  %xs = tile.alloc {{offset = 0 : i64}} : memref<4x8xf32, "sram">
  %ws = tile.alloc {{offset = 128 : i64}} : memref<8x4xf32, "sram">
  %ys = tile.alloc {{offset = 256 : i64}} : memref<4x4xf32, "sram">
  %acc = tile.alloc {{offset = 0 : i64}} : memref<4x4xf32, "acc">
  tile.kernel "fc1" {{
    tile.copy %w[%c0, %c0] to %ws[%c0, %c0] sizes [8, 4] {{sync.engine = "dma0"}}
        : memref<8x4xf32, "dram">, memref<8x4xf32, "sram">
    sync.signal 4 on "matrix"
    sync.signal 5 on "vector"
    sync.signal 6 on "dma1"
    scf.for %i = %c0 to %c2 step %c1 {{
      %r = arith.muli %i, %c4 : index
      sync.wait 4 on "dma0"
      tile.copy %x[%r, %c0] to %xs[%c0, %c0] sizes [4, 8] {{sync.engine = "dma0"}}
          : memref<8x8xf32, "dram">, memref<4x8xf32, "sram">
      sync.signal 0 on "dma0"
      sync.wait 0 on "matrix"
      sync.wait 5 on "matrix"
      tile.matmul %xs[%c0, %c0], %ws[%c0, %c0] to %acc[%c0, %c0] sizes [4, 4, 4]
          {{sync.engine = "matrix"}}
          : memref<4x8xf32, "sram">, memref<8x4xf32, "sram">, memref<4x4xf32, "acc">
      tile.matmul %xs[%c0, %c4], %ws[%c4, %c0] to %acc[%c0, %c0] sizes [4, 4, 4]
          {{accumulate, sync.engine = "matrix"}}
          : memref<4x8xf32, "sram">, memref<8x4xf32, "sram">, memref<4x4xf32, "acc">
      sync.signal 4 on "matrix"
      sync.signal 1 on "matrix"
      sync.wait 1 on "vector"
      sync.wait 6 on "vector"
      tile.acc_read %acc[%c0, %c0] to %ys[%c0, %c0] sizes [4, 4]
          {{activation = "relu", sync.engine = "vector"}}
          : memref<4x4xf32, "acc">, memref<4x4xf32, "sram">
      sync.signal 5 on "vector"
      sync.signal 2 on "vector"
      sync.wait 2 on "dma1"
      tile.copy %ys[%c0, %c0] to %y[%r, %c0] sizes [4, 4] {{sync.engine = "dma1"}}
          : memref<4x4xf32, "sram">, memref<8x4xf32, "dram">
      sync.signal 6 on "dma1"
    }}
    sync.wait 4 on "dma0"
    sync.wait 5 on "matrix"
    sync.wait 6 on "vector"
  }} loc("fc1")
  func.return
}}
"""


def test_tiled_matmul_with_a_loop_matches_the_tile_interpreter():
    x = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    outputs = check_lowering(MATMUL, {"x": x})
    np.testing.assert_allclose(outputs["y"], np.maximum(x @ WEIGHTS, 0), rtol=1e-5, atol=1e-6)


def test_matmul_program_shape_loops_strides_and_locations():
    program = lower(parse_mlir(MATMUL))
    [loop] = [op for op in program.walk() if isinstance(op, hw.LoopOp)]
    assert loop.trip_count() == 2
    load = next(op for op in loop.walk() if isinstance(op, hw.DmaInOp))
    assert load.get("src") == hw.AddressAttr("dram", 0, [128])  # 4 rows x 32 bytes per iteration
    matmuls = [op for op in loop.walk() if isinstance(op, hw.MatmulOp)]
    assert [m.get("lhs_stride") for m in matmuls] == [8, 8]
    assert [m.get_address("lhs").base.data for m in matmuls] == [0, 16]
    assert [m.get("accumulate") for m in matmuls] == [False, True]
    names = {op.location.desc.data for op in instructions(program) if isinstance(op.location, NameLoc)}
    assert names == {"fc1"}
    assert all(isinstance(op.location, NameLoc) for op in instructions(program))


def test_matmul_planned_by_plan_memory_runs_too():
    """The plan-memory contract (offsets on allocs/consts, tile.offset on arguments) is all the
    lowering needs: drop the hand-written offsets and let plan-memory choose."""
    text = MATMUL
    for old in (" {offset = 0 : i64}", " {offset = 128 : i64}", " {offset = 256 : i64}"):
        text = text.replace(f"tile.alloc{old}", "tile.alloc")
    module = parse_mlir(text)
    PlanMemoryPass(target="tiny").apply(make_context(), module)
    x = np.random.default_rng(1).standard_normal((8, 8)).astype(np.float32)
    expected = run_tile_module(module, {"x": x}, functions=[SyncInProgramOrder()])
    result = Simulator(lower(module), "tiny").run({"x": x})
    np.testing.assert_array_equal(result.outputs["y"], expected["y"])


def test_a_missing_wait_is_a_race_the_simulator_names():
    """The lowering keeps the semaphore protocol as written: drop the wait that keeps the next
    load of xs behind the matmuls reading it, and the simulator reports the race at node fc1."""
    text = MATMUL.replace('      sync.wait 4 on "dma0"\n', "")
    with pytest.raises(SimulationError, match=r"data race(.|\n)*i0=1(.|\n)*node 'fc1'"):
        Simulator(lower(parse_mlir(text)), "tiny").run({"x": np.ones((8, 8), np.float32)})


# --------------------------------------------------------------------------- elementwise kernel

BIAS = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)

# y = exp(min(a + bias, 0) * 0.5) with bias broadcast over rows; s = row sums of y into a dense
# column; a 3-D input window (2 x 4 x 8 -> 4 rows of 8) read through a reshape. Semaphores:
# 0 `as` loaded, 1 t/ss computed; 3 `as` free again, 2 (count 2) t and ss stored (both primed
# before the loop and consumed after it).
ELEMENTWISE = f"""
func.func @main(%a: memref<2x4x8xf32, "dram"> {{graph.name = "a", tile.offset = 0 : i64}},
                %y: memref<8x8xf32, "dram"> {{graph.name = "y", tile.output, tile.offset = 256 : i64}},
                %s: memref<8x1xf32, "dram"> {{graph.name = "s", tile.output, tile.offset = 512 : i64}}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %b = tile.const {dense(BIAS)} {{offset = 576 : i64}}
  %bs = tile.alloc {{offset = 0 : i64}} : memref<1x8xf32, "sram">
  %as = tile.alloc {{offset = 64 : i64}} : memref<1x4x8xf32, "sram">
  %a2 = tile.reshape %as : memref<1x4x8xf32, "sram"> -> memref<4x8xf32, "sram">
  %t = tile.alloc {{offset = 192 : i64}} : memref<4x8xf32, "sram">
  %ss = tile.alloc {{offset = 320 : i64}} : memref<4x1xf32, "sram">
  tile.copy %b[%c0, %c0] to %bs[%c0, %c0] sizes [1, 8] {{sync.engine = "dma0"}}
      : memref<1x8xf32, "dram">, memref<1x8xf32, "sram">
  sync.signal 3 on "vector"
  sync.signal 2 on "dma1" count 2
  scf.for %i = %c0 to %c2 step %c1 {{
    %r = arith.muli %i, %c4 : index
    sync.wait 3 on "dma0"
    tile.copy %a[%i, %c0, %c0] to %as[%c0, %c0, %c0] sizes [1, 4, 8] {{sync.engine = "dma0"}}
        : memref<2x4x8xf32, "dram">, memref<1x4x8xf32, "sram">
    sync.signal 0 on "dma0"
    sync.wait 0 on "vector"
    sync.wait 2 on "vector" count 2
    tile.binary %a2[%c0, %c0], %bs[%c0, %c0] to %t[%c0, %c0] sizes [4, 8]
        {{op = "add", broadcast = "row", sync.engine = "vector"}}
        : memref<4x8xf32, "sram">, memref<1x8xf32, "sram">, memref<4x8xf32, "sram">
    sync.signal 3 on "vector"
    tile.binary_imm %t[%c0, %c0] to %t[%c0, %c0] sizes [4, 8]
        {{op = "min", imm = 0.0 : f64, sync.engine = "vector"}}
        : memref<4x8xf32, "sram">, memref<4x8xf32, "sram">
    tile.binary_imm %t[%c0, %c0] to %t[%c0, %c0] sizes [4, 8]
        {{op = "mul", imm = 0.5 : f64, sync.engine = "vector"}}
        : memref<4x8xf32, "sram">, memref<4x8xf32, "sram">
    tile.unary %t[%c0, %c0] to %t[%c0, %c0] sizes [4, 8] {{op = "exp", sync.engine = "vector"}}
        : memref<4x8xf32, "sram">, memref<4x8xf32, "sram">
    tile.reduce %t[%c0, %c0] to %ss[%c0, %c0] sizes [4, 8] {{op = "sum", sync.engine = "vector"}}
        : memref<4x8xf32, "sram">, memref<4x1xf32, "sram">
    sync.signal 1 on "vector"
    sync.wait 1 on "dma1"
    tile.copy %t[%c0, %c0] to %y[%r, %c0] sizes [4, 8] {{sync.engine = "dma1"}}
        : memref<4x8xf32, "sram">, memref<8x8xf32, "dram">
    tile.copy %ss[%c0, %c0] to %s[%r, %c0] sizes [4, 1] {{sync.engine = "dma1"}}
        : memref<4x1xf32, "sram">, memref<8x1xf32, "dram">
    sync.signal 2 on "dma1" count 2
  }}
  sync.wait 3 on "dma0"
  sync.wait 2 on "vector" count 2
  func.return
}}
"""


def test_elementwise_kernel_matches_the_tile_interpreter():
    a = np.random.default_rng(2).standard_normal((2, 4, 8)).astype(np.float32)
    outputs = check_lowering(ELEMENTWISE, {"a": a})
    y = np.exp(np.minimum(a.reshape(8, 8) + BIAS, 0) * 0.5)
    np.testing.assert_allclose(outputs["y"], y, rtol=1e-6)
    np.testing.assert_allclose(outputs["s"], y.sum(axis=1, keepdims=True), rtol=1e-5)


def test_elementwise_kernel_runs_on_the_edge_target_too():
    a = np.random.default_rng(3).standard_normal((2, 4, 8)).astype(np.float32)
    check_lowering(ELEMENTWISE, {"a": a}, target="edge")


# --------------------------------------------------------------------------- transpose, gather, N-D

# t = x^T straight from DRAM (one strided DMA per column of the shorter side), then
# z = t[1:7, 1:3] of a 3-D view: the window does not merge into one DMA, so it loops.
TRANSPOSE = """
func.func @main(%x: memref<3x8xf32, "dram"> {graph.name = "x", tile.offset = 0 : i64},
                %y: memref<8x3xf32, "dram"> {graph.name = "y", tile.output, tile.offset = 128 : i64},
                %z: memref<2x3x2xf32, "dram"> {graph.name = "z", tile.output, tile.offset = 256 : i64}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = tile.alloc {offset = 0 : i64} : memref<8x3xf32, "sram">
  %t3 = tile.reshape %t : memref<8x3xf32, "sram"> -> memref<2x4x3xf32, "sram">
  tile.transpose %x[%c0, %c0] to %t[%c0, %c0] sizes [3, 8] {sync.engine = "dma0"}
      : memref<3x8xf32, "dram">, memref<8x3xf32, "sram">
  sync.signal 0 on "dma0"
  sync.wait 0 on "dma1"
  tile.copy %t[%c0, %c0] to %y[%c0, %c0] sizes [8, 3] {sync.engine = "dma1"}
      : memref<8x3xf32, "sram">, memref<8x3xf32, "dram">
  tile.copy %t3[%c0, %c1, %c1] to %z[%c0, %c0, %c0] sizes [2, 3, 2] {sync.engine = "dma1"}
      : memref<2x4x3xf32, "sram">, memref<2x3x2xf32, "dram">
  func.return
}
"""


def test_transpose_and_3d_window_match_the_tile_interpreter():
    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    outputs = check_lowering(TRANSPOSE, {"x": x})
    np.testing.assert_array_equal(outputs["y"], x.T)
    np.testing.assert_array_equal(outputs["z"], x.T.reshape(2, 4, 3)[:, 1:, 1:])


def test_transpose_loops_over_the_shorter_side():
    program = lower(parse_mlir(TRANSPOSE))
    loop = next(op for op in program.walk() if isinstance(op, hw.LoopOp) and op.trip_count() == 3)
    [dma] = list(loop.body.block.ops)
    assert isinstance(dma, hw.DmaInOp)
    assert dma.values() | {"dst": None, "src": None} == {
        "dst": None, "src": None, "rows": 8, "row_bytes": 4, "src_stride": 0, "dst_stride": 12, "queue": -1,
    }  # fmt: skip
    assert dma.get("src") == hw.AddressAttr("dram", 0, [32])  # one src row per iteration
    assert dma.get("dst") == hw.AddressAttr("sram", 0, [4])  # into one dst column


TABLE = np.arange(40, dtype=np.float32).reshape(10, 4) / 4

# e = table[ids]: ids come from DRAM into SRAM, the gather reads table rows by index.
GATHER = f"""
func.func @main(%ids: memref<5x1xi32, "dram"> {{graph.name = "ids", tile.offset = 0 : i64}},
                %e: memref<5x4xf32, "dram"> {{graph.name = "e", tile.output, tile.offset = 64 : i64}}) {{
  %c0 = arith.constant 0 : index
  %table = tile.const {dense(TABLE)} {{offset = 192 : i64}}
  %is = tile.alloc {{offset = 0 : i64}} : memref<5x1xi32, "sram">
  %es = tile.alloc {{offset = 64 : i64}} : memref<5x4xf32, "sram">
  tile.copy %ids[%c0, %c0] to %is[%c0, %c0] sizes [5, 1] {{sync.engine = "dma0"}}
      : memref<5x1xi32, "dram">, memref<5x1xi32, "sram">
  tile.gather %table[%c0, %c0], %is[%c0, %c0] to %es[%c0, %c0] sizes [5, 4] {{sync.engine = "dma0"}}
      : memref<10x4xf32, "dram">, memref<5x1xi32, "sram">, memref<5x4xf32, "sram">
  sync.signal 0 on "dma0"
  sync.wait 0 on "dma1"
  tile.copy %es[%c0, %c0] to %e[%c0, %c0] sizes [5, 4] {{sync.engine = "dma1"}}
      : memref<5x4xf32, "sram">, memref<5x4xf32, "dram">
  func.return
}}
"""


def test_gather_matches_the_tile_interpreter():
    ids = np.array([[3], [0], [9], [3], [5]], dtype=np.int32)
    outputs = check_lowering(GATHER, {"ids": ids})
    np.testing.assert_array_equal(outputs["e"], TABLE[ids[:, 0]])
    [gather] = [op for op in instructions(lower(parse_mlir(GATHER))) if isinstance(op, hw.DmaGatherOp)]
    assert (gather.get("rows"), gather.get("row_bytes"), gather.get("table_rows")) == (5, 16, 10)


# Layouts one instruction cannot express run one row at a time: gather indices that are column 1
# of a 3 x 2 buffer (not a dense vector), and a vselect whose sources differ in row pitch.
PER_ROW = f"""
func.func @main(%ids: memref<3x2xi32, "dram"> {{graph.name = "ids", tile.offset = 0 : i64}},
                %c: memref<3x4xf32, "dram"> {{graph.name = "c", tile.offset = 64 : i64}},
                %e: memref<3x4xf32, "dram"> {{graph.name = "e", tile.output, tile.offset = 128 : i64}}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %table = tile.const {dense(TABLE)} {{offset = 192 : i64}}
  %is = tile.alloc {{offset = 0 : i64}} : memref<3x2xi32, "sram">
  %es = tile.alloc {{offset = 64 : i64}} : memref<3x8xf32, "sram">
  %cs = tile.alloc {{offset = 192 : i64}} : memref<3x4xf32, "sram">
  %zs = tile.alloc {{offset = 256 : i64}} : memref<3x4xf32, "sram">
  tile.copy %ids[%c0, %c0] to %is[%c0, %c0] sizes [3, 2] {{sync.engine = "dma0"}}
      : memref<3x2xi32, "dram">, memref<3x2xi32, "sram">
  tile.copy %c[%c0, %c0] to %cs[%c0, %c0] sizes [3, 4] {{sync.engine = "dma0"}}
      : memref<3x4xf32, "dram">, memref<3x4xf32, "sram">
  tile.gather %table[%c0, %c0], %is[%c0, %c1] to %es[%c0, %c0] sizes [3, 4] {{sync.engine = "dma0"}}
      : memref<10x4xf32, "dram">, memref<3x2xi32, "sram">, memref<3x8xf32, "sram">
  sync.signal 0 on "dma0"
  sync.wait 0 on "vector"
  tile.select %cs[%c0, %c0], %es[%c0, %c0], %zs[%c0, %c0] to %cs[%c0, %c0] sizes [3, 4]
      {{sync.engine = "vector"}}
      : memref<3x4xf32, "sram">, memref<3x8xf32, "sram">, memref<3x4xf32, "sram">, memref<3x4xf32, "sram">
  sync.signal 1 on "vector"
  sync.wait 1 on "dma1"
  tile.copy %cs[%c0, %c0] to %e[%c0, %c0] sizes [3, 4] {{sync.engine = "dma1"}}
      : memref<3x4xf32, "sram">, memref<3x4xf32, "dram">
  func.return
}}
"""


def test_layouts_an_instruction_cannot_express_run_row_by_row():
    ids = np.array([[0, 7], [0, 2], [0, 7]], dtype=np.int32)
    c = np.array([[1, 0, 1, 1], [0, 0, 1, 0], [1, 1, 1, 0]], dtype=np.float32)
    outputs = check_lowering(PER_ROW, {"ids": ids, "c": c})
    np.testing.assert_array_equal(outputs["e"], np.where(c != 0, TABLE[ids[:, 1]], 0))
    loops = [op for op in lower(parse_mlir(PER_ROW)).walk() if isinstance(op, hw.LoopOp)]
    assert [op.trip_count() for op in loops] == [3, 3]


# --------------------------------------------------------------------------- errors


def test_missing_offsets_name_plan_memory():
    text = MATMUL.replace("tile.alloc {offset = 0 : i64} : memref<4x8xf32", "tile.alloc : memref<4x8xf32")
    with pytest.raises(PassFailedException, match="plan-memory"):
        lower(parse_mlir(text))


def test_a_program_that_does_not_fit_the_target_fails_the_pass():
    """A 4-row matmul fits tiny; K = 8 in one matmul exceeds its 4x4 matrix engine."""
    text = MATMUL.replace("sizes [4, 4, 4]", "sizes [4, 8, 4]", 1)
    with pytest.raises(PassFailedException, match="k=8 exceeds"):
        lower(parse_mlir(text))
