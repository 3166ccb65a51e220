"""Issue 15, point 9: a child's progress reaches its parent while the child runs.

The agent loop has an explicit, optional progress channel for tools
(:class:`~subagents.harness.tools.ProgressReportingTool`); the subagent tool forwards its
child's events through it; the loop relays them to its own listener as ``ChildProgress`` of
the delegation's tool call, driven here through the real loop and the spawn provider on the
offline model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from subagents.harness import ProgressReportingTool, SubagentTool, Tool, ToolProgressCallback
from subagents.harness.llm.offline import OfflineModel
from subagents.harness.llm.types import ModelRequest, ModelResponse, TextCallback, ToolCall
from subagents.harness.loop import AgentLoop
from subagents.harness.runtime import AgentRuntime
from subagents.harness.session import Session, SessionStore
from subagents.harness.tools import ToolRegistry, ToolResult, ToolSpec
from subagents.protocol.jsonrpc import JsonValue
from subagents.providers import (
    CancelSignal,
    ChildProgress,
    ProgressEvent,
    SubagentService,
    TextProgress,
    ToolCallProgress,
    ToolResultProgress,
)
from subagents.providers.progress import ProgressFeed
from subagents.providers.scripted import Script, ScriptedProvider
from subagents.providers.spawn import SpawnProvider

pytestmark = pytest.mark.anyio

BOUND = 10.0


@asynccontextmanager
async def spawning(tmp_path: Path, tick: float = 0.02) -> AsyncIterator[AgentRuntime]:
    runtime = AgentRuntime(OfflineModel(tick=tick), sessions=SessionStore(tmp_path / "sessions"))
    service = SubagentService()
    async with SpawnProvider(runtime) as spawn:
        service.register(spawn)
        runtime.offer_subagents(service, "spawn")
        yield runtime


def child_texts(events: list[ProgressEvent], call_id: str) -> list[str]:
    return [
        e.event.text
        for e in events
        if isinstance(e, ChildProgress)
        and e.tool_call_id == call_id
        and isinstance(e.event, TextProgress)
    ]


async def test_a_nested_spawn_shows_the_childs_text_on_the_parents_progress_while_it_runs(
    tmp_path: Path,
) -> None:
    """Issue 15, point 9: "a nested spawn through the real loop shows the child's text on the
    parent's on_progress while the child is still running (before its result)": each chunk
    the child streams arrives as ChildProgress of the delegation's tool call, before that
    call's tool result, while the parent's turn is still running; the parent's own text is
    only its own."""
    events: list[ProgressEvent] = []
    first_child_text = anyio.Event()
    finished = anyio.Event()
    results_before_child_text: list[int] = []

    def progress(event: ProgressEvent) -> None:
        events.append(event)
        if (
            isinstance(event, ChildProgress)
            and isinstance(event.event, TextProgress)
            and not first_child_text.is_set()
        ):
            results_before_child_text.append(sum(isinstance(e, ToolResultProgress) for e in events))
            first_child_text.set()

    async with spawning(tmp_path) as runtime:
        parent = runtime.root_agent()
        outcomes = []

        async def run_parent() -> None:
            outcomes.append(
                await parent.run("delegate slow 5", cancel=CancelSignal(), on_progress=progress)
            )
            finished.set()

        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run_parent)
                await first_child_text.wait()
                # The child has streamed its first tick; it streams four more, 20 ms apart.
                assert not finished.is_set()
                assert results_before_child_text == [0]
    [outcome] = outcomes
    assert outcome.status == "completed"
    assert outcome.text == "subagent said: tick 1 tick 2 tick 3 tick 4 tick 5 "
    [call] = [e for e in events if isinstance(e, ToolCallProgress)]
    assert (call.title, call.input) == (
        "subagent",
        {"description": "delegated task", "prompt": "slow 5"},
    )
    [result] = [e for e in events if isinstance(e, ToolResultProgress)]
    assert (result.id, result.status) == (call.id, "completed")
    assert child_texts(events, call.id) == [f"tick {i} " for i in range(1, 6)]
    last_child = max(i for i, e in enumerate(events) if isinstance(e, ChildProgress))
    assert events.index(call) < last_child < events.index(result)
    own_text = "".join(e.text for e in events if isinstance(e, TextProgress))
    assert own_text == outcome.text


async def test_a_grandchilds_progress_is_nested_under_each_delegations_call(
    tmp_path: Path,
) -> None:
    """Issue 15, point 9: the child's own delegation relays its child's events too, so a
    grandchild's text is ChildProgress(parent's call, ChildProgress(child's call, text)),
    between the child's tool call and tool result of that delegation."""
    events: list[ProgressEvent] = []
    async with spawning(tmp_path) as runtime:
        parent = runtime.root_agent()
        with anyio.fail_after(BOUND):
            outcome = await parent.run(
                "delegate delegate hello", cancel=CancelSignal(), on_progress=events.append
            )
    assert outcome.text == "subagent said: subagent said: You said: hello"
    [call] = [e for e in events if isinstance(e, ToolCallProgress)]
    from_child = [e.event for e in events if isinstance(e, ChildProgress)]
    assert all(isinstance(e, ChildProgress) or e.kind != "child" for e in from_child)
    [inner_call] = [e for e in from_child if isinstance(e, ToolCallProgress)]
    [inner_result] = [e for e in from_child if isinstance(e, ToolResultProgress)]
    assert inner_call.title == "subagent"
    assert inner_result.id == inner_call.id
    assert "".join(child_texts(from_child, inner_call.id)) == "You said: hello"
    grandchild = [i for i, e in enumerate(from_child) if isinstance(e, ChildProgress)]
    assert from_child.index(inner_call) < min(grandchild)
    assert max(grandchild) < from_child.index(inner_result)
    assert "".join(child_texts(events, call.id)) == "subagent said: You said: hello"


class Reporting:
    """A tool that reports progress when asked to, and says how it was called."""

    spec = ToolSpec("report", "reports two steps", {"type": "object"})

    async def execute(
        self, arguments: Mapping[str, JsonValue], *, cancel: CancelSignal
    ) -> ToolResult:
        return ToolResult("plain")

    async def execute_with_progress(
        self,
        arguments: Mapping[str, JsonValue],
        *,
        cancel: CancelSignal,
        on_progress: ToolProgressCallback,
    ) -> ToolResult:
        on_progress(TextProgress("step 1"))
        on_progress(TextProgress("step 2"))
        return ToolResult("with progress")


class Plain:
    spec = ToolSpec("plain", "an ordinary tool", {"type": "object"})

    async def execute(
        self, arguments: Mapping[str, JsonValue], *, cancel: CancelSignal
    ) -> ToolResult:
        return ToolResult("ran")


class CallsThenSays:
    """A model that calls ``name`` once, then says the tool's answer."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def complete(
        self, request: ModelRequest, *, cancel: CancelSignal, on_text: TextCallback | None = None
    ) -> ModelResponse:
        last = request.messages[-1]
        if last.role == "user":
            return ModelResponse("", (ToolCall("c1", self.name, {}),), "tool_use")
        return ModelResponse(last.text)


async def test_the_tool_progress_channel_is_optional_and_detected_by_its_method() -> None:
    """Issue 15, point 9: "backward compatible with existing Tool implementations": a tool
    with only execute() runs as before; a ProgressReportingTool gets a callback when someone
    listens to the turn (its events come out as ChildProgress of its call), and plain
    execute() when nobody does."""
    assert isinstance(Reporting(), ProgressReportingTool)
    assert isinstance(Plain(), Tool)
    assert not isinstance(Plain(), ProgressReportingTool)
    for tool in (Reporting(), Plain()):
        registry = ToolRegistry()
        registry.register(tool)
        loop = AgentLoop(CallsThenSays(tool.spec.name), registry)
        events: list[ProgressEvent] = []
        heard = await loop.run_turn(
            Session("s", key="root"), "go", cancel=CancelSignal(), on_progress=events.append
        )
        unheard = await loop.run_turn(Session("t", key="root"), "go", cancel=CancelSignal())
        relayed = [e for e in events if isinstance(e, ChildProgress)]
        if isinstance(tool, Reporting):
            assert (heard.text, unheard.text) == ("with progress", "plain")
            assert relayed == [
                ChildProgress("c1", TextProgress("step 1")),
                ChildProgress("c1", TextProgress("step 2")),
            ]
        else:
            assert (heard.text, unheard.text) == ("ran", "ran")
            assert relayed == []


async def test_the_subagent_tool_forwards_the_childs_events_while_it_runs() -> None:
    """Issue 15, point 9: the subagent tool reads run.progress() concurrently with result():
    the child's events reach the callback while the child is held before its result, and a
    listener that fails does not fail the delegation."""
    gate = anyio.Event()
    progress = (TextProgress("a"), TextProgress("b"))
    scripts = {
        "held": Script(output="ab", progress=progress, turn_gate=gate),
        "quick": Script(output="ab", progress=progress),
    }
    async with ScriptedProvider(scripts, name="scripted") as provider:
        service = SubagentService()
        service.register(provider)
        tool = SubagentTool(service, "scripted")
        seen: list[ProgressEvent] = []
        both = anyio.Event()

        def listen(event: ProgressEvent) -> None:
            seen.append(event)
            if len(seen) == 2:
                both.set()

        results: list[ToolResult] = []

        async def delegate() -> None:
            arguments: dict[str, JsonValue] = {"description": "d", "prompt": "held"}
            results.append(
                await tool.execute_with_progress(
                    arguments, cancel=CancelSignal(), on_progress=listen
                )
            )

        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as tg:
                tg.start_soon(delegate)
                await both.wait()
                assert results == []  # the child is still held before its result
                gate.set()
        assert seen == list(progress)
        assert results[0].content == "ab"

        def broken(event: ProgressEvent) -> None:
            raise RuntimeError("listener bug")

        with anyio.fail_after(BOUND):
            result = await tool.execute_with_progress(
                {"description": "d", "prompt": "quick"}, cancel=CancelSignal(), on_progress=broken
            )
        assert (result.is_error, result.content) == (False, "ab")
        assert provider.live_tasks == 0


async def test_a_slow_progress_consumer_never_blocks_the_child() -> None:
    """Issue 15, point 9: "a slow parent never blocks a child": the parent's listener only
    hands events to a bounded buffer that a slow consumer drains (10 ms per event); a child
    streaming 500 events completes at once (not after the 5 s the consumer would need), and
    the buffer kept the latest events, dropping the others."""
    flood = tuple(TextProgress(f"{i} ") for i in range(500))
    async with ScriptedProvider(
        {"flood": Script(output="done", progress=flood)}, name="scripted"
    ) as provider:
        service = SubagentService()
        service.register(provider)
        tool = SubagentTool(service, "scripted")
        buffer = ProgressFeed(4)
        consumed: list[ProgressEvent] = []
        results: list[ToolResult] = []
        read_when_done: list[int] = []

        async def slow_consumer() -> None:
            async for event in buffer:
                consumed.append(event)
                await anyio.sleep(0.01)

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow_consumer)
            with anyio.fail_after(BOUND):
                results.append(
                    await tool.execute_with_progress(
                        {"description": "d", "prompt": "flood"},
                        cancel=CancelSignal(),
                        on_progress=buffer.push,
                    )
                )
            read_when_done.append(len(consumed))
            buffer.close()
    assert results[0].content == "done"
    assert read_when_done[0] < len(flood)  # the tool returned before the consumer caught up
    assert buffer.dropped > 0
    assert consumed[-4:] == list(flood[-4:])
