"""Request bodies of the remote client (``subagents.remote._http_body``): sent whole, and
without an async generator that a POST cancelled mid-send would leave for trio to report
("garbage collected before it had been exhausted", seen in the scale-out test)."""

from __future__ import annotations

import inspect

import httpx
import pytest

from subagents.remote._http_body import Body, post

pytestmark = pytest.mark.anyio


async def test_a_post_sends_the_whole_body_with_its_length() -> None:
    seen: list[tuple[bytes, str | None, str | None]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(
            (request.read(), request.headers.get("content-length"), request.headers.get("x-a"))
        )
        return httpx.Response(202)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        response = await post(client, "http://127.0.0.1:9/acp", b'{"jsonrpc":"2.0"}', {"x-a": "1"})
    assert response.status_code == 202
    assert seen == [(b'{"jsonrpc":"2.0"}', "17", "1")]


async def test_the_body_iterates_once_and_is_no_async_generator() -> None:
    """A body left after its first chunk (the send cancelled) holds no suspended generator."""
    stream = Body(b"abc")
    first = aiter(stream)
    assert not inspect.isasyncgen(first)
    assert [chunk async for chunk in first] == [b"abc"]
    assert [chunk async for chunk in stream] == [b"abc"]  # a retry iterates it again
