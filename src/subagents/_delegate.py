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
ends ``cancelled``), then the run handle, owned with ``async with`` (disposed whatever
happens), then its one outcome. ``timeout`` (default: the entry's ``timeout``; ``0``: no
limit) and the caller's ``cancel`` fire the run's cancellation signal; a child that has not
ended its turn :data:`STOP_GRACE` seconds later is stopped outright (outcome ``cancelled``).

A registry name's provider is built, entered and closed by the delegation: every child
process and task it starts ends before the outcome is yielded. A provider instance is the
caller's: pass an open one (inside its ``async with``); the delegation owns only the run.

Stopping early: enter the delegation (``async with subagents.delegate(...) as events:``, then
``async for event in events``, where a ``break`` is fine) or close it (``aclose()``); the run
is disposed and the child process reaped before the block ends (``aclose()`` returns). A
consumer cancelled while it waits for the next event gets the same clean-up. A loop that
reads up to the outcome needs neither: nothing is held once it is yielded. A bare ``break``
before the outcome, outside ``async with``, is not enough for a registry name: the provider's
task group lives in the consumer's task, and a generator that the garbage collector closes
(in another task) cannot end it (a ``ResourceWarning`` says so; asyncio and trio then report
a corrupted cancel scope stack).
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, TypeVar, final

import anyio

from .config import ConfigError
from .providers.contract import (
    CancelSignal,
    OutcomeStatus,
    ProgressEvent,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentProvider,
    SubagentRequest,
    SubagentRun,
)

if TYPE_CHECKING:
    from .config import AgentSpec, Permission
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

STOP_GRACE: Final = 10.0
"""Seconds a cancelled (or timed out) child has to end its turn before it is stopped outright
(the same grace as ``subagents run``)."""

_T = TypeVar("_T")
_UNCLOSED: Final = (
    "subagents.delegate() was left without aclose() while its run was live (a `break` out of "
    "`async for`?): the garbage collector closes it in another task, which cannot end the "
    "provider's task group. Stop early with `async with delegate(...) as events:`"
)


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


def delegate(
    agent: str | SubagentProvider,
    prompt: str,
    *,
    config: PathArg | Sequence[PathArg] | None = None,
    cwd: PathArg | None = None,
    timeout: float | None = None,
    permission: Permission | None = None,
    ask: Asker | None = None,
    model: str | None = None,
    cancel: CancelSignal | None = None,
) -> Delegation:
    """Delegate ``prompt`` to ``agent`` and stream the run: its progress events, then one
    :class:`DelegationOutcome` (see the module docstring); iterate the :class:`Delegation`,
    or enter it first to be free to stop early.

    ``agent``: a registry name (the built-ins, the default ``subagents.toml`` files, then the
    ``config`` files), or a provider (open: the caller owns it). For a registry name only:
    ``cwd`` (the agent's working directory), ``permission`` (``allow``, ``deny``, or ``ask``,
    which awaits ``ask(question)``; without ``ask`` requests are denied; default: the
    entry's), ``model``. ``timeout``: seconds, ``0`` for no limit (default: the entry's
    ``timeout``, none for a provider). ``cancel``: a signal of the caller's that cancels the
    turn when fired.

    The registry is read and the agent looked up here, before anything runs: an unknown name
    raises :class:`UnknownAgent` (``did you mean``), a bad registry file or entry
    :class:`~subagents.config.ConfigError`, an unknown provider kind
    :class:`~subagents.providers.factory.UnknownProviderKind`, bad arguments ``ValueError``
    or ``TypeError``. A start that fails raises
    :class:`~subagents.providers.contract.SubagentError` from the iteration.
    """
    if not prompt.strip():
        raise ValueError("the prompt is empty")
    if timeout is not None and (math.isnan(timeout) or timeout < 0):
        raise ValueError(f"timeout: expected seconds >= 0 (0: no limit), not {timeout!r}")
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
        return Delegation(_stream(agent, None, None, prompt, timeout or None, cancel))
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
    return Delegation(_stream(provider, provider, spec, prompt, limit or None, cancel))


@final
class Delegation(AsyncIterator[DelegationEvent]):
    """One delegation's events (what :func:`delegate` returns). ``async for`` reads them;
    ``async with`` around the loop makes stopping early (``break``, an exception) dispose of
    the run and reap the child, in the consumer's own task, when the block ends."""

    def __init__(self, events: AsyncGenerator[DelegationEvent, None]) -> None:
        self._events = events

    def __aiter__(self) -> Delegation:
        return self

    async def __anext__(self) -> DelegationEvent:
        return await self._events.__anext__()

    async def aclose(self) -> None:
        """Stop: the run is disposed and its child reaped before this returns."""
        await self._events.aclose()

    async def __aenter__(self) -> Delegation:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._events.aclose()


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


@final
class _Clock:
    """The delegation's deadlines, watched while it waits on the child (start, the next
    event, the outcome), never while the consumer runs: nothing of it outlives a wait, so no
    task or cancel scope of it is held across a ``yield``.

    Once ``timeout`` runs out it fires the run's signal (the turn is cancelled, politely);
    once the signal has fired (that way or the caller's), a child still running
    :data:`STOP_GRACE` seconds later is stopped: the wait is cut short and ``stopped`` says
    why."""

    def __init__(self, signal: CancelSignal, timeout: float | None, armed: bool) -> None:
        self.signal = signal
        self.timeout = timeout
        self.deadline = anyio.current_time() + timeout if timeout else math.inf
        self.armed = armed
        self.fired_at: float | None = None
        self.timed_out = False
        self.stopped: str | None = None

    async def wait(self, step: Callable[[], Awaitable[_T]]) -> _T | None:
        """``await step()``, or ``None`` once the child is stopped. An exception of
        ``step`` propagates as it is (not in an exception group)."""
        if self.stopped is not None:
            return None
        if not self.armed:
            return await step()
        failure: Exception | None = None
        value: _T | None = None
        async with anyio.create_task_group() as watchers:
            watchers.start_soon(self._watch, watchers.cancel_scope)
            try:
                value = await step()
            except Exception as exc:
                failure = exc
            watchers.cancel_scope.cancel()
        if failure is not None:
            raise failure
        return value

    async def _watch(self, wait: anyio.CancelScope) -> None:
        signal = self.signal
        if not signal.cancelled:
            with anyio.CancelScope(deadline=self.deadline):
                await signal.wait()
            if not signal.cancelled:
                from .commands._run_console import format_seconds

                self.timed_out = True
                signal.cancel(f"timed out after {format_seconds(self.timeout or 0)} s")
        if self.fired_at is None:
            self.fired_at = anyio.current_time()
        await anyio.sleep_until(self.fired_at + STOP_GRACE)
        self.stopped = f"{signal.reason}; the agent did not stop in time and was stopped"
        wait.cancel()


async def _stream(
    provider: SubagentProvider,
    owned: ManagedProvider | None,
    spec: AgentSpec | None,
    prompt: str,
    timeout: float | None,
    cancel: CancelSignal | None,
) -> AsyncGenerator[DelegationEvent, None]:
    """The run, as events: ``provider`` is entered (and closed) here when ``owned``."""
    started = anyio.current_time()
    host = anyio.get_current_task().id
    signal = cancel.child() if cancel is not None else CancelSignal()
    clock = _Clock(signal, timeout, armed=timeout is not None or cancel is not None)
    outcome: SubagentOutcome | None = None
    failure: SubagentError | None = None
    child_id = ""
    closing = False
    async with AsyncExitStack() as stack:
        # Exceptions are kept for after the provider's block: its task group would wrap
        # them (a failed start, or the GeneratorExit of ``aclose()``) in an exception group.
        if owned is not None:
            await stack.enter_async_context(owned)
        request = SubagentRequest(
            prompt,
            description=f"subagents.delegate {provider.name}",
            parent_session=_parent_session(provider),
        )
        run: SubagentRun | None = None
        try:
            run = await clock.wait(lambda: provider.start(request, cancel=signal))
        except SubagentError as exc:
            if exc.code is SubagentErrorCode.CANCELLED:
                outcome = SubagentOutcome.cancelled("", signal.reason or "cancelled")
            else:
                failure = exc
        if run is not None:
            async with run:
                child_id = run.id
                events = run.progress()
                if events is not None:
                    feed = events
                    while (event := await clock.wait(lambda: anext(feed, None))) is not None:
                        try:
                            yield event
                        except GeneratorExit:  # aclose(): dispose of the run, then close
                            closing = True
                            if anyio.get_current_task().id != host:
                                warnings.warn(_UNCLOSED, ResourceWarning, stacklevel=1)
                            break
                if not closing:
                    outcome = await clock.wait(run.result)
    if failure is not None:
        raise failure
    if closing:
        return
    if outcome is None:  # stopped outright
        outcome = SubagentOutcome.cancelled(child_id, clock.stopped or "stopped")
    yield DelegationOutcome(
        spec.name if spec is not None else provider.name,
        outcome,
        anyio.current_time() - started,
        timed_out=clock.timed_out,
    )


def _parent_session(provider: SubagentProvider) -> str | None:
    """A fork needs its parent's history: its runtime's root session, as ``subagents run``
    gives it."""
    if "subagents.providers.fork" not in sys.modules:  # then it cannot be a fork
        return None
    from .providers.fork import ForkProvider

    if isinstance(provider, ForkProvider):
        return provider.runtime.root_agent().id
    return None
