"""The `subagents` command."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "subagents.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.timeout(300)
def test_the_demo_runs_one_delegation_through_every_offline_provider() -> None:
    """README main job (issue 9 / demo): the same delegation through the reference ACP agent,
    spawn, fork, Codex and Claude Code (installed by scripts/setup, on the bundled fake model
    servers), streamed, then a side-by-side table; then a cancelled slow turn. No key, no
    network."""
    done = run("demo", "--cancel-after", "0.3", timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    table = out[out.index("agent  ") :].splitlines()
    rows = {line.split()[0]: line.split() for line in table[2:7]}
    assert sorted(rows) == ["claude-code", "codex", "fork", "reference", "spawn"]
    assert {row[2] for row in rows.values()} == {"completed"}
    assert "▶ spawn: You said: Say hello to the team." in out
    assert "▶ codex: Hello from the fake model." in out
    assert "▶ claude-code: Hello from the fake model." in out
    assert " [cancel] " in out
    assert "[cancelled: cancelled by the demo]" in out
    assert out.rstrip().endswith("all delegations settled as expected")


def test_an_unknown_command_shows_the_usage_and_fails() -> None:
    """Bad input gets a clear error and a non-zero status."""
    done = run("no-such-command")
    assert done.returncode == 2
    assert "invalid choice" in done.stderr


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_the_version_flag_prints_the_version(flag: str) -> None:
    """`subagents --version`."""
    done = run(flag)
    assert done.returncode == 0
    assert done.stdout.startswith("subagents ")


def test_a_command_imports_only_its_own_module_and_help_lists_every_command() -> None:
    """Issue 17 (start-up: `bridge` and `conformance` are started once per check by tools and
    CI): `subagents bridge` does not import the other commands' modules (`run`'s parser alone
    pulled in the provider layer); `subagents --help` still lists every command."""
    probe = (
        "import sys\n"
        "from subagents.cli import main\n"
        "try:\n"
        "    main(['bridge', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('subagents.commands.')"
        " and m.count('.') == 2))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = done.stdout.strip().splitlines()[-1]
    assert "subagents.commands.bridge" in loaded
    for other in ("run", "agents", "demo", "serve", "conformance"):
        assert f"subagents.commands.{other}'" not in loaded, loaded
    usage = subprocess.run(
        [sys.executable, "-m", "subagents", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    for command in ("demo", "run", "agents", "conformance", "serve", "bridge"):
        assert command in usage.stdout


def test_options_may_come_between_the_agent_and_the_prompt() -> None:
    """Issue 35 (the last mile, C: the tour): `subagents run reference --yes tool` runs the
    prompt `tool` (argparse left the optional PROMPT unfilled before an option, and then
    refused `tool` as an unrecognized argument)."""
    done = run("run", "reference", "--yes", "tool")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "The tool ran."
    assert "allowed (--yes)" in done.stderr


def test_debug_may_come_after_the_command() -> None:
    """Issue 35 (the last mile, C: the tour): errors say "rerun with --debug", which users
    append: `subagents agents --probe nope --debug` is taken (it was an unrecognized argument
    of the command), and shows the traceback."""
    done = run("agents", "--probe", "nope", "--debug")
    assert done.returncode == 2, done.stderr
    assert "Traceback" in done.stderr
    assert "unrecognized arguments" not in done.stderr
