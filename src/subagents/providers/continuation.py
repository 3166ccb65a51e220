"""The continuation manager: later messages to continuable children, with cold resume.

A one-shot :class:`~subagents.providers.SubagentRun` has no steering or resume; a child that
must hear from its parent again is started through a provider's ``prepare_continuable``
(see :class:`~subagents.providers.ContinuableProvider`). The manager keeps the live
continuations by child id and remembers which provider owns each id (``known()`` is what to
persist); a message for a child whose live handle is gone (disposed, or this process
restarted) cold-resumes it through the provider's ``resume_continuable``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import final

import anyio

from .contract import (
    CancelSignal,
    ContinuableProvider,
    Continuation,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentRequest,
)
from .service import SubagentService

__all__ = ("ContinuationManager",)


@final
class ContinuationManager:
    """Owns continuable children: ``async with ContinuationManager(service) as children``."""

    def __init__(self, service: SubagentService, *, known: Mapping[str, str] | None = None) -> None:
        self._service = service
        self._live: dict[str, Continuation] = {}
        self._owner: dict[str, str] = dict(known or {})

    def known(self) -> dict[str, str]:
        """Child id -> provider name, for every child this manager can continue (persist it)."""
        return dict(self._owner)

    def _provider(self, name: str) -> ContinuableProvider:
        provider = self._service.provider(name)
        if not isinstance(provider, ContinuableProvider):
            raise SubagentError(
                SubagentErrorCode.UNSUPPORTED_CAPABILITY,
                f"provider {name!r} cannot continue children (no prepare_continuable)",
                provider=name,
                feature="continuable",
            )
        return provider

    async def start(
        self, provider: str, request: SubagentRequest, *, cancel: CancelSignal | None = None
    ) -> Continuation:
        """Start a continuable child on ``provider``; returns its live continuation."""
        target = self._provider(provider)
        continuation = await target.prepare_continuable(request, cancel=cancel or CancelSignal())
        self._live[continuation.id] = continuation
        self._owner[continuation.id] = provider
        return continuation

    async def deliver(
        self, child_id: str, message: str, *, cancel: CancelSignal | None = None
    ) -> SubagentOutcome:
        """Send ``message`` to the child, cold-resuming it when it is not live."""
        continuation = self._live.get(child_id)
        if continuation is None:
            provider = self._owner.get(child_id)
            if provider is None:
                raise SubagentError(
                    SubagentErrorCode.INVALID_REQUEST, f"no continuable child {child_id!r}"
                )
            continuation = await self._provider(provider).resume_continuable(
                child_id, cancel=cancel or CancelSignal()
            )
            self._live[child_id] = continuation
        return await continuation.send(message, cancel=cancel)

    async def release(self, child_id: str) -> None:
        """Dispose the live child; it stays known, so a later message resumes it cold."""
        continuation = self._live.pop(child_id, None)
        if continuation is not None:
            await continuation.dispose()

    async def aclose(self) -> None:
        """Dispose every live child (shielded); all stay known for cold resume."""
        with anyio.CancelScope(shield=True):
            errors: list[Exception] = []
            for child_id in list(self._live):
                try:
                    await self.release(child_id)
                except Exception as exc:
                    errors.append(exc)
            if errors:
                raise ExceptionGroup("disposing continuable children failed", errors)

    async def __aenter__(self) -> ContinuationManager:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
