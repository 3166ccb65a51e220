"""The turn event buffer every dialect client shares (issue 18, one turn API): order, end,
failure after the events before it, the one overflow policy, and a push that never waits."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from subagents.transports import DEFAULT_MAX_EVENTS, TurnOverflowError
from subagents.transports._turn_events import TurnEvents

pytestmark = pytest.mark.anyio


async def read_into(got: list[Any], events: AsyncIterator[Any]) -> None:
    """Append each event of ``events`` to ``got`` (what came before an error is kept)."""
    async for event in events:
        got.append(event)


async def test_events_come_out_in_order_and_close_ends_the_iteration() -> None:
    events = TurnEvents[int]()
    for i in range(5):
        assert events.push(i)
    events.close()
    assert not events.push(99)  # after the end: not taken
    with anyio.fail_after(5):
        assert [e async for e in events] == [0, 1, 2, 3, 4]
    assert events.read_count == 5


async def test_a_consumer_waiting_for_events_gets_them_as_they_are_pushed() -> None:
    events = TurnEvents[str]()
    got: list[str] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def consume() -> None:
                got.extend([e async for e in events])

            tg.start_soon(consume)
            await anyio.wait_all_tasks_blocked()
            events.push("a")
            await anyio.wait_all_tasks_blocked()
            events.push("b")
            events.close()
    assert got == ["a", "b"]


async def test_fail_raises_its_error_after_the_events_before_it() -> None:
    events = TurnEvents[int]()
    events.push(1)
    events.push(2)
    events.fail(ConnectionError("gone"))
    events.push(3)  # dropped: the buffer has ended
    got: list[int] = []
    with anyio.fail_after(5), pytest.raises(ConnectionError, match="gone"):
        await read_into(got, events)
    assert got == [1, 2]
    with pytest.raises(ConnectionError):  # and again: the end stays
        await events.__anext__()


async def test_one_event_past_max_events_fails_the_buffer_naming_the_limit_and_reads() -> None:
    seen: list[TurnOverflowError] = []
    events = TurnEvents[int](3, on_overflow=seen.append)
    events.push(0)
    with anyio.fail_after(5):
        assert await events.__anext__() == 0
    for i in range(1, 4):
        assert events.push(i)
    assert not events.push(4)  # one more than 3 unread: the turn fails loud
    [error] = seen
    assert (error.limit, error.read) == (3, 1)
    assert "max_events=3" in str(error)
    assert "1 read" in str(error)
    got: list[int] = []
    with anyio.fail_after(5), pytest.raises(TurnOverflowError) as info:
        await read_into(got, events)
    assert got == [1, 2, 3]  # nothing dropped before the failure
    assert info.value is error
    assert not events.push(5)
    assert len(seen) == 1  # on_overflow is called once


def test_push_never_waits_it_is_sync_and_needs_no_event_loop() -> None:
    """The connection's reader pushes from sync code: DEFAULT_MAX_EVENTS unread events, then
    the overflow, without a consumer, an event loop or a wait."""
    events = TurnEvents[int]()
    assert events.max_events == DEFAULT_MAX_EVENTS == 10_000
    assert all(events.push(i) for i in range(DEFAULT_MAX_EVENTS))
    assert not events.push(DEFAULT_MAX_EVENTS)
    assert isinstance(events.error, TurnOverflowError)
    assert events.unread_count == DEFAULT_MAX_EVENTS


async def test_drain_discards_unread_and_later_events_so_a_result_waiter_never_overflows() -> None:
    events = TurnEvents[int](2)
    events.push(0)
    events.push(1)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(events.drain)
            await anyio.wait_all_tasks_blocked()
            assert events.unread_count == 0
            for i in range(2, 100):  # far past max_events: dropped, counted as read
                assert events.push(i)
            events.close()
    assert events.error is None
    assert events.read_count == 100


async def test_drain_raises_the_error_the_buffer_failed_with() -> None:
    events = TurnEvents[int](1)
    events.push(0)
    events.push(1)
    with anyio.fail_after(5), pytest.raises(TurnOverflowError):
        await events.drain()


def test_max_events_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_events"):
        TurnEvents[int](0)
