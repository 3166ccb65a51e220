"""A Codex turn's notifications as typed events, and how the turn ended: pure data and pure
functions (no I/O, no anyio).

::

    progress = CodexTurnProgress()
    for method, params in notifications_of_the_turn:    # in arrival order
        event = progress.receive(method, params)
        if isinstance(event, Turn):                    # turn/completed
            result = progress.result(event)
            break
        ...                                             # a CodexEvent: hand it on

Routing (which thread, which turn) reads :func:`thread_id_of` and :func:`turn_id_of`; an
approval request's params become a :class:`CodexApprovalRequest` through
:func:`approval_request`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, final

from pydantic import ValidationError

from ..jsonrpc import JsonValue
from . import methods
from ._models import (
    AgentMessageDeltaNotification,
    AgentMessageItem,
    CommandExecutionRequestApprovalParams,
    ErrorNotification,
    FileChangeRequestApprovalParams,
    ItemCompletedNotification,
    ItemStartedNotification,
    PlanDeltaNotification,
    ReasoningSummaryTextDeltaNotification,
    ReasoningTextDeltaNotification,
    ThreadItem,
    ThreadTokenUsageUpdatedNotification,
    TokenUsageBreakdown,
    Turn,
    TurnCompletedNotification,
    TurnPlanStep,
    TurnPlanUpdatedNotification,
    from_wire,
)

__all__ = (
    "DECISIONS",
    "CodexAgentMessageDelta",
    "CodexApprovalRequest",
    "CodexDecision",
    "CodexEvent",
    "CodexItemCompleted",
    "CodexItemStarted",
    "CodexOtherEvent",
    "CodexPlanDelta",
    "CodexPlanUpdated",
    "CodexReasoningDelta",
    "CodexTokenUsage",
    "CodexTurnError",
    "CodexTurnProgress",
    "CodexTurnResult",
    "CodexTurnStatus",
    "approval_request",
    "final_text",
    "thread_id_of",
    "turn_id_of",
)

logger = logging.getLogger("subagents.codex")

# ---------------------------------------------------------------- approvals

CodexDecision: TypeAlias = Literal["accept", "acceptForSession", "decline", "cancel"]
"""An approval decision: ``decline`` lets the turn go on without the action; ``cancel`` also
interrupts the turn."""

DECISIONS: Final[frozenset[str]] = frozenset({"accept", "acceptForSession", "decline", "cancel"})
"""Every :data:`CodexDecision`, to check what a policy answered."""


@final
@dataclass(frozen=True, slots=True)
class CodexApprovalRequest:
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
    params: CommandExecutionRequestApprovalParams | FileChangeRequestApprovalParams
    """Everything the server sent (unknown fields kept)."""

    def describe(self) -> str:
        """The approval asked for, as a log names it."""
        what = f" {self.command!r}" if self.command is not None else ""
        return (
            f"{self.method}{what} (item {self.item_id}, turn {self.turn_id}, "
            f"thread {self.thread_id})"
        )


def approval_request(method: str, params: JsonValue) -> CodexApprovalRequest:
    """The typed request of one of the two approval methods; raises
    :class:`pydantic.ValidationError` when ``params`` do not fit it."""
    if method == methods.COMMAND_EXECUTION_REQUEST_APPROVAL:
        command = from_wire(CommandExecutionRequestApprovalParams, params)
        return CodexApprovalRequest(
            method=method,
            kind="commandExecution",
            thread_id=command.thread_id,
            turn_id=command.turn_id,
            item_id=command.item_id,
            reason=command.reason,
            command=command.command,
            cwd=command.cwd,
            params=command,
        )
    if method != methods.FILE_CHANGE_REQUEST_APPROVAL:
        raise ValueError(f"not an approval request: {method}")
    change = from_wire(FileChangeRequestApprovalParams, params)
    return CodexApprovalRequest(
        method=method,
        kind="fileChange",
        thread_id=change.thread_id,
        turn_id=change.turn_id,
        item_id=change.item_id,
        reason=change.reason,
        command=None,
        cwd=None,
        params=change,
    )


# ---------------------------------------------------------------- events


@final
@dataclass(frozen=True, slots=True)
class CodexAgentMessageDelta:
    """A piece of an agent message's text (group by ``item_id``: messages can interleave)."""

    item_id: str
    delta: str


@final
@dataclass(frozen=True, slots=True)
class CodexReasoningDelta:
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
class CodexPlanUpdated:
    """``turn/plan/updated``: the turn's whole plan as it stands now (each update replaces
    the previous one)."""

    steps: list[TurnPlanStep]
    explanation: str | None


@final
@dataclass(frozen=True, slots=True)
class CodexPlanDelta:
    """``item/plan/delta``: a piece of a plan item's text (experimental upstream: the pieces
    need not add up to the completed item's text)."""

    item_id: str
    delta: str


@final
@dataclass(frozen=True, slots=True)
class CodexItemStarted:
    item: ThreadItem


@final
@dataclass(frozen=True, slots=True)
class CodexItemCompleted:
    item: ThreadItem


@final
@dataclass(frozen=True, slots=True)
class CodexTurnError:
    """An ``error`` notification: ``will_retry`` tells a transient error from the end."""

    message: str
    will_retry: bool
    codex_error_info: JsonValue


@final
@dataclass(frozen=True, slots=True)
class CodexTokenUsage:
    """``thread/tokenUsage/updated``: the thread's total and the last request's usage."""

    total: TokenUsageBreakdown
    last: TokenUsageBreakdown
    model_context_window: int | None


@final
@dataclass(frozen=True, slots=True)
class CodexOtherEvent:
    """Any other notification of the turn (or its thread), as received."""

    method: str
    params: JsonValue


CodexEvent: TypeAlias = (
    CodexAgentMessageDelta
    | CodexReasoningDelta
    | CodexPlanUpdated
    | CodexPlanDelta
    | CodexItemStarted
    | CodexItemCompleted
    | CodexTurnError
    | CodexTokenUsage
    | CodexOtherEvent
)

CodexTurnStatus: TypeAlias = Literal["completed", "interrupted", "failed"]


@final
@dataclass(frozen=True, slots=True)
class CodexTurnResult:
    """How a turn ended."""

    status: CodexTurnStatus
    final_text: str | None
    """The final answer: the agent message of ``turn/completed``'s items, else the last
    ``final_answer``-phase message completed in the turn, else the last message."""
    error: str | None
    items: list[ThreadItem]
    """Items completed during the turn, in order (or the turn's own items, if none were seen)."""
    usage: CodexTokenUsage | None


def final_text(*sources: Sequence[ThreadItem]) -> str | None:
    """The final answer from the first source holding an agent message: its last
    ``final_answer`` message, else its last message."""
    for items in sources:
        messages = [item for item in items if isinstance(item, AgentMessageItem)]
        if messages:
            finals = [m for m in messages if m.phase == "final_answer"]
            return (finals or messages)[-1].text
    return None


# ---------------------------------------------------------------- routing


def _field(params: JsonValue, name: str) -> JsonValue:
    return params.get(name) if isinstance(params, dict) else None


def thread_id_of(method: str, params: JsonValue) -> str | None:
    """The thread a notification belongs to (``threadId``; ``thread.id`` of
    ``thread/started``), ``None`` for one naming no thread (``configWarning``, ...)."""
    value = _field(params, "threadId")
    if value is None and method == methods.THREAD_STARTED:
        value = _field(_field(params, "thread"), "id")
    return value if isinstance(value, str) else None


def turn_id_of(params: JsonValue) -> str | None:
    """The turn a notification names (``turnId``, else ``turn.id``), if any."""
    value = _field(params, "turnId")
    if value is None:
        value = _field(_field(params, "turn"), "id")
    return value if isinstance(value, str) else None


# ---------------------------------------------------------------- one turn


@final
class CodexTurnProgress:
    """What one turn's notifications add up to: feed them, in order, to :meth:`receive`."""

    def __init__(self) -> None:
        self.items: list[ThreadItem] = []
        """Items completed so far, in order."""
        self.messages: dict[str, str] = {}
        """Agent messages by item id, in the order their first piece came: deltas joined,
        then the whole text once the item completed."""
        self.usage: CodexTokenUsage | None = None
        self.last_error: CodexTurnError | None = None
        self.active = False
        """``turn/started`` (or the thread going ``active``) was seen."""
        self.idle = False
        """The thread went ``idle`` after it was active: ``turn/completed`` is due."""

    def receive(self, method: str, params: JsonValue) -> CodexEvent | Turn:
        """The event of one notification, or for ``turn/completed`` the completed turn (pass
        it to :meth:`result`). Params that do not fit their method's model are kept raw, as
        a :class:`CodexOtherEvent` (logged)."""
        try:
            return self._parse(method, params)
        except ValidationError as exc:
            logger.warning("%s with unexpected params kept raw: %s", method, exc)
            return CodexOtherEvent(method, params)

    def _parse(self, method: str, params: JsonValue) -> CodexEvent | Turn:
        if method == methods.AGENT_MESSAGE_DELTA:
            delta = from_wire(AgentMessageDeltaNotification, params)
            self.messages[delta.item_id] = self.messages.get(delta.item_id, "") + delta.delta
            return CodexAgentMessageDelta(delta.item_id, delta.delta)
        if method == methods.REASONING_SUMMARY_TEXT_DELTA:
            summary = from_wire(ReasoningSummaryTextDeltaNotification, params)
            return CodexReasoningDelta(
                summary.item_id, summary.delta, "summary", summary.summary_index
            )
        if method == methods.REASONING_TEXT_DELTA:
            raw = from_wire(ReasoningTextDeltaNotification, params)
            return CodexReasoningDelta(raw.item_id, raw.delta, "text", raw.content_index)
        if method == methods.TURN_PLAN_UPDATED:
            plan = from_wire(TurnPlanUpdatedNotification, params)
            return CodexPlanUpdated(plan.plan, plan.explanation)
        if method == methods.PLAN_DELTA:
            piece = from_wire(PlanDeltaNotification, params)
            return CodexPlanDelta(piece.item_id, piece.delta)
        if method == methods.ITEM_STARTED:
            return CodexItemStarted(from_wire(ItemStartedNotification, params).item)
        if method == methods.ITEM_COMPLETED:
            item = from_wire(ItemCompletedNotification, params).item
            self.items.append(item)
            if isinstance(item, AgentMessageItem):
                self.messages[item.id] = item.text
            return CodexItemCompleted(item)
        if method == methods.ERROR:
            note = from_wire(ErrorNotification, params)
            self.last_error = CodexTurnError(
                note.error.message, note.will_retry, note.error.codex_error_info
            )
            return self.last_error
        if method == methods.THREAD_TOKEN_USAGE_UPDATED:
            tokens = from_wire(ThreadTokenUsageUpdatedNotification, params).token_usage
            self.usage = CodexTokenUsage(tokens.total, tokens.last, tokens.model_context_window)
            return self.usage
        if method == methods.TURN_COMPLETED:
            return from_wire(TurnCompletedNotification, params).turn
        if method == methods.TURN_STARTED:
            self.active = True
        elif method == methods.THREAD_STATUS_CHANGED:
            status = _field(_field(params, "status"), "type")
            if status == "active":
                self.active = True
            elif status == "idle" and self.active:
                self.idle = True
        return CodexOtherEvent(method, params)

    def result(self, turn: Turn, *, failure: str | None = None) -> CodexTurnResult:
        """The result of the turn as ``turn/completed`` (or ``thread/read``) reports it; a
        ``failure`` overrides its status (``failed``) and error."""
        status: CodexTurnStatus = "failed" if turn.status == "inProgress" else turn.status
        error = None if turn.error is None else turn.error.message
        if error is None and status == "failed" and self.last_error is not None:
            error = self.last_error.message
        if failure is not None:
            status, error = "failed", failure
        return CodexTurnResult(
            status=status,
            final_text=final_text(turn.items, self.items),
            error=error,
            items=list(self.items) or list(turn.items),
            usage=self.usage,
        )

    def ended(self, status: CodexTurnStatus, error: str) -> CodexTurnResult:
        """The result of a turn whose end codex did not report, from what was seen."""
        return CodexTurnResult(
            status=status,
            final_text=final_text(self.items),
            error=error,
            items=list(self.items),
            usage=self.usage,
        )
