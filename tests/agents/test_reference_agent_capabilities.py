"""The reference agent's optional capabilities: modes, config options, image and audio prompts,
MCP over stdio, and authentication (behind ``SUBAGENTS_REFERENCE_REQUIRE_AUTH``).

Most tests play the client with raw JSON lines (exact wire shapes); the auth test drives the
agent through the project's typed client, :func:`subagents.transports.connect_agent`.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from subagents.conformance.mcp_http import serve_mcp_http
from subagents.protocol import JsonValue
from subagents.rpc import RPCError
from subagents.transports import AgentProcess, connect_agent, open_agent_process
from tests.agents.acp_wire import Msg, call, chunk_text, initialize, prompt, read_until_answer
from tests.rpc.wire import Wire

pytestmark = pytest.mark.anyio

REFERENCE_AGENT = (sys.executable, "-m", "subagents.agents.reference")
READ_TIMEOUT = 10.0
SESSION_DIR = "SUBAGENTS_REFERENCE_SESSION_DIR"
REQUIRE_AUTH = "SUBAGENTS_REFERENCE_REQUIRE_AUTH"

EXPECTED_MODES: Msg = {
    "currentModeId": "code",
    "availableModes": [
        {
            "id": "ask",
            "name": "Ask",
            "description": "Answer without changing anything (the scenarios run the same)",
        },
        {
            "id": "code",
            "name": "Code",
            "description": "Write and run code (the scenarios run the same)",
        },
    ],
}


def verbosity(current: str) -> list[Msg]:
    """The complete configOptions list, with ``verbosity`` at ``current``."""
    return [
        {
            "type": "select",
            "id": "verbosity",
            "name": "Verbosity",
            "description": "How much the agent says (stored and reported only)",
            "currentValue": current,
            "options": [{"value": "brief", "name": "Brief"}, {"value": "full", "name": "Full"}],
        }
    ]


class Client(Wire):
    async def read(self, timeout: float = READ_TIMEOUT) -> Msg:
        return await super().read(timeout)


@asynccontextmanager
async def reference_agent(
    env: Mapping[str, str] | None = None,
) -> AsyncGenerator[tuple[AgentProcess, Client], None]:
    async with open_agent_process(REFERENCE_AGENT, env=env, name="reference") as child:
        yield child, Client(child.stdout, child.stdin)


async def new_session(wire: Wire, id_: int, mcp_servers: JsonValue = None) -> tuple[Msg, Msg]:
    """`session/new` in /tmp: its result and the available-commands update after it."""
    params: Msg = {"cwd": "/tmp", "mcpServers": mcp_servers or []}
    answer = await call(wire, id_, "session/new", params)
    assert "result" in answer, answer
    commands = await wire.read()
    assert commands["params"]["update"]["sessionUpdate"] == "available_commands_update"
    return answer["result"], commands


async def request_with_updates(
    wire: Wire, id_: int, method: str, params: JsonValue
) -> tuple[list[Msg], Msg]:
    await wire.write_json({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
    return await read_until_answer(wire, id_)


async def say(wire: Wire, id_: int, session_id: str, text: str) -> str:
    """Prompt `text`; the one message the agent answers with (the turn ends end_turn)."""
    await wire.write_json(prompt(id_, session_id, text))
    updates, answer = await read_until_answer(wire, id_)
    assert answer["result"] == {"stopReason": "end_turn"}, answer
    (message,) = updates
    return chunk_text(message)


# ------------------------------------------------------------------------------------ modes


async def test_set_mode_switches_the_mode_sends_current_mode_update_and_is_saved(
    tmp_path: Path,
) -> None:
    """session-modes.mdx: session/new advertises the modes (current one among them);
    session/set_mode switches (a current_mode_update, then {}), an unknown mode id is -32602,
    and the mode is saved with the session: a new process loads and resumes it in that mode."""
    env = {SESSION_DIR: str(tmp_path)}
    async with reference_agent(env) as (_, wire):
        await initialize(wire)
        result, _ = await new_session(wire, 1)
        session_id = result["sessionId"]
        updates, switched = await request_with_updates(
            wire, 2, "session/set_mode", {"sessionId": session_id, "modeId": "ask"}
        )
        unknown = await call(wire, 3, "session/set_mode", {"sessionId": session_id, "modeId": "x"})
    assert result["modes"] == EXPECTED_MODES
    assert [u["params"] for u in updates] == [
        {
            "sessionId": session_id,
            "update": {"sessionUpdate": "current_mode_update", "currentModeId": "ask"},
        }
    ]
    assert switched["result"] == {}
    assert unknown["error"]["code"] == -32602

    setup: JsonValue = {"sessionId": session_id, "cwd": "/tmp", "mcpServers": []}
    async with reference_agent(env) as (_, wire):
        await initialize(wire)
        _, loaded = await request_with_updates(wire, 1, "session/load", setup)
        resumed = await call(wire, 2, "session/resume", setup)
    for answer in (loaded, resumed):
        assert answer["result"]["modes"] == {**EXPECTED_MODES, "currentModeId": "ask"}


# ----------------------------------------------------------------------------- config options


async def test_set_config_option_answers_the_complete_list_and_rejects_bad_ids_and_values(
    tmp_path: Path,
) -> None:
    """session-config-options.mdx: session/new advertises one select option with a default;
    set_config_option sends a config_option_update and answers with the COMPLETE list; an
    unknown configId, a value that is not one of the option's, or a boolean value is -32602;
    the value is saved with the session (a new process loads it)."""
    env = {SESSION_DIR: str(tmp_path)}
    async with reference_agent(env) as (_, wire):
        await initialize(wire)
        result, _ = await new_session(wire, 1)
        session_id = result["sessionId"]
        base: Msg = {"sessionId": session_id, "configId": "verbosity"}
        updates, answer = await request_with_updates(
            wire, 2, "session/set_config_option", {**base, "value": "full"}
        )
        bad_value = await call(wire, 3, "session/set_config_option", {**base, "value": "loud"})
        bad_id = await call(
            wire,
            4,
            "session/set_config_option",
            {"sessionId": session_id, "configId": "colour", "value": "full"},
        )
        boolean = await call(
            wire, 5, "session/set_config_option", {**base, "type": "boolean", "value": True}
        )
    assert result["configOptions"] == verbosity("brief")
    assert answer["result"] == {"configOptions": verbosity("full")}
    assert [u["params"] for u in updates] == [
        {
            "sessionId": session_id,
            "update": {
                "sessionUpdate": "config_option_update",
                "configOptions": verbosity("full"),
            },
        }
    ]
    for refused in (bad_value, bad_id, boolean):
        assert refused["error"]["code"] == -32602, refused

    setup: JsonValue = {"sessionId": session_id, "cwd": "/tmp", "mcpServers": []}
    async with reference_agent(env) as (_, wire):
        await initialize(wire)
        _, loaded = await request_with_updates(wire, 1, "session/load", setup)
    assert loaded["result"]["configOptions"] == verbosity("full")


# -------------------------------------------------------------------------- prompt content


async def test_image_and_audio_blocks_are_described_in_the_echo_not_decoded() -> None:
    """initialization.mdx prompt capabilities: image and audio are advertised, so such blocks
    are accepted; the echo describes them by MIME type (the data is not even base64)."""
    async with reference_agent() as (_, wire):
        result = await initialize(wire)
        session, _ = await new_session(wire, 1)
        blocks: JsonValue = [
            {"type": "text", "text": "look: "},
            {"type": "image", "mimeType": "image/png", "data": "not base64!"},
            {"type": "audio", "mimeType": "audio/wav", "data": "not base64 either"},
        ]
        params: JsonValue = {"sessionId": session["sessionId"], "prompt": blocks}
        updates, answer = await request_with_updates(wire, 2, "session/prompt", params)
    assert result["agentCapabilities"]["promptCapabilities"] == {
        "image": True,
        "audio": True,
        "embeddedContext": True,
    }
    assert [chunk_text(u) for u in updates] == ["look: [image image/png][audio audio/wav]"]
    assert answer["result"] == {"stopReason": "end_turn"}


# ------------------------------------------------------------------------------------- MCP


def probe_server(name: str, marker: Path) -> Msg:
    """A stdio MCP server entry running the conformance probe."""
    return {
        "name": name,
        "command": sys.executable,
        "args": ["-m", "subagents.conformance.mcp_probe", str(marker)],
        "env": [{"name": "MCP_PROBE_TEST", "value": "1"}],
    }


async def test_session_new_connects_to_a_stdio_mcp_server_and_mcp_lists_its_tools(
    tmp_path: Path,
) -> None:
    """session-setup.mdx: "All Agents MUST support" stdio MCP servers. session/new starts the
    probe and sends it an MCP initialize (the probe's marker says so), the `mcp` prompt names
    the server and its tool probe_echo; session/load connects again."""
    marker = tmp_path / "marker"
    async with reference_agent() as (_, wire):
        result = await initialize(wire)
        session, _ = await new_session(wire, 1, [probe_server("probe", marker)])
        after_new = marker.read_text()
        said = await say(wire, 2, session["sessionId"], "mcp")
        load: JsonValue = {
            "sessionId": session["sessionId"],
            "cwd": "/tmp",
            "mcpServers": [probe_server("again", marker)],
        }
        _, loaded = await request_with_updates(wire, 3, "session/load", load)
        said_after_load = await say(wire, 4, session["sessionId"], "mcp")
    assert result["agentCapabilities"]["mcpCapabilities"] == {"http": True, "sse": True}
    assert after_new == "initialize\n"
    assert said == "MCP servers connected: probe (tools: probe_echo)."
    assert "result" in loaded
    assert marker.read_text() == "initialize\ninitialize\n"
    assert said_after_load == "MCP servers connected: again (tools: probe_echo)."


async def test_mcp_servers_that_fail_to_start_or_answer_do_not_fail_session_new(
    tmp_path: Path,
) -> None:
    """A missing command, a server that exits at once and one that never answers (bounded
    wait): session/new still succeeds, the working server is connected, the reasons go to
    stderr and the `mcp` prompt reports the failures."""
    marker = tmp_path / "marker"
    servers: JsonValue = [
        {"name": "missing", "command": str(tmp_path / "no-such-server"), "args": [], "env": []},
        {"name": "quitter", "command": sys.executable, "args": ["-c", "pass"], "env": []},
        {
            "name": "silent",
            "command": sys.executable,
            "args": ["-c", "import sys; sys.stdin.read()"],
            "env": [],
        },
        probe_server("probe", marker),
    ]
    async with reference_agent() as (child, wire):
        await initialize(wire)
        with anyio.fail_after(20):
            session, _ = await new_session(wire, 1, servers)
        said = await say(wire, 2, session["sessionId"], "mcp")
        stderr = child.stderr_tail()
    assert said.startswith("MCP servers connected: probe (tools: probe_echo). ")
    assert "MCP servers that failed: missing (" in said
    assert "quitter (" in said
    assert "silent (no answer to initialize within 5 s" in said
    assert marker.read_text() == "initialize\n"
    for name in ("missing", "quitter", "silent"):
        assert f"MCP server {name!r} skipped:" in stderr


def _unused_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_http_and_sse_mcp_servers_are_connected_and_listed(tmp_path: Path) -> None:
    """session-setup.mdx, McpServerHttp / McpServerSse (advertised: mcpCapabilities.http and
    .sse): session/new speaks streamable HTTP to an http entry and the SSE transport to an
    sse entry (the headers go along), lists their tools, and the `mcp` prompt names both; an
    entry whose URL nobody serves is a reported failure, not a failed session/new."""
    async with serve_mcp_http() as server, reference_agent() as (child, wire):
        await initialize(wire)
        closed = f"http://127.0.0.1:{_unused_port()}/mcp"
        servers: JsonValue = [
            {"type": "http", "name": "web", "url": server.http_url, "headers": []},
            {
                "type": "sse",
                "name": "stream",
                "url": server.sse_url,
                "headers": [{"name": "Authorization", "value": "Bearer x"}],
            },
            {"type": "http", "name": "nobody", "url": closed, "headers": []},
        ]
        with anyio.fail_after(20):
            session, _ = await new_session(wire, 1, servers)
        said = await say(wire, 2, session["sessionId"], "mcp")
        stderr = child.stderr_tail()
    assert said.startswith("MCP servers connected: web (tools: echo); stream (tools: echo). ")
    assert "MCP servers that failed: nobody (" in said
    assert "MCP server 'nobody' skipped:" in stderr
    # Both transports carried a whole handshake: initialize, initialized, tools/list.
    assert server.methods.count("initialize") == 2
    assert server.methods.count("tools/list") == 2


# ------------------------------------------------------------------------------------ auth


async def test_with_require_auth_session_new_is_auth_required_until_authenticate() -> None:
    """authentication.mdx, with SUBAGENTS_REFERENCE_REQUIRE_AUTH: the method is advertised
    (agent kind); session/new is -32000 before authenticate, an unknown method id is -32602,
    and after authenticate with the advertised id session/new works (typed client)."""
    command = list(REFERENCE_AGENT)
    async with connect_agent(command, env={REQUIRE_AUTH: "reference-token"}) as conn:
        methods = [m.model_dump(by_alias=True, exclude_none=True) for m in conn.auth_methods]
        with pytest.raises(RPCError) as refused:
            await conn.new_session("/tmp")
        with pytest.raises(RPCError) as unknown:
            await conn.peer.request("authenticate", {"methodId": "other"})
        await conn.authenticate("reference-token")
        session = await conn.new_session("/tmp")
        result = await session.run("hello")
    assert methods == [
        {
            "id": "reference-token",
            "name": "Reference token",
            "description": "Test authentication: authenticate with this method id, nothing "
            "else is needed",
        }
    ]
    assert refused.value.code == -32000
    assert "authenticate" in refused.value.message
    assert "reference-token" in refused.value.message
    assert unknown.value.code == -32602
    assert session.modes is not None
    assert session.modes.current_mode_id == "code"
    assert result.stop_reason == "end_turn"


async def test_without_require_auth_no_auth_method_is_offered_and_authenticate_is_refused() -> None:
    """Without the variable: authMethods is empty and sessions need no authenticate; any
    authenticate is -32602 (no such method)."""
    async with reference_agent() as (_, wire):
        result = await initialize(wire)
        refused = await call(wire, 1, "authenticate", {"methodId": "reference-token"})
        await new_session(wire, 2)
    assert result["authMethods"] == []
    assert refused["error"]["code"] == -32602
