"""The shared request/response correlation table (``subagents.rpc.PendingRequests``), on
asyncio and trio (issue 18 point 2: one correlation for every request/response dialect)."""

from __future__ import annotations

import anyio
import pytest

from subagents.rpc import PendingRequests

pytestmark = pytest.mark.anyio


class Lost(Exception):
    pass


async def test_an_answer_settled_by_the_reader_is_returned_to_the_caller() -> None:
    """Correlation: the caller registers the id and sends; the answer for that id, settled
    from elsewhere, is what the call returns; the id is forgotten afterwards."""
    pending = PendingRequests[str, int]()
    sent = anyio.Event()

    async def send() -> None:
        sent.set()

    async def answer() -> None:
        await sent.wait()
        assert "req_1" in pending
        assert not pending.settle("req_2", 0)  # nobody waits for req_2
        assert pending.settle("req_1", 42)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(answer)
            assert await pending.call("req_1", send, timeout=5) == 42
    assert "req_1" not in pending
    assert not pending.settle("req_1", 43)  # a late (second) answer goes to nobody


async def test_an_error_answer_and_a_lost_connection_raise_in_the_caller() -> None:
    """Correlation: fail() makes the wait raise that error; fail_all() fails every wait, each
    with its own exception."""
    pending = PendingRequests[str, int]()
    errors: dict[str, BaseException] = {}
    sent = {key: anyio.Event() for key in ("a", "b", "c")}

    async def call(key: str) -> None:
        async def send() -> None:
            sent[key].set()

        try:
            await pending.call(key, send, timeout=5)
        except (ValueError, Lost) as exc:
            errors[key] = exc

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for key in sent:
                tg.start_soon(call, key)
            for event in sent.values():
                await event.wait()
            assert pending.fail("a", ValueError("refused"))
            pending.fail_all(lambda: Lost("gone"))
    assert isinstance(errors["a"], ValueError)
    assert isinstance(errors["b"], Lost)
    assert isinstance(errors["c"], Lost)
    assert errors["b"] is not errors["c"]
    assert len(pending) == 0


async def test_a_wait_is_bounded_and_forgets_its_id() -> None:
    """Every wait is bounded: no answer within the timeout raises TimeoutError, and the id is
    forgotten (its late answer goes to nobody)."""
    pending = PendingRequests[int, str]()

    async def send() -> None:
        pass

    with anyio.fail_after(5), pytest.raises(TimeoutError):
        await pending.call(1, send, timeout=0.05)
    assert 1 not in pending
    assert not pending.settle(1, "late")


async def test_a_failed_send_forgets_its_id_and_an_id_in_use_is_refused() -> None:
    """What ``send`` raises is raised as is, the id forgotten; registering an id that is
    still waiting is a programming error."""
    pending = PendingRequests[int, str]()

    async def broken() -> None:
        raise OSError("stdin closed")

    with pytest.raises(OSError, match="stdin closed"):
        await pending.call(1, broken, timeout=1)
    assert 1 not in pending

    sent = anyio.Event()

    async def send() -> None:
        sent.set()

    async def hold() -> None:
        await pending.call(1, send, timeout=5)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(hold)
            await sent.wait()
            with pytest.raises(ValueError, match="already waiting"):
                await pending.call(1, broken, timeout=1)
            assert pending.settle(1, "done")
