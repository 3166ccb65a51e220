"""Structured output through ``serve_a2a_http`` (issue 21): ``A2AProvider`` sends the output
schema in the message's metadata (``outputSchema``) and as an instruction after the prompt;
the server gives it to a provider that supports ``output_schema`` (the instruction taken off)
and publishes the structured output as a data part, and leaves the prompt as it is for a
provider that does not (the client parses the text as JSON)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import anyio
import pytest

pytest.importorskip("a2a.server")

from subagents.config import AgentSpec
from subagents.protocol.jsonrpc import JsonValue
from subagents.providers.a2a import OUTPUT_SCHEMA_KEY, A2AProvider
from subagents.providers.contract import (
    CancelSignal,
    SubagentCapabilities,
    SubagentOutcome,
    SubagentRequest,
    TextProgress,
)
from subagents.providers.factory import build_provider
from subagents.providers.output_schema import output_instructions
from subagents.providers.scripted import Script, ScriptedProvider
from subagents.remote.a2a_server import serve_a2a_http
from tests.a2a_server._client import a2a_client, send

SCHEMA: Final[dict[str, JsonValue]] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "words": {"type": "integer", "minimum": 1}},
    "required": ["answer", "words"],
}
SCRIPTED: Final = AgentSpec("scripted", "scripted")
SPAWN: Final = AgentSpec("runtime", "spawn", description="the in-process runtime, offline model")
STRUCTURED: Final = SubagentCapabilities(output_schema=True)
_LISTENING: Final = re.compile(r"listening on (http://\S+/) \(card: (\S+)\)\n")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _ask(provider: A2AProvider, prompt: str) -> tuple[SubagentOutcome, list[str]]:
    """Run ``prompt`` with :data:`SCHEMA`; the outcome and the text that streamed."""
    with anyio.fail_after(30):
        request = SubagentRequest(prompt, output_schema=SCHEMA)
        async with await provider.start(request, cancel=CancelSignal()) as run:
            events = run.progress()
            assert events is not None
            texts = [e.text async for e in events if isinstance(e, TextProgress)]
            return await run.result(), texts


@pytest.mark.anyio
async def test_a_provider_with_output_schema_gets_the_schema_and_answers_with_a_data_part() -> None:
    """Issue 21: A2AProvider(output_schema) -> serve_a2a_http -> a provider supporting
    output_schema: the provider gets the schema (whole numbers as ints) and the bare prompt
    (the instruction taken off); its structured output is the artifact's data part (after
    its JSON as text), and the client's outcome is the validated object. The card's default
    output modes include application/json."""
    answer: dict[str, JsonValue] = {"answer": "forty-two", "words": 3}
    async with (
        ScriptedProvider(lambda _: Script(output=answer), capabilities=STRUCTURED) as inner,
        serve_a2a_http(inner, SCRIPTED, port=0) as server,
        A2AProvider(server.url, name="remote") as provider,
    ):
        outcome, _ = await _ask(provider, "count the words")
        card = await provider.card()
        async with a2a_client(server.url) as client:
            with anyio.fail_after(30):
                raw = await send(client, "again", metadata={OUTPUT_SCHEMA_KEY: SCHEMA})
    assert outcome.status == "completed", outcome.message
    assert outcome.output == answer
    assert [r.prompt for r in inner.requests] == ["count the words", "again"]
    given = inner.requests[0].output_schema
    assert given == SCHEMA
    # whole numbers as ints ("minimum": 1, not protobuf's 1.0)
    assert json.dumps(given, sort_keys=True) == json.dumps(SCHEMA, sort_keys=True)
    assert list(card.default_output_modes) == ["text/plain", "application/json"]
    assert raw.final == "TASK_STATE_COMPLETED"
    assert raw.text == '{"answer": "forty-two", "words": 3}'
    assert raw.data == [{"answer": "forty-two", "words": 3.0}]  # protobuf: numbers are doubles


@pytest.mark.anyio
async def test_the_runtime_validates_the_schema_and_its_streamed_answer_gets_a_data_part() -> None:
    """Issue 21: A2AProvider(output_schema) -> serve_a2a_http -> the spawn provider (the
    in-process runtime on the offline model, whose 'json' answer is the prompt and its word
    count): the text streams, the runtime validates its answer, and the data part appended
    after the text is the outcome; the answer names only the prompt (the instruction was
    taken off: the runtime has the schema in its own instructions)."""
    async with (
        build_provider(SPAWN) as runtime,
        serve_a2a_http(runtime, SPAWN, port=0) as server,
        A2AProvider(server.url, name="remote-runtime") as provider,
    ):
        outcome, texts = await _ask(provider, "json two words")
    assert outcome.status == "completed", outcome.message
    assert outcome.output == {"answer": "json two words", "words": 3}
    assert "".join(texts) == '{"answer": "json two words", "words": 3}'


@pytest.mark.anyio
async def test_a_provider_without_output_schema_keeps_the_instruction_and_answers_text() -> None:
    """Issue 21: a provider that does not support output_schema gets the prompt with the
    instruction (and no schema); its text answer has no data part, and the client parses it
    as JSON (the documented fallback). The card's default output modes are text only."""
    async with (
        ScriptedProvider(lambda _: Script(output='{"answer": "x", "words": 1}')) as inner,
        serve_a2a_http(inner, SCRIPTED, port=0) as server,
        A2AProvider(server.url, name="remote") as provider,
    ):
        outcome, texts = await _ask(provider, "count the words")
        card = await provider.card()
    assert outcome.status == "completed", outcome.message
    assert outcome.output == {"answer": "x", "words": 1}
    assert texts == ['{"answer": "x", "words": 1}']
    assert [r.prompt for r in inner.requests] == [
        f"count the words\n\n{output_instructions(SCHEMA)}"
    ]
    assert inner.requests[0].output_schema is None
    assert list(card.default_output_modes) == ["text/plain"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": 12}, "the output schema is not a valid JSON schema"),
        ("an object", "the message's outputSchema metadata is not a JSON object"),
    ],
)
async def test_an_invalid_output_schema_is_rejected_saying_why(schema: object, why: str) -> None:
    """Issue 21: a message whose outputSchema is not a valid JSON schema (or no object) is
    rejected with a message saying so; no child starts."""
    async with (
        ScriptedProvider(capabilities=STRUCTURED) as inner,
        serve_a2a_http(inner, SCRIPTED, port=0) as server,
        a2a_client(server.url) as client,
    ):
        with anyio.fail_after(30):
            turn = await send(client, "count the words", metadata={OUTPUT_SCHEMA_KEY: schema})
    assert turn.final == "TASK_STATE_REJECTED"
    assert turn.final_message.startswith(why), turn.final_message
    assert inner.requests == []


@asynccontextmanager
async def _serve_process(directory: Path) -> AsyncIterator[str]:
    """A ``subagents serve --a2a 127.0.0.1:0`` process serving a spawn entry; its URL. Killed
    and reaped on the way out."""
    registry = directory / "agents.toml"
    registry.write_text('[agents.structured]\nprovider = "spawn"\n', encoding="utf-8")
    log = directory / "serve.log"
    command = [
        sys.executable, "-m", "subagents", "serve", "--a2a", "127.0.0.1:0",
        "--agent", "structured", "--config", str(registry),
    ]  # fmt: skip
    with log.open("wb") as stderr:
        process = await anyio.open_process(
            command, stdin=subprocess.DEVNULL, stdout=None, stderr=stderr
        )
    try:
        with anyio.fail_after(30):
            while (found := _LISTENING.search(log.read_text(errors="replace"))) is None:
                assert process.returncode is None, log.read_text(errors="replace")
                await anyio.sleep(0.05)
        yield found.group(1)
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.move_on_after(20, shield=True):
            await process.wait()
        await process.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_structured_output_through_a_serve_a2a_process(tmp_path: Path) -> None:
    """Issue 21: A2AProvider (on asyncio and on trio) -> a real `serve --a2a` process -> a
    spawn entry: the outcome is the validated object."""
    async with (
        _serve_process(tmp_path) as url,
        A2AProvider(url, name="remote-process") as provider,
    ):
        outcome, _ = await _ask(provider, "json over the wire")
    assert outcome.status == "completed", outcome.message
    assert outcome.output == {"answer": "json over the wire", "words": 4}
