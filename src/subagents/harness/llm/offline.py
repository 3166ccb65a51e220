"""``OfflineModel``: the embedded default model (no key, no network), deterministic.

It answers from the words of the conversation's last message, so the runtime, the spawn and
fork providers and ``subagents serve`` can be driven end to end offline:

- the last message is a tool result: ``"<tool> said: <result text>"`` (``end_turn``);
- ``delegate TASK`` (or ``spawn TASK``): a call of the tool :attr:`OfflineModel.delegate_tool`
  (``subagent``) with ``{"description": "delegated task", "prompt": TASK}`` when the request
  offers it, else the text ``no subagent tool here``;
- ``tool NAME [JSON]``: a call of the tool ``NAME`` with the JSON object as its arguments
  (``{}`` when none is given) when the request offers that tool, else the text
  ``no tool NAME here`` (a JSON text that is no object is said back as an error text);
- ``json``: a JSON object ``{"answer": <the prompt>, "words": <its word count>}``;
- ``slow [N]``: ``tick 1 ``, ``tick 2 `` ... one every :attr:`OfflineModel.tick` seconds, N
  ticks (default 600), cancellable mid-stream;
- ``fail``: raises ``LlmError`` (``http``, status 503, not retryable);
- anything else: ``You said: <text>``, streamed word by word (a long text in at most
  :data:`MAX_CHUNKS` chunks of several words: a model streams tokens, not a megabyte a word
  at a time).

Tool call ids are ``call_<number of messages so far>``: the same conversation gives the same
ids in every run (snapshots stay stable).
"""

from __future__ import annotations

import json
import re
from typing import Final, cast, final

import anyio

from ...cancel import CancelSignal
from ...protocol import JsonValue
from .types import (
    LlmCancelled,
    LlmError,
    Message,
    ModelRequest,
    ModelResponse,
    TextCallback,
    ToolCall,
)

__all__ = ("OfflineModel",)

_DELEGATE: Final = re.compile(r"^\s*(?:delegate|spawn)\b\s*(.*)$", re.IGNORECASE | re.DOTALL)
_SLOW: Final = re.compile(r"^\s*slow\b\s*(\d+)?", re.IGNORECASE)
_FIRST_WORD: Final = re.compile(r"^\s*(\w+)")


MAX_CHUNKS: Final = 256
"""At most this many text chunks per answer."""


@final
class OfflineModel:
    """The scripted offline model (see the module docstring)."""

    def __init__(
        self, *, tick: float = 0.1, delegate_tool: str = "subagent", name: str = "offline"
    ) -> None:
        self.tick = tick
        self.delegate_tool = delegate_tool
        self.name = name

    async def complete(
        self,
        request: ModelRequest,
        *,
        cancel: CancelSignal,
        on_text: TextCallback | None = None,
    ) -> ModelResponse:
        if cancel.cancelled:
            raise LlmCancelled(cancel.reason or "cancelled")
        await anyio.lowlevel.checkpoint()
        last = request.messages[-1] if request.messages else Message("user", "")
        usage = {"input_tokens": sum(len(m.text.split()) for m in request.messages)}
        if last.role == "tool":
            name = _tool_name(request.messages, last.tool_call_id)
            return await self._say(f"{name} said: {last.text}", on_text, cancel, usage)
        text = last.text
        first = _FIRST_WORD.match(text)
        word = first.group(1).lower() if first else ""
        delegate = _DELEGATE.match(text)
        if delegate is not None:
            if any(spec.name == self.delegate_tool for spec in request.tools):
                call = ToolCall(
                    f"call_{len(request.messages)}",
                    self.delegate_tool,
                    {"description": "delegated task", "prompt": delegate.group(1).strip()},
                )
                return ModelResponse("", (call,), "tool_use", usage, self.name)
            return await self._say("no subagent tool here", on_text, cancel, usage)
        if word == "tool":
            return await self._tool_call(request, text, on_text, cancel, usage)
        if word == "json":
            answer = json.dumps({"answer": text, "words": len(text.split())})
            return await self._say(answer, on_text, cancel, usage, chunked=False)
        if word == "fail":
            raise LlmError("http", "offline model: 503 overloaded (asked to fail)", status=503)
        slow = _SLOW.match(text)
        if slow is not None:
            return await self._slow(int(slow.group(1) or 600), on_text, cancel, usage)
        return await self._say(f"You said: {text}", on_text, cancel, usage)

    async def _tool_call(
        self,
        request: ModelRequest,
        text: str,
        on_text: TextCallback | None,
        cancel: CancelSignal,
        usage: dict[str, int],
    ) -> ModelResponse:
        parts = text.split(None, 2)
        name = parts[1] if len(parts) > 1 else ""
        if not any(spec.name == name for spec in request.tools):
            return await self._say(f"no tool {name or '(none named)'} here", on_text, cancel, usage)
        try:
            arguments: object = json.loads(parts[2]) if len(parts) > 2 else {}
        except ValueError as exc:
            return await self._say(f"tool arguments are not JSON: {exc}", on_text, cancel, usage)
        if not isinstance(arguments, dict):
            return await self._say("tool arguments must be a JSON object", on_text, cancel, usage)
        call = ToolCall(
            f"call_{len(request.messages)}", name, cast(dict[str, JsonValue], arguments)
        )
        return ModelResponse("", (call,), "tool_use", usage, self.name)

    async def _say(
        self,
        text: str,
        on_text: TextCallback | None,
        cancel: CancelSignal,
        usage: dict[str, int],
        *,
        chunked: bool = True,
    ) -> ModelResponse:
        words = re.findall(r"\S+\s*|\s+", text) if chunked else [text]
        pieces = words
        if len(words) > MAX_CHUNKS:
            size = -(-len(words) // MAX_CHUNKS)
            pieces = ["".join(words[i : i + size]) for i in range(0, len(words), size)]
        for piece in pieces:
            await anyio.lowlevel.checkpoint()
            if cancel.cancelled:
                raise LlmCancelled(cancel.reason or "cancelled")
            if on_text is not None:
                on_text(piece)
        usage = {**usage, "output_tokens": len(words)}
        return ModelResponse(text, (), "end_turn", usage, self.name)

    async def _slow(
        self, ticks: int, on_text: TextCallback | None, cancel: CancelSignal, usage: dict[str, int]
    ) -> ModelResponse:
        parts: list[str] = []
        for index in range(1, ticks + 1):
            with cancel.linked_scope():
                await anyio.sleep(self.tick)
            if cancel.cancelled:
                raise LlmCancelled(cancel.reason or "cancelled")
            part = f"tick {index} "
            parts.append(part)
            if on_text is not None:
                on_text(part)
        usage = {**usage, "output_tokens": ticks}
        return ModelResponse("".join(parts), (), "end_turn", usage, self.name)


def _tool_name(messages: tuple[Message, ...], call_id: str | None) -> str:
    for message in reversed(messages):
        for call in message.tool_calls:
            if call.id == call_id:
                return call.name
    return "the tool"
