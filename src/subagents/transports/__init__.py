"""Byte streams and child processes that carry the protocols."""

from ._fd import FdReceiveStream as FdReceiveStream
from ._fd import FdSendStream as FdSendStream
from ._fd import open_stdio_streams as open_stdio_streams
from ._fd import pipe_pair as pipe_pair

__all__ = ("FdReceiveStream", "FdSendStream", "open_stdio_streams", "pipe_pair")
