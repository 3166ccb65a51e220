"""Issue 19 / small cuts, as a newcomer meets them: the command run as a subprocess from a
directory other than the checkout, with no user registry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A working directory with no registry file, and no user registry either."""
    (tmp_path / "xdg").mkdir()
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


def error_and_hint(done: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    """The two lines of a usage error: the error itself, then ``  hint: ...``."""
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    first, hint = done.stderr.splitlines()
    assert hint.startswith("  hint: ")
    return first, hint.removeprefix("  hint: ")


# -- a string command ------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["agents", "run"])
def test_a_string_command_with_spaces_is_refused_with_the_list_form_in_the_hint(
    home: Path, command: str
) -> None:
    """Issue 19 / small cuts: `command = "python agent.py"` (a TOML string) is refused by
    `agents` and `run` alike, naming the file and entry, and the hint is the list to paste
    (not a misleading set-up hint at start)."""
    config = home / "agents.toml"
    config.write_text('[agents.mine]\ncommand = "python agent.py"\n', encoding="utf-8")
    argv = ["agents", "--config", "agents.toml"] if command == "agents" else ["run", "mine", "hi"]
    if command == "run":
        argv += ["--config", "agents.toml"]
    first, hint = error_and_hint(subagents(home, *argv))
    assert first.startswith(f"subagents {command}: ")
    assert "agents.toml: agents.mine.command: 'python agent.py' is a string with spaces" in first
    assert hint == 'write it as a list: command = ["python", "agent.py"]'


def test_a_string_of_args_with_spaces_is_refused_the_same_way(home: Path) -> None:
    """Issue 19 / small cuts: `args` is a list of words like `command`: a string with spaces
    is refused with the list form (shell quoting honoured) in the hint."""
    config = home / "agents.toml"
    config.write_text(
        '[agents.mine]\ncommand = ["node"]\nargs = "agent.js --name \'my agent\'"\n',
        encoding="utf-8",
    )
    first, hint = error_and_hint(subagents(home, "agents", "--config", str(config)))
    assert "agents.mine.args:" in first
    assert hint == 'write it as a list: args = ["agent.js", "--name", "my agent"]'


# -- did you mean ----------------------------------------------------------------------------


def test_a_mistyped_agent_name_to_run_gets_did_you_mean_and_how_to_list_them(home: Path) -> None:
    """Issue 19 / small cuts: `subagents run refrence` names the closest known agent
    (`did you mean 'reference'?`) and the hint names the command that lists them."""
    first, hint = error_and_hint(subagents(home, "run", "refrence", "hello"))
    assert first == "subagents run: no agent named 'refrence' (did you mean 'reference'?)"
    assert hint.startswith("`subagents agents` describes them")


def test_a_mistyped_agent_name_to_probe_gets_did_you_mean_with_the_same_config(
    home: Path,
) -> None:
    """Issue 19 / small cuts: `agents --probe` suggests the closest names for each unknown
    one, including entries of `--config` files, and the hint lists them with that file."""
    config = home / "mine.toml"
    config.write_text('[agents.my-helper]\ncommand = ["my-helper"]\n', encoding="utf-8")
    done = subagents(home, "agents", "--config", "mine.toml", "--probe", "refrence", "my-helpr")
    first, hint = error_and_hint(done)
    assert first == (
        "subagents agents: no agent named 'refrence' (did you mean 'reference'?), "
        "'my-helpr' (did you mean 'my-helper'?)"
    )
    assert hint.startswith("`subagents agents --config mine.toml` describes them")


def test_a_name_close_to_none_lists_the_known_agents(home: Path) -> None:
    """Issue 19 / small cuts: with no close match the error lists every known agent."""
    first, hint = error_and_hint(subagents(home, "agents", "--probe", "zzz"))
    assert first.startswith("subagents agents: no agent named 'zzz' (known: ")
    assert "reference" in first
    assert "subagents agents" in hint


def test_the_json_error_of_a_mistyped_name_carries_the_hint(home: Path) -> None:
    """Issue 19 / every error has a hint: `run --json` puts it in the error event too."""
    done = subagents(home, "run", "--json", "refrence", "hello")
    [event] = [json.loads(line) for line in done.stdout.splitlines()]
    assert event["code"] == "UNKNOWN_AGENT"
    assert "did you mean 'reference'?" in event["message"]
    assert str(event["hint"]).startswith("`subagents agents` describes them")


# -- every error has a hint ------------------------------------------------------------------


@pytest.mark.parametrize("command", ["agents", "run"])
def test_a_missing_config_file_says_it_does_not_exist_and_where_the_registry_lives(
    home: Path, command: str
) -> None:
    """Issue 19 / every error has a hint: `--config /missing.toml` says there is no such file,
    and the hint says to check the path, where the default registry files are and how to
    write one."""
    missing = home / "missing.toml"
    argv = ["run", "reference", "hi"] if command == "run" else ["agents"]
    first, hint = error_and_hint(subagents(home, *argv, "--config", str(missing)))
    assert first.startswith(f"subagents {command}: ")
    assert first.endswith(f"{missing}: no such file")
    assert hint.startswith("check the path;")
    assert str(home / "xdg" / "subagents" / "subagents.toml") in hint
    assert "./subagents.toml" in hint
    assert "python -m pydoc subagents.config" in hint


def test_a_relative_missing_config_says_what_it_is_relative_to(home: Path) -> None:
    """Issue 19 / every error has a hint: a relative `--config` path names the directory it
    was looked up in."""
    _, hint = error_and_hint(subagents(home, "agents", "--config", "nope.toml"))
    assert hint.startswith(f"check the path (relative to {home});")


def test_a_bad_entry_gets_a_hint_naming_the_fields_or_the_fix(home: Path) -> None:
    """Issue 19 / every error has a hint: an unknown field gets `did you mean`, an entry
    without a command the form of one, and invalid TOML where to fix it."""
    cases = {
        '[agents.x]\ncomand = ["a"]\n': "did you mean command?",
        '[agents.x]\nprovider = "acp"\n': 'command = ["program", "argument"]',
        '[agents.x]\ncommand = ["a"\n': "fix the TOML syntax",
    }
    for text, expected in cases.items():
        (home / "bad.toml").write_text(text, encoding="utf-8")
        _, hint = error_and_hint(subagents(home, "agents", "--config", "bad.toml"))
        assert expected in hint
