"""``subagents._generators.finish``: a streamed httpx body left mid-way leaves nothing behind.

A reader cancelled between two chunks (waiting to hand one on) leaves httpx's nest of async
generators suspended; trio warns when the garbage collector finalises them (an error under the
test suite's ``-W error``: it once failed a remote-server test, depending on when the collector
ran). Both the MCP SSE client and the remote tests' reader finish the nest instead.
"""

from __future__ import annotations

import gc
import warnings
from contextlib import suppress

import anyio
import anyio.abc
import anyio.lowlevel
import httpx
import pytest

from subagents._generators import finish

pytestmark = pytest.mark.anyio

EVENT = b"data: {}\n\n"


async def _endless_events(stream: anyio.abc.SocketStream) -> None:
    """An HTTP/1.1 server's answer to any request: an event stream that never ends."""
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        async with stream:
            await stream.receive()
            await stream.send(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n"
            )
            while True:  # until the socket's buffer is full, then as the client reads
                await stream.send(b"%x\r\n%s\r\n" % (len(EVENT), EVENT))


async def _read_then_cancel() -> list[str]:
    """Read the endless stream until the reader waits to hand a chunk on, cancel it there,
    collect garbage; what trio warned about meanwhile."""
    async with await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0) as listener:
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            async with anyio.create_task_group() as server:
                server.start_soon(listener.serve, _endless_events)
                async with (
                    httpx.AsyncClient(timeout=10) as client,
                    client.stream("GET", f"http://127.0.0.1:{port}/") as response,
                ):
                    blocked = anyio.Event()
                    send, receive = anyio.create_memory_object_stream[bytes](0)

                    async def read() -> None:
                        chunks = response.aiter_bytes()
                        try:
                            async for chunk in chunks:
                                blocked.set()
                                await send.send(chunk)  # nobody receives
                        finally:
                            await finish(chunks)

                    with send, receive, anyio.fail_after(10):
                        async with anyio.create_task_group() as readers:
                            readers.start_soon(read)
                            await blocked.wait()
                            readers.cancel_scope.cancel()
                server.cancel_scope.cancel()
            gc.collect()
            await anyio.lowlevel.checkpoint()  # trio's finaliser of a collected one runs here
        return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


async def test_a_reader_cancelled_between_chunks_that_finishes_leaves_no_generator() -> None:
    """After finish(), no httpx generator is left for the garbage collector: nothing warns.
    Without it (the reader's ``finally`` doing nothing) trio warns of seven suspended
    generators, here or, when the collector runs later, at the test's end (pytest's
    unraisable-exception check under ``-W error``): either way the test fails."""
    assert await _read_then_cancel() == []
