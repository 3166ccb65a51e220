"""What the agent loop and a model adapter exchange: provider-neutral messages, one request,
one response, and the adapter interface.

A conversation is a sequence of :class:`Message`: ``user`` text, ``assistant`` text with
optional :class:`ToolCall` s, and ``tool`` results (one per call, matched by
``tool_call_id``). An adapter turns a :class:`ModelRequest` into the wire format of one API,
streams the answer (text deltas reported through ``on_text`` as they arrive) and returns the
whole :class:`ModelResponse`. Every type here is JSON-serialisable through :func:`to_json` /
``from_json`` (the snapshot files and session logs store them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, cast, final, runtime_checkable

from ...cancel import CancelSignal
from ...protocol.jsonrpc import JsonValue
from ..tools import ToolSpec

__all__ = (
    "LlmAdapter",
    "LlmCancelled",
    "LlmError",
    "LlmErrorKind",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "Role",
    "StopReason",
    "TextCallback",
    "ToolCall",
    "message_from_json",
    "message_to_json",
    "request_from_json",
    "request_to_json",
    "response_from_json",
    "response_to_json",
)

Role: TypeAlias = Literal["user", "assistant", "tool"]
StopReason: TypeAlias = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "other"]
TextCallback: TypeAlias = Callable[[str], None]
"""Called with each text delta as it streams in (synchronously, from the adapter's task)."""

LlmErrorKind: TypeAlias = Literal["http", "protocol", "connection", "timeout", "config"]


@final
@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model asks to run tool ``name`` with ``arguments`` (``id`` pairs it with its
    result)."""

    id: str
    name: str
    arguments: Mapping[str, JsonValue]


@final
@dataclass(frozen=True, slots=True)
class Message:
    """One entry of a conversation.

    - ``user``: ``text``;
    - ``assistant``: ``text`` (may be empty) and ``tool_calls`` (may be empty);
    - ``tool``: the result of the call ``tool_call_id``: ``text`` and ``is_error``.
    """

    role: Role
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False


@final
@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One call to the model: the system prompt, the conversation so far, the tools offered."""

    messages: tuple[Message, ...]
    system: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    model: str | None = None
    """``None``: the adapter's configured model."""
    max_tokens: int | None = None
    """``None``: the adapter's default."""


@final
@dataclass(frozen=True, slots=True)
class ModelResponse:
    """The model's whole answer to one request."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: StopReason = "end_turn"
    usage: Mapping[str, int] = field(default_factory=dict[str, int])
    model: str | None = None

    def as_message(self) -> Message:
        return Message("assistant", self.text, self.tool_calls)


class LlmError(Exception):
    """A model call failed. ``kind`` says how; ``status`` is the HTTP status when there was
    one; ``retryable`` whether trying again could help (overload, rate limit, 5xx, a dropped
    connection). The message names the API, the status and the upstream error text."""

    def __init__(
        self,
        kind: LlmErrorKind,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        attempts: int = 1,
    ) -> None:
        super().__init__(message)
        self.kind: LlmErrorKind = kind
        self.message = message
        self.status = status
        self.retryable = retryable
        self.attempts = attempts


class LlmCancelled(Exception):
    """The call's :class:`CancelSignal` fired: the request was abandoned (its connection
    closed). ``reason`` is the signal's reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@runtime_checkable
class LlmAdapter(Protocol):
    """A model behind one API.

    Cancellable at every await: when ``cancel`` fires (before or during the call, mid-stream
    included) :meth:`complete` stops, closes its connection and raises :class:`LlmCancelled`
    promptly; a cancelled enclosing anyio scope propagates as usual. Failures raise
    :class:`LlmError` (after the adapter's bounded retries, for retryable ones)."""

    async def complete(
        self,
        request: ModelRequest,
        *,
        cancel: CancelSignal,
        on_text: TextCallback | None = None,
    ) -> ModelResponse:
        """Send ``request``, stream the answer (``on_text`` per text delta), return it whole."""
        ...


# ---------------------------------------------------------------- JSON forms


def _spec_to_json(spec: ToolSpec) -> dict[str, JsonValue]:
    return {
        "name": spec.name,
        "description": spec.description,
        "input_schema": dict(spec.input_schema),
    }


def _spec_from_json(data: Mapping[str, Any]) -> ToolSpec:
    return ToolSpec(str(data["name"]), str(data["description"]), dict(data["input_schema"]))


def _call_to_json(call: ToolCall) -> dict[str, JsonValue]:
    return {"id": call.id, "name": call.name, "arguments": dict(call.arguments)}


def _call_from_json(data: Mapping[str, Any]) -> ToolCall:
    return ToolCall(str(data["id"]), str(data["name"]), dict(data["arguments"]))


def message_to_json(message: Message) -> dict[str, JsonValue]:
    data: dict[str, JsonValue] = {"role": message.role, "text": message.text}
    if message.tool_calls:
        data["tool_calls"] = [_call_to_json(c) for c in message.tool_calls]
    if message.tool_call_id is not None:
        data["tool_call_id"] = message.tool_call_id
    if message.is_error:
        data["is_error"] = True
    return data


def message_from_json(data: Mapping[str, Any]) -> Message:
    calls = cast(Sequence[Mapping[str, Any]], data.get("tool_calls") or ())
    return Message(
        cast(Role, data["role"]),
        str(data.get("text", "")),
        tuple(_call_from_json(c) for c in calls),
        cast("str | None", data.get("tool_call_id")),
        bool(data.get("is_error", False)),
    )


def request_to_json(request: ModelRequest) -> dict[str, JsonValue]:
    return {
        "system": request.system,
        "messages": [message_to_json(m) for m in request.messages],
        "tools": [_spec_to_json(t) for t in request.tools],
        "model": request.model,
        "max_tokens": request.max_tokens,
    }


def request_from_json(data: Mapping[str, Any]) -> ModelRequest:
    return ModelRequest(
        tuple(message_from_json(m) for m in data.get("messages") or ()),
        cast("str | None", data.get("system")),
        tuple(_spec_from_json(t) for t in data.get("tools") or ()),
        cast("str | None", data.get("model")),
        cast("int | None", data.get("max_tokens")),
    )


def response_to_json(response: ModelResponse) -> dict[str, JsonValue]:
    return {
        "text": response.text,
        "tool_calls": [_call_to_json(c) for c in response.tool_calls],
        "stop_reason": response.stop_reason,
        "usage": dict(response.usage),
        "model": response.model,
    }


def response_from_json(data: Mapping[str, Any]) -> ModelResponse:
    calls = cast(Sequence[Mapping[str, Any]], data.get("tool_calls") or ())
    return ModelResponse(
        str(data.get("text", "")),
        tuple(_call_from_json(c) for c in calls),
        cast(StopReason, data.get("stop_reason", "end_turn")),
        {str(k): int(v) for k, v in cast(Mapping[str, Any], data.get("usage") or {}).items()},
        cast("str | None", data.get("model")),
    )
