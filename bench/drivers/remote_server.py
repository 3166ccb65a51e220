"""Remote bench server: ours (``subagents.remote.serve_acp_http``) or the official SDK's
(``acp.http``/``acp.ws`` under Hypercorn), each with the same stdio agent behind it.

    python remote_server.py --impl ours|sdk [--agent sdk-inproc]

Binds 127.0.0.1 on a free port, prints ``PORT <n>`` on stdout once it listens, and serves
until stdin closes (or SIGTERM). The agent behind every connection is one process per
connection of ``subagents_agent.py`` (the bench's raw echo agent, see ``_common``), the same
command the stdio rows spawn:

* ours: ``agent_command([python, subagents_agent.py])`` (the server's own per-connection
  process backend);
* the SDK's server only hosts an in-process SDK ``Agent`` object (``create_asgi_app(factory)``
  binds an ``AgentSideConnection`` to an in-memory dict transport per connection). For the
  same agent process behind it, each connection's dict transport is bound here to a child
  process instead (one JSON line per message each way, as ours does); the SDK's routing, SSE,
  ASGI and WebSocket code runs unchanged. ``--agent sdk-inproc`` keeps the SDK's native
  hosting instead (its echo agent, ``acp_agent.py``'s ``EchoAgent``, in process).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import socket
import sys
from pathlib import Path
from typing import Any

AGENT = Path(__file__).with_name("subagents_agent.py")
AGENT_COMMAND = [sys.executable, str(AGENT)]
READ_LIMIT = 64 * 1024 * 1024


def _listen() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


def _announce(port: int) -> None:
    sys.stdout.write(f"PORT {port}\n")
    sys.stdout.flush()


async def _stdin_closed() -> None:
    """Returns when stdin reaches EOF (the orchestrator closed it, or died)."""
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.buffer.read)


# ---------------------------------------------------------------- ours


def serve_ours() -> None:
    import anyio

    from subagents.remote import agent_command, serve_acp_http

    async def main() -> None:
        async with serve_acp_http(agent_command(AGENT_COMMAND), port=0) as server:
            _announce(server.port)
            await anyio.to_thread.run_sync(sys.stdin.buffer.read, abandon_on_cancel=True)

    anyio.run(main, backend="asyncio")


# ---------------------------------------------------------------- the SDK's


class ChildTransport:
    """The SDK's in-memory ``Transport`` shape (``send(dict)``, ``receive() -> dict | None``,
    ``close()``) over a child process's stdin/stdout, one JSON line per message."""

    def __init__(self, command: list[str]) -> None:
        self._command = command
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    async def _process(self) -> asyncio.subprocess.Process:
        if self._proc is None:
            async with self._lock:
                if self._proc is None:
                    self._proc = await asyncio.create_subprocess_exec(
                        *self._command,
                        stdin=asyncio.subprocess.PIPE,
                        stdout=asyncio.subprocess.PIPE,
                        limit=READ_LIMIT,
                    )
        return self._proc

    async def send(self, message: dict[str, Any]) -> None:
        proc = await self._process()
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        if proc.stdin.transport.get_write_buffer_size() > 65536:
            await proc.stdin.drain()

    async def receive(self) -> dict[str, Any] | None:
        proc = await self._process()
        assert proc.stdout is not None
        line = await proc.stdout.readline()
        if not line:
            return None
        message: dict[str, Any] = json.loads(line)
        return message

    async def close(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 2.0)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()


def _command_hosting() -> None:
    """Make every SDK server connection talk to a child process (see the module docstring)."""
    from acp.http import server as sdk_server

    class _Closer:
        def __init__(self, transport: ChildTransport) -> None:
            self._transport = transport

        async def close(self) -> None:
            await self._transport.close()

    class CommandConnectionState(sdk_server.ConnectionState):
        def __init__(
            self, connection_id: str, agent_factory: Any, *, multiplex: bool = False
        ) -> None:
            # ConnectionState.__init__ with the child process in place of the
            # AgentSideConnection on the other end of the message pump.
            self.connection_id = connection_id
            transport = ChildTransport(AGENT_COMMAND)
            self._pump_side = transport  # pyright: ignore[reportAttributeAccessIssue]
            self._agent_conn = _Closer(transport)  # pyright: ignore[reportAttributeAccessIssue]
            self.connection_stream = sdk_server.OutboundStream()
            self.session_streams = {}
            self._multiplex = sdk_server.OutboundStream() if multiplex else None
            self._pending_routes = {}
            self._response_waiters = {}
            self._pump_task = None

    sdk_server.ConnectionState = CommandConnectionState  # type: ignore[misc]


def serve_sdk(native: bool) -> None:
    import hypercorn.asyncio
    from acp.http.asgi import create_asgi_app
    from hypercorn.config import Config

    if native:
        from acp_agent import EchoAgent

        factory: Any = lambda conn: EchoAgent()  # noqa: E731
    else:
        _command_hosting()
        factory = lambda conn: None  # noqa: E731  # never called: a child process instead

    async def main() -> None:
        sock = _listen()
        sock.set_inheritable(True)
        config = Config()
        config.bind = [f"fd://{sock.fileno()}"]
        config.accesslog = None
        config.errorlog = None
        config.graceful_timeout = 0.5
        app = create_asgi_app(factory)
        _announce(sock.getsockname()[1])
        stop = asyncio.ensure_future(_stdin_closed())
        await hypercorn.asyncio.serve(app, config, shutdown_trigger=lambda: stop)  # pyright: ignore[reportArgumentType, reportUnknownMemberType]
        await app._server.close()  # pyright: ignore[reportPrivateUsage]

    asyncio.run(main())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--impl", choices=("ours", "sdk"), required=True)
    ap.add_argument("--agent", choices=("command", "sdk-inproc"), default="command")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if args.impl == "ours":
        if args.agent != "command":
            ap.error("--agent sdk-inproc is for --impl sdk")
        serve_ours()
    else:
        serve_sdk(native=args.agent == "sdk-inproc")


if __name__ == "__main__":
    main()
