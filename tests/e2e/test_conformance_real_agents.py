"""The conformance suite against real ACP agents from npm, offline on fake model servers.

``codex-acp`` 0.16.0 runs on the project's fake OpenAI Responses API, ``claude-agent-acp``
0.49.0 on its fake Anthropic Messages API, ``qwen --acp`` (``@qwen-code/qwen-code`` 0.15.10)
and ``opencode acp`` (``opencode-ai`` 1.18.33) on its fake Chat Completions API, and
``gemini --acp`` (``@google/gemini-cli`` 0.61.0) on its fake Gemini API, all on 127.0.0.1
with a private ``HOME``. Each agent's result is the
checked-in baseline ``tests/conformance/baselines/<agent>.json``: the run must fail exactly
the requirements listed there (no new failure, no stale entry). After a deliberate change of
the suite or the agents, regenerate with ``--write-baseline`` (see the README).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from subagents.testing.fake_models import openai_responses
from subagents.testing.real_acp_agents import REAL_ACP_AGENTS

from ..conformance.conftest import run_against_baseline

LONGEST_FIRST = ("opencode", "qwen-code", "gemini-cli", "claude-agent-acp", "codex-acp")
"""The agents, their runs' longest first (opencode's ~57 starts cost about 3 s of CPU each):
under xdist the workers start them in this order."""


def test_every_real_agent_is_run() -> None:
    """Real agents (issue 5): the run order names every agent of the table, once."""
    assert sorted(LONGEST_FIRST) == sorted(REAL_ACP_AGENTS)


@pytest.mark.long
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", LONGEST_FIRST)
def test_real_agent_matches_its_checked_in_baseline(name: str, tmp_path: Path) -> None:
    """Real agents (issue 5): the suite runs against the real binary, and its result equals the
    checked-in baseline (every expected failure still fails, nothing else does)."""
    agent = REAL_ACP_AGENTS[name]
    command = agent.find_command()
    if command is None:
        pytest.fail(f"{name} is not installed: run ./scripts/setup (it needs node and npm)")
    with openai_responses.serve(agent.handler) as server:
        env = agent.environment(tmp_path / "home", server)
        # Bounds for a loaded machine, where these runs start beside each other: with two busy
        # loops beside them here, opencode's load check took 64 s of its 90 (a start costs it
        # ~3 s of CPU; the check starts two and runs three turns), and a CI run twice as slow
        # failed it there. The check bound stays a backstop: each answer has its own.
        options = ["--jobs", "4", "--timeout", "30", "--startup-timeout", "60"]
        options += ["--check-timeout", "180"]
        run_against_baseline(tmp_path, name, command, *options, env=env)
