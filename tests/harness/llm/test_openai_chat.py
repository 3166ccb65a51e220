"""The OpenAI Chat Completions adapter against a mocked API (respx): request mapping, streamed
chunks (text, parallel tool calls by index, usage), errors, retries and cancellation."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
import respx

from subagents.harness.llm import (
    LlmCancelled,
    LlmError,
    Message,
    ModelRequest,
    OpenAIChatAdapter,
    ToolCall,
)
from subagents.harness.tools import ToolSpec
from subagents.providers.contract import CancelSignal

from ._wire import Sleeps, SlowStream, sse, sse_response

pytestmark = pytest.mark.anyio

BASE = "http://127.0.0.1:9/v1"
URL = f"{BASE}/chat/completions"
READ = ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {}}})


def ask(text: str = "hi") -> ModelRequest:
    return ModelRequest((Message("user", text),))


def adapter(sleep: Sleeps | None = None, **knobs: Any) -> OpenAIChatAdapter:
    knobs.setdefault("api_key", "sk-test")
    return OpenAIChatAdapter("gpt-test", base_url=BASE, sleep=sleep or Sleeps(), **knobs)


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> tuple[None, Any]:
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return None, {"object": "chat.completion.chunk", "model": "gpt-test-0613", "choices": [choice]}


def usage(prompt: int = 9, completion: int = 4) -> tuple[None, Any]:
    counts = {"prompt_tokens": prompt, "completion_tokens": completion}
    counts["total_tokens"] = prompt + completion
    return None, {"object": "chat.completion.chunk", "choices": [], "usage": counts}


DONE: tuple[None, str] = (None, "[DONE]")


def hello_stream() -> bytes:
    return sse(
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Hel"}),
        chunk({"content": "lo!"}),
        chunk({}, "stop"),
        usage(),
        DONE,
    )


def call_delta(
    index: int, arguments: str, call_id: str | None = None, name: str | None = None
) -> tuple[None, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    part: dict[str, Any] = {"index": index, "function": function}
    if call_id is not None:
        part.update(id=call_id, type="function")
        function["name"] = name
    return chunk({"tool_calls": [part]})


async def test_content_deltas_stream_through_on_text_and_usage_is_reported() -> None:
    """Content deltas reach `on_text` and add up to the text; `stop` is `end_turn`; the usage
    chunk's counts are reported as input/output/total tokens."""
    with respx.mock:
        respx.post(URL).mock(return_value=sse_response(hello_stream()))
        pieces: list[str] = []
        response = await adapter().complete(ask(), cancel=CancelSignal(), on_text=pieces.append)
    assert pieces == ["Hel", "lo!"]
    assert response.text == "Hello!"
    assert response.stop_reason == "end_turn"
    assert response.usage == {"input_tokens": 9, "output_tokens": 4, "total_tokens": 13}
    assert response.model == "gpt-test-0613"


async def test_two_parallel_tool_calls_are_gathered_by_index() -> None:
    """Interleaved `tool_calls` deltas: id and name in the first of each index, arguments
    concatenated across chunks; `tool_calls` is the `tool_use` stop reason."""
    body = sse(
        chunk({"role": "assistant", "content": None}),
        call_delta(0, "", "call_a", "read"),
        call_delta(1, '{"pa', "call_b", "read"),
        call_delta(0, '{"path": '),
        call_delta(1, 'th": "b.txt"}'),
        call_delta(0, '"a.txt"}'),
        chunk({}, "tool_calls"),
        usage(),
        DONE,
    )
    with respx.mock:
        respx.post(URL).mock(return_value=sse_response(body))
        response = await adapter().complete(ask(), cancel=CancelSignal())
    assert response.tool_calls == (
        ToolCall("call_a", "read", {"path": "a.txt"}),
        ToolCall("call_b", "read", {"path": "b.txt"}),
    )
    assert response.stop_reason == "tool_use"
    assert response.text == ""


async def test_the_request_body_maps_system_tool_calls_results_and_tools() -> None:
    """System first, assistant tool calls with JSON-string arguments, `tool` results (an
    error one prefixed), tools as functions, streaming with usage; a bearer token."""
    conversation = (
        Message("user", "read two files"),
        Message(
            "assistant",
            "",
            (ToolCall("c1", "read", {"path": "a"}), ToolCall("c2", "read", {"path": "b"})),
        ),
        Message("tool", "A", tool_call_id="c1"),
        Message("tool", "no such file", tool_call_id="c2", is_error=True),
        Message("assistant", "Done."),
    )
    request = ModelRequest(conversation, system="Be brief.", tools=(READ,))
    with respx.mock:
        route = respx.post(URL).mock(return_value=sse_response(hello_stream()))
        await adapter(max_tokens=321).complete(request, cancel=CancelSignal())
    sent = route.calls.last.request
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert json.loads(sent.content) == {
        "model": "gpt-test",
        "max_tokens": 321,
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "read two files"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path": "a"}'},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path": "b"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "A"},
            {"role": "tool", "tool_call_id": "c2", "content": "Error: no such file"},
            {"role": "assistant", "content": "Done."},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read",
                    "description": "Read a file",
                    "parameters": {"type": "object", "properties": {"path": {}}},
                },
            }
        ],
    }


async def test_without_a_key_no_authorization_header_is_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Local servers need no key: none given and none in the environment, no header."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with respx.mock:
        route = respx.post(URL).mock(return_value=sse_response(hello_stream()))
        await adapter(api_key=None).complete(ask(), cancel=CancelSignal())
    assert "authorization" not in route.calls.last.request.headers


async def test_max_completion_tokens_can_name_the_limit() -> None:
    """`max_tokens_field` picks the field the limit is sent in."""
    with respx.mock:
        route = respx.post(URL).mock(return_value=sse_response(hello_stream()))
        await adapter(max_tokens_field="max_completion_tokens").complete(
            ModelRequest((Message("user", "x"),), max_tokens=50), cancel=CancelSignal()
        )
    body = json.loads(route.calls.last.request.content)
    assert body["max_completion_tokens"] == 50
    assert "max_tokens" not in body


async def test_a_401_raises_an_http_error_with_the_upstream_message() -> None:
    """A 401 is not retried; the message names the API, the status and OpenAI's message."""
    error = {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
    sleeps = Sleeps()
    with respx.mock:
        route = respx.post(URL).mock(return_value=httpx.Response(401, json=error))
        with pytest.raises(LlmError) as info:
            await adapter(sleeps).complete(ask(), cancel=CancelSignal())
    assert info.value.kind == "http"
    assert info.value.status == 401
    assert "OpenAI Chat Completions API returned HTTP 401" in info.value.message
    assert "Incorrect API key provided" in info.value.message
    assert route.call_count == 1
    assert sleeps.calls == []


async def test_a_503_is_retried_then_the_stream_is_read() -> None:
    """Retryable statuses are retried with a backoff sleep."""
    sleeps = Sleeps()
    with respx.mock:
        route = respx.post(URL).mock(
            side_effect=[httpx.Response(503, text="busy"), sse_response(hello_stream())]
        )
        response = await adapter(sleeps).complete(ask(), cancel=CancelSignal())
    assert response.text == "Hello!"
    assert route.call_count == 2
    assert len(sleeps.calls) == 1


async def test_exhausted_retries_raise_with_the_attempt_count() -> None:
    """`max_retries=0` means one attempt."""
    with respx.mock:
        respx.post(URL).mock(return_value=httpx.Response(429, text="slow down"))
        with pytest.raises(LlmError, match="HTTP 429: slow down") as info:
            await adapter(max_retries=0).complete(ask(), cancel=CancelSignal())
    assert info.value.attempts == 1
    assert info.value.retryable


async def test_a_stream_without_done_is_a_protocol_error() -> None:
    """Chunks that end without `data: [DONE]` are not a complete answer."""
    body = sse(chunk({"content": "Hi"}), chunk({}, "stop"))
    with respx.mock:
        respx.post(URL).mock(return_value=sse_response(body))
        with pytest.raises(LlmError, match=r"ended before data: \[DONE\]") as info:
            await adapter().complete(ask(), cancel=CancelSignal())
    assert info.value.kind == "protocol"


async def test_bad_json_in_a_chunk_is_a_protocol_error() -> None:
    """A chunk that is not JSON raises `LlmError("protocol")`."""
    with respx.mock:
        respx.post(URL).mock(return_value=sse_response(sse((None, "{oops"), DONE)))
        with pytest.raises(LlmError, match="bad JSON") as info:
            await adapter().complete(ask(), cancel=CancelSignal())
    assert info.value.kind == "protocol"


async def test_an_error_chunk_raises_with_its_message() -> None:
    """Some servers report failures as an `error` object in the stream."""
    body = sse(chunk({"content": "a"}), (None, {"error": {"message": "model crashed"}}))
    with respx.mock:
        respx.post(URL).mock(return_value=sse_response(body))
        with pytest.raises(LlmError, match="mid-stream: model crashed"):
            await adapter().complete(ask(), cancel=CancelSignal())


@pytest.mark.parametrize(
    ("finish", "expected"),
    [("length", "max_tokens"), ("content_filter", "other"), ("tool_calls", "tool_use")],
)
async def test_finish_reasons_map_to_stop_reasons(finish: str, expected: str) -> None:
    """`length` is `max_tokens`; unknown reasons are `other`."""
    body = sse(chunk({"content": "x"}), chunk({}, finish), DONE)
    with respx.mock:
        respx.post(URL).mock(return_value=sse_response(body))
        response = await adapter().complete(ask(), cancel=CancelSignal())
    assert response.stop_reason == expected


async def test_cancelling_mid_stream_closes_the_stream_and_raises_promptly() -> None:
    """The signal fired after the first content delta closes the response stream."""
    _, first = chunk({"content": "tick"})
    stream = SlowStream(f"data: {json.dumps(first)}\n\n".encode(), b": ping\n\n", 0.05)
    signal = CancelSignal()
    with respx.mock:
        respx.post(URL).mock(
            return_value=httpx.Response(
                200, stream=stream, headers={"content-type": "text/event-stream"}
            )
        )
        with anyio.fail_after(10), pytest.raises(LlmCancelled) as info:
            await adapter().complete(
                ask(), cancel=signal, on_text=lambda _: signal.cancel("enough")
            )
    assert info.value.reason == "enough"
    assert stream.closed
