"""ACP over Streamable HTTP and WebSocket, sans-IO: the names, the routing rules, SSE framing.

The wire is the "Streamable HTTP & WebSocket Transport" RFD of the Agent Client Protocol
(vendored with its provenance in ``docs/spec/acp-streamable-http-websocket.mdx``):

- one endpoint, ``/acp``. ``POST`` carries one client→agent JSON-RPC message
  (``Content-Type: application/json``, else 415); ``initialize`` (without
  ``Acp-Connection-Id``) creates a connection and is answered ``200`` with the JSON-RPC
  response as body and the ``Acp-Connection-Id`` header; every other POST is answered ``202``
  at once and its JSON-RPC answer comes on a GET stream. A batch (a JSON array) is 501.
- ``GET`` with ``Accept: text/event-stream`` (else 406) and ``Acp-Connection-Id`` (else 400;
  unknown: 404) opens the connection-scoped SSE stream; with ``Acp-Session-Id`` too, the
  session-scoped stream of that session (unknown for the connection: 404).
- ``GET`` with ``Upgrade: websocket`` opens a WebSocket: one JSON-RPC message per text frame,
  binary frames ignored, ``Acp-Connection-Id`` in the 101 response.
- ``DELETE`` with ``Acp-Connection-Id`` ends the connection and its sessions (202; without the
  header 400).
- session-scoped POSTs (``session/prompt``, ``session/cancel``, responses to the agent's
  requests, ...) carry ``Acp-Session-Id`` as well (else 400).

Server→client routing (:func:`route_to_client`): a message about a session (a
``session/update``, an agent→client request such as ``session/request_permission``, the
response to a POST that carried ``Acp-Session-Id``) goes to that session's stream; anything
else (responses to ``initialize``, ``session/new``, ``session/load``; connection-level
notifications) to the connection's stream. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

from subagents.protocol.jsonrpc import JsonValue

__all__ = (
    "ACCEPT_SSE",
    "CANCEL_REASON_META",
    "CONNECTION_HEADER",
    "CONNECTION_SCOPED_METHODS",
    "DRAINING_METHOD",
    "ENDPOINT_PATH",
    "PROTOCOL_VERSION_HEADER",
    "SESSION_HEADER",
    "URL_SCHEMES",
    "RequestScopes",
    "ServerDrainingError",
    "SseDecoder",
    "agent_url",
    "encode_sse",
    "is_agent_url",
    "session_id_of",
)


class ServerDrainingError(Exception):
    """A remote connection was lost because its server drains (shuts down; it said so with
    a 503 or its WebSocket's close reason): a run still starting there settles ``cancelled``
    naming the drain, not failed. Raised by :func:`subagents.remote.connect_agent_url` in
    place of the :class:`~subagents.rpc.ConnectionClosedError` the lost link caused."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


CANCEL_REASON_META: Final = "subagents/cancelReason"
"""The ``_meta`` key of a ``session/prompt`` answer ``cancelled`` by the server itself (its
drain, say) rather than by the client: why, in words (``subagents serve --listen`` sets it)."""
DRAINING_METHOD: Final = "_subagents/draining"
"""An ACP extension notification (``params``: ``{"reason": ...}``) ``subagents serve --listen``
sends on every connection (its connection-scoped stream, or its WebSocket) as its drain
begins, before it cancels the turns and ends the streams: the URL client learns that what
fails next fails because of the drain. Other clients ignore it (an unknown ``_`` method)."""
ENDPOINT_PATH: Final = "/acp"
CONNECTION_HEADER: Final = "Acp-Connection-Id"
SESSION_HEADER: Final = "Acp-Session-Id"
PROTOCOL_VERSION_HEADER: Final = "Acp-Protocol-Version"
ACCEPT_SSE: Final = "text/event-stream"

#: Client→agent methods that are not about one existing session: no ``Acp-Session-Id``
#: needed, answered on the connection's stream. ``session/load`` and ``session/resume`` name
#: a session, but their answers belong to the connection (the RFD's resume flow);
#: ``session/delete`` names a stored session, which need not be one of the connection's (nor
#: exist: deleting an unknown session succeeds), like ``session/list``'s.
CONNECTION_SCOPED_METHODS: Final = frozenset(
    {
        "initialize",
        "authenticate",
        "session/new",
        "session/list",
        "session/load",
        "session/resume",
        "session/delete",
        "logout",
    }
)


URL_SCHEMES: Final = ("http://", "https://", "ws://", "wss://")
"""The schemes of an agent URL (Streamable HTTP, or WebSocket)."""


def is_agent_url(text: str) -> bool:
    """Whether ``text`` names an agent by URL (``http://``, ``https://``, ``ws://``, ``wss://``)."""
    return text.lower().startswith(URL_SCHEMES)


def agent_url(text: str) -> str:
    """The endpoint of an agent URL: ``/acp`` appended when the URL has no path at all
    (``http://host:8000`` → ``http://host:8000/acp``); any path given is kept as it is."""
    from urllib.parse import urlsplit, urlunsplit

    if not is_agent_url(text):
        raise ValueError(f"not an agent URL (http://, https://, ws://, wss://): {text!r}")
    parts = urlsplit(text)
    if not parts.netloc:
        raise ValueError(f"an agent URL names a host: {text!r}")
    if parts.path:
        return text
    return urlunsplit(parts._replace(path=ENDPOINT_PATH))


def session_id_of(message: Mapping[str, JsonValue]) -> str | None:
    """The ``sessionId`` a JSON-RPC request or notification is about, from its ``params``."""
    params = message.get("params")
    if isinstance(params, dict):
        session_id = params.get("sessionId")
        if isinstance(session_id, str):
            return session_id
    return None


@dataclass
class RequestScopes:
    """Which session each in-flight request belongs to, in one direction.

    The server records a client request's id with the ``Acp-Session-Id`` of its POST
    (``None`` for connection-scoped ones) and routes the response by it; the agent's own
    requests are routed by their ``sessionId`` param, and the client's answer to one must come
    on a POST naming the same session.
    """

    _scopes: dict[tuple[str, JsonValue], str | None] = field(
        default_factory=dict[tuple[str, JsonValue], str | None]
    )

    def record(self, request_id: JsonValue, session_id: str | None) -> None:
        self._scopes[(type(request_id).__name__, request_id)] = session_id

    def pop(self, request_id: JsonValue) -> tuple[bool, str | None]:
        """``(known, session)``: whether the id was recorded, and the session it names."""
        key = (type(request_id).__name__, request_id)
        if key not in self._scopes:
            return False, None
        return True, self._scopes.pop(key)

    def peek(self, request_id: JsonValue) -> tuple[bool, str | None]:
        """Like :meth:`pop`, leaving the id recorded."""
        key = (type(request_id).__name__, request_id)
        return key in self._scopes, self._scopes.get(key)

    def __contains__(self, request_id: JsonValue) -> bool:
        return (type(request_id).__name__, request_id) in self._scopes

    def in_flight(self) -> list[tuple[JsonValue, str | None]]:
        """Every recorded ``(request id, session)``, in the order recorded."""
        return [(request_id, session) for (_, request_id), session in self._scopes.items()]

    def sessions(self) -> set[str]:
        """The sessions that have a request in flight."""
        return {session for session in self._scopes.values() if session is not None}

    def __len__(self) -> int:
        return len(self._scopes)


def encode_sse(data: str, *, event: str | None = None) -> bytes:
    """One server-sent event carrying ``data`` (a JSON text: one ``data:`` line per line)."""
    lines = [f"event: {event}"] if event else []
    lines.extend(f"data: {line}" for line in data.split("\n"))
    return ("\n".join(lines) + "\n\n").encode()


@dataclass
class SseDecoder:
    """Incremental server-sent-events parser: feed bytes, get ``(event, data)`` pairs.

    Follows the HTML living standard's parsing: lines end in CRLF, LF or CR; ``data`` lines
    join with ``\\n``; comment lines (``:``) are keep-alives and ignored; an event without data
    is dropped. ``max_event_bytes`` bounds one event (a longer one raises ``ValueError``).
    """

    max_event_bytes: int = 64 * 1024 * 1024
    _buffer: bytearray = field(default_factory=bytearray)
    _event: str = ""
    _data: list[str] = field(default_factory=list[str])
    _size: int = 0

    def feed(self, chunk: bytes) -> Iterator[tuple[str, str]]:
        self._buffer += chunk
        while True:
            end = _line_end(self._buffer)
            if end is None:
                if len(self._buffer) > self.max_event_bytes:
                    raise ValueError(
                        f"a server-sent event is longer than {self.max_event_bytes} bytes"
                    )
                return
            stop, skip = end
            line = bytes(self._buffer[:stop]).decode("utf-8", errors="replace")
            del self._buffer[: stop + skip]
            if not line:
                if self._data:
                    yield self._event or "message", "\n".join(self._data)
                self._event, self._data, self._size = "", [], 0
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                self._size += len(value)
                if self._size > self.max_event_bytes:
                    raise ValueError(
                        f"a server-sent event is longer than {self.max_event_bytes} bytes"
                    )
                self._data.append(value)
            elif name == "event":
                self._event = value


def _line_end(buffer: bytearray) -> tuple[int, int] | None:
    """Where the first line ends and how long its terminator is (CRLF, LF or CR)."""
    lf = buffer.find(b"\n")
    cr = buffer.find(b"\r")
    if cr == -1 and lf == -1:
        return None
    if cr != -1 and (lf == -1 or cr < lf):
        if cr + 1 == len(buffer):
            return None  # a CR at the end may be the first half of a CRLF
        return cr, 2 if buffer[cr + 1] == 0x0A else 1
    return lf, 1
