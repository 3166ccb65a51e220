"""Issue 19 / 1: every run has a start/first-event deadline (``first_event_timeout`` in the
entry, ``--first-event-timeout`` on the command line): an agent that never says anything ends
with exit 124 and one line naming the cause and what to do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from subagents.config import DEFAULT_FIRST_EVENT_TIMEOUT, parse_agents, to_toml


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "xdg").mkdir()
    (tmp_path / "subagents.toml").write_text(
        '[agents.mute]\ncommand = ["sleep", "600"]\nfirst_event_timeout = 1\n'
        '[agents.mute-default]\ncommand = ["sleep", "600"]\n',
        encoding="utf-8",
    )
    return tmp_path


def subagents(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "subagents", *args],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        cwd=home,
        env={**os.environ, "XDG_CONFIG_HOME": str(home / "xdg")},
        check=False,
    )


def test_an_agent_that_says_nothing_ends_at_its_entrys_deadline(home: Path) -> None:
    done = subagents(home, "run", "mute", "hello")
    assert done.returncode == 124, done.stderr
    assert "Traceback" not in done.stderr
    assert "mute sent nothing within 1 s of the start" in done.stderr
    assert "--first-event-timeout" in done.stderr


def test_the_option_overrides_the_entrys_deadline(home: Path) -> None:
    done = subagents(home, "run", "mute-default", "hello", "--first-event-timeout", "1")
    assert done.returncode == 124, done.stderr
    assert "mute-default sent nothing within 1 s of the start" in done.stderr


def test_a_negative_deadline_is_a_usage_error_with_a_hint(home: Path) -> None:
    done = subagents(home, "run", "mute", "hello", "--first-event-timeout", "-1")
    assert done.returncode == 2
    assert "hint: --first-event-timeout 300" in done.stderr


def test_the_help_documents_the_exit_status_of_the_deadline(home: Path) -> None:
    done = subagents(home, "run", "--help")
    text = " ".join(done.stdout.split())
    assert "124 timed out (--timeout, or no first event within --first-event-timeout)" in text


def test_the_field_parses_round_trips_and_defaults() -> None:
    [spec] = parse_agents('[agents.a]\ncommand = ["a"]\n', "t").values()
    assert spec.first_event_timeout == DEFAULT_FIRST_EVENT_TIMEOUT
    [spec] = parse_agents('[agents.a]\ncommand = ["a"]\nfirst_event_timeout = 0\n', "t").values()
    assert spec.first_event_timeout is None
    assert parse_agents(to_toml(spec), "t")["a"].first_event_timeout is None


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
def test_a_stop_grace_that_is_not_a_finite_non_negative_number_is_a_usage_error(
    home: Path, value: str
) -> None:
    """``--stop-grace`` (how long a cancelled turn has to end before the agent is stopped)
    takes seconds >= 0; anything else is refused before the agent starts, with a hint."""
    done = subagents(home, "run", "mute", "hello", "--stop-grace", value)
    assert done.returncode == 2
    assert "--stop-grace: expected seconds >= 0" in done.stderr
    assert "hint: --stop-grace 2" in done.stderr
