"""Faults of the chaos agent through the ACP client layer (issue 10, part 2): no hang (every
wait bounded), a clear error naming the fault, nothing lost (every well-formed update sent
before the fault is delivered), and after the connection closes no process, zombie or file
descriptor is left."""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from subagents.protocol import acp
from subagents.protocol.errors import RemoteProtocolError
from subagents.rpc import ConnectionClosedError
from subagents.transports import AgentConnection, AgentStartupError, connect_agent

from ._leaks import assert_no_leak, snapshot

Observe = Callable[[str, str, str], None]


def reported(errors: list[str]) -> str:
    if not errors:
        return "nothing reported"
    return f"{len(errors)} reported: " + "; ".join(sorted(set(errors)))


def first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0]


pytestmark = pytest.mark.anyio

CHAOS = Path(__file__).with_name("chaos_agent.py")
BOUND = 30.0


def chaos(fault: str, *args: str) -> list[str]:
    return [sys.executable, str(CHAOS), fault, *args]


@asynccontextmanager
async def chaos_agent(
    fault: str,
    *args: str,
    errors: list[str] | None = None,
    on_report: anyio.Event | None = None,
    cancel_timeout: float = 10.0,
    initialize_timeout: float = 30.0,
) -> AsyncIterator[AgentConnection]:
    def report(error: RemoteProtocolError) -> None:
        if errors is not None:
            errors.append(str(error))
        if on_report is not None:
            on_report.set()

    async with connect_agent(
        chaos(fault, *args),
        on_protocol_error=report,
        cancel_timeout=cancel_timeout,
        initialize_timeout=initialize_timeout,
    ) as agent:
        yield agent


def texts(updates: list[acp.SessionUpdate]) -> list[str]:
    return [
        u.content.text
        for u in updates
        if isinstance(u, acp.AgentMessageChunkSessionUpdate)
        and isinstance(u.content, acp.TextContentBlock)
    ]


async def prompt_all(agent: AgentConnection, text: str = "go") -> tuple[list[str], str | None]:
    session = await agent.new_session()
    updates: list[acp.SessionUpdate] = []
    async with session.prompt(text) as turn:
        async for update in turn:
            updates.append(update)
    return texts(updates), turn.stop_reason


ALL_CHUNKS = [f"chunk {i}" for i in range(1, 6)]


@pytest.mark.parametrize("fault", ["none", "split", "garbage"])
async def test_well_formed_traffic_arrives_whole_whatever_the_framing(
    fault: str, observe: Observe
) -> None:
    """Frames split at every byte are reassembled; garbage and invalid UTF-8 lines between
    frames are reported (naming what was wrong) and skipped: every update arrives."""
    before = snapshot()
    errors: list[str] = []
    with anyio.fail_after(BOUND):
        async with chaos_agent(fault, errors=errors) as agent:
            chunks, stop = await prompt_all(agent)
    assert (chunks, stop) == (ALL_CHUNKS, "end_turn")
    if fault == "garbage":
        assert any("not valid JSON" in e for e in errors), errors
        assert any("UTF-8" in e for e in errors), errors
    else:
        assert errors == []
    assert_no_leak(before)
    observe(
        "ACP client",
        fault,
        f"turn ends {stop}; {len(chunks)}/5 updates; {reported(errors)}",
    )


@pytest.mark.timeout(120)
async def test_a_100_mib_line_is_skipped_naming_its_size_and_nothing_else_is_lost(
    observe: Observe,
) -> None:
    """A line beyond the limit (64 MiB by default) is reported with its size and the limit,
    and skipped; every update before and after it arrives, and the turn ends normally."""
    before = snapshot()
    errors: list[str] = []
    with anyio.fail_after(90):
        async with chaos_agent("huge-line", "100", errors=errors) as agent:
            chunks, stop = await prompt_all(agent)
    assert (chunks, stop) == (ALL_CHUNKS, "end_turn")
    assert errors == [
        "notification 'session/update' skipped: line of 104857775 bytes exceeds the limit of "
        "67108864 bytes"
    ]
    assert_no_leak(before)
    observe(
        "ACP client", "huge-line", f"turn ends {stop}; {len(chunks)}/5 updates; {reported(errors)}"
    )


async def test_a_crash_mid_prompt_names_the_exit_status_and_stderr(observe: Observe) -> None:
    before = snapshot()
    chunks: list[str] = []
    with anyio.fail_after(BOUND):
        async with chaos_agent("crash-after", "3") as agent:
            session = await agent.new_session()
            async with session.prompt("go") as turn:
                async for update in turn:
                    chunks += texts([update])
                with pytest.raises(ConnectionClosedError) as info:
                    await turn.result()
    assert chunks == ["chunk 1", "chunk 2", "chunk 3"]
    assert "exited with status 3" in str(info.value)
    assert "crashing on purpose" in str(info.value)
    assert_no_leak(before)
    observe(
        "ACP client",
        "crash-after",
        f"{len(chunks)}/5 updates delivered, then the prompt fails: ConnectionClosedError "
        f"({first_line(info.value)})",
    )


@pytest.mark.parametrize("fault", ["hang", "ignore-cancel"])
async def test_a_turn_that_never_ends_is_abandoned_within_the_cancel_bound(
    fault: str, observe: Observe
) -> None:
    """A hung prompt, or one whose agent ignores session/cancel: leaving the turn cancels it,
    waits ``cancel_timeout`` for the answer, then gives up (the request is abandoned);
    closing the connection stops the agent. Updates before it are kept."""
    before = snapshot()
    chunks: list[str] = []
    started = time.monotonic()
    with anyio.fail_after(BOUND):
        async with chaos_agent(fault, cancel_timeout=1.0) as agent:
            session = await agent.new_session()
            async with session.prompt("go") as turn:
                async for update in turn:
                    chunks += texts([update])
                    if len(chunks) == 2:
                        break
    assert chunks == ["chunk 1", "chunk 2"]
    assert time.monotonic() - started < BOUND
    assert_no_leak(before)
    observe(
        "ACP client",
        fault,
        f"{len(chunks)} updates read; leaving the turn sends session/cancel, waits "
        "cancel_timeout (1 s here) for the answer, then abandons the request",
    )


async def test_an_agent_that_never_answers_initialize_fails_the_start_in_bound(
    observe: Observe,
) -> None:
    before = snapshot()
    with anyio.fail_after(BOUND), pytest.raises(AgentStartupError) as info:
        async with chaos_agent("hang-init", initialize_timeout=1.0):
            pass
    assert "initialize" in str(info.value)
    assert_no_leak(before)
    observe("ACP client", "hang-init", f"AgentStartupError: {first_line(info.value)}")


async def test_an_agent_exiting_during_initialize_names_its_status_and_stderr(
    observe: Observe,
) -> None:
    before = snapshot()
    with anyio.fail_after(BOUND), pytest.raises(AgentStartupError) as info:
        async with chaos_agent("exit-during-init"):
            pass
    assert "status 4" in str(info.value)
    assert "exiting during initialize" in str(info.value)
    assert_no_leak(before)
    observe("ACP client", "exit-during-init", f"AgentStartupError: {first_line(info.value)}")


@pytest.mark.timeout(120)
async def test_a_100_mb_stderr_flood_neither_blocks_nor_grows_memory(observe: Observe) -> None:
    """stderr is drained (the agent never blocks on a full pipe) into a bounded tail."""
    before = snapshot()
    with anyio.fail_after(90):
        async with chaos_agent("stderr-flood", "100") as agent:
            chunks, stop = await prompt_all(agent)
            tail = agent.process.stderr_tail() if agent.process is not None else ""
    assert (chunks, stop) == (ALL_CHUNKS, "end_turn")
    assert 0 < len(tail) <= 1 << 20
    assert_no_leak(before)
    observe(
        "ACP client",
        "stderr-flood",
        f"turn ends {stop}; {len(chunks)}/5 updates; stderr drained, a bounded tail kept",
    )


async def test_an_agent_ignoring_stdin_eof_is_stopped_by_the_ladder(observe: Observe) -> None:
    before = snapshot()
    with anyio.fail_after(BOUND):
        async with chaos_agent("no-eof-exit") as agent:
            chunks, _ = await prompt_all(agent)
            process = agent.process
    assert chunks == ALL_CHUNKS
    assert process is not None
    assert process.exit is not None
    assert process.exit.returncode in (143, -15)
    assert_no_leak(before)
    observe(
        "ACP client",
        "no-eof-exit",
        "turn ends end_turn; on close, stdin EOF is ignored, so SIGTERM after close_timeout "
        "stops it (status 143)",
    )


async def test_a_grandchild_ignoring_sigterm_does_not_survive(
    tmp_path: Path, observe: Observe
) -> None:
    """The agent's process group is signalled: a grandchild that ignores SIGTERM is killed."""
    before = snapshot()
    pid_file = tmp_path / "grandchild.pid"
    with anyio.fail_after(BOUND):
        async with chaos_agent("grandchild", str(pid_file)) as agent:
            await prompt_all(agent)
            with anyio.fail_after(10):
                while not pid_file.exists() or not pid_file.read_text():  # noqa: ASYNC110
                    await anyio.sleep(0.02)
    grandchild = int(pid_file.read_text())
    assert_no_leak(before, also_gone={grandchild})
    observe(
        "ACP client",
        "grandchild",
        "on close the process group gets SIGTERM, then SIGKILL: the grandchild is gone",
    )


async def test_a_response_with_an_unknown_id_is_reported_and_the_turn_is_left_in_bound(
    observe: Observe,
) -> None:
    """A response whose id was never sent is reported and ignored; the prompt it should have
    answered stays open until the caller leaves it (cancel, bounded by cancel_timeout)."""
    before = snapshot()
    errors: list[str] = []
    with anyio.fail_after(BOUND):
        async with chaos_agent("wrong-ids", errors=errors, cancel_timeout=1.0) as agent:
            session = await agent.new_session()
            chunks: list[str] = []
            async with session.prompt("go") as turn:
                async for update in turn:
                    chunks += texts([update])
                    if len(chunks) == len(ALL_CHUNKS):
                        break  # its answer went to an unknown id: leave (cancel, bounded)
    assert chunks == ALL_CHUNKS
    assert errors == ["response for unknown request id 987654321 ignored"]
    assert_no_leak(before)
    observe(
        "ACP client",
        "wrong-ids",
        f"{len(chunks)}/5 updates; {reported(errors)}; the prompt stays open until left "
        "(cancel, bounded)",
    )


@pytest.mark.parametrize("fault", ["duplicate", "answer-notify"])
async def test_spurious_responses_are_reported_and_ignored(fault: str, observe: Observe) -> None:
    before = snapshot()
    errors: list[str] = []
    first_report = anyio.Event()
    with anyio.fail_after(BOUND):
        async with chaos_agent(fault, errors=errors, on_report=first_report) as agent:
            session = await agent.new_session()
            async with session.prompt("go") as turn:
                if fault == "answer-notify":
                    await turn.cancel()
                updates = [u async for u in turn]
            if fault == "duplicate":
                # The connection still works after the duplicate.
                await agent.new_session()
            # The agent writes the spurious response from its turn's thread: under load it may
            # come after the answers above. It is reported when it comes (bounded above).
            await first_report.wait()
    assert texts(updates)[:1] == ["chunk 1"]
    assert errors, f"{fault}: nothing was reported"
    assert_no_leak(before)
    observe("ACP client", fault, f"turn ends {turn.stop_reason}; {reported(errors)}")


async def test_a_request_storm_from_the_agent_is_answered_and_the_turn_ends(
    observe: Observe,
) -> None:
    """2,000 requests the client does not serve (no fs capability): each is answered with an
    error, none is left waiting, and the turn ends."""
    before = snapshot()
    with anyio.fail_after(60):
        async with chaos_agent("storm", "2000") as agent:
            chunks, stop = await prompt_all(agent)
    assert (chunks, stop) == (["storm of 2000 requests answered"], "end_turn")
    assert_no_leak(before)
    observe(
        "ACP client",
        "storm",
        f"2000 fs/read_text_file requests each answered -32601 (no fs offered); turn ends {stop}",
    )


@pytest.mark.parametrize("attempt", range(3))
async def test_an_agent_gone_before_the_first_write_is_named_by_its_exit(attempt: int) -> None:
    """A child that closed its stdin and exited before initialize was written: the error is
    its exit status and stderr, not a bare broken-pipe (whichever side sees it first)."""
    before = snapshot()
    command = ["sh", "-c", "exec 0<&-; echo 'gone before initialize' >&2; exit 4"]
    with anyio.fail_after(BOUND), pytest.raises(AgentStartupError) as info:
        async with connect_agent(command):
            pass
    assert "status 4" in str(info.value)
    assert "gone before initialize" in str(info.value)
    assert_no_leak(before)
