"""ACP over Streamable HTTP and WebSocket (the ``remote`` extra): agents on other machines.

Server side: :func:`serve_acp_http` serves an agent backend (:func:`agent_command`,
:func:`in_process_agent`, :func:`runtime_agent`) at ``/acp``; ``subagents serve --listen``
is its command line.

Client side: a URL is an agent. :func:`connect_agent_url` (which
:func:`subagents.transports.connect_agent` dispatches a URL to) connects over Streamable HTTP
or WebSocket; a refused or unreachable server is a :class:`RemoteStartupError`.
:func:`run_bridge` relays a stdio ACP client to a URL (``subagents bridge URL``).
"""

from ._backends import AgentBackend as AgentBackend
from ._backends import AgentLink as AgentLink
from ._backends import CommandBackend as CommandBackend
from ._backends import InProcessBackend as InProcessBackend
from ._backends import agent_command as agent_command
from ._backends import in_process_agent as in_process_agent
from ._backends import runtime_agent as runtime_agent
from .bridge import BridgeError as BridgeError
from .bridge import run_bridge as run_bridge
from .client import RemoteStartupError as RemoteStartupError
from .client import connect_agent_url as connect_agent_url
from .server import REMOTE_EXTRA_HINT as REMOTE_EXTRA_HINT
from .server import ClientMcpPolicy as ClientMcpPolicy
from .server import Principals as Principals
from .server import RemoteServer as RemoteServer
from .server import RemoteServerConfigError as RemoteServerConfigError
from .server import ServerLimits as ServerLimits
from .server import check_listen_address as check_listen_address
from .server import serve_acp_http as serve_acp_http

__all__ = (
    "REMOTE_EXTRA_HINT",
    "AgentBackend",
    "AgentLink",
    "BridgeError",
    "ClientMcpPolicy",
    "CommandBackend",
    "InProcessBackend",
    "Principals",
    "RemoteServer",
    "RemoteServerConfigError",
    "RemoteStartupError",
    "ServerLimits",
    "agent_command",
    "check_listen_address",
    "connect_agent_url",
    "in_process_agent",
    "run_bridge",
    "runtime_agent",
    "serve_acp_http",
)
