"""The `subagents` command."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "subagents.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_the_demo_runs_a_delegation_end_to_end_offline() -> None:
    """README main job: spawn the reference agent, stream a reply and updates, cancel a slow
    turn, show each outcome; no key, no network."""
    done = run("demo", "--cancel-after", "0.3")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "connected to subagents-reference-agent" in out
    assert "1 2 3 4 5" in out
    assert "  · plan: " in out
    assert "  ? permission asked for " in out
    assert "[cancelling the turn]" in out
    assert out.count("[outcome: end_turn]") == 3
    assert "[outcome: cancelled]" in out
    assert out.rstrip().endswith("done: 4 turns, outcomes end_turn, end_turn, end_turn, cancelled")


def test_an_unknown_command_shows_the_usage_and_fails() -> None:
    """Bad input gets a clear error and a non-zero status."""
    done = run("no-such-command")
    assert done.returncode == 2
    assert "invalid choice" in done.stderr


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_the_version_flag_prints_the_version(flag: str) -> None:
    """`subagents --version`."""
    done = run(flag)
    assert done.returncode == 0
    assert done.stdout.startswith("subagents ")
