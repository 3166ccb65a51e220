"""Helpers for the adapter tests: server-sent-event bodies, a slow stream, a sleep recorder."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
import httpx


def sse(*events: tuple[str | None, Any]) -> bytes:
    """``(event name, data)`` pairs as an event stream (data: JSON unless a ``str``)."""
    out: list[str] = []
    for name, data in events:
        if name is not None:
            out.append(f"event: {name}\n")
        out.append(f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n")
    return "".join(out).encode()


def sse_response(body: bytes, status: int = 200) -> httpx.Response:
    return httpx.Response(status, content=body, headers={"content-type": "text/event-stream"})


class SlowStream(httpx.AsyncByteStream):
    """``first``, then ``filler`` every ``interval`` seconds forever; records being closed."""

    def __init__(self, first: bytes, filler: bytes, interval: float = 0.05) -> None:
        self.first = first
        self.filler = filler
        self.interval = interval
        self.closed = False
        self.sent = 0

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        if self.closed:
            raise StopAsyncIteration
        self.sent += 1
        if self.sent == 1:
            return self.first
        await anyio.sleep(self.interval)
        return self.filler

    async def aclose(self) -> None:
        self.closed = True


class Sleeps:
    """An injectable ``sleep`` that records the delays it was asked for and returns at once."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        await anyio.lowlevel.checkpoint()
