"""The import graph of aitc is layered and acyclic.

Every `.py` file of the package (aitc/, and dialects/, passes/, tools/ which pyproject maps to
`aitc.dialects`, `aitc.passes`, `aitc.tools`) is parsed with `ast`; every import counts: module
level, inside functions, under `if TYPE_CHECKING:`, and `from pkg import name` where `name` is a
submodule. Importing `a.b.c` from outside package `a.b` also runs `a/b/__init__.py`, so that
package is an edge too. Three rules:

1. No cycles between modules. A function-local import does not break a cycle, it hides one.
2. No upward edges: a module imports modules of its own layer or of lower layers only.
3. No private names across modules: `from m import _helper` (or `m._helper`) reaches into
   another module's internals; make the name public in the module that owns the idea.

Layers, lowest first (`LAYERS` below is the table the test uses):

    #   layer                 modules                                  what it is
    0   foundation            aitc.diagnostics, .types, .files,        errors, dtypes, safe file I/O,
                              .report, .xdsl_fixes, .target,           targets, weight blobs
                              .module_target, .weights
    1   dialects              aitc.dialects.* (hw is a package)        the IR: ops, verifiers, and the
                                                                       ISA's target limits
    2   ir                    aitc.ir, aitc.binary                     context, parse/print, .aitb codec
    3   analysis              aitc.analysis.*, aitc.semantics          IR facts and op semantics that
                                                                       passes, interpreters and the
                                                                       simulator share
    4   interp                aitc.interp.* (but run)                  reference interpreters, schedules
    5   passes.common         aitc.passes.legality, .runner            what every conversion checks;
                                                                       the one pipeline runner
    6   passes.graph          aitc.passes.graph.*                      graph -> graph
    7   passes.graph_to_tile  aitc.passes.graph_to_tile.*              graph -> tile
    8   passes.shard          aitc.passes.shard.*                      graph -> sharded graph; the
                                                                       planner asks the tiling cost
                                                                       model for per-core cycles
    9   passes.placement      aitc.passes.graph.place_on_host.*,       graph -> graph + exec: asks the
                              .graph.graph_channels_last               conversion's dispatch table
                                                                       which ops the NPU runs, and
                                                                       its cost model which layout
    10  passes.tile           aitc.passes.tile.*                       tile -> tile
    11  passes.tile_to_sync   aitc.passes.tile_to_sync                 tile -> sync
    12  passes.sync           aitc.passes.sync.*                       sync -> sync
    13  passes.sync_to_hw     aitc.passes.sync_to_hw.*                 sync -> hw
    14  pipelines             aitc.passes, .registry, .pipelines       which passes run in which order
    15  frontend              aitc.frontend.*                          ONNX -> graph
    16  sim                   aitc.sim.*                               the hw simulator (ISA definition)
    17  run                   aitc.interp.run                          run a module at any level:
                                                                       interpreters, hw on the simulator
    18  spmd                  aitc.spmd.*                              per-core graph -> one multi-core
                                                                       hw.program (runs the pipeline per
                                                                       phase, links with collectives)
    19  apps                  aitc.compiler, aitc.reference,           the compiler driver, onnxruntime,
                              aitc.tune, aitc.perf.*, aitc.verify.*,   the autotuner, aitc perf, verify,
                              aitc.quantize.*                          quantize
    20  api                   aitc.api, aitc (the package top)         the short public API
    21  testing               aitc.testing.*                           test support: model zoo, ONNX
                                                                       conformance (nothing below uses it)
    22  tools                 aitc.tools.*                             command-line entry points
    23  fuzz                  aitc.fuzz.*                              drives the command-line tools

A new module must be placed in a layer (the test fails until it is). `KNOWN_VIOLATIONS` lists
edges that are known to break a rule in files whose owners fix them; `PRIVATE_IMPORTS_ALLOWED`
lists deliberate private imports, each with its reason. Both lists are meant to stay short, and
an entry that no longer matches anything fails the test so the list shrinks with the fixes.
"""

from __future__ import annotations

import ast
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------- the layer table

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("aitc.diagnostics", "aitc.types", "aitc.files", "aitc.report", "aitc.xdsl_fixes",
                    "aitc.target", "aitc.module_target", "aitc.weights", "aitc.progress",
                    "aitc.collector")),
    ("dialects", ("aitc.dialects.*",)),
    ("ir", ("aitc.ir", "aitc.binary")),
    ("analysis", ("aitc.analysis.*", "aitc.semantics")),
    ("interp", ("aitc.interp.*",)),
    ("passes.common", ("aitc.passes.legality", "aitc.passes.runner")),
    ("passes.graph", ("aitc.passes.graph.*",)),
    ("passes.graph_to_tile", ("aitc.passes.graph_to_tile.*",)),
    ("passes.shard", ("aitc.passes.shard.*",)),
    ("passes.placement", ("aitc.passes.graph.place_on_host.*", "aitc.passes.graph.graph_channels_last")),
    ("passes.tile", ("aitc.passes.tile.*",)),
    ("passes.tile_to_sync", ("aitc.passes.tile_to_sync",)),
    ("passes.sync", ("aitc.passes.sync.*",)),
    ("passes.sync_to_hw", ("aitc.passes.sync_to_hw.*",)),
    ("pipelines", ("aitc.passes", "aitc.passes.registry", "aitc.passes.pipelines")),
    ("frontend", ("aitc.frontend.*",)),
    ("sim", ("aitc.sim.*",)),
    ("run", ("aitc.interp.run",)),
    ("spmd", ("aitc.spmd.*",)),
    ("apps", ("aitc.compiler", "aitc.reference", "aitc.tune", "aitc.perf.*", "aitc.verify.*",
              "aitc.quantize.*")),
    ("api", ("aitc.api", "aitc")),
    ("testing", ("aitc.testing.*",)),
    ("tools", ("aitc.tools.*",)),
    ("fuzz", ("aitc.fuzz.*",)),
)  # fmt: skip
"""(layer, module patterns), lowest first. `p.*` is package `p` and everything in it; the most
specific pattern wins (`aitc.interp.run` is in `run` although `aitc.interp.*` is in `interp`)."""

KNOWN_VIOLATIONS: dict[tuple[str, str], str] = {}
"""(importer, imported) -> the file to fix: edges known to break a rule, left out of the cycle
and layer checks until their owners fix them. Each entry says what the fix is."""

PRIVATE_IMPORTS_ALLOWED: dict[tuple[str, str, str], str] = {}
"""(importer, imported module, private name) -> the reason the private import is deliberate."""

# --------------------------------------------------------------------------- collecting imports


@dataclass(frozen=True)
class Edge:
    """`importer` imports `imported` at `file:line` (`implicit`: the package `__init__` that
    importing one of its submodules runs)."""

    importer: str
    imported: str
    file: str
    line: int
    implicit: bool = False

    def where(self) -> str:
        how = f" (runs package {self.imported}'s __init__)" if self.implicit else ""
        return f"{self.file}:{self.line}: {self.importer} -> {self.imported}{how}"


@dataclass(frozen=True)
class PrivateUse:
    importer: str
    module: str
    name: str
    file: str
    line: int


@dataclass
class Source:
    """One module's text, by module name (`path` is only for messages)."""

    module: str
    text: str
    path: str
    is_package: bool = False


@dataclass
class ImportGraph:
    modules: set[str]
    edges: list[Edge] = field(default_factory=list)
    private: list[PrivateUse] = field(default_factory=list)


def package_sources(repo: Path = REPO) -> list[Source]:
    """Every module of the package, named through pyproject's `package-dir` mapping."""
    config = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"]
    sources = []
    for package, folder in config["package-dir"].items():
        root = repo / folder
        for path in sorted(root.rglob("*.py")):
            relative = path.relative_to(root).with_suffix("").parts
            if any(part.startswith(".") or part == "__pycache__" for part in relative):
                continue
            inner = [p for p in relative if p != "__init__"]
            if package == "aitc" and inner and f"aitc.{inner[0]}" in config["package-dir"]:
                continue  # a mapped package that also has a folder under aitc/ is read from its own
            name = ".".join([package, *inner])
            sources.append(
                Source(name, path.read_text(), str(path.relative_to(repo)), relative[-1] == "__init__")
            )
    return sources


def _resolve_from(source: Source, node: ast.ImportFrom) -> str:
    """The absolute module a `from ... import` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    parts = source.module.split(".")
    base = parts if source.is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _nearest_module(name: str, modules: set[str]) -> str | None:
    """`name` if it is a module, else its longest prefix that is (None: not ours)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


class _ImportCollector(ast.NodeVisitor):
    """Every import of one module, and every private name it takes from another module."""

    def __init__(self, source: Source, modules: set[str]):
        self.source, self.modules = source, modules
        self.targets: list[tuple[str, int]] = []
        self.private: list[PrivateUse] = []
        self.bound: dict[str, str] = {}  # local name -> module it is bound to

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            target = _nearest_module(alias.name, self.modules)
            if target is None:
                continue
            self.targets.append((target, node.lineno))
            if alias.asname:
                self.bound[alias.asname] = target
            else:
                top = alias.name.split(".")[0]
                if top in self.modules:
                    self.bound[top] = top

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _resolve_from(self.source, node)
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            if submodule in self.modules:
                self.targets.append((submodule, node.lineno))
                self.bound[alias.asname or alias.name] = submodule
                continue
            module = _nearest_module(base, self.modules)
            if module is None:
                continue  # not ours: xdsl, numpy, the standard library
            self.targets.append((module, node.lineno))
            if _is_private(alias.name) and module != self.source.module:
                self._private(module, alias.name, node.lineno)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        dotted = _dotted(node.value)
        if dotted is not None and _is_private(node.attr):
            head, _, rest = dotted.partition(".")
            if head in self.bound:
                module = ".".join(filter(None, [self.bound[head], rest]))
                if module in self.modules and module != self.source.module:
                    self._private(module, node.attr, node.lineno)
        self.generic_visit(node)

    def _private(self, module: str, name: str, line: int) -> None:
        self.private.append(PrivateUse(self.source.module, module, name, self.source.path, line))


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


def build_graph(sources: list[Source]) -> ImportGraph:
    """The module graph: explicit edges, plus the package `__init__`s an import runs."""
    modules = {s.module for s in sources}
    graph = ImportGraph(modules)
    edges: dict[Edge, None] = {}  # ordered set: one edge per import line
    for source in sources:
        collector = _ImportCollector(source, modules)
        collector.visit(ast.parse(source.text, source.path))
        graph.private += collector.private
        for target, line in collector.targets:
            if target != source.module:
                edges[Edge(source.module, target, source.path, line)] = None
            for package in _ancestors(target):
                inside = source.module == package or source.module.startswith(package + ".")
                if package in modules and not inside:
                    edges[Edge(source.module, package, source.path, line, implicit=True)] = None
    graph.edges = list(edges)
    return graph


# --------------------------------------------------------------------------- the three rules


def layer_of(module: str, layers=LAYERS) -> int | None:
    """Index of the layer whose most specific pattern matches `module`."""
    best: tuple[int, int] | None = None  # (specificity, layer)
    for index, (_, patterns) in enumerate(layers):
        for pattern in patterns:
            package = pattern.removesuffix(".*")
            exact = module == package
            inside = pattern.endswith(".*") and module.startswith(package + ".")
            if exact or inside:
                rank = (len(package.split(".")) * 2 + (1 if exact else 0), index)
                best = max(best, rank) if best else rank
    return best[1] if best else None


def find_cycles(edges: list[Edge]) -> list[list[Edge]]:
    """One shortest cycle per strongly connected component (a breadth-first search inside it)."""
    out: dict[str, dict[str, Edge]] = defaultdict(dict)
    for edge in edges:
        out[edge.importer].setdefault(edge.imported, edge)
    cycles = []
    for component in _components(out):
        cycles.append(_shortest_cycle(min(component), component, out))
    return sorted(cycles, key=lambda c: c[0].importer)


def cycle_components(edges: list[Edge]) -> list[list[str]]:
    """The modules of each strongly connected component of more than one module."""
    out: dict[str, dict[str, Edge]] = defaultdict(dict)
    for edge in edges:
        out[edge.importer].setdefault(edge.imported, edge)
    return sorted(sorted(c) for c in _components(out))


def _reachable(start: str, out: dict[str, dict[str, Edge]]) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        for succ in out.get(stack.pop(), {}):
            if succ not in seen:
                seen.add(succ)
                stack.append(succ)
    return seen


def _components(out: dict[str, dict[str, Edge]]) -> list[set[str]]:
    """The strongly connected components with a cycle: the modules that reach a module and that
    it reaches (a graph of ~150 modules needs nothing cleverer)."""
    reach = {node: _reachable(node, out) for node in out}
    found: list[set[str]] = []
    for node in sorted(reach):
        if node in reach[node] and not any(node in component for component in found):
            found.append({other for other in reach[node] if node in reach.get(other, ())})
    return found


def _shortest_cycle(start: str, component: set[str], out: dict[str, dict[str, Edge]]) -> list[Edge]:
    previous: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ, edge in sorted(out[node].items()):
                if succ not in component or succ in previous:
                    continue
                previous[succ] = edge
                if succ == start:
                    path = [edge]
                    while path[0].importer != start:
                        path.insert(0, previous[path[0].importer])
                    return path
                following.append(succ)
        frontier = following
    raise AssertionError(f"no cycle through {start}")


def upward_edges(edges: list[Edge], layers=LAYERS) -> list[Edge]:
    """Edges from a lower layer to a higher one."""
    return [e for e in edges if (layer_of(e.importer, layers) or 0) < (layer_of(e.imported, layers) or 0)]


def _layer_name(module: str) -> str:
    found = layer_of(module)
    return "?" if found is None else f"{LAYERS[found][0]} (layer {found})"


def _checked_edges(graph: ImportGraph) -> list[Edge]:
    return [e for e in graph.edges if (e.importer, e.imported) not in KNOWN_VIOLATIONS]


# --------------------------------------------------------------------------- the tests


@pytest.fixture(scope="module")
def graph() -> ImportGraph:
    return build_graph(package_sources())


def test_every_module_is_in_a_layer(graph: ImportGraph):
    unplaced = sorted(m for m in graph.modules if layer_of(m) is None)
    assert not unplaced, (
        f"modules in no layer: {', '.join(unplaced)}. Add each to LAYERS in {Path(__file__).name} "
        "(and to the layer table in its docstring and ARCHITECTURE.md)"
    )


def test_no_import_cycles(graph: ImportGraph):
    edges = _checked_edges(graph)
    cycles = find_cycles(edges)
    report = [
        f"import cycle (one of those among {', '.join(component)}):\n    "
        + "\n    ".join(edge.where() for edge in cycle)
        for cycle, component in zip(cycles, cycle_components(edges), strict=True)
    ]
    assert not cycles, (
        "\n".join(report) + "\nBreak each cycle by moving what both modules need into a lower "
        "module (see the layer table); a function-local import only hides the cycle."
    )


def test_no_upward_imports(graph: ImportGraph):
    bad = upward_edges(_checked_edges(graph))
    report = [f"{e.where()}: {_layer_name(e.importer)} imports {_layer_name(e.imported)}" for e in bad]
    assert not bad, (
        "upward imports:\n  " + "\n  ".join(report) + "\nA module may import its own layer and "
        "lower ones only: move the shared fact down into a lower layer (often aitc.analysis), or "
        "pass it in as an argument."
    )


def test_no_private_names_across_modules(graph: ImportGraph):
    bad = [u for u in graph.private if (u.importer, u.module, u.name) not in PRIVATE_IMPORTS_ALLOWED]
    report = [f"{u.file}:{u.line}: {u.importer} uses {u.module}.{u.name}" for u in bad]
    assert not bad, (
        "private names used across modules:\n  " + "\n  ".join(report) + "\nMake the name "
        "public (drop the underscore, document it) in the module that owns it, or move it to a "
        "shared lower module; list it in PRIVATE_IMPORTS_ALLOWED only with a reason."
    )


def test_exception_lists_are_current(graph: ImportGraph):
    edges = {(e.importer, e.imported) for e in graph.edges}
    private = {(u.importer, u.module, u.name) for u in graph.private}
    stale = [k for k in KNOWN_VIOLATIONS if k not in edges]
    stale += [k for k in PRIVATE_IMPORTS_ALLOWED if k not in private]
    assert not stale, f"remove these fixed entries from {Path(__file__).name}: {stale}"


# --------------------------------------------------------------------------- self-test of the checker


def _synthetic(texts: dict[str, str]) -> ImportGraph:
    return build_graph([Source(name, text, f"{name}.py", False) for name, text in texts.items()])


def test_checker_finds_cycles_hidden_in_functions():
    graph = _synthetic(
        {
            "p.a": "import p.b\n",
            "p.b": "def f():\n    from p.c import x\n",
            "p.c": "from p import a\n",
            "p.d": "import p.a\n",
        }
    )
    [cycle] = find_cycles(graph.edges)
    assert [(e.importer, e.imported, e.line) for e in cycle] == [
        ("p.a", "p.b", 1),
        ("p.b", "p.c", 2),
        ("p.c", "p.a", 1),
    ]


def test_checker_finds_upward_edges_and_private_names():
    layers = (("low", ("q.low",)), ("high", ("q.high", "q.*")))
    graph = _synthetic(
        {
            "q": "",
            "q.low": "from q.high import _helper\n",
            "q.high": "import q.low as low\nlow._secret()\n",
        }
    )
    [up] = upward_edges(graph.edges, layers)
    assert (up.importer, up.imported, up.line) == ("q.low", "q.high", 1)
    assert {(u.importer, u.module, u.name) for u in graph.private} == {
        ("q.low", "q.high", "_helper"),
        ("q.high", "q.low", "_secret"),
    }


def test_checker_counts_the_package_init_an_import_runs():
    graph = _synthetic({"r": "", "r.s": "", "r.s.t": "", "r.u": "from r.s.t import x\n"})
    assert {(e.imported, e.implicit) for e in graph.edges} == {("r.s.t", False), ("r.s", True)}
