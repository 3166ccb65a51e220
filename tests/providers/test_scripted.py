"""The scripted provider follows every rule of the run contract (checked by the provider kit)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

import anyio
import pytest

from subagents.providers import (
    CancelSignal,
    ContinuableProvider,
    SubagentCapabilities,
    SubagentError,
    SubagentErrorCode,
    SubagentProvider,
    SubagentRequest,
    SubagentRun,
    TextProgress,
)
from subagents.providers.scripted import Script, ScriptedProvider
from subagents.testing import (
    ProviderCheck,
    ProviderCheckSkipped,
    ProviderScenarios,
    check_provider,
    provider_checks,
    unmanaged_factory,
)

pytestmark = pytest.mark.anyio

SCRIPTS = {
    "echo hi": Script(output="hi", progress=(TextProgress("hi"),)),
    "slow": Script(turn_hangs=True),
    "fail": Script(fail_kind="turn", fail_message="the turn failed"),
    "refuse": Script(start_error="the agent refused to start"),
    "slow start": Script(start_hangs=True),
    "broken": Script(
        result_raises=RuntimeError("result bug"), dispose_raises=RuntimeError("dispose bug")
    ),
    "crash": Script(turn_raises=RuntimeError("a bug inside the child")),
}

SCENARIOS = ProviderScenarios(
    good=SubagentRequest("echo hi"),
    good_output="hi",
    slow=SubagentRequest("slow"),
    failing=SubagentRequest("fail"),
    failing_kind="turn",
    failing_start=SubagentRequest("refuse"),
    slow_start=SubagentRequest("slow start"),
    result_and_dispose_fail=SubagentRequest("broken"),
    crashing=SubagentRequest("crash"),
    stubborn=SubagentRequest("slow"),
)


def scripted() -> AbstractAsyncContextManager[SubagentProvider]:
    return ScriptedProvider(SCRIPTS)


@pytest.mark.parametrize("check", provider_checks(), ids=lambda check: check.name)
async def test_scripted_provider_passes_the_provider_kit(check: ProviderCheck) -> None:
    """Every rule of the seam note, as encoded by the kit (the check's ``rule``)."""
    try:
        await check.run(scripted, SCENARIOS)
    except ProviderCheckSkipped as skip:  # pragma: no cover - every scenario is given
        pytest.fail(f"the scripted provider should run every check: {skip}")


async def test_check_provider_reports_every_check_as_passed_for_the_scripted_provider() -> None:
    """ "Registry and tool tests replace only the nondeterministic child boundary with a
    package-local scripted provider"."""
    report = await check_provider(scripted, SCENARIOS)
    report.raise_for_failures()
    assert report.passed
    assert not report.skipped
    assert [r.name for r in report.results] == [c.name for c in provider_checks()]


async def test_start_returns_only_once_the_child_is_published() -> None:
    """ "Fulfillment publishes a child and transfers its run handle to the caller"."""
    async with ScriptedProvider({"a": Script(start_delay=0.01, output="A")}) as provider:
        run = await provider.start(SubagentRequest("a"), cancel=CancelSignal())
        assert provider.live_runs == 1
        async with run:
            outcome = await run.result()
        assert outcome.output == "A"
        assert outcome.child_id == run.child_id == "scripted-1"
        assert provider.live_runs == 0
        assert provider.live_tasks == 0


async def test_failed_start_raises_start_failed_and_leaves_no_task() -> None:
    """ "Work that fails before publication rejects start()"."""
    async with ScriptedProvider(SCRIPTS) as provider:
        with pytest.raises(SubagentError) as caught:
            await provider.start(SubagentRequest("refuse"), cancel=CancelSignal())
        assert caught.value.code is SubagentErrorCode.START_FAILED
        assert provider.live_tasks == 0
        assert provider.runs == []


async def test_outer_cancellation_of_start_leaves_no_task() -> None:
    """ "A rejected start cleans unpublished resources"."""
    async with ScriptedProvider(SCRIPTS) as provider:
        with anyio.move_on_after(0.01):
            await provider.start(SubagentRequest("slow start"), cancel=CancelSignal())
        assert provider.live_tasks == 0


async def test_turn_that_raises_settles_as_infrastructure_failure() -> None:
    """ "infrastructure outcomes after publication settle through run.result without hiding
    the child id"."""
    crash = ValueError("boom")
    async with ScriptedProvider({"x": Script(turn_raises=crash)}) as provider:
        run = await provider.start(SubagentRequest("x"), cancel=CancelSignal())
        async with run:
            outcome = await run.result()
    assert outcome.status == "failed"
    assert outcome.failure_kind == "infrastructure"
    assert outcome.cause is crash
    assert outcome.child_id == run.child_id


async def test_progress_drops_the_oldest_events_when_nobody_reads() -> None:
    """ "dispose() cancels remaining work" — and the child never blocks on its progress."""
    events = tuple(TextProgress(str(i)) for i in range(10))
    async with ScriptedProvider({"p": Script(progress=events)}, progress_capacity=3) as provider:
        run = await provider.start(SubagentRequest("p"), cancel=CancelSignal())
        with anyio.fail_after(5):
            outcome = await run.result()
        assert outcome.status == "completed"
        assert [event async for event in run.progress()] == [TextProgress(t) for t in "789"]
        assert run.progress_dropped == 7
        await run.dispose()


async def test_leaving_the_provider_cancels_runs_left_undisposed() -> None:
    """ "dispose() cancels remaining work and awaits quiescence" (the provider owns the task)."""
    async with ScriptedProvider(SCRIPTS) as provider:
        run = await provider.start(SubagentRequest("slow"), cancel=CancelSignal())
    assert provider.live_tasks == 0
    with anyio.fail_after(5):
        outcome = await run.result()
    assert outcome.status == "cancelled"


async def test_start_outside_the_provider_context_fails_before_publication() -> None:
    """ "Work that fails before publication rejects start()"."""
    provider = ScriptedProvider()
    with pytest.raises(SubagentError) as caught:
        await provider.start(SubagentRequest("x"), cancel=CancelSignal())
    assert caught.value.code is SubagentErrorCode.START_FAILED


async def test_capabilities_are_the_static_descriptor_given() -> None:
    """ "Start-time features ride on a static provider.capabilities descriptor"."""
    capabilities = SubagentCapabilities(persona=True)
    provider = ScriptedProvider(capabilities=capabilities)
    assert provider.capabilities is capabilities
    assert isinstance(provider, SubagentProvider)


async def test_continuable_conversation_keeps_one_child_id_across_turns() -> None:
    """ "Continuable creation is the optional prepareContinuable method; presence is the
    capability"."""
    provider = ScriptedProvider()
    assert isinstance(provider, ContinuableProvider)
    async with provider:
        conversation = await provider.prepare_continuable(
            SubagentRequest("hello"), cancel=CancelSignal()
        )
        second = await conversation.send("two")
        await conversation.dispose()
        with pytest.raises(SubagentError):
            await conversation.send("too late")
        resumed = await provider.resume_continuable(conversation.child_id, cancel=CancelSignal())
        third = await resumed.send("three")
    first = conversation.transcript[0][1]
    assert (first.output, second.output, third.output) == ("hello", "two", "three")
    assert first.child_id == second.child_id == third.child_id == conversation.child_id
    assert resumed.resumed
    assert provider.live_tasks == 0


async def test_an_error_in_the_provider_context_propagates_unwrapped() -> None:
    """The provider's task group owns only its children: the caller's error stays the caller's."""
    provider = ScriptedProvider(SCRIPTS)

    async def fail_inside() -> None:
        async with provider:
            await provider.start(SubagentRequest("slow"), cancel=CancelSignal())
            raise LookupError("the caller's own error")

    with pytest.raises(LookupError):
        await fail_inside()
    assert provider.live_tasks == 0


async def test_gates_let_the_test_decide_when_the_child_publishes_and_settles() -> None:
    """ "start() returns only once the child exists (published)"."""
    published, finished = anyio.Event(), anyio.Event()
    script = Script(output="gated", start_gate=published, turn_gate=finished)
    runs: list[SubagentRun] = []
    async with ScriptedProvider({"g": script}) as provider:

        async def start() -> None:
            runs.append(await provider.start(SubagentRequest("g"), cancel=CancelSignal()))

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(start)
                await anyio.wait_all_tasks_blocked()
                assert runs == []
                published.set()
            (run,) = runs
            await anyio.wait_all_tasks_blocked()
            assert not provider.runs[0].settled
            finished.set()
            outcome = await run.result()
            await run.dispose()
    assert outcome.output == "gated"


async def test_unmanaged_factory_serves_providers_without_a_context() -> None:
    """Providers that own no resources run the kit through ``unmanaged_factory``."""
    report = await check_provider(
        unmanaged_factory(ScriptedProvider),
        SCENARIOS,
        only={"a_signal_fired_before_start_cancels_the_start"},
    )
    assert [r.status for r in report.results] == ["passed"]


async def test_an_outer_cancellation_closes_the_provider_and_its_runs() -> None:
    """ "dispose() cancels remaining work and awaits quiescence" — also when the owner is
    cancelled from outside."""
    provider = ScriptedProvider(SCRIPTS)
    with anyio.fail_after(5), anyio.move_on_after(0.05) as scope:
        async with provider:
            await provider.start(SubagentRequest("slow"), cancel=CancelSignal())
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert provider.live_tasks == 0
    assert provider.runs[0].settled
