"""``subagents bridge URL`` (issue 20): a stdio ACP client talks to an agent served at a URL.

The bridge runs as a real process against our server (in-process on the test's backend,
asyncio and trio, on 127.0.0.1) fronting the reference agent, over Streamable HTTP and
WebSocket. Every wait is bounded; every bridge process is reaped by the test.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import pytest

from subagents.remote import RemoteServer
from tests.remote._server_helpers import (
    initialize_request,
    new_session_request,
    prompt_request,
    running_server,
)

pytestmark = pytest.mark.anyio

BOUND = 30.0
TOKEN = "bridge-Yk3v9Qm7Xr2Lw8Tn5Bz1Hc6Jd4Fg0Ps-Ua_Re7Wi2Ko"


@pytest.fixture(params=["http", "ws"])
def transport(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def url_of(server: RemoteServer, transport: str) -> str:
    return server.websocket_url if transport == "ws" else server.url


class Bridge:
    """A running ``subagents bridge`` process: lines in, messages out."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self._buffer = b""

    async def write(self, line: bytes | dict[str, Any]) -> None:
        data = line if isinstance(line, bytes) else json.dumps(line).encode()
        assert self.process.stdin is not None
        await self.process.stdin.send(data.rstrip(b"\n") + b"\n")

    async def read(self) -> dict[str, Any]:
        """The next line on stdout, as JSON (each must be one message)."""
        assert self.process.stdout is not None
        with anyio.fail_after(BOUND):
            while b"\n" not in self._buffer:
                self._buffer += await self.process.stdout.receive()
        line, self._buffer = self._buffer.split(b"\n", 1)
        message: dict[str, Any] = json.loads(line)
        return message

    async def answer(self, request_id: int) -> dict[str, Any]:
        """Read until the answer to ``request_id`` (notifications before it skipped)."""
        while True:
            message = await self.read()
            if message.get("id") == request_id and "method" not in message:
                return message

    async def close_stdin(self) -> int:
        assert self.process.stdin is not None
        await self.process.stdin.aclose()
        return await self.wait()

    async def wait(self) -> int:
        with anyio.fail_after(BOUND):
            return await self.process.wait()

    async def stderr(self) -> str:
        assert self.process.stderr is not None
        chunks: list[bytes] = []
        with anyio.fail_after(BOUND):
            async for chunk in self.process.stderr:
                chunks.append(chunk)
        return b"".join(chunks).decode()


async def no_connections(server: RemoteServer) -> None:
    """Wait (bounded) until the server holds no connection."""
    for _ in range(int(BOUND / 0.05)):
        if server.connection_count == 0:
            return
        await anyio.sleep(0.05)
    pytest.fail(f"the server still holds {server.connection_count} connection(s)")


@asynccontextmanager
async def bridge(*args: str, env: dict[str, str] | None = None) -> AsyncGenerator[Bridge, None]:
    """``python -m subagents bridge ARGS``, reaped on the way out (killed if still running)."""
    process = await anyio.open_process(
        [sys.executable, "-m", "subagents", "bridge", *args],
        env={**os.environ, **(env or {})},
    )
    try:
        async with process:
            yield Bridge(process)
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.move_on_after(BOUND, shield=True):
                await process.wait()


async def test_the_bridge_relays_a_session_and_closes_the_connection_on_stdin_eof(
    transport: str,
) -> None:
    """Issue 20 (the bridge): initialize, session/new and a prompt written on stdin reach the
    agent at the URL, every message from it comes out one per line on stdout; stdin's end
    closes the connection (the server holds none) and the bridge exits 0."""
    async with running_server() as server, bridge(url_of(server, transport)) as relay:
        await relay.write(initialize_request(1))
        init = await relay.answer(1)
        assert init["result"]["agentInfo"]["name"] == "subagents-reference-agent"
        await relay.write(new_session_request(2))
        session_id = (await relay.answer(2))["result"]["sessionId"]
        await relay.write(prompt_request(3, session_id, "echo over the bridge"))
        said: list[str] = []
        while True:
            message = await relay.read()
            if message.get("id") == 3:
                assert message["result"]["stopReason"] == "end_turn"
                break
            update = message.get("params", {}).get("update", {})
            if update.get("sessionUpdate") == "agent_message_chunk":
                said.append(update["content"]["text"])
        assert "".join(said) == "echo over the bridge"
        assert await relay.close_stdin() == 0
        await no_connections(server)


async def test_lines_that_are_no_message_come_back_refused(transport: str) -> None:
    """Issue 20 (point 2, what the suite's informational checks send): malformed JSON, an
    object that is no JSON-RPC message and a batch are delivered as they are; the server's
    refusal of each comes back as a JSON-RPC error with a null id (over HTTP: its error
    body, or one naming the status), and the connection goes on."""
    async with running_server() as server, bridge(url_of(server, transport)) as relay:
        await relay.write(initialize_request(1))
        await relay.answer(1)
        await relay.write(b'{"jsonrpc": "2.0", "id": 900, "method": ')
        parse = await relay.read()
        assert parse["id"] is None
        assert parse["error"]["code"] == -32700
        await relay.write(b'{"foo": "bar"}')
        invalid = await relay.read()
        assert invalid["id"] is None
        assert invalid["error"]["code"] == -32600
        await relay.write(json.dumps([new_session_request(5), new_session_request(6)]).encode())
        batch = await relay.read()
        assert batch["id"] is None
        assert batch["error"]["code"] == -32600
        assert "batch" in batch["error"]["message"]
        await relay.write(new_session_request(7))
        assert "sessionId" in (await relay.answer(7))["result"]
        assert await relay.close_stdin() == 0


async def test_a_prompt_for_an_unknown_session_is_answered_with_an_error(transport: str) -> None:
    """Issue 20 (same verdicts as over stdio): a request the server refuses (over HTTP a 404
    for a session the connection lacks) gets an error answer for its id; nothing else ends."""
    async with running_server() as server, bridge(url_of(server, transport)) as relay:
        await relay.write(initialize_request(1))
        await relay.answer(1)
        await relay.write(prompt_request(2, "no-such-session", "hi"))
        refused = await relay.answer(2)
        assert refused["error"]["code"] == -32002
        await relay.write(new_session_request(3))
        assert "sessionId" in (await relay.answer(3))["result"]
        assert await relay.close_stdin() == 0


async def test_a_wrong_or_missing_token_ends_the_bridge_with_the_reason(transport: str) -> None:
    """Issue 20: a server that refuses the token (401) ends the bridge with status 1 and the
    reason on stderr (naming the URL and the status); the right token works; a --token-env
    naming an unset variable is bad usage (2)."""
    async with running_server(token=TOKEN) as server:
        url = url_of(server, transport)
        async with bridge(url, "--token-env", "BRIDGE_T", env={"BRIDGE_T": "wrong"}) as relay:
            await relay.write(initialize_request(1))
            assert await relay.wait() == 1
            stderr = await relay.stderr()
            assert "refused the token (HTTP 401)" in stderr
            assert url.split("://", 1)[1] in stderr
        async with bridge(url, "--token-env", "BRIDGE_T", env={"BRIDGE_T": TOKEN}) as relay:
            await relay.write(initialize_request(1))
            assert "result" in await relay.answer(1)
            assert await relay.close_stdin() == 0
        async with bridge(url, "--token-env", "BRIDGE_UNSET_VARIABLE") as relay:
            assert await relay.wait() == 2
            assert "BRIDGE_UNSET_VARIABLE" in await relay.stderr()


async def test_sigterm_ends_the_bridge_cleanly(transport: str) -> None:
    """Issue 20: SIGTERM closes the connection (the server holds none) and exits 0."""
    async with running_server() as server, bridge(url_of(server, transport)) as relay:
        await relay.write(initialize_request(1))
        await relay.answer(1)
        assert server.connection_count == 1
        relay.process.send_signal(signal.SIGTERM)
        assert await relay.wait() == 0
        await no_connections(server)


async def test_a_lost_connection_ends_the_bridge_with_the_reason(transport: str) -> None:
    """Issue 20: the server going away (drained: its streams end, the socket closes) ends the
    bridge with status 1 and the reason on stderr, after what the server sent first."""
    async with running_server() as server, bridge(url_of(server, transport)) as relay:
        await relay.write(initialize_request(1))
        await relay.answer(1)
        await server.drain()
        assert await relay.wait() == 1
        stderr = await relay.stderr()
        assert "subagents bridge:" in stderr
        assert str(server.port) in stderr


async def test_a_request_before_initialize_is_refused_for_its_id(transport: str) -> None:
    """Issue 20 (ACP-INIT-005 through the bridge): ``session/new`` written before
    ``initialize`` is delivered as it is (over HTTP: POSTed without a connection, refused
    400), and its refusal is an error answer for its id; ``initialize`` then works."""
    async with running_server() as server, bridge(url_of(server, transport)) as relay:
        await relay.write(new_session_request(1))
        refused = await relay.answer(1)
        assert "error" in refused
        assert "result" not in refused
        await relay.write(initialize_request(2))
        assert "result" in await relay.answer(2)
        assert await relay.close_stdin() == 0
