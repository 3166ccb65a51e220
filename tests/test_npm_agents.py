"""The shared rule for tests that need a real agent from npm (issue 6, part 3: "skip with a
clear reason only when npm itself is unavailable, never silently")."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from subagents.testing.fake_models.openai_responses import require_codex_command
from subagents.testing.npm_agents import missing_npm_agent

CODEX_BINARY = "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"


def fake_npm(directory: Path) -> Path:
    """An executable named ``npm`` in ``directory`` (enough for a PATH lookup)."""
    directory.mkdir(parents=True, exist_ok=True)
    npm = directory / "npm"
    npm.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    npm.chmod(npm.stat().st_mode | stat.S_IXUSR)
    return npm


@pytest.fixture
def empty_prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An npm prefix with nothing installed in it."""
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    monkeypatch.setenv("SUBAGENTS_NPM_PREFIX", str(prefix))
    return prefix


def test_without_npm_on_path_a_missing_agent_skips_naming_npm_and_the_setup_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, empty_prefix: Path
) -> None:
    """No npm on PATH: the test is skipped (not failed) and the reason says that npm is
    missing and that ./scripts/setup installs the agent."""
    monkeypatch.setenv("PATH", str(tmp_path / "no-npm-here"))
    assert shutil.which("npm") is None
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_codex_command()
    reason = str(skipped.value)
    assert "npm is not on PATH" in reason
    assert "@openai/codex" in reason
    assert "./scripts/setup" in reason


def test_with_npm_on_path_a_missing_agent_fails_naming_the_setup_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, empty_prefix: Path
) -> None:
    """npm on PATH but codex not installed: the test fails (never skips silently), naming
    the package, where it was looked for and ./scripts/setup."""
    monkeypatch.setenv("PATH", str(fake_npm(tmp_path / "bin").parent))
    assert shutil.which("npm") is not None
    with pytest.raises(pytest.fail.Exception) as failed:
        require_codex_command()
    message = str(failed.value)
    assert "@openai/codex is not installed" in message
    assert str(empty_prefix) in message
    assert "./scripts/setup" in message


def test_the_decision_follows_shutil_which_for_any_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The one helper decides for every npm agent by shutil.which("npm") alone."""
    looked_up: list[str] = []

    def which(name: str) -> str | None:
        looked_up.append(name)
        return None

    monkeypatch.setattr(shutil, "which", which)
    with pytest.raises(pytest.skip.Exception, match="some-agent cannot be installed"):
        missing_npm_agent("some-agent")
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    with pytest.raises(pytest.fail.Exception, match="some-agent is not installed"):
        missing_npm_agent("some-agent")
    assert looked_up == ["npm"]


def test_an_installed_codex_is_returned_as_its_app_server_argv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, empty_prefix: Path
) -> None:
    """Installed: the argv of `codex app-server` on stdio, whatever PATH holds."""
    binary = empty_prefix / "node_modules" / CODEX_BINARY
    binary.parent.mkdir(parents=True)
    binary.write_text("", encoding="utf-8")
    monkeypatch.setenv("PATH", str(tmp_path / "no-npm-here"))
    assert require_codex_command() == [str(binary), "app-server", "--listen", "stdio://"]
