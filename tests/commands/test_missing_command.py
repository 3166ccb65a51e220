"""Issue 35 (the last mile, C.3): `subagents agents` names the file an entry comes from by its
full path, and a command that cannot be found is named exactly, with where it comes from and
what to do (it said "not installed: install it")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    """A (holding the registry file conf/agents.toml) and B (the working directory)."""
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "conf").mkdir(parents=True)
    b.mkdir()
    (a / "conf" / "agents.toml").write_text(
        '[agents.rel]\ncommand = ["./agent.sh"]\n'
        '[agents.bare]\ncommand = ["no-such-agent-program", "--acp"]\n'
        '[agents.plain]\ncommand = ["./plain.txt"]\n',
        encoding="utf-8",
    )
    (a / "conf" / "plain.txt").write_text("not a program\n", encoding="utf-8")
    return a, b


def subagents(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "subagents", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, "XDG_CONFIG_HOME": str(cwd / "xdg")},
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_the_list_names_an_entrys_file_by_its_full_path(dirs: tuple[Path, Path]) -> None:
    """Issue 35 (C.3): `--config ../a/conf/agents.toml` from B: the SOURCE column shows the
    file's full path (it showed the path as given, or only the file's name)."""
    a, b = dirs
    done = subagents(b, "agents", "--config", "../a/conf/agents.toml")
    assert done.returncode == 0, done.stderr
    [row] = [line for line in done.stdout.splitlines() if line.startswith("rel ")]
    assert str(a / "conf" / "agents.toml") in row.split()


def test_a_missing_relative_command_is_named_with_the_file_it_is_relative_to(
    dirs: tuple[Path, Path],
) -> None:
    """Issue 35 (C.3): the hint names the path as written and the file it is relative to,
    and says what to fix; never "not installed: install it"."""
    a, b = dirs
    config = str(a / "conf" / "agents.toml")
    done = subagents(b, "run", "rel", "hello", "--config", config)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr
    assert lines[1] == (
        f"  hint: ./agent.sh (relative to {config}) does not exist: fix the command of "
        "agents.rel (a path relative to its file, or a program on PATH)"
    )
    probed = subagents(b, "agents", "--probe", "rel", "--config", config)
    assert probed.returncode == 1
    assert f"  rel: ./agent.sh (relative to {config}) does not exist; " in probed.stderr


def test_a_program_not_on_path_is_named_with_its_entry(dirs: tuple[Path, Path]) -> None:
    """Issue 35 (C.3): a bare program name that is not on PATH: the program, then the entry
    and its file to fix."""
    a, b = dirs
    config = str(a / "conf" / "agents.toml")
    done = subagents(b, "run", "bare", "hello", "--config", config)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[1] == (
        "  hint: `no-such-agent-program` is not on PATH: install it, or give the command of "
        f"agents.bare in {config} the program's full path"
    )


def test_a_command_that_is_no_program_is_named_with_the_fix(dirs: tuple[Path, Path]) -> None:
    """Issue 35 (C.3): a command that names a file that is not executable says so, with the
    command that fixes it (it said "check the entry's command")."""
    a, b = dirs
    done = subagents(b, "run", "plain", "hello", "--config", str(a / "conf" / "agents.toml"))
    assert done.returncode == 1, done.stderr
    plain = a / "conf" / "plain.txt"
    assert done.stderr.splitlines()[1] == (
        f"  hint: {plain} is not executable: make it executable: chmod +x {plain}"
    )
