"""CodexProvider: ``codex app-server`` as a subagent, checked with the provider kit against the
project's scripted fake app-server (fast, deterministic) and against the REAL ``codex`` binary
(npm ``@openai/codex@0.171.0``, installed by ``scripts/setup``) on the fake Responses API.

Issue 6, done means: "check_provider passes for CodexProvider against the real binary".
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from subagents.providers import (
    CancelSignal,
    ContinuableProvider,
    OtherProgress,
    PlanEntry,
    PlanProgress,
    ProgressEvent,
    SubagentCapabilities,
    SubagentError,
    SubagentErrorCode,
    SubagentOutcome,
    SubagentProvider,
    SubagentRequest,
    SubagentService,
)
from subagents.providers.codex import CodexProvider, CodexRun
from subagents.testing import (
    ProviderCheck,
    ProviderCheckSkipped,
    ProviderScenarios,
    provider_checks,
)
from subagents.testing.fake_models.openai_responses import (
    DEFAULT_REPLY,
    FakeServer,
    ResponsesHandler,
    codex_home,
    require_codex_command,
    serve,
)
from subagents.transports.codex_app_server import accept_policy

from ._faults import crashing, with_faults

pytestmark = pytest.mark.anyio

FAKE_APP_SERVER = Path(__file__).parents[1] / "transports" / "fake_codex_app_server.py"
SILENT = [sys.executable, "-c", "import time; time.sleep(60)"]
"""A "codex" that never answers initialize: a start that can be caught midway."""

FAKE_REPLY = "Hello from the fake app-server."


def fake(*args: str) -> list[str]:
    return [sys.executable, str(FAKE_APP_SERVER), *args]


def received(record: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]


def factory_of(
    make: Callable[[], CodexProvider],
) -> Callable[[], AbstractAsyncContextManager[SubagentProvider]]:
    @asynccontextmanager
    async def open_provider() -> AsyncGenerator[SubagentProvider, None]:
        async with make() as provider:
            yield provider

    return open_provider


NOT_APPLICABLE = {
    "a_failing_result_and_a_failing_disposal_both_surface": (
        "a Codex run cannot be made to fail both result() and dispose(); the rule is checked "
        "with the scripted provider (tests/providers/test_scripted.py) and at the tool"
    ),
}
START_RULES = (
    "failure_before_publication_raises_and_leaves_nothing",
    "a_signal_fired_during_start_cancels_the_start",
)
APPLICABLE = [c for c in provider_checks() if c.name not in NOT_APPLICABLE]


def test_only_the_documented_check_is_left_out() -> None:
    names = {c.name for c in provider_checks()}
    assert set(NOT_APPLICABLE) <= names
    assert set(START_RULES) <= names
    assert len(APPLICABLE) == len(names) - len(NOT_APPLICABLE)


async def run_check(
    check: ProviderCheck,
    good: Callable[[], CodexProvider],
    scenarios: ProviderScenarios,
    failing_start: Callable[[], CodexProvider],
) -> None:
    """Run one kit check; the two start rules use a command that fails or hangs (a Codex
    start fails or hangs because of the command or its config, not the request)."""
    if check.name == "failure_before_publication_raises_and_leaves_nothing":
        factory = factory_of(failing_start)
        scenarios = replace(scenarios, failing_start=SubagentRequest("hi"))
    elif check.name == "a_signal_fired_during_start_cancels_the_start":
        factory = factory_of(lambda: CodexProvider(SILENT, name="codex"))
        scenarios = replace(scenarios, slow_start=SubagentRequest("hi"))
    else:
        factory = with_faults(CodexRun, factory_of(good))
        # A slow turn stands for the stubborn child: codex honours its stdin's end, so this
        # proves that dispose() returns only with nothing left running.
        scenarios = replace(
            scenarios, crashing=crashing(scenarios.good.prompt), stubborn=scenarios.slow
        )
    try:
        await check.run(factory, scenarios)
    except ProviderCheckSkipped as skip:
        pytest.fail(f"every applicable check must run for the Codex provider: {skip}")


# ---------------------------------------------------------------- (a) the scripted fake

FAKE_SCENARIOS = ProviderScenarios(
    good=SubagentRequest("hello"),
    good_output=FAKE_REPLY,
    slow=SubagentRequest("stall"),
    failing=SubagentRequest("fail"),
    failing_kind="turn",
    timeout=20.0,
    quiescence_grace=2.0,
)


@pytest.mark.parametrize("check", APPLICABLE, ids=lambda check: check.name)
async def test_the_codex_provider_passes_the_kit_on_the_fake_app_server(
    check: ProviderCheck, tmp_path: Path
) -> None:
    await run_check(
        check,
        lambda: CodexProvider(fake(), cwd=tmp_path),
        FAKE_SCENARIOS,
        lambda: CodexProvider(fake("--exit-before-initialize"), cwd=tmp_path),
    )


# ---------------------------------------------------------------- (b) the real binary


@pytest.fixture
def fake_openai() -> Iterator[FakeServer]:
    with serve(ResponsesHandler) as server:
        yield server


def real_codex() -> list[str]:
    """The real codex argv; skipped only when npm is unavailable, else a failure if absent."""
    return require_codex_command()


REAL_SCENARIOS = ProviderScenarios(
    good=SubagentRequest("Say hello."),
    good_output=DEFAULT_REPLY,
    slow=SubagentRequest("Be slow."),
    failing=SubagentRequest("Please fail."),
    failing_kind="turn",
    timeout=45.0,
    quiescence_grace=5.0,
)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("check", APPLICABLE, ids=lambda check: check.name)
async def test_the_codex_provider_passes_the_kit_on_the_real_binary(
    check: ProviderCheck, tmp_path: Path, fake_openai: FakeServer
) -> None:
    """Issue 6, done means: check_provider passes for CodexProvider against the real binary
    (the failing start: the real binary with a config.toml it refuses)."""
    command = real_codex()
    work = tmp_path / "work"
    work.mkdir()
    env = codex_home(tmp_path / "codex", fake_openai)
    bad_env = codex_home(tmp_path / "bad", fake_openai, approval_policy="untrusted")
    await run_check(
        check,
        lambda: CodexProvider(command, env=env, cwd=work),
        REAL_SCENARIOS,
        lambda: CodexProvider(command, env=bad_env, cwd=work),
    )


# ---------------------------------------------------------------- the provider's own rules


async def outcome_of(
    provider: CodexProvider, request: SubagentRequest
) -> tuple[SubagentOutcome, list[ProgressEvent]]:
    events: list[ProgressEvent] = []
    with anyio.fail_after(20):
        async with await provider.start(request, cancel=CancelSignal()) as run:
            feed = run.progress()
            assert feed is not None
            async for event in feed:
                events.append(event)
            return await run.result(), events


async def test_capabilities_are_persona_and_output_schema_only() -> None:
    provider = CodexProvider(fake())
    assert provider.capabilities == SubagentCapabilities(output_schema=True, persona=True)
    assert isinstance(provider, ContinuableProvider)


@pytest.mark.parametrize(("feature", "value"), [("depth_limit", 1), ("tool_filter", ["read"])])
async def test_features_it_cannot_enforce_are_rejected_before_a_process_starts(
    feature: str, value: object
) -> None:
    request = SubagentRequest("hi", **{feature: value})  # type: ignore[arg-type]
    service = SubagentService()
    async with CodexProvider(["/no/such/codex"]) as provider:
        service.register(provider)
        for start in (
            lambda: service.start("codex", request),
            lambda: provider.start(request, cancel=CancelSignal()),
        ):
            with pytest.raises(SubagentError) as info:
                await start()
            assert info.value.code is SubagentErrorCode.UNSUPPORTED_CAPABILITY
            assert info.value.feature == feature


async def test_a_completed_turn_streams_text_progress_and_reports_usage(tmp_path: Path) -> None:
    async with CodexProvider(fake(), cwd=tmp_path) as provider:
        outcome, events = await outcome_of(provider, SubagentRequest("hello"))
    assert outcome.status == "completed"
    assert outcome.output == FAKE_REPLY
    assert outcome.usage is not None
    assert outcome.usage["total_tokens"] == 15
    texts = [e.text for e in events if e.kind == "text"]
    assert "".join(texts) == FAKE_REPLY
    assert len(texts) == 3
    usage = [e for e in events if e.kind == "usage"]
    assert usage
    assert usage[-1].total_tokens == 15


async def test_the_final_answer_phase_is_the_output(tmp_path: Path) -> None:
    async with CodexProvider(fake(), cwd=tmp_path) as provider:
        outcome, events = await outcome_of(provider, SubagentRequest("phases"))
    assert outcome.output == "The answer is 42."
    assert [e.text for e in events if e.kind == "text"] == ["Let me look.", "The answer is 42."]


async def test_reasoning_is_thought_progress_and_the_plan_is_plan_progress(
    tmp_path: Path,
) -> None:
    """Issue 6: "live progress from the item events": reasoning summary and raw deltas are
    `thought` progress naming their item (a reasoning item completed without deltas gives its
    summary once; a streamed one is not repeated); issue 15, point 8: turn/plan/updated is
    `plan` progress in the one vocabulary (entries with content and status, `inProgress`
    as `in_progress`), and item/plan/delta (experimental upstream) is `other`; the output is
    unaffected."""
    async with CodexProvider(fake(), cwd=tmp_path) as provider:
        outcome, events = await outcome_of(provider, SubagentRequest("think"))
    thoughts = [(e.text, e.message_id) for e in events if e.kind == "thought"]
    assert thoughts == [
        ("Weighing ", "rs-1"),
        ("the options.", "rs-1"),
        ("raw chain", "rs-1"),
        ("Decided quietly.", "rs-2"),
    ]
    plans = [e for e in events if e.kind == "plan"]
    assert plans == [
        PlanProgress(
            (PlanEntry("Read the question", "completed"), PlanEntry("Answer it", "in_progress")),
            "Two steps.",
        ),
        PlanProgress(
            (PlanEntry("Read the question", "completed"), PlanEntry("Answer it", "completed"))
        ),
    ]
    others = [e for e in events if e.kind == "other"]
    assert others == [OtherProgress("1. Answer it", {"type": "plan_delta", "item_id": "plan-1"})]
    assert outcome.status == "completed"
    assert outcome.output == FAKE_REPLY
    assert "".join(e.text for e in events if e.kind == "text") == FAKE_REPLY


async def test_interleaved_messages_stream_by_item_and_the_output_is_the_final_answer(
    tmp_path: Path,
) -> None:
    """Issue 6: "agent message deltas grouped by item id" and "the final answer from the
    turn's items (prefer the final-answer phase)": interleaved deltas are `text` progress
    naming their item; the output is the final-answer message alone, not the interleaved
    concatenation."""
    async with CodexProvider(fake(), cwd=tmp_path) as provider:
        outcome, events = await outcome_of(provider, SubagentRequest("interleave"))
    texts = [(e.message_id, e.text) for e in events if e.kind == "text"]
    assert texts == [
        ("msg-a", "Looking "),
        ("msg-b", "The answer "),
        ("msg-a", "around."),
        ("msg-b", "is 7."),
    ]
    assert outcome.status == "completed"
    assert outcome.output == "The answer is 7."


@pytest.mark.parametrize(("accept", "decision"), [(False, "decline"), (True, "accept")])
async def test_approvals_are_answered_by_the_policy_and_commands_are_progress(
    tmp_path: Path, accept: bool, decision: str
) -> None:
    """Default decline; issue 15, point 8: a command execution is a tool call when started
    (kind `execute`, the command as title and input) and its tool result, with the same id,
    when completed (`failed` when declined)."""
    options = {"approval_policy": accept_policy} if accept else {}
    async with CodexProvider(fake(), cwd=tmp_path, **options) as provider:  # type: ignore[arg-type]
        outcome, events = await outcome_of(provider, SubagentRequest("approve"))
    assert outcome.output == f"decision: {decision}"
    [call] = [e for e in events if e.kind == "tool_call"]
    [result] = [e for e in events if e.kind == "tool_result"]
    assert (call.title, call.tool_kind, call.status) == (
        "/bin/bash -lc 'echo hi'",
        "execute",
        "in_progress",
    )
    assert isinstance(call.input, dict)
    assert call.input["command"] == "/bin/bash -lc 'echo hi'"
    assert result.id == call.id
    assert events.index(result) > events.index(call)
    assert result.status == ("completed" if accept else "failed")
    if not accept:
        assert result.output == "declined"


async def test_a_file_change_is_tool_call_progress(tmp_path: Path) -> None:
    """Issue 15, point 8: a file change is a tool call (kind `edit`, `edit PATHS`) and its
    tool result with the same id (declined by the default policy: `failed`)."""
    async with CodexProvider(fake(), cwd=tmp_path) as provider:
        _, events = await outcome_of(provider, SubagentRequest("patch"))
    [call] = [e for e in events if e.kind == "tool_call"]
    [result] = [e for e in events if e.kind == "tool_result"]
    assert (call.title, call.tool_kind) == ("edit /tmp/a.txt", "edit")
    assert (result.id, result.status, result.output) == (call.id, "failed", "declined")


async def test_a_failed_turn_keeps_the_upstream_message(tmp_path: Path) -> None:
    async with CodexProvider(fake(), cwd=tmp_path) as provider:
        outcome, events = await outcome_of(provider, SubagentRequest("fail"))
    assert outcome.status == "failed"
    assert outcome.failure_kind == "turn"
    assert outcome.message == "We're currently experiencing high demand."
    assert [e.text for e in events if e.kind == "other"] == [
        "We're currently experiencing high demand."
    ]


async def test_a_crash_fails_the_run_with_the_exit_status_and_stderr(tmp_path: Path) -> None:
    async with CodexProvider(fake(), cwd=tmp_path) as provider:
        outcome, _ = await outcome_of(provider, SubagentRequest("crash"))
    assert outcome.status == "failed"
    assert outcome.failure_kind == "infrastructure"
    message = outcome.message
    assert "exited with status 3" in message
    assert "crash on purpose" in message


async def test_a_start_that_codex_refuses_names_its_stderr(tmp_path: Path) -> None:
    async with CodexProvider(fake("--exit-before-initialize"), cwd=tmp_path) as provider:
        with anyio.fail_after(20), pytest.raises(SubagentError) as info:
            await provider.start(SubagentRequest("hi"), cancel=CancelSignal())
    assert info.value.code is SubagentErrorCode.START_FAILED
    assert 'approval_policy = "untrusted" is no longer supported' in info.value.message
    assert "exited with status 1" in info.value.message


async def test_options_and_persona_reach_thread_start(tmp_path: Path) -> None:
    """Persona -> developerInstructions; sandbox, approval mode, model, cwd, config overrides
    go to thread/start."""
    record = tmp_path / "record.jsonl"
    cwd = str(tmp_path.resolve())  # noqa: ASYNC240
    async with CodexProvider(
        fake("--record", str(record)),
        cwd=tmp_path,
        model="gpt-5.5",
        sandbox="read-only",
        approval_mode="on-request",
        config={"model_reasoning_effort": "low"},
    ) as provider:
        outcome, _ = await outcome_of(provider, SubagentRequest("hello", persona="Be terse."))
    assert outcome.status == "completed"
    (start,) = [m for m in received(record) if m.get("method") == "thread/start"]
    assert start["params"] == {
        "cwd": cwd,
        "model": "gpt-5.5",
        "sandbox": "read-only",
        "approvalPolicy": "on-request",
        "developerInstructions": "Be terse.",
        "config": {"model_reasoning_effort": "low"},
    }


async def test_an_output_schema_is_forwarded_and_a_non_conforming_answer_fails(
    tmp_path: Path,
) -> None:
    record = tmp_path / "record.jsonl"
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    async with CodexProvider(fake("--record", str(record)), cwd=tmp_path) as provider:
        outcome, _ = await outcome_of(provider, SubagentRequest("hello", output_schema=schema))
    assert outcome.status == "failed"
    assert outcome.failure_kind == "turn"
    assert "not JSON" in outcome.message
    (turn,) = [m for m in received(record) if m.get("method") == "turn/start"]
    assert turn["params"]["outputSchema"] == schema  # type: ignore[index]


async def test_an_invalid_output_schema_is_rejected_before_a_process_starts() -> None:
    async with CodexProvider(["/no/such/codex"]) as provider:
        request = SubagentRequest("hi", output_schema={"type": "no-such-type"})
        with pytest.raises(SubagentError) as info:
            await provider.start(request, cancel=CancelSignal())
    assert info.value.code is SubagentErrorCode.INVALID_REQUEST


async def test_a_continuable_child_hears_later_messages_on_its_thread(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    async with CodexProvider(fake("--record", str(record)), cwd=tmp_path) as provider:
        with anyio.fail_after(20):
            child = await provider.prepare_continuable(
                SubagentRequest("hello"), cancel=CancelSignal()
            )
            second = await child.send("phases")
            await child.dispose()
            after = await child.send("hello")
    assert [o.output for o in child.outcomes] == [FAKE_REPLY, "The answer is 42."]
    assert second.output == "The answer is 42."
    assert after.status == "failed"
    assert after.failure_kind == "infrastructure"
    turns = [m for m in received(record) if m.get("method") == "turn/start"]
    assert len({t["params"]["threadId"] for t in turns}) == 1  # type: ignore[index]
    assert child.child_id.startswith("codex:")
    assert child.remote_id.startswith("thr-")


async def test_resuming_an_unknown_thread_fails_clearly(tmp_path: Path) -> None:
    async with CodexProvider(fake(), cwd=tmp_path) as provider:
        with anyio.fail_after(20), pytest.raises(SubagentError) as info:
            await provider.resume_continuable("thr-404", cancel=CancelSignal())
    assert info.value.code is SubagentErrorCode.START_FAILED
    assert "thread not found: thr-404" in info.value.message


async def test_cancelling_mid_turn_interrupts_it(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    signal = CancelSignal()
    async with CodexProvider(fake("--record", str(record)), cwd=tmp_path) as provider:
        with anyio.fail_after(20):
            run = await provider.start(SubagentRequest("stall"), cancel=signal)
            feed = run.progress()
            assert feed is not None
            async for event in feed:
                assert event.kind == "text"
                signal.cancel("enough")
            outcome = await run.result()
            await run.dispose()
    assert outcome.status == "cancelled"
    assert outcome.message == "enough"
    assert [m for m in received(record) if m.get("method") == "turn/interrupt"]
