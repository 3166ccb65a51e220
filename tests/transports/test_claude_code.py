"""The Claude Code client against a scripted fake CLI.

The fake (``fake_claude_cli.py``) speaks the stream-json and control-protocol shapes recorded
on the real CLI 2.1.332 (research note claude.md); what a turn does is picked by a marker in
its prompt. The protocol tests run it in-process over a pipe pair
(:func:`~subagents.transports.claude_code.connect_claude_over`); the tests that need a real
process (argv and environment, exit status, stderr tail, signals) spawn it as the CLI.
Requirement names refer to issue 7, part 1 (the transport), and issue 18 (the stream pair).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import pytest

from subagents.transports import TurnOverflowError, claude_code, open_pipe_pair
from subagents.transports.claude_code import (
    DEFAULT_MAX_LINE_BYTES,
    ClaudeAllowTool,
    ClaudeAssistantMessage,
    ClaudeConfigError,
    ClaudeConnection,
    ClaudeConnectionError,
    ClaudeControlError,
    ClaudeDenyTool,
    ClaudeEvent,
    ClaudeHook,
    ClaudeLineTooLongError,
    ClaudeOptions,
    ClaudeRawEvent,
    ClaudeResult,
    ClaudeStartupError,
    ClaudeStreamEvent,
    ClaudeSystemInit,
    ClaudeToolPermissionRequest,
    ClaudeToolUse,
    ClaudeUserMessage,
    allow_tools_policy,
    build_claude_env,
    connect_claude,
    connect_claude_over,
)

from .fake_claude_cli import FakeClaude

pytestmark = pytest.mark.anyio

FAKE = Path(__file__).with_name("fake_claude_cli.py")
OPTIONS = ClaudeOptions(model="claude-fake-model")


@asynccontextmanager
async def connected(
    on_received: Callable[[dict[str, Any]], None] | None = None, **kwargs: Any
) -> AsyncGenerator[tuple[ClaudeConnection, FakeClaude], None]:
    """A connection to the fake run in-process over a pipe pair (no child process);
    ``on_received`` sees each message the fake receives."""
    cli_in, host_out = await open_pipe_pair()
    host_in, cli_out = await open_pipe_pair()
    fake = FakeClaude(on_received=on_received)
    raised: BaseException | None = None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(fake.serve, cli_in, cli_out)
            try:
                async with connect_claude_over(
                    host_in, host_out, initialize_timeout=5, **kwargs
                ) as connection:
                    yield connection, fake
            except BaseException as exc:
                raised = exc
                tg.cancel_scope.cancel()
            # stdin is closed: the fake reads the rest and ends (a turn it still runs is cut).
            tg.cancel_scope.deadline = anyio.current_time() + 1
    finally:
        with anyio.CancelScope(shield=True):
            await cli_in.aclose()
            await host_in.aclose()
    if raised is not None:
        raise raised


def sent(fake: FakeClaude, kind: str, subtype: str | None = None) -> list[dict[str, Any]]:
    """The messages of ``kind`` (and control ``subtype``) the fake received."""
    return [
        m
        for m in fake.received
        if m.get("type") == kind and (subtype is None or m["request"].get("subtype") == subtype)
    ]


def answers_to(fake: FakeClaude) -> list[dict[str, Any]]:
    return [m["response"] for m in sent(fake, "control_response")]


async def collect(conn: ClaudeConnection, prompt: str) -> list[ClaudeEvent]:
    async with conn.turn(prompt) as turn:
        return [event async for event in turn]


def fake_cli(tmp_path: Path) -> Path:
    """An executable wrapper running the fake with this interpreter (the CLI path is argv[0])."""
    script = tmp_path / "claude"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    return script


def fake_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"FAKE_CLAUDE_RECORD": str(tmp_path / "record.jsonl"), **extra}


def received(tmp_path: Path) -> list[dict[str, Any]]:
    """Everything the fake process recorded: its argv/env first, then every stdin message."""
    path = tmp_path / "record.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# ---------------------------------------------------------------- environment


def test_environment_stops_outside_traffic_drops_claudecode_and_sets_the_config_dir() -> None:
    """Issue 7 / environment: CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, CLAUDECODE removed
    (also when inherited), a private CLAUDE_CONFIG_DIR; other parent variables not passed."""
    parent = {"PATH": "/bin", "CLAUDECODE": "1", "SECRET": "x"}
    options = ClaudeOptions(model="m", config_dir="/tmp/cfg")
    env = build_claude_env(options, {"EXTRA": "1"}, parent=parent, is_root=False)
    assert env == {
        "PATH": "/bin",
        "EXTRA": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CONFIG_DIR": "/tmp/cfg",
    }
    inherited = build_claude_env(options, parent=parent, inherit_env=True, is_root=False)
    assert "CLAUDECODE" not in inherited
    assert inherited["SECRET"] == "x"


def test_is_sandbox_is_normalised_to_1_and_bypass_as_root_needs_it() -> None:
    """Issue 7 / environment: the CLI allows bypass modes as root only with IS_SANDBOX=1
    exactly (research §6): a truthy value becomes 1; bypass as root without one is refused
    up front instead of the CLI exiting 1."""
    bypass = ClaudeOptions(model="m", permission_mode="bypassPermissions")
    env = build_claude_env(bypass, parent={"IS_SANDBOX": "yes"}, is_root=True)
    assert env["IS_SANDBOX"] == "1"
    assert "IS_SANDBOX" not in build_claude_env(OPTIONS, parent={"IS_SANDBOX": "no"})
    with pytest.raises(ClaudeConfigError, match="IS_SANDBOX=1"):
        build_claude_env(bypass, parent={}, is_root=True)
    assert "IS_SANDBOX" not in build_claude_env(bypass, parent={}, is_root=False)


# ---------------------------------------------------------------- a real process


async def test_the_cli_gets_its_argv_and_environment_and_initialize_first(tmp_path: Path) -> None:
    """Issue 7 / control protocol: `initialize` is the first stdin line (envelope with a
    request_id); the argv (with the permission prompt tool when a policy is given) and the
    environment reach the child; the answer is kept."""
    with anyio.fail_after(10):
        async with connect_claude(
            fake_cli(tmp_path),
            OPTIONS,
            env=fake_env(tmp_path),
            permission_policy=allow_tools_policy,
        ) as conn:
            assert conn.process is not None
            assert conn.init_response["claude_code_version"] == "2.1.332-fake"
            assert conn.init_response["pid"] == conn.process.pid
    start, first, *_ = received(tmp_path)
    assert first["type"] == "control_request"
    assert first["request"] == {"subtype": "initialize", "hooks": None}
    assert first["request_id"].startswith("req_")
    assert start["env"]["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert "--model=claude-fake-model" in start["argv"]
    assert "--permission-prompt-tool" in start["argv"]


async def test_a_cli_that_exits_before_initialize_fails_with_its_status_and_stderr(
    tmp_path: Path,
) -> None:
    """Issue 7 / startup: exit before init -> ClaudeStartupError naming status and stderr;
    without a policy no permission prompt tool is passed."""
    env = fake_env(tmp_path, FAKE_CLAUDE_MODE="exit-before-init")
    with anyio.fail_after(10), pytest.raises(ClaudeStartupError) as caught:
        async with connect_claude(fake_cli(tmp_path), OPTIONS, env=env):
            pass  # pragma: no cover
    assert "exited with status 3" in str(caught.value)
    assert "invalid API key" in str(caught.value)
    assert "--permission-prompt-tool" not in received(tmp_path)[0]["argv"]


async def test_a_cli_that_dies_mid_turn_fails_the_turn_with_its_status_and_stderr(
    tmp_path: Path,
) -> None:
    """Issue 7 / process: the turn fails at once with the exit status and stderr tail."""
    with anyio.fail_after(10):
        async with connect_claude(fake_cli(tmp_path), OPTIONS, env=fake_env(tmp_path)) as conn:
            with pytest.raises(ClaudeConnectionError) as caught:
                await conn.query("[[crash]]")
            with pytest.raises(ClaudeConnectionError):
                await conn.query("after the crash")
    assert "exited with status 2" in str(caught.value)
    assert "fake crash" in str(caught.value)


async def test_closing_closes_stdin_and_sigterms_a_cli_that_stays(tmp_path: Path) -> None:
    """Issue 7 / shutdown: close stdin, wait, then SIGTERM (before any SIGKILL)."""
    env = fake_env(tmp_path, FAKE_CLAUDE_MODE="ignore-eof")
    with anyio.fail_after(15):
        async with connect_claude(
            fake_cli(tmp_path), OPTIONS, env=env, close_timeout=0.3, term_timeout=5
        ) as conn:
            await conn.query("hi")
            process = conn.process
    assert process is not None
    assert process.exit is not None
    assert process.exit.returncode == 143
    tail = received(tmp_path)[-2:]
    assert tail == [{"eof": True}, {"sigterm": True}]


# ---------------------------------------------------------------- turns and events


async def test_a_turn_streams_partial_deltas_then_the_assistant_message_then_the_result() -> None:
    """Issue 7 / typed events: system init, partial stream events, assistant message, and
    the result (subtype, is_error, usage, total cost); the session id is remembered."""
    with anyio.fail_after(10):
        async with connected() as (conn, fake):
            events = await collect(conn, "say hi")
            assert conn.session_id is not None
    assert isinstance(events[0], ClaudeSystemInit)
    assert events[0].model == "claude-fake-model"
    deltas = [e.text_delta for e in events if isinstance(e, ClaudeStreamEvent)]
    assert "".join(d for d in deltas if d) == "FAKE-REPLY: pong"
    assistant = [e for e in events if isinstance(e, ClaudeAssistantMessage)]
    assert [a.text for a in assistant] == ["FAKE-REPLY: pong"]
    result = events[-1]
    assert isinstance(result, ClaudeResult)
    assert (result.subtype, result.is_error, result.result) == (
        "success",
        False,
        "FAKE-REPLY: pong",
    )
    assert result.usage == {"input_tokens": 11, "output_tokens": 5}
    assert result.total_cost_usd == pytest.approx(0.000144)  # pyright: ignore[reportUnknownMemberType]
    assert result.session_id == conn.session_id
    (user_line,) = sent(fake, "user")
    assert user_line["message"] == {"role": "user", "content": "say hi"}


async def test_two_turns_run_one_after_the_other_on_one_connection() -> None:
    """Issue 7 / query API: query() runs a turn to its result; the connection is reused."""
    with anyio.fail_after(10):
        async with connected() as (conn, _):
            first = await conn.query("one")
            second = await conn.query("two")
    assert first.result == second.result == "FAKE-REPLY: pong"


async def test_an_api_error_ends_with_an_error_result_not_an_exception() -> None:
    """Issue 7 / typed events: an API error is an assistant message with `error` and a
    result with is_error (subtype success, as on the real CLI)."""
    with anyio.fail_after(10):
        async with connected() as (conn, _):
            events = await collect(conn, "[[error]]")
    assistant = next(e for e in events if isinstance(e, ClaudeAssistantMessage))
    assert assistant.error == "server_error"
    result = events[-1]
    assert isinstance(result, ClaudeResult)
    assert result.is_error
    assert result.subtype == "success"
    assert result.terminal_reason == "api_error"
    assert result.result is not None
    assert "529" in result.result


async def test_unknown_types_and_subtypes_are_kept_and_non_json_lines_skipped() -> None:
    """Issue 7 / typed events: unknown message types and subtypes arrive as raw events,
    never fatal; a non-JSON stdout line is skipped."""
    with anyio.fail_after(10):
        async with connected() as (conn, _):
            events = await collect(conn, "[[noise]]")
    raw = [(e.type, e.subtype) for e in events if isinstance(e, ClaudeRawEvent)]
    assert raw == [("mystery_event", None), ("system", "brand_new")]
    assert isinstance(events[-1], ClaudeResult)
    assert events[-1].result == "FAKE-REPLY: pong"


async def test_a_two_megabyte_reply_is_read_whole() -> None:
    """Issue 7 / line limit: at least 16 MiB per line (the official SDK's 1 MiB breaks)."""
    assert DEFAULT_MAX_LINE_BYTES >= 16 * 1024 * 1024
    with anyio.fail_after(20):
        async with connected() as (conn, _):
            result = await conn.query("[[big:2000000]]")
    assert result.result == "x" * 2_000_000


async def test_a_line_over_the_limit_fails_the_turn_naming_its_size() -> None:
    """Issue 7 / line limit: a clear error above the limit, naming the size; the
    connection reads on (the next turn works)."""
    with anyio.fail_after(10):
        async with connected(max_line_bytes=4096) as (conn, _):
            with pytest.raises(ClaudeLineTooLongError) as caught:
                await conn.query("[[big:10000]]")
            assert caught.value.limit == 4096
            assert caught.value.size > 10000
            assert "over the limit of 4096 bytes" in str(caught.value)
            assert (await conn.query("again")).result == "FAKE-REPLY: pong"


async def test_a_stream_that_ends_mid_turn_fails_the_turn_with_the_eof_reason() -> None:
    """Issue 18 / stream pair: when the CLI's stdout ends, the running turn and every later
    one fail with ClaudeConnectionError naming what ``eof_reason`` says."""

    async def eof_reason() -> str:
        return "the fake CLI went away"

    with anyio.fail_after(10):
        async with connected(eof_reason=eof_reason) as (conn, _):
            with pytest.raises(ClaudeConnectionError, match="the fake CLI went away"):
                await conn.query("[[crash]]")
            with pytest.raises(ClaudeConnectionError, match="the fake CLI went away"):
                await conn.query("after the end")
            assert conn.closed
            assert conn.process is None


async def test_abort_fails_the_running_turn_at_once_naming_the_reason() -> None:
    """Issue 18 / stream pair: abort(reason), what a transport calls when it knows the CLI is
    gone (its process exited, a grandchild holding stdout open), fails the running turn at
    once with ClaudeConnectionError naming the reason; later turns fail the same way."""

    async def abort_mid_turn(conn: ClaudeConnection) -> None:
        async with conn.turn("[[stall]]") as turn:
            async for event in turn:
                if isinstance(event, ClaudeStreamEvent):
                    conn.abort("the CLI is gone")

    with anyio.fail_after(10):
        async with connected() as (conn, _):
            with pytest.raises(ClaudeConnectionError, match="the CLI is gone"):
                await abort_mid_turn(conn)
            assert not conn.turn_running
            with pytest.raises(ClaudeConnectionError, match="the CLI is gone"):
                await conn.query("next")


# ---------------------------------------------------------------- interrupt


async def test_interrupt_mid_turn_sends_the_control_request_and_the_turn_ends_aborted() -> None:
    """Issue 7 / cancellation: interrupt() is the `interrupt` control request; the turn ends
    with error_during_execution and the CLI stays usable."""
    with anyio.fail_after(10):
        async with connected() as (conn, fake):
            async with conn.turn("[[stall]]") as turn:
                async for event in turn:
                    if isinstance(event, ClaudeStreamEvent):
                        await conn.interrupt()
            result = await turn.result()
            assert result.subtype == "error_during_execution"
            assert result.is_error
            assert (await conn.query("after interrupt")).result == "FAKE-REPLY: pong"
    assert len(sent(fake, "control_request", "interrupt")) == 1


async def test_leaving_a_turn_early_interrupts_it_and_waits_for_its_result() -> None:
    """Issue 7 / cancellation: leaving the turn's block before the result interrupts it."""
    with anyio.fail_after(10):
        async with connected() as (conn, fake):
            async with conn.turn("[[stall]]") as turn:
                async for event in turn:
                    if isinstance(event, ClaudeStreamEvent):
                        break
            assert (await turn.result()).subtype == "error_during_execution"
            assert (await conn.query("next")).result == "FAKE-REPLY: pong"
    assert len(sent(fake, "control_request", "interrupt")) == 1


async def test_cancel_interrupts_the_turn_and_is_a_no_op_once_it_ended() -> None:
    """Issue 18 / one turn API: turn.cancel() (the interrupt control request, for this turn)
    ends the turn error_during_execution; result_nowait() raises WouldBlock before the
    result; a cancel after the end sends nothing."""
    with anyio.fail_after(10):
        async with connected() as (conn, fake):
            async with conn.turn("[[stall]]") as turn:
                with pytest.raises(anyio.WouldBlock):
                    turn.result_nowait()
                async for event in turn:
                    if isinstance(event, ClaudeStreamEvent):
                        await turn.cancel()
                result = await turn.result()
                assert turn.done
                await turn.cancel()
            assert turn.result_nowait() is result
            assert (await conn.query("next")).result == "FAKE-REPLY: pong"
    assert result.subtype == "error_during_execution"
    assert len(sent(fake, "control_request", "interrupt")) == 1


async def test_wait_is_a_deprecated_alias_of_result() -> None:
    with anyio.fail_after(10):
        async with connected() as (conn, _), conn.turn("hello") as turn:
            with pytest.warns(DeprecationWarning, match=r"use result\(\)"):
                result = await turn.wait()
    assert result.result == "FAKE-REPLY: pong"


async def read_into(got: list[Any], events: AsyncIterator[Any]) -> None:
    """Append each event of ``events`` to ``got`` (what came before an error is kept)."""
    async for event in events:
        got.append(event)


async def test_more_events_than_max_events_unread_fail_the_turn_loud_and_interrupt_it() -> None:
    """Issue 18 / one turn API: past max_events unread events the turn fails with
    TurnOverflowError (after the events before it) and is interrupted on the CLI's side; the
    connection's reader never waits for the turn's reader, and the CLI runs the next turn."""
    interrupted = anyio.Event()

    def seen(message: dict[str, Any]) -> None:
        if message.get("type") == "control_request" and message["request"]["subtype"] == (
            "interrupt"
        ):
            interrupted.set()

    got: list[ClaudeEvent] = []
    with anyio.fail_after(10):
        async with connected(seen) as (conn, fake):
            async with conn.turn("[[stall]]", max_events=1) as turn:
                await interrupted.wait()  # nothing was read: the push interrupted the turn
                with pytest.raises(TurnOverflowError) as info:
                    await read_into(got, turn)
                with pytest.raises(TurnOverflowError):
                    await turn.result()
            assert turn.settled
            assert (await conn.query("next")).result == "FAKE-REPLY: pong"
    assert [type(event) for event in got] == [ClaudeSystemInit]
    assert (info.value.limit, info.value.read) == (1, 0)
    assert len(sent(fake, "control_request", "interrupt")) == 1


async def test_cancelling_a_turn_interrupts_it() -> None:
    """Issue 7 / cancellation: a cancelled turn sends the interrupt (bounded, shielded)."""
    with anyio.fail_after(10):
        async with connected() as (conn, fake):
            with anyio.move_on_after(0.5):
                await conn.query("[[stall]]")
            assert (await conn.query("next")).result == "FAKE-REPLY: pong"
    assert len(sent(fake, "control_request", "interrupt")) == 1


# ---------------------------------------------------------------- control requests


async def test_an_unsupported_control_request_of_ours_raises_the_cli_error() -> None:
    """Issue 7 / control protocol: responses are matched by request_id; an error answer
    raises ClaudeControlError with the CLI's message and code."""
    with anyio.fail_after(10):
        async with connected() as (conn, _):
            with pytest.raises(ClaudeControlError) as caught:
                await conn.control("no_such_subtype")
    assert caught.value.error_code == "unsupported_request"
    assert "no_such_subtype" in caught.value.message


async def test_without_a_policy_tools_are_denied() -> None:
    """Issue 7 / can_use_tool: default deny, never unanswered; the tool use is an event."""
    with anyio.fail_after(10):
        async with connected() as (conn, _):
            events = await collect(conn, "[[tool]]")
    tool_use = next(e for e in events if isinstance(e, ClaudeToolUse))
    assert (tool_use.name, tool_use.id) == ("Bash", "toolu_fake_1")
    assert any(isinstance(e, ClaudeUserMessage) for e in events)
    result = events[-1]
    assert isinstance(result, ClaudeResult)
    assert result.result == "TOOL_DENIED: Bash is not allowed here"


async def test_an_allowing_policy_runs_the_tool_with_its_updated_input() -> None:
    """Issue 7 / can_use_tool: the policy sees the request; allow + updatedInput answered,
    correlated by the CLI's request_id."""
    seen: list[ClaudeToolPermissionRequest] = []

    async def policy(request: ClaudeToolPermissionRequest) -> ClaudeAllowTool | ClaudeDenyTool:
        seen.append(request)
        return ClaudeAllowTool({"command": "echo changed"})

    with anyio.fail_after(10):
        async with connected(permission_policy=policy) as (conn, fake):
            result = await conn.query("[[tool]]")
    assert result.result == 'TOOL_RESULT_SEEN: fake-tool-ran {"command": "echo changed"}'
    assert seen[0].tool_name == "Bash"
    assert seen[0].tool_use_id == "toolu_fake_1"
    (answer,) = answers_to(fake)
    assert answer["subtype"] == "success"


async def test_a_tool_permission_is_decided_after_the_tool_use_was_read() -> None:
    """Issue 18 (one turn API): the assistant's tool_use comes before can_use_tool; the policy
    runs once the turn's reader has read it, so whoever shows both shows them in order (as
    for ACP permission requests and Codex approvals)."""
    read: list[str] = []
    seen_by_policy: list[list[str]] = []

    async def policy(request: ClaudeToolPermissionRequest) -> ClaudeAllowTool | ClaudeDenyTool:
        seen_by_policy.append(list(read))
        return ClaudeDenyTool("no")

    with anyio.fail_after(10):
        async with (
            connected(permission_policy=policy) as (conn, _fake),
            conn.turn("[[tool]]") as turn,
        ):
            for _ in range(20):  # a reader that lags behind: others run first
                await anyio.lowlevel.checkpoint()
            async for event in turn:
                if isinstance(event, ClaudeAssistantMessage):
                    read.extend(use.id for use in event.tool_uses)
                for _ in range(20):
                    await anyio.lowlevel.checkpoint()
            await turn.result()
    assert seen_by_policy == [["toolu_fake_1"]]


async def test_a_failing_policy_means_deny() -> None:
    """Issue 7 / can_use_tool: a policy error is answered as deny, never left unanswered."""

    async def policy(request: ClaudeToolPermissionRequest) -> ClaudeAllowTool | ClaudeDenyTool:
        raise RuntimeError("policy broke")

    with anyio.fail_after(10):
        async with connected(permission_policy=policy) as (conn, _):
            result = await conn.query("[[tool]]")
    assert result.result == "TOOL_DENIED: permission policy failed"


async def test_a_cancelled_control_request_is_never_answered() -> None:
    """Issue 7 / control_cancel_request: the pending handler is dropped, nothing is sent."""
    started = anyio.Event()
    finished: list[bool] = []

    async def slow_policy(request: ClaudeToolPermissionRequest) -> ClaudeAllowTool | ClaudeDenyTool:
        started.set()
        await anyio.sleep_forever()
        finished.append(True)  # pragma: no cover
        return ClaudeAllowTool()  # pragma: no cover

    with anyio.fail_after(10):
        async with connected(permission_policy=slow_policy) as (conn, fake):
            result = await conn.query("[[tool-cancel]]")
    assert started.is_set()
    assert not finished
    assert result.result == "CANCEL_SENT"
    assert answers_to(fake) == []


async def test_hook_callbacks_are_registered_in_initialize_and_answered() -> None:
    """Issue 7 / hook_callback: hooks go into initialize with callback ids; each
    hook_callback is answered by its callback."""
    inputs: list[dict[str, Any]] = []

    async def hook(payload: dict[str, Any]) -> dict[str, Any]:
        inputs.append(payload)
        return {"continue": True}

    hooks = [ClaudeHook("PreToolUse", hook, matcher="Bash")]
    with anyio.fail_after(10):
        async with connected(hooks=hooks) as (conn, fake):
            result = await conn.query("[[hook]]")
    init = sent(fake, "control_request", "initialize")[0]["request"]
    assert init["hooks"] == {"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0"]}]}
    assert inputs == [{"hook_event_name": "PreToolUse", "tool_name": "Bash"}]
    assert result.result is not None
    answer = json.loads(result.result)
    assert answer["subtype"] == "success"
    assert answer["response"] == {"continue": True}


async def test_an_unknown_control_request_from_the_cli_gets_an_error_answer() -> None:
    """Issue 7 / control protocol: every CLI control request is answered (unknown -> error)."""
    with anyio.fail_after(10):
        async with connected() as (conn, _):
            result = await conn.query("[[control:mcp_message]]")
    assert result.result is not None
    answer = json.loads(result.result)
    assert answer["subtype"] == "error"
    assert "mcp_message" in answer["error"]


async def test_only_json_objects_are_written_to_stdin() -> None:
    """Issue 7 / stdin: a non-JSON line kills the CLI, so nothing else is ever written: a
    NaN is refused before sending, and the CLI lives on."""
    with anyio.fail_after(10):
        async with connected() as (conn, _):
            with pytest.raises(ValueError, match="JSON compliant"):
                await conn.control("set_max_thinking_tokens", value=float("nan"))
            assert (await conn.query("still alive")).result == "FAKE-REPLY: pong"


def test_the_public_names_are_exported_lazily() -> None:
    """Issue 7 / API: the transport's names are reachable from subagents.transports; issue 18:
    the unprefixed names of earlier releases are the Claude-prefixed objects (deprecated
    aliases for one release)."""
    import subagents.transports as transports

    for name in claude_code.__all__:
        assert getattr(transports, name) is getattr(claude_code, name)
    assert allow_tools_policy is transports.allow_tools_policy
    assert claude_code.AllowTool is ClaudeAllowTool
    assert claude_code.DenyTool is ClaudeDenyTool
    assert claude_code.ToolPermissionRequest is ClaudeToolPermissionRequest


async def test_a_write_that_finds_stdin_closed_fails_with_why_the_connection_was_lost() -> None:
    """Errors name the cause: a write that finds the CLI's stdin closed (the CLI is ending)
    fails with the reason the connection is lost (its exit status and stderr) once that is
    known, within the watcher's wait; only without it, with "stdin is closed"."""
    from subagents.transports._claude_wire import ClaudeWire

    write_failed = anyio.Event()

    class ClosedStdin(anyio.abc.ByteSendStream):
        async def send(self, item: bytes) -> None:
            write_failed.set()
            raise anyio.BrokenResourceError

        async def send_eof(self) -> None:
            pass

        async def aclose(self) -> None:
            pass

    exit_reason = "claude 'claude' (pid 7) exited with status 3; stderr tail: 'invalid key'"
    failures: list[str] = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            wire = ClaudeWire(ClosedStdin(), tg, allow_tools_policy, {}, 1 << 20, "claude")

            async def lose_after_the_write() -> None:
                await write_failed.wait()
                wire.lose(exit_reason)

            tg.start_soon(lose_after_the_write)
            try:
                await wire.send({"type": "user"})
            except claude_code.ClaudeConnectionError as exc:
                failures.append(str(exc))
    assert failures == [exit_reason]
