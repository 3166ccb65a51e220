"""Byte streams over non-blocking file descriptors (pipes), for asyncio and trio alike."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import final

import anyio
import anyio.abc
import anyio.lowlevel

__all__ = (
    "FdReceiveStream",
    "FdSendStream",
    "open_pipe_pair",
    "open_stdio_streams",
    "pipe_pair",
    "wrap_pipe_fds",
)


@final
class FdReceiveStream(anyio.abc.ByteReceiveStream):
    """Reads a file descriptor (set to non-blocking); owns it and closes it on ``aclose``."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._closed = False

    @property
    def fileno(self) -> int:
        return self._fd

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await anyio.lowlevel.checkpoint_if_cancelled()
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            anyio.notify_closing(self._fd)
            os.close(self._fd)
        await anyio.lowlevel.checkpoint()


@final
class FdSendStream(anyio.abc.ByteSendStream):
    """Writes a file descriptor (set to non-blocking); owns it and closes it on ``aclose``.

    A message is written whole or not at all as far as cancellation goes: once its first byte
    is out, the rest follows even if the caller is cancelled, so a frame is never cut in two.
    (Closing the stream, or the reader going away, still ends the write.)
    """

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._closed = False

    @property
    def fileno(self) -> int:
        return self._fd

    async def send(self, item: bytes) -> None:
        await anyio.lowlevel.checkpoint_if_cancelled()
        view = memoryview(item)
        try:
            written = self._write_some(view)
        except BlockingIOError:
            await anyio.wait_writable(self._fd)
            written = 0
        if written < len(view):
            with anyio.CancelScope(shield=True):
                await self._write_rest(view[written:])

    def _write_some(self, view: memoryview) -> int:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            return os.write(self._fd, view)
        except BlockingIOError:
            raise
        except OSError as exc:  # EPIPE and friends: the reader is gone
            raise anyio.BrokenResourceError from exc

    async def _write_rest(self, view: memoryview) -> None:
        while view:
            try:
                n = self._write_some(view)
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            view = view[n:]

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            anyio.notify_closing(self._fd)
            os.close(self._fd)
        await anyio.lowlevel.checkpoint()


def pipe_pair() -> tuple[FdReceiveStream, FdSendStream]:
    """A connected OS pipe as portable ``(receive, send)`` fd streams."""
    read_fd, write_fd = os.pipe()
    return FdReceiveStream(read_fd), FdSendStream(write_fd)


def on_asyncio() -> bool:
    """Whether the running event loop is asyncio's (as opposed to trio)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def wrap_pipe_fds(
    read_fd: int, write_fd: int
) -> tuple[anyio.abc.ByteReceiveStream, anyio.abc.ByteSendStream]:
    """Streams over two pipe file descriptors (which they own), the fastest kind per backend.

    On asyncio these are asyncio's pipe transports; elsewhere (trio) the portable fd streams.
    """
    receive: anyio.abc.ByteReceiveStream
    send: anyio.abc.ByteSendStream
    if on_asyncio() and _is_pipe(read_fd):
        from ._asyncio_pipes import open_asyncio_pipe_streams

        receive_, _ = await open_asyncio_pipe_streams(read_fd, None)
        assert receive_ is not None
        receive = receive_
    else:
        receive = FdReceiveStream(read_fd)
    if on_asyncio() and _is_pipe(write_fd):
        from ._asyncio_pipes import open_asyncio_pipe_streams

        _, send_ = await open_asyncio_pipe_streams(None, write_fd)
        assert send_ is not None
        send = send_
    else:
        send = FdSendStream(write_fd)
    return receive, send


def _is_pipe(fd: int) -> bool:
    """asyncio's pipe transports take pipes, sockets and character devices only; a regular
    file or /dev/null (stdin < /dev/null, stdout > file) gets the portable fd stream."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def open_pipe_pair() -> tuple[anyio.abc.ByteReceiveStream, anyio.abc.ByteSendStream]:
    """A connected OS pipe as ``(receive, send)`` streams, the fastest kind per backend."""
    read_fd, write_fd = os.pipe()
    return await wrap_pipe_fds(read_fd, write_fd)


@asynccontextmanager
async def open_stdio_streams() -> AsyncGenerator[
    tuple[anyio.abc.ByteReceiveStream, anyio.abc.ByteSendStream], None
]:
    """This process's stdin and stdout as streams, for an agent speaking over stdio.

    The protocol gets private duplicates of file descriptors 0 and 1; meanwhile fd 1 points at
    stderr and fd 0 at ``/dev/null``, so a stray ``print()`` cannot corrupt the protocol stream.
    Both are restored on exit.
    """
    sys.stdout.flush()
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    saved_in = os.dup(0)
    saved_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    receive, send = await wrap_pipe_fds(proto_in, proto_out)
    try:
        yield receive, send
    finally:
        with anyio.CancelScope(shield=True):
            await receive.aclose()
            await send.aclose()
        sys.stdout.flush()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)
