"""The run contract under abuse (issue 35, part A): what a child's own code raises stays that
child's failure, every way into the service wraps a provider's bug alike, and every provider
repeats the capability gate when called directly.

Each test's docstring names the requirement it checks.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import NoReturn, cast

import anyio
import anyio.lowlevel
import pytest

from subagents._cancellation import is_real_cancellation, passes_through
from subagents.harness.llm.offline import OfflineModel
from subagents.harness.llm.types import (
    LlmCancelled,
    ModelRequest,
    ModelResponse,
    TextCallback,
)
from subagents.harness.runtime import AgentRuntime
from subagents.harness.session import SessionStore
from subagents.harness.tasks import TaskRuntime
from subagents.harness.tools import ToolRegistry, ToolResult, ToolSpec
from subagents.protocol.jsonrpc import JsonValue
from subagents.providers import (
    CancelSignal,
    ContinuableProvider,
    Continuation,
    LifecycleEvent,
    SubagentCapabilities,
    SubagentEnded,
    SubagentError,
    SubagentErrorCode,
    SubagentProvider,
    SubagentRequest,
    SubagentRun,
    SubagentService,
    SubagentStarted,
)
from subagents.providers._in_process import InProcessProvider
from subagents.providers.contract import START_TIME_FEATURES
from subagents.providers.fork import ForkProvider
from subagents.providers.scripted import ScriptedProvider
from subagents.providers.spawn import SpawnProvider
from subagents.testing import ProviderCheckFailure, ProviderScenarios, provider_checks

pytestmark = pytest.mark.anyio


class Boom(BaseException):
    """What a child's code may raise that is no ``Exception``."""


RAISES: dict[str, Callable[[], BaseException]] = {
    "boom": lambda: Boom("the child blew up"),
    "interrupt": lambda: KeyboardInterrupt("raised by the child's code"),
    "exit": lambda: SystemExit("the child's code called exit"),
    # On asyncio, the loop's own cancellation class raised by no cancel scope (a stray); on
    # trio it is one more foreign BaseException.
    "stray-cancel": lambda: asyncio.CancelledError("a stray cancel from the child's code"),
}
CAUSE_TYPES: dict[str, type[BaseException]] = {
    "boom": Boom,
    "interrupt": KeyboardInterrupt,
    "exit": SystemExit,
    "stray-cancel": asyncio.CancelledError,
}
CAUSE_TEXTS = {
    "boom": "the child blew up",
    "interrupt": "raised by the child's code",
    "exit": "the child's code called exit",
    "stray-cancel": "a stray cancel from the child's code",
}


class AbusiveModel:
    """The offline model, except: ``raise KIND`` raises what :data:`RAISES` makes of ``KIND``
    from inside the adapter, and ``wait`` waits for :attr:`gate` (or the signal)."""

    def __init__(self) -> None:
        self._model = OfflineModel()
        self.gate = anyio.Event()

    async def complete(
        self,
        request: ModelRequest,
        *,
        cancel: CancelSignal,
        on_text: TextCallback | None = None,
    ) -> ModelResponse:
        last = request.messages[-1] if request.messages else None
        if last is not None and last.role == "user":
            if last.text.startswith("raise "):
                raise RAISES[last.text.removeprefix("raise ")]()
            if last.text == "wait":
                with cancel.linked_scope():
                    await self.gate.wait()
                if cancel.cancelled:
                    raise LlmCancelled(cancel.reason or "cancelled")
                return ModelResponse("waited")
        return await self._model.complete(request, cancel=cancel, on_text=on_text)


class RaisingTool:
    """A tool whose ``execute`` raises what :data:`RAISES` makes of its ``kind`` argument."""

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("explode", "raises", {"type": "object"})

    async def execute(
        self, arguments: Mapping[str, JsonValue], *, cancel: CancelSignal
    ) -> ToolResult:
        raise RAISES[str(arguments["kind"])]()


def provider_of(kind: str, runtime: AgentRuntime) -> InProcessProvider:
    return SpawnProvider(runtime) if kind == "spawn" else ForkProvider(runtime)


def prompt_of(source: str, raised: str) -> str:
    return f"raise {raised}" if source == "adapter" else f'tool explode {{"kind": "{raised}"}}'


@pytest.mark.parametrize("raised", list(RAISES))
@pytest.mark.parametrize("source", ["adapter", "tool"])
@pytest.mark.parametrize("kind", ["spawn", "fork"])
async def test_what_a_childs_code_raises_fails_only_that_run(
    kind: str, source: str, raised: str, tmp_path: Path
) -> None:
    """Issue 35, part A, points 1 and 2: a BaseException that is no Exception (a
    ``BaseException`` subclass, ``KeyboardInterrupt``, ``SystemExit``, a stray
    ``CancelledError`` that no cancel scope of ours raised) from an in-process child's adapter
    or tool fails only that run (``failed``, ``infrastructure``, the message naming the cause's
    type and text, the cause kept), closes its lifecycle pair; the sibling run in flight and
    the provider go on, the caller's code after it runs, and ``async with provider`` exits
    without an exception group."""
    model = AbusiveModel()
    runtime = AgentRuntime(model, sessions=SessionStore(tmp_path), tools=lambda: [RaisingTool()])
    parent = runtime.root_agent()
    await parent.run("an earlier turn", cancel=CancelSignal())
    service = SubagentService()
    events: list[LifecycleEvent] = []
    service.subscribe(events.append)
    reached: list[str] = []
    with anyio.fail_after(10):
        async with provider_of(kind, runtime) as provider:
            service.register(provider)
            request = SubagentRequest("wait", parent_session=parent.id)
            sibling = await service.start(provider.name, request)
            crashing = await service.start(
                provider.name, SubagentRequest(prompt_of(source, raised), parent_session=parent.id)
            )
            crashed = await crashing.result()
            await crashing.dispose()
            reached.append("crashed")
            model.gate.set()
            sibling_outcome = await sibling.result()
            await sibling.dispose()
            later = await service.start(
                provider.name, SubagentRequest("hello", parent_session=parent.id)
            )
            async with later:
                later_outcome = await later.result()
            reached.append("end of the body")
    assert reached == ["crashed", "end of the body"]
    assert crashed.status == "failed"
    assert crashed.failure_kind == "infrastructure"
    assert isinstance(crashed.cause, CAUSE_TYPES[raised])
    assert CAUSE_TYPES[raised].__name__ in crashed.message
    assert CAUSE_TEXTS[raised] in crashed.message
    assert sibling_outcome.status == "completed"
    assert sibling_outcome.output == "waited"
    assert later_outcome.status == "completed"
    assert [type(e) for e in events].count(SubagentStarted) == 3
    ended = [e for e in events if isinstance(e, SubagentEnded)]
    assert [e.outcome.child_id for e in ended] == [
        crashed.child_id,
        sibling_outcome.child_id,
        later_outcome.child_id,
    ]
    child = runtime.sessions.get(crashed.child_id)
    assert child is not None
    assert child.events[-1].kind == "turn_end"
    assert child.events[-1].status == "failed"
    assert CAUSE_TYPES[raised].__name__ in child.events[-1].text


@pytest.mark.parametrize("raised", list(RAISES))
@pytest.mark.parametrize("kind", ["spawn", "fork"])
async def test_what_a_continuable_childs_code_raises_fails_only_that_child(
    kind: str, raised: str, tmp_path: Path
) -> None:
    """Issue 35, part A, points 1 and 2, for continuable children: what a turn's code raises
    (no Exception) fails that turn (``failed``, ``infrastructure``, naming the cause's type
    and text, the cause kept), the child's lifecycle pair closes with that outcome, and
    another continuable child of the same provider goes on."""
    runtime = AgentRuntime(AbusiveModel(), sessions=SessionStore(tmp_path))
    parent = runtime.root_agent()
    await parent.run("an earlier turn", cancel=CancelSignal())
    service = SubagentService()
    events: list[LifecycleEvent] = []
    service.subscribe(events.append)
    reached: list[str] = []
    with anyio.fail_after(10):
        async with provider_of(kind, runtime) as provider:
            service.register(provider)
            other = await service.start_continuable(
                provider.name, SubagentRequest("hello", parent_session=parent.id)
            )
            crashing = await service.start_continuable(
                provider.name, SubagentRequest(f"raise {raised}", parent_session=parent.id)
            )
            await crashing.dispose()
            second = await other.send("again")
            await other.dispose()
            reached.append("end of the body")
    assert reached == ["end of the body"]
    assert second.status == "completed"
    # in the order of the disposals: the crashing child's first
    crashed, other_ended = [e.outcome for e in events if isinstance(e, SubagentEnded)]
    assert crashed.status == "failed"
    assert crashed.failure_kind == "infrastructure"
    assert isinstance(crashed.cause, CAUSE_TYPES[raised])
    assert CAUSE_TYPES[raised].__name__ in crashed.message
    assert CAUSE_TEXTS[raised] in crashed.message
    assert other_ended.status == "completed"
    assert other_ended.child_id != crashed.child_id


@pytest.mark.parametrize("kind", ["spawn", "fork"])
async def test_a_real_cancellation_of_the_callers_scope_still_cancels(
    kind: str, tmp_path: Path
) -> None:
    """Issue 35, part A, point 2: only a stray cancel is a child's failure; the caller's own
    cancel scope, cancelled while a child waits in its adapter, still cancels: the scope
    catches its cancellation, no exception escapes, and the run settles ``cancelled``."""
    model = AbusiveModel()
    runtime = AgentRuntime(model, sessions=SessionStore(tmp_path))
    parent = runtime.root_agent()
    await parent.run("an earlier turn", cancel=CancelSignal())
    after_cancel: list[str] = []
    runs: list[SubagentRun] = []
    with anyio.fail_after(10):
        with anyio.CancelScope() as scope:
            async with provider_of(kind, runtime) as provider:
                request = SubagentRequest("wait", parent_session=parent.id)
                runs.append(await provider.start(request, cancel=CancelSignal()))
                scope.cancel()
                await anyio.sleep_forever()
                after_cancel.append("not cancelled")
    assert scope.cancelled_caught
    assert after_cancel == []
    with anyio.fail_after(5):
        outcome = await runs[0].result()
    assert outcome.status == "cancelled"


class BuggyContinuableProvider:
    """A continuable provider whose every way in has a bug (a plain ``RuntimeError``), or
    waits forever when :attr:`hang` is set."""

    name = "buggy"
    capabilities = SubagentCapabilities()

    def __init__(self, *, hang: bool = False) -> None:
        self.hang = hang

    async def _fail(self, what: str) -> NoReturn:
        if self.hang:
            await anyio.sleep_forever()
        raise RuntimeError(f"bug in {what}")

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> SubagentRun:
        await self._fail("start")

    async def prepare_continuable(
        self, request: SubagentRequest, *, cancel: CancelSignal
    ) -> Continuation:
        await self._fail("prepare_continuable")

    async def resume_continuable(
        self, remote_id: str, *, cancel: CancelSignal, child_id: str | None = None
    ) -> Continuation:
        await self._fail("resume_continuable")


WAYS_IN: dict[str, Callable[[SubagentService], Coroutine[object, object, object]]] = {
    "start": lambda service: service.start("buggy", SubagentRequest("hi")),
    "start_continuable": lambda service: service.start_continuable("buggy", SubagentRequest("hi")),
    "resume_continuable": lambda service: service.resume_continuable(
        "buggy", "remote-1", child_id="buggy:000000000001"
    ),
}


@pytest.mark.parametrize("way", list(WAYS_IN))
async def test_every_way_into_the_service_wraps_a_providers_bug_alike(way: str) -> None:
    """Issue 35, part A, point 4: a provider's plain RuntimeError, through ``start``,
    ``start_continuable`` or ``resume_continuable``, is a ``SubagentError(START_FAILED)``
    naming the provider and the exception (its type and text), the exception its cause; no
    lifecycle event."""
    service = SubagentService()
    service.register(BuggyContinuableProvider())
    events: list[LifecycleEvent] = []
    service.subscribe(events.append)
    with pytest.raises(SubagentError) as info:
        await WAYS_IN[way](service)
    assert info.value.code is SubagentErrorCode.START_FAILED
    assert "'buggy'" in info.value.message
    assert "RuntimeError" in info.value.message
    assert "bug in " in info.value.message
    assert isinstance(info.value.__cause__, RuntimeError)
    assert events == []


@pytest.mark.parametrize("way", list(WAYS_IN))
async def test_every_way_into_the_service_lets_the_callers_cancellation_through(
    way: str,
) -> None:
    """Issue 35, part A, point 4: the caller's cancellation of a start (its scope cancelled
    while the provider works) is no provider bug: it passes through every way in unwrapped,
    and the caller's scope catches it."""
    service = SubagentService()
    service.register(BuggyContinuableProvider(hang=True))
    with anyio.fail_after(5):
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(WAYS_IN[way], service)
                await anyio.lowlevel.checkpoint()
                scope.cancel()
    assert scope.cancelled_caught


MISSING = "/nonexistent/agent-that-does-not-exist"
"""A command that does not exist: a provider that spawned it would fail START_FAILED."""


def _asking_for(feature: str) -> SubagentRequest:
    if feature == "output_schema":
        return SubagentRequest("hi", output_schema={"type": "object"})
    if feature == "depth_limit":
        return SubagentRequest("hi", depth_limit=1)
    if feature == "tool_filter":
        return SubagentRequest("hi", tool_filter=("read",))
    return SubagentRequest("hi", persona="a careful reviewer")


def _providers() -> dict[str, Callable[[], SubagentProvider]]:
    from subagents.protocol.claude import ClaudeOptions
    from subagents.providers.a2a import A2AProvider
    from subagents.providers.acp import AcpProvider
    from subagents.providers.claude_code import ClaudeCodeProvider
    from subagents.providers.codex import CodexProvider
    from subagents.providers.spread import SpreadProvider

    return {
        "scripted": lambda: ScriptedProvider(),
        "acp": lambda: AcpProvider([MISSING]),
        "codex": lambda: CodexProvider([MISSING]),
        "claude-code": lambda: ClaudeCodeProvider(MISSING, ClaudeOptions(model="m")),
        "a2a": lambda: A2AProvider("http://127.0.0.1:9"),
        "spread": lambda: SpreadProvider("spread", [AcpProvider([MISSING])]),
    }


@pytest.mark.parametrize("provider_name", list(_providers()))
async def test_every_provider_called_directly_repeats_the_capability_gate(
    provider_name: str,
) -> None:
    """Issue 35, part A, point 5 (README: "providers repeat it when called directly"): every
    provider, its ``start`` and its ``prepare_continuable`` called directly (not through the
    service), rejects each start-time feature it does not advertise with
    ``SubagentError(UNSUPPORTED_CAPABILITY)`` naming the feature, before anything starts (the
    out-of-process ones are given a command that does not exist: a spawn would fail
    START_FAILED instead)."""
    provider = _providers()[provider_name]()
    async with cast("AbstractAsyncContextManager[SubagentProvider]", provider):
        missing = [f for f in START_TIME_FEATURES if not provider.capabilities.supports(f)]
        assert missing, "the provider advertises every feature: nothing to check"
        ways: list[Callable[[SubagentRequest], Coroutine[object, object, object]]] = [
            lambda request: provider.start(request, cancel=CancelSignal())
        ]
        if isinstance(provider, ContinuableProvider):
            continuable = provider
            ways.append(
                lambda request: continuable.prepare_continuable(request, cancel=CancelSignal())
            )
        for feature in missing:
            for way in ways:
                with anyio.fail_after(5), pytest.raises(SubagentError) as info:
                    await way(_asking_for(feature))
                assert info.value.code is SubagentErrorCode.UNSUPPORTED_CAPABILITY, (
                    feature,
                    info.value,
                )
                assert info.value.feature == feature
    scripted: object = provider
    if isinstance(scripted, ScriptedProvider):
        assert scripted.runs == []
        assert scripted.live_tasks == 0


class GateSkippingProvider:
    """A scripted provider advertising no start-time feature whose own ``start`` forgets the
    gate (only the service would refuse a persona)."""

    name = "gate-skipping"
    capabilities = SubagentCapabilities()

    def __init__(self) -> None:
        self.inner = ScriptedProvider(name=self.name)

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> SubagentRun:
        return await self.inner.start_child(request, cancel=cancel)


async def test_the_provider_kit_catches_a_provider_that_does_not_repeat_the_gate() -> None:
    """Issue 35, part A, point 5: ``check_provider``'s capability check also calls the
    provider directly, so a provider whose own ``start`` accepts a feature it does not
    advertise (the service alone refusing it) fails the kit, naming the feature."""

    @asynccontextmanager
    async def factory() -> AsyncIterator[SubagentProvider]:
        provider = GateSkippingProvider()
        async with provider.inner:
            yield provider

    (check,) = [
        c
        for c in provider_checks()
        if c.name == "each_unadvertised_capability_is_rejected_before_a_run_exists"
    ]
    scenarios = ProviderScenarios(
        good=SubagentRequest("hi"),
        good_output="hi",
        slow=SubagentRequest("slow"),
        failing=SubagentRequest("fail"),
        failing_kind="turn",
        timeout=5.0,
    )
    with pytest.raises(ProviderCheckFailure) as caught:
        await check.run(factory, scenarios)
    assert "called directly accepted" in caught.value.detail
    assert "'output_schema'" in caught.value.detail


@pytest.mark.parametrize("raised", list(RAISES))
async def test_what_a_background_tasks_tool_raises_fails_only_that_task(raised: str) -> None:
    """Issue 35, part A, points 1 and 2, for background tasks: what a tool run as a task
    raises (no Exception: a BaseException subclass, KeyboardInterrupt, SystemExit, a stray
    CancelledError) fails that task, naming the exception's type and text; a sibling task and
    the task runtime go on, and the code after it runs."""
    registry = ToolRegistry()
    registry.register(RaisingTool())
    gate = anyio.Event()
    registry.register(GatedTool(gate))
    reached: list[str] = []
    with anyio.fail_after(10):
        async with TaskRuntime(registry) as runtime:
            sibling = runtime.start("gated", {})
            crashing = runtime.start("explode", {"kind": raised})
            crashed = await runtime.result(crashing.task_id)
            reached.append("crashed")
            gate.set()
            done = await runtime.result(sibling.task_id)
            reached.append("end of the body")
    assert reached == ["crashed", "end of the body"]
    assert crashed.state == "failed"
    assert crashed.result is not None
    assert CAUSE_TYPES[raised].__name__ in crashed.result.content
    assert CAUSE_TEXTS[raised] in crashed.result.content
    assert done.state == "completed"


class GatedTool:
    """A tool that waits for ``gate`` (or its signal)."""

    def __init__(self, gate: anyio.Event) -> None:
        self.gate = gate

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("gated", "waits", {"type": "object"})

    async def execute(
        self, arguments: Mapping[str, JsonValue], *, cancel: CancelSignal
    ) -> ToolResult:
        with cancel.linked_scope():
            await self.gate.wait()
        return ToolResult("opened")


async def test_a_cancellation_is_real_only_while_a_scope_around_it_is_cancelled() -> None:
    """Issue 35, part A, point 2: the backend's cancellation is real while a cancel scope
    around the code seeing it is cancelled, and the same exception seen where none is (a
    stray) is not; ``GeneratorExit`` (a coroutine being closed) always passes through, and
    any other BaseException never does."""
    seen: list[tuple[BaseException, bool]] = []
    with anyio.CancelScope() as scope:
        scope.cancel()
        try:
            await anyio.sleep(5)
        except anyio.get_cancelled_exc_class() as exc:
            seen.append((exc, is_real_cancellation(exc)))
            raise
    assert scope.cancelled_caught
    ((exc, real),) = seen
    assert real
    assert passes_through(exc) is False  # seen here, outside the cancelled scope: a stray
    assert not is_real_cancellation(exc)
    assert passes_through(GeneratorExit())
    assert not passes_through(Boom("no"))
    assert not passes_through(KeyboardInterrupt())


async def test_the_event_loops_own_cancellation_of_a_task_is_real(anyio_backend: str) -> None:
    """Issue 35, part A, point 2: a task cancelled by its event loop's own means (asyncio's
    ``task.cancel()``, as the main task on a Ctrl-C; trio's cancel scope) sees a real
    cancellation, not a stray."""
    seen: list[bool] = []
    started = anyio.Event()

    async def victim() -> None:
        started.set()
        try:
            await anyio.sleep(5)
        except anyio.get_cancelled_exc_class() as exc:
            seen.append(is_real_cancellation(exc))
            raise

    with anyio.fail_after(5):
        if anyio_backend == "asyncio":
            task = asyncio.ensure_future(victim())
            await started.wait()
            task.cancel()
            (result,) = await asyncio.gather(task, return_exceptions=True)
            assert isinstance(result, asyncio.CancelledError)
        else:
            import trio

            with trio.CancelScope() as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(victim)
                    await started.wait()
                    scope.cancel()
    assert seen == [True]
