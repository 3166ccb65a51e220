"""Issue 19 / small cuts: a registry entry's ``command`` and ``args`` are lists of words; a
string is one word only when it has no space, and every :class:`ConfigError` has a hint."""

from __future__ import annotations

from pathlib import Path

import pytest

from subagents.config import ConfigError, load_agents, parse_agents


def refused(entry: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_agents(f"[agents.x]\n{entry}\n", "a.toml")
    return caught.value


def test_a_string_command_with_spaces_is_a_config_error_whose_hint_is_the_list_form() -> None:
    """Issue 19 / small cuts: `command = "python agent.py"` is refused (not run as a
    one-word program), and the hint is the TOML list to write instead."""
    error = refused('command = "python agent.py"')
    assert str(error) == (
        "a.toml: agents.x.command: 'python agent.py' is a string with spaces; "
        "command is a list of words"
    )
    assert error.hint == 'write it as a list: command = ["python", "agent.py"]'


def test_a_string_of_args_with_spaces_is_refused_like_a_command() -> None:
    """Issue 19 / small cuts: `args` follows the same rule as `command`."""
    error = refused('command = ["node"]\nargs = "agent.js --acp"')
    assert "agents.x.args: 'agent.js --acp' is a string with spaces" in str(error)
    assert error.hint == 'write it as a list: args = ["agent.js", "--acp"]'


def test_a_one_word_string_stays_one_word_and_an_empty_one_is_no_word() -> None:
    """Issue 19 / small cuts: an unambiguous one-word string is still accepted; an empty or
    blank string is no words (so an ACP entry with it still needs a command)."""
    spec = parse_agents('[agents.x]\ncommand = "codex-acp"\nargs = ""\n', "a.toml")["x"]
    assert spec.command == ("codex-acp",)
    assert "needs a command" in str(refused('command = "  "'))


def test_an_existing_path_with_a_space_is_suggested_as_one_word(tmp_path: Path) -> None:
    """Issue 19 / small cuts: when the string is the path of an existing file (a program
    whose path has a space), the hint's list keeps it whole rather than split."""
    program = tmp_path / "My Agent" / "agent"
    program.parent.mkdir()
    program.write_text("")
    error = refused(f'command = "{program}"')
    assert error.hint == f'write it as a list: command = ["{program}"]'


def test_unbalanced_quotes_still_get_the_list_form() -> None:
    """Issue 19 / small cuts: a string shlex cannot split still gets a list-form hint."""
    error = refused('command = "python \'agent.py"')
    assert error.hint == 'write it as a list: command = ["program", "argument", "..."]'


@pytest.mark.parametrize(
    "entry",
    [
        'command = ["a"]\ncolour = "red"',
        'provider = "acp"',
        "command = [1, 2]",
        'command = ["a"]\npermission = "maybe"',
        "provider = 3",
    ],
)
def test_every_bad_entry_has_a_hint(entry: str) -> None:
    """Issue 19 / every error has a hint: a bad entry's ConfigError always says what to do
    (at least where the fields of an entry are described)."""
    assert refused(entry).hint


def test_a_missing_explicit_file_has_a_hint_naming_the_default_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 19 / every error has a hint: a missing explicit registry file says to check the
    path and where the default registry files are."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    with pytest.raises(ConfigError) as caught:
        load_agents([tmp_path / "missing.toml"], cwd=tmp_path)
    assert str(caught.value) == f"{tmp_path / 'missing.toml'}: no such file"
    assert caught.value.hint.startswith("check the path;")
    assert str(tmp_path / "xdg" / "subagents" / "subagents.toml") in caught.value.hint


def test_a_config_error_keeps_its_hint_optional_for_callers() -> None:
    """Issue 19 / every error has a hint: `ConfigError(message)` still works, with the
    generic hint."""
    error = ConfigError("x: broken")
    assert str(error) == "x: broken"
    assert "python -m pydoc subagents.config" in error.hint
