"""``subagents agents``: list, probe and import (run in-process through ``cli.main``)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from subagents.cli import main
from subagents.config import _platform_key as platform_key  # pyright: ignore[reportPrivateUsage]
from subagents.config import parse_agents

REFERENCE = [sys.executable, "-m", "subagents.agents.reference"]


@pytest.fixture(autouse=True)
def no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No user or project registry file leaks into the tests."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)


def toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "cfg.toml"
    path.write_text(
        f"""
[agents.mine]
command = {toml_list(REFERENCE)}
description = "my own reference agent"

[agents.missing]
command = ["/no/such/agent-binary", "--acp"]

[agents.locked]
command = {toml_list(REFERENCE)}
env = {{ SUBAGENTS_REFERENCE_REQUIRE_AUTH = "token" }}

[agents.dies]
command = ["sh", "-c", "exit 3"]
"""
    )
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_list_shows_the_builtins_and_a_config_entry(
    capsys: pytest.CaptureFixture[str], config: Path
) -> None:
    code, out, err = run_cli(capsys, "agents", "--config", str(config))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "PROVIDER", "COMMAND", "SOURCE", "DESCRIPTION"]
    names = {line.split()[0] for line in lines[1:]}
    assert names >= {"reference", "codex", "claude-code", "spawn", "fork", "mine", "locked"}
    mine = next(line for line in lines if line.startswith("mine "))
    assert "python -m subagents.agents.reference" in mine
    assert "my own reference agent" in mine
    assert "cfg.toml" in mine


def test_the_json_list_has_every_entry(capsys: pytest.CaptureFixture[str], config: Path) -> None:
    code, out, _ = run_cli(capsys, "agents", "--json", "--config", str(config))
    assert code == 0
    entries: list[dict[str, Any]] = json.loads(out)
    by_name = {entry["name"]: entry for entry in entries}
    assert by_name["spawn"]["provider"] == "spawn"
    assert by_name["reference"]["source"] == "built-in"
    assert by_name["mine"]["command"] == REFERENCE
    assert by_name["mine"]["source"] == str(config)
    assert by_name["locked"]["env_vars"] == ["SUBAGENTS_REFERENCE_REQUIRE_AUTH"]
    assert "token" not in out  # environment values are not printed


def test_a_bad_config_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[agents.x]\nprovider = 'acp'\n")
    code, out, err = run_cli(capsys, "agents", "--config", str(bad))
    assert (code, out) == (2, "")
    assert err.startswith("subagents agents: ")
    assert str(bad) in err
    assert "agents.x" in err
    first, hint = err.splitlines()  # one error line, then what to do
    assert "needs a command" in first
    assert hint.startswith("  hint: ")


def probe(
    capsys: pytest.CaptureFixture[str], *names: str, config: Path | None = None
) -> tuple[int, dict[str, Any], str]:
    options = ["--config", str(config)] if config is not None else []
    code, out, err = run_cli(
        capsys, "agents", *options, "--json", "--timeout", "30", "--probe", *names
    )
    results: list[dict[str, Any]] = json.loads(out)
    return code, {r["name"]: r for r in results}, err


def test_probing_reference_and_spawn_reports_ok_with_version_and_start_time(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, results, err = probe(capsys, "reference", "spawn")
    assert code == 0
    assert list(results) == ["reference", "spawn"]
    for result in results.values():
        assert result["status"] == "ok"
        assert result["version"]
        assert isinstance(result["start_ms"], int)
    assert "loadSession" in results["reference"]["capabilities"]
    assert results["reference"]["protocol_version"] == 1
    # not a terminal: one progress line per finished probe
    assert sorted(err.splitlines()) == ["probed reference: ok", "probed spawn: ok"]


def test_the_probe_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "agents", "--probe", "reference", "fork")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "VERSION", "CAPABILITIES", "START_MS"]
    assert lines[1].split()[:2] == ["reference", "ok"]
    assert lines[2].split()[:2] == ["fork", "ok"]


def test_a_missing_command_is_not_installed(
    capsys: pytest.CaptureFixture[str], config: Path
) -> None:
    code, results, _ = probe(capsys, "missing", config=config)
    assert results["missing"]["status"] == "not installed"
    assert "/no/such/agent-binary" in results["missing"]["reason"]
    assert code == 1  # named explicitly


def test_an_agent_that_needs_a_login_is_auth_required(
    capsys: pytest.CaptureFixture[str], config: Path
) -> None:
    code, results, _ = probe(capsys, "locked", config=config)
    assert results["locked"]["status"] == "needs credentials"
    assert results["locked"]["auth_methods"] == ["token"]
    assert results["locked"]["version"]
    assert code == 1


def test_an_agent_that_exits_at_once_failed_with_its_status(
    capsys: pytest.CaptureFixture[str], config: Path
) -> None:
    code, out, _ = run_cli(capsys, "agents", "--config", str(config), "--probe", "dies", "mine")
    assert code == 1
    dies = next(line for line in out.splitlines() if line.startswith("dies "))
    assert "failed: " in dies
    assert "exited with status 3" in dies.split("failed: ", 1)[1]
    mine = next(line for line in out.splitlines() if line.startswith("mine "))
    assert mine.split()[1] == "ok"


def test_probing_an_unknown_name_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run_cli(capsys, "agents", "--probe", "no-such-agent")
    assert (code, out) == (2, "")
    assert err.startswith("subagents agents: no agent named 'no-such-agent' (known: ")
    assert err.splitlines()[1].startswith("  hint: `subagents agents` describes them")
    assert len(err.splitlines()) == 2


# ------------------------------------------------------------------ import

NPX = {
    "id": "demo-npx",
    "name": "Demo",
    "version": "1.0.0",
    "description": "from npm",
    "distribution": {
        "npx": {"package": "@demo/acp@1.0.0", "args": ["--acp"], "env": {"LD_PRELOAD": "x"}}
    },
}
UVX = {
    "id": "demo-uvx",
    "name": "Demo",
    "version": "2.0.0",
    "description": "from PyPI",
    "distribution": {"uvx": {"package": "demo-acp==2.0.0", "cmd": "demo-acp"}},
}
BINARY = {
    "id": "demo-binary",
    "name": "Demo",
    "version": "3.0.0",
    "description": "a download",
    "distribution": {
        "binary": {platform_key(): {"archive": "https://example.invalid/d.tgz", "cmd": "./d"}}
    },
}


@pytest.mark.parametrize(
    ("entry", "command"),
    [
        (NPX, ["npx", "-y", "@demo/acp@1.0.0", "--acp"]),
        (UVX, ["uvx", "--from", "demo-acp==2.0.0", "demo-acp"]),
        (BINARY, ["/opt/demo/d"]),
    ],
)
def test_import_prints_a_toml_entry_that_parses_back(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, entry: dict[str, Any], command: list[str]
) -> None:
    source = tmp_path / "agent.json"
    source.write_text(json.dumps(entry))
    code, out, err = run_cli(capsys, "agents", "import", str(source), "--binary-dir", "/opt/demo")
    assert code == 0
    spec = parse_agents(out, "out")[entry["id"]]
    assert list(spec.command) == command
    assert spec.provider == "acp"
    assert "distribution:" in err
    if entry is NPX:
        assert "LD_PRELOAD" in err
        assert "LD_PRELOAD" not in out


def test_import_reads_stdin_and_takes_a_name(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(NPX)))
    code, out, _ = run_cli(capsys, "agents", "import", "-", "--name", "renamed")
    assert code == 0
    assert list(parse_agents(out, "out")) == ["renamed"]


def test_import_write_appends_and_refuses_a_duplicate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "conf" / "subagents.toml"
    target.parent.mkdir()
    target.write_text('[agents.first]\ncommand = ["a"]')  # no final newline
    source = tmp_path / "agent.json"
    source.write_text(json.dumps(UVX))
    code, out, err = run_cli(capsys, "agents", "import", str(source), "--write", str(target))
    assert (code, out) == (0, "")
    assert "added agents.demo-uvx" in err
    assert set(parse_agents(target.read_text(), str(target))) == {"first", "demo-uvx"}
    before = target.read_text()
    code, out, err = run_cli(capsys, "agents", "import", str(source), "--write", str(target))
    assert (code, out) == (2, "")
    assert err.startswith("subagents agents import: ")  # the command, as install's are
    assert "already has an entry agents.demo-uvx" in err
    assert err.splitlines()[1] == "  hint: pass --name NAME to import it under another name"
    assert len(err.splitlines()) == 2
    assert target.read_text() == before
    # and the written file is a registry the list reads
    code, out, _ = run_cli(capsys, "agents", "--config", str(target))
    assert code == 0
    assert "demo-uvx" in out


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected an agent entry"),
        (json.dumps({"id": "x", "distribution": {"pip": {}}}), "no npx, uvx or binary"),
    ],
)
def test_import_of_a_bad_file_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, expected: str
) -> None:
    source = tmp_path / "agent.json"
    source.write_text(content)
    code, out, err = run_cli(capsys, "agents", "import", str(source))
    assert (code, out) == (2, "")
    first, hint = err.splitlines()  # one error line, then what to do
    assert expected in first
    assert "agent.json" in hint


def test_debug_shows_the_traceback(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "--debug", "agents", "import", str(tmp_path / "none.json"))
    assert code == 2
    assert "Traceback" in err
    assert err.splitlines()[-2].startswith("subagents agents import: ")
    assert err.splitlines()[-1].startswith("  hint: ")
