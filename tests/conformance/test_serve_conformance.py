"""``subagents conformance -- subagents serve`` (issue 8, done means): the in-process runtime
served over ACP with the offline model is a conformant agent, with no known failure (it
connects the stdio, HTTP and SSE MCP servers a session is given); the checked-in baseline
``baselines/subagents-serve.json`` is empty."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .conftest import run_against_baseline


@pytest.mark.timeout(300)
def test_subagents_serve_passes_the_conformance_suite(tmp_path: Path) -> None:
    run = run_against_baseline(
        tmp_path, "subagents-serve", [sys.executable, "-m", "subagents", "serve"]
    )
    assert run.report["verdict"] == "conformant"
    assert run.report["agent"]["name"] == "subagents-runtime"
    judged = [
        r["id"]
        for r in run.report["requirements"]
        if r["status"] == "fail" and r["tier"] in ("mandatory", "capability")
    ]
    assert judged == []
