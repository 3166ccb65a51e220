"""The ACP conformance suite: run it against any agent binary.

``subagents conformance [--json FILE] [--junit FILE] [--baseline FILE] [--jobs N] -- AGENT...``
from a terminal or CI, ``pytest --acp-agent "AGENT..."`` through the pytest plugin, or
:func:`run_suite` from Python. The requirements are in :mod:`.requirements`, one check each in
:mod:`.checks`; the harness is raw NDJSON (:mod:`.wire`).

This package's ``__init__`` imports nothing eagerly: ``python -m
subagents.conformance.mcp_probe`` (the stdio MCP server the suite hands to agents) must start
fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .framework import Options
    from .report import load_baseline, render_terminal, to_json, to_junit, write_baseline
    from .requirements import REQUIREMENTS, Requirement, Tier
    from .runner import RequirementResult, Status, SuiteReport, run_suite

__all__ = (
    "REQUIREMENTS",
    "Options",
    "Requirement",
    "RequirementResult",
    "Status",
    "SuiteReport",
    "Tier",
    "load_baseline",
    "render_terminal",
    "run_suite",
    "to_json",
    "to_junit",
    "write_baseline",
)

_WHERE = {
    "Options": "framework",
    "REQUIREMENTS": "requirements",
    "Requirement": "requirements",
    "Tier": "requirements",
    "RequirementResult": "runner",
    "Status": "runner",
    "SuiteReport": "runner",
    "run_suite": "runner",
    "load_baseline": "report",
    "render_terminal": "report",
    "to_json": "report",
    "to_junit": "report",
    "write_baseline": "report",
}


if not TYPE_CHECKING:
    # Hidden from type checkers, which see the imports above: a misspelt name is an error.
    def __getattr__(name: str) -> Any:
        module = _WHERE.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", __name__), name)
        globals()[name] = value
        return value
