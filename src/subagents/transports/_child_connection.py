"""The one connect tail of every stdio dialect client (ACP, Codex app-server, Claude Code).

A dialect brings its link (an :class:`~subagents.rpc.Peer`, or Claude's line reader), its
handshake and its start-up error; :func:`open_child_connection` does the rest, the same way
for all of them:

- one task group for the connection's background work, the link opened inside it;
- a watcher racing the child's exit (with its stdout still open: a grandchild holding it)
  against the end of the link's stream; either way it waits (bounded) for the exit status and
  stderr tail and hands that reason to the dialect's ``lost`` callback, which fails whatever
  still waits (pending calls, running turns);
- the handshake within ``startup_timeout``: a time-out, the connection closing first, or a
  refusal becomes the dialect's start-up error naming the exit status and the stderr tail;
- on exit, the dialect's ``close`` (shielded), then the task group is cancelled;
- an exception from the caller's block (or the handshake) is re-raised as itself once the
  task group has closed, never wrapped in an ``ExceptionGroup``.

Over a child, :class:`ChildCommand` starts it (:func:`~subagents.transports.open_agent_process`)
and the dialect's ``connect_*_over`` runs over its stdio with ``process=`` set; over a plain
byte-stream pair there is no process, so no exit to watch and no stderr tail to quote.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Final, Generic, Protocol, TypeVar, final

import anyio
import anyio.abc

from .process import (
    AgentProcess,
    ProcessExit,
    exit_reason_for,
    exited_while_open,
    open_agent_process,
)

__all__ = (
    "EXIT_REASON_WAIT",
    "ChildCommand",
    "ChildDialect",
    "ChildLink",
    "open_child_connection",
)

EXIT_REASON_WAIT: Final = 2.0
"""Seconds the watcher waits for the child's exit status once its stream ended (a child may
close its stdout and live on); past it the reason only says that the connection closed."""

_STDERR_IN_ERRORS: Final = 2000
"""The last characters of stderr a start-up error quotes."""


class _Link(Protocol):
    """What the watcher needs of a dialect's link."""

    @property
    def closed(self) -> bool: ...

    async def wait_closed(self) -> None: ...


LinkT = TypeVar("LinkT", bound=_Link)
HelloT = TypeVar("HelloT")

ExitReason = Callable[[], Awaitable[str]]


@final
class ChildDialect:
    """How a dialect names itself and its start-up failures.

    This and the two classes below are plain classes, not dataclasses: they are internal
    value holders on every client's import path, where creating a frozen dataclass costs
    ≈0.8 ms each (issue 17: the client endpoint's import)."""

    __slots__ = ("closed", "kind", "refused", "startup_error")

    def __init__(
        self,
        *,
        kind: str,
        startup_error: type[Exception],
        closed: tuple[type[BaseException], ...] = (),
        refused: tuple[type[BaseException], ...] = (),
    ) -> None:
        self.kind = kind
        """What the child is, in messages: ``"codex app-server"``, ``"claude"``, ``"agent"``."""
        self.startup_error = startup_error
        """Raised when the handshake does not complete."""
        self.closed = closed
        """What the handshake raises when the connection closed first."""
        self.refused = refused
        """What the handshake raises when the child answered it with an error."""

    def what(self, name: str) -> str:
        """``"codex app-server 'codex'"``: the child by kind and name."""
        return f"{self.kind} {name!r}"


@final
class ChildCommand:
    """A dialect's command line and how to start it (see :func:`open_agent_process`)."""

    __slots__ = ("argv", "cwd", "env", "inherit_env", "start_timeout")

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None,
        inherit_env: bool,
        cwd: str | os.PathLike[str] | None,
        start_timeout: float,
    ) -> None:
        self.argv = argv
        self.env = env
        self.inherit_env = inherit_env
        self.cwd = cwd
        self.start_timeout = start_timeout

    def spawn(self, name: str) -> AbstractAsyncContextManager[AgentProcess]:
        return open_agent_process(
            self.argv,
            env=self.env,
            inherit_env=self.inherit_env,
            cwd=self.cwd,
            start_timeout=self.start_timeout,
            name=name,
        )


@final
class ChildLink(Generic[LinkT, HelloT]):
    """A connection whose handshake is done: what the dialect builds its connection from."""

    __slots__ = ("exit_reason", "hello", "link", "task_group")

    def __init__(
        self,
        task_group: anyio.abc.TaskGroup,
        link: LinkT,
        hello: HelloT,
        exit_reason: ExitReason | None,
    ) -> None:
        self.task_group = task_group
        """For the connection's background work; cancelled when the block is left."""
        self.link = link
        self.hello = hello
        """The handshake's answer."""
        self.exit_reason = exit_reason
        """Why the stream ended, naming the exit status (``None`` without a child)."""


@asynccontextmanager
async def open_child_connection(
    dialect: ChildDialect,
    open_link: Callable[
        [anyio.abc.TaskGroup, ExitReason | None], AbstractAsyncContextManager[LinkT]
    ],
    handshake: Callable[[LinkT], Awaitable[HelloT]],
    *,
    lost: Callable[[LinkT, str], None],
    name: str,
    process: AgentProcess | None = None,
    exit_reason: ExitReason | None = None,
    startup_timeout: float | None = None,
    ended: Callable[[LinkT], Awaitable[object]] | None = None,
    close: Callable[[LinkT], Awaitable[None]] | None = None,
    around: AbstractAsyncContextManager[object] | None = None,
) -> AsyncGenerator[ChildLink[LinkT, HelloT], None]:
    """Open a dialect's link, watch it, shake hands; yield the result, tear down on exit.

    ``open_link(task_group, exit_reason)`` opens the link (an rpc peer over the child's
    stdio); ``ended(link)`` returns when its stream ended (default ``link.wait_closed()``;
    Claude's is its reader); ``lost(link, reason)`` fails what still waits on it (and aborts
    it when still open). ``exit_reason`` defaults to the one of ``process``. ``startup_timeout``
    bounds the handshake (``None``: the handshake bounds itself). ``close(link)`` runs,
    shielded, when the block is left; ``around`` is entered before the task group and left
    after it (ACP's client extension).
    """
    if exit_reason is None and process is not None:
        exit_reason = exit_reason_for(process, dialect.what(name))
    raised: BaseException | None = None
    exit_at_failure: ProcessExit | None = None
    async with AsyncExitStack() as stack:
        if around is not None:
            await stack.enter_async_context(around)
        async with anyio.create_task_group() as tg, open_link(tg, exit_reason) as link:
            tg.start_soon(_watch, dialect, name, link, process, exit_reason, ended, lost)
            try:
                hello = await _handshake(dialect, name, handshake, link, process, startup_timeout)
                yield ChildLink(tg, link, hello, exit_reason)
            except BaseException as exc:
                raised = exc
                exit_at_failure = None if process is None else process.exit
            finally:
                if close is not None:
                    with anyio.CancelScope(shield=True):
                        await close(link)
                tg.cancel_scope.cancel()
    if isinstance(raised, dialect.startup_error):
        raised = _with_exit(dialect, raised, exit_at_failure)
    if raised is not None:  # re-raised as itself, not wrapped in an ExceptionGroup
        raise raised


async def _watch(
    dialect: ChildDialect,
    name: str,
    link: LinkT,
    process: AgentProcess | None,
    exit_reason: ExitReason | None,
    ended: Callable[[LinkT], Awaitable[object]] | None,
    lost: Callable[[LinkT, str], None],
) -> None:
    """Wait until the stream ends or the child exits with it still open; then report why."""
    async with anyio.create_task_group() as race:

        async def on_exit(child: AgentProcess) -> None:
            await exited_while_open(child, lambda: link)
            race.cancel_scope.cancel()

        async def on_end() -> None:
            await (link.wait_closed() if ended is None else ended(link))
            race.cancel_scope.cancel()

        if process is not None:
            race.start_soon(on_exit, process)
        race.start_soon(on_end)
    reason = f"{dialect.what(name)} closed the connection"
    if exit_reason is not None:
        with anyio.move_on_after(EXIT_REASON_WAIT):
            reason = await exit_reason()
    lost(link, reason)


async def _handshake(
    dialect: ChildDialect,
    name: str,
    handshake: Callable[[LinkT], Awaitable[HelloT]],
    link: LinkT,
    process: AgentProcess | None,
    timeout: float | None,
) -> HelloT:
    try:
        with anyio.fail_after(timeout):
            return await handshake(link)
    except TimeoutError as exc:
        tail = (
            ""
            if process is None
            else f"; stderr tail: {process.stderr_tail()[-_STDERR_IN_ERRORS:]!r}"
        )
        raise dialect.startup_error(
            f"{dialect.what(name)} did not answer initialize within {timeout} s{tail}"
        ) from exc
    except dialect.closed as exc:
        raise dialect.startup_error(
            f"{dialect.kind} exited before answering initialize: {exc}"
        ) from exc
    except dialect.refused as exc:
        raise dialect.startup_error(f"{dialect.kind} refused initialize: {exc}") from exc


def _with_exit(dialect: ChildDialect, error: Exception, exit_: ProcessExit | None) -> Exception:
    """A start-up error naming the child's exit (``exit_``: how it had ended when the start-up
    failed, before its stdin was closed), when it had and the error does not say so. An exit
    after that moment is not named: whether it came before this line would be a race (a child
    that ends on stdin EOF), and the message must not depend on it."""
    if exit_ is None or "exited" in str(error):
        return error
    named = dialect.startup_error(f"{error}; {dialect.kind} {exit_.describe()}")
    named.__cause__ = error
    return named
