"""What every provider of child processes shares (ACP agents, Codex app-servers).

- :class:`ChildRun`: a published child with one turn: the start (publication, or why it
  failed), the settling of its one outcome, its progress feed, and ``dispose()``;
- :class:`ChildConversation`: a continuable child whose session stays open, each message a
  new turn, served one at a time by the child's task;
- :class:`ChildProvider`: the provider's task group (it owns its children's tasks), and how a
  run or a conversation is started, published and handed back (or disposed of when the start
  fails or is cancelled).

Each protocol's provider keeps only what differs: its ids (session or thread), its connection
and how one turn runs.
"""

from __future__ import annotations

import abc
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from types import TracebackType
from typing import Any, ClassVar, Generic, Self, TypeVar, cast

import anyio
import anyio.abc

from .._cancellation import passes_through
from .._exception_groups import sole_leaf
from .._owned import OwnedTaskGroup
from ..transports.process import AgentProcess, kill_process_group, process_group_alive
from .contract import (
    CancelSignal,
    ProgressEvent,
    SubagentCapabilities,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentRequest,
    bounded_partial,
    deprecated_alias,
    new_child_id,
)
from .permissions import PermissionAsker, RunAware
from .progress import ProgressFeed

__all__ = ("ChildConversation", "ChildProvider", "ChildRun")

logger = logging.getLogger("subagents.providers")

ProviderT = TypeVar("ProviderT")
_RunT = TypeVar("_RunT", bound="ChildRun[Any]")
_ConversationT = TypeVar("_ConversationT", bound="ChildConversation")

Turn = Callable[[str, CancelSignal, ProgressFeed], Awaitable[SubagentOutcome]]
"""Runs one message as a turn of an open session (its progress into the feed) and maps its end
to an outcome."""

_Job = tuple[
    str, CancelSignal, Callable[[ProgressEvent], None] | None, list[SubagentOutcome], anyio.Event
]
_RequestT = TypeVar("_RequestT")
_DecisionT = TypeVar("_DecisionT")
Asker = Callable[[], PermissionAsker]
"""Says who asks, when a permission request comes (see :meth:`ChildRun.asker`)."""


def _describe(exc: BaseException, expected: tuple[type[BaseException], ...]) -> str:
    """What ``exc`` says, with its type named when it was not one of the ``expected``."""
    if isinstance(exc, expected):
        return str(exc)
    return f"unexpected {type(exc).__name__} inside the run: {exc}"


class _Quiescence:
    """How ``dispose()`` keeps its promise: wait for the child's task within the polite bound,
    then escalate (SIGKILL the process groups the child started), and raise
    ``DISPOSE_INCOMPLETE`` naming what survived; never a silent return."""

    _KILL_GRACE: ClassVar[float] = 2.0

    def __init__(self, bound: float) -> None:
        self.bound = bound
        self.finished = anyio.Event()
        self.process_groups: list[int] = []

    def track(self, process: AgentProcess | None) -> None:
        """The child runs in ``process`` (its own process group)."""
        if process is not None:
            self.process_groups.append(process.pid)

    async def wait(self, child_id: str, provider: str, stop: anyio.CancelScope | None) -> None:
        killed: list[int] = []
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(self.bound):
                await self.finished.wait()
            if self.finished.is_set():
                return
            if stop is not None:
                stop.cancel()  # without waiting on the child's cooperation
            killed = [pgid for pgid in self.process_groups if kill_process_group(pgid)]
            with anyio.move_on_after(self._KILL_GRACE):
                await self.finished.wait()
        survivors: list[str] = []
        if not self.finished.is_set():
            survivors.append(
                f"its task still runs {self.bound:g} s after it was cancelled (something in "
                "it ignores cancellation)"
            )
        alive = [pgid for pgid in self.process_groups if process_group_alive(pgid)]
        if alive:
            survivors.append(f"process group(s) {alive} survived SIGKILL")
        if survivors:
            raise SubagentError(
                SubagentErrorCode.DISPOSE_INCOMPLETE,
                f"dispose() of {child_id} escalated and something survived: "
                + "; ".join(survivors),
                provider=provider,
            )
        if killed:
            logger.warning(
                "dispose() of %s: process group(s) %s were killed (SIGKILL) past the bound",
                child_id,
                killed,
            )


class ChildRun(abc.ABC, Generic[ProviderT]):
    """A published child: one session, one turn (``provider`` names the provider; the run's
    id is the one the service minted, or a fresh one; the protocol's id of the child is
    :attr:`remote_id`)."""

    _dispose_bound: ClassVar[float]
    """Default bound on waiting for the run's task (including the child's shutdown ladder) to
    end before ``dispose()`` escalates."""
    _failures: ClassVar[tuple[type[BaseException], ...]]
    """What a start (or a live connection) is expected to fail with: a start error before
    publication, a ``failed`` (infrastructure) outcome after it. Anything else fails the same
    way, named as unexpected: one run's fault never escapes to its siblings."""

    def __init__(
        self,
        provider: str,
        progress_capacity: int,
        child_id: str | None = None,
        *,
        dispose_bound: float | None = None,
    ) -> None:
        self._provider = provider
        self._child_id = child_id or new_child_id(provider)
        self._published = anyio.Event()
        self._phase = anyio.Event()  # set on publication, or when the task ends first
        self._settled = anyio.Event()
        self._release = anyio.Event()
        self._outcome: SubagentOutcome | None = None
        self._start_error: BaseException | None = None
        self._feed = ProgressFeed(progress_capacity)
        self._scope: anyio.CancelScope | None = None
        self._cancel: CancelSignal | None = None
        self._disposed = False
        self._quiescence = _Quiescence(
            dispose_bound if dispose_bound is not None else self._dispose_bound
        )
        self._finished = self._quiescence.finished

    @abc.abstractmethod
    def _child_key(self) -> str:
        """The protocol's id of the child (its session or thread), empty before publication."""

    @abc.abstractmethod
    async def _run(
        self, provider: ProviderT, request: SubagentRequest, cancel: CancelSignal
    ) -> None:
        """Spawn, open the session, :meth:`_publish`, run the turn, then :meth:`_conclude`."""

    async def _stop_turn(self) -> None:
        """Called by ``dispose()`` while the turn still runs, before the run's task is
        cancelled (nothing by default)."""

    def _on_task_end(self) -> None:
        """Called first when the run's task ends (nothing by default)."""

    def _track_process(self, process: AgentProcess | None) -> None:
        """The child runs in ``process``: ``dispose()`` kills its group if it must escalate."""
        self._quiescence.track(process)

    @property
    def child_id(self) -> str:
        return self._child_id

    @property
    def id(self) -> str:
        """Deprecated alias of :attr:`child_id` (removed in the next release)."""
        deprecated_alias(self, "id")
        return self.child_id

    @property
    def remote_id(self) -> str:
        """The protocol's id of the child (session, thread); empty before publication."""
        return self._child_key()

    def asker(self) -> PermissionAsker:
        """Who asks, for a permission policy (:class:`~subagents.providers.RunAware`)."""
        return PermissionAsker(self.child_id, self._provider, self._child_key())

    @property
    def published(self) -> bool:
        """Whether the session exists (the run was handed to the caller)."""
        return self._published.is_set()

    @property
    def start_error(self) -> BaseException | None:
        """Why the start failed, when it did."""
        return self._start_error

    def start_error_code(self) -> SubagentErrorCode:
        """The stable code of the start failure (a transport may say more than START_FAILED)."""
        return SubagentErrorCode.START_FAILED

    def describe_start_error(self) -> str:
        """Why the start failed, for the ``SubagentError`` (an unexpected error is named)."""
        error = self._start_error
        return "" if error is None else _describe(error, self._failures)

    async def wait_started(self) -> None:
        """Return once the run is published or its start failed."""
        await self._phase.wait()

    async def result(self) -> SubagentOutcome:
        await self._settled.wait()
        assert self._outcome is not None
        return self._outcome

    def progress(self) -> AsyncIterator[ProgressEvent] | None:
        return self._feed

    async def dispose(self) -> None:
        self._disposed = True
        self._release.set()
        with anyio.CancelScope(shield=True):
            if not self._settled.is_set():
                self._settle(
                    SubagentOutcome.cancelled(self.child_id, "disposed before the turn ended")
                )
                if self._cancel is not None:
                    self._cancel.cancel("the run was disposed")
                await self._stop_turn()
                if self._scope is not None:
                    self._scope.cancel()
        await self._quiescence.wait(self.child_id, self._provider, self._scope)

    def _settle(self, outcome: SubagentOutcome) -> None:
        if self._outcome is None:
            if outcome.status != "completed" and outcome.output is None:
                partial = bounded_partial(self._feed.streamed_text)
                if partial is not None:
                    outcome = replace(outcome, output=partial)
            self._outcome = outcome
            self._feed.close()
            self._settled.set()

    def _publish(self) -> None:
        """The session exists: hand the run to the caller."""
        self._published.set()
        self._phase.set()

    async def _conclude(self, outcome: SubagentOutcome) -> None:
        """The turn ended with ``outcome``: settle, and keep the child until disposed."""
        self._settle(outcome)
        await self._release.wait()

    async def drive(
        self, provider: ProviderT, request: SubagentRequest, cancel: CancelSignal
    ) -> None:
        """The run's task (owned by the provider): spawn, session, turn, then wait for dispose.

        Whatever goes wrong inside stays inside: an exception (expected or not) fails the
        start before publication, or settles the run ``failed`` (infrastructure, the
        exception kept as the cause) after it. So does a ``BaseException`` that is no
        ``Exception`` (``KeyboardInterrupt``, ``SystemExit``, a stray ``CancelledError``:
        the child's code raised it), unless it is a real cancellation of a scope around the
        run (its own, the provider's, the caller's), which passes through."""
        self._cancel = cancel.child()
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                await self._run(provider, request, self._cancel)
        except BaseException as exc:
            if passes_through(exc):
                raise
            cause = sole_leaf(exc)
            if not self._published.is_set():
                self._start_error = cause
            else:
                message = _describe(cause, self._failures)
                self._settle(
                    SubagentOutcome.failed(self.child_id, "infrastructure", message, cause)
                )
        finally:
            self._on_task_end()
            if self._published.is_set():
                self._settle(SubagentOutcome.cancelled(self.child_id, "the provider closed"))
            self._feed.close()
            self._phase.set()
            self._finished.set()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> None:
        await self.dispose()


class ChildConversation(abc.ABC):
    """A continuable child: one session, kept open; each :meth:`send` is a new turn, run by
    the child's task (owned by the provider) one at a time."""

    _dispose_bound: ClassVar[float]
    """Bound on waiting for the child's task (including its shutdown ladder) to end before
    ``dispose()`` escalates."""

    def __init__(
        self, provider: str, child_id: str | None = None, *, dispose_bound: float | None = None
    ) -> None:
        self._provider_name = provider
        self._child_id = child_id or new_child_id(provider)
        self._ready = False
        self._phase = anyio.Event()  # set once the session is open, or when the task ends first
        self._failure: BaseException | None = None
        self._scope: anyio.CancelScope | None = None
        self._quiescence = _Quiescence(
            dispose_bound if dispose_bound is not None else self._dispose_bound
        )
        self._finished = self._quiescence.finished
        # Unbuffered: a message is handed over only when the driver takes it, so it is
        # answered, or its sender fails when the driver is gone.
        send, receive = anyio.create_memory_object_stream[_Job](0)
        self._in_progress: anyio.Event | None = None
        self._jobs_in = send
        self._jobs_out = receive
        self.outcomes: list[SubagentOutcome] = []
        """The outcome of every turn so far, in order."""

    @abc.abstractmethod
    def _child_key(self) -> str:
        """The protocol's id of the child (its session or thread)."""

    @abc.abstractmethod
    async def _converse(self) -> None:
        """Spawn, open (or reopen) the session, then :meth:`_serve` its turns."""

    @abc.abstractmethod
    def _not_opened(self) -> str:
        """What failed when the session could not be opened (the start error's message)."""

    def _start_error_code(self, failure: BaseException | None) -> SubagentErrorCode:
        return SubagentErrorCode.START_FAILED

    def _track_process(self, process: AgentProcess | None) -> None:
        """The child runs in ``process``: ``dispose()`` kills its group if it must escalate."""
        self._quiescence.track(process)

    async def wait_ready(self) -> None:
        """Return once the session exists, or raise why it could not be opened."""
        await self._phase.wait()
        if not self._ready:
            failure = self._failure
            raise SubagentError(
                self._start_error_code(failure),
                f"{self._not_opened()}: {failure}",
                provider=self._provider_name,
            ) from failure

    @property
    def child_id(self) -> str:
        return self._child_id

    @property
    def id(self) -> str:
        """Deprecated alias of :attr:`child_id` (removed in the next release)."""
        deprecated_alias(self, "id")
        return self.child_id

    @property
    def remote_id(self) -> str:
        return self._child_key()

    def asker(self) -> PermissionAsker:
        """Who asks, for a permission policy (:class:`~subagents.providers.RunAware`)."""
        return PermissionAsker(self.child_id, self._provider_name, self._child_key())

    def _gone(self) -> SubagentOutcome:
        failure = self._failure
        what = "" if failure is None else _describe(failure, (Exception,))
        return SubagentOutcome.failed(
            self.child_id, "infrastructure", f"the child is gone: {what}", failure
        )

    async def send(
        self,
        message: str,
        *,
        cancel: CancelSignal | None = None,
        on_progress: Callable[[ProgressEvent], None] | None = None,
    ) -> SubagentOutcome:
        if self._finished.is_set():
            return self._gone()
        slot: list[SubagentOutcome] = []
        done = anyio.Event()
        try:
            await self._jobs_in.send((message, cancel or CancelSignal(), on_progress, slot, done))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return self._gone()  # never handed over: no turn
        await done.wait()
        return slot[0] if slot else self._lost()

    def _lost(self) -> SubagentOutcome:
        """The failed outcome of a turn handed to the child that went away (a turn cut
        short, recorded like every turn's)."""
        outcome = self._gone()
        self.outcomes.append(outcome)
        return outcome

    async def dispose(self) -> None:
        self._jobs_in.close()
        await self._quiescence.wait(self.child_id, self._provider_name, self._scope)

    async def _serve(self, turn: Turn) -> None:
        """The session is open: run each message sent as a ``turn``, until disposed. A turn's
        outcome that is not ``completed`` carries the text it streamed (partial output)."""
        self._ready = True
        self._phase.set()
        async for message, cancel, on_progress, slot, done in self._jobs_out:
            self._in_progress = done
            feed = ProgressFeed(1, on_push=on_progress)
            outcome = await turn(message, cancel, feed)
            if outcome.status != "completed" and outcome.output is None:
                partial = bounded_partial(feed.streamed_text)
                if partial is not None:
                    outcome = replace(outcome, output=partial)
            self.outcomes.append(outcome)
            slot.append(outcome)
            done.set()

    async def drive(self) -> None:
        """The child's task (owned by the provider)."""
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                await self._converse()
        except BaseException as exc:  # the start failed, or the child went away: report it
            if passes_through(exc):
                raise
            self._failure = sole_leaf(exc)  # as ChildRun.drive: the child's code raised it
        finally:
            self._jobs_out.close()  # senders still waiting fail at once
            if self._in_progress is not None:
                self._in_progress.set()  # a turn cut short: its sender sees the failure
            self._phase.set()
            self._finished.set()


class ChildProvider:
    """Owns its children's tasks in a task group, entered with ``async with provider``."""

    _what: ClassVar[str]
    """The provider's class name, for messages (``"AcpProvider"``)."""
    _progress_capacity: int
    """How many progress events a run's feed holds for a lagging reader."""

    def __init__(self, name: str, *, dispose_timeout: float | None = None) -> None:
        self._name = name
        article = "an" if self._what[:1] in "AEIOU" else "a"
        self._owned = OwnedTaskGroup(f"{article} {self._what}")
        self._closed = False
        self.dispose_timeout = dispose_timeout
        """Bound on a child's polite shutdown before ``dispose()`` escalates (``None``: the
        provider's default)."""
        self._conversations: weakref.WeakValueDictionary[str, ChildConversation] = (
            weakref.WeakValueDictionary()
        )
        """The continuable children this provider started and their handles still exist, by
        child id: a resume by child id finds their remote id."""

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> SubagentCapabilities:
        raise NotImplementedError

    def _new_run(self, run_class: type[_RunT], request: SubagentRequest) -> _RunT:
        """A run of ``run_class`` for ``request``: its id (the service's, else a fresh one),
        this provider's progress capacity and dispose bound."""
        return run_class(
            self._name,
            self._progress_capacity,
            self._child_id(request),
            dispose_bound=self.dispose_timeout,
        )

    def _child_id(self, request: SubagentRequest) -> str:
        """The id of a new child: the one the service minted, else a fresh one."""
        return request.child_id or new_child_id(self._name)

    def _check_request(self, request: SubagentRequest, cancel: CancelSignal) -> None:
        """What every way in checks before anything starts: the provider is open, every
        requested start-time feature is advertised (never accepted-then-ignored, even when
        the provider is called directly), and the signal has not fired."""
        self._check_open()
        self.capabilities.check(request, provider=self._name)
        self._check_not_cancelled(cancel)

    def _policy_for(
        self, policy: Callable[[_RequestT], Awaitable[_DecisionT]], asker: Asker | None
    ) -> Callable[[_RequestT], Awaitable[_DecisionT]]:
        """``policy`` as one child uses it: a :class:`RunAware` one is told who asks."""
        candidate: object = policy
        if isinstance(candidate, RunAware) and asker is not None:
            aware = cast("RunAware[_RequestT, _DecisionT]", candidate)
            return aware.bind(asker)
        return policy

    def _resume_ids(self, remote_id: str, child_id: str | None) -> tuple[str, str]:
        """``(child id, remote id)`` of a cold resume: ``remote_id`` may also be the child id
        of a child this provider started (it knows its remote id)."""
        known = self._conversations.get(remote_id)
        if known is not None and known.remote_id:
            return child_id or remote_id, known.remote_id
        return child_id or new_child_id(self._name), remote_id

    async def __aenter__(self) -> Self:
        await self._owned.open(closed=self._closed)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        self._closed = True
        group = self._owned.group
        assert group is not None
        group.cancel_scope.cancel()
        return await self._owned.close(exc_type, exc, traceback)

    def _check_open(self) -> anyio.abc.TaskGroup:
        group = self._owned.group
        if group is None:
            raise SubagentError(
                SubagentErrorCode.START_FAILED,
                f"the {self._what} is not open (use `async with provider`)",
                provider=self._name,
            )
        return group

    def _check_not_cancelled(self, cancel: CancelSignal) -> None:
        if cancel.cancelled:
            raise SubagentError(
                SubagentErrorCode.CANCELLED, f"cancelled: {cancel.reason}", provider=self._name
            )

    def _cancelled_during_start(self, cancel: CancelSignal) -> SubagentError:
        return SubagentError(
            SubagentErrorCode.CANCELLED,
            f"cancelled during the start: {cancel.reason}",
            provider=self._name,
        )

    async def _start_run(
        self,
        run: _RunT,
        request: SubagentRequest,
        cancel: CancelSignal,
        *,
        what: str,
    ) -> _RunT:
        """Start ``run``'s task and hand the run back once published; dispose of it and raise
        when the start is cancelled or fails (``what`` names the child in that error)."""
        group = self._owned.group
        assert group is not None
        group.start_soon(run.drive, self, request, cancel)
        with cancel.linked_scope() as scope:
            await run.wait_started()
        if scope.cancelled_caught or (cancel.cancelled and not run.published):
            await run.dispose()
            raise self._cancelled_during_start(cancel)
        if not run.published:
            raise SubagentError(
                run.start_error_code(),
                f"{what} did not start: {run.describe_start_error()}",
                provider=self._name,
            ) from run.start_error
        return run

    async def _open_conversation(
        self, make: Callable[[], _ConversationT], cancel: CancelSignal
    ) -> _ConversationT:
        """Start the task of the conversation ``make`` makes and hand it back once its session
        is open; dispose of it when that fails or is cancelled."""
        group = self._check_open()
        conversation = make()
        group.start_soon(conversation.drive)
        try:
            with cancel.linked_scope() as scope:
                await conversation.wait_ready()
        except SubagentError:
            await conversation.dispose()
            raise
        if scope.cancelled_caught:
            await conversation.dispose()
            raise self._cancelled_during_start(cancel)
        self._conversations[conversation.child_id] = conversation  # its remote id may come later
        return conversation
