"""``subagents.delegate``: one streamed delegation in one call.

::

    async for event in subagents.delegate("reference", "hello"):
        if event.kind == "text":
            print(event.text, end="")
        elif event.kind == "outcome":
            print(f"\\n[{event.status}]")

The agent is a registry name (the entries ``subagents run`` uses: :func:`load_agents`, plus
``config`` files) or a provider. The events are the run's progress events (the progress
vocabulary of :mod:`subagents.providers.contract`, switched on ``kind``), then exactly one
:class:`DelegationOutcome` (``kind == "outcome"``), which carries the run's
:class:`~subagents.providers.contract.SubagentOutcome`.

It follows the run contract: ``start`` (a start that fails raises
:class:`~subagents.providers.contract.SubagentError`; one cancelled before the child exists
ends ``cancelled``), then the run handle, disposed whatever happens, then its one outcome.
``timeout`` (default: the entry's ``timeout``; ``0``: no limit) and the caller's ``cancel``
fire the run's cancellation signal; a child that has not ended its turn ``stop_grace``
seconds later (default :data:`STOP_GRACE`) is stopped outright (outcome ``cancelled``). The
text a child streamed survives every ending, a hard stop included (``outcome.output`` and
``outcome.partial_output``, bounded by
:data:`~subagents.providers.contract.PARTIAL_OUTPUT_LIMIT`).

A registry name's provider is built, entered and closed by the delegation: every child
process and task it starts ends before the outcome is yielded. A provider instance is the
caller's: pass an open one (inside its ``async with``); the delegation owns only the run.

Stopping early is safe however the loop ends: a ``break``, a ``return`` or an exception out
of ``async for`` disposes of the run and reaps the child, on asyncio and trio, with no
warning. The delegation runs in a task of its own (the *host*), never in the consumer's: it
enters the provider, starts the run and hands each event over (one at a time: the host waits
until the consumer takes it). The host's owner is the event loop itself (an asyncio task;
a trio system task), so no task group or cancel scope of the delegation ever lives in the
consumer's task, and nothing has to be exited from the wrong task. When the consumer lets go
of the :class:`Delegation` (the loop is left and the object dropped), its host is cancelled
at once: the run is disposed and the child reaped in the background, and at the latest
before ``asyncio.run`` or ``trio.run`` returns (both cancel and wait for such tasks). To wait
for the clean-up where you stop, close the delegation (``await events.aclose()``) or enter it
(``async with subagents.delegate(...) as events:``): the child is reaped before ``aclose()``
returns or the block ends (and ``aclose()`` raises what failed in it, a disposal that could
not end the child say; after a bare ``break`` that is logged, on the ``subagents.delegate``
logger). A consumer cancelled while it waits for the next event waits for the same clean-up
before the cancellation propagates. A delegation still referenced (kept in a variable) after
the loop is left is not let go of: its child waits, until ``aclose()`` or the last reference
goes.
"""

from __future__ import annotations

import contextvars
import logging
import math
import os
import sys
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, final, get_args

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .cancel import CancelSignal
from .config import ConfigError, Permission
from .providers.contract import (
    OutcomeStatus,
    ProgressEvent,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentProvider,
    SubagentRequest,
    SubagentRun,
    child_id_of,
)
from .providers.progress import StreamedText, stopped_outcome

if TYPE_CHECKING:
    from .config import AgentSpec
    from .protocol.jsonrpc import JsonValue
    from .providers.factory import Asker, ManagedProvider

__all__ = (
    "STOP_GRACE",
    "Delegation",
    "DelegationEvent",
    "DelegationOutcome",
    "UnknownAgent",
    "delegate",
)

logger = logging.getLogger("subagents.delegate")

STOP_GRACE: Final = 10.0
"""Seconds a cancelled (or timed out) child has, by default, to end its turn before it is
stopped outright (the same grace as ``subagents run``)."""

PERMISSIONS: Final[tuple[Permission, ...]] = get_args(Permission)
"""The values ``permission`` takes."""


class UnknownAgent(ConfigError, LookupError):
    """No agent of that name in the registry. The message is the one ``subagents run`` gives
    (the closest names, ``did you mean``, else the known ones); ``hint`` says how to list or
    add agents (also shown as a note of the traceback)."""


@final
@dataclass(frozen=True, slots=True)
class DelegationOutcome:
    """The last event of a delegation: how the run ended."""

    kind: Literal["outcome"] = field(default="outcome", init=False)
    agent: str
    """The registry name, or the provider's name."""
    outcome: SubagentOutcome
    """The run's outcome (its ``child_id``, ``status``, ``output``, ``message``, ``usage``)."""
    seconds: float
    """How long the delegation took, start included."""
    timed_out: bool = False
    """Whether ``timeout`` ran out (the outcome is then ``cancelled``)."""

    @property
    def status(self) -> OutcomeStatus:
        return self.outcome.status

    @property
    def output(self) -> JsonValue:
        """The child's answer (or, when not ``completed``, the text it streamed, if any)."""
        return self.outcome.output


DelegationEvent: TypeAlias = ProgressEvent | DelegationOutcome
"""What :func:`delegate` yields: progress events, then one :class:`DelegationOutcome`."""


PathArg: TypeAlias = "str | os.PathLike[str]"


def _seconds(name: str, value: float | None, meaning: str) -> None:
    if value is not None and (math.isnan(value) or value < 0):
        raise ValueError(f"{name}: expected seconds >= 0 ({meaning}), not {value!r}")


def delegate(
    agent: str | SubagentProvider,
    prompt: str,
    *,
    config: PathArg | Sequence[PathArg] | None = None,
    cwd: PathArg | None = None,
    timeout: float | None = None,
    stop_grace: float | None = None,
    permission: Permission | None = None,
    ask: Asker | None = None,
    model: str | None = None,
    cancel: CancelSignal | None = None,
) -> Delegation:
    """Delegate ``prompt`` to ``agent`` and stream the run: its progress events, then one
    :class:`DelegationOutcome` (see the module docstring); iterate the :class:`Delegation`
    (leaving the loop early, however, disposes of the run).

    ``agent``: a registry name (the built-ins, the default ``subagents.toml`` files, then the
    ``config`` files), or a provider (open: the caller owns it). For a registry name only:
    ``cwd`` (the agent's working directory), ``permission`` (``allow``, ``deny``, or ``ask``,
    which awaits ``ask(question)``; without ``ask`` requests are denied; default: the
    entry's), ``model``. ``timeout``: seconds, ``0`` for no limit (default: the entry's
    ``timeout``, none for a provider). ``stop_grace``: seconds a cancelled or timed-out turn
    has to end before the child is stopped outright (default :data:`STOP_GRACE`; ``0``: at
    once). ``cancel``: a signal of the caller's that cancels the turn when fired.

    The registry is read and the agent looked up here, before anything runs: an unknown name
    raises :class:`UnknownAgent` (``did you mean``), a bad registry file or entry
    :class:`~subagents.config.ConfigError`, an unknown provider kind
    :class:`~subagents.providers.factory.UnknownProviderKind`, bad arguments ``ValueError``
    (an empty prompt, a negative or NaN ``timeout`` or ``stop_grace``, a ``permission``
    other than ``ask``, ``allow``, ``deny``) or ``TypeError``. A start that fails raises
    :class:`~subagents.providers.contract.SubagentError` from the iteration.
    """
    if not prompt.strip():
        raise ValueError("the prompt is empty")
    _seconds("timeout", timeout, "0: no limit")
    _seconds("stop_grace", stop_grace, "0: stop at once")
    if permission is not None and permission not in PERMISSIONS:
        allowed = ", ".join(repr(value) for value in PERMISSIONS)
        raise ValueError(f"permission: expected one of {allowed}, not {permission!r}")
    grace = STOP_GRACE if stop_grace is None else stop_grace
    if not isinstance(agent, str):
        given = [
            name
            for name, value in (
                ("config", config),
                ("cwd", cwd),
                ("permission", permission),
                ("ask", ask),
                ("model", model),
            )
            if value is not None
        ]
        if given:
            raise TypeError(
                f"{', '.join(given)}: only for a registry name; a provider instance is "
                "configured when it is made"
            )
        return Delegation(_Host(agent, None, agent.name, prompt, timeout or None, grace, cancel))
    spec = _lookup(agent, config)
    if cwd is not None:
        directory = Path(cwd).expanduser()
        if not directory.is_dir():
            raise ValueError(f"cwd: {os.fspath(cwd)} is not a directory")
        spec = replace(spec, cwd=str(directory.resolve()))
    spec = spec.with_overrides(permission=permission, model=model)
    from .providers.factory import BuildContext, build_provider

    provider = build_provider(spec, BuildContext(ask=ask))
    limit = timeout if timeout is not None else spec.timeout
    return Delegation(_Host(provider, provider, spec.name, prompt, limit or None, grace, cancel))


@final
class Delegation(AsyncIterator[DelegationEvent]):
    """One delegation's events (what :func:`delegate` returns). ``async for`` reads them;
    leaving the loop early in any way disposes of the run (in the background once the object
    is dropped). :meth:`aclose`, or ``async with`` around the loop, waits for that clean-up
    (the child reaped) where you stop."""

    def __init__(self, host: _Host) -> None:
        self._host = host
        self._closed = False
        self._finalizer: weakref.finalize[[], Delegation] | None = None

    def __aiter__(self) -> Delegation:
        return self

    async def __anext__(self) -> DelegationEvent:
        host = self._host
        if self._closed and not host.spawned:  # closed before it started: nothing runs
            raise StopAsyncIteration
        if not host.spawned:
            host.spawn()
            # Dropped without aclose() (a `break`...): the host is cancelled in the loop.
            finalizer = self._finalizer = weakref.finalize(self, host.abandon_soon)
            finalizer.atexit = False
        try:
            return await host.next()
        except Exception:  # the end, or the delegation's own failure: the host is done
            raise
        except BaseException:  # cancelled while waiting (or interrupted): clean up first
            failure: Exception | None = None
            with anyio.CancelScope(shield=True):
                failure = await host.close()
            if failure is not None:
                logger.error("subagents.delegate: the clean-up failed", exc_info=failure)
            raise

    async def aclose(self) -> None:
        """Stop: the run is disposed and its child reaped before this returns (what failed
        on the way, a disposal that could not end the child say, is raised here)."""
        self._closed = True
        failure: Exception | None = None
        with anyio.CancelScope(shield=True):
            failure = await self._host.close()
        if failure is not None:
            raise failure

    async def __aenter__(self) -> Delegation:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _lookup(name: str, config: PathArg | Sequence[PathArg] | None) -> AgentSpec:
    """The registry entry ``name``, the way ``subagents run`` finds it."""
    from .commands._common import unknown_agents
    from .config import load_agents

    if config is None:
        files: list[PathArg] = []
    elif isinstance(config, str | os.PathLike):
        files = [config]
    else:
        files = list(config)
    agents = load_agents([Path(f) for f in files])
    spec = agents.get(name)
    if spec is None:
        message, hint = unknown_agents([name], agents, [os.fspath(f) for f in files])
        error = UnknownAgent(message, hint=hint)
        error.add_note(f"hint: {hint}")
        raise error
    return spec


_ClosedOrBroken = (anyio.BrokenResourceError, anyio.ClosedResourceError)

_hosts: set[object] = set()
"""The asyncio tasks of live hosts (the loop keeps only weak references to its tasks)."""


@final
class _Host:
    """One delegation, run in a task of its own (see the module docstring): the provider
    (entered and closed here when ``owned``), the run, the deadlines; it hands the events to
    the consumer through a memory stream without a buffer (it waits until each is taken).

    Its owner is the event loop: an asyncio task, or a trio system task; both are cancelled
    and awaited when the loop's main task ends. It never raises (a trio system task must
    not): a failure is kept and raised by the consumer's next :meth:`next`."""

    def __init__(
        self,
        provider: SubagentProvider,
        owned: ManagedProvider | None,
        agent: str,
        prompt: str,
        timeout: float | None,
        stop_grace: float,
        cancel: CancelSignal | None,
    ) -> None:
        self._provider = provider
        self._owned = owned
        self._agent = agent
        self._prompt = prompt
        self._timeout = timeout
        self._grace = stop_grace
        self._cancel = cancel
        self.spawned = False
        self._abandoned = False
        self._orphaned = False
        self._scope: anyio.CancelScope | None = None
        self._send: MemoryObjectSendStream[DelegationEvent] | None = None
        self._receive: MemoryObjectReceiveStream[DelegationEvent] | None = None
        self._finished: anyio.Event | None = None
        self._failure: Exception | None = None
        self._call_soon: Callable[[Callable[[], None]], object] | None = None
        self._timed_out = False
        self._stopped: str | None = None
        self._child: SubagentRun | None = None

    # -- the consumer's side

    def spawn(self) -> None:
        """Start the host task, owned by the running event loop."""
        self.spawned = True
        self._send, self._receive = anyio.create_memory_object_stream[DelegationEvent](0)
        self._finished = anyio.Event()
        trio = sys.modules.get("trio")
        if trio is not None and trio.lowlevel.in_trio_task():
            self._call_soon = trio.lowlevel.current_trio_token().run_sync_soon
            trio.lowlevel.spawn_system_task(
                self._main,
                name=f"subagents.delegate {self._agent}",
                context=contextvars.copy_context(),
            )
            return
        import asyncio

        loop = asyncio.get_running_loop()
        self._call_soon = loop.call_soon_threadsafe
        task = loop.create_task(self._main(), name=f"subagents.delegate {self._agent}")
        _hosts.add(task)
        task.add_done_callback(_hosts.discard)

    async def next(self) -> DelegationEvent:
        """The next event; ``StopAsyncIteration`` at the end, or the delegation's failure."""
        receive, finished = self._receive, self._finished
        assert receive is not None
        assert finished is not None
        try:
            return await receive.receive()
        except anyio.EndOfStream:
            pass
        except anyio.ClosedResourceError:  # closed: aclose(), or an earlier end
            raise StopAsyncIteration from None
        await finished.wait()
        receive.close()
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure  # raised here, not in the except clause: no EndOfStream context
        raise StopAsyncIteration

    def abandon(self) -> None:
        """The consumer is gone, or stops: cancel the host (the run is disposed, the child
        reaped, the provider closed, all in the host's own task)."""
        self._abandoned = True
        if self._scope is not None:
            self._scope.cancel()
        if self._receive is not None:
            self._receive.close()

    def abandon_soon(self) -> None:
        """:meth:`abandon`, from a finalizer: in the event loop, from whatever thread and at
        whatever point the garbage collector runs it."""
        self._orphaned = True
        if self._call_soon is None:
            return
        try:
            self._call_soon(self.abandon)
        except RuntimeError:  # the loop is closed: it cancelled and awaited the host
            if self._receive is not None:
                self._receive.close()

    async def wait(self) -> None:
        """Wait until the host is done (it has disposed of the run and closed the provider)."""
        if self._finished is not None:
            await self._finished.wait()

    async def close(self) -> Exception | None:
        """Stop, wait until the host is done, and return what failed in it, if anything
        (a disposal that could not end the child, say)."""
        self.abandon()
        if self._finished is not None:
            await self._finished.wait()
        failure, self._failure = self._failure, None
        return failure

    # -- the host's side

    async def _main(self) -> None:
        send, finished = self._send, self._finished
        assert send is not None
        assert finished is not None
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                if self._abandoned:
                    scope.cancel()
                outcome = await self._delegate(send)
                if outcome is not None:
                    await send.send(outcome)
        except _ClosedOrBroken:  # the consumer let go
            pass
        except Exception as exc:  # also one the scope's exit leaves (a group, cancelled)
            self._failure = self._failure or exc
        finally:
            send.close()
            if self._orphaned and self._failure is not None:  # nobody will read it
                logger.error(
                    "subagents.delegate %s: the clean-up failed",
                    self._agent,
                    exc_info=self._failure,
                )
            finished.set()  # the last thing the task does: a waiter sees it gone

    async def _delegate(
        self, send: MemoryObjectSendStream[DelegationEvent]
    ) -> DelegationOutcome | None:
        """The run; its outcome, or ``None`` when the consumer let go first or it failed
        (the failure kept in ``_failure`` at once: a cancellation of the host that follows,
        out of a task group's exit, must not lose it)."""
        started = anyio.current_time()
        deadline = started + self._timeout if self._timeout else math.inf
        provider = self._provider
        signal = self._cancel.child() if self._cancel is not None else CancelSignal()
        outcome: SubagentOutcome | None = None
        failure: Exception | None = None
        streamed = StreamedText()
        gone = False
        async with AsyncExitStack() as stack:
            # Exceptions are kept for after the provider's block: its task group would wrap
            # them (a failed start, say) in an exception group.
            if self._owned is not None:
                await stack.enter_async_context(self._owned)
            request = SubagentRequest(
                self._prompt,
                description=f"subagents.delegate {provider.name}",
                parent_session=_parent_session(provider),
            )
            async with anyio.create_task_group() as watchers:
                with anyio.CancelScope() as hard:
                    watchers.start_soon(self._watch, signal, deadline, hard)
                    try:
                        outcome = await self._run(provider, request, signal, send, streamed)
                    except SubagentError as exc:
                        if exc.code is SubagentErrorCode.CANCELLED:
                            outcome = SubagentOutcome.cancelled("", signal.reason or "cancelled")
                        else:
                            failure = self._failure = exc
                    except _ClosedOrBroken:  # the consumer let go
                        gone = True
                    except Exception as exc:
                        failure = self._failure = exc
                watchers.cancel_scope.cancel()
            if gone:
                return None
            if failure is None and outcome is None:  # stopped outright
                run = self._child
                child_id = child_id_of(run) if run is not None else ""
                outcome = await stopped_outcome(
                    run, child_id, self._stopped or "stopped", streamed.text
                )
        if failure is not None:
            return None
        assert outcome is not None
        return DelegationOutcome(
            self._agent, outcome, anyio.current_time() - started, timed_out=self._timed_out
        )

    async def _run(
        self,
        provider: SubagentProvider,
        request: SubagentRequest,
        signal: CancelSignal,
        send: MemoryObjectSendStream[DelegationEvent],
        streamed: StreamedText,
    ) -> SubagentOutcome:
        """Start the run, hand its events over, and return its outcome."""
        run = self._child = await provider.start(request, cancel=signal)
        async with run:
            events = run.progress()
            if events is not None:
                async for event in events:
                    streamed.add(event)
                    await send.send(event)
            return await run.result()

    async def _watch(self, signal: CancelSignal, deadline: float, hard: anyio.CancelScope) -> None:
        """Fire ``signal`` when the deadline passes; stop the child outright (cancel
        ``hard``) once the signal has fired (that way or the caller's) and the grace is over."""
        if not signal.cancelled:
            with anyio.CancelScope(deadline=deadline):
                await signal.wait()
            if not signal.cancelled:
                from .commands._run_console import format_seconds

                self._timed_out = True
                signal.cancel(f"timed out after {format_seconds(self._timeout or 0)} s")
        await anyio.sleep(self._grace)
        self._stopped = f"{signal.reason}; the agent did not stop in time and was stopped"
        hard.cancel()


def _parent_session(provider: SubagentProvider) -> str | None:
    """A fork needs its parent's history: its runtime's root session, as ``subagents run``
    gives it."""
    if "subagents.providers.fork" not in sys.modules:  # then it cannot be a fork
        return None
    from .providers.fork import ForkProvider

    if isinstance(provider, ForkProvider):
        return provider.runtime.root_agent().id
    return None
