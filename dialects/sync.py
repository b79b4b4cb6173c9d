"""The `sync` dialect: tile ops bound to engines, and the semaphores and barriers that order them.

At this level every tile compute op (`aitc.dialects.tile.COMPUTE_OPS`) carries the discardable
attribute `sync.engine` naming the engine queue that executes it ("dma0", "dma1", ...,
"matrix", "vector"); each engine runs its ops in program order, concurrently with the others.
The only cross-engine ordering is what the ops of this dialect state:

    tile.copy %x[%i, %c0] to %a[%c0, %c0] sizes [32, 64] {sync.engine = "dma0"} : ...
    sync.signal 0 on "dma0"               // after dma0's earlier ops: semaphore 0 += 1
    sync.wait 0 on "matrix"               // matrix blocks until semaphore 0 >= 1, then -= 1
    tile.matmul ... {sync.engine = "matrix"} : ...

Semaphores are per-core counters numbered 0 .. target.semaphores - 1; `count` (default 1) is the
amount signalled or awaited. A signal counts up a semaphore of its own core, or with `peer P` one
of core P (after this core's peer copies into P: a collective's flow control); a wait always
waits on its own core's. `sync.barrier` blocks its engine until every core reaches the same
barrier. These map one to one onto hw.sem_signal / hw.sem_wait / hw.barrier.

Semantics: `aitc/interp/sync.py` runs each engine's queue in order and honours exactly these
orderings (an op whose producer was not awaited may see stale data).
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import IntegerAttr, StringAttr
from xdsl.ir import Dialect, Operation
from xdsl.irdl import IRDLOperation, irdl_op_definition, opt_attr_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from aitc.types import i64_attr

ENGINE_ATTR = "sync.engine"
"""The discardable attribute that binds a tile op to an engine."""

ENGINES_PREFIXES = ("dma", "matrix", "vector")


def engine_of(op: Operation) -> str | None:
    """The engine a tile op is bound to, or None."""
    attr = op.attributes.get(ENGINE_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


def bind(op: Operation, engine: str) -> None:
    """Binds `op` to `engine` (sets `sync.engine`)."""
    op.attributes[ENGINE_ATTR] = StringAttr(engine)


def _check_engine(name: str) -> None:
    valid = name in ("matrix", "vector") or (name.startswith("dma") and name[3:].isdigit())
    if not valid:
        raise VerifyException(f"unknown engine '{name}' (expected dma0, dma1, ..., matrix or vector)")


class SemaphoreOp(IRDLOperation):
    """Base of sync.signal / sync.wait: `sem` on `engine`, amount `count` (default 1).

    The custom syntax is `<sem> on "<engine>"`, then each of `KEYWORDS` that is set, as
    `<keyword> N`, in that order."""

    sem = opt_attr_def(IntegerAttr)
    engine = opt_attr_def(StringAttr)
    count = opt_attr_def(IntegerAttr)
    KEYWORD: ClassVar[str] = "on"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("count",)

    def __init__(self, sem: int, engine: str, count: int = 1):
        attributes = {"sem": i64_attr(sem), "engine": StringAttr(engine)}
        if count != 1:
            attributes["count"] = i64_attr(count)
        super().__init__(attributes=attributes)

    def semaphore(self) -> int:
        assert self.sem is not None
        return self.sem.value.data

    def engine_name(self) -> str:
        assert self.engine is not None
        return self.engine.data

    def amount(self) -> int:
        return self.count.value.data if self.count is not None else 1

    def verify_(self) -> None:
        if self.sem is None or self.engine is None:
            raise VerifyException(f"{self.name} needs a semaphore and an engine")
        if self.semaphore() < 0:
            raise VerifyException(f"{self.name}: semaphore must be >= 0")
        if self.amount() < 1:
            raise VerifyException(f"{self.name}: count must be >= 1")
        _check_engine(self.engine_name())

    def keyword_values(self) -> dict[str, int]:
        """The `KEYWORDS` the custom syntax prints: those away from their default."""
        return {"count": self.amount()} if self.amount() != 1 else {}

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.semaphore()} on ")
        printer.print_string_literal(self.engine_name())
        for keyword, value in self.keyword_values().items():
            printer.print_string(f" {keyword} {value}")
        printer.print_op_attributes(self.attributes, reserved_attr_names=("sem", "engine", *self.KEYWORDS))

    @classmethod
    def parse(cls, parser: Parser) -> SemaphoreOp:
        sem = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_keyword("on")
        engine = parser.parse_str_literal()
        values = {}
        for keyword in cls.KEYWORDS:
            if parser.parse_optional_keyword(keyword) is not None:
                values[keyword] = parser.parse_integer(allow_boolean=False)
        op = cls(sem, engine, **values)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


@irdl_op_definition
class SignalOp(SemaphoreOp):
    """Adds `count` to semaphore `sem` of this core, or of core `peer`, once every earlier op
    of `engine` has completed. Lowers to `hw.sem_signal` (with its `peer` field).

    ```mlir
    sync.signal 0 on "dma0"
    sync.signal 2 on "matrix" count 2
    sync.signal 1 on "dma1" peer 3
    ```
    """

    name = "sync.signal"
    peer = opt_attr_def(IntegerAttr)
    KEYWORDS: ClassVar[tuple[str, ...]] = ("count", "peer")

    def __init__(self, sem: int, engine: str, count: int = 1, peer: int | None = None):
        super().__init__(sem, engine, count)
        if peer is not None:
            self.attributes["peer"] = i64_attr(peer)

    def peer_core(self) -> int | None:
        """The core whose semaphore the signal counts up; None: this core."""
        return self.peer.value.data if self.peer is not None else None

    def keyword_values(self) -> dict[str, int]:
        values = super().keyword_values()
        if self.peer is not None:
            values["peer"] = self.peer.value.data
        return values

    def verify_(self) -> None:
        super().verify_()
        if self.peer is not None and self.peer.value.data < 0:
            raise VerifyException("sync.signal: peer must be a core id (>= 0)")


@irdl_op_definition
class WaitOp(SemaphoreOp):
    """Blocks `engine` until semaphore `sem` >= count, then subtracts count.

    ```mlir
    sync.wait 0 on "matrix"
    ```
    """

    name = "sync.wait"


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """Blocks `engine` until every core has reached its matching barrier.

    ```mlir
    sync.barrier on "dma0"
    ```
    """

    name = "sync.barrier"
    engine = opt_attr_def(StringAttr)

    def __init__(self, engine: str):
        super().__init__(attributes={"engine": StringAttr(engine)})

    def engine_name(self) -> str:
        assert self.engine is not None
        return self.engine.data

    def verify_(self) -> None:
        if self.engine is None:
            raise VerifyException("sync.barrier needs an engine")
        _check_engine(self.engine.data)

    def print(self, printer: Printer) -> None:
        assert self.engine is not None
        printer.print_string(" on ")
        printer.print_string_literal(self.engine.data)
        printer.print_op_attributes(self.attributes, reserved_attr_names=("engine",))

    @classmethod
    def parse(cls, parser: Parser) -> BarrierOp:
        parser.parse_keyword("on")
        op = cls(parser.parse_str_literal())
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


Sync = Dialect("sync", [SignalOp, WaitOp, BarrierOp], [])
