"""Legality checks shared by conversions: what must be gone once a conversion has run.

Partial lowering is explicit, as in MLIR's conversion framework: a conversion from dialect A
ends with `check_no_ops_left(module, "A", name)`, so an op that no pattern handled is a clear
error at the conversion that missed it, not a confusing one three passes later.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import NoReturn

from xdsl.ir import Operation
from xdsl.utils.diagnostic import Diagnostic
from xdsl.utils.exceptions import PassFailedException

from aitc.dialects import sync, tile


def fail(op: Operation, message: str) -> NoReturn:
    """Raises a PassFailedException whose note underlines `op` in the printed IR."""
    op.emit_error(message, PassFailedException(message))


def ops_of_dialect(root: Operation, dialect_prefix: str, skip: Sequence[Operation] = ()) -> list[Operation]:
    """Every op nested in `root` (root included) whose name is `<dialect_prefix>.<...>`, except
    inside (and including) the ops in `skip`."""
    prefix = dialect_prefix.rstrip(".") + "."
    skipped = {id(op) for op in skip}
    found: list[Operation] = []
    stack = [root]
    while stack:
        op = stack.pop()
        if id(op) in skipped:
            continue
        if op.name.startswith(prefix):
            found.append(op)
        for region in reversed(op.regions):
            for block in reversed(region.blocks):
                stack.extend(reversed(list(block.ops)))
    return found


def check_no_ops_left(
    module: Operation, dialect_prefix: str, pass_name: str, skip: Sequence[Operation] = ()
) -> None:
    """Raises PassFailedException if any op of the source dialect `dialect_prefix` remains
    (outside the ops in `skip`: the schedules and host segments a conversion leaves alone).

    The message counts the leftovers by op name; its note is the module (generic form) with
    each illegal op underlined, as xDSL prints verifier errors.
    """
    left = ops_of_dialect(module, dialect_prefix, skip)
    if not left:
        return
    dialect = dialect_prefix.rstrip(".")
    diagnostic = Diagnostic()
    for op in left:
        diagnostic.add_message(op, f"illegal after {pass_name}: no pattern converted this op")
    counts = ", ".join(f"{name} x{n}" for name, n in sorted(Counter(op.name for op in left).items()))
    error = PassFailedException(f"{pass_name}: {len(left)} '{dialect}' op(s) left unconverted ({counts})")
    diagnostic.raise_exception(module, error)


def unbound_compute_ops(root: Operation) -> list[Operation]:
    """Every tile compute op nested in `root` that no engine executes (no `sync.engine`)."""
    return [op for op in root.walk() if isinstance(op, tile.COMPUTE_OPS) and sync.engine_of(op) is None]


def check_all_bound(module: Operation, pass_name: str) -> None:
    """Raises PassFailedException if a tile compute op is not bound to an engine: the legality
    of the tile -> sync level (every compute op runs on some engine queue)."""
    left = unbound_compute_ops(module)
    if not left:
        return
    diagnostic = Diagnostic()
    for op in left:
        diagnostic.add_message(op, f"{pass_name}: not bound to an engine (sync.engine)")
    counts = ", ".join(f"{name} x{n}" for name, n in sorted(Counter(op.name for op in left).items()))
    error = PassFailedException(
        f"{pass_name}: {len(left)} tile compute op(s) not bound to an engine ({counts}); "
        "run convert-tile-to-sync first"
    )
    diagnostic.raise_exception(module, error)


def refuse_sharded(module: Operation, pass_name: str) -> None:
    """Stops a single-core lowering at the first shard op: a per-core (sharded) module is
    lowered core by core by `aitc.spmd.lower_spmd` (`aitc compile --cores N`), whose phases
    hold no shard ops."""
    found = ops_of_dialect(module, "shard")
    if found:
        fail(
            found[0],
            f"{pass_name}: {found[0].name}: a sharded module is not lowered by the single-core "
            "passes; compile it with `aitc compile --cores N` (it lowers every core's phases and "
            "links the collectives), or run the per-core graph with `aitc run`",
        )
