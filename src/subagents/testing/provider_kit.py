"""The provider test kit: one reusable suite that every subagent provider runs.

A provider is given as a *factory*: a zero-argument callable returning an async context manager
that yields a fresh, ready provider (and cleans it up on exit). What the provider should do is
given as :class:`ProviderScenarios`: the requests that make its child complete, run slowly,
fail after publication, fail before publication, and so on (the ACP provider passes prompts
that the reference agent understands; the scripted provider maps prompts to scripts).

Two ways to use it::

    report = await check_provider(factory, scenarios)
    report.raise_for_failures()

or one pytest test per check::

    @pytest.mark.parametrize("check", provider_checks(), ids=lambda c: c.name)
    async def test_provider_rule(check: ProviderCheck) -> None:
        try:
            await check.run(factory, scenarios)
        except ProviderCheckSkipped as skip:
            pytest.skip(str(skip))

A failing check raises :class:`ProviderCheckFailure` (an ``AssertionError``) naming the check,
the rule of the seam it enforces and what was observed. Every wait is bounded by
``scenarios.timeout``. Quiescence is measured as running tasks
(``anyio.get_running_tasks()``), open file descriptors (``/proc/self/fd``) and descendant
processes (``/proc/*/stat``), compared before the start and after ``dispose()``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Collection, Generator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass, replace
from typing import Literal, Protocol, TypeAlias, final

import anyio

from .._exception_groups import leaf_exceptions
from ..protocol.jsonrpc import JsonValue
from ..providers.contract import (
    START_TIME_FEATURES,
    CancelSignal,
    ContinuableProvider,
    FailureKind,
    ProgressEvent,
    SubagentCapabilities,
    SubagentEnded,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentProvider,
    SubagentRequest,
    SubagentRun,
    SubagentStarted,
    child_id_of,
)

__all__ = (
    "CheckResult",
    "ProviderCheck",
    "ProviderCheckFailure",
    "ProviderCheckSkipped",
    "ProviderFactory",
    "ProviderReport",
    "ProviderScenarios",
    "check_provider",
    "provider_checks",
    "unmanaged_factory",
)

ProviderFactory: TypeAlias = Callable[[], AbstractAsyncContextManager[SubagentProvider]]
"""Makes a fresh provider: ``async with factory() as provider: ...``."""


def unmanaged_factory(make: Callable[[], SubagentProvider]) -> ProviderFactory:
    """A factory for a provider that needs no setup or cleanup of its own."""

    @asynccontextmanager
    async def open_provider() -> AsyncGenerator[SubagentProvider, None]:
        yield make()

    return open_provider


@final
@dataclass(frozen=True, slots=True)
class ProviderScenarios:
    """The requests that make a provider's child behave in known ways.

    Optional scenarios the provider cannot produce are ``None``; their checks are skipped
    with a reason.
    """

    good: SubagentRequest
    """Publishes, then completes."""
    slow: SubagentRequest
    """Publishes, then runs until cancelled (or far longer than ``timeout``)."""
    good_output: JsonValue | None = None
    """When set, the completed output of ``good`` must equal it."""
    failing: SubagentRequest | None = None
    """Publishes, then fails (prompt, turn or infrastructure)."""
    failing_kind: FailureKind | None = None
    """When set, the failure kind ``failing`` must settle with."""
    failing_start: SubagentRequest | None = None
    """Fails before publication."""
    slow_start: SubagentRequest | None = None
    """Blocks before publication until cancelled."""
    result_and_dispose_fail: SubagentRequest | None = None
    """Publishes; then its result fails and its disposal raises."""
    crashing: SubagentRequest | None = None
    """Publishes, then an unexpected exception is raised inside the run (a fault the scenario
    injects: an adapter's bug, a full disk, a mapping that raises)."""
    stubborn: SubagentRequest | None = None
    """Publishes, then runs something that ignores cancellation for a while (longer than the
    provider's polite dispose bound, shorter than ``timeout``)."""
    timeout: float = 5.0
    """Bound (seconds) on every wait of a check."""
    quiescence_grace: float = 0.0
    """How long resources may take to return to the baseline after ``dispose()`` (0: at once)."""


class ProviderCheckFailure(AssertionError):
    """A provider broke a rule of the run contract."""

    def __init__(self, check: str, rule: str, detail: str) -> None:
        super().__init__(f"[{check}] {detail}\n  rule: {rule}")
        self.check = check
        self.rule = rule
        self.detail = detail


class ProviderCheckSkipped(Exception):
    """The check cannot run for this provider (the reason says why)."""


CheckFunction: TypeAlias = Callable[[ProviderFactory, ProviderScenarios], Awaitable[None]]


@final
@dataclass(frozen=True, slots=True)
class ProviderCheck:
    """One check of the suite: ``await check.run(factory, scenarios)`` passes or raises."""

    name: str
    rule: str
    """The rule of the seam it enforces (quoted from the design note)."""
    run: CheckFunction


@final
@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    rule: str
    status: Literal["passed", "failed", "skipped"]
    detail: str = ""


@final
@dataclass(frozen=True, slots=True)
class ProviderReport:
    """What :func:`check_provider` found, one :class:`CheckResult` per check."""

    results: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def failures(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if r.status == "failed")

    @property
    def skipped(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if r.status == "skipped")

    def raise_for_failures(self) -> None:
        if self.failures:
            lines = [f"{r.name}: {r.detail}" for r in self.failures]
            raise AssertionError("provider checks failed:\n" + "\n".join(lines))


# -- resources -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Resources:
    tasks: int
    fds: int | None
    children: frozenset[int] | None

    def leaks_against(self, baseline: _Resources) -> list[str]:
        leaks: list[str] = []
        if self.tasks > baseline.tasks:
            leaks.append(f"{self.tasks - baseline.tasks} task(s) still running")
        if self.fds is not None and baseline.fds is not None and self.fds > baseline.fds:
            leaks.append(f"{self.fds - baseline.fds} file descriptor(s) still open")
        if self.children is not None and baseline.children is not None:
            extra = self.children - baseline.children
            if extra:
                leaks.append(f"child process(es) still alive: {sorted(extra)}")
        return leaks


def _open_fds() -> int | None:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return None


def _descendants() -> frozenset[int] | None:
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    parents: dict[int, int] = {}
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                text = stat.read()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()
        if len(fields) >= 2:
            parents[int(entry)] = int(fields[1])
    found: set[int] = set()
    frontier = [os.getpid()]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                found.add(pid)
                frontier.append(pid)
    return frozenset(found)


def _snapshot() -> _Resources:
    return _Resources(len(anyio.get_running_tasks()), _open_fds(), _descendants())


# -- the context of one check ---------------------------------------------------------------


@final
class _Check:
    def __init__(self, name: str, rule: str, scenarios: ProviderScenarios) -> None:
        self.name = name
        self.rule = rule
        self.scenarios = scenarios

    def fail(self, detail: str) -> ProviderCheckFailure:
        return ProviderCheckFailure(self.name, self.rule, detail)

    def expect(self, condition: bool, detail: str) -> None:
        if not condition:
            raise self.fail(detail)

    @contextmanager
    def bounded(self, step: str) -> Generator[None, None, None]:
        try:
            with anyio.fail_after(self.scenarios.timeout):
                yield
        except TimeoutError:
            raise self.fail(f"{step} did not finish within {self.scenarios.timeout}s") from None

    async def start(
        self, provider: SubagentProvider, request: SubagentRequest, cancel: CancelSignal
    ) -> SubagentRun:
        with self.bounded("start()"):
            try:
                return await provider.start(request, cancel=cancel)
            except SubagentError as exc:
                raise self.fail(f"start() of {request.prompt!r} raised {exc}") from exc

    async def result(self, run: SubagentRun) -> SubagentOutcome:
        with self.bounded("result()"):
            try:
                outcome = await run.result()
            except Exception as exc:
                raise self.fail(
                    f"result() raised {type(exc).__name__}: {exc} instead of settling"
                ) from exc
        self.expect(
            isinstance(outcome, SubagentOutcome),  # pyright: ignore[reportUnnecessaryIsInstance]
            f"result() returned {outcome!r}, not a SubagentOutcome",
        )
        self.expect(
            outcome.child_id == child_id_of(run),
            f"the outcome names child {outcome.child_id!r}, the run is {child_id_of(run)!r}",
        )
        return outcome

    async def dispose(self, run: SubagentRun) -> None:
        with self.bounded("dispose()"):
            try:
                await run.dispose()
            except Exception as exc:
                raise self.fail(f"dispose() raised {type(exc).__name__}: {exc}") from exc

    async def expect_quiescent(self, baseline: _Resources, after: str) -> None:
        leaks = _snapshot().leaks_against(baseline)
        if leaks and self.scenarios.quiescence_grace > 0:
            with anyio.move_on_after(self.scenarios.quiescence_grace):
                while leaks:
                    await anyio.sleep(0.01)
                    leaks = _snapshot().leaks_against(baseline)
        self.expect(not leaks, f"not quiescent after {after}: {'; '.join(leaks)}")

    async def expect_start_error(
        self,
        provider: SubagentProvider,
        request: SubagentRequest,
        cancel: CancelSignal,
        code: SubagentErrorCode | None,
    ) -> SubagentError:
        with self.bounded("start()"):
            try:
                run = await provider.start(request, cancel=cancel)
            except SubagentError as exc:
                if code is not None:
                    self.expect(exc.code == code, f"start() raised {exc.code}, not {code}")
                return exc
        with self.bounded("dispose()"):
            await run.dispose()
        raise self.fail(
            f"start() of {request.prompt!r} published run {child_id_of(run)!r} instead of raising"
        )


def _service_with(provider: SubagentProvider, events: list[object]) -> _ServiceLike:
    try:
        from ..providers.service import SubagentService
    except ImportError as exc:  # pragma: no cover - the service ships with the contract
        raise ProviderCheckSkipped("no SubagentService to check through") from exc
    service = SubagentService()
    service.register(provider)
    service.subscribe(events.append)
    return service


class _ServiceLike(Protocol):
    """The part of ``SubagentService`` the kit uses."""

    async def start(
        self, name: str, request: SubagentRequest, *, cancel: CancelSignal | None = None
    ) -> SubagentRun: ...


# -- the checks -----------------------------------------------------------------------------

_CHECKS: list[ProviderCheck] = []


def _check(
    name: str, rule: str
) -> Callable[[Callable[[_Check, ProviderFactory], Awaitable[None]]], None]:
    def register(body: Callable[[_Check, ProviderFactory], Awaitable[None]]) -> None:
        async def run(factory: ProviderFactory, scenarios: ProviderScenarios) -> None:
            try:
                await body(_Check(name, rule, scenarios), factory)
            except BaseExceptionGroup as group:
                # A provider's (or a factory's) task group wrapped the verdict: unwrap it.
                for leaf in leaf_exceptions(group):
                    if isinstance(leaf, ProviderCheckFailure | ProviderCheckSkipped):
                        raise leaf from group
                raise

        _CHECKS.append(ProviderCheck(name, rule, run))

    return register


@_check(
    "start_publishes_a_child_that_completes",
    "Fulfillment publishes a child and transfers its run handle to the caller.",
)
async def _start_publishes(c: _Check, factory: ProviderFactory) -> None:
    async with factory() as provider:
        run = await c.start(provider, c.scenarios.good, CancelSignal())
        child_id = child_id_of(run)
        c.expect(isinstance(child_id, str) and child_id != "", f"child id {child_id!r} is empty")  # pyright: ignore[reportUnnecessaryIsInstance]
        outcome = await c.result(run)
        c.expect(outcome.status == "completed", f"the good request settled {outcome!r}")
        expected = c.scenarios.good_output
        if expected is not None:
            c.expect(outcome.output == expected, f"output {outcome.output!r} != {expected!r}")
        c.expect(
            child_id_of(run) == child_id,
            f"the child id changed from {child_id!r} to {child_id_of(run)!r}",
        )
        await c.dispose(run)


@_check(
    "result_settles_once_and_repeats_the_same_outcome",
    "result() settles exactly once; later calls return the same outcome.",
)
async def _result_settles_once(c: _Check, factory: ProviderFactory) -> None:
    async with factory() as provider:
        run = await c.start(provider, c.scenarios.good, CancelSignal())
        outcomes: list[SubagentOutcome] = []

        async def collect() -> None:
            outcomes.append(await c.result(run))

        async with anyio.create_task_group() as tg:
            tg.start_soon(collect)
            tg.start_soon(collect)
        outcomes.append(await c.result(run))
        await c.dispose(run)
        c.expect(
            all(o == outcomes[0] for o in outcomes),
            f"result() returned different outcomes: {outcomes!r}",
        )


@_check(
    "failure_before_publication_raises_and_leaves_nothing",
    "Work that fails before publication rejects start(); a rejected start cleans unpublished "
    "resources and emits no lifecycle event.",
)
async def _failure_before_publication(c: _Check, factory: ProviderFactory) -> None:
    request = c.scenarios.failing_start
    if request is None:
        raise ProviderCheckSkipped("no failing_start scenario: the provider cannot fail a start")
    async with factory() as provider:
        baseline = _snapshot()
        with c.bounded("start()"):
            try:
                run = await provider.start(request, cancel=CancelSignal())
            except SubagentError:
                pass
            except Exception as exc:
                raise c.fail(
                    f"start() raised {type(exc).__name__}: {exc}, not a SubagentError"
                ) from exc
            else:
                await run.dispose()
                raise c.fail(f"start() published run {child_id_of(run)!r} instead of raising")
        await c.expect_quiescent(baseline, "a failed start")
        events: list[object] = []
        service = _service_with(provider, events)
        with c.bounded("start() through the service"):
            try:
                run = await service.start(provider.name, request, cancel=CancelSignal())
            except SubagentError:
                pass
            else:
                await run.dispose()
                raise c.fail(f"start() published run {child_id_of(run)!r} instead of raising")
        await c.expect_quiescent(baseline, "a failed start through the service")
        c.expect(not events, f"a failed start emitted lifecycle events: {events!r}")


@_check(
    "progress_is_optional_and_never_blocks_the_child",
    "Live progress is bounded and never blocks the child: a run whose progress nobody reads "
    "still settles.",
)
async def _progress_never_blocks(c: _Check, factory: ProviderFactory) -> None:
    async with factory() as provider:
        run = await c.start(provider, c.scenarios.good, CancelSignal())
        feed = run.progress()
        c.expect(
            feed is None or hasattr(feed, "__anext__"),
            f"progress() returned {feed!r}, neither None nor an async iterator",
        )
        outcome = await c.result(run)
        c.expect(outcome.status == "completed", f"an unread-progress run settled {outcome!r}")
        await c.dispose(run)


_PROGRESS_DRAIN = 1.0
"""Seconds a check keeps reading a settled run's progress feed that has not ended."""


@_check(
    "text_events_add_up_to_the_output_and_tool_results_pair_with_calls",
    "One progress vocabulary: a plain turn's text events add up to its output, and tool "
    "calls and tool results pair by id (every tool result, and every child event, names an "
    "earlier tool call of its own run). The text is compared only when the output is a string "
    "and the provider streams text at all (a provider that streams none is not held to it).",
)
async def _progress_vocabulary(c: _Check, factory: ProviderFactory) -> None:
    async with factory() as provider:
        run = await c.start(provider, c.scenarios.good, CancelSignal())
        feed = run.progress()
        events: list[ProgressEvent] = []
        outcomes: list[SubagentOutcome] = []
        read_all = anyio.Event()

        async def read() -> None:
            try:
                if feed is not None:
                    async for event in feed:
                        events.append(event)
            finally:
                read_all.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            outcomes.append(await c.result(run))
            # What was pushed before the run settled is buffered: read it (a feed that ends
            # with its run ends here; one that does not is read for a bounded while).
            with anyio.move_on_after(_PROGRESS_DRAIN):
                await read_all.wait()
            tg.cancel_scope.cancel()
        await c.dispose(run)
        outcome = outcomes[0]
        c.expect(outcome.status == "completed", f"the good request settled {outcome!r}")
        texts = [event.text for event in events if event.kind == "text"]
        if texts and isinstance(outcome.output, str):
            streamed = "".join(texts)
            c.expect(
                streamed == outcome.output,
                f"the text events add up to {streamed!r}, the output is {outcome.output!r}",
            )
        _expect_paired(c, events, "")


def _expect_paired(c: _Check, events: list[ProgressEvent], where: str) -> None:
    """Every tool result and child event of ``events`` names an earlier tool call of theirs;
    each child's events are checked the same way among themselves."""
    calls: set[str] = set()
    children: dict[str, list[ProgressEvent]] = {}
    for event in events:
        match event.kind:
            case "tool_call":
                calls.add(event.id)
            case "tool_result":
                c.expect(
                    event.id in calls,
                    f"{where}a tool result names {event.id!r}, no earlier tool call "
                    f"(calls so far: {sorted(calls)})",
                )
            case "child":
                c.expect(
                    event.tool_call_id in calls,
                    f"{where}a child event names tool call {event.tool_call_id!r}, no earlier "
                    f"tool call (calls so far: {sorted(calls)})",
                )
                children.setdefault(event.tool_call_id, []).append(event.event)
            case _:
                pass
    for call_id, nested in children.items():
        _expect_paired(c, nested, f"{where}in the child of tool call {call_id!r}: ")


@_check(
    "failure_after_publication_settles_through_result_with_the_child_id",
    "Prompt, turn, cancellation, and infrastructure outcomes after publication settle through "
    "run.result without hiding the child id.",
)
async def _failure_after_publication(c: _Check, factory: ProviderFactory) -> None:
    request = c.scenarios.failing
    if request is None:
        raise ProviderCheckSkipped("no failing scenario: the provider cannot fail a turn")
    async with factory() as provider:
        run = await c.start(provider, request, CancelSignal())
        outcome = await c.result(run)
        await c.dispose(run)
        c.expect(outcome.status == "failed", f"the failing request settled {outcome!r}")
        c.expect(outcome.failure_kind is not None, f"a failure without a kind: {outcome!r}")
        kind = c.scenarios.failing_kind
        if kind is not None:
            c.expect(
                outcome.failure_kind == kind, f"failure kind {outcome.failure_kind}, not {kind}"
            )


@_check(
    "a_signal_fired_before_start_cancels_the_start",
    "One signal covers cancellation before and after publication.",
)
async def _cancel_before_start(c: _Check, factory: ProviderFactory) -> None:
    async with factory() as provider:
        baseline = _snapshot()
        signal = CancelSignal()
        signal.cancel("fired before the start")
        await c.expect_start_error(provider, c.scenarios.good, signal, SubagentErrorCode.CANCELLED)
        await c.expect_quiescent(baseline, "a start cancelled in advance")


@_check(
    "a_signal_fired_during_start_cancels_the_start",
    "One signal covers cancellation before and after publication; a rejected start cleans "
    "unpublished resources.",
)
async def _cancel_during_start(c: _Check, factory: ProviderFactory) -> None:
    request = c.scenarios.slow_start
    if request is None:
        raise ProviderCheckSkipped("no slow_start scenario: a start cannot be caught midway")
    async with factory() as provider:
        baseline = _snapshot()
        signal = CancelSignal()
        errors: list[SubagentError] = []

        async def start() -> None:
            errors.append(
                await c.expect_start_error(provider, request, signal, SubagentErrorCode.CANCELLED)
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(start)
            await anyio.wait_all_tasks_blocked()
            signal.cancel("fired during the start")
        c.expect(len(errors) == 1, "start() did not raise CANCELLED")
        await c.expect_quiescent(baseline, "a start cancelled midway")


@_check(
    "a_signal_fired_during_the_turn_settles_the_outcome_as_cancelled",
    "One signal covers cancellation before and after publication; after publication "
    "cancellation settles through run.result.",
)
async def _cancel_during_turn(c: _Check, factory: ProviderFactory) -> None:
    async with factory() as provider:
        baseline = _snapshot()
        signal = CancelSignal()
        run = await c.start(provider, c.scenarios.slow, signal)
        signal.cancel("fired during the turn")
        outcome = await c.result(run)
        c.expect(outcome.status == "cancelled", f"a cancelled turn settled {outcome!r}")
        await c.dispose(run)
        await c.expect_quiescent(baseline, "dispose() of a cancelled run")


@_check(
    "a_signal_fired_after_the_end_changes_nothing",
    "result() settles exactly once; cancelling a settled run has no effect.",
)
async def _cancel_after_end(c: _Check, factory: ProviderFactory) -> None:
    async with factory() as provider:
        signal = CancelSignal()
        run = await c.start(provider, c.scenarios.good, signal)
        before = await c.result(run)
        signal.cancel("fired after the end")
        await anyio.wait_all_tasks_blocked()
        after = await c.result(run)
        await c.dispose(run)
        c.expect(after == before, f"the outcome changed from {before!r} to {after!r}")


@_check(
    "dispose_is_idempotent_and_leaves_nothing_running",
    "dispose() cancels remaining work and awaits quiescence: no task, process or pipe outlives "
    "it; it is idempotent.",
)
async def _dispose_quiescent(c: _Check, factory: ProviderFactory) -> None:
    async with factory() as provider:
        baseline = _snapshot()
        run = await c.start(provider, c.scenarios.slow, CancelSignal())
        await c.dispose(run)
        await c.expect_quiescent(baseline, "dispose()")
        await c.dispose(run)
        await c.expect_quiescent(baseline, "a second dispose()")
        outcome = await c.result(run)
        c.expect(outcome.status != "completed", f"a disposed slow run settled {outcome!r}")


@_check(
    "dispose_racing_the_signal_settles_once_and_leaves_nothing_running",
    "One signal covers cancellation; dispose() cancels remaining work and awaits quiescence.",
)
async def _dispose_racing_cancel(c: _Check, factory: ProviderFactory) -> None:
    async with factory() as provider:
        baseline = _snapshot()
        signal = CancelSignal()
        run = await c.start(provider, c.scenarios.slow, signal)
        outcomes: list[SubagentOutcome] = []

        async def collect() -> None:
            outcomes.append(await c.result(run))

        async with anyio.create_task_group() as tg:
            tg.start_soon(collect)
            tg.start_soon(c.dispose, run)
            signal.cancel("raced with dispose()")
        outcomes.append(await c.result(run))
        await c.expect_quiescent(baseline, "dispose() racing the signal")
        c.expect(outcomes[0] == outcomes[1], f"two different outcomes: {outcomes!r}")
        c.expect(outcomes[0].status != "completed", f"a cancelled slow run settled {outcomes[0]!r}")


@_check(
    "a_failing_result_and_a_failing_disposal_both_surface",
    "Independent result and disposal rejections retain both diagnostics.",
)
async def _both_fail(c: _Check, factory: ProviderFactory) -> None:
    request = c.scenarios.result_and_dispose_fail
    if request is None:
        raise ProviderCheckSkipped("no result_and_dispose_fail scenario for this provider")
    async with factory() as provider:
        run = await c.start(provider, request, CancelSignal())
        result_failure: object = None
        with c.bounded("result()"):
            try:
                outcome = await run.result()
            except Exception as exc:
                result_failure = exc
            else:
                if outcome.status == "failed":
                    result_failure = outcome
        dispose_failure: BaseException | None = None
        with c.bounded("dispose()"):
            try:
                await run.dispose()
            except Exception as exc:
                dispose_failure = exc
        c.expect(result_failure is not None, "the result's failure was lost")
        c.expect(dispose_failure is not None, "the disposal's failure was lost")


@_check(
    "each_unadvertised_capability_is_rejected_before_a_run_exists",
    "The service checks every requested feature BEFORE delegating and rejects loud "
    "(UNSUPPORTED_CAPABILITY) if the provider lacks it: never accepted-then-ignored; the "
    "provider repeats the gate when called directly (start, prepare_continuable).",
)
async def _capabilities(c: _Check, factory: ProviderFactory) -> None:
    async with factory() as provider:
        capabilities = provider.capabilities
        c.expect(
            isinstance(capabilities, SubagentCapabilities),  # pyright: ignore[reportUnnecessaryIsInstance]
            f"capabilities is {capabilities!r}, not a SubagentCapabilities",
        )
        c.expect(provider.capabilities == capabilities, "capabilities changed between reads")
        missing = [f for f in START_TIME_FEATURES if not capabilities.supports(f)]
        if not missing:
            raise ProviderCheckSkipped("the provider advertises every start-time feature")
        events: list[object] = []
        service = _service_with(provider, events)
        baseline = _snapshot()
        for feature in missing:
            request = _asking_for(c.scenarios.good, feature)
            with c.bounded("start()"):
                try:
                    run = await service.start(provider.name, request, cancel=CancelSignal())
                except SubagentError as exc:
                    c.expect(
                        exc.code == SubagentErrorCode.UNSUPPORTED_CAPABILITY
                        and exc.feature == feature,
                        f"asking for {feature!r} raised {exc.code} (feature {exc.feature!r})",
                    )
                else:
                    await run.dispose()
                    raise c.fail(f"a request for unadvertised {feature!r} was accepted")
        for feature in missing:
            await _rejected_when_called_directly(c, provider, feature)
        await c.expect_quiescent(baseline, "rejected starts")
        c.expect(not events, f"rejected starts emitted lifecycle events: {events!r}")


class _Disposable(Protocol):
    async def dispose(self) -> None: ...


async def _rejected_when_called_directly(
    c: _Check, provider: SubagentProvider, feature: str
) -> None:
    """``provider``'s own ``start`` (and ``prepare_continuable``, when it has one), called
    without the service, refuses a request for the unadvertised ``feature``."""
    request = _asking_for(c.scenarios.good, feature)
    ways: list[tuple[str, Callable[[], Awaitable[_Disposable]]]] = [
        ("start()", lambda: provider.start(request, cancel=CancelSignal()))
    ]
    if isinstance(provider, ContinuableProvider):
        continuable = provider
        ways.append(
            (
                "prepare_continuable()",
                lambda: continuable.prepare_continuable(request, cancel=CancelSignal()),
            )
        )
    for what, way in ways:
        with c.bounded(f"{what} called directly"):
            try:
                child = await way()
            except SubagentError as exc:
                c.expect(
                    exc.code == SubagentErrorCode.UNSUPPORTED_CAPABILITY and exc.feature == feature,
                    f"{what} called directly, asking for {feature!r}, raised {exc.code} "
                    f"(feature {exc.feature!r}): a provider repeats the gate",
                )
            else:
                await child.dispose()
                raise c.fail(
                    f"{what} called directly accepted a request for unadvertised {feature!r} "
                    "(a provider repeats the capability gate)"
                )


def _asking_for(request: SubagentRequest, feature: str) -> SubagentRequest:
    if feature == "output_schema":
        return replace(request, output_schema={"type": "object"})
    if feature == "depth_limit":
        return replace(request, depth_limit=1)
    if feature == "tool_filter":
        return replace(request, tool_filter=("read",))
    return replace(request, persona="a careful reviewer")


@_check(
    "each_published_run_emits_the_lifecycle_pair_exactly_once",
    "A post-publication result failure closes the published lifecycle pair: started when "
    "start() fulfils, ended exactly once after.",
)
async def _lifecycle_pair(c: _Check, factory: ProviderFactory) -> None:
    scenarios = c.scenarios
    requests = [("good", scenarios.good, False), ("slow", scenarios.slow, True)]
    if scenarios.failing is not None:
        requests.append(("failing", scenarios.failing, False))
    async with factory() as provider:
        for label, request, cancel_it in requests:
            events: list[object] = []
            service = _service_with(provider, events)
            signal = CancelSignal()
            with c.bounded(f"start() of the {label} request"):
                run = await service.start(provider.name, request, cancel=signal)
            c.expect(
                len(events) == 1 and isinstance(events[0], SubagentStarted),
                f"{label}: after start() the events are {events!r}, not one SubagentStarted",
            )
            if cancel_it:
                signal.cancel("lifecycle check")
            outcome = await c.result(run)
            await c.result(run)
            await c.dispose(run)
            await c.dispose(run)
            ended = [e for e in events if isinstance(e, SubagentEnded)]
            c.expect(
                len(events) == 2 and len(ended) == 1,
                f"{label}: expected one SubagentStarted then one SubagentEnded, got {events!r}",
            )
            c.expect(
                ended[0].child_id == child_id_of(run) and ended[0].outcome == outcome,
                f"{label}: SubagentEnded {ended[0]!r} does not match run "
                f"{child_id_of(run)!r} / {outcome!r}",
            )


@_check(
    "an_unexpected_fault_inside_one_run_fails_only_that_run",
    "An unexpected exception inside one run settles that run failed (infrastructure, the "
    "exception kept as the cause) through result(), closes its lifecycle pair, and leaves "
    "sibling runs and the provider working.",
)
async def _fault_isolation(c: _Check, factory: ProviderFactory) -> None:
    request = c.scenarios.crashing
    if request is None:
        raise ProviderCheckSkipped("no crashing scenario: no fault can be injected into a run")
    async with factory() as provider:
        events: list[object] = []
        service = _service_with(provider, events)
        with c.bounded("start() of the crashing and the sibling requests"):
            sibling = await service.start(provider.name, c.scenarios.good, cancel=CancelSignal())
            crashing = await service.start(provider.name, request, cancel=CancelSignal())
        crashed = await c.result(crashing)
        c.expect(
            crashed.status == "failed" and crashed.failure_kind == "infrastructure",
            f"the crashing run settled {crashed!r}, not failed (infrastructure)",
        )
        c.expect(crashed.cause is not None, f"the crash's cause was not kept: {crashed!r}")
        sibling_outcome = await c.result(sibling)
        c.expect(
            sibling_outcome.status == "completed",
            f"the sibling of a crashing run settled {sibling_outcome!r}",
        )
        await c.dispose(crashing)
        await c.dispose(sibling)
        ended = [e for e in events if isinstance(e, SubagentEnded)]
        c.expect(len(ended) == 2, f"expected two SubagentEnded events, got {events!r}")
        after = await c.start(provider, c.scenarios.good, CancelSignal())
        outcome = await c.result(after)
        await c.dispose(after)
        c.expect(outcome.status == "completed", f"after a crash, a new run settled {outcome!r}")


@_check(
    "child_ids_are_unique_and_the_services_ids_are_used",
    "The service mints every child id, unique for its lifetime whatever the remote side "
    "returns; lifecycle events and outcomes use the minted id.",
)
async def _unique_ids(c: _Check, factory: ProviderFactory) -> None:
    async with factory() as provider:
        runs: list[SubagentRun] = []

        async def start() -> None:
            runs.append(await c.start(provider, c.scenarios.good, CancelSignal()))

        async with anyio.create_task_group() as tg:
            tg.start_soon(start)
            tg.start_soon(start)
        for run in runs:
            await c.result(run)
            await c.dispose(run)
        c.expect(
            child_id_of(runs[0]) != child_id_of(runs[1]),
            f"two concurrent runs share the id {child_id_of(runs[0])!r}",
        )
        events: list[object] = []
        service = _service_with(provider, events)
        tracked: list[SubagentRun] = []
        for _ in range(2):
            with c.bounded("start() through the service"):
                tracked.append(
                    await service.start(provider.name, c.scenarios.good, cancel=CancelSignal())
                )
        outcomes = [await c.result(run) for run in tracked]
        for run in tracked:
            await c.dispose(run)
        ids = [child_id_of(run) for run in tracked]
        c.expect(len(set(ids)) == 2, f"the service handed out the same id twice: {ids!r}")
        started = [e.child_id for e in events if isinstance(e, SubagentStarted)]
        ended = [e.child_id for e in events if isinstance(e, SubagentEnded)]
        c.expect(started == ids, f"SubagentStarted names {started!r}, the runs are {ids!r}")
        c.expect(sorted(ended) == sorted(ids), f"SubagentEnded names {ended!r}, not {ids!r}")
        c.expect(
            [o.child_id for o in outcomes] == ids,
            f"outcomes name {[o.child_id for o in outcomes]!r}, the runs are {ids!r}",
        )


@_check(
    "dispose_never_returns_silently_with_the_child_running",
    "When dispose() returns, nothing of the child runs: past the polite bound it escalates, "
    "and if something still survives it raises SubagentError (DISPOSE_INCOMPLETE) naming it.",
)
async def _dispose_keeps_its_promise(c: _Check, factory: ProviderFactory) -> None:
    request = c.scenarios.stubborn
    if request is None:
        raise ProviderCheckSkipped("no stubborn scenario: no child ignores cancellation")
    async with factory() as provider:
        baseline = _snapshot()
        run = await c.start(provider, request, CancelSignal())
        with c.bounded("dispose() of a child that ignores cancellation"):
            try:
                await run.dispose()
            except SubagentError as exc:
                c.expect(
                    exc.code == SubagentErrorCode.DISPOSE_INCOMPLETE,
                    f"dispose() raised {exc.code}, not DISPOSE_INCOMPLETE",
                )
                return
        await c.expect_quiescent(baseline, "a dispose() that returned without an error")


def provider_checks() -> tuple[ProviderCheck, ...]:
    """Every check of the suite, in a stable order (parametrize a test over them)."""
    return tuple(_CHECKS)


async def check_provider(
    factory: ProviderFactory,
    scenarios: ProviderScenarios,
    *,
    only: Collection[str] | None = None,
) -> ProviderReport:
    """Run every check (or those named in ``only``) and report each one's verdict."""
    results: list[CheckResult] = []
    for check in provider_checks():
        if only is not None and check.name not in only:
            continue
        try:
            await check.run(factory, scenarios)
        except ProviderCheckSkipped as skip:
            results.append(CheckResult(check.name, check.rule, "skipped", str(skip)))
        except ProviderCheckFailure as failure:
            results.append(CheckResult(check.name, check.rule, "failed", failure.detail))
        except Exception as exc:
            detail = f"the check crashed: {type(exc).__name__}: {exc}"
            results.append(CheckResult(check.name, check.rule, "failed", detail))
        else:
            results.append(CheckResult(check.name, check.rule, "passed"))
    return ProviderReport(tuple(results))
