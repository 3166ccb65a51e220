"""A chain across protocols, end to end: the official A2A SDK's client -> a real
``subagents serve --a2a`` process -> the reference ACP agent (issue 21 point 5), and the
command line's own checks (issue 21 point 2)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio
import httpx
import pytest

pytest.importorskip("a2a.server")

from tests.a2a_server._client import Turn, a2a_client, cancel, send
from tests.remote._serve_processes import children

START_BOUND: Final = 30.0
STOP_BOUND: Final = 20.0
TOKEN: Final = "chain-Yk3v9Qm7Xr2Lw8Tn5Bz1Hc6Jd4Fg0Ps-Ua_Re7Wi2Ko"
_LISTENING: Final = re.compile(r"listening on (http://\S+/) \(card: (\S+)\)\n")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass(frozen=True, slots=True)
class Served:
    process: anyio.abc.Process
    url: str
    card_url: str
    log: Path


def _registry(directory: Path) -> Path:
    path = directory / "agents.toml"
    command = ", ".join(
        f'"{word}"' for word in (sys.executable, "-m", "subagents.agents.reference")
    )
    path.write_text(
        f'[agents.chained]\nprovider = "acp"\ncommand = [{command}]\n'
        'description = "the reference ACP agent behind serve --a2a"\n',
        encoding="utf-8",
    )
    return path


@asynccontextmanager
async def serve_a2a(directory: Path, *options: str) -> AsyncIterator[Served]:
    """A ``subagents serve --a2a 127.0.0.1:0`` process (token required; ``options`` added to
    its command line), stopped by the caller with SIGTERM; killed and reaped here if it is
    still running."""
    log = directory / "serve.log"
    command = [
        sys.executable, "-m", "subagents", "serve", "--a2a", "127.0.0.1:0",
        "--agent", "chained", "--config", str(_registry(directory)), "--token-env", "A2A_TOKEN",
        *options,
    ]  # fmt: skip
    env = {**os.environ, "A2A_TOKEN": TOKEN}
    with log.open("wb") as stderr:
        process = await anyio.open_process(
            command, stdin=subprocess.DEVNULL, stdout=None, stderr=stderr, env=env
        )
    try:
        with anyio.fail_after(START_BOUND):
            while (found := _LISTENING.search(log.read_text(errors="replace"))) is None:
                assert process.returncode is None, log.read_text(errors="replace")
                await anyio.sleep(0.05)
        yield Served(process, found.group(1), found.group(2), log)
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.move_on_after(STOP_BOUND, shield=True):
            await process.wait()
        await process.aclose()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _until(condition: Callable[[], bool], bound: float = 10.0) -> None:
    with anyio.fail_after(bound):
        while not condition():  # noqa: ASYNC110 - a process leaving has no event
            await anyio.sleep(0.05)


@pytest.mark.anyio
async def test_a2a_client_to_serve_a2a_to_an_acp_agent(tmp_path: Path) -> None:
    """Issue 21 point 5: A2A client -> serve --a2a (a real process) -> the ACP agent:
    the agent's text streams through, a cancel reaches the agent (its own 'cancelled after'
    chunk comes back) and its process is reaped; a later message in a context continues its
    child; a turn running at SIGTERM is cancelled, the server exits 0 and no agent process
    (the running turn's, the continued child's) is left."""
    started = time.monotonic()
    async with serve_a2a(tmp_path) as served:
        server = served.process.pid
        async with httpx.AsyncClient() as http:
            refused = await http.post(served.url, json={"jsonrpc": "2.0", "id": 1})
            card = (await http.get(served.card_url)).json()
        assert refused.status_code == 401
        assert card["name"] == "chained"
        assert card["capabilities"]["streaming"] is True
        agents: set[int] = set()
        async with a2a_client(served.url, TOKEN) as client:
            with anyio.fail_after(30):
                streamed = await send(client, "stream 3 20")
            assert streamed.chunks == ["1 ", "2 ", "3 "]
            assert streamed.final == "TASK_STATE_COMPLETED"

            async def cancel_at_tick_2(turn: Turn) -> None:
                agents.update(children(server))
                if "tick 2" in turn.chunks[-1]:
                    assert await cancel(client, turn.task_id) == "TASK_STATE_CANCELED"

            with anyio.fail_after(30):
                cancelled = await send(client, "slow 100", on_chunk=cancel_at_tick_2)
            assert cancelled.chunks[-1].startswith("cancelled after")
            assert cancelled.final == "TASK_STATE_CANCELED"
            assert agents, "the server ran no agent process"
            await _until(lambda: not children(server))

            # A later message in the first context continues its child: the agent process
            # that loaded the session stays up, for the shutdown to release.
            with anyio.fail_after(30):
                again = await send(client, "echo again", context_id=streamed.context_id)
            assert again.text == "echo again"
            assert again.final == "TASK_STATE_COMPLETED"
            held = children(server)
            assert held, "the continued child has no agent process"
            agents.update(held)

            # SIGTERM while a turn runs: the turn is cancelled, the agent reaped, exit 0.
            running = anyio.Event()
            last: list[Turn] = []
            code: int | None = None

            async def note_running(turn: Turn) -> None:
                agents.update(children(server))
                running.set()

            async def slow_turn() -> None:
                try:
                    last.append(await send(client, "slow 100", on_chunk=note_running))
                except Exception:  # the stream may end with the server
                    last.append(Turn())

            with anyio.fail_after(STOP_BOUND + 10):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(slow_turn)
                    await running.wait()
                    served.process.send_signal(signal.SIGTERM)
                    code = await served.process.wait()
        assert code == 0, served.log.read_text(errors="replace")
        assert "SIGTERM: draining" in served.log.read_text(errors="replace")
        assert last
        assert last[0].final == "TASK_STATE_CANCELED"  # the drain settled it before closing
    assert not [pid for pid in agents if _alive(pid)], "an agent process outlived the server"
    print(f"chain test: {time.monotonic() - started:.2f} s; at SIGTERM: {last[0].final!r}")


def test_off_loopback_without_a_token_the_command_refuses(tmp_path: Path) -> None:
    """Issue 21 point 2: serve --a2a on a non-loopback address without --token-env or
    --token-file exits 2 saying a bearer token is needed (nothing is served)."""
    env = {k: v for k, v in os.environ.items() if k != "A2A_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-m", "subagents", "serve", "--a2a", "0.0.0.0:0", "--agent", "reference"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 2
    assert "needs a bearer token" in done.stderr
    assert "listening on http" not in done.stderr


def test_an_unknown_agent_is_refused(tmp_path: Path) -> None:
    """Issue 21 point 2: --agent must name a registry entry (exit 2, naming the known ones)."""
    done = subprocess.run(
        [sys.executable, "-m", "subagents", "serve", "--a2a", "127.0.0.1:0", "--agent", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--agent nope: no such registry entry" in done.stderr
    assert "reference" in done.stderr
