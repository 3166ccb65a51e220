"""The Codex app-server client: drive ``codex app-server --listen stdio://`` as a subagent.

::

    async with connect_codex([codex, "app-server", "--listen", "stdio://"], env=env) as conn:
        thread = await conn.start_thread(cwd="/work", sandbox="read-only")
        async with thread.turn("Say hello.") as turn:
            async for event in turn:            # typed events, in order
                if isinstance(event, AgentMessageDelta):
                    print(event.delta, end="")
        result = await turn.result()            # TurnResult(status, final_text, ...)

The wire is JSON-RPC 2.0 without the ``"jsonrpc"`` member, one JSON object per line (the
peer runs with ``include_version=False, require_version=False``). What this client takes care
of (the facts are in the project's research note on the real 0.171.0 binary):

- ``initialize`` (client info, ``experimentalApi: false``) then ``initialized``; a binary that
  exits first (a bad ``config.toml`` does) raises :class:`CodexStartupError` naming the exit
  status and the stderr tail;
- notifications are routed by thread id, then by turn id, in arrival order; those that arrive
  before the turn knows its id (``turn/started`` may come before the ``turn/start`` answer)
  are held and replayed, so nothing is lost;
- a turn's notifications become typed events: agent message deltas (grouped by item id:
  messages can interleave; :attr:`CodexTurn.messages` joins them), reasoning summary and raw
  deltas, plan updates and plan deltas, items started and completed (commands, file changes,
  messages, reasoning), errors, token usage; anything else is an :class:`OtherEvent`;
- every server request is answered: the two approval requests by an :data:`ApprovalPolicy`
  (default :func:`decline_policy`; a policy that raises (logged with its traceback), answers
  nonsense, or takes longer than :data:`APPROVAL_TIMEOUT` seconds, means ``decline``, as in
  every transport: issue 19), every other one with a JSON-RPC error
  (the server would otherwise wait forever);
- ``-32001`` (server overloaded) is retried with bounded exponential backoff;
- a turn whose ``turn/completed`` never comes (a known upstream bug) is reconciled through
  ``thread/read`` when its thread goes idle or its deadline passes;
- leaving a turn's block early interrupts it (``turn/interrupt``, time-boxed; "no active turn
  to interrupt" counts as success);
- when the process dies, pending calls and running turns fail at once with
  :class:`~subagents.rpc.ConnectionClosedError` naming the exit status and the stderr tail;
- closing: stdin is closed (codex exits within ~40 ms, even mid-turn), then the process
  layer's shutdown ladder.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from types import TracebackType
from typing import Final, Literal, TypeAlias, final

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from pydantic import BaseModel, ValidationError
from pydantic_core import from_json

from .. import __version__
from ..protocol import codex
from ..protocol.codex import methods
from ..protocol.jsonrpc import ErrorCode, JsonValue
from ..rpc import ConnectionClosedError, Peer, Router, RPCError, open_peer
from ._policy import call_policy, policy_name
from .process import AgentProcess, exit_reason_for, exited_while_open, open_agent_process

__all__ = (
    "APPROVAL_TIMEOUT",
    "AgentMessageDelta",
    "ApprovalPolicy",
    "ApprovalRequest",
    "CodexConnection",
    "CodexError",
    "CodexEvent",
    "CodexStartupError",
    "CodexThread",
    "CodexTurn",
    "Decision",
    "ItemCompleted",
    "ItemStarted",
    "OtherEvent",
    "PlanDelta",
    "PlanUpdated",
    "ReasoningDelta",
    "TokenUsage",
    "TurnError",
    "TurnResult",
    "accept_policy",
    "connect_codex",
    "decline_policy",
)

logger = logging.getLogger("subagents.codex")

RETRY_ATTEMPTS: Final = 5
"""Tries of a request answered ``-32001`` (server overloaded) before the error is raised."""
RETRY_INITIAL_DELAY: Final = 0.05
RETRY_MAX_DELAY: Final = 1.0

INTERRUPT_TIMEOUT: float = 5.0
"""Seconds a ``turn/interrupt`` may take (a repeated one can hang: openai/codex#36926)."""
INTERRUPT_SETTLE_TIMEOUT: float = 5.0
"""Seconds to wait for ``turn/completed`` after interrupting, when leaving a turn early."""
CANCELLED_EXIT_TIMEOUT: float = 1.0
"""The bound on each of those two waits when the turn's block is left by cancellation: the
cancelled scope often holds the connection too, and then no answer can be read any more
(codex answers an interrupt within ~10 ms when it can)."""
IDLE_GRACE: float = 2.0
"""Seconds ``turn/completed`` may lag behind the thread going idle before reconciling."""
RECONCILE_TIMEOUT: float = 10.0
"""Seconds the reconciling ``thread/read`` may take."""
APPROVAL_TIMEOUT: float = 300.0
"""Seconds an approval policy may take to decide one request (the default of
:func:`connect_codex`'s ``approval_timeout``); past it the request is answered ``decline``,
since the server would wait forever for an answer that never comes. Generous, since the
policy may be a person answering in a terminal."""

_BACKLOG: Final = 256
_VERSION = re.compile(r"/(\d+\.\d+\.\d+[\w.+-]*)")

Decision: TypeAlias = Literal["accept", "acceptForSession", "decline", "cancel"]
"""An approval decision: ``decline`` lets the turn go on without the action; ``cancel`` also
interrupts the turn."""

_DECISIONS: Final[frozenset[str]] = frozenset({"accept", "acceptForSession", "decline", "cancel"})


# ---------------------------------------------------------------- errors


class CodexError(RPCError):
    """Codex answered a request with a JSON-RPC error (``code``, ``message``, ``data``)."""

    def __init__(
        self, code: int, message: str, data: JsonValue = None, *, method: str | None = None
    ) -> None:
        super().__init__(code, message, data)
        self.method = method
        if method is not None:
            self.args = (f"{method}: {message} (code {code})",)


class CodexStartupError(Exception):
    """Codex did not complete ``initialize``: it exited, timed out, or answered an error."""


# ---------------------------------------------------------------- approvals


@final
@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """An ``item/commandExecution/requestApproval`` or ``item/fileChange/requestApproval``."""

    method: str
    kind: Literal["commandExecution", "fileChange"]
    thread_id: str
    turn_id: str
    item_id: str
    reason: str | None
    command: str | None
    """The command line (command approvals only)."""
    cwd: str | None
    params: codex.CommandExecutionRequestApprovalParams | codex.FileChangeRequestApprovalParams
    """Everything the server sent (unknown fields kept)."""


ApprovalPolicy: TypeAlias = Callable[[ApprovalRequest], Awaitable[Decision]]
"""``async def policy(request) -> Decision``: decides an approval request."""


def _approval_asked(request: ApprovalRequest) -> str:
    """The approval asked for, as a log names it."""
    what = f" {request.command!r}" if request.command is not None else ""
    return (
        f"{request.method}{what} (item {request.item_id}, turn {request.turn_id}, "
        f"thread {request.thread_id})"
    )


async def decline_policy(request: ApprovalRequest) -> Decision:
    """The default: decline everything (the agent goes on without the action)."""
    return "decline"


async def accept_policy(request: ApprovalRequest) -> Decision:
    """Accept every command and file change, once."""
    return "accept"


# ---------------------------------------------------------------- events and results


@final
@dataclass(frozen=True, slots=True)
class AgentMessageDelta:
    """A piece of an agent message's text (group by ``item_id``: messages can interleave)."""

    item_id: str
    delta: str


@final
@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of a reasoning item's text (``item/reasoning/summaryTextDelta`` when ``kind`` is
    ``"summary"``, ``item/reasoning/textDelta`` when it is ``"text"``, the raw reasoning).
    ``index`` is the part of the summary (or content) it extends; the completed
    :class:`~subagents.protocol.codex.ReasoningItem` lists the parts whole."""

    item_id: str
    delta: str
    kind: Literal["summary", "text"]
    index: int


@final
@dataclass(frozen=True, slots=True)
class PlanUpdated:
    """``turn/plan/updated``: the turn's whole plan as it stands now (each update replaces
    the previous one)."""

    steps: list[codex.TurnPlanStep]
    explanation: str | None


@final
@dataclass(frozen=True, slots=True)
class PlanDelta:
    """``item/plan/delta``: a piece of a plan item's text (experimental upstream: the pieces
    need not add up to the completed item's text)."""

    item_id: str
    delta: str


@final
@dataclass(frozen=True, slots=True)
class ItemStarted:
    item: codex.ThreadItem


@final
@dataclass(frozen=True, slots=True)
class ItemCompleted:
    item: codex.ThreadItem


@final
@dataclass(frozen=True, slots=True)
class TurnError:
    """An ``error`` notification: ``will_retry`` tells a transient error from the end."""

    message: str
    will_retry: bool
    codex_error_info: JsonValue


@final
@dataclass(frozen=True, slots=True)
class TokenUsage:
    """``thread/tokenUsage/updated``: the thread's total and the last request's usage."""

    total: codex.TokenUsageBreakdown
    last: codex.TokenUsageBreakdown
    model_context_window: int | None


@final
@dataclass(frozen=True, slots=True)
class OtherEvent:
    """Any other notification of the turn (or its thread), as received."""

    method: str
    params: JsonValue


CodexEvent: TypeAlias = (
    AgentMessageDelta
    | ReasoningDelta
    | PlanUpdated
    | PlanDelta
    | ItemStarted
    | ItemCompleted
    | TurnError
    | TokenUsage
    | OtherEvent
)


@final
@dataclass(frozen=True, slots=True)
class TurnResult:
    """How a turn ended."""

    status: Literal["completed", "interrupted", "failed"]
    final_text: str | None
    """The final answer: the agent message of ``turn/completed``'s items, else the last
    ``final_answer``-phase message completed in the turn, else the last message."""
    error: str | None
    items: list[codex.ThreadItem]
    """Items completed during the turn, in order (or the turn's own items, if none were seen)."""
    usage: TokenUsage | None


def final_text(*sources: Sequence[codex.ThreadItem]) -> str | None:
    """The final answer from the first source holding an agent message: its last
    ``final_answer`` message, else its last message."""
    for items in sources:
        messages = [item for item in items if isinstance(item, codex.AgentMessageItem)]
        if messages:
            finals = [m for m in messages if m.phase == "final_answer"]
            return (finals or messages)[-1].text
    return None


# ---------------------------------------------------------------- helpers


def _params(model: BaseModel) -> dict[str, JsonValue]:
    """The wire form of params we send: aliases, no ``None`` fields."""
    data: dict[str, JsonValue] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


def _field(params: JsonValue, name: str) -> JsonValue:
    return params.get(name) if isinstance(params, dict) else None


def _thread_id_of(method: str, params: JsonValue) -> str | None:
    value = _field(params, "threadId")
    if value is None and method == methods.THREAD_STARTED:
        value = _field(_field(params, "thread"), "id")
    return value if isinstance(value, str) else None


def _turn_id_of(params: JsonValue) -> str | None:
    value = _field(params, "turnId")
    if value is None:
        value = _field(_field(params, "turn"), "id")
    return value if isinstance(value, str) else None


def _inputs(value: str | Sequence[codex.UserInput]) -> list[codex.UserInput]:
    if isinstance(value, str):
        return [codex.TextUserInput(text=value)]
    return list(value)


def _path(value: str | os.PathLike[str] | None) -> str | None:
    return None if value is None else os.path.abspath(os.fspath(value))


async def _request(peer: Peer, method: str, params: JsonValue = None) -> JsonValue:
    """``peer.request`` that retries ``-32001`` with bounded backoff and raises
    :class:`CodexError` for error answers."""
    delay = RETRY_INITIAL_DELAY
    for attempt in range(1, RETRY_ATTEMPTS + 1):
        try:
            return await peer.request(method, params)
        except RPCError as exc:
            if exc.code == methods.SERVER_OVERLOADED and attempt < RETRY_ATTEMPTS:
                logger.debug("%s: server overloaded, retry %d in %.2f s", method, attempt, delay)
                await anyio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_DELAY)
                continue
            raise CodexError(exc.code, exc.message, exc.data, method=method) from exc
    raise AssertionError("unreachable")  # pragma: no cover


# ---------------------------------------------------------------- turns


@final
class _ThreadState:
    """Per-thread routing: the running turn, and what arrived while none ran."""

    __slots__ = ("backlog", "turn")

    def __init__(self) -> None:
        self.turn: CodexTurn | None = None
        self.backlog: deque[tuple[str, JsonValue]] = deque(maxlen=_BACKLOG)


@final
class CodexTurn:
    """One turn: iterate it for the events, then ``await result()``.

    Use it as an async context manager (``async with thread.turn(...) as turn``): entering
    sends ``turn/start``; leaving before the turn ended interrupts it and waits, bounded, for
    the end.
    """

    def __init__(
        self,
        thread: CodexThread,
        inputs: list[codex.UserInput],
        output_schema: Mapping[str, JsonValue] | None,
        deadline: float | None,
    ) -> None:
        self.thread = thread
        self.id: str | None = None
        """The turn id (known once the block is entered)."""
        self._inputs = inputs
        self._output_schema = None if output_schema is None else dict(output_schema)
        self._deadline = deadline
        # Unbounded on purpose: the connection's one notification task must never wait for a
        # slow reader of one turn (every other turn and every answer would wait behind it).
        send, receive = anyio.create_memory_object_stream[CodexEvent](math.inf)
        self._send: MemoryObjectSendStream[CodexEvent] = send
        self._receive: MemoryObjectReceiveStream[CodexEvent] = receive
        self._done = anyio.Event()
        self._bound = anyio.Event()
        self._wake = anyio.Event()  # the thread went idle (or the turn ended)
        self._active_seen = False
        self._active = anyio.Event()  # turn/started (or the thread went active) was seen
        self._early: list[tuple[str, JsonValue]] = []
        self._items: list[codex.ThreadItem] = []
        self._messages: dict[str, str] = {}
        self._usage: TokenUsage | None = None
        self._last_error: TurnError | None = None
        self._forced_failure: str | None = None
        self._result: TurnResult | None = None
        self._failure: BaseException | None = None
        self._watch_scope: anyio.CancelScope | None = None
        self.interrupt_requested = False
        """Whether :meth:`interrupt` was called (or the block was left early)."""

    # -- consuming

    def __aiter__(self) -> CodexTurn:
        return self

    async def __anext__(self) -> CodexEvent:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def result(self) -> TurnResult:
        """Wait for the end of the turn (draining events nobody read) and return how it
        ended. Raises :class:`~subagents.rpc.ConnectionClosedError` when codex went away."""
        async for _ in self:
            pass
        await self._done.wait()
        if self._failure is not None:
            raise self._failure
        assert self._result is not None
        return self._result

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def messages(self) -> dict[str, str]:
        """The turn's agent messages by item id, in the order their first piece came: each
        one's deltas joined (messages can interleave, so they are grouped by item id), then
        its whole text once ``item/completed`` brings it. A copy, as received: it may be
        ahead of the events read so far."""
        return dict(self._messages)

    # -- interrupting

    async def interrupt(self) -> None:
        """``turn/interrupt``; the turn then ends ``interrupted``. Time-boxed; "no active
        turn to interrupt" (it already ended) counts as success."""
        if self._done.is_set() or self.id is None:
            return
        self.interrupt_requested = True
        await self._send_interrupt()

    async def _send_interrupt(self, timeout: float | None = None) -> None:
        """Send ``turn/interrupt`` until codex takes it, the turn ends, or ``timeout`` passes.

        Codex answers "no active turn to interrupt" to an interrupt that arrives after the
        ``turn/start`` answer but before the turn has really started: then the interrupt is
        sent again once ``turn/started`` is seen (or after a short pause), instead of taking
        the turn for ended while it runs on unseen.
        """
        assert self.id is not None
        params = _params(codex.TurnInterruptParams(thread_id=self.thread.id, turn_id=self.id))
        limit = INTERRUPT_TIMEOUT if timeout is None else timeout
        with anyio.move_on_after(limit) as scope:
            while not self._done.is_set():
                try:
                    await self.thread.connection.request(methods.TURN_INTERRUPT, params)
                    return
                except CodexError as exc:
                    if "no active turn" not in exc.message:
                        raise
                    logger.debug("turn %s: interrupt refused: %s", self.id, exc.message)
                # Not started yet, or just ended: wait for either, then try again.
                with anyio.move_on_after(0.05 if self._active.is_set() else 1.0):
                    async with anyio.create_task_group() as tg:

                        async def ended() -> None:
                            await self._done.wait()
                            tg.cancel_scope.cancel()

                        async def started() -> None:
                            await self._active.wait()
                            tg.cancel_scope.cancel()

                        tg.start_soon(ended)
                        if not self._active.is_set():
                            tg.start_soon(started)
        if scope.cancelled_caught and not self._done.is_set():
            logger.warning("turn %s: turn/interrupt not taken within %s s", self.id, limit)

    # -- routing (called by the connection, in notification order)

    def _deliver(self, method: str, params: JsonValue) -> bool:
        """Take a notification of this turn's thread; ``False`` if it is not this turn's."""
        if self._done.is_set():
            return False
        turn_id = _turn_id_of(params)
        if self.id is None:
            if method == methods.TURN_STARTED and turn_id is not None:
                self._bind(turn_id)
            elif turn_id is not None:
                self._early.append((method, params))
                return True
        if turn_id is not None and turn_id != self.id:
            return False
        self._process(method, params)
        return True

    def _bind(self, turn_id: str) -> None:
        if self.id is not None:
            return
        self.id = turn_id
        self._bound.set()
        early, self._early = self._early, []
        state = self.thread.state
        for method, params in early:
            if not self._deliver(method, params):
                state.backlog.append((method, params))

    def _process(self, method: str, params: JsonValue) -> None:
        event: CodexEvent
        try:
            if method == methods.AGENT_MESSAGE_DELTA:
                delta = codex.from_wire(codex.AgentMessageDeltaNotification, params)
                event = AgentMessageDelta(delta.item_id, delta.delta)
                self._messages[delta.item_id] = self._messages.get(delta.item_id, "") + delta.delta
            elif method == methods.REASONING_SUMMARY_TEXT_DELTA:
                summary = codex.from_wire(codex.ReasoningSummaryTextDeltaNotification, params)
                event = ReasoningDelta(
                    summary.item_id, summary.delta, "summary", summary.summary_index
                )
            elif method == methods.REASONING_TEXT_DELTA:
                raw = codex.from_wire(codex.ReasoningTextDeltaNotification, params)
                event = ReasoningDelta(raw.item_id, raw.delta, "text", raw.content_index)
            elif method == methods.TURN_PLAN_UPDATED:
                plan = codex.from_wire(codex.TurnPlanUpdatedNotification, params)
                event = PlanUpdated(plan.plan, plan.explanation)
            elif method == methods.PLAN_DELTA:
                piece = codex.from_wire(codex.PlanDeltaNotification, params)
                event = PlanDelta(piece.item_id, piece.delta)
            elif method == methods.ITEM_STARTED:
                event = ItemStarted(codex.from_wire(codex.ItemStartedNotification, params).item)
            elif method == methods.ITEM_COMPLETED:
                item = codex.from_wire(codex.ItemCompletedNotification, params).item
                self._items.append(item)
                if isinstance(item, codex.AgentMessageItem):
                    self._messages[item.id] = item.text
                event = ItemCompleted(item)
            elif method == methods.ERROR:
                note = codex.from_wire(codex.ErrorNotification, params)
                event = self._last_error = TurnError(
                    note.error.message, note.will_retry, note.error.codex_error_info
                )
            elif method == methods.THREAD_TOKEN_USAGE_UPDATED:
                usage = codex.from_wire(codex.ThreadTokenUsageUpdatedNotification, params)
                tokens = usage.token_usage
                event = self._usage = TokenUsage(
                    tokens.total, tokens.last, tokens.model_context_window
                )
            elif method == methods.TURN_COMPLETED:
                self._complete(codex.from_wire(codex.TurnCompletedNotification, params).turn)
                return
            else:
                if method == methods.TURN_STARTED:
                    self._active_seen = True
                    self._active.set()
                elif method == methods.THREAD_STATUS_CHANGED:
                    status = _field(_field(params, "status"), "type")
                    if status == "active":
                        self._active_seen = True
                        self._active.set()
                    elif status == "idle" and self._active_seen:
                        self._wake.set()
                event = OtherEvent(method, params)
        except ValidationError as exc:
            logger.warning("turn %s: %s with unexpected params kept raw: %s", self.id, method, exc)
            event = OtherEvent(method, params)
        self._send.send_nowait(event)

    # -- ending

    def _complete(self, turn: codex.Turn) -> None:
        if self._done.is_set():
            return
        status: Literal["completed", "interrupted", "failed"]
        status = "failed" if turn.status == "inProgress" else turn.status
        error = None if turn.error is None else turn.error.message
        if error is None and status == "failed" and self._last_error is not None:
            error = self._last_error.message
        if self._forced_failure is not None:
            status, error = "failed", self._forced_failure
        self._result = TurnResult(
            status=status,
            final_text=final_text(turn.items, self._items),
            error=error,
            items=list(self._items) or list(turn.items),
            usage=self._usage,
        )
        self._finish()

    def _fail(self, error: BaseException) -> None:
        if not self._done.is_set():
            self._failure = error
            self._finish()

    def _finish(self) -> None:
        self._send.close()
        self._done.set()
        self._wake.set()
        if self._watch_scope is not None:
            self._watch_scope.cancel()
        state = self.thread.state
        if state.turn is self:
            state.turn = None

    async def _watch(self) -> None:
        """Reconcile through ``thread/read`` when ``turn/completed`` does not come: after the
        thread went idle (plus :data:`IDLE_GRACE`), or at the deadline."""
        with anyio.CancelScope() as scope:
            self._watch_scope = scope
            why: str | None = None
            limit = math.inf if self._deadline is None else self._deadline
            with anyio.move_on_after(limit) as timer:
                await self._wake.wait()
                if self._done.is_set():
                    return
                with anyio.move_on_after(IDLE_GRACE):
                    await self._done.wait()
                if self._done.is_set():
                    return
                why = (
                    f"the thread went idle but turn/completed did not arrive within {IDLE_GRACE} s"
                )
            if self._done.is_set():
                return
            if timer.cancelled_caught:
                why = (
                    f"turn/completed did not arrive before the turn's deadline ({self._deadline} s)"
                )
            assert why is not None
            await self._reconcile(why, timed_out=timer.cancelled_caught)

    async def _reconcile(self, why: str, *, timed_out: bool) -> None:
        assert self.id is not None
        logger.warning("turn %s: %s; reconciling through thread/read", self.id, why)
        found: codex.Turn | None = None
        seen = "absent"
        try:
            with anyio.fail_after(RECONCILE_TIMEOUT):
                thread = await self.thread.connection.read_thread(self.thread.id)
            found = next((turn for turn in thread.turns if turn.id == self.id), None)
            if found is not None:
                seen = f"status {found.status!r}"
        except (CodexError, ConnectionClosedError, TimeoutError, ValidationError) as exc:
            seen = f"unknown (thread/read failed: {exc})"
        if found is not None and found.status != "inProgress":
            self._complete(found)
            return
        message = f"{why}; thread/read reports the turn as {seen}"
        self._forced_failure = message
        if timed_out:
            with suppress(CodexError, ConnectionClosedError):
                await self._send_interrupt()
        if not self._done.is_set():
            self._result = TurnResult(
                status="failed",
                final_text=final_text(self._items),
                error=message,
                items=list(self._items),
                usage=self._usage,
            )
            self._finish()

    # -- lifecycle

    async def __aenter__(self) -> CodexTurn:
        connection = self.thread.connection
        state = self.thread.state
        if state.turn is not None:
            self._close_streams()
            raise RuntimeError(f"thread {self.thread.id} already has a turn running")
        state.turn = self
        params = _params(
            codex.TurnStartParams(
                thread_id=self.thread.id, input=self._inputs, output_schema=self._output_schema
            )
        )
        try:
            answer = codex.from_wire(
                codex.TurnStartResponse, await connection.request(methods.TURN_START, params)
            )
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                if not isinstance(exc, RPCError | ConnectionClosedError):
                    # Abandoned (cancelled) while codex may have started the turn anyway: stop
                    # it once its id is known, or it runs on unseen.
                    with anyio.move_on_after(1.0):
                        await self._bound.wait()
                    if self.id is not None:
                        with suppress(CodexError, ConnectionClosedError):
                            await self._send_interrupt()
            self._fail(exc)
            self._close_streams()
            raise
        self._bind(answer.turn.id)
        if answer.turn.status != "inProgress":
            self._complete(answer.turn)
        else:
            connection.task_group.start_soon(self._watch)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
        interrupt_timeout = CANCELLED_EXIT_TIMEOUT if cancelled else INTERRUPT_TIMEOUT
        settle_timeout = CANCELLED_EXIT_TIMEOUT if cancelled else INTERRUPT_SETTLE_TIMEOUT
        with anyio.CancelScope(shield=True):
            if not self._done.is_set() and self.id is not None:
                self.interrupt_requested = True
                with suppress(CodexError, ConnectionClosedError):
                    await self._send_interrupt(interrupt_timeout)
                with anyio.move_on_after(settle_timeout):
                    await self._done.wait()
                if not self._done.is_set():
                    self._result = TurnResult(
                        status="interrupted",
                        final_text=final_text(self._items),
                        error="the turn was left early and did not confirm its interruption",
                        items=list(self._items),
                        usage=self._usage,
                    )
                    self._finish()
        self._close_streams()

    def _close_streams(self) -> None:
        # Events nobody read are dropped; result() still works (it sees a closed stream).
        self._send.close()
        self._receive.close()


# ---------------------------------------------------------------- threads and the connection


@final
class CodexThread:
    """A loaded thread (made by :meth:`CodexConnection.start_thread` & co.)."""

    def __init__(self, connection: CodexConnection, response: codex.ThreadStartResponse) -> None:
        self.connection = connection
        self.response = response
        """The ``thread/start`` (``resume``, ``fork``) answer: model, sandbox, thread, ..."""
        self.id = response.thread.id
        self.state = connection._state(self.id)  # pyright: ignore[reportPrivateUsage]

    @property
    def info(self) -> codex.Thread:
        return self.response.thread

    @property
    def backlog(self) -> list[tuple[str, JsonValue]]:
        """Notifications of this thread received while no turn ran (the last 256)."""
        return list(self.state.backlog)

    def turn(
        self,
        input: str | Sequence[codex.UserInput],
        *,
        output_schema: Mapping[str, JsonValue] | None = None,
        deadline: float | None = None,
    ) -> CodexTurn:
        """A turn, started when entered: ``async with thread.turn("hi") as turn: ...``.

        ``deadline``: seconds after which a turn whose ``turn/completed`` has not come is
        reconciled through ``thread/read`` (and interrupted); if it still has no final status
        its result is ``failed`` with an error naming the deadline.
        """
        return CodexTurn(self, _inputs(input), output_schema, deadline)

    async def run(
        self,
        input: str | Sequence[codex.UserInput],
        *,
        output_schema: Mapping[str, JsonValue] | None = None,
        deadline: float | None = None,
    ) -> TurnResult:
        """Run one turn to its end, discarding the events; returns its result."""
        async with self.turn(input, output_schema=output_schema, deadline=deadline) as turn:
            return await turn.result()


@final
class CodexConnection:
    """An initialized connection to ``codex app-server`` (made by :func:`connect_codex`)."""

    def __init__(
        self,
        peer: Peer,
        task_group: anyio.abc.TaskGroup,
        process: AgentProcess | None,
        approval_policy: ApprovalPolicy,
        approval_timeout: float | None = None,
    ) -> None:
        self.peer = peer
        """The JSON-RPC peer, for methods this class does not wrap (use :meth:`request`)."""
        self.task_group = task_group
        self.process = process
        self.approval_policy = approval_policy
        self.approval_timeout = approval_timeout
        """Seconds the policy may take per request (``None``: :data:`APPROVAL_TIMEOUT`)."""
        self._init: codex.InitializeResponse | None = None
        self._threads: dict[str, _ThreadState] = {}
        self.unrouted: deque[tuple[str, JsonValue]] = deque(maxlen=_BACKLOG)
        """Notifications that name no thread (``configWarning``, ...), the last 256."""

    # -- what codex said about itself

    @property
    def initialize_response(self) -> codex.InitializeResponse:
        assert self._init is not None
        return self._init

    @property
    def user_agent(self) -> str:
        return self.initialize_response.user_agent

    @property
    def version(self) -> str | None:
        """The CLI version, parsed from ``user_agent`` (e.g. ``"0.171.0"``)."""
        found = _VERSION.search(self.user_agent)
        return None if found is None else found.group(1)

    @property
    def codex_home(self) -> str | None:
        return self.initialize_response.codex_home

    # -- requests

    async def request(self, method: str, params: JsonValue = None) -> JsonValue:
        """Any request: ``-32001`` is retried with backoff; errors raise :class:`CodexError`."""
        return await _request(self.peer, method, params)

    async def start_thread(
        self,
        *,
        cwd: str | os.PathLike[str] | None = None,
        model: str | None = None,
        sandbox: codex.SandboxMode | None = None,
        approval_policy: codex.ApprovalPolicyName | None = None,
        base_instructions: str | None = None,
        developer_instructions: str | None = None,
        config: Mapping[str, JsonValue] | None = None,
        ephemeral: bool | None = None,
    ) -> CodexThread:
        """``thread/start``; unset options take codex's configured defaults."""
        params = codex.ThreadStartParams(
            cwd=_path(cwd),
            model=model,
            sandbox=sandbox,
            approval_policy=approval_policy,
            base_instructions=base_instructions,
            developer_instructions=developer_instructions,
            config=None if config is None else dict(config),
            ephemeral=ephemeral,
        )
        result = await self.request(methods.THREAD_START, _params(params))
        return CodexThread(self, codex.from_wire(codex.ThreadStartResponse, result))

    async def resume_thread(
        self,
        thread_id: str,
        *,
        cwd: str | os.PathLike[str] | None = None,
        model: str | None = None,
        sandbox: codex.SandboxMode | None = None,
        approval_policy: codex.ApprovalPolicyName | None = None,
        base_instructions: str | None = None,
        developer_instructions: str | None = None,
        config: Mapping[str, JsonValue] | None = None,
    ) -> CodexThread:
        """``thread/resume`` (also from a new process sharing the ``CODEX_HOME``)."""
        params = codex.ThreadResumeParams(
            thread_id=thread_id,
            cwd=_path(cwd),
            model=model,
            sandbox=sandbox,
            approval_policy=approval_policy,
            base_instructions=base_instructions,
            developer_instructions=developer_instructions,
            config=None if config is None else dict(config),
        )
        result = await self.request(methods.THREAD_RESUME, _params(params))
        return CodexThread(self, codex.from_wire(codex.ThreadResumeResponse, result))

    async def fork_thread(self, thread_id: str, *, ephemeral: bool | None = None) -> CodexThread:
        """``thread/fork``: a new thread carrying the history. An ephemeral fork is sent with
        ``excludeTurns: true``, which codex 0.171.0 requires for it."""
        params = codex.ThreadForkParams(
            thread_id=thread_id, ephemeral=ephemeral, exclude_turns=True if ephemeral else None
        )
        result = await self.request(methods.THREAD_FORK, _params(params))
        return CodexThread(self, codex.from_wire(codex.ThreadForkResponse, result))

    async def read_thread(self, thread_id: str, include_turns: bool = True) -> codex.Thread:
        """``thread/read``: the thread, with its turns and their items when asked."""
        params = codex.ThreadReadParams(thread_id=thread_id, include_turns=include_turns)
        result = await self.request(methods.THREAD_READ, _params(params))
        return codex.from_wire(codex.ThreadReadResponse, result).thread

    # -- inbound

    def _state(self, thread_id: str) -> _ThreadState:
        state = self._threads.get(thread_id)
        if state is None:
            state = self._threads[thread_id] = _ThreadState()
        return state

    async def _on_notification(self, method: str, params: JsonValue) -> None:
        thread_id = _thread_id_of(method, params)
        if thread_id is None:
            self.unrouted.append((method, params))
            return
        state = self._state(thread_id)
        turn = state.turn
        # thread/started may come after the next request was sent: it is no turn's event.
        if (
            method == methods.THREAD_STARTED or turn is None or not turn._deliver(method, params)  # pyright: ignore[reportPrivateUsage]
        ):
            state.backlog.append((method, params))

    def _connection_lost(self, reason: str) -> None:
        for state in self._threads.values():
            if state.turn is not None:
                state.turn._fail(ConnectionClosedError(reason))  # pyright: ignore[reportPrivateUsage]

    async def _on_command_approval(self, params: JsonValue) -> JsonValue:
        try:
            request = codex.from_wire(codex.CommandExecutionRequestApprovalParams, params)
        except ValidationError as exc:
            logger.warning("command approval with unexpected params declined: %s", exc)
            return {"decision": "decline"}
        approval = ApprovalRequest(
            method=methods.COMMAND_EXECUTION_REQUEST_APPROVAL,
            kind="commandExecution",
            thread_id=request.thread_id,
            turn_id=request.turn_id,
            item_id=request.item_id,
            reason=request.reason,
            command=request.command,
            cwd=request.cwd,
            params=request,
        )
        return {"decision": await self._decide(approval)}

    async def _on_file_change_approval(self, params: JsonValue) -> JsonValue:
        try:
            request = codex.from_wire(codex.FileChangeRequestApprovalParams, params)
        except ValidationError as exc:
            logger.warning("file change approval with unexpected params declined: %s", exc)
            return {"decision": "decline"}
        approval = ApprovalRequest(
            method=methods.FILE_CHANGE_REQUEST_APPROVAL,
            kind="fileChange",
            thread_id=request.thread_id,
            turn_id=request.turn_id,
            item_id=request.item_id,
            reason=request.reason,
            command=None,
            cwd=None,
            params=request,
        )
        return {"decision": await self._decide(approval)}

    async def _decide(self, request: ApprovalRequest) -> Decision:
        limit = APPROVAL_TIMEOUT if self.approval_timeout is None else self.approval_timeout
        decision: Decision | None = None
        with anyio.move_on_after(limit) as bound:
            decision = await call_policy(
                self.approval_policy,
                request,
                logger=logger,
                asked=_approval_asked(request),
                role="approval policy",
            )
            if decision is None:  # it raised, logged: a policy that raises is a deny
                return "decline"
        if bound.cancelled_caught:
            logger.warning(
                "approval policy did not decide %s (item %s, turn %s, thread %s) within %s s; "
                "declining",
                request.method,
                request.item_id,
                request.turn_id,
                request.thread_id,
                limit,
            )
            return "decline"
        if decision not in _DECISIONS:
            logger.error(
                "approval policy %s answered %r on %s; declining",
                policy_name(self.approval_policy),
                decision,
                _approval_asked(request),
            )
            return "decline"
        return decision

    async def _on_other_request(self, method: str, params: JsonValue) -> JsonValue:
        logger.warning("server request %r refused: this client does not handle it", method)
        raise RPCError(
            ErrorCode.METHOD_NOT_FOUND,
            f"subagents codex client does not handle {method}",
            {"method": method},
        )

    def _register(self, router: Router) -> None:
        router.on_request(methods.COMMAND_EXECUTION_REQUEST_APPROVAL, self._on_command_approval)
        router.on_request(methods.FILE_CHANGE_REQUEST_APPROVAL, self._on_file_change_approval)
        router.on_any_request(self._on_other_request)
        router.on_any_notification(self._on_notification)


async def _initialize(
    peer: Peer, client_name: str, client_version: str
) -> codex.InitializeResponse:
    params = codex.InitializeParams(
        client_info=codex.ClientInfo(name=client_name, version=client_version),
        capabilities=codex.InitializeCapabilities(experimental_api=False),
    )
    result = await _request(peer, methods.INITIALIZE, _params(params))
    response = codex.from_wire(codex.InitializeResponse, result)
    await peer.notify(methods.INITIALIZED)
    return response


@asynccontextmanager
async def connect_codex(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    client_name: str = "subagents",
    client_version: str = __version__,
    approval_policy: ApprovalPolicy | None = None,
    approval_timeout: float | None = None,
    startup_timeout: float = 30.0,
    name: str | None = None,
) -> AsyncGenerator[CodexConnection, None]:
    """Start ``codex app-server`` (``command``), ``initialize`` it, and stop it on exit.

    ``command`` is the whole argv, e.g. ``[codex, "app-server", "--listen", "stdio://"]``.
    The child runs in its own process group with an explicit environment (a documented base
    plus ``env``; the parent's whole environment only with ``inherit_env=True``), its stderr
    drained into a bounded tail. ``client_name`` becomes the upstream ``originator`` and the
    user agent's prefix. Approval requests go to ``approval_policy`` (default: decline all);
    a policy that has not decided within ``approval_timeout`` seconds (default
    :data:`APPROVAL_TIMEOUT`, read when a request comes) is given up on: the request is
    answered ``decline`` and a warning names it.

    Raises :class:`CodexStartupError` when codex exits, refuses or stays silent (for
    ``startup_timeout`` seconds) before answering ``initialize``. On exit of the block: stdin
    is closed (codex exits on EOF), then the shutdown ladder (wait, SIGTERM the group, wait,
    SIGKILL), bounded.
    """
    label = name or "codex"
    if approval_timeout is not None and not approval_timeout > 0:
        raise ValueError(f"approval_timeout must be > 0 seconds, not {approval_timeout!r}")
    policy: ApprovalPolicy = decline_policy if approval_policy is None else approval_policy
    raised: BaseException | None = None
    async with open_agent_process(
        command,
        env=env,
        inherit_env=inherit_env,
        cwd=cwd,
        start_timeout=startup_timeout,
        name=label,
    ) as process:
        exit_reason = exit_reason_for(process, f"codex app-server {label!r}")

        router = Router()
        async with (
            anyio.create_task_group() as tg,
            open_peer(
                process.stdout,
                process.stdin,
                router=router,
                include_version=False,
                require_version=False,
                eof_reason=exit_reason,
                json_loads=from_json,
                name=label,
            ) as peer,
        ):
            connection = CodexConnection(peer, tg, process, policy, approval_timeout)
            connection._register(router)  # pyright: ignore[reportPrivateUsage]

            async def watch_connection() -> None:
                # The stream ended, or the process died with its stdout still open (held by a
                # grandchild): fail running turns (and pending calls) naming the exit.
                async with anyio.create_task_group() as inner:

                    async def on_exit() -> None:
                        await exited_while_open(process, lambda: peer)
                        inner.cancel_scope.cancel()

                    async def on_eof() -> None:
                        await peer.wait_closed()
                        inner.cancel_scope.cancel()

                    inner.start_soon(on_exit)
                    inner.start_soon(on_eof)
                reason = f"codex app-server {label!r} closed the connection"
                with anyio.move_on_after(2.0):
                    reason = await exit_reason()
                if not peer.closed:
                    peer.abort(reason)
                connection._connection_lost(reason)  # pyright: ignore[reportPrivateUsage]

            tg.start_soon(watch_connection)
            try:
                try:
                    with anyio.fail_after(startup_timeout):
                        connection._init = await _initialize(  # pyright: ignore[reportPrivateUsage]
                            peer, client_name, client_version
                        )
                except TimeoutError as exc:
                    raise CodexStartupError(
                        f"codex app-server {label!r} did not answer initialize within "
                        f"{startup_timeout} s; stderr tail: {process.stderr_tail()[-2000:]!r}"
                    ) from exc
                except ConnectionClosedError as exc:
                    raise CodexStartupError(
                        f"codex app-server exited before answering initialize: {exc.reason}"
                    ) from exc
                except (RPCError, ValidationError) as exc:
                    raise CodexStartupError(f"codex app-server refused initialize: {exc}") from exc
                yield connection
            except BaseException as exc:
                raised = exc
            finally:
                tg.cancel_scope.cancel()
    if raised is not None:  # re-raised as itself, not wrapped in an ExceptionGroup
        raise raised
