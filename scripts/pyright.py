"""`make lint`'s type check: pyright over the `aitc` package as Python imports it, and over the
pytest suite (test/python).

pyproject maps the top-level folders dialects/, passes/ and tools/ into the package
(`aitc.dialects`, ...); the editable install resolves that with an import hook pyright cannot
follow, and pyright does not descend into symlinked folders. So this script mirrors the package
as a tree of real folders holding one symlink per source file (build/pyright/aitc/...), links
the tests beside it (build/pyright/tests/..., they import only `aitc` and installed packages),
runs pyright there with the settings of pyproject's [tool.pyright], and prints each diagnostic
with the path of the source file, not the link. Exit status: pyright's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TREE = REPO / "build" / "pyright"
TESTS = {"tests": REPO / "test" / "python"}
"""Folder under TREE -> the test folder linked there."""


def package_dirs(config: dict) -> dict[str, Path]:
    """Package name -> source folder, from pyproject's [tool.setuptools] package-dir."""
    mapping = config["tool"]["setuptools"]["package-dir"]
    return {package: REPO / folder for package, folder in mapping.items()}


def build_tree(packages: dict[str, Path]) -> dict[Path, Path]:
    """Mirrors every mapped package's .py files, and the tests, under TREE; returns link -> source."""
    shutil.rmtree(TREE, ignore_errors=True)
    links: dict[Path, Path] = {}
    for package, folder in packages.items():
        target = TREE.joinpath(*package.split("."))
        for source in folder.rglob("*.py"):
            relative = source.relative_to(folder)
            if not _inside_other_package(package, relative, packages):
                _link(source, target / relative, links)
    for name, folder in TESTS.items():
        for source in folder.rglob("*.py"):
            _link(source, TREE / name / source.relative_to(folder), links)
    return links


def _link(source: Path, link: Path, links: dict[Path, Path]) -> None:
    if "__pycache__" in source.parts:
        return
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(source)
    links[link] = source


def _inside_other_package(package: str, relative: Path, packages: dict[str, Path]) -> bool:
    """aitc/ holds no dialects/ passes/ tools/ of its own, but skip any mapped name anyway."""
    first = f"{package}.{relative.parts[0]}" if len(relative.parts) > 1 else ""
    return first in packages


def main() -> int:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    links = build_tree(package_dirs(config))
    settings = {**config["tool"]["pyright"], "include": ["aitc", *TESTS]}
    (TREE / "pyrightconfig.json").write_text(json.dumps(settings))
    python = Path(sys.executable)
    command = [str(python.parent / "pyright"), "--pythonpath", str(python), "--outputjson", "-p", str(TREE)]
    offline = {**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"}  # no version check against PyPI
    run = subprocess.run(command, capture_output=True, text=True, cwd=TREE, env=offline)
    try:
        report = json.loads(run.stdout)
    except json.JSONDecodeError:
        print(run.stdout + run.stderr, file=sys.stderr)
        return run.returncode or 1
    for diagnostic in report["generalDiagnostics"]:
        path = Path(diagnostic["file"])
        source = links.get(path, path)
        line = diagnostic["range"]["start"]["line"] + 1
        rule = f" [{diagnostic['rule']}]" if "rule" in diagnostic else ""
        print(f"{source.relative_to(REPO)}:{line}: {diagnostic['severity']}: {diagnostic['message']}{rule}")
    summary = report["summary"]
    files, errors, warnings = (summary[k] for k in ("filesAnalyzed", "errorCount", "warningCount"))
    print(f"pyright: {files} files, {errors} errors, {warnings} warnings")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
