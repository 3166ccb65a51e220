"""The README's Layout section matches the source tree: every package (and every top-level
module) of ``src/subagents`` is listed where it sits, and nothing listed is missing (issue 18:
"a layer picture in the README that matches the tree")."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "subagents"

_ENTRY = re.compile(r"^( *)(\S.*?)(?: {2,}|$)")


def _layout_block() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Layout\n", 1)[1]
    block = section.split("```\n", 2)[1]
    return block.splitlines()


def _listed() -> set[str]:
    """The paths the Layout block lists (``src/subagents/protocol/acp/``, ``bench/``, ...):
    an entry is a run of names ending in ``/`` or ``.py`` indented two spaces per level;
    other lines continue the description above them."""
    listed: set[str] = set()
    parents: list[str] = []
    for line in _layout_block():
        match = _ENTRY.match(line)
        if match is None:
            continue
        depth, head = len(match.group(1)) // 2, match.group(2)
        names = [name.strip() for name in head.split(",")]
        if not all(name.endswith(("/", ".py")) for name in names):
            continue  # a description's continuation
        if len(match.group(1)) % 2 or depth > len(parents):
            continue
        del parents[depth:]
        prefix = "".join(parents)
        listed.update(prefix + name for name in names)
        if len(names) == 1 and names[0].endswith("/"):
            parents.append(names[0])
    return listed


def _packages() -> set[str]:
    return {
        "src/subagents/" + "".join(f"{part}/" for part in init.parent.relative_to(PACKAGE).parts)
        for init in PACKAGE.rglob("__init__.py")
        if "__pycache__" not in init.parts
    }


def test_every_package_is_listed_where_it_sits() -> None:
    """Issue 18: the Layout lists every package of the source tree, nested as in the tree."""
    missing = sorted(_packages() - _listed())
    assert not missing, f"packages missing from the README's Layout: {missing}"


def test_every_top_level_module_is_listed() -> None:
    """Issue 18: the Layout names every module at the package's top level."""
    modules = {f"src/subagents/{path.name}" for path in PACKAGE.glob("*.py")}
    missing = sorted(modules - _listed())
    assert not missing, f"modules missing from the README's Layout: {missing}"


def test_everything_listed_exists() -> None:
    """Issue 18: nothing in the Layout is stale: each listed path is in the tree."""
    stale = sorted(path for path in _listed() if not (ROOT / path).exists())
    assert not stale, f"the README's Layout lists paths that do not exist: {stale}"


def test_the_layout_parser_reads_nesting_and_module_lists() -> None:
    """The check above reads what it claims: nested packages and comma-separated modules."""
    listed = _listed()
    assert "src/subagents/protocol/acp/" in listed
    assert "src/subagents/_owned.py" in listed
    assert "bench/" in listed
