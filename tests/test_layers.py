"""The layer rules of DESIGN.md that import statements show, read with ``ast`` (nothing is
imported): lazy imports inside functions count too."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "subagents"


def _modules(under: Path = PACKAGE) -> Iterator[Path]:
    yield from sorted(path for path in under.rglob("*.py") if "__pycache__" not in path.parts)


def _imported(path: Path) -> set[str]:
    """The absolute names of what ``path`` imports: each module, and for ``from M import N``
    also ``M.N`` (which may be a submodule)."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = parts[:-1]  # of an __init__.py too: its own package
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def _importers(names: tuple[str, ...], modules: Iterator[Path]) -> list[str]:
    """The modules among ``modules`` importing any of ``names`` (or what is inside them)."""
    found: list[str] = []
    for path in modules:
        imported = _imported(path)
        if any(i == n or i.startswith(n + ".") for i in imported for n in names):
            found.append(str(path.relative_to(PACKAGE.parent)))
    return found


def test_the_model_adapters_do_not_import_the_providers() -> None:
    """Issue 18 (clean edges): the LLM adapters take the neutral ``subagents.cancel``'s
    ``CancelSignal``; importing ``providers`` only for it tied harness and providers both
    ways."""
    assert _importers(("subagents.providers",), _modules(PACKAGE / "harness" / "llm")) == []


def test_product_code_never_imports_the_testing_package() -> None:
    """Issue 18 (clean edges): what the product needs at run time (the npm agents' locations,
    the demo's fake model servers) lives in product modules; only ``subagents.testing``
    itself imports ``subagents.testing``."""
    product = (path for path in _modules() if "testing" not in path.relative_to(PACKAGE).parts)
    assert _importers(("subagents.testing",), product) == []
