"""``SubagentService``: the named-provider registry, with capability checks and lifecycle events.

Many providers coexist (an in-process child and an ACP agent process in the same session), so
the service is a registry of providers by name, like an LLM adapter registry, not a single
slot. ``start(name, request, cancel=...)`` checks every requested start-time feature against
the provider's static capabilities before delegating and rejects loudly; it emits
``SubagentStarted`` when a run is published and exactly one ``SubagentEnded`` when it settles
(or is disposed unsettled). A start that fails before publication emits nothing.

The service mints every child id (unique for its lifetime; the provider's own id of the
child is ``remote_id``), and continuable children go through the same gate
(:meth:`SubagentService.start_continuable`) and get the same lifecycle pair.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from types import TracebackType
from typing import TypeAlias, TypeVar, cast, final

import anyio

from .contract import (
    CancelSignal,
    ContinuableProvider,
    Continuation,
    ProgressEvent,
    SubagentEnded,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentProvider,
    SubagentRequest,
    SubagentRun,
    SubagentStarted,
    deprecated_alias,
    new_child_id,
)

__all__ = ("LifecycleEvent", "LifecycleListener", "SubagentService")

logger = logging.getLogger("subagents.providers")

LifecycleEvent: TypeAlias = SubagentStarted | SubagentEnded
LifecycleListener: TypeAlias = Callable[[LifecycleEvent], None]
_T = TypeVar("_T")


@final
class SubagentService:
    """The registry of subagent providers, by unique name."""

    def __init__(self) -> None:
        self._providers: dict[str, SubagentProvider] = {}
        self._listeners: list[LifecycleListener] = []
        self._issued: set[str] = set()

    # -- registry

    def register(self, provider: SubagentProvider) -> None:
        """Add ``provider`` under its name; a name already taken is refused."""
        name = provider.name
        if name in self._providers:
            raise SubagentError(
                SubagentErrorCode.DUPLICATE_PROVIDER,
                f"a subagent provider named {name!r} is already registered",
                provider=name,
            )
        self._providers[name] = provider

    def unregister(self, name: str) -> SubagentProvider:
        """Remove and return the provider registered under ``name`` (runs already started
        keep running: they belong to their callers)."""
        try:
            return self._providers.pop(name)
        except KeyError:
            raise self._unknown(name) from None

    def provider(self, name: str) -> SubagentProvider:
        try:
            return self._providers[name]
        except KeyError:
            raise self._unknown(name) from None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._providers)

    def _unknown(self, name: str) -> SubagentError:
        known = ", ".join(sorted(self._providers)) or "none"
        return SubagentError(
            SubagentErrorCode.UNKNOWN_PROVIDER,
            f"no subagent provider named {name!r} (registered: {known})",
            provider=name,
        )

    # -- lifecycle

    def subscribe(self, listener: LifecycleListener) -> Callable[[], None]:
        """Call ``listener`` with every lifecycle event; returns the unsubscribe function."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def _emit(self, event: LifecycleEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                logger.exception("subagent lifecycle listener failed on %r", event)

    # -- delegation

    def _mint(self, name: str) -> str:
        """A child id never handed out by this service before."""
        while True:
            child_id = new_child_id(name)
            if child_id not in self._issued:
                self._issued.add(child_id)
                return child_id

    def _gate(
        self, name: str, request: SubagentRequest, cancel: CancelSignal | None
    ) -> tuple[SubagentProvider, CancelSignal]:
        """The one check every way in passes before anything starts: the provider exists,
        every requested start-time feature is advertised, the prompt is not empty, the signal
        has not fired."""
        provider = self.provider(name)
        provider.capabilities.check(request, provider=name)
        if not request.prompt.strip():
            raise SubagentError(
                SubagentErrorCode.INVALID_REQUEST, "the prompt is empty", provider=name
            )
        signal = cancel if cancel is not None else CancelSignal()
        if signal.cancelled:
            raise SubagentError(
                SubagentErrorCode.CANCELLED,
                f"cancelled before the start: {signal.reason}",
                provider=name,
            )
        return provider, signal

    async def start(
        self, name: str, request: SubagentRequest, *, cancel: CancelSignal | None = None
    ) -> SubagentRun:
        """Check the request against provider ``name``'s capabilities, then start it.

        The service mints the run's id (``run.child_id``, unique for the service's lifetime whatever
        the provider's side returns; the provider's own id of the child is ``run.remote_id``).
        Raises :class:`SubagentError` before publication: ``UNKNOWN_PROVIDER``,
        ``UNSUPPORTED_CAPABILITY`` (naming the feature and the provider), ``INVALID_REQUEST``,
        ``CANCELLED`` (the signal fired first), or ``START_FAILED``.
        """
        provider, signal = self._gate(name, request, cancel)
        child_id = self._mint(name)
        request = replace(request, child_id=child_id)
        run = await _wrapping_bugs(name, "start", provider.start(request, cancel=signal))
        tracked = _TrackedRun(run, name, child_id, self._emit)
        self._emit(SubagentStarted(child_id, name, request, tracked.remote_id))
        return tracked

    async def start_continuable(
        self, name: str, request: SubagentRequest, *, cancel: CancelSignal | None = None
    ) -> Continuation:
        """Start a continuable child on provider ``name`` (its first turn is ``request``),
        through the same gate as :meth:`start`; the same lifecycle pair: started once it is
        open, ended when it is disposed (with its last turn's outcome). A provider's bug (an
        exception that is no ``SubagentError``) raises ``START_FAILED``, as in :meth:`start`."""
        provider, signal = self._gate(name, request, cancel)
        continuable = self._continuable(provider)
        child_id = self._mint(name)
        request = replace(request, child_id=child_id)
        continuation = await _wrapping_bugs(
            name, "start", continuable.prepare_continuable(request, cancel=signal)
        )
        return self._publish_continuation(continuation, name, child_id, request)

    async def resume_continuable(
        self,
        name: str,
        remote_id: str,
        *,
        child_id: str,
        cancel: CancelSignal | None = None,
    ) -> Continuation:
        """Cold-resume the continuable child ``child_id`` (its remote id ``remote_id``) on
        provider ``name``; it keeps ``child_id`` and has a lifecycle pair of its own. A
        provider's bug raises ``START_FAILED``, as in :meth:`start`."""
        signal = cancel if cancel is not None else CancelSignal()
        continuable = self._continuable(self.provider(name))
        self._issued.add(child_id)
        continuation = await _wrapping_bugs(
            name,
            "resume",
            continuable.resume_continuable(remote_id, cancel=signal, child_id=child_id),
        )
        request = SubagentRequest("", description="cold resume", child_id=child_id)
        return self._publish_continuation(continuation, name, child_id, request)

    def _continuable(self, provider: SubagentProvider) -> ContinuableProvider:
        if not isinstance(provider, ContinuableProvider):
            raise SubagentError(
                SubagentErrorCode.UNSUPPORTED_CAPABILITY,
                f"provider {provider.name!r} cannot continue children (no prepare_continuable)",
                provider=provider.name,
                feature="continuable",
            )
        return provider

    def _publish_continuation(
        self, continuation: Continuation, name: str, child_id: str, request: SubagentRequest
    ) -> Continuation:
        tracked = _TrackedContinuation(continuation, name, child_id, self._emit)
        self._emit(SubagentStarted(child_id, name, request, tracked.remote_id))
        return tracked


async def _wrapping_bugs(name: str, what: str, call: Awaitable[_T]) -> _T:
    """Await provider ``name``'s ``call`` (its way to ``what`` a child): what every way into
    the service does alike. A ``SubagentError`` and the caller's cancellation pass through;
    any other exception is the provider's bug, raised as ``SubagentError(START_FAILED)``
    naming the provider and the exception (kept as the cause)."""
    try:
        return await call
    except SubagentError:
        raise
    except anyio.get_cancelled_exc_class():
        raise
    except Exception as exc:
        raise SubagentError(
            SubagentErrorCode.START_FAILED,
            f"provider {name!r} failed to {what}: {type(exc).__name__}: {exc}",
            provider=name,
        ) from exc


def _remote_id_of(child: object, child_id: str) -> str | None:
    """A run's or continuation's own id of the child, when it reports one."""
    remote: object = getattr(child, "remote_id", None)
    if isinstance(remote, str) and remote:
        return remote
    own: object = getattr(child, "child_id", None)
    if own is None:  # written before the rename: only ``id``
        own = getattr(child, "id", None)
    return own if isinstance(own, str) and own and own != child_id else None


def _as_child(outcome: SubagentOutcome, child_id: str) -> SubagentOutcome:
    """``outcome`` naming the id the service minted."""
    return outcome if outcome.child_id == child_id else replace(outcome, child_id=child_id)


@final
class _TrackedRun:
    """A published run as the service hands it out: known by the id the service minted;
    emits ``SubagentEnded`` exactly once."""

    def __init__(
        self,
        run: SubagentRun,
        provider: str,
        child_id: str,
        emit: Callable[[LifecycleEvent], None],
    ) -> None:
        self._run = run
        self._provider = provider
        self._child_id = child_id
        self._emit = emit
        self._outcome: SubagentOutcome | None = None

    @property
    def child_id(self) -> str:
        return self._child_id

    @property
    def id(self) -> str:
        """Deprecated alias of :attr:`child_id` (removed in the next release)."""
        deprecated_alias(self, "id")
        return self.child_id

    @property
    def remote_id(self) -> str | None:
        """The provider's own id of the child (session, thread), when it reports one."""
        return _remote_id_of(self._run, self._child_id)

    def _settle(self, outcome: SubagentOutcome) -> SubagentOutcome:
        if self._outcome is None:
            self._outcome = _as_child(outcome, self._child_id)
            self._emit(SubagentEnded(self._child_id, self._provider, self._outcome))
        return self._outcome

    async def result(self) -> SubagentOutcome:
        if self._outcome is not None:
            return self._outcome
        try:
            outcome = await self._run.result()
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            # A provider broke the contract (result() must not raise): keep the child id and
            # the cause rather than lose the run.
            outcome = SubagentOutcome.failed(
                self._child_id,
                "infrastructure",
                f"provider {self._provider!r} result() raised {type(exc).__name__}: {exc}",
                exc,
            )
        return self._settle(outcome)

    async def dispose(self) -> None:
        try:
            await self._run.dispose()
        finally:
            if self._outcome is None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(1.0):
                    await self.result()
                if self._outcome is None:
                    self._settle(
                        SubagentOutcome.cancelled(self._child_id, "disposed before it settled")
                    )

    def progress(self) -> AsyncIterator[ProgressEvent] | None:
        return self._run.progress()

    async def __aenter__(self) -> _TrackedRun:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> None:
        await self.dispose()


@final
class _TrackedContinuation:
    """A continuable child as the service hands it out: known by the id the service minted;
    emits ``SubagentEnded`` (its last turn's outcome) exactly once, when disposed."""

    def __init__(
        self,
        continuation: Continuation,
        provider: str,
        child_id: str,
        emit: Callable[[LifecycleEvent], None],
    ) -> None:
        self._inner = continuation
        self._provider = provider
        self._child_id = child_id
        self._emit = emit
        self._ended = False
        # Before its ``outcomes`` was part of the contract, a continuation might not have it:
        # then the first turn's outcome is unknown here.
        outcomes: object = getattr(continuation, "outcomes", None)
        self._outcomes: list[SubagentOutcome] = (
            [_as_child(o, child_id) for o in cast("Sequence[SubagentOutcome]", outcomes)]
            if isinstance(outcomes, Sequence)
            else []
        )

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
        return _remote_id_of(self._inner, self._child_id) or ""

    @property
    def outcomes(self) -> Sequence[SubagentOutcome]:
        """The outcome of every turn so far through this handle, in order (the first turn's
        first, for a child started with :meth:`SubagentService.start_continuable`)."""
        return tuple(self._outcomes)

    async def send(
        self,
        message: str,
        *,
        cancel: CancelSignal | None = None,
        on_progress: Callable[[ProgressEvent], None] | None = None,
    ) -> SubagentOutcome:
        outcome = _as_child(
            await self._inner.send(message, cancel=cancel, on_progress=on_progress),
            self._child_id,
        )
        self._outcomes.append(outcome)
        return outcome

    async def dispose(self) -> None:
        try:
            await self._inner.dispose()
        finally:
            if not self._ended:
                self._ended = True
                last = (
                    self._outcomes[-1]
                    if self._outcomes
                    else SubagentOutcome.cancelled(self._child_id, "closed before any turn")
                )
                self._emit(SubagentEnded(self._child_id, self._provider, last))
