"""Requests waiting for their answers, by id: the one request/response correlation table for
a dialect the JSON-RPC peer does not carry (Claude Code's control protocol).

The table starts no task and does no I/O: the sender registers an id and sends, the reader
settles the id when the answer comes, the transport fails every waiter when the connection is
lost, and a wait is bounded.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar, final

import anyio

__all__ = ("PendingRequests",)

KeyT = TypeVar("KeyT", bound=Hashable)
AnswerT = TypeVar("AnswerT")


@final
class _Slot(Generic[AnswerT]):
    __slots__ = ("answer", "error", "event")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.answer: tuple[AnswerT] | None = None
        self.error: BaseException | None = None

    @property
    def settled(self) -> bool:
        return self.answer is not None or self.error is not None


@final
class PendingRequests(Generic[KeyT, AnswerT]):
    """Outbound requests not answered yet, by request id.

    ::

        answer = await pending.call(request_id, send_the_request, timeout=10.0)
        ...
        pending.settle(request_id, answer)          # by the reader, when the answer comes
        pending.fail(request_id, SomeError(...))    # an error answer
        pending.fail_all(lambda: LostError(...))    # the connection is gone
    """

    def __init__(self) -> None:
        self._slots: dict[KeyT, _Slot[AnswerT]] = {}

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, key: object) -> bool:
        return key in self._slots

    async def call(self, key: KeyT, send: Callable[[], Awaitable[None]], timeout: float) -> AnswerT:
        """Register ``key``, ``await send()``, and wait at most ``timeout`` seconds for the
        answer; ``key`` is forgotten on the way out, whatever happens (a late answer is then
        an answer to nobody).

        Returns what :meth:`settle` gave; raises what :meth:`fail` or :meth:`fail_all` gave,
        whatever ``send`` raises, and ``TimeoutError`` after ``timeout`` seconds.
        """
        if key in self._slots:
            raise ValueError(f"request id {key!r} is already waiting for an answer")
        slot = _Slot[AnswerT]()
        self._slots[key] = slot
        try:
            await send()
            if not slot.settled:
                with anyio.fail_after(timeout):
                    await slot.event.wait()
        finally:
            del self._slots[key]
        if slot.error is not None:
            raise slot.error
        assert slot.answer is not None
        return slot.answer[0]

    def settle(self, key: KeyT, answer: AnswerT) -> bool:
        """Hand ``answer`` to whoever waits for ``key``; ``False`` when nobody does (an
        unknown id, or a late answer to a request given up on)."""
        slot = self._slots.get(key)
        if slot is None or slot.settled:
            return False
        slot.answer = (answer,)
        slot.event.set()
        return True

    def fail(self, key: KeyT, error: BaseException) -> bool:
        """Make the wait for ``key`` raise ``error``; ``False`` when nobody waits for it."""
        slot = self._slots.get(key)
        if slot is None or slot.settled:
            return False
        slot.error = error
        slot.event.set()
        return True

    def fail_all(self, error: Callable[[], BaseException]) -> None:
        """Fail every wait, each with a fresh ``error()`` (the connection is gone)."""
        for key in list(self._slots):
            self.fail(key, error())
