"""A bounded feed of live progress events that never blocks the child."""

from __future__ import annotations

from collections import deque
from typing import final

import anyio

from .contract import ProgressEvent

__all__ = ("ProgressFeed",)


@final
class ProgressFeed:
    """A bounded progress iterator: when the consumer lags, the oldest events are dropped.

    The child never blocks on it; :attr:`dropped` counts what the consumer missed.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("a progress feed needs room for at least one event")
        self._events: deque[ProgressEvent] = deque(maxlen=capacity)
        self._wakeup: anyio.Event | None = None
        self._closed = False
        self.dropped = 0

    def push(self, event: ProgressEvent) -> None:
        if self._closed:
            return
        if len(self._events) == self._events.maxlen:
            self.dropped += 1
        self._events.append(event)
        self._wake()

    def close(self) -> None:
        self._closed = True
        self._wake()

    def _wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()
            self._wakeup = None

    def __aiter__(self) -> ProgressFeed:
        return self

    async def __anext__(self) -> ProgressEvent:
        while not self._events:
            if self._closed:
                raise StopAsyncIteration
            if self._wakeup is None:
                self._wakeup = anyio.Event()
            await self._wakeup.wait()
        return self._events.popleft()
