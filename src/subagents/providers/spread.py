"""``SpreadProvider``: one provider name over several equivalent providers, least busy first.

Scale-out for remote agents: several ``subagents serve --listen`` servers (or any providers
that run the same agent) behind one name. Each start goes to the member with the fewest runs
in flight (ties: the one used longest ago); a member that cannot start the child
(``START_FAILED``: a server down, a refused token; or ``CANCELLED`` by the member itself, not
by the caller: a server that drained while the start was on its way) is skipped for the next
one, each tried at most once, and only when all of them failed does the start fail, naming
every cause. A run stays with the member that started it until it settles: its session lives
on that server.

Continuable children are pinned the same way: the remote id a spread continuation reports is
``"<member index>:<member's remote id>"``, so a cold resume goes back to the same member (keep
the member list in the same order to resume across restarts)::

    async with SpreadProvider("remote", [AcpProvider(...url a...), AcpProvider(...url b...)]):
        ...

The spread provider owns its members: entering it enters each one, leaving it leaves them.
Its capabilities are the features every member supports.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import fields
from types import TracebackType
from typing import Any, final

from .contract import (
    CancelSignal,
    ContinuableProvider,
    Continuation,
    ProgressEvent,
    SubagentCapabilities,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentProvider,
    SubagentRequest,
    SubagentRun,
    child_id_of,
    deprecated_alias,
)

__all__ = ("SpreadProvider",)

_SEPARATOR = ":"


@final
class _Member:
    __slots__ = ("busy", "index", "last_used", "provider")

    def __init__(self, index: int, provider: SubagentProvider) -> None:
        self.index = index
        self.provider = provider
        self.busy = 0
        self.last_used = 0


@final
class SpreadProvider:
    """Spreads runs over ``members`` (see the module docstring)."""

    def __init__(self, name: str, members: Sequence[SubagentProvider]) -> None:
        if not members:
            raise ValueError("a SpreadProvider needs at least one member")
        self._name = name
        self._members = [_Member(i, provider) for i, provider in enumerate(members)]
        self._clock = itertools.count(1)
        self._stack: AsyncExitStack | None = None
        self._capabilities = SubagentCapabilities(
            **{
                f.name: all(m.provider.capabilities.supports(f.name) for m in self._members)
                for f in fields(SubagentCapabilities)
            }
        )

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> SubagentCapabilities:
        return self._capabilities

    @property
    def in_flight(self) -> tuple[int, ...]:
        """Runs (and live continuations) in flight on each member, in member order."""
        return tuple(m.busy for m in self._members)

    async def __aenter__(self) -> SpreadProvider:
        async with AsyncExitStack() as stack:
            for member in self._members:
                enter = getattr(member.provider, "__aenter__", None)
                if enter is not None:
                    await stack.enter_async_context(member.provider)  # pyright: ignore[reportArgumentType] - checked above
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> bool | None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()
        return None

    def _by_load(self) -> list[_Member]:
        return sorted(self._members, key=lambda m: (m.busy, m.last_used))

    async def _first_that_starts(
        self, start: Any, what: str, cancel: CancelSignal
    ) -> tuple[_Member, Any]:
        """Try ``start(member)`` on the members, least busy first, until one succeeds (a
        start the member cancelled itself, ``cancel`` not cancelled, counts as failed)."""
        causes: list[str] = []
        last: SubagentError | None = None
        for member in self._by_load():
            member.busy += 1
            member.last_used = next(self._clock)
            try:
                return member, await start(member)
            except SubagentError as exc:
                member.busy -= 1
                cancelled_there = exc.code is SubagentErrorCode.CANCELLED and not cancel.cancelled
                if exc.code is not SubagentErrorCode.START_FAILED and not cancelled_there:
                    raise
                causes.append(f"{member.provider.name}: {exc.message}")
                last = exc
            except BaseException:
                member.busy -= 1
                raise
        assert last is not None
        raise SubagentError(
            SubagentErrorCode.START_FAILED,
            f"no member of {self._name!r} could {what}: " + "; ".join(causes),
            provider=self._name,
        ) from last

    async def start(self, request: SubagentRequest, *, cancel: CancelSignal) -> SubagentRun:
        """Start on the least busy member that can start it."""
        self._capabilities.check(request, provider=self._name)

        async def start(member: _Member) -> SubagentRun:
            return await member.provider.start(request, cancel=cancel)

        member, run = await self._first_that_starts(start, "start the child", cancel)
        return _SpreadRun(run, member)

    async def prepare_continuable(
        self, request: SubagentRequest, *, cancel: CancelSignal
    ) -> Continuation:
        """A continuable child on the least busy member that supports continuation."""
        self._capabilities.check(request, provider=self._name)

        async def prepare(member: _Member) -> Continuation:
            provider = member.provider
            if not isinstance(provider, ContinuableProvider):
                raise SubagentError(
                    SubagentErrorCode.START_FAILED,
                    "it cannot continue children",
                    provider=provider.name,
                )
            return await provider.prepare_continuable(request, cancel=cancel)

        member, continuation = await self._first_that_starts(prepare, "start the child", cancel)
        return _SpreadContinuation(continuation, member)

    async def resume_continuable(
        self, remote_id: str, *, cancel: CancelSignal, child_id: str | None = None
    ) -> Continuation:
        """Resume on the member that started the child (named by ``remote_id``)."""
        index_text, separator, inner = remote_id.partition(_SEPARATOR)
        member = None
        if separator and index_text.isdigit() and int(index_text) < len(self._members):
            member = self._members[int(index_text)]
        if member is None or not isinstance(member.provider, ContinuableProvider):
            raise SubagentError(
                SubagentErrorCode.START_FAILED,
                f"{remote_id!r} names no member of {self._name!r} that continues children "
                f"(expected '<member index>:<remote id>', index below {len(self._members)})",
                provider=self._name,
            )
        member.busy += 1
        try:
            continuation = await member.provider.resume_continuable(
                inner, cancel=cancel, child_id=child_id
            )
        except BaseException:
            member.busy -= 1
            raise
        return _SpreadContinuation(continuation, member)


@final
class _SpreadRun:
    """A member's run; the member's count drops once, when it settles or is disposed."""

    def __init__(self, run: SubagentRun, member: _Member) -> None:
        self._run = run
        self._member: _Member | None = member

    def _release(self) -> None:
        member, self._member = self._member, None
        if member is not None:
            member.busy -= 1

    @property
    def child_id(self) -> str:
        return child_id_of(self._run)

    @property
    def id(self) -> str:
        """Deprecated alias of :attr:`child_id` (removed in the next release)."""
        deprecated_alias(self, "id")
        return self.child_id

    @property
    def remote_id(self) -> str | None:
        remote = getattr(self._run, "remote_id", None)
        return remote if isinstance(remote, str) else None

    async def result(self) -> SubagentOutcome:
        try:
            return await self._run.result()
        finally:
            self._release()

    async def dispose(self) -> None:
        try:
            await self._run.dispose()
        finally:
            self._release()

    def progress(self) -> AsyncIterator[ProgressEvent] | None:
        return self._run.progress()

    async def __aenter__(self) -> _SpreadRun:
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
class _SpreadContinuation:
    """A member's continuation, its remote id prefixed with the member's index."""

    def __init__(self, continuation: Continuation, member: _Member) -> None:
        self._continuation = continuation
        self._member: _Member | None = member
        self._index = member.index

    @property
    def child_id(self) -> str:
        return child_id_of(self._continuation)

    @property
    def id(self) -> str:
        """Deprecated alias of :attr:`child_id` (removed in the next release)."""
        deprecated_alias(self, "id")
        return self.child_id

    @property
    def remote_id(self) -> str:
        return f"{self._index}{_SEPARATOR}{self._continuation.remote_id}"

    @property
    def outcomes(self) -> Sequence[SubagentOutcome]:
        return self._continuation.outcomes

    async def send(
        self,
        message: str,
        *,
        cancel: CancelSignal | None = None,
        on_progress: Callable[[ProgressEvent], None] | None = None,
    ) -> SubagentOutcome:
        return await self._continuation.send(message, cancel=cancel, on_progress=on_progress)

    async def dispose(self) -> None:
        try:
            await self._continuation.dispose()
        finally:
            member, self._member = self._member, None
            if member is not None:
                member.busy -= 1
