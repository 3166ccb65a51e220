"""``subagents serve`` (issue 8, part 5): the in-process runtime as an ACP agent over stdio,
driven by our ACP client as a real child process, on the embedded offline model."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import anyio
import pytest

from subagents.agents.runtime_agent import open_runtime_agent
from subagents.conformance.mcp_http import serve_mcp_http
from subagents.harness.llm.offline import OfflineModel
from subagents.harness.runtime import AgentRuntime
from subagents.protocol import acp
from subagents.transports import connect_agent
from subagents.transports.acp_agent import AgentTurn, ClientConnection

pytestmark = pytest.mark.anyio

SERVE = [sys.executable, "-m", "subagents", "serve"]


def text_of(updates: Sequence[object]) -> str:
    return "".join(
        u.content.text
        for u in updates
        if isinstance(u, acp.AgentMessageChunkSessionUpdate)
        and isinstance(u.content, acp.TextContentBlock)
    )


async def test_a_delegating_prompt_streams_the_tool_call_and_the_childs_answer() -> None:
    """The runtime over ACP: the model's delegation is a tool_call (in_progress, its
    arguments), then a tool_call_update completed with the child's answer, then the text."""
    with anyio.fail_after(30):
        async with connect_agent(SERVE) as agent:
            assert agent.agent_info is not None
            assert agent.agent_info.name == "subagents-runtime"
            session = await agent.new_session()
            async with session.prompt("delegate say hi") as turn:
                updates = [u async for u in turn]
    assert turn.stop_reason == "end_turn"
    calls = [u for u in updates if isinstance(u, acp.ToolCallSessionUpdate)]
    results = [
        u
        for u in updates
        if isinstance(u, acp.ToolCallUpdateSessionUpdate) and u.status != "in_progress"
    ]
    assert [(c.title, c.status, c.raw_input) for c in calls] == [
        ("subagent", "in_progress", {"description": "delegated task", "prompt": "say hi"})
    ]
    assert [(r.tool_call_id, r.status) for r in results] == [(calls[0].tool_call_id, "completed")]
    assert text_of(updates) == "subagent said: You said: say hi"


def content_text(update: acp.ToolCallUpdateSessionUpdate) -> str:
    return "".join(
        c.content.text
        for c in update.content or ()
        if isinstance(c, acp.ContentToolCallContent) and isinstance(c.content, acp.TextContentBlock)
    )


async def test_the_childs_text_streams_into_the_delegations_tool_call() -> None:
    """Issue 15, point 9: "serve over ACP shows tool_call_update notifications carrying the
    child's text for the delegation's tool call id before the prompt response": while the
    child runs, in_progress updates of the delegation's tool call carry the text the child
    has streamed so far (each one extends the last), all before the call's completed update
    and the prompt's answer."""
    with anyio.fail_after(30):
        async with connect_agent(SERVE) as agent:
            session = await agent.new_session()
            async with session.prompt("delegate slow 5") as turn:
                updates = [u async for u in turn]
    assert turn.stop_reason == "end_turn"
    [call] = [u for u in updates if isinstance(u, acp.ToolCallSessionUpdate)]
    of_call = [
        u
        for u in updates
        if isinstance(u, acp.ToolCallUpdateSessionUpdate) and u.tool_call_id == call.tool_call_id
    ]
    streaming = [u for u in of_call if u.status == "in_progress"]
    assert streaming
    assert of_call[-1].status == "completed"
    assert of_call.index(streaming[-1]) < len(of_call) - 1
    child_text = "tick 1 tick 2 tick 3 tick 4 tick 5 "
    texts = [content_text(u) for u in streaming]
    assert all(child_text.startswith(t) for t in texts)
    assert texts == sorted(texts, key=len)
    assert texts[-1] == child_text
    assert len(streaming) > 1  # the child's ticks are 0.1 s apart: it streamed, not at the end
    assert updates.index(call) < updates.index(streaming[0])
    assert text_of(updates) == f"subagent said: {child_text}"


class SlowClient:
    """An ACP client that takes no update until ``release`` is set (a stand-in for an
    ``AgentTurn`` whose client reads slowly)."""

    def __init__(self) -> None:
        self.updates: list[acp.SessionUpdate] = []
        self.release = anyio.Event()
        self.waiting = anyio.Event()

    async def send_update(self, update: acp.SessionUpdate) -> None:
        self.waiting.set()
        await self.release.wait()
        self.updates.append(update)

    async def wait_cancelled(self) -> None:
        await anyio.sleep_forever()


async def test_a_slow_client_never_blocks_the_delegated_child() -> None:
    """Issue 15, point 9: "bounded so a slow client never blocks the child": while the
    client takes no update at all, the child streams its 200 ticks and completes, and so does
    the parent's turn; the child's text was coalesced meanwhile, so the client then gets one
    update carrying all of it (not 200), before the completed one and the answer."""
    runtime = AgentRuntime(OfflineModel(tick=0.001))
    client = SlowClient()
    answers: list[object] = []
    async with open_runtime_agent(runtime) as agent:
        conn = cast("ClientConnection", None)  # not used without MCP servers
        session = await agent.new_session(acp.NewSessionRequest(cwd="/", mcp_servers=[]), conn)
        parent = agent.agents[session.session_id]
        prompt = acp.PromptRequest(
            session_id=session.session_id,
            prompt=[acp.TextContentBlock(text="delegate slow 200")],
        )

        async def ask() -> None:
            answers.append(await agent.prompt(prompt, cast("AgentTurn", client)))

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                await client.waiting.wait()
                while parent.session.events[-1].kind != "turn_end":  # noqa: ASYNC110
                    await anyio.sleep(0.01)
                assert client.updates == []  # the first update is still being taken
                assert answers == []
                client.release.set()
    assert answers == ["end_turn"]
    child_text = "".join(f"tick {i} " for i in range(1, 201))
    [result] = [e for e in parent.session.events if e.kind == "tool_result"]
    assert result.text == child_text
    calls = [u for u in client.updates if isinstance(u, acp.ToolCallSessionUpdate)]
    streaming = [
        u
        for u in client.updates
        if isinstance(u, acp.ToolCallUpdateSessionUpdate) and u.status == "in_progress"
    ]
    completed = [
        u
        for u in client.updates
        if isinstance(u, acp.ToolCallUpdateSessionUpdate) and u.status == "completed"
    ]
    assert [content_text(u) for u in streaming] == [child_text]
    assert client.updates.index(calls[0]) < client.updates.index(streaming[0])
    assert client.updates.index(streaming[0]) < client.updates.index(completed[0])
    assert text_of(client.updates) == f"subagent said: {child_text}"


def probe_server(marker: Path, name: str = "probe") -> acp.McpServerStdio:
    return acp.McpServerStdio(
        name=name,
        command=sys.executable,
        args=["-m", "subagents.conformance.mcp_probe", str(marker)],
        env=[],
    )


async def test_the_tools_of_a_sessions_mcp_servers_are_the_agents_tools(tmp_path: Path) -> None:
    """session-setup.mdx "MCP servers": the stdio, http and sse servers given in session/new
    are connected before the answer; their tools are the agent's (mcp__<server>__<tool>): the
    model's call runs on the server and its answer comes back as the tool result. A server
    that cannot be started is left out without failing session/new."""
    marker = tmp_path / "marker"
    async with serve_mcp_http() as web:
        servers: list[acp.McpServer] = [
            probe_server(marker),
            acp.HttpMcpServer(name="web", url=web.http_url, headers=[]),
            acp.SseMcpServer(name="events", url=web.sse_url, headers=[]),
            acp.McpServerStdio(name="broken", command=str(tmp_path / "nope"), args=[], env=[]),
        ]
        with anyio.fail_after(30):
            async with connect_agent(SERVE) as agent:
                assert agent.capabilities.mcp_capabilities is not None
                assert agent.capabilities.mcp_capabilities.http
                session = await agent.new_session(mcp_servers=servers)
                assert marker.read_text() == "initialize\n"
                said: list[str] = []
                for call in (
                    'tool mcp__probe__probe_echo {"text": "over stdio"}',
                    'tool mcp__web__echo {"text": "over http"}',
                    'tool mcp__events__echo {"text": "over sse"}',
                    "tool mcp__broken__anything",
                ):
                    async with session.prompt(call) as turn:
                        said.append(text_of([u async for u in turn]))
    assert said == [
        "mcp__probe__probe_echo said: over stdio",
        "mcp__web__echo said: over http",
        "mcp__events__echo said: over sse",
        "no tool mcp__broken__anything here",
    ]
    assert web.methods.count("tools/call") == 2


async def test_closing_a_session_disconnects_its_mcp_servers(tmp_path: Path) -> None:
    """session/close ends the session's MCP servers: the probe's process is gone."""
    marker = tmp_path / "marker"
    with anyio.fail_after(30):
        async with connect_agent(SERVE) as agent:
            session = await agent.new_session(mcp_servers=[probe_server(marker)])
            async with session.prompt('tool mcp__probe__probe_echo {"text": "x"}') as turn:
                assert text_of([u async for u in turn]) == "mcp__probe__probe_echo said: x"
            probes = _probe_pids(marker)
            assert probes
            await agent.close_session(session.session_id)
            with anyio.fail_after(10):
                while _probe_pids(marker):  # noqa: ASYNC110 - a process leaving has no event
                    await anyio.sleep(0.05)


def _probe_pids(marker: Path) -> list[int]:
    """Live processes whose command line names ``marker`` (the probe of this test)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().split(") ", 1)[1][0]
        except OSError:
            continue
        if str(marker).encode() in command and state != "Z":
            found.append(int(entry.name))
    return found


async def test_a_cancelled_prompt_ends_cancelled_and_the_session_goes_on() -> None:
    with anyio.fail_after(30):
        async with connect_agent(SERVE) as agent:
            session = await agent.new_session()
            async with session.prompt("slow") as turn:
                async for update in turn:
                    if isinstance(update, acp.AgentMessageChunkSessionUpdate):
                        await turn.cancel()
                        break
                await turn.result()
            assert turn.stop_reason == "cancelled"
            async with session.prompt("hello") as after:
                updates = [u async for u in after]
    assert text_of(updates) == "You said: hello"


async def test_a_model_failure_is_a_json_rpc_error_with_the_reason() -> None:
    from subagents.rpc import RPCError

    with anyio.fail_after(30):
        async with connect_agent(SERVE) as agent:
            session = await agent.new_session()
            async with session.prompt("fail") as turn:
                with pytest.raises(RPCError) as info:
                    await turn.result()
    assert info.value.code == -32603
    assert "offline model: 503 overloaded" in info.value.message


async def test_sessions_persisted_by_one_process_load_in_another(tmp_path: Path) -> None:
    """With --sessions, session/load in a new process replays the conversation."""
    command = [*SERVE, "--sessions", str(tmp_path)]
    with anyio.fail_after(30):
        async with connect_agent(command) as agent:
            session = await agent.new_session()
            async with session.prompt("remember apricots") as turn:
                await turn.result()
            session_id = session.session_id
        async with connect_agent(command) as agent:
            loaded = await agent.load_session(session_id)
            replayed = list(loaded.idle_updates)
            async with loaded.prompt("and now?") as turn:
                await turn.result()
    users = [
        u.content.text
        for u in replayed
        if isinstance(u, acp.UserMessageChunkSessionUpdate)
        and isinstance(u.content, acp.TextContentBlock)
    ]
    assert users == ["remember apricots"]
    assert text_of(replayed) == "You said: remember apricots"
    assert turn.stop_reason == "end_turn"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--adapter", "anthropic"],
            "--adapter anthropic: the anthropic adapter needs a model name",
        ),
        (["--record"], "--record and --replay need --snapshots DIR"),
        (["--snapshots", "x"], "--snapshots needs --record or --replay"),
        (["--max-steps", "0"], "--max-steps must be at least 1"),
    ],
)
def test_bad_options_are_one_clear_line_and_status_2(args: list[str], message: str) -> None:
    result = subprocess.run(
        [*SERVE, *args], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
    )
    assert result.returncode == 2
    assert result.stderr == f"subagents serve: {message}\n"
