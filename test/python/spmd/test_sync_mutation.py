"""Sync mutation of a linked multi-core program (`aitc.spmd.link`): the MLP on tiny x 2, tp
(an all_gather and an all_reduce between three phases per core).

One `hw.sem_signal`, `hw.sem_wait`, `hw.barrier` or `hw.dma_peer` at a time is deleted and the
mutant simulated: it must raise a SimulationError of kind race, deadlock or unbalanced, or
give outputs that differ from the unmutated run; never hang (the simulator's caps, and a
wall-clock deadline here, turn a hang into a failure). Every such op of the fences and
collectives the linker adds is deleted (they carry no ONNX location, or a `collective ...` /
`shard.` one); of the phases' own (kernel) sync ops, a deterministic sample of 20 spread
evenly over both cores.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

import aitc
from aitc.analysis.graph_matching import location_name
from aitc.api import Compiled
from aitc.dialects.hw import CoreOp, ProgramOp
from aitc.reference import onnxruntime_outputs
from aitc.sim.errors import SimulationError
from aitc.sim.program import COLLECTIVE_PREFIX
from aitc.sim.simulator import Simulator
from aitc.testing import model_zoo

SYNC_OPS = ("hw.sem_signal", "hw.sem_wait", "hw.barrier", "hw.dma_peer")
REPORTED = ("race", "deadlock", "unbalanced")
KERNEL_SAMPLE = 20
DEADLINE_SECONDS = 60
"""Per mutant; the unmutated program simulates in well under a second."""


@dataclass
class Subject:
    compiled: Compiled
    inputs: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]


@pytest.fixture(scope="module")
def subject() -> Subject:
    model, inputs = model_zoo.mlp()
    shapes = {name: value.shape for name, value in inputs.items()}
    compiled = aitc.compile(model, "tiny", cores=2, shard="tp", input_shapes=shapes)
    outputs = compiled.simulate(inputs).outputs
    for name, want in onnxruntime_outputs(model, inputs).items():  # the baseline is right
        np.testing.assert_allclose(outputs[name], want, rtol=1e-4, atol=1e-5)
    return Subject(compiled, inputs, outputs)


def sync_sites(module: ModuleOp) -> list[Operation]:
    """Every sync op of the program, core by core, in program order (loop bodies included)."""
    program = next(op for op in module.walk() if isinstance(op, ProgramOp))
    return [op for core in program.cores() for op in core.walk() if op.name in SYNC_OPS]


def is_linker_sync(op: Operation) -> bool:
    """A fence's or a collective's op (the linker's), not one of a lowered phase's kernels."""
    name = location_name(op.location)
    return name is None or name.startswith((COLLECTIVE_PREFIX, "shard."))


def core_of(op: Operation) -> int:
    parent = op.parent_op()
    while not isinstance(parent, CoreOp):
        assert parent is not None
        parent = parent.parent_op()
    return parent.core_id()


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """A TimeoutError if the body runs longer than `seconds` (a hang fails, not blocks)."""

    def expire(signum, frame):
        raise TimeoutError(f"still simulating after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def outcome(subject: Subject, index: int) -> str:
    """Deletes sync site `index` from a copy of the program and simulates it: the error kind,
    "differs", "same" (unnoticed) or "hang"."""
    mutant = subject.compiled.module.clone()
    victim = sync_sites(mutant)[index]
    victim.detach()
    victim.erase()
    try:
        with deadline(DEADLINE_SECONDS):
            got = Simulator(mutant, subject.compiled.target).run(subject.inputs).outputs
    except SimulationError as error:
        return error.kind
    except TimeoutError:
        return "hang"
    same = all(np.array_equal(got[name], want, equal_nan=True) for name, want in subject.outputs.items())
    return "same" if same else "differs"


def describe(op: Operation) -> str:
    shown = ("sem", "engine", "count", "peer")
    fields = ", ".join(f"{k}={v}" for k, v in op.attributes.items() if k in shown)
    return f"core {core_of(op)} {op.name}({fields}) at {location_name(op.location) or 'loc(unknown)'}"


def assert_every_deletion_is_noticed(subject: Subject, indices: list[int]) -> None:
    sites = sync_sites(subject.compiled.module)
    unnoticed = []
    for index in indices:
        result = outcome(subject, index)
        if result not in (*REPORTED, "differs"):
            unnoticed.append(f"#{index} {describe(sites[index])}: {result}")
    assert not unnoticed, f"{len(unnoticed)} of {len(indices)} deletions not caught:\n" + "\n".join(unnoticed)


def test_program_has_fences_and_collectives(subject: Subject):
    """What the mutation below deletes is there: per core the fences' barriers, semaphore
    signals and waits, and each collective's peer DMA."""
    linker = [op for op in sync_sites(subject.compiled.module) if is_linker_sync(op)]
    for core in (0, 1):
        names = {op.name for op in linker if core_of(op) == core}
        assert names == set(SYNC_OPS), (core, names)


def test_deleting_any_fence_or_collective_sync_op_is_caught(subject: Subject):
    sites = sync_sites(subject.compiled.module)
    indices = [i for i, op in enumerate(sites) if is_linker_sync(op)]
    assert len(indices) >= 20
    assert_every_deletion_is_noticed(subject, indices)


def test_deleting_sampled_kernel_sync_ops_is_caught(subject: Subject):
    sites = sync_sites(subject.compiled.module)
    kernel = [i for i, op in enumerate(sites) if not is_linker_sync(op)]
    assert len(kernel) >= KERNEL_SAMPLE
    sample = [kernel[k * len(kernel) // KERNEL_SAMPLE] for k in range(KERNEL_SAMPLE)]
    assert {core_of(sites[i]) for i in sample} == {0, 1}
    assert_every_deletion_is_noticed(subject, sample)
