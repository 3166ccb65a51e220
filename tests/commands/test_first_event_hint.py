"""Issue 35 (the last mile, C.6): when a run gets no first event, the hint matches how far the
agent got: one that never answered ``initialize`` never started speaking ACP (the command is
suspect, not the model); one that did but sent nothing on the prompt waits on its model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SILENT_AGENT = """\
import json, sys

prompt = None
for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method == "initialize":
        result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
    elif method == "session/new":
        result = {"sessionId": "s1"}
    elif method == "session/prompt":
        prompt = message["id"]  # never answered until cancelled: no event at all
        continue
    elif method == "session/cancel" and prompt is not None:
        message, result = {"id": prompt}, {"stopReason": "cancelled"}
    else:
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}))
    sys.stdout.write("\\n")
    sys.stdout.flush()
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "xdg").mkdir()
    agent = tmp_path / "silent_agent.py"
    agent.write_text(SILENT_AGENT, encoding="utf-8")
    (tmp_path / "subagents.toml").write_text(
        '[agents.mute]\ncommand = ["sleep", "600"]\nfirst_event_timeout = 1\n'
        f"[agents.silent]\ncommand = [{str(sys.executable)!r}, {str(agent)!r}]\n"
        "first_event_timeout = 1\n",
        encoding="utf-8",
    )
    return tmp_path


def run(home: Path, agent: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "subagents", "run", agent, "hello"],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        cwd=home,
        env={**os.environ, "XDG_CONFIG_HOME": str(home / "xdg")},
        check=False,
    )


def test_an_agent_that_never_answers_initialize_is_told_to_check_its_command(home: Path) -> None:
    """Issue 35 (C.6): no answer to ``initialize`` within the first-event deadline: the agent
    did not start speaking ACP, so the hint names the command to run by hand (and its
    stderr), not the model (the old hint sent the user to probe the model's reachability)."""
    done = run(home, "mute")
    assert done.returncode == 124, done.stderr
    assert "mute sent nothing within 1 s of the start" in done.stderr
    assert "never answered `initialize`" in done.stderr
    assert "did not start speaking ACP" in done.stderr
    assert "run `sleep 600` by hand and read its stderr" in done.stderr
    assert "reach its model" not in done.stderr


def test_an_agent_that_answered_initialize_but_sent_nothing_is_told_to_check_its_model(
    home: Path,
) -> None:
    """Issue 35 (C.6): ``initialize`` (and the session) answered, then no event on the
    prompt within the deadline: the model or its backend is not answering, and the hint says
    so (the probe command), not that the command is wrong."""
    done = run(home, "silent")
    assert done.returncode == 124, done.stderr
    assert "silent sent nothing within 1 s of the start" in done.stderr
    assert "it answered `initialize` but nothing came on the prompt" in done.stderr
    assert "`subagents agents --probe silent`" in done.stderr
    assert "did not start speaking" not in done.stderr


def test_the_hint_names_the_protocol_each_kind_of_agent_speaks() -> None:
    """Issue 35 (C.6): an agent that never answered its `initialize` did not start speaking
    its own protocol, which the hint names (Codex's app-server protocol, Claude Code's
    stream-json, A2A at a URL), with the command to run by hand or the server to check."""
    from subagents.commands.run import (
        _first_event_reason,  # pyright: ignore[reportPrivateUsage]
    )
    from subagents.config import AgentSpec

    codex = AgentSpec("cx", "codex", ("/opt/codex", "app-server"))
    said = _first_event_reason(codex, 5, started=False)
    assert "did not start speaking Codex's app-server protocol" in said
    assert "run `/opt/codex app-server` by hand" in said
    claude = AgentSpec("cc", "claude-code", ("claude",), model="m")
    assert "Claude Code's stream-json" in _first_event_reason(claude, 5, started=False)
    a2a = AgentSpec("remote", "a2a", url="http://build:9999")
    said = _first_event_reason(a2a, 5, started=False)
    assert "check that the server at http://build:9999 serves an A2A agent" in said
    assert "reach its model" in _first_event_reason(codex, 5, started=True)
