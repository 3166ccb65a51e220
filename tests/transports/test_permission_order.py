"""A permission request is handled in order with the updates sent before it: the tool call it
asks about has been read from the turn (and shown, in `subagents run`) before the policy is
asked — bounded, so a turn nobody reads cannot hold the request."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from subagents.protocol import JsonValue, acp
from subagents.providers.contract import TextProgress
from subagents.providers.progress import ProgressFeed, describe
from subagents.transports._turn_events import TurnEvents

from .test_acp_client import SESSION, FakeAgent, connected

pytestmark = pytest.mark.anyio


async def ask_permission(agent: FakeAgent, tool_call_id: str) -> None:
    """The agent asks to run the tool call ``tool_call_id`` (one allow option)."""
    assert agent.peer is not None
    await agent.peer.request(
        "session/request_permission",
        {
            "sessionId": SESSION,
            "toolCall": {"toolCallId": tool_call_id},
            "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"}],
        },
    )


async def test_caught_up_returns_once_every_pushed_event_is_read() -> None:
    events = TurnEvents[int]()
    with anyio.fail_after(5):
        await events.caught_up()  # nothing pushed: at once
    events.push(1)
    events.push(2)
    waited: list[int] = []

    async def wait() -> None:
        await events.caught_up()
        waited.append(events.read_count)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            assert waited == []
            assert await events.__anext__() == 1
            await anyio.wait_all_tasks_blocked()
            assert waited == []  # one still unread
            assert await events.__anext__() == 2
    assert waited == [2]


async def test_caught_up_returns_when_the_events_end_or_are_discarded() -> None:
    for end in ("close", "discard", "fail"):
        events = TurnEvents[int]()
        events.push(1)
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(events.caught_up)
                await anyio.wait_all_tasks_blocked()
                if end == "close":
                    events.close()
                elif end == "discard":
                    events.discard()
                else:
                    events.fail(RuntimeError("gone"))


async def test_a_progress_feed_is_caught_up_once_its_reader_took_every_event() -> None:
    feed = ProgressFeed(8)
    feed.push(TextProgress("a"))
    feed.push(TextProgress("b"))
    shown: list[str] = []
    noted: list[list[str]] = []

    async def note() -> None:
        await feed.caught_up()
        noted.append(list(shown))

    async def show() -> None:
        async for event in feed:
            shown.append(describe(event))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(note)
            tg.start_soon(show)
            await anyio.wait_all_tasks_blocked()
            feed.close()
    assert noted == [["a", "b"]]


async def test_the_policy_is_asked_after_the_tool_call_it_is_about_was_read() -> None:
    """Issue 18 (one turn API; found by the README's `subagents run reference tool`, whose
    permission line sometimes came before the tool call's): the agent sends the tool call, then
    session/request_permission; the policy runs once the turn's reader has read the tool call."""
    agent = FakeAgent()
    read: list[str] = []
    seen_by_policy: list[list[str]] = []

    async def policy(request: acp.RequestPermissionRequest) -> acp.RequestPermissionOutcome:
        seen_by_policy.append(list(read))
        return acp.CancelledRequestPermissionOutcome()

    async def script(agent: FakeAgent, params: JsonValue) -> object:
        assert agent.peer is not None
        for i in range(20):  # enough that a reader lagging behind would show it
            await agent.update(
                {"sessionUpdate": "tool_call", "toolCallId": f"t{i}", "title": f"tool {i}"}
            )
        await ask_permission(agent, "t19")
        return {"stopReason": "end_turn"}

    agent.prompt_script = script
    async with connected(agent, policy=policy) as connection:
        session = await connection.new_session("/tmp")
        with anyio.fail_after(10):
            async with session.prompt("x") as turn:
                async for update in turn:
                    if isinstance(update, acp.ToolCallSessionUpdate):
                        read.append(update.tool_call_id)
                        for _ in range(3):  # a reader that lets other tasks run first
                            await anyio.lowlevel.checkpoint()
                await turn.result()
    assert seen_by_policy == [[f"t{i}" for i in range(20)]]


async def test_a_turn_nobody_reads_does_not_hold_the_permission_request() -> None:
    """Bounded: with the turn's updates unread, the policy is still asked (after the bound)."""
    agent = FakeAgent()
    asked = anyio.Event()

    async def policy(request: acp.RequestPermissionRequest) -> acp.RequestPermissionOutcome:
        asked.set()
        return acp.CancelledRequestPermissionOutcome()

    async def script(agent: FakeAgent, params: JsonValue) -> object:
        assert agent.peer is not None
        await agent.update({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "t"})
        await ask_permission(agent, "t1")
        return {"stopReason": "end_turn"}

    agent.prompt_script = script
    async with connected(agent, policy=policy) as connection:
        session = await connection.new_session("/tmp")
        with anyio.fail_after(10):
            async with session.prompt("x") as turn:
                await asked.wait()  # not reading the turn meanwhile
                await turn.result()
