"""The ACP client's handlers of agent-to-client methods (``session/update``,
``session/request_permission``) and its permission policies."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeAlias, final

import anyio

from ..protocol import acp
from ..rpc import Router, RPCError
from ._policy import call_policy, policy_name
from ._turn_events import read_before

if TYPE_CHECKING:
    from ..protocol.acp._base import ACPModel
    from .acp_client import AgentConnection

__all__ = ("ClientHandlers", "PermissionPolicy", "allow_policy", "reject_policy")

logger = logging.getLogger("subagents.acp.client")

PermissionPolicy: TypeAlias = (
    "Callable[[acp.RequestPermissionRequest], Awaitable[acp.RequestPermissionOutcome]]"
)
"""Decides a ``session/request_permission``: returns the outcome to answer with."""


def _outcome_cancelled() -> acp.RequestPermissionOutcome:
    return acp.CancelledRequestPermissionOutcome()


def _select(request: acp.RequestPermissionRequest, kinds: Sequence[str]) -> str | None:
    for kind in kinds:
        for option in request.options:
            if option.kind == kind:
                return option.option_id
    return None


def _reject_outcome(request: acp.RequestPermissionRequest) -> acp.RequestPermissionOutcome:
    """Deny: a reject option the agent offered (once, else always); none offered: cancelled."""
    option_id = _select(request, ("reject_once", "reject_always"))
    if option_id is None:
        return _outcome_cancelled()
    return acp.SelectedRequestPermissionOutcome(option_id=option_id)


def _permission_asked(request: acp.RequestPermissionRequest) -> str:
    """The permission asked for, as a log names it."""
    call = request.tool_call
    title = "" if call.title is None else f" {call.title!r}"
    return (
        f"session/request_permission for tool call {call.tool_call_id!r}{title} "
        f"(session {request.session_id!r})"
    )


async def reject_policy(request: acp.RequestPermissionRequest) -> acp.RequestPermissionOutcome:
    """The default policy: pick a reject option (once, else always); none offered: cancelled."""
    return _reject_outcome(request)


async def allow_policy(request: acp.RequestPermissionRequest) -> acp.RequestPermissionOutcome:
    """Allow (once, else always); when no allow option is offered, reject as the default does."""
    option_id = _select(request, ("allow_once", "allow_always"))
    if option_id is None:
        return await reject_policy(request)
    return acp.SelectedRequestPermissionOutcome(option_id=option_id)


@final
class ClientHandlers:
    """The client side's handlers of agent-to-client methods."""

    def __init__(self, policy: PermissionPolicy) -> None:
        self.policy = policy
        self.connection: AgentConnection | None = None
        self.early_updates: list[acp.SessionNotification] = []

    def register(self, router: Router) -> None:
        router.on_notification("session/update", self.on_update, params=acp.SessionNotification)
        router.on_request(
            "session/request_permission", self.on_permission, params=acp.RequestPermissionRequest
        )

    async def on_update(self, note: acp.SessionNotification) -> None:
        connection = self.connection
        session = None if connection is None else connection.sessions.get(note.session_id)
        if session is None:
            if connection is not None and connection.stash(note.session_id, note.update):
                return
            logger.warning("session/update for unknown session %r ignored", note.session_id)
            return
        if isinstance(note.update, acp.ToolCallSessionUpdate):
            session.tool_calls[note.update.tool_call_id] = note.update
        turn = session.current_turn
        if turn is None or turn.done:
            session.idle_updates.append(note.update)
            return
        turn.update_count += 1
        # Never waits: past max_events unread the turn fails and is cancelled (TurnEvents).
        turn.inbox.updates.push(note.update)

    async def on_permission(self, request: acp.RequestPermissionRequest) -> ACPModel:
        connection = self.connection
        session = None if connection is None else connection.sessions.get(request.session_id)
        if session is None:
            raise RPCError.resource_not_found({"sessionId": request.session_id})
        call = request.tool_call
        known = session.tool_calls.get(call.tool_call_id)
        if known is not None:
            call.title = call.title if call.title is not None else known.title
            call.kind = call.kind if call.kind is not None else known.kind
            call.raw_input = call.raw_input if call.raw_input is not None else known.raw_input
        turn = session.current_turn
        if turn is not None:
            await read_before(turn.inbox.updates)
        if turn is not None and turn.cancel_requested:
            return acp.RequestPermissionResponse(outcome=_outcome_cancelled())
        outcome: acp.RequestPermissionOutcome = _outcome_cancelled()
        with anyio.CancelScope() as scope:
            if turn is not None:
                turn.inbox.permission_scopes.add(scope)
            try:
                decided = await call_policy(
                    self.policy, request, logger=logger, asked=_permission_asked(request)
                )
            finally:
                if turn is not None:
                    turn.inbox.permission_scopes.discard(scope)
            if decided is None:  # the policy raised (logged): deny
                outcome = _reject_outcome(request)
            elif not isinstance(  # pyright: ignore[reportUnnecessaryIsInstance]
                decided,
                (acp.SelectedRequestPermissionOutcome, acp.CancelledRequestPermissionOutcome),
            ):
                logger.error(
                    "permission policy %s answered %r on %s; answering deny",
                    policy_name(self.policy),
                    decided,
                    _permission_asked(request),
                )
                outcome = _reject_outcome(request)
            else:
                outcome = decided
        if scope.cancelled_caught:
            outcome = _outcome_cancelled()
        return acp.RequestPermissionResponse(outcome=outcome)
