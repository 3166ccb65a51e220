"""Issue 19: every command output the README shows is produced here, so it cannot go stale.

A README transcript is a fenced block without a language whose first line starts with ``$ ``.
Each ``$ subagents ...`` line is run (as ``python -m subagents``) from a temporary directory
standing for ``~/src/my-agent``, with stdout and stderr on one pipe, and its output must be
the lines that follow it, up to normalising times, session ids and that directory's path.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
AGENT_DIR = "/home/me/src/my-agent"  # what the README calls the temporary directory
# Commands whose stderr is progress in no fixed order: only their stdout is shown.
STDOUT_ONLY = ("--probe",)


def _sections() -> list[tuple[str, str]]:
    chunks = re.split(r"(?m)^## ", README.read_text())
    return [(c.split("\n", 1)[0], c.split("\n", 1)[1]) for c in chunks[1:]]


def _transcripts() -> list[list[str]]:
    """The fenced blocks without a language that start with a ``$ `` line."""
    blocks: list[tuple[str, list[str]]] = []
    inside = False
    for line in README.read_text().splitlines():
        if line.startswith("```"):
            inside = not inside
            if inside:
                blocks.append((line[3:].strip(), []))
        elif inside:
            blocks[-1][1].append(line)
    return [lines for lang, lines in blocks if not lang and lines and lines[0].startswith("$ ")]


def _commands() -> list[tuple[str, list[str]]]:
    """Every ``$ command`` with the output lines the README shows for it."""
    found: list[tuple[str, list[str]]] = []
    for lines in _transcripts():
        for line in lines:
            if line.startswith("$ "):
                found.append((line[2:], []))
            else:
                found[-1][1].append(line)
    return found


def _normalise(text: str, cwd: Path) -> str:
    text = text.replace(str(cwd), AGENT_DIR)
    text = re.sub(r"in \d+(\.\d+)? s\b", "in N s", text)
    text = re.sub(r"\b[0-9a-f]{32}\b", "<session id>", text)
    text = re.sub(r"(?m)^(\S+ +ok .*?) +\d+$", r"\1 <ms>", text)  # probe START_MS
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    """The newcomer's agent directory: the tiny agent as my_agent.py, the README's agent.json."""
    where = tmp_path / "my-agent"
    where.mkdir()
    shutil.copy(ROOT / "src" / "subagents" / "examples" / "tiny_agent.py", where / "my_agent.py")
    [registry_entry] = re.findall(r"```json\n(.*?)```", README.read_text(), re.S)
    (where / "agent.json").write_text(registry_entry)
    return where


def _run(command: str, cwd: Path) -> str:
    argv = shlex.split(command)
    assert argv[0] == "subagents", command
    env = {
        **os.environ,
        # `python my_agent.py` finds this interpreter; no user registry is read.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "XDG_CONFIG_HOME": str(cwd / "no-config"),
    }
    stdout_only = any(flag in argv for flag in STDOUT_ONLY)
    done = subprocess.run(
        [sys.executable, "-m", "subagents", *argv[1:]],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if stdout_only else subprocess.STDOUT,
        text=True,
        timeout=60,
        check=False,
    )
    return done.stdout


def test_the_readme_shows_command_outputs_and_every_one_is_checked_here() -> None:
    commands = [command for command, _ in _commands() if not command.startswith("cd ")]
    assert len(commands) >= 10, commands
    assert all(command.startswith("subagents ") for command in commands), commands


@pytest.mark.parametrize(
    ("command", "shown"),
    [pytest.param(c, o, id=c) for c, o in _commands() if not c.startswith("cd ")],
)
def test_a_readme_command_prints_what_the_readme_shows(
    command: str, shown: list[str], agent_dir: Path
) -> None:
    actual = _normalise(_run(command, agent_dir), agent_dir)
    expected = _normalise("\n".join(shown), agent_dir)
    assert actual == expected


def test_the_quick_start_comes_first_and_is_short() -> None:
    """Issue 19: install, one delegation, one conformance run, ≤ 15 lines, before all else."""
    (first, quick), (second, _) = _sections()[:2]
    assert (first, second) == ("Quick start", "Status")
    lines = [line for line in quick.splitlines() if line.strip()]
    assert len(lines) <= 15, lines
    for needed in (
        "pip install",
        "subagents run reference hello",
        "subagents conformance -- python my_agent.py",
        "subagents.delegate",
    ):
        assert needed in quick, needed


def test_the_readme_has_a_section_per_user_then_set_up_then_layout() -> None:
    titles = [title for title, _ in _sections()]
    order = [
        "Quick start",
        "Status",
        "For harness builders",
        "For integrators",
        "For agent authors",
        "Setting up a checkout",
        "Layout",
    ]
    positions = [next(i for i, t in enumerate(titles) if t.startswith(o)) for o in order]
    assert positions == sorted(positions), titles


def test_the_status_is_short_and_not_stale() -> None:
    [status] = [body for title, body in _sections() if title == "Status"]
    assert len([line for line in status.splitlines() if line.strip()]) <= 8
    assert "Streamable HTTP and WebSocket" in status  # issue 20, done
    assert "issue 21" in status
    assert "Next:" not in status


def test_the_set_up_section_states_the_real_needs_and_duration() -> None:
    [setup] = [body for title, body in _sections() if title.startswith("Setting up a checkout")]
    for needed in (
        "./scripts/setup",
        "./scripts/test",
        "3.11",
        "node` (>= 20)",
        "npm",
        "1.3 GB",
        "7 to 11 minutes",
        "five pytest-xdist workers",
    ):
        assert needed in setup, needed


def test_the_layout_names_every_top_level_module_and_package() -> None:
    [layout] = [body for title, body in _sections() if title == "Layout"]
    package = ROOT / "src" / "subagents"
    names = sorted(
        entry.name + "/" if entry.is_dir() else entry.name
        for entry in package.iterdir()
        if entry.name != "__pycache__" and (entry.is_dir() or entry.suffix == ".py")
    )
    missing = [name for name in names if name not in layout]
    assert not missing, missing
