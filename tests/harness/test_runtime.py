"""The in-process runtime (issue 8, part 1): sessions and their logs, the agent loop, and the
spawn and fork providers behind the run contract, driven by the embedded offline model.

Requirement names refer to issue 8 and to the seam note's rules (sessions, lineage, the
parent's log, fork's balanced prefix, recursion)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from subagents.harness.llm.offline import OfflineModel
from subagents.harness.llm.types import (
    LlmCancelled,
    ModelRequest,
    ModelResponse,
    TextCallback,
    ToolCall,
)
from subagents.harness.loop import AgentLoop
from subagents.harness.runtime import AgentRuntime
from subagents.harness.session import Session, SessionEvent, SessionStore
from subagents.harness.tools import ToolRegistry, ToolResult, ToolSpec
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


# ---------------------------------------------------------------- helpers


@dataclass
class Echo:
    """A stateless tool: returns its ``text`` argument."""

    name: str = "echo"

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, f"{self.name} a text", {"type": "object"})

    async def execute(
        self, arguments: Mapping[str, JsonValue], *, cancel: CancelSignal
    ) -> ToolResult:
        return ToolResult(f"{self.name}: {arguments.get('text')}")


class Boom:
    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("boom", "always fails", {"type": "object"})

    async def execute(
        self, arguments: Mapping[str, JsonValue], *, cancel: CancelSignal
    ) -> ToolResult:
        raise RuntimeError("the boom tool broke")


class CallsTools:
    """A model that calls the given tools on its first step, then says what it got."""

    def __init__(self, *calls: tuple[str, dict[str, JsonValue]]) -> None:
        self.calls = calls
        self.requests: list[ModelRequest] = []

    async def complete(
        self, request: ModelRequest, *, cancel: CancelSignal, on_text: TextCallback | None = None
    ) -> ModelResponse:
        self.requests.append(request)
        if cancel.cancelled:
            raise LlmCancelled(cancel.reason or "")
        if request.messages[-1].role == "user":
            calls = tuple(
                ToolCall(f"c{i}", name, args) for i, (name, args) in enumerate(self.calls)
            )
            return ModelResponse("calling", calls, "tool_use")
        results = [m for m in request.messages if m.role == "tool"]
        return ModelResponse(" | ".join(f"{m.text}{'!' if m.is_error else ''}" for m in results))


def kinds(session: Session) -> list[str]:
    return [e.kind for e in session.events]


@asynccontextmanager
async def delegation(
    tmp_path: Path,
    *,
    provider: str = "spawn",
    adapter: object | None = None,
    tools: Sequence[object] = (),
) -> AsyncIterator[tuple[AgentRuntime, SubagentService]]:
    """A runtime on ``tmp_path/sessions`` whose agents delegate to ``provider``."""
    runtime = AgentRuntime(
        adapter or OfflineModel(tick=0.01),  # type: ignore[arg-type]
        sessions=SessionStore(tmp_path / "sessions"),
        tools=list(tools),  # type: ignore[arg-type]
    )
    service = SubagentService()
    async with SpawnProvider(runtime) as spawn, ForkProvider(runtime) as fork:
        service.register(spawn)
        service.register(fork)
        runtime.offer_subagents(service, provider)
        yield runtime, service


# ---------------------------------------------------------------- sessions


async def test_a_session_log_is_persisted_as_it_happens_and_reloads(tmp_path: Path) -> None:
    """Issue 8 / Session: own id, an append-only log (turn boundaries, user, assistant, tool
    call, tool result) persisted as JSONL in the sessions directory, reloadable."""
    store = SessionStore(tmp_path)
    runtime = AgentRuntime(OfflineModel(), sessions=store, tools=[Echo()])
    agent = runtime.root_agent()
    agent.loop.adapter = CallsTools(("echo", {"text": "hi"}))
    outcome = await agent.run("go", cancel=CancelSignal())
    assert outcome.status == "completed"
    assert outcome.text == "echo: hi"
    lines = (tmp_path / f"{agent.id}.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["id"] == agent.id
    assert [json.loads(line)["kind"] for line in lines[1:]] == [
        "turn_start",
        "user",
        "assistant",
        "tool_call",
        "tool_result",
        "assistant",
        "turn_end",
    ]
    again = SessionStore(tmp_path).load(agent.id)
    assert again.events == agent.session.events
    assert again.messages() == agent.session.messages()
    assert again.parent_session is None
    assert again.depth == 0


async def test_a_malformed_session_file_is_a_clear_error(tmp_path: Path) -> None:
    from subagents.harness.session import SessionError

    (tmp_path / "broken.jsonl").write_text('{"format": "subagents-session/1", "id": "x"\n')
    with pytest.raises(SessionError, match="malformed"):
        SessionStore(tmp_path).load("broken")


# ---------------------------------------------------------------- the loop


async def test_a_turn_streams_text_and_ends_with_the_models_answer(tmp_path: Path) -> None:
    """Issue 8 / AgentLoop: model until it stops; text deltas are live progress."""
    runtime = AgentRuntime(OfflineModel())
    agent = runtime.root_agent()
    texts: list[str] = []
    outcome = await agent.run(
        "hello there",
        cancel=CancelSignal(),
        on_progress=lambda e: texts.append(e.text) if e.kind == "text" else None,
    )
    assert (outcome.status, outcome.text) == ("completed", "You said: hello there")
    assert "".join(texts) == outcome.text
    assert len(texts) > 1


async def test_tool_failures_become_error_results_the_model_sees() -> None:
    """Issue 8 / AgentLoop: a tool that raises, or an unknown tool, is an error result (the
    turn goes on)."""
    registry = ToolRegistry()
    registry.register(Boom())
    model = CallsTools(("boom", {}), ("nope", {}))
    loop = AgentLoop(model, registry)
    session = Session("s", key="root")
    outcome = await loop.run_turn(session, "go", cancel=CancelSignal())
    assert outcome.status == "completed"
    assert outcome.text == (
        "the tool 'boom' failed: RuntimeError: the boom tool broke! | no tool named 'nope'!"
    )


async def test_the_step_limit_ends_the_turn_failed() -> None:
    """Issue 8 / AgentLoop: model <-> tools until the model stops *or a step limit*."""

    class Forever:
        async def complete(
            self, request: ModelRequest, *, cancel: CancelSignal, on_text: object = None
        ) -> ModelResponse:
            return ModelResponse("", (ToolCall(f"c{len(request.messages)}", "echo", {}),))

    registry = ToolRegistry()
    registry.register(Echo())
    session = Session("s", key="root")
    outcome = await AgentLoop(Forever(), registry, max_steps=3).run_turn(
        session, "go", cancel=CancelSignal()
    )
    assert outcome.status == "failed"
    assert outcome.message == "the step limit (3) was reached"
    assert outcome.steps == 3
    assert kinds(session).count("tool_result") == kinds(session).count("tool_call") == 3


async def test_the_signal_stops_a_streaming_model_call_and_the_turn_is_cancelled() -> None:
    """Issue 8 / AgentLoop: cancellation at every await (mid-stream here)."""
    runtime = AgentRuntime(OfflineModel(tick=0.01))
    agent = runtime.root_agent()
    signal = CancelSignal()

    def progress(event: object) -> None:
        signal.cancel("stop now")

    with anyio.fail_after(BOUND):
        outcome = await agent.run("slow 1000", cancel=signal, on_progress=progress)
    assert (outcome.status, outcome.message) == ("cancelled", "stop now")
    assert kinds(agent.session)[-1] == "turn_end"
    assert agent.session.events[-1].status == "cancelled"


async def test_an_outside_cancellation_keeps_the_log_balanced() -> None:
    """Issue 8 / fork's prerequisite: every tool call in a log has its result, also when the
    turn is cancelled from an enclosing scope while a tool runs."""
    started = anyio.Event()

    class Hangs:
        @property
        def spec(self) -> ToolSpec:
            return ToolSpec("hang", "never returns", {"type": "object"})

        async def execute(
            self, arguments: Mapping[str, JsonValue], *, cancel: CancelSignal
        ) -> ToolResult:
            started.set()
            await anyio.sleep_forever()
            raise AssertionError

    registry = ToolRegistry()
    registry.register(Hangs())
    session = Session("s", key="root")
    loop = AgentLoop(CallsTools(("hang", {}), ("hang", {})), registry)
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: loop.run_turn(session, "go", cancel=CancelSignal()))
            await started.wait()
            tg.cancel_scope.cancel()
    calls = [e.call.id for e in session.events if e.kind == "tool_call" and e.call]
    results = [e.call_id for e in session.events if e.kind == "tool_result"]
    assert calls == results == ["c0", "c1"]
    assert session.events[-1].status == "cancelled"


# ---------------------------------------------------------------- spawn


async def test_nested_spawn_keeps_each_childs_steps_in_its_own_session(tmp_path: Path) -> None:
    """Seam note: each in-process subagent runs in its own Session (own id, parentSession
    lineage), persisted independently; the parent's log records only the spawn tool/call and
    its tool/result."""
    async with delegation(tmp_path) as (runtime, _):
        parent = runtime.root_agent()
        with anyio.fail_after(BOUND):
            outcome = await parent.run("delegate delegate hello", cancel=CancelSignal())
    assert outcome.status == "completed"
    assert outcome.text == "subagent said: subagent said: You said: hello"
    assert kinds(parent.session) == [
        "turn_start",
        "user",
        "assistant",
        "tool_call",
        "tool_result",
        "assistant",
        "turn_end",
    ]
    files = sorted((tmp_path / "sessions").glob("*.jsonl"))
    headers = [json.loads(p.read_text().splitlines()[0]) for p in files]
    by_key = {h["key"]: h for h in headers}
    assert set(by_key) == {"root", "root.1", "root.1.1"}
    assert by_key["root.1"]["parent_session"] == parent.id
    assert by_key["root.1.1"]["parent_session"] == by_key["root.1"]["id"]
    assert [by_key[k]["depth"] for k in ("root", "root.1", "root.1.1")] == [0, 1, 2]
    child = SessionStore(tmp_path / "sessions").load(by_key["root.1"]["id"])
    assert [e.text for e in child.events if e.kind == "user"] == ["delegate hello"]


async def test_a_spawned_child_starts_fresh(tmp_path: Path) -> None:
    """Issue 8 / SpawnProvider: a fresh child session (no parent history)."""
    async with delegation(tmp_path) as (runtime, service):
        parent = runtime.root_agent()
        await parent.run("first turn", cancel=CancelSignal())
        run = await service.start(
            "spawn", SubagentRequest("hello", parent_session=parent.id), cancel=CancelSignal()
        )
        async with run:
            outcome = await run.result()
        child = runtime.sessions.get(outcome.child_id)
    assert child is not None
    assert [e.kind for e in child.events][:2] == ["turn_start", "user"]
    assert child.messages()[0].text == "hello"


# ---------------------------------------------------------------- fork


async def test_a_fork_is_seeded_with_the_balanced_prefix_only(tmp_path: Path) -> None:
    """Seam note: fork seeds a balanced prefix containing only completed parent turns; the
    in-flight turn is excluded because its subagent call has no result yet. Every tool call
    in the prefix has its result."""
    async with delegation(tmp_path, provider="fork", tools=[Echo()]) as (runtime, _):
        parent = runtime.root_agent()
        with anyio.fail_after(BOUND):
            first = await parent.run("delegate first task", cancel=CancelSignal())
            second = await parent.run("delegate second task", cancel=CancelSignal())
    assert first.status == second.status == "completed"
    children = [
        s
        for s in (runtime.sessions.get(p.stem) for p in (tmp_path / "sessions").glob("*.jsonl"))
        if s is not None and s.parent_session == parent.id
    ]
    by_key = {s.key: s for s in children}
    seeds = {key: s.events[0] for key, s in by_key.items()}
    assert {key: e.kind for key, e in seeds.items()} == {"root.1": "seed", "root.2": "seed"}
    # The first fork saw nothing finished yet; the second saw the whole first turn.
    assert seeds["root.1"].messages == ()
    prefix = seeds["root.2"].messages
    assert [m.role for m in prefix] == ["user", "assistant", "tool", "assistant"]
    assert prefix[0].text == "delegate first task"
    assert "second" not in json.dumps([m.text for m in prefix])
    calls = {c.id for m in prefix for c in m.tool_calls}
    answered = {m.tool_call_id for m in prefix if m.role == "tool"}
    assert calls == answered
    assert calls


async def test_a_fork_without_a_known_parent_is_refused(tmp_path: Path) -> None:
    async with delegation(tmp_path) as (_, service):
        for parent in (None, "no-such-session"):
            with pytest.raises(SubagentError) as info:
                await service.start(
                    "fork", SubagentRequest("x", parent_session=parent), cancel=CancelSignal()
                )
            assert info.value.code is SubagentErrorCode.INVALID_REQUEST
            assert "a fork needs its parent's history" in info.value.message


# ---------------------------------------------------------------- start-time features


async def test_a_child_at_the_depth_limit_is_not_offered_the_subagent_tool(
    tmp_path: Path,
) -> None:
    """Issue 8 / depth_limit: a child at the limit cannot delegate further: the subagent tool
    is not offered to it."""
    async with delegation(tmp_path) as (runtime, service):
        parent = runtime.root_agent()
        run = await service.start(
            "spawn",
            SubagentRequest("delegate deeper", parent_session=parent.id, depth_limit=1),
            cancel=CancelSignal(),
        )
        async with run:
            outcome = await run.result()
    assert outcome.output == "no subagent tool here"


async def test_a_start_beyond_the_depth_limit_is_rejected(tmp_path: Path) -> None:
    """Issue 8 / depth_limit: absolute, and inherited: a grandchild of a child limited to depth
    1 is refused (DEPTH_LIMIT), and so is a request whose own limit is already passed."""
    async with delegation(tmp_path) as (runtime, service):
        parent = runtime.root_agent()
        with pytest.raises(SubagentError) as info:
            await service.start("spawn", SubagentRequest("x", depth_limit=0), cancel=CancelSignal())
        assert info.value.code is SubagentErrorCode.DEPTH_LIMIT
        run = await service.start(
            "spawn",
            SubagentRequest("hi", parent_session=parent.id, depth_limit=1),
            cancel=CancelSignal(),
        )
        async with run:
            child_id = (await run.result()).child_id
        with pytest.raises(SubagentError) as info:
            await service.start(
                "spawn", SubagentRequest("deeper", parent_session=child_id), cancel=CancelSignal()
            )
    assert info.value.code is SubagentErrorCode.DEPTH_LIMIT
    assert "depth 2, beyond the depth limit 1" in info.value.message


async def test_the_tool_filter_applies_to_the_childs_live_registry(tmp_path: Path) -> None:
    """Issue 8 / tool_filter: the child is offered only what the filter allows, and a call to
    a filtered-out tool is refused; a grandchild never gets more than its parent."""
    model = CallsTools(("echo", {"text": "ok"}), ("secret", {"text": "leak"}))
    tools = [Echo(), Echo("secret")]
    async with delegation(tmp_path, adapter=model, tools=tools) as (runtime, service):
        parent = runtime.root_agent()
        run = await service.start(
            "spawn",
            SubagentRequest("go", parent_session=parent.id, tool_filter=["echo"]),
            cancel=CancelSignal(),
        )
        async with run:
            outcome = await run.result()
        child = runtime.sessions.get(outcome.child_id)
        assert child is not None
        limits = runtime.child_limits(child, tool_filter=["echo", "secret"])
    assert [t.name for t in model.requests[0].tools] == ["echo"]
    assert outcome.output == "echo: ok | the tool 'secret' is not allowed here (tool filter)!"
    assert limits.tool_filter is not None
    assert not limits.tool_filter.permits("secret")


async def test_the_persona_is_the_childs_system_prompt(tmp_path: Path) -> None:
    model = CallsTools()
    async with delegation(tmp_path, adapter=model) as (_, service):
        run = await service.start(
            "spawn", SubagentRequest("go", persona="You are terse."), cancel=CancelSignal()
        )
        async with run:
            await run.result()
    assert model.requests[0].system == "You are terse."


async def test_an_output_schema_is_enforced_on_the_final_answer(tmp_path: Path) -> None:
    """Issue 8 / output_schema: a conforming answer is the parsed JSON; a non-conforming one
    settles failed (kind turn) with the validation errors."""
    good = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string"}}}
    bad = {"type": "object", "required": ["missing"]}
    async with delegation(tmp_path) as (_, service):
        outcomes = []
        for schema in (good, bad):
            run = await service.start(
                "spawn", SubagentRequest("json please", output_schema=schema), cancel=CancelSignal()
            )
            async with run:
                outcomes.append(await run.result())
    assert outcomes[0].status == "completed"
    assert outcomes[0].output == {"answer": "json please", "words": 2}
    assert outcomes[1].status == "failed"
    assert outcomes[1].failure_kind == "turn"
    assert outcomes[1].message == (
        "the final answer does not match the output schema: (root): 'missing' is a required "
        "property"
    )


async def test_a_continuable_child_resumes_cold_from_its_session_file(tmp_path: Path) -> None:
    """Continuable in-process children: later turns share the session; a new runtime on the
    same sessions directory resumes it (its limits come back with it)."""
    async with delegation(tmp_path) as (_, service):
        provider = service.provider("spawn")
        assert isinstance(provider, SpawnProvider)
        child = await provider.prepare_continuable(
            SubagentRequest("first", depth_limit=1), cancel=CancelSignal()
        )
        child_id = child.child_id
        await child.dispose()
    async with delegation(tmp_path) as (runtime, service):
        provider = service.provider("spawn")
        assert isinstance(provider, SpawnProvider)
        resumed = await provider.resume_continuable(child_id, cancel=CancelSignal())
        try:
            outcome = await resumed.send("delegate more")
        finally:
            await resumed.dispose()
        session = runtime.sessions.get(child_id)
    assert outcome.output == "no subagent tool here"
    assert session is not None
    assert [e.text for e in session.events if e.kind == "user"] == ["first", "delegate more"]


def test_session_events_round_trip_through_json() -> None:
    event = SessionEvent("tool_call", call=ToolCall("c1", "echo", {"text": "x"}))
    assert SessionEvent.from_json(event.to_json()) == event


async def test_background_tasks_give_an_agent_the_task_tools(tmp_path: Path) -> None:
    """Issue 8 / tool registry: SubagentTool and the task tools are registered into each
    agent's registry (background delegation goes through task_start)."""
    from subagents.harness.runtime import AgentSettings

    runtime = AgentRuntime(
        OfflineModel(), settings=AgentSettings(background_tasks=True), tools=[Echo()]
    )
    service = SubagentService()
    async with SpawnProvider(runtime) as spawn:
        service.register(spawn)
        runtime.offer_subagents(service, "spawn")
        async with runtime.root_agent() as agent:
            assert set(agent.tools.names) == {
                "echo",
                "subagent",
                "task_start",
                "task_status",
                "task_result",
                "task_cancel",
            }
            started = await agent.tools.get("task_start").execute(
                {"tool": "subagent", "arguments": {"description": "d", "prompt": "hello"}},
                cancel=CancelSignal(),
            )
            task_id = started.content.removeprefix("started ")
            with anyio.fail_after(BOUND):
                result = await agent.tools.get("task_result").execute(
                    {"task_id": task_id, "wait": True}, cancel=CancelSignal()
                )
    assert result.content == "You said: hello"


async def test_the_offline_model_streams_a_long_answer_in_a_bounded_number_of_chunks() -> None:
    """Issue 16 (a realistic 1 MiB prompt): the offline model echoes a long text in at most
    MAX_CHUNKS chunks that add up to the whole answer (a short one still word by word), so a
    served agent answers a megabyte of words without 170,000 updates."""
    from subagents.harness.llm.offline import MAX_CHUNKS
    from subagents.harness.llm.types import Message, ModelRequest
    from subagents.providers.contract import CancelSignal

    model = OfflineModel()
    text = " ".join(f"word{i}" for i in range(50_000))
    chunks: list[str] = []
    answer = await model.complete(
        ModelRequest((Message("user", text),)), cancel=CancelSignal(), on_text=chunks.append
    )
    assert len(chunks) <= MAX_CHUNKS
    assert "".join(chunks) == answer.text == f"You said: {text}"
    short: list[str] = []
    await model.complete(
        ModelRequest((Message("user", "two words"),)), cancel=CancelSignal(), on_text=short.append
    )
    assert short == ["You ", "said: ", "two ", "words"]
