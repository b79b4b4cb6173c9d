"""Context, parsing and printing of aitc IR (all dialects, resources included)."""

from __future__ import annotations

import io
from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.ir import Dialect
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, ParseError

from aitc.diagnostics import AitcError


def _graph() -> Dialect:
    from aitc.dialects.graph import Graph

    return Graph


def _hw() -> Dialect:
    from aitc.dialects.hw import Hw

    return Hw


def _tile() -> Dialect:
    from aitc.dialects.tile import Tile

    return Tile


def _sync() -> Dialect:
    from aitc.dialects.sync import Sync

    return Sync


def _exec() -> Dialect:
    from aitc.dialects.exec import Exec

    return Exec


AITC_DIALECTS: dict[str, Callable[[], Dialect]] = {
    "graph": _graph,
    "tile": _tile,
    "sync": _sync,
    "hw": _hw,
    "exec": _exec,
}
"""aitc's own dialects, name -> factory (lazy, as xDSL registries are)."""


def register_aitc_dialects(ctx: Context) -> None:
    """Registers aitc's dialects in `ctx`. aitc's `hw` (the virtual NPU's ISA) takes the place
    of the CIRCT `hw` dialect that xDSL also ships under that name."""
    import aitc.weights  # noqa: F401  (installs the content-addressed resource store)

    registered = ctx._registered_dialects  # pyright: ignore[reportPrivateUsage]
    for name, factory in AITC_DIALECTS.items():
        registered.pop(name, None)
        ctx.register_dialect(name, factory)


def make_context(allow_unregistered: bool = False) -> Context:
    """A context that knows xDSL's dialects and aitc's."""
    ctx = Context(allow_unregistered=allow_unregistered)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    register_aitc_dialects(ctx)
    return ctx


def parse_mlir(text: str, filename: str = "<input>", ctx: Context | None = None) -> ModuleOp:
    """Parses and verifies; problems become an AitcError with file:line:col."""
    ctx = ctx or make_context()
    try:
        module = Parser(ctx, text, filename).parse_module()
    except ParseError as error:
        raise AitcError(str(error).strip()) from None
    try:
        module.verify()
    except DiagnosticException as error:
        raise AitcError(f"invalid IR: {error}") from None
    return module


def print_mlir(module: ModuleOp, generic: bool = False, debuginfo: bool = True) -> str:
    """Text of `module` with locations and the `dialect_resources` section (weights)."""
    stream = io.StringIO()
    printer = Printer(stream=stream, print_generic_format=generic, print_debuginfo=debuginfo)
    printer.print_op(module)
    printer.print_metadata([Builtin])  # weights live in the builtin resource store
    stream.write("\n")
    return stream.getvalue().replace(" loc(unknown)", "")
