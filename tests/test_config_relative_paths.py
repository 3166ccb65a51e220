"""Issue 35 (the last mile, C.2): a relative path in a registry file is relative to that file,
not to the directory `subagents` is run from; a bare program name is still looked up on PATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from subagents.config import _platform_key as platform_key  # pyright: ignore[reportPrivateUsage]
from subagents.config import load_agents


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A (the registry file's directory) and B (the working directory), apart."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(b)
    return a, b


def test_a_config_in_one_directory_runs_its_relative_command_from_another(
    dirs: tuple[Path, Path],
) -> None:
    """Issue 35 (C.2): `command = ["./agent.sh"]` in A/subagents.toml, `subagents run` from
    B: the agent A/agent.sh starts and answers (it was looked up as B/agent.sh and was "not
    installed")."""
    a, b = dirs
    script = a / "agent.sh"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m subagents.agents.reference\n')
    script.chmod(0o755)
    config = a / "subagents.toml"
    config.write_text('[agents.mine]\ncommand = ["./agent.sh"]\n')
    done = subprocess.run(
        [sys.executable, "-m", "subagents", "run", "mine", "hello", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=b,
        env={**os.environ, "XDG_CONFIG_HOME": str(b / "xdg")},
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hello"


def test_every_relative_path_of_an_entry_is_taken_from_its_file(dirs: tuple[Path, Path]) -> None:
    """Issue 35 (C.2): the program when it has a slash (`./agent`, `bin/agent`), `cwd`, an
    argument written `./x` or `../x` or naming a file beside the registry file
    (`["python", "agent.py"]`), and a spawn entry's `options.sessions` are the file's; a bare
    program (`python`, `npx`) and other arguments stay as written; `~` is the home."""
    a, _ = dirs
    (a / "agent.py").write_text("")
    (a / "subagents.toml").write_text(
        '[agents.slash]\ncommand = ["bin/agent", "--x", "./data", "../shared/y", "plain"]\n'
        'cwd = "work"\n'
        '[agents.script]\ncommand = ["python", "agent.py", "-v", "missing.py"]\n'
        '[agents.npx]\ncommand = ["npx", "-y", "@scope/pkg"]\ncwd = "/srv"\n'
        '[agents.home]\ncommand = ["~/bin/agent"]\n'
        '[agents.local]\nprovider = "spawn"\noptions = { sessions = "sessions" }\n'
    )
    agents = load_agents([a / "subagents.toml"], defaults=False)
    assert agents["slash"].command == (
        str(a / "bin" / "agent"),
        "--x",
        str(a / "data"),
        str(a.parent / "shared" / "y"),
        "plain",
    )
    assert agents["slash"].cwd == str(a / "work")
    assert agents["script"].command == ("python", str(a / "agent.py"), "-v", "missing.py")
    assert agents["npx"].command == ("npx", "-y", "@scope/pkg")
    assert agents["npx"].cwd == "/srv"
    assert agents["home"].command == (str(Path.home() / "bin" / "agent"),)
    assert agents["local"].options["sessions"] == str(a / "sessions")
    assert agents["slash"].source == str(a / "subagents.toml")


def test_a_relative_config_path_names_its_entries_by_the_absolute_path(
    dirs: tuple[Path, Path],
) -> None:
    """Issue 35 (C.2, C.3): `--config ../a/subagents.toml` from B: the entry's source is the
    file's absolute path and its command is taken from A."""
    a, _ = dirs
    (a / "subagents.toml").write_text('[agents.mine]\ncommand = ["./agent"]\n')
    [spec] = [
        s
        for s in load_agents([Path("../a/subagents.toml")], defaults=False).values()
        if s.name == "mine"
    ]
    assert spec.source == str(a / "subagents.toml")
    assert spec.command == (str(a / "agent"),)


def test_an_imported_binary_dir_is_written_as_an_absolute_path(
    dirs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 35 (C.2): `agents import --binary-dir unpacked` from B writes the binary's
    absolute path: in the registry file a relative one would be taken from the file's
    directory, not from B where the archive was unpacked."""
    from subagents.cli import main

    a, b = dirs
    entry = {
        "id": "bin-agent",
        "distribution": {
            "binary": {
                platform_key(): {"archive": "https://example.com/a.tgz", "cmd": "./bin-agent"}
            }
        },
    }
    (b / "agent.json").write_text(json.dumps(entry))
    target = a / "subagents.toml"
    code = main(["agents", "import", "agent.json", "--binary-dir", "unpacked"])
    assert code == 0
    assert f'command = ["{b / "unpacked" / "bin-agent"}"]' in capsys.readouterr().out
    assert (
        main(["agents", "import", "agent.json", "--binary-dir", "unpacked", "--write", str(target)])
        == 0
    )
    spec = load_agents([target], defaults=False)["bin-agent"]
    assert spec.command == (str(b / "unpacked" / "bin-agent"),)
