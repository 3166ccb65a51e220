"""The Anthropic adapter over real HTTP, against the project's fake Messages API on
127.0.0.1: text, a tool call, an overload error and cancellation mid-stream."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import anyio.to_thread
import pytest

from subagents.harness.llm import AnthropicAdapter, LlmCancelled, LlmError, Message, ModelRequest
from subagents.harness.tools import ToolSpec
from subagents.providers.contract import CancelSignal
from subagents.testing.fake_models._http import FakeServer, serve
from subagents.testing.fake_models.anthropic_messages import (
    DEFAULT_REPLY,
    FAIL_MESSAGE,
    TOOL_COMMAND,
    AnthropicMessagesHandler,
    message_requests,
    open_streams,
    wait_streams_closed,
)

from ._wire import Sleeps

pytestmark = pytest.mark.anyio

BASH = ToolSpec("Bash", "Run a command", {"type": "object"})


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with serve(AnthropicMessagesHandler) as fake:
        yield fake


def ask(text: str) -> ModelRequest:
    # The fake treats a request without tools as a side request: offer one.
    return ModelRequest((Message("user", text),), tools=(BASH,))


def adapter(server: FakeServer, sleep: Sleeps | None = None) -> AnthropicAdapter:
    return AnthropicAdapter(
        "fake-model", api_key="fake", base_url=server.base_url, timeout=10, sleep=sleep or Sleeps()
    )


async def test_a_streamed_text_answer_arrives_over_http(server: FakeServer) -> None:
    """The fake's default reply streams in several deltas that add up to it."""
    pieces: list[str] = []
    response = await adapter(server).complete(
        ask("hello"), cancel=CancelSignal(), on_text=pieces.append
    )
    assert response.text == DEFAULT_REPLY
    assert len(pieces) > 1
    assert "".join(pieces) == DEFAULT_REPLY
    assert response.stop_reason == "end_turn"
    assert response.usage["input_tokens"] == 10
    [request] = message_requests(server)
    assert request.headers["x-api-key"] == "fake"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.body["stream"] is True


async def test_a_tool_call_arrives_with_its_arguments(server: FakeServer) -> None:
    """The `tool` word gets a Bash `tool_use` whose input is assembled from the stream."""
    response = await adapter(server).complete(ask("use the tool"), cancel=CancelSignal())
    assert response.stop_reason == "tool_use"
    [call] = response.tool_calls
    assert call.name == "Bash"
    assert call.id.startswith("toolu_fake_")
    assert call.arguments == {"command": TOOL_COMMAND, "description": "Mark"}


async def test_an_overload_is_an_http_error_with_the_upstream_message(server: FakeServer) -> None:
    """The `fail` word gets a 529 with `x-should-retry: false`: one attempt, the upstream
    message in the error."""
    sleeps = Sleeps()
    with pytest.raises(LlmError) as info:
        await adapter(server, sleeps).complete(ask("please fail"), cancel=CancelSignal())
    assert info.value.kind == "http"
    assert info.value.status == 529
    assert FAIL_MESSAGE in info.value.message
    assert info.value.attempts == 1
    assert sleeps.calls == []
    assert len(message_requests(server)) == 1


async def test_cancelling_mid_stream_closes_the_connection(server: FakeServer) -> None:
    """The signal fired while the `slow` stream is running: `LlmCancelled` promptly, and the
    server sees its stream closed."""
    signal = CancelSignal()
    got_text = anyio.Event()
    pieces: list[str] = []

    def on_text(piece: str) -> None:
        pieces.append(piece)
        got_text.set()

    async def cancel_after_text() -> None:
        await got_text.wait()
        signal.cancel("stop")

    with anyio.fail_after(15):
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_after_text)
            with pytest.raises(LlmCancelled, match="stop"):
                await adapter(server).complete(ask("be slow"), cancel=signal, on_text=on_text)
        assert pieces
        assert await anyio.to_thread.run_sync(wait_streams_closed, server, 10)
    assert open_streams(server) == 0
