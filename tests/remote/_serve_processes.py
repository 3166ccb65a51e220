"""Real ``subagents serve --listen 127.0.0.1:0`` processes for the scale-out tests.

Each server writes its stderr to a file (nothing can block on a full pipe) in which the
``listening on URL`` line is looked for; leaving the block sends SIGTERM to every server and
checks that each exits 0 within :data:`STOP_BOUND` (one that does not is killed, and the test
fails). What the servers and this process hold is read from ``/proc``: child processes and
open file descriptors.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.abc
import httpx

SERVE: Final = (sys.executable, "-m", "subagents", "serve", "--listen", "127.0.0.1:0")
REFERENCE: Final = (sys.executable, "-m", "subagents.agents.reference")
"""The reference ACP agent, for a server to front (``-- COMMAND``)."""
START_BOUND: Final = 30.0
"""Seconds a server may take to say it listens (a loaded 2-core machine starts Python slowly)."""
STOP_BOUND: Final = 20.0
"""Seconds a server may take to drain and exit after SIGTERM."""
_LISTENING: Final = re.compile(r"listening on (http://\S+/acp)\n")


@dataclass(frozen=True, slots=True)
class Server:
    """One ``subagents serve --listen`` process: its pid, URL and stderr file."""

    pid: int
    url: str
    log: Path

    @property
    def health_url(self) -> str:
        return self.url.removesuffix("/acp") + "/health"

    def websocket_url(self) -> str:
        return "ws://" + self.url.removeprefix("http://")


def children(pid: int) -> set[int]:
    """The live child processes of ``pid`` (every thread's, from ``/proc``)."""
    found: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return found
    for task in tasks:
        try:
            text = Path(f"/proc/{pid}/task/{task}/children").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        found.update(int(word) for word in text.split())
    return found


def open_fds() -> int:
    """How many file descriptors this process has open."""
    return len(os.listdir("/proc/self/fd"))


def _listening_url(log: Path) -> str | None:
    found = _LISTENING.search(log.read_text(errors="replace"))
    return found.group(1) if found else None


def _command(extra: Sequence[str], agent: Sequence[str] | None) -> list[str]:
    return [*SERVE, *extra, *(["--", *agent] if agent else [])]


@asynccontextmanager
async def serve_processes(
    directory: Path, count: int, *extra: str, agent: Sequence[str] | None = None
) -> AsyncIterator[list[Server]]:
    """``count`` servers started at once (``extra``: more ``serve`` options; ``agent``: a
    command to front instead of the in-process runtime), stopped with SIGTERM at the end."""
    processes: list[anyio.abc.Process] = []
    logs: list[Path] = []
    try:
        for index in range(count):
            log = directory / f"serve-{index}.log"
            logs.append(log)
            with log.open("wb") as stderr:
                processes.append(
                    await anyio.open_process(
                        _command(extra, agent), stdin=subprocess.DEVNULL, stdout=None, stderr=stderr
                    )
                )
        servers: list[Server] = []
        with anyio.fail_after(START_BOUND):
            for process, log in zip(processes, logs, strict=True):
                while (url := _listening_url(log)) is None:
                    assert process.returncode is None, log.read_text(errors="replace")
                    await anyio.sleep(0.05)
                servers.append(Server(process.pid, url, log))
        yield servers
        for process in processes:
            process.send_signal(signal.SIGTERM)
        with anyio.fail_after(STOP_BOUND):
            codes = [await process.wait() for process in processes]
        assert codes == [0] * count, [log.read_text(errors="replace") for log in logs]
    finally:
        for process in processes:
            if process.returncode is None:
                process.kill()
            with anyio.move_on_after(STOP_BOUND, shield=True):
                await process.wait()
            await process.aclose()


@contextmanager
def serve_processes_sync(
    directory: Path, count: int, *extra: str, agent: Sequence[str] | None = None
) -> Iterator[list[Server]]:
    """:func:`serve_processes` for a synchronous test (a command line run in between)."""
    processes: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    try:
        for index in range(count):
            log = directory / f"serve-{index}.log"
            logs.append(log)
            with log.open("wb") as stderr:
                processes.append(
                    subprocess.Popen(
                        _command(extra, agent), stdin=subprocess.DEVNULL, stderr=stderr
                    )
                )
        servers: list[Server] = []
        deadline = time.monotonic() + START_BOUND
        for process, log in zip(processes, logs, strict=True):
            while (url := _listening_url(log)) is None:
                assert process.poll() is None, log.read_text(errors="replace")
                assert time.monotonic() < deadline, f"no 'listening on' within {START_BOUND} s"
                time.sleep(0.05)
            servers.append(Server(process.pid, url, log))
        yield servers
        for process in processes:
            process.send_signal(signal.SIGTERM)
        codes = [process.wait(timeout=STOP_BOUND) for process in processes]
        assert codes == [0] * count, [log.read_text(errors="replace") for log in logs]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=STOP_BOUND)


async def health(http: httpx.AsyncClient, server: Server) -> dict[str, Any]:
    """The server's ``/health`` answer."""
    response = await http.get(server.health_url)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer
