"""The package's public API, and that the types load without httpx."""

from __future__ import annotations

import subprocess
import sys

import subagents.harness.llm as llm


def test_every_name_in_all_exists_and_all_is_a_tuple() -> None:
    """House style: a tuple `__all__` whose names all resolve (the lazy adapters included)."""
    assert isinstance(llm.__all__, tuple)
    assert len(set(llm.__all__)) == len(llm.__all__)
    assert [name for name in llm.__all__ if not hasattr(llm, name)] == []


def test_importing_the_types_does_not_import_httpx() -> None:
    """`subagents.harness.llm` and its `types` load without httpx; the adapters bring it."""
    code = (
        "import sys, subagents.harness.llm, subagents.harness.llm.types\n"
        "assert 'httpx' not in sys.modules, 'httpx imported eagerly'\n"
        "from subagents.harness.llm import AnthropicAdapter\n"
        "assert 'httpx' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
