"""Children on asyncio are watched through a pidfd: no thread per child, every exit reaped."""

from __future__ import annotations

import os
import signal
import sys
import threading

import anyio
import pytest

from subagents.transports import open_agent_process
from subagents.transports._pidfd_process import PidfdProcess, open_pidfd_process

pytestmark = pytest.mark.anyio

SLEEPER = [sys.executable, "-c", "import sys; sys.stdin.read()"]


def _waitpid_threads() -> list[str]:
    # asyncio's ThreadedChildWatcher (Python 3.11) names its threads "waitpid-N"
    return [t.name for t in threading.enumerate() if "waitpid" in t.name]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_agent_started_on_asyncio_costs_no_watcher_thread() -> None:
    """Issue 17 (event-loop stalls): on Python 3.11 asyncio's child watcher starts a thread per
    child and blocks the loop until it runs; an agent process is watched through a pidfd
    instead, so starting eight agents at once starts no thread."""
    started: list[int] = []
    async with anyio.create_task_group() as tg:

        async def one() -> None:
            async with open_agent_process(SLEEPER) as child:
                started.append(child.pid)
                assert isinstance(child._process, PidfdProcess)  # pyright: ignore[reportPrivateUsage]
                assert not _waitpid_threads()
                await anyio.sleep(0.05)

        for _ in range(8):
            tg.start_soon(one)
    assert len(started) == 8
    assert not _waitpid_threads()


def _start(code: str) -> PidfdProcess:
    """``python -c code`` as a pidfd process, its stdio on a pipe closed at once."""
    read_fd, write_fd = os.pipe()
    try:
        process = open_pidfd_process(
            [sys.executable, "-c", code],
            stdin=read_fd,
            stdout=write_fd,
            stderr=write_fd,
            cwd=None,
            env={},
            start_new_session=True,
        )
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert process is not None
    return process


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_pidfd_process_reports_exit_status_and_signals_and_reaps() -> None:
    """The exit status (a signal as its negative number) is what Popen reports, the child is
    reaped (no zombie, no ResourceWarning: the suite turns warnings into errors)."""
    first = _start("raise SystemExit(7)")
    second = _start("import time; time.sleep(60)")
    with anyio.fail_after(10):
        assert await first.wait() == 7
        second.send_signal(signal.SIGTERM)
        assert await second.wait() == -signal.SIGTERM
    assert first.returncode == 7
    for process in (first, second):
        assert not await anyio.Path(f"/proc/{process.pid}").exists()  # reaped: no zombie


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_cancelled_close_kills_the_child_and_still_reaps_it() -> None:
    """aclose() waits for the exit; cancelled while waiting, it kills the child and reaps it
    before the cancellation goes on (no child outlives its owner)."""
    process = _start("import time; time.sleep(60)")
    with anyio.move_on_after(0.2) as scope:
        await process.aclose()
    assert scope.cancelled_caught
    assert process.returncode == -signal.SIGKILL
