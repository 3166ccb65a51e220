"""``SpreadProvider`` (issue 20, point 4: a provider spreading runs over several servers, least
busy first, a run pinned to its server), on scripted members: the same rules hold whatever the
members are (remote ACP servers in tests/remote)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

import anyio
import pytest

from subagents.providers import CancelSignal, SubagentError, SubagentErrorCode, SubagentRequest
from subagents.providers.contract import SubagentCapabilities, SubagentProvider
from subagents.providers.scripted import Script, ScriptedProvider
from subagents.providers.spread import SpreadProvider
from subagents.testing import ProviderCheck, ProviderCheckSkipped, provider_checks

from .test_scripted import SCENARIOS, SCRIPTS

pytestmark = pytest.mark.anyio


def spread() -> AbstractAsyncContextManager[SubagentProvider]:
    return SpreadProvider(
        "spread", [ScriptedProvider(SCRIPTS, name="a"), ScriptedProvider(SCRIPTS, name="b")]
    )


@pytest.mark.parametrize("check", provider_checks(), ids=lambda check: check.name)
async def test_a_spread_provider_passes_the_provider_kit(check: ProviderCheck) -> None:
    """The run contract holds through the spread (every rule of the kit)."""
    try:
        await check.run(spread, SCENARIOS)
    except ProviderCheckSkipped as skip:  # pragma: no cover - every scenario is given
        pytest.fail(f"the spread provider should run every check: {skip}")


async def test_each_start_goes_to_the_least_busy_member() -> None:
    """Runs in flight spread evenly; a member whose run settled is the next one used."""
    gate = anyio.Event()
    scripts = {"hold": Script(turn_gate=gate), "quick": Script(output="q")}
    a, b = ScriptedProvider(scripts, name="a"), ScriptedProvider(scripts, name="b")
    async with SpreadProvider("s", [a, b]) as provider:
        held = [await provider.start(SubagentRequest("hold"), cancel=CancelSignal())]
        held.append(await provider.start(SubagentRequest("hold"), cancel=CancelSignal()))
        assert provider.in_flight == (1, 1)
        assert (len(a.runs), len(b.runs)) == (1, 1)
        quick = await provider.start(SubagentRequest("quick"), cancel=CancelSignal())
        assert provider.in_flight in ((2, 1), (1, 2))
        assert (await quick.result()).output == "q"
        await quick.dispose()
        assert provider.in_flight == (1, 1)
        gate.set()
        for run in held:
            assert (await run.result()).status == "completed"
            await run.dispose()
        assert provider.in_flight == (0, 0)


async def test_a_member_that_cannot_start_is_skipped() -> None:
    """A START_FAILED member (a server down) is passed over for the next one."""
    down = ScriptedProvider(lambda _: Script(start_error="connection refused"), name="down")
    up = ScriptedProvider(name="up")
    async with SpreadProvider("s", [down, up]) as provider:
        for _ in range(3):
            async with await provider.start(SubagentRequest("hi"), cancel=CancelSignal()) as run:
                assert (await run.result()).output == "hi"
        assert len(up.runs) == 3
        assert provider.in_flight == (0, 0)


async def test_when_every_member_fails_the_start_names_each_cause() -> None:
    """All members down: START_FAILED naming every member's cause, nothing left counted."""
    members = [
        ScriptedProvider({"hi": Script(start_error=f"refused by {n}")}, name=n) for n in ("a", "b")
    ]
    async with SpreadProvider("s", members) as provider:
        with pytest.raises(SubagentError) as info:
            await provider.start(SubagentRequest("hi"), cancel=CancelSignal())
        assert info.value.code is SubagentErrorCode.START_FAILED
        assert "a: refused by a" in info.value.message
        assert "b: refused by b" in info.value.message
        assert provider.in_flight == (0, 0)


async def test_a_cancelled_start_is_not_retried_elsewhere() -> None:
    """Only START_FAILED moves on; a cancelled start stays cancelled."""
    a, b = ScriptedProvider(name="a"), ScriptedProvider(name="b")
    async with SpreadProvider("s", [a, b]) as provider:
        signal = CancelSignal()
        signal.cancel("no longer needed")
        with pytest.raises(SubagentError) as info:
            await provider.start(SubagentRequest("hi"), cancel=signal)
        assert info.value.code is SubagentErrorCode.CANCELLED
        assert len(a.requests) + len(b.requests) == 1


async def test_a_continuable_child_is_pinned_to_its_member() -> None:
    """The remote id names the member; a cold resume goes back to it."""
    a, b = ScriptedProvider(name="a"), ScriptedProvider(name="b")
    async with SpreadProvider("s", [a, b]) as provider:
        busy = await provider.start(SubagentRequest("hi"), cancel=CancelSignal())
        child = await provider.prepare_continuable(SubagentRequest("first"), cancel=CancelSignal())
        index, _, inner = child.remote_id.partition(":")
        assert index == ("1" if a.runs else "0")
        await child.dispose()
        resumed = await provider.resume_continuable(child.remote_id, cancel=CancelSignal())
        assert resumed.remote_id == child.remote_id
        assert inner == resumed.remote_id.partition(":")[2]
        assert (await resumed.send("again")).output == "again"
        await resumed.dispose()
        await busy.dispose()
        with pytest.raises(SubagentError, match="names no member"):
            await provider.resume_continuable("7:x", cancel=CancelSignal())
        assert provider.in_flight == (0, 0)


async def test_capabilities_are_what_every_member_supports() -> None:
    """A feature is advertised only when each member can enforce it."""
    both = SubagentCapabilities(output_schema=True, persona=True)
    one = SubagentCapabilities(output_schema=True)
    provider = SpreadProvider(
        "s", [ScriptedProvider(capabilities=both), ScriptedProvider(capabilities=one)]
    )
    assert provider.capabilities == SubagentCapabilities(output_schema=True)
    with pytest.raises(ValueError, match="at least one member"):
        SpreadProvider("s", [])
