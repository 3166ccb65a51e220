"""``SubagentService``: the named-provider registry, with capability checks and lifecycle events.

Many providers coexist (an in-process child and an ACP agent process in the same session), so
the service is a registry of providers by name, like an LLM adapter registry, not a single
slot. ``start(name, request, cancel=...)`` checks every requested start-time feature against
the provider's static capabilities before delegating and rejects loudly; it emits
``SubagentStarted`` when a run is published and exactly one ``SubagentEnded`` when it settles
(or is disposed unsettled). A start that fails before publication emits nothing.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import TypeAlias, final

import anyio

from .contract import (
    CancelSignal,
    ProgressEvent,
    SubagentEnded,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentProvider,
    SubagentRequest,
    SubagentRun,
    SubagentStarted,
)

__all__ = ("LifecycleEvent", "LifecycleListener", "SubagentService")

logger = logging.getLogger("subagents.providers")

LifecycleEvent: TypeAlias = SubagentStarted | SubagentEnded
LifecycleListener: TypeAlias = Callable[[LifecycleEvent], None]


@final
class SubagentService:
    """The registry of subagent providers, by unique name."""

    def __init__(self) -> None:
        self._providers: dict[str, SubagentProvider] = {}
        self._listeners: list[LifecycleListener] = []

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

    async def start(
        self, name: str, request: SubagentRequest, *, cancel: CancelSignal | None = None
    ) -> SubagentRun:
        """Check the request against provider ``name``'s capabilities, then start it.

        Raises :class:`SubagentError` before publication: ``UNKNOWN_PROVIDER``,
        ``UNSUPPORTED_CAPABILITY`` (naming the feature and the provider), ``INVALID_REQUEST``,
        ``CANCELLED`` (the signal fired first), or ``START_FAILED``.
        """
        provider = self.provider(name)
        for feature in request.requested_features():
            if not provider.capabilities.supports(feature):
                raise SubagentError(
                    SubagentErrorCode.UNSUPPORTED_CAPABILITY,
                    f"provider {name!r} does not support {feature!r}",
                    provider=name,
                    feature=feature,
                )
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
        try:
            run = await provider.start(request, cancel=signal)
        except SubagentError:
            raise
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            raise SubagentError(
                SubagentErrorCode.START_FAILED,
                f"provider {name!r} failed to start: {type(exc).__name__}: {exc}",
                provider=name,
            ) from exc
        tracked = _TrackedRun(run, name, self._emit)
        self._emit(SubagentStarted(run.id, name, request))
        return tracked


@final
class _TrackedRun:
    """A published run as the service hands it out: emits ``SubagentEnded`` exactly once."""

    def __init__(
        self, run: SubagentRun, provider: str, emit: Callable[[LifecycleEvent], None]
    ) -> None:
        self._run = run
        self._provider = provider
        self._emit = emit
        self._outcome: SubagentOutcome | None = None

    @property
    def id(self) -> str:
        return self._run.id

    def _settle(self, outcome: SubagentOutcome) -> SubagentOutcome:
        if self._outcome is None:
            self._outcome = outcome
            self._emit(SubagentEnded(self._run.id, self._provider, outcome))
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
                self._run.id,
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
                        SubagentOutcome.cancelled(self._run.id, "disposed before it settled")
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
