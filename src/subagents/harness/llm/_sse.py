"""An incremental server-sent-events parser (sans-IO: bytes in, events out).

Follows the event-stream rules of the HTML standard: lines end in CRLF, LF or CR (a CRLF
split across two chunks is one line end); ``data:`` lines of one event are joined with
``\\n``; a line starting with ``:`` is a comment; one space after the colon is dropped; a
blank line dispatches the event. Unlike a browser, :meth:`SSEDecoder.close` also dispatches a
final event that is not followed by a blank line (a server that closes right after its last
``data:`` line still said it). Text is decoded as UTF-8 incrementally, so a character split
across chunks is decoded once whole.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field
from typing import final

__all__ = ("SSEDecoder", "SSEEvent")


@final
@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: its type (``message`` when no ``event:`` field was given), its
    data lines joined with ``\\n``, the last event id seen, and a ``retry`` hint (ms)."""

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None


@final
@dataclass(slots=True)
class _Pending:
    event: str = ""
    data: list[str] = field(default_factory=list[str])
    has_data: bool = False
    retry: int | None = None


@final
class SSEDecoder:
    """Feed it bytes (:meth:`feed`) or lines (:meth:`feed_line`); it returns complete events.

    Call :meth:`close` at the end of the stream for the last event (if any).
    """

    __slots__ = ("_buffer", "_closed", "_decoder", "_last_id", "_pending", "_skip_lf")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._skip_lf = False
        self._pending = _Pending()
        self._last_id: str | None = None
        self._closed = False

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Add bytes of the stream; return the events they completed (maybe none)."""
        if self._closed:
            raise ValueError("the decoder is closed")
        return self._feed_text(self._decoder.decode(chunk))

    def feed_line(self, line: str) -> SSEEvent | None:
        """Add one line (without its line end); return the event it completed, if any."""
        if self._closed:
            raise ValueError("the decoder is closed")
        return self._line(line)

    def close(self) -> list[SSEEvent]:
        """End of stream: return the last event if one is pending (no blank line after it)."""
        if self._closed:
            return []
        events = self._feed_text(self._decoder.decode(b"", final=True))
        self._closed = True
        if self._buffer:
            event = self._line(self._buffer)
            self._buffer = ""
            if event is not None:
                events.append(event)
        event = self._dispatch()
        if event is not None:
            events.append(event)
        return events

    # -- internals --------------------------------------------------------------------------

    def _feed_text(self, text: str) -> list[SSEEvent]:
        if self._skip_lf and text:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
        buffer = self._buffer + text
        events: list[SSEEvent] = []
        start = 0
        length = len(buffer)
        while start < length:
            cr = buffer.find("\r", start)
            lf = buffer.find("\n", start)
            if cr == -1 and lf == -1:
                break
            if cr == -1 or (lf != -1 and lf < cr):
                end, after = lf, lf + 1
            elif cr + 1 < length:
                end, after = cr, cr + 2 if buffer[cr + 1] == "\n" else cr + 1
            else:
                # A CR at the very end: a line end, and an LF starting the next chunk is
                # part of it.
                end, after = cr, cr + 1
                self._skip_lf = True
            event = self._line(buffer[start:end])
            if event is not None:
                events.append(event)
            start = after
        self._buffer = buffer[start:]
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        pending = self._pending
        if name == "event":
            pending.event = value
        elif name == "data":
            pending.data.append(value)
            pending.has_data = True
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            pending.retry = int(value)
        return None

    def _dispatch(self) -> SSEEvent | None:
        pending = self._pending
        self._pending = _Pending()
        if not pending.has_data:
            return None
        return SSEEvent(
            pending.event or "message", "\n".join(pending.data), self._last_id, pending.retry
        )
