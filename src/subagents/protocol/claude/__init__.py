"""Claude Code's stream-json dialect, sans-IO: the CLI's argv, stdout lines → typed events,
and the control protocol's messages.

::

    from subagents.protocol import claude
    from subagents.protocol.framing import LineSplitter, NEED_DATA

    argv = claude.build_claude_argv("claude", claude.ClaudeOptions(model="..."))
    lines = LineSplitter(max_line_bytes=claude.DEFAULT_MAX_LINE_BYTES)
    lines.receive_data(chunk)
    while isinstance(line := lines.next_line(), bytearray):
        message = claude.decode_line(line)        # a JSON object, a SkippedLine, or None
        if isinstance(message, dict):
            match claude.read_message(message):   # a control message, or events
                case claude.ClaudeControlRequest() as request: ...   # answer it
                case claude.ClaudeControlResponse() as answer: ...   # one of ours answered
                case claude.ClaudeControlCancel(): ...               # a request taken back
                case events: ...                  # ClaudeSystemInit, ClaudeResult, ...
    stdin.write(claude.encode_line(claude.user_message("Say hello.")))

The wire is one JSON object per line both ways (facts in the project's research note on the
real CLI, ``claude.md``): no JSON-RPC envelope, a ``type`` (and often a ``subtype``) per line.
Lines not starting with ``{`` are skipped; unknown message types and subtypes become
:class:`ClaudeRawEvent`, never an error. Running the policy, matching answers to requests and
the turns are the client's (:mod:`subagents.transports.claude_code`). Nothing here does I/O
or imports anyio.
"""

from __future__ import annotations

from ._control import ClaudeAllowTool as ClaudeAllowTool
from ._control import ClaudeControlCancel as ClaudeControlCancel
from ._control import ClaudeControlError as ClaudeControlError
from ._control import ClaudeControlRequest as ClaudeControlRequest
from ._control import ClaudeControlResponse as ClaudeControlResponse
from ._control import ClaudeDenyTool as ClaudeDenyTool
from ._control import ClaudeHook as ClaudeHook
from ._control import ClaudeHookCallback as ClaudeHookCallback
from ._control import ClaudePermissionPolicy as ClaudePermissionPolicy
from ._control import ClaudeToolPermissionRequest as ClaudeToolPermissionRequest
from ._control import control_error as control_error
from ._control import control_request as control_request
from ._control import control_success as control_success
from ._control import encode_line as encode_line
from ._control import hook_registrations as hook_registrations
from ._control import permission_answer as permission_answer
from ._control import permission_request as permission_request
from ._control import read_message as read_message
from ._control import user_message as user_message
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
from ._lines import ClaudeLineTooLongError as ClaudeLineTooLongError
from ._lines import SkippedLine as SkippedLine
from ._lines import decode_line as decode_line
from ._lines import is_result_head as is_result_head
from ._options import ClaudeConfigError as ClaudeConfigError
from ._options import ClaudeOptions as ClaudeOptions
from ._options import PermissionMode as PermissionMode
from ._options import build_claude_argv as build_claude_argv

__all__ = (
    "DEFAULT_MAX_LINE_BYTES",
    "ClaudeAllowTool",
    "ClaudeAssistantMessage",
    "ClaudeConfigError",
    "ClaudeControlCancel",
    "ClaudeControlError",
    "ClaudeControlRequest",
    "ClaudeControlResponse",
    "ClaudeDenyTool",
    "ClaudeEvent",
    "ClaudeHook",
    "ClaudeHookCallback",
    "ClaudeLineTooLongError",
    "ClaudeOptions",
    "ClaudePermissionPolicy",
    "ClaudeRawEvent",
    "ClaudeResult",
    "ClaudeStreamEvent",
    "ClaudeSystemInit",
    "ClaudeToolPermissionRequest",
    "ClaudeToolUse",
    "ClaudeUserMessage",
    "PermissionMode",
    "SkippedLine",
    "build_claude_argv",
    "control_error",
    "control_request",
    "control_success",
    "decode_line",
    "encode_line",
    "hook_registrations",
    "int_or_none",
    "is_result_head",
    "object_or_empty",
    "parse_event",
    "permission_answer",
    "permission_request",
    "read_message",
    "str_or_none",
    "user_message",
)
