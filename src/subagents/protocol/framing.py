"""Newline-delimited JSON framing, sans-IO.

:class:`NdjsonFramer` takes bytes in any chunking and gives back messages, one event at a time,
the h11 way::

    framer.receive_data(chunk)          # b"" or receive_eof() at the end of the stream
    while (event := framer.next_event()) is not NEED_DATA:
        ...                             # a Message, a RemoteProtocolError, or END_OF_STREAM

Bad input never raises out of the framer: each bad line becomes one error event (with the
JSON-RPC code to answer it with) and the lines after it are read as usual. A line longer than
``max_message_bytes`` is skipped while it streams in: the framer never holds more than the limit
of one line, whatever the peer sends.

The lines themselves come from :class:`LineSplitter` (chunking, partial lines, the size limit),
the one line splitter of every NDJSON dialect: the Claude Code stream-json reader uses it too,
for lines that are JSON objects but not JSON-RPC messages.

``json_loads`` lets a caller that has a faster JSON parser at hand (the typed ACP endpoints pass
``pydantic_core.from_json``, about three times faster than :func:`json.loads` on a small line)
use it for the lines it accepts; a line it refuses is parsed again the standard way, so what a
line means, and the error a bad line gets, do not depend on the parser.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Final, Literal, TypeAlias, final

from .errors import InvalidMessageError, MessageTooLargeError, RemoteProtocolError
from .jsonrpc import ErrorCode, JsonValue, Message, RequestId, decode_message

__all__ = (
    "DEFAULT_MAX_MESSAGE_BYTES",
    "END_OF_STREAM",
    "NEED_DATA",
    "FramerEvent",
    "LineEvent",
    "LineSplitter",
    "NdjsonFramer",
    "OversizedLine",
)

DEFAULT_MAX_MESSAGE_BYTES: Final = 64 * 1024 * 1024
"""64 MiB, the limit the official ACP conformance kit uses."""

_HEAD_BYTES: Final = 4096
"""How much of an oversized line is kept to find its id and method."""

_COMPACT_AT: Final = 1 << 16


class _Sentinel(Enum):
    NEED_DATA = "NEED_DATA"
    END_OF_STREAM = "END_OF_STREAM"

    def __repr__(self) -> str:
        return self.value


NEED_DATA: Final = _Sentinel.NEED_DATA
"""No complete line is buffered: feed more data (or the end of the stream)."""

END_OF_STREAM: Final = _Sentinel.END_OF_STREAM
"""The stream ended and every buffered line was delivered."""

FramerEvent: TypeAlias = (
    Message | RemoteProtocolError | Literal[_Sentinel.NEED_DATA] | Literal[_Sentinel.END_OF_STREAM]
)


@final
@dataclass(frozen=True, slots=True)
class OversizedLine:
    """A line longer than the limit: skipped while it streamed in, never held whole."""

    size: int
    """Its length in bytes, without the newline."""
    head: bytes
    """Its first bytes (up to 4 KiB): enough to tell what it was."""


LineEvent: TypeAlias = (
    bytearray | OversizedLine | Literal[_Sentinel.NEED_DATA] | Literal[_Sentinel.END_OF_STREAM]
)


@final
class LineSplitter:
    """Turns a byte stream into ``\\n``-terminated lines: the one line splitter of every NDJSON
    dialect (:class:`NdjsonFramer` for JSON-RPC, the Claude Code stream-json reader)::

        lines.receive_data(chunk)           # b"" or receive_eof() at the end of the stream
        while (line := lines.next_line()) is not NEED_DATA:
            ...                             # a bytearray, an OversizedLine, or END_OF_STREAM

    - chunks may split a line anywhere, and one chunk may hold many lines;
    - a line is given without its ``\\n`` (a ``\\r`` or other whitespace is left to the
      caller, and so are blank lines);
    - at the end of the stream a last line without ``\\n`` is still delivered;
    - a line over ``max_line_bytes`` (trailing whitespace aside) gives one
      :class:`OversizedLine` and is never buffered whole: once every line is read, the
      splitter holds at most one partial line of at most ``max_line_bytes + 1`` bytes (a
      trailing ``\\r`` may still await its ``\\n``); during :meth:`receive_data` it may briefly
      also hold the chunk given.
    """

    __slots__ = (
        "_buf",
        "_discarded",
        "_discarding",
        "_eof",
        "_head",
        "_max",
        "_pos",
        "_scan",
    )

    def __init__(self, *, max_line_bytes: int) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self._max = max_line_bytes
        self._buf = bytearray()
        self._pos = 0  # start of the unread part of _buf
        self._scan = 0  # where to resume the search for b"\n"
        self._eof = False
        self._discarding = False  # inside an oversized line
        self._discarded = 0  # bytes of the oversized line seen so far
        self._head = b""  # the start of the oversized line

    @property
    def max_line_bytes(self) -> int:
        """The largest line (without its newline) that is delivered."""
        return self._max

    @property
    def buffered_bytes(self) -> int:
        """Bytes held right now (never much more than ``max_line_bytes``)."""
        return len(self._buf) - self._pos

    def receive_data(self, data: bytes) -> None:
        """Feed bytes from the stream. ``b""`` means the end of the stream."""
        if not data:
            self._eof = True
            return
        if self._eof:
            raise RuntimeError("data received after the end of the stream")
        if self._discarding:
            newline = data.find(b"\n")
            if newline < 0:
                self._discarded += len(data)
                return
            self._discarded += newline
            data = data[newline:]  # keep the newline: it ends the oversized line
        self._buf += data
        if len(self._buf) - self._pos > self._max + 1 and self._buf.find(b"\n", self._scan) < 0:
            # No line end in sight and already over the limit: stop buffering this line.
            self._start_discarding()

    def receive_eof(self) -> None:
        """Mark the end of the stream."""
        self._eof = True

    def next_line(self) -> LineEvent:
        """The next line or oversized line, :data:`NEED_DATA`, or :data:`END_OF_STREAM`."""
        buf = self._buf
        while True:
            if self._discarding:
                if buf:
                    # The newline that ends the oversized line is at the start of the buffer.
                    del buf[:1]
                    return self._finish_discarding()
                if self._eof:
                    return self._finish_discarding()
                return NEED_DATA
            newline = buf.find(b"\n", self._scan)
            if newline < 0:
                if len(buf) - self._pos > self._max + 1:
                    self._start_discarding()
                    continue
                if not self._eof:
                    self._scan = len(buf)
                    if self._pos >= _COMPACT_AT:
                        self._compact()
                    return NEED_DATA
                if self._pos >= len(buf):
                    buf.clear()
                    self._pos = self._scan = 0
                    return END_OF_STREAM
                line = buf[self._pos :]
                buf.clear()
                self._pos = self._scan = 0
            else:
                line = buf[self._pos : newline]
                self._pos = self._scan = newline + 1
                if self._pos >= len(buf):
                    buf.clear()
                    self._pos = self._scan = 0
            if len(line) > self._max and len(line.rstrip()) > self._max:
                return OversizedLine(len(line), bytes(line[:_HEAD_BYTES]))
            return line

    def _compact(self) -> None:
        del self._buf[: self._pos]
        self._scan -= self._pos
        self._pos = 0

    def _start_discarding(self) -> None:
        unread = self._buf[self._pos :]
        self._head = bytes(unread[:_HEAD_BYTES])
        self._discarded = len(unread)
        self._buf.clear()
        self._pos = self._scan = 0
        self._discarding = True

    def _finish_discarding(self) -> OversizedLine:
        self._discarding = False
        found = OversizedLine(self._discarded, self._head)
        self._head = b""
        self._discarded = 0
        return found


class NdjsonFramer:
    """Turns a byte stream into JSON-RPC messages (one per ``\\n``-terminated line).

    The lines come from a :class:`LineSplitter` (chunking, partial lines, the size limit);
    the framer decodes them:

    - ``\\r\\n`` line ends and surrounding whitespace are accepted; blank lines are skipped;
    - invalid UTF-8, invalid JSON, JSON that is not an object, arrays (batches are not part of
      ACP v1) and invalid envelopes each give one :class:`InvalidMessageError` event;
    - a line over ``max_message_bytes`` gives one :class:`MessageTooLargeError` event naming
      the request it was (when its start tells); the framer never holds more than about the
      limit of one line (see :class:`LineSplitter`).
    """

    __slots__ = ("_lines", "_loads", "_require_version")

    def __init__(
        self,
        *,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        require_version: bool = True,
        json_loads: Callable[[bytearray], JsonValue] | None = None,
    ) -> None:
        if max_message_bytes < 1:
            raise ValueError("max_message_bytes must be positive")
        self._lines = LineSplitter(max_line_bytes=max_message_bytes)
        self._loads = json_loads
        self._require_version = require_version

    @property
    def max_message_bytes(self) -> int:
        """The largest line (without its newline) that is delivered."""
        return self._lines.max_line_bytes

    @property
    def buffered_bytes(self) -> int:
        """Bytes held right now (never much more than ``max_message_bytes``)."""
        return self._lines.buffered_bytes

    def receive_data(self, data: bytes) -> None:
        """Feed bytes from the stream. ``b""`` means the end of the stream."""
        self._lines.receive_data(data)

    def receive_eof(self) -> None:
        """Mark the end of the stream."""
        self._lines.receive_eof()

    def next_event(self) -> FramerEvent:
        """The next message or error, :data:`NEED_DATA`, or :data:`END_OF_STREAM`."""
        next_line = self._lines.next_line
        while True:
            line = next_line()
            if isinstance(line, bytearray):
                event = self._decode(line)
                if event is not None:
                    return event
            elif isinstance(line, OversizedLine):
                return self._too_large(line.size, line.head)
            else:
                return line

    def _decode(self, line: bytearray) -> Message | RemoteProtocolError | None:
        if self._loads is not None:
            try:
                fast: JsonValue = self._loads(line)
            except Exception:  # any refusal: parsed the standard way below
                pass
            else:
                try:
                    return decode_message(fast, require_version=self._require_version)
                except InvalidMessageError as exc:
                    return exc
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            return InvalidMessageError(
                ErrorCode.PARSE_ERROR,
                f"line is not valid UTF-8 ({exc.reason} at byte {exc.start})",
                kind="invalid_utf8",
            )
        try:
            obj: JsonValue = json.loads(text)
        except json.JSONDecodeError as exc:
            if not text.strip():
                return None  # a blank line
            return InvalidMessageError(
                ErrorCode.PARSE_ERROR,
                f"line is not valid JSON: {exc.msg} (column {exc.colno})",
                kind="invalid_json",
            )
        except RecursionError:
            return InvalidMessageError(
                ErrorCode.PARSE_ERROR,
                "line is not valid JSON: nested too deeply",
                kind="invalid_json",
            )
        except ValueError as exc:  # an integer beyond Python's digit limit, and the like
            return InvalidMessageError(
                ErrorCode.PARSE_ERROR,
                f"line is not valid JSON: {str(exc)[:200]}",
                kind="invalid_json",
            )
        try:
            return decode_message(obj, require_version=self._require_version)
        except InvalidMessageError as exc:
            return exc

    def _too_large(self, size: int, head: bytes) -> MessageTooLargeError:
        request_id, method, is_response = _peek_envelope(head)
        answerable = method is not None and request_id is not None
        what = (
            f"request {method!r} (id {request_id!r})"
            if answerable
            else f"response to request {request_id!r}"
            if is_response
            else f"notification {method!r}"
            if method is not None
            else "message"
        )
        limit = self._lines.max_line_bytes
        return MessageTooLargeError(
            f"{what} skipped: line of {size} bytes exceeds the limit of {limit} bytes",
            size=size,
            limit=limit,
            request_id=request_id,
            method=method,
            is_response=is_response,
            answerable=answerable,
        )


_decoder: Final = json.JSONDecoder()


def _peek_envelope(head: bytes) -> tuple[RequestId | None, str | None, bool]:
    """Read ``id`` and ``method`` from the start of a (truncated) JSON object.

    Returns ``(id, method, is_response)``. Scans top-level keys only, skipping values it does
    not need, and stops at the first key whose value runs past ``head``. Every message the
    official SDKs write puts ``id`` and ``method`` before ``params`` or ``result``, so this
    finds them in practice; when it cannot, the message is simply reported without them.
    """
    text = head.decode("utf-8", "ignore")
    request_id: RequestId | None = None
    method: str | None = None
    is_response = False
    pos = _skip_ws(text, 0)
    if not text.startswith("{", pos):
        return None, None, False
    pos += 1
    while True:
        pos = _skip_ws(text, pos)
        if not text.startswith('"', pos):
            break
        try:
            key, pos = _decoder.raw_decode(text, pos)
        except ValueError:
            break
        pos = _skip_ws(text, pos)
        if not text.startswith(":", pos):
            break
        pos = _skip_ws(text, pos + 1)
        if key in ("id", "method"):
            try:
                value, pos = _decoder.raw_decode(text, pos)
            except ValueError:
                break
            if key == "id" and (type(value) is int or isinstance(value, str)):
                request_id = value
            elif key == "method" and isinstance(value, str):
                method = value
        else:
            if key in ("result", "error"):
                is_response = True
            end = _skip_value(text, pos)
            if end < 0:
                break
            pos = end
        pos = _skip_ws(text, pos)
        if not text.startswith(",", pos):
            break
        pos += 1
    if method is not None:
        is_response = False
    elif request_id is not None and not is_response:
        # An id and no method in the part we could read: most likely a response whose
        # result started past the head.
        is_response = True
    return request_id, method, is_response


def _skip_ws(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _skip_value(text: str, pos: int) -> int:
    """The index after the JSON value starting at ``pos``, or -1 if it is cut off."""
    n = len(text)
    if pos >= n:
        return -1
    if text[pos] not in "{[":
        try:
            _, end = _decoder.raw_decode(text, pos)
        except ValueError:
            return -1
        return end
    depth = 0
    in_string = False
    i = pos
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1
