"""The server keeps an idle HTTP connection open longer than its clients do (asyncio and trio).

Found by the scale-out test (``test_scale_out.py``): hypercorn closed a connection with no
request in flight after 5 s, the very moment httpx stops reusing one; under load the server
closed connections the client was writing its next POST on, and every such turn failed with
``WriteError``.
"""

from __future__ import annotations

import anyio
import anyio.abc
import pytest

from subagents.remote.server import KEEP_ALIVE_TIMEOUT
from tests.remote._server_helpers import WAIT, running_server

pytestmark = pytest.mark.anyio

HTTPX_KEEPALIVE_EXPIRY = 5.0
"""How long httpx reuses an idle connection (its default ``keepalive_expiry``)."""
REQUEST = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


async def response_of(stream: anyio.abc.ByteStream) -> bytes:
    """One HTTP/1.1 response (head and ``Content-Length`` body) read from ``stream``."""
    data = b""
    with anyio.fail_after(WAIT):
        while b"\r\n\r\n" not in data:
            data += await stream.receive()
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(body) < length:
            body += await stream.receive()
    return head.split(b"\r\n", 1)[0]


async def test_an_idle_connection_stays_open_past_the_clients_keep_alive() -> None:
    """Issue 20 point 4 ("100 concurrent remote runs ... all settle"): a connection idle for
    longer than httpx keeps one is still open, and serves the next request on it."""
    assert KEEP_ALIVE_TIMEOUT > HTTPX_KEEPALIVE_EXPIRY * 2
    async with (
        running_server() as server,
        await anyio.connect_tcp("127.0.0.1", server.port) as stream,
    ):
        await stream.send(REQUEST)
        assert (await response_of(stream)).startswith(b"HTTP/1.1 200")
        await anyio.sleep(HTTPX_KEEPALIVE_EXPIRY + 1.0)
        await stream.send(REQUEST)
        assert (await response_of(stream)).startswith(b"HTTP/1.1 200")
