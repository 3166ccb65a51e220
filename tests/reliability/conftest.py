"""The fault table (issue 10, done means): each fault test records what it observed, per
layer; ``test_zz_fault_table.py`` (collected last) checks the checked-in table
``fault-table.md`` against the observations, or rewrites it with
``SUBAGENTS_WRITE_FAULT_TABLE=1``. Observations are deterministic sentences (no times, no
pids, no interpreter paths), the same on asyncio and trio (a difference between the two
fails the test)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

OBSERVED: dict[tuple[str, str], str] = {}
"""(layer, fault) -> what was observed, for this test session."""

LAYERS = ("JSON-RPC peer", "ACP client", "AcpProvider", "subagents run")


@pytest.fixture
def observe() -> Callable[[str, str, str], None]:
    """``observe(layer, fault, behaviour)`` records one row of the fault table."""

    def record(layer: str, fault: str, behaviour: str) -> None:
        assert layer in LAYERS, layer
        behaviour = re.sub(r"\(pid \d+\)", "(pid N)", behaviour)
        behaviour = re.sub(r" in \d+(?:\.\d+)? s\]", " in T s]", behaviour)
        # The interpreter's name and path differ between checkouts (python, python3, a venv).
        behaviour = re.sub(r"'(?:[^' ]*/)?python[0-9.]*'", "'python'", behaviour)
        key = (layer, fault)
        previous = OBSERVED.get(key)
        if previous is not None and previous != behaviour:
            raise AssertionError(
                f"{layer} / {fault}: observed differently on another backend or run:\n"
                f"  {previous}\n  {behaviour}"
            )
        OBSERVED[key] = behaviour

    return record
