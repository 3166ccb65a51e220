"""Method names of the ``codex app-server`` protocol (v2) that this package models.

Plain string constants: importing this module loads neither pydantic nor the models.
"""

from __future__ import annotations

from typing import Final

__all__ = (
    "AGENT_MESSAGE_DELTA",
    "COMMAND_EXECUTION_REQUEST_APPROVAL",
    "ERROR",
    "FILE_CHANGE_REQUEST_APPROVAL",
    "INITIALIZE",
    "INITIALIZED",
    "ITEM_COMPLETED",
    "ITEM_STARTED",
    "PLAN_DELTA",
    "REASONING_SUMMARY_TEXT_DELTA",
    "REASONING_TEXT_DELTA",
    "SERVER_OVERLOADED",
    "THREAD_FORK",
    "THREAD_READ",
    "THREAD_RESUME",
    "THREAD_START",
    "THREAD_STARTED",
    "THREAD_STATUS_CHANGED",
    "THREAD_TOKEN_USAGE_UPDATED",
    "TURN_COMPLETED",
    "TURN_INTERRUPT",
    "TURN_PLAN_UPDATED",
    "TURN_START",
    "TURN_STARTED",
)

# client -> server requests
INITIALIZE: Final = "initialize"
THREAD_START: Final = "thread/start"
THREAD_RESUME: Final = "thread/resume"
THREAD_FORK: Final = "thread/fork"
THREAD_READ: Final = "thread/read"
TURN_START: Final = "turn/start"
TURN_INTERRUPT: Final = "turn/interrupt"

# client -> server notification
INITIALIZED: Final = "initialized"

# server -> client notifications
THREAD_STARTED: Final = "thread/started"
THREAD_STATUS_CHANGED: Final = "thread/status/changed"
THREAD_TOKEN_USAGE_UPDATED: Final = "thread/tokenUsage/updated"
TURN_STARTED: Final = "turn/started"
TURN_COMPLETED: Final = "turn/completed"
ITEM_STARTED: Final = "item/started"
ITEM_COMPLETED: Final = "item/completed"
AGENT_MESSAGE_DELTA: Final = "item/agentMessage/delta"
REASONING_SUMMARY_TEXT_DELTA: Final = "item/reasoning/summaryTextDelta"
REASONING_TEXT_DELTA: Final = "item/reasoning/textDelta"
PLAN_DELTA: Final = "item/plan/delta"
TURN_PLAN_UPDATED: Final = "turn/plan/updated"
ERROR: Final = "error"

# server -> client requests
COMMAND_EXECUTION_REQUEST_APPROVAL: Final = "item/commandExecution/requestApproval"
FILE_CHANGE_REQUEST_APPROVAL: Final = "item/fileChange/requestApproval"

SERVER_OVERLOADED: Final = -32001
"""The error code of ``"Server overloaded; retry later."``: retry the request with backoff."""
