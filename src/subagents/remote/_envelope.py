"""A client's message checked before anything acts on it (:func:`decode_message`): the
JSON-RPC 2.0 envelope of one POST body or WebSocket text frame, so that bad input is answered
at once, with a JSON-RPC error and nothing logged, and never starts an agent.

Refused (``-32600``, Invalid Request, unless it does not parse: ``-32700``):

- JSON that does not parse, or is nested deeper than :data:`MAX_DEPTH` (Python's parser
  fails on ~1000 levels with ``RecursionError``; a fuzzer sends 100 000);
- anything but one object (a batch is told apart: the RFD answers it 501);
- ``jsonrpc`` other than ``"2.0"``;
- a request or notification whose ``method`` is not a string, whose ``id`` is neither a
  string nor an integer (``null``, ``1.5``, ``true``, an object: no answer could be matched to
  it) or whose ``params`` is not an object (ACP's are all objects);
- an answer (``result`` or ``error``) whose ``id`` is neither a string nor an integer, with
  both or neither of ``result`` and ``error``, or whose ``error`` is not an object with an
  integer ``code`` and a string ``message``.

The error's ``id`` is the message's when that is a valid one, else ``null``. The ``/acp``
endpoint checks each message itself; :func:`check_envelopes` puts the same check in front of
another application's JSON-RPC endpoint (the A2A SDK's, whose own checks log tracebacks).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Final, final

from ..protocol.jsonrpc import ErrorCode, JsonValue

__all__ = ("MAX_DEPTH", "BadMessage", "check_envelopes", "decode_message")

Scope = MutableMapping[str, Any]
AsgiMessage = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[AsgiMessage]]
Send = Callable[[AsgiMessage], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_DEPTH: Final = 128
"""The deepest nesting of objects and arrays a client's message may have."""
_INT64: Final = 2**63
CHECKED_BYTES: Final = 16 * 1024 * 1024
"""A body longer than this is handed on unchecked (the server's body limit bounds it)."""


@final
@dataclass(frozen=True, slots=True)
class BadMessage:
    """Why a client's message is refused."""

    code: int
    reason: str
    request_id: JsonValue = None
    batch: bool = False
    """A JSON array (the RFD answers a batch 501 over HTTP)."""

    def response(self) -> dict[str, JsonValue]:
        """The JSON-RPC error answering it."""
        error: dict[str, JsonValue] = {"code": self.code, "message": self.reason}
        return {"jsonrpc": "2.0", "id": self.request_id, "error": error}


def decode_message(data: bytes | str) -> dict[str, JsonValue] | BadMessage:
    """The JSON-RPC message in ``data``, or why it is refused (see the module docstring)."""
    try:
        parsed: JsonValue = json.loads(data)
    except RecursionError:
        return BadMessage(ErrorCode.PARSE_ERROR, f"Parse error: nested deeper than {MAX_DEPTH}")
    except ValueError as exc:  # also UnicodeDecodeError
        return BadMessage(ErrorCode.PARSE_ERROR, f"Parse error: {exc}")
    if isinstance(parsed, list):
        return BadMessage(ErrorCode.INVALID_REQUEST, "batch requests are not supported", batch=True)
    if not isinstance(parsed, dict):
        return _invalid("not a JSON-RPC 2.0 message (expected an object)")
    if _too_deep(parsed):
        return _invalid(f"nested deeper than {MAX_DEPTH}")
    why = _envelope_error(parsed)
    if why is not None:
        request_id = parsed.get("id")
        return _invalid(why, request_id if _valid_id(request_id) else None)
    return parsed


def _envelope_error(message: dict[str, JsonValue]) -> str | None:
    if message.get("jsonrpc") != "2.0":
        return 'not a JSON-RPC 2.0 message ("jsonrpc" must be "2.0")'
    if "method" in message:
        if not isinstance(message["method"], str):
            return '"method" must be a string'
        if "id" in message and not _valid_id(message["id"]):
            return 'a request\'s "id" must be a string or an integer'
        if "params" in message and not isinstance(message["params"], dict):
            return '"params" must be an object'
        return None
    if "result" not in message and "error" not in message:
        return 'not a JSON-RPC 2.0 message (no "method", "result" or "error")'
    if not _valid_id(message.get("id")):
        return 'an answer\'s "id" must be a string or an integer'
    if "result" in message and "error" in message:
        return 'an answer has "result" or "error", not both'
    error = message.get("error")
    if "error" in message and not (
        isinstance(error, dict)
        and _is_int(error.get("code"))
        and isinstance(error.get("message"), str)
    ):
        return '"error" must be an object with an integer "code" and a string "message"'
    return None


def _valid_id(value: JsonValue) -> bool:
    return isinstance(value, str) or _is_int(value)


def _is_int(value: JsonValue) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -_INT64 <= value < _INT64


def _too_deep(message: dict[str, JsonValue]) -> bool:
    """Whether ``message`` nests objects and arrays deeper than :data:`MAX_DEPTH`."""
    level: list[dict[str, JsonValue] | list[JsonValue]] = [message]
    for _ in range(MAX_DEPTH):
        below: list[dict[str, JsonValue] | list[JsonValue]] = []
        for container in level:
            values = container.values() if isinstance(container, dict) else container
            below.extend(value for value in values if isinstance(value, (dict, list)))
        if not below:
            return False
        level = below
    return True


def _invalid(reason: str, request_id: JsonValue = None) -> BadMessage:
    return BadMessage(ErrorCode.INVALID_REQUEST, reason, request_id)


def check_envelopes(app: AsgiApp, path: str = "/") -> AsgiApp:
    """``app`` with every JSON-RPC message POSTed to ``path`` checked first: a bad one (see
    the module docstring; a batch is left to ``app``) is answered 400 with the JSON-RPC error,
    and ``app`` never sees it; a good one reaches ``app`` whole."""

    async def checked(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != path:
            await app(scope, receive, send)
            return
        read: list[AsgiMessage] = []
        size = 0
        while True:
            message = await receive()
            read.append(message)
            if message["type"] != "http.request":
                break  # the client left: app sees it
            size += len(message.get("body", b""))
            if not message.get("more_body", False) or size > CHECKED_BYTES:
                break
        last = read[-1]
        if last["type"] == "http.request" and not last.get("more_body", False):
            decoded = decode_message(b"".join(m.get("body", b"") for m in read))
            if isinstance(decoded, BadMessage) and not decoded.batch:
                payload = json.dumps(decoded.response(), separators=(",", ":")).encode()
                headers = [
                    (b"content-type", b"application/json"),
                    (b"content-length", b"%d" % len(payload)),
                ]
                await send({"type": "http.response.start", "status": 400, "headers": headers})
                await send({"type": "http.response.body", "body": payload, "more_body": False})
                return

        async def replay() -> AsgiMessage:
            return read.pop(0) if read else await receive()

        await app(scope, replay, send)

    return checked
