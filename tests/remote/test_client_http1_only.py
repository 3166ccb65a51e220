"""The URL client and a server that speaks HTTP/1.1 only (an h11 server in the test, on
asyncio and trio): plain ``http://`` speaks HTTP/1.1 from the first request, unless HTTP/2
(h2c) is asked for."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import h11
import pytest

from subagents.remote.client import RemoteStartupError, connect_agent_url
from tests._ports import loopback_server

pytestmark = [
    pytest.mark.anyio,
    # The HTTP/2 attempt fails while httpx writes the request body; httpx leaves that body's
    # async generator to the garbage collector, which trio reports (httpx's, not ours).
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

BOUND = 20.0


async def _serve_one(stream: anyio.abc.SocketStream, seen: list[str]) -> None:
    """Answer each HTTP/1.1 request 401; anything else (an HTTP/2 preface) closes."""
    connection = h11.Connection(h11.SERVER)
    async with stream:
        while True:
            try:
                event = connection.next_event()
            except h11.RemoteProtocolError:
                seen.append("not HTTP/1.1")
                return
            if event is h11.NEED_DATA:
                try:
                    connection.receive_data(await stream.receive())
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    connection.receive_data(b"")
                continue
            if isinstance(event, h11.Request):
                if not event.http_version.startswith(b"1"):
                    seen.append("not HTTP/1.1")  # h11 reads the HTTP/2 preface as a request
                    return
                seen.append(f"{event.method.decode()} HTTP/{event.http_version.decode()}")
            elif isinstance(event, h11.EndOfMessage):
                body = b'{"error":"unauthorized"}'
                headers = [("content-type", "application/json"), ("content-length", "24")]
                await stream.send(connection.send(h11.Response(status_code=401, headers=headers)))
                await stream.send(connection.send(h11.Data(data=body)))
                await stream.send(connection.send(h11.EndOfMessage()))
                return
            elif isinstance(event, h11.ConnectionClosed):
                return


@asynccontextmanager
async def http1_only_server() -> AsyncGenerator[tuple[int, list[str]], None]:
    seen: list[str] = []

    async def handle(stream: anyio.abc.SocketStream) -> None:
        await _serve_one(stream, seen)

    async with loopback_server(handle) as port:
        yield port, seen


async def test_plain_http_speaks_http1_without_trying_h2c_first() -> None:
    """Issue 34: "the plain-http:// client speaks HTTP/1.1 unless told otherwise" (an h2c
    try cost a failed attempt per connection behind a load balancer speaking HTTP/1.1): the
    first request the server sees is the HTTP/1.1 POST (here answered 401, so the start fails
    naming it)."""
    async with http1_only_server() as (port, seen):
        with anyio.fail_after(BOUND), pytest.raises(RemoteStartupError) as info:
            async with connect_agent_url(f"http://127.0.0.1:{port}/acp"):
                pass
    assert info.value.status == 401
    assert seen == ["POST HTTP/1.1"]


async def test_insisting_on_http2_fails_against_an_http1_server() -> None:
    """RFD "HTTP/2 is REQUIRED": with ``http2=True`` there is no fallback; the start fails
    naming the URL (never a hang)."""
    async with http1_only_server() as (port, seen):
        with anyio.fail_after(BOUND), pytest.raises(RemoteStartupError) as info:
            async with connect_agent_url(f"http://127.0.0.1:{port}/acp", http2=True):
                pass
    assert f"127.0.0.1:{port}" in str(info.value)
    assert seen == ["not HTTP/1.1"]
