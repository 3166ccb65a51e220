"""Client-named MCP servers on ``serve --listen`` (issue 34 point 2): a remote client's stdio
command never runs and its URL is never called unless the operator allowed them; allowed ones
work (the in-process runtime, which connects a session's MCP servers; asyncio and trio)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from httpx_ws import aconnect_ws

from subagents.conformance.mcp_http import serve_mcp_http
from subagents.harness.llm.offline import OfflineModel
from subagents.harness.runtime import AgentRuntime
from subagents.protocol.jsonrpc import JsonValue
from subagents.remote import ClientMcpPolicy, RemoteServer, runtime_agent, serve_acp_http
from tests.remote._server_helpers import (
    WAIT,
    Message,
    connected,
    http_client,
    initialize_request,
    request,
)

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def runtime_server(policy: ClientMcpPolicy | None = None) -> AsyncGenerator[RemoteServer]:
    async with serve_acp_http(
        runtime_agent(lambda: AgentRuntime(OfflineModel(tick=0.01))), port=0, client_mcp=policy
    ) as server:
        yield server


def probe(marker: Path) -> dict[str, JsonValue]:
    """A stdio MCP server entry whose process writes ``marker`` when it runs."""
    return {
        "name": "probe",
        "command": sys.executable,
        "args": ["-m", "subagents.conformance.mcp_probe", str(marker)],
        "env": [],
    }


def http_entry(url: str) -> dict[str, JsonValue]:
    return {"type": "http", "name": "web", "url": url, "headers": []}


def new_session(request_id: int, servers: list[dict[str, JsonValue]]) -> Message:
    return request(request_id, "session/new", {"cwd": "/tmp", "mcpServers": list(servers)})


async def new_session_over_http(
    server: RemoteServer, servers: list[dict[str, JsonValue]]
) -> Message:
    async with connected(server) as (client, events):
        await client.post(new_session(2, servers))
        _, answer = await events.until_answer(2)
    return answer


async def new_session_over_websocket(
    server: RemoteServer, servers: list[dict[str, JsonValue]]
) -> Message:
    async with (
        http_client(http2=False) as http,
        aconnect_ws(server.url, http, keepalive_ping_interval_seconds=None) as ws,
    ):
        for message in (initialize_request(1), new_session(2, servers)):
            await ws.send_text(json.dumps(message))
            while True:
                answer: Message = json.loads(await ws.receive_text(timeout=WAIT))
                if answer.get("id") == message["id"]:
                    break
    return answer


async def test_a_clients_stdio_mcp_command_never_runs_by_default(tmp_path: Path) -> None:
    """Issue 34: "a remote client's stdio MCP command never runs by default": session/new
    naming one is refused (-32602, naming the option that allows it) over HTTP and
    WebSocket, and the command's marker file is never written."""
    marker = tmp_path / "marker"
    async with runtime_server() as server:
        over_http = await new_session_over_http(server, [probe(marker)])
        over_websocket = await new_session_over_websocket(server, [probe(marker)])
    for answer in (over_http, over_websocket):
        assert answer["error"]["code"] == -32602
        assert "--allow-client-mcp-command" in answer["error"]["message"]
    assert not marker.exists()
    assert not marker.with_name("marker.pid").exists()


async def test_a_clients_http_mcp_url_is_never_called_by_default() -> None:
    """Issue 34: an http (or sse) MCP entry pointing at a local listener is refused and the
    listener never gets a request."""
    async with serve_mcp_http() as web, runtime_server() as server:
        answer = await new_session_over_http(server, [http_entry(web.http_url)])
        sse = {"type": "sse", "name": "events", "url": web.sse_url, "headers": []}
        sse_answer = await new_session_over_http(server, [sse])
    assert answer["error"]["code"] == -32602
    assert "--allow-client-mcp-url" in answer["error"]["message"]
    assert sse_answer["error"]["code"] == -32602
    assert web.methods == []


async def test_allowed_mcp_servers_are_connected(tmp_path: Path) -> None:
    """Issue 34: the operator's allow-list: a stdio entry naming an allowed program runs and
    an http entry below an allowed URL is called; an entry beside them is still refused."""
    marker = tmp_path / "marker"
    async with serve_mcp_http() as web:
        base = web.http_url.removesuffix("/mcp")
        policy = ClientMcpPolicy.allowing([sys.executable], [f"{base}/"])
        async with runtime_server(policy) as server:
            allowed = await new_session_over_http(server, [probe(marker), http_entry(web.http_url)])
            other = http_entry(f"http://localhost:{web.port}/mcp")  # another host name
            refused = await new_session_over_websocket(server, [other])
    assert "result" in allowed, allowed
    assert marker.read_text() == "initialize\n"
    assert "initialize" in web.methods
    assert refused["error"]["code"] == -32602


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://mcp.example.com/tools", True),
        ("https://mcp.example.com/tools/search", True),
        ("https://MCP.example.com:443/tools", True),
        ("https://mcp.example.com/toolsmith", False),
        ("https://mcp.example.com/tools/../admin", False),
        ("https://mcp.example.com/tools/%2e%2e/admin", False),
        ("https://mcp.example.com.evil.net/tools", False),
        ("https://mcp.example.com@evil.net/tools", False),
        ("http://mcp.example.com/tools", False),
        ("https://mcp.example.com:8443/tools", False),
        ("file:///etc/passwd", False),
    ],
)
def test_an_allowed_url_matches_by_origin_and_path_segments(url: str, allowed: bool) -> None:
    """Issue 34: an allowed MCP URL admits its own origin (scheme, host, port) and the paths
    at or below its path, segment by segment; nothing that merely starts with it."""
    policy = ClientMcpPolicy.allowing(urls=["https://mcp.example.com/tools"])
    params: JsonValue = {"cwd": "/", "mcpServers": [http_entry(url)]}
    assert (policy.refusal("session/new", params) is None) == allowed


def test_an_allowed_url_with_port_star_admits_any_port() -> None:
    """Issue 34: ``http://127.0.0.1:*`` admits that host on any port (a local MCP server on
    an ephemeral port), not another host or scheme."""
    policy = ClientMcpPolicy.allowing(urls=["http://127.0.0.1:*"])
    for url, allowed in (
        ("http://127.0.0.1:41234/mcp", True),
        ("http://127.0.0.1/sse", True),
        ("http://localhost:41234/mcp", False),
        ("https://127.0.0.1:41234/mcp", False),
    ):
        params: JsonValue = {"mcpServers": [http_entry(url)]}
        assert (policy.refusal("session/new", params) is None) == allowed, url


def test_a_stdio_command_is_allowed_only_by_its_exact_name() -> None:
    """Issue 34: commands are allowed exactly as the client names them."""
    policy = ClientMcpPolicy.allowing(commands=["/usr/bin/mcp-fs"])
    entry: dict[str, JsonValue] = {"name": "fs", "command": "/usr/bin/mcp-fs", "args": []}
    assert policy.refusal("session/load", {"mcpServers": [entry]}) is None
    entry["command"] = "mcp-fs"
    assert policy.refusal("session/resume", {"mcpServers": [entry]}) is not None
    assert policy.refusal("session/new", {"mcpServers": [{"type": "ws", "name": "x"}]})


def test_the_allow_list_options_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 34: --allow-client-mcp-url takes http(s) URLs with a host; both options go with
    --listen only (exit 2, one line saying why)."""
    from subagents.cli import main

    for argv in (
        ["serve", "--listen", "127.0.0.1:0", "--allow-client-mcp-url", "ftp://files.example"],
        ["serve", "--allow-client-mcp-command", "npx"],
        ["serve", "--a2a", "127.0.0.1:0", "--allow-client-mcp-url", "https://mcp.example"],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "client-mcp" in err or "client MCP" in err
