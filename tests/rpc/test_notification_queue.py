"""The peer's notification queue: FIFO, bounded (the reader waits while it is full), drained
after close; on asyncio with loop futures, on trio with anyio events."""

from __future__ import annotations

import anyio
import pytest

from subagents.rpc._notification_queue import NotificationQueue
from subagents.rpc._signal import signal_factory

pytestmark = pytest.mark.anyio


async def test_items_come_out_in_order_and_a_full_queue_makes_the_producer_wait() -> None:
    """Issue 17 (no memory object stream per notification) with the behaviour it replaced:
    notifications are handled in arrival order, and while ``limit`` are queued the reader
    waits (backpressure) until the consumer takes one."""
    queue = NotificationQueue[int](2, signal_factory())
    assert queue.put_nowait(1)
    assert queue.put_nowait(2)
    assert not queue.put_nowait(3)  # full
    put_done = anyio.Event()

    async def producer() -> None:
        await queue.put(3)
        put_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(producer)
        await anyio.wait_all_tasks_blocked()
        assert not put_done.is_set()  # still waiting for room
        assert queue.get_nowait() == 1
        with anyio.fail_after(5):
            await put_done.wait()
    assert [queue.get_nowait(), queue.get_nowait(), queue.get_nowait()] == [2, 3, None]
    assert len(queue) == 0


async def test_a_waiting_consumer_wakes_for_an_item_and_ends_after_close_and_drain() -> None:
    """The consumer waits for the next item; after close it still gets what was queued, then
    ``None`` (the peer's deliverer stops there)."""
    queue = NotificationQueue[str](8, signal_factory())
    got: list[str | None] = []

    async def consumer() -> None:
        while True:
            item = await queue.get()
            got.append(item)
            if item is None:
                return

    async with anyio.create_task_group() as tg:
        tg.start_soon(consumer)
        await anyio.wait_all_tasks_blocked()
        assert got == []
        queue.put_nowait("a")
        await anyio.wait_all_tasks_blocked()
        assert got == ["a"]
        queue.put_nowait("b")
        queue.put_nowait("c")
        queue.close()
    assert got == ["a", "b", "c", None]


async def test_a_cancelled_wait_leaves_the_queue_usable() -> None:
    """A consumer cancelled while waiting (the peer shutting down) does not break the queue: a
    later put and get work, and setting the cancelled signal is harmless."""
    queue = NotificationQueue[int](4, signal_factory())
    with anyio.move_on_after(0.05):
        await queue.get()
    assert queue.put_nowait(5)
    with anyio.fail_after(5):
        assert await queue.get() == 5
