"""A URL client cancelled while its ``initialize`` POST is answered (asyncio and trio).

The server side stops a connection whose client disconnects before the answer
(``test_server_abandoned_initialize.py``); an answer already written is the client's to
settle: it waits a little for it, learns the ``Acp-Connection-Id`` and DELETEs it. The server
here is a small h11 one that records what it is asked.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import h11
import pytest

from subagents.remote.client import connect_agent_url
from tests._ports import loopback_server

pytestmark = pytest.mark.anyio

BOUND = 20.0
ANSWER_DELAY = 0.25
"""How late the server answers ``initialize`` (the client is cancelled before; the client's
grace, ``INITIALIZE_GRACE``, is longer)."""


async def _serve(stream: anyio.abc.SocketStream, seen: list[str]) -> None:
    """``initialize`` answered 200 after :data:`ANSWER_DELAY` with connection ``conn-1``; a
    DELETE answered 202; each request noted as ``METHOD connection-id``."""
    connection = h11.Connection(h11.SERVER)
    request: h11.Request | None = None
    body = b""
    async with stream:
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                try:
                    connection.receive_data(await stream.receive())
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    connection.receive_data(b"")
                continue
            if isinstance(event, h11.Request):
                request, body = event, b""
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage) and request is not None:
                headers = dict(request.headers)
                seen.append(
                    f"{request.method.decode()} {headers.get(b'acp-connection-id', b'-').decode()}"
                )
                if request.method == b"POST":
                    await anyio.sleep(ANSWER_DELAY)
                    answer = json.dumps(
                        {"jsonrpc": "2.0", "id": json.loads(body)["id"], "result": {}}
                    ).encode()
                    status, extra = 200, [("acp-connection-id", "conn-1")]
                else:
                    answer, status, extra = b"", 202, []
                response_headers = [
                    ("content-type", "application/json"),
                    ("content-length", str(len(answer))),
                    *extra,
                ]
                try:
                    await stream.send(
                        connection.send(h11.Response(status_code=status, headers=response_headers))
                    )
                    await stream.send(connection.send(h11.Data(data=answer)))
                    await stream.send(connection.send(h11.EndOfMessage()))
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    seen.append("the client was gone before the answer")
                    return
                connection.start_next_cycle()
                request = None
            elif isinstance(event, h11.ConnectionClosed):
                return


@asynccontextmanager
async def recording_server() -> AsyncGenerator[tuple[str, list[str]], None]:
    seen: list[str] = []

    async def handle(stream: anyio.abc.SocketStream) -> None:
        await _serve(stream, seen)

    async with loopback_server(handle) as port:
        yield f"http://127.0.0.1:{port}/acp", seen


async def test_a_client_cancelled_during_initialize_deletes_the_connection_it_was_given() -> None:
    """Issue 20 point 4 ("random cancels all settle, nothing leaks ... on either side"): a
    start cancelled while ``initialize`` is answered still learns the connection the server
    made for it and DELETEs it."""
    scope = anyio.CancelScope()

    async def start(url: str) -> None:
        with scope:
            async with connect_agent_url(url, http2=False):
                pytest.fail("the start cannot complete: it is cancelled first")

    async with recording_server() as (url, seen):
        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as tg:
                tg.start_soon(start, url)
                # Cancelled once the server has the POST (not after a fixed time: on a loaded
                # machine the POST could still be unsent), before its answer.
                while "POST -" not in seen:  # noqa: ASYNC110 - the server's record
                    await anyio.sleep(0.005)
                scope.cancel()
            while "DELETE conn-1" not in seen:  # noqa: ASYNC110 - the server's record
                await anyio.sleep(0.01)
    assert scope.cancelled_caught
    assert seen == ["POST -", "DELETE conn-1"]
