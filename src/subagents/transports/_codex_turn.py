"""A Codex app-server turn (:class:`CodexTurn`), and the request helper every call uses.

The notifications → events → result logic is sans-IO, in
:class:`~subagents.protocol.codex.CodexTurnProgress`; this module adds the I/O around it:
the event buffer (:class:`~subagents.transports._turn_events.TurnEvents`), ``turn/start`` and
``turn/interrupt``, and the reconciliation through ``thread/read`` when ``turn/completed``
never comes.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections import deque
from collections.abc import Callable, Mapping
from contextlib import suppress
from types import TracebackType
from typing import TYPE_CHECKING, Final, final

import anyio
from pydantic import BaseModel, ValidationError

from ..protocol import codex
from ..protocol.codex import methods
from ..protocol.jsonrpc import JsonValue
from ..rpc import ConnectionClosedError, Peer, RPCError
from ._turn_events import DEFAULT_MAX_EVENTS, TurnEvents, TurnOverflowError, read_before

if TYPE_CHECKING:
    from .codex_app_server import CodexThread

__all__ = ("CodexError", "CodexTurn", "ThreadState", "request", "wire_params")

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

BACKLOG: Final = 256
"""Notifications kept per thread while no turn runs (and that name no thread), the last ones."""


class CodexError(RPCError):
    """Codex answered a request with a JSON-RPC error (``code``, ``message``, ``data``)."""

    def __init__(
        self, code: int, message: str, data: JsonValue = None, *, method: str | None = None
    ) -> None:
        super().__init__(code, message, data)
        self.method = method
        if method is not None:
            self.args = (f"{method}: {message} (code {code})",)


def wire_params(model: BaseModel) -> dict[str, JsonValue]:
    """The wire form of params we send: aliases, no ``None`` fields."""
    data: dict[str, JsonValue] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


async def request(peer: Peer, method: str, params: JsonValue = None) -> JsonValue:
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


@final
class ThreadState:
    """Per-thread routing: the running turn, and what arrived while none ran."""

    __slots__ = ("_deliver", "_fail", "backlog", "turn")

    def __init__(self) -> None:
        self.turn: CodexTurn | None = None
        self.backlog: deque[tuple[str, JsonValue]] = deque(maxlen=BACKLOG)
        self._deliver: Callable[[str, JsonValue], bool] | None = None
        self._fail: Callable[[BaseException], None] | None = None

    def start(
        self,
        turn: CodexTurn,
        deliver: Callable[[str, JsonValue], bool],
        fail: Callable[[BaseException], None],
    ) -> None:
        """``turn`` runs: it takes the thread's notifications (``deliver`` answers whether
        one was its own) and hears of a lost connection (``fail``)."""
        self.turn, self._deliver, self._fail = turn, deliver, fail

    def end(self, turn: CodexTurn) -> None:
        if self.turn is turn:
            self.turn = self._deliver = self._fail = None

    def route(self, method: str, params: JsonValue) -> None:
        """A notification of this thread: to the running turn, else into the backlog
        (``thread/started`` may come after the next request was sent: it is no turn's)."""
        if (
            method == methods.THREAD_STARTED
            or self._deliver is None
            or not self._deliver(method, params)
        ):
            self.backlog.append((method, params))

    def lose(self, error: BaseException) -> None:
        """The connection is lost: the running turn fails with ``error``."""
        if self._fail is not None:
            self._fail(error)


@final
class CodexTurn:
    """One turn: iterate it for the events, then ``await result()``.

    Use it as an async context manager (``async with thread.turn(...) as turn``): entering
    sends ``turn/start``; leaving before the turn ended interrupts it and waits, bounded, for
    the end. More than ``max_events`` unread events fail the turn with
    :class:`~subagents.transports.TurnOverflowError` and interrupt it.
    """

    def __init__(
        self,
        thread: CodexThread,
        inputs: list[codex.UserInput],
        output_schema: Mapping[str, JsonValue] | None,
        deadline: float | None,
        max_events: int = DEFAULT_MAX_EVENTS,
    ) -> None:
        self.thread = thread
        self.id: str | None = None
        """The turn id (known once the block is entered)."""
        self._inputs = inputs
        self._output_schema = None if output_schema is None else dict(output_schema)
        self._deadline = deadline
        # Pushing never waits: the connection's one notification task must never wait for a
        # slow reader of one turn (every other turn and every answer would wait behind it).
        self._events = TurnEvents[codex.CodexEvent](max_events, on_overflow=self._overflowed)
        self._progress = codex.CodexTurnProgress()
        self._done = anyio.Event()
        self._bound = anyio.Event()
        self._wake = anyio.Event()  # the thread went idle (or the turn ended)
        self._active = anyio.Event()  # turn/started (or the thread went active) was seen
        self._early: list[tuple[str, JsonValue]] = []
        self._forced_failure: str | None = None
        self._result: codex.CodexTurnResult | None = None
        self._failure: BaseException | None = None
        self._watch_scope: anyio.CancelScope | None = None
        self.interrupt_requested = False
        """Whether :meth:`cancel` was called (or the block was left early)."""
        self._interrupt_taken = False  # codex answered a turn/interrupt of this turn
        self._interrupts_in_flight = 0

    # -- consuming

    def __aiter__(self) -> CodexTurn:
        return self

    async def __anext__(self) -> codex.CodexEvent:
        return await self._events.__anext__()

    async def result(self) -> codex.CodexTurnResult:
        """Wait for the end of the turn (dropping events nobody read, and later ones) and
        return how it ended. Raises :class:`~subagents.rpc.ConnectionClosedError` when codex
        went away, :class:`~subagents.transports.TurnOverflowError` when the events
        overflowed."""
        await self._events.drain()
        await self._done.wait()
        return self.result_nowait()

    def result_nowait(self) -> codex.CodexTurnResult:
        """How a turn that ended ended (raising as :meth:`result` does); raises
        ``anyio.WouldBlock`` while it runs."""
        self._events.raise_failure()
        if not self._done.is_set():
            raise anyio.WouldBlock
        if self._failure is not None:
            raise self._failure
        assert self._result is not None
        return self._result

    async def read_before(self) -> None:
        """Wait (bounded) until the events received so far are read: an approval request is
        decided after the item it is about has been shown."""
        await read_before(self._events)

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def messages(self) -> dict[str, str]:
        """The turn's agent messages by item id, in the order their first piece came: each
        one's deltas joined (messages can interleave, so they are grouped by item id), then
        its whole text once ``item/completed`` brings it. A copy, as received: it may be
        ahead of the events read so far."""
        return dict(self._progress.messages)

    # -- cancelling

    async def cancel(self) -> None:
        """``turn/interrupt``; the turn then ends ``interrupted``. Time-boxed; "no active
        turn to interrupt" (it already ended) counts as success."""
        if self._done.is_set() or self.id is None:
            return
        self.interrupt_requested = True
        await self._send_interrupt()

    async def interrupt(self) -> None:
        """Deprecated: :meth:`cancel` (the name every turn shares)."""
        warnings.warn(
            "CodexTurn.interrupt() is deprecated: use cancel()", DeprecationWarning, stacklevel=2
        )
        await self.cancel()

    def _overflowed(self, error: TurnOverflowError) -> None:
        self.thread.connection.task_group.start_soon(self._stop_overflowed)

    async def _stop_overflowed(self) -> None:
        """Interrupt the overflowed turn, as leaving its block does (bounded)."""
        with anyio.move_on_after(CANCELLED_EXIT_TIMEOUT):
            await self._bound.wait()  # an event may come before the turn/start answer
        await self._stop(INTERRUPT_TIMEOUT, INTERRUPT_SETTLE_TIMEOUT)

    async def _send_interrupt(self, timeout: float | None = None) -> None:
        """Send ``turn/interrupt`` until codex takes it, the turn ends, or ``timeout`` passes.

        Codex answers "no active turn to interrupt" to an interrupt that arrives after the
        ``turn/start`` answer but before the turn has really started: then the interrupt is
        sent again once ``turn/started`` is seen (or after a short pause), instead of taking
        the turn for ended while it runs on unseen.
        """
        self._interrupts_in_flight += 1
        try:
            await self._send_interrupt_until_taken(timeout)
        finally:
            self._interrupts_in_flight -= 1

    async def _send_interrupt_until_taken(self, timeout: float | None) -> None:
        assert self.id is not None
        params = wire_params(codex.TurnInterruptParams(thread_id=self.thread.id, turn_id=self.id))
        limit = INTERRUPT_TIMEOUT if timeout is None else timeout
        with anyio.move_on_after(limit) as scope:
            while not self._done.is_set():
                try:
                    await self.thread.connection.request(methods.TURN_INTERRUPT, params)
                    self._interrupt_taken = True
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
        turn_id = codex.turn_id_of(params)
        if self.id is None:
            if method == methods.TURN_STARTED and turn_id is not None:
                self._bind(turn_id)
            elif turn_id is not None:
                self._early.append((method, params))
                return True
        if turn_id is not None and turn_id != self.id:
            return False
        event = self._progress.receive(method, params)
        if isinstance(event, codex.Turn):
            self._complete(event)
            return True
        if self._progress.active:
            self._active.set()
        if self._progress.idle:
            self._wake.set()
        self._events.push(event)
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

    # -- ending

    def _complete(self, turn: codex.Turn) -> None:
        if not self._done.is_set():
            self._result = self._progress.result(turn, failure=self._forced_failure)
            self._finish()

    def _fail(self, error: BaseException) -> None:
        if not self._done.is_set():
            self._failure = error
            self._finish()

    def _finish(self) -> None:
        self._events.close()
        self._done.set()
        self._wake.set()
        if self._watch_scope is not None:
            self._watch_scope.cancel()
        self.thread.state.end(self)

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
            self._result = self._progress.ended("failed", message)
            self._finish()

    # -- lifecycle

    async def __aenter__(self) -> CodexTurn:
        connection = self.thread.connection
        state = self.thread.state
        if state.turn is not None:
            self._events.close()
            raise RuntimeError(f"thread {self.thread.id} already has a turn running")
        state.start(self, self._deliver, self._fail)
        params = wire_params(
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
        self._events.discard()  # nobody reads them any more; result() still works
        with anyio.CancelScope(shield=True):
            if cancelled:
                await self._stop(CANCELLED_EXIT_TIMEOUT, CANCELLED_EXIT_TIMEOUT)
            else:
                await self._stop(INTERRUPT_TIMEOUT, INTERRUPT_SETTLE_TIMEOUT)

    async def _stop(self, interrupt_timeout: float, settle_timeout: float) -> None:
        """Interrupt a running turn and wait, bounded, for its end; a turn that does not
        confirm ends ``interrupted`` here."""
        if self._done.is_set() or self.id is None:
            return
        self.interrupt_requested = True
        # Not again when codex took one or one is on its way (a repeated interrupt can hang).
        if not (self._interrupt_taken or self._interrupts_in_flight):
            with suppress(CodexError, ConnectionClosedError):
                await self._send_interrupt(interrupt_timeout)
        with anyio.move_on_after(settle_timeout):
            await self._done.wait()
        if not self._done.is_set():
            self._result = self._progress.ended(
                "interrupted", "the turn was left early and did not confirm its interruption"
            )
            self._finish()
