"""Context, parsing and printing of aitc IR (all dialects, resources included).

Parsing is strict and total: `parse_mlir` returns a verified module or raises `AitcError`
with `file:line:col` (never another exception). Besides xDSL's verifier it checks what xDSL
does not: SSA dominance (a value used before its definition) and that the bytes of every
`dense_resource`, when the file has them, are the size its type needs. Importing this module applies
`aitc.xdsl_fixes` (lossless float literals, a linear-time lexer), so every entry point that
builds a context here gets them.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence

from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import Builtin, DenseResourceAttr, ModuleOp
from xdsl.ir import Attribute, Block, BlockArgument, Dialect, Operation, SSAValue
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.parser.core import ForwardDeclaredValue
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Input, Span

from aitc import xdsl_fixes
from aitc.diagnostics import AitcError
from aitc.weights import resource_problem  # also installs the content-addressed store

xdsl_fixes.apply()

# Deliberately lazy (startup cost, as xDSL's own registry): a context calls a factory, which
# imports its dialect, only when it first meets one of that dialect's ops or attributes.


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


def _shard() -> Dialect:
    from aitc.dialects.shard import Shard

    return Shard


AITC_DIALECTS: dict[str, Callable[[], Dialect]] = {
    "graph": _graph,
    "shard": _shard,
    "tile": _tile,
    "sync": _sync,
    "hw": _hw,
    "exec": _exec,
}
"""aitc's own dialects, name -> factory (lazy, as xDSL registries are)."""


def register_aitc_dialects(ctx: Context) -> None:
    """Registers aitc's dialects in `ctx`. aitc's `hw` (the virtual NPU's ISA) takes the place
    of the CIRCT `hw` dialect that xDSL also ships under that name."""
    # xDSL 0.74's Context can register a dialect name only once and has no public API to
    # replace or unregister one (upstream gap): drop xDSL's `hw` from `_registered_dialects`.
    registered = ctx._registered_dialects
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


class LocatingParser(Parser):
    """xDSL's parser, remembering where each op starts (for verifier and dominance errors)."""

    def __init__(self, ctx: Context, text: str, name: str = "<input>") -> None:
        super().__init__(ctx, text, name)
        self.op_spans: dict[Operation, Span] = {}
        self.value_names: dict[SSAValue, str] = {}

    # xDSL 0.74 has no public hook for "an SSA name was defined" (upstream gap): this overrides
    # the parser's private `_register_ssa_definition`.
    def _register_ssa_definition(self, name: str, values: Sequence[SSAValue], span: Span) -> None:
        super()._register_ssa_definition(name, values, span)
        for i, value in enumerate(values):
            self.value_names[value] = f"%{name}" if len(values) == 1 else f"%{name}#{i}"

    def resolve_operand(self, operand: UnresolvedOperand, type: Attribute) -> SSAValue:
        value = super().resolve_operand(operand, type)
        if isinstance(value, ForwardDeclaredValue):  # named for dominance errors
            suffix = f"#{operand.index}" if operand.index else ""
            self.value_names.setdefault(value, f"%{operand.operand_name}{suffix}")
        return value

    def parse_operation(self) -> Operation:
        # xDSL 0.74's parser has no public API to peek at or consume a token (upstream gap)
        span = self._current_token.span
        op = super().parse_operation()
        self.op_spans[op] = span
        return op

    def error_at(self, op: Operation, message: str) -> str:
        """`message` located at `op` (file:line:col, source line, caret) when it was parsed."""
        span = self.op_spans.get(op)
        return str(ParseError(span, message)) if span else f"invalid IR: {message}"


def parse_module_text(parser: LocatingParser, implicit_module: bool = True) -> ModuleOp:
    """Parses with `parser` and checks dominance; every problem is a located ParseError.

    xDSL raises ValueError, OverflowError, VerifyException... from attribute constructors
    and custom parsers; they are located at the token where parsing stopped. This is also
    the frontend `aitc-opt` uses (its verifier then runs as a pass-pipeline callback).
    """
    # `parser._current_token` (three times below): xDSL 0.74's parser has no public API for the
    # position it stopped at (upstream gap)
    try:
        module = parser.parse_module(implicit_module)
        for op, value in dominance_violations(module):
            span = parser.op_spans.get(op) or parser._current_token.span
            raise ParseError(span, _use_message(op, value, parser))
    except ParseError:
        raise
    except RecursionError:
        raise ParseError(parser._current_token.span, "IR nested too deeply") from None
    except Exception as error:  # the last line of defence: xDSL's own exceptions escape here
        raise ParseError(parser._current_token.span, _one_line(error)) from None
    return module


def parse_mlir(text: str, filename: str = "<input>", ctx: Context | None = None) -> ModuleOp:
    """Parses and verifies; problems become an AitcError with file:line:col."""
    try:
        parser = LocatingParser(ctx or make_context(), text, filename)  # lexes the first token
        module = parse_module_text(parser)
    except ParseError as error:
        raise AitcError(str(error).strip()) from None
    verify_located(module, parser)
    return module


def parse_unverified(
    text: str | bytes, filename: str, ctx: Context, implicit_module: bool = True
) -> ModuleOp:
    """Parses and checks dominance, without running the verifier; every problem is a located
    ParseError. This is `aitc-opt`'s `mlir` frontend (its driver verifies, chunk by chunk)."""
    return parse_module_text(LocatingParser(ctx, _decoded(text, filename), filename), implicit_module)


def _decoded(text: str | bytes, filename: str) -> str:
    if isinstance(text, str):
        return text
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError as error:
        good = text[: error.start].decode("utf-8")
        span = Span(len(good), len(good) + 1, Input(good + "\ufffd", filename))
        raise ParseError(span, "the input is not UTF-8 text") from None


def verify_located(module: ModuleOp, parser: LocatingParser) -> None:
    """module.verify(), and the sizes of resource blobs; an AitcError located at the failing op."""
    try:
        module.verify()
    except Exception as error:  # op verifiers raise more than VerifyException
        op, message = _first_failure(module, error)
        raise AitcError(parser.error_at(op, message).strip()) from None
    for op, message in resource_problems(module):
        raise AitcError(parser.error_at(op, message).strip())


def _first_failure(module: ModuleOp, error: Exception) -> tuple[Operation, str]:
    """The op whose own checks fail (xDSL's exception does not say which) and its message."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except Exception as own:
            return op, _one_line(own)
    return module, _one_line(error)


def _one_line(error: BaseException) -> str:
    """The message of `error` on one line; named after its type when the text is not enough
    (a KeyError's text is just the key)."""
    text = " ".join(str(error).split())
    if not text or isinstance(error, LookupError | AttributeError | TypeError | AssertionError):
        return f"{type(error).__name__}: {text}".rstrip(": ")
    return text


def resource_problems(module: ModuleOp, require_bytes: bool = False) -> Iterator[tuple[Operation, str]]:
    """`dense_resource` attributes whose blob is damaged (not hex, the wrong size) or, when
    `require_bytes`, missing."""
    for op in module.walk():
        for attr in (*op.properties.values(), *op.attributes.values()):
            if isinstance(attr, DenseResourceAttr) and (problem := resource_problem(attr, require_bytes)):
                yield op, problem


def require_weights(module: ModuleOp) -> None:
    """Raises one AitcError listing every `dense_resource` without its bytes: compiling or
    running needs the values, so a file whose `dialect_resources` section is missing or cut
    short fails here, not midway."""
    problems = [f"{op.name}: {problem}" for op, problem in resource_problems(module, require_bytes=True)]
    if problems:
        raise AitcError(problems, hint="the file's dialect_resources section is missing or cut short")


def dominance_violations(module: ModuleOp) -> Iterator[tuple[Operation, SSAValue]]:
    """(user, operand) pairs where the operand's definition does not dominate the user.

    SSA regions: a value is visible after its defining op in the same block, in the blocks
    of that block's nested regions, and a block argument in its block and below. Bodies of
    `builtin.module` are graph regions (any order, as in MLIR). Uses across blocks of one
    multi-block region are accepted unchecked (no CFG dominator tree; aitc emits none).
    Linear in the module: one pass numbering ops, one over operands, each walking up at most
    the nesting depth.
    """
    index = {op: i for block in _blocks(module) for i, op in enumerate(block.ops)}
    for op in module.walk():
        for value in op.operands:
            if not _dominates(value, op, index):
                yield op, value


def _blocks(module: ModuleOp) -> Iterator[Block]:
    for op in module.walk():
        for region in op.regions:
            yield from region.blocks


def _enclosing_op_in(block: Block | None, user: Operation) -> Operation | None:
    """The op of `block` that is `user` or contains it (None if `user` is not inside `block`)."""
    ancestor: Operation | None = user
    while ancestor is not None and ancestor.parent is not block:
        ancestor = ancestor.parent_op()
    return ancestor if block is not None else None


def _in_other_block_of_region(block: Block | None, user: Operation) -> bool:
    """Whether `user` sits (maybe nested) in another block of `block`'s multi-block region."""
    region = block.parent if block is not None else None
    if region is None or len(region.blocks) < 2:
        return False
    ancestor: Operation | None = user
    while ancestor is not None and ancestor.parent is not block:
        if ancestor.parent is not None and ancestor.parent.parent is region:
            return True
        ancestor = ancestor.parent_op()
    return False


def _dominates(value: SSAValue, user: Operation, index: dict[Operation, int]) -> bool:
    if isinstance(value, ForwardDeclaredValue):
        return False  # xDSL leaves these when an op's operand is defined in its own region
    if isinstance(value, BlockArgument):
        return _enclosing_op_in(value.block, user) is not None
    defining = value.owner
    assert isinstance(defining, Operation)
    block = defining.parent
    ancestor = _enclosing_op_in(block, user)
    if ancestor is None:
        return _in_other_block_of_region(block, user)  # not checked (see above)
    if ancestor is defining:
        return False
    return isinstance(defining.parent_op(), ModuleOp) or index[defining] < index[ancestor]


def _use_message(user: Operation, value: SSAValue, parser: LocatingParser) -> str:
    name = _source_name(parser, value) or f"operand #{_operand_index(user, value)}"
    if isinstance(value, ForwardDeclaredValue):
        return f"{user.name} uses {name}, which is not defined before it in an enclosing scope"
    owner = value.owner
    if owner is user:
        return f"{user.name} uses its own result {name}"
    if isinstance(owner, Block) or _enclosing_op_in(owner.parent, user) is None:
        return f"{user.name} uses {name}, which is not defined in an enclosing scope"
    span = parser.op_spans.get(owner)
    where = f" on line {span.get_location().line}" if span else ""
    return f"{user.name} uses {name} before its definition by {owner.name}{where}"


def _source_name(parser: LocatingParser, value: SSAValue) -> str | None:
    """`%name` (or `%name#i`) as the source text spells `value`."""
    if value in parser.value_names:
        return parser.value_names[value]
    return f"%{value.name_hint}" if value.name_hint else None


def _operand_index(user: Operation, value: SSAValue) -> int:
    return next(i for i, operand in enumerate(user.operands) if operand is value)


def print_mlir(module: ModuleOp, generic: bool = False, debuginfo: bool = True) -> str:
    """Text of `module` with locations and the `dialect_resources` section (weights)."""
    stream = io.StringIO()
    printer = Printer(stream=stream, print_generic_format=generic, print_debuginfo=debuginfo)
    printer.print_op(module)
    printer.print_metadata([Builtin])  # weights live in the builtin resource store
    stream.write("\n")
    return stream.getvalue().replace(" loc(unknown)", "")
