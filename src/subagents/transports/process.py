"""Child processes for out-of-process agents: the one way every transport runs an agent command.

- its own process group (``start_new_session``), so the whole tree can be signalled;
- an explicit environment: :data:`BASE_ENV_VARS` copied from the parent, plus what the caller
  passes, and the parent's whole environment only when asked (``inherit_env=True``);
- stderr drained continuously into a bounded tail (and a logger), so a chatty child never
  blocks on a full pipe;
- a bounded shutdown ladder, shielded from cancellation: close stdin, wait, SIGTERM the group,
  wait, SIGKILL the group (and any member of the group still alive after the leader exited);
- the exit status and stderr tail are known when the process ends, for the error that fails
  whatever was waiting on it.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Final, Protocol, TypedDict, TypeVar, final

import anyio
import anyio.abc

from ._asyncio_pipes import open_asyncio_pipe_streams
from ._fd import FdReceiveStream, on_asyncio, wrap_pipe_fds
from ._pidfd_process import open_pidfd_process

__all__ = (
    "BASE_ENV_VARS",
    "AgentProcess",
    "ProcessExit",
    "ProcessStartError",
    "build_child_env",
    "kill_process_group",
    "open_agent_process",
    "process_group_alive",
    "terminate_process_group",
)

logger = logging.getLogger("subagents.process")

BASE_ENV_VARS: Final = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
)
"""Variables copied from the parent's environment by default (when set there). Nothing else
is passed unless the caller names it (``env=``) or asks for the whole environment
(``inherit_env=True``): API keys in particular are passed only when configured."""

DEFAULT_STDERR_TAIL: Final = 64 * 1024


def build_child_env(
    env: Mapping[str, str] | None = None,
    *,
    inherit_env: bool = False,
    parent: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment a child gets: the base (or all of ``parent``), then ``env`` on top."""
    source = os.environ if parent is None else parent
    if inherit_env:
        result = dict(source)
    else:
        result = {name: source[name] for name in BASE_ENV_VARS if name in source}
    if env:
        result.update(env)
    return result


class ProcessStartError(OSError):
    """The command could not be started (not found, not executable, or start-up timed out)."""


@final
@dataclass(frozen=True, slots=True)
class ProcessExit:
    """How a child ended."""

    returncode: int
    """The exit status; negative when killed by a signal (``-signal``)."""
    stderr_tail: str
    """The last bytes the child wrote to stderr (decoded leniently)."""

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode < 0 else None

    def describe(self) -> str:
        """A one-line cause, for error messages: status or signal, then the stderr tail."""
        if self.returncode < 0:
            try:
                name = signal.Signals(-self.returncode).name
            except ValueError:
                name = f"signal {-self.returncode}"
            status = f"was killed by {name}"
        else:
            status = f"exited with status {self.returncode}"
        tail = self.stderr_tail.strip()
        return f"{status}; stderr tail: {tail!r}" if tail else f"{status}; stderr was empty"


@final
class _StderrTail:
    """Keeps the last ``limit`` bytes of a stream, and logs it line by line."""

    def __init__(self, limit: int, log: logging.Logger) -> None:
        self._limit = limit
        self._buf = bytearray()
        self._partial = bytearray()
        self._log = log
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        self._buf += data
        if len(self._buf) > self._limit:
            del self._buf[: len(self._buf) - self._limit]
        if self._log.isEnabledFor(logging.DEBUG):
            self._partial += data
            *lines, rest = self._partial.split(b"\n")
            for line in lines:
                self._log.debug("%s", line.decode("utf-8", "replace"))
            self._partial = bytearray(rest[-self._limit :])

    def text(self) -> str:
        return self._buf.decode("utf-8", "replace")


@final
class _Ending:
    """How a child ends: its stderr drained into the tail, then its exit status."""

    def __init__(self, process: anyio.abc.Process, tail: _StderrTail) -> None:
        self.process = process
        self.tail = tail
        self.exit: ProcessExit | None = None
        self.exited = anyio.Event()
        self.stderr_done = anyio.Event()

    async def watch(self) -> None:
        returncode = await self.process.wait()
        # Whatever the child wrote before it died belongs in the tail: give the drain a moment
        # (a grandchild may hold stderr open, so this is bounded).
        with anyio.move_on_after(0.5):
            await self.stderr_done.wait()
        self.settle(returncode)

    def settle(self, returncode: int) -> None:
        if self.exit is None:
            self.exit = ProcessExit(returncode, self.tail.text())
            self.exited.set()

    async def drain_stderr(self, stderr: anyio.abc.ByteReceiveStream) -> None:
        try:
            while True:
                try:
                    data = await stderr.receive(65536)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return
                self.tail.feed(data)
        finally:
            self.stderr_done.set()


@final
class AgentProcess:
    """A running child with piped stdin/stdout; made by :func:`open_agent_process`."""

    def __init__(
        self,
        process: anyio.abc.Process,
        stdin: anyio.abc.ByteSendStream,
        stdout: anyio.abc.ByteReceiveStream,
        ending: _Ending,
        env_names: tuple[str, ...],
    ) -> None:
        self._process = process
        self.stdin = stdin
        """The child's stdin (write the protocol here)."""
        self.stdout = stdout
        """The child's stdout (read the protocol here)."""
        self._ending = ending
        self.env_names = env_names
        """Names of the variables the child was given (values are not kept)."""

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def exit(self) -> ProcessExit | None:
        """How the process ended, once it has (``None`` while it runs)."""
        return self._ending.exit

    def stderr_tail(self) -> str:
        """The last bytes written to stderr so far."""
        return self._ending.tail.text()

    @property
    def stderr_bytes(self) -> int:
        """How many bytes the child wrote to stderr in all."""
        return self._ending.tail.total

    async def wait(self) -> ProcessExit:
        """Wait until the process has exited and its stderr is drained."""
        await self._ending.exited.wait()
        assert self._ending.exit is not None
        return self._ending.exit


EXIT_CLOSE_GRACE: Final = 0.5
"""Seconds a child that exited gets for its stdout to end before its connection is aborted."""


def exit_reason_for(process: AgentProcess, what: str) -> Callable[[], Awaitable[str]]:
    """Why a connection over ``process``'s stdio ended, for its ``eof_reason``: waits for the
    exit, then names it (``"<what> (pid N) exited with status 1; stderr tail: ..."``)."""

    async def reason() -> str:
        exit_ = await process.wait()
        return f"{what} (pid {process.pid}) {exit_.describe()}"

    return reason


class _Closable(Protocol):
    @property
    def closed(self) -> bool: ...

    async def wait_closed(self) -> None: ...


_ClosableT = TypeVar("_ClosableT", bound=_Closable)


async def exited_while_open(
    process: AgentProcess, connection: Callable[[], _ClosableT | None]
) -> _ClosableT | None:
    """Wait until ``process`` has exited, then (bounded by :data:`EXIT_CLOSE_GRACE`) for the
    connection over its stdio to close; return the connection when it is still open.

    A child can die with its stdout still open (a grandchild holding it): the caller aborts
    the connection then, naming the exit. ``connection()`` is the connection, or ``None``
    while there is none yet (then this returns ``None`` at once after the exit).
    """
    await process.wait()
    current = connection()
    with anyio.move_on_after(EXIT_CLOSE_GRACE):
        if current is not None:
            await current.wait_closed()
    return current if current is not None and not current.closed else None


async def terminate_process_group(
    process: anyio.abc.Process,
    *,
    term_timeout: float = 2.0,
    kill_timeout: float = 2.0,
) -> int | None:
    """SIGTERM the process's group, wait, SIGKILL the group; returns the leader's status.

    The process must lead its own group (started with ``start_new_session=True``). Members of
    the group still alive once the leader is gone are killed too, so nothing is orphaned.
    Bounded by ``term_timeout + kill_timeout`` plus a little, and shielded from cancellation.
    """
    pgid = process.pid
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            _signal_group(pgid, signal.SIGTERM)
            with anyio.move_on_after(term_timeout):
                await process.wait()
        if process.returncode is None:
            _signal_group(pgid, signal.SIGKILL)
            with anyio.move_on_after(kill_timeout):
                await process.wait()
        elif _group_alive(pgid):
            # The leader is gone but members of its group live on (say, a grandchild that
            # ignores SIGTERM): give them the same ladder.
            _signal_group(pgid, signal.SIGTERM)
            with anyio.move_on_after(min(term_timeout, 0.5)):
                while _group_alive(pgid):  # noqa: ASYNC110 - no event exists for non-children
                    await anyio.sleep(0.02)
            _signal_group(pgid, signal.SIGKILL)
        else:
            _signal_group(pgid, signal.SIGKILL)
    return process.returncode


def kill_process_group(pgid: int) -> bool:
    """SIGKILL the process group ``pgid`` at once (the last step of an escalation); returns
    whether anything of it was alive."""
    alive = _group_alive(pgid)
    _signal_group(pgid, signal.SIGKILL)
    return alive


def process_group_alive(pgid: int) -> bool:
    """Whether any process of the group ``pgid`` is alive (zombies of ours included)."""
    return _group_alive(pgid)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class _Spawn(TypedDict):
    stdin: int
    stdout: int
    stderr: int
    cwd: str | os.PathLike[str] | None
    env: Mapping[str, str]


@asynccontextmanager
async def open_agent_process(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    start_timeout: float = 10.0,
    stderr_tail_bytes: int = DEFAULT_STDERR_TAIL,
    close_timeout: float = 2.0,
    term_timeout: float = 2.0,
    kill_timeout: float = 2.0,
    name: str | None = None,
) -> AsyncGenerator[AgentProcess, None]:
    """Start ``command`` with piped stdio in its own process group; stop it on exit.

    The environment is :func:`build_child_env(env, inherit_env=...) <build_child_env>`. On exit
    of the block (or cancellation) the shutdown ladder runs, shielded and bounded by
    ``close_timeout + term_timeout + kill_timeout``: close stdin, wait for the child to exit,
    SIGTERM its group, wait, SIGKILL its group. No zombie is left; no member of the group is
    left either (a grandchild that started its own session is outside the group's reach).
    """
    if not command:
        raise ValueError("empty command")
    argv = [os.fspath(part) for part in command]
    child_env = build_child_env(env, inherit_env=inherit_env)
    log = logging.getLogger(f"subagents.agent.{name or os.path.basename(argv[0])}")
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    parent_ends = [stdin_w, stdout_r, stderr_r]
    child_ends = [stdin_r, stdout_w, stderr_w]
    try:
        with anyio.fail_after(start_timeout):
            # On asyncio a pidfd-watched child, where the platform has pidfds: asyncio's own
            # child watcher (Python 3.11) blocks the loop while it starts a thread per child.
            spawn = _Spawn(stdin=stdin_r, stdout=stdout_w, stderr=stderr_w, cwd=cwd, env=child_env)
            process: anyio.abc.Process | None = (
                open_pidfd_process(argv, start_new_session=True, **spawn) if on_asyncio() else None
            )
            if process is None:
                process = await anyio.open_process(argv, start_new_session=True, **spawn)
    except BaseException as exc:
        for fd in parent_ends + child_ends:
            os.close(fd)
        if isinstance(exc, TimeoutError):
            raise ProcessStartError(f"{argv[0]!r} did not start within {start_timeout} s") from exc
        if isinstance(exc, OSError):
            raise ProcessStartError(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from exc
        raise
    for fd in child_ends:
        os.close(fd)
    logger.debug(
        "started %s (pid %d) with environment variables %s",
        argv[0],
        process.pid,
        sorted(child_env),
    )
    stdout, stdin = await wrap_pipe_fds(stdout_r, stdin_w)
    stderr = await _receive_only(stderr_r)
    ending = _Ending(process, _StderrTail(stderr_tail_bytes, log))
    agent = AgentProcess(process, stdin, stdout, ending, tuple(sorted(child_env)))
    raised: BaseException | None = None  # re-raised as itself, not in an ExceptionGroup
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ending.drain_stderr, stderr)
            tg.start_soon(ending.watch)
            try:
                yield agent
            except BaseException as exc:
                raised = exc
            finally:
                with anyio.CancelScope(shield=True):
                    await _shutdown(agent, process, close_timeout, term_timeout, kill_timeout)
                    with anyio.move_on_after(0.5):
                        await agent.wait()
                    if process.returncode is not None:
                        # The watcher may have been cancelled with its owner: settle here.
                        ending.settle(process.returncode)
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            for stream in (stdin, stdout, stderr):
                await stream.aclose()
            if process.returncode is None:  # pragma: no cover - the ladder ends in SIGKILL
                logger.warning("pid %d still running after the shutdown ladder", process.pid)
            with anyio.move_on_after(kill_timeout):
                await process.aclose()
    if raised is not None:
        raise raised


async def _receive_only(fd: int) -> anyio.abc.ByteReceiveStream:
    """A receive stream for a lone read end (stderr), the fastest kind per backend."""
    if on_asyncio():
        receive, _ = await open_asyncio_pipe_streams(fd, None)
        assert receive is not None
        return receive
    return FdReceiveStream(fd)


async def _shutdown(
    agent: AgentProcess,
    process: anyio.abc.Process,
    close_timeout: float,
    term_timeout: float,
    kill_timeout: float,
) -> None:
    with suppress(anyio.BrokenResourceError, OSError):
        await agent.stdin.aclose()
    if process.returncode is None:
        with anyio.move_on_after(close_timeout):
            await process.wait()
    await terminate_process_group(process, term_timeout=term_timeout, kill_timeout=kill_timeout)
