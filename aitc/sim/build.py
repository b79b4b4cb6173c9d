"""Building hw programs from Python: for tests, benchmarks and generated examples.

    prog = program([core(0, [DmaInOp(...), SemSignalOp(sem=0, engine="dma0"), ...])],
                   data=[tensor("x", "input", 0x0, (4, 16)), const(0x400, weights)], target="tiny")

`kernel` wraps instructions in the loads, semaphores and stores needed to run them on one core,
which is how the semantics tests exercise one instruction at a time.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp, NameLoc, NoneAttr, StringAttr
from xdsl.ir import Operation

from aitc.dialects.hw import (
    AddressAttr,
    ConstOp,
    CoreOp,
    DmaInOp,
    DmaOutOp,
    EndOp,
    InstructionOp,
    ProgramOp,
    SemSignalOp,
    SemWaitOp,
    TensorOp,
)
from aitc.types import tensor_type
from aitc.weights import array_to_attr


def named(op: Operation, node: str) -> Operation:
    """Attaches an ONNX node name (`loc("node")`) to `op` and returns it."""
    op.location = NameLoc(StringAttr(node), NoneAttr())
    return op


def tensor(
    name: str, kind: str, addr: int, shape: Sequence[int], dtype: np.dtype | type = np.float32
) -> TensorOp:
    """A hw.tensor input or output at DRAM `addr`."""
    return TensorOp(name, kind, addr, tensor_type(shape, np.dtype(dtype)))


def const(addr: int, array: np.ndarray, name: str = "w") -> ConstOp:
    """A hw.const segment holding `array` at DRAM `addr`."""
    return ConstOp(addr, array_to_attr(np.asarray(array), name))


def core(core_id: int, ops: Sequence[Operation]) -> CoreOp:
    """A hw.core with `ops` followed by hw.end."""
    return CoreOp(core_id, [*ops, EndOp()])


def program(
    cores: Sequence[CoreOp], data: Sequence[Operation] = (), target: str = "tiny", name: str = "test"
) -> ModuleOp:
    """A module holding one hw.program (not verified: the simulator verifies what it decodes)."""
    return ModuleOp([ProgramOp(name, target, [*data, *cores])])


def _aligned(addr: int) -> int:
    """`addr` rounded up to 64 bytes."""
    return (addr + 63) // 64 * 64


def kernel(
    ops: Sequence[InstructionOp],
    engine: str,
    loads: Sequence[tuple[str, int, np.ndarray]] = (),
    stores: Sequence[tuple[str, int, Sequence[int], np.dtype | type]] = (),
    target: str = "tiny",
) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """A one-core program running `ops` on `engine` between loads and stores.

    loads: (space, address, array) placed in SRAM/ACC before `ops` (inputs `in0`, `in1`, ...);
    stores: (space, address, shape, dtype) read back afterwards (outputs `out0`, `out1`, ...).
    Returns the module and its inputs.
    """
    data: list[Operation] = []
    body: list[Operation] = []
    inputs: dict[str, np.ndarray] = {}
    addr = 0
    for i, (space, at, array) in enumerate(loads):
        array = np.ascontiguousarray(array)
        inputs[f"in{i}"] = array
        data.append(tensor(f"in{i}", "input", addr, array.shape, array.dtype))
        body.append(
            DmaInOp(dst=AddressAttr(space, at), src=AddressAttr("dram", addr), row_bytes=array.nbytes)
        )
        addr = _aligned(addr + array.nbytes)
    body += [SemSignalOp(sem=0, engine="dma0"), SemWaitOp(sem=0, engine=engine), *ops]
    body += [SemSignalOp(sem=1, engine=engine), SemWaitOp(sem=1, engine="dma1")]
    for i, (space, at, shape, dtype) in enumerate(stores):
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        data.append(tensor(f"out{i}", "output", addr, shape, dtype))
        body.append(DmaOutOp(dst=AddressAttr("dram", addr), src=AddressAttr(space, at), row_bytes=nbytes))
        addr = _aligned(addr + nbytes)
    return program([core(0, body)], data, target), inputs
