"""A turn's event buffer (:class:`TurnEvents`), the same in every dialect client.

The connection's reader pushes (:meth:`TurnEvents.push`, sync: it never waits); the turn's
consumer iterates (``async for``). One overflow policy for ACP, Codex and Claude Code:

- at most ``max_events`` events wait unread (default :data:`DEFAULT_MAX_EVENTS`, set per turn
  where it is opened: ``session.prompt(..., max_events=...)``, ``thread.turn(...)``,
  ``connection.turn(...)``);
- one more fails the turn loud: the buffer ends with :class:`TurnOverflowError` (iteration
  raises it after the events before it, ``result()`` raises it), and the dialect cancels the
  turn on the agent's side, bounded, as leaving the turn's block early does. Events are never
  dropped silently and the connection's reader never waits for a slow consumer;
- ``result()`` drops the events nobody read and every later one (:meth:`TurnEvents.discard`)
  while it waits, so a caller that only awaits ``result()`` never overflows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Final, Generic, TypeVar, final

import anyio

__all__ = (
    "CATCH_UP_TIMEOUT",
    "DEFAULT_MAX_EVENTS",
    "TurnEvents",
    "TurnOverflowError",
    "read_before",
)

T = TypeVar("T")

DEFAULT_MAX_EVENTS: Final = 10_000
"""Unread events a turn holds before it fails with :class:`TurnOverflowError`."""


class TurnOverflowError(Exception):
    """A turn received more than ``max_events`` events its consumer had not read; the turn
    was cancelled. ``limit`` is ``max_events``; ``read`` the events read by then."""

    def __init__(self, limit: int, read: int) -> None:
        super().__init__(
            f"the turn received more than {limit} unread events (max_events={limit}; "
            f"{read} read) and was cancelled: read its events as they come, open it with a "
            "larger max_events, or only await result()"
        )
        self.limit = limit
        self.read = read


@final
class TurnEvents(Generic[T]):
    """A turn's events in order, then its end: closed (iteration stops) or failed (iteration
    raises the error after the events before it).

    :meth:`push` never waits. With ``max_events`` events unread, one more fails the buffer
    with :class:`TurnOverflowError` and calls ``on_overflow`` with it (the dialect cancels the
    turn there); what comes after the end is dropped.
    """

    __slots__ = (
        "_discarding",
        "_emptied",
        "_ended",
        "_error",
        "_limit",
        "_on_overflow",
        "_queue",
        "_read",
        "_wakeup",
    )

    def __init__(
        self,
        max_events: int = DEFAULT_MAX_EVENTS,
        *,
        on_overflow: Callable[[TurnOverflowError], None] | None = None,
    ) -> None:
        if max_events < 1:
            raise ValueError(f"max_events must be at least 1, not {max_events}")
        self._limit = max_events
        self._on_overflow = on_overflow
        self._queue: deque[T] = deque()
        self._read = 0
        self._ended = False
        self._error: BaseException | None = None
        self._discarding = False
        self._wakeup: anyio.Event | None = None  # made by a waiting consumer
        self._emptied: anyio.Event | None = None  # made by a caller of caught_up()

    # -- the connection's side (sync: never waits)

    def push(self, event: T) -> bool:
        """Add ``event``; ``False`` when it was not taken (the buffer has ended, or this event
        overflowed it)."""
        if self._ended:
            return False
        if self._discarding:
            self._read += 1
            return True
        if len(self._queue) >= self._limit:
            error = TurnOverflowError(self._limit, self._read)
            self.fail(error)
            if self._on_overflow is not None:
                self._on_overflow(error)
            return False
        self._queue.append(event)
        self._wake()
        return True

    def close(self) -> None:
        """End the events: iteration stops once the ones pushed are read."""
        if not self._ended:
            self._ended = True
            self._wake()
            self._caught_up()

    def fail(self, error: BaseException) -> None:
        """End the events with ``error``: iteration raises it once the ones pushed are read."""
        if not self._ended:
            self._ended = True
            self._error = error
            self._wake()
            self._caught_up()

    # -- the consumer's side

    def __aiter__(self) -> TurnEvents[T]:
        return self

    async def __anext__(self) -> T:
        while not self._queue:
            if self._ended:
                if self._error is not None:
                    raise self._error
                raise StopAsyncIteration
            await self._wait()
        self._read += 1
        event = self._queue.popleft()
        if not self._queue:
            self._caught_up()
        return event

    def discard(self) -> None:
        """Drop the unread events, and every later one as it comes (counted as read): the
        buffer can no longer overflow."""
        self._read += len(self._queue)
        self._queue.clear()
        self._discarding = True
        self._caught_up()

    async def caught_up(self) -> None:
        """Return once every event pushed so far has been read (or discarded), or the buffer
        ended: a request that came after those events (a permission request after the tool
        call it is about) can then be handled in order with them."""
        while self._queue and not self._ended:
            if self._emptied is None:
                self._emptied = anyio.Event()
            await self._emptied.wait()

    async def drain(self) -> None:
        """:meth:`discard`, then wait for the end; raises the error the buffer failed with."""
        self.discard()
        while not self._ended:
            await self._wait()
        self.raise_failure()

    def raise_failure(self) -> None:
        """Raise the error the buffer failed with, if it did."""
        if self._error is not None:
            raise self._error

    @property
    def ended(self) -> bool:
        """Closed or failed (events may still wait unread)."""
        return self._ended

    @property
    def error(self) -> BaseException | None:
        """The error the buffer failed with."""
        return self._error

    @property
    def max_events(self) -> int:
        return self._limit

    @property
    def read_count(self) -> int:
        """Events read (or discarded) so far."""
        return self._read

    @property
    def unread_count(self) -> int:
        return len(self._queue)

    def _caught_up(self) -> None:
        if self._emptied is not None:
            self._emptied.set()
            self._emptied = None

    def _wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()
            self._wakeup = None

    async def _wait(self) -> None:
        if self._wakeup is None:
            self._wakeup = anyio.Event()
        await self._wakeup.wait()


CATCH_UP_TIMEOUT: Final = 0.5
"""How long a request the agent sends during a turn (a permission or approval request) waits
for the turn's earlier events to be read."""


async def read_before(events: TurnEvents[T]) -> None:
    """Before a request the agent sent during a turn is decided: wait until the events it sent
    before (the tool call asked about) are read, so whoever shows both shows them in order.
    Bounded by :data:`CATCH_UP_TIMEOUT`, for a turn nobody reads."""
    with anyio.move_on_after(CATCH_UP_TIMEOUT):
        await events.caught_up()
