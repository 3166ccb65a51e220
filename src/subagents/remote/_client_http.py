"""The client end of ACP over Streamable HTTP (the RFD's POST / GET-SSE / DELETE profile).

:func:`open_http_link` yields an :class:`HttpLink`: the byte stream the JSON-RPC peer runs
over, unchanged. What the peer writes, line by line:

- ``initialize`` (the first line) is POSTed without ``Acp-Connection-Id``; the server answers
  ``200`` with the JSON-RPC answer as body and the ``Acp-Connection-Id`` header. The
  connection-scoped GET stream (``Accept: text/event-stream``) is opened before the answer is
  handed to the peer;
- every later message is POSTed with ``Acp-Connection-Id`` (``202`` expected), and with
  ``Acp-Session-Id`` when it is about a session: a request or notification whose method is
  not connection-scoped and whose params name a ``sessionId`` (``session/prompt``,
  ``session/cancel``, ...), the answer to a request the agent sent about a session (the
  session it came on is remembered), a ``$/cancel_request`` of a session-scoped request;
- an answer carrying a new ``sessionId`` (``session/new``, ``session/fork``) opens that
  session's GET stream before the peer sees the answer, so that nothing of the session is
  missed; ``session/load`` and ``session/resume`` open it before their POST (the RFD's resume
  flow; a server that does not know the session yet, 404, is asked without it);
- leaving the block ends the streams and DELETEs the connection (bounded).

Every GET stream feeds the peer, whichever it is (a server may route a session's message to
the connection's stream). Cookies the server sets are kept and sent back for the connection
(one ``httpx.AsyncClient`` per connection). HTTP/2: ``https://`` offers ``h2`` by ALPN
(``http2=False``: HTTP/1.1 only); ``http://`` speaks HTTP/1.1 unless ``http2=True`` asks for
HTTP/2 with prior knowledge (h2c, no fallback): a load balancer in front mostly speaks
HTTP/1.1 on plain HTTP, and a failed h2c try would cost every connection an attempt.

A POST refused with 401 or 403 (the credentials), a 5xx (the server), a 404 on a POST naming
no session (the connection is unknown or ended), a non-200 ``initialize``, a stream that ends
or breaks while the connection is open, a refused connection: the link fails (see
:mod:`._client_link`) naming the URL, the status and the cause; nothing is retried or
reconnected. Any other refusal refuses that message only (the connection goes on, as the
RFD's per-POST statuses allow): a request is answered here with a JSON-RPC error for its id
(the server's JSON-RPC error body when it sent one; else -32002 for a 404, a session the
server does not know, or -32600, naming the URL, the status and the body's start); a
notification or an answer is logged and dropped. :meth:`HttpLink.send_raw` POSTs lines that
are no JSON-RPC message as they are (``subagents bridge``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Final, cast, final

import anyio
import anyio.abc

from ..protocol.acp_remote import (
    ACCEPT_SSE,
    CONNECTION_HEADER,
    CONNECTION_SCOPED_METHODS,
    PROTOCOL_VERSION_HEADER,
    SESSION_HEADER,
    RequestScopes,
    SseDecoder,
    session_id_of,
)
from ..protocol.jsonrpc import ErrorCode, JsonValue
from ..rpc import CANCEL_REQUEST_METHOD
from ._client_link import (
    MessageLink,
    is_message,
    jsonrpc_error_of,
    lines_of,
    refusal_answer,
    status_reason,
)

if TYPE_CHECKING:
    import ssl

    import httpx

__all__ = ("HttpLink", "open_http_link")

logger = logging.getLogger("subagents.remote.client")

_OPENS_SESSION: Final = frozenset({"session/new", "session/fork"})
"""Requests whose answer names a new session (its stream is opened before the answer)."""
_ATTACHES_SESSION: Final = frozenset({"session/load", "session/resume"})
"""Requests about an existing session whose stream is opened before the POST."""
_ENDS_SESSION: Final = frozenset({"session/close", "session/delete"})
"""Requests after which the server may end the session's stream."""

JSON_TYPE: Final = "application/json"
INITIALIZE_GRACE: Final = 1.0
"""Seconds a client leaving during its ``initialize`` POST still waits for the answer: one
already on its way names the connection, which is then DELETEd (the server stops the agent
of a connection whose client left before the answer, but cannot know of one that left after
it was written)."""
STREAMS_END_GRACE: Final = 2.0
"""Seconds a stream the server ended waits for the connection's other streams to end too,
before the link fails (what they carried is read first)."""


@final
class _NoId:
    """What a notification or an answer POSTs as its request id: none."""


_NO_ID: Final = _NoId()


def _key(request_id: JsonValue) -> tuple[str, JsonValue]:
    return (type(request_id).__name__, request_id)


@final
class HttpLink(MessageLink):
    """Streamable HTTP as the peer's byte stream (made by :func:`open_http_link`)."""

    def __init__(
        self,
        url: str,
        clients: _Clients,
        task_group: anyio.abc.TaskGroup,
        *,
        timeout: float,
        token_sent: bool,
        max_message_bytes: int,
    ) -> None:
        super().__init__(url)
        self._clients = clients
        self._tg = task_group
        self.timeout = timeout
        self.token_sent = token_sent
        self.max_message_bytes = max_message_bytes
        self.connection_id: str | None = None
        """The server's ``Acp-Connection-Id`` (once ``initialize`` was answered)."""
        self.http_version: str | None = None
        """The HTTP version ``initialize`` went over (``"HTTP/2"``, ``"HTTP/1.1"``)."""
        self.resuming: str | None = None
        """The session the connection is made to resume (``Acp-Session-Id`` on initialize)."""
        self.session_streams: set[str] = set()
        """Sessions whose GET stream is open."""
        self._ending_sessions: set[str] = set()
        self._agent_requests = RequestScopes()
        self._our_requests: dict[tuple[str, JsonValue], tuple[str, str | None, str | None]] = {}
        """Our requests in flight: method, ``Acp-Session-Id`` sent, ``sessionId`` named."""
        self._session_ready: dict[str, anyio.Event] = {}
        self._answer_first: dict[str, anyio.Event] = {}
        """Sessions whose stream was opened for the answer that made them: their messages wait
        until that answer is handed to the peer (an update before it names a session the
        client does not know yet)."""
        self._reading: set[str] = set()
        """The streams being read (``"connection"``, ``"session <id>"``)."""
        self._stream_ended = anyio.Event()
        self._protocol_version: str | None = None
        self._initializing: anyio.Event | None = None
        self._initialize_scope: anyio.CancelScope | None = None

    # -- what the peer writes

    async def send(self, item: bytes) -> None:
        for line in lines_of(item):
            self.check_open()
            message = json.loads(line)
            if not isinstance(message, dict):
                raise self.broken(f"{self.url}: the client wrote a batch or a non-object")
            await self._deliver(cast(dict[str, JsonValue], message), line)

    async def send_raw(self, item: bytes) -> None:
        """Each line as it is: a JSON-RPC message goes the way :meth:`send` takes it (once
        the connection is made, or when it is ``initialize``); anything else (malformed JSON,
        a batch, an object that is no message, a message before ``initialize``) is POSTed as
        it is, with the connection's headers. A refusal comes back as a message: the
        server's JSON-RPC error body, else an error naming the status (401 and 403 fail the
        link)."""
        for line in lines_of(item):
            self.check_open()
            try:
                message: JsonValue = json.loads(line)
            except ValueError:
                message = None
            if is_message(message):
                envelope = cast(dict[str, JsonValue], message)
                opening = envelope.get("method") == "initialize" and "id" in envelope
                if self.connection_id is not None or opening:
                    await self._deliver(envelope, line)
                    continue
            await self._post_raw(line, message)

    async def _post_raw(self, line: bytes, message: JsonValue) -> None:
        import httpx

        from ._http_body import post

        what = "a line that is not a JSON-RPC message"
        request_id: JsonValue = None
        if is_message(message):
            envelope = cast(dict[str, JsonValue], message)
            what = f"{envelope.get('method') or 'an answer'} before initialize"
            request_id = envelope.get("id")
        headers = self._headers(None)
        headers["Content-Type"] = JSON_TYPE
        try:
            response = await post(self._clients.client, self.url, line, headers)
        except httpx.HTTPError as exc:
            raise self.broken(
                f"POST {what} to {self.url} failed: {type(exc).__name__}: {exc}"
            ) from exc
        if response.is_success:
            if response.status_code == 200 and response.content.strip():
                await self._on_text(response.text, None)
            return
        if response.status_code in (401, 403):
            raise self.broken(self._status(response, f"POST {what}"), status=response.status_code)
        body = jsonrpc_error_of(response.content)
        if body is not None:
            await self.push_text(json.dumps(body, separators=(",", ":")))
            return
        await self.push_text(refusal_answer(request_id, self._refusal_error(response, what)))

    async def _deliver(self, message: dict[str, JsonValue], body: bytes) -> None:
        method = message.get("method")
        if isinstance(method, str):
            if method == "initialize" and self.connection_id is None:
                await self._initialize(body)
                return
            if self.connection_id is None:
                raise self.broken(f"{self.url}: {method} written before initialize")
            session = await self._session_of_request(message, method)
            named = session_id_of(message)
            request_id: JsonValue | _NoId = _NO_ID
            if "id" in message:
                request_id = message["id"]
                self._our_requests[_key(request_id)] = (method, session, named)
            accepted = await self._post(body, session, method, request_id)
            if accepted and method in _ATTACHES_SESSION and named is not None and session is None:
                # A server that knows the session only from the POST on (404 before it):
                # its stream now, before the answer (a load's replay goes there).
                await self._open_session(named, missing_ok=True)
            return
        if self.connection_id is None:
            raise self.broken(f"{self.url}: an answer written before initialize")
        _, session = self._agent_requests.pop(message.get("id"))
        await self._post(body, session, "an answer to the agent's request", _NO_ID)

    async def _session_of_request(self, message: dict[str, JsonValue], method: str) -> str | None:
        """The ``Acp-Session-Id`` a client message carries (and the streams it needs first)."""
        if method == CANCEL_REQUEST_METHOD:
            params = message.get("params")
            target = params.get("requestId") if isinstance(params, dict) else None
            known = self._our_requests.get(_key(target))
            return None if known is None else known[1]
        session = session_id_of(message)
        if session is None:
            return None
        if method in _ATTACHES_SESSION:
            # The RFD's resume flow: the session's stream first, then the POST naming it.
            return session if await self._open_session(session, missing_ok=True) else None
        if method in _ENDS_SESSION:  # its stream may end (session/delete names no header)
            self._ending_sessions.add(session)
        if method in CONNECTION_SCOPED_METHODS:
            return None
        return session

    async def _initialize(self, body: bytes) -> None:
        # The POST runs in the link's task group, so that a caller cancelled meanwhile
        # leaves it running: the link's exit waits for it (bounded) to learn what to DELETE.
        answered = self._initializing = anyio.Event()
        outcome: list[httpx.Response | Exception] = []
        self._tg.start_soon(self._post_initialize, body, outcome, answered)
        await answered.wait()
        if not outcome:
            raise self.broken(self.failure or f"POST initialize to {self.url} was abandoned")
        if isinstance(outcome[0], Exception):
            raise outcome[0]
        response = outcome[0]
        if response.status_code != 200:
            raise self.broken(self._status(response, "initialize"), status=response.status_code)
        connection_id = response.headers.get(CONNECTION_HEADER)
        if not connection_id:
            raise self.broken(
                f"{self.url} answered initialize without an {CONNECTION_HEADER} header"
            )
        self.connection_id = connection_id
        self.http_version = response.http_version
        try:
            answer = json.loads(response.content)
        except ValueError:
            answer = None
        if isinstance(answer, dict):
            result = cast(dict[str, JsonValue], answer).get("result")
            version = result.get("protocolVersion") if isinstance(result, dict) else None
            if isinstance(version, int):
                self._protocol_version = str(version)
        if not await self._open_stream(None):
            raise self.broken(self.failure or f"{self.url}: no connection stream")
        await self.push_text(response.text)

    async def _post_initialize(
        self, body: bytes, outcome: list[httpx.Response | Exception], answered: anyio.Event
    ) -> None:
        # Shielded: a cancellation of the link's owner does not abandon an answer on its way;
        # settle_initialize ends the POST after the grace.
        with anyio.CancelScope(shield=True) as self._initialize_scope:
            try:
                response = await self._clients.initialize(self.url, body, self, self.resuming)
            except Exception as exc:  # the link's failure (or a defect): the caller raises it
                outcome.append(exc)
            else:
                outcome.append(response)
                if response.status_code == 200:
                    self.connection_id = response.headers.get(CONNECTION_HEADER) or None
            finally:
                answered.set()

    async def settle_initialize(self) -> None:
        """On the way out: an ``initialize`` POST in flight gets :data:`INITIALIZE_GRACE`
        seconds to be answered (its connection is then known, and DELETEd)."""
        if self._initializing is not None and not self._initializing.is_set():
            with anyio.move_on_after(INITIALIZE_GRACE, shield=True):
                await self._initializing.wait()
            if self._initialize_scope is not None:
                self._initialize_scope.cancel()

    async def _post(
        self, body: bytes, session: str | None, what: str, request_id: JsonValue | _NoId
    ) -> bool:
        """POST one message; ``False`` when the server refused it (see :meth:`_refused`)."""
        import httpx

        from ._http_body import post

        headers = self._headers(session)
        headers["Content-Type"] = JSON_TYPE
        try:
            response = await post(self._clients.client, self.url, body, headers)
        except httpx.HTTPError as exc:
            raise self.broken(
                f"POST {what} to {self.url} failed: {type(exc).__name__}: {exc}"
            ) from exc
        if not response.is_success:
            await self._refused(response, session, what, request_id)
            return False
        if response.status_code == 200 and response.content.strip():
            await self._on_text(response.text, session)
        return True

    async def _refused(
        self,
        response: httpx.Response,
        session: str | None,
        what: str,
        request_id: JsonValue | _NoId,
    ) -> None:
        """A POST answered with an error status. The connection is lost (the link fails) on
        401 and 403 (the credentials), 5xx (the server), and 404 on a POST naming no session
        (the connection is unknown or ended); otherwise only the message was refused: a
        request is answered here with a JSON-RPC error for its id, a notification or an
        answer is logged and dropped."""
        status = response.status_code
        if status in (401, 403) or status >= 500 or (status == 404 and session is None):
            raise self.broken(self._status(response, f"POST {what}"), status=status)
        if isinstance(request_id, _NoId):
            logger.warning("%s (dropped)", self._status(response, f"POST {what}"))
            return
        self._our_requests.pop(_key(request_id), None)
        await self.push_text(refusal_answer(request_id, self._refusal_error(response, what)))

    def _refusal_error(self, response: httpx.Response, what: str) -> JsonValue:
        """The error standing for a refused request: the server's JSON-RPC error when its
        body is one, else -32002 for 404 (resource not found) or -32600, naming the URL, the
        status and the body's start."""
        body = jsonrpc_error_of(response.content)
        if body is not None:
            return body["error"]
        code = (
            ErrorCode.RESOURCE_NOT_FOUND
            if response.status_code == 404
            else (ErrorCode.INVALID_REQUEST)
        )
        return {"code": int(code), "message": self._status(response, f"POST {what}")}

    def _headers(self, session: str | None) -> dict[str, str]:
        headers: dict[str, str] = {}
        if self.connection_id is not None:
            headers[CONNECTION_HEADER] = self.connection_id
        if self._protocol_version is not None:
            headers[PROTOCOL_VERSION_HEADER] = self._protocol_version
        if session is not None:
            headers[SESSION_HEADER] = session
        return headers

    def _status(self, response: httpx.Response, what: str) -> str:
        from ._drain import is_draining_refusal

        if is_draining_refusal(response.status_code, response.content):
            self.draining = True
            return f"the server at {self.url} is draining (HTTP 503 for {what}): it shuts down"
        return status_reason(
            self.url, response.status_code, what, response.text, token_sent=self.token_sent
        )

    # -- the GET streams

    async def _open_session(self, session: str, *, missing_ok: bool = False) -> bool:
        """Open the session's stream unless it is open; ``False`` when the server does not know
        the session and ``missing_ok`` (else the link fails)."""
        ready = self._session_ready.get(session)
        if ready is not None:  # open, or being opened by another task
            await ready.wait()
            if session in self.session_streams:
                return True
        ready = self._session_ready[session] = anyio.Event()
        try:
            opened = await self._open_stream(session, missing_ok=missing_ok)
        finally:
            ready.set()
        if opened:
            self.session_streams.add(session)
        else:
            del self._session_ready[session]  # another attempt may find it
            if self.failure is not None:
                raise self.broken(self.failure)
        return opened

    async def _open_stream(self, session: str | None, *, missing_ok: bool = False) -> bool:
        """Start reading a GET stream; returns once the server answered it (``True``: open)."""
        opened = await self._tg.start(self._read_stream, session, missing_ok)
        return bool(opened)

    async def _read_stream(
        self,
        session: str | None,
        missing_ok: bool,
        *,
        task_status: anyio.abc.TaskStatus[bool],
    ) -> None:
        import httpx

        scope = "connection" if session is None else f"session {session}"
        headers = self._headers(session)
        headers["Accept"] = ACCEPT_SSE
        async with self._clients.stream_client() as client:
            request = client.build_request(
                "GET", self.url, headers=headers, timeout=httpx.Timeout(self.timeout, read=None)
            )
            try:
                with anyio.fail_after(self.timeout):
                    response = await client.send(request, stream=True)
            except (httpx.HTTPError, TimeoutError) as exc:
                self.fail(
                    f"GET of the {scope} stream of {self.url} failed: {type(exc).__name__}: {exc}"
                )
                task_status.started(False)
                return
            await self._serve_stream(response, session, scope, missing_ok, task_status)

    async def _serve_stream(
        self,
        response: httpx.Response,
        session: str | None,
        scope: str,
        missing_ok: bool,
        task_status: anyio.abc.TaskStatus[bool],
    ) -> None:
        try:
            if response.status_code == 404 and missing_ok:
                logger.debug("%s: %s unknown to the server (404)", self.url, scope)
                task_status.started(False)
                return
            if response.status_code != 200:
                await response.aread()
                self.fail(self._status(response, f"the {scope} stream"))
                task_status.started(False)
                return
            task_status.started(True)
            self._reading.add(scope)
            try:
                reason = await self._read_events(response, session)
            finally:
                self._reading.discard(scope)
                self._stream_ended.set()
                self._stream_ended = anyio.Event()
            if session is not None and (self.closing or session in self._ending_sessions):
                self.session_streams.discard(session)
                self._session_ready.pop(session, None)
                return
            if reason == "ended":
                await self._others_end()
            self.fail(f"the {scope} stream of {self.url} {reason}")
        finally:
            with anyio.move_on_after(self.timeout, shield=True):
                await response.aclose()

    async def _others_end(self) -> None:
        """A server that ends a stream ends them all: what it wrote on the others before is
        read first (a turn's answer on its session's stream, when the connection's ended),
        for at most :data:`STREAMS_END_GRACE` seconds."""
        with anyio.move_on_after(STREAMS_END_GRACE):
            while self._reading and not self.closing:
                await self._stream_ended.wait()

    async def _read_events(self, response: httpx.Response, session: str | None) -> str:
        """Hand the stream's messages to the peer until it ends; returns how it ended."""
        import httpx

        decoder = SseDecoder(max_event_bytes=self.max_message_bytes)
        try:
            async for chunk in response.aiter_raw():
                # Shielded: a cancellation lands in the network read, where it finishes
                # httpx's generators, never between two chunks, where it would leave them to
                # the garbage collector (trio warns). Each wait in here is bounded: the peer
                # reads what is pushed until the link's owner closes it, a stream opens
                # within the time-out.
                with anyio.CancelScope(shield=True):
                    for event, data in decoder.feed(chunk):
                        if event == "message":
                            await self._on_text(data, session)
        except httpx.HTTPError as exc:
            return f"broke: {type(exc).__name__}: {exc}"
        except ValueError as exc:  # an event over the bound
            return f"was abandoned: {exc}"
        return "ended"

    async def _on_text(self, text: str, session: str | None) -> None:
        """One message from the server: note what answering it needs, then hand it over."""
        try:
            message: JsonValue = json.loads(text)
        except ValueError:
            await self.push_text(text)
            return
        if session is not None and (answer := self._answer_first.get(session)) is not None:
            with anyio.move_on_after(self.timeout):  # the other task hands it over at once
                await answer.wait()
            self._answer_first.pop(session, None)
        handed: anyio.Event | None = None
        if isinstance(message, dict):
            handed = await self._before_peer(cast(dict[str, JsonValue], message), session)
        try:
            await self.push_text(text)
        finally:
            if handed is not None:
                handed.set()

    async def _before_peer(
        self, message: dict[str, JsonValue], session: str | None
    ) -> anyio.Event | None:
        """Note what answering ``message`` needs; for the answer that made a session, open the
        session's stream and return the event to set once the answer is handed over."""
        if "id" not in message:
            return None
        if "method" in message:  # the agent's request: its answer goes to the same session
            self._agent_requests.record(message["id"], session_id_of(message) or session)
            return None
        ours = self._our_requests.pop(_key(message["id"]), None)
        result = message.get("result")
        if ours is None or not isinstance(result, dict) or self.closing or self.failure:
            return None
        method, _, named = ours
        if method in _OPENS_SESSION:  # the server made the session: it must know it
            opened = result.get("sessionId")
            if isinstance(opened, str):
                handed = self._answer_first[opened] = anyio.Event()
                try:
                    await self._open_session(opened)
                except BaseException:
                    handed.set()
                    raise
                return handed
        elif method in _ATTACHES_SESSION and named is not None:
            # A server may route the session's messages to the connection's stream instead
            # (404: the official SDK's, which never learns a loaded session).
            await self._open_session(named, missing_ok=True)
        return None

    # -- closing

    async def delete(self) -> None:
        """DELETE the connection (bounded; a failure is only logged)."""
        import httpx

        if self.connection_id is None:
            return
        with anyio.move_on_after(self.timeout, shield=True):
            try:
                response = await self._clients.client.delete(self.url, headers=self._headers(None))
            except httpx.HTTPError as exc:
                logger.debug("%s: DELETE failed: %r", self.url, exc)
            else:
                logger.debug("%s: DELETE answered %d", self.url, response.status_code)


@final
class _Clients:
    """The connection's ``httpx.AsyncClient`` (its cookie jar is the connection's), and the
    HTTP/2 choice (see :func:`open_http_link`)."""

    def __init__(
        self, url: str, headers: Mapping[str, str], timeout: float, http2: bool | None
    ) -> None:
        from http.cookiejar import CookieJar

        self._headers = dict(headers)
        self._timeout = timeout
        self._jar = CookieJar()
        secure = url.lower().startswith("https://")
        # https: h2 offered by ALPN unless refused; http: h2c (prior knowledge) only when asked.
        self._h2 = http2 is not False if secure else http2 is True
        self._http1 = secure or http2 is not True
        self._tls: ssl.SSLContext | None = None
        self.client = self._make()

    def _make(self) -> httpx.AsyncClient:
        import httpx

        if self._tls is None:
            # One TLS context for the connection's clients (the POSTs' and each stream's):
            # httpx makes one per client otherwise, loading the CA bundle each time (about
            # 0.15 s, blocking the event loop, per session stream opened).
            self._tls = httpx.create_ssl_context()
        return httpx.AsyncClient(
            headers=self._headers,
            cookies=self._jar,
            timeout=httpx.Timeout(self._timeout),
            http2=self._h2,
            http1=self._http1,
            follow_redirects=False,
            verify=self._tls,
        )

    def stream_client(self) -> httpx.AsyncClient:
        """A client for one GET stream: its own connection (see :func:`open_http_link`),
        the connection's cookie jar and HTTP version."""
        return self._make()

    async def initialize(
        self, url: str, body: bytes, link: HttpLink, resuming: str | None
    ) -> httpx.Response:
        """POST ``initialize`` (with ``Acp-Session-Id`` when the connection is made to resume
        that session: a load balancer routes it to the instance that holds the session)."""
        import httpx

        from ._http_body import post

        headers = {"Content-Type": JSON_TYPE, "Accept": JSON_TYPE}
        if resuming is not None:
            headers[SESSION_HEADER] = resuming
        try:
            return await post(self.client, url, body, headers)
        except httpx.HTTPError as exc:
            if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
                raise link.broken(
                    f"cannot connect to {url}: {type(exc).__name__}: {exc}", unreachable=True
                ) from exc
            raise link.broken(
                f"POST initialize to {url} failed: {type(exc).__name__}: {exc}"
            ) from exc

    async def aclose(self) -> None:
        with anyio.move_on_after(self._timeout, shield=True):
            await self.client.aclose()


@asynccontextmanager
async def open_http_link(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    token: str | None = None,
    timeout: float = 30.0,
    http2: bool | None = None,
    max_message_bytes: int = 64 * 1024 * 1024,
    resuming: str | None = None,
) -> AsyncGenerator[HttpLink, None]:
    """A Streamable HTTP link to the ACP endpoint ``url`` for the block's duration.

    ``headers`` go on every request, ``token`` as ``Authorization: Bearer``; ``timeout``
    bounds each POST, the opening of each GET stream and the DELETE (an open stream may stay
    idle). ``http2``: ``None`` offers HTTP/2 by ALPN on https and speaks HTTP/1.1 on http,
    ``False`` uses HTTP/1.1, ``True`` insists on HTTP/2 (h2c with prior knowledge on http).
    ``resuming``: the session this connection is made to load or resume, sent as
    ``Acp-Session-Id`` on its ``initialize`` (for a load balancer's routing; a server ignores
    it there).
    """
    all_headers = dict(headers or {})
    if token is not None:
        all_headers["Authorization"] = f"Bearer {token}"
    clients = _Clients(url, all_headers, timeout, http2)
    token_sent = "authorization" in {name.lower() for name in all_headers}
    raised: BaseException | None = None
    try:
        async with anyio.create_task_group() as tg:
            link = HttpLink(
                url,
                clients,
                tg,
                timeout=timeout,
                token_sent=token_sent,
                max_message_bytes=max_message_bytes,
            )
            link.resuming = resuming
            try:
                yield link
            except BaseException as exc:
                raised = exc
            finally:
                link.closing = True
                await link.settle_initialize()
                tg.cancel_scope.cancel()
                await link.delete()
                link.close_inbound()
    finally:
        await clients.aclose()
    if raised is not None:  # re-raised as itself, not wrapped in an ExceptionGroup
        raise raised
