"""``subagents agents`` and ``subagents run`` with an ``urls`` entry (issue 20, point 4),
through ``cli.main``, against real ``subagents serve --listen 127.0.0.1:0`` processes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from subagents.cli import main
from tests._ports import closed_port

from ._serve_processes import serve_processes_sync


@pytest.fixture(autouse=True)
def no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No user or project registry file leaks into the tests."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)


def registry(directory: Path, urls: Sequence[str]) -> Path:
    path = directory / "fleet.toml"
    listed = ", ".join(f'"{url}"' for url in urls)
    path.write_text(f'[agents.fleet]\nurls = [{listed}]\ndescription = "two servers"\n')
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_list_run_and_probe_an_urls_entry(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 20 point 4: "subagents run NAME and subagents agents (list) / agents --probe
    must work with such an entry (probe: each URL's status ...)": the list shows the first
    URL and how many more, the run completes on one of the servers, the probe's table has
    the entry's row then one row per server, and ``--json`` the same as ``members``."""
    with serve_processes_sync(tmp_path, 2) as servers:
        urls = [servers[0].url, servers[1].websocket_url()]
        config = str(registry(tmp_path, urls))

        code, out, _ = run_cli(capsys, "agents", "--config", config)
        assert code == 0
        [row] = [line for line in out.splitlines() if line.startswith("fleet ")]
        assert row.split()[1:5] == ["acp", urls[0], "(+1", "more)"]
        code, out, _ = run_cli(capsys, "agents", "--json", "--config", config)
        entries: list[dict[str, Any]] = json.loads(out)
        assert [e["urls"] for e in entries if e["name"] == "fleet"] == [urls]

        code, out, err = run_cli(capsys, "run", "fleet", "near and far", "--config", config)
        assert code == 0, err
        assert out.strip() == "You said: near and far"

        code, out, err = run_cli(capsys, "agents", "--probe", "fleet", "--config", config)
        assert code == 0, out + err
        lines = out.splitlines()
        assert lines[0].split()[:2] == ["NAME", "STATUS"]
        assert [line.split()[:3] for line in lines[1:]] == [
            ["fleet", "ok", "0.1.0"],
            ["-", urls[0], "ok"],
            ["-", urls[1], "ok"],
        ]
        code, out, _ = run_cli(capsys, "agents", "--json", "--probe", "fleet", "--config", config)
        [found] = json.loads(out)
        assert found["status"] == "ok"
        assert [(m["url"], m["status"]) for m in found["members"]] == [
            (urls[0], "ok"),
            (urls[1], "ok"),
        ]


def test_a_server_down_fails_the_probe_naming_it_and_the_run_goes_elsewhere(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 20 point 4: with one server of the entry down, ``agents --probe NAME`` exits 1,
    its row saying which server and its hint what to do, the server's own row
    ``unreachable``; ``subagents run NAME`` still completes on the other server."""
    down = f"http://127.0.0.1:{closed_port()}/acp"
    with serve_processes_sync(tmp_path, 1) as [server]:
        config = str(registry(tmp_path, [down, server.url]))
        code, out, err = run_cli(capsys, "agents", "--probe", "fleet", "--config", config)
        assert code == 1
        rows = [line.split() for line in out.splitlines()[1:]]
        assert rows[0][:2] == ["fleet", "unreachable"]
        assert [row[:3] for row in rows[1:]] == [
            ["-", down, "unreachable"],
            ["-", server.url, "ok"],
        ]
        assert f"fleet: start the agent's server at {down} (subagents serve --listen)" in err
        assert "or fix the entry's urls" in err
        code, out, err = run_cli(capsys, "run", "fleet", "hello", "--config", config)
        assert code == 0, err
        assert out.strip() == "You said: hello"


def test_all_servers_down_fail_the_run_naming_every_url(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 20 point 4: when no server of the entry can start the run, ``subagents run``
    exits 1 naming each URL, with a hint to probe the entry."""
    urls = [f"http://127.0.0.1:{closed_port()}/acp", f"ws://127.0.0.1:{closed_port()}/acp"]
    code, _, err = run_cli(
        capsys, "run", "fleet", "hello", "--config", str(registry(tmp_path, urls))
    )
    assert code == 1
    assert all(url in err for url in urls)
    assert "subagents agents --probe fleet" in err
