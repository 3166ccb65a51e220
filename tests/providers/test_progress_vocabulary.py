"""Issue 15, point 8: one progress vocabulary (the typed events, their JSON form, and the ACP
dialect's mapping onto it; the other dialects are checked in their providers' tests)."""

from __future__ import annotations

from subagents.protocol import acp
from subagents.providers import (
    ChildProgress,
    PlanEntry,
    PlanProgress,
    TextProgress,
    ToolCallProgress,
    ToolResultProgress,
    UsageProgress,
)
from subagents.providers.acp import AcpProgress
from subagents.providers.contract import TOOL_OUTPUT_EXCERPT
from subagents.providers.progress import progress_json


def test_a_tool_results_output_is_an_excerpt_however_it_is_made() -> None:
    """Issue 15, point 8: "tool result (id, status, output excerpt, bounded)"."""
    result = ToolResultProgress("t1", "completed", "x" * 10_000)
    assert len(result.output) <= TOOL_OUTPUT_EXCERPT
    assert result.output.endswith("more characters]")
    assert ToolResultProgress("t1", "completed", "short").output == "short"


def test_every_event_has_a_literal_kind_and_a_json_form() -> None:
    """Issue 15, point 8: a `kind` discriminator on each event; the JSON form is
    {kind, text, data}, a child's event nested in the same form."""
    nested = ChildProgress("call_1", ToolCallProgress("c1", "Bash", "execute", "pending"))
    assert nested.kind == "child"
    assert progress_json(nested) == {
        "kind": "child",
        "text": "Bash",
        "data": {
            "tool_call_id": "call_1",
            "event": {
                "kind": "tool_call",
                "text": "Bash",
                "data": {
                    "id": "c1",
                    "title": "Bash",
                    "tool_kind": "execute",
                    "status": "pending",
                    "input": None,
                },
            },
        },
    }
    plan = PlanProgress((PlanEntry("read", "completed"), PlanEntry("write", "pending")))
    assert progress_json(plan)["text"] == "[completed] read\n[pending] write"
    assert progress_json(TextProgress("hi")) == {"kind": "text", "text": "hi", "data": None}
    usage = progress_json(UsageProgress(input_tokens=3, output_tokens=2))
    assert usage["text"] == "input 3, output 2"


def text(value: str) -> list[acp.ToolCallContent]:
    return [acp.ContentToolCallContent(content=acp.TextContentBlock(text=value))]


def test_acp_tool_calls_and_updates_map_to_calls_and_results_by_id() -> None:
    """Issue 15, point 8: ACP's tool_call + tool_call_update: the call, its changes (the same
    id again, what it had kept), then its result when an update ends it; a call first seen
    finished is announced before its result."""
    mapper = AcpProgress()
    started = acp.ToolCallSessionUpdate(
        tool_call_id="t1", title="Read file", kind="read", status="pending", raw_input={"p": 1}
    )
    running = acp.ToolCallUpdateSessionUpdate(tool_call_id="t1", status="in_progress")
    done = acp.ToolCallUpdateSessionUpdate(
        tool_call_id="t1", status="completed", content=text("contents")
    )
    assert mapper.map(started) == [ToolCallProgress("t1", "Read file", "read", "pending", {"p": 1})]
    assert mapper.map(running) == [
        ToolCallProgress("t1", "Read file", "read", "in_progress", {"p": 1})
    ]
    assert mapper.map(done) == [ToolResultProgress("t1", "completed", "contents")]
    unseen = acp.ToolCallUpdateSessionUpdate(tool_call_id="t2", status="failed", raw_output="no")
    assert mapper.map(unseen) == [
        ToolCallProgress("t2", "t2"),
        ToolResultProgress("t2", "failed", "no"),
    ]
    finished = acp.ToolCallSessionUpdate(
        tool_call_id="t3", title="Fetch", kind="fetch", status="completed", content=text("ok")
    )
    assert mapper.map(finished) == [
        ToolCallProgress("t3", "Fetch", "fetch", "in_progress"),
        ToolResultProgress("t3", "completed", "ok"),
    ]


def test_acp_usage_and_plans_map_onto_the_vocabulary() -> None:
    """Issue 15, point 8: usage where the dialect reports it (context used and size, the
    cost in USD), the plan's entries with content and status."""
    mapper = AcpProgress()
    [usage] = mapper.map(
        acp.UsageUpdateSessionUpdate(used=10, size=100, cost=acp.Cost(amount=0.5, currency="USD"))
    )
    assert isinstance(usage, UsageProgress)
    assert (usage.context_used, usage.context_size, usage.cost_usd) == (10, 100, 0.5)
    plan = acp.PlanSessionUpdate(
        entries=[acp.PlanEntry(content="step", priority="high", status="in_progress")]
    )
    assert mapper.map(plan) == [PlanProgress((PlanEntry("step", "in_progress"),))]
