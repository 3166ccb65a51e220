"""Byte streams, child processes, and the ACP endpoints that run over them.

- :func:`open_agent_process`: the one way to run an agent command (own process group,
  explicit environment, stderr tail, bounded shutdown ladder);
- :func:`connect_agent`: the ACP client endpoint (drive any ACP agent);
- :class:`ClientSandbox`: the client's opt-in ``fs/*`` and ``terminal/*``, confined to a root;
- pipe streams: asyncio's pipe transports on asyncio, portable fd streams elsewhere.
"""

from ._asyncio_pipes import AsyncioPipeReceiveStream as AsyncioPipeReceiveStream
from ._asyncio_pipes import AsyncioPipeSendStream as AsyncioPipeSendStream
from ._fd import FdReceiveStream as FdReceiveStream
from ._fd import FdSendStream as FdSendStream
from ._fd import open_pipe_pair as open_pipe_pair
from ._fd import open_stdio_streams as open_stdio_streams
from ._fd import pipe_pair as pipe_pair
from ._fd import wrap_pipe_fds as wrap_pipe_fds
from .acp_client import AgentConnection as AgentConnection
from .acp_client import AgentStartupError as AgentStartupError
from .acp_client import CapabilityError as CapabilityError
from .acp_client import ClientExtension as ClientExtension
from .acp_client import ClientSession as ClientSession
from .acp_client import PermissionPolicy as PermissionPolicy
from .acp_client import PromptTurn as PromptTurn
from .acp_client import ProtocolVersionError as ProtocolVersionError
from .acp_client import allow_policy as allow_policy
from .acp_client import connect_agent as connect_agent
from .acp_client import connect_agent_over as connect_agent_over
from .acp_client import reject_policy as reject_policy
from .acp_sandbox import ClientSandbox as ClientSandbox
from .process import BASE_ENV_VARS as BASE_ENV_VARS
from .process import AgentProcess as AgentProcess
from .process import ProcessExit as ProcessExit
from .process import ProcessStartError as ProcessStartError
from .process import build_child_env as build_child_env
from .process import open_agent_process as open_agent_process
from .process import terminate_process_group as terminate_process_group

__all__ = (
    "BASE_ENV_VARS",
    "AgentConnection",
    "AgentProcess",
    "AgentStartupError",
    "AsyncioPipeReceiveStream",
    "AsyncioPipeSendStream",
    "CapabilityError",
    "ClientExtension",
    "ClientSandbox",
    "ClientSession",
    "FdReceiveStream",
    "FdSendStream",
    "PermissionPolicy",
    "ProcessExit",
    "ProcessStartError",
    "PromptTurn",
    "ProtocolVersionError",
    "allow_policy",
    "build_child_env",
    "connect_agent",
    "connect_agent_over",
    "open_agent_process",
    "open_pipe_pair",
    "open_stdio_streams",
    "pipe_pair",
    "reject_policy",
    "terminate_process_group",
    "wrap_pipe_fds",
)
