"""Loopback ports for tests."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import anyio.abc

STOP_TIMEOUT = 30.0
"""Seconds a killed server process may take to be reaped."""


def closed_port() -> int:
    """A port on 127.0.0.1 that nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@contextmanager
def port_script(script: Path, *args: str, what: str) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """Run ``python script *args`` (a server that prints ``PORT <n>`` once it listens on
    127.0.0.1) until the block ends, then kill it and reap it; ``what`` names it in the error
    when it does not start."""
    process = subprocess.Popen(
        [sys.executable, str(script), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # bounded: the script prints it or exits
        if not line.startswith("PORT "):
            raise RuntimeError(f"{what} did not start: {line!r}")
        yield process, int(line.split()[1])
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=STOP_TIMEOUT)
        if process.stdout is not None:
            process.stdout.close()


@asynccontextmanager
async def loopback_server(
    handle: Callable[[anyio.abc.SocketStream], Awaitable[None]],
) -> AsyncGenerator[int, None]:
    """A TCP server on 127.0.0.1 calling ``handle`` for each connection, for the block; its
    port. Every connection's task is cancelled when the block ends."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port: int = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        await anyio.wait_all_tasks_blocked()  # its accept task is running (kits count tasks)
        yield port
        tg.cancel_scope.cancel()


async def _hold(stream: anyio.abc.SocketStream) -> None:
    async with stream:  # read (never answer) until the client goes
        async for _ in stream:
            pass


@asynccontextmanager
async def silent_server() -> AsyncGenerator[int, None]:
    """The port of a server that accepts connections and never answers (a start caught
    midway)."""
    async with loopback_server(_hold) as port:
        yield port
