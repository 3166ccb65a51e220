"""Usage errors of every `subagents` command: one line and a hint, exit status 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BAD_INVOCATIONS = [
    [],
    ["--debug"],
    ["no-such-command"],
    ["demo", "--only", "nope"],
    ["demo", "--cancel-after", "-1"],
    ["demo", "--cancel-after", "abc"],
    ["demo", "--bogus"],
    ["run"],
    ["run", "reference", "hi", "--timeout", "abc"],
    ["run", "reference", "hi", "--timeout", "-1"],
    ["run", "reference", "hi", "--stop-grace", "inf"],
    ["run", "reference", "hi", "--cwd", "/no/such/dir"],
    ["run", "reference", "hi", "--config", "/no/such/subagents.toml"],
    ["run", "nope", "hi"],
    ["agents", "--timeout", "abc"],
    ["agents", "--config", "/no/such/subagents.toml"],
    ["agents", "--probe", "nope"],
    ["agents", "--probe", "reference", "--timeout", "-1"],
    ["agents", "--probe", "reference", "--jobs", "0"],
    ["agents", "install", "nope"],
    ["agents", "install", "--timeout", "abc"],
    ["agents", "install", "--timeout", "0"],
    ["agents", "import"],
    ["agents", "import", "/no/such/agent.json"],
    ["agents", "import", "x.json", "--bogus"],
    ["serve", "--tick", "abc"],
    ["serve", "--tick", "-1"],
    ["serve", "--max-steps", "0"],
    ["serve", "--adapter", "nope"],
    ["serve", "--sessions", "/proc/no/such/dir"],
    ["serve", "--listen", "nope"],
    ["serve", "--listen", "127.0.0.1:0", "--max-connections", "0"],
    ["serve", "--listen", "127.0.0.1:0", "--", "./no-such-agent"],
    ["serve", "--a2a", "127.0.0.1:0", "--public-url", "notaurl"],
    ["serve", "--a2a", "127.0.0.1:0", "--agent", "nope"],
    ["serve", "--a2a", "127.0.0.1:0", "--agent", "unknown-kind"],
    ["bridge"],
    ["bridge", "notaurl"],
    ["bridge", "http://127.0.0.1:1/acp", "--timeout", "abc"],
    ["bridge", "http://127.0.0.1:1/acp", "--header", "nocolon"],
    ["conformance", "--jobs", "abc", "--", "./agent"],
    ["conformance", "--only", "ACP-NOPE-001", "--", "./agent"],
    ["conformance", "--explain", "ACP-NOPE-001"],
    ["conformance", "--timeout", "-1", "--", "./agent"],
    ["conformance", "--check-timeout", "0", "--", "./agent"],
    ["conformance", "--startup-timeout", "nan", "--", "./agent"],
    ["conformance", "--json", "/no/such/dir/report.json", "--", "./agent"],
    ["conformance", "--junit", "/no/such/dir/report.xml", "--", "./agent"],
    ["conformance", "--write-baseline", "/no/such/dir/b.json", "--", "./agent"],
]


@pytest.mark.parametrize("argv", BAD_INVOCATIONS, ids=lambda argv: " ".join(argv) or "(none)")
def test_a_usage_error_is_one_line_and_a_hint_with_exit_status_2(
    argv: list[str], tmp_path: Path
) -> None:
    """Issue 35 (the last mile, C.1): a bad value for any command's option is a usage error:
    exit status 2 and at most two lines on stderr (the error, then a hint), never a traceback
    (`subagents demo --only nope` printed a 142-line exception group; argparse's errors
    printed the whole usage first; `subagents` alone printed the whole help)."""
    (tmp_path / "subagents.toml").write_text('[agents.unknown-kind]\nprovider = "no-such-kind"\n')
    agent = tmp_path / "agent"  # a conforming agent: the error is the option's, not the agent's
    agent.write_text(f"#!/bin/sh\nexec {sys.executable} -m subagents.examples.tiny_agent\n")
    agent.chmod(0o755)
    done = subprocess.run(
        [sys.executable, "-m", "subagents", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert 1 <= len(lines) <= 2, done.stderr
    assert lines[0].startswith("subagents"), done.stderr
    if len(lines) == 2:
        assert lines[1].startswith("  hint: "), done.stderr


def test_a_commands_own_bug_is_one_line_and_a_hint_with_exit_status_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 35 (the last mile, C.1): whatever a command raises that it did not expect ends
    as one line naming it and a hint to rerun with --debug (exit 1), never a traceback;
    --debug shows the traceback."""
    from subagents import cli
    from subagents.commands import demo

    def broken(args: object) -> int:
        raise ExceptionGroup("in a task group", [OSError("the disk is full")])

    monkeypatch.setattr(demo, "run", broken)
    assert cli.main(["demo"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "subagents demo: unexpected error: OSError: the disk is full",
        "  hint: rerun with --debug to see the traceback",
    ]
    assert cli.main(["--debug", "demo"]) == 1
    assert "Traceback" in capsys.readouterr().err
