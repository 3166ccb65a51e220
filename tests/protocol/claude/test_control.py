"""Claude Code's control protocol messages, without a process (issue 18 point 1: the
dialect's messages are sans-IO; issue 7 for what they carry)."""

from __future__ import annotations

import json

import pytest

from subagents.protocol.claude import (
    ClaudeAllowTool,
    ClaudeControlCancel,
    ClaudeControlError,
    ClaudeControlRequest,
    ClaudeControlResponse,
    ClaudeDenyTool,
    ClaudeHook,
    ClaudeResult,
    control_error,
    control_request,
    control_success,
    encode_line,
    hook_registrations,
    permission_answer,
    permission_request,
    read_message,
    user_message,
)
from subagents.protocol.jsonrpc import JsonObject

CAN_USE_TOOL: JsonObject = {
    "subtype": "can_use_tool",
    "tool_name": "Bash",
    "input": {"command": "ls"},
    "tool_use_id": "toolu_1",
    "description": "List",
    "permission_suggestions": [],
}


async def _noop(payload: JsonObject) -> JsonObject:
    return payload


def test_control_lines_are_told_apart_from_events() -> None:
    """Issue 7 / control protocol: a control_response names our request_id (success body or
    error with its code), a control_request names the CLI's, a control_cancel_request takes
    one back; anything else is events."""
    ok = read_message(
        {
            "type": "control_response",
            "response": {"subtype": "success", "request_id": "req_1", "response": {"pid": 7}},
        }
    )
    assert ok == ClaudeControlResponse("req_1", {"pid": 7}, None)
    failed = read_message(
        {
            "type": "control_response",
            "response": {
                "subtype": "error",
                "request_id": "req_2",
                "error": "Unsupported control request subtype: x",
                "error_code": "unsupported_request",
            },
        }
    )
    assert isinstance(failed, ClaudeControlResponse)
    assert isinstance(failed.error, ClaudeControlError)
    assert (failed.request_id, failed.error.error_code) == ("req_2", "unsupported_request")
    asked = read_message({"type": "control_request", "request_id": "c1", "request": CAN_USE_TOOL})
    assert asked == ClaudeControlRequest("c1", "can_use_tool", CAN_USE_TOOL)
    assert read_message({"type": "control_cancel_request", "request_id": "c1"}) == (
        ClaudeControlCancel("c1")
    )
    events = read_message({"type": "result", "subtype": "success", "is_error": False})
    assert isinstance(events, list)
    assert isinstance(events[0], ClaudeResult)


def test_a_permission_decision_becomes_the_answer_the_cli_expects() -> None:
    """Issue 7 / can_use_tool: allow carries updatedInput (the input asked for unless the
    policy changed it); deny carries the message and, when asked, interrupt; anything else
    a policy returns is a deny naming it."""
    asked = permission_request(CAN_USE_TOOL)
    assert (asked.tool_name, asked.tool_use_id, asked.description) == ("Bash", "toolu_1", "List")
    assert permission_answer(asked, ClaudeAllowTool()) == {
        "behavior": "allow",
        "updatedInput": {"command": "ls"},
    }
    assert permission_answer(asked, ClaudeAllowTool({"command": "pwd"}))["updatedInput"] == {
        "command": "pwd"
    }
    assert permission_answer(asked, ClaudeDenyTool("no", interrupt=True)) == {
        "behavior": "deny",
        "message": "no",
        "interrupt": True,
    }
    odd = permission_answer(asked, "yes please")
    assert odd["behavior"] == "deny"
    assert "'yes please'" in str(odd["message"])


def test_hooks_are_registered_by_callback_id_per_event() -> None:
    """Issue 7 / hook_callback: each hook gets an id (hook_0, hook_1, ...) under its event in
    initialize's hooks field; no hooks send null."""
    hooks = [
        ClaudeHook("PreToolUse", _noop, matcher="Bash", timeout=5.0),
        ClaudeHook("PreToolUse", _noop),
        ClaudeHook("Stop", _noop),
    ]
    callbacks, config = hook_registrations(hooks)
    assert list(callbacks) == ["hook_0", "hook_1", "hook_2"]
    assert config == {
        "PreToolUse": [
            {"matcher": "Bash", "hookCallbackIds": ["hook_0"], "timeout": 5.0},
            {"matcher": None, "hookCallbackIds": ["hook_1"]},
        ],
        "Stop": [{"matcher": None, "hookCallbackIds": ["hook_2"]}],
    }
    assert hook_registrations([]) == ({}, None)


def test_what_the_host_writes_is_one_json_object_per_line() -> None:
    """Issue 7 / stdin: every line is one JSON object (newlines in strings escaped); NaN is
    refused before anything is written, as the CLI dies on a line it cannot parse."""
    line = encode_line(user_message("two\nlines"))
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert json.loads(line)["message"] == {"role": "user", "content": "two\nlines"}
    with pytest.raises(ValueError, match="JSON compliant"):
        encode_line(control_request("req_1", "set_max_thinking_tokens", {"value": float("nan")}))
    assert control_request("req_1", "interrupt", {}) == {
        "type": "control_request",
        "request_id": "req_1",
        "request": {"subtype": "interrupt"},
    }
    assert control_success("c1", {"ok": True})["response"] == {
        "subtype": "success",
        "request_id": "c1",
        "response": {"ok": True},
    }
    assert control_error("c1", "broken")["response"] == {
        "subtype": "error",
        "request_id": "c1",
        "error": "broken",
    }
