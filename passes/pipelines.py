"""The pipelines of aitc: the one place that says which passes run, in which order.

Each pipeline is a list of pass specs (`name` or `name{option=value ...}`), resolved through
xDSL's and aitc's pass registries. `apply_pipeline` verifies the module after every pass, so
a pass that breaks the IR is named in the error.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import DiagnosticException, PassFailedException

GRAPH_OPTIMIZE: tuple[str, ...] = (
    "graph-recognize-patterns",  # decomposed GELU / LayerNorm -> one op (before anything reorders)
    "graph-canonicalize",  # drop no-op reshapes/transposes/casts, merge chains
    "graph-fold-constants",  # shape arithmetic and weight preprocessing become constants
    "graph-fold-batch-norm",  # conv + batch_norm -> conv, while the conv has no activation
    "graph-fuse-bias-activation",  # matmul/conv + bias add + activation -> one op
    "graph-canonicalize",  # clean up what fusion exposed
    "cse",  # xDSL's: graph ops are Pure, equal constants merge too
    "dce",  # xDSL's: erase what nothing uses any more
)
"""Graph-level optimisation, as run by `aitc-opt -p graph-optimize`."""


def lowering_stages(
    target: str, depth: int = 2, optimize: bool = True, host_fallback: bool = True
) -> list[tuple[str, str, tuple[str, ...]]]:
    """The end-to-end pipeline graph -> hw for `target`, as (level consumed, level produced, pass
    specs) stages in order. `aitc compile` runs a slice of it; `aitc-opt -p` can run any prefix
    of the flattened list (`lowering_specs`)."""
    quoted = f'"{target}"'
    stages: list[tuple[str, str, tuple[str, ...]]] = []
    if optimize:
        stages.append(("graph", "graph", GRAPH_OPTIMIZE))
    stages += [
        (
            "graph",
            "tile",
            (
                "graph-legalize-axes",  # non-trailing reductions/softmax: transposes, then the NPU's form
                f"place-on-host{{target={quoted} fallback={str(host_fallback).lower()}}}",
                f"convert-graph-to-tile{{target={quoted} depth={depth}}}",
            ),
        ),
        (
            "tile",
            "tile",
            (f"multi-buffer{{depth={depth} target={quoted}}}", f"plan-memory{{target={quoted}}}"),
        ),
        (
            "tile",
            "sync",
            (
                f"convert-tile-to-sync{{target={quoted}}}",
                f"insert-semaphores{{target={quoted}}}",
                "optimize-sync",
            ),
        ),
        ("sync", "hw", (f"convert-sync-to-hw{{target={quoted}}}",)),
    ]
    return stages


def lowering_specs(
    target: str, depth: int = 2, optimize: bool = True, host_fallback: bool = True
) -> list[str]:
    """The end-to-end pipeline as one flat list of pass specs."""
    return [spec for _, _, specs in lowering_stages(target, depth, optimize, host_fallback) for spec in specs]


PIPELINES: dict[str, tuple[str, ...]] = {
    "graph-optimize": GRAPH_OPTIMIZE,
}


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's passes and aitc's (aitc's win on a name clash), name -> factory."""
    from xdsl.transforms import get_all_passes as xdsl_passes

    from aitc.passes import get_all_passes

    return {**xdsl_passes(), **get_all_passes()}


def build_pipeline(name: str) -> list[ModulePass]:
    """The pass instances of pipeline `name`, in order."""
    if name not in PIPELINES:
        raise ValueError(f"unknown pipeline '{name}' (known: {', '.join(sorted(PIPELINES))})")
    pipeline = PassPipeline.parse_spec(available_passes(), ",".join(PIPELINES[name]))
    return list(pipeline.passes)


def apply_pipeline(module: ModuleOp, name: str, ctx: Context | None = None) -> None:
    """Runs pipeline `name` on `module`, verifying it after every pass."""
    if ctx is None:
        from aitc.ir import make_context

        ctx = make_context()
    for pass_ in build_pipeline(name):
        pass_.apply(ctx, module)
        try:
            module.verify()
        except DiagnosticException as error:
            raise PassFailedException(
                f"pipeline '{name}': the IR is invalid after pass '{pass_.name}': {error}"
            ) from error
