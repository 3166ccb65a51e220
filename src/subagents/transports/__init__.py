"""Byte streams and child processes that carry the protocols."""

from ._asyncio_pipes import AsyncioPipeReceiveStream as AsyncioPipeReceiveStream
from ._asyncio_pipes import AsyncioPipeSendStream as AsyncioPipeSendStream
from ._fd import FdReceiveStream as FdReceiveStream
from ._fd import FdSendStream as FdSendStream
from ._fd import open_pipe_pair as open_pipe_pair
from ._fd import open_stdio_streams as open_stdio_streams
from ._fd import pipe_pair as pipe_pair
from ._fd import wrap_pipe_fds as wrap_pipe_fds
from .process import BASE_ENV_VARS as BASE_ENV_VARS
from .process import AgentProcess as AgentProcess
from .process import ProcessExit as ProcessExit
from .process import ProcessStartError as ProcessStartError
from .process import build_child_env as build_child_env
from .process import open_agent_process as open_agent_process
from .process import terminate_process_group as terminate_process_group

__all__ = (
    "BASE_ENV_VARS",
    "AgentProcess",
    "AsyncioPipeReceiveStream",
    "AsyncioPipeSendStream",
    "FdReceiveStream",
    "FdSendStream",
    "ProcessExit",
    "ProcessStartError",
    "build_child_env",
    "open_agent_process",
    "open_pipe_pair",
    "open_stdio_streams",
    "pipe_pair",
    "terminate_process_group",
    "wrap_pipe_fds",
)
