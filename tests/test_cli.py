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


@pytest.mark.timeout(300)
def test_the_demo_runs_one_delegation_through_every_offline_provider() -> None:
    """README main job (issue 9 / demo): the same delegation through the reference ACP agent,
    spawn, fork, Codex and Claude Code (installed by scripts/setup, on the bundled fake model
    servers), streamed, then a side-by-side table; then a cancelled slow turn. No key, no
    network."""
    done = run("demo", "--cancel-after", "0.3", timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    table = out[out.index("agent  ") :].splitlines()
    rows = {line.split()[0]: line.split() for line in table[2:7]}
    assert sorted(rows) == ["claude-code", "codex", "fork", "reference", "spawn"]
    assert {row[2] for row in rows.values()} == {"completed"}
    assert "▶ spawn: You said: Say hello to the team." in out
    assert "▶ codex: Hello from the fake model." in out
    assert "▶ claude-code: Hello from the fake model." in out
    assert " [cancel] " in out
    assert "[cancelled: cancelled by the demo]" in out
    assert out.rstrip().endswith("all delegations settled as expected")


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
