"""The Claude Code client: drive the ``claude`` CLI over stream-json and its control protocol.

::

    options = ClaudeOptions(model="claude-sonnet-4-6", config_dir=scratch / ".claude")
    async with connect_claude(cli, options, env=env, permission_policy=my_policy) as conn:
        async with conn.turn("Say hello.") as turn:
            async for event in turn:                  # typed events, in order
                if isinstance(event, ClaudeStreamEvent) and event.text_delta:
                    print(event.text_delta, end="")
            result = await turn.result()              # ClaudeResult(subtype, is_error, ...)

:func:`connect_claude` starts the CLI; :func:`connect_claude_over` speaks to one over a
byte-stream pair (its stdout and stdin). The wire is one JSON object per line both ways (the
facts are in the project's research note on the real CLI 2.1.332, ``claude.md``); the models,
the argv, the control messages and the line → event parsing are sans-IO, in
:mod:`subagents.protocol.claude` (re-exported here). What this client takes care of:

- the environment (:func:`build_claude_env`): ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``
  (the one switch that stops all outside traffic), ``CLAUDECODE`` removed (nested runs),
  ``IS_SANDBOX`` normalised to the only value the CLI accepts as root (``1``);
- the ``initialize`` control request first; a CLI that exits before answering raises
  :class:`ClaudeStartupError` naming the exit status and the stderr tail;
- control requests from the CLI are always answered: ``can_use_tool`` by the permission
  policy (default: deny; a policy that raises is a deny, logged with its traceback, as in
  every transport: issue 19), ``hook_callback`` by the hook registered under its id, anything
  else with an error; ``control_cancel_request`` drops the pending answer; control responses
  are matched to our requests by ``request_id`` (the shared
  :class:`~subagents.rpc.PendingRequests` table, every wait bounded);
- stdout lines up to :data:`DEFAULT_MAX_LINE_BYTES` (16 MiB; the official SDK's 1 MiB breaks
  on long replies), split by the project's one line splitter; a longer line fails the running
  turn with :class:`ClaudeLineTooLongError` naming its size; lines not starting with ``{`` are
  skipped; unknown message types and subtypes are delivered as :class:`ClaudeRawEvent`;
- only JSON objects are ever written to stdin (a non-JSON line kills the CLI);
- cancellation is the ``interrupt`` control request (closing stdin does not end a turn):
  ``turn.cancel()``; leaving a turn's block early interrupts it and waits (bounded) for its
  result; more than ``max_events`` unread events fail the turn with
  :class:`~subagents.transports.TurnOverflowError` and interrupt it;
- closing: interrupt if a turn runs, close stdin, wait, then the process layer's ladder
  (SIGTERM before SIGKILL: the CLI kills its tool children on SIGTERM, SIGKILL orphans them).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Final, final

import anyio
import anyio.abc

from ..protocol.claude import (
    DEFAULT_MAX_LINE_BYTES,
    ClaudeAllowTool,
    ClaudeAssistantMessage,
    ClaudeConfigError,
    ClaudeControlError,
    ClaudeDenyTool,
    ClaudeEvent,
    ClaudeHook,
    ClaudeLineTooLongError,
    ClaudeOptions,
    ClaudePermissionPolicy,
    ClaudeRawEvent,
    ClaudeResult,
    ClaudeStreamEvent,
    ClaudeSystemInit,
    ClaudeToolPermissionRequest,
    ClaudeToolUse,
    ClaudeUserMessage,
    build_claude_argv,
    hook_registrations,
    user_message,
)
from ..protocol.jsonrpc import JsonObject, JsonValue
from ._child_connection import ChildDialect, open_child_connection
from ._claude_wire import ClaudeConnectionError, ClaudeWire, TurnState
from ._turn_events import DEFAULT_MAX_EVENTS, TurnOverflowError
from .process import BASE_ENV_VARS, AgentProcess, open_agent_process

__all__ = (
    "DEFAULT_MAX_LINE_BYTES",
    "AllowTool",
    "ClaudeAllowTool",
    "ClaudeAssistantMessage",
    "ClaudeConfigError",
    "ClaudeConnection",
    "ClaudeConnectionError",
    "ClaudeControlError",
    "ClaudeDenyTool",
    "ClaudeEvent",
    "ClaudeHook",
    "ClaudeLineTooLongError",
    "ClaudeOptions",
    "ClaudePermissionPolicy",
    "ClaudeRawEvent",
    "ClaudeResult",
    "ClaudeStartupError",
    "ClaudeStreamEvent",
    "ClaudeSystemInit",
    "ClaudeToolPermissionRequest",
    "ClaudeToolUse",
    "ClaudeTurn",
    "ClaudeUserMessage",
    "DenyTool",
    "ToolPermissionRequest",
    "allow_tools_policy",
    "build_claude_argv",
    "build_claude_env",
    "connect_claude",
    "connect_claude_over",
    "deny_tools_policy",
)

CONTROL_TIMEOUT: float = 10.0
"""Seconds a control request (other than ``initialize``) may take to be answered."""
INTERRUPT_SETTLE_TIMEOUT: float = 10.0
"""Seconds to wait for a turn's result after interrupting it, when its block is left early."""
CANCELLED_EXIT_TIMEOUT: float = 1.0
"""The bound on that wait when the block is left by cancellation."""

_TRUTHY: Final = frozenset({"1", "yes", "true", "on", "y"})
_BYPASS_MODES: Final = frozenset({"bypassPermissions"})


class ClaudeStartupError(Exception):
    """The CLI did not answer ``initialize``: it exited, timed out or answered an error."""


def build_claude_env(
    options: ClaudeOptions,
    env: Mapping[str, str] | None = None,
    *,
    inherit_env: bool = False,
    parent: Mapping[str, str] | None = None,
    is_root: bool | None = None,
) -> dict[str, str]:
    """The CLI's environment: the process layer's base (or the whole ``parent`` with
    ``inherit_env``), then ``env``, then these rules:

    - ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` (no telemetry, update check or error
      reporting traffic; without it the CLI resolves ``api.anthropic.com`` even offline);
    - ``CLAUDE_CONFIG_DIR`` from ``options.config_dir``;
    - ``CLAUDECODE`` removed (the CLI refuses to nest otherwise);
    - ``IS_SANDBOX``: as root the CLI accepts bypass modes only with exactly ``1``; a truthy
      value (``yes``, ``true``) is normalised to ``1``, anything else removed. A bypass mode
      as root without a sandbox raises :class:`ClaudeConfigError` (the CLI would exit 1).
    """
    source = os.environ if parent is None else parent
    if inherit_env:
        result = dict(source)
    else:
        result = {name: source[name] for name in BASE_ENV_VARS if name in source}
        if "IS_SANDBOX" in source:
            result["IS_SANDBOX"] = source["IS_SANDBOX"]
    if env:
        result.update(env)
    result["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    if options.config_dir is not None:
        result["CLAUDE_CONFIG_DIR"] = os.fspath(options.config_dir)
    result.pop("CLAUDECODE", None)
    sandbox = result.pop("IS_SANDBOX", "").strip().lower() in _TRUTHY
    if sandbox:
        result["IS_SANDBOX"] = "1"
    root = (os.geteuid() == 0) if is_root is None else is_root
    if root and not sandbox and options.permission_mode in _BYPASS_MODES:
        raise ClaudeConfigError(
            f"permission_mode {options.permission_mode!r} is refused by the CLI as root "
            "unless IS_SANDBOX=1 (run as another user, or in a sandbox that sets IS_SANDBOX)"
        )
    return result


async def deny_tools_policy(
    request: ClaudeToolPermissionRequest,
) -> ClaudeAllowTool | ClaudeDenyTool:
    """The default: deny every tool that asks for permission."""
    return ClaudeDenyTool(f"{request.tool_name} is not allowed here")


async def allow_tools_policy(
    request: ClaudeToolPermissionRequest,
) -> ClaudeAllowTool | ClaudeDenyTool:
    """Allow every tool that asks for permission, with its input unchanged."""
    return ClaudeAllowTool()


# ---------------------------------------------------------------- turns


@final
class ClaudeTurn:
    """One user message and the events up to and including its :class:`ClaudeResult`.

    Iterate it for the events, then ``await result()``; ``cancel()`` interrupts it. Made by
    :meth:`ClaudeConnection.turn`.
    """

    def __init__(self, wire: ClaudeWire, state: TurnState) -> None:
        self._wire = wire
        self._state = state

    @property
    def done(self) -> bool:
        """The turn ended: its result arrived, or it failed."""
        return self._state.done

    @property
    def settled(self) -> bool:
        """The CLI finished the turn (its result line was read), or the connection is lost."""
        return self._state.settled.is_set()

    def __aiter__(self) -> ClaudeTurn:
        return self

    async def __anext__(self) -> ClaudeEvent:
        return await self._state.events.__anext__()

    async def result(self) -> ClaudeResult:
        """Wait for the result (dropping events nobody read, and later ones) and return it.

        Raises the turn's error: :class:`ClaudeConnectionError` (the CLI went away),
        :class:`ClaudeLineTooLongError`, :class:`~subagents.transports.TurnOverflowError`,
        ``TimeoutError`` (the block was left and the interrupted turn never finished).
        """
        await self._state.events.drain()
        return self.result_nowait()

    def result_nowait(self) -> ClaudeResult:
        """The result once it arrived (raising as :meth:`result` does); raises
        ``anyio.WouldBlock`` before."""
        self._state.events.raise_failure()
        if self._state.result is None:
            raise anyio.WouldBlock
        return self._state.result

    async def cancel(self) -> None:
        """Interrupt this turn (the ``interrupt`` control request); it then ends with an
        ``error_during_execution`` result and the process stays usable. A no-op once the CLI
        finished the turn (or its block was left)."""
        state = self._state
        if state.settled.is_set() or self._wire.turn is not state or self._wire.lost is not None:
            return
        await self._wire.interrupt(state, CONTROL_TIMEOUT)

    async def wait(self) -> ClaudeResult:
        """Deprecated: :meth:`result` (the name every turn shares)."""
        warnings.warn(
            "ClaudeTurn.wait() is deprecated: use result()", DeprecationWarning, stacklevel=2
        )
        return await self.result()


# ---------------------------------------------------------------- the connection


@final
class ClaudeConnection:
    """A running CLI, initialized. Made by :func:`connect_claude` (or
    :func:`connect_claude_over`); one turn at a time."""

    def __init__(
        self, wire: ClaudeWire, init_response: JsonObject, process: AgentProcess | None
    ) -> None:
        self._wire = wire
        self._turn_lock = anyio.Lock()
        self.process = process
        """The CLI's process (``None`` when connected over a stream pair)."""
        self.init_response = init_response
        """The ``initialize`` answer (``pid``, ``claude_code_version``, ``models``, ...)."""

    @property
    def session_id(self) -> str | None:
        """The session id of the latest ``system/init`` (``None`` before the first turn)."""
        return self._wire.session_id

    @property
    def line_errors(self) -> list[ClaudeLineTooLongError]:
        """Oversized lines skipped while no turn ran."""
        return self._wire.line_errors

    @property
    def closed(self) -> bool:
        """The CLI's stdout has ended."""
        return self._wire.closed

    async def wait_closed(self) -> None:
        await self._wire.wait_closed()

    @property
    def turn_running(self) -> bool:
        """A turn was sent and the CLI has not finished it."""
        return self._wire.turn_running

    async def control(
        self, subtype: str, timeout: float = CONTROL_TIMEOUT, **fields: JsonValue
    ) -> JsonObject:
        """Send a control request (``interrupt``, ``set_model``, ...); its ``response``.

        Raises :class:`ClaudeControlError` when the CLI answers an error,
        :class:`ClaudeConnectionError` when it exits first, ``TimeoutError`` after
        ``timeout`` seconds.
        """
        return await self._wire.control(subtype, timeout, fields)

    async def interrupt(self) -> None:
        """Interrupt the running turn (the ``interrupt`` control request); the turn then ends
        with a result (``error_during_execution``) and the process stays usable."""
        await self.control("interrupt")

    async def close_stdin(self) -> None:
        await self._wire.close_stdin()

    def abort(self, reason: str) -> None:
        """The CLI is known to be gone: the running turn and pending control requests fail
        at once with :class:`ClaudeConnectionError` naming ``reason``."""
        self._wire.lose(reason)

    @asynccontextmanager
    async def turn(
        self, prompt: str | Sequence[JsonObject], *, max_events: int = DEFAULT_MAX_EVENTS
    ) -> AsyncGenerator[ClaudeTurn, None]:
        """Send a user message; yield its :class:`ClaudeTurn`. Leaving the block before the
        result interrupts the turn and waits (bounded) for its result. More than
        ``max_events`` unread events fail the turn with
        :class:`~subagents.transports.TurnOverflowError` and interrupt it."""
        wire = self._wire
        async with self._turn_lock:

            def overflowed(error: TurnOverflowError) -> None:
                wire.task_group.start_soon(self._stop_overflowed, state)

            state = TurnState(max_events, overflowed)
            turn = ClaudeTurn(wire, state)
            if wire.lost is not None:
                raise ClaudeConnectionError(str(wire.lost))
            wire.turn = state
            try:
                await wire.send(user_message(prompt))
                try:
                    yield turn
                except BaseException as exc:
                    state.events.discard()
                    if not turn.settled:
                        cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
                        await self._abandon(state, cancelled=cancelled)
                    raise
                state.events.discard()
                if not turn.settled:
                    await self._abandon(state, cancelled=False)
            finally:
                wire.turn = None

    async def query(self, prompt: str | Sequence[JsonObject]) -> ClaudeResult:
        """Run one turn to its result."""
        async with self.turn(prompt) as turn:
            return await turn.result()

    async def _abandon(self, state: TurnState, *, cancelled: bool) -> None:
        """Interrupt a turn whose block was left early and wait (bounded) for its result; a
        turn that does not finish in time fails with ``TimeoutError``."""
        bound = CANCELLED_EXIT_TIMEOUT if cancelled else INTERRUPT_SETTLE_TIMEOUT
        with anyio.CancelScope(shield=True), anyio.move_on_after(bound):
            # Not sent yet (or a ``cancel()`` was cancelled before its request left, as when
            # a disposal fires the signal and cancels the run's task at once): send it now.
            if self._wire.lost is None and not state.interrupt_requested:
                with suppress(ClaudeControlError, ClaudeConnectionError, TimeoutError):
                    await self._wire.interrupt(state, bound)
            await state.settled.wait()
        state.fail(TimeoutError(f"the CLI did not finish the interrupted turn within {bound:g} s"))

    async def _stop_overflowed(self, state: TurnState) -> None:
        """Interrupt a turn whose events overflowed (bounded), as leaving its block does."""
        wire = self._wire
        if wire.lost is not None or wire.turn is not state or state.interrupt_requested:
            return
        with suppress(ClaudeControlError, ClaudeConnectionError, TimeoutError):
            await self._wire.interrupt(state, INTERRUPT_SETTLE_TIMEOUT)


# ---------------------------------------------------------------- connect


_CLAUDE: Final = ChildDialect(
    kind="claude",
    startup_error=ClaudeStartupError,
    closed=(ClaudeConnectionError,),
    refused=(ClaudeControlError,),
)


@asynccontextmanager
async def connect_claude_over(
    receive_stream: anyio.abc.ByteReceiveStream,
    send_stream: anyio.abc.ByteSendStream,
    *,
    permission_policy: ClaudePermissionPolicy | None = None,
    hooks: Sequence[ClaudeHook] = (),
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    initialize_timeout: float = 60.0,
    eof_reason: Callable[[], Awaitable[str]] | None = None,
    process: AgentProcess | None = None,
    name: str = "claude",
) -> AsyncGenerator[ClaudeConnection, None]:
    """Speak to a CLI over a byte-stream pair (its stdout, its stdin): send ``initialize``,
    yield the connection, and on exit interrupt a running turn and close ``send_stream``.

    ``permission_policy`` answers ``can_use_tool`` (default: deny); ``hooks`` are registered
    in ``initialize``. When the stream ends, ``eof_reason()`` names why (by default, with
    ``process``, its exit status and stderr tail); with ``process``, its exit ends the
    connection too, even while a grandchild holds the stream open (the child-connection
    base's tail). Raises :class:`ClaudeStartupError` when ``initialize`` is not answered (the
    stream ends, the CLI refuses, or ``initialize_timeout`` passes).
    """
    if max_line_bytes < 1:
        raise ValueError("max_line_bytes must be positive")
    callbacks, hook_config = hook_registrations(hooks)
    policy = permission_policy or deny_tools_policy

    @asynccontextmanager
    async def open_wire(
        tg: anyio.abc.TaskGroup, exit_reason: Callable[[], Awaitable[str]] | None
    ) -> AsyncGenerator[ClaudeWire, None]:
        yield ClaudeWire(send_stream, tg, policy, callbacks, max_line_bytes, name)

    async def initialize(wire: ClaudeWire) -> JsonObject:
        return await wire.control("initialize", initialize_timeout, {"hooks": hook_config})

    async with open_child_connection(
        _CLAUDE,
        open_wire,
        initialize,
        lost=_lose,
        name=name,
        process=process,
        exit_reason=eof_reason,
        startup_timeout=initialize_timeout,
        ended=lambda wire: wire.read(receive_stream),
        close=_close,
    ) as child:
        yield ClaudeConnection(child.link, child.hello, process)


def _lose(wire: ClaudeWire, reason: str) -> None:
    wire.lose(reason)


async def _close(wire: ClaudeWire) -> None:
    """Interrupt a running turn (bounded), then close stdin."""
    if wire.turn_running and wire.lost is None:
        with anyio.move_on_after(CANCELLED_EXIT_TIMEOUT), suppress(Exception):
            await wire.control("interrupt", CONTROL_TIMEOUT, {})
    await wire.close_stdin()


@asynccontextmanager
async def connect_claude(
    cli: str | os.PathLike[str],
    options: ClaudeOptions,
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    permission_policy: ClaudePermissionPolicy | None = None,
    hooks: Sequence[ClaudeHook] = (),
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    startup_timeout: float = 60.0,
    close_timeout: float = 5.0,
    term_timeout: float = 5.0,
    kill_timeout: float = 2.0,
    name: str | None = None,
) -> AsyncGenerator[ClaudeConnection, None]:
    """Start the CLI at ``cli`` with ``options``, send ``initialize``, and stop it on exit.

    With a ``permission_policy`` the CLI asks before running tools (``can_use_tool``,
    answered by the policy); without one, no prompt tool is passed and whatever still asks
    is denied. ``hooks`` are registered in ``initialize``. Raises :class:`ClaudeStartupError`
    when the CLI exits, refuses or stays silent (``startup_timeout``) before answering
    ``initialize``; the message names the exit status and the stderr tail.
    """
    if max_line_bytes < 1:
        raise ValueError("max_line_bytes must be positive")
    label = name or "claude"
    argv = build_claude_argv(cli, options, permission_prompt=permission_policy is not None)
    child_env = build_claude_env(options, env, inherit_env=inherit_env)
    async with (
        open_agent_process(
            argv,
            env=child_env,
            cwd=cwd,
            start_timeout=startup_timeout,
            close_timeout=close_timeout,
            term_timeout=term_timeout,
            kill_timeout=kill_timeout,
            name=label,
        ) as process,
        connect_claude_over(
            process.stdout,
            process.stdin,
            permission_policy=permission_policy,
            hooks=hooks,
            max_line_bytes=max_line_bytes,
            initialize_timeout=startup_timeout,
            process=process,
            name=label,
        ) as connection,
    ):
        yield connection


# ---------------------------------------------------------------- deprecated names
# The unprefixed names of earlier releases, kept for one release (README, Changelog).

AllowTool = ClaudeAllowTool
DenyTool = ClaudeDenyTool
ToolPermissionRequest = ClaudeToolPermissionRequest
