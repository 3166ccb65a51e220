"""A fake OpenAI-style **Chat Completions API** on 127.0.0.1, for the in-process agent loop's
:class:`~subagents.harness.llm.openai_chat.OpenAIChatAdapter` over real HTTP::

    with serve(ChatCompletionsHandler) as server:
        adapter = OpenAIChatAdapter("fake-model", api_key=API_KEY, base_url=server.base_url + "/v1")

What it answers (every request is recorded in :attr:`FakeServer.requests`):

- ``POST .../chat/completions``: ``chat.completion.chunk`` server-sent events ending with
  ``data: [DONE]`` when the body says ``"stream": true`` (a last chunk with the ``usage``
  when ``stream_options.include_usage`` is set), else one ``chat.completion`` object. The
  reply follows the rules of the fake Messages API
  (:mod:`~subagents.testing.fake_models.anthropic_messages`), on the same constants:

  - a request whose messages after the last ``user`` message include a ``tool`` message:
    :data:`TOOL_RESULT_PREFIX` + that (last) result's content, ``finish_reason: "stop"``;
  - a last user message starting with :data:`DELEGATE_PREFIX` when the request offers the
    function :data:`DELEGATE_TOOL`: one ``tool_calls`` entry of that function with
    ``{"description": DELEGATE_DESCRIPTION, "prompt": <the rest, stripped>}`` (the arguments
    JSON streamed in two pieces), ``finish_reason: "tool_calls"``;
  - anything else: :data:`DEFAULT_REPLY`, streamed in a few deltas.

- Anything else: an OpenAI-style ``404`` error.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any, Final, cast
from urllib.parse import urlsplit

from ._http import FakeHandler, FakeServer, RecordedRequest
from .anthropic_messages import (
    DEFAULT_REPLY,
    DELEGATE_DESCRIPTION,
    DELEGATE_PREFIX,
    DELEGATE_TOOL,
    TOOL_RESULT_PREFIX,
    delegated_prompt,
)

__all__ = (
    "API_KEY",
    "DEFAULT_REPLY",
    "DELEGATE_DESCRIPTION",
    "DELEGATE_PREFIX",
    "DELEGATE_TOOL",
    "TOOL_RESULT_PREFIX",
    "ChatCompletionsHandler",
    "chat_requests",
    "last_user_text",
    "tool_results_after_last_user_message",
)

API_KEY: Final = "sk-fake-chat"
"""A key for the fake (any key, or none, is accepted)."""

_DELTA_SIZE: Final = 6


def _messages(body: Any) -> list[dict[str, Any]]:
    if not isinstance(body, dict):
        return []
    messages = cast(dict[str, Any], body).get("messages")
    if not isinstance(messages, list):
        return []
    return [cast(dict[str, Any], m) for m in cast(list[Any], messages) if isinstance(m, dict)]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(cast(dict[str, Any], part).get("text", ""))
            for part in cast(list[Any], content)
            if isinstance(part, dict)
        )
    return ""


def last_user_text(body: Any) -> str:
    """The text of the last ``user`` message of a Chat Completions body (``""`` if none)."""
    for message in reversed(_messages(body)):
        if message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


def tool_results_after_last_user_message(body: Any) -> list[str]:
    """The contents of the ``tool`` messages after the last ``user`` message, in order."""
    results: list[str] = []
    for message in reversed(_messages(body)):
        if message.get("role") == "user":
            break
        if message.get("role") == "tool":
            results.append(_content_text(message.get("content")))
    results.reverse()
    return results


def chat_requests(server: FakeServer) -> list[RecordedRequest]:
    """The ``POST .../chat/completions`` requests the fake received so far."""
    with server.lock:
        requests = list(server.requests)
    return [
        r
        for r in requests
        if r.method == "POST" and urlsplit(r.path).path.rstrip("/").endswith("/chat/completions")
    ]


def _function_names(tools: Any) -> set[str]:
    names: set[str] = set()
    if isinstance(tools, list):
        for tool in cast(list[Any], tools):
            function = (
                cast(dict[str, Any], tool).get("function") if isinstance(tool, dict) else None
            )
            if isinstance(function, dict):
                names.add(str(cast(dict[str, Any], function).get("name")))
    return names


class ChatCompletionsHandler(FakeHandler):
    """The fake Chat Completions API: see the module documentation for what it answers."""

    def handle_post(self, body: Any) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        if not path.endswith("/chat/completions") or not isinstance(body, dict):
            error = {"message": f"no route for POST {self.path}", "type": "invalid_request_error"}
            self.send_json(404, {"error": error})
            return
        body = cast(dict[str, Any], body)
        model = str(body.get("model") or "fake-model")
        results = tool_results_after_last_user_message(body)
        delegated = delegated_prompt(last_user_text(body), _function_names(body.get("tools")))
        text = ""
        call: dict[str, Any] | None = None
        if results:
            text = TOOL_RESULT_PREFIX + results[-1]
        elif delegated is not None:
            arguments = json.dumps({"description": DELEGATE_DESCRIPTION, "prompt": delegated})
            call = {"id": f"call_fake_{uuid.uuid4().hex[:20]}", "arguments": arguments}
        else:
            text = DEFAULT_REPLY
        finish = "tool_calls" if call is not None else "stop"
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if call is not None:
                message["tool_calls"] = [_complete_call(call)]
            choice = {"index": 0, "message": message, "finish_reason": finish}
            self.send_json(200, {**_envelope(model, "chat.completion"), "choices": [choice]})
            return
        options = body.get("stream_options")
        usage = isinstance(options, dict) and bool(
            cast(dict[str, Any], options).get("include_usage")
        )
        self.send_sse((None, data) for data in _chunks(model, text, call, finish, usage))


def _complete_call(call: dict[str, Any]) -> dict[str, Any]:
    function = {"name": DELEGATE_TOOL, "arguments": call["arguments"]}
    return {"id": call["id"], "type": "function", "function": function}


def _envelope(model: str, kind: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-fake-{uuid.uuid4().hex[:20]}",
        "object": kind,
        "created": int(time.time()),
        "model": model,
    }


def _chunks(
    model: str, text: str, call: dict[str, Any] | None, finish: str, usage: bool
) -> Iterator[Any]:
    envelope = _envelope(model, "chat.completion.chunk")

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return {**envelope, "choices": [choice]}

    yield chunk({"role": "assistant", "content": ""})
    pieces = 0
    for start in range(0, len(text), _DELTA_SIZE):
        pieces += 1
        yield chunk({"content": text[start : start + _DELTA_SIZE]})
    if call is not None:
        arguments: str = call["arguments"]
        half = len(arguments) // 2
        opening = {"name": DELEGATE_TOOL, "arguments": arguments[:half]}
        first = {"index": 0, "id": call["id"], "type": "function", "function": opening}
        yield chunk({"tool_calls": [first]})
        yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[half:]}}]})
        pieces += 2
    yield chunk({}, finish)
    if usage:
        counts = {"prompt_tokens": 10, "completion_tokens": pieces, "total_tokens": 10 + pieces}
        yield {**envelope, "choices": [], "usage": counts}
    yield "[DONE]"
