"""The ACP client endpoint: drive any ACP agent over stdio (or any byte-stream pair).

::

    async with connect_agent([sys.executable, "-m", "subagents.agents.reference"]) as agent:
        session = await agent.new_session(cwd="/tmp")
        async with session.prompt("stream 3") as turn:
            async for update in turn:          # typed SessionUpdate variants, in order
                ...
        print(turn.stop_reason)                # "end_turn", "cancelled", ...

What it takes care of:

- ``initialize`` sends protocol version 1 and refuses an agent that answers a version this
  client does not support (:class:`ProtocolVersionError`), within ``initialize_timeout``;
- every optional method is sent only when the agent advertised it; otherwise
  :class:`CapabilityError` is raised before anything is sent;
- ``session/update`` notifications reach the turn that is running, in order, without ever
  waiting for its reader (past ``max_events`` unread it fails with ``TurnOverflowError`` and
  is cancelled); a turn's result comes only after every update received before it;
- :meth:`ClientSession.cancel` sends ``session/cancel`` and answers every pending
  ``session/request_permission`` of that session with the ``cancelled`` outcome (a MUST of the
  spec that the official SDK leaves to its users);
- permission requests are answered by a policy (default :func:`reject_policy`: pick a reject
  option), never left unanswered; a policy that raises (or answers something that is not an
  outcome) is a deny, logged with its traceback: a reject option the agent offered, else
  ``cancelled`` (issue 19: the same for every transport);
- ``fs/*`` and ``terminal/*`` are off (advertised false) unless an opt-in sandbox is given;
- "void" results are accepted as ``null`` or ``{}``;
- when the agent process dies, pending calls fail at once with
  :class:`~subagents.rpc.ConnectionClosedError` naming the exit status and the stderr tail.
"""

from __future__ import annotations

import logging
import os
import sys
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, final

import anyio
import anyio.abc
import anyio.to_thread

from .. import __version__
from ..protocol import acp
from ..protocol.acp.methods import PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS
from ..protocol.errors import RemoteProtocolError
from ..protocol.framing import DEFAULT_MAX_MESSAGE_BYTES
from ..protocol.jsonrpc import JsonValue
from ..rpc import ConnectionClosedError, Peer, Router, RPCError, open_peer
from ._acp_handlers import ClientHandlers, PermissionPolicy, allow_policy, reject_policy
from ._acp_turn import PromptTurn, validation_error
from ._child_connection import ChildCommand, ChildDialect, open_child_connection
from ._turn_events import DEFAULT_MAX_EVENTS
from .process import AgentProcess

__all__ = (
    "AgentConnection",
    "AgentStartupError",
    "CapabilityError",
    "ClientExtension",
    "ClientSession",
    "PermissionPolicy",
    "PromptTurn",
    "ProtocolVersionError",
    "allow_policy",
    "connect_agent",
    "connect_agent_over",
    "reject_policy",
)

if TYPE_CHECKING:
    from ..protocol.acp._base import ACPModel

logger = logging.getLogger("subagents.acp.client")

ModelT = TypeVar("ModelT", bound="ACPModel")


class CapabilityError(Exception):
    """The agent did not advertise what this call needs; nothing was sent."""


class ProtocolVersionError(Exception):
    """The agent answered ``initialize`` with a protocol version this client does not support."""

    def __init__(self, version: object) -> None:
        supported = ", ".join(str(v) for v in SUPPORTED_PROTOCOL_VERSIONS)
        super().__init__(
            f"the agent answered protocol version {version!r}; this client supports {supported}"
        )
        self.version = version


class AgentStartupError(Exception):
    """The agent did not complete ``initialize``: it exited, timed out, or answered an error."""


class ClientExtension(Protocol):
    """Serves agent-to-client methods (``fs/*``, ``terminal/*``), e.g.
    :class:`~subagents.transports.ClientSandbox`. The connection enters it as an async
    context manager for its whole life, so it can own tasks and processes."""

    def capabilities(self) -> acp.ClientCapabilities:
        """What it offers, to advertise in ``initialize``."""
        ...

    def register(self, router: Router) -> None:
        """Install its handlers (only for what it offers)."""
        ...

    async def __aenter__(self) -> Any: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> bool | None: ...


def _void(tp: type[ModelT], result: JsonValue) -> ModelT:
    """Parse the result of a "void" method: ``null`` and ``{}`` are both accepted."""
    return acp.from_wire(tp, {} if result is None else result)


def _text_prompt(prompt: str | Sequence[acp.ContentBlock]) -> list[acp.ContentBlock]:
    if isinstance(prompt, str):
        return [acp.TextContentBlock(text=prompt)]
    return list(prompt)


@final
class ClientSession:
    """An ACP session on a connection (made by :meth:`AgentConnection.new_session` & co.)."""

    def __init__(
        self,
        connection: AgentConnection,
        session_id: str,
        modes: acp.SessionModeState | None,
        config_options: list[Any] | None,
    ) -> None:
        self.connection = connection
        self.session_id = session_id
        self.modes = modes
        """The session's modes, when the agent offers them (``session/set_mode`` needs them)."""
        self.config_options = config_options
        """The session's config options, when the agent offers them."""
        self.tool_calls: dict[str, acp.ToolCallSessionUpdate] = {}
        """The ``tool_call`` updates seen, by id (a permission request may name its tool call
        by id only: its title, kind and raw input are filled in from here)."""
        self.current_turn: PromptTurn | None = None
        self.idle_updates: deque[acp.SessionUpdate] = deque(maxlen=256)
        """Updates received while no turn ran (the last 256), e.g. available commands."""

    def prompt(
        self, prompt: str | Sequence[acp.ContentBlock], *, max_events: int = DEFAULT_MAX_EVENTS
    ) -> PromptTurn:
        """Start a turn when entered: ``async with session.prompt("hi") as turn: ...``; past
        ``max_events`` unread updates it fails (``TurnOverflowError``) and is cancelled."""
        return PromptTurn(self, _text_prompt(prompt), max_events)

    async def run(self, prompt: str | Sequence[acp.ContentBlock]) -> acp.PromptResponse:
        """Run one turn to its end, discarding updates; returns its result."""
        async with self.prompt(prompt) as turn:
            return await turn.result()

    async def cancel(self) -> None:
        """Cancel the running turn: send ``session/cancel`` and answer every pending
        permission request of the session with ``cancelled``. The turn then ends with the
        agent's answer (``stopReason: "cancelled"`` from a conforming agent)."""
        turn = self.current_turn
        if turn is not None:
            await turn.cancel()
        else:
            await self.connection.peer.notify(
                "session/cancel", acp.to_wire(acp.CancelNotification(session_id=self.session_id))
            )

    async def set_mode(self, mode_id: str) -> None:
        if self.modes is None:
            raise CapabilityError(f"session {self.session_id} has no modes (session/set_mode)")
        result = await self.connection.peer.request(
            "session/set_mode",
            acp.to_wire(acp.SetSessionModeRequest(session_id=self.session_id, mode_id=mode_id)),
        )
        _void(acp.SetSessionModeResponse, result)
        self.modes.current_mode_id = mode_id

    async def set_config_option(self, config_id: str, value: str | bool) -> list[Any]:
        """Set a config option; returns (and keeps) the agent's complete new set."""
        if not self.config_options:
            raise CapabilityError(
                f"session {self.session_id} has no config options (session/set_config_option)"
            )
        params: dict[str, JsonValue] = {
            "sessionId": self.session_id,
            "configId": config_id,
            "value": value,
        }
        if isinstance(value, bool):
            params["type"] = "boolean"
        result = await self.connection.peer.request("session/set_config_option", params)
        response = acp.from_wire(acp.SetSessionConfigOptionResponse, result)
        self.config_options = list(response.config_options)
        return self.config_options

    async def close(self) -> None:
        """``session/close`` (needs the agent's ``sessionCapabilities.close``)."""
        await self.connection.close_session(self.session_id)

    async def delete(self) -> None:
        """``session/delete`` (needs the agent's ``sessionCapabilities.delete``)."""
        await self.connection.delete_session(self.session_id)


@final
class AgentConnection:
    """An initialized connection to an agent (made by :func:`connect_agent`)."""

    def __init__(
        self,
        peer: Peer,
        task_group: anyio.abc.TaskGroup,
        init: acp.InitializeResponse,
        process: AgentProcess | None,
        cancel_timeout: float,
    ) -> None:
        self.peer = peer
        """The JSON-RPC peer, for extension methods (``_vendor/...``)."""
        self.task_group = task_group
        self.initialize_response = init
        self.process = process
        """The agent's process, when this connection started it."""
        self.cancel_timeout = cancel_timeout
        self.sessions: dict[str, ClientSession] = {}
        self.unclaimed: dict[str, deque[acp.SessionUpdate]] = {}
        """Updates for a session id not known yet, kept for the session that claims it: an
        agent may send one (``available_commands_update``) right after the ``session/new``
        answer, and it can be handled before the caller has seen the answer."""

    # -- what the agent said about itself

    @property
    def protocol_version(self) -> int:
        return self.initialize_response.protocol_version

    @property
    def agent_info(self) -> acp.Implementation | None:
        return self.initialize_response.agent_info

    @property
    def capabilities(self) -> acp.AgentCapabilities:
        return self.initialize_response.agent_capabilities

    @property
    def auth_methods(self) -> list[Any]:
        return list(self.initialize_response.auth_methods)

    # -- methods

    async def authenticate(self, method_id: str) -> None:
        """``authenticate`` with one of the agent's advertised ``authMethods``."""
        ids = [getattr(m, "id", None) for m in self.initialize_response.auth_methods]
        if method_id not in ids:
            raise CapabilityError(
                f"the agent advertised no auth method {method_id!r} (it offers {ids})"
            )
        result = await self.peer.request(
            "authenticate", acp.to_wire(acp.AuthenticateRequest(method_id=method_id))
        )
        _void(acp.AuthenticateResponse, result)

    async def logout(self) -> None:
        """``logout`` (needs ``agentCapabilities.auth.logout``)."""
        if self.capabilities.auth.logout is None:
            raise CapabilityError("the agent does not advertise logout (auth.logout)")
        _void(acp.LogoutResponse, await self.peer.request("logout", {}))

    async def new_session(
        self,
        cwd: str | os.PathLike[str] | None = None,
        *,
        mcp_servers: Sequence[Any] = (),
        additional_directories: Sequence[str] | None = None,
    ) -> ClientSession:
        """``session/new`` in ``cwd`` (absolute; default: the current directory)."""
        params = acp.NewSessionRequest(
            cwd=_absolute(cwd),
            mcp_servers=list(mcp_servers),
            additional_directories=None
            if additional_directories is None
            else list(additional_directories),
        )
        if additional_directories is None:
            params.__pydantic_fields_set__.discard("additional_directories")
        result = await self.peer.request("session/new", acp.to_wire(params))
        response = acp.from_wire(acp.NewSessionResponse, result)
        return self._add_session(response.session_id, response.modes, response.config_options)

    async def load_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str] | None = None,
        *,
        mcp_servers: Sequence[Any] = (),
    ) -> ClientSession:
        """``session/load`` (needs ``loadSession``); the history is replayed as updates
        before the answer, and lands in the session's ``idle_updates``."""
        if not self.capabilities.load_session:
            raise CapabilityError("the agent does not advertise loadSession")
        session = self._add_session(session_id, None, None)
        request = acp.LoadSessionRequest(
            session_id=session_id, cwd=_absolute(cwd), mcp_servers=list(mcp_servers)
        )
        result = await self.peer.request("session/load", acp.to_wire(request))
        response = _void(acp.LoadSessionResponse, result)
        session.modes = response.modes
        session.config_options = response.config_options
        return session

    async def resume_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str] | None = None,
        *,
        mcp_servers: Sequence[Any] = (),
    ) -> ClientSession:
        """``session/resume`` (needs ``sessionCapabilities.resume``); no replay."""
        if self.capabilities.session_capabilities.resume is None:
            raise CapabilityError("the agent does not advertise session resume")
        request = acp.ResumeSessionRequest(
            session_id=session_id, cwd=_absolute(cwd), mcp_servers=list(mcp_servers)
        )
        result = await self.peer.request("session/resume", acp.to_wire(request))
        response = _void(acp.ResumeSessionResponse, result)
        return self._add_session(session_id, response.modes, response.config_options)

    async def list_sessions(
        self, *, cwd: str | None = None, cursor: str | None = None
    ) -> acp.ListSessionsResponse:
        """``session/list`` (needs ``sessionCapabilities.list``): one page."""
        if self.capabilities.session_capabilities.list is None:
            raise CapabilityError("the agent does not advertise session listing")
        params: dict[str, JsonValue] = {}
        if cwd is not None:
            params["cwd"] = cwd
        if cursor is not None:
            params["cursor"] = cursor
        return acp.from_wire(
            acp.ListSessionsResponse, await self.peer.request("session/list", params)
        )

    async def close_session(self, session_id: str) -> None:
        """``session/close`` (needs ``sessionCapabilities.close``)."""
        if self.capabilities.session_capabilities.close is None:
            raise CapabilityError("the agent does not advertise session close")
        result = await self.peer.request("session/close", {"sessionId": session_id})
        _void(acp.CloseSessionResponse, result)
        self.sessions.pop(session_id, None)

    async def delete_session(self, session_id: str) -> None:
        """``session/delete`` (needs ``sessionCapabilities.delete``)."""
        if self.capabilities.session_capabilities.delete is None:
            raise CapabilityError("the agent does not advertise session delete")
        result = await self.peer.request("session/delete", {"sessionId": session_id})
        _void(acp.DeleteSessionResponse, result)
        self.sessions.pop(session_id, None)

    def _add_session(
        self,
        session_id: str,
        modes: acp.SessionModeState | None,
        config_options: list[Any] | None,
    ) -> ClientSession:
        session = ClientSession(self, session_id, modes, config_options)
        session.idle_updates.extend(self.unclaimed.pop(session_id, ()))
        self.sessions[session_id] = session
        return session

    def stash(self, session_id: str, update: acp.SessionUpdate) -> bool:
        """Keep an update for a session not known yet (see :attr:`unclaimed`); ``False`` when
        :data:`UNCLAIMED_SESSIONS` other ids are already waiting (the update is dropped)."""
        kept = self.unclaimed.get(session_id)
        if kept is None:
            if len(self.unclaimed) >= UNCLAIMED_SESSIONS:
                return False
            kept = self.unclaimed[session_id] = deque(maxlen=UNCLAIMED_UPDATES)
        kept.append(update)
        return True


def _absolute(cwd: str | os.PathLike[str] | None) -> str:
    raw: str = os.getcwd() if cwd is None else os.fspath(cwd)
    return os.path.abspath(raw)


UNCLAIMED_SESSIONS: Final = 16
"""At most this many unknown session ids have updates kept (:attr:`AgentConnection.unclaimed`)."""
UNCLAIMED_UPDATES: Final = 256
"""At most this many updates are kept per unknown session id (the oldest go first)."""

_models_ready = False


def _prepare_models() -> None:
    """Import the generated models and build the validators of every message the client
    endpoint reads or writes (a worker thread runs it: see :func:`_ready_models`).

    Meanwhile the interpreter's switch interval is 0.2 ms instead of 5: the event loop's
    thread, woken by a timer or a read, gets the GIL back at once (bench/stall.py: the longest
    stall's worst repetition 8.2 ms at 1 ms, 5.8 ms at 0.2 ms, on two cores while the agent
    process starts beside it)."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, _SWITCH_INTERVAL))
    try:
        _prepare_all()
    finally:
        sys.setswitchinterval(interval)


_SWITCH_INTERVAL = 0.0002


def _prepare_all() -> None:
    acp.prepare(
        acp.InitializeRequest,
        acp.InitializeResponse,
        acp.AuthenticateRequest,
        acp.AuthenticateResponse,
        acp.NewSessionRequest,
        acp.NewSessionResponse,
        acp.LoadSessionRequest,
        acp.LoadSessionResponse,
        acp.ResumeSessionRequest,
        acp.ResumeSessionResponse,
        acp.PromptRequest,
        acp.PromptResponse,
        acp.CancelNotification,
        acp.SessionNotification,
        acp.RequestPermissionRequest,
        acp.RequestPermissionResponse,
    )


async def _ready_models() -> None:
    """Once per process, before the first connection: the models' class and schema building
    (~20 ms of CPU) runs in a worker thread, so a harness's event loop keeps ticking while its
    first ACP child starts (the interpreter hands the loop the GIL every few milliseconds)."""
    global _models_ready
    if not _models_ready:
        await anyio.to_thread.run_sync(_prepare_models)
        _models_ready = True


_ACP: Final = ChildDialect(kind="agent", startup_error=AgentStartupError)


def _abort(peer: Peer, reason: str) -> None:
    """The connection is lost: pending calls fail naming ``reason`` (the peer's own end of
    stream already did, unless the child died with its stdout held open)."""
    if not peer.closed:
        peer.abort(reason)


@asynccontextmanager
async def connect_agent_over(
    receive_stream: anyio.abc.ByteReceiveStream,
    send_stream: anyio.abc.ByteSendStream,
    *,
    permission_policy: PermissionPolicy = reject_policy,
    extension: ClientExtension | None = None,
    client_info: acp.Implementation | None = None,
    initialize_timeout: float = 30.0,
    cancel_timeout: float = 10.0,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    on_protocol_error: Callable[[RemoteProtocolError], None] | None = None,
    eof_reason: Callable[[], Awaitable[str]] | None = None,
    process: AgentProcess | None = None,
    name: str = "agent",
) -> AsyncGenerator[AgentConnection, None]:
    """Connect to an agent over a byte-stream pair and ``initialize``; see :func:`connect_agent`.

    ``process``, when the streams are its stdio, is watched: its exit fails pending calls
    naming the exit status and the stderr tail (``eof_reason`` overrides that text)."""
    await _ready_models()
    from pydantic_core import from_json  # loaded with the models, off the event loop

    router = Router()
    handlers = ClientHandlers(permission_policy)
    handlers.register(router)
    capabilities = acp.ClientCapabilities()
    if extension is not None:
        extension.register(router)
        capabilities = extension.capabilities()
    info = client_info or acp.Implementation(name="subagents", version=__version__)

    def open_link(
        _tg: anyio.abc.TaskGroup, exit_reason: Callable[[], Awaitable[str]] | None
    ) -> AbstractAsyncContextManager[Peer]:
        return open_peer(
            receive_stream,
            send_stream,
            router=router,
            max_message_bytes=max_message_bytes,
            on_protocol_error=on_protocol_error,
            eof_reason=exit_reason,
            json_loads=from_json,
            name=name,
        )

    async with open_child_connection(
        _ACP,
        open_link,
        lambda peer: _initialize(peer, capabilities, info, initialize_timeout),
        lost=_abort,
        name=name,
        process=process,
        exit_reason=eof_reason,
        around=extension,
    ) as child:
        connection = AgentConnection(
            child.link, child.task_group, child.hello, process, cancel_timeout
        )
        handlers.connection = connection
        yield connection


async def _initialize(
    peer: Peer,
    capabilities: acp.ClientCapabilities,
    client_info: acp.Implementation,
    timeout: float,
) -> acp.InitializeResponse:
    request = acp.InitializeRequest(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=capabilities,
        client_info=client_info,
    )
    try:
        result = await peer.request("initialize", acp.to_wire(request), timeout=timeout)
    except TimeoutError as exc:
        raise AgentStartupError(f"the agent did not answer initialize within {timeout} s") from exc
    except ConnectionClosedError as exc:
        raise AgentStartupError(f"the agent closed before answering initialize: {exc}") from exc
    except RPCError as exc:
        raise AgentStartupError(f"the agent refused initialize: {exc}") from exc
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    if version not in SUPPORTED_PROTOCOL_VERSIONS:
        raise ProtocolVersionError(version)
    try:
        return acp.from_wire(acp.InitializeResponse, result)
    except validation_error() as exc:
        raise AgentStartupError(f"the agent's initialize answer is invalid: {exc}") from exc


@asynccontextmanager
async def connect_agent(
    command: Sequence[str] | str,
    *,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
    inherit_env: bool = False,
    permission_policy: PermissionPolicy = reject_policy,
    extension: ClientExtension | None = None,
    client_info: acp.Implementation | None = None,
    start_timeout: float = 10.0,
    initialize_timeout: float = 30.0,
    cancel_timeout: float = 10.0,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    on_protocol_error: Callable[[RemoteProtocolError], None] | None = None,
    name: str | None = None,
) -> AsyncGenerator[AgentConnection, None]:
    """Start an ACP agent command, ``initialize`` it, and stop it on exit.

    The child runs in its own process group with an explicit environment
    (:func:`~subagents.transports.build_child_env`: a documented base plus ``env``; the whole
    parent environment only with ``inherit_env=True``), its stderr drained into a bounded
    tail. On exit: requests in progress are answered ``-32800``, stdin is closed, and the
    shutdown ladder (wait, SIGTERM the group, wait, SIGKILL the group) runs, bounded.

    ``command`` may be a URL instead (``http://``, ``https://``, ``ws://``, ``wss://``: an
    agent served over Streamable HTTP or WebSocket, ``/acp`` appended to a URL without a
    path): see :func:`subagents.remote.client.connect_agent_url`, which takes ``token``
    (sent as ``Authorization: Bearer``) and ``headers``; ``cwd``, ``env``, ``inherit_env``
    and ``start_timeout`` are for commands. A URL needs the ``subagents[remote]`` extra.
    """
    if isinstance(command, str):
        from ..protocol.acp_remote import is_agent_url  # only for a str: not on a command's path

        if not is_agent_url(command):
            raise ValueError(
                f"a command is a list of arguments; a str must be an agent URL: {command!r}"
            )
        if cwd is not None or env is not None or inherit_env:
            raise ValueError("cwd, env and inherit_env are for a command, not an agent URL")
        try:
            from ..remote.client import connect_agent_url
        except ImportError as exc:
            raise ImportError(
                f"an agent URL needs the optional extra: pip install 'subagents[remote]' ({exc})"
            ) from exc
        async with connect_agent_url(
            command,
            token=token,
            headers=headers,
            permission_policy=permission_policy,
            extension=extension,
            client_info=client_info,
            initialize_timeout=initialize_timeout,
            cancel_timeout=cancel_timeout,
            max_message_bytes=max_message_bytes,
            on_protocol_error=on_protocol_error,
            name=name,
        ) as connection:
            yield connection
        return
    if token is not None or headers is not None:
        raise ValueError("token and headers are for an agent URL, not a command")
    label = name or os.path.basename(command[0])
    child = ChildCommand(command, env, inherit_env, cwd, start_timeout)
    async with (
        child.spawn(label) as process,
        connect_agent_over(
            process.stdout,
            process.stdin,
            permission_policy=permission_policy,
            extension=extension,
            client_info=client_info,
            initialize_timeout=initialize_timeout,
            cancel_timeout=cancel_timeout,
            max_message_bytes=max_message_bytes,
            on_protocol_error=on_protocol_error,
            process=process,
            name=label,
        ) as connection,
    ):
        yield connection
