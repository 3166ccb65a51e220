"""Byte streams over pipes on asyncio's own pipe transports (the fast path on asyncio).

asyncio keeps a pipe registered with its selector for the life of the transport and hands over
data in callbacks; waiting on the file descriptor for every read (what a portable stream does)
registers and unregisters it each time, which costs a round trip about a third of its time.
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from typing import Final, final

import anyio
import anyio.abc

__all__ = ("AsyncioPipeReceiveStream", "AsyncioPipeSendStream", "open_asyncio_pipe_streams")

_PAUSE_ABOVE: Final = 1024 * 1024
"""Stop reading from the pipe while this much is buffered and unread."""


@final
class _Reader(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.ReadTransport | None = None
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.eof = False
        self.error: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.ReadTransport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.buffered += len(data)
        if self.buffered > _PAUSE_ABOVE and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self.wake()

    def eof_received(self) -> bool | None:
        self.eof = True
        self.wake()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        self.wake()

    def wake(self) -> None:
        """Let the reader waiting for data look again."""
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


@final
class AsyncioPipeReceiveStream(anyio.abc.ByteReceiveStream):
    """Reads a pipe through an asyncio read transport. Use it on asyncio only."""

    def __init__(self, transport: asyncio.ReadTransport, reader: _Reader) -> None:
        self._transport = transport
        self._reader = reader
        self._closed = False
        self._ready_in_a_row = 0

    async def receive(self, max_bytes: int = 65536) -> bytes:
        reader = self._reader
        if not reader.chunks:
            self._ready_in_a_row = 0
            while not reader.chunks:
                if self._closed:
                    raise anyio.ClosedResourceError
                if reader.eof:
                    if reader.error is not None:
                        raise anyio.BrokenResourceError from reader.error
                    raise anyio.EndOfStream
                reader.waiter = asyncio.get_running_loop().create_future()
                try:
                    await reader.waiter
                finally:
                    reader.waiter = None
        else:
            # Data was ready without waiting: still let other tasks run now and then.
            self._ready_in_a_row += 1
            if self._ready_in_a_row >= 16:
                self._ready_in_a_row = 0
                await anyio.lowlevel.checkpoint()
            if self._closed:
                raise anyio.ClosedResourceError
        data = reader.chunks.popleft()
        if len(data) > max_bytes:
            reader.chunks.appendleft(data[max_bytes:])
            data = data[:max_bytes]
        reader.buffered -= len(data)
        if reader.paused and reader.buffered <= _PAUSE_ABOVE // 4:
            reader.paused = False
            self._transport.resume_reading()
        return data

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._transport.close()
            self._reader.wake()
        await anyio.lowlevel.checkpoint()


@final
class _Writer(asyncio.Protocol):
    def __init__(self) -> None:
        self.paused = False
        self.lost = False
        self.error: BaseException | None = None
        self.drain_waiters: list[asyncio.Future[None]] = []

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.error = exc
        self._wake()

    def _wake(self) -> None:
        waiters, self.drain_waiters = self.drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


@final
class AsyncioPipeSendStream(anyio.abc.ByteSendStream):
    """Writes a pipe through an asyncio write transport. Use it on asyncio only.

    Each message goes to the transport in one ``write()``, so a frame is never cut in two; the
    sender waits only while the transport's buffer is above its high-water mark.
    """

    atomic_send: Final = True
    """Each ``send()`` hands its item to the transport in one piece: concurrent senders never
    interleave, so the JSON-RPC peer needs no write lock."""

    def __init__(self, transport: asyncio.WriteTransport, writer: _Writer) -> None:
        self._transport = transport
        self._writer = writer
        self._closed = False

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        writer = self._writer
        if writer.lost or self._transport.is_closing():
            raise anyio.BrokenResourceError from writer.error
        self._transport.write(item)
        while writer.paused and not writer.lost:
            waiter = asyncio.get_running_loop().create_future()
            writer.drain_waiters.append(waiter)
            await waiter
        if writer.lost and writer.error is not None:
            raise anyio.BrokenResourceError from writer.error

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._transport.close()
        await anyio.lowlevel.checkpoint()


def _pipe_file(fd: int, mode: str) -> object:
    # Wraps an existing descriptor (nothing is opened, nothing blocks); the transport owns it.
    return open(fd, mode, buffering=0, closefd=True)


async def open_asyncio_pipe_streams(
    read_fd: int | None, write_fd: int | None
) -> tuple[AsyncioPipeReceiveStream | None, AsyncioPipeSendStream | None]:
    """Wrap file descriptors (each may be ``None``) in asyncio pipe transports; owns them."""
    loop = asyncio.get_running_loop()
    receive: AsyncioPipeReceiveStream | None = None
    send: AsyncioPipeSendStream | None = None
    if read_fd is not None:
        os.set_blocking(read_fd, False)
        reader = _Reader()
        read_transport, _ = await loop.connect_read_pipe(lambda: reader, _pipe_file(read_fd, "rb"))
        receive = AsyncioPipeReceiveStream(read_transport, reader)
    if write_fd is not None:
        os.set_blocking(write_fd, False)
        writer = _Writer()
        write_transport, _ = await loop.connect_write_pipe(
            lambda: writer, _pipe_file(write_fd, "wb")
        )
        send = AsyncioPipeSendStream(write_transport, writer)
    return receive, send
