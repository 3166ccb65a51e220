"""A child process on asyncio that is waited for through a Linux pidfd, not a child watcher.

On Python 3.11 asyncio's default child watcher (``ThreadedChildWatcher``) starts one thread per
child, and ``Thread.start()`` blocks the event loop until that thread runs: 1.5–4 ms per agent
started, a stall every other task of a harness feels (issue 17). Here the child is started with
:class:`subprocess.Popen` (``vfork``: a fraction of a millisecond) and its exit is a readable
pidfd registered with the loop, as asyncio itself does from Python 3.12 on. Where pidfds are not
available, :func:`open_pidfd_process` returns ``None`` and the caller uses
``anyio.open_process``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import final

import anyio
import anyio.abc

__all__ = ("PidfdProcess", "open_pidfd_process")


@final
class PidfdProcess(anyio.abc.Process):
    """An ``anyio.abc.Process`` over a :class:`subprocess.Popen` whose stdio are file
    descriptors the caller owns (so ``stdin``, ``stdout`` and ``stderr`` are ``None``)."""

    def __init__(self, popen: subprocess.Popen[bytes], pidfd: int) -> None:
        self._popen = popen
        self._pidfd: int | None = pidfd
        self._exited = anyio.Event()
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(pidfd, self._on_exit)

    def _on_exit(self) -> None:
        # The pidfd is readable once the child has exited: reap it (Popen.poll sets returncode).
        if self._popen.poll() is None:
            return  # pragma: no cover - a pidfd is readable only after the exit
        self._release()

    def _release(self) -> None:
        pidfd, self._pidfd = self._pidfd, None
        if pidfd is not None:
            self._loop.remove_reader(pidfd)
            os.close(pidfd)
        self._exited.set()

    async def wait(self) -> int:
        if self._popen.returncode is None:
            await self._exited.wait()
        returncode = self._popen.returncode
        assert returncode is not None
        return returncode

    def terminate(self) -> None:
        self._popen.terminate()

    def kill(self) -> None:
        self._popen.kill()

    def send_signal(self, signal: signal.Signals) -> None:
        self._popen.send_signal(signal)

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    @property
    def stdin(self) -> anyio.abc.ByteSendStream | None:
        return None

    @property
    def stdout(self) -> anyio.abc.ByteReceiveStream | None:
        return None

    @property
    def stderr(self) -> anyio.abc.ByteReceiveStream | None:
        return None

    async def aclose(self) -> None:
        """Wait for the exit; cancelled meanwhile, kill the child and still reap it."""
        try:
            await self.wait()
        except BaseException:
            self.kill()
            with anyio.CancelScope(shield=True):
                await self.wait()
            raise


def open_pidfd_process(
    argv: Sequence[str],
    *,
    stdin: int,
    stdout: int,
    stderr: int,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str],
    start_new_session: bool,
) -> PidfdProcess | None:
    """Start ``argv`` (raises ``OSError`` as ``Popen`` does), or return ``None`` when this
    platform has no pidfds (then nothing was started). Call it on an asyncio event loop."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None or not _pidfds_work():
        return None
    popen = subprocess.Popen(
        argv,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        cwd=cwd,
        env=env,
        start_new_session=start_new_session,
    )
    try:
        pidfd: int = pidfd_open(popen.pid)
    except OSError:  # pragma: no cover - pidfds worked a moment ago
        popen.kill()
        popen.wait()
        raise
    return PidfdProcess(popen, pidfd)


_pidfd_support: bool | None = None


def _pidfds_work() -> bool:
    """Whether the kernel gives pidfds (Linux ≥ 5.3), tried once on this process's own pid."""
    global _pidfd_support
    if _pidfd_support is None:
        try:
            os.close(os.pidfd_open(os.getpid()))
        except OSError:
            _pidfd_support = False
        else:
            _pidfd_support = True
    return _pidfd_support
