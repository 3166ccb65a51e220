"""The README's Python blocks: a block that cannot run as it is says so on its first line, and
what every block imports exists."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
FRAGMENT = "# A fragment:"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def _runs_as_a_script(block: str) -> bool:
    try:
        compile(block, "<README>", "exec")
    except SyntaxError:
        return False
    return True


def test_a_block_that_cannot_run_as_a_script_is_marked_as_a_fragment() -> None:
    """Issue 35: code fragments with top-level `await` are marked as such (a newcomer pasting
    one into a file gets a SyntaxError otherwise); a marked block still parses as top-level
    await code, and a block marked as a fragment is one."""
    blocks = _python_blocks()
    assert blocks
    fragments = [b for b in blocks if b.startswith(FRAGMENT)]
    assert fragments, "the README has fragments (the peer, the clients)"
    for block in blocks:
        if block.startswith(FRAGMENT):
            assert not _runs_as_a_script(block), f"marked as a fragment, but runs:\n{block}"
            compile(block, "<README>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        else:
            assert _runs_as_a_script(block), f"a fragment not marked as one:\n{block}"


def test_every_name_a_readme_block_imports_exists() -> None:
    """Issue 35: what the README's code imports exists in the package (a fragment that cannot
    run is still copied from: its imports must work)."""
    checked = 0
    for block in _python_blocks():
        tree = compile(
            block, "<README>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        )
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name), f"{node.module} has no {alias.name}"
                    checked += 1
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    importlib.import_module(alias.name)
                    checked += 1
    assert checked > 10
