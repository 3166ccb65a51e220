"""SpawnProvider and ForkProvider pass the provider kit (issue 8, done means: "check_provider
passes for both providers, on asyncio and trio"), driven by the embedded offline model."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from subagents.harness.llm.offline import OfflineModel
from subagents.harness.runtime import AgentRuntime
from subagents.harness.session import SessionStore
from subagents.harness.subagent_tool import DEFAULT_DESCRIPTION, SubagentTool
from subagents.providers import (
    CancelSignal,
    SubagentCapabilities,
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
        timeout=10.0,
    )


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
    runtime = AgentRuntime(OfflineModel(tick=0.05), sessions=SessionStore(tmp_path))
    parent = runtime.root_agent()
    await parent.run("an earlier turn", cancel=CancelSignal())
    cls = SpawnProvider if kind == "spawn" else ForkProvider
    try:
        await check.run(factory_of(lambda: cls(runtime)), scenarios(parent.id))
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
    child = runtime.sessions.get(outcome.child_id.removeprefix("fork:"))
    assert child is not None
    assert [m.text for m in child.messages()][:2] == [
        "an earlier turn",
        "You said: an earlier turn",
    ]
