"""The ACP client endpoint driving the reference agent as a real child process."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from subagents.protocol import acp
from subagents.rpc import ConnectionClosedError
from subagents.transports import AgentStartupError, ClientSandbox, allow_policy, connect_agent

pytestmark = pytest.mark.anyio

REFERENCE = [sys.executable, "-m", "subagents.agents.reference"]


async def test_a_crash_mid_turn_fails_the_prompt_with_exit_status_and_stderr_tail() -> None:
    """DESIGN: when the process dies, pending requests fail at once with the exit status and
    the stderr tail, and every update received before the crash is delivered."""
    texts: list[str] = []
    async with connect_agent(REFERENCE) as agent:
        session = await agent.new_session()
        with anyio.fail_after(10):
            async with session.prompt("crash") as turn:
                async for update in turn:
                    if isinstance(update, acp.AgentMessageChunkSessionUpdate):
                        assert isinstance(update.content, acp.TextContentBlock)
                        texts.append(update.content.text)
                with pytest.raises(ConnectionClosedError) as info:
                    await turn.result()
        assert agent.process is not None
        assert agent.process.exit is not None
        assert agent.process.exit.returncode == 3
    assert len(texts) == 2
    message = str(info.value)
    assert "exited with status 3" in message
    assert "reference agent: crashing on purpose" in message


async def test_streamed_updates_arrive_in_order_and_the_agent_exits_cleanly() -> None:
    """Updates in order, then the stop reason; closing lets the agent exit on stdin EOF."""
    async with connect_agent(REFERENCE) as agent:
        session = await agent.new_session()
        with anyio.fail_after(20):
            async with session.prompt("stream 300") as turn:
                texts = [
                    u.content.text
                    async for u in turn
                    if isinstance(u, acp.AgentMessageChunkSessionUpdate)
                    and isinstance(u.content, acp.TextContentBlock)
                ]
        assert turn.stop_reason == "end_turn"
        process = agent.process
    assert texts == [f"{i} " for i in range(1, 301)]
    assert process is not None
    assert process.exit is not None
    assert process.exit.returncode == 0


async def test_cancelling_a_turn_with_a_pending_permission_request_ends_it_cancelled() -> None:
    """ACP cancellation: the pending permission request is answered cancelled by the client,
    the agent ends the turn with stopReason cancelled."""
    asked = anyio.Event()

    async def undecided(request: acp.RequestPermissionRequest) -> acp.RequestPermissionOutcome:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    statuses: list[str | None] = []
    async with connect_agent(REFERENCE, permission_policy=undecided) as agent:
        session = await agent.new_session()
        with anyio.fail_after(10):
            async with session.prompt("tool") as turn, anyio.create_task_group() as tg:

                async def cancel_when_asked() -> None:
                    await asked.wait()
                    await session.cancel()

                tg.start_soon(cancel_when_asked)
                async for update in turn:
                    if isinstance(update, acp.ToolCallUpdateSessionUpdate):
                        statuses.append(update.status)
        assert turn.stop_reason == "cancelled"
    assert statuses[-1] == "failed"


async def test_the_sandbox_lets_the_agent_use_files_and_terminals_inside_the_root(
    tmp_path: Path,
) -> None:
    """Opt-in fs/terminal through the sandbox, end to end with a real agent."""
    async with connect_agent(
        REFERENCE, extension=ClientSandbox(tmp_path), permission_policy=allow_policy
    ) as agent:
        session = await agent.new_session(tmp_path)
        with anyio.fail_after(20):
            fs = await session.run("fs")
            terminal_texts: list[str] = []
            async with session.prompt("terminal") as turn:
                async for update in turn:
                    if isinstance(update, acp.AgentMessageChunkSessionUpdate) and isinstance(
                        update.content, acp.TextContentBlock
                    ):
                        terminal_texts.append(update.content.text)
    assert fs.stop_reason == "end_turn"
    assert (tmp_path / "reference-agent.txt").exists()
    assert turn.stop_reason == "end_turn"
    assert "hello from the reference agent" in "".join(terminal_texts)


async def test_an_agent_that_never_answers_initialize_times_out_clearly() -> None:
    """Start-up timeout: a silent agent is a clear error within the bound, and is stopped."""
    silent = [sys.executable, "-c", "import time; time.sleep(60)"]
    with anyio.fail_after(15), pytest.raises(AgentStartupError, match=r"within 0\.5 s"):
        async with connect_agent(silent, initialize_timeout=0.5):
            pass


async def test_an_agent_that_exits_during_initialize_names_its_exit_and_stderr() -> None:
    """Exiting during initialize: the error carries the exit status and the stderr tail."""
    dying = [
        sys.executable,
        "-c",
        "import sys; sys.stderr.write('missing API key\\n'); sys.exit(2)",
    ]
    with anyio.fail_after(15), pytest.raises(AgentStartupError) as info:
        async with connect_agent(dying):
            pass
    assert "exited with status 2" in str(info.value)
    assert "missing API key" in str(info.value)
