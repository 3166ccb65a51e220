"""The URL client when the server refuses one POST (issue 20): which refusals end the
connection and which refuse only the message, against our server (in-process, asyncio and
trio) behind an ASGI wrapper that refuses the POSTs of one method with a given status."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

import subagents.remote.server as server_module
from subagents.remote import RemoteServer
from subagents.remote._app import AcpAsgiApp, ConnectionHub
from subagents.remote._client_http import HttpLink, open_http_link
from subagents.rpc import ConnectionClosedError, RPCError
from subagents.transports.acp_client import AgentConnection, connect_agent_over
from tests.remote._server_helpers import running_server

pytestmark = pytest.mark.anyio

BOUND = 30.0
Refusal = tuple[str, int, bytes]
"""The method whose POSTs are refused, the status, the body."""


class RefusingApp:
    """Our ``/acp`` app, but POSTs of :attr:`refusal`'s method get its status and body."""

    refusal: Refusal | None = None

    def __init__(self, hub: ConnectionHub) -> None:
        self.inner = AcpAsgiApp(hub)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or self.refusal is None:
            await self.inner(scope, receive, send)
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body", False):
                break
        method, status, answer = self.refusal
        if json.loads(body).get("method") == method:
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(answer)),
            ]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": answer})
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.inner(scope, replay, send)


@pytest.fixture
async def server(monkeypatch: pytest.MonkeyPatch) -> AsyncGenerator[RemoteServer, None]:
    RefusingApp.refusal = None
    monkeypatch.setattr(server_module, "AcpAsgiApp", RefusingApp)
    async with running_server() as running:
        yield running
    RefusingApp.refusal = None


@asynccontextmanager
async def _connected(
    server: RemoteServer,
) -> AsyncGenerator[tuple[HttpLink, AgentConnection], None]:
    async with (
        open_http_link(server.url) as link,
        connect_agent_over(link, link, eof_reason=link.reason) as agent,
    ):
        yield link, agent


REQUEST_REFUSALS = [
    pytest.param(
        400,
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"bad cursor"}}',
        -32602,
        "bad cursor",
        id="400-jsonrpc-body",
    ),
    pytest.param(
        409,
        b"busy right now",
        -32600,
        "HTTP 409 from {url} for POST session/list: busy",
        id="409-text",
    ),
    pytest.param(
        404,
        b'{"error":"gone"}',
        -32002,
        "HTTP 404 from {url} for POST session/prompt",
        id="404-session",
    ),
]


@pytest.mark.parametrize(("status", "body", "code", "message"), REQUEST_REFUSALS)
async def test_a_refused_request_gets_an_error_answer_and_the_connection_goes_on(
    server: RemoteServer, status: int, body: bytes, code: int, message: str
) -> None:
    """Issue 20, a refused POST of one request: other than 401/403, 5xx and a 404 naming no
    session, the request is answered here with a JSON-RPC error for its id (the server's
    JSON-RPC error when its body is one, else -32002 for 404 or -32600, naming the URL, the
    status and the body's start); the in-flight bookkeeping forgets it; the next call works."""
    with anyio.fail_after(BOUND):
        async with _connected(server) as (link, agent):
            session = await agent.new_session(cwd="/tmp")
            if status == 404:
                method = "session/prompt"
                params: Any = {
                    "sessionId": session.session_id,
                    "prompt": [{"type": "text", "text": "hi"}],
                }
            else:
                method, params = "session/list", {}
            RefusingApp.refusal = (method, status, body)
            with pytest.raises(RPCError) as info:
                await agent.peer.request(method, params)
            assert info.value.code == code
            assert message.format(url=server.url) in str(info.value)
            assert link.failure is None
            assert link._our_requests == {}  # pyright: ignore[reportPrivateUsage]
            RefusingApp.refusal = None
            assert (await session.run("echo again")).stop_reason == "end_turn"


@pytest.mark.parametrize(
    ("method", "status"),
    [
        pytest.param("session/list", 401, id="401"),
        pytest.param("session/list", 403, id="403"),
        pytest.param("session/list", 500, id="500"),
        pytest.param("session/list", 503, id="503"),
        pytest.param("session/new", 404, id="404-no-session-header"),
    ],
)
async def test_a_refusal_of_the_connection_fails_it(
    server: RemoteServer, method: str, status: int
) -> None:
    """Issue 20: 401/403 (the credentials), 5xx (the server) and 404 on a POST naming no
    session (the connection is unknown or ended) still lose the connection: the call, and
    the next, fail with ConnectionClosedError naming the URL, the status and the method."""
    with anyio.fail_after(BOUND):
        async with _connected(server) as (link, agent):
            RefusingApp.refusal = (method, status, b'{"error":"no"}')
            params: Any = {"cwd": "/tmp", "mcpServers": []} if method == "session/new" else {}
            with pytest.raises(ConnectionClosedError) as info:
                await agent.peer.request(method, params)
            assert f"HTTP {status}" in str(info.value)
            assert server.url in str(info.value)
            assert link.failure is not None
            RefusingApp.refusal = None
            with pytest.raises(ConnectionClosedError):
                await agent.new_session(cwd="/tmp")


async def test_a_refused_notification_is_logged_and_dropped(
    server: RemoteServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 20: a refused notification (here session/cancel, 400) is logged (naming the
    status) and dropped; the connection goes on."""
    with anyio.fail_after(BOUND):
        async with _connected(server) as (link, agent):
            session = await agent.new_session(cwd="/tmp")
            RefusingApp.refusal = ("session/cancel", 400, b'{"error":"not now"}')
            with caplog.at_level(logging.WARNING, logger="subagents.remote.client"):
                await agent.peer.notify("session/cancel", {"sessionId": session.session_id})
            assert any(
                "HTTP 400" in r.getMessage() and "session/cancel" in r.getMessage()
                for r in caplog.records
            )
            assert link.failure is None
            RefusingApp.refusal = None
            assert (await session.run("echo still")).stop_reason == "end_turn"
