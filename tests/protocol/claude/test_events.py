"""Claude Code stream-json messages → typed events, without a process (issue 18 point 1)."""

from __future__ import annotations

import pytest

from subagents.protocol import claude
from subagents.protocol.claude import (
    ClaudeAssistantMessage,
    ClaudeRawEvent,
    ClaudeResult,
    ClaudeStreamEvent,
    ClaudeSystemInit,
    ClaudeToolUse,
    ClaudeUserMessage,
    parse_event,
)
from subagents.protocol.jsonrpc import JsonObject, JsonValue

SESSION = "5f1c-session"


def test_system_init_gives_the_session_model_tools_and_version() -> None:
    """Issue 18 point 1: ``system/init`` becomes a ClaudeSystemInit; non-string tool names
    are dropped and the whole line is kept."""
    line: JsonObject = {
        "type": "system",
        "subtype": "init",
        "session_id": SESSION,
        "model": "claude-sonnet-4-6",
        "cwd": "/work",
        "tools": ["Bash", 7, "Read"],
        "permissionMode": "default",
        "claude_code_version": "2.1.332",
    }
    (event,) = parse_event(line)
    assert event == ClaudeSystemInit(
        session_id=SESSION,
        model="claude-sonnet-4-6",
        cwd="/work",
        tools=("Bash", "Read"),
        permission_mode="default",
        claude_code_version="2.1.332",
        raw=line,
    )


def test_an_assistant_message_is_followed_by_its_tool_uses_in_order() -> None:
    """Issue 18 point 1: an ``assistant`` line gives the message, then one ClaudeToolUse per
    ``tool_use`` block; ``text`` joins the text blocks."""
    line: JsonObject = {
        "type": "assistant",
        "parent_tool_use_id": "toolu_parent",
        "message": {
            "content": [
                {"type": "text", "text": "Let me look. "},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a"}},
                {"type": "text", "text": "Then list."},
                {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"cmd": "ls"}},
            ]
        },
    }
    message, *tool_uses = parse_event(line)
    assert isinstance(message, ClaudeAssistantMessage)
    assert message.text == "Let me look. Then list."
    assert message.parent_tool_use_id == "toolu_parent"
    assert (message.aborted, message.error) == (False, None)
    assert tool_uses == [
        ClaudeToolUse("toolu_1", "Read", {"path": "a"}),
        ClaudeToolUse("toolu_2", "Bash", {"cmd": "ls"}),
    ]
    assert message.tool_uses == tuple(tool_uses)


def test_an_interrupted_or_api_error_assistant_message_says_so() -> None:
    """Issue 18 point 1: ``aborted`` marks a message cut by an interrupt; ``error`` a
    synthetic API-error message."""
    (aborted,) = parse_event({"type": "assistant", "aborted": True, "message": {"content": []}})
    assert isinstance(aborted, ClaudeAssistantMessage)
    assert aborted.aborted
    (failed,) = parse_event(
        {"type": "assistant", "error": "overloaded", "message": {"content": [{"type": "text"}]}}
    )
    assert isinstance(failed, ClaudeAssistantMessage)
    assert (failed.error, failed.text) == ("overloaded", "")


def test_a_user_line_keeps_its_content_as_sent() -> None:
    """Issue 18 point 1: echoed tool results arrive as a ClaudeUserMessage, content as is."""
    content: JsonValue = [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]
    line: JsonObject = {"type": "user", "message": {"role": "user", "content": content}}
    assert parse_event(line) == [ClaudeUserMessage(content, None, line)]


def test_a_stream_event_gives_its_text_delta_and_none_for_other_deltas() -> None:
    """Issue 18 point 1: partial messages are ClaudeStreamEvent; ``text_delta`` is the text
    of a text delta only."""
    text: JsonObject = {
        "type": "stream_event",
        "event": {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "Hi"}},
    }
    thinking: JsonObject = {
        "type": "stream_event",
        "event": {"type": "content_block_delta", "delta": {"type": "thinking_delta"}},
    }
    start: JsonObject = {"type": "stream_event", "event": {"type": "message_start"}}
    deltas: list[str | None] = []
    for line in (text, thinking, start):
        (event,) = parse_event(line)
        assert isinstance(event, ClaudeStreamEvent)
        deltas.append(event.text_delta)
    assert deltas == ["Hi", None, None]


def test_a_result_line_gives_every_field_it_has() -> None:
    """Issue 18 point 1: the ``result`` line that ends a turn, with usage, cost and errors."""
    line: JsonObject = {
        "type": "result",
        "subtype": "error_during_execution",
        "is_error": True,
        "session_id": SESSION,
        "usage": {"input_tokens": 3},
        "total_cost_usd": 0,
        "num_turns": 2,
        "duration_ms": 1500,
        "errors": ["boom", 42],
        "stop_reason": "end_turn",
        "terminal_reason": "interrupted",
    }
    (result,) = parse_event(line)
    assert result == ClaudeResult(
        subtype="error_during_execution",
        is_error=True,
        result=None,
        session_id=SESSION,
        usage={"input_tokens": 3},
        total_cost_usd=0.0,
        num_turns=2,
        duration_ms=1500,
        errors=("boom", "42"),
        stop_reason="end_turn",
        terminal_reason="interrupted",
        raw=line,
    )


@pytest.mark.parametrize(
    ("line", "kind", "subtype"),
    [
        ({"type": "mystery_event", "payload": 1}, "mystery_event", None),
        ({"type": "system", "subtype": "brand_new"}, "system", "brand_new"),
        ({"type": "rate_limit_event"}, "rate_limit_event", None),
        ({"no_type": True}, "", None),
        ({"type": 5, "subtype": ["x"]}, "", None),
    ],
)
def test_unknown_types_and_subtypes_are_kept_whole_as_raw_events(
    line: JsonObject, kind: str, subtype: str | None
) -> None:
    """Issue 18 point 1: an unknown type or subtype is a ClaudeRawEvent, never an error."""
    assert parse_event(line) == [ClaudeRawEvent(kind, subtype, line)]


def test_malformed_content_gives_empty_defaults_not_errors() -> None:
    """Issue 18 point 1: fields of the wrong JSON type read as absent: the line still
    becomes its event, with empty content, no tools and no numbers."""
    (init,) = parse_event({"type": "system", "subtype": "init", "tools": "Bash", "model": 3})
    assert isinstance(init, ClaudeSystemInit)
    assert (init.session_id, init.model, init.tools) == ("", None, ())

    assistant_line: JsonObject = {
        "type": "assistant",
        "message": {"content": ["stray", {"type": "tool_use", "input": "not an object"}]},
    }
    message, tool_use = parse_event(assistant_line)
    assert isinstance(message, ClaudeAssistantMessage)
    assert message.content == ({"type": "tool_use", "input": "not an object"},)
    assert tool_use == ClaudeToolUse(id="", name="", input={})
    (no_content,) = parse_event({"type": "assistant", "message": "not an object"})
    assert isinstance(no_content, ClaudeAssistantMessage)
    assert no_content.content == ()

    (user,) = parse_event({"type": "user", "message": ["not an object"]})
    assert isinstance(user, ClaudeUserMessage)
    assert user.content is None

    (stream,) = parse_event({"type": "stream_event", "event": None})
    assert isinstance(stream, ClaudeStreamEvent)
    assert (stream.event, stream.text_delta) == ({}, None)

    (result,) = parse_event(
        {
            "type": "result",
            "total_cost_usd": True,
            "num_turns": False,
            "duration_ms": 1.5,
            "errors": "boom",
            "usage": [],
            "is_error": "yes",
        }
    )
    assert isinstance(result, ClaudeResult)
    assert (result.subtype, result.is_error, result.usage, result.errors) == ("", False, {}, ())
    assert (result.total_cost_usd, result.num_turns, result.duration_ms) == (None, None, None)


@pytest.mark.parametrize("kind", ["system", "assistant", "user", "stream_event", "result"])
@pytest.mark.parametrize("odd", [None, True, 0, -1.5, "", [], {}, [None], {"x": [1]}])
def test_parse_event_never_raises_whatever_the_field_values(kind: str, odd: JsonValue) -> None:
    """Issue 18 point 1: every known type parses with any value in any field."""
    fields = (
        "subtype",
        "message",
        "event",
        "tools",
        "session_id",
        "parent_tool_use_id",
        "total_cost_usd",
        "errors",
        "usage",
        "aborted",
    )
    line: JsonObject = {"type": kind, **dict.fromkeys(fields, odd)}
    events = parse_event(line)
    assert events
    assert all(event.raw is line for event in events if not isinstance(event, ClaudeToolUse))


def test_the_transport_names_are_the_protocol_models() -> None:
    """Issue 18 point 1: the models, options and control messages moved to
    ``protocol.claude``; the transport still exports the very same objects under the same
    names."""
    from subagents.transports import claude_code

    moved = [name for name in claude_code.__all__ if hasattr(claude, name)]
    assert {
        "ClaudeAssistantMessage",
        "ClaudeOptions",
        "ClaudeResult",
        "ClaudeControlError",
        "ClaudeToolPermissionRequest",
        "build_claude_argv",
        "DEFAULT_MAX_LINE_BYTES",
    } <= set(moved)
    for name in moved:
        assert getattr(claude_code, name) is getattr(claude, name)
