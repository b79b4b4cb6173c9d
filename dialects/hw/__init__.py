"""The `hw` dialect: the instruction set of aitc's virtual NPU, one op per instruction.

A program is a `hw.program` holding its data layout (`hw.tensor` input/output descriptors and
`hw.const` weight segments, all at absolute DRAM addresses) and one `hw.core` per core, whose
body is that core's instruction stream ending in `hw.end`. Instructions read like assembly:

    hw.dma_in sram[0x4000] <- dram[0x100000], rows=32, row_bytes=128, src_stride=512
    hw.matmul acc[0x0] <- sram[0x0], sram[0x1000], m=32, k=32, n=32, accumulate
    hw.sem_signal 3, engine=matrix
    hw.loop 8 {
      hw.dma_in sram[0x0 + 0x200*i0] <- dram[0x8000 + 0x800*i0], rows=4, row_bytes=512
    }

Addresses are byte addresses `space[base + step*iD ...]`; `iD` is the index of the enclosing
`hw.loop` at nesting depth D (outermost = i0), so hardware loops advance addresses without
unrolling. Engines per core: `dma0` .. `dma{q-1}` (q = target DMA queues; `dma0` is the default
for loads, `dma1` for stores), `matrix`, `vector`. Semaphores are per-core counters; a wait
names the engine that blocks, and a signal may count up a semaphore of another core
(`hw.sem_signal 0, engine=dma1, peer=1`: "my peer writes to core 1 are done").

The simulator (`aitc/sim/`) is the living definition of every instruction: each op's docstring
points at the function that executes it. Field lists (`FIELDS`) drive one generic parser/printer,
the binary encoder (`aitc/binary.py`) and the simulator's decoder, so they cannot drift apart.

The dialect is a package, one module per part, each importing only those listed before it:

    fields.py        addresses (`AddressAttr`), instruction fields (`Field`), dtypes, spaces
    structure.py     `InstructionOp` (the base of every instruction), hw.loop, hw.core, hw.end,
                     hw.tensor, hw.const
    instructions.py  the instructions: DMA, matrix, vector, control
    program.py       hw.program, and the target limits its verifier checks (`check_program`)
"""

from __future__ import annotations

from xdsl.ir import Dialect

from aitc.dialects.hw.fields import (
    DTYPES,
    ENGINES_DOC,
    SPACES,
    AddressAttr,
    Field,
    dst,
    enum,
    flag,
    num,
    parse_address,
    positional_int,
    real,
    src,
)
from aitc.dialects.hw.instructions import (
    ACTIVATIONS,
    BINARY_OPS,
    DEFAULT_DMA_QUEUE,
    ENGINE_NAMES,
    FLOAT_UNARY,
    UNARY_OPS,
    AccReadOp,
    BarrierOp,
    DmaGatherOp,
    DmaInOp,
    DmaLocalOp,
    DmaOp,
    DmaOutOp,
    DmaPeerOp,
    MatmulOp,
    SemaphoreOp,
    SemSignalOp,
    SemWaitOp,
    VBinaryOp,
    VCastOp,
    VectorOp,
    VImmOp,
    VReduceOp,
    VSelectOp,
    VUnaryOp,
)
from aitc.dialects.hw.program import (
    KERNELS_ATTR,
    KernelEstimate,
    ProgramOp,
)
from aitc.dialects.hw.structure import (
    ConstOp,
    CoreOp,
    EndOp,
    InstructionOp,
    IntegerRegionOp,
    LoopOp,
    TensorOp,
    loop_depth,
)

__all__ = [
    "ACTIVATIONS",
    "BINARY_OPS",
    "DEFAULT_DMA_QUEUE",
    "DTYPES",
    "ENGINES_DOC",
    "ENGINE_NAMES",
    "FLOAT_UNARY",
    "INSTRUCTIONS",
    "KERNELS_ATTR",
    "SPACES",
    "UNARY_OPS",
    "AccReadOp",
    "AddressAttr",
    "BarrierOp",
    "ConstOp",
    "CoreOp",
    "DmaGatherOp",
    "DmaInOp",
    "DmaLocalOp",
    "DmaOp",
    "DmaOutOp",
    "DmaPeerOp",
    "EndOp",
    "Field",
    "Hw",
    "InstructionOp",
    "IntegerRegionOp",
    "KernelEstimate",
    "LoopOp",
    "MatmulOp",
    "ProgramOp",
    "SemSignalOp",
    "SemWaitOp",
    "SemaphoreOp",
    "TensorOp",
    "VBinaryOp",
    "VCastOp",
    "VImmOp",
    "VReduceOp",
    "VSelectOp",
    "VUnaryOp",
    "VectorOp",
    "dst",
    "enum",
    "flag",
    "loop_depth",
    "num",
    "parse_address",
    "positional_int",
    "real",
    "src",
]

INSTRUCTIONS: tuple[type[InstructionOp], ...] = (
    DmaInOp, DmaOutOp, DmaLocalOp, DmaPeerOp, DmaGatherOp, MatmulOp, VBinaryOp, VImmOp, VUnaryOp, VSelectOp,
    VReduceOp, VCastOp, AccReadOp, SemSignalOp, SemWaitOp, BarrierOp,
)  # fmt: skip
"""Every instruction, in opcode order (the binary encoding numbers them by this tuple)."""

Hw = Dialect(
    "hw",
    [ProgramOp, CoreOp, EndOp, LoopOp, TensorOp, ConstOp, *INSTRUCTIONS],
    [AddressAttr],
)
