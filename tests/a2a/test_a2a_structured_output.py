"""A2AProvider's structured output (issue 21 point 1: "completed -> completed with the
artifacts' text (and data parts as structured output when ``output_schema`` was asked and
validated)"), against the official ``a2a-sdk`` server around a scripted executor (a subprocess
on 127.0.0.1, killed by the test), on asyncio and trio."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from subagents.protocol.jsonrpc import JsonValue
from subagents.providers import (
    CancelSignal,
    OtherProgress,
    ProgressEvent,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentRequest,
    SubagentService,
    TextProgress,
)
from subagents.providers.a2a import OUTPUT_SCHEMA_KEY, A2AProvider
from subagents.providers.output_schema import output_instructions, structured_outcome
from tests.a2a._a2a_server import A2AServer, a2a_server

pytestmark = pytest.mark.anyio

BOUND = 20.0

SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}, "schema": {"type": "object"}},
    "required": ["answer"],
}


@pytest.fixture(scope="module")
def server() -> Iterator[A2AServer]:
    """One server (a process) for the module's tests, on both backends: each test opens a
    provider of its own (a test that needs a server of its own, to stop it or with a token,
    starts it)."""
    with a2a_server() as running:
        yield running


async def _run(
    provider: A2AProvider, prompt: str, schema: dict[str, JsonValue] | None = SCHEMA
) -> tuple[SubagentOutcome, list[ProgressEvent]]:
    """Start ``prompt`` with the output ``schema``, read its progress; its outcome, events."""
    events: list[ProgressEvent] = []
    with anyio.fail_after(BOUND):
        request = SubagentRequest(prompt, output_schema=schema)
        run = await provider.start(request, cancel=CancelSignal())
        feed = run.progress()
        assert feed is not None
        async for event in feed:
            events.append(event)
        outcome = await run.result()
        await run.dispose()
    return outcome, events


async def test_the_output_schema_capability_is_advertised_and_an_invalid_schema_is_refused(
    server: A2AServer,
) -> None:
    """Issue 21 point 1: output_schema is advertised on (the service accepts such requests);
    a schema that is not a JSON schema is refused before anything is sent (INVALID_REQUEST,
    as Codex and the in-process providers refuse it)."""
    async with A2AProvider(server.url, name="remote") as provider:
        assert provider.capabilities.output_schema
        assert not provider.capabilities.persona
        service = SubagentService()
        service.register(provider)
        with anyio.fail_after(BOUND):
            tracked = await service.start("remote", SubagentRequest("data", output_schema=SCHEMA))
            outcome = await tracked.result()
            await tracked.dispose()
        assert outcome.status == "completed", outcome.message
        with pytest.raises(SubagentError) as refused:
            await provider.start(
                SubagentRequest("data", output_schema={"type": "no such type"}),
                cancel=CancelSignal(),
            )
        assert refused.value.code == SubagentErrorCode.INVALID_REQUEST
        assert "not a valid JSON schema" in str(refused.value)


async def test_a_data_part_is_the_structured_output_and_the_agent_is_given_the_schema(
    server: A2AServer,
) -> None:
    """Issue 21 point 1: completed with the data part as structured output when
    output_schema was asked and validated: the last data part of the artifacts (the
    appended chunk's, not the earlier draft's); the agent got the schema in the message's
    metadata (``outputSchema``) and as an instruction after the prompt; the text still
    streams as progress and the data parts as other progress."""
    async with A2AProvider(server.url) as provider:
        outcome, events = await _run(provider, "data")
    assert outcome.status == "completed", outcome.message
    assert outcome.output == {
        "answer": 42,
        "schema": SCHEMA,
        "prompt": f"data\n\n{output_instructions(SCHEMA)}",
    }
    assert OUTPUT_SCHEMA_KEY == "outputSchema"
    assert TextProgress("the answer") in events
    data = [e.data for e in events if isinstance(e, OtherProgress) and e.data and "data" in e.data]
    assert data[0] == {"data": {"draft": True}}
    assert len(data) == 2


async def test_an_invalid_data_part_fails_the_turn_saying_what_does_not_match(
    server: A2AServer,
) -> None:
    """Issue 21 point 1: a data part that does not match the output schema settles failed
    (kind turn) with the validation errors, the outcome Codex's and the in-process
    children's invalid answers settle with."""
    async with A2AProvider(server.url) as provider:
        outcome, _ = await _run(provider, "baddata")
    assert outcome.status == "failed"
    assert outcome.failure_kind == "turn"
    assert outcome.message == (
        "the agent's data part does not match the output schema: "
        "answer: 'forty-two' is not of type 'integer'"
    )


async def test_without_a_data_part_the_text_is_parsed_as_json_as_the_other_providers_do(
    server: A2AServer,
) -> None:
    """Issue 21 point 1: a completed task with no data part when a schema was asked: its
    text is parsed as JSON and validated by the shared rule (structured_outcome, as Codex and
    the in-process children): JSON that matches completes with the value; text that is not
    JSON, or JSON that does not match, fails the turn the same way theirs do."""
    async with A2AProvider(server.url) as provider:
        good, _ = await _run(provider, 'json {"answer": 7}')
        wrong, _ = await _run(provider, 'json {"answer": "seven"}')
        prose, _ = await _run(provider, "echo no json here")
    assert good == SubagentOutcome.completed(good.child_id, {"answer": 7})
    shared = structured_outcome(wrong.child_id, '{"answer": "seven"}', SCHEMA)
    assert (wrong.status, wrong.failure_kind, wrong.message) == (
        shared.status,
        shared.failure_kind,
        shared.message,
    )
    assert shared.status == "failed"
    assert shared.failure_kind == "turn"
    assert wrong.output == '{"answer": "seven"}'  # the streamed text: the partial output
    assert prose.status == "failed"
    assert prose.failure_kind == "turn"
    assert prose.message.startswith("the final answer is not JSON")


async def test_a_plain_message_answer_with_a_data_part_is_the_structured_output(
    server: A2AServer,
) -> None:
    """Issue 21 point 1: an agent that answers with a plain message: with an output schema,
    the message's data part is the structured output; without one, its text is the output."""
    async with A2AProvider(server.url) as provider:
        structured, _ = await _run(provider, "datamessage")
        plain, _ = await _run(provider, "datamessage", None)
    assert structured == SubagentOutcome.completed(structured.child_id, {"answer": 5})
    assert plain.output == "here"


async def test_a_continuable_childs_first_message_carries_the_schema(server: A2AServer) -> None:
    """Issue 21 point 1: a continuable child's first message is validated against the output
    schema; later messages carry none (plain text outcomes), in the same A2A context."""
    async with A2AProvider(server.url) as provider:
        with anyio.fail_after(BOUND):
            conversation = await provider.prepare_continuable(
                SubagentRequest("data", output_schema=SCHEMA), cancel=CancelSignal()
            )
            first = conversation.outcomes[0]
            later = await conversation.send("data")
            await conversation.dispose()
    assert first.status == "completed", first.message
    assert isinstance(first.output, dict)
    assert first.output["answer"] == 42
    assert later.status == "completed"
    assert later.output == "the answer"
