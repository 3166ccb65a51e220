"""Helpers for the conformance suite's own tests: run ``subagents conformance`` as a process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
BASELINES = Path(__file__).with_name("baselines")
REFERENCE = [sys.executable, "-m", "subagents.agents.reference"]
SDK_ECHO_AGENT = REPO / ".cache" / "acp-sdk-0.12.1-examples" / "echo_agent.py"


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    report: dict[str, Any]

    def status(self, requirement_id: str) -> str:
        return self.by_id[requirement_id]["status"]

    @property
    def by_id(self) -> dict[str, dict[str, Any]]:
        return {r["id"]: r for r in self.report["requirements"]}


def run_conformance(
    tmp_path: Path,
    agent: list[str],
    *options: str,
    env: dict[str, str] | None = None,
    timeout: float = 240,
) -> Run:
    """``subagents conformance --json ... [options] -- agent``, bounded by ``timeout``."""
    report = tmp_path / "report.json"
    command = [
        sys.executable,
        "-m",
        "subagents.cli",
        "conformance",
        "--json",
        str(report),
        *options,
        "--",
        *agent,
    ]
    child_env = dict(os.environ)
    child_env.update(env or {})
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env,
        cwd=tmp_path,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            # Timed out, or the test was interrupted: SIGTERM lets the command stop every
            # agent process it started (SIGKILL would orphan them); SIGKILL only as a last resort.
            process.terminate()
            try:
                process.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
    data = json.loads(report.read_text()) if report.exists() else {}
    return Run(process.returncode, stdout, stderr, data)


def run_against_baseline(
    tmp_path: Path,
    name: str,
    agent: list[str],
    *options: str,
    env: dict[str, str] | None = None,
    timeout: float = 900,
) -> Run:
    """Run the suite against ``agent`` with its checked-in baseline ``baselines/<name>.json``
    and assert the result equals it: every expected failure fails, nothing else fails (but the
    baseline's intermittent ones, which may), no entry is stale, the exit status is 0.

    With ``SUBAGENTS_WRITE_BASELINES=1`` the baseline is rewritten from this run instead (and
    the test is skipped, saying so): use it after a deliberate change of the suite or agent.
    """
    import pytest

    baseline = BASELINES / f"{name}.json"
    if os.environ.get("SUBAGENTS_WRITE_BASELINES") == "1":
        # The current baseline goes in too, so its intermittent entries are kept.
        keep = ("--baseline", str(baseline)) if baseline.exists() else ()
        run = run_conformance(
            tmp_path,
            agent,
            *options,
            *keep,
            "--write-baseline",
            str(baseline),
            env=env,
            timeout=timeout,
        )
        pytest.skip(f"baseline {baseline.name} rewritten: {run.report.get('verdict')}")
    run = run_conformance(
        tmp_path, agent, *options, "--baseline", str(baseline), env=env, timeout=timeout
    )
    assert run.report, run.stderr
    assert run.report["probe_error"] is None, run.report["probe_error"]
    known = json.loads(baseline.read_text())
    expected = set(known["expected_failures"])
    intermittent = set(known.get("intermittent_failures", {}))
    failures = {r["id"] for r in run.report["requirements"] if r["status"] == "fail"}
    assert failures - intermittent == expected, run.stdout
    assert run.report["stale_baseline"] == []
    assert run.returncode == 0, run.stdout
    who = run.report["agent"]
    print(f"{name}: {who['name']} {who['version']} in {run.report['duration']:.1f} s")
    return run
