"""An adapter for OpenAI-style Chat Completions (``POST {base_url}/chat/completions``,
streamed): OpenAI itself and the many local servers that speak the same API.

Mapping of a :class:`ModelRequest`:

- ``system`` -> a first ``system`` message; tools -> ``{"type": "function", "function":
  {name, description, parameters}}``;
- ``assistant`` messages -> ``content`` (``null`` when empty with tool calls) and
  ``tool_calls`` whose ``arguments`` are JSON strings;
- ``tool`` messages -> ``tool`` role messages with ``tool_call_id``; the API has no error
  flag, so an error result's text is prefixed with ``"Error: "``.

The answer is read as server-sent events of ``chat.completion.chunk`` s: ``content`` deltas go
to ``on_text``; ``tool_calls`` deltas are gathered by ``index`` (id and name come first, the
``arguments`` string arrives in pieces); ``finish_reason`` gives the stop reason; the usage
chunk (``stream_options.include_usage``) gives ``input_tokens`` / ``output_tokens`` /
``total_tokens``; ``data: [DONE]`` ends it. Retries, timeouts and cancellation are
:mod:`._http`'s.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias, cast, final

import anyio
import httpx

from ...cancel import CancelSignal
from ...protocol.jsonrpc import JsonValue
from ._http import RETRYABLE_STATUSES, RetrySettings, Sleep, event_json, stream_sse
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
    "DEFAULT_OPENAI_URL",
    "OPENAI_CHAT_API",
    "MaxTokensField",
    "OpenAIChatAdapter",
    "openai_chat_request_body",
)

OPENAI_CHAT_API: Final = "OpenAI Chat Completions API"
DEFAULT_OPENAI_URL: Final = "https://api.openai.com/v1"

MaxTokensField: TypeAlias = Literal["max_tokens", "max_completion_tokens"]

_STOP_REASONS: Final[dict[str, StopReason]] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}

_USAGE_NAMES: Final = {
    "prompt_tokens": "input_tokens",
    "completion_tokens": "output_tokens",
    "total_tokens": "total_tokens",
}


def _message(message: Message) -> dict[str, JsonValue]:
    if message.role == "tool":
        text = f"Error: {message.text}" if message.is_error else message.text
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": text}
    if message.role == "user":
        return {"role": "user", "content": message.text}
    out: dict[str, JsonValue] = {
        "role": "assistant",
        "content": message.text if message.text or not message.tool_calls else None,
    }
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments))},
            }
            for call in message.tool_calls
        ]
    return out


def openai_chat_request_body(
    request: ModelRequest,
    *,
    model: str,
    max_tokens: int,
    max_tokens_field: MaxTokensField = "max_tokens",
) -> dict[str, JsonValue]:
    """The JSON body of ``POST /chat/completions`` for ``request`` (streamed, usage
    included); the request's own ``model`` / ``max_tokens`` win over the given defaults."""
    messages: list[JsonValue] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.extend(_message(m) for m in request.messages)
    body: dict[str, JsonValue] = {
        "model": request.model or model,
        "messages": messages,
        max_tokens_field: request.max_tokens or max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": dict(spec.input_schema),
                },
            }
            for spec in request.tools
        ]
    return body


@final
@dataclass(slots=True)
class _CallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list[str])


@final
class _StreamReader:
    """Turns the chunks of one streamed answer into a :class:`ModelResponse`."""

    def __init__(self, on_text: TextCallback | None) -> None:
        self._on_text = on_text
        self._text: list[str] = []
        self._calls: dict[int, _CallParts] = {}
        self._finish: str | None = None
        self._usage: dict[str, int] = {}
        self._model: str | None = None

    def __call__(self, event: SSEEvent) -> bool:
        if event.data.strip() == "[DONE]":
            return True
        data = event_json(OPENAI_CHAT_API, event)
        error = data.get("error")
        if error is not None:
            raise _stream_error(error)
        model = data.get("model")
        if isinstance(model, str) and model:
            self._model = model
        usage = data.get("usage")
        if isinstance(usage, dict):
            for key, value in cast(dict[str, Any], usage).items():
                if key in _USAGE_NAMES and isinstance(value, int):
                    self._usage[_USAGE_NAMES[key]] = value
        choices = data.get("choices")
        if isinstance(choices, list):
            for choice in cast(list[Any], choices):
                if isinstance(choice, dict):
                    self._choice(cast(dict[str, Any], choice))
        return False

    def _choice(self, choice: dict[str, Any]) -> None:
        if choice.get("index", 0) != 0:
            return  # only the first choice is asked for (n=1)
        finish = choice.get("finish_reason")
        if isinstance(finish, str):
            self._finish = finish
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return
        delta = cast(dict[str, Any], delta)
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._text.append(content)
            if self._on_text is not None:
                self._on_text(content)
        tool_calls = delta.get("tool_calls")
        if isinstance(tool_calls, list):
            for part in cast(list[Any], tool_calls):
                if isinstance(part, dict):
                    self._tool_call(cast(dict[str, Any], part))

    def _tool_call(self, part: dict[str, Any]) -> None:
        index = part.get("index")
        if not isinstance(index, int):
            index = len(self._calls) - 1 if "id" not in part and self._calls else len(self._calls)
        parts = self._calls.setdefault(index, _CallParts())
        call_id = part.get("id")
        if isinstance(call_id, str) and call_id:
            parts.id = call_id
        function = part.get("function")
        if isinstance(function, dict):
            function = cast(dict[str, Any], function)
            name = function.get("name")
            if isinstance(name, str) and name:
                parts.name = name
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                parts.arguments.append(arguments)

    def response(self, fallback_model: str) -> ModelResponse:
        calls: list[ToolCall] = []
        for index in sorted(self._calls):
            parts = self._calls[index]
            if not parts.name:
                raise LlmError("protocol", f"{OPENAI_CHAT_API}: tool call #{index} has no name")
            raw = "".join(parts.arguments)
            try:
                arguments: Any = json.loads(raw) if raw.strip() else {}
            except ValueError as error:
                raise LlmError(
                    "protocol",
                    f"{OPENAI_CHAT_API}: the arguments of tool call {parts.name!r} are not "
                    f"valid JSON: {error}",
                ) from error
            if not isinstance(arguments, dict):
                raise LlmError(
                    "protocol",
                    f"{OPENAI_CHAT_API}: the arguments of tool call {parts.name!r} are not "
                    "an object",
                )
            calls.append(
                ToolCall(
                    parts.id or f"call_{index}", parts.name, cast(dict[str, JsonValue], arguments)
                )
            )
        finish = self._finish
        stop: StopReason = "other" if finish is None else _STOP_REASONS.get(finish, "other")
        return ModelResponse(
            "".join(self._text),
            tuple(calls),
            stop,
            dict(self._usage),
            self._model or fallback_model,
        )


def _stream_error(error: Any) -> LlmError:
    message = str(error)
    status: int | None = None
    if isinstance(error, dict):
        error = cast(dict[str, Any], error)
        message = str(error.get("message") or message)
        code = error.get("code")
        if isinstance(code, int):
            status = code
    return LlmError(
        "http",
        f"{OPENAI_CHAT_API} reported an error mid-stream: {message}",
        status=status,
        retryable=status in RETRYABLE_STATUSES,
    )


@final
class OpenAIChatAdapter:
    """A model behind an OpenAI-style Chat Completions API (an :class:`~.types.LlmAdapter`).

    ``api_key`` defaults to ``$OPENAI_API_KEY``; with neither, no ``Authorization`` header is
    sent (local servers). ``max_tokens_field`` names the limit's field: ``max_tokens`` (what
    local servers know) or ``max_completion_tokens`` (what OpenAI's reasoning models want).
    ``timeout``, ``max_retries``, ``http_client`` and ``sleep`` are as for
    :class:`~.anthropic.AnthropicAdapter`.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_OPENAI_URL,
        max_tokens: int = 4096,
        max_tokens_field: MaxTokensField = "max_tokens",
        timeout: float = 600.0,
        max_retries: int = 2,
        http_client: httpx.AsyncClient | None = None,
        sleep: Sleep = anyio.sleep,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.max_tokens = max_tokens
        self.max_tokens_field: MaxTokensField = max_tokens_field
        self.timeout = timeout
        self._api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self._client = http_client
        self._retry = RetrySettings(max_retries=max_retries, sleep=sleep)

    @property
    def max_retries(self) -> int:
        return self._retry.max_retries

    def __repr__(self) -> str:
        return f"OpenAIChatAdapter(model={self.model!r}, base_url={self.base_url!r})"

    async def complete(
        self,
        request: ModelRequest,
        *,
        cancel: CancelSignal,
        on_text: TextCallback | None = None,
    ) -> ModelResponse:
        """Send ``request``, stream the answer (``on_text`` per text delta), return it whole."""
        headers = {"accept": "text/event-stream"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        reader = _StreamReader(on_text)
        await stream_sse(
            api=OPENAI_CHAT_API,
            url=f"{self.base_url}/chat/completions",
            headers=headers,
            body=openai_chat_request_body(
                request,
                model=self.model,
                max_tokens=self.max_tokens,
                max_tokens_field=self.max_tokens_field,
            ),
            sink=reader,
            terminal="data: [DONE]",
            cancel=cancel,
            client=self._client,
            timeout=self.timeout,
            retry=self._retry,
        )
        return reader.response(request.model or self.model)
