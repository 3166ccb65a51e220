"""The prompt-turn checks (issue 16): unjudged outcomes that name their cause, realistic large
prompts, and the judgement of the turn after a cancelled one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from subagents.conformance.checks.turns import (
    _Content,  # pyright: ignore[reportPrivateUsage]
    _Control,  # pyright: ignore[reportPrivateUsage]
    _leftover,  # pyright: ignore[reportPrivateUsage]
    realistic_text,
)

from .conftest import Run, run_conformance

# The module's first test also pays for its module fixture (a whole conformance run, which
# takes minutes on a loaded machine): the default 60 s bound would cut it.
pytestmark = pytest.mark.timeout(300)

PLAIN_AGENT = [sys.executable, str(Path(__file__).with_name("plain_agent.py"))]

FLOWS = {
    "ACP-CLIENTCAP-001": "the agent made no fs/* request, even when offered the file system, "
    "for --fs-prompt 'fs'",
    "ACP-CLIENTCAP-002": "the agent made no terminal/* request, even when offered terminals, "
    "for --terminal-prompt 'terminal'",
    "ACP-CLIENTCAP-003": "the agent made no elicitation/* request, even when offered "
    "elicitation, for --elicitation-prompt 'elicit'",
    "ACP-TERMINAL-001": "the agent created no terminal, even when offered terminals, for "
    "--terminal-prompt 'terminal'",
    "ACP-PATHS-001": "the agent sent no file path at all",
    "ACP-PERMISSION-001": "the agent asked no permission (session/request_permission) for "
    "--tool-prompt 'tool'",
    "ACP-PLAN-001": "the agent sent no plan update(s) for --plan-prompt 'plan'",
}


def _only(*requirement_ids: str) -> list[str]:
    return [arg for requirement_id in requirement_ids for arg in ("--only", requirement_id)]


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("plain")
    cancels = ("ACP-CANCEL-001", "ACP-CANCEL-002", "ACP-CANCEL-003", "ACP-CANCEL-004")
    return run_conformance(tmp, PLAIN_AGENT, *_only(*FLOWS, *cancels))


@pytest.mark.parametrize("requirement_id", list(FLOWS))
def test_a_flow_the_agent_never_enters_is_not_exercised(
    plain_run: Run, requirement_id: str
) -> None:
    """Issue 16 point 8 (ACP-CLIENTCAP-001..003, ACP-TERMINAL-001, ACP-PATHS-001,
    ACP-PERMISSION-001, ACP-PLAN-001): an agent that never reads files, runs terminals, asks
    permission or the user, or plans is "not exercised" there, never a pass, and the message
    names the prompt option that steers an agent into the flow."""
    result = plain_run.by_id[requirement_id]
    assert result["status"] == "not-exercised", result
    assert FLOWS[requirement_id] in result["message"]


def test_turns_that_end_at_once_leave_the_cancel_checks_unjudged(plain_run: Run) -> None:
    """Issue 16 point 4 (ACP-CANCEL-001..004): an echo agent's turns end before any cancel
    can act, in every round: skipped, pointing at --cancel-prompt, never a pass."""
    for requirement_id in ("ACP-CANCEL-001", "ACP-CANCEL-002", "ACP-CANCEL-003", "ACP-CANCEL-004"):
        result = plain_run.by_id[requirement_id]
        assert result["status"] == "skip", result
        assert "in all 6 round(s)" in result["message"]
        assert "--cancel-prompt" in result["message"]


def test_a_cancel_skip_names_updates_for_the_wrong_session(tmp_path: Path) -> None:
    """Issue 16 point 4 (ACP-CANCEL-001, ACP-CANCEL-002): when every update carries a wrong
    session id, the skip says that no update for the prompted session arrived, not "use
    --cancel-prompt"."""
    run = run_conformance(
        tmp_path,
        [*PLAIN_AGENT, "--wrong-session"],
        *_only("ACP-CANCEL-001", "ACP-CANCEL-002"),
    )
    for requirement_id in ("ACP-CANCEL-001", "ACP-CANCEL-002"):
        result = run.by_id[requirement_id]
        assert result["status"] == "skip", result
        assert "no session/update for the prompted session arrived" in result["message"]
        assert "-other'" in result["message"]
        assert "--cancel-prompt" not in result["message"]


def test_the_large_prompt_is_varied_deterministic_prose() -> None:
    """ACP-PROMPT-004 (issue 16 point 8): 1 MiB of words and sentences, the same every run,
    not one repeated character."""
    text = realistic_text(1024 * 1024)
    assert len(text) == 1024 * 1024
    assert text == realistic_text.__wrapped__(1024 * 1024)
    words = text.split()
    assert len(set(words)) > 150
    assert max(len(w) for w in words) < 20
    assert sum(text.count(end) for end in (". ", "? ", "! ")) > 8_000  # sentences
    assert "\n\n" in text
    assert max(text.count(c) for c in set(text)) < len(text) / 4


def _content(text: str, *, message_ids: set[str] | None = None) -> _Content:
    return _Content(text=text, message_ids=message_ids or set())


def _control(first: str, second: str | None = None) -> _Control:
    return _Control(_content(first), _content(first if second is None else second), "end_turn")


def test_the_next_turn_carrying_the_cancelled_turns_text_is_found() -> None:
    """ACP-CANCEL-004: the next turn's text holds what the cancelled turn said (and the same
    prompt in a fresh session does not)."""
    cancelled = _content("tick 0tick 1cancelled after 2 ticks")
    after = _content("tick 0tick 1cancelled after 2 ticks")
    assert _leftover(cancelled, after, _control("Hello")) is not None


def test_the_next_turn_reusing_a_cancelled_message_id_is_found() -> None:
    """ACP-CANCEL-004: a message chunk of the next turn under the cancelled turn's messageId."""
    cancelled = _content("Once upon", message_ids={"m1"})
    after = _content("Hi!", message_ids={"m1"})
    found = _leftover(cancelled, after, _control("Hi!"))
    assert found is not None
    assert "'m1'" in found


def test_a_deterministic_agent_is_not_flagged() -> None:
    """ACP-CANCEL-004 cannot flag a deterministic agent wrongly: its own answer, boilerplate
    that the fresh-session answer shares, or an agent that repeats earlier answers by itself
    are not leftovers."""
    cancelled = _content("I am the reference agent. Counting: 1, 2, 3")
    assert _leftover(cancelled, _content("Hello"), _control("Hello")) is None
    boiler = _content("I am the reference agent. Hello")
    assert _leftover(cancelled, boiler, _control("I am the reference agent. Hello")) is None
    quoting = _control("You said: Hello", "You said: Hello\nYou said: Hello")
    history = _content("Earlier: I am the reference agent. Counting: 1, 2, 3. Now: Hello")
    assert _leftover(cancelled, history, quoting) is None
    short = _content("tick")
    assert _leftover(short, _content("tick tock"), _control("Hello")) is None
