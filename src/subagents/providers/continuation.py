"""The continuation manager: later messages to continuable children, with cold resume.

A one-shot :class:`~subagents.providers.SubagentRun` has no steering or resume; a child that
must hear from its parent again is started through a provider's ``prepare_continuable``
(see :class:`~subagents.providers.ContinuableProvider`), always through the service
(:meth:`~subagents.providers.SubagentService.start_continuable`): the same start-time gate
and the same lifecycle pair as a one-shot run. The manager keeps the live continuations by
child id (minted by the service) and remembers, for each, which provider owns it and its
remote id (``known()`` is what to persist); a message for a child whose live handle is gone
(released, or this process restarted) cold-resumes it through the provider's
``resume_continuable``, under the same child id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import final

import anyio

from ..protocol.jsonrpc import JsonValue
from .contract import (
    CancelSignal,
    Continuation,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentRequest,
    child_id_of,
)
from .service import SubagentService

__all__ = ("ContinuationManager", "KnownChild")


@final
@dataclass(frozen=True, slots=True)
class KnownChild:
    """What a cold resume of a child needs: its provider's name and its remote id."""

    provider: str
    remote_id: str

    def to_json(self) -> dict[str, JsonValue]:
        return {"provider": self.provider, "remote_id": self.remote_id}

    @classmethod
    def from_json(cls, data: Mapping[str, JsonValue]) -> KnownChild:
        provider, remote_id = data.get("provider"), data.get("remote_id")
        if not isinstance(provider, str) or not isinstance(remote_id, str):
            raise ValueError(f"not a known child: {dict(data)!r}")
        return cls(provider, remote_id)


@final
class ContinuationManager:
    """Owns continuable children: ``async with ContinuationManager(service) as children``."""

    def __init__(
        self, service: SubagentService, *, known: Mapping[str, KnownChild] | None = None
    ) -> None:
        self._service = service
        self._live: dict[str, Continuation] = {}
        self._known: dict[str, KnownChild] = dict(known or {})

    def known(self) -> dict[str, KnownChild]:
        """Child id -> provider and remote id, for every child this manager can continue
        (persist it: a new manager given it continues the same children)."""
        return dict(self._known)

    async def start(
        self, provider: str, request: SubagentRequest, *, cancel: CancelSignal | None = None
    ) -> Continuation:
        """Start a continuable child on ``provider``; returns its live continuation."""
        continuation = await self._service.start_continuable(provider, request, cancel=cancel)
        child_id = child_id_of(continuation)
        self._live[child_id] = continuation
        self._known[child_id] = KnownChild(provider, continuation.remote_id)
        return continuation

    async def deliver(
        self, child_id: str, message: str, *, cancel: CancelSignal | None = None
    ) -> SubagentOutcome:
        """Send ``message`` to the child, cold-resuming it when it is not live."""
        continuation = self._live.get(child_id)
        if continuation is None:
            known = self._known.get(child_id)
            if known is None:
                raise SubagentError(
                    SubagentErrorCode.INVALID_REQUEST, f"no continuable child {child_id!r}"
                )
            continuation = await self._service.resume_continuable(
                known.provider, known.remote_id, child_id=child_id, cancel=cancel
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
