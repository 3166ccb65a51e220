"""SubagentService: the named-provider registry, capability checks, lifecycle events.

Each test's docstring quotes the rule of the seam design note it checks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from types import TracebackType

import anyio
import pytest

from subagents.providers import (
    CancelSignal,
    LifecycleEvent,
    ProgressEvent,
    SubagentCapabilities,
    SubagentEnded,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentRequest,
    SubagentRun,
    SubagentService,
    SubagentStarted,
)

pytestmark = pytest.mark.anyio


@dataclass
class StubRun:
    child_id: str
    outcome: SubagentOutcome | None = None
    raise_in_result: BaseException | None = None
    disposed: int = 0
    finish: anyio.Event = field(default_factory=anyio.Event)

    async def result(self) -> SubagentOutcome:
        await self.finish.wait()
        if self.raise_in_result is not None:
            raise self.raise_in_result
        assert self.outcome is not None
        return self.outcome

    async def dispose(self) -> None:
        self.disposed += 1

    def progress(self) -> AsyncIterator[ProgressEvent] | None:
        return None

    async def __aenter__(self) -> StubRun:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> None:
        await self.dispose()


@dataclass
class StubProvider:
    name: str = "stub"
    capabilities: SubagentCapabilities = field(default_factory=SubagentCapabilities)
    starts: int = 0
    fail_start: BaseException | None = None
    runs: list[StubRun] = field(default_factory=list[StubRun])

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> SubagentRun:
        self.starts += 1
        if self.fail_start is not None:
            raise self.fail_start
        run = StubRun(f"{self.name}-{self.starts}")
        self.runs.append(run)
        return run


def recorder(service: SubagentService) -> list[LifecycleEvent]:
    events: list[LifecycleEvent] = []
    service.subscribe(events.append)
    return events


def test_duplicate_provider_names_are_rejected() -> None:
    """Seam note: "each implementation registers under a unique name"."""
    service = SubagentService()
    service.register(StubProvider("acp"))
    with pytest.raises(SubagentError) as info:
        service.register(StubProvider("acp"))
    assert info.value.code is SubagentErrorCode.DUPLICATE_PROVIDER
    assert "'acp' is already registered" in info.value.message


def test_unregister_then_register_again_is_safe() -> None:
    """DESIGN: "unregister/re-register is safe (reload)"."""
    service = SubagentService()
    first = StubProvider("acp")
    service.register(first)
    assert service.unregister("acp") is first
    second = StubProvider("acp")
    service.register(second)
    assert service.provider("acp") is second
    assert service.names == ("acp",)


async def test_multiple_providers_coexist_and_a_caller_picks_one_by_name() -> None:
    """Seam note: "multiple subagent implementations must coexist at runtime"."""
    service = SubagentService()
    spawn, acp = StubProvider("spawn"), StubProvider("acp")
    service.register(spawn)
    service.register(acp)
    run = await service.start("acp", SubagentRequest("hi"))
    assert run.child_id.startswith("acp:")
    assert (spawn.starts, acp.starts) == (0, 1)


async def test_the_service_mints_unique_child_ids_whatever_the_provider_returns() -> None:
    """Issue 15, point 2: two children whose remote side numbers them the same (the official
    SDK's example agent calls every first session of a process ``0``) still get distinct
    child ids, minted by the service; the remote id stays available as its own field, and
    lifecycle events and outcomes use the minted id."""
    service = SubagentService()
    events = recorder(service)
    runs: list[SubagentRun] = []
    for _ in range(3):  # a fresh provider each time: each numbers its first run "acp-1"
        service.register(StubProvider("acp"))
        runs.append(await service.start("acp", SubagentRequest("hi")))
        service.unregister("acp")
    assert len({run.child_id for run in runs}) == 3
    assert [getattr(run, "remote_id", None) for run in runs] == ["acp-1"] * 3
    started = [e for e in events if isinstance(e, SubagentStarted)]
    assert [e.child_id for e in started] == [run.child_id for run in runs]
    assert [e.remote_id for e in started] == ["acp-1"] * 3
    assert all(e.request.child_id == e.child_id for e in started)


async def test_an_unknown_provider_is_a_clear_error() -> None:
    """Stable code UNKNOWN_PROVIDER, naming what is registered."""
    service = SubagentService()
    service.register(StubProvider("spawn"))
    with pytest.raises(SubagentError) as info:
        await service.start("codex", SubagentRequest("hi"))
    assert info.value.code is SubagentErrorCode.UNKNOWN_PROVIDER
    assert "registered: spawn" in info.value.message


@pytest.mark.parametrize(
    ("feature", "request_"),
    [
        ("output_schema", SubagentRequest("hi", output_schema={"type": "object"})),
        ("depth_limit", SubagentRequest("hi", depth_limit=2)),
        ("tool_filter", SubagentRequest("hi", tool_filter=["read"])),
        ("persona", SubagentRequest("hi", persona="a careful reviewer")),
    ],
)
async def test_an_unsupported_start_time_feature_is_rejected_before_delegating(
    feature: str, request_: SubagentRequest
) -> None:
    """Seam note: "The service checks every requested one BEFORE delegating and rejects loud
    (SubagentError('UNSUPPORTED_CAPABILITY')) if the provider lacks it — never
    accepted-then-ignored."""
    service = SubagentService()
    provider = StubProvider("acp")
    service.register(provider)
    events = recorder(service)
    with pytest.raises(SubagentError) as info:
        await service.start("acp", request_)
    assert info.value.code is SubagentErrorCode.UNSUPPORTED_CAPABILITY
    assert (info.value.feature, info.value.provider) == (feature, "acp")
    assert f"provider 'acp' does not support {feature!r}" in info.value.message
    assert provider.starts == 0
    assert events == []


async def test_an_advertised_feature_is_passed_through() -> None:
    """Capabilities the provider advertises are accepted."""
    service = SubagentService()
    provider = StubProvider("spawn", SubagentCapabilities(depth_limit=True, persona=True))
    service.register(provider)
    await service.start("spawn", SubagentRequest("hi", depth_limit=1, persona="terse"))
    assert provider.starts == 1


async def test_a_failed_start_emits_no_lifecycle_event() -> None:
    """Seam note: "A rejected start cleans unpublished resources and emits no lifecycle
    event"; an unexpected exception becomes START_FAILED."""
    service = SubagentService()
    service.register(StubProvider("acp", fail_start=OSError("no such binary")))
    events = recorder(service)
    with pytest.raises(SubagentError) as info:
        await service.start("acp", SubagentRequest("hi"))
    assert info.value.code is SubagentErrorCode.START_FAILED
    assert "OSError: no such binary" in info.value.message
    assert isinstance(info.value.__cause__, OSError)
    assert events == []


async def test_a_signal_fired_before_the_start_rejects_it_without_delegating() -> None:
    """Seam note: "One signal covers cancellation before and after publication"."""
    service = SubagentService()
    provider = StubProvider("acp")
    service.register(provider)
    signal = CancelSignal()
    signal.cancel("user pressed Ctrl-C")
    with pytest.raises(SubagentError) as info:
        await service.start("acp", SubagentRequest("hi"), cancel=signal)
    assert info.value.code is SubagentErrorCode.CANCELLED
    assert "user pressed Ctrl-C" in info.value.message
    assert provider.starts == 0


async def test_a_published_run_emits_exactly_one_started_and_one_ended() -> None:
    """DESIGN: "started when start() fulfils, ended exactly once after"."""
    service = SubagentService()
    provider = StubProvider("acp")
    service.register(provider)
    events = recorder(service)
    request = SubagentRequest("hi")
    run = await service.start("acp", request)
    assert events == [
        SubagentStarted(run.child_id, "acp", replace(request, child_id=run.child_id), "acp-1")
    ]
    provider.runs[0].outcome = SubagentOutcome.completed("acp-1", "done")
    provider.runs[0].finish.set()
    first = await run.result()
    second = await run.result()
    await run.dispose()
    await run.dispose()
    assert first is second
    assert first.child_id == run.child_id
    assert events[1:] == [SubagentEnded(run.child_id, "acp", first)]


async def test_a_result_failure_after_publication_still_closes_the_pair() -> None:
    """Seam note: "a post-publication result failure closes the published lifecycle pair";
    the outcome keeps the child id."""
    service = SubagentService()
    provider = StubProvider("acp")
    service.register(provider)
    events = recorder(service)
    run = await service.start("acp", SubagentRequest("hi"))
    provider.runs[0].raise_in_result = RuntimeError("pipe broke")
    provider.runs[0].finish.set()
    outcome = await run.result()
    assert (outcome.status, outcome.failure_kind, outcome.child_id) == (
        "failed",
        "infrastructure",
        run.child_id,
    )
    assert isinstance(outcome.cause, RuntimeError)
    assert [type(e) for e in events] == [SubagentStarted, SubagentEnded]


async def test_disposing_an_unsettled_run_ends_it_once() -> None:
    """Every published run gets its ended event, even when disposed before settling."""
    service = SubagentService()
    provider = StubProvider("acp")
    service.register(provider)
    events = recorder(service)
    async with await service.start("acp", SubagentRequest("hi")):
        pass
    assert provider.runs[0].disposed == 1
    ended = [e for e in events if isinstance(e, SubagentEnded)]
    assert len(ended) == 1
    assert ended[0].outcome.status == "cancelled"


async def test_the_cancel_signal_cancels_linked_scopes_and_wakes_waiters() -> None:
    """The caller-owned signal: linked scopes are cancelled, wait() returns, idempotent."""
    signal = CancelSignal()
    woke = anyio.Event()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def waiter() -> None:
                await signal.wait()
                woke.set()

            tg.start_soon(waiter)
            with signal.linked_scope() as scope:
                signal.cancel("stop")
                signal.cancel("again")
                await anyio.sleep_forever()
            assert scope.cancelled_caught
    assert woke.is_set()
    assert signal.reason == "stop"
    with signal.linked_scope() as late:
        await anyio.sleep_forever()
    assert late.cancelled_caught


def test_a_listener_that_raises_does_not_break_the_service() -> None:
    """Lifecycle listeners are isolated from each other and from the delegation."""
    service = SubagentService()
    seen: list[LifecycleEvent] = []

    def broken(event: LifecycleEvent) -> None:
        raise RuntimeError("listener bug")

    service.subscribe(broken)
    unsubscribe = service.subscribe(seen.append)
    service._emit(SubagentEnded("x", "p", SubagentOutcome.cancelled("x")))  # pyright: ignore[reportPrivateUsage]
    unsubscribe()
    service._emit(SubagentEnded("y", "p", SubagentOutcome.cancelled("y")))  # pyright: ignore[reportPrivateUsage]
    assert [e.child_id for e in seen if isinstance(e, SubagentEnded)] == ["x"]
