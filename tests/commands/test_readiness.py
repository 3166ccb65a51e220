"""What the probe may claim about a Claude agent with no account query (issue 19, point 2:
``--probe`` says ``ok`` only when the agent can take a prompt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from subagents.config import AgentSpec
from subagents.providers._readiness import claude_login_absent

AGENT = AgentSpec("claude-agent-acp", "acp", ("claude-agent-acp",))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("CLAUDE_CONFIG_DIR", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("CLAUDE_CODE_OAUTH_TOKEN", raising=False)
    return tmp_path


def test_no_state_directory_and_no_key_means_needs_credentials(home: Path) -> None:
    """No ~/.claude and no key anywhere: no login can exist, so the probe says so."""
    found = claude_login_absent(AGENT)
    assert found is not None
    assert found.cause == "needs credentials"
    assert str(home / ".claude") in found.detail
    assert "/login" in found.hint


def test_a_state_directory_or_a_key_claims_nothing(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ~/.claude (the login may be there or in a keychain), a key in the entry or in the
    environment, or an entry that sets its own HOME: the probe claims nothing."""
    assert (
        claude_login_absent(AgentSpec("c", "acp", ("claude-agent-acp",), env={"HOME": "/x"}))
        is None
    )
    keyed = AgentSpec("c", "acp", ("claude-agent-acp",), env={"ANTHROPIC_API_KEY": "k"})
    assert claude_login_absent(keyed) is None
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    assert claude_login_absent(AGENT) is None
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    (home / ".claude").mkdir()
    assert claude_login_absent(AGENT) is None


def test_other_agents_are_not_judged_this_way(home: Path) -> None:
    """Only Claude agents: an ACP agent of another family gets no claim."""
    assert claude_login_absent(AgentSpec("r", "acp", ("python", "agent.py"))) is None


def test_a_crash_that_merely_contains_a_network_marker_is_not_no_network() -> None:
    """Issue 35 (the last mile, C: the tour): an agent that exits with `ModuleNotFoundError`
    was told "cannot reach its model: check the network" ("modulenotfounderror" contains
    "enotfound"); markers now match as words of their own."""
    from subagents.providers._readiness import classify

    agent = AgentSpec("x", "acp", ("python3", "agent.py"))
    crash = (
        "the agent closed before answering initialize: agent 'x' exited with status 1; stderr "
        "tail: \"python3: Error while finding module specification for 'm' "
        "(ModuleNotFoundError: No module named 'm')\""
    )
    assert classify(agent, crash) is None
    offline = classify(agent, "request failed: getaddrinfo ENOTFOUND api.example.com")
    assert offline is not None
    assert offline.cause == "no network"
    said = classify(agent, "Error: Invalid API key · Fix external API key")
    assert said is not None
    assert said.cause == "not logged in"
