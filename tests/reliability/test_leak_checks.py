"""The leak checks themselves (``subagents.testing.leaks``): each kind of leftover they
promise to find is found, and nothing is reported when nothing is left."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import anyio
import pytest

from subagents.testing.leaks import assert_no_leak, live_tasks, snapshot

pytestmark = pytest.mark.anyio


async def test_a_task_nobody_owns_is_reported_by_name(anyio_backend: str) -> None:
    """Never hang / every task has an owner: a task still running after the code under test
    returned is reported with its name; a task group's tasks, ended with their block, are
    not."""
    before = snapshot()
    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.sleep, 0.01, name="owned-sleeper")
    assert_no_leak(before)  # the owned task ended with its block
    if anyio_backend == "asyncio":
        stray = asyncio.get_running_loop().create_task(asyncio.sleep(30), name="stray-sleeper")
        try:
            with pytest.raises(AssertionError, match="stray-sleeper"):
                assert_no_leak(before)
        finally:
            stray.cancel()
            with pytest.raises(asyncio.CancelledError):
                await stray
    else:
        import trio

        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.sleep_forever, name="stray-sleeper")
            await trio.lowlevel.checkpoint()
            with pytest.raises(AssertionError, match="stray-sleeper"):
                assert_no_leak(before)
            nursery.cancel_scope.cancel()


def test_outside_an_event_loop_there_are_no_tasks() -> None:
    assert live_tasks() == {}


def test_a_child_process_and_a_descriptor_left_open_are_reported() -> None:
    """A process of ours still running, and a file descriptor still open, are listed."""
    before = snapshot()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    read_end, write_end = os.pipe()
    try:
        with pytest.raises(AssertionError) as left:
            assert_no_leak(before, grace=0.2)
        assert f"pid {child.pid}" in str(left.value)
        assert f"fd {read_end}" in str(left.value)
    finally:
        child.kill()
        child.wait()
        os.close(read_end)
        os.close(write_end)
    assert_no_leak(before)
