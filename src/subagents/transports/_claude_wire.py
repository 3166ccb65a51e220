"""The Claude Code client's protocol engine (private to :mod:`subagents.transports.claude_code`):
writes lines, reads and dispatches them, answers the CLI's control requests, matches answers
to ours (:class:`~subagents.rpc.PendingRequests`), and feeds the running turn.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Final, final

import anyio
import anyio.abc

from ..protocol.claude import (
    ClaudeControlCancel,
    ClaudeControlRequest,
    ClaudeControlResponse,
    ClaudeDenyTool,
    ClaudeEvent,
    ClaudeHookCallback,
    ClaudeLineTooLongError,
    ClaudePermissionPolicy,
    ClaudeResult,
    ClaudeSystemInit,
    ClaudeToolPermissionRequest,
    SkippedLine,
    control_error,
    control_request,
    control_success,
    decode_line,
    encode_line,
    is_result_head,
    permission_answer,
    permission_request,
    read_message,
)
from ..protocol.claude import object_or_empty as _obj
from ..protocol.claude import str_or_none as _str
from ..protocol.framing import NEED_DATA, LineSplitter, OversizedLine
from ..protocol.jsonrpc import JsonObject
from ..rpc import PendingRequests
from ._child_connection import EXIT_REASON_WAIT
from ._policy import call_policy
from ._turn_events import TurnEvents, TurnOverflowError, read_before

__all__ = ("ClaudeConnectionError", "ClaudeWire", "TurnState")

logger = logging.getLogger("subagents.claude")

_READ_CHUNK: Final = 65536
_STREAM_ENDED: Final = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError)


class ClaudeConnectionError(Exception):
    """The CLI's stdout ended (it exited, usually): names the exit status and stderr tail."""


def _tool_asked(label: str, request: ClaudeToolPermissionRequest) -> str:
    """The permission asked for, as a log names it."""
    return f"claude {label!r}: can_use_tool {request.tool_name!r} (tool use {request.tool_use_id})"


@final
class TurnState:
    """One turn as the reader feeds it: its events in order (up to and including its
    :class:`ClaudeResult`), then its end."""

    def __init__(
        self, max_events: int, on_overflow: Callable[[TurnOverflowError], None] | None = None
    ) -> None:
        self.events = TurnEvents[ClaudeEvent](max_events, on_overflow=on_overflow)
        self.result: ClaudeResult | None = None
        self.settled = anyio.Event()  # the CLI is done with this turn (result seen, or lost)
        self.interrupt_requested = False
        """An ``interrupt`` for this turn was written (by ``cancel()``, overflow or leaving the
        turn's block); one cancelled before it left does not count, so the next may send it."""

    @property
    def done(self) -> bool:
        """The result (or an error) has been queued for the reader."""
        return self.events.ended

    def push(self, item: ClaudeEvent) -> None:
        if isinstance(item, ClaudeResult):
            self.settled.set()
        if self.done:
            return  # the turn failed already: what follows is read and dropped
        if self.events.push(item) and isinstance(item, ClaudeResult):
            self.result = item
            self.events.close()

    def fail(self, exc: BaseException, *, settled: bool = False) -> None:
        if settled:
            self.settled.set()
        self.events.fail(exc)


_LOST_MARGIN: Final = 0.5
"""Seconds a failed write waits for the connection's loss beyond the watcher's own wait."""


@final
class ClaudeWire:
    """Both directions of the stream-json protocol: writes lines, reads and dispatches them,
    answers the CLI's control requests, and feeds the running turn."""

    def __init__(
        self,
        stdin: anyio.abc.ByteSendStream,
        tg: anyio.abc.TaskGroup,
        policy: ClaudePermissionPolicy,
        hooks: Mapping[str, ClaudeHookCallback],
        max_line_bytes: int,
        label: str,
    ) -> None:
        self.label = label
        self.turn: TurnState | None = None
        self.lost: ClaudeConnectionError | None = None
        self.session_id: str | None = None
        self.line_errors: list[ClaudeLineTooLongError] = []
        self._stdin = stdin
        self.task_group = tg
        self._policy = policy
        self._hooks = hooks
        self._max_line_bytes = max_line_bytes
        self._send_lock = anyio.Lock()
        self._counter = 0
        self._pending = PendingRequests[str, JsonObject]()
        self._handlers: dict[str, anyio.CancelScope] = {}
        self._closed = anyio.Event()
        self._lost = anyio.Event()

    # -- the _Closable protocol of the process layer

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    @property
    def turn_running(self) -> bool:
        return self.turn is not None and not self.turn.settled.is_set()

    # -- writing

    async def send(self, message: JsonObject) -> None:
        data = encode_line(message)
        if self.lost is not None:
            raise ClaudeConnectionError(str(self.lost))
        async with self._send_lock:
            try:
                await self._stdin.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                # The CLI closed its stdin: it is ending, and the watcher names its exit once
                # seen (it waits up to EXIT_REASON_WAIT for it); that says more than this.
                with anyio.move_on_after(EXIT_REASON_WAIT + _LOST_MARGIN):
                    await self._lost.wait()
                if self.lost is not None:
                    raise ClaudeConnectionError(str(self.lost)) from exc
                raise ClaudeConnectionError(f"claude {self.label!r}: stdin is closed") from exc

    async def control(self, subtype: str, timeout: float, fields: JsonObject) -> JsonObject:
        self._counter += 1
        request_id = f"req_{self._counter}_{secrets.token_hex(4)}"
        message = control_request(request_id, subtype, fields)
        return await self._pending.call(request_id, lambda: self.send(message), timeout)

    async def interrupt(self, state: TurnState, timeout: float) -> JsonObject:
        """Send ``interrupt`` for ``state``'s turn (its answer, as :meth:`control`); the turn's
        ``interrupt_requested`` is set once the request is written."""
        self._counter += 1
        request_id = f"req_{self._counter}_{secrets.token_hex(4)}"
        message = control_request(request_id, "interrupt", {})

        async def send() -> None:
            await self.send(message)
            state.interrupt_requested = True

        return await self._pending.call(request_id, send, timeout)

    async def close_stdin(self) -> None:
        async with self._send_lock:
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self._stdin.aclose()

    def lose(self, reason: str) -> None:
        """The connection is gone: fail what waits, with ``reason``."""
        if self.lost is None:
            self.lost = ClaudeConnectionError(reason)
            self._lost.set()
        self._pending.fail_all(lambda: ClaudeConnectionError(reason))
        if self.turn is not None:
            self.turn.fail(ClaudeConnectionError(reason), settled=True)

    # -- reading

    async def read(self, stdout: anyio.abc.ByteReceiveStream) -> None:
        """Read and dispatch lines until the stream ends."""
        lines = LineSplitter(max_line_bytes=self._max_line_bytes)
        try:
            while True:
                line = lines.next_line()
                if isinstance(line, bytearray):
                    self._dispatch_line(line)
                elif isinstance(line, OversizedLine):
                    self._on_oversized(line)
                elif line is NEED_DATA:
                    try:
                        lines.receive_data(await stdout.receive(_READ_CHUNK))
                    except _STREAM_ENDED:
                        lines.receive_eof()
                else:  # END_OF_STREAM
                    return
        finally:
            self._closed.set()

    def _on_oversized(self, line: OversizedLine) -> None:
        error = ClaudeLineTooLongError(line.size, self._max_line_bytes)
        logger.warning("%s", error)
        if self.turn is not None and not self.turn.settled.is_set():
            # A lost result line still ends the turn (the CLI is idle then).
            self.turn.fail(error, settled=is_result_head(line.head))
        else:
            self.line_errors.append(error)

    def _dispatch_line(self, line: bytearray) -> None:
        message = decode_line(line)
        if message is None:
            return
        if isinstance(message, SkippedLine):
            if message.kind == "not_json":
                logger.debug(
                    "claude %r: skipped a non-JSON stdout line: %r", self.label, message.start
                )
            else:
                logger.warning(
                    "claude %r: skipped an unreadable stdout line: %s", self.label, message.detail
                )
            return
        read = read_message(message)
        if isinstance(read, ClaudeControlResponse):
            request_id = read.request_id
            answered = request_id is not None and (
                self._pending.settle(request_id, read.response)
                if read.error is None
                else self._pending.fail(request_id, read.error)
            )
            if not answered:
                logger.debug(
                    "claude %r: control response for no request: %r", self.label, request_id
                )
        elif isinstance(read, ClaudeControlRequest):
            scope = anyio.CancelScope()
            self._handlers[read.request_id] = scope
            self.task_group.start_soon(self._answer, read, scope)
        elif isinstance(read, ClaudeControlCancel):
            scope = self._handlers.pop(read.request_id, None)
            if scope is not None:
                scope.cancel()
        else:
            for event in read:
                if isinstance(event, ClaudeSystemInit):
                    self.session_id = event.session_id
            if self.turn is not None and not self.turn.settled.is_set():
                for event in read:
                    self.turn.push(event)
            else:
                logger.debug("claude %r: event outside a turn: %s", self.label, message.get("type"))

    async def _answer(self, request: ClaudeControlRequest, scope: anyio.CancelScope) -> None:
        with scope:
            try:
                answer = control_success(request.request_id, await self._handle(request))
            except Exception as exc:  # every request gets an answer
                logger.debug("claude %r: control request failed: %r", self.label, exc)
                answer = control_error(request.request_id, str(exc) or repr(exc))
            if self._handlers.pop(request.request_id, None) is None:
                return  # cancelled by control_cancel_request meanwhile
            with suppress(ClaudeConnectionError):
                await self.send(answer)

    async def _handle(self, request: ClaudeControlRequest) -> JsonObject:
        if request.subtype == "can_use_tool":
            asked = permission_request(request.request)
            if self.turn is not None:
                await read_before(self.turn.events)
            decision = await call_policy(
                self._policy, asked, logger=logger, asked=_tool_asked(self.label, asked)
            )
            if decision is None:  # it raised, logged: a policy that raises is a deny
                decision = ClaudeDenyTool("permission policy failed")
            return permission_answer(asked, decision)
        if request.subtype == "hook_callback":
            callback_id = _str(request.request.get("callback_id")) or ""
            callback = self._hooks.get(callback_id)
            if callback is None:
                raise LookupError(f"no hook registered as {callback_id!r}")
            return await callback(_obj(request.request.get("input")))
        raise NotImplementedError(f"unsupported control request subtype: {request.subtype}")
