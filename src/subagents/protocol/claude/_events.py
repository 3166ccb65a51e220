"""Claude Code stream-json messages as typed events: the models and :func:`parse_event`.

Pure data and pure functions (no I/O): one decoded stdout line (a JSON object that is not a
control message) becomes one or more events; nothing here raises on odd input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias, final

from ..jsonrpc import JsonObject, JsonValue

__all__ = (
    "ClaudeAssistantMessage",
    "ClaudeEvent",
    "ClaudeRawEvent",
    "ClaudeResult",
    "ClaudeStreamEvent",
    "ClaudeSystemInit",
    "ClaudeToolUse",
    "ClaudeUserMessage",
    "int_or_none",
    "object_or_empty",
    "parse_event",
    "str_or_none",
)


@final
@dataclass(frozen=True, slots=True)
class ClaudeSystemInit:
    """``system/init``: sent at the start of every turn."""

    session_id: str
    model: str | None
    cwd: str | None
    tools: tuple[str, ...]
    permission_mode: str | None
    claude_code_version: str | None
    raw: JsonObject


@final
@dataclass(frozen=True, slots=True)
class ClaudeToolUse:
    """A ``tool_use`` block of an assistant message (delivered right after that message)."""

    id: str
    name: str
    input: JsonObject


@final
@dataclass(frozen=True, slots=True)
class ClaudeAssistantMessage:
    """An ``assistant`` line: one content block as it completes."""

    content: tuple[JsonObject, ...]
    aborted: bool
    """Cut short by an interrupt."""
    error: str | None
    """Set on a synthetic API-error message (``is_api_error_message``)."""
    parent_tool_use_id: str | None
    raw: JsonObject

    @property
    def text(self) -> str:
        return "".join(_text_blocks(self.content))

    @property
    def tool_uses(self) -> tuple[ClaudeToolUse, ...]:
        return tuple(_tool_uses(self.content))


@final
@dataclass(frozen=True, slots=True)
class ClaudeUserMessage:
    """A ``user`` line: echoed tool results, or the CLI's ``[Request interrupted ...]`` text."""

    content: JsonValue
    parent_tool_use_id: str | None
    raw: JsonObject


@final
@dataclass(frozen=True, slots=True)
class ClaudeStreamEvent:
    """A ``stream_event`` line (``--include-partial-messages``): a raw Messages API event."""

    event: JsonObject
    parent_tool_use_id: str | None
    raw: JsonObject

    @property
    def text_delta(self) -> str | None:
        """The text of a ``content_block_delta`` / ``text_delta``, else ``None``."""
        if self.event.get("type") != "content_block_delta":
            return None
        delta = self.event.get("delta")
        if isinstance(delta, dict) and delta.get("type") == "text_delta":
            text = delta.get("text")
            return text if isinstance(text, str) else None
        return None


@final
@dataclass(frozen=True, slots=True)
class ClaudeResult:
    """The ``result`` line that ends a turn. An API error ends as ``subtype="success"`` with
    ``is_error=True``; an interrupt as ``error_during_execution``."""

    subtype: str
    is_error: bool
    result: str | None
    """The final text (``None`` after an interrupt)."""
    session_id: str | None
    usage: JsonObject
    total_cost_usd: float | None
    num_turns: int | None
    duration_ms: int | None
    errors: tuple[str, ...]
    stop_reason: str | None
    terminal_reason: str | None
    raw: JsonObject


@final
@dataclass(frozen=True, slots=True)
class ClaudeRawEvent:
    """Any other line (``system/status``, ``rate_limit_event``, unknown types), kept whole."""

    type: str
    subtype: str | None
    raw: JsonObject


ClaudeEvent: TypeAlias = (
    ClaudeSystemInit
    | ClaudeAssistantMessage
    | ClaudeToolUse
    | ClaudeUserMessage
    | ClaudeStreamEvent
    | ClaudeResult
    | ClaudeRawEvent
)


def _text_blocks(content: Sequence[JsonObject]) -> list[str]:
    out: list[str] = []
    for block in content:
        text = block.get("text")
        if block.get("type") == "text" and isinstance(text, str):
            out.append(text)
    return out


def _tool_uses(content: Sequence[JsonObject]) -> list[ClaudeToolUse]:
    out: list[ClaudeToolUse] = []
    for block in content:
        if block.get("type") != "tool_use":
            continue
        tool_input = block.get("input")
        out.append(
            ClaudeToolUse(
                id=str_or_none(block.get("id")) or "",
                name=str_or_none(block.get("name")) or "",
                input=tool_input if isinstance(tool_input, dict) else {},
            )
        )
    return out


def str_or_none(value: JsonValue) -> str | None:
    """``value`` if it is a string, else ``None``."""
    return value if isinstance(value, str) else None


def int_or_none(value: JsonValue) -> int | None:
    """``value`` if it is an integer (not a boolean), else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def object_or_empty(value: JsonValue) -> JsonObject:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def parse_event(message: JsonObject) -> list[ClaudeEvent]:
    """The typed events of one stdout line (not a control message); never raises."""
    kind = str_or_none(message.get("type")) or ""
    subtype = str_or_none(message.get("subtype"))
    parent = str_or_none(message.get("parent_tool_use_id"))
    if kind == "system" and subtype == "init":
        tools = message.get("tools")
        return [
            ClaudeSystemInit(
                session_id=str_or_none(message.get("session_id")) or "",
                model=str_or_none(message.get("model")),
                cwd=str_or_none(message.get("cwd")),
                tools=tuple(t for t in tools if isinstance(t, str))
                if isinstance(tools, list)
                else (),
                permission_mode=str_or_none(message.get("permissionMode")),
                claude_code_version=str_or_none(message.get("claude_code_version")),
                raw=message,
            )
        ]
    if kind == "assistant":
        content = object_or_empty(message.get("message")).get("content")
        blocks = (
            tuple(b for b in content if isinstance(b, dict)) if isinstance(content, list) else ()
        )
        assistant = ClaudeAssistantMessage(
            content=blocks,
            aborted=message.get("aborted") is True,
            error=str_or_none(message.get("error")),
            parent_tool_use_id=parent,
            raw=message,
        )
        return [assistant, *assistant.tool_uses]
    if kind == "user":
        return [
            ClaudeUserMessage(
                content=object_or_empty(message.get("message")).get("content"),
                parent_tool_use_id=parent,
                raw=message,
            )
        ]
    if kind == "stream_event":
        return [ClaudeStreamEvent(object_or_empty(message.get("event")), parent, message)]
    if kind == "result":
        cost = message.get("total_cost_usd")
        errors = message.get("errors")
        return [
            ClaudeResult(
                subtype=subtype or "",
                is_error=message.get("is_error") is True,
                result=str_or_none(message.get("result")),
                session_id=str_or_none(message.get("session_id")),
                usage=object_or_empty(message.get("usage")),
                total_cost_usd=float(cost)
                if isinstance(cost, (int, float)) and not isinstance(cost, bool)
                else None,
                num_turns=int_or_none(message.get("num_turns")),
                duration_ms=int_or_none(message.get("duration_ms")),
                errors=tuple(str(e) for e in errors) if isinstance(errors, list) else (),
                stop_reason=str_or_none(message.get("stop_reason")),
                terminal_reason=str_or_none(message.get("terminal_reason")),
                raw=message,
            )
        ]
    return [ClaudeRawEvent(kind, subtype, message)]
