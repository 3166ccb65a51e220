"""End to end: our Codex app-server transport and ``CodexProvider`` drive the REAL ``codex``
binary (npm ``@openai/codex@0.171.0``, installed by ``./scripts/setup`` into ``.cache/npm``),
offline: every test has its own temporary ``CODEX_HOME`` whose model provider is the project's
fake OpenAI Responses API on 127.0.0.1, with retries off. The child gets only the environment
``codex_home`` returns (no ``inherit_env``).

The scenario is picked by words of the prompt (see
:mod:`subagents.testing.fake_models.openai_responses`): ``slow``, ``command``, ``fail``
(``fail 500``), anything else gets :data:`DEFAULT_REPLY`. Tests about the wire use the
transport (:func:`connect_codex`); tests about outcomes use the provider.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from subagents.providers import (
    CancelSignal,
    ProgressEvent,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentRequest,
)
from subagents.providers.codex import CodexProvider
from subagents.testing.fake_models.openai_responses import (
    COMMAND_DECLINED_REPLY,
    COMMAND_MARKER_FILE,
    COMMAND_OUTPUT,
    COMMAND_RAN_REPLY,
    DEFAULT_REPLY,
    FAIL_MESSAGE,
    SLOW_DELTA,
    FakeServer,
    ResponsesHandler,
    _Response,  # pyright: ignore[reportPrivateUsage]
    codex_home,
    require_codex_command,
    serve,
)
from subagents.transports.codex_app_server import (
    AgentMessageDelta,
    CodexStartupError,
    accept_policy,
    connect_codex,
    decline_policy,
)
from subagents.transports.process import AgentProcess

pytestmark = pytest.mark.anyio

BOUND = 60.0
"""Seconds any one step may take (start-up is 0.2-0.6 s and a turn 0.3-1.3 s when idle; the
machine is shared, so the bound is generous)."""

SCHEMA_ANSWER = {"answer": 42}


class SchemaHandler(ResponsesHandler):
    """The fake Responses API, except that a request asking for JSON-schema output (Codex's
    ``text.format``) is answered with :data:`SCHEMA_ANSWER` as JSON."""

    def handle_post(self, body: Any) -> None:
        text = body.get("text") if isinstance(body, dict) else None
        form = text.get("format") if isinstance(text, dict) else None
        if isinstance(form, dict) and form.get("type") == "json_schema":
            response = _Response(len(self.fake.requests), str(body.get("model")))
            self.send_sse(response.events(response.message((json.dumps(SCHEMA_ANSWER),))))
            return
        super().handle_post(body)


def codex() -> list[str]:
    """The real codex argv; skipped only when npm is unavailable, else a failure if absent."""
    return require_codex_command()


@pytest.fixture
def fake_openai() -> Iterator[FakeServer]:
    with serve(ResponsesHandler) as server:
        yield server


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path.resolve()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def run_to_end(
    provider: CodexProvider, request: SubagentRequest
) -> tuple[SubagentOutcome, list[ProgressEvent]]:
    """Start ``request``, read its whole progress feed, return its outcome and the events."""
    events: list[ProgressEvent] = []
    async with await provider.start(request, cancel=CancelSignal()) as run:
        feed = run.progress()
        assert feed is not None
        async for event in feed:
            events.append(event)
        return await run.result(), events


def last_request(server: FakeServer) -> Any:
    return server.requests[-1].body


# ---------------------------------------------------------------- a full turn


async def test_a_full_turn_streams_exactly_what_the_fake_model_sent(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path
) -> None:
    """Transport: the deltas and the final text equal the fake's reply, byte for byte."""
    env = codex_home(tmp_path / "codex", fake_openai)
    with anyio.fail_after(BOUND):
        async with connect_codex(codex(), env=env) as conn:
            assert conn.version == "0.171.0"
            thread = await conn.start_thread(cwd=workdir)
            async with thread.turn("Say hello.") as turn:
                deltas = [e.delta async for e in turn if isinstance(e, AgentMessageDelta)]
            result = await turn.result()
    assert result.status == "completed"
    assert "".join(deltas) == DEFAULT_REPLY
    assert result.final_text == DEFAULT_REPLY
    assert len(fake_openai.requests) == 1


async def test_the_provider_completes_with_the_fake_reply_and_live_text_progress(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path
) -> None:
    env = codex_home(tmp_path / "codex", fake_openai)
    with anyio.fail_after(BOUND):
        async with CodexProvider(codex(), env=env, cwd=workdir) as provider:
            outcome, events = await run_to_end(provider, SubagentRequest("Say hello."))
    assert outcome.status == "completed"
    assert outcome.output == DEFAULT_REPLY
    assert outcome.child_id.startswith("codex:")
    assert "".join(e.text for e in events if e.kind == "text") == DEFAULT_REPLY
    assert outcome.usage is not None
    assert outcome.usage["output_tokens"] == 5


# ---------------------------------------------------------------- interrupt


async def test_interrupting_mid_stream_ends_the_turn_interrupted(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path
) -> None:
    """Transport: turn/interrupt during a slow stream -> turn/completed interrupted."""
    env = codex_home(tmp_path / "codex", fake_openai)
    with anyio.fail_after(BOUND):
        async with connect_codex(codex(), env=env) as conn:
            thread = await conn.start_thread(cwd=workdir)
            async with thread.turn("Be slow.") as turn:
                async for event in turn:
                    if isinstance(event, AgentMessageDelta):
                        assert event.delta == SLOW_DELTA
                        await turn.cancel()
                        break
                result = await turn.result()
    assert result.status == "interrupted"


async def test_a_cancelled_run_settles_cancelled_mid_stream(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path
) -> None:
    """Provider: the signal fired after the first streamed piece -> turn/interrupt ->
    cancelled, well before the slow reply would end."""
    env = codex_home(tmp_path / "codex", fake_openai)
    signal = CancelSignal()
    with anyio.fail_after(BOUND):
        async with CodexProvider(codex(), env=env, cwd=workdir) as provider:
            run = await provider.start(SubagentRequest("Be slow."), cancel=signal)
            feed = run.progress()
            assert feed is not None
            async for event in feed:
                if event.kind == "text":
                    signal.cancel("the parent changed its mind")
            outcome = await run.result()
            await run.dispose()
    assert outcome.status == "cancelled"
    assert outcome.message == "the parent changed its mind"
    assert outcome.child_id == run.child_id


# ---------------------------------------------------------------- approvals


@pytest.mark.parametrize(
    ("accept", "reply"), [(True, COMMAND_RAN_REPLY), (False, COMMAND_DECLINED_REPLY)]
)
async def test_an_escalated_command_runs_only_when_the_policy_accepts(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path, accept: bool, reply: str
) -> None:
    """approval_policy on-request + read-only sandbox: Codex asks; accept runs the command
    (the marker file exists), decline (the default policy) does not."""
    env = codex_home(
        tmp_path / "codex", fake_openai, approval_policy="on-request", sandbox_mode="read-only"
    )
    with anyio.fail_after(BOUND):
        async with CodexProvider(
            codex(),
            env=env,
            cwd=workdir,
            sandbox="read-only",
            approval_mode="on-request",
            approval_policy=accept_policy if accept else decline_policy,
        ) as provider:
            outcome, events = await run_to_end(provider, SubagentRequest("Run the command."))
    assert outcome.status == "completed"
    assert outcome.output == reply
    assert (workdir / COMMAND_MARKER_FILE).exists() is accept
    if accept:
        marker = (workdir / COMMAND_MARKER_FILE).read_text(encoding="utf-8")
        assert marker == COMMAND_OUTPUT + "\n"
    commands = [e for e in events if e.kind == "tool_call"]
    assert commands
    results = [e for e in events if e.kind == "tool_result" and e.id == commands[-1].id]
    assert [e.status for e in results] == ["completed" if accept else "failed"]


# ---------------------------------------------------------------- resume across processes


@pytest.mark.timeout(120)
async def test_a_thread_resumes_in_a_second_process(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path
) -> None:
    """Continuable: the first process runs a turn and exits; a second process (same
    CODEX_HOME) resumes the thread, and its model request carries the first turn."""
    env = codex_home(tmp_path / "codex", fake_openai)
    with anyio.fail_after(2 * BOUND):
        async with CodexProvider(codex(), env=env, cwd=workdir) as provider:
            first = await provider.prepare_continuable(
                SubagentRequest("Say hello."), cancel=CancelSignal()
            )
            await first.dispose()  # the first codex process exits
            child_id = first.child_id
            second = await provider.resume_continuable(child_id, cancel=CancelSignal())
            outcome = await second.send("Say hello again.")
            await second.dispose()
    assert [o.output for o in first.outcomes] == [DEFAULT_REPLY]
    assert second.child_id == child_id
    assert outcome.status == "completed"
    assert outcome.output == DEFAULT_REPLY
    assert len(fake_openai.requests) == 2
    replayed = json.dumps(last_request(fake_openai)["input"])
    assert "Say hello." in replayed
    assert DEFAULT_REPLY in replayed  # the first turn's answer
    assert "Say hello again." in replayed


# ---------------------------------------------------------------- upstream errors


async def test_an_upstream_500_fails_the_run_with_codexs_message(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path
) -> None:
    """Codex 0.171.0 replaces a 500's body with a message of its own; that message is kept."""
    env = codex_home(tmp_path / "codex", fake_openai)
    with anyio.fail_after(BOUND):
        async with CodexProvider(codex(), env=env, cwd=workdir) as provider:
            outcome, _ = await run_to_end(provider, SubagentRequest("Please fail 500."))
    assert outcome.status == "failed"
    assert outcome.failure_kind == "turn"
    assert "experiencing high demand" in outcome.message


async def test_an_upstream_503_fails_the_run_with_the_upstream_message(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path
) -> None:
    env = codex_home(tmp_path / "codex", fake_openai)
    with anyio.fail_after(BOUND):
        async with CodexProvider(codex(), env=env, cwd=workdir) as provider:
            outcome, _ = await run_to_end(provider, SubagentRequest("Please fail."))
    assert outcome.status == "failed"
    assert outcome.failure_kind == "turn"
    assert FAIL_MESSAGE in outcome.message
    assert "503" in outcome.message


# ---------------------------------------------------------------- shutdown


async def test_closing_stdin_stops_codex_promptly_with_status_0(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path
) -> None:
    """Transport: leaving the block closes stdin; codex exits by itself (status 0, before the
    ladder's SIGTERM at 2 s) and nothing is left running."""
    env = codex_home(tmp_path / "codex", fake_openai)
    with anyio.fail_after(BOUND):
        async with connect_codex(codex(), env=env) as conn:
            thread = await conn.start_thread(cwd=workdir)
            assert (await thread.run("Say hello.")).final_text == DEFAULT_REPLY
            process = conn.process
            assert process is not None
            closing = time.monotonic()
        elapsed = time.monotonic() - closing
    assert process.exit is not None
    assert process.exit.returncode == 0
    assert elapsed < 1.5
    assert not alive(process.pid)


async def test_stdin_eof_mid_turn_stops_codex_with_status_0(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path
) -> None:
    """Transport: stdin closed while a slow turn streams -> codex exits 0 at once; the turn
    fails with the connection closed."""
    env = codex_home(tmp_path / "codex", fake_openai)
    process: AgentProcess | None = None
    with anyio.fail_after(BOUND):
        async with connect_codex(codex(), env=env) as conn:
            process = conn.process
            assert process is not None
            thread = await conn.start_thread(cwd=workdir)
            async with thread.turn("Be slow.") as turn:
                async for event in turn:
                    if isinstance(event, AgentMessageDelta):
                        break
                await process.stdin.aclose()
                with anyio.fail_after(2.0):
                    exit_ = await process.wait()
    assert exit_.returncode == 0
    assert not alive(process.pid)


async def test_disposing_a_running_provider_run_stops_codex_cleanly(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path
) -> None:
    """Provider: dispose() mid-turn closes stdin; codex exits 0 at once (well before the
    ladder's SIGTERM at 2 s), nothing is left."""
    env = codex_home(tmp_path / "codex", fake_openai)
    with anyio.fail_after(BOUND):
        async with CodexProvider(codex(), env=env, cwd=workdir) as provider:
            run = await provider.start(SubagentRequest("Be slow."), cancel=CancelSignal())
            assert run.connection is not None
            process = run.connection.process
            assert process is not None
            started = time.monotonic()
            await run.dispose()
            elapsed = time.monotonic() - started
            outcome = await run.result()
    assert outcome.status == "cancelled"
    assert process.exit is not None
    assert process.exit.returncode == 0
    assert elapsed < 1.5
    assert not alive(process.pid)


# ---------------------------------------------------------------- concurrency


@pytest.mark.timeout(120)
async def test_four_concurrent_runs_all_complete(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path
) -> None:
    """Four runs at once (four codex processes, one provider, one CODEX_HOME): each settles
    completed with the fake's reply, under its own child id."""
    env = codex_home(tmp_path / "codex", fake_openai)
    outcomes: list[SubagentOutcome] = []
    with anyio.fail_after(2 * BOUND):
        async with CodexProvider(codex(), env=env, cwd=workdir) as provider:

            async def one(n: int) -> None:
                outcome, _ = await run_to_end(provider, SubagentRequest(f"Say hello #{n}."))
                outcomes.append(outcome)

            async with anyio.create_task_group() as tg:
                for n in range(4):
                    tg.start_soon(one, n)
    assert [o.status for o in outcomes] == ["completed"] * 4
    assert [o.output for o in outcomes] == [DEFAULT_REPLY] * 4
    assert len({o.child_id for o in outcomes}) == 4
    asked = sorted(
        text["text"]
        for request in fake_openai.requests
        for item in request.body["input"]
        if item.get("role") == "user"
        for text in item["content"]
        if text["text"].startswith("Say hello #")
    )
    assert asked == [f"Say hello #{n}." for n in range(4)]


# ---------------------------------------------------------------- a bad config


async def test_a_config_codex_refuses_is_a_clear_startup_error(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path
) -> None:
    """codex.md: approval_policy = "untrusted" in config.toml makes 0.171.0 exit before
    answering initialize; the error shows codex's own stderr message."""
    env = codex_home(tmp_path / "codex", fake_openai, approval_policy="untrusted")
    with anyio.fail_after(BOUND):
        with pytest.raises(CodexStartupError) as transport_error:
            async with connect_codex(codex(), env=env):
                pass
        async with CodexProvider(codex(), env=env, cwd=workdir) as provider:
            with pytest.raises(SubagentError) as provider_error:
                await provider.start(SubagentRequest("Say hello."), cancel=CancelSignal())
    expected = 'approval_policy = "untrusted" is no longer supported'
    assert expected in str(transport_error.value)
    assert "exited before answering initialize" in str(transport_error.value)
    assert provider_error.value.code is SubagentErrorCode.START_FAILED
    assert expected in provider_error.value.message
    assert fake_openai.requests == []


# ---------------------------------------------------------------- capabilities


async def test_the_persona_reaches_the_model_as_developer_instructions(
    tmp_path: Path, fake_openai: FakeServer, workdir: Path
) -> None:
    """persona is advertised because it is real: Codex sends it to the model in a developer
    message (the fake recorded the request body)."""
    persona = "You are a meticulous reviewer named Ferdinand."
    env = codex_home(tmp_path / "codex", fake_openai)
    with anyio.fail_after(BOUND):
        async with CodexProvider(codex(), env=env, cwd=workdir) as provider:
            outcome, _ = await run_to_end(provider, SubagentRequest("Say hello.", persona=persona))
    assert outcome.status == "completed"
    developer = [
        part.get("text")
        for item in last_request(fake_openai)["input"]
        if item.get("role") == "developer"
        for part in item.get("content", [])
    ]
    assert persona in developer


@pytest.mark.parametrize("conforming", [True, False], ids=["conforming", "non-conforming"])
async def test_an_output_schema_is_forwarded_and_enforced(
    tmp_path: Path, workdir: Path, conforming: bool
) -> None:
    """output_schema is advertised because it is enforced: Codex forwards it to the model as
    strict JSON-schema output, and the provider validates the answer (a conforming answer is
    the parsed object; a plain-text answer settles failed, kind turn)."""
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    with serve(SchemaHandler if conforming else ResponsesHandler) as server:
        env = codex_home(tmp_path / "codex", server)
        with anyio.fail_after(BOUND):
            async with CodexProvider(codex(), env=env, cwd=workdir) as provider:
                outcome, _ = await run_to_end(
                    provider, SubagentRequest("Answer.", output_schema=schema)
                )
        form = last_request(server)["text"]["format"]
    assert form["type"] == "json_schema"
    assert form["schema"] == schema
    if conforming:
        assert outcome.status == "completed"
        assert outcome.output == SCHEMA_ANSWER
    else:
        assert outcome.status == "failed"
        assert outcome.failure_kind == "turn"
        assert "not JSON" in outcome.message
