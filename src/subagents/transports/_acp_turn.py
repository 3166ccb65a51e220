"""An ACP client turn (:class:`PromptTurn`): one ``session/prompt`` and its updates."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from types import TracebackType
from typing import TYPE_CHECKING, final

import anyio
import anyio.abc

from ..protocol import acp
from ..rpc import ConnectionClosedError, RPCError
from ._turn_events import DEFAULT_MAX_EVENTS, TurnEvents, TurnOverflowError

if TYPE_CHECKING:
    from .acp_client import ClientSession

__all__ = ("PromptTurn", "TurnInbox", "validation_error")


def validation_error() -> type[Exception]:
    """What :func:`acp.from_wire` raises on invalid data. pydantic_core is imported with the
    models, by the first connection (in a worker thread), not with this module."""
    from pydantic_core import ValidationError

    return ValidationError


@final
class TurnInbox:
    """A running turn's inbound side, fed by the connection's handlers: its updates (in
    order; the overflow policy of :class:`~subagents.transports.TurnOverflowError`) and the
    permission requests pending in it."""

    def __init__(self, max_events: int, on_overflow: Callable[[TurnOverflowError], None]) -> None:
        self.updates = TurnEvents[acp.SessionUpdate](max_events, on_overflow=on_overflow)
        """Pushed by the ``session/update`` handler (never waits), read by the turn."""
        self.permission_scopes: set[anyio.CancelScope] = set()
        """One per pending permission request: :meth:`PromptTurn.cancel` cancels them."""


@final
class PromptTurn:
    """One ``session/prompt`` turn: iterate it for the updates, then read the stop reason.

    Use it as an async context manager (``async with session.prompt(...) as turn``). Leaving
    the block before the turn ended cancels the turn (``session/cancel``) and waits, within
    ``cancel_timeout``, for the agent's answer. More than ``max_events`` unread updates fail
    the turn with :class:`~subagents.transports.TurnOverflowError` and cancel it.
    """

    def __init__(
        self,
        session: ClientSession,
        prompt: list[acp.ContentBlock],
        max_events: int = DEFAULT_MAX_EVENTS,
    ) -> None:
        self._session = session
        self._prompt = prompt
        self.inbox = TurnInbox(max_events, self._overflowed)
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
        return await self.inbox.updates.__anext__()

    async def result(self) -> acp.PromptResponse:
        """Wait for the end of the turn (dropping updates nobody read, and later ones) and
        return its result.

        Raises what the request raised: :class:`~subagents.rpc.RPCError` for an error answer,
        :class:`~subagents.rpc.ConnectionClosedError` when the agent went away;
        :class:`~subagents.transports.TurnOverflowError` when the updates overflowed.
        """
        await self.inbox.updates.drain()
        await self._done.wait()
        return self.result_nowait()

    def result_nowait(self) -> acp.PromptResponse:
        """The result of a turn that ended (raising as :meth:`result` does); raises
        ``anyio.WouldBlock`` while it runs."""
        self.inbox.updates.raise_failure()
        if not self._done.is_set():
            raise anyio.WouldBlock
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

    def _overflowed(self, error: TurnOverflowError) -> None:
        self._session.connection.task_group.start_soon(self._cancel_overflowed)

    async def _cancel_overflowed(self) -> None:
        """Cancel the overflowed turn, as leaving its block does (bounded)."""
        with anyio.move_on_after(self._session.connection.cancel_timeout):
            with suppress(ConnectionClosedError):
                await self.cancel()
            await self._done.wait()
        self.abandon()

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
            raise RuntimeError(f"session {session.session_id} already has a turn running")
        session.current_turn = self
        try:
            await session.connection.task_group.start(self._run)
        except BaseException:
            # Not started (cancelled while starting): __aexit__ will not run, so close here.
            if session.current_turn is self:
                session.current_turn = None
            self.inbox.updates.close()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.inbox.updates.discard()  # nobody reads them any more
        with anyio.CancelScope(shield=True):
            if not self._done.is_set():
                with suppress(ConnectionClosedError):
                    await self.cancel()
                with anyio.move_on_after(self._session.connection.cancel_timeout):
                    await self._done.wait()
                if not self._done.is_set() and self._request_scope is not None:
                    self._request_scope.cancel()
                    await self._done.wait()
