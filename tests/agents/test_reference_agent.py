"""The reference agent, `python -m subagents.agents.reference`, as a real child process.

Each test spawns it and plays the client with raw JSON lines, checking the exchanges on the
wire: handshake, sessions, every scripted scenario, cancellation, crash, stderr, shutdown.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from subagents.protocol import JsonValue
from subagents.transports import AgentProcess, open_agent_process
from tests.agents.acp_wire import (
    Msg,
    call,
    cancel,
    chunk_text,
    initialize,
    notification,
    prompt,
    read_until_answer,
    reply,
    request,
    update_kind,
)
from tests.rpc.wire import Wire

pytestmark = pytest.mark.anyio

REFERENCE_AGENT = (sys.executable, "-m", "subagents.agents.reference")
READ_TIMEOUT = 10.0


class Client(Wire):
    """The raw client end of a reference agent process."""

    async def read(self, timeout: float = READ_TIMEOUT) -> Msg:
        return await super().read(timeout)


@asynccontextmanager
async def reference_agent() -> AsyncGenerator[tuple[AgentProcess, Client], None]:
    async with open_agent_process(REFERENCE_AGENT, name="reference") as child:
        yield child, Client(child.stdout, child.stdin)


async def open_session(wire: Wire, id_: int = 1, cwd: str = "/tmp") -> str:
    """`session/new`, then the available-commands update that follows its answer."""
    answer = await call(wire, id_, "session/new", {"cwd": cwd, "mcpServers": []})
    session_id = answer["result"]["sessionId"]
    commands = await wire.read()
    assert update_kind(commands) == "available_commands_update"
    assert commands["params"]["sessionId"] == session_id
    return session_id


async def run_prompt(wire: Wire, id_: int, session_id: str, text: str) -> tuple[list[Msg], Msg]:
    await wire.write_json(prompt(id_, session_id, text))
    return await read_until_answer(wire, id_)


async def wait_exit(child: AgentProcess) -> int:
    with anyio.fail_after(READ_TIMEOUT):
        return (await child.wait()).returncode


# ------------------------------------------------------------------------------ handshake


async def test_the_handshake_negotiates_version_1_and_advertises_what_is_implemented() -> None:
    """initialization.mdx: an unsupported requested version is answered with the agent's latest
    (1); capabilities are honest: load, list, resume, close, delete are all implemented; image,
    audio and embedded context are accepted in prompts; MCP over stdio only (http/sse false)."""
    async with reference_agent() as (_, wire):
        answer = await call(wire, 0, "initialize", {"protocolVersion": 65535})
    result = answer["result"]
    assert result["protocolVersion"] == 1
    assert result["agentInfo"]["name"] == "subagents-reference-agent"
    assert result["authMethods"] == []
    assert result["agentCapabilities"] == {
        "loadSession": True,
        "promptCapabilities": {"image": True, "audio": True, "embeddedContext": True},
        "mcpCapabilities": {"http": True, "sse": True},
        "sessionCapabilities": {
            "list": {},
            "delete": {},
            "additionalDirectories": {},
            "resume": {},
            "close": {},
        },
        "auth": {"logout": {}},
    }


async def test_a_request_before_initialize_is_refused() -> None:
    """The endpoint's initialize gate holds in the real process (-32600)."""
    async with reference_agent() as (_, wire):
        answer = await call(wire, 5, "session/new", {"cwd": "/tmp", "mcpServers": []})
    assert answer["error"]["code"] == -32600


async def test_session_new_is_answered_before_the_sessions_first_update() -> None:
    """Ordering: the session/new response, then the available_commands_update listing the
    scenarios (sent from new_session, held by the endpoint until the answer is out)."""
    async with reference_agent() as (_, wire):
        await initialize(wire)
        await wire.write_json(request(1, "session/new", {"cwd": "/tmp", "mcpServers": []}))
        first = await wire.read()
        second = await wire.read()
    assert first["id"] == 1
    session_id = first["result"]["sessionId"]
    assert second["params"]["sessionId"] == session_id
    names = [c["name"] for c in second["params"]["update"]["availableCommands"]]
    assert names[:3] == ["echo", "stream", "think"]


# ------------------------------------------------------------------------------ scenarios


async def test_a_plain_prompt_is_echoed_then_the_turn_ends() -> None:
    """The default scenario: one agent_message_chunk with the prompt text, then end_turn."""
    async with reference_agent() as (_, wire):
        await initialize(wire)
        session_id = await open_session(wire)
        updates, answer = await run_prompt(wire, 2, session_id, "Hello, agent!")
    assert [chunk_text(u) for u in updates] == ["Hello, agent!"]
    assert all(u["params"]["sessionId"] == session_id for u in updates)
    assert answer == {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}


async def test_stream_n_sends_n_chunks_of_one_message() -> None:
    """`stream 4`: four chunks sharing one messageId."""
    async with reference_agent() as (_, wire):
        await initialize(wire)
        session_id = await open_session(wire)
        updates, answer = await run_prompt(wire, 2, session_id, "stream 4")
    assert [chunk_text(u) for u in updates] == ["1 ", "2 ", "3 ", "4 "]
    assert len({u["params"]["update"]["messageId"] for u in updates}) == 1
    assert answer["result"] == {"stopReason": "end_turn"}


async def test_think_sends_a_thought_then_a_message() -> None:
    """`think`: agent_thought_chunk, then agent_message_chunk."""
    async with reference_agent() as (_, wire):
        await initialize(wire)
        session_id = await open_session(wire)
        updates, _ = await run_prompt(wire, 2, session_id, "think hard")
    assert [update_kind(u) for u in updates] == ["agent_thought_chunk", "agent_message_chunk"]


async def test_plan_sends_the_complete_plan_on_every_update() -> None:
    """agent-plan.mdx: "The Agent MUST send a complete list of all plan entries in each
    update"; the entries progress to completed."""
    async with reference_agent() as (_, wire):
        await initialize(wire)
        session_id = await open_session(wire)
        updates, answer = await run_prompt(wire, 2, session_id, "plan")
    plans = [u["params"]["update"]["entries"] for u in updates if update_kind(u) == "plan"]
    assert len(plans) == 4
    assert all(len(entries) == 3 for entries in plans)
    assert [e["status"] for e in plans[0]] == ["in_progress", "pending", "pending"]
    assert [e["status"] for e in plans[-1]] == ["completed"] * 3
    assert update_kind(updates[-1]) == "agent_message_chunk"
    assert answer["result"] == {"stopReason": "end_turn"}


@pytest.mark.parametrize(
    ("option", "statuses"),
    [("allow", ["in_progress", "completed"]), ("reject", ["failed"])],
)
async def test_tool_asks_permission_and_follows_the_outcome(
    option: str, statuses: list[str]
) -> None:
    """tool-calls.mdx: tool_call pending, session/request_permission, then tool_call_update
    completed when allowed or failed when rejected; the turn ends end_turn either way."""
    async with reference_agent() as (_, wire):
        await initialize(wire)
        session_id = await open_session(wire)
        await wire.write_json(prompt(2, session_id, "tool"))
        started = await wire.read()
        asked = await wire.read()
        outcome: JsonValue = {"outcome": {"outcome": "selected", "optionId": option}}
        await wire.write_json(reply(asked["id"], outcome))
        updates, answer = await read_until_answer(wire, 2)
    tool = started["params"]["update"]
    assert tool["sessionUpdate"] == "tool_call"
    assert tool["status"] == "pending"
    assert asked["method"] == "session/request_permission"
    assert asked["params"]["toolCall"] == {"toolCallId": tool["toolCallId"]}
    assert [(o["optionId"], o["kind"]) for o in asked["params"]["options"]] == [
        ("allow", "allow_once"),
        ("reject", "reject_once"),
    ]
    tool_updates = [u["params"]["update"] for u in updates if update_kind(u) == "tool_call_update"]
    assert [u["status"] for u in tool_updates] == statuses
    assert {u["toolCallId"] for u in tool_updates} == {tool["toolCallId"]}
    assert answer["result"] == {"stopReason": "end_turn"}


async def test_a_cancelled_outcome_fails_the_tool_call_and_answers_cancelled() -> None:
    """prompt-turn.mdx §Cancellation, the canonical flow (research §10.4): session/cancel while
    the permission request is pending; the agent cancels its request, marks the tool call
    failed and answers cancelled; the client's "cancelled" outcome is accepted."""
    async with reference_agent() as (_, wire):
        await initialize(wire)
        session_id = await open_session(wire)
        await wire.write_json(prompt(2, session_id, "tool"))
        await wire.read()
        asked = await wire.read()
        await wire.write_json(cancel(session_id))
        await wire.write_json(reply(asked["id"], {"outcome": {"outcome": "cancelled"}}))
        updates, answer = await read_until_answer(wire, 2)
        after, _ = await run_prompt(wire, 3, session_id, "still alive")
    # Whether the agent's courtesy $/cancel_request for the permission request goes out
    # depends on which arrives first, the cancel or the outcome: both are right.
    others = [u for u in updates if u["method"] != "session/update"]
    assert others in ([], [notification("$/cancel_request", {"requestId": asked["id"]})])
    tool_updates = [u["params"]["update"] for u in updates if u["method"] == "session/update"]
    assert [u["status"] for u in tool_updates] == ["failed"]
    assert answer["result"] == {"stopReason": "cancelled"}
    assert [chunk_text(u) for u in after] == ["still alive"]


async def test_the_slow_turn_ticks_until_cancelled_then_answers_cancelled() -> None:
    """prompt-turn.mdx: after session/cancel the agent sends its last updates, then answers
    stopReason "cancelled" (never an error)."""
    async with reference_agent() as (_, wire):
        await initialize(wire)
        session_id = await open_session(wire)
        await wire.write_json(prompt(2, session_id, "slow"))
        assert chunk_text(await wire.read()) == "tick 0"
        assert chunk_text(await wire.read()) == "tick 1"
        await wire.write_json(cancel(session_id))
        updates, answer = await read_until_answer(wire, 2)
    texts = [chunk_text(u) for u in updates]
    assert texts[-1].startswith("cancelled after ")
    assert answer == {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "cancelled"}}


async def test_fs_writes_and_reads_the_file_through_the_client_when_offered(
    tmp_path: Path,
) -> None:
    """file-system.mdx: fs/write_text_file then fs/read_text_file, absolute paths in the
    session cwd, each reported by a tool call."""
    path = str(tmp_path / "reference-agent.txt")
    async with reference_agent() as (_, wire):
        await initialize(wire, {"fs": {"readTextFile": True, "writeTextFile": True}})
        session_id = await open_session(wire, cwd=str(tmp_path))
        await wire.write_json(prompt(2, session_id, "fs"))
        calls: list[Msg] = []
        updates: list[Msg] = []
        written = ""
        while len(calls) < 2:
            msg = await wire.read()
            if msg.get("method") == "fs/write_text_file":
                written = msg["params"]["content"]
                await wire.write_json(reply(msg["id"], {}))
                calls.append(msg)
            elif msg.get("method") == "fs/read_text_file":
                await wire.write_json(reply(msg["id"], {"content": written}))
                calls.append(msg)
            else:
                updates.append(msg)
        rest, answer = await read_until_answer(wire, 2)
    assert [c["method"] for c in calls] == ["fs/write_text_file", "fs/read_text_file"]
    assert calls[0]["params"]["path"] == path
    assert calls[1]["params"] == {"sessionId": session_id, "path": path}
    assert session_id in written
    assert chunk_text(rest[-1]) == f"Read {path}: {written!r}"
    kinds = [u["params"]["update"].get("kind") for u in updates + rest if "params" in u]
    assert "edit" in kinds
    assert "read" in kinds
    assert answer["result"] == {"stopReason": "end_turn"}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("fs", "The client does not offer file system access"),
        ("terminal", "The client does not offer terminals"),
    ],
)
async def test_fs_and_terminal_say_so_when_the_client_does_not_offer_them(
    text: str, said: str
) -> None:
    """file-system.mdx / terminals.mdx: without the capability the Agent MUST NOT call the
    methods; the turn just says so."""
    async with reference_agent() as (_, wire):
        await initialize(wire, {})
        session_id = await open_session(wire)
        updates, answer = await run_prompt(wire, 2, session_id, text)
    assert len(updates) == 1
    assert chunk_text(updates[0]).startswith(said)
    assert answer["result"] == {"stopReason": "end_turn"}


async def test_terminal_runs_echo_in_a_client_terminal_and_releases_it(tmp_path: Path) -> None:
    """terminals.mdx: terminal/create, wait_for_exit, output, then the MUST terminal/release;
    the tool call embeds the terminal."""
    async with reference_agent() as (_, wire):
        await initialize(wire, {"terminal": True})
        session_id = await open_session(wire, cwd=str(tmp_path))
        await wire.write_json(prompt(2, session_id, "terminal"))
        results: dict[str, JsonValue] = {
            "terminal/create": {"terminalId": "term-1"},
            "terminal/wait_for_exit": {"exitCode": 0},
            "terminal/output": {"output": "hello from the reference agent\n", "truncated": False},
            "terminal/release": {},
        }
        calls: list[Msg] = []
        updates: list[Msg] = []
        while len(calls) < len(results):
            msg = await wire.read()
            if msg.get("method", "").startswith("terminal/"):
                calls.append(msg)
                await wire.write_json(reply(msg["id"], results[msg["method"]]))
            else:
                updates.append(msg)
        rest, answer = await read_until_answer(wire, 2)
    assert [c["method"] for c in calls] == list(results)
    assert calls[0]["params"] == {
        "sessionId": session_id,
        "command": "echo",
        "args": ["hello from the reference agent"],
        "cwd": str(tmp_path),
    }
    assert all(c["params"]["terminalId"] == "term-1" for c in calls[1:])
    embedded = [u["params"]["update"].get("content") for u in updates]
    assert [{"type": "terminal", "terminalId": "term-1"}] in embedded
    assert chunk_text(rest[-1]).startswith("The terminal printed 'hello from the reference agent")
    assert answer["result"] == {"stopReason": "end_turn"}


async def test_stop_ends_the_turn_with_the_asked_stop_reason() -> None:
    """`stop refusal`: one message, then stopReason refusal."""
    async with reference_agent() as (_, wire):
        await initialize(wire)
        session_id = await open_session(wire)
        _, answer = await run_prompt(wire, 2, session_id, "stop refusal")
    assert answer["result"] == {"stopReason": "refusal"}


async def test_fail_answers_the_prompt_with_an_internal_error() -> None:
    """`fail`: a JSON-RPC error (-32603); the process goes on."""
    async with reference_agent() as (_, wire):
        await initialize(wire)
        session_id = await open_session(wire)
        _, answer = await run_prompt(wire, 2, session_id, "fail")
        updates, _ = await run_prompt(wire, 3, session_id, "still here")
    assert answer["error"]["code"] == -32603
    assert [chunk_text(u) for u in updates] == ["still here"]


# ------------------------------------------------------------------------------- sessions


async def test_sessions_are_listed_loaded_with_replay_resumed_closed_and_deleted() -> None:
    """session-list / load (replay before the answer) / resume (no replay) / close / delete
    (silent for unknown ids); an unknown session is -32002; a cursor is invalid (-32602)."""
    async with reference_agent() as (_, wire):
        await initialize(wire)
        session_id = await open_session(wire)
        await run_prompt(wire, 2, session_id, "hi there")
        listed = await call(wire, 3, "session/list", {})
        bad_cursor = await call(wire, 4, "session/list", {"cursor": "nope"})
        other_cwd = await call(wire, 5, "session/list", {"cwd": "/elsewhere"})
        load = {"sessionId": session_id, "cwd": "/tmp", "mcpServers": []}
        await wire.write_json(request(6, "session/load", load))
        replay, loaded = await read_until_answer(wire, 6)
        resumed = await call(wire, 7, "session/resume", {"sessionId": session_id, "cwd": "/tmp"})
        closed = await call(wire, 8, "session/close", {"sessionId": session_id})
        _, gone = await run_prompt(wire, 9, session_id, "hello?")
        deleted = await call(wire, 10, "session/delete", {"sessionId": "never-existed"})
    (info,) = listed["result"]["sessions"]
    assert info["sessionId"] == session_id
    assert info["cwd"] == "/tmp"
    assert info["title"] == "hi there"
    assert bad_cursor["error"]["code"] == -32602
    assert other_cwd["result"] == {"sessions": []}
    assert [(update_kind(u), u["params"]["update"]["content"]["text"]) for u in replay] == [
        ("user_message_chunk", "hi there"),
        ("agent_message_chunk", "hi there"),
    ]
    # Load and resume answer with the session's modes and config options, nothing else.
    for setup in (loaded, resumed):
        assert set(setup["result"]) == {"modes", "configOptions"}
        assert setup["result"]["modes"]["currentModeId"] == "code"
    assert closed["result"] == {}
    assert gone["error"]["code"] == -32002
    assert gone["error"]["data"] == {"sessionId": session_id}
    assert deleted["result"] == {}


async def test_session_new_with_a_relative_cwd_is_invalid_params() -> None:
    """overview.mdx: "All file paths in the protocol MUST be absolute"."""
    async with reference_agent() as (_, wire):
        await initialize(wire)
        answer = await call(wire, 1, "session/new", {"cwd": "relative", "mcpServers": []})
    assert answer["error"]["code"] == -32602


# ------------------------------------------------------------------- process behaviour


async def test_it_exits_with_status_0_on_stdin_eof() -> None:
    """transports.mdx shutdown: the client closes stdin; the agent exits, status 0."""
    async with reference_agent() as (child, wire):
        await initialize(wire)
        await open_session(wire)
        await child.stdin.aclose()
        with anyio.fail_after(READ_TIMEOUT), pytest.raises(anyio.EndOfStream):
            await child.stdout.receive()
        assert await wait_exit(child) == 0


async def test_stdin_eof_during_a_slow_turn_answers_it_and_exits_0() -> None:
    """Exits on EOF even mid-turn, answering the turn (cancelled) first."""
    async with reference_agent() as (child, wire):
        await initialize(wire)
        session_id = await open_session(wire)
        await wire.write_json(prompt(2, session_id, "slow"))
        assert chunk_text(await wire.read()) == "tick 0"
        await child.stdin.aclose()
        _, answer = await read_until_answer(wire, 2)
        assert answer["result"] == {"stopReason": "cancelled"}
        assert await wait_exit(child) == 0


async def test_crash_exits_abruptly_mid_turn_with_a_message_on_stderr() -> None:
    """`crash`: some updates, then the process dies (status 3) without answering the prompt;
    the reason is on stderr (for clients' crash handling tests)."""
    async with reference_agent() as (child, wire):
        await initialize(wire)
        session_id = await open_session(wire)
        await wire.write_json(prompt(2, session_id, "crash"))
        assert chunk_text(await wire.read()) == "About to crash."
        assert chunk_text(await wire.read()) == "Crashing now."
        with anyio.fail_after(READ_TIMEOUT), pytest.raises(anyio.EndOfStream):
            await wire.read()
        assert await wait_exit(child) == 3
        assert "crashing on purpose" in child.stderr_tail()


async def test_stderr_n_writes_n_bytes_to_stderr_then_answers() -> None:
    """`stderr N`: N bytes on stderr (none on stdout), then end_turn."""
    async with reference_agent() as (child, wire):
        await initialize(wire)
        session_id = await open_session(wire)
        updates, answer = await run_prompt(wire, 2, session_id, "stderr 200000")
        assert [chunk_text(u) for u in updates] == ["Wrote 200000 bytes to stderr."]
        assert answer["result"] == {"stopReason": "end_turn"}
        await child.stdin.aclose()
        assert await wait_exit(child) == 0
        assert child.stderr_bytes == 200000
        assert "reference agent stderr filler" in child.stderr_tail()


async def test_print_in_agent_code_goes_to_stderr_and_never_to_the_protocol() -> None:
    """transports.mdx: "The agent MUST NOT write anything to its stdout that is not a valid ACP
    message"; every stdout line stays JSON-RPC."""
    async with reference_agent() as (child, wire):
        await initialize(wire)
        session_id = await open_session(wire)
        updates, answer = await run_prompt(wire, 2, session_id, "print")
        echoed, _ = await run_prompt(wire, 3, session_id, "after print")
        await child.stdin.aclose()
        with anyio.fail_after(READ_TIMEOUT), pytest.raises(anyio.EndOfStream):
            await wire.read()
        assert await wait_exit(child) == 0
    assert chunk_text(updates[0]).startswith("Printed a line with print()")
    assert answer["result"] == {"stopReason": "end_turn"}
    assert [chunk_text(u) for u in echoed] == ["after print"]
    assert "reference agent: print() from agent code" in child.stderr_tail()
