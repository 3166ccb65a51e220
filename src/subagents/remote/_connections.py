"""One remote ACP connection: its agent, its streams, and the routing between them.

A :class:`RemoteConnection` is made by ``initialize`` (Streamable HTTP) or by a WebSocket
upgrade. Its agent comes from an :class:`~subagents.remote._backends.AgentBackend` and runs in
:meth:`RemoteConnection.run`, a task of the server's task group, until the connection ends
(DELETE, WebSocket close, idle timeout, the agent's exit, the server's shutdown).

Server→client messages go to an :class:`Outlet`: the connection's own, or one per session
(HTTP; a WebSocket has one outlet for everything). An outlet buffers (bounded) until its
stream is open; the client opens a session's stream only after it read the ``session/new``
answer. With its stream open, a full outlet makes the agent wait (backpressure); with its
stream closed, a full outlet ends the connection (a client that never reads is not buffered
for without bound).

While a ``session/load`` (``session/resume``) is in flight, the messages of its session go to
the connection's stream, the one its answer goes to: ACP wants the whole replay before the
answer, an order that two streams cannot keep (the client reads them apart). From the answer
on they go to the session's stream.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, final

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..protocol.acp_remote import CONNECTION_SCOPED_METHODS, RequestScopes, session_id_of
from ..protocol.framing import END_OF_STREAM, NEED_DATA, LineSplitter, OversizedLine
from ..protocol.jsonrpc import ErrorCode, JsonValue
from ._drain import note_cancel_reason
from ._reaping import Presence

if TYPE_CHECKING:
    from ._backends import AgentBackend, AgentLink
    from ._guard import ClientGuard

__all__ = (
    "ConnectionStopped",
    "Outlet",
    "PostRefusal",
    "RemoteConnection",
    "ServerLimits",
    "error_response",
)

logger = logging.getLogger("subagents.remote")

STREAM_FLUSH_GRACE: Final = 2.0
"""Seconds the streams of an ended connection get to write what is left before they end."""
SESSION_OPENING_METHODS: Final = frozenset({"session/load", "session/resume"})
"""Connection-scoped methods that name an existing session: the session is the connection's
from the POST on (its stream may open before the answer, and a load's replay goes there)."""


@final
@dataclass(frozen=True, slots=True)
class ServerLimits:
    """The bounds of a remote ACP server (every one is enforced; seconds are floats)."""

    max_connections: int = 64
    """Connections at once; an ``initialize`` or WebSocket upgrade beyond is answered 503."""
    max_sessions: int = 32
    """Sessions per connection; a ``session/new`` beyond is answered a JSON-RPC error."""
    max_message_bytes: int = 4 * 1024 * 1024
    """The largest message, either way (a POST body beyond: 413)."""
    max_buffered_messages: int = 1024
    """Messages one stream buffers while it is not open (beyond: the connection ends)."""
    idle_timeout: float = 300.0
    """A connection with no request and no open stream this long is closed."""
    initialize_timeout: float = 30.0
    """How long ``initialize`` waits for the agent's answer (then 504)."""
    write_timeout: float = 30.0
    """How long a message waits for the agent to read it (then the connection ends)."""
    drain_timeout: float = 5.0
    """At shutdown, how long cancelled turns get to be answered."""
    keepalive_interval: float = 15.0
    """Seconds between SSE keep-alive comments on a quiet stream."""
    client_grace: float = 10.0
    """An HTTP client with no stream open and no request in flight this long is gone: its
    turns are cancelled, its connection ends (:mod:`subagents.remote._reaping`)."""
    handshake_grace: float = 10.0
    """An ``initialize`` followed by no stream and no request this long: the connection ends."""
    max_connections_per_principal: int | None = None
    """Connections one principal (without tokens: one client address) may hold; ``None``:
    ``max_connections`` less an eighth (beyond: 503, other clients still served)."""

    def __post_init__(self) -> None:
        for name in ("max_connections", "max_sessions", "max_message_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.max_buffered_messages < 1:
            raise ValueError("max_buffered_messages must be at least 1")
        for name in (
            "idle_timeout",
            "initialize_timeout",
            "write_timeout",
            "drain_timeout",
            "keepalive_interval",
            "client_grace",
            "handshake_grace",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")
        per_principal = self.max_connections_per_principal
        if per_principal is not None and per_principal < 1:
            raise ValueError("max_connections_per_principal must be at least 1")


@final
@dataclass(frozen=True, slots=True)
class PostRefusal:
    """Why a POST is refused: an HTTP status and a one-line reason."""

    status: int
    reason: str


def error_response(request_id: JsonValue, code: int, message: str) -> dict[str, JsonValue]:
    """A JSON-RPC error response."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _dumps(message: Mapping[str, JsonValue]) -> str:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


@final
class Outlet:
    """The messages of one stream (the connection's, or one session's), in order."""

    def __init__(self, max_buffered: int) -> None:
        self._send: MemoryObjectSendStream[str]
        self._receive: MemoryObjectReceiveStream[str]
        self._send, self._receive = anyio.create_memory_object_stream[str](max_buffered)
        self._reader: anyio.CancelScope | None = None
        self._closed = False
        self.readers_gone = anyio.Event()
        self.readers_gone.set()

    @property
    def is_open(self) -> bool:
        """Whether a stream reads it now."""
        return self._reader is not None

    def attach(self) -> anyio.CancelScope:
        """A new reader's scope; a reader already attached is cancelled (a new GET for the
        same stream takes over: the old one was likely half-open)."""
        if self._reader is not None:
            self._reader.cancel()
        self._reader = scope = anyio.CancelScope()
        self.readers_gone = anyio.Event()
        return scope

    def detach(self, scope: anyio.CancelScope) -> None:
        if self._reader is scope:
            self._reader = None
            self.readers_gone.set()
            if self._closed:
                self._receive.close()

    async def receive(self) -> str:
        """The next message (``anyio.EndOfStream`` once closed and empty)."""
        return await self._receive.receive()

    async def put(self, text: str, timeout: float) -> bool:
        """Queue ``text``; ``False`` when it does not fit and no stream reads (overflow), or
        the stream reading it took no message for ``timeout`` seconds."""
        try:
            self._send.send_nowait(text)
        except anyio.WouldBlock:
            if self._reader is None:
                return False
            with anyio.move_on_after(timeout):
                await self._send.send(text)
                return True
            return False
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # closed: the connection is over
        return True

    def abort(self) -> None:
        """Stop the reader now (it did not take what was left in time)."""
        if self._reader is not None:
            self._reader.cancel()

    def put_nowait(self, text: str) -> None:
        try:
            self._send.send_nowait(text)
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            logger.debug("message dropped: its stream is full or closed")

    def close(self) -> None:
        """No more messages: a reader gets what is buffered, then the end (with no reader,
        what is buffered is dropped)."""
        self._closed = True
        self._send.close()
        if self._reader is None:
            self._receive.close()


class ConnectionStopped(Exception):
    """The connection is over (raised to a POST that raced its end)."""


@final
class RemoteConnection:
    """One remote connection and its agent (see the module docstring)."""

    def __init__(
        self,
        kind: Literal["http", "websocket"],
        limits: ServerLimits,
        *,
        connection_id: str | None = None,
        principal: str | None = None,
        guard: ClientGuard | None = None,
    ) -> None:
        from ._guard import ClientGuard

        self.id = connection_id or secrets.token_urlsafe(18)
        self.kind = kind
        self.principal = principal
        """The name of the principal whose token made the connection (``None``: the server
        has no token); every request on it must carry that principal's token."""
        self.guard = guard or ClientGuard()
        """The checks of the client's requests, and who holds which session."""
        self.limits = limits
        self.link: AgentLink | None = None
        self.outlet = Outlet(limits.max_buffered_messages)
        """The connection-scoped stream (for a WebSocket: everything)."""
        self._sessions: dict[str, Outlet] = {}
        self._client_requests = RequestScopes()
        """Client→agent requests in flight, with the session whose stream gets the answer."""
        self._agent_requests = RequestScopes()
        """Agent→client requests awaiting the client's answer, with their session."""
        self._closing: dict[tuple[str, JsonValue], str] = {}
        self._listing: set[tuple[str, JsonValue]] = set()
        """Ids of the session/list requests in flight (the guard filters their answers)."""
        """Ids of the session/close requests in flight, with their session."""
        self._creating: set[tuple[str, JsonValue]] = set()
        """Ids of the session/new, load and resume requests in flight (the session limit)."""
        self._attaching: dict[tuple[str, JsonValue], str] = {}
        """Ids of the session/load and resume requests in flight, with their session: its
        messages go to the connection's stream meanwhile, before the answer."""
        self._initialize: tuple[JsonValue, anyio.Event] | None = None
        self.initialize_answer: dict[str, JsonValue] | None = None
        self._answered = anyio.Event()
        self._write_lock = anyio.Lock()
        self._stop = anyio.Event()
        self._drain = False
        self.stop_reason = ""
        self.started = anyio.Event()
        self.finished = anyio.Event()
        self.open_streams = 0
        self.last_activity = anyio.current_time()
        self.presence = Presence()
        """Whether the HTTP client is here (the graces of :mod:`subagents.remote._reaping`)."""

    # ------------------------------------------------------------------ state

    @property
    def session_count(self) -> int:
        return len(self._sessions)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def has_session(self, session_id: str) -> bool:
        return session_id in self._sessions

    def outlets(self) -> list[Outlet]:
        """Every stream's outlet: the connection's, then the sessions'."""
        return [self.outlet, *self._sessions.values()]

    def session_outlet(self, session_id: str) -> Outlet | None:
        return self._sessions.get(session_id)

    def touch(self) -> None:
        self.last_activity = anyio.current_time()

    def is_idle(self, now: float, idle_timeout: float) -> bool:
        return self.open_streams == 0 and now - self.last_activity >= idle_timeout

    def stop(self, reason: str, *, drain: bool = False) -> None:
        """End the connection (its :meth:`run` stops the agent); idempotent."""
        if not self._stop.is_set():
            self.stop_reason = reason
            self._drain = drain
            self._stop.set()
            logger.debug("connection %s ending: %s", self.id, reason)

    # ------------------------------------------------------------------ the agent

    async def run(
        self,
        backend: AgentBackend,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run the agent until :meth:`stop` (or its exit); a task of the server's group."""
        try:
            async with backend.open() as link:
                self.link = link
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._read_agent)
                    self.started.set()
                    task_status.started()
                    await self._stop.wait()
                    if self._drain:
                        await self._cancel_turns()
                    tg.cancel_scope.cancel()
        finally:
            self.stop("the agent is stopped")
            for session_id in self._sessions:
                self.guard.release(self, session_id)
            self._answer_the_rest()
            outlets = self.outlets()
            for outlet in outlets:
                outlet.close()
            with anyio.CancelScope(shield=True), anyio.move_on_after(STREAM_FLUSH_GRACE):
                for outlet in outlets:  # the streams write what is left, then end
                    await outlet.readers_gone.wait()
            for outlet in outlets:
                outlet.abort()
            self.finished.set()

    async def _cancel_turns(self) -> None:
        """The drain: ``session/cancel`` every session with a request in flight, then wait
        (bounded) until the agent answered them all."""
        for session_id in sorted(self._client_requests.sessions()):
            notification: dict[str, JsonValue] = {
                "jsonrpc": "2.0",
                "method": "session/cancel",
                "params": {"sessionId": session_id},
            }
            try:
                await self.send_to_agent(notification, force=True)
            except ConnectionStopped:
                return
        with anyio.move_on_after(self.limits.drain_timeout):
            while len(self._client_requests):
                await self._answered.wait()

    def _answer_the_rest(self) -> None:
        """Answer every request the agent left unanswered (it is gone)."""
        for request_id, session_id in self._client_requests.in_flight():
            self._client_requests.pop(request_id)
            message = error_response(
                request_id, ErrorCode.INTERNAL_ERROR, f"the agent stopped: {self.stop_reason}"
            )
            # Over a WebSocket everything goes to the socket (session outlets are placeholders).
            outlet = (
                self._sessions.get(session_id, self.outlet)
                if session_id and self.kind != "websocket"
                else self.outlet
            )
            outlet.put_nowait(_dumps(message))
        if self._initialize is not None:
            self._initialize[1].set()

    async def _read_agent(self) -> None:
        assert self.link is not None
        lines = LineSplitter(max_line_bytes=self.limits.max_message_bytes)
        receive = self.link.receive
        try:
            while True:
                try:
                    data = await receive.receive()
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    lines.receive_eof()
                    data = b""
                else:
                    lines.receive_data(data)
                while (line := lines.next_line()) is not NEED_DATA:
                    if line is END_OF_STREAM:
                        self.stop("the agent closed its output")
                        return
                    if isinstance(line, OversizedLine):
                        self.stop(f"the agent sent a message of {line.size} bytes (too large)")
                        return
                    if line.strip() and not await self._from_agent(bytes(line).strip()):
                        return
        except OSError as exc:
            self.stop(f"reading from the agent failed: {exc}")

    async def _from_agent(self, line: bytes) -> bool:
        """Route one line from the agent; ``False`` once the connection must end."""
        try:
            message = json.loads(line)
        except ValueError:
            logger.warning("connection %s: the agent wrote a line that is not JSON", self.id)
            return True
        if not isinstance(message, dict):
            logger.warning("connection %s: the agent wrote JSON that is not an object", self.id)
            return True
        text = line.decode("utf-8", errors="replace")
        closed = self._closed_by(message)  # pyright: ignore[reportUnknownArgumentType]
        if self._listing and "method" not in message:
            listed = _key(message.get("id"))  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
            if listed in self._listing:
                self._listing.discard(listed)
                if self.guard.filter_listing(self, message):  # pyright: ignore[reportUnknownArgumentType]
                    text = _dumps(message)  # pyright: ignore[reportUnknownArgumentType]
        if self._drain:  # a turn the drain cancelled says so (its answer's _meta)
            text = note_cancel_reason(message, text, self.stop_reason)  # pyright: ignore[reportUnknownArgumentType]
        outlet = self._route(message)  # pyright: ignore[reportUnknownArgumentType]
        if outlet is None:
            return True
        if not await outlet.put(text, self.limits.write_timeout):
            self.stop(
                f"more than {self.limits.max_buffered_messages} messages wait for a stream "
                "that is not open, or is not read"
            )
            return False
        if closed is not None:
            self._forget_session(closed)
        return True

    def _route(self, message: dict[str, JsonValue]) -> Outlet | None:
        """Where a message from the agent goes (``None``: answered here, the initialize)."""
        if self.kind == "websocket":
            self._note(message)
            return self.outlet
        if isinstance(message.get("method"), str):
            session_id = session_id_of(message)
            if "id" in message:
                self._agent_requests.record(message["id"], session_id)
            if session_id is None or session_id in self._attaching.values():
                return self.outlet
            return self._sessions.get(session_id) or self._add_session(session_id)
        request_id = message.get("id")
        if self._initialize is not None and _same_id(self._initialize[0], request_id):
            self.initialize_answer = message
            self._initialize[1].set()
            self._initialize = None
            return None
        known, session_id = self._client_requests.pop(request_id)
        self._creating.discard(_key(request_id))
        self._attaching.pop(_key(request_id), None)
        self._answered.set()
        self._answered = anyio.Event()
        if known and session_id is None:
            result = message.get("result")
            if isinstance(result, dict):
                created = result.get("sessionId")
                if isinstance(created, str) and created not in self._sessions:
                    self._add_session(created)
        if session_id is not None:
            return self._sessions.get(session_id, self.outlet)
        return self.outlet

    def _closed_by(self, message: dict[str, JsonValue]) -> str | None:
        """The session a successful ``session/close`` answer ends, if ``message`` is one."""
        if not self._closing or isinstance(message.get("method"), str):
            return None
        session_id = self._closing.pop(_key(message.get("id")), None)
        return session_id if "result" in message else None

    def _forget_session(self, session_id: str) -> None:
        """After ``session/close``: its stream ends (after the answer), its place is free."""
        outlet = self._sessions.pop(session_id, None)
        if outlet is not None:
            outlet.close()
            self.guard.release(self, session_id)

    def _note(self, message: dict[str, JsonValue]) -> None:
        """WebSocket: keep the session count (for ``/health``) and the requests in flight."""
        if isinstance(message.get("method"), str):
            return
        known, _ = self._client_requests.pop(message.get("id"))
        self._answered.set()
        self._answered = anyio.Event()
        result = message.get("result")
        if known and isinstance(result, dict):
            created = result.get("sessionId")
            if isinstance(created, str) and created not in self._sessions:
                self._add_session(created)

    def _add_session(self, session_id: str) -> Outlet:
        outlet = self._sessions[session_id] = Outlet(self.limits.max_buffered_messages)
        self.guard.claim(self, session_id)
        if self.kind == "websocket":
            outlet.close()  # a placeholder: everything goes to the socket
        return outlet

    # ------------------------------------------------------------------ client → agent

    async def send_to_agent(self, message: Mapping[str, JsonValue], *, force: bool = False) -> None:
        """Write one message to the agent (bounded by ``write_timeout``)."""
        link = self.link
        if link is None or (self._stop.is_set() and not force):
            raise ConnectionStopped
        data = (_dumps(message) + "\n").encode()
        try:
            with anyio.fail_after(self.limits.write_timeout):
                async with self._write_lock:
                    await link.send.send(data)
        except TimeoutError:
            self.stop("the agent did not read its input in time")
            raise ConnectionStopped from None
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            self.stop("the agent's input is closed")
            raise ConnectionStopped from None

    async def initialize(self, message: dict[str, JsonValue]) -> dict[str, JsonValue] | None:
        """Forward ``initialize`` and wait for its answer (``None``: none came in time)."""
        done = anyio.Event()
        self._initialize = (message.get("id"), done)
        try:
            await self.send_to_agent(message)
        except ConnectionStopped:
            return None
        with anyio.move_on_after(self.limits.initialize_timeout):
            await done.wait()
        return self.initialize_answer

    def check_post(
        self, message: dict[str, JsonValue], session_header: str | None
    ) -> PostRefusal | None:
        """Whether a POST of ``message`` is refused (400/404), before anything is sent."""
        method = message.get("method")
        if not isinstance(method, str):  # a response to one of the agent's requests
            known, session_id = self._agent_requests.peek(message.get("id"))
            if not known:
                return PostRefusal(400, "no request of the agent has this id")
            if session_header is not None and session_header != session_id:
                return PostRefusal(400, "the agent's request belongs to another session")
            return None
        if method in CONNECTION_SCOPED_METHODS:
            return None
        session_id = session_id_of(message)
        if session_id is not None and session_header is None:
            return PostRefusal(400, "a session-scoped POST needs the Acp-Session-Id header")
        if session_id is not None and session_header != session_id:
            return PostRefusal(400, "Acp-Session-Id differs from the message's sessionId")
        if session_header is not None and session_header not in self._sessions:
            return PostRefusal(404, "unknown session for this connection")
        return None

    async def post(self, message: dict[str, JsonValue], session_header: str | None) -> None:
        """Forward a client message checked by :meth:`check_post` (raises ``ConnectionStopped``)."""
        self.touch()
        method = message.get("method")
        if not isinstance(method, str):
            self._agent_requests.pop(message.get("id"))
            await self.send_to_agent(message)
            return
        refusal = self.guard.check(self, message)
        if refusal is not None:
            if "id" in message:
                await self._refuse(message["id"], refusal[1], refusal[0])
            return
        if "id" not in message:
            await self.send_to_agent(message)
            return
        request_id = message["id"]
        if method == "session/list":
            self._listing.add(_key(request_id))
        if method in CONNECTION_SCOPED_METHODS:
            scope = None
            if method == "session/new" or method in SESSION_OPENING_METHODS:
                named = session_id_of(message)
                exists = named is not None and named in self._sessions
                if not exists and self.session_count + len(self._creating) >= (
                    self.limits.max_sessions
                ):
                    await self._refuse(
                        request_id,
                        f"too many sessions on this connection (at most "
                        f"{self.limits.max_sessions})",
                    )
                    return
                self._creating.add(_key(request_id))
                if named is not None and method in SESSION_OPENING_METHODS:
                    self._attaching[_key(request_id)] = named
                    if not exists:
                        self._add_session(named)
        else:
            scope = session_header
            if method == "session/close" and session_header is not None:
                self._closing[_key(request_id)] = session_header
        self._client_requests.record(request_id, scope)
        try:
            await self.send_to_agent(message)
        except ConnectionStopped:
            self._client_requests.pop(request_id)
            self._creating.discard(_key(request_id))
            self._attaching.pop(_key(request_id), None)
            raise

    async def _refuse(
        self, request_id: JsonValue, reason: str, code: int = ErrorCode.INVALID_REQUEST
    ) -> None:
        message = error_response(request_id, code, reason)
        await self.outlet.put(_dumps(message), self.limits.write_timeout)

    async def post_websocket(self, message: dict[str, JsonValue]) -> None:
        """A message from the WebSocket: forwarded as is (the requests noted for the drain)."""
        self.touch()
        method = message.get("method")
        refusal = self.guard.check(self, message)
        if refusal is not None:
            if "id" in message:
                await self._refuse(message["id"], refusal[1], refusal[0])
            else:
                logger.debug("connection %s: %s dropped: %s", self.id, method, refusal[1])
            return
        if isinstance(method, str) and "id" in message:
            request_id = message["id"]
            if method == "session/new" and self.session_count >= self.limits.max_sessions:
                await self._refuse(
                    request_id,
                    f"too many sessions on this connection (at most {self.limits.max_sessions})",
                )
                return
            scope = None if method in CONNECTION_SCOPED_METHODS else session_id_of(message)
            self._client_requests.record(request_id, scope)
            if method == "session/close" and scope is not None:
                self._closing[_key(request_id)] = scope
            if method == "session/list":
                self._listing.add(_key(request_id))
            if method in SESSION_OPENING_METHODS:
                named = session_id_of(message)
                if named is not None and named not in self._sessions:
                    self._add_session(named)
        await self.send_to_agent(message)


def _key(request_id: JsonValue) -> tuple[str, JsonValue]:
    return (type(request_id).__name__, request_id)


def _same_id(a: JsonValue, b: JsonValue) -> bool:
    return _key(a) == _key(b)
