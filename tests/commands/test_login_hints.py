"""Issue 35 (the last mile, C.4 and C.5): the hints of an agent that cannot take a prompt name
commands that exist (the npm agents live under a private prefix, not on PATH), and the cause
is said once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from subagents.config import AgentSpec
from subagents.providers._readiness import classify, codex_account

CODEX = AgentSpec("codex", "codex", ("codex", "app-server"))
CLAUDE = AgentSpec("claude-code", "claude-code", ("claude",), model="m")
ADAPTER = AgentSpec("claude-agent-acp", "acp", ("claude-agent-acp",))


@pytest.fixture
def prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An npm prefix of its own, and a PATH with neither codex nor claude on it."""
    (tmp_path / "empty-path").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    monkeypatch.setenv("SUBAGENTS_NPM_PREFIX", str(tmp_path / "npm"))
    return tmp_path / "npm"


def install(prefix: Path, program: str) -> Path:
    path = prefix / "node_modules" / ".bin" / program
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_login_hints_name_the_installed_cli_by_its_path(prefix: Path) -> None:
    """Issue 35 (C.4): after `subagents agents install`, codex and claude are in the npm
    prefix, not on PATH: the hints name them by their full path (they said `codex login`
    and "run `claude`", commands the shell does not find)."""
    codex, claude = install(prefix, "codex"), install(prefix, "claude")
    found = codex_account(CODEX, {"account": None, "requiresOpenaiAuth": True})
    assert found is not None
    assert found.hint.startswith(f"log in with `{codex} login` (your login in ~/.codex is used)")
    for spec in (CLAUDE, ADAPTER):
        said = classify(spec, "Not logged in · Please run /login")
        assert said is not None
        assert said.hint.startswith(f"log in by running `{claude}` and typing /login"), said.hint


def test_without_the_cli_the_hint_names_the_command_that_installs_it(prefix: Path) -> None:
    """Issue 35 (C.4): no codex anywhere: the hint says how to install it
    (`subagents agents install codex`) and the path to log in with afterwards."""
    found = classify(CODEX, "Not logged in")
    assert found is not None
    codex = prefix / "node_modules" / ".bin" / "codex"
    assert found.hint.startswith(
        f"install its CLI with `subagents agents install codex`, then log in: `{codex} login`"
    )
    claude = classify(ADAPTER, "Authentication required")
    assert claude is not None
    assert "`subagents agents install claude-code`" in claude.hint


def test_no_hint_names_a_bare_cli_that_is_not_on_path(prefix: Path) -> None:
    """Issue 35 (C.4): whatever is installed, no hint says `codex login` or runs `claude`
    by a bare name the shell would not find."""
    for installed in ((), ("codex",), ("codex", "claude")):
        for program in installed:
            install(prefix, program)
        for spec in (CODEX, CLAUDE, ADAPTER):
            said = classify(spec, "Not logged in")
            assert said is not None
            assert "`codex login`" not in said.hint
            assert "`claude`" not in said.hint


AUTH_FAILING_AGENT = """\
import json, sys

for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    answer = {"jsonrpc": "2.0", "id": message.get("id")}
    if method == "initialize":
        answer["result"] = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
    elif method == "session/new":
        answer["result"] = {"sessionId": "s1"}
    elif method == "session/prompt":
        answer["error"] = {"code": -32000, "message": "Authentication required"}
    else:
        continue
    sys.stdout.write(json.dumps(answer) + "\\n")
    sys.stdout.flush()
"""


def test_the_cause_of_a_run_that_cannot_take_a_prompt_is_said_once(tmp_path: Path) -> None:
    """Issue 35 (C.5): an agent whose prompt fails for want of credentials: stderr is one
    line naming the cause and a hint; the failed outcome's own line (`[failed (turn): ...
    Authentication required ...]`) no longer says the same cause first."""
    agent = tmp_path / "agent.py"
    agent.write_text(AUTH_FAILING_AGENT, encoding="utf-8")
    (tmp_path / "subagents.toml").write_text(
        f"[agents.locked]\ncommand = [{sys.executable!r}, {str(agent)!r}]\n", encoding="utf-8"
    )
    done = subprocess.run(
        [sys.executable, "-m", "subagents", "run", "locked", "hello"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")},
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr
    assert lines[0].startswith("subagents run: locked cannot take a prompt: needs credentials")
    assert lines[1].startswith("  hint: ")
    assert done.stderr.count("Authentication required") == 1, done.stderr
