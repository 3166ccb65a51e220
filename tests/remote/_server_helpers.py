"""Helpers of the remote ACP server tests: a raw HTTP client of the ``/acp`` endpoint, servers.

Servers listen on 127.0.0.1, port 0, and are stopped by the test that started them.
:class:`RawClient` speaks the RFD's wire with plain httpx (HTTP/2 by prior knowledge unless
told otherwise), so the tests see every status code and header as sent.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Final

import anyio
import httpx
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from subagents._generators import finish
from subagents.protocol.acp_remote import SseDecoder
from subagents.protocol.jsonrpc import JsonValue
from subagents.remote import (
    AgentBackend,
    RemoteServer,
    ServerLimits,
    agent_command,
    serve_acp_http,
)

REFERENCE: Final = [sys.executable, "-m", "subagents.agents.reference"]
"""The reference ACP agent (offline, scenario chosen by the prompt's first word)."""
WAIT: Final = 20.0
TOKEN: Final = "s3cret-Yk3v9Qm7Xr2Lw8Tn5Bz1Hc6Jd4Fg0Ps-Ua_Re7Wi2Ko"
"""A bearer token strong enough for the servers (issue 34: weak ones are refused)."""
"""The bound on every wait of these tests (a hang fails, never a slow machine)."""

Message = dict[str, Any]


def initialize_request(
    request_id: int = 1, capabilities: dict[str, JsonValue] | None = None
) -> Message:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": capabilities or {}},
    }


def request(request_id: int, method: str, params: JsonValue) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def prompt_request(request_id: int, session_id: str, text: str) -> Message:
    return request(
        request_id,
        "session/prompt",
        {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]},
    )


def new_session_request(request_id: int, cwd: str = "/tmp") -> Message:
    return request(request_id, "session/new", {"cwd": cwd, "mcpServers": []})


class EventStream:
    """The JSON-RPC messages of one SSE response, in order.

    A task reads the response (and is cancelled at the end, then finishes httpx's generators:
    one left unfinished would be finalised by the garbage collector, which trio reports).
    """

    def __init__(self, messages: MemoryObjectReceiveStream[Message]) -> None:
        self._messages = messages

    async def receive(self) -> Message:
        """The next message (``anyio.EndOfStream`` when the response ends)."""
        with anyio.fail_after(WAIT):
            return await self._messages.receive()

    async def until_answer(self, request_id: int) -> tuple[list[Message], Message]:
        """Everything before the answer to ``request_id``, and the answer."""
        before: list[Message] = []
        while True:
            message = await self.receive()
            if message.get("id") == request_id and "method" not in message:
                return before, message
            before.append(message)

    async def until_method(self, method: str) -> Message:
        while True:
            message = await self.receive()
            if message.get("method") == method:
                return message

    async def rest(self) -> list[Message]:
        """Every message until the response ends."""
        messages: list[Message] = []
        while True:
            try:
                messages.append(await self.receive())
            except anyio.EndOfStream:
                return messages


class RawClient:
    """The RFD's client side, by hand: POSTs and GET streams with the identity headers."""

    def __init__(
        self, http: httpx.AsyncClient, url: str, token: str | None = None, *, http2: bool = True
    ) -> None:
        self.http = http
        self.http2 = http2
        self.url = url
        self.connection_id: str | None = None
        self.auth: dict[str, str] = {"Authorization": f"Bearer {token}"} if token else {}

    def headers(self, session_id: str | None = None) -> dict[str, str]:
        headers = dict(self.auth)
        if self.connection_id is not None:
            headers["Acp-Connection-Id"] = self.connection_id
        if session_id is not None:
            headers["Acp-Session-Id"] = session_id
        return headers

    async def initialize(self, capabilities: dict[str, JsonValue] | None = None) -> Message:
        response = await self.http.post(
            self.url, json=initialize_request(1, capabilities), headers=self.auth
        )
        assert response.status_code == 200, response.text
        self.connection_id = response.headers["acp-connection-id"]
        answer: Message = response.json()
        return answer

    async def post(self, message: Message, session_id: str | None = None) -> httpx.Response:
        return await self.http.post(self.url, json=message, headers=self.headers(session_id))

    @asynccontextmanager
    async def stream(
        self, session_id: str | None = None, *, shared: bool = False
    ) -> AsyncIterator[EventStream]:
        """A GET stream, on a TCP connection of its own unless ``shared``.

        httpcore 1.0 reads an HTTP/2 connection under one lock: with two streams open on it,
        the second reader can hold the lock, waiting for its own data, while a POST's answer
        sits unread, until any stream gets data (a keep-alive comment at the latest).
        """
        headers = {**self.headers(session_id), "Accept": "text/event-stream"}
        async with AsyncExitStack() as stack:
            http = self.http
            if not shared:
                http = await stack.enter_async_context(http_client(http2=self.http2))
            response = await stack.enter_async_context(
                http.stream("GET", self.url, headers=headers)
            )
            assert response.status_code == 200, await response.aread()
            send, receive = anyio.create_memory_object_stream[Message](1000)
            with send, receive:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_read_events, response, send)
                    yield EventStream(receive)
                    tg.cancel_scope.cancel()

    async def delete(self) -> httpx.Response:
        return await self.http.delete(self.url, headers=self.headers())

    async def new_session(self, events: EventStream, request_id: int = 2) -> str:
        """``session/new`` (its answer read from the connection's stream ``events``)."""
        response = await self.post(new_session_request(request_id))
        assert response.status_code == 202, response.text
        _, answer = await events.until_answer(request_id)
        session_id: str = answer["result"]["sessionId"]
        return session_id


async def _read_events(response: httpx.Response, send: MemoryObjectSendStream[Message]) -> None:
    decoder = SseDecoder()
    chunks = response.aiter_bytes()
    with send:
        try:
            async for chunk in chunks:
                for _, data in decoder.feed(chunk):
                    await send.send(json.loads(data))
        finally:
            await finish(chunks)  # cancelled in send: httpx's generators are left mid-way


@asynccontextmanager
async def http_client(*, http2: bool = True) -> AsyncGenerator[httpx.AsyncClient, None]:
    """An httpx client: HTTP/2 by prior knowledge (h2c) by default, else HTTP/1.1."""
    async with httpx.AsyncClient(
        http1=not http2, http2=http2, timeout=httpx.Timeout(WAIT)
    ) as client:
        yield client


@asynccontextmanager
async def running_server(
    backend: AgentBackend | None = None,
    *,
    token: str | None = None,
    limits: ServerLimits | None = None,
) -> AsyncGenerator[RemoteServer, None]:
    """A server on 127.0.0.1, port 0 (the reference agent per connection by default)."""
    async with serve_acp_http(
        backend or agent_command(REFERENCE), port=0, token=token, limits=limits
    ) as server:
        yield server


@asynccontextmanager
async def connected(
    server: RemoteServer, *, http2: bool = True, token: str | None = None
) -> AsyncGenerator[tuple[RawClient, EventStream], None]:
    """An initialized connection and its open connection-scoped stream."""
    async with http_client(http2=http2) as http:
        client = RawClient(http, server.url, token, http2=http2)
        await client.initialize()
        async with client.stream() as events:
            yield client, events
