"""The run contract's Python API, the last mile (issue 35, part B): one name for the child id
(``child_id``; the old names warn for one release, and a run written against them still
works), and every continuation turn's outcome, the first included, through the typed API."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import TracebackType

import pytest

import subagents
from subagents import DelegationOutcome
from subagents.harness import SubagentTool
from subagents.providers import (
    CancelSignal,
    ContinuationManager,
    PermissionAsker,
    ProgressEvent,
    SubagentCapabilities,
    SubagentEnded,
    SubagentOutcome,
    SubagentProvider,
    SubagentRequest,
    SubagentRun,
    SubagentService,
    SubagentStarted,
)
from subagents.providers.contract import Continuation, child_id_of
from subagents.providers.scripted import ScriptedProvider
from subagents.providers.spread import SpreadProvider
from subagents.testing import check_provider

from .test_scripted import SCENARIOS, SCRIPTS

pytestmark = pytest.mark.anyio


# -- every turn's outcome, the first included ------------------------------------------------


def test_the_continuation_protocol_declares_every_turns_outcome() -> None:
    """Issue 35 (B5): ``Continuation`` declares ``outcomes`` (typed: a sequence of
    ``SubagentOutcome``) beside ``child_id``, so the first turn's outcome is part of the
    contract, not an undeclared attribute of one implementation."""
    assert isinstance(Continuation.__dict__.get("outcomes"), property)
    assert isinstance(Continuation.__dict__.get("child_id"), property)


async def test_a_prepared_childs_first_outcome_is_reachable_on_every_continuation() -> None:
    """Issue 35 (B5): the first turn's outcome (the request's prompt) is ``outcomes[0]`` on
    the provider's own continuation, on a spread's, and on the service's handle; later turns
    follow in order."""
    async with ScriptedProvider(name="one") as one, ScriptedProvider(name="two") as two:
        own = await one.prepare_continuable(SubagentRequest("first"), cancel=CancelSignal())
        await own.send("second")
        assert [o.output for o in own.outcomes] == ["first", "second"]

        spread = SpreadProvider("spread", [two])
        spread_child = await spread.prepare_continuable(
            SubagentRequest("first"), cancel=CancelSignal()
        )
        assert [o.output for o in spread_child.outcomes] == ["first"]
        await spread_child.dispose()

        service = SubagentService()
        service.register(spread)
        async with ContinuationManager(service) as children:
            child: Continuation = await children.start("spread", SubagentRequest("first"))
            await children.deliver(child.child_id, "second")
            outcomes = child.outcomes
            assert [o.output for o in outcomes] == ["first", "second"]
            assert {o.child_id for o in outcomes} == {child.child_id}
        await own.dispose()


# -- one name for the child id ---------------------------------------------------------------


async def test_runs_continuations_events_and_askers_name_the_child_id_child_id() -> None:
    """Issue 35 (B6): a run, a continuation, the lifecycle events and a permission asker all
    say ``child_id``, the same value as the outcome's; the old names (``run.id``,
    ``continuation.id``, ``run_id``) still answer, with a ``DeprecationWarning``."""
    service = SubagentService()
    events: list[SubagentStarted | SubagentEnded] = []
    service.subscribe(events.append)
    async with ScriptedProvider(name="s") as provider:
        service.register(provider)
        run = await service.start("s", SubagentRequest("hello"))
        async with run:
            outcome = await run.result()
        assert outcome.child_id == run.child_id
        with pytest.warns(DeprecationWarning, match=r"\.id is deprecated.*child_id"):
            assert run.id == run.child_id  # pyright: ignore[reportAttributeAccessIssue]
        started, ended = events
        assert isinstance(started, SubagentStarted)
        assert isinstance(ended, SubagentEnded)
        assert started.child_id == ended.child_id == run.child_id
        with pytest.warns(DeprecationWarning, match=r"run_id is deprecated.*child_id"):
            assert started.run_id == run.child_id
        with pytest.warns(DeprecationWarning, match="run_id is deprecated"):
            assert ended.run_id == run.child_id
        conversation = await provider.prepare_continuable(
            SubagentRequest("hi"), cancel=CancelSignal()
        )
        with pytest.warns(DeprecationWarning, match=r"\.id is deprecated"):
            assert conversation.id == conversation.child_id
        await conversation.dispose()
    asker = PermissionAsker("child-1", "agent")
    assert asker.child_id == "child-1"
    with pytest.warns(DeprecationWarning, match="run_id is deprecated"):
        assert asker.run_id == "child-1"


class _LegacyRun:
    """A run written before the rename: it has ``id``, no ``child_id``."""

    def __init__(self, inner: SubagentRun) -> None:
        self._inner = inner

    @property
    def id(self) -> str:
        return self._inner.child_id

    async def result(self) -> SubagentOutcome:
        return await self._inner.result()

    async def dispose(self) -> None:
        await self._inner.dispose()

    def progress(self) -> AsyncIterator[ProgressEvent] | None:
        return self._inner.progress()

    async def __aenter__(self) -> _LegacyRun:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> None:
        await self.dispose()


class _LegacyConversation:
    """A continuation written before the rename: ``id``, no ``child_id``, no ``outcomes``."""

    def __init__(self, inner: Continuation) -> None:
        self._inner = inner

    @property
    def id(self) -> str:
        return self._inner.child_id

    @property
    def remote_id(self) -> str:
        return self._inner.remote_id

    async def send(
        self,
        message: str,
        *,
        cancel: CancelSignal | None = None,
        on_progress: Callable[[ProgressEvent], None] | None = None,
    ) -> SubagentOutcome:
        return await self._inner.send(message, cancel=cancel, on_progress=on_progress)

    async def dispose(self) -> None:
        await self._inner.dispose()


class _LegacyProvider:
    """A third-party provider whose runs and continuations have only ``id``."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self._inner = inner

    @property
    def name(self) -> str:
        return "legacy"

    @property
    def capabilities(self) -> SubagentCapabilities:
        return self._inner.capabilities

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> SubagentRun:
        return _LegacyRun(await self._inner.start(request, cancel=cancel))  # pyright: ignore[reportReturnType]

    async def prepare_continuable(
        self, request: SubagentRequest, *, cancel: CancelSignal
    ) -> Continuation:
        inner = await self._inner.prepare_continuable(request, cancel=cancel)
        return _LegacyConversation(inner)  # pyright: ignore[reportReturnType]

    async def resume_continuable(
        self, remote_id: str, *, cancel: CancelSignal, child_id: str | None = None
    ) -> Continuation:
        inner = await self._inner.resume_continuable(remote_id, cancel=cancel, child_id=child_id)
        return _LegacyConversation(inner)  # pyright: ignore[reportReturnType]


async def test_a_run_written_before_the_rename_still_works() -> None:
    """Issue 35 (B6): a third-party run or continuation that has only ``id`` (and no
    ``outcomes``) still works through ``delegate``, the service, ``SubagentTool`` and the
    continuation manager; where its id is read from it (``child_id_of``: the provider kit,
    a delegation stopped outright), a ``DeprecationWarning`` says to name it ``child_id``.
    The package's own code raises none for its own runs (warnings are errors here)."""
    async with ScriptedProvider(name="inner") as inner:
        legacy = _LegacyProvider(inner)
        events = [event async for event in subagents.delegate(legacy, "hello")]
        last = events[-1]
        assert isinstance(last, DelegationOutcome)
        assert (last.status, last.output) == ("completed", "hello")

        service = SubagentService()
        service.register(legacy)
        tool = SubagentTool(service, "legacy")
        result = await tool.execute({"description": "d", "prompt": "hello"}, cancel=CancelSignal())
        assert (result.is_error, result.content) == (False, "hello")

        async with ContinuationManager(service) as children:
            child = await children.start("legacy", SubagentRequest("first"))
            assert child.child_id.startswith("legacy:")
            reply = await children.deliver(child.child_id, "second")
            assert (reply.output, reply.child_id) == ("second", child.child_id)
            assert [o.output for o in child.outcomes] == ["second"]  # the first is unknown

        run = await legacy.start(SubagentRequest("hello"), cancel=CancelSignal())
        async with run:
            with pytest.warns(DeprecationWarning, match="has no child_id, only id"):
                assert child_id_of(run).startswith("inner-")


async def test_the_provider_kit_checks_a_run_that_has_only_id() -> None:
    """Issue 35 (B6): ``check_provider`` still checks a provider whose runs have only ``id``
    (it passes), saying with a ``DeprecationWarning`` that the id is named ``child_id`` now."""

    @asynccontextmanager
    async def legacy() -> AsyncIterator[SubagentProvider]:
        async with ScriptedProvider(SCRIPTS) as inner:
            yield _LegacyProvider(inner)  # pyright: ignore[reportReturnType]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = await check_provider(
            legacy, SCENARIOS, only={"start_publishes_a_child_that_completes"}
        )
    assert report.passed, report.failures
    assert [r.name for r in report.results] == ["start_publishes_a_child_that_completes"]
    assert any(
        issubclass(w.category, DeprecationWarning) and "has no child_id, only id" in str(w.message)
        for w in caught
    )
