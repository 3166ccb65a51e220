"""A Codex turn's notifications → typed events → its result, sans-IO (no process, no event
loop): :class:`~subagents.protocol.codex.CodexTurnProgress` and the routing helpers.
Requirement names refer to the transport brief (issue 6, part 1) and issue 18 (sans-IO
dialects)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from subagents.protocol import codex
from subagents.protocol.codex import (
    CodexAgentMessageDelta,
    CodexItemCompleted,
    CodexItemStarted,
    CodexOtherEvent,
    CodexPlanDelta,
    CodexPlanUpdated,
    CodexReasoningDelta,
    CodexTokenUsage,
    CodexTurnError,
    CodexTurnProgress,
)

WHERE: dict[str, Any] = {"threadId": "thr-1", "turnId": "turn-1"}
BREAKDOWN = {
    "totalTokens": 15,
    "inputTokens": 10,
    "cachedInputTokens": 0,
    "outputTokens": 5,
    "reasoningOutputTokens": 0,
}


def message(item_id: str, text: str, phase: str | None = None) -> dict[str, Any]:
    return {"type": "agentMessage", "id": item_id, "text": text, "phase": phase}


def completed(item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "item/completed", {**WHERE, "item": item, "completedAtMs": 2}


def turn_completed(status: str, items: list[Any], error: Any = None) -> tuple[str, Any]:
    turn = {"id": "turn-1", "status": status, "items": items, "error": error}
    return "turn/completed", {"threadId": "thr-1", "turn": turn}


def feed(progress: CodexTurnProgress, *notes: tuple[str, Any]) -> list[Any]:
    return [progress.receive(method, params) for method, params in notes]


def test_each_modelled_notification_becomes_its_typed_event() -> None:
    """Issue 6 (typed events from item/* notifications): deltas, reasoning, plans, items,
    errors and usage each become their event; the rest is a CodexOtherEvent, as received."""
    steps = [{"step": "Answer it", "status": "inProgress"}]
    events = feed(
        CodexTurnProgress(),
        ("item/started", {**WHERE, "item": message("m", ""), "startedAtMs": 1}),
        ("item/agentMessage/delta", {**WHERE, "itemId": "m", "delta": "Hi"}),
        (
            "item/reasoning/summaryTextDelta",
            {**WHERE, "itemId": "r", "delta": "Weighing", "summaryIndex": 1},
        ),
        ("item/reasoning/textDelta", {**WHERE, "itemId": "r", "delta": "raw", "contentIndex": 0}),
        ("turn/plan/updated", {**WHERE, "explanation": "One step.", "plan": steps}),
        ("item/plan/delta", {**WHERE, "itemId": "p", "delta": "1. Answer"}),
        completed(message("m", "Hi")),
        (
            "error",
            {**WHERE, "error": {"message": "slow", "codexErrorInfo": None}, "willRetry": True},
        ),
        (
            "thread/tokenUsage/updated",
            {
                **WHERE,
                "tokenUsage": {"total": BREAKDOWN, "last": BREAKDOWN, "modelContextWindow": 9},
            },
        ),
        ("serverRequest/resolved", {"threadId": "thr-1", "requestId": 0}),
    )
    assert [type(event) for event in events] == [
        CodexItemStarted,
        CodexAgentMessageDelta,
        CodexReasoningDelta,
        CodexReasoningDelta,
        CodexPlanUpdated,
        CodexPlanDelta,
        CodexItemCompleted,
        CodexTurnError,
        CodexTokenUsage,
        CodexOtherEvent,
    ]
    assert events[1] == CodexAgentMessageDelta("m", "Hi")
    assert events[2] == CodexReasoningDelta("r", "Weighing", "summary", 1)
    assert events[3] == CodexReasoningDelta("r", "raw", "text", 0)
    assert [(s.step, s.status) for s in events[4].steps] == [("Answer it", "inProgress")]
    assert events[5] == CodexPlanDelta("p", "1. Answer")
    assert events[7] == CodexTurnError("slow", True, None)
    assert events[8].total.total_tokens == 15
    assert events[8].model_context_window == 9
    assert events[9] == CodexOtherEvent(
        "serverRequest/resolved", {"threadId": "thr-1", "requestId": 0}
    )


def test_params_that_do_not_fit_their_model_are_kept_raw(caplog: pytest.LogCaptureFixture) -> None:
    """Nothing a server sends is fatal: a delta without its fields is a CodexOtherEvent
    holding the params as received, and a warning names the method."""
    [event] = feed(CodexTurnProgress(), ("item/agentMessage/delta", {"delta": 3}))
    assert event == CodexOtherEvent("item/agentMessage/delta", {"delta": 3})
    assert "item/agentMessage/delta with unexpected params kept raw" in caplog.text


def test_interleaved_deltas_are_joined_per_item_then_replaced_by_the_completed_text() -> None:
    """Issue 6 (deltas grouped by item id): messages keep the order their first piece came;
    a completed item's text replaces its joined deltas."""
    progress = CodexTurnProgress()
    feed(
        progress,
        ("item/agentMessage/delta", {**WHERE, "itemId": "a", "delta": "Look"}),
        ("item/agentMessage/delta", {**WHERE, "itemId": "b", "delta": "The "}),
        ("item/agentMessage/delta", {**WHERE, "itemId": "a", "delta": "ing"}),
        ("item/agentMessage/delta", {**WHERE, "itemId": "b", "delta": "answer"}),
    )
    assert list(progress.messages.items()) == [("a", "Looking"), ("b", "The answer")]
    feed(progress, completed(message("a", "Looking around.")))
    assert list(progress.messages.items()) == [("a", "Looking around."), ("b", "The answer")]


def test_turn_completed_is_the_turn_itself_and_gives_the_result() -> None:
    """turn/completed is no event: receive() returns the completed turn, and result() makes
    the CodexTurnResult (items seen, final text, usage)."""
    progress = CodexTurnProgress()
    feed(progress, completed(message("m", "Done.")))
    turn = progress.receive(*turn_completed("completed", [message("m", "Done.")]))
    assert isinstance(turn, codex.Turn)
    result = progress.result(turn)
    assert (result.status, result.final_text, result.error) == ("completed", "Done.", None)
    assert [item.id for item in result.items] == ["m"]
    assert result.usage is None


def test_a_failed_turn_without_its_own_error_takes_the_last_error_notification() -> None:
    """A failed turn's error: the turn's own, else the last ``error`` notification's."""
    progress = CodexTurnProgress()
    feed(
        progress,
        ("error", {**WHERE, "error": {"message": "overloaded"}, "willRetry": False}),
    )
    turn = progress.receive(*turn_completed("failed", []))
    assert isinstance(turn, codex.Turn)
    result = progress.result(turn)
    assert (result.status, result.error) == ("failed", "overloaded")
    assert progress.result(turn, failure="deadline passed").error == "deadline passed"


def test_a_turn_reported_in_progress_is_a_failed_result() -> None:
    """A turn read back still ``inProgress`` (thread/read at a deadline) is no success."""
    turn = codex.from_wire(codex.Turn, {"id": "turn-1", "status": "inProgress"})
    assert CodexTurnProgress().result(turn).status == "failed"


def test_the_final_text_prefers_the_final_answer_phase() -> None:
    """Final text as codex.md recommends: the completed turn's items first, else the last
    final_answer message seen, else the last message."""
    progress = CodexTurnProgress()
    feed(
        progress,
        completed(message("f", "The answer is 42.", "final_answer")),
        completed(message("c", "Let me check.", "commentary")),
    )
    assert progress.ended("interrupted", "left early").final_text == "The answer is 42."
    turn = progress.receive(*turn_completed("completed", [message("t", "From the turn.")]))
    assert isinstance(turn, codex.Turn)
    assert progress.result(turn).final_text == "From the turn."


def test_the_thread_going_idle_after_it_was_active_is_noticed() -> None:
    """The upstream bug (no turn/completed): the turn needs to know the thread went idle
    after it ran; an idle status before the turn was active means nothing."""
    progress = CodexTurnProgress()
    idle = ("thread/status/changed", {"threadId": "thr-1", "status": {"type": "idle"}})
    feed(progress, idle)
    assert (progress.active, progress.idle) == (False, False)
    feed(progress, ("turn/started", {"threadId": "thr-1", "turn": {"id": "turn-1"}}), idle)
    assert (progress.active, progress.idle) == (True, True)


def test_notifications_name_their_thread_and_turn() -> None:
    """Routing: threadId (thread/started: thread.id), then turnId or turn.id."""
    assert codex.thread_id_of("item/started", WHERE) == "thr-1"
    assert codex.thread_id_of("thread/started", {"thread": {"id": "thr-2"}}) == "thr-2"
    assert codex.thread_id_of("configWarning", {"summary": "x"}) is None
    assert codex.turn_id_of(WHERE) == "turn-1"
    assert codex.turn_id_of({"turn": {"id": "turn-2"}}) == "turn-2"
    assert codex.turn_id_of(None) is None


def test_approval_requests_parse_into_one_typed_request() -> None:
    """Approvals: both request kinds become a CodexApprovalRequest; params that do not fit
    raise (the client then declines)."""
    command = codex.approval_request(
        "item/commandExecution/requestApproval",
        {**WHERE, "itemId": "c", "command": "ls", "cwd": "/tmp", "reason": "look"},
    )
    assert (command.kind, command.command, command.cwd, command.reason) == (
        "commandExecution",
        "ls",
        "/tmp",
        "look",
    )
    assert command.describe() == (
        "item/commandExecution/requestApproval 'ls' (item c, turn turn-1, thread thr-1)"
    )
    change = codex.approval_request("item/fileChange/requestApproval", {**WHERE, "itemId": "f"})
    assert (change.kind, change.command, change.item_id) == ("fileChange", None, "f")
    with pytest.raises(ValueError, match="threadId"):
        codex.approval_request("item/fileChange/requestApproval", {"itemId": "f"})


def test_the_codex_events_import_no_async_framework() -> None:
    """DESIGN.md layers: `protocol` imports no anyio; the Codex events and their parsing
    included."""
    code = (
        "import sys\n"
        "from subagents.protocol import codex\n"
        "codex.CodexTurnProgress().receive('turn/started', {'threadId': 't'})\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('anyio', 'trio', 'asyncio'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""
