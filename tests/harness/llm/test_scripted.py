"""The scripted adapter: canned answers streamed like a real model, recorded requests,
cancellation, a clear error when the script runs out."""

from __future__ import annotations

import anyio
import pytest

from subagents.harness.llm import (
    LlmCancelled,
    LlmError,
    Message,
    ModelRequest,
    ModelResponse,
    ScriptedAdapter,
    ToolCall,
)
from subagents.providers.contract import CancelSignal

pytestmark = pytest.mark.anyio


def ask(text: str) -> ModelRequest:
    return ModelRequest((Message("user", text),))


async def test_the_script_answers_in_order_and_records_every_request() -> None:
    """Responses and callables are played in order; each request is kept in `.requests`."""
    call = ModelResponse("", (ToolCall("c1", "Bash", {"command": "ls"}),), "tool_use")
    model = ScriptedAdapter(
        [call, lambda request: ModelResponse(f"saw {len(request.messages)} messages")]
    )
    first = await model.complete(ask("one"), cancel=CancelSignal())
    second = await model.complete(
        ModelRequest((Message("user", "a"), call.as_message())), cancel=CancelSignal()
    )
    assert first is call
    assert second.text == "saw 2 messages"
    assert [r.messages[0].text for r in model.requests] == ["one", "a"]
    assert model.remaining == 0


async def test_the_text_is_streamed_in_chunks_that_add_up_to_it() -> None:
    """`on_text` gets the answer's text in several pieces whose concatenation is the text."""
    model = ScriptedAdapter([ModelResponse("Hello from the script")], chunks=4)
    pieces: list[str] = []
    response = await model.complete(ask("hi"), cancel=CancelSignal(), on_text=pieces.append)
    assert len(pieces) == 4
    assert "".join(pieces) == response.text == "Hello from the script"


async def test_a_single_callable_answers_every_request() -> None:
    """Built from one callable, the adapter never runs out."""
    model = ScriptedAdapter(lambda request: ModelResponse(request.messages[-1].text.upper()))
    for word in ("a", "b", "c"):
        response = await model.complete(ask(word), cancel=CancelSignal())
        assert response.text == word.upper()
    assert len(model.requests) == 3


async def test_a_script_that_ran_out_raises_a_config_error() -> None:
    """One call too many is an `LlmError(kind="config")` that says the script ran out."""
    model = ScriptedAdapter([ModelResponse("only")])
    await model.complete(ask("1"), cancel=CancelSignal())
    with pytest.raises(LlmError, match=r"script ran out: request #2") as info:
        await model.complete(ask("2"), cancel=CancelSignal())
    assert info.value.kind == "config"


async def test_a_scripted_error_is_raised() -> None:
    """An `LlmError` step is raised for its call; the script goes on afterwards."""
    model = ScriptedAdapter([LlmError("http", "overloaded", status=529), ModelResponse("ok")])
    with pytest.raises(LlmError, match="overloaded"):
        await model.complete(ask("1"), cancel=CancelSignal())
    model.add(ModelResponse("later"))
    assert (await model.complete(ask("2"), cancel=CancelSignal())).text == "ok"
    assert (await model.complete(ask("3"), cancel=CancelSignal())).text == "later"


async def test_cancelling_mid_stream_raises_llm_cancelled_with_the_reason() -> None:
    """The signal firing between two chunks stops the stream with `LlmCancelled`."""
    model = ScriptedAdapter([ModelResponse("a long answer streamed slowly")], chunks=5, delay=0.01)
    signal = CancelSignal()
    pieces: list[str] = []
    got_first = anyio.Event()

    def on_text(piece: str) -> None:
        pieces.append(piece)
        got_first.set()

    async def cancel_after_first() -> None:
        await got_first.wait()
        signal.cancel("user pressed stop")

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_after_first)
            with pytest.raises(LlmCancelled) as info:
                await model.complete(ask("go"), cancel=signal, on_text=on_text)
            assert info.value.reason == "user pressed stop"
    assert 1 <= len(pieces) < 5


async def test_a_signal_fired_before_the_call_cancels_it_at_once() -> None:
    """An already-fired signal makes `complete` raise `LlmCancelled` without streaming."""
    model = ScriptedAdapter([ModelResponse("never shown")], delay=60)
    signal = CancelSignal()
    signal.cancel("too late")
    pieces: list[str] = []
    with anyio.fail_after(5), pytest.raises(LlmCancelled, match="too late"):
        await model.complete(ask("x"), cancel=signal, on_text=pieces.append)
    assert pieces == []
    assert len(model.requests) == 1


async def test_an_enclosing_cancel_scope_propagates_as_usual() -> None:
    """Cancelling the caller's own scope is not turned into `LlmCancelled`."""
    model = ScriptedAdapter([ModelResponse("slow text here")], delay=60)
    with anyio.move_on_after(0.05) as scope:
        await model.complete(ask("x"), cancel=CancelSignal())
    assert scope.cancelled_caught
