"""The optional extras install what their modules import (first contact: a plain
``pip install 'subagents[a2a]'`` once could not run ``subagents serve --a2a``: hypercorn, the
server, came only with the ``remote`` extra)."""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "subagents"

EXTRA_MODULES = {
    "a2a": [
        "providers/a2a.py",
        "remote/a2a_server.py",
        "remote/a2a_tasks.py",
        "commands/_serve_a2a.py",
    ],
    "remote": ["remote/server.py", "remote/client.py", "remote/bridge.py"],
}
"""The modules each extra exists for (their imports, function-local ones included)."""


def _closure(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` install (names normalised), through the installed
    metadata of each, extras followed."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = req.name.lower().replace("_", "-")
        key = f"{name}[{','.join(sorted(req.extras))}]"
        if key in seen:
            continue
        seen.add(key)
        seen.add(name)
        for line in metadata.requires(req.name) or []:
            sub = Requirement(line)
            markers = [{"extra": extra} for extra in req.extras] or [{"extra": ""}]
            if sub.marker is None or any(sub.marker.evaluate(m) for m in markers):
                todo.append(sub)
    return {key for key in seen if "[" not in key}


def _third_party_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "subagents"}


@pytest.mark.parametrize("extra", sorted(EXTRA_MODULES))
def test_an_extra_installs_every_package_its_modules_import(extra: str) -> None:
    """First contact (issue 19, found again for issue 21): every third-party module imported by
    the modules an extra is for comes with the package's dependencies plus that extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    installed = _closure([*project["dependencies"], *project["optional-dependencies"][extra]])
    providers = metadata.packages_distributions()
    missing: dict[str, list[str]] = {}
    for module in EXTRA_MODULES[extra]:
        for name in sorted(_third_party_imports(SRC / module)):
            dists = {d.lower().replace("_", "-") for d in providers.get(name, [])}
            if not dists & installed:
                missing.setdefault(module, []).append(f"{name} ({', '.join(sorted(dists))})")
    assert not missing, f"subagents[{extra}] does not install: {missing}"
