"""An adapter for the Anthropic Messages API (``POST /v1/messages``, streamed).

Mapping of a :class:`ModelRequest`:

- ``system`` -> the top-level ``system`` field; tools -> ``{name, description, input_schema}``;
- ``user`` messages -> ``user`` messages; ``assistant`` messages -> a ``text`` block (when
  the text is not empty) and one ``tool_use`` block per call;
- ``tool`` messages -> ``tool_result`` blocks (``is_error`` kept) in a ``user`` message;
  consecutive results share one ``user`` message, as the API wants them.

The answer is read as server-sent events: ``text_delta`` s go to ``on_text``; a
``tool_use`` block's ``input_json_delta`` fragments are joined and parsed when the block
stops; ``message_delta`` brings the stop reason and the usage; ``message_stop`` ends it; an
``error`` event raises :class:`LlmError`. Retries, timeouts and cancellation are
:mod:`._http`'s.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Final, cast, final

import anyio
import httpx

from ...cancel import CancelSignal
from ...protocol.jsonrpc import JsonValue
from ._http import RetrySettings, Sleep, event_json, int_fields, stream_sse
from ._sse import SSEEvent
from .types import (
    LlmError,
    Message,
    ModelRequest,
    ModelResponse,
    StopReason,
    TextCallback,
    ToolCall,
)

__all__ = (
    "ANTHROPIC_API",
    "ANTHROPIC_VERSION",
    "DEFAULT_ANTHROPIC_URL",
    "AnthropicAdapter",
    "anthropic_request_body",
)

ANTHROPIC_API: Final = "Anthropic Messages API"
ANTHROPIC_VERSION: Final = "2023-06-01"
DEFAULT_ANTHROPIC_URL: Final = "https://api.anthropic.com"

_STOP_REASONS: Final[dict[str, StopReason]] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
}

_ERROR_STATUSES: Final = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}
_RETRYABLE_ERRORS: Final = frozenset({"rate_limit_error", "api_error", "overloaded_error"})


def _message_blocks(messages: tuple[Message, ...]) -> list[JsonValue]:
    out: list[JsonValue] = []
    results: list[JsonValue] | None = None
    for message in messages:
        if message.role == "tool":
            block: dict[str, JsonValue] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.text,
            }
            if message.is_error:
                block["is_error"] = True
            if results is None:
                results = []
                out.append({"role": "user", "content": results})
            results.append(block)
            continue
        results = None
        if message.role == "user":
            out.append({"role": "user", "content": message.text})
            continue
        content: list[JsonValue] = []
        if message.text:
            content.append({"type": "text", "text": message.text})
        for call in message.tool_calls:
            content.append(
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": dict(call.arguments),
                }
            )
        out.append({"role": "assistant", "content": content})
    return out


def anthropic_request_body(
    request: ModelRequest, *, model: str, max_tokens: int
) -> dict[str, JsonValue]:
    """The JSON body of ``POST /v1/messages`` for ``request`` (``stream: true``); the
    request's own ``model`` / ``max_tokens`` win over the given defaults."""
    body: dict[str, JsonValue] = {
        "model": request.model or model,
        "max_tokens": request.max_tokens or max_tokens,
        "messages": _message_blocks(request.messages),
        "stream": True,
    }
    if request.system:
        body["system"] = request.system
    if request.tools:
        body["tools"] = [
            {
                "name": spec.name,
                "description": spec.description,
                "input_schema": dict(spec.input_schema),
            }
            for spec in request.tools
        ]
    return body


@final
@dataclass(slots=True)
class _Block:
    kind: str
    text: list[str] = field(default_factory=list[str])
    tool_id: str = ""
    tool_name: str = ""
    tool_input: Any = None
    partial_json: list[str] = field(default_factory=list[str])
    call: ToolCall | None = None


@final
class _StreamReader:
    """Turns the events of one streamed answer into a :class:`ModelResponse`."""

    def __init__(self, on_text: TextCallback | None) -> None:
        self._on_text = on_text
        self._blocks: dict[int, _Block] = {}
        self._stop_reason: str | None = None
        self._usage: dict[str, int] = {}
        self._model: str | None = None

    def __call__(self, event: SSEEvent) -> bool:
        data = event_json(ANTHROPIC_API, event)
        kind = data.get("type", event.event)
        if kind == "message_start":
            message = data.get("message")
            if isinstance(message, dict):
                message = cast(dict[str, Any], message)
                model = message.get("model")
                self._model = model if isinstance(model, str) else None
                self._usage.update(int_fields(message.get("usage")))
        elif kind == "content_block_start":
            self._start(data)
        elif kind == "content_block_delta":
            self._delta(data)
        elif kind == "content_block_stop":
            self._stop(data)
        elif kind == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, dict):
                reason = cast(dict[str, Any], delta).get("stop_reason")
                if isinstance(reason, str):
                    self._stop_reason = reason
            self._usage.update(int_fields(data.get("usage")))
        elif kind == "message_stop":
            return True
        elif kind == "error":
            raise _stream_error(data)
        return False

    def _block(self, data: dict[str, Any]) -> _Block | None:
        index = data.get("index")
        return self._blocks.get(index) if isinstance(index, int) else None

    def _start(self, data: dict[str, Any]) -> None:
        index = data.get("index")
        block = data.get("content_block")
        if not isinstance(index, int) or not isinstance(block, dict):
            raise LlmError(
                "protocol", f"{ANTHROPIC_API}: content_block_start without index or block"
            )
        block = cast(dict[str, Any], block)
        kind = str(block.get("type"))
        state = _Block(kind)
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str) and text:
                self._text(state, text)
        elif kind == "tool_use":
            state.tool_id = str(block.get("id") or "")
            state.tool_name = str(block.get("name") or "")
            state.tool_input = block.get("input")
        self._blocks[index] = state

    def _delta(self, data: dict[str, Any]) -> None:
        state = self._block(data)
        delta = data.get("delta")
        if state is None or not isinstance(delta, dict):
            raise LlmError("protocol", f"{ANTHROPIC_API}: content_block_delta for an unknown block")
        delta = cast(dict[str, Any], delta)
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            if isinstance(text, str) and text:
                self._text(state, text)
        elif kind == "input_json_delta":
            partial = delta.get("partial_json")
            if isinstance(partial, str):
                state.partial_json.append(partial)

    def _text(self, state: _Block, text: str) -> None:
        state.text.append(text)
        if self._on_text is not None:
            self._on_text(text)

    def _stop(self, data: dict[str, Any]) -> None:
        state = self._block(data)
        if state is None or state.kind != "tool_use":
            return
        raw = "".join(state.partial_json)
        if raw.strip():
            try:
                arguments: Any = json.loads(raw)
            except ValueError as error:
                raise LlmError(
                    "protocol",
                    f"{ANTHROPIC_API}: the input of tool call {state.tool_name!r} is not "
                    f"valid JSON: {error}",
                ) from error
        else:
            arguments = state.tool_input if state.tool_input is not None else {}
        if not isinstance(arguments, dict):
            raise LlmError(
                "protocol",
                f"{ANTHROPIC_API}: the input of tool call {state.tool_name!r} is not an object",
            )
        if not state.tool_id or not state.tool_name:
            raise LlmError("protocol", f"{ANTHROPIC_API}: a tool_use block without id or name")
        state.call = ToolCall(state.tool_id, state.tool_name, cast(dict[str, JsonValue], arguments))

    def response(self, fallback_model: str) -> ModelResponse:
        ordered = [self._blocks[index] for index in sorted(self._blocks)]
        text = "".join("".join(block.text) for block in ordered if block.kind == "text")
        calls: list[ToolCall] = []
        for block in ordered:
            if block.kind != "tool_use":
                continue
            if block.call is None:
                raise LlmError(
                    "protocol",
                    f"{ANTHROPIC_API}: tool call {block.tool_name!r} never got content_block_stop",
                )
            calls.append(block.call)
        reason = self._stop_reason
        stop: StopReason = "other" if reason is None else _STOP_REASONS.get(reason, "other")
        return ModelResponse(
            text, tuple(calls), stop, dict(self._usage), self._model or fallback_model
        )


def _stream_error(data: dict[str, Any]) -> LlmError:
    error = data.get("error")
    kind = "error"
    message = "(no message)"
    if isinstance(error, dict):
        error = cast(dict[str, Any], error)
        kind = str(error.get("type") or kind)
        message = str(error.get("message") or message)
    return LlmError(
        "http",
        f"{ANTHROPIC_API} reported an error mid-stream: {message} ({kind})",
        status=_ERROR_STATUSES.get(kind),
        retryable=kind in _RETRYABLE_ERRORS,
    )


@final
class AnthropicAdapter:
    """A model behind the Anthropic Messages API (an :class:`~.types.LlmAdapter`).

    ``api_key`` defaults to ``$ANTHROPIC_API_KEY`` (a :class:`LlmError` ``config`` when
    neither is set). ``timeout`` (seconds) bounds each network operation: connecting, sending,
    and the wait for each piece of the stream. Retryable failures are retried at most
    ``max_retries`` times, sleeping with ``sleep``. Without ``http_client`` each call opens
    (and closes) its own client; a given client is used as is and never closed.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_ANTHROPIC_URL,
        max_tokens: int = 4096,
        timeout: float = 600.0,
        max_retries: int = 2,
        http_client: httpx.AsyncClient | None = None,
        sleep: Sleep = anyio.sleep,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise LlmError(
                "config",
                f"{ANTHROPIC_API}: no API key (pass api_key= or set ANTHROPIC_API_KEY)",
            )
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.max_tokens = max_tokens
        self.timeout = timeout
        self._api_key = key
        self._client = http_client
        self._retry = RetrySettings(max_retries=max_retries, sleep=sleep)

    @property
    def max_retries(self) -> int:
        return self._retry.max_retries

    def __repr__(self) -> str:
        return f"AnthropicAdapter(model={self.model!r}, base_url={self.base_url!r})"

    async def complete(
        self,
        request: ModelRequest,
        *,
        cancel: CancelSignal,
        on_text: TextCallback | None = None,
    ) -> ModelResponse:
        """Send ``request``, stream the answer (``on_text`` per text delta), return it whole."""
        reader = _StreamReader(on_text)
        await stream_sse(
            api=ANTHROPIC_API,
            url=f"{self.base_url}/v1/messages",
            headers={
                "x-api-key": self._api_key,
                "anthropic-version": ANTHROPIC_VERSION,
                "accept": "text/event-stream",
            },
            body=anthropic_request_body(request, model=self.model, max_tokens=self.max_tokens),
            sink=reader,
            terminal="message_stop",
            cancel=cancel,
            client=self._client,
            timeout=self.timeout,
            retry=self._retry,
        )
        return reader.response(request.model or self.model)
