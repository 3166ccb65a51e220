"""The provider kit catches providers that break the run contract.

Each broken provider below wraps the scripted provider and breaks exactly one rule; the kit's
check for that rule must fail (and name the rule).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType

import anyio
import anyio.abc
import pytest

from subagents.providers import (
    CancelSignal,
    ChildProgress,
    ProgressEvent,
    SubagentCapabilities,
    SubagentOutcome,
    SubagentProvider,
    SubagentRequest,
    SubagentRun,
    TextProgress,
    ToolCallProgress,
    ToolResultProgress,
)
from subagents.providers.scripted import Script, ScriptedProvider
from subagents.testing import (
    ProviderCheckFailure,
    ProviderFactory,
    ProviderScenarios,
    check_provider,
    provider_checks,
)

from .test_scripted import SCENARIOS, SCRIPTS

pytestmark = pytest.mark.anyio

FAST = dataclasses.replace(SCENARIOS, timeout=0.5)


class _Run:
    """A run that can rename its child or make up a fresh outcome per result() call."""

    def __init__(
        self, inner: SubagentRun, *, rename: bool, unstable: bool, dispose_once: bool
    ) -> None:
        self._inner = inner
        self._rename = rename
        self._unstable = unstable
        self._dispose_once = dispose_once
        self._calls = 0
        self._disposed = False

    @property
    def child_id(self) -> str:
        return self._inner.child_id

    async def result(self) -> SubagentOutcome:
        outcome = await self._inner.result()
        self._calls += 1
        if self._rename:
            outcome = dataclasses.replace(outcome, child_id="someone-else")
        if self._unstable:
            outcome = dataclasses.replace(outcome, output=f"call {self._calls}")
        return outcome

    async def dispose(self) -> None:
        if self._dispose_once and self._disposed:
            raise RuntimeError("already disposed")
        self._disposed = True
        await self._inner.dispose()

    def progress(self) -> AsyncIterator[ProgressEvent] | None:
        return self._inner.progress()

    async def __aenter__(self) -> _Run:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> None:
        await self.dispose()


class _Broken:
    """The scripted provider with one rule broken."""

    def __init__(
        self,
        task_group: anyio.abc.TaskGroup,
        *,
        ignore_signal: bool = False,
        leak_task: bool = False,
        leak_process: bool = False,
        rename: bool = False,
        unstable: bool = False,
        dispose_once: bool = False,
        drifting_capabilities: bool = False,
        scripts: dict[str, Script] | None = None,
    ) -> None:
        self._inner = ScriptedProvider(scripts if scripts is not None else SCRIPTS)
        self._task_group = task_group
        self._ignore_signal = ignore_signal
        self._leak_task = leak_task
        self._leak_process = leak_process
        self.processes: list[anyio.abc.Process] = []
        self._rename = rename
        self._unstable = unstable
        self._dispose_once = dispose_once
        self._drifting_capabilities = drifting_capabilities
        self._reads = 0

    @property
    def name(self) -> str:
        return "broken"

    @property
    def capabilities(self) -> SubagentCapabilities:
        self._reads += 1
        if self._drifting_capabilities:
            return SubagentCapabilities(persona=self._reads % 2 == 0)
        return self._inner.capabilities

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> SubagentRun:
        signal = CancelSignal() if self._ignore_signal else cancel
        run = await self._inner.start(request, cancel=signal)
        if self._leak_task:
            self._task_group.start_soon(anyio.sleep_forever)
        if self._leak_process:
            self.processes.append(await anyio.open_process(["sleep", "30"]))
        return _Run(
            run, rename=self._rename, unstable=self._unstable, dispose_once=self._dispose_once
        )


def broken(**options: object) -> ProviderFactory:
    @asynccontextmanager
    async def factory() -> AsyncIterator[SubagentProvider]:
        async with anyio.create_task_group() as tg:
            provider = _Broken(tg, **options)  # pyright: ignore[reportArgumentType]
            try:
                async with provider._inner:  # pyright: ignore[reportPrivateUsage]
                    yield provider
            finally:
                for process in provider.processes:
                    process.kill()
                    with anyio.CancelScope(shield=True):
                        await process.aclose()
                tg.cancel_scope.cancel()

    def make() -> AbstractAsyncContextManager[SubagentProvider]:
        return factory()

    return make


async def _fails(check_name: str, factory: ProviderFactory, scenarios: ProviderScenarios) -> str:
    (check,) = [c for c in provider_checks() if c.name == check_name]
    with pytest.raises(ProviderCheckFailure) as caught:
        await check.run(factory, scenarios)
    assert caught.value.check == check_name
    assert caught.value.rule == check.rule
    return caught.value.detail


async def test_kit_catches_a_result_that_raises() -> None:
    """ "Prompt, turn, cancellation, and infrastructure outcomes after publication settle
    through run.result" (result() itself never raises for them)."""
    scripts = {**SCRIPTS, "echo hi": Script(result_raises=RuntimeError("bug"))}
    detail = await _fails("start_publishes_a_child_that_completes", broken(scripts=scripts), FAST)
    assert "RuntimeError" in detail


async def test_kit_catches_a_task_left_running_after_dispose() -> None:
    """ "dispose() cancels remaining work and awaits quiescence"."""
    detail = await _fails(
        "dispose_is_idempotent_and_leaves_nothing_running", broken(leak_task=True), FAST
    )
    assert "task(s) still running" in detail


async def test_kit_catches_a_child_process_and_pipes_left_after_dispose() -> None:
    """ "dispose() cancels remaining work and awaits quiescence: no task, process or pipe
    outlives it"."""
    detail = await _fails(
        "dispose_is_idempotent_and_leaves_nothing_running", broken(leak_process=True), FAST
    )
    assert "child process(es) still alive" in detail
    assert "file descriptor(s) still open" in detail


async def test_kit_catches_a_provider_that_ignores_the_signal_during_the_turn() -> None:
    """ "One signal covers cancellation before and after publication"."""
    detail = await _fails(
        "a_signal_fired_during_the_turn_settles_the_outcome_as_cancelled",
        broken(ignore_signal=True),
        FAST,
    )
    assert "result()" in detail


async def test_kit_catches_a_provider_that_ignores_a_signal_fired_before_start() -> None:
    """ "One signal covers cancellation before and after publication"."""
    detail = await _fails(
        "a_signal_fired_before_start_cancels_the_start", broken(ignore_signal=True), FAST
    )
    assert "instead of raising" in detail


async def test_kit_catches_a_dispose_that_is_not_idempotent() -> None:
    """ "dispose() cancels remaining work and awaits quiescence" (idempotent)."""
    detail = await _fails(
        "dispose_is_idempotent_and_leaves_nothing_running", broken(dispose_once=True), FAST
    )
    assert "already disposed" in detail


async def test_kit_catches_capabilities_that_change_between_reads() -> None:
    """ "Start-time features ride on a static provider.capabilities descriptor"."""
    detail = await _fails(
        "each_unadvertised_capability_is_rejected_before_a_run_exists",
        broken(drifting_capabilities=True),
        FAST,
    )
    assert "changed" in detail


async def test_kit_catches_a_provider_that_ignores_the_signal_during_start() -> None:
    """ "One signal covers cancellation before and after publication"."""
    await _fails("a_signal_fired_during_start_cancels_the_start", broken(ignore_signal=True), FAST)


async def test_kit_catches_an_outcome_that_hides_the_child_id() -> None:
    """ "... settle through run.result without hiding the child id"."""
    detail = await _fails(
        "failure_after_publication_settles_through_result_with_the_child_id",
        broken(rename=True),
        FAST,
    )
    assert "someone-else" in detail


async def test_kit_catches_a_result_that_changes_between_calls() -> None:
    """ "result() settles exactly once; later calls return the same outcome"."""
    await _fails("result_settles_once_and_repeats_the_same_outcome", broken(unstable=True), FAST)


async def test_kit_catches_a_start_that_publishes_instead_of_failing() -> None:
    """ "Work that fails before publication rejects start()"."""
    scripts = {**SCRIPTS, "refuse": Script()}
    detail = await _fails(
        "failure_before_publication_raises_and_leaves_nothing", broken(scripts=scripts), FAST
    )
    assert "instead of raising" in detail


async def test_kit_catches_a_disposal_failure_that_is_swallowed() -> None:
    """ "Independent result and disposal rejections retain both diagnostics"."""
    scripts = {**SCRIPTS, "broken": Script(result_raises=RuntimeError("result bug"))}
    detail = await _fails(
        "a_failing_result_and_a_failing_disposal_both_surface", broken(scripts=scripts), FAST
    )
    assert "disposal" in detail


VOCABULARY = "text_events_add_up_to_the_output_and_tool_results_pair_with_calls"


async def test_kit_catches_text_events_that_do_not_add_up_to_the_output() -> None:
    """Issue 15, point 8: "a plain turn's text events add up to its output"."""
    progress = (TextProgress("h"), TextProgress("o"))
    scripts = {**SCRIPTS, "echo hi": Script(output="hi", progress=progress)}
    detail = await _fails(VOCABULARY, broken(scripts=scripts), FAST)
    assert "'ho'" in detail
    assert "'hi'" in detail


@pytest.mark.parametrize(
    "progress",
    [
        (ToolResultProgress("t1", "completed", "out"),),
        (ToolResultProgress("t1", "completed"), ToolCallProgress("t1", "read")),
        (ChildProgress("t1", TextProgress("child text")),),
        (
            ToolCallProgress("t1", "subagent"),
            ChildProgress("t1", ToolResultProgress("c1", "failed")),
        ),
    ],
    ids=["result-without-call", "result-before-call", "child-without-call", "child-unpaired"],
)
async def test_kit_catches_tool_results_that_pair_with_no_earlier_call(
    progress: tuple[ProgressEvent, ...],
) -> None:
    """Issue 15, point 8: "tool calls and tool results pair by id": a result (or a child's
    event) must name an earlier tool call of its own run."""
    scripts = {**SCRIPTS, "echo hi": Script(output="hi", progress=progress)}
    detail = await _fails(VOCABULARY, broken(scripts=scripts), FAST)
    assert "no earlier tool call" in detail


async def test_the_vocabulary_check_passes_paired_calls_and_a_provider_streaming_no_text() -> None:
    """Issue 15, point 8: paired calls and results pass, a child's text is not the run's
    text, and a provider that streams no text is not held to the text comparison."""
    progress = (
        ToolCallProgress("t1", "subagent"),
        ChildProgress("t1", TextProgress("the child's own words")),
        ToolResultProgress("t1", "completed", "ok"),
        TextProgress("hi"),
    )
    (check,) = [c for c in provider_checks() if c.name == VOCABULARY]
    for scripted in (Script(output="hi", progress=progress), Script(output="hi")):
        await check.run(broken(scripts={**SCRIPTS, "echo hi": scripted}), FAST)


async def test_check_provider_reports_failures_and_skips_by_check_name() -> None:
    """A report names each check's verdict; missing scenarios are honest skips."""
    minimal = ProviderScenarios(good=SubagentRequest("echo hi"), slow=SubagentRequest("slow"))
    report = await check_provider(broken(leak_task=True), dataclasses.replace(minimal, timeout=0.5))
    failed = {r.name for r in report.failures}
    skipped = {r.name for r in report.skipped}
    assert "dispose_is_idempotent_and_leaves_nothing_running" in failed
    assert "a_signal_fired_during_start_cancels_the_start" in skipped
    assert not report.passed
    with pytest.raises(AssertionError, match="dispose_is_idempotent"):
        report.raise_for_failures()
