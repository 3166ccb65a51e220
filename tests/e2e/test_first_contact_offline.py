"""Issue 19 / point 1 and 2, as a newcomer meets them: the real built-in agents, with no
credentials and no network, run by ``subagents run`` and ``subagents agents --probe`` as a
subprocess from a directory other than the checkout, with a private, empty ``HOME``.

Each run ends within the subprocess bound (no timing assertions) with one line naming the
cause and a hint; the probe says ``needs credentials`` / ``not logged in`` instead of ``ok``;
nothing is created in ``HOME``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from subagents.config import builtin_agents
from subagents.providers.probe import find_command

BOUND = 60.0
"""The subprocess's own bound: a run of the built-ins here ends in 1-10 s."""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A working directory (not the checkout) with an empty home and no user registry."""
    for name in ("home", "xdg", "work"):
        (tmp_path / name).mkdir()
    return tmp_path


def installed(name: str) -> None:
    spec = builtin_agents()[name]
    if find_command(spec) is None:
        pytest.fail(f"{name} is not installed: run ./scripts/setup (it needs node and npm)")


def subagents(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home / "home"),
        "XDG_CONFIG_HOME": str(home / "xdg"),
        "PYTHONUNBUFFERED": "1",
    }
    if "SUBAGENTS_NPM_PREFIX" in os.environ:
        env["SUBAGENTS_NPM_PREFIX"] = os.environ["SUBAGENTS_NPM_PREFIX"]
    return subprocess.run(
        [sys.executable, "-m", "subagents", *args],
        input="",
        capture_output=True,
        text=True,
        timeout=BOUND,
        cwd=home / "work",
        env=env,
        check=False,
    )


def cause_and_hint(done: subprocess.CompletedProcess[str], name: str) -> tuple[str, str]:
    """The last two lines of stderr: ``subagents run: NAME cannot take a prompt: CAUSE (...)``
    and its ``  hint: ...``."""
    assert "Traceback" not in done.stderr
    *_, first, hint = done.stderr.splitlines()
    prefix = f"subagents run: {name} cannot take a prompt: "
    assert first.startswith(prefix), done.stderr
    assert hint.startswith("  hint: "), done.stderr
    return first.removeprefix(prefix), hint.removeprefix("  hint: ")


def assert_home_untouched(home: Path) -> None:
    assert sorted(p.name for p in (home / "home").iterdir()) == []


def test_codex_without_credentials_ends_at_once_with_needs_credentials(home: Path) -> None:
    """Issue 19 / 1: `run codex` used to retry "Reconnecting... waiting for network" until a
    timeout; Codex's own account/read now ends it before the turn."""
    installed("codex")
    done = subagents(home, "run", "codex", "hello")
    assert done.returncode == 1, done.stderr
    cause, hint = cause_and_hint(done, "codex")
    assert cause.startswith("needs credentials")
    assert "codex login" in hint
    assert_home_untouched(home)


def test_codex_with_a_key_but_no_network_ends_with_no_network(home: Path) -> None:
    """Issue 19 / 1: with a key (a fake one) but no network, Codex's "waiting for network"
    retry notice ends the run. Where the network is up, the fake key is refused instead."""
    installed("codex")
    codex = builtin_agents()["codex"].command
    (home / "work" / "subagents.toml").write_text(
        f"[agents.cx]\nprovider = 'codex'\ncommand = {json.dumps(list(codex))}\n"
        "env = { OPENAI_API_KEY = 'sk-fake-offline' }\n",
        encoding="utf-8",
    )
    done = subagents(home, "run", "cx", "hello")
    assert done.returncode == 1, done.stderr
    cause, hint = cause_and_hint(done, "cx")
    assert cause.startswith(("no network", "needs credentials", "not logged in")), cause
    if cause.startswith("no network"):
        assert "network" in hint
    assert_home_untouched(home)


@pytest.mark.parametrize(
    ("name", "cause", "hinted"),
    [
        ("claude-code", "not logged in", "/login"),
        ("claude-agent-acp", "needs credentials", "/login"),
        ("codex-acp", "needs credentials", ""),
    ],
)
def test_the_other_builtins_end_with_the_cause_and_a_hint(
    home: Path, name: str, cause: str, hinted: str
) -> None:
    """Issue 19 / 1: "Not logged in" and "Authentication required" come with a hint."""
    installed(name)
    done = subagents(home, "run", name, "hello")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    hint = done.stderr.splitlines()[-1]
    assert hint.startswith("  hint: "), done.stderr
    if name == "codex-acp":  # it fails at session/new: the start error names it
        assert "could not start: Authentication required" in done.stderr
        assert "codex login" in hint
    else:
        found, hint = cause_and_hint(done, name)
        assert found.startswith(cause)
        assert hinted in hint
    assert_home_untouched(home)


def test_the_json_run_ends_with_an_error_event_naming_the_cause(home: Path) -> None:
    """Issue 19 / 1: `run --json` says the same in an error event (code and hint)."""
    installed("codex")
    done = subagents(home, "run", "--json", "codex", "hello")
    assert done.returncode == 1, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["event"] == "error"
    assert events[-1]["code"] == "NEEDS_CREDENTIALS"
    assert "codex login" in events[-1]["hint"]


def test_the_probe_tells_which_builtins_cannot_take_a_prompt(home: Path) -> None:
    """Issue 19 / 2: `agents --probe` says `ok` only when the agent can take a prompt: Codex
    through account/read, Claude Code through the account of its initialize answer, ACP
    through session/new, claude-agent-acp (no auth query at all) by there being no Claude
    login to find and no key; each with a hint. Named explicitly, they are not fine (exit 1)."""
    names = ("codex", "claude-code", "codex-acp", "claude-agent-acp")
    for name in names:
        installed(name)
    done = subagents(home, "agents", "--json", "--probe", *names)
    assert done.returncode == 1, done.stderr
    results = {r["name"]: r for r in json.loads(done.stdout)}
    assert results["codex"]["status"] == "needs credentials"
    assert results["claude-code"]["status"] == "not logged in"
    assert results["codex-acp"]["status"] == "needs credentials"
    assert results["claude-agent-acp"]["status"] == "needs credentials"
    assert "no Claude login" in results["claude-agent-acp"]["reason"]
    assert all(r["hint"] for r in results.values())
    assert_home_untouched(home)


def test_the_probe_table_prints_each_hint_and_the_whole_registry_is_fine(home: Path) -> None:
    """Issue 19 / 2: probing the whole registry, agents one is not logged in to are fine
    (exit 0), and the table is followed by each one's hint."""
    done = subagents(home, "agents", "--probe")
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines()[1:]}
    assert "needs credentials" in rows["codex"]
    assert "not logged in" in rows["claude-code"]
    assert "  codex: log in with `" in done.stderr
    assert "codex login`" in done.stderr  # by its path (Issue 35, C.4)
    assert_home_untouched(home)
