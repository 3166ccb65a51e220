"""What the Streamable HTTP and WebSocket client links share: the peer's side of a link.

A link is the :class:`anyio.abc.ByteStream` the project's JSON-RPC peer runs over, unchanged:
the peer writes NDJSON lines (:meth:`MessageLink.send`: one message each, delivered by the
transport) and reads the lines the transport pushes (messages from the server, one per line).

A transport failure (an HTTP status, a stream that ends or breaks, a WebSocket closed by the
server) is :meth:`MessageLink.fail`: the lines already pushed are still read, then the peer
sees the end of its stream and :meth:`MessageLink.reason` names the cause (the URL, the
status, the exception), which is what pending calls fail with. A write after the failure
raises :class:`anyio.BrokenResourceError`, which the peer turns into the same reason. Nothing
reconnects: the RFD leaves reconnection to the host (v1).

:meth:`MessageLink.send_raw` writes lines that need not be JSON-RPC messages (malformed JSON,
a batch, an object that is no message): ``subagents bridge`` relays whatever its client
writes, the conformance suite's informational checks included. The server's refusal of such
a line comes back as a message (:func:`refusal_answer`); the normal client uses
:meth:`MessageLink.send`, which takes messages only.
"""

from __future__ import annotations

import json
import logging
from typing import Final, cast

import anyio
import anyio.abc

from ..protocol.acp_remote import DRAINING_METHOD
from ..protocol.jsonrpc import JsonValue

__all__ = (
    "INBOUND_BUFFER",
    "MessageLink",
    "auth_reason",
    "is_message",
    "jsonrpc_error_of",
    "lines_of",
    "refusal_answer",
    "status_reason",
)

logger = logging.getLogger("subagents.remote.client")

INBOUND_BUFFER: Final = 256
"""Messages from the server waiting for the peer to read them; past it the transport stops
reading (an SSE stream or the socket), which holds the server back."""

_BODY_IN_ERRORS: Final = 300
"""The first characters of an error response's body that a failure quotes."""


def auth_reason(url: str, status: int, *, token_sent: bool) -> str:
    """Why a 401 refused the connection, with what to do about it."""
    if token_sent:
        return f"the server at {url} refused the token (HTTP {status})"
    return (
        f"the server at {url} needs a token (HTTP {status}): pass token= to connect_agent, "
        "or set token_env in the agent's registry entry"
    )


def status_reason(url: str, status: int, what: str, body: str, *, token_sent: bool) -> str:
    """A failure naming the URL, the status, what was refused and the body's start."""
    if status == 401:
        return auth_reason(url, status, token_sent=token_sent)
    excerpt = body.strip()[:_BODY_IN_ERRORS]
    return f"HTTP {status} from {url} for {what}" + (f": {excerpt}" if excerpt else "")


class MessageLink(anyio.abc.ByteStream):
    """The peer's byte stream over a message transport (subclasses deliver the messages)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.failure: str | None = None
        """Why the link failed (``None`` while it works, and after an orderly close)."""
        self.failure_status: int | None = None
        """The HTTP status the link failed on, if it failed on one."""
        self.unreachable = False
        """Whether it failed because the server could not be reached at all."""
        self.draining = False
        """Whether the server said it drains (a 503 naming the drain, a WebSocket closed
        with the drain as its reason): the failure's cause is the drain."""
        self.closing = False
        """Set once the client closes: streams that end from then on are no failure."""
        self._inbound_in, self._inbound = anyio.create_memory_object_stream[bytes](INBOUND_BUFFER)
        self._rest = b""

    async def send_raw(self, item: bytes) -> None:
        """Write each line of ``item`` as it is, a JSON-RPC message or not (a server's refusal
        of a line comes back as a message). This default: :meth:`send`."""
        await self.send(item)

    # -- failing

    def fail(self, reason: str) -> None:
        """The transport is lost: the peer reads what was pushed, then the end of its stream
        (the first reason wins; nothing after an orderly close)."""
        if self.failure is None and not self.closing:
            self.failure = reason
            logger.info("%s", reason)
        self._inbound_in.close()

    def broken(
        self, reason: str, *, status: int | None = None, unreachable: bool = False
    ) -> anyio.BrokenResourceError:
        """:meth:`fail`, and the error a write raises (the peer reads :meth:`reason`)."""
        if self.failure is None and not self.closing:
            self.failure_status = status
            self.unreachable = unreachable
        self.fail(reason)
        return anyio.BrokenResourceError(self.failure or reason)

    def check_open(self) -> None:
        if self.failure is not None:
            raise anyio.BrokenResourceError(self.failure)
        if self.closing:
            raise anyio.ClosedResourceError

    async def reason(self) -> str:
        """Why the stream ended (the peer's ``eof_reason``)."""
        return self.failure or f"the connection to {self.url} closed"

    # -- what the peer reads

    async def push_line(self, line: bytes) -> None:
        """One message from the server, for the peer (dropped once the link is closed)."""
        try:
            await self._inbound_in.send(line)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            logger.debug("%s: a message after the link closed dropped", self.url)

    async def push_text(self, text: str) -> None:
        """Push one JSON-RPC message received as text, on one line (the peer parses it and
        reports what is not JSON; a message spread over lines is re-encoded on one). The
        server's drain notification (:data:`~subagents.protocol.acp_remote.DRAINING_METHOD`)
        is kept here: the link is :attr:`draining` from then on."""
        if DRAINING_METHOD in text and _is_draining_notification(text):
            self.draining = True
            logger.info("%s: the server drains", self.url)
            return
        if "\n" in text or "\r" in text:
            try:
                message: JsonValue = json.loads(text)
            except ValueError:
                text = text.replace("\r", " ").replace("\n", " ")
            else:
                text = json.dumps(message, separators=(",", ":"))
        await self.push_line(text.encode() + b"\n")

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._rest:
            self._rest = await self._inbound.receive()
        data, self._rest = self._rest[:max_bytes], self._rest[max_bytes:]
        return data

    # -- closing (the peer closes its send side when it is done)

    async def send_eof(self) -> None:
        self.closing = True

    async def aclose(self) -> None:
        self.closing = True

    def close_inbound(self) -> None:
        """The transport is gone for good (on the link's way out: :func:`open_http_link` closes
        it, a WebSocket's task does)."""
        self.closing = True
        self._inbound_in.close()
        self._inbound.close()


def _is_draining_notification(text: str) -> bool:
    try:
        value: JsonValue = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("method") == DRAINING_METHOD and "id" not in value


def is_message(value: object) -> bool:
    """Whether ``value`` has a JSON-RPC 2.0 message's shape: an object with a ``method`` or
    with an ``id`` and a ``result`` or an ``error``."""
    if not isinstance(value, dict):
        return False
    message = cast(dict[str, JsonValue], value)
    if isinstance(message.get("method"), str):
        return True
    return "id" in message and ("result" in message or "error" in message)


def jsonrpc_error_of(body: bytes) -> dict[str, JsonValue] | None:
    """The JSON-RPC error answer a refusal's body is, if it is one (an object with an
    ``error`` object holding an integer ``code`` and a string ``message``)."""
    try:
        value: JsonValue = json.loads(body)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(error := value.get("error"), dict):
        return None
    if not isinstance(error.get("code"), int) or not isinstance(error.get("message"), str):
        return None
    return value


def refusal_answer(request_id: JsonValue, error: JsonValue) -> str:
    """The JSON-RPC error answer, one line of text, that stands for a refused request."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}, separators=(",", ":"))


def lines_of(item: bytes) -> list[bytes]:
    """The non-blank lines of what the peer wrote (one message each)."""
    return [line for line in item.splitlines() if line.strip()]
