"""``subagents run NAME`` and ``subagents agents --probe NAME`` for a registry entry with a
``url`` (issue 20, point 3), as real processes, against the official SDK's server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ._sdk_server import sdk_server

TIMEOUT = 60.0


def subagents(
    home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    (home / "xdg").mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "subagents", *args],
        input="",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=home,
        env={**os.environ, "XDG_CONFIG_HOME": str(home / "xdg"), **(env or {})},
        check=False,
    )


def registry(home: Path, port: int, *extra: str) -> Path:
    path = home / "agents.toml"
    lines = ["[agents.far]", f'url = "http://127.0.0.1:{port}"', *extra]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_subagents_run_runs_a_url_entry(tmp_path: Path) -> None:
    """Issue 20 point 3: "subagents run NAME ... work for a URL entry": the agent's text on
    stdout, exit 0."""
    with sdk_server() as server:
        config = registry(tmp_path, server.port)
        done = subagents(tmp_path, "run", "far", "near and far", "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert "echo: nearandfar" in done.stdout


def test_subagents_run_names_an_unreachable_url(tmp_path: Path) -> None:
    """Issue 20 point 1/3: a refused connection fails the run (exit 1) naming the URL."""
    with sdk_server() as server:
        port = server.port
    config = registry(tmp_path, port)
    done = subagents(tmp_path, "run", "far", "hello", "--config", str(config))
    assert done.returncode == 1
    assert f"127.0.0.1:{port}" in done.stderr
    assert "subagents serve --listen" in done.stderr  # the hint


def test_the_probe_of_a_url_entry_on_the_command_line(tmp_path: Path) -> None:
    """Issue 20 point 3: "subagents agents --probe NAME" says ``needs credentials`` (401,
    with a hint) then ``ok`` once the token variable is set."""
    with sdk_server("--token", "tok") as server:
        config = registry(tmp_path, server.port, 'token_env = "FAR_TOKEN"')
        probe = ("agents", "--json", "--timeout", "20", "--probe", "far", "--config", str(config))
        without = subagents(tmp_path, *probe, env={"FAR_TOKEN": ""})
        found = json.loads(without.stdout)[0]
        assert (found["status"], found["hint"]) == (
            "needs credentials",
            "set $FAR_TOKEN to the server's token",
        )
        fine = subagents(tmp_path, *probe, env={"FAR_TOKEN": "tok"})
        assert fine.returncode == 0, fine.stdout + fine.stderr
        assert json.loads(fine.stdout)[0]["status"] == "ok"
