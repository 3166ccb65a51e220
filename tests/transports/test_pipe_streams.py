"""Byte streams over pipes: the portable fd streams and asyncio's pipe transports."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable

import anyio
import anyio.abc
import pytest

from subagents.transports import (
    AsyncioPipeReceiveStream,
    FdReceiveStream,
    open_pipe_pair,
    pipe_pair,
)

pytestmark = pytest.mark.anyio

Pair = tuple[anyio.abc.ByteReceiveStream, anyio.abc.ByteSendStream]


async def portable() -> Pair:
    return pipe_pair()


@pytest.fixture(params=["portable", "fastest"])
def make_pair(request: pytest.FixtureRequest) -> Callable[[], Awaitable[Pair]]:
    return portable if request.param == "portable" else open_pipe_pair


async def test_open_pipe_pair_picks_the_backend_s_fast_path(anyio_backend: str) -> None:
    """asyncio gets its pipe transports; trio the portable fd streams."""
    receive, send = await open_pipe_pair()
    expected = AsyncioPipeReceiveStream if anyio_backend == "asyncio" else FdReceiveStream
    assert isinstance(receive, expected)
    await receive.aclose()
    await send.aclose()


async def test_bytes_arrive_in_order_then_end_of_stream(
    make_pair: Callable[[], Awaitable[Pair]],
) -> None:
    """Everything written before close is read, then EndOfStream."""
    receive, send = await make_pair()
    payload = os.urandom(3 * 1024 * 1024)
    got = bytearray()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:

            async def writer() -> None:
                for i in range(0, len(payload), 100_000):
                    await send.send(payload[i : i + 100_000])
                await send.aclose()

            tg.start_soon(writer)
            while True:
                try:
                    got += await receive.receive(50_000)
                except anyio.EndOfStream:
                    break
    assert bytes(got) == payload
    await receive.aclose()


async def test_receive_returns_at_most_max_bytes(make_pair: Callable[[], Awaitable[Pair]]) -> None:
    """ByteReceiveStream contract: a read never returns more than asked."""
    receive, send = await make_pair()
    await send.send(b"abcdefgh")
    with anyio.fail_after(5):
        assert await receive.receive(3) == b"abc"
        rest = b""
        while len(rest) < 5:
            rest += await receive.receive(3)
    assert rest == b"defgh"
    await send.aclose()
    await receive.aclose()


async def test_sending_after_the_reader_closed_is_a_broken_resource(
    make_pair: Callable[[], Awaitable[Pair]],
) -> None:
    """A vanished reader is a clear error, not a hang or a crash (EPIPE)."""
    receive, send = await make_pair()
    await receive.aclose()

    async def keep_sending() -> None:
        for _ in range(100):
            await send.send(b"x" * 65536)
            await anyio.sleep(0.001)

    with anyio.fail_after(5), pytest.raises(anyio.BrokenResourceError):
        await keep_sending()
    await send.aclose()


async def test_using_a_closed_stream_is_a_closed_resource(
    make_pair: Callable[[], Awaitable[Pair]],
) -> None:
    """Operations after aclose() raise ClosedResourceError."""
    receive, send = await make_pair()
    await receive.aclose()
    await send.aclose()
    with pytest.raises(anyio.ClosedResourceError):
        await send.send(b"x")
    with pytest.raises(anyio.ClosedResourceError):
        await receive.receive()


async def test_a_cancelled_large_send_never_cuts_a_frame(
    make_pair: Callable[[], Awaitable[Pair]],
) -> None:
    """A frame is written whole or not at all, even if the writer is cancelled mid-way."""
    receive, send = await make_pair()
    frame = b"F" * (4 * 1024 * 1024) + b"\n"
    data = bytearray()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:

            async def reader() -> None:
                await anyio.sleep(0.05)  # let the writer fill the pipe and be cancelled first
                while True:
                    try:
                        data.extend(await receive.receive())
                    except anyio.EndOfStream:
                        return

            tg.start_soon(reader)
            with anyio.move_on_after(0.01) as scope:
                await send.send(frame)  # the pipe holds 64 KiB: this must wait for the reader
            assert scope.cancel_called  # the deadline struck while the frame was in flight
            await send.send(b"next\n")
            await send.aclose()
    lines = bytes(data).split(b"\n")
    assert lines[-2:] == [b"next", b""]
    assert all(line in (frame[:-1], b"next", b"") for line in lines)
    await receive.aclose()
