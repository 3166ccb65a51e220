"""The Anthropic Messages API adapter against a mocked API (respx): request mapping, the
streamed answer, errors, retries and cancellation."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
import respx

from subagents.harness.llm import (
    AnthropicAdapter,
    LlmCancelled,
    LlmError,
    Message,
    ModelRequest,
    ToolCall,
)
from subagents.harness.tools import ToolSpec
from subagents.providers.contract import CancelSignal

from ._wire import Sleeps, SlowStream, sse, sse_response

pytestmark = pytest.mark.anyio

BASE = "https://anthropic.test"
URL = f"{BASE}/v1/messages"
BASH = ToolSpec("Bash", "Run a command", {"type": "object", "properties": {}})


def ask(text: str = "hi") -> ModelRequest:
    return ModelRequest((Message("user", text),), tools=(BASH,))


def adapter(sleep: Sleeps | None = None, **knobs: Any) -> AnthropicAdapter:
    return AnthropicAdapter(
        "claude-test", api_key="sk-test", base_url=BASE, sleep=sleep or Sleeps(), **knobs
    )


def start(model: str = "claude-test") -> tuple[str, dict[str, Any]]:
    message = {"type": "message", "role": "assistant", "model": model, "content": []}
    message["usage"] = {"input_tokens": 12, "output_tokens": 1}
    return "message_start", {"type": "message_start", "message": message}


def text_block(index: int, *deltas: str) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            },
        )
    ]
    for text in deltas:
        events.append(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": text},
                },
            )
        )
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def tool_block(
    index: int, call_id: str, name: str, *parts: str
) -> list[tuple[str, dict[str, Any]]]:
    opening = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": opening},
        )
    ]
    for part in parts:
        delta = {"type": "input_json_delta", "partial_json": part}
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        )
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def end(stop_reason: str = "end_turn", output_tokens: int = 7) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def hello_stream() -> bytes:
    return sse(start(), ("ping", {"type": "ping"}), *text_block(0, "Hel", "lo, ", "world"), *end())


def overloaded(status: int = 529, headers: dict[str, str] | None = None) -> httpx.Response:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    return httpx.Response(status, json=body, headers=headers)


async def test_text_deltas_stream_through_on_text_and_add_up_to_the_text() -> None:
    """Each `text_delta` reaches `on_text` as it arrives; the response has the whole text,
    the stop reason, the usage and the model."""
    with respx.mock:
        respx.post(URL).mock(return_value=sse_response(hello_stream()))
        pieces: list[str] = []
        response = await adapter().complete(ask(), cancel=CancelSignal(), on_text=pieces.append)
    assert pieces == ["Hel", "lo, ", "world"]
    assert response.text == "Hello, world"
    assert response.stop_reason == "end_turn"
    assert response.tool_calls == ()
    assert response.usage == {"input_tokens": 12, "output_tokens": 7}
    assert response.model == "claude-test"


async def test_a_tool_call_streamed_as_partial_json_is_assembled_at_block_stop() -> None:
    """`input_json_delta` fragments (split mid-token) are joined and parsed into the call's
    arguments; text before it is kept; `tool_use` is the stop reason."""
    body = sse(
        start(),
        *text_block(0, "Let me look."),
        *tool_block(1, "toolu_1", "Bash", '{"comm', 'and": "ls -', 'la", "n": [1, ', "2]}"),
        *tool_block(2, "toolu_2", "Bash"),
        *end("tool_use"),
    )
    with respx.mock:
        respx.post(URL).mock(return_value=sse_response(body))
        response = await adapter().complete(ask(), cancel=CancelSignal())
    assert response.text == "Let me look."
    assert response.tool_calls == (
        ToolCall("toolu_1", "Bash", {"command": "ls -la", "n": [1, 2]}),
        ToolCall("toolu_2", "Bash", {}),
    )
    assert response.stop_reason == "tool_use"


async def test_the_request_body_maps_system_tools_and_tool_results() -> None:
    """System prompt, tools with `input_schema`, assistant tool calls as `tool_use` blocks,
    consecutive tool results merged into one user message; the API key and version headers."""
    conversation = (
        Message("user", "list files"),
        Message(
            "assistant",
            "Two commands.",
            (ToolCall("t1", "Bash", {"command": "ls"}), ToolCall("t2", "Bash", {"command": "x"})),
        ),
        Message("tool", "a.txt", tool_call_id="t1"),
        Message("tool", "x: not found", tool_call_id="t2", is_error=True),
        Message("assistant", "", (ToolCall("t3", "Bash", {}),)),
        Message("tool", "ok", tool_call_id="t3"),
        Message("user", "thanks"),
    )
    request = ModelRequest(conversation, system="Be brief.", tools=(BASH,), max_tokens=99)
    with respx.mock:
        route = respx.post(URL).mock(return_value=sse_response(hello_stream()))
        await adapter().complete(request, cancel=CancelSignal())
    sent = route.calls.last.request
    assert sent.headers["x-api-key"] == "sk-test"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["content-type"] == "application/json"
    assert json.loads(sent.content) == {
        "model": "claude-test",
        "max_tokens": 99,
        "stream": True,
        "system": "Be brief.",
        "tools": [
            {
                "name": "Bash",
                "description": "Run a command",
                "input_schema": {"type": "object", "properties": {}},
            }
        ],
        "messages": [
            {"role": "user", "content": "list files"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Two commands."},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
                    {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "x"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "t2",
                        "content": "x: not found",
                        "is_error": True,
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t3", "name": "Bash", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t3", "content": "ok"}],
            },
            {"role": "user", "content": "thanks"},
        ],
    }


async def test_a_4xx_answer_raises_an_http_error_with_the_upstream_message() -> None:
    """A 400 is not retried; the error names the API, the status and the upstream message."""
    body = {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "max_tokens: too large"},
    }
    sleeps = Sleeps()
    with respx.mock:
        route = respx.post(URL).mock(return_value=httpx.Response(400, json=body))
        with pytest.raises(LlmError) as info:
            await adapter(sleeps).complete(ask(), cancel=CancelSignal())
    error = info.value
    assert error.kind == "http"
    assert error.status == 400
    assert not error.retryable
    assert error.attempts == 1
    assert "Anthropic Messages API returned HTTP 400" in error.message
    assert "max_tokens: too large" in error.message
    assert route.call_count == 1
    assert sleeps.calls == []


async def test_overloaded_and_unavailable_answers_are_retried_before_success() -> None:
    """A 529 then a 503 are retried (two backoff sleeps), then the stream is read."""
    sleeps = Sleeps()
    with respx.mock:
        route = respx.post(URL).mock(
            side_effect=[overloaded(), overloaded(503), sse_response(hello_stream())]
        )
        response = await adapter(sleeps).complete(ask(), cancel=CancelSignal())
    assert response.text == "Hello, world"
    assert route.call_count == 3
    assert len(sleeps.calls) == 2
    assert all(0 < delay <= 8.0 for delay in sleeps.calls)


async def test_exhausted_retries_raise_with_the_number_of_attempts() -> None:
    """After `max_retries` retries the last error is raised, saying how many attempts."""
    sleeps = Sleeps()
    with respx.mock:
        route = respx.post(URL).mock(return_value=overloaded())
        with pytest.raises(LlmError) as info:
            await adapter(sleeps, max_retries=3).complete(ask(), cancel=CancelSignal())
    assert info.value.attempts == 4
    assert info.value.status == 529
    assert info.value.retryable
    assert "Overloaded" in info.value.message
    assert route.call_count == 4
    assert len(sleeps.calls) == 3


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "120"}, 10.0),
        ({"retry-after": "2"}, 2.0),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after": "Wed, 21 Oct 2099 07:28:00 GMT"}, 10.0),
    ],
)
async def test_retry_after_is_honoured_but_capped(headers: dict[str, str], expected: float) -> None:
    """The server's `retry-after` decides the sleep, at most 10 seconds."""
    sleeps = Sleeps()
    with respx.mock:
        respx.post(URL).mock(
            side_effect=[httpx.Response(429, headers=headers), sse_response(hello_stream())]
        )
        await adapter(sleeps).complete(ask(), cancel=CancelSignal())
    assert sleeps.calls == [expected]


async def test_x_should_retry_false_stops_retries_at_once() -> None:
    """The server's `x-should-retry: false` wins over a retryable status."""
    sleeps = Sleeps()
    with respx.mock:
        route = respx.post(URL).mock(return_value=overloaded(headers={"x-should-retry": "false"}))
        with pytest.raises(LlmError) as info:
            await adapter(sleeps).complete(ask(), cancel=CancelSignal())
    assert info.value.attempts == 1
    assert not info.value.retryable
    assert route.call_count == 1


async def test_connection_errors_are_retried() -> None:
    """A refused connection is retried; exhausted, it is an `LlmError("connection")`."""
    with respx.mock:
        route = respx.post(URL).mock(
            side_effect=[httpx.ConnectError("refused"), sse_response(hello_stream())]
        )
        response = await adapter().complete(ask(), cancel=CancelSignal())
        assert response.text == "Hello, world"
        assert route.call_count == 2
        route.side_effect = httpx.ConnectError("refused")
        with pytest.raises(LlmError, match="connection failed: ConnectError: refused") as info:
            await adapter(max_retries=1).complete(ask(), cancel=CancelSignal())
    assert info.value.kind == "connection"
    assert info.value.attempts == 2


async def test_an_httpx_timeout_is_a_timeout_error() -> None:
    """A request that times out raises `LlmError("timeout")` (not retried)."""
    with respx.mock:
        route = respx.post(URL).mock(side_effect=httpx.ReadTimeout("slow"))
        with pytest.raises(LlmError) as info:
            await adapter(timeout=3.0).complete(ask(), cancel=CancelSignal())
    assert info.value.kind == "timeout"
    assert "3 s" in info.value.message
    assert route.call_count == 1


async def test_bad_json_in_an_event_is_a_protocol_error() -> None:
    """An event whose data is not JSON raises `LlmError("protocol")` naming the cause."""
    body = sse(start(), ("content_block_delta", "{not json"))
    with respx.mock:
        respx.post(URL).mock(return_value=sse_response(body))
        with pytest.raises(LlmError, match="bad JSON in a 'content_block_delta' event") as info:
            await adapter().complete(ask(), cancel=CancelSignal())
    assert info.value.kind == "protocol"


async def test_a_stream_that_ends_before_message_stop_is_a_protocol_error() -> None:
    """A truncated stream is not a complete answer; it is not retried after text arrived."""
    body = sse(start(), *text_block(0, "partial"))
    with respx.mock:
        route = respx.post(URL).mock(return_value=sse_response(body))
        with pytest.raises(LlmError, match="ended before message_stop") as info:
            await adapter().complete(ask(), cancel=CancelSignal())
    assert info.value.kind == "protocol"
    assert route.call_count == 1


async def test_invalid_tool_input_json_is_a_protocol_error() -> None:
    """Partial JSON that does not assemble into an object is a protocol error."""
    body = sse(start(), *tool_block(0, "t", "Bash", '{"a": '), *end("tool_use"))
    with respx.mock:
        respx.post(URL).mock(return_value=sse_response(body))
        with pytest.raises(LlmError, match="input of tool call 'Bash' is not valid JSON"):
            await adapter().complete(ask(), cancel=CancelSignal())


async def test_an_error_event_mid_stream_raises_and_is_not_retried() -> None:
    """An `error` event after text was shown raises `LlmError` with the upstream message and
    is never retried (the text already reached the caller)."""
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    body = sse(start(), *text_block(0, "Hi")[:2], ("error", error))
    sleeps = Sleeps()
    pieces: list[str] = []
    with respx.mock:
        route = respx.post(URL).mock(return_value=sse_response(body))
        with pytest.raises(LlmError, match="mid-stream: Overloaded") as info:
            await adapter(sleeps).complete(ask(), cancel=CancelSignal(), on_text=pieces.append)
    assert info.value.status == 529
    assert info.value.retryable
    assert route.call_count == 1
    assert sleeps.calls == []
    assert pieces == ["Hi"]


@pytest.mark.parametrize(
    ("wire", "expected"),
    [("max_tokens", "max_tokens"), ("stop_sequence", "stop_sequence"), ("refusal", "other")],
)
async def test_stop_reasons_map_to_the_neutral_ones(wire: str, expected: str) -> None:
    """Known stop reasons keep their names; unknown ones are `other`."""
    with respx.mock:
        respx.post(URL).mock(
            return_value=sse_response(sse(start(), *text_block(0, "x"), *end(wire)))
        )
        response = await adapter().complete(ask(), cancel=CancelSignal())
    assert response.stop_reason == expected


async def test_cancelling_mid_stream_closes_the_stream_and_raises_promptly() -> None:
    """The signal fired after the first delta: the response stream is closed and
    `LlmCancelled` carries the reason, well within a bound."""
    first = sse(start(), *text_block(0, "tick")[:2])
    stream = SlowStream(first, b": keep-alive\n\n", interval=0.05)
    signal = CancelSignal()
    got_text = anyio.Event()
    with respx.mock:
        respx.post(URL).mock(
            return_value=httpx.Response(
                200, stream=stream, headers={"content-type": "text/event-stream"}
            )
        )

        async def cancel_on_text() -> None:
            await got_text.wait()
            signal.cancel("stop pressed")

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_on_text)
                with pytest.raises(LlmCancelled) as info:
                    await adapter().complete(ask(), cancel=signal, on_text=lambda _: got_text.set())
                assert info.value.reason == "stop pressed"
    assert stream.closed


async def test_cancelling_during_a_backoff_sleep_stops_retrying() -> None:
    """The signal interrupts the sleep between two attempts."""
    signal = CancelSignal()
    called = anyio.Event()

    def answer(request: httpx.Request) -> httpx.Response:
        called.set()
        return overloaded(headers={"retry-after": "5"})

    async def cancel_when_called() -> None:
        await called.wait()
        signal.cancel("give up")

    with respx.mock:
        route = respx.post(URL).mock(side_effect=answer)
        model = AnthropicAdapter("claude-test", api_key="k", base_url=BASE)  # real sleep
        with anyio.fail_after(4):
            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_when_called)
                with pytest.raises(LlmCancelled, match="give up"):
                    await model.complete(ask(), cancel=signal)
    assert route.call_count == 1


async def test_a_signal_fired_before_the_call_cancels_it() -> None:
    """An already-fired signal: `LlmCancelled`, no answer read."""
    signal = CancelSignal()
    signal.cancel("early")
    with respx.mock(assert_all_called=False) as mock:
        mock.post(URL).mock(return_value=sse_response(hello_stream()))
        with anyio.fail_after(5), pytest.raises(LlmCancelled, match="early"):
            await adapter().complete(ask(), cancel=signal)


async def test_a_given_http_client_is_used_and_left_open() -> None:
    """A caller's `httpx.AsyncClient` carries the request and is not closed by the adapter."""
    with respx.mock:
        respx.post(URL).mock(return_value=sse_response(hello_stream()))
        async with httpx.AsyncClient() as client:
            model = adapter(http_client=client)
            assert (await model.complete(ask(), cancel=CancelSignal())).text == "Hello, world"
            assert not client.is_closed
            assert (await model.complete(ask(), cancel=CancelSignal())).text == "Hello, world"


def test_a_missing_api_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without `api_key` and `ANTHROPIC_API_KEY` the adapter cannot be built."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LlmError, match="ANTHROPIC_API_KEY") as info:
        AnthropicAdapter("claude-test")
    assert info.value.kind == "config"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    assert AnthropicAdapter("claude-test").model == "claude-test"
