"""SpawnProvider and ForkProvider pass the provider kit (issue 8, done means: "check_provider
passes for both providers, on asyncio and trio"), driven by the embedded offline model."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from subagents.harness.llm.offline import OfflineModel
from subagents.harness.llm.types import ModelRequest, ModelResponse, TextCallback
from subagents.harness.runtime import AgentRuntime
from subagents.harness.session import SessionStore
from subagents.harness.subagent_tool import DEFAULT_DESCRIPTION, SubagentTool
from subagents.harness.tools import ToolResult, ToolSpec
from subagents.protocol.jsonrpc import JsonValue
from subagents.providers import (
    CancelSignal,
    SubagentCapabilities,
    SubagentError,
    SubagentErrorCode,
    SubagentProvider,
    SubagentRequest,
    SubagentService,
)
from subagents.providers._in_process import InProcessProvider
from subagents.providers.fork import ForkProvider
from subagents.providers.spawn import SpawnProvider
from subagents.testing import (
    ProviderCheck,
    ProviderCheckSkipped,
    ProviderScenarios,
    provider_checks,
)

pytestmark = pytest.mark.anyio

NOT_APPLICABLE = {
    "each_unadvertised_capability_is_rejected_before_a_run_exists": (
        "both providers advertise (and enforce) every start-time feature: there is none to "
        "reject (tests/harness/test_runtime.py checks each one is enforced)"
    ),
    "a_signal_fired_during_start_cancels_the_start": (
        "an in-process start publishes without waiting on anything (the session is made "
        "synchronously), so no start can be caught midway"
    ),
    "a_failing_result_and_a_failing_disposal_both_surface": (
        "an in-process run cannot be made to fail both result() and dispose(); the rule is "
        "checked with the scripted provider (tests/providers/test_scripted.py)"
    ),
}
APPLICABLE = [c for c in provider_checks() if c.name not in NOT_APPLICABLE]


def test_only_the_documented_checks_are_left_out() -> None:
    names = {c.name for c in provider_checks()}
    assert set(NOT_APPLICABLE) <= names
    assert len(APPLICABLE) == len(names) - len(NOT_APPLICABLE)


def scenarios(parent: str | None) -> ProviderScenarios:
    return ProviderScenarios(
        good=SubagentRequest("hello", parent_session=parent),
        good_output="You said: hello",
        slow=SubagentRequest("slow", parent_session=parent),
        failing=SubagentRequest("fail", parent_session=parent),
        failing_kind="turn",
        failing_start=SubagentRequest("hello", parent_session=parent, depth_limit=0),
        crashing=SubagentRequest("crash", parent_session=parent),
        stubborn=SubagentRequest("tool stubborn {}", parent_session=parent),
        timeout=10.0,
    )


class CrashingModel:
    """The offline model, except that a prompt ``crash`` makes the adapter raise a plain
    ``RuntimeError`` after streaming a little text (an adapter's bug)."""

    def __init__(self) -> None:
        self._model = OfflineModel(tick=0.05)

    async def complete(
        self,
        request: ModelRequest,
        *,
        cancel: CancelSignal,
        on_text: TextCallback | None = None,
    ) -> ModelResponse:
        last = request.messages[-1] if request.messages else None
        if last is not None and last.role == "user" and last.text == "crash":
            if on_text is not None:
                on_text("half of the work")
            raise RuntimeError("adapter bug")
        return await self._model.complete(request, cancel=cancel, on_text=on_text)


class StubbornTool:
    """A tool that ignores cancellation for 4 s (longer than the test's dispose bound)."""

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("stubborn", "ignores cancellation", {"type": "object"})

    async def execute(
        self, arguments: Mapping[str, JsonValue], *, cancel: CancelSignal
    ) -> ToolResult:
        with anyio.CancelScope(shield=True):
            await anyio.sleep(4)
        return ToolResult("finally")


def factory_of(
    make: Callable[[], InProcessProvider],
) -> Callable[[], AbstractAsyncContextManager[SubagentProvider]]:
    @asynccontextmanager
    async def open_provider() -> AsyncGenerator[SubagentProvider, None]:
        async with make() as made:
            yield made

    return open_provider


@pytest.mark.parametrize("kind", ["spawn", "fork"])
@pytest.mark.parametrize("check", APPLICABLE, ids=lambda check: check.name)
async def test_the_in_process_providers_pass_the_kit(
    check: ProviderCheck, kind: str, tmp_path: Path
) -> None:
    runtime = AgentRuntime(
        CrashingModel(), sessions=SessionStore(tmp_path), tools=lambda: [StubbornTool()]
    )
    parent = runtime.root_agent()
    await parent.run("an earlier turn", cancel=CancelSignal())
    cls = SpawnProvider if kind == "spawn" else ForkProvider
    try:
        await check.run(factory_of(lambda: cls(runtime, dispose_timeout=0.5)), scenarios(parent.id))
    except ProviderCheckSkipped as skip:
        pytest.fail(f"every applicable check must run for the {kind} provider: {skip}")


def test_both_advertise_every_start_time_feature(tmp_path: Path) -> None:
    runtime = AgentRuntime(OfflineModel())
    everything = SubagentCapabilities(
        output_schema=True, depth_limit=True, tool_filter=True, persona=True
    )
    assert SpawnProvider(runtime).capabilities == everything
    assert ForkProvider(runtime).capabilities == everything


def test_the_subagent_tool_tells_the_model_what_a_fork_child_sees() -> None:
    """Fork (seam note: "fork = seed the child session with the parent's event log"): a
    SubagentTool bound to a fork provider says by default that the child starts from this
    conversation; one bound to spawn says it sees only the prompt; a caller's description
    wins over both."""
    runtime = AgentRuntime(OfflineModel())
    service = SubagentService()
    service.register(SpawnProvider(runtime))
    service.register(ForkProvider(runtime))
    fork_text = SubagentTool(service, "fork").spec.description
    assert "copy of this conversation" in fork_text
    assert "does not see this conversation" not in fork_text
    assert SubagentTool(service, "spawn").spec.description == DEFAULT_DESCRIPTION
    assert "does not see this conversation" in DEFAULT_DESCRIPTION
    assert SubagentTool(service, "fork", description="mine").spec.description == "mine"
    assert SubagentTool(service, "unregistered").spec.description == DEFAULT_DESCRIPTION


async def test_a_forked_kit_run_carries_the_parents_history(tmp_path: Path) -> None:
    """The fork kit above runs with a parent that has one finished turn: its child's model
    saw that turn before the prompt."""

    runtime = AgentRuntime(OfflineModel(), sessions=SessionStore(tmp_path))
    parent = runtime.root_agent()
    await parent.run("an earlier turn", cancel=CancelSignal())
    async with ForkProvider(runtime) as fork:
        run = await fork.start(
            replace(scenarios(parent.id).good, prompt="hello"), cancel=CancelSignal()
        )
        async with run:
            outcome = await run.result()
    child = runtime.sessions.get(outcome.child_id)
    assert child is not None
    assert [m.text for m in child.messages()][:2] == [
        "an earlier turn",
        "You said: an earlier turn",
    ]


async def test_a_crashing_adapter_fails_only_its_run_and_keeps_the_partial_output(
    tmp_path: Path,
) -> None:
    """Issue 15, points 1 and 7: a model adapter that raises a plain RuntimeError settles its
    run failed (infrastructure, the exception named and kept as the cause) with the text it
    streamed before, the sibling run completes, both lifecycle pairs close, and the caller's
    ``async with SpawnProvider(...)`` exits without an exception group."""
    runtime = AgentRuntime(CrashingModel(), sessions=SessionStore(tmp_path))
    service = SubagentService()
    events: list[object] = []
    service.subscribe(events.append)
    with anyio.fail_after(10):
        async with SpawnProvider(runtime) as spawn:
            service.register(spawn)
            crashing = await service.start("spawn", SubagentRequest("crash"))
            sibling = await service.start("spawn", SubagentRequest("slow 3"))
            crashed = await crashing.result()
            await crashing.dispose()
            sibling_outcome = await sibling.result()
            await sibling.dispose()
    assert crashed.status == "failed"
    assert crashed.failure_kind == "infrastructure"
    assert isinstance(crashed.cause, RuntimeError)
    assert "RuntimeError" in crashed.message
    assert "adapter bug" in crashed.message
    assert crashed.partial_output == "half of the work"
    assert sibling_outcome.status == "completed"
    assert [type(e).__name__ for e in events].count("SubagentEnded") == 2
    child = runtime.sessions.get(crashed.child_id)
    assert child is not None
    assert child.events[-1].kind == "turn_end"
    assert child.events[-1].status == "failed"


async def test_dispose_of_a_child_that_ignores_cancellation_raises_dispose_incomplete(
    tmp_path: Path,
) -> None:
    """Issue 15, point 5: dispose() of an in-process child whose tool ignores cancellation does
    not return silently after its bound: it raises SubagentError(DISPOSE_INCOMPLETE) naming
    what survived."""
    runtime = AgentRuntime(
        OfflineModel(), sessions=SessionStore(tmp_path), tools=lambda: [StubbornTool()]
    )
    with anyio.fail_after(15):
        async with SpawnProvider(runtime, dispose_timeout=0.2) as spawn:
            run = await spawn.start(SubagentRequest("tool stubborn {}"), cancel=CancelSignal())
            feed = run.progress()
            assert feed is not None
            async for event in feed:  # the stubborn tool has started
                if event.kind == "tool_call":
                    break
            with pytest.raises(SubagentError) as info:
                await run.dispose()
    assert info.value.code is SubagentErrorCode.DISPOSE_INCOMPLETE
    assert "ignores cancellation" in info.value.message
    assert run.child_id in info.value.message


async def test_a_cancelled_run_keeps_the_text_it_streamed(tmp_path: Path) -> None:
    """Issue 15, point 7: a cancelled run's outcome carries the text the child streamed before
    it ended (the parent does not lose the child's work), and the subagent tool's error result
    shows it."""
    runtime = AgentRuntime(OfflineModel(tick=0.02), sessions=SessionStore(tmp_path))
    with anyio.fail_after(10):
        async with SpawnProvider(runtime) as spawn:
            signal = CancelSignal()
            run = await spawn.start(SubagentRequest("slow"), cancel=signal)
            feed = run.progress()
            assert feed is not None
            async for event in feed:
                if event.kind == "text" and "tick 2" in event.text:
                    break
            signal.cancel("enough")
            outcome = await run.result()
            await run.dispose()
    assert outcome.status == "cancelled"
    assert isinstance(outcome.partial_output, str)
    assert "tick 1" in outcome.partial_output
    assert "tick 2" in outcome.partial_output
