"""The instructions of the `hw` dialect, one op per instruction, by engine: DMA, matrix,
vector, control (semaphores and barriers).

Each is an `InstructionOp` with its `FIELDS` (`fields.py`); its docstring points at the
simulator function that defines it (`aitc/sim/execute.py`).
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.irdl import (
    irdl_op_definition,
)

from aitc.dialects.hw.fields import (
    DTYPES,
    AddressAttr,
    Field,
    dst,
    enum,
    flag,
    num,
    positional_int,
    real,
    require,
    src,
)
from aitc.dialects.hw.structure import InstructionOp

# --------------------------------------------------------------------------- DMA engine

_DMA_COMMON = (num("rows", 1), num("row_bytes"), num("src_stride", 0), num("dst_stride", 0), num("queue", -1))


class DmaOp(InstructionOp):
    """Base of DMA instructions: `rows` rows of `row_bytes` bytes; strides in bytes between row
    starts (0 = dense, i.e. row_bytes). `queue` picks the DMA engine (-1 = the default)."""

    ENGINE: ClassVar[str] = "dma"

    def verify_instruction(self) -> None:
        require(
            self.get_int("rows") >= 1 and self.get_int("row_bytes") >= 1,
            f"{self.name}: rows and row_bytes must be >= 1",
        )
        for key in ("src_stride", "dst_stride"):
            require(self.get_int(key) >= 0, f"{self.name}: {key} must be >= 0")


@irdl_op_definition
class DmaInOp(DmaOp):
    """Strided copy DRAM -> SRAM (default engine dma0). Simulator: `aitc/sim/execute.py:dma_copy`.

    ```mlir
    hw.dma_in sram[0x4000] <- dram[0x100000], rows=32, row_bytes=128, src_stride=512
    ```
    """

    name = "hw.dma_in"
    FIELDS: ClassVar[tuple[Field, ...]] = (dst("dst", "sram", "acc"), src("src", "dram"), *_DMA_COMMON)


@irdl_op_definition
class DmaOutOp(DmaOp):
    """Strided copy SRAM -> DRAM (default engine dma1). Simulator: `aitc/sim/execute.py:dma_copy`.

    ```mlir
    hw.dma_out dram[0x200000] <- sram[0x0], rows=32, row_bytes=128, dst_stride=512
    ```
    """

    name = "hw.dma_out"
    FIELDS: ClassVar[tuple[Field, ...]] = (dst("dst", "dram"), src("src", "sram", "acc"), *_DMA_COMMON)


@irdl_op_definition
class DmaLocalOp(DmaOp):
    """Strided copy within one core: SRAM <-> SRAM, SRAM <-> ACC (default engine dma0).
    Simulator: `aitc/sim/execute.py:dma_copy`.

    ```mlir
    hw.dma_local sram[0x8000] <- acc[0x0], rows=32, row_bytes=128
    ```
    """

    name = "hw.dma_local"
    FIELDS: ClassVar[tuple[Field, ...]] = (dst("dst", "sram", "acc"), src("src", "sram", "acc"), *_DMA_COMMON)


@irdl_op_definition
class DmaPeerOp(DmaOp):
    """Strided copy from this core's SRAM into core `peer`'s SRAM over the core-to-core link
    (default engine dma1); the building block of collectives. Simulator: `aitc/sim/execute.py:dma_copy`.

    ```mlir
    hw.dma_peer sram[0x1000] <- sram[0x0], peer=1, rows=4, row_bytes=256
    ```
    """

    name = "hw.dma_peer"
    FIELDS: ClassVar[tuple[Field, ...]] = (dst("dst", "sram"), src("src", "sram"), num("peer"), *_DMA_COMMON)


@irdl_op_definition
class DmaGatherOp(DmaOp):
    """Indexed row gather DRAM -> SRAM: for r < rows, copies table row `index[r]` (i32 indices at
    `indices` in SRAM; table rows are `src_stride` bytes apart, `table_rows` of them) to
    dst + r * dst_stride. An index outside [0, table_rows) is a simulator error. Embedding lookup.
    Simulator: `aitc/sim/execute.py:dma_gather`.

    ```mlir
    hw.dma_gather sram[0x0] <- dram[0x100000], sram[0x8000], rows=128, row_bytes=1536, table_rows=30522
    ```
    """

    name = "hw.dma_gather"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("dst", "sram"),
        src("src", "dram"),
        src("indices", "sram"),
        *_DMA_COMMON,
        num("table_rows"),
    )

    def verify_instruction(self) -> None:
        super().verify_instruction()
        require(self.get_int("table_rows") >= 1, "hw.dma_gather: table_rows must be >= 1")


DEFAULT_DMA_QUEUE = {"dma_in": 0, "dma_local": 0, "dma_gather": 0, "dma_out": 1, "dma_peer": 1}
"""The queue a DMA with `queue=-1` runs on, by mnemonic: loads and on-chip copies on dma0,
stores and peer transfers on dma1."""


# --------------------------------------------------------------------------- matrix engine


@irdl_op_definition
class MatmulOp(InstructionOp):
    """acc (m x n) (+)= lhs (m x k) @ rhs (k x n; n x k with `transpose_rhs`), on the matrix
    engine. f32 x f32 -> f32 or i8 x i8 -> i32 (`dtype` names the input type). Strides are in
    elements between rows (0 = dense). k <= matrix rows and n <= matrix cols of the target.
    Cycles: latency + k (weights shift in) + m (rows stream through).
    Simulator: `aitc/sim/execute.py:matmul`.

    ```mlir
    hw.matmul acc[0x0] <- sram[0x0], sram[0x1000], m=64, k=32, n=32, accumulate
    ```
    """

    name = "hw.matmul"
    ENGINE: ClassVar[str] = "matrix"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("acc", "acc"), src("lhs", "sram"), src("rhs", "sram"),
        num("m"), num("k"), num("n"), enum("dtype", ("f32", "i8"), "f32"),
        num("lhs_stride", 0), num("rhs_stride", 0), num("acc_stride", 0),
        flag("accumulate"), flag("transpose_rhs"),
    )  # fmt: skip

    def verify_instruction(self) -> None:
        for key in ("m", "k", "n"):
            require(self.get_int(key) >= 1, f"hw.matmul: {key} must be >= 1")


# --------------------------------------------------------------------------- vector engine

_TILE = (num("rows", 1), num("cols"), enum("dtype", tuple(DTYPES), "f32"))
_STRIDES = (num("dst_stride", 0), num("src_stride", 0))


class VectorOp(InstructionOp):
    """Base of vector-engine instructions on rows x cols tiles (strides in elements between
    rows, 0 = dense). Cycles: latency + rows * ceil(cols / lanes) * op cycles. An operand in
    ACC holds 32-bit values (f32 or i32): the simulator refuses i8 views of ACC."""

    ENGINE: ClassVar[str] = "vector"
    FLOAT_ONLY: ClassVar[bool] = False

    def verify_instruction(self) -> None:
        rows, cols = self.get_int("rows"), self.get_int("cols")
        require(rows >= 1 and cols >= 1, f"{self.name}: rows and cols must be >= 1")
        if self.FLOAT_ONLY:
            require(self.get("dtype") == "f32", f"{self.name} works on f32 only")
        source = self.attributes.get("a")
        if (
            isinstance(source, AddressAttr)
            and source.space.data == "acc"
            and "dtype" in {f.name for f in self.FIELDS}
        ):
            require(self.get("dtype") in ("f32", "i32"), f"{self.name}: ACC holds 32-bit values, not i8")


BINARY_OPS = ("add", "sub", "mul", "div", "max", "min", "cmp_eq", "cmp_lt", "cmp_le", "cmp_gt", "cmp_ge")
UNARY_OPS = (
    "copy",
    "neg",
    "abs",
    "exp",
    "log",
    "tanh",
    "erf",
    "sqrt",
    "rsqrt",
    "recip",
    "relu",
    "sigmoid",
    "gelu",
)
FLOAT_UNARY = {"exp", "log", "tanh", "erf", "sqrt", "rsqrt", "recip", "sigmoid", "gelu"}
ACTIVATIONS = ("none", "relu", "relu6", "sigmoid", "tanh", "gelu", "gelu_tanh")


@irdl_op_definition
class VBinaryOp(VectorOp):
    """dst = a <op> b elementwise; `broadcast` says how b spreads over the tile: none (b is a
    rows x cols tile), row (b is one row of cols values), col (b is rows x 1), scalar (b is one
    value). Comparisons write 1 or 0 in `dtype`. Simulator: `aitc/sim/execute.py:vbinary`.

    ```mlir
    hw.vbinary sram[0x2000] <- sram[0x0], sram[0x1000], op=add, rows=8, cols=64, broadcast=row
    ```
    """

    name = "hw.vbinary"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("dst", "sram"), src("a", "sram", "acc"), src("b", "sram"), enum("op", BINARY_OPS),
        *_TILE, enum("broadcast", ("none", "row", "col", "scalar"), "none"), *_STRIDES, num("b_stride", 0),
    )  # fmt: skip

    def verify_instruction(self) -> None:
        super().verify_instruction()
        require(
            not (self.get("op") == "div" and self.get("dtype") != "f32"), "hw.vbinary: div works on f32 only"
        )


@irdl_op_definition
class VImmOp(VectorOp):
    """dst = a <op> imm elementwise with an immediate scalar (e.g. relu = max with 0.0); for
    i8/i32 tiles `imm` must be an integer value of that type.
    Simulator: `aitc/sim/execute.py:vbinary`.

    ```mlir
    hw.vimm sram[0x2000] <- sram[0x0], op=mul, imm=0.125, rows=8, cols=64
    ```
    """

    name = "hw.vimm"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("dst", "sram"),
        src("a", "sram", "acc"),
        enum("op", BINARY_OPS),
        real("imm"),
        *_TILE,
        *_STRIDES,
    )

    def verify_instruction(self) -> None:
        super().verify_instruction()
        imm, dtype = self.get_float("imm"), self.get("dtype")
        if dtype != "f32":
            bits = 8 * DTYPES[str(dtype)]
            low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            require(
                imm.is_integer() and low <= imm <= high,
                f"hw.vimm: imm {imm} must be a whole number in [{low}, {high}] for {dtype}",
            )


@irdl_op_definition
class VUnaryOp(VectorOp):
    """dst = f(a) elementwise. Simulator: `aitc/sim/execute.py:vunary`.

    ```mlir
    hw.vunary sram[0x2000] <- sram[0x0], op=exp, rows=8, cols=64
    ```
    """

    name = "hw.vunary"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("dst", "sram"),
        src("a", "sram", "acc"),
        enum("op", UNARY_OPS),
        *_TILE,
        *_STRIDES,
    )

    def verify_instruction(self) -> None:
        super().verify_instruction()
        require(
            not (self.get("op") in FLOAT_UNARY and self.get("dtype") != "f32"),
            f"hw.vunary: {self.get('op')} works on f32 only",
        )


@irdl_op_definition
class VSelectOp(VectorOp):
    """dst = cond != 0 ? a : b elementwise (cond in `dtype`, e.g. from a comparison).
    Simulator: `aitc/sim/execute.py:vselect`.

    ```mlir
    hw.vselect sram[0x3000] <- sram[0x0], sram[0x1000], sram[0x2000], rows=8, cols=64
    ```
    """

    name = "hw.vselect"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("dst", "sram"),
        src("cond", "sram"),
        src("a", "sram"),
        src("b", "sram"),
        *_TILE,
        *_STRIDES,
    )


@irdl_op_definition
class VReduceOp(VectorOp):
    """Row reduction: dst[r] = sum/max over the cols of row r (dst is rows x 1, dense: the
    simulator refuses a nonzero dst_stride).
    Simulator: `aitc/sim/execute.py:vreduce`.

    ```mlir
    hw.vreduce sram[0x2000] <- sram[0x0], op=max, rows=8, cols=64
    ```
    """

    name = "hw.vreduce"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("dst", "sram"),
        src("a", "sram", "acc"),
        enum("op", ("sum", "max")),
        *_TILE,
        *_STRIDES,
    )

    def verify_instruction(self) -> None:
        super().verify_instruction()
        require(
            self.get("dst_stride") == 0, "hw.vreduce writes a dense rows x 1 column: dst_stride must be 0"
        )


@irdl_op_definition
class VCastOp(VectorOp):
    """Converts `from` -> `to` with a scale and a zero point: f32 -> i8/i32 rounds half to even
    after multiplying by `scale`, adds `zero` and saturates (quantization); i8/i32 -> f32
    subtracts `zero` and multiplies by `scale` (dequantization); i32 -> i8 requantizes (scale,
    round, add `zero`, saturate). `zero` is the integer side's zero point, as a fixed-point
    NPU's output stage applies it: one instruction, where a separate add would need the
    rounded value back in f32.
    Simulator: `aitc/sim/execute.py:vcast`.

    ```mlir
    hw.vcast sram[0x2000] <- acc[0x0], rows=8, cols=32, from=i32, to=i8, scale=0.0125
    hw.vcast sram[0x2000] <- sram[0x0], rows=8, cols=32, from=f32, to=i8, zero=-128
    ```
    """

    name = "hw.vcast"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("dst", "sram"), src("a", "sram", "acc"), num("rows", 1), num("cols"),
        enum("from", tuple(DTYPES)), enum("to", tuple(DTYPES)), real("scale", 1.0), *_STRIDES,
        num("zero", 0),
    )  # fmt: skip

    def verify_instruction(self) -> None:
        rows, cols = self.get_int("rows"), self.get_int("cols")
        require(rows >= 1 and cols >= 1, "hw.vcast: rows and cols must be >= 1")
        source, result, zero = self.get("from"), self.get("to"), self.get_int("zero")
        require(source != result or self.get("scale") != 1.0 or zero != 0, "hw.vcast: nothing to convert")
        require(
            zero == 0 or (source, result) != ("f32", "f32"),
            "hw.vcast: a zero point needs an integer side (from or to i8/i32)",
        )
        require(-(2**31) <= zero < 2**31, f"hw.vcast: zero point {zero} does not fit in i32")


@irdl_op_definition
class AccReadOp(VectorOp):
    """ACC -> SRAM on the vector engine with an optional fused activation (a bias row is added
    by `hw.vbinary` with `a` in ACC and `broadcast=row`; acc_read has no bias operand).
    Simulator: `aitc/sim/execute.py:acc_read`.

    ```mlir
    hw.acc_read sram[0x4000] <- acc[0x0], rows=32, cols=32, activation=relu
    ```
    """

    name = "hw.acc_read"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        dst("dst", "sram"), src("a", "acc"), *_TILE, enum("activation", ACTIVATIONS, "none"), *_STRIDES,
    )  # fmt: skip

    def verify_instruction(self) -> None:
        super().verify_instruction()
        integer_ok = ("none", "relu", "relu6")
        require(
            self.get("dtype") == "f32" or self.get("activation") in integer_ok,
            f"hw.acc_read: activation {self.get('activation')} needs f32 (i32 allows {'/'.join(integer_ok)})",
        )


# --------------------------------------------------------------------------- control

ENGINE_NAMES = (
    "dma0",
    "dma1",
    "dma2",
    "dma3",
    "dma4",
    "dma5",
    "dma6",
    "dma7",
    "matrix",
    "vector",
    "dma_in",
    "dma_out",
)


class SemaphoreOp(InstructionOp):
    """Base of sem_signal / sem_wait: semaphore `sem`, on `engine`, by `count`."""

    ENGINE: ClassVar[str] = "control"
    FIELDS: ClassVar[tuple[Field, ...]] = (
        positional_int("sem"),
        enum("engine", ENGINE_NAMES),
        num("count", 1),
    )


@irdl_op_definition
class SemSignalOp(SemaphoreOp):
    """Adds `count` to semaphore `sem` of core `peer` (-1, the default: this core) when every
    earlier instruction of `engine` on this core has completed. A signal to a peer tells that
    core's engines that this core's earlier `hw.dma_peer` writes into its SRAM have landed.
    Simulator: `aitc/sim/engine.py` (semaphores).

    ```mlir
    hw.sem_signal 3, engine=matrix
    hw.sem_signal 3, engine=dma1, peer=2
    ```
    """

    name = "hw.sem_signal"
    FIELDS: ClassVar[tuple[Field, ...]] = (*SemaphoreOp.FIELDS, num("peer", -1))

    def verify_instruction(self) -> None:
        require(self.get_int("peer") >= -1, "hw.sem_signal: peer must be a core id (or -1: this core)")


@irdl_op_definition
class SemWaitOp(SemaphoreOp):
    """Blocks `engine` until semaphore `sem` of this core >= count, then subtracts count. The
    only way (with barriers) to order instructions of different engines; the count may come
    from signals of this core's engines or of other cores (`hw.sem_signal ..., peer=`).
    Simulator: `aitc/sim/engine.py`.

    ```mlir
    hw.sem_wait 3, engine=vector, count=2
    ```
    """

    name = "hw.sem_wait"


@irdl_op_definition
class BarrierOp(InstructionOp):
    """Cross-core barrier: `engine` of every core blocks at its n-th barrier until all cores
    have reached their n-th barrier. Simulator: `aitc/sim/engine.py` (barriers).

    ```mlir
    hw.barrier engine=dma0
    ```
    """

    name = "hw.barrier"
    ENGINE: ClassVar[str] = "control"
    FIELDS: ClassVar[tuple[Field, ...]] = (enum("engine", ENGINE_NAMES),)
