"""Serving an :class:`~subagents.transports.acp_agent.Agent` over a byte-stream pair: routing,
version negotiation, turns and their cancellation, the order of updates, the drain at end of
input (the guarantees listed in :mod:`subagents.transports.acp_agent`)."""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, cast, final

import anyio
import anyio.abc
import anyio.lowlevel
from pydantic_core import from_json

from ..protocol import acp
from ..protocol.framing import DEFAULT_MAX_MESSAGE_BYTES
from ..protocol.jsonrpc import ErrorCode, JsonValue, Notification, encode_message
from ..rpc import Router, RPCError, open_peer
from ._acp_agent_calls import (
    UPDATE,
    AgentTurn,
    ClientConnection,
    ClientLink,
    TurnControl,
    negotiate_protocol_version,
)

if TYPE_CHECKING:
    from ..protocol.acp import (
        CancelNotification,
        CloseSessionRequest,
        CloseSessionResponse,
        InitializeRequest,
        InitializeResponse,
        LoadSessionRequest,
        NewSessionRequest,
        NewSessionResponse,
        PromptRequest,
        PromptResponse,
        ResumeSessionRequest,
        StopReason,
    )
    from .acp_agent import Agent

__all__ = ("serve_agent_over",)

logger = logging.getLogger("subagents.acp.agent")


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
class _Serving:
    """One connection's serving state: the agent, its :class:`ClientConnection`, the router,
    the turns in progress, and the order of a new session's updates."""

    def __init__(self, agent: Agent, send: anyio.abc.ByteSendStream) -> None:
        self.agent = agent
        self.send = send
        self.link = ClientLink()
        self.conn = ClientConnection(agent, self.link)
        self.turns: dict[str, list[TurnControl]] = {}
        """Turns in progress, per session."""
        self.release_after_answer: dict[int, str | None] = {}
        """Tasks whose session/new answer is being written: the new session's id (None when
        the request failed), whose held updates follow the answer."""
        self._routes_open = False
        self._active = 0  # handlers in progress (for the drain at end of input)
        self._idle: anyio.Event | None = None
        self._closing = False
        self.router = Router()
        self.router.on_request("initialize", self._initialize, params=acp.InitializeRequest)
        self.router.on_notification("session/cancel", self._cancel, params=acp.CancelNotification)
        self.router.on_any_request(self._other_request)
        self.router.on_any_notification(self._other_notification)

    def _enter(self) -> None:
        self._active += 1

    def _leave(self) -> None:
        self._active -= 1
        if self._active == 0 and self._idle is not None:
            self._idle.set()

    def _open_routes(self) -> None:
        """Route the methods the agent overrides (once ``initialize`` succeeded)."""
        if self._routes_open:
            return
        self._routes_open = True
        agent = self.agent
        table = acp.method_table(1)
        router = self.router
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
                return await method(params, self.conn)
            finally:
                self._leave()

        return handle

    async def _initialize(self, params: InitializeRequest) -> InitializeResponse:
        self._enter()
        try:
            version = negotiate_protocol_version(params.protocol_version)
            self.conn.protocol_version = version
            self.conn.client_capabilities = params.client_capabilities
            self.conn.client_info = params.client_info
            response = await self.agent.initialize(params, self.conn)
            response.protocol_version = version
            self._open_routes()
            self.conn.initialized = True
            return response
        finally:
            self._leave()

    async def _other_request(self, method: str, params: JsonValue) -> object:
        if not self.conn.initialized:
            raise RPCError(
                ErrorCode.INVALID_REQUEST,
                f"Invalid request: the ACP connection must be initialized before {method!r}",
                {"method": method},
            )
        if method.startswith("_") and self.agent.implements("ext_request"):
            self._enter()
            try:
                return await self.agent.ext_request(method, params, self.conn)
            finally:
                self._leave()
        raise RPCError.method_not_found(method)

    async def _other_notification(self, method: str, params: JsonValue) -> None:
        if (
            self.conn.initialized
            and method.startswith("_")
            and self.agent.implements("ext_notification")
        ):
            await self.agent.ext_notification(method, params, self.conn)
        else:
            logger.debug("notification %r ignored", method)

    async def _new_session(self, params: NewSessionRequest) -> NewSessionResponse:
        self._enter()
        self.link.creating += 1
        session_id: str | None = None
        try:
            response = await self.agent.new_session(params, self.conn)
            session_id = response.session_id
            return response
        finally:
            # The peer writes the answer (result or error) from this task next: the updates
            # held meanwhile are written right after it (see _OrderedSendStream).
            self.release_after_answer[anyio.get_current_task().id] = session_id
            self._leave()

    def _load_or_resume(self, attr: str) -> Callable[[Any], Awaitable[object]]:
        method: Callable[[Any, ClientConnection], Awaitable[object]] = getattr(self.agent, attr)

        async def handle(params: LoadSessionRequest | ResumeSessionRequest) -> object:
            # The client knows this session: its updates (a load's replay) go out at once.
            self.link.published.add(params.session_id)
            self._enter()
            try:
                return await method(params, self.conn)
            finally:
                self._leave()

        return handle

    async def _close_session(self, params: CloseSessionRequest) -> CloseSessionResponse:
        self._enter()
        try:
            # session-close: "The Agent MUST cancel any ongoing work for that session as if
            # session/cancel had been called".
            turns = list(self.turns.get(params.session_id, ()))
            for turn in turns:
                turn.request_cancel()
            for turn in turns:
                await turn.done.wait()
            return await self.agent.close_session(params, self.conn)
        finally:
            self._leave()

    async def _cancel(self, params: CancelNotification) -> None:
        if not self.conn.initialized:
            logger.debug("session/cancel before initialize ignored")
            return
        # A prompt read just before this notification is handed to a worker that may not have
        # started yet; one checkpoint lets every runnable task run first, so its turn is
        # registered before we look (a cancel racing the prompt's start is not lost).
        await anyio.lowlevel.checkpoint()
        turns = list(self.turns.get(params.session_id, ()))
        for turn in turns:
            turn.mark_cancelled()
        if self.agent.implements("cancel"):
            try:
                await self.agent.cancel(params, self.conn)
            except Exception:
                logger.exception("the agent's cancel hook failed")
        for turn in turns:
            turn.request_cancel()

    async def _prompt(self, params: PromptRequest) -> PromptResponse:
        session_id = params.session_id
        self.link.published.add(session_id)  # the client knows it
        self._enter()
        control = TurnControl()
        turn = AgentTurn(self.conn, session_id, control)
        turns = self.turns.setdefault(session_id, [])
        turns.append(control)
        if self._closing:
            control.request_cancel()
        try:
            return await self._run_turn(turn, control, params)
        finally:
            turns.remove(control)
            if not turns and self.turns.get(session_id) is turns:
                del self.turns[session_id]
            control.done.set()
            self._leave()

    async def _run_turn(
        self, turn: AgentTurn, control: TurnControl, params: PromptRequest
    ) -> PromptResponse:
        result: PromptResponse | StopReason | None = None
        with control.scope:
            try:
                result = await self.agent.prompt(params, turn)
            except Exception as exc:
                if not turn.cancelled and self.link.peer is not None and self.link.peer.closed:
                    # The client went away (end of input) while the agent was calling it.
                    control.mark_cancelled()
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

    async def drain(self, grace: float) -> None:
        """At end of input: cancel every turn, give in-flight handlers ``grace`` seconds."""
        self._closing = True
        for turns in list(self.turns.values()):
            for control in list(turns):
                control.request_cancel()
        if self._active:
            self._idle = idle = anyio.Event()
            with anyio.move_on_after(grace):
                await idle.wait()

    # ------------------------------------------------------------------ ordering of updates

    async def after_send(self, task_id: int) -> None:
        """Called by the send stream after each write of a task that answered session/new.

        The peer holds its write lock (if the stream needs one) while this runs, so the held
        updates are written straight to the stream, right after the answer.
        """
        if task_id not in self.release_after_answer:
            return
        session_id = self.release_after_answer.pop(task_id)
        if session_id is not None:
            await self._write_held(session_id)
            self.link.published.add(session_id)
        self.link.creating -= 1
        if self.link.creating == 0:
            # Updates for ids no session/new returned: nothing left to wait for.
            while self.link.held:
                await self._write_held(next(iter(self.link.held)))

    async def _write_held(self, session_id: str) -> None:
        send = self.send
        assert send is not None
        queue = self.link.held.get(session_id)
        while queue:
            data = b"".join(encode_message(Notification(UPDATE, p)) for p in queue)
            queue.clear()  # updates sent meanwhile join the queue, and the next write
            try:
                await send.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                logger.debug("held updates for %s dropped: connection closed", session_id)
        self.link.held.pop(session_id, None)


@final
class _OrderedSendStream(anyio.abc.ByteSendStream):
    """The peer's send stream: after a ``session/new`` answer, writes the updates it held."""

    def __init__(self, inner: anyio.abc.ByteSendStream, serving: _Serving) -> None:
        self._inner = inner
        self._serving = serving
        # The peer needs no write lock when the stream hands each item over whole.
        self.atomic_send = getattr(inner, "atomic_send", False) is True

    async def send(self, item: bytes) -> None:
        serving = self._serving
        task_id = anyio.get_current_task().id if serving.release_after_answer else None
        await self._inner.send(item)
        if task_id is not None:
            await serving.after_send(task_id)

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
    serving = _Serving(agent, send)
    async with open_peer(
        receive,
        _OrderedSendStream(send, serving),
        router=serving.router,
        max_message_bytes=max_message_bytes,
        cancel_grace=shutdown_grace,
        json_loads=from_json,
        name=name,
    ) as peer:
        serving.link.peer = peer
        serving.link.peer_ready.set()
        await peer.wait_closed()
        await serving.drain(shutdown_grace)
