"""``subagents conformance -- subagents serve`` (issue 8, done means): the in-process runtime
served over ACP with the offline model is a conformant agent, with no known failure (it
connects the stdio, HTTP and SSE MCP servers a session is given); the checked-in baseline
``baselines/subagents-serve.json`` is empty. Without ``--sessions`` it keeps sessions in
memory and advertises neither ``loadSession`` nor ``resume`` (issue 16: a client loads from a new
process)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .conftest import run_against_baseline


@pytest.mark.long
@pytest.mark.timeout(300)
def test_subagents_serve_passes_the_conformance_suite(tmp_path: Path) -> None:
    # Persisted sessions: load and resume are judged as clients use them, from a new process.
    sessions = tmp_path / "sessions"
    run = run_against_baseline(
        tmp_path,
        "subagents-serve",
        [sys.executable, "-m", "subagents", "serve", "--sessions", str(sessions)],
    )
    assert run.report["verdict"] == "conformant"
    assert run.report["agent"]["name"] == "subagents-runtime"
    judged = [
        r["id"]
        for r in run.report["requirements"]
        if r["status"] == "fail" and r["tier"] in ("mandatory", "capability")
    ]
    assert judged == []


def test_serve_without_a_sessions_folder_does_not_advertise_load_or_resume(
    tmp_path: Path,
) -> None:
    """Issue 16 (no false advertising): sessions held in memory cannot be loaded by a new
    process, so serve without --sessions advertises neither load nor resume (their checks are
    n/a), and with --sessions it does (and they pass above)."""
    from .conftest import run_conformance

    run = run_conformance(
        tmp_path,
        [sys.executable, "-m", "subagents", "serve"],
        *("--only", "ACP-LOAD-001", "--only", "ACP-RESUME-001"),
    )
    assert run.returncode == 0, run.stdout
    assert run.status("ACP-LOAD-001") == "n/a"
    assert run.status("ACP-RESUME-001") == "n/a"
