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
- ``session/update`` notifications reach the turn that is running, in order; a turn's result
  comes only after every update received before it;
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
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias, TypeVar, final

import anyio
import anyio.abc
import anyio.to_thread
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .. import __version__
from ..protocol import acp
from ..protocol.acp.methods import PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS
from ..protocol.errors import RemoteProtocolError
from ..protocol.framing import DEFAULT_MAX_MESSAGE_BYTES
from ..protocol.jsonrpc import JsonValue
from ..rpc import ConnectionClosedError, Peer, Router, RPCError, open_peer
from ._policy import call_policy, policy_name
from .process import AgentProcess, exit_reason_for, exited_while_open, open_agent_process

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


def _validation_error() -> type[Exception]:
    """What :func:`acp.from_wire` raises on invalid data. pydantic_core is imported with the
    models, by the first connection (in a worker thread), not with this module."""
    from pydantic_core import ValidationError

    return ValidationError


PermissionPolicy: TypeAlias = (
    "Callable[[acp.RequestPermissionRequest], Awaitable[acp.RequestPermissionOutcome]]"
)
"""Decides a ``session/request_permission``: returns the outcome to answer with."""

_TURN_BUFFER: Final = 1024


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


def _outcome_cancelled() -> acp.RequestPermissionOutcome:
    return acp.CancelledRequestPermissionOutcome()


def _select(request: acp.RequestPermissionRequest, kinds: Sequence[str]) -> str | None:
    for kind in kinds:
        for option in request.options:
            if option.kind == kind:
                return option.option_id
    return None


def _reject_outcome(request: acp.RequestPermissionRequest) -> acp.RequestPermissionOutcome:
    """Deny: a reject option the agent offered (once, else always); none offered: cancelled."""
    option_id = _select(request, ("reject_once", "reject_always"))
    if option_id is None:
        return _outcome_cancelled()
    return acp.SelectedRequestPermissionOutcome(option_id=option_id)


def _permission_asked(request: acp.RequestPermissionRequest) -> str:
    """The permission asked for, as a log names it."""
    call = request.tool_call
    title = "" if call.title is None else f" {call.title!r}"
    return (
        f"session/request_permission for tool call {call.tool_call_id!r}{title} "
        f"(session {request.session_id!r})"
    )


async def reject_policy(request: acp.RequestPermissionRequest) -> acp.RequestPermissionOutcome:
    """The default policy: pick a reject option (once, else always); none offered: cancelled."""
    return _reject_outcome(request)


async def allow_policy(request: acp.RequestPermissionRequest) -> acp.RequestPermissionOutcome:
    """Allow (once, else always); when no allow option is offered, reject as the default does."""
    option_id = _select(request, ("allow_once", "allow_always"))
    if option_id is None:
        return await reject_policy(request)
    return acp.SelectedRequestPermissionOutcome(option_id=option_id)


def _void(tp: type[ModelT], result: JsonValue) -> ModelT:
    """Parse the result of a "void" method: ``null`` and ``{}`` are both accepted."""
    return acp.from_wire(tp, {} if result is None else result)


def _text_prompt(prompt: str | Sequence[acp.ContentBlock]) -> list[acp.ContentBlock]:
    if isinstance(prompt, str):
        return [acp.TextContentBlock(text=prompt)]
    return list(prompt)


@final
class PromptTurn:
    """One ``session/prompt`` turn: iterate it for the updates, then read the stop reason.

    Use it as an async context manager (``async with session.prompt(...) as turn``). Leaving
    the block before the turn ended cancels the turn (``session/cancel``) and waits, within
    ``cancel_timeout``, for the agent's answer.
    """

    def __init__(self, session: ClientSession, prompt: list[acp.ContentBlock]) -> None:
        self._session = session
        self._prompt = prompt
        send, receive = anyio.create_memory_object_stream[acp.SessionUpdate](_TURN_BUFFER)
        self._updates_in: MemoryObjectSendStream[acp.SessionUpdate] = send
        self._updates_out: MemoryObjectReceiveStream[acp.SessionUpdate] = receive
        self._done = anyio.Event()
        self._response: acp.PromptResponse | None = None
        self._error: BaseException | None = None
        self._permission_scopes: set[anyio.CancelScope] = set()
        self._request_scope: anyio.CancelScope | None = None
        self.cancel_requested = False
        """Whether :meth:`cancel` was called for this turn."""
        self.update_count = 0
        """Updates received so far in this turn."""

    # -- consuming

    def __aiter__(self) -> PromptTurn:
        return self

    async def __anext__(self) -> acp.SessionUpdate:
        try:
            return await self._updates_out.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def result(self) -> acp.PromptResponse:
        """Wait for the end of the turn (draining updates nobody read) and return its result.

        Raises what the request raised: :class:`~subagents.rpc.RPCError` for an error answer,
        :class:`~subagents.rpc.ConnectionClosedError` when the agent went away.
        """
        async for _ in self:
            pass
        await self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._response is not None
        return self._response

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def stop_reason(self) -> str | None:
        """The stop reason once the turn ended normally (``None`` before, or on error)."""
        return None if self._response is None else self._response.stop_reason

    # -- cancelling

    async def cancel(self) -> None:
        """Cancel this turn: see :meth:`ClientSession.cancel`."""
        if self._done.is_set():
            return
        self.cancel_requested = True
        for scope in list(self._permission_scopes):
            scope.cancel()
        await self._session.connection.peer.notify(
            "session/cancel",
            acp.to_wire(acp.CancelNotification(session_id=self._session.session_id)),
        )

    def abandon(self) -> None:
        """Stop waiting for this turn's answer, for an agent that ignores ``session/cancel``:
        the updates end and :meth:`result` raises ``TimeoutError``; a late answer is ignored.
        (Leaving the turn's block does this by itself after ``cancel_timeout``.)"""
        if not self._done.is_set() and self._request_scope is not None:
            self._request_scope.cancel()

    # -- lifecycle

    async def _run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        params = acp.to_wire(
            acp.PromptRequest(session_id=self._session.session_id, prompt=self._prompt)
        )
        try:
            with anyio.CancelScope() as scope:
                self._request_scope = scope
                task_status.started()
                result = await self._session.connection.peer.request("session/prompt", params)
                self._response = acp.from_wire(acp.PromptResponse, result)
            if scope.cancelled_caught:
                self._error = TimeoutError(
                    "the agent did not answer the cancelled turn in time; gave up waiting"
                )
        except (RPCError, ConnectionClosedError, _validation_error()) as exc:
            self._error = exc
        except BaseException as exc:
            self._error = exc
            raise
        finally:
            self._updates_in.close()
            self._done.set()
            if self._session.current_turn is self:
                self._session.current_turn = None

    async def __aenter__(self) -> PromptTurn:
        session = self._session
        if session.current_turn is not None:
            self._updates_in.close()
            self._updates_out.close()
            raise RuntimeError(f"session {session.session_id} already has a turn running")
        session.current_turn = self
        try:
            await session.connection.task_group.start(self._run)
        except BaseException:
            # Not started (cancelled while starting): __aexit__ will not run, so close here.
            if session.current_turn is self:
                session.current_turn = None
            self._updates_in.close()
            self._updates_out.close()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with anyio.CancelScope(shield=True):
            if not self._done.is_set():
                with suppress(ConnectionClosedError):
                    await self.cancel()
                with anyio.move_on_after(self._session.connection.cancel_timeout):
                    async for _ in self:
                        pass
                    await self._done.wait()
                if not self._done.is_set() and self._request_scope is not None:
                    self._request_scope.cancel()
                    await self._done.wait()
            else:
                async for _ in self:
                    pass
        self._updates_out.close()


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

    def prompt(self, prompt: str | Sequence[acp.ContentBlock]) -> PromptTurn:
        """Start a turn when entered: ``async with session.prompt("hi") as turn: ...``."""
        return PromptTurn(self, _text_prompt(prompt))

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


@final
class _ClientHandlers:
    """The client side's handlers of agent-to-client methods."""

    def __init__(self, policy: PermissionPolicy) -> None:
        self.policy = policy
        self.connection: AgentConnection | None = None
        self.early_updates: list[acp.SessionNotification] = []

    def register(self, router: Router) -> None:
        router.on_notification("session/update", self.on_update, params=acp.SessionNotification)
        router.on_request(
            "session/request_permission", self.on_permission, params=acp.RequestPermissionRequest
        )

    async def on_update(self, note: acp.SessionNotification) -> None:
        connection = self.connection
        session = None if connection is None else connection.sessions.get(note.session_id)
        if session is None:
            if connection is not None and connection.stash(note.session_id, note.update):
                return
            logger.warning("session/update for unknown session %r ignored", note.session_id)
            return
        if isinstance(note.update, acp.ToolCallSessionUpdate):
            session.tool_calls[note.update.tool_call_id] = note.update
        turn = session.current_turn
        if turn is None or turn.done:
            session.idle_updates.append(note.update)
            return
        turn.update_count += 1
        try:
            await turn._updates_in.send(note.update)  # pyright: ignore[reportPrivateUsage]
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            session.idle_updates.append(note.update)

    async def on_permission(self, request: acp.RequestPermissionRequest) -> ACPModel:
        connection = self.connection
        session = None if connection is None else connection.sessions.get(request.session_id)
        if session is None:
            raise RPCError.resource_not_found({"sessionId": request.session_id})
        call = request.tool_call
        known = session.tool_calls.get(call.tool_call_id)
        if known is not None:
            call.title = call.title if call.title is not None else known.title
            call.kind = call.kind if call.kind is not None else known.kind
            call.raw_input = call.raw_input if call.raw_input is not None else known.raw_input
        turn = session.current_turn
        if turn is not None and turn.cancel_requested:
            return acp.RequestPermissionResponse(outcome=_outcome_cancelled())
        outcome: acp.RequestPermissionOutcome = _outcome_cancelled()
        with anyio.CancelScope() as scope:
            if turn is not None:
                turn._permission_scopes.add(scope)  # pyright: ignore[reportPrivateUsage]
            try:
                decided = await call_policy(
                    self.policy, request, logger=logger, asked=_permission_asked(request)
                )
            finally:
                if turn is not None:
                    turn._permission_scopes.discard(scope)  # pyright: ignore[reportPrivateUsage]
            if decided is None:  # the policy raised (logged): deny
                outcome = _reject_outcome(request)
            elif not isinstance(  # pyright: ignore[reportUnnecessaryIsInstance]
                decided,
                (acp.SelectedRequestPermissionOutcome, acp.CancelledRequestPermissionOutcome),
            ):
                logger.error(
                    "permission policy %s answered %r on %s; answering deny",
                    policy_name(self.policy),
                    decided,
                    _permission_asked(request),
                )
                outcome = _reject_outcome(request)
            else:
                outcome = decided
        if scope.cancelled_caught:
            outcome = _outcome_cancelled()
        return acp.RequestPermissionResponse(outcome=outcome)


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
    """Connect to an agent over a byte-stream pair and ``initialize``; see :func:`connect_agent`."""
    await _ready_models()
    from pydantic_core import from_json  # loaded with the models, off the event loop

    router = Router()
    handlers = _ClientHandlers(permission_policy)
    handlers.register(router)
    capabilities = acp.ClientCapabilities()
    if extension is not None:
        extension.register(router)
        capabilities = extension.capabilities()
    raised: BaseException | None = None
    async with AsyncExitStack() as stack:
        if extension is not None:
            await stack.enter_async_context(extension)
        async with (
            anyio.create_task_group() as tg,
            open_peer(
                receive_stream,
                send_stream,
                router=router,
                max_message_bytes=max_message_bytes,
                on_protocol_error=on_protocol_error,
                eof_reason=eof_reason,
                json_loads=from_json,
                name=name,
            ) as peer,
        ):
            try:
                init = await _initialize(
                    peer,
                    capabilities,
                    client_info or acp.Implementation(name="subagents", version=__version__),
                    initialize_timeout,
                )
                connection = AgentConnection(peer, tg, init, process, cancel_timeout)
                handlers.connection = connection
                yield connection
            except BaseException as exc:
                raised = exc
            finally:
                tg.cancel_scope.cancel()
    if raised is not None:  # re-raised as itself, not wrapped in an ExceptionGroup
        raise raised


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
    except _validation_error() as exc:
        raise AgentStartupError(f"the agent's initialize answer is invalid: {exc}") from exc


@asynccontextmanager
async def connect_agent(
    command: Sequence[str],
    *,
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
    """
    label = name or os.path.basename(command[0])
    raised: BaseException | None = None
    async with open_agent_process(
        command,
        env=env,
        inherit_env=inherit_env,
        cwd=cwd,
        start_timeout=start_timeout,
        name=label,
    ) as process:
        exit_reason = exit_reason_for(process, f"agent {label!r}")

        async with anyio.create_task_group() as tg:
            peer_holder: list[Peer] = []

            async def watch_exit() -> None:
                # A child can die with its stdout still open (a grandchild holding it): fail
                # pending calls from the exit itself, after giving the stream a moment to end.
                peer = await exited_while_open(
                    process, lambda: peer_holder[0] if peer_holder else None
                )
                if peer is not None:
                    peer.abort(await exit_reason())

            tg.start_soon(watch_exit)
            try:
                async with connect_agent_over(
                    process.stdout,
                    process.stdin,
                    permission_policy=permission_policy,
                    extension=extension,
                    client_info=client_info,
                    initialize_timeout=initialize_timeout,
                    cancel_timeout=cancel_timeout,
                    max_message_bytes=max_message_bytes,
                    on_protocol_error=on_protocol_error,
                    eof_reason=exit_reason,
                    process=process,
                    name=label,
                ) as connection:
                    peer_holder.append(connection.peer)
                    yield connection
            except AgentStartupError as exc:
                if process.exit is not None and "exited" not in str(exc):
                    raised = AgentStartupError(f"{exc}; agent {process.exit.describe()}")
                    raised.__cause__ = exc
                else:
                    raised = exc
            except BaseException as exc:
                raised = exc
            finally:
                tg.cancel_scope.cancel()
    if raised is not None:  # re-raised as itself, not wrapped in an ExceptionGroup
        raise raised
