"""Cheap convention tests (as xDSL has): op and pass naming, docstrings, packaging, imports.

Each test names the file to fix in its failure message; see STYLE.md for the habits.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest
from xdsl.ir import Dialect, Operation

from aitc.ir import AITC_DIALECTS
from aitc.passes.registry import ALL_PASSES

REPO = Path(__file__).resolve().parents[2]
MAPPED_FOLDERS = ("dialects", "passes", "tools")
"""Top-level folders that pyproject maps into the `aitc` package (`aitc.dialects`, ...)."""


def _dialects() -> list[Dialect]:
    return [factory() for factory in AITC_DIALECTS.values()]


def _ops() -> list[type[Operation]]:
    return [op for dialect in _dialects() for op in dialect.operations]


def _op_id(op: type[Operation]) -> str:
    return op.name


# --------------------------------------------------------------------------- ops


@pytest.mark.parametrize("dialect", _dialects(), ids=lambda d: d.name)
def test_dialect_object_named_after_namespace(dialect: Dialect):
    assert dialect.name in AITC_DIALECTS
    assert list(dialect.operations), f"dialect {dialect.name} has no ops"


@pytest.mark.parametrize("op", _ops(), ids=_op_id)
def test_op_class_name_ends_in_op(op: type[Operation]):
    assert op.__name__.endswith("Op"), f"{op.__name__} ({op.name}) should end in 'Op'"


@pytest.mark.parametrize("op", _ops(), ids=_op_id)
def test_op_name_is_namespaced_and_matches_class(op: type[Operation]):
    namespace, _, short = op.name.partition(".")
    assert namespace in AITC_DIALECTS, f"{op.__name__}.name = {op.name!r} has no aitc namespace"
    assert short, f"{op.__name__}.name = {op.name!r} has no op name after the namespace"
    dialect = AITC_DIALECTS[namespace]()
    assert op in list(dialect.operations), f"{op.name} is not in the {namespace} dialect object"
    # graph.max_pool <-> MaxPoolOp, graph.prelu <-> PReluOp: same letters, case and '_' aside.
    assert short.replace("_", "") == op.__name__.removesuffix("Op").lower(), (
        f"{op.__name__} does not spell {op.name}"
    )


@pytest.mark.parametrize("op", _ops(), ids=_op_id)
def test_op_docstring_has_mlir_example(op: type[Operation]):
    doc = op.__doc__ or ""
    example = re.search(r"```mlir\n(.*?)```", doc, re.DOTALL)
    assert example, f"{op.__name__} needs a docstring with a fenced ```mlir example"
    assert op.name in example.group(1), f"the example of {op.__name__} does not use {op.name}"


@pytest.mark.parametrize("namespace", sorted(AITC_DIALECTS))
def test_every_op_round_trips_in_ops_mlir(namespace: str):
    ops_mlir = REPO / "test" / "dialects" / namespace / "ops.mlir"
    assert ops_mlir.exists(), f"every dialect needs {ops_mlir.relative_to(REPO)}"
    text = ops_mlir.read_text()
    missing = [
        op.name
        for op in AITC_DIALECTS[namespace]().operations
        if not re.search(rf"(?<![\w.]){re.escape(op.name)}(?![\w])", text)
    ]
    assert not missing, f"{ops_mlir.relative_to(REPO)} never uses {missing}"


# --------------------------------------------------------------------------- passes


@pytest.mark.parametrize("key", sorted(ALL_PASSES))
def test_pass_registry_key_is_pass_name(key: str):
    pass_class = ALL_PASSES[key]()
    assert pass_class.name == key, (
        f"registry key {key!r} but {pass_class.__name__}.name = {pass_class.name!r}"
    )


LEVELS = ("graph", "shard", "tile", "sync")
"""The folders of in-dialect passes (`passes/<level>/`)."""


def expected_pass_module(key: str) -> str:
    """Where pass `key` lives: `convert-<a>-to-<b>` is the module or package
    `aitc.passes.<a>_to_<b>` (as MLIR's lib/Conversion/<A>To<B>/); any other pass is the module or
    package `<key with _>` in the folder of the level it rewrites (`multi-buffer` ->
    `aitc.passes.tile.multi_buffer`); this returns that last name."""
    conversion = re.fullmatch(r"convert-(\w+)-to-(\w+)", key)
    if conversion:
        return f"aitc.passes.{conversion[1]}_to_{conversion[2]}"
    return key.replace("-", "_")


@pytest.mark.parametrize("key", sorted(ALL_PASSES))
def test_pass_module_is_named_after_the_pass(key: str):
    module = ALL_PASSES[key]().__module__
    expected = expected_pass_module(key)
    if key.startswith("convert-"):
        assert module == expected, f"{key} lives in {module}; a conversion belongs in {expected}"
        return
    package, _, leaf = module.rpartition(".")
    assert leaf == expected, f"{key} lives in {module}; name its module or package {expected}"
    assert package in {f"aitc.passes.{level}" for level in LEVELS}, (
        f"{key} lives in {package}; an in-dialect pass belongs in aitc.passes.<level> ({', '.join(LEVELS)})"
    )


@pytest.mark.parametrize("key", sorted(ALL_PASSES))
def test_pass_docstring_has_contract_headings(key: str):
    pass_class = ALL_PASSES[key]()
    doc = pass_class.__doc__ or ""
    summary = doc.strip().splitlines()[0] if doc.strip() else ""
    assert summary, f"{pass_class.__name__} needs a docstring with a one-line summary"
    for heading in ("Input:", "Output:", "Invariants:"):
        assert re.search(rf"^\s*{heading}", doc, re.MULTILINE), (
            f"{pass_class.__name__} ({key}) docstring lacks the '{heading}' heading"
        )


# --------------------------------------------------------------------------- packaging


def _setuptools() -> dict:
    with (REPO / "pyproject.toml").open("rb") as handle:
        return tomllib.load(handle)["tool"]["setuptools"]


def _is_source_dir(path: Path) -> bool:
    return path.is_dir() and path.name != "__pycache__" and not path.name.startswith(".")


def _on_disk_packages() -> set[str]:
    """Dotted names of every folder with an `__init__.py` under the mapped roots."""
    found = set()
    for package, folder in _setuptools()["package-dir"].items():
        root = REPO / folder
        for init in root.rglob("__init__.py"):
            relative = init.parent.relative_to(root)
            if any(part == "__pycache__" or part.startswith(".") for part in relative.parts):
                continue
            found.add(".".join([package, *relative.parts]))
    return found


def test_pyproject_lists_every_package():
    listed = set(_setuptools()["packages"])
    on_disk = _on_disk_packages()
    assert not on_disk - listed, f"add {sorted(on_disk - listed)} to [tool.setuptools] packages"
    assert not listed - on_disk, f"{sorted(listed - on_disk)} in pyproject.toml do not exist"


def test_python_folders_are_packages():
    """A folder of .py files without `__init__.py` would silently miss the wheel."""
    roots = [REPO / folder for folder in _setuptools()["package-dir"].values()]
    loose = [
        str(folder.relative_to(REPO))
        for root in roots
        for folder in [root, *filter(_is_source_dir, root.rglob("*"))]
        if any(folder.glob("*.py")) and not (folder / "__init__.py").exists()
    ]
    assert not loose, f"add __init__.py to {loose}"


def test_mapped_folders_are_not_duplicated_inside_aitc():
    """`aitc/tools/` beside a top-level `tools/` would shadow one with the other."""
    duplicated = [name for name in MAPPED_FOLDERS if (REPO / "aitc" / name).exists()]
    assert not duplicated, f"aitc/{duplicated} duplicates the top-level folder mapped into aitc"


# --------------------------------------------------------------------------- imports


def _python_files() -> list[Path]:
    skip = {".venv", "build", ".cache", ".git", "node_modules"}
    return [
        path
        for path in REPO.rglob("*.py")
        if not skip & set(path.relative_to(REPO).parts) and "Output" not in path.parts
    ]


def _bare_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [
            f"{path.relative_to(REPO)}:{node.lineno}: {name}"
            for name in names
            if name.split(".")[0] in MAPPED_FOLDERS
        ]
    return found


def test_no_bare_imports_of_mapped_folders():
    """`import dialects` from the repo root would load a second copy of every op class."""
    offenders = [line for path in _python_files() for line in _bare_imports(path)]
    assert not offenders, "import aitc.dialects/passes/tools instead:\n" + "\n".join(offenders)


# --------------------------------------------------------------------------- dependencies

_PINNED = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[0-9][A-Za-z0-9.+!-]*)")


def _lock_lines() -> list[str]:
    lines = (REPO / "requirements.lock").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_lock_holds_only_registry_pins():
    """`requirements.lock` is `name==version` lines a fresh machine can fetch from the registry:
    never a local path, a URL, `@` direct references, hashes of one machine's wheels or ranges."""
    bad = [line for line in _lock_lines() if not _PINNED.fullmatch(line)]
    assert not bad, f"requirements.lock must hold only name==version lines, not: {bad}"


def test_every_dependency_is_pinned_exactly_and_locked_at_that_version():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    loose = [d for d in declared if not _PINNED.fullmatch(d)]
    assert not loose, f"pin these exactly in pyproject.toml: {loose}"
    locked = {_normal(m["name"]): m["version"] for m in map(_PINNED.fullmatch, _lock_lines()) if m}
    for pin in map(_PINNED.fullmatch, declared):
        assert pin is not None
        name = _normal(pin["name"])
        assert locked.get(name) == pin["version"], f"requirements.lock pins {name}=={locked.get(name)}"


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
