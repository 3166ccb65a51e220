"""End to end: our Claude Code transport and ``ClaudeCodeProvider`` drive the REAL ``claude``
CLI (npm ``@anthropic-ai/claude-code@2.1.332``, installed by ``./scripts/setup`` into
``.cache/npm``), offline: every test has its own private ``HOME`` and ``CLAUDE_CONFIG_DIR`` and
the project's fake Anthropic Messages API on 127.0.0.1 as ``ANTHROPIC_BASE_URL``.

The scenario is picked by words of the prompt (see
:mod:`subagents.testing.fake_models.anthropic_messages`): ``slow``, ``tool``, ``fail``,
``big``; anything else gets :data:`DEFAULT_REPLY`. Tests about the wire use the transport
(:func:`connect_claude`); tests about outcomes use the provider. Requirement names refer to
issue 7, part 3 (the e2e list).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from subagents.providers import (
    CancelSignal,
    ProgressEvent,
    SubagentOutcome,
    SubagentRequest,
)
from subagents.providers.claude_code import ClaudeCodeProvider, tool_filter_hook
from subagents.testing.fake_models._http import FakeServer, serve
from subagents.testing.fake_models.anthropic_messages import (
    DEFAULT_REPLY,
    FAIL_MESSAGE,
    TOOL_MARKER_FILE,
    TOOL_OUTPUT,
    TOOL_RESULT_PREFIX,
    AnthropicMessagesHandler,
    big_reply,
    claude_cli_path,
    claude_env,
    last_user_text,
    message_requests,
    wait_streams_closed,
)
from subagents.transports.claude_code import (
    AllowTool,
    ClaudeOptions,
    ClaudeResult,
    ClaudeStreamEvent,
    ClaudeSystemInit,
    ClaudeUserMessage,
    DenyTool,
    ToolPermissionRequest,
    allow_tools_policy,
    connect_claude,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

BOUND = 60.0
"""Bound on each scenario (the CLI starts in 0.3-1 s here; a turn on the fake takes ~0.1 s)."""

MODEL = "claude-fake-model"


@dataclass
class Setup:
    cli: Path
    server: FakeServer
    env: dict[str, str]
    work: Path

    @property
    def options(self) -> ClaudeOptions:
        return ClaudeOptions(model=MODEL, config_dir=self.env["CLAUDE_CONFIG_DIR"])

    def provider(self, **kwargs: object) -> ClaudeCodeProvider:
        return ClaudeCodeProvider(
            self.cli,
            self.options,
            env=self.env,
            cwd=self.work,
            startup_timeout=BOUND,
            **kwargs,  # pyright: ignore[reportArgumentType]
        )


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    cli = claude_cli_path()
    if cli is None:
        pytest.fail("claude is not installed: run ./scripts/setup (it needs node and npm)")
    work = tmp_path / "work"
    work.mkdir()
    with serve(AnthropicMessagesHandler) as server:
        yield Setup(cli, server, claude_env(tmp_path / "claude", server), work)


def child_pids() -> list[int]:
    """The pids of this process's live children (from ``/proc``)."""
    pids: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            pids.append(int(entry.name))
    return pids


async def outcome_of(
    provider: ClaudeCodeProvider, request: SubagentRequest, cancel: CancelSignal | None = None
) -> tuple[SubagentOutcome, list[ProgressEvent]]:
    events: list[ProgressEvent] = []
    cancel = cancel or CancelSignal()
    with anyio.fail_after(BOUND):
        async with await provider.start(request, cancel=cancel) as run:
            feed = run.progress()
            assert feed is not None
            async for event in feed:
                events.append(event)
                if "slow" in request.prompt and event.kind == "text":
                    cancel.cancel("enough")
            return await run.result(), events


# ---------------------------------------------------------------- turns and streaming


async def test_streamed_partial_text_adds_up_to_the_result(setup: Setup) -> None:
    """Issue 7 / e2e: a turn whose result text equals what the fake server streamed, and the
    partial text deltas (``--include-partial-messages``) add up to it."""
    with anyio.fail_after(BOUND):
        async with (
            connect_claude(setup.cli, setup.options, env=setup.env, cwd=setup.work) as c,
            c.turn("Say hello.") as turn,
        ):
            events = [event async for event in turn]
    deltas = [e.text_delta for e in events if isinstance(e, ClaudeStreamEvent) and e.text_delta]
    assert len(deltas) > 1
    assert "".join(deltas) == DEFAULT_REPLY
    result = events[-1]
    assert isinstance(result, ClaudeResult)
    assert (result.subtype, result.is_error, result.result) == ("success", False, DEFAULT_REPLY)
    assert result.usage.get("output_tokens")


async def test_a_2_mb_reply_arrives_whole(setup: Setup) -> None:
    """Issue 7 / e2e: a 2 MB reply (above the official SDK's 1 MiB line limit) is the result
    text byte for byte, and the provider completes with it."""
    async with setup.provider() as provider:
        outcome, events = await outcome_of(provider, SubagentRequest("A big one, please."))
    assert outcome.status == "completed", outcome.message
    assert outcome.output == big_reply()
    assert "".join(e.text or "" for e in events if e.kind == "text") == big_reply()


async def test_interrupt_mid_stream_cancels_and_the_process_stays_usable(setup: Setup) -> None:
    """Issue 7 / e2e: interrupt mid-stream -> the turn ends (error_during_execution, the
    fake's stream is dropped) and the same process runs the next turn to success."""
    with anyio.fail_after(BOUND):
        async with connect_claude(setup.cli, setup.options, env=setup.env, cwd=setup.work) as c:
            async with c.turn("Be slow.") as turn:
                async for event in turn:
                    if isinstance(event, ClaudeStreamEvent) and event.text_delta:
                        await turn.cancel()
                        break
                interrupted = await turn.result()
            assert await anyio.to_thread.run_sync(wait_streams_closed, setup.server, 10.0)
            after = await c.query("Say hello.")
            assert c.process is not None
            pid = c.process.pid
    assert interrupted.subtype == "error_during_execution"
    assert interrupted.is_error
    assert interrupted.result is None
    assert (after.subtype, after.result) == ("success", DEFAULT_REPLY)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_the_provider_cancels_a_running_turn(setup: Setup) -> None:
    """Issue 7 / provider: the signal interrupts the turn -> ``cancelled`` with the reason."""
    async with setup.provider() as provider:
        outcome, events = await outcome_of(provider, SubagentRequest("Be slow."))
    assert outcome.status == "cancelled"
    assert outcome.message == "enough"
    assert any(e.kind == "text" for e in events)


# ---------------------------------------------------------------- tools and permissions


async def test_a_tool_call_runs_when_the_policy_allows_it(setup: Setup) -> None:
    """Issue 7 / e2e: ``can_use_tool`` answered allow -> the CLI runs the command (the marker
    file exists) and the model sees its output."""
    asked: list[ToolPermissionRequest] = []

    async def allow(request: ToolPermissionRequest) -> AllowTool | DenyTool:
        asked.append(request)
        return AllowTool()

    with anyio.fail_after(BOUND):
        async with (
            connect_claude(
                setup.cli, setup.options, env=setup.env, cwd=setup.work, permission_policy=allow
            ) as c,
            c.turn("Use a tool.") as turn,
        ):
            events = [event async for event in turn]
    assert [r.tool_name for r in asked] == ["Bash"]
    assert TOOL_MARKER_FILE in str(asked[0].input.get("command"))
    assert (setup.work / TOOL_MARKER_FILE).exists()
    result = events[-1]
    assert isinstance(result, ClaudeResult)
    assert result.result == TOOL_RESULT_PREFIX + TOOL_OUTPUT
    assert result.raw.get("permission_denials") == []


async def test_a_tool_call_is_refused_when_the_policy_denies_it(setup: Setup) -> None:
    """Issue 7 / e2e: ``can_use_tool`` answered deny -> the command never runs, the model
    sees the refusal, and the result lists the denial."""

    async def deny(request: ToolPermissionRequest) -> AllowTool | DenyTool:
        return DenyTool("denied by the e2e test")

    with anyio.fail_after(BOUND):
        async with (
            connect_claude(
                setup.cli, setup.options, env=setup.env, cwd=setup.work, permission_policy=deny
            ) as c,
            c.turn("Use a tool.") as turn,
        ):
            events = [event async for event in turn]
    assert not (setup.work / TOOL_MARKER_FILE).exists()
    tool_results = [e for e in events if isinstance(e, ClaudeUserMessage)]
    assert any("denied by the e2e test" in str(e.content) for e in tool_results)
    result = events[-1]
    assert isinstance(result, ClaudeResult)
    assert result.result is not None
    assert result.result.startswith(TOOL_RESULT_PREFIX)
    assert "denied by the e2e test" in result.result
    denials = result.raw.get("permission_denials")
    assert isinstance(denials, list)
    assert len(denials) == 1


async def test_the_provider_reports_tool_calls_as_progress(setup: Setup) -> None:
    """Issue 7 / provider: a tool_use is ``tool_call`` progress; without a permission policy
    the default denies it (the command never runs). Issue 15, point 8: its tool_result is a
    ``tool_result`` (``failed``) with the same id."""
    async with setup.provider() as provider:
        outcome, events = await outcome_of(provider, SubagentRequest("Use a tool."))
    assert outcome.status == "completed", outcome.message
    calls = [e for e in events if e.kind == "tool_call"]
    assert [e.title for e in calls] == ["Bash"]
    results = [e for e in events if e.kind == "tool_result"]
    assert [(e.id, e.status) for e in results] == [(calls[0].id, "failed")]
    assert not (setup.work / TOOL_MARKER_FILE).exists()
    assert str(outcome.output).startswith(TOOL_RESULT_PREFIX)


async def test_the_tool_filter_hides_tools_outside_it_even_when_the_policy_allows(
    setup: Setup,
) -> None:
    """Capability tool_filter / real CLI: with the filter ["Read"] the model is offered only
    Read, and its Bash call is refused although the permission policy allows everything."""
    async with setup.provider(permission_policy=allow_tools_policy) as provider:
        request = SubagentRequest("Use a tool.", tool_filter=["Read"])
        outcome, _ = await outcome_of(provider, request)
    assert outcome.status == "completed", outcome.message
    assert not (setup.work / TOOL_MARKER_FILE).exists()
    offered = [
        [tool["name"] for tool in r.body.get("tools") or []] for r in message_requests(setup.server)
    ]
    # The CLI adds an internal "DeferredToolPlaceholder" entry; a call to it would meet the
    # filter's hook like any other tool outside the filter.
    assert [name for name in offered[0] if name != "DeferredToolPlaceholder"] == ["Read"]
    assert "No such tool available: Bash" in str(outcome.output)


async def test_a_tool_in_the_filter_runs_when_the_policy_allows_it(setup: Setup) -> None:
    """Capability tool_filter / real CLI: the filter never blocks a tool it names."""
    async with setup.provider(permission_policy=allow_tools_policy) as provider:
        request = SubagentRequest("Use a tool.", tool_filter=["Bash"])
        outcome, _ = await outcome_of(provider, request)
    assert outcome.output == TOOL_RESULT_PREFIX + TOOL_OUTPUT
    assert (setup.work / TOOL_MARKER_FILE).exists()


async def test_the_tool_filter_hook_denies_a_call_the_policy_would_allow(setup: Setup) -> None:
    """Capability tool_filter / real CLI: the PreToolUse hook alone (no ``--tools``) refuses a
    Bash call outside the filter, before the permission policy is asked."""
    asked: list[str] = []

    async def allow(request: ToolPermissionRequest) -> AllowTool | DenyTool:
        asked.append(request.tool_name)
        return AllowTool()

    with anyio.fail_after(BOUND):
        async with connect_claude(
            setup.cli,
            setup.options,
            env=setup.env,
            cwd=setup.work,
            permission_policy=allow,
            hooks=[tool_filter_hook(["Read"])],
        ) as c:
            result = await c.query("Use a tool.")
    assert asked == []
    assert not (setup.work / TOOL_MARKER_FILE).exists()
    assert result.result is not None
    assert "Bash is outside this subagent's tool filter" in result.result


# ---------------------------------------------------------------- failures


async def test_an_api_error_fails_the_run_with_the_upstream_message(setup: Setup) -> None:
    """Issue 7 / e2e: an HTTP 529 from the Messages API -> ``failed`` (kind turn), the
    message carries the status and the upstream text."""
    async with setup.provider() as provider:
        outcome, _ = await outcome_of(provider, SubagentRequest("Please fail."))
    assert outcome.status == "failed"
    assert outcome.failure_kind == "turn"
    assert outcome.message is not None
    assert "529" in outcome.message
    assert FAIL_MESSAGE in outcome.message


# ---------------------------------------------------------------- sessions across processes


async def test_a_session_resumes_in_a_second_process(setup: Setup) -> None:
    """Issue 7 / e2e: ``--resume`` in a new process continues the same session id, and the
    model sees the first turn's history."""
    with anyio.fail_after(BOUND):
        async with connect_claude(setup.cli, setup.options, env=setup.env, cwd=setup.work) as c:
            first = await c.query("Remember the word apricot.")
    assert first.session_id
    options = ClaudeOptions(
        model=MODEL, config_dir=setup.env["CLAUDE_CONFIG_DIR"], resume=first.session_id
    )
    with anyio.fail_after(BOUND):
        async with connect_claude(setup.cli, options, env=setup.env, cwd=setup.work) as c:
            second = await c.query("What was the word?")
    assert second.session_id == first.session_id
    assert second.result == DEFAULT_REPLY
    last = message_requests(setup.server)[-1].body
    assert last_user_text(last) == "What was the word?"
    assert "apricot" in str(last["messages"])


async def test_a_forked_session_gets_a_new_id_and_the_history(setup: Setup) -> None:
    """Issue 7 / e2e: ``--resume`` with ``--fork-session`` continues into a new session id
    that carries the original's history."""
    with anyio.fail_after(BOUND):
        async with connect_claude(setup.cli, setup.options, env=setup.env, cwd=setup.work) as c:
            first = await c.query("Remember the word quince.")
    assert first.session_id
    options = ClaudeOptions(
        model=MODEL,
        config_dir=setup.env["CLAUDE_CONFIG_DIR"],
        resume=first.session_id,
        fork_session=True,
    )
    with anyio.fail_after(BOUND):
        async with (
            connect_claude(setup.cli, options, env=setup.env, cwd=setup.work) as c,
            c.turn("And now?") as turn,
        ):
            events = [event async for event in turn]
    init = next(e for e in events if isinstance(e, ClaudeSystemInit))
    result = events[-1]
    assert isinstance(result, ClaudeResult)
    assert init.session_id != first.session_id
    assert result.session_id == init.session_id
    assert "quince" in str(message_requests(setup.server)[-1].body["messages"])


async def test_the_provider_resumes_a_child_in_a_new_process(setup: Setup) -> None:
    """Issue 7 / provider: continuable through ``--resume`` (a cold resume of a one-shot
    child's session, by its remote id, keeping its child id)."""
    async with setup.provider() as provider:
        with anyio.fail_after(BOUND):
            async with await provider.start(
                SubagentRequest("Remember the word medlar."), cancel=CancelSignal()
            ) as run:
                outcome = await run.result()
                session_id = run.remote_id
        assert outcome.status == "completed"
        assert session_id
        with anyio.fail_after(BOUND):
            conversation = await provider.resume_continuable(
                session_id, cancel=CancelSignal(), child_id=outcome.child_id
            )
            try:
                again = await conversation.send("What was it?", cancel=CancelSignal())
            finally:
                await conversation.dispose()
    assert again.status == "completed", again.message
    assert again.child_id == outcome.child_id
    assert "medlar" in str(message_requests(setup.server)[-1].body["messages"])


# ---------------------------------------------------------------- lifecycle and load


async def test_stdin_eof_on_an_idle_cli_ends_it_with_status_0(setup: Setup) -> None:
    """Issue 7 / transport: closing stdin of an idle CLI makes it exit 0 (no signal needed)."""
    with anyio.fail_after(BOUND):
        async with connect_claude(setup.cli, setup.options, env=setup.env, cwd=setup.work) as c:
            await c.query("Say hello.")
            await c.close_stdin()
            assert c.process is not None
            await c.process.wait()
            exit_status = c.process.exit
    assert exit_status is not None
    assert exit_status.returncode == 0


async def test_disposing_a_running_run_stops_the_cli_and_settles_cancelled(
    setup: Setup,
) -> None:
    """Issue 7 / shutdown: dispose of a running turn interrupts it, closes stdin and the CLI
    exits; the run settles ``cancelled`` and the fake's stream is dropped."""
    async with setup.provider() as provider:
        with anyio.fail_after(BOUND):
            run = await provider.start(SubagentRequest("Be slow."), cancel=CancelSignal())
            feed = run.progress()
            assert feed is not None
            async for event in feed:
                if event.kind == "text":
                    break
            await run.dispose()
            outcome = await run.result()
    assert outcome.status == "cancelled"
    assert await anyio.to_thread.run_sync(wait_streams_closed, setup.server, 10.0)


async def test_four_concurrent_runs_all_complete(setup: Setup) -> None:
    """Issue 7 / e2e: four runs at once through one provider, four processes, four sessions,
    each completed with the fake's reply."""
    outcomes: list[SubagentOutcome] = []
    async with setup.provider() as provider:

        async def one(index: int) -> None:
            outcome, _ = await outcome_of(provider, SubagentRequest(f"Hello number {index}."))
            outcomes.append(outcome)

        with anyio.fail_after(BOUND * 2):
            async with anyio.create_task_group() as tg:
                for index in range(4):
                    tg.start_soon(one, index)
    assert [o.status for o in outcomes] == ["completed"] * 4
    assert [o.output for o in outcomes] == [DEFAULT_REPLY] * 4
    assert len({o.child_id for o in outcomes}) == 4


async def test_sigterm_from_outside_fails_the_run_with_the_exit_status(setup: Setup) -> None:
    """Issue 7 / provider: the CLI killed mid-turn -> ``failed`` (infrastructure) naming the
    signal."""
    async with setup.provider() as provider:
        with anyio.fail_after(BOUND):
            async with await provider.start(
                SubagentRequest("Be slow."), cancel=CancelSignal()
            ) as run:
                feed = run.progress()
                assert feed is not None
                async for event in feed:
                    if event.kind == "text":
                        break
                pids = child_pids()
                assert len(pids) == 1, pids
                os.kill(pids[0], signal.SIGTERM)
                outcome = await run.result()
    assert outcome.status == "failed"
    assert outcome.failure_kind == "infrastructure"
    assert outcome.message is not None
    assert "SIGTERM" in outcome.message or "143" in outcome.message
