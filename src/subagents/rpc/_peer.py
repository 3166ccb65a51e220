"""The bidirectional JSON-RPC peer over a byte-stream pair."""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final, final

import anyio
import anyio.abc

from ..protocol.errors import (
    LocalProtocolError,
    MessageTooLargeError,
    RemoteProtocolError,
)
from ..protocol.framing import DEFAULT_MAX_MESSAGE_BYTES, END_OF_STREAM, NEED_DATA, NdjsonFramer
from ..protocol.jsonrpc import (
    ErrorCode,
    ErrorObject,
    ErrorResponse,
    JsonValue,
    Message,
    Notification,
    Request,
    RequestId,
    SuccessResponse,
    encode_message,
)
from ._errors import ConnectionClosedError, RPCError
from ._notification_queue import NotificationQueue
from ._router import ParamsError, Route, Router, to_json
from ._signal import Signal, signal_factory

__all__ = ("CANCEL_REQUEST_METHOD", "Peer", "PeerStatistics", "open_peer")

logger = logging.getLogger("subagents.rpc")

CANCEL_REQUEST_METHOD: Final = "$/cancel_request"

_READ_SIZE: Final = 256 * 1024
_ABANDONED_KEPT: Final = 1024

_handling_notification: ContextVar[int | None] = ContextVar(
    "subagents_rpc_handling_notification", default=None
)
"""Inside a notification handler: how many notifications were handled before this one."""


@dataclass(frozen=True, slots=True)
class PeerStatistics:
    """Counters of one peer, for diagnostics and tests."""

    messages_received: int
    messages_sent: int
    protocol_errors: int
    pending_requests: int
    """Outbound requests waiting for an answer."""
    handlers_running: int
    """Inbound requests being handled."""
    notifications_queued: int


@final
class _Waiter:
    __slots__ = ("barrier", "event", "outcome")

    def __init__(self, event: Signal) -> None:
        self.event = event
        self.outcome: SuccessResponse | ErrorResponse | BaseException | None = None
        self.barrier = 0
        """Notifications received before the answer: they are handled before it is returned."""

    def settle(self, outcome: SuccessResponse | ErrorResponse | BaseException) -> None:
        if self.outcome is None:
            self.outcome = outcome
            self.event.set()


@final
class _Worker:
    __slots__ = ("job", "wake")

    def __init__(self, wake: Signal) -> None:
        self.job: tuple[Request, anyio.CancelScope, int] | None = None
        """The request, its cancel scope, and how many notifications came before it."""
        self.wake = wake


@final
class Peer:
    """One side of a JSON-RPC connection; both sides may send requests and notifications.

    Create it with :func:`open_peer`, which owns its tasks. Requests and notifications
    received are dispatched through a :class:`Router`: requests run concurrently (up to
    ``max_concurrent_requests``; beyond that the peer stops reading until one finishes),
    notifications run one at a time, in arrival order, on their own task so that a slow
    notification handler never holds up responses. A request's handler starts only once the
    notifications received before the request have been handled (an ACP client knows the
    ``tool_call`` update before the permission request about that tool call).

    Every malformed line is answered as JSON-RPC asks (``-32700`` for unparseable lines,
    ``-32600`` for invalid requests and batches, with ``id: null`` when no id could be read)
    and reported to ``on_protocol_error``; the connection goes on.
    """

    def __init__(
        self,
        receive_stream: anyio.abc.ByteReceiveStream,
        send_stream: anyio.abc.ByteSendStream,
        *,
        router: Router | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_concurrent_requests: int = 64,
        notification_buffer: int = 1024,
        include_version: bool = True,
        require_version: bool = True,
        on_protocol_error: Callable[[RemoteProtocolError], None] | None = None,
        cancel_grace: float = 2.0,
        eof_reason: Callable[[], Awaitable[str]] | None = None,
        name: str = "peer",
        json_loads: Callable[[bytearray], JsonValue] | None = None,
        cancel_method: str = CANCEL_REQUEST_METHOD,
    ) -> None:
        self._receive = receive_stream
        self._eof_reason = eof_reason
        self._send = send_stream
        self._router = router if router is not None else Router()
        self._framer = NdjsonFramer(
            max_message_bytes=max_message_bytes,
            require_version=require_version,
            json_loads=json_loads,
        )
        self._include_version = include_version
        self._on_protocol_error = on_protocol_error
        self._cancel_grace = cancel_grace
        self._cancel_method = cancel_method
        self.name = name

        self._next_id = 0
        self._pending: dict[RequestId, _Waiter] = {}
        self._notes_received = 0
        self._notes_handled = 0
        self._barriers: list[tuple[int, int, anyio.Event]] = []
        self._barrier_order = itertools.count()
        # Requests we stopped waiting for: their late answers are dropped quietly.
        self._abandoned: dict[RequestId, None] = {}
        self._inbound: dict[RequestId, anyio.CancelScope] = {}
        # Request handlers run on a pool of worker tasks, started on demand (at most
        # max_concurrent_requests) and reused: handing a request to an idle worker costs an
        # event, where starting a task per request costs several times more.
        self._max_workers = max_concurrent_requests
        self._workers = 0
        self._idle: list[_Worker] = []
        self._worker_freed: anyio.Event | None = None
        self._handlers_done: anyio.Event | None = None
        self._notification_buffer = notification_buffer
        self._notes: NotificationQueue[Notification] | None = None
        self._signal: Callable[[], Signal] = anyio.Event  # the loop's own kind once running
        self._write_lock = anyio.Lock(fast_acquire=True)
        # A stream that hands each item over whole and never interleaves two (it says so with
        # ``atomic_send = True``) needs no lock around writes.
        self._atomic_send = getattr(send_stream, "atomic_send", False) is True
        self._task_group: anyio.abc.TaskGroup | None = None
        self._closed_error: ConnectionClosedError | None = None
        self._receiving_done = anyio.Event()
        self._received = 0
        self._sent = 0
        self._protocol_errors = 0

    # ------------------------------------------------------------------ public API

    async def request(
        self, method: str, params: JsonValue = None, *, timeout: float | None = None
    ) -> JsonValue:
        """Send a request and wait for its result.

        The result is returned only once every notification received before the answer has
        been handled (an ACP client sees all of a turn's updates before the turn's result);
        inside a notification handler, only the notifications before that one count.

        Raises :class:`RPCError` when the peer answers with an error,
        :class:`ConnectionClosedError` when the connection closes first (or was closed),
        :class:`~subagents.protocol.MessageTooLargeError` when the answer was over the limit,
        and :class:`TimeoutError` after ``timeout`` seconds. When the waiting task is cancelled
        (or times out), ``$/cancel_request`` is sent for the request and a late answer is
        dropped.
        """
        if self._closed_error is not None:
            raise ConnectionClosedError(self._closed_error.reason)
        request_id = self._next_id
        self._next_id += 1
        waiter = _Waiter(self._signal())
        self._pending[request_id] = waiter
        sent = False
        try:
            await self._write(Request(request_id, method, params))
            sent = True
            if timeout is None:
                await self._wait_answer(waiter)
            else:
                with anyio.fail_after(timeout):
                    await self._wait_answer(waiter)
        except BaseException:
            if (
                self._pending.pop(request_id, None) is not None
                and sent
                and self._closed_error is None
            ):
                self._abandoned[request_id] = None
                if len(self._abandoned) > _ABANDONED_KEPT:
                    del self._abandoned[next(iter(self._abandoned))]
                await self._send_courtesy_cancel(request_id)
            raise
        outcome = waiter.outcome
        if isinstance(outcome, SuccessResponse):
            return outcome.result
        if isinstance(outcome, ErrorResponse):
            raise RPCError.from_error(outcome.error)
        assert outcome is not None
        raise outcome

    async def _wait_answer(self, waiter: _Waiter) -> None:
        await waiter.event.wait()
        barrier = waiter.barrier
        if self._notes_handled >= barrier:
            return  # the common case: nothing to wait for
        inside = _handling_notification.get()
        if inside is not None and inside < barrier:
            # Called from a notification handler: only the notifications before it count.
            barrier = inside
        await self._notifications_handled(barrier)

    async def _notifications_handled(self, count: int) -> None:
        """Wait until the first ``count`` notifications received have been handled."""
        if self._notes_handled < count:
            ready = anyio.Event()
            heapq.heappush(self._barriers, (count, next(self._barrier_order), ready))
            await ready.wait()

    def _release_barriers(self, *, everything: bool = False) -> None:
        barriers = self._barriers
        while barriers and (everything or barriers[0][0] <= self._notes_handled):
            heapq.heappop(barriers)[2].set()

    async def notify(self, method: str, params: JsonValue = None) -> None:
        """Send a notification.

        After the connection closed, the notification is dropped (logged at debug level):
        notifications are never answered, so nothing waits for it.
        """
        if self._closed_error is not None:
            logger.debug("%s: notification %r dropped: connection closed", self.name, method)
            return
        try:
            await self._write(Notification(method, params))
        except ConnectionClosedError:
            logger.debug("%s: notification %r dropped: connection closed", self.name, method)

    @property
    def closed(self) -> bool:
        """Whether the connection is closed (no more requests can be sent)."""
        return self._closed_error is not None

    async def wait_closed(self) -> None:
        """Wait until the peer's stream ends (end of file, or the peer was closed)."""
        await self._receiving_done.wait()

    def abort(self, reason: str) -> None:
        """Close for good: every pending request fails with ``reason`` at once.

        Transports call this when the other side is known to be gone (say, a child process
        exited), so that the reason names the cause, such as the exit status and stderr tail.
        """
        self._close(ConnectionClosedError(reason))

    def statistics(self) -> PeerStatistics:
        return PeerStatistics(
            messages_received=self._received,
            messages_sent=self._sent,
            protocol_errors=self._protocol_errors,
            pending_requests=len(self._pending),
            handlers_running=len(self._inbound),
            notifications_queued=(0 if self._notes is None else len(self._notes)),
        )

    # ------------------------------------------------------------------ internals

    def _close(self, error: ConnectionClosedError) -> None:
        if self._closed_error is None:
            self._closed_error = error
        pending = list(self._pending.values())
        self._pending.clear()
        for waiter in pending:
            # Like an answer, the failure comes after the notifications received before it.
            waiter.barrier = self._notes_received
            waiter.settle(ConnectionClosedError(self._closed_error.reason))

    async def _send_courtesy_cancel(self, request_id: RequestId) -> None:
        with anyio.move_on_after(self._cancel_grace, shield=True):
            with suppress(ConnectionClosedError, LocalProtocolError):
                await self._write(Notification(self._cancel_method, {"requestId": request_id}))

    async def _write(self, message: Message) -> None:
        data = encode_message(message, include_version=self._include_version)
        try:
            if self._atomic_send:
                await self._send.send(data)
            else:
                async with self._write_lock:
                    await self._send.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            reason = f"{self.name}: cannot write: {exc!r}"
            if self._eof_reason is not None and self._closed_error is None:
                # The other side is gone (a child that exited): say why, as EOF would.
                with anyio.move_on_after(self._cancel_grace):
                    reason = await self._eof_reason()
            error = self._closed_error or ConnectionClosedError(reason)
            self._close(error)
            raise error from exc
        self._sent += 1

    async def _run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        self._signal = signal_factory()
        notes = NotificationQueue[Notification](self._notification_buffer, self._signal)
        self._notes = notes
        async with anyio.create_task_group() as tg:
            self._task_group = tg
            tg.start_soon(self._deliver_notifications, notes)
            task_status.started()
            try:
                await self._read_loop(tg, notes)
            finally:
                # The stream ended: let queued notifications drain, then stop.
                notes.close()

    async def _read_loop(
        self, tg: anyio.abc.TaskGroup, notify: NotificationQueue[Notification]
    ) -> None:
        framer = self._framer
        cancel_method = self._cancel_method
        reason = f"{self.name}: the peer closed the connection (end of stream)"
        try:
            while True:
                try:
                    chunk = await self._receive.receive(_READ_SIZE)
                except (anyio.EndOfStream, anyio.ClosedResourceError):
                    framer.receive_eof()
                except anyio.BrokenResourceError as exc:
                    reason = f"{self.name}: the connection broke: {exc!r}"
                    framer.receive_eof()
                else:
                    framer.receive_data(chunk)
                while True:
                    event = framer.next_event()
                    if event is NEED_DATA:
                        break
                    if event is END_OF_STREAM:
                        if self._eof_reason is not None and self._closed_error is None:
                            with anyio.move_on_after(self._cancel_grace):
                                reason = await self._eof_reason()
                        return
                    if type(event) is Notification and event.method != cancel_method:
                        # The common case inline (a stream of session/update): no coroutine.
                        self._received += 1
                        self._notes_received += 1
                        if not notify.put_nowait(event):
                            await notify.put(event)
                    elif isinstance(event, RemoteProtocolError):
                        await self._on_bad_line(event)
                    else:
                        self._received += 1
                        await self._dispatch(event, tg, notify)
        finally:
            self._close(ConnectionClosedError(reason))
            self._receiving_done.set()

    async def _dispatch(
        self,
        message: Message,
        tg: anyio.abc.TaskGroup,
        notify: NotificationQueue[Notification],
    ) -> None:
        if isinstance(message, Notification):
            if message.method == self._cancel_method:
                self._on_cancel_request(message.params)
                return
            self._notes_received += 1
            if not notify.put_nowait(message):
                await notify.put(message)
        elif isinstance(message, Request):
            if message.id in self._inbound:
                await self._report_and_answer(
                    RemoteProtocolError(
                        ErrorCode.INVALID_REQUEST,
                        f"request id {message.id!r} is already in use by a request in progress",
                        kind="invalid_envelope",
                        request_id=message.id,
                    )
                )
                return
            await self._hand_over(message, tg)
        else:
            waiter = self._pending.pop(message.id, None) if message.id is not None else None
            if waiter is None and message.id in self._abandoned:
                del self._abandoned[message.id]
                logger.debug(
                    "%s: late answer to abandoned request %r dropped", self.name, message.id
                )
            elif waiter is None:
                self._report(
                    RemoteProtocolError(
                        ErrorCode.INVALID_REQUEST,
                        f"response for unknown request id {message.id!r} ignored",
                        kind="invalid_envelope",
                        answerable=False,
                    )
                )
            else:
                waiter.barrier = self._notes_received
                waiter.settle(message)

    def _on_cancel_request(self, params: JsonValue) -> None:
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if request_id is None or isinstance(request_id, (bool, float, list, dict)):
            self._report(
                RemoteProtocolError(
                    ErrorCode.INVALID_PARAMS,
                    f"{self._cancel_method} without a valid requestId ignored",
                    kind="invalid_envelope",
                    answerable=False,
                )
            )
            return
        scope = self._inbound.get(request_id)
        if scope is not None:
            scope.cancel()

    async def _on_bad_line(self, error: RemoteProtocolError) -> None:
        if (
            isinstance(error, MessageTooLargeError)
            and error.is_response
            and error.request_id is not None
        ):
            waiter = self._pending.pop(error.request_id, None)
            if waiter is not None:
                waiter.settle(error)
        await self._report_and_answer(error)

    async def _report_and_answer(self, error: RemoteProtocolError) -> None:
        self._report(error)
        if error.answerable:
            with suppress(ConnectionClosedError):
                await self._write(
                    ErrorResponse(error.request_id, ErrorObject.of(error.code, error.message))
                )

    def _report(self, error: RemoteProtocolError) -> None:
        self._protocol_errors += 1
        logger.warning("%s: %s", self.name, error.message)
        if self._on_protocol_error is not None:
            try:
                self._on_protocol_error(error)
            except Exception:
                logger.exception("%s: on_protocol_error callback failed", self.name)

    async def _hand_over(self, request: Request, tg: anyio.abc.TaskGroup) -> None:
        """Give ``request`` to an idle worker, or a new one; wait while all are busy."""
        while not self._idle and self._workers >= self._max_workers:
            self._worker_freed = freed = anyio.Event()
            await freed.wait()
        scope = anyio.CancelScope()
        self._inbound[request.id] = scope
        if self._idle:
            worker = self._idle.pop()
            worker.job = (request, scope, self._notes_received)
            worker.wake.set()
        else:
            self._workers += 1
            worker = _Worker(self._signal())
            worker.job = (request, scope, self._notes_received)
            tg.start_soon(self._work, worker)

    async def _work(self, worker: _Worker) -> None:
        try:
            while True:
                job = worker.job
                assert job is not None
                worker.job = None
                await self._handle_request(*job)
                worker.wake = self._signal()
                self._idle.append(worker)
                if self._worker_freed is not None:
                    self._worker_freed.set()
                    self._worker_freed = None
                await worker.wake.wait()
        finally:
            self._workers -= 1
            if worker in self._idle:
                self._idle.remove(worker)

    async def _handle_request(
        self, request: Request, scope: anyio.CancelScope, notifications_before: int
    ) -> None:
        try:
            response = await self._answer(request, scope, notifications_before)
            try:
                try:
                    await self._write(response)
                except LocalProtocolError as exc:
                    logger.error("%s: result of %r is not JSON: %s", self.name, request.method, exc)
                    error = RPCError.internal_error({"error": "result is not JSON"})
                    await self._write(ErrorResponse(request.id, error.error))
            except ConnectionClosedError:
                logger.debug("%s: answer to %r dropped: connection closed", self.name, request.id)
        finally:
            self._inbound.pop(request.id, None)
            if not self._inbound and self._handlers_done is not None:
                self._handlers_done.set()

    async def _answer(
        self, request: Request, scope: anyio.CancelScope, notifications_before: int
    ) -> SuccessResponse | ErrorResponse:
        """Run the handler (once the notifications before the request have been handled);
        the one place where exceptions become wire errors."""
        route = self._router.request_route(request.method)
        if route is None:
            return ErrorResponse(request.id, RPCError.method_not_found(request.method).error)
        try:
            params = route.parse_params(request.params)
        except ParamsError as exc:
            errors: JsonValue = list(exc.errors)
            return ErrorResponse(request.id, RPCError.invalid_params({"errors": errors}).error)
        result: object = None
        with scope:
            try:
                if self._notes_handled < notifications_before:
                    await self._notifications_handled(notifications_before)
                result = await route.handler(params)
            except RPCError as exc:
                return ErrorResponse(request.id, exc.error)
            except Exception as exc:
                logger.exception(
                    "%s: handler for %r (id %r) failed", self.name, request.method, request.id
                )
                return ErrorResponse(
                    request.id,
                    RPCError.internal_error({"error": f"{type(exc).__name__}: {exc}"}).error,
                )
        if scope.cancelled_caught:
            return ErrorResponse(request.id, RPCError.request_cancelled().error)
        return SuccessResponse(request.id, to_json(result))

    async def _deliver_notifications(self, notes: NotificationQueue[Notification]) -> None:
        try:
            while True:
                note = notes.get_nowait()
                if note is None:
                    note = await notes.get()
                    if note is None:
                        return  # closed and drained
                route = self._router.notification_route(note.method)
                if route is not None:
                    await self._handle_notification(note, route)
                else:
                    logger.debug("%s: notification %r ignored: no handler", self.name, note.method)
                self._notes_handled += 1
                if self._barriers:
                    self._release_barriers()
        finally:
            self._release_barriers(everything=True)

    async def _handle_notification(self, note: Notification, route: Route) -> None:
        try:
            params = route.parse_params(note.params)
        except ParamsError as exc:
            self._report(
                RemoteProtocolError(
                    ErrorCode.INVALID_PARAMS,
                    f"notification {note.method!r} ignored: invalid params: "
                    f"{len(exc.errors)} validation error(s)",
                    kind="invalid_envelope",
                    answerable=False,
                )
            )
            return
        token = _handling_notification.set(self._notes_handled)
        try:
            await route.handler(params)
        except Exception:
            logger.exception("%s: handler for notification %r failed", self.name, note.method)
        finally:
            _handling_notification.reset(token)

    async def _shutdown(self) -> None:
        """Answer requests in progress with -32800, stop reading, fail what is pending."""
        self._close(ConnectionClosedError(f"{self.name}: the connection was closed locally"))
        if self._inbound:
            for scope in list(self._inbound.values()):
                scope.cancel()
            self._handlers_done = done = anyio.Event()
            with anyio.move_on_after(self._cancel_grace, shield=True):
                await done.wait()


@asynccontextmanager
async def open_peer(
    receive_stream: anyio.abc.ByteReceiveStream,
    send_stream: anyio.abc.ByteSendStream,
    *,
    router: Router | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    max_concurrent_requests: int = 64,
    notification_buffer: int = 1024,
    include_version: bool = True,
    require_version: bool = True,
    on_protocol_error: Callable[[RemoteProtocolError], None] | None = None,
    cancel_grace: float = 2.0,
    eof_reason: Callable[[], Awaitable[str]] | None = None,
    name: str = "peer",
    json_loads: Callable[[bytearray], JsonValue] | None = None,
    cancel_method: str = CANCEL_REQUEST_METHOD,
) -> AsyncGenerator[Peer, None]:
    """Run a :class:`Peer` over a byte-stream pair for the duration of the block.

    On exit: requests still being handled are cancelled and answered ``-32800`` (within
    ``cancel_grace`` seconds), pending outbound requests fail with
    :class:`ConnectionClosedError`, the send stream is closed, and every task the peer started
    has finished. The streams themselves belong to the caller, except that the send stream is
    closed so that the other side sees the end of the stream.

    ``eof_reason``, when given, is awaited (for at most ``cancel_grace`` seconds) when the
    stream ends, and its text becomes the reason pending requests fail with: a child-process
    transport uses it to report the exit status and the tail of stderr.

    ``json_loads``, when given, parses the lines it accepts (see
    :class:`~subagents.protocol.framing.NdjsonFramer`): a typed endpoint, which imports
    ``pydantic_core`` anyway, passes its ``from_json``.

    ``cancel_method`` is the notification that takes a request back, both ways, with params
    ``{"requestId": id}``: ``$/cancel_request`` (ACP), ``notifications/cancelled`` (MCP).
    """
    peer = Peer(
        receive_stream,
        send_stream,
        router=router,
        max_message_bytes=max_message_bytes,
        max_concurrent_requests=max_concurrent_requests,
        notification_buffer=notification_buffer,
        include_version=include_version,
        require_version=require_version,
        on_protocol_error=on_protocol_error,
        cancel_grace=cancel_grace,
        eof_reason=eof_reason,
        name=name,
        json_loads=json_loads,
        cancel_method=cancel_method,
    )
    # An exception from the caller's block is re-raised as itself once the task group has
    # closed, not wrapped in an ExceptionGroup.
    raised: BaseException | None = None
    async with anyio.create_task_group() as tg:
        await tg.start(peer._run)  # pyright: ignore[reportPrivateUsage] - open_peer runs the peer it made
        try:
            yield peer
        except BaseException as exc:
            raised = exc
        finally:
            with anyio.CancelScope(shield=True):
                await peer._shutdown()  # pyright: ignore[reportPrivateUsage] - and shuts it down
                with anyio.move_on_after(cancel_grace):
                    await send_stream.aclose()
            tg.cancel_scope.cancel()
    if raised is not None:
        raise raised
