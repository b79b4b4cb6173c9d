"""Tests of `plan-memory`: the plan's invariants, checked two independent ways.

The tile interpreter ignores offsets, so running a module says nothing about its plan. Instead:
- `check_plan` (static): aligned offsets inside each memory, no two buffers live at the same
  time share bytes, inputs/outputs/constants share bytes with nothing;
- `ShadowMemory` (dynamic): replays every window access of a run on byte-owner maps laid out
  as planned; a read that finds bytes last written through another buffer means two buffers
  that share bytes were live together.
Hypothesis generates random straight-line/loop programs for both.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.interpreter import Interpreter, PythonValues
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.scf import ScfFunctions
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from aitc.analysis.liveness import align_up, byte_size, live_span, program_spans
from aitc.dialects import tile
from aitc.interp.run import entry_function, is_output_arg, random_inputs, run_module
from aitc.interp.tile import TileFunctions
from aitc.ir import make_context, parse_mlir, print_mlir
from aitc.passes.tile.plan_memory import PEAK_ATTRS, PlanMemoryPass, check_plan, describe, planned_offset
from aitc.types import numpy_dtype, shape_and_element

CTX = make_context()
HEAD = "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n%c2 = arith.constant 2 : index\n"
ARGS = (
    '%x: memref<8x16xf32, "dram"> {graph.name = "x"}, '
    '%y: memref<8x16xf32, "dram"> {graph.name = "y", tile.output}'
)


def sram(name: str, rows: int) -> str:
    return f'%{name} = tile.alloc : memref<{rows}x16xf32, "sram">\n'


def copy(src: str, src_rows: int, dst: str, dst_rows: int, rows: int) -> str:
    """A tile.copy of `rows` x 16 from the top of `src` to the top of `dst`; buffers whose name
    starts with x, y, w or t live in DRAM, the others in SRAM."""
    types = [
        f'memref<{n}x16xf32, "{"dram" if b[0] in "xywt" else "sram"}">'
        for b, n in ((src, src_rows), (dst, dst_rows))
    ]
    return f"tile.copy %{src}[%c0, %c0] to %{dst}[%c0, %c0] sizes [{rows}, 16] : {types[0]}, {types[1]}\n"


def module_of(body: str) -> ModuleOp:
    return parse_mlir(f"func.func @main({ARGS}) {{\n{HEAD}{body}func.return\n}}\n")


def plan(module: ModuleOp, target: str = "tiny") -> ModuleOp:
    PlanMemoryPass(target=target).apply(CTX, module)
    module.verify()
    return module


def _offset(buffer: SSAValue) -> int:
    offset = planned_offset(buffer)
    assert offset is not None
    return offset


def attr(op: Operation, key: str) -> int:
    value = op.attributes[key]
    assert isinstance(value, IntegerAttr)
    return value.value.data


# --------------------------------------------------------------------------- dynamic check


class ShadowMemory(Interpreter.Listener):
    """Byte-owner maps of SRAM/ACC/DRAM laid out as planned, updated by every window access."""

    def __init__(self, function: func.FuncOp):
        self.owner = {s: np.full(attr(function, k) + 1, -1) for s, k in PEAK_ATTRS.items()}
        self.ids: dict[SSAValue, int] = {}
        self.problems: list[str] = []
        initialised = [a for i, a in enumerate(function.args) if not is_output_arg(function, i)]
        initialised += [op.buffer for op in function.walk() if isinstance(op, tile.ConstOp)]
        for value in initialised:
            self._mark(value, np.arange(byte_size(tile.memref_of(value))))

    def _id(self, value: SSAValue) -> int:
        return self.ids.setdefault(value, len(self.ids))

    def _mark(self, root: SSAValue, local: np.ndarray) -> None:
        self.owner[tile.space_of(root)][_offset(root) + local] = self._id(root)

    def _bytes(self, op: tile.WindowOp, name: str, buffer: SSAValue, starts: PythonValues) -> np.ndarray:
        """Byte offsets (from the root buffer's start) of window `name`: reshape keeps row-major
        order, so flat element indices in a view are those of its source."""
        type_ = tile.memref_of(buffer)
        box, shape = op.window_shape(name), type_.get_shape()
        grid = np.indices(box).reshape(len(box), -1) + np.asarray(starts, dtype=np.int64)[:, None]
        item = numpy_dtype(type_.get_element_type()).itemsize
        flat = np.asarray(np.ravel_multi_index(tuple(grid), shape))
        return (flat[:, None] * item + np.arange(item)).ravel()

    def will_interpret_op(self, op: Operation, args: PythonValues) -> None:
        if not isinstance(op, tile.WindowOp):
            return
        accesses, position, writes = op.accesses(), 0, []
        for index, (name, (buffer, indices)) in enumerate(zip(op.ACCESSES, accesses, strict=True)):
            local = self._bytes(op, name, buffer, args[position + 1 : position + 1 + len(indices)])
            position += 1 + len(indices)
            root = buffer
            while isinstance(root.owner, tile.ReshapeOp):
                root = root.owner.source
            if index == len(accesses) - 1:
                writes.append((root, local))
            if index < len(accesses) - 1 or getattr(op, "accumulate", None) is not None:
                self._check_read(op, root, local)
        for root, local in writes:
            self._mark(root, local)

    def _check_read(self, op: Operation, root: SSAValue, local: np.ndarray) -> None:
        space = tile.space_of(root)
        seen = self.owner[space][_offset(root) + local]
        if np.any((seen != self._id(root)) & (seen != -1)):
            self.problems.append(
                f"{op.name} reads %{root.name_hint}: bytes overwritten through another buffer"
            )


def _zeros(type_: Attribute) -> np.ndarray:
    shape, element = shape_and_element(type_)
    return np.zeros(shape, numpy_dtype(element))


def shadow_run(module: ModuleOp) -> list[str]:
    """Runs the planned `module` on random inputs with a ShadowMemory; returns its problems."""
    function = entry_function(module)
    shadow = ShadowMemory(function)
    interpreter = Interpreter(module, listeners=(shadow,))
    for functions in (FuncFunctions(), ArithFunctions(), ScfFunctions(), TileFunctions()):
        interpreter.register_implementations(functions)
    inputs = iter(random_inputs(function).values())
    args = [
        _zeros(t) if is_output_arg(function, i) else next(inputs)
        for i, t in enumerate(function.function_type.inputs.data)
    ]
    interpreter.call_op(function, tuple(args))
    return shadow.problems


# --------------------------------------------------------------------------- fixed cases


def two_kernels(rows: int) -> str:
    """Kernels k1 and k2 one after the other, each with one SRAM buffer of `rows` x 16 f32."""
    return (
        f'tile.kernel "k1" {{\n{sram("a", rows)}{copy("x", 8, "a", rows, 8)}{copy("a", rows, "y", 8, 8)}}}\n'
        f'tile.kernel "k2" {{\n{sram("b", rows)}{copy("y", 8, "b", rows, 8)}{copy("b", rows, "y", 8, 8)}}}\n'
    )


LOOP = (
    f'tile.kernel "k" {{\n{sram("a", 4)}{sram("c", 4)}scf.for %i = %c0 to %c2 step %c1 {{\n'
    + "".join(
        copy(a, 8 if a in "xy" else 4, b, 8 if b in "xy" else 4, 4) for a, b in ["xa", "ay", "yc", "cy"]
    )
    + "}\n}\n"
)
PAIR = (
    f'tile.kernel "k" {{\n{sram("a", 8)}{sram("b", 8)}'
    + "".join(copy(a, 8, b, 8, 8) for a, b in ["xa", "xb", "ay", "by"])
    + "}\n"
)
DRAM = (
    "%w = tile.const dense<2.0> : tensor<8x16xf32>\n"
    f'tile.kernel "k" {{\n{sram("s", 8)}'
    '%t1 = tile.alloc : memref<8x16xf32, "dram">\n%t2 = tile.alloc : memref<8x16xf32, "dram">\n'
    + "".join(
        copy(a, 8, b, 8, 8)
        for a, b in [("w", "s"), ("s", "t1"), ("t1", "s"), ("s", "t2"), ("t2", "s"), ("s", "y")]
    )
    + "}\n"
)


def _allocs(module: ModuleOp) -> dict[str, tile.AllocOp]:
    return {op.buffer.name_hint or "": op for op in module.walk() if isinstance(op, tile.AllocOp)}


def test_kernels_that_fit_side_by_side_keep_apart():
    """Each kernel's buffers live through the kernel before it when both fit: k2's first load
    need not wait for k1's last read of the same bytes."""
    module = plan(module_of(two_kernels(8)))
    allocs = _allocs(module)
    assert attr(allocs["a"], "offset") == 0
    assert attr(allocs["b"], "offset") == 512
    assert check_plan(module) == []
    assert shadow_run(module) == []


def test_reuse_across_kernels_shares_bytes():
    """tiny has 16 KiB of SRAM: two kernels of 10 KiB each do not fit side by side, so they
    share bytes (their lifetimes are disjoint) and the peak is one kernel's."""
    module = plan(module_of(two_kernels(160)))
    allocs = _allocs(module)
    assert attr(allocs["a"], "offset") == attr(allocs["b"], "offset") == 0
    peak = attr(entry_function(module), "tile.sram_peak")
    assert peak == 10240 < sum(byte_size(op.buffer.type) for op in allocs.values())
    assert check_plan(module) == []
    assert shadow_run(module) == []


def test_buffers_used_in_one_loop_never_share():
    module = plan(module_of(LOOP))
    allocs = _allocs(module)
    assert attr(allocs["a"], "offset") != attr(allocs["c"], "offset")
    assert check_plan(module) == []
    assert shadow_run(module) == []


def test_planning_keeps_results():
    module = module_of(LOOP)
    inputs = random_inputs(entry_function(module))
    before = run_module(module, inputs)
    after = run_module(plan(module), inputs)
    assert all(np.array_equal(before[k], after[k]) for k in before)


def test_same_input_same_offsets_and_replanning_is_stable():
    first = print_mlir(plan(module_of(LOOP + two_kernels(8))))
    assert first == print_mlir(plan(module_of(LOOP + two_kernels(8))))
    assert first == print_mlir(plan(parse_mlir(first)))


@pytest.mark.parametrize(
    "body",
    [
        f'tile.kernel "huge" {{\n{sram("a", 300)}{copy("x", 8, "a", 300, 8)}}}\n',
        f'{sram("a", 300)}tile.kernel "huge" {{\n{copy("x", 8, "a", 300, 8)}}}\n',  # alloc outside
    ],
    ids=["alloc-in-kernel", "alloc-in-function"],
)
def test_overflow_names_kernel_bytes_and_fix(body: str):
    with pytest.raises(
        PassFailedException, match=r'kernel "huge" needs 19200 bytes of SRAM.*has 16384: use smaller'
    ):
        plan(module_of(body))
    assert attr(entry_function(plan(module_of(body), "edge")), "tile.sram_peak") == 19200


def test_unknown_target_is_a_pass_failure():
    with pytest.raises(PassFailedException, match="plan-memory: unknown target 'nope'"):
        plan(module_of(two_kernels(8)), "nope")


def test_checkers_catch_a_broken_plan():
    module = plan(module_of(PAIR))
    assert check_plan(module) == []
    assert shadow_run(module) == []
    allocs = _allocs(module)
    allocs["b"].attributes["offset"] = allocs["a"].attributes["offset"]
    assert any("%a and %b are live together" in p for p in check_plan(module))
    assert shadow_run(module) == ["tile.copy reads %a: bytes overwritten through another buffer"]
    allocs["b"].attributes["offset"] = IntegerAttr(32, i64)
    assert any("bad offset 32" in p for p in check_plan(module))
    del allocs["b"].attributes["offset"]
    assert any("bad offset None" in p for p in check_plan(module))


def test_dram_arguments_constants_and_intermediates():
    module = plan(module_of(DRAM))
    function = entry_function(module)
    const = next(op for op in module.walk() if isinstance(op, tile.ConstOp))
    args_end = max(_offset(a) + byte_size(tile.memref_of(a)) for a in function.args)
    assert attr(const, "offset") >= args_end
    allocs = _allocs(module)
    assert attr(allocs["t1"], "offset") == attr(allocs["t2"], "offset") > attr(const, "offset")
    assert check_plan(module) == []
    assert shadow_run(module) == []


# --------------------------------------------------------------------------- random programs


class ProgramBuilder:
    """Random SRAM programs over prefix windows: every read covers only rows its buffer wrote
    before, so any clobbered byte a read finds is the plan's fault, not the program's."""

    def __init__(self, draw: st.DrawFn):
        self.draw, self.rows, self.written = draw, {}, {}

    def alloc(self, name: str) -> str:
        self.rows[name] = self.draw(st.integers(1, 8))
        return sram(name, self.rows[name])

    def statement(self, names: list[str], in_loop: bool) -> str:
        kinds = ["load", "move", "store"] + ([] if in_loop else ["loop"])
        kind = self.draw(st.sampled_from(kinds))
        src, dst = self.draw(st.permutations(names))[:2]
        ready = self.written.get(src, 0) > 0
        if kind == "loop":
            count = self.draw(st.integers(1, 3))
            body = "".join(self.statement(names, True) for _ in range(count))
            return f"scf.for %i = %c0 to %c2 step %c1 {{\n{body}}}\n"
        if kind == "store" and ready:
            return copy(src, self.rows[src], "y", 8, self.written[src])
        if kind == "move" and ready:
            count = min(self.written[src], self.rows[dst])
            self.written[dst] = max(self.written.get(dst, 0), count)
            return copy(src, self.rows[src], dst, self.rows[dst], count)
        self.written[src] = self.rows[src]
        return copy("x", 8, src, self.rows[src], self.rows[src])


@st.composite
def programs(draw: st.DrawFn) -> str:
    builder = ProgramBuilder(draw)
    shared = [f"g{i}" for i in range(draw(st.integers(0, 2)))]
    text = "".join(builder.alloc(name) for name in shared)
    for kernel in range(draw(st.integers(1, 3))):
        local = [f"k{kernel}_{i}" for i in range(draw(st.integers(2 - min(len(shared), 2), 3)))]
        body = "".join(builder.alloc(name) for name in local)
        body += "".join(builder.statement(shared + local, False) for _ in range(draw(st.integers(1, 5))))
        text += f'tile.kernel "k{kernel}" {{\n{body}}}\n'
    return text


def _max_live_bytes(function: func.FuncOp) -> int:
    spans = program_spans(function)
    lives = [
        (live_span(op.buffer, spans), byte_size(op.buffer.type))
        for op in function.walk()
        if isinstance(op, tile.AllocOp)
    ]
    return max((sum(n for (a, b), n in lives if a <= p <= b) for p in spans.values() for p in p), default=0)


@settings(max_examples=60, deadline=None)
@given(programs())
def test_random_programs_are_planned_soundly(body: str):
    module = plan(module_of(body))
    assert check_plan(module) == []
    assert shadow_run(module) == []
    function = entry_function(module)
    sizes = [byte_size(op.buffer.type) for op in module.walk() if isinstance(op, tile.AllocOp)]
    peak = attr(function, "tile.sram_peak")
    assert _max_live_bytes(function) <= peak <= sum(align_up(n) for n in sizes)


def test_describe_names_a_kernel_with_a_file_location():
    """Error messages name the kernel around a buffer with its location; a file location
    (as a hand-written .mlir gives) used to crash describe() with AttributeError."""
    text = """
func.func @f(%x: memref<8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  tile.kernel "k" {
    %a = tile.alloc : memref<8xf32, "sram">
    tile.copy %x[%c0] to %a[%c0] sizes [8] : memref<8xf32, "dram">, memref<8xf32, "sram">
  } loc("model.mlir":3:5)
  func.return
}"""
    module = parse_mlir(text)
    alloc = next(op for op in module.walk() if isinstance(op, tile.AllocOp))
    assert describe(alloc) == 'kernel "k" (model.mlir:3:5)'
