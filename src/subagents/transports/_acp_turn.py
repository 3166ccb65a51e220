"""An ACP client turn (:class:`PromptTurn`): one ``session/prompt`` and its updates."""

from __future__ import annotations

from contextlib import suppress
from types import TracebackType
from typing import TYPE_CHECKING, Final, final

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..protocol import acp
from ..rpc import ConnectionClosedError, RPCError

if TYPE_CHECKING:
    from .acp_client import ClientSession

__all__ = ("PromptTurn", "TurnInbox", "validation_error")

_TURN_BUFFER: Final = 1024


def validation_error() -> type[Exception]:
    """What :func:`acp.from_wire` raises on invalid data. pydantic_core is imported with the
    models, by the first connection (in a worker thread), not with this module."""
    from pydantic_core import ValidationError

    return ValidationError


@final
class TurnInbox:
    """A running turn's inbound side, fed by the connection's handlers: its updates (in
    order, at most 1024 buffered) and the permission requests pending in it."""

    def __init__(self) -> None:
        send, receive = anyio.create_memory_object_stream[acp.SessionUpdate](_TURN_BUFFER)
        self.updates: MemoryObjectSendStream[acp.SessionUpdate] = send
        self.received: MemoryObjectReceiveStream[acp.SessionUpdate] = receive
        self.permission_scopes: set[anyio.CancelScope] = set()
        """One per pending permission request: :meth:`PromptTurn.cancel` cancels them."""


@final
class PromptTurn:
    """One ``session/prompt`` turn: iterate it for the updates, then read the stop reason.

    Use it as an async context manager (``async with session.prompt(...) as turn``). Leaving
    the block before the turn ended cancels the turn (``session/cancel``) and waits, within
    ``cancel_timeout``, for the agent's answer.
    """

    def __init__(self, session: ClientSession, prompt: list[acp.ContentBlock]) -> None:
        self._session = session
        self._prompt = prompt
        self.inbox = TurnInbox()
        """The connection's side of the turn (its handlers feed it)."""
        self._done = anyio.Event()
        self._response: acp.PromptResponse | None = None
        self._error: BaseException | None = None
        self._request_scope: anyio.CancelScope | None = None
        self.cancel_requested = False
        """Whether :meth:`cancel` was called for this turn."""
        self.update_count = 0
        """Updates received so far in this turn."""

    # -- consuming

    def __aiter__(self) -> PromptTurn:
        return self

    async def __anext__(self) -> acp.SessionUpdate:
        try:
            return await self.inbox.received.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def result(self) -> acp.PromptResponse:
        """Wait for the end of the turn (draining updates nobody read) and return its result.

        Raises what the request raised: :class:`~subagents.rpc.RPCError` for an error answer,
        :class:`~subagents.rpc.ConnectionClosedError` when the agent went away.
        """
        async for _ in self:
            pass
        await self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._response is not None
        return self._response

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def stop_reason(self) -> str | None:
        """The stop reason once the turn ended normally (``None`` before, or on error)."""
        return None if self._response is None else self._response.stop_reason

    # -- cancelling

    async def cancel(self) -> None:
        """Cancel this turn: see :meth:`ClientSession.cancel`."""
        if self._done.is_set():
            return
        self.cancel_requested = True
        for scope in list(self.inbox.permission_scopes):
            scope.cancel()
        await self._session.connection.peer.notify(
            "session/cancel",
            acp.to_wire(acp.CancelNotification(session_id=self._session.session_id)),
        )

    def abandon(self) -> None:
        """Stop waiting for this turn's answer, for an agent that ignores ``session/cancel``:
        the updates end and :meth:`result` raises ``TimeoutError``; a late answer is ignored.
        (Leaving the turn's block does this by itself after ``cancel_timeout``.)"""
        if not self._done.is_set() and self._request_scope is not None:
            self._request_scope.cancel()

    # -- lifecycle

    async def _run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        params = acp.to_wire(
            acp.PromptRequest(session_id=self._session.session_id, prompt=self._prompt)
        )
        try:
            with anyio.CancelScope() as scope:
                self._request_scope = scope
                task_status.started()
                result = await self._session.connection.peer.request("session/prompt", params)
                self._response = acp.from_wire(acp.PromptResponse, result)
            if scope.cancelled_caught:
                self._error = TimeoutError(
                    "the agent did not answer the cancelled turn in time; gave up waiting"
                )
        except (RPCError, ConnectionClosedError, validation_error()) as exc:
            self._error = exc
        except BaseException as exc:
            self._error = exc
            raise
        finally:
            self.inbox.updates.close()
            self._done.set()
            if self._session.current_turn is self:
                self._session.current_turn = None

    async def __aenter__(self) -> PromptTurn:
        session = self._session
        if session.current_turn is not None:
            self.inbox.updates.close()
            self.inbox.received.close()
            raise RuntimeError(f"session {session.session_id} already has a turn running")
        session.current_turn = self
        try:
            await session.connection.task_group.start(self._run)
        except BaseException:
            # Not started (cancelled while starting): __aexit__ will not run, so close here.
            if session.current_turn is self:
                session.current_turn = None
            self.inbox.updates.close()
            self.inbox.received.close()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with anyio.CancelScope(shield=True):
            if not self._done.is_set():
                with suppress(ConnectionClosedError):
                    await self.cancel()
                with anyio.move_on_after(self._session.connection.cancel_timeout):
                    async for _ in self:
                        pass
                    await self._done.wait()
                if not self._done.is_set() and self._request_scope is not None:
                    self._request_scope.cancel()
                    await self._done.wait()
            else:
                async for _ in self:
                    pass
        self.inbox.received.close()
