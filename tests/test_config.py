"""The agent registry: parsing, precedence, built-ins, the ACP registry import, TOML output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from subagents.config import (
    AgentSpec,
    ConfigError,
    builtin_agents,
    from_acp_registry,
    load_agents,
    parse_agents,
    to_toml,
)
from subagents.config import _platform_key as platform_key  # pyright: ignore[reportPrivateUsage]

FULL = """
[agents.full]
provider = "codex"
command = ["codex", "app-server"]
args = ["--listen", "stdio://"]
env = { CODEX_HOME = "/srv/codex" }
cwd = "/work"
model = "gpt-5"
permission = "ask"
timeout = 600
startup_timeout = 20
turn_deadline = 300
description = "every field"
[agents.full.options]
sandbox = "read-only"
"""


def test_every_field_is_parsed() -> None:
    spec = parse_agents(FULL, "full.toml")["full"]
    assert spec == AgentSpec(
        name="full",
        provider="codex",
        command=("codex", "app-server", "--listen", "stdio://"),
        env={"CODEX_HOME": "/srv/codex"},
        cwd="/work",
        model="gpt-5",
        permission="ask",
        timeout=600.0,
        startup_timeout=20.0,
        turn_deadline=300.0,
        description="every field",
        options={"sandbox": "read-only"},
        source="full.toml",
    )


def test_an_entry_with_only_a_command_gets_the_defaults() -> None:
    spec = parse_agents('[agents.x]\ncommand = ["my-agent"]\n', "a.toml")["x"]
    assert spec.provider == "acp"
    assert spec.command == ("my-agent",)
    assert (spec.env, spec.cwd, spec.model, spec.options) == ({}, None, None, {})
    assert (spec.permission, spec.timeout, spec.startup_timeout) == ("deny", None, 60.0)
    assert (spec.description, spec.source) == ("", "a.toml")
    assert spec.turn_deadline is None


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ('command = ["a"]\ncolour = "red"', "unknown field(s) colour"),
        ('provider = "acp"', "needs a command"),
        ('provider = "codex"', "needs a command"),
        ("command = [1, 2]", "expected a list of strings"),
        ('command = ["a"]\nenv = { A = 1 }', "env: expected a table of strings"),
        ('command = ["a"]\npermission = "maybe"', "permission: expected ask, allow or deny"),
        ('command = ["a"]\ntimeout = -1', "timeout: expected seconds"),
        ('command = ["a"]\ntimeout = true', "timeout: expected seconds"),
        ('command = ["a"]\nstartup_timeout = 0', "startup_timeout: expected seconds"),
        ('provider = "codex"\ncommand = ["a"]\nturn_deadline = 0', "turn_deadline: expected"),
        ('provider = "codex"\ncommand = ["a"]\nturn_deadline = -5', "turn_deadline: expected"),
        ('provider = "codex"\ncommand = ["a"]\nturn_deadline = nan', "turn_deadline: expected"),
        ('provider = "codex"\ncommand = ["a"]\nturn_deadline = "9"', "turn_deadline: expected"),
        ('provider = "codex"\ncommand = ["a"]\nturn_deadline = true', "turn_deadline: expected"),
        ('command = ["a"]\nturn_deadline = 30', "only codex entries take a turn deadline"),
        ('command = ["a"]\noptions = "x"', "options: expected a table"),
        ('command = ["a"]\nmodel = 5', "model: expected a string"),
        ("provider = 3", "provider must be a name"),
    ],
)
def test_a_bad_entry_is_an_error_naming_the_file_and_the_entry(entry: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_agents(f"[agents.bad]\n{entry}\n", "/etc/bad.toml")
    message = str(caught.value)
    assert message.startswith("/etc/bad.toml: agents.bad")
    assert expected in message


def test_a_codex_turn_deadline_is_read_as_float_seconds_and_written_back() -> None:
    """Issue 6 (turn deadline from the registry): a codex entry's optional ``turn_deadline``
    (seconds, an int or a float) is parsed as a float and to_toml writes it back."""
    text = '[agents.c]\nprovider = "codex"\ncommand = ["codex"]\nturn_deadline = 90\n'
    spec = parse_agents(text, "c.toml")["c"]
    assert spec.turn_deadline == 90.0
    assert isinstance(spec.turn_deadline, float)
    written = to_toml(spec)
    assert "turn_deadline = 90.0" in written
    assert parse_agents(written, "c.toml")["c"] == spec
    assert "turn_deadline" not in to_toml(AgentSpec("d", "codex", ("codex",)))


def test_invalid_toml_is_an_error_naming_the_file() -> None:
    with pytest.raises(ConfigError, match=r"^x\.toml: not valid TOML"):
        parse_agents("[agents.x\n", "x.toml")


def test_spawn_and_plugin_entries_need_no_command() -> None:
    agents = parse_agents('[agents.a]\nprovider = "spawn"\n[agents.b]\nprovider = "mine"\n', "f")
    assert (agents["a"].command, agents["b"].provider) == ((), "mine")


def test_the_builtins_are_present() -> None:
    agents = builtin_agents()
    assert set(agents) >= {
        "reference",
        "codex",
        "claude-code",
        "codex-acp",
        "claude-agent-acp",
        "spawn",
        "fork",
    }
    assert all(spec.source == "built-in" for spec in agents.values())
    assert agents["reference"].command[1:] == ("-m", "subagents.agents.reference")
    assert (agents["spawn"].provider, agents["fork"].provider) == ("spawn", "fork")


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Path, Path]:
    """An XDG config directory and a working directory, both empty."""
    xdg = tmp_path / "xdg"
    work = tmp_path / "work"
    (xdg / "subagents").mkdir(parents=True)
    work.mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.chdir(work)
    return xdg / "subagents" / "subagents.toml", work / "subagents.toml"


def test_later_files_replace_entries_of_the_same_name(isolated: tuple[Path, Path]) -> None:
    user, project = isolated
    user.write_text(
        '[agents.reference]\ncommand = ["user-ref"]\n[agents.mine]\ncommand = ["user-mine"]\n'
        '[agents.keep]\ncommand = ["user-keep"]\n'
    )
    project.write_text('[agents.mine]\ncommand = ["project-mine"]\n')
    extra = project.parent / "extra.toml"
    extra.write_text('[agents.keep]\ncommand = ["extra-keep"]\n')
    agents = load_agents([extra])
    assert agents["reference"].command == ("user-ref",)
    assert agents["reference"].source == str(user)
    assert agents["mine"].command == ("project-mine",)
    assert agents["mine"].source == str(Path.cwd() / "subagents.toml")
    assert agents["keep"].command == ("extra-keep",)
    assert agents["spawn"].source == "built-in"


def test_a_table_without_a_command_updates_the_entry_it_names(
    isolated: tuple[Path, Path],
) -> None:
    """Issue 19 (first contact: the hints work as written): ``[agents.codex] env = {...}``, what
    the "needs credentials" hint tells a user to write, gives the built-in its key and keeps
    its command; later files update earlier ones field by field (``env`` and ``options``
    merged key by key); a table with a ``command`` still replaces the entry, and a name
    nothing defined still needs a command."""
    user, project = isolated
    builtin = load_agents(defaults=False)["codex"]
    user.write_text(
        '[agents.codex]\nenv = { OPENAI_API_KEY = "sk-user" }\n'
        '[agents.spawn.options]\nadapter = "offline"\n'
    )
    project.write_text(
        '[agents.codex]\nenv = { HTTPS_PROXY = "http://proxy:3128" }\ntimeout = 30\n'
        '[agents.reference]\ncommand = ["my-reference"]\n'
    )
    agents = load_agents()
    codex = agents["codex"]
    assert codex.command == builtin.command
    assert codex.provider == "codex"
    assert dict(codex.env) == {"OPENAI_API_KEY": "sk-user", "HTTPS_PROXY": "http://proxy:3128"}
    assert codex.timeout == 30
    assert codex.first_event_timeout == builtin.first_event_timeout
    assert codex.source == str(project)
    assert dict(agents["spawn"].options) == {"adapter": "offline"}
    assert agents["reference"].command == ("my-reference",)  # replaced, not updated
    project.write_text('[agents.nobody]\nenv = { A = "b" }\n')
    with pytest.raises(ConfigError, match="needs a command"):
        load_agents()


def test_defaults_false_reads_only_the_explicit_files(isolated: tuple[Path, Path]) -> None:
    user, _ = isolated
    user.write_text('[agents.mine]\ncommand = ["user-mine"]\n')
    assert "mine" not in load_agents(defaults=False)
    assert "mine" in load_agents()


def test_a_missing_explicit_file_is_an_error_but_missing_defaults_are_not(
    isolated: tuple[Path, Path], tmp_path: Path
) -> None:
    assert "reference" in load_agents()
    with pytest.raises(ConfigError, match="no such file"):
        load_agents(iter([tmp_path / "nope.toml"]))


def _registry(distribution: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {
        "id": "demo-agent",
        "name": "Demo Agent",
        "version": "1.2.3",
        "description": "a demo",
        "distribution": distribution,
        **more,
    }


def test_npx_without_cmd_runs_the_package() -> None:
    spec, notes = from_acp_registry(
        _registry({"npx": {"package": "@demo/agent@1.2.3", "args": ["--acp"]}})
    )
    assert spec.command == ("npx", "-y", "@demo/agent@1.2.3", "--acp")
    assert (spec.name, spec.provider, spec.source) == ("demo-agent", "acp", "acp-registry")
    assert spec.description == "Demo Agent 1.2.3: a demo"
    assert any("npx @demo/agent@1.2.3" in note for note in notes)


def test_npx_with_cmd_names_the_package_and_the_command() -> None:
    spec, _ = from_acp_registry(
        _registry({"npx": {"package": "@demo/tools", "cmd": "demo-acp", "args": ["-v"]}})
    )
    assert spec.command == ("npx", "-y", "--package", "@demo/tools", "demo-acp", "-v")


def test_uvx_runs_the_command_from_the_package() -> None:
    spec, _ = from_acp_registry(
        _registry({"uvx": {"package": "demo-agent==1.2.3", "cmd": "demo", "args": ["acp"]}})
    )
    assert spec.command == ("uvx", "--from", "demo-agent==1.2.3", "demo", "acp")
    spec, _ = from_acp_registry(_registry({"uvx": {"package": "demo-agent"}}))
    assert spec.command == ("uvx", "--from", "demo-agent", "demo-agent")


def test_binary_for_this_platform_lives_in_the_binary_dir(tmp_path: Path) -> None:
    binary = {
        platform_key(): {
            "archive": "https://example.invalid/demo.tar.gz",
            "cmd": "./demo",
            "args": ["--stdio"],
        },
        "windows-x86_64": {"archive": "https://example.invalid/demo.zip", "cmd": "demo.exe"},
    }
    spec, notes = from_acp_registry(_registry({"binary": binary}), binary_dir=tmp_path)
    assert spec.command == (str(tmp_path / "demo"), "--stdio")
    assert not any("--binary-dir" in note for note in notes)
    spec, notes = from_acp_registry(_registry({"binary": binary}))
    assert spec.command == ("./demo", "--stdio")
    assert any("--binary-dir" in note for note in notes)


def test_binary_without_this_platform_lists_the_available_ones() -> None:
    binary = {
        "plan9-mips": {"archive": "a", "cmd": "x"},
        "haiku-x86_64": {"archive": "b", "cmd": "y"},
    }
    with pytest.raises(ConfigError) as caught:
        from_acp_registry(_registry({"binary": binary}))
    message = str(caught.value)
    assert platform_key() in message
    assert "haiku-x86_64, plan9-mips" in message


def test_npx_is_preferred_over_uvx_and_binary() -> None:
    spec, _ = from_acp_registry(
        _registry(
            {
                "binary": {"plan9-mips": {"archive": "a", "cmd": "x"}},
                "uvx": {"package": "u"},
                "npx": {"package": "n"},
            }
        )
    )
    assert spec.command[:3] == ("npx", "-y", "n")


def test_unsafe_environment_variables_are_dropped_and_safe_ones_kept() -> None:
    env = {
        "LD_PRELOAD": "/tmp/evil.so",
        "PATH": "/tmp/evil-bin",
        "AWS_SECRET_ACCESS_KEY": "canary-secret",
        "NODE_OPTIONS": "--require /tmp/evil.js",
        "DEMO_LOG_LEVEL": "debug",
    }
    spec, notes = from_acp_registry(_registry({"npx": {"package": "p", "env": env}}))
    assert dict(spec.env) == {"DEMO_LOG_LEVEL": "debug"}
    dropped = " ".join(notes)
    for name in ("LD_PRELOAD", "PATH", "AWS_SECRET_ACCESS_KEY", "NODE_OPTIONS"):
        assert name in dropped
    assert "canary-secret" not in to_toml(spec)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"id": "Bad Id", "distribution": {"npx": {"package": "p"}}}, "no valid id"),
        ({"id": "x"}, "no distribution"),
        ({"id": "x", "distribution": {"pip": {}}}, "no npx, uvx or binary"),
        ({"id": "x", "distribution": {"npx": {}}}, "malformed distribution"),
    ],
)
def test_a_bad_registry_entry_is_a_config_error(entry: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        from_acp_registry(entry)


def test_to_toml_round_trips_through_parse_agents() -> None:
    spec = AgentSpec(
        name="round.trip",
        provider="claude-code",
        command=("claude", "--verbose", 'quote " and \\ backslash'),
        env={"TOKEN_FILE": "/srv/token", "ODD": "tab\there\nnewline\x01"},
        cwd="/work",
        model="m",
        permission="allow",
        timeout=12.5,
        startup_timeout=5.0,
        description="all of it",
        options={"flag": True, "n": 3, "list": ["a", "b"], "table": {"k": "v"}},
        source="x.toml",
    )
    parsed = parse_agents(to_toml(spec), "x.toml")
    assert parsed == {"round.trip": spec}
    original = parse_agents(FULL, "full.toml")["full"]
    assert parse_agents(to_toml(original), "full.toml")["full"] == original
