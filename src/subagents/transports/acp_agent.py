"""The ACP agent endpoint: write an agent as a class, serve it over stdio with one call.

Subclass :class:`Agent` and override the methods the agent supports; only those are routed.
A method that is not overridden is answered ``-32601 Method not found``, never with a silent
success, and the default :meth:`Agent.capabilities` advertises exactly what is overridden.
The smallest agent, whole (20 lines, an echo), is :mod:`subagents.examples.tiny_agent`: run it
with ``python -m subagents.examples.tiny_agent``, copy it to start your own.

What the endpoint guarantees, whatever the agent does:

* **Version negotiation.** ``initialize`` is answered with the requested protocol version when
  the endpoint speaks it, otherwise with the latest one it speaks; an unsupported version is
  never echoed.
* **Initialization first.** Every request before a successful ``initialize`` is refused with
  ``-32600``; notifications before it are ignored.
* **Typed params.** Params are validated into the generated models (``-32602`` with the
  validation errors otherwise); results are dumped as the wire expects.
* **Extensions.** ``_``-prefixed requests go to :meth:`Agent.ext_request` when it is
  overridden, otherwise ``-32601``; unknown notifications are ignored.
* **Cancellation.** ``session/cancel`` marks the session's running turns cancelled, calls
  :meth:`Agent.cancel` (when overridden), then cancels the turns' cancel scopes: whatever the
  agent is awaiting raises the backend's cancellation exception. The turn is answered
  ``stopReason: "cancelled"`` once the agent's code has returned or raised, after every update
  it sent, and also when the agent turned the cancellation into another exception, or
  returned another stop reason. A cancelled turn is never answered with a JSON-RPC error.
  ``session/close`` cancels the session's turns the same way before the agent closes it.
* **Ordering.** The ``session/new`` response is written before any update for the new
  session: updates sent while a ``session/new`` is being handled (from ``new_session`` itself,
  say an ``available_commands_update``) are held until its response is out.
* **Clean stdout.** :func:`serve_agent` speaks over private duplicates of stdin and stdout and
  points fd 1 at stderr meanwhile, so ``print()`` in agent code cannot corrupt the protocol.
* **Shutdown.** At end of input (the client closed stdin) running turns are cancelled and
  answered, in-flight requests get ``shutdown_grace`` seconds to finish (then ``-32800``), and
  :func:`serve_agent` returns, so the process exits.

Calls to the client (:class:`ClientConnection`, :class:`AgentTurn`) check the client's
advertised capabilities first and raise :class:`ClientCapabilityError` locally when a method
is not offered, so the agent never sends what the spec forbids.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, ClassVar

import anyio

from ..protocol import acp
from ..protocol.framing import DEFAULT_MAX_MESSAGE_BYTES
from ..protocol.jsonrpc import JsonValue
from ..rpc import RPCError
from ._acp_agent_calls import (
    AGENT_PROTOCOL_VERSIONS,
    AgentTurn,
    ClientCapabilityError,
    ClientConnection,
    TerminalHandle,
    negotiate_protocol_version,
)
from ._acp_agent_serving import serve_agent_over
from ._fd import open_stdio_streams

if TYPE_CHECKING:
    from ..protocol.acp import (
        AgentCapabilities,
        AuthenticateRequest,
        AuthenticateResponse,
        CancelNotification,
        CloseSessionRequest,
        CloseSessionResponse,
        DeleteSessionRequest,
        DeleteSessionResponse,
        Implementation,
        InitializeRequest,
        InitializeResponse,
        ListSessionsRequest,
        ListSessionsResponse,
        LoadSessionRequest,
        LoadSessionResponse,
        LogoutRequest,
        LogoutResponse,
        NewSessionRequest,
        NewSessionResponse,
        PromptRequest,
        PromptResponse,
        ResumeSessionRequest,
        ResumeSessionResponse,
        SetSessionConfigOptionRequest,
        SetSessionConfigOptionResponse,
        SetSessionModeRequest,
        SetSessionModeResponse,
        StopReason,
    )

__all__ = (
    "AGENT_PROTOCOL_VERSIONS",
    "Agent",
    "AgentTurn",
    "ClientCapabilityError",
    "ClientConnection",
    "TerminalHandle",
    "negotiate_protocol_version",
    "run_agent",
    "serve_agent",
    "serve_agent_over",
)


class Agent:
    """Base class of an ACP agent: override the methods the agent implements.

    Each method receives the validated params and the :class:`ClientConnection` (``prompt``
    receives an :class:`AgentTurn`, which carries the connection as ``turn.connection``) and
    returns the result model. Raise :class:`~subagents.rpc.RPCError` to answer with a
    specific error (``RPCError.resource_not_found({"sessionId": ...})`` for an unknown
    session); any other exception becomes ``-32603``.

    Only overridden methods are routed: the base implementations below are never called by
    the endpoint (they raise ``-32601`` if a subclass calls them through ``super()``), except
    :meth:`initialize` and :meth:`capabilities`, whose defaults answer honestly from what the
    subclass overrides. ``new_session`` and ``prompt`` are the baseline every agent must
    implement.
    """

    agent_name: ClassVar[str] = "subagents-agent"
    """``agentInfo.name`` in the default :meth:`initialize`."""
    agent_title: ClassVar[str | None] = None
    """``agentInfo.title`` in the default :meth:`initialize`."""
    agent_version: ClassVar[str] = "0.0.0"
    """``agentInfo.version`` in the default :meth:`initialize`."""

    def implements(self, method: str) -> bool:
        """Whether this agent overrides ``method`` (a method name of this class)."""
        return getattr(type(self), method, None) is not getattr(Agent, method, None)

    def capabilities(self, params: InitializeRequest) -> AgentCapabilities:
        """The capabilities to advertise; by default exactly what the subclass overrides.

        ``loadSession`` when :meth:`load_session` is overridden; ``sessionCapabilities``
        ``list`` / ``resume`` / ``close`` / ``delete`` for the matching methods; ``auth.logout``
        for :meth:`logout`. Prompt capabilities stay at the baseline (text and resource links).
        Override to add prompt or MCP capabilities, or ``_meta``.
        """
        sessions: dict[str, JsonValue] = {}
        for attr, key in (
            ("list_sessions", "list"),
            ("resume_session", "resume"),
            ("close_session", "close"),
            ("delete_session", "delete"),
        ):
            if self.implements(attr):
                sessions[key] = {}
        wire: dict[str, JsonValue] = {"loadSession": self.implements("load_session")}
        if sessions:
            wire["sessionCapabilities"] = sessions
        if self.implements("logout"):
            wire["auth"] = {"logout": {}}
        return acp.from_wire(acp.AgentCapabilities, wire)

    def agent_info(self) -> Implementation:
        """``agentInfo``: from :attr:`agent_name`, :attr:`agent_title`, :attr:`agent_version`."""
        info = acp.Implementation(name=self.agent_name, version=self.agent_version)
        if self.agent_title is not None:
            info.title = self.agent_title
        return info

    async def initialize(
        self, params: InitializeRequest, conn: ClientConnection
    ) -> InitializeResponse:
        """Answer ``initialize``. The endpoint sets ``protocolVersion`` to the negotiated one.

        By default: :meth:`capabilities`, :meth:`agent_info` and no auth methods.
        ``conn.client_capabilities`` already holds what the client advertised.
        """
        return acp.InitializeResponse(
            protocol_version=conn.protocol_version,
            agent_capabilities=self.capabilities(params),
            agent_info=self.agent_info(),
            auth_methods=[],
        )

    async def authenticate(
        self, params: AuthenticateRequest, conn: ClientConnection
    ) -> AuthenticateResponse:
        raise RPCError.method_not_found("authenticate")

    async def logout(self, params: LogoutRequest, conn: ClientConnection) -> LogoutResponse:
        raise RPCError.method_not_found("logout")

    async def new_session(
        self, params: NewSessionRequest, conn: ClientConnection
    ) -> NewSessionResponse:
        raise RPCError.method_not_found("session/new")

    async def load_session(
        self, params: LoadSessionRequest, conn: ClientConnection
    ) -> LoadSessionResponse:
        """Replay the history with ``conn.send_update`` before returning (the spec asks so)."""
        raise RPCError.method_not_found("session/load")

    async def resume_session(
        self, params: ResumeSessionRequest, conn: ClientConnection
    ) -> ResumeSessionResponse:
        raise RPCError.method_not_found("session/resume")

    async def list_sessions(
        self, params: ListSessionsRequest, conn: ClientConnection
    ) -> ListSessionsResponse:
        raise RPCError.method_not_found("session/list")

    async def close_session(
        self, params: CloseSessionRequest, conn: ClientConnection
    ) -> CloseSessionResponse:
        """Called after the session's running turns were cancelled and answered."""
        raise RPCError.method_not_found("session/close")

    async def delete_session(
        self, params: DeleteSessionRequest, conn: ClientConnection
    ) -> DeleteSessionResponse:
        raise RPCError.method_not_found("session/delete")

    async def set_session_mode(
        self, params: SetSessionModeRequest, conn: ClientConnection
    ) -> SetSessionModeResponse:
        raise RPCError.method_not_found("session/set_mode")

    async def set_session_config_option(
        self, params: SetSessionConfigOptionRequest, conn: ClientConnection
    ) -> SetSessionConfigOptionResponse:
        raise RPCError.method_not_found("session/set_config_option")

    async def prompt(self, params: PromptRequest, turn: AgentTurn) -> PromptResponse | StopReason:
        """Run one prompt turn; return a stop reason (or a full response).

        Stream output with ``turn.send_update``. When the client cancels, whatever this
        coroutine awaits raises the cancellation exception; clean-up code may still send
        updates (``await turn.send_update(...)`` works in an ``except``/``finally`` block) and
        then re-raise. The turn is answered ``cancelled`` either way.
        """
        raise RPCError.method_not_found("session/prompt")

    async def cancel(self, params: CancelNotification, conn: ClientConnection) -> None:
        """A hook called on ``session/cancel`` before the session's turns are cancelled.

        Keep it short: notifications are handled one at a time. The endpoint cancels the
        turns whether or not this is overridden.
        """

    async def ext_request(self, method: str, params: JsonValue, conn: ClientConnection) -> object:
        """Answer an extension request (a method starting with ``_``).

        Raise ``RPCError.method_not_found(method)`` for the ones the agent does not know.
        """
        raise RPCError.method_not_found(method)

    async def ext_notification(
        self, method: str, params: JsonValue, conn: ClientConnection
    ) -> None:
        """Receive an extension notification (a method starting with ``_``)."""


async def serve_agent(
    agent: Agent,
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    shutdown_grace: float = 2.0,
) -> None:
    """Serve ``agent`` over this process's stdin and stdout until stdin ends.

    While it runs, fd 1 points at stderr, so ``print()`` output goes to stderr instead of
    corrupting the protocol.
    """
    async with open_stdio_streams() as (receive, send):
        await serve_agent_over(
            receive,
            send,
            agent,
            max_message_bytes=max_message_bytes,
            shutdown_grace=shutdown_grace,
        )


def run_agent(
    agent: Agent,
    *,
    backend: str = "asyncio",
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    shutdown_grace: float = 2.0,
) -> None:
    """Run ``agent`` over stdio in a new event loop (``anyio.run``); returns when stdin ends."""
    anyio.run(
        functools.partial(
            serve_agent,
            agent,
            max_message_bytes=max_message_bytes,
            shutdown_grace=shutdown_grace,
        ),
        backend=backend,
    )
