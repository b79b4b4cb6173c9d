"""The target a module is compiled for: the `aitc.target` module attribute.

The target is a property of the module, not of a pipeline. It is recorded once, as what
`aitc.target.load_target` accepts (a preset name or a TOML path):

    builtin.module attributes {aitc.target = "edge"} { ... }

by `aitc compile --target T` or `aitc import --target T`, by hand, or by the first target-dependent
pass given a `target` option (`-p 'convert-graph-to-tile{target=edge},plan-memory'`). Every
target-dependent pass reads it through `module_target`: an option that names another target is an
error naming both, an option alone is recorded for the passes after it, and no target at all is an
error saying how to give one. There is no default target.

IR written before this attribute existed records only the target's name, as `tile.target` (still
written by convert-graph-to-tile); it is read when `aitc.target` is absent, and a `tile.target`
naming another target than the one given is a contradiction too.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.utils.exceptions import PassFailedException

from aitc.diagnostics import AitcError
from aitc.target import Target, load_target, preset_names

TARGET_ATTR = "aitc.target"
"""Module attribute: the target the module is compiled for (a preset name or a TOML path)."""

LEGACY_TARGET_ATTR = "tile.target"
"""Module attribute convert-graph-to-tile writes: the target's name (read for older IR)."""

PASS_OPTION = "the pass option"


def recorded_target(module: ModuleOp) -> str | None:
    """The module's `aitc.target`, if any."""
    attr = module.attributes.get(TARGET_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


def record_target(module: ModuleOp, given: str | None, given_by: str = PASS_OPTION) -> tuple[str, Target]:
    """The target the module is for, as (spec, loaded Target), recorded as `aitc.target`.

    `given` is what `given_by` (a pass option, a command-line flag) says, None for nothing.
    Raises AitcError when it contradicts the module, when nothing names a target, or when the
    target does not load."""
    recorded = recorded_target(module)
    legacy = module.attributes.get(LEGACY_TARGET_ATTR)
    legacy_name = legacy.data if isinstance(legacy, StringAttr) else None
    if recorded is not None and given is not None and recorded != given:
        if load_target(recorded) != load_target(given):
            _contradiction(recorded, TARGET_ATTR, given, given_by)
    spec = recorded or given or _legacy_spec(legacy_name, given_by)
    target = load_target(spec)
    if legacy_name is not None and legacy_name != target.name:
        _contradiction(legacy_name, LEGACY_TARGET_ATTR, spec, TARGET_ATTR if recorded else given_by)
    module.attributes[TARGET_ATTR] = StringAttr(spec)
    return spec, target


def _contradiction(module_says: str, attr: str, other: str, other_by: str) -> None:
    fix = f"fix {TARGET_ATTR}" if other_by == TARGET_ATTR else f"drop {other_by.replace('pass ', '')}"
    raise AitcError(
        f"module is for target '{module_says}' ({attr}) but {other_by} says '{other}'; {fix}, or "
        "start again from the graph-level IR to compile for another target"
    )


def _legacy_spec(legacy_name: str | None, given_by: str) -> str:
    """Older IR's `tile.target`, when it names a preset; else the error that no target is given."""
    if legacy_name is not None and legacy_name in preset_names():
        return legacy_name
    found = f" ({LEGACY_TARGET_ATTR} = '{legacy_name}' is not a preset)" if legacy_name else ""
    raise AitcError(
        f"no target: the module has no {TARGET_ATTR} attribute{found} and {given_by} names none; "
        "give the target once: on the first target-dependent pass "
        f"(-p 'PASS{{target=edge}},...'), as `builtin.module attributes {{{TARGET_ATTR} = \"edge\"}}`, "
        f"or with `aitc compile --target`; a target is a preset ({', '.join(preset_names())}) "
        "or a FILE.toml"
    )


def module_target(module: ModuleOp, option: str | None, pass_name: str) -> Target:
    """The target pass `pass_name` works for (`record_target`); errors name the pass."""
    return module_target_spec(module, option, pass_name)[1]


def module_target_spec(module: ModuleOp, option: str | None, pass_name: str) -> tuple[str, Target]:
    """`record_target` for a pass: its errors as a PassFailedException naming the pass."""
    try:
        return record_target(module, option)
    except AitcError as error:
        raise PassFailedException(f"{pass_name}: {error}") from None
