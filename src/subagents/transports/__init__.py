"""Byte streams and child processes that carry the protocols."""

from ._asyncio_pipes import AsyncioPipeReceiveStream as AsyncioPipeReceiveStream
from ._asyncio_pipes import AsyncioPipeSendStream as AsyncioPipeSendStream
from ._fd import FdReceiveStream as FdReceiveStream
from ._fd import FdSendStream as FdSendStream
from ._fd import open_pipe_pair as open_pipe_pair
from ._fd import open_stdio_streams as open_stdio_streams
from ._fd import pipe_pair as pipe_pair
from ._fd import wrap_pipe_fds as wrap_pipe_fds

__all__ = (
    "AsyncioPipeReceiveStream",
    "AsyncioPipeSendStream",
    "FdReceiveStream",
    "FdSendStream",
    "open_pipe_pair",
    "open_stdio_streams",
    "pipe_pair",
    "wrap_pipe_fds",
)
