"""Claude Code's stream-json dialect, sans-IO: stdout lines → typed events.

::

    from subagents.protocol import claude
    from subagents.protocol.framing import LineSplitter, NEED_DATA

    lines = LineSplitter(max_line_bytes=claude.DEFAULT_MAX_LINE_BYTES)
    lines.receive_data(chunk)
    while isinstance(line := lines.next_line(), bytearray):
        message = claude.decode_line(line)        # a JSON object, a SkippedLine, or None
        if isinstance(message, dict):             # control_* types: the client's business
            for event in claude.parse_event(message):
                ...                                # ClaudeSystemInit, ClaudeResult, ...

The wire is one JSON object per line both ways (facts in the project's research note on the
real CLI, ``claude.md``): no JSON-RPC envelope, a ``type`` (and often a ``subtype``) per line.
Lines not starting with ``{`` are skipped; unknown message types and subtypes become
:class:`ClaudeRawEvent`, never an error. The control protocol (``control_request``,
``control_response``, ``control_cancel_request``) is answered by the client in
:mod:`subagents.transports.claude_code`. Nothing here does I/O or imports anyio.
"""

from __future__ import annotations

from ._events import ClaudeAssistantMessage as ClaudeAssistantMessage
from ._events import ClaudeEvent as ClaudeEvent
from ._events import ClaudeRawEvent as ClaudeRawEvent
from ._events import ClaudeResult as ClaudeResult
from ._events import ClaudeStreamEvent as ClaudeStreamEvent
from ._events import ClaudeSystemInit as ClaudeSystemInit
from ._events import ClaudeToolUse as ClaudeToolUse
from ._events import ClaudeUserMessage as ClaudeUserMessage
from ._events import int_or_none as int_or_none
from ._events import object_or_empty as object_or_empty
from ._events import parse_event as parse_event
from ._events import str_or_none as str_or_none
from ._lines import DEFAULT_MAX_LINE_BYTES as DEFAULT_MAX_LINE_BYTES
from ._lines import SkippedLine as SkippedLine
from ._lines import decode_line as decode_line
from ._lines import is_result_head as is_result_head

__all__ = (
    "DEFAULT_MAX_LINE_BYTES",
    "ClaudeAssistantMessage",
    "ClaudeEvent",
    "ClaudeRawEvent",
    "ClaudeResult",
    "ClaudeStreamEvent",
    "ClaudeSystemInit",
    "ClaudeToolUse",
    "ClaudeUserMessage",
    "SkippedLine",
    "decode_line",
    "int_or_none",
    "is_result_head",
    "object_or_empty",
    "parse_event",
    "str_or_none",
)
