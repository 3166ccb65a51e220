"""``ScriptedProvider``: a deterministic provider; every outcome, delay and failure is scripted.

Tests replace the nondeterministic child with it while exercising the real service, lifecycle
and consumers. Each start picks a :class:`Script` (by prompt, or through a function of the
request) that says what the child does: the progress it emits, how long it takes, whether it
fails before publication (``START_FAILED``) or after (``prompt`` / ``turn`` /
``infrastructure``), whether it hangs until cancelled, and whether ``result()`` or
``dispose()`` misbehave (to test consumers against broken providers).

Ownership: a child keeps running after ``start()`` returns, so its task needs an owner that
outlives ``start()``. anyio forbids a task group entered in ``start()`` and exited in
``dispose()`` (cancel scopes must be exited by the task that entered them, in order), so the
provider is an async context manager that owns one task group::

    async with ScriptedProvider({"slow": Script(turn_hangs=True)}) as provider:
        async with await provider.start(SubagentRequest("slow"), cancel=signal) as run:
            outcome = await run.result()

``dispose()`` cancels the run's task and waits until it has exited; leaving the provider
cancels whatever runs are left. :attr:`ScriptedProvider.live_tasks` and
:attr:`ScriptedProvider.live_runs` let tests check for leaks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TypeAlias, final

import anyio
import anyio.abc
import anyio.lowlevel

from .._owned import OwnedTaskGroup
from ..protocol.jsonrpc import JsonValue
from .contract import (
    CancelSignal,
    FailureKind,
    ProgressEvent,
    SubagentCapabilities,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentRequest,
    deprecated_alias,
)
from .progress import ProgressFeed

__all__ = (
    "ProgressFeed",
    "Script",
    "ScriptSource",
    "ScriptedConversation",
    "ScriptedProvider",
    "ScriptedRun",
)

_DISPOSE_GRACE = 5.0
"""Bound (seconds) on waiting for a cancelled child task to exit during disposal."""


@final
@dataclass(frozen=True, slots=True)
class Script:
    """What one scripted child does, in order.

    Before publication: wait for ``start_gate``, sleep ``start_delay`` seconds, hang if
    ``start_hangs`` (until the signal or the caller cancels the start), then fail with
    ``START_FAILED`` if ``start_error`` is set. After publication: emit ``progress``, wait for
    ``turn_gate``, sleep ``turn_delay`` seconds, hang if ``turn_hangs`` (until cancelled or
    disposed), raise ``turn_raises`` inside the child (settles as an ``infrastructure``
    failure), fail as ``fail_kind`` if set, else complete with ``output``.
    """

    output: JsonValue = "done"
    progress: Sequence[ProgressEvent] = ()
    child_id: str | None = None
    """A fixed child id (default: ``<provider name>-<n>``)."""
    start_gate: anyio.Event | None = None
    """Before publication, wait until the test sets this event."""
    start_delay: float = 0.0
    start_hangs: bool = False
    start_error: str | None = None
    """Fail before publication with ``SubagentError(START_FAILED, start_error)``."""
    turn_gate: anyio.Event | None = None
    """After publication (and the progress), wait until the test sets this event."""
    turn_delay: float = 0.0
    turn_hangs: bool = False
    turn_raises: Exception | None = None
    fail_kind: FailureKind | None = None
    fail_message: str = "scripted failure"
    usage: Mapping[str, JsonValue] | None = None
    result_raises: Exception | None = None
    """``result()`` raises this once the child has settled (a provider bug, for consumer tests)."""
    dispose_raises: Exception | None = None
    """The first ``dispose()`` raises this after quiescence (for consumer tests)."""


ScriptSource: TypeAlias = Mapping[str, Script] | Callable[[SubagentRequest], Script]
"""Scripts by exact prompt (unknown prompts echo the prompt), or a function of the request."""


@dataclass(slots=True)
class _Live:
    """A provider's leak counters, which its runs keep up to date."""

    runs: int = 0
    """Published runs not yet disposed."""
    tasks: int = 0
    """Child tasks still running."""


@final
class ScriptedRun:
    """A published scripted child (implements :class:`~subagents.providers.SubagentRun`)."""

    def __init__(
        self,
        provider: ScriptedProvider,
        child_id: str,
        script: Script,
        progress_capacity: int,
        live: _Live,
    ) -> None:
        self._provider = provider
        self._live = live
        self._id = child_id
        self._script = script
        self._scope = anyio.CancelScope()
        self._feed = ProgressFeed(progress_capacity)
        self._published = False
        self._start_error: SubagentError | None = None
        self._phase = anyio.Event()  # set on publication or when the task ends
        self._done = anyio.Event()  # set as the task's very last act
        self._settled = anyio.Event()
        self._outcome: SubagentOutcome | None = None
        self._cancel_reason = "cancelled"
        self._disposed = False
        self.result_calls = 0
        self.dispose_calls = 0

    @property
    def child_id(self) -> str:
        return self._id

    @property
    def id(self) -> str:
        """Deprecated alias of :attr:`child_id` (removed in the next release)."""
        deprecated_alias(self, "id")
        return self.child_id

    @property
    def script(self) -> Script:
        return self._script

    @property
    def settled(self) -> bool:
        return self._outcome is not None

    @property
    def disposed(self) -> bool:
        return self._disposed

    @property
    def task_running(self) -> bool:
        return not self._done.is_set()

    @property
    def progress_dropped(self) -> int:
        return self._feed.dropped

    async def result(self) -> SubagentOutcome:
        self.result_calls += 1
        await self._settled.wait()
        if self._script.result_raises is not None:
            raise self._script.result_raises
        assert self._outcome is not None
        return self._outcome

    async def dispose(self) -> None:
        self.dispose_calls += 1
        self._cancel_reason = "disposed"
        self._scope.cancel()
        with anyio.move_on_after(_DISPOSE_GRACE, shield=True):
            await self._done.wait()
        self._feed.close()
        if self._disposed:
            return
        self._disposed = True
        self._live.runs -= 1
        if self._script.dispose_raises is not None:
            raise self._script.dispose_raises

    def progress(self) -> ProgressFeed:
        return self._feed

    async def __aenter__(self) -> ScriptedRun:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> None:
        await self.dispose()

    async def launch(self, task_group: anyio.abc.TaskGroup, cancel: CancelSignal) -> None:
        """Start the child's task in ``task_group`` (the provider's) and return once it is
        published; raise, leaving nothing running, when its start fails, is cancelled, or is
        cut short. :meth:`ScriptedProvider.start` calls it on each new run."""
        self._live.tasks += 1
        task_group.start_soon(self._drive, cancel)
        try:
            await self._phase.wait()
        except BaseException:
            # The caller's own scope cancelled the start: nothing may outlive it.
            self._scope.cancel()
            with anyio.move_on_after(_DISPOSE_GRACE, shield=True):
                await self._done.wait()
            raise
        if self._published:
            self._live.runs += 1
            return
        with anyio.move_on_after(_DISPOSE_GRACE, shield=True):
            await self._done.wait()
        if self._start_error is not None:
            raise self._start_error
        name = self._provider.name
        if cancel.cancelled:
            raise SubagentError(
                SubagentErrorCode.CANCELLED,
                f"cancelled during the start: {cancel.reason}",
                provider=name,
            )
        raise SubagentError(
            SubagentErrorCode.START_FAILED, "the provider closed during the start", provider=name
        )

    def _settle(self, outcome: SubagentOutcome) -> None:
        if self._outcome is None:
            self._outcome = outcome
            self._feed.close()  # its progress ends with it (what was pushed stays readable)
            self._settled.set()

    async def _drive(self, cancel: CancelSignal) -> None:
        """The child's task, owned by the provider's task group."""
        script = self._script
        try:
            with self._scope, cancel.linked_scope():
                await anyio.lowlevel.checkpoint()
                if script.start_gate is not None:
                    await script.start_gate.wait()
                if script.start_delay > 0:
                    await anyio.sleep(script.start_delay)
                if script.start_hangs:
                    await anyio.sleep_forever()
                if script.start_error is not None:
                    self._start_error = SubagentError(
                        SubagentErrorCode.START_FAILED,
                        script.start_error,
                        provider=self._provider.name,
                    )
                    return
                self._published = True
                self._phase.set()
                for event in script.progress:
                    self._feed.push(event)
                    await anyio.lowlevel.checkpoint()
                if script.turn_gate is not None:
                    await script.turn_gate.wait()
                if script.turn_delay > 0:
                    await anyio.sleep(script.turn_delay)
                if script.turn_hangs:
                    await anyio.sleep_forever()
                if script.turn_raises is not None:
                    raise script.turn_raises
                if script.fail_kind is not None:
                    self._settle(
                        SubagentOutcome.failed(self._id, script.fail_kind, script.fail_message)
                    )
                else:
                    self._settle(
                        SubagentOutcome.completed(self._id, script.output, usage=script.usage)
                    )
        except Exception as exc:
            if self._published:
                self._settle(
                    SubagentOutcome.failed(
                        self._id, "infrastructure", f"{type(exc).__name__}: {exc}", exc
                    )
                )
            else:
                self._start_error = SubagentError(
                    SubagentErrorCode.START_FAILED,
                    f"{type(exc).__name__}: {exc}",
                    provider=self._provider.name,
                )
        finally:
            if self._published:
                reason = cancel.reason if cancel.cancelled else self._cancel_reason
                self._settle(SubagentOutcome.cancelled(self._id, reason or "cancelled"))
            self._feed.close()
            self._live.tasks -= 1
            self._phase.set()
            self._done.set()


def _echo(request: SubagentRequest) -> Script:
    return Script(output=request.prompt)


@final
class ScriptedProvider:
    """A deterministic :class:`~subagents.providers.SubagentProvider` (see the module docs).

    ``scripts`` maps a prompt to its :class:`Script` (a prompt not in the map completes with the
    prompt as its output), or is a function from the request to its script.
    """

    def __init__(
        self,
        scripts: ScriptSource | None = None,
        *,
        name: str = "scripted",
        capabilities: SubagentCapabilities = SubagentCapabilities(),  # noqa: B008 (frozen)
        progress_capacity: int = 16,
    ) -> None:
        self._name = name
        self._capabilities = capabilities
        self._scripts: ScriptSource = scripts if scripts is not None else _echo
        self._progress_capacity = progress_capacity
        self._owned = OwnedTaskGroup("a ScriptedProvider")
        self._counter = 0
        self._live = _Live()
        self.requests: list[SubagentRequest] = []
        """Every request that reached :meth:`start` (in order)."""
        self.runs: list[ScriptedRun] = []
        """Every published run (in order)."""
        self._conversations: dict[str, SubagentRequest] = {}

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> SubagentCapabilities:
        return self._capabilities

    @property
    def live_runs(self) -> int:
        """Published runs not yet disposed."""
        return self._live.runs

    @property
    def live_tasks(self) -> int:
        """Child tasks still running (zero once every run is disposed)."""
        return self._live.tasks

    async def __aenter__(self) -> ScriptedProvider:
        await self._owned.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> bool | None:
        task_group = self._owned.group
        assert task_group is not None
        # The children never raise (each settles its own failures), so the body's exception,
        # if any, propagates as it is rather than wrapped in an exception group.
        task_group.cancel_scope.cancel()
        await self._owned.close()
        return None

    def _script_for(self, request: SubagentRequest) -> Script:
        if callable(self._scripts):
            return self._scripts(request)
        script = self._scripts.get(request.prompt)
        return script if script is not None else _echo(request)

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> ScriptedRun:
        """Run the request's script; return once the child is published. A start-time
        feature that :attr:`capabilities` lacks is refused first (``UNSUPPORTED_CAPABILITY``),
        as the service would: a provider repeats the gate when called directly."""
        self._capabilities.check(request, provider=self._name)
        return await self.start_child(request, cancel=cancel)

    async def start_child(
        self, request: SubagentRequest, *, cancel: CancelSignal, child_id: str | None = None
    ) -> ScriptedRun:
        """:meth:`start` with the child's id given (a conversation's turns keep its id)."""
        self.requests.append(request)
        if cancel.cancelled:
            raise SubagentError(
                SubagentErrorCode.CANCELLED,
                f"cancelled before the start: {cancel.reason}",
                provider=self._name,
            )
        task_group = self._owned.group
        if task_group is None:
            raise SubagentError(
                SubagentErrorCode.START_FAILED,
                "the ScriptedProvider is not open (use `async with provider:`)",
                provider=self._name,
            )
        script = self._script_for(request)
        self._counter += 1
        run_id = child_id or script.child_id or f"{self._name}-{self._counter}"
        run = ScriptedRun(self, run_id, script, self._progress_capacity, self._live)
        await run.launch(task_group, cancel)
        self.runs.append(run)
        return run

    async def prepare_continuable(
        self, request: SubagentRequest, *, cancel: CancelSignal
    ) -> ScriptedConversation:
        """A child that later messages reach. Its first turn (the script of ``request``) runs
        here; each :meth:`ScriptedConversation.send` runs the script of its message under the
        same child id. The capability gate comes first, as in :meth:`start`."""
        self._capabilities.check(request, provider=self._name)
        self._counter += 1
        conversation = ScriptedConversation(self, f"{self._name}-{self._counter}", request)
        await conversation.turn(request, cancel=cancel)
        self._conversations[conversation.child_id] = request
        return conversation

    async def resume_continuable(
        self, remote_id: str, *, cancel: CancelSignal, child_id: str | None = None
    ) -> ScriptedConversation:
        """Cold-resume a conversation this provider prepared (``remote_id``: its own id, which
        it keeps; the service presents ``child_id``)."""
        child_id = remote_id
        if cancel.cancelled:
            raise SubagentError(
                SubagentErrorCode.CANCELLED,
                f"cancelled before the resume: {cancel.reason}",
                provider=self._name,
            )
        request = self._conversations.get(child_id)
        if request is None:
            raise SubagentError(
                SubagentErrorCode.START_FAILED,
                f"no continuable child {child_id!r} to resume",
                provider=self._name,
            )
        return ScriptedConversation(self, child_id, request, resumed=True)


@final
@dataclass(slots=True)
class ScriptedConversation:
    """A continuable scripted child (a :class:`~subagents.providers.Continuation`)."""

    provider: ScriptedProvider
    child_id: str
    request: SubagentRequest
    resumed: bool = False
    disposed: bool = False
    transcript: list[tuple[str, SubagentOutcome]] = field(
        default_factory=list[tuple[str, SubagentOutcome]]
    )
    """Every turn, in order: (message, outcome)."""

    @property
    def id(self) -> str:
        """Deprecated alias of :attr:`child_id` (removed in the next release)."""
        deprecated_alias(self, "id")
        return self.child_id

    @property
    def outcomes(self) -> tuple[SubagentOutcome, ...]:
        """Every turn's outcome, in order (the first turn's, for a prepared child, first)."""
        return tuple(outcome for _, outcome in self.transcript)

    @property
    def remote_id(self) -> str:
        """The conversation's own id (a scripted child has no other side)."""
        return self.child_id

    async def send(
        self,
        message: str,
        *,
        cancel: CancelSignal | None = None,
        on_progress: Callable[[ProgressEvent], None] | None = None,
    ) -> SubagentOutcome:
        """Run one turn (the script of ``message``) and return its outcome; ``on_progress``
        receives the script's progress events."""
        if self.disposed:
            raise SubagentError(
                SubagentErrorCode.START_FAILED,
                f"child {self.child_id!r} was released: resume it first",
                provider=self.provider.name,
            )
        request = SubagentRequest(
            message,
            description=self.request.description,
            parent_session=self.request.parent_session,
        )
        return await self.turn(
            request,
            cancel=cancel if cancel is not None else CancelSignal(),
            on_progress=on_progress,
        )

    async def dispose(self) -> None:
        """Release the live child (it can be resumed from its id). Idempotent."""
        self.disposed = True

    async def turn(
        self,
        request: SubagentRequest,
        *,
        cancel: CancelSignal,
        on_progress: Callable[[ProgressEvent], None] | None = None,
    ) -> SubagentOutcome:
        """Run ``request``'s script as one turn of this child, recorded in the transcript."""
        run = await self.provider.start_child(request, cancel=cancel, child_id=self.child_id)
        async with run:
            if on_progress is not None:
                async for event in run.progress():
                    try:
                        on_progress(event)
                    except Exception:  # the contract: logged and dropped, the turn goes on
                        logging.getLogger(__name__).exception("a progress callback raised")
            outcome = await run.result()
        self.transcript.append((request.prompt, outcome))
        return outcome
