"""Property tests of the sync level on random tile programs: insert-semaphores (+ optimize-sync)
must give programs that the sync interpreter runs without a race or a deadlock, with the tile
interpreter's results, whatever the engine order; every single sync op of the result must be
needed (deleting it is caught); and optimize-sync must keep every ordering of a naive insertion
(one semaphore per conflicting pair, nothing pruned).

The programs read two DRAM inputs and write one output through a few SRAM buffers and one
accumulator, with loads, on-chip copies, vector ops, matmuls, accumulator reads and stores
placed in straight-line code and in (nested) scf.for loops. Windows are 4 x 8 rows of 8 x 8
buffers at row 0 or 4, chosen by a constant, by the loop index (`%i * 4`, loops of <= 2 trips)
or by a rotating slot (`(%i mod 2) * 4`). Buffers get plan-memory offsets that may share bytes,
so that ops on different buffers can depend on each other.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from aitc.diagnostics import AitcError
from aitc.dialects import sync
from aitc.interp.run import entry_function, random_inputs, run_module
from aitc.interp.sync import run_sync
from aitc.interp.tile import run_tile_module
from aitc.ir import parse_mlir, print_mlir
from aitc.passes.pipelines import parse_pipeline, run_pipeline
from aitc.passes.sync.insert_semaphores import Inserter
from aitc.passes.sync.insert_semaphores.dependences import Dependences, Program
from aitc.passes.sync.schedule_engines import schedule_function
from aitc.target import load_target

ORDERS = (("dma0", "dma1", "matrix", "vector"), ("vector", "matrix", "dma1", "dma0"))
"""Engine visiting orders: producers first (a missing WAR wait shows), consumers first (RAW)."""

SRAM = 'memref<8x8xf32, "sram">'
DRAM = 'memref<8x8xf32, "dram">'
ACC = 'memref<4x8xf32, "acc">'
ABS, ADD = '{op = "abs"}', '{op = "add"}'


@dataclass
class Writer:
    rng: random.Random
    lines: list[str] = field(default_factory=list)
    counter: int = 0
    loops: list[tuple[str, int]] = field(default_factory=list)  # (induction, trips)
    indent: int = 2

    def emit(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def row(self) -> str:
        """A window row: constant, loop index times 4, or rotating slot times 4."""
        choices = ["const"]
        if self.loops:
            choices += ["slot"] + (["index"] if self.loops[-1][1] <= 2 else [])
        kind = self.rng.choice(choices)
        if kind == "const":
            return self.rng.choice(["%c0", "%c4"])
        induction = self.rng.choice([name for name, trips in self.loops if kind == "slot" or trips <= 2])
        base = induction
        if kind == "slot":
            base = self.fresh("s")
            self.emit(f"{base} = arith.remsi {induction}, %c2 : index")
        row = self.fresh("r")
        self.emit(f"{row} = arith.muli {base}, %c4 : index")
        return row

    def op(self, srams: list[str]) -> None:
        kind = self.rng.choice(["load", "load", "copy", "unary", "binary", "matmul", "acc_read", "store"])
        a, b, c = (self.rng.choice(srams) for _ in range(3))
        r1, r2, r3 = self.row(), self.row(), self.row()
        x = self.rng.choice(["%x", "%w"])
        text = {
            "load": f"tile.copy {x}[{r1}, %c0] to {a}[{r2}, %c0] sizes [4, 8] : {DRAM}, {SRAM}",
            "copy": f"tile.copy {a}[{r1}, %c0] to {b}[{r2}, %c0] sizes [4, 8] : {SRAM}, {SRAM}",
            "unary": f"tile.unary {a}[{r1}, %c0] to {b}[{r2}, %c0] sizes [4, 8] {ABS} : {SRAM}, {SRAM}",
            "binary": f"tile.binary {a}[{r1}, %c0], {b}[{r2}, %c0] to {c}[{r3}, %c0] sizes [4, 8] {ADD}"
            f" : {SRAM}, {SRAM}, {SRAM}",
            "matmul": f"tile.matmul {a}[{r1}, %c0], {b}[%c0, %c0] to %acc[%c0, %c0] sizes [4, 8, 8]"
            f"{' {accumulate}' if self.rng.random() < 0.5 else ''} : {SRAM}, {SRAM}, {ACC}",
            "acc_read": f"tile.acc_read %acc[%c0, %c0] to {a}[{r1}, %c0] sizes [4, 8] : {ACC}, {SRAM}",
            "store": f"tile.copy {a}[{r1}, %c0] to %out[{r2}, %c0] sizes [4, 8] : {SRAM}, {DRAM}",
        }[kind]
        self.emit(text)

    def body(self, srams: list[str], length: int, depth: int) -> None:
        for _ in range(length):
            if depth < 2 and self.rng.random() < 0.3:
                self.loop(srams, depth)
            else:
                self.op(srams)

    def loop(self, srams: list[str], depth: int) -> None:
        trips = self.rng.choice([1, 2, 2, 3, 4])
        induction = self.fresh("i")
        self.emit(f"scf.for {induction} = %c0 to %c{trips} step %c1 {{")
        self.indent += 1
        self.loops.append((induction, trips))
        self.body(srams, self.rng.randint(1, 4), depth + 1)
        self.loops.pop()
        self.indent -= 1
        self.emit("}")


def random_program(seed: int, shared_offsets: bool = True) -> str:
    """A random tile-level @main(x, w) -> out (see the module docstring)."""
    rng = random.Random(seed)
    writer = Writer(rng)
    srams = [f"%b{k}" for k in range(rng.randint(2, 4))]
    for name in srams:
        offset = f" {{offset = {rng.choice([0, 256, 512, 768])} : i64}}" if shared_offsets else ""
        writer.emit(f"{name} = tile.alloc{offset} : {SRAM}")
    writer.emit(f"%acc = tile.alloc : {ACC}")
    writer.body(srams, rng.randint(3, 9), 0)
    constants = "\n".join(f"  %c{v} = arith.constant {v} : index" for v in (0, 1, 2, 3, 4))
    header = (
        f'func.func @main(%x: {DRAM} {{graph.name = "x"}}, %w: {DRAM} {{graph.name = "w"}}, '
        f'%out: {DRAM} {{graph.name = "out", tile.output}}) {{'
    )
    kernel = f'  tile.kernel "random{seed}" {{\n' + "\n".join(writer.lines) + "\n  }"
    return f"{header}\n{constants}\n{kernel}\n  func.return\n}}\n"


# --------------------------------------------------------------------------- the properties


def _apply(module: ModuleOp, spec: str) -> None:
    run_pipeline(module, parse_pipeline(spec))


def _sync_ops(module: ModuleOp) -> list[sync.SignalOp | sync.WaitOp]:
    return [op for op in module.walk() if isinstance(op, sync.SignalOp | sync.WaitOp)]


def _check_runs_like_tile_level(module: ModuleOp, inputs: dict, expected: dict) -> None:
    for order in ORDERS:
        run = run_sync(module, inputs, order=order)
        np.testing.assert_array_equal(run.outputs["out"], expected["out"])
        assert not any(run.semaphores.values())


@pytest.mark.parametrize("seed", range(24))
def test_inserted_sync_is_sound_and_every_op_needed(seed: int):
    module = parse_mlir(random_program(seed))
    inputs = random_inputs(entry_function(module))
    expected = run_module(module, inputs)
    _apply(module, "convert-tile-to-sync{target=tiny},insert-semaphores,optimize-sync")
    assert all(op.semaphore() < 16 for op in _sync_ops(module)), "tiny has 16 semaphores"
    _check_runs_like_tile_level(module, inputs, expected)
    synced = print_mlir(module)
    for k in range(len(_sync_ops(module))):
        mutant = parse_mlir(synced)
        victim = _sync_ops(mutant)[k]
        victim.detach()
        victim.erase()
        with pytest.raises(AitcError, match=r"data race|deadlock|unbalanced"):
            run_sync(mutant, inputs)


@pytest.mark.parametrize("seed", range(24))
def test_scheduled_programs_compute_what_the_tile_level_does(seed: int):
    """schedule-engines reorders runs and inlines loops of one trip: the tile level still
    computes the same (every pair of ops sharing a byte, one writing, kept its order), and so
    does the synchronised program in every engine order."""
    module = parse_mlir(random_program(seed))
    inputs = random_inputs(entry_function(module))
    expected = run_module(module, inputs)
    _apply(module, "convert-tile-to-sync{target=tiny},schedule-engines")
    sequential = run_tile_module(module, inputs, entry_function(module).sym_name.data)  # op by op, in order
    np.testing.assert_array_equal(sequential["out"], expected["out"])
    _apply(module, "insert-semaphores,optimize-sync")
    _check_runs_like_tile_level(module, inputs, expected)


def test_schedule_engines_moves_ops_and_is_deterministic():
    """Over the random programs some runs change order (the property above is not vacuous),
    and scheduling the same program twice gives the same text."""
    moved = 0
    for seed in range(24):
        texts = []
        for _ in range(2):
            module = parse_mlir(random_program(seed))
            _apply(module, "convert-tile-to-sync{target=tiny}")
            function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
            moved += schedule_function(function, load_target("tiny"))
            texts.append(print_mlir(module))
        assert texts[0] == texts[1]
    assert moved > 0


def _insert_naively(module: ModuleOp) -> None:
    """One semaphore per dependence edge, none pruned: lots of implied edges."""
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    inserter = Inserter()
    for number, edge in enumerate(Dependences(Program(function)).edges()):
        inserter.insert(edge, number)


@pytest.mark.parametrize("seed", range(100, 140))
def test_optimize_sync_keeps_every_ordering(seed: int):
    module = parse_mlir(random_program(seed))
    inputs = random_inputs(entry_function(module))
    expected = run_module(module, inputs)
    _apply(module, "convert-tile-to-sync{target=tiny}")
    _insert_naively(module)
    before = len(_sync_ops(module))
    _apply(module, "optimize-sync")
    assert len(_sync_ops(module)) <= before
    _check_runs_like_tile_level(module, inputs, expected)
