"""Absolute depth below a detached parent, and fork seeds of completed turns only (issue 15,
points 3 and 6), through the real spawn and fork providers and ``SubagentService``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from subagents.harness.llm.anthropic import anthropic_request_body
from subagents.harness.llm.offline import OfflineModel
from subagents.harness.llm.openai_chat import openai_chat_request_body
from subagents.harness.llm.scripted import ScriptedAdapter
from subagents.harness.llm.types import (
    LlmAdapter,
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
)
from subagents.harness.runtime import AgentRuntime, ChildLimits
from subagents.harness.session import (
    EMPTY_ANSWER,
    SessionError,
    SessionEvent,
    SessionStore,
    TurnStatus,
    balanced_prefix,
)
from subagents.harness.tools import Tool, ToolResult, ToolSpec
from subagents.protocol.jsonrpc import JsonValue
from subagents.providers import (
    CancelSignal,
    SubagentError,
    SubagentErrorCode,
    SubagentRequest,
    SubagentService,
)
from subagents.providers.fork import ForkProvider
from subagents.providers.spawn import SpawnProvider

pytestmark = pytest.mark.anyio

BOUND = 10.0


def always_delegates(request: ModelRequest) -> ModelResponse:
    """Delegate whenever the subagent tool is offered; report the child's answer."""
    last = request.messages[-1]
    if last.role == "tool":
        return ModelResponse(f"child said: {last.text}")
    if any(spec.name == "subagent" for spec in request.tools):
        call = ToolCall(
            f"c{len(request.messages)}", "subagent", {"description": "d", "prompt": "go deeper"}
        )
        return ModelResponse("", (call,), "tool_use")
    return ModelResponse("bottom: no subagent tool here")


@asynccontextmanager
async def delegation(
    sessions: Path, adapter: LlmAdapter, tools: Sequence[Tool] = ()
) -> AsyncIterator[tuple[AgentRuntime, SubagentService]]:
    runtime = AgentRuntime(adapter, sessions=SessionStore(sessions), tools=tools)
    service = SubagentService()
    async with SpawnProvider(runtime) as spawn, ForkProvider(runtime) as fork:
        service.register(spawn)
        service.register(fork)
        runtime.offer_subagents(service, "spawn")
        yield runtime, service


def headers(sessions: Path) -> dict[str, dict[str, Any]]:
    """The session files' headers, by key."""
    found = [json.loads(p.read_text().splitlines()[0]) for p in sessions.glob("*.jsonl")]
    return {h["key"]: h for h in found}


async def start(service: SubagentService, provider: str, request: SubagentRequest) -> None:
    """Run a child to its end (it completes)."""
    with anyio.fail_after(BOUND):
        run = await service.start(provider, request, cancel=CancelSignal())
        async with run:
            outcome = await run.result()
    assert outcome.status == "completed", outcome


# ---------------------------------------------------------------- absolute depth


async def test_a_detached_start_with_depth_limit_2_allows_exactly_two_levels(
    tmp_path: Path,
) -> None:
    """Issue 15, point 3: depth_limit=N allows exactly N levels below whoever called start,
    also when the runtime does not know the caller's session: the child is stored at depth
    1 and the grandchild at 2 with non-root keys, the grandchild is not offered the subagent
    tool, and a start below it is refused DEPTH_LIMIT."""
    sessions = tmp_path / "sessions"
    async with delegation(sessions, ScriptedAdapter(always_delegates)) as (_, service):
        await start(service, "spawn", SubagentRequest("go", depth_limit=2))
        by_key = headers(sessions)
        grandchild_id = by_key["detached-none.1.1"]["id"]
        with pytest.raises(SubagentError) as info:
            await service.start(
                "spawn", SubagentRequest("x", parent_session=grandchild_id), cancel=CancelSignal()
            )
    assert info.value.code is SubagentErrorCode.DEPTH_LIMIT
    assert sorted(by_key) == ["detached-none.1", "detached-none.1.1"]
    child, grandchild = by_key["detached-none.1"], by_key["detached-none.1.1"]
    assert (child["parent_session"], child["depth"]) == (None, 1)
    assert (grandchild["parent_session"], grandchild["depth"]) == (child["id"], 2)
    assert grandchild["config"]["can_delegate"] is False
    answers = [
        e.text for e in SessionStore(sessions).load(grandchild_id).events if e.kind == "assistant"
    ]
    assert answers == ["bottom: no subagent tool here"]


async def test_depth_limit_2_below_a_root_agent_allows_exactly_two_levels(tmp_path: Path) -> None:
    """Issue 15, point 3: with a parent the runtime knows (a root agent), depth_limit=2 allows
    the same two levels below it: child at depth 1, grandchild at 2, nothing deeper."""
    sessions = tmp_path / "sessions"
    async with delegation(sessions, ScriptedAdapter(always_delegates)) as (runtime, service):
        root = runtime.root_agent()
        await start(service, "spawn", SubagentRequest("go", parent_session=root.id, depth_limit=2))
    by_key = headers(sessions)
    assert sorted(by_key) == ["root", "root.1", "root.1.1"]
    assert [by_key[k]["depth"] for k in ("root", "root.1", "root.1.1")] == [0, 1, 2]
    assert by_key["root.1"]["parent_session"] == root.id
    assert by_key["root.1.1"]["config"]["can_delegate"] is False


async def test_a_detached_childs_session_reloads_cold_with_its_depth_and_key(
    tmp_path: Path,
) -> None:
    """Issue 15, point 3: session files carry the right key and depth: a detached child read
    back by a new store keeps them (and its depth limit still binds its children)."""
    sessions = tmp_path / "sessions"
    async with delegation(sessions, OfflineModel()) as (_, service):
        await start(
            service, "spawn", SubagentRequest("hello", parent_session="acp:x/y.z", depth_limit=1)
        )
    (child,) = headers(sessions).values()
    runtime = AgentRuntime(OfflineModel(), sessions=SessionStore(sessions))
    agent = runtime.load_agent(child["id"])
    assert agent is not None
    session = agent.session
    assert (session.key, session.depth, session.parent_session) == (
        "detached-acp_x_y_z.1",
        1,
        "acp:x/y.z",
    )
    assert runtime.child_limits(session) == ChildLimits(2, 1, None)


async def test_detached_keys_are_deterministic_per_parent(tmp_path: Path) -> None:
    """Issue 15, point 3: snapshot files are named by key, so a detached child's key is the
    n-th child of that parent id in the runtime, the same in every run."""
    runtime = AgentRuntime(OfflineModel(), sessions=SessionStore(tmp_path))
    limits = ChildLimits(1, None, None)
    keys = [
        runtime.child_agent(None, limits, parent_id=parent).session.key
        for parent in (None, "p", None, "p", "a.b/c")
    ]
    assert keys == [
        "detached-none.1",
        "detached-p.1",
        "detached-none.2",
        "detached-p.2",
        "detached-a_b_c.1",
    ]


async def test_a_child_can_be_given_its_session_id(tmp_path: Path) -> None:
    """Issue 15, point 3: child_agent and SessionStore.create take an optional session id
    (a valid, unused one), used instead of a fresh uuid4."""
    runtime = AgentRuntime(OfflineModel(), sessions=SessionStore(tmp_path))
    root = runtime.root_agent()
    limits = ChildLimits(1, None, None)
    detached = runtime.child_agent(None, limits, session_id="chosen-1")
    child = runtime.child_agent(root.session, limits, session_id="chosen-2")
    assert (detached.id, child.id) == ("chosen-1", "chosen-2")
    assert json.loads((tmp_path / "chosen-2.jsonl").read_text().splitlines()[0])["key"] == (
        "root.1"
    )
    for bad in ("", ".hidden", "a/b", "chosen-1"):
        with pytest.raises(SessionError):
            runtime.child_agent(None, limits, session_id=bad)
    with pytest.raises(SessionError):
        SessionStore().create(session_id="../x")


# ---------------------------------------------------------------- fork seeds


class CancelsTheTurn:
    """A tool that cancels the turn it runs in (the turn then ends ``cancelled``)."""

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("stop", "cancels the turn", {"type": "object"})

    async def execute(
        self, arguments: Mapping[str, JsonValue], *, cancel: CancelSignal
    ) -> ToolResult:
        cancel.cancel("stopped by the tool")
        return ToolResult("stopping")


def assert_valid_history(messages: Sequence[Message]) -> None:
    """The roles alternate as every adapter expects (user, then assistant messages whose tool
    calls are each followed by their result, then a final assistant answer), and both wire
    formats accept the history followed by a new prompt."""
    expected = "user"
    open_calls: list[str] = []
    for message in messages:
        if message.role == "tool":
            assert open_calls, messages
            assert message.tool_call_id == open_calls.pop(0), messages
        else:
            assert not open_calls, messages
            assert message.role == expected, messages
            open_calls = [c.id for c in message.tool_calls]
            expected = "user" if message.role == "assistant" and not open_calls else "assistant"
    assert expected == "user", messages
    assert not open_calls, messages
    request = ModelRequest((*messages, Message("user", "next")))
    wire = anthropic_request_body(request, model="m", max_tokens=1)["messages"]
    assert isinstance(wire, list)
    wire_roles = [m["role"] for m in wire if isinstance(m, dict)]
    assert wire_roles == ["user", "assistant"] * (len(wire_roles) // 2) + ["user"]
    assert all(isinstance(m, dict) and m["content"] for m in wire)
    openai = openai_chat_request_body(request, model="m", max_tokens=1)["messages"]
    assert isinstance(openai, list)
    assert len(openai) == len(messages) + 1


async def test_a_fork_is_seeded_with_completed_turns_only(tmp_path: Path) -> None:
    """Issue 15, point 6: a parent with a completed turn, a failed turn (model error), a
    cancelled turn and a completed turn: the fork child's seed has exactly the two completed
    turns, in order; roles alternate, no two user messages in a row."""
    sessions = tmp_path / "sessions"
    async with delegation(sessions, OfflineModel(), tools=[CancelsTheTurn()]) as (
        runtime,
        service,
    ):
        parent = runtime.root_agent()
        statuses = []
        for prompt in ("hello first", "fail now", "tool stop", "hello last"):
            outcome = await parent.run(prompt, cancel=CancelSignal())
            statuses.append(outcome.status)
        await start(service, "fork", SubagentRequest("carry on", parent_session=parent.id))
        child = runtime.sessions.get(headers(sessions)["root.1"]["id"])
    assert statuses == ["completed", "failed", "cancelled", "completed"]
    assert child is not None
    seed = child.events[0]
    assert seed.kind == "seed"
    assert [(m.role, m.text) for m in seed.messages] == [
        ("user", "hello first"),
        ("assistant", "You said: hello first"),
        ("user", "hello last"),
        ("assistant", "You said: hello last"),
    ]
    assert_valid_history(seed.messages)
    assert_valid_history(child.messages())


def turn(*events: SessionEvent, status: TurnStatus | None = "completed") -> list[SessionEvent]:
    """A turn of ``events``; ``status=None``: still running."""
    end = [SessionEvent("turn_end", status=status)] if status else []
    return [SessionEvent("turn_start"), *events, *end]


def test_the_balanced_prefix_keeps_seeds_and_completed_turns_with_their_results() -> None:
    """Issue 15, point 6: a forked session's own seed comes first, completed turns keep their
    tool calls and results, a blank final answer is said as EMPTY_ANSWER (an empty assistant
    message is refused by some APIs), and failed, cancelled and in-flight turns are left out."""
    call = ToolCall("c1", "echo", {})
    inherited = (Message("user", "old"), Message("assistant", "old answer"))
    events = [
        SessionEvent("seed", messages=inherited),
        *turn(
            SessionEvent("user", "one"),
            SessionEvent("assistant", " "),
            SessionEvent("tool_call", call=call),
            SessionEvent("tool_result", "ok", call_id="c1"),
            SessionEvent("assistant", ""),
        ),
        *turn(SessionEvent("user", "two"), status="failed"),
        *turn(
            SessionEvent("user", "three"),
            SessionEvent("assistant", ""),
            SessionEvent("tool_call", call=ToolCall("c2", "echo", {})),
            SessionEvent("tool_result", "cancelled before it ran", call_id="c2", is_error=True),
            status="cancelled",
        ),
        *turn(SessionEvent("user", "four"), status=None),
    ]
    prefix = balanced_prefix(events)
    assert prefix == (
        *inherited,
        Message("user", "one"),
        Message("assistant", "", (call,)),
        Message("tool", "ok", tool_call_id="c1"),
        Message("assistant", EMPTY_ANSWER),
    )
    assert_valid_history(prefix)
