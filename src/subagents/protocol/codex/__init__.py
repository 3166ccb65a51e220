"""The ``codex app-server`` protocol (v2): typed models of the messages this project uses.

Hand-written pydantic models checked against the vendored JSON schema (``schema/``, generated
by codex 0.171.0; provenance in ``schema/SOURCE.md``). Python attributes are snake_case, wire
names are aliases, unknown fields are kept::

    from subagents.protocol import codex

    note = codex.from_wire(codex.ItemCompletedNotification, params)
    if isinstance(note.item, codex.AgentMessageItem):
        print(note.item.text, note.item.phase)
    hello = codex.TextUserInput(text="hi")
    params = codex.to_wire(codex.TurnStartParams(thread_id=tid, input=[hello]))

The wire dialect is JSON-RPC 2.0 without the ``"jsonrpc"`` member, one JSON object per line.
Method names are in :mod:`subagents.protocol.codex.methods`. A turn's notifications become
typed events (``Codex``-prefixed: :class:`CodexAgentMessageDelta`, ...) and its
:class:`CodexTurnResult` through :class:`CodexTurnProgress`, pure functions of the messages
(``_events``). Sans-IO: no anyio; importing this package loads neither pydantic nor the
models until a model is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from subagents.protocol.acp._base import JsonValue
    from subagents.protocol.codex._events import (
        DECISIONS,
        CodexAgentMessageDelta,
        CodexApprovalRequest,
        CodexDecision,
        CodexEvent,
        CodexItemCompleted,
        CodexItemStarted,
        CodexOtherEvent,
        CodexPlanDelta,
        CodexPlanUpdated,
        CodexReasoningDelta,
        CodexTokenUsage,
        CodexTurnError,
        CodexTurnProgress,
        CodexTurnResult,
        CodexTurnStatus,
        approval_request,
        final_text,
        thread_id_of,
        turn_id_of,
    )
    from subagents.protocol.codex._models import (
        AgentMessageDeltaNotification,
        AgentMessageItem,
        ApprovalPolicyName,
        ClientInfo,
        CodexModel,
        CommandExecutionItem,
        CommandExecutionRequestApprovalParams,
        CommandExecutionRequestApprovalResponse,
        ErrorNotification,
        FileChangeDecision,
        FileChangeItem,
        FileChangeRequestApprovalParams,
        FileChangeRequestApprovalResponse,
        FileUpdateChange,
        ImageUserInput,
        InitializeCapabilities,
        InitializeParams,
        InitializeResponse,
        ItemCompletedNotification,
        ItemStartedNotification,
        LocalImageUserInput,
        MentionUserInput,
        PlanDeltaNotification,
        ReasoningItem,
        ReasoningSummaryTextDeltaNotification,
        ReasoningTextDeltaNotification,
        SandboxMode,
        SkillUserInput,
        TextUserInput,
        Thread,
        ThreadForkParams,
        ThreadForkResponse,
        ThreadItem,
        ThreadReadParams,
        ThreadReadResponse,
        ThreadResumeParams,
        ThreadResumeResponse,
        ThreadStartedNotification,
        ThreadStartParams,
        ThreadStartResponse,
        ThreadStatus,
        ThreadStatusChangedNotification,
        ThreadTokenUsage,
        ThreadTokenUsageUpdatedNotification,
        TokenUsageBreakdown,
        Turn,
        TurnCompletedNotification,
        TurnError,
        TurnInterruptParams,
        TurnInterruptResponse,
        TurnPlanStep,
        TurnPlanUpdatedNotification,
        TurnStartedNotification,
        TurnStartParams,
        TurnStartResponse,
        TurnStatus,
        UnknownItem,
        UserInput,
        UserMessageItem,
        from_wire,
        to_wire,
    )

_BASE_EXPORTS = frozenset({"JsonValue"})
_EVENT_EXPORTS = frozenset(
    {
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
    }
)

__all__ = (
    "DECISIONS",
    "AgentMessageDeltaNotification",
    "AgentMessageItem",
    "ApprovalPolicyName",
    "ClientInfo",
    "CodexAgentMessageDelta",
    "CodexApprovalRequest",
    "CodexDecision",
    "CodexEvent",
    "CodexItemCompleted",
    "CodexItemStarted",
    "CodexModel",
    "CodexOtherEvent",
    "CodexPlanDelta",
    "CodexPlanUpdated",
    "CodexReasoningDelta",
    "CodexTokenUsage",
    "CodexTurnError",
    "CodexTurnProgress",
    "CodexTurnResult",
    "CodexTurnStatus",
    "CommandExecutionItem",
    "CommandExecutionRequestApprovalParams",
    "CommandExecutionRequestApprovalResponse",
    "ErrorNotification",
    "FileChangeDecision",
    "FileChangeItem",
    "FileChangeRequestApprovalParams",
    "FileChangeRequestApprovalResponse",
    "FileUpdateChange",
    "ImageUserInput",
    "InitializeCapabilities",
    "InitializeParams",
    "InitializeResponse",
    "ItemCompletedNotification",
    "ItemStartedNotification",
    "JsonValue",
    "LocalImageUserInput",
    "MentionUserInput",
    "PlanDeltaNotification",
    "ReasoningItem",
    "ReasoningSummaryTextDeltaNotification",
    "ReasoningTextDeltaNotification",
    "SandboxMode",
    "SkillUserInput",
    "TextUserInput",
    "Thread",
    "ThreadForkParams",
    "ThreadForkResponse",
    "ThreadItem",
    "ThreadReadParams",
    "ThreadReadResponse",
    "ThreadResumeParams",
    "ThreadResumeResponse",
    "ThreadStartParams",
    "ThreadStartResponse",
    "ThreadStartedNotification",
    "ThreadStatus",
    "ThreadStatusChangedNotification",
    "ThreadTokenUsage",
    "ThreadTokenUsageUpdatedNotification",
    "TokenUsageBreakdown",
    "Turn",
    "TurnCompletedNotification",
    "TurnError",
    "TurnInterruptParams",
    "TurnInterruptResponse",
    "TurnPlanStep",
    "TurnPlanUpdatedNotification",
    "TurnStartParams",
    "TurnStartResponse",
    "TurnStartedNotification",
    "TurnStatus",
    "UnknownItem",
    "UserInput",
    "UserMessageItem",
    "approval_request",
    "final_text",
    "from_wire",
    "thread_id_of",
    "to_wire",
    "turn_id_of",
)


if not TYPE_CHECKING:
    # Hidden from type checkers, which see the imports above: a misspelt name is an error.
    def __getattr__(name: str) -> Any:
        if name in _BASE_EXPORTS:
            module = "subagents.protocol.acp._base"
        elif name in _EVENT_EXPORTS:
            module = f"{__name__}._events"
        elif name in __all__:
            module = f"{__name__}._models"
        else:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later lookups skip __getattr__
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
