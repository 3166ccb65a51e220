"""The ``/acp`` endpoint as a raw ASGI application (no framework), and the connections it holds.

Routing, exactly the RFD's (``docs/spec/acp-streamable-http-websocket.mdx``):

====================  =====================================================================
``POST /acp``         ``Content-Type: application/json`` (else 415), a body of at most
                      ``max_message_bytes`` (else 413), JSON (else 400 with a JSON-RPC parse
                      error), not a batch (501). ``initialize`` without ``Acp-Connection-Id``
                      makes a connection: 200, the JSON-RPC answer as body, the id in the
                      ``Acp-Connection-Id`` header (a client that disconnects before the
                      answer never learns the id: that connection is stopped at once,
                      not left to the idle timeout). Anything else needs ``Acp-Connection-Id``
                      (400; unknown: 404) and, when session-scoped, ``Acp-Session-Id`` (400;
                      unknown for the connection: 404); answered 202 at once.
``GET /acp``          ``Upgrade: websocket``: a WebSocket, ``Acp-Connection-Id`` in the 101.
                      Otherwise ``Accept: text/event-stream`` (406), ``Acp-Connection-Id``
                      (400; unknown 404) and optionally ``Acp-Session-Id`` (unknown: 404):
                      the connection's or the session's SSE stream.
``DELETE /acp``       ``Acp-Connection-Id`` (400; unknown 404): the connection ends, its agent
                      is stopped (a process reaped), 202.
``GET /health``       200 ``{"status", "connections", "sessions"}``, no token needed
                      (``/healthz`` too); 503 with ``"status": "draining"`` once the server
                      drains (see :mod:`subagents.remote._drain`: then a request refused for
                      the drain is 503 with ``Retry-After``, never 404).
====================  =====================================================================

With tokens, every ``/acp`` request needs ``Authorization: Bearer <token>`` (401 with
``WWW-Authenticate: Bearer`` otherwise; compared in constant time); the token names a
principal (:mod:`subagents.remote._principals`), and a request naming a connection must
carry the token of the principal that made it (another principal's is answered 404, unknown
connection: a connection id is not a credential). What a client may ask of its agent is
checked by :class:`~subagents.remote._guard.ClientGuard`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Final, final

import anyio
import anyio.abc

from ..protocol.acp_remote import (
    ACCEPT_SSE,
    CONNECTION_HEADER,
    ENDPOINT_PATH,
    SESSION_HEADER,
    encode_sse,
)
from ..protocol.jsonrpc import JsonValue
from ._connections import (
    ConnectionStopped,
    Outlet,
    RemoteConnection,
    ServerLimits,
)
from ._drain import DRAINING_REASON, RETRY_AFTER, draining_answer, draining_notification
from ._envelope import BadMessage, decode_message
from ._reaping import ClientKeys, client_key, reap_absent, reap_tick

if TYPE_CHECKING:
    from ._backends import AgentBackend
    from ._guard import ClientGuard
    from ._principals import Principals

__all__ = ("AcpAsgiApp", "ConnectionHub")

logger = logging.getLogger("subagents.remote")

Scope = MutableMapping[str, Any]
AsgiMessage = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[AsgiMessage]]
Send = Callable[[AsgiMessage], Awaitable[None]]

HEALTH_PATHS: Final = frozenset({"/health", "/healthz"})
DELETE_WAIT: Final = 10.0
"""How long a DELETE waits for the agent to be stopped (its process reaped) before the 202."""
DISCARD_BYTES: Final = 64 * 1024 * 1024
"""Bytes of an oversize body read (and dropped) before it is answered 413."""
DISCARD_SECONDS: Final = 30.0
"""Seconds a request body may take to arrive before the request is answered anyway."""
_CONNECTION_KEY: Final = CONNECTION_HEADER.lower().encode()
_SESSION_KEY: Final = SESSION_HEADER.lower().encode()
_PRINCIPAL: Final = "subagents.principal"
"""The key of the request's principal in its ASGI scope (set by the token check)."""


class ClientGone(Exception):
    """The client disconnected while its request was read."""


@final
class ConnectionHub:
    """The server's connections: made, counted, reaped when idle, drained at shutdown."""

    def __init__(
        self,
        backend: AgentBackend,
        limits: ServerLimits,
        principals: Principals | None,
        guard: ClientGuard | None = None,
    ) -> None:
        from ._guard import ClientGuard

        self.backend = backend
        self.limits = limits
        self.principals = principals
        self.guard = guard or ClientGuard(principals)
        self.connections: dict[str, RemoteConnection] = {}
        self.draining = False
        self._starting = 0
        self.keys = ClientKeys(limits)
        """The connections of each principal (or client address), bounded."""
        self._task_group: anyio.abc.TaskGroup | None = None

    def bind(self, task_group: anyio.abc.TaskGroup) -> None:
        """The task group that owns every connection's agent."""
        self._task_group = task_group

    @property
    def session_count(self) -> int:
        return sum(conn.session_count for conn in self.connections.values())

    def get(self, connection_id: str, principal: str | None) -> RemoteConnection | None:
        """The live connection ``connection_id`` when ``principal`` made it (else ``None``)."""
        conn = self.connections.get(connection_id)
        if conn is None or conn.stopping or conn.principal != principal:
            return None
        return conn

    def refusal(self, key: str | None = None) -> tuple[int, str] | None:
        """Why no new connection is made now (503), if so; ``key``: what it would count for
        (:func:`~subagents.remote._reaping.client_key`)."""
        if self.draining or self._task_group is None:
            return 503, DRAINING_REASON
        if len(self.connections) + self._starting >= self.limits.max_connections:
            return 503, f"too many connections (at most {self.limits.max_connections})"
        if key is not None and (why := self.keys.refusal(key, self.connections.values())):
            return 503, why
        return None

    async def open(self, conn: RemoteConnection) -> None:
        """Start ``conn``'s agent (raises when it cannot start)."""
        assert self._task_group is not None
        self._starting += 1
        try:
            with self.keys.starting(conn.presence.key):
                await self._task_group.start(self._run, conn)
        finally:
            self._starting -= 1
        if not conn.finished.is_set():
            self.connections[conn.id] = conn

    async def _run(
        self,
        conn: RemoteConnection,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        try:
            await conn.run(self.backend, task_status=task_status)
        except Exception:
            if not conn.started.is_set():
                raise  # to open(): the agent could not start
            logger.exception("connection %s: the agent's link failed", conn.id)
        finally:
            self.connections.pop(conn.id, None)

    async def reap_idle(self) -> None:
        """Close connections idle for ``idle_timeout`` (no request, no open stream), and
        those whose HTTP client is gone (:mod:`subagents.remote._reaping`)."""
        idle_timeout = self.limits.idle_timeout
        tick = reap_tick(self.limits)
        while True:
            await anyio.sleep(tick)
            now = anyio.current_time()
            for conn in list(self.connections.values()):
                if conn.is_idle(now, idle_timeout):
                    conn.stop(f"idle for {idle_timeout:g} s")
            reap_absent(list(self.connections.values()), now)

    async def drain(self) -> None:
        """Stop accepting connections, cancel the turns in flight (answered, bounded), close
        the streams, stop every agent (processes reaped)."""
        self.draining = True
        conns = list(self.connections.values())
        for conn in conns:
            conn.outlet.put_nowait(draining_notification())  # the client learns why, first
            conn.stop(DRAINING_REASON, drain=True)  # a WebSocket closes saying so
        with anyio.move_on_after(self.limits.drain_timeout + DELETE_WAIT):
            for conn in conns:
                await conn.finished.wait()
        with anyio.move_on_after(2.0):  # the streams write what is buffered, then end
            for conn in conns:
                for outlet in conn.outlets():
                    await outlet.readers_gone.wait()


@final
class AcpAsgiApp:
    """The ASGI application: ``/acp`` (HTTP and WebSocket) and ``/health``."""

    def __init__(self, hub: ConnectionHub) -> None:
        self.hub = hub

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "websocket":
            await self._websocket(scope, receive, send)
        elif kind == "lifespan":
            await _lifespan(receive, send)

    # ------------------------------------------------------------------ HTTP

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        method: str = scope["method"]
        try:
            body = await read_body(receive, self.hub.limits.max_message_bytes)
        except ClientGone:
            return
        if path in HEALTH_PATHS and method in ("GET", "HEAD"):
            hub = self.hub
            health: dict[str, JsonValue] = {
                "status": "draining" if hub.draining else "ok",
                "connections": len(hub.connections),
                "sessions": hub.session_count,
            }
            # 503 while draining: a health check expecting 200 takes the instance out.
            status = 503 if hub.draining else 200
            await _respond(send, status, health, head=method == "HEAD")
            return
        if path != ENDPOINT_PATH:
            await _respond(send, 404, {"error": f"no such endpoint (ACP is at {ENDPOINT_PATH})"})
            return
        if not self._authorized(scope):
            await _respond(
                send,
                401,
                {"error": "a bearer token is required"},
                [(b"www-authenticate", b'Bearer realm="acp"')],
            )
            return
        if method == "POST":
            await self._post(scope, body, receive, send)
        elif method == "GET":
            await self._get(scope, receive, send)
        elif method == "DELETE":
            await self._delete(scope, send)
        else:
            await _respond(
                send,
                405,
                {"error": f"{method} is not served at {ENDPOINT_PATH}"},
                [(b"allow", b"GET, POST, DELETE")],
            )

    def _authorized(self, scope: Scope) -> bool:
        """Whether the request's token names a principal (always, without tokens); the
        principal is kept in the scope (:func:`_principal`)."""
        principals = self.hub.principals
        if principals is None:
            scope[_PRINCIPAL] = None
            return True
        scope[_PRINCIPAL] = name = principals.identify(_header(scope, b"authorization"))
        return name is not None

    async def _post(self, scope: Scope, body: bytes | None, receive: Receive, send: Send) -> None:
        content_type = (_header(scope, b"content-type") or "").split(";", 1)[0].strip().lower()
        if content_type != "application/json":
            await _respond(send, 415, {"error": "Content-Type must be application/json"})
            return
        limit = self.hub.limits.max_message_bytes
        if body is None:
            await _respond(send, 413, {"error": f"the body is larger than {limit} bytes"})
            return
        msg = decode_message(body)
        if isinstance(msg, BadMessage):  # answered before any connection or agent is made
            if msg.batch:
                await _respond(send, 501, {"error": msg.reason})
            else:
                await _respond(send, 400, msg.response())
            return
        connection_id = _header(scope, _CONNECTION_KEY)
        session_header = _header(scope, _SESSION_KEY)
        if connection_id is None:
            if msg.get("method") == "initialize" and "id" in msg:
                await self._initialize(msg, scope, receive, send, _principal(scope))
            else:
                await _respond(send, 400, {"error": f"{CONNECTION_HEADER} is required"})
            return
        conn = self.hub.get(connection_id, _principal(scope))
        if conn is None or conn.kind != "http":
            await self._unknown_connection(send, msg)
            return
        with conn.presence.request():
            refusal = conn.check_post(msg, session_header)
            if refusal is not None:
                await _respond(send, refusal.status, {"error": refusal.reason})
                return
            try:
                await conn.post(msg, session_header)
            except ConnectionStopped:
                if self.hub.draining:
                    await _refuse_draining(send, msg)
                    return
                await _respond(send, 404, {"error": f"the connection ended: {conn.stop_reason}"})
                return
            await _respond(send, 202, None)

    async def _initialize(
        self,
        message: dict[str, JsonValue],
        scope: Scope,
        receive: Receive,
        send: Send,
        principal: str | None,
    ) -> None:
        hub = self.hub
        key = client_key(principal, scope)
        refusal = hub.refusal(key)
        if refusal is not None:
            if hub.draining:
                await _refuse_draining(send, message)
                return
            status, reason = refusal
            await _respond(send, status, {"error": reason}, [RETRY_AFTER])
            return
        conn = RemoteConnection("http", hub.limits, principal=principal, guard=hub.guard)
        conn.presence.key = key
        gone = anyio.Event()
        failure: Exception | None = None
        answer: dict[str, JsonValue] | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(_note_disconnect, receive, gone)
            try:
                await hub.open(conn)
            except Exception as exc:
                failure = exc
            else:
                answer = await conn.initialize(message)
            tg.cancel_scope.cancel()
        if failure is not None:
            logger.warning("the agent could not be started: %s", failure)
            await _respond(send, 502, {"error": f"the agent could not be started: {failure}"})
            return
        if gone.is_set():
            # A client cancelled while its agent started: it never gets the connection id
            # (so it cannot DELETE), and the agent would wait for the idle timeout.
            conn.stop("the client left before the answer to initialize")
            return
        if answer is None:
            conn.stop("no answer to initialize")
            await _respond(send, 504, {"error": "the agent did not answer initialize"})
            return
        if "error" in answer:
            conn.stop("initialize failed")
            await _respond(send, 200, answer)
            return
        conn.presence.greeted()  # the handshake grace counts from here
        await _respond(send, 200, answer, [(_CONNECTION_KEY, conn.id.encode())])

    async def _unknown_connection(self, send: Send, message: dict[str, JsonValue] | None) -> None:
        """A request naming a connection that is not (or no longer) here: 404, or, once the
        server drains, 503 saying so (the drain may have ended it: :mod:`._drain`)."""
        if self.hub.draining:
            await _refuse_draining(send, message)
        else:
            await _respond(send, 404, {"error": "unknown connection"})

    async def _get(self, scope: Scope, receive: Receive, send: Send) -> None:
        accept = (_header(scope, b"accept") or "").lower()
        if ACCEPT_SSE not in accept:
            await _respond(send, 406, {"error": f"Accept must include {ACCEPT_SSE}"})
            return
        connection_id = _header(scope, _CONNECTION_KEY)
        if connection_id is None:
            await _respond(send, 400, {"error": f"{CONNECTION_HEADER} is required"})
            return
        conn = self.hub.get(connection_id, _principal(scope))
        if conn is None or conn.kind != "http":
            await self._unknown_connection(send, None)
            return
        session_id = _header(scope, _SESSION_KEY)
        outlet = conn.outlet if session_id is None else conn.session_outlet(session_id)
        if outlet is None:
            await _respond(send, 404, {"error": "unknown session for this connection"})
            return
        with conn.presence.request():
            await _stream(conn, outlet, receive, send, session_id)

    async def _delete(self, scope: Scope, send: Send) -> None:
        connection_id = _header(scope, _CONNECTION_KEY)
        if connection_id is None:
            await _respond(send, 400, {"error": f"{CONNECTION_HEADER} is required"})
            return
        conn = self.hub.get(connection_id, _principal(scope))
        if conn is None:
            await self._unknown_connection(send, None)
            return
        conn.stop("DELETE")
        with anyio.move_on_after(DELETE_WAIT):
            await conn.finished.wait()
        await _respond(send, 202, None)

    # ------------------------------------------------------------------ WebSocket

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        first = await receive()
        if first["type"] != "websocket.connect":
            return
        hub = self.hub
        if scope["path"] != ENDPOINT_PATH:
            await _deny(scope, send, 404, {"error": "no such endpoint"})
            return
        if not self._authorized(scope):
            await _deny(
                scope,
                send,
                401,
                {"error": "a bearer token is required"},
                [(b"www-authenticate", b'Bearer realm="acp"')],
            )
            return
        key = client_key(_principal(scope), scope)
        refusal = hub.refusal(key)
        if refusal is not None:
            await _deny(scope, send, refusal[0], {"error": refusal[1]})
            return
        conn = RemoteConnection(
            "websocket", hub.limits, principal=_principal(scope), guard=hub.guard
        )
        conn.presence.key = key
        try:
            await hub.open(conn)
        except Exception as exc:
            logger.warning("the agent could not be started: %s", exc)
            await _deny(scope, send, 502, {"error": f"the agent could not be started: {exc}"})
            return
        await send({"type": "websocket.accept", "headers": [(_CONNECTION_KEY, conn.id.encode())]})
        conn.open_streams += 1
        reader = conn.outlet.attach()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_websocket_out, conn, conn.outlet, reader, send, tg.cancel_scope)
                await _websocket_in(conn, receive, send)
                tg.cancel_scope.cancel()
        finally:
            conn.outlet.detach(reader)
            conn.open_streams -= 1
            conn.stop("the WebSocket closed", drain=True)  # its turns cancelled first


# ---------------------------------------------------------------------- streams


async def _stream(
    conn: RemoteConnection, outlet: Outlet, receive: Receive, send: Send, session_id: str | None
) -> None:
    """An SSE response carrying ``outlet``'s messages until it ends, the client leaves, or
    another GET takes the stream over. A session's stream names its session in the
    ``Acp-Session-Id`` response header: a load balancer learns where the session lives (a
    cold resume is routed back here by it)."""
    headers = [
        (b"content-type", b"text/event-stream"),
        (b"cache-control", b"no-store"),
        (b"x-accel-buffering", b"no"),
    ]
    if session_id is not None:
        headers.append((_SESSION_KEY, session_id.encode("latin-1", "replace")))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    keepalive = conn.limits.keepalive_interval
    conn.open_streams += 1
    conn.touch()
    reader = outlet.attach()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_wait_disconnect, receive, tg.cancel_scope)
            with reader:
                await _body(send, b": stream open\n\n")
                while True:
                    text: str | None = None
                    with anyio.move_on_after(keepalive):
                        try:
                            text = await outlet.receive()
                        except (anyio.EndOfStream, anyio.ClosedResourceError):
                            break
                    await _body(send, b": keep-alive\n\n" if text is None else encode_sse(text))
            tg.cancel_scope.cancel()
    finally:
        outlet.detach(reader)
        conn.open_streams -= 1
        conn.touch()
        with anyio.CancelScope(shield=True), anyio.move_on_after(1.0), suppress(Exception):
            await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _refuse_draining(send: Send, message: dict[str, JsonValue] | None) -> None:
    """503 with ``Retry-After``: the server drains; a request gets its JSON-RPC error."""
    body: JsonValue = (
        draining_answer(message["id"])
        if message is not None and "id" in message
        else {"error": DRAINING_REASON}
    )
    await _respond(send, 503, body, [RETRY_AFTER])


async def _note_disconnect(receive: Receive, gone: anyio.Event) -> None:
    """Set ``gone`` when the client disconnects (the request's body is read already)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
            return


async def _wait_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return


async def _websocket_in(conn: RemoteConnection, receive: Receive, send: Send) -> None:
    """Frames from the client, to the agent, until the socket closes."""
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return
        if message["type"] != "websocket.receive":
            continue
        text: str | None = message.get("text")
        if text is None:
            continue  # binary frames are ignored
        parsed = decode_message(text)
        if isinstance(parsed, BadMessage):
            await _ws_send(send, parsed.response())
            continue
        try:
            await conn.post_websocket(parsed)
        except ConnectionStopped:
            return


async def _websocket_out(
    conn: RemoteConnection,
    outlet: Outlet,
    reader: anyio.CancelScope,
    send: Send,
    everything: anyio.CancelScope,
) -> None:
    """The agent's messages, to the client, until the connection ends (then the socket)."""
    with reader:
        while True:
            try:
                text = await outlet.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                break
            await send({"type": "websocket.send", "text": text})
        await send({"type": "websocket.close", "code": 1000, "reason": conn.stop_reason[:120]})
    everything.cancel()


async def _ws_send(send: Send, message: dict[str, JsonValue]) -> None:
    await send({"type": "websocket.send", "text": json.dumps(message, separators=(",", ":"))})


# ---------------------------------------------------------------------- helpers


def _principal(scope: Scope) -> str | None:
    """The principal the request's token named (``None``: the server has no tokens)."""
    name: str | None = scope.get(_PRINCIPAL)
    return name


def _header(scope: Scope, name: bytes) -> str | None:
    headers: list[tuple[bytes, bytes]] = scope["headers"]
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The request body, or ``None`` when it is longer than ``limit``.

    The body is read to its end either way (beyond ``limit`` discarded, bounded by
    :data:`DISCARD_BYTES` and :data:`DISCARD_SECONDS`) before any response: hypercorn 0.18's
    HTTP/2 protocol fails the whole TCP connection (and on trio the server) on a DATA frame
    for a stream whose response is complete (``KeyError`` in ``_handle_events``).
    """
    body = bytearray()
    size = 0
    with anyio.move_on_after(DISCARD_SECONDS):
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientGone
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size <= limit:
                body += chunk
            if not message.get("more_body", False) or size > max(DISCARD_BYTES, limit):
                break
    return bytes(body) if size <= limit else None


async def _body(send: Send, data: bytes) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": True})


async def _respond(
    send: Send,
    status: int,
    body: JsonValue | None,
    headers: list[tuple[bytes, bytes]] | None = None,
    *,
    head: bool = False,
) -> None:
    payload = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
    all_headers = list(headers or [])
    if body is not None:
        all_headers.append((b"content-type", b"application/json"))
    all_headers.append((b"content-length", str(len(payload)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": b"" if head else payload, "more_body": False})


async def _deny(
    scope: Scope,
    send: Send,
    status: int,
    body: JsonValue,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """Refuse a WebSocket upgrade with an HTTP response (where the server supports it)."""
    extensions: dict[str, object] = scope.get("extensions") or {}
    if "websocket.http.response" not in extensions:
        await send({"type": "websocket.close", "code": 1008})
        return
    payload = json.dumps(body, separators=(",", ":")).encode()
    all_headers = [*(headers or []), (b"content-type", b"application/json")]
    await send({"type": "websocket.http.response.start", "status": status, "headers": all_headers})
    await send({"type": "websocket.http.response.body", "body": payload, "more_body": False})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
