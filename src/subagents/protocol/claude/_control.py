"""Claude Code's control protocol, sans-IO: the lines both sides write and what they mean.

Both sides send ``control_request`` lines (a ``request_id`` and a ``request`` with its
``subtype``); the answer is a ``control_response`` whose ``response`` names the id and is a
``success`` (with a ``response`` body) or an ``error``. The CLI may take one of its requests
back with ``control_cancel_request``. Everything else the CLI writes is an event
(:func:`~subagents.protocol.claude.parse_event`). What the host answers to ``can_use_tool``
and ``hook_callback`` is built here from the policy's decision and the hooks; matching answers
to requests and running the policy is the client's business
(:mod:`subagents.transports.claude_code`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias, final

from ..jsonrpc import JsonObject, JsonValue
from ._events import ClaudeEvent, parse_event
from ._events import object_or_empty as _obj
from ._events import str_or_none as _str

__all__ = (
    "ClaudeAllowTool",
    "ClaudeControlCancel",
    "ClaudeControlError",
    "ClaudeControlRequest",
    "ClaudeControlResponse",
    "ClaudeDenyTool",
    "ClaudeHook",
    "ClaudeHookCallback",
    "ClaudePermissionPolicy",
    "ClaudeToolPermissionRequest",
    "control_error",
    "control_request",
    "control_success",
    "encode_line",
    "hook_registrations",
    "permission_answer",
    "permission_request",
    "read_message",
    "user_message",
)


class ClaudeControlError(Exception):
    """The CLI answered one of our control requests with an error."""

    def __init__(self, subtype: str, message: str, error_code: str | None = None) -> None:
        super().__init__(f"{subtype}: {message}" + (f" ({error_code})" if error_code else ""))
        self.subtype = subtype
        self.message = message
        self.error_code = error_code


# ---------------------------------------------------------------- permissions and hooks


@final
@dataclass(frozen=True, slots=True)
class ClaudeToolPermissionRequest:
    """A ``can_use_tool`` control request: may the agent run this tool with this input?"""

    tool_name: str
    input: JsonObject
    tool_use_id: str | None
    description: str | None
    raw: JsonObject
    """The whole request (``permission_suggestions``, ``blocked_path``, ... kept)."""


@final
@dataclass(frozen=True, slots=True)
class ClaudeAllowTool:
    """Run the tool, with ``updated_input`` instead of the input asked for when given."""

    updated_input: JsonObject | None = None


@final
@dataclass(frozen=True, slots=True)
class ClaudeDenyTool:
    """Refuse the tool; the agent sees ``message``. ``interrupt`` also ends the turn."""

    message: str = "denied by policy"
    interrupt: bool = False


ClaudePermissionPolicy: TypeAlias = Callable[
    [ClaudeToolPermissionRequest], Awaitable[ClaudeAllowTool | ClaudeDenyTool]
]
"""``async def policy(request) -> ClaudeAllowTool | ClaudeDenyTool``."""

ClaudeHookCallback: TypeAlias = Callable[[JsonObject], Awaitable[JsonObject]]
"""``async def callback(input) -> output``: the answer to one ``hook_callback``."""


@final
@dataclass(frozen=True, slots=True)
class ClaudeHook:
    """A hook registered in ``initialize``: ``callback(input)`` answers each ``hook_callback``
    for ``event`` (``PreToolUse``, ...) whose tool matches ``matcher`` (``None``: all)."""

    event: str
    callback: ClaudeHookCallback
    matcher: str | None = None
    timeout: float | None = None


def hook_registrations(
    hooks: Sequence[ClaudeHook],
) -> tuple[dict[str, ClaudeHookCallback], JsonObject | None]:
    """The callbacks by id (``hook_0``, ``hook_1``, ...) and the ``hooks`` field of
    ``initialize`` that registers them (``None`` without hooks)."""
    callbacks: dict[str, ClaudeHookCallback] = {}
    config: dict[str, list[JsonValue]] = {}
    for index, hook in enumerate(hooks):
        callback_id = f"hook_{index}"
        callbacks[callback_id] = hook.callback
        matcher: JsonObject = {"matcher": hook.matcher, "hookCallbackIds": [callback_id]}
        if hook.timeout is not None:
            matcher["timeout"] = hook.timeout
        config.setdefault(hook.event, []).append(matcher)
    return callbacks, (dict[str, JsonValue](config) if config else None)


def permission_request(request: JsonObject) -> ClaudeToolPermissionRequest:
    """A ``can_use_tool`` request's fields."""
    return ClaudeToolPermissionRequest(
        tool_name=_str(request.get("tool_name")) or "",
        input=_obj(request.get("input")),
        tool_use_id=_str(request.get("tool_use_id")),
        description=_str(request.get("description")),
        raw=request,
    )


def permission_answer(asked: ClaudeToolPermissionRequest, decision: object) -> JsonObject:
    """The answer body for a policy's ``decision``: allow (with the updated input, or the
    input asked for) or deny; anything but :class:`ClaudeAllowTool` and :class:`ClaudeDenyTool` is a
    deny naming it."""
    if isinstance(decision, ClaudeAllowTool):
        updated = decision.updated_input if decision.updated_input is not None else asked.input
        return {"behavior": "allow", "updatedInput": updated}
    if not isinstance(decision, ClaudeDenyTool):
        decision = ClaudeDenyTool(f"permission policy returned {decision!r}")
    answer: JsonObject = {"behavior": "deny", "message": decision.message}
    if decision.interrupt:
        answer["interrupt"] = True
    return answer


# ---------------------------------------------------------------- what the host writes


def encode_line(message: JsonObject) -> bytes:
    """One line of JSON (newlines in strings are escaped). NaN and infinities raise
    ``ValueError``: the CLI's parser rejects them, and a line it cannot parse kills it."""
    data = json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return data.encode("utf-8") + b"\n"


def control_request(request_id: str, subtype: str, fields: JsonObject) -> JsonObject:
    """A control request of ours."""
    request: JsonObject = {"subtype": subtype, **fields}
    return {"type": "control_request", "request_id": request_id, "request": request}


def control_success(request_id: str, body: JsonObject) -> JsonObject:
    """The answer to one of the CLI's control requests."""
    response: JsonObject = {"subtype": "success", "request_id": request_id, "response": body}
    return {"type": "control_response", "response": response}


def control_error(request_id: str, error: str) -> JsonObject:
    """The error answer to one of the CLI's control requests."""
    response: JsonObject = {"subtype": "error", "request_id": request_id, "error": error}
    return {"type": "control_response", "response": response}


def user_message(prompt: str | Sequence[JsonObject]) -> JsonObject:
    """A user message: text, or content blocks."""
    content: JsonValue = prompt if isinstance(prompt, str) else list(prompt)
    return {
        "type": "user",
        "message": {"role": "user", "content": content},
        "parent_tool_use_id": None,
        "session_id": "default",
    }


# ---------------------------------------------------------------- what the CLI writes


@final
@dataclass(frozen=True, slots=True)
class ClaudeControlResponse:
    """The CLI's answer to one of our control requests: ``response``, or ``error``."""

    request_id: str | None
    response: JsonObject
    error: ClaudeControlError | None


@final
@dataclass(frozen=True, slots=True)
class ClaudeControlRequest:
    """A control request from the CLI (``can_use_tool``, ``hook_callback``, ...)."""

    request_id: str
    subtype: str | None
    request: JsonObject


@final
@dataclass(frozen=True, slots=True)
class ClaudeControlCancel:
    """``control_cancel_request``: the CLI takes its request back; it is never answered."""

    request_id: str


def read_message(
    message: JsonObject,
) -> ClaudeControlResponse | ClaudeControlRequest | ClaudeControlCancel | list[ClaudeEvent]:
    """What one decoded stdout line is: a control message, or events."""
    kind = message.get("type")
    if kind == "control_response":
        response = _obj(message.get("response"))
        request_id = _str(response.get("request_id"))
        if response.get("subtype") == "error":
            error = ClaudeControlError(
                "control request",
                _str(response.get("error")) or "error",
                _str(response.get("error_code")),
            )
            return ClaudeControlResponse(request_id, {}, error)
        return ClaudeControlResponse(request_id, _obj(response.get("response")), None)
    if kind == "control_request":
        request = _obj(message.get("request"))
        request_id = _str(message.get("request_id")) or str(message.get("request_id"))
        return ClaudeControlRequest(request_id, _str(request.get("subtype")), request)
    if kind == "control_cancel_request":
        return ClaudeControlCancel(str(message.get("request_id")))
    return parse_event(message)
