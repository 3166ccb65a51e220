"""The ACP agent endpoint: write an agent as a class, serve it over stdio with one call.

Subclass :class:`Agent` and override the methods the agent supports; only those are routed.
A method that is not overridden is answered ``-32601 Method not found``, never with a silent
success, and the default :meth:`Agent.capabilities` advertises exactly what is overridden::

    import uuid

    from subagents.protocol import acp
    from subagents.transports.acp_agent import Agent, AgentTurn, ClientConnection, run_agent


    class Echo(Agent):
        agent_name = "echo"

        async def new_session(
            self, params: acp.NewSessionRequest, conn: ClientConnection
        ) -> acp.NewSessionResponse:
            return acp.NewSessionResponse(session_id=uuid.uuid4().hex)

        async def prompt(self, params: acp.PromptRequest, turn: AgentTurn) -> acp.StopReason:
            for block in params.prompt:
                await turn.send_update(acp.AgentMessageChunkSessionUpdate(content=block))
            return "end_turn"


    run_agent(Echo())

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
import logging
import math
import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, ClassVar, Final, cast, final

import anyio
import anyio.abc
import anyio.lowlevel
from pydantic_core import from_json

from ..protocol import acp
from ..protocol.framing import DEFAULT_MAX_MESSAGE_BYTES
from ..protocol.jsonrpc import ErrorCode, JsonValue, Notification, encode_message
from ..rpc import Peer, Router, RPCError, open_peer
from ._fd import open_stdio_streams

if TYPE_CHECKING:
    from ..protocol.acp import (
        AgentCapabilities,
        AuthenticateRequest,
        AuthenticateResponse,
        CancelNotification,
        ClientCapabilities,
        CloseSessionRequest,
        CloseSessionResponse,
        CreateElicitationRequest,
        CreateElicitationResponse,
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
        PermissionOption,
        PromptRequest,
        PromptResponse,
        RequestPermissionResponse,
        ResumeSessionRequest,
        ResumeSessionResponse,
        SessionUpdate,
        SetSessionConfigOptionRequest,
        SetSessionConfigOptionResponse,
        SetSessionModeRequest,
        SetSessionModeResponse,
        StopReason,
        TerminalOutputResponse,
        ToolCallUpdate,
        WaitForTerminalExitResponse,
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

logger = logging.getLogger("subagents.acp.agent")

AGENT_PROTOCOL_VERSIONS: Final[tuple[int, ...]] = (1,)
"""The ACP protocol versions this endpoint speaks (it implements v1 semantics only)."""

_UPDATE: Final = "session/update"
_CLEANUP_WRITE_TIMEOUT: Final = 5.0
"""How long an update sent by a cancelled turn (cleanup) may wait for the pipe."""


def negotiate_protocol_version(
    requested: int, supported: Sequence[int] = AGENT_PROTOCOL_VERSIONS
) -> int:
    """The version to answer ``initialize`` with (initialization.mdx, version negotiation).

    "If the Agent supports the requested version, it MUST respond with the same version.
    Otherwise, the Agent MUST respond with the latest version it supports."
    """
    if requested in supported:
        return requested
    return max(supported)


class ClientCapabilityError(RuntimeError):
    """The client did not advertise the capability a call needs; nothing was sent.

    The spec forbids calling a client method the client has not offered (for example
    file-system.mdx: "If ``readTextFile`` ... is ``false`` or not present, the Agent MUST NOT
    attempt to call the corresponding filesystem method").
    """

    def __init__(self, method: str, capability: str) -> None:
        super().__init__(
            f"the client did not advertise {capability}, so {method!r} may not be called"
        )
        self.method = method
        self.capability = capability


# ---------------------------------------------------------------------------------- the agent


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


# ------------------------------------------------------------------------ calls to the client


@final
class TerminalHandle:
    """A terminal created on the client (``terminal/*``); release it when done.

    The spec says the agent MUST call ``terminal/release`` when it no longer needs the
    terminal; :meth:`ClientConnection.open_terminal` does that on exit.
    """

    def __init__(self, conn: ClientConnection, session_id: str, terminal_id: str) -> None:
        self.connection = conn
        self.session_id = session_id
        self.terminal_id = terminal_id
        self.released = False

    def _params(self) -> dict[str, JsonValue]:
        return {"sessionId": self.session_id, "terminalId": self.terminal_id}

    async def output(self) -> TerminalOutputResponse:
        """The output so far (``terminal/output``)."""
        result = await self.connection.request("terminal/output", self._params())
        return acp.from_wire(acp.TerminalOutputResponse, result)

    async def wait_for_exit(self) -> WaitForTerminalExitResponse:
        """Wait until the command exits (``terminal/wait_for_exit``)."""
        result = await self.connection.request("terminal/wait_for_exit", self._params())
        return acp.from_wire(acp.WaitForTerminalExitResponse, result)

    async def kill(self) -> None:
        """Kill the command; the terminal stays valid (``terminal/kill``)."""
        await self.connection.request("terminal/kill", self._params())

    async def release(self) -> None:
        """Release the terminal (``terminal/release``); idempotent."""
        if not self.released:
            self.released = True
            await self.connection.request("terminal/release", self._params())


def _absolute(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    if not os.path.isabs(text):
        raise ValueError(f"ACP paths must be absolute: {text!r}")
    return text


@final
class ClientConnection:
    """The agent's side of one connection: what the client advertised, and calls to it.

    Made by the endpoint and passed to every :class:`Agent` method. Calls that need a client
    capability raise :class:`ClientCapabilityError` (without sending anything) when the client
    did not advertise it; errors the client answers with raise
    :class:`~subagents.rpc.RPCError`; a closed connection raises
    :class:`~subagents.rpc.ConnectionClosedError`.
    """

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.protocol_version: int = max(AGENT_PROTOCOL_VERSIONS)
        """The negotiated protocol version (set by ``initialize``)."""
        self.client_capabilities: ClientCapabilities | None = None
        """What the client advertised in ``initialize`` (``None`` before it)."""
        self.client_info: Implementation | None = None
        """``clientInfo`` from ``initialize``, when the client sent it."""
        self.initialized = False
        self._peer: Peer | None = None
        self._peer_ready = anyio.Event()
        self._send: anyio.abc.ByteSendStream | None = None
        self._routes_open = False
        # Turns in progress, per session.
        self._turns: dict[str, list[AgentTurn]] = {}
        # Handlers in progress (for the drain at end of input).
        self._active = 0
        self._idle: anyio.Event | None = None
        self._closing = False
        # Ordering of session/new responses before the new session's updates.
        self._creating = 0
        self._published: set[str] = set()
        self._held: dict[str, list[JsonValue]] = {}
        # Tasks whose session/new answer is being written: the new session's id (None when the
        # request failed), whose held updates follow the answer.
        self._release_after_answer: dict[int, str | None] = {}
        self._router_ref: Router | None = None

    # ------------------------------------------------------------------ client capabilities

    def _caps(self) -> ClientCapabilities:
        caps = self.client_capabilities
        return caps if caps is not None else acp.ClientCapabilities()

    @property
    def can_read_text_file(self) -> bool:
        """Whether the client offers ``fs/read_text_file``."""
        return self._caps().fs.read_text_file

    @property
    def can_write_text_file(self) -> bool:
        """Whether the client offers ``fs/write_text_file``."""
        return self._caps().fs.write_text_file

    @property
    def can_use_terminal(self) -> bool:
        """Whether the client offers the ``terminal/*`` methods."""
        return self._caps().terminal

    # ------------------------------------------------------------------ sending

    async def _get_peer(self) -> Peer:
        peer = self._peer
        if peer is None:
            await self._peer_ready.wait()
            peer = self._peer
            assert peer is not None
        return peer

    async def request(self, method: str, params: JsonValue = None) -> JsonValue:
        """Send any request to the client (for ``_`` extension methods) and return its result."""
        peer = await self._get_peer()
        return await peer.request(method, params)

    async def notify(self, method: str, params: JsonValue = None) -> None:
        """Send any notification to the client (for ``_`` extension methods)."""
        peer = await self._get_peer()
        await peer.notify(method, params)

    async def send_update(self, session_id: str, update: SessionUpdate) -> None:
        """Send a ``session/update`` notification.

        Updates for a session whose ``session/new`` response has not been written yet are held
        and written right after it.
        """
        params = acp.to_wire(acp.SessionNotification(session_id=session_id, update=update))
        if session_id not in self._published and (self._creating > 0 or session_id in self._held):
            self._held.setdefault(session_id, []).append(params)
            return
        peer = await self._get_peer()
        await peer.notify(_UPDATE, params)

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: Sequence[PermissionOption],
    ) -> RequestPermissionResponse:
        """Ask the user for permission (``session/request_permission``; baseline, no gate)."""
        params = acp.RequestPermissionRequest(
            session_id=session_id, tool_call=tool_call, options=list(options)
        )
        result = await self.request("session/request_permission", acp.to_wire(params))
        return acp.from_wire(acp.RequestPermissionResponse, result)

    async def read_text_file(
        self,
        session_id: str,
        path: str | os.PathLike[str],
        *,
        line: int | None = None,
        limit: int | None = None,
    ) -> str:
        """Read a text file through the client (``fs/read_text_file``; ``line`` is 1-based)."""
        if not self.can_read_text_file:
            raise ClientCapabilityError("fs/read_text_file", "fs.readTextFile")
        params: dict[str, JsonValue] = {"sessionId": session_id, "path": _absolute(path)}
        if line is not None:
            params["line"] = line
        if limit is not None:
            params["limit"] = limit
        result = await self.request("fs/read_text_file", params)
        return acp.from_wire(acp.ReadTextFileResponse, result).content

    async def write_text_file(
        self, session_id: str, path: str | os.PathLike[str], content: str
    ) -> None:
        """Write a text file through the client (``fs/write_text_file``)."""
        if not self.can_write_text_file:
            raise ClientCapabilityError("fs/write_text_file", "fs.writeTextFile")
        params: dict[str, JsonValue] = {
            "sessionId": session_id,
            "path": _absolute(path),
            "content": content,
        }
        await self.request("fs/write_text_file", params)

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        output_byte_limit: int | None = None,
    ) -> TerminalHandle:
        """Start a command in a client terminal (``terminal/create``); release it when done."""
        if not self.can_use_terminal:
            raise ClientCapabilityError("terminal/create", "terminal")
        params: dict[str, JsonValue] = {"sessionId": session_id, "command": command}
        if args:
            params["args"] = list(args)
        if env:
            params["env"] = [{"name": k, "value": v} for k, v in env.items()]
        if cwd is not None:
            params["cwd"] = _absolute(cwd)
        if output_byte_limit is not None:
            params["outputByteLimit"] = output_byte_limit
        result = await self.request("terminal/create", params)
        terminal_id = acp.from_wire(acp.CreateTerminalResponse, result).terminal_id
        return TerminalHandle(self, session_id, terminal_id)

    @asynccontextmanager
    async def open_terminal(
        self,
        session_id: str,
        command: str,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        output_byte_limit: int | None = None,
    ) -> AsyncGenerator[TerminalHandle, None]:
        """:meth:`create_terminal`, released on exit (shielded, bounded), even when cancelled."""
        terminal = await self.create_terminal(
            session_id,
            command,
            args=args,
            env=env,
            cwd=cwd,
            output_byte_limit=output_byte_limit,
        )
        try:
            yield terminal
        finally:
            with anyio.move_on_after(_CLEANUP_WRITE_TIMEOUT, shield=True):
                try:
                    await terminal.release()
                except Exception:
                    logger.warning("terminal/release failed", exc_info=True)

    async def create_elicitation(
        self, params: CreateElicitationRequest
    ) -> CreateElicitationResponse:
        """Ask the user for input (``elicitation/create``), in a mode the client advertised."""
        elicitation = self._caps().elicitation
        mode = getattr(params, "mode", None)
        if elicitation is None:
            raise ClientCapabilityError("elicitation/create", "elicitation")
        if mode == "form" and elicitation.form is None:
            raise ClientCapabilityError("elicitation/create", "elicitation.form")
        if mode == "url" and elicitation.url is None:
            raise ClientCapabilityError("elicitation/create", "elicitation.url")
        result = await self.request("elicitation/create", acp.to_wire(params))
        return cast(
            "CreateElicitationResponse", acp.from_wire(acp.CreateElicitationResponse, result)
        )

    # ------------------------------------------------------------------ ordering of updates

    async def _after_send(self, task_id: int) -> None:
        """Called by the send stream after each write of a task that answered session/new.

        The peer holds its write lock (if the stream needs one) while this runs, so the held
        updates are written straight to the stream, right after the answer.
        """
        if task_id not in self._release_after_answer:
            return
        session_id = self._release_after_answer.pop(task_id)
        if session_id is not None:
            await self._write_held(session_id)
            self._published.add(session_id)
        self._creating -= 1
        if self._creating == 0:
            # Updates for ids no session/new returned: nothing left to wait for.
            while self._held:
                await self._write_held(next(iter(self._held)))

    async def _write_held(self, session_id: str) -> None:
        send = self._send
        assert send is not None
        queue = self._held.get(session_id)
        while queue:
            data = b"".join(encode_message(Notification(_UPDATE, p)) for p in queue)
            queue.clear()  # updates sent meanwhile join the queue, and the next write
            try:
                await send.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                logger.debug("held updates for %s dropped: connection closed", session_id)
        self._held.pop(session_id, None)

    # ------------------------------------------------------------------ handlers

    def _enter(self) -> None:
        self._active += 1

    def _leave(self) -> None:
        self._active -= 1
        if self._active == 0 and self._idle is not None:
            self._idle.set()

    def _router(self) -> Router:
        router = Router()
        router.on_request("initialize", self._initialize, params=acp.InitializeRequest)
        router.on_notification("session/cancel", self._cancel, params=acp.CancelNotification)
        router.on_any_request(self._other_request)
        router.on_any_notification(self._other_notification)
        self._router_ref = router
        return router

    def _open_routes(self) -> None:
        """Route the methods the agent overrides (once ``initialize`` succeeded)."""
        if self._routes_open:
            return
        self._routes_open = True
        agent = self.agent
        table = acp.method_table(1)
        router = self._router_ref
        assert router is not None
        special: dict[str, Callable[[Any], Awaitable[object]]] = {
            "session/new": self._new_session,
            "session/load": self._load_or_resume("load_session"),
            "session/resume": self._load_or_resume("resume_session"),
            "session/close": self._close_session,
            "session/prompt": self._prompt,
        }
        for method, attr in _AGENT_METHODS:
            if not agent.implements(attr):
                continue
            handler = special.get(method) or self._plain(attr)
            router.on_request(method, handler, params=cast(Any, table[method].params_type))

    def _plain(self, attr: str) -> Callable[[Any], Awaitable[object]]:
        method: Callable[[Any, ClientConnection], Awaitable[object]] = getattr(self.agent, attr)

        async def handle(params: Any) -> object:
            self._enter()
            try:
                return await method(params, self)
            finally:
                self._leave()

        return handle

    async def _initialize(self, params: InitializeRequest) -> InitializeResponse:
        self._enter()
        try:
            version = negotiate_protocol_version(params.protocol_version)
            self.protocol_version = version
            self.client_capabilities = params.client_capabilities
            self.client_info = params.client_info
            response = await self.agent.initialize(params, self)
            response.protocol_version = version
            self._open_routes()
            self.initialized = True
            return response
        finally:
            self._leave()

    async def _other_request(self, method: str, params: JsonValue) -> object:
        if not self.initialized:
            raise RPCError(
                ErrorCode.INVALID_REQUEST,
                f"Invalid request: the ACP connection must be initialized before {method!r}",
                {"method": method},
            )
        if method.startswith("_") and self.agent.implements("ext_request"):
            self._enter()
            try:
                return await self.agent.ext_request(method, params, self)
            finally:
                self._leave()
        raise RPCError.method_not_found(method)

    async def _other_notification(self, method: str, params: JsonValue) -> None:
        if (
            self.initialized
            and method.startswith("_")
            and self.agent.implements("ext_notification")
        ):
            await self.agent.ext_notification(method, params, self)
        else:
            logger.debug("notification %r ignored", method)

    async def _new_session(self, params: NewSessionRequest) -> NewSessionResponse:
        self._enter()
        self._creating += 1
        session_id: str | None = None
        try:
            response = await self.agent.new_session(params, self)
            session_id = response.session_id
            return response
        finally:
            # The peer writes the answer (result or error) from this task next: the updates
            # held meanwhile are written right after it (see _OrderedSendStream).
            self._release_after_answer[anyio.get_current_task().id] = session_id
            self._leave()

    def _load_or_resume(self, attr: str) -> Callable[[Any], Awaitable[object]]:
        method: Callable[[Any, ClientConnection], Awaitable[object]] = getattr(self.agent, attr)

        async def handle(params: LoadSessionRequest | ResumeSessionRequest) -> object:
            # The client knows this session: its updates (a load's replay) go out at once.
            self._published.add(params.session_id)
            self._enter()
            try:
                return await method(params, self)
            finally:
                self._leave()

        return handle

    async def _close_session(self, params: CloseSessionRequest) -> CloseSessionResponse:
        self._enter()
        try:
            # session-close: "The Agent MUST cancel any ongoing work for that session as if
            # session/cancel had been called".
            turns = list(self._turns.get(params.session_id, ()))
            for turn in turns:
                turn._request_cancel()  # pyright: ignore[reportPrivateUsage]
            for turn in turns:
                await turn._done.wait()  # pyright: ignore[reportPrivateUsage]
            return await self.agent.close_session(params, self)
        finally:
            self._leave()

    async def _cancel(self, params: CancelNotification) -> None:
        if not self.initialized:
            logger.debug("session/cancel before initialize ignored")
            return
        # A prompt read just before this notification is handed to a worker that may not have
        # started yet; one checkpoint lets every runnable task run first, so its turn is
        # registered before we look (a cancel racing the prompt's start is not lost).
        await anyio.lowlevel.checkpoint()
        turns = list(self._turns.get(params.session_id, ()))
        for turn in turns:
            turn._mark_cancelled()  # pyright: ignore[reportPrivateUsage]
        if self.agent.implements("cancel"):
            try:
                await self.agent.cancel(params, self)
            except Exception:
                logger.exception("the agent's cancel hook failed")
        for turn in turns:
            turn._request_cancel()  # pyright: ignore[reportPrivateUsage]

    async def _prompt(self, params: PromptRequest) -> PromptResponse:
        session_id = params.session_id
        self._published.add(session_id)  # the client knows it
        self._enter()
        turn = AgentTurn(self, session_id)
        turns = self._turns.setdefault(session_id, [])
        turns.append(turn)
        if self._closing:
            turn._request_cancel()  # pyright: ignore[reportPrivateUsage]
        try:
            return await self._run_turn(turn, params)
        finally:
            turns.remove(turn)
            if not turns and self._turns.get(session_id) is turns:
                del self._turns[session_id]
            turn._done.set()  # pyright: ignore[reportPrivateUsage]
            self._leave()

    async def _run_turn(self, turn: AgentTurn, params: PromptRequest) -> PromptResponse:
        result: PromptResponse | StopReason | None = None
        with turn._scope:  # pyright: ignore[reportPrivateUsage]
            try:
                result = await self.agent.prompt(params, turn)
            except Exception as exc:
                if not turn.cancelled and self._peer is not None and self._peer.closed:
                    # The client went away (end of input) while the agent was calling it.
                    turn._mark_cancelled()  # pyright: ignore[reportPrivateUsage]
                if not turn.cancelled:
                    if anyio.current_effective_deadline() == -math.inf:
                        # The request itself was cancelled ($/cancel_request or shutdown) and
                        # the agent turned that into another exception.
                        raise RPCError.request_cancelled() from exc
                    raise
                logger.debug("cancelled turn of %s ended with %r", turn.session_id, exc)
        if turn.cancelled:
            # prompt-turn.mdx: the Agent MUST respond with the cancelled stop reason, "even if
            # the cancellation causes exceptions in underlying operations".
            if isinstance(result, acp.PromptResponse) and result.stop_reason == "cancelled":
                return result
            return acp.PromptResponse(stop_reason="cancelled")
        if result is None:
            raise TypeError("Agent.prompt returned None; return a stop reason")
        if isinstance(result, str):
            return acp.PromptResponse(stop_reason=result)
        return result

    async def _drain(self, grace: float) -> None:
        """At end of input: cancel every turn, give in-flight handlers ``grace`` seconds."""
        self._closing = True
        for turns in list(self._turns.values()):
            for turn in list(turns):
                turn._request_cancel()  # pyright: ignore[reportPrivateUsage]
        if self._active:
            self._idle = idle = anyio.Event()
            with anyio.move_on_after(grace):
                await idle.wait()


_AGENT_METHODS: Final = (
    ("authenticate", "authenticate"),
    ("logout", "logout"),
    ("session/new", "new_session"),
    ("session/load", "load_session"),
    ("session/resume", "resume_session"),
    ("session/list", "list_sessions"),
    ("session/close", "close_session"),
    ("session/delete", "delete_session"),
    ("session/set_mode", "set_session_mode"),
    ("session/set_config_option", "set_session_config_option"),
    ("session/prompt", "prompt"),
)
"""Wire method → :class:`Agent` method, for the requests an agent handles (v1 stable)."""


@final
class AgentTurn:
    """One prompt turn of one session: its updates, its calls to the client, its cancellation.

    The client-call methods are those of :class:`ClientConnection`, bound to this session.
    """

    def __init__(self, conn: ClientConnection, session_id: str) -> None:
        self.connection = conn
        self.session_id = session_id
        self._scope = anyio.CancelScope()
        self._cancel_requested = False
        self._cancelled_event = anyio.Event()
        self._done = anyio.Event()

    @property
    def cancelled(self) -> bool:
        """Whether the client cancelled this turn (or the connection is closing)."""
        return self._cancel_requested

    async def wait_cancelled(self) -> None:
        """Wait until the turn is cancelled."""
        await self._cancelled_event.wait()

    def _mark_cancelled(self) -> None:
        self._cancel_requested = True
        self._cancelled_event.set()

    def _request_cancel(self) -> None:
        self._mark_cancelled()
        self._scope.cancel()

    async def send_update(self, update: SessionUpdate) -> None:
        """Send a ``session/update`` for this session.

        Works in clean-up code of a cancelled turn too: the write is shielded from the
        cancellation (bounded), so the update goes out before the turn's answer.
        """
        if self._cancel_requested:
            with anyio.move_on_after(_CLEANUP_WRITE_TIMEOUT, shield=True):
                await self.connection.send_update(self.session_id, update)
        else:
            await self.connection.send_update(self.session_id, update)

    async def request_permission(
        self, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]
    ) -> RequestPermissionResponse:
        """Ask the user for permission for ``tool_call`` (``session/request_permission``)."""
        return await self.connection.request_permission(self.session_id, tool_call, options)

    async def read_text_file(
        self, path: str | os.PathLike[str], *, line: int | None = None, limit: int | None = None
    ) -> str:
        """``fs/read_text_file`` (needs the client's ``fs.readTextFile``)."""
        return await self.connection.read_text_file(self.session_id, path, line=line, limit=limit)

    async def write_text_file(self, path: str | os.PathLike[str], content: str) -> None:
        """``fs/write_text_file`` (needs the client's ``fs.writeTextFile``)."""
        await self.connection.write_text_file(self.session_id, path, content)

    async def create_terminal(
        self,
        command: str,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        output_byte_limit: int | None = None,
    ) -> TerminalHandle:
        """``terminal/create`` (needs the client's ``terminal``); release the handle when done."""
        return await self.connection.create_terminal(
            self.session_id,
            command,
            args=args,
            env=env,
            cwd=cwd,
            output_byte_limit=output_byte_limit,
        )

    @asynccontextmanager
    async def open_terminal(
        self,
        command: str,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        output_byte_limit: int | None = None,
    ) -> AsyncGenerator[TerminalHandle, None]:
        """``async with turn.open_terminal(...) as terminal``: released on exit."""
        async with self.connection.open_terminal(
            self.session_id,
            command,
            args=args,
            env=env,
            cwd=cwd,
            output_byte_limit=output_byte_limit,
        ) as terminal:
            yield terminal


# ---------------------------------------------------------------------------------- serving


@final
class _OrderedSendStream(anyio.abc.ByteSendStream):
    """The peer's send stream: after a ``session/new`` answer, writes the updates it held."""

    def __init__(self, inner: anyio.abc.ByteSendStream, conn: ClientConnection) -> None:
        self._inner = inner
        self._conn = conn
        # The peer needs no write lock when the stream hands each item over whole.
        self.atomic_send = getattr(inner, "atomic_send", False) is True

    async def send(self, item: bytes) -> None:
        conn = self._conn
        task_id = anyio.get_current_task().id if conn._release_after_answer else None  # pyright: ignore[reportPrivateUsage]
        await self._inner.send(item)
        if task_id is not None:
            await conn._after_send(task_id)  # pyright: ignore[reportPrivateUsage]

    async def aclose(self) -> None:
        await self._inner.aclose()


async def serve_agent_over(
    receive: anyio.abc.ByteReceiveStream,
    send: anyio.abc.ByteSendStream,
    agent: Agent,
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    shutdown_grace: float = 2.0,
    name: str = "acp-agent",
) -> None:
    """Serve ``agent`` over a byte-stream pair until the client closes its end.

    Returns after the end of input: running turns are cancelled (and answered), requests in
    progress get ``shutdown_grace`` seconds, then the rest are answered ``-32800`` and ``send``
    is closed. The streams are the caller's, except that ``send`` is closed on return.
    """
    conn = ClientConnection(agent)
    ordered = _OrderedSendStream(send, conn)
    conn._send = send  # pyright: ignore[reportPrivateUsage]
    router = conn._router()  # pyright: ignore[reportPrivateUsage]
    async with open_peer(
        receive,
        ordered,
        router=router,
        max_message_bytes=max_message_bytes,
        cancel_grace=shutdown_grace,
        json_loads=from_json,
        name=name,
    ) as peer:
        conn._peer = peer  # pyright: ignore[reportPrivateUsage]
        conn._peer_ready.set()  # pyright: ignore[reportPrivateUsage]
        await peer.wait_closed()
        await conn._drain(shutdown_grace)  # pyright: ignore[reportPrivateUsage]


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
