"""The WebSocket upgrade of ``GET /acp``: one JSON-RPC message per text frame, the connection
id in the 101, the agent stopped when the socket closes (asyncio and trio, httpx-ws)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from httpx_ws import AsyncWebSocketSession, WebSocketUpgradeError, aconnect_ws

from subagents.remote import RemoteServer, ServerLimits
from tests.remote._server_helpers import (
    TOKEN,
    WAIT,
    Message,
    http_client,
    initialize_request,
    new_session_request,
    prompt_request,
    running_server,
)

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def websocket(
    server: RemoteServer, headers: dict[str, str] | None = None
) -> AsyncGenerator[AsyncWebSocketSession, None]:
    async with (
        http_client(http2=False) as http,
        aconnect_ws(
            server.url, http, headers=headers or {}, keepalive_ping_interval_seconds=None
        ) as ws,
    ):
        yield ws


async def receive(ws: AsyncWebSocketSession) -> Message:
    message: Message = json.loads(await ws.receive_text(timeout=WAIT))
    return message


async def until_answer(ws: AsyncWebSocketSession, request_id: int) -> tuple[list[Message], Message]:
    before: list[Message] = []
    while True:
        message = await receive(ws)
        if message.get("id") == request_id and "method" not in message:
            return before, message
        before.append(message)


async def start_session(ws: AsyncWebSocketSession) -> str:
    await ws.send_text(json.dumps(initialize_request(1)))
    _, answer = await until_answer(ws, 1)
    assert answer["result"]["protocolVersion"] == 1
    await ws.send_text(json.dumps(new_session_request(2)))
    _, created = await until_answer(ws, 2)
    session_id: str = created["result"]["sessionId"]
    return session_id


def texts(messages: list[Message]) -> list[str]:
    return [
        m["params"]["update"]["content"]["text"]
        for m in messages
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    ]


async def wait_for_no_connection(server: RemoteServer) -> None:
    with anyio.fail_after(WAIT):
        while server.connection_count:  # noqa: ASYNC110 - the server has no event for it
            await anyio.sleep(0.01)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_websocket_turn(reference_server: RemoteServer) -> None:
    """RFD: "A new connection is created on upgrade. The Acp-Connection-Id is returned in the
    upgrade response headers. The client must still send initialize as the first JSON-RPC
    message"; "All messages are WebSocket text frames containing JSON-RPC"."""
    async with websocket(reference_server) as ws:
        assert ws.response is not None
        assert ws.response.status_code == 101
        assert ws.response.headers["acp-connection-id"]
        session_id = await start_session(ws)
        await ws.send_text(json.dumps(prompt_request(3, session_id, "stream 3")))
        before, answer = await until_answer(ws, 3)
    assert texts(before) == ["1 ", "2 ", "3 "]
    assert answer["result"]["stopReason"] == "end_turn"


async def test_binary_frames_are_ignored_and_bad_text_is_answered(
    reference_server: RemoteServer,
) -> None:
    """RFD: "Binary frames are ignored"; a text frame that is not JSON gets a JSON-RPC parse
    error (id null), a batch an invalid-request error, and the connection goes on."""
    async with websocket(reference_server) as ws:
        await ws.send_bytes(json.dumps(initialize_request(9)).encode())
        await ws.send_text("{nope")
        parse_error = await receive(ws)
        await ws.send_text(json.dumps([initialize_request(1)]))
        batch_error = await receive(ws)
        session_id = await start_session(ws)  # initialize 1 is the first answered
    assert parse_error["id"] is None
    assert parse_error["error"]["code"] == -32700
    assert batch_error["error"]["code"] == -32600
    assert session_id


async def test_a_permission_round_trip_and_a_cancellation_over_websocket(
    reference_server: RemoteServer,
) -> None:
    """The permission flow and the cancel flow of the RFD, over one WebSocket."""
    async with websocket(reference_server) as ws:
        session_id = await start_session(ws)
        await ws.send_text(json.dumps(prompt_request(3, session_id, "tool")))
        while (ask := await receive(ws)).get("method") != "session/request_permission":
            pass
        reply: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": ask["id"],
            "result": {"outcome": {"outcome": "selected", "optionId": "allow"}},
        }
        await ws.send_text(json.dumps(reply))
        _, allowed = await until_answer(ws, 3)
        await ws.send_text(json.dumps(prompt_request(4, session_id, "slow 600")))
        while (await receive(ws)).get("method") != "session/update":
            pass
        cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}
        await ws.send_text(json.dumps(cancel))
        _, cancelled = await until_answer(ws, 4)
    assert allowed["result"]["stopReason"] == "end_turn"
    assert cancelled["result"]["stopReason"] == "cancelled"


async def test_closing_the_socket_stops_the_agent(reference_server: RemoteServer) -> None:
    """RFD: "On disconnect, the server cleans up the connection and any associated sessions":
    the agent process is reaped."""
    async with websocket(reference_server) as ws:
        await start_session(ws)
        [pid] = reference_server.agent_pids()
        assert alive(pid)
    await wait_for_no_connection(reference_server)
    assert not alive(pid)


async def test_a_websocket_needs_the_token_too() -> None:
    """Issue 20: the bearer token guards the upgrade as well (401 with WWW-Authenticate)."""
    async with running_server(token=TOKEN) as server:
        with pytest.raises(WebSocketUpgradeError) as refused:
            async with websocket(server):
                pass
        async with websocket(server, {"Authorization": f"Bearer {TOKEN}"}) as ws:
            assert await start_session(ws)
    assert refused.value.response.status_code == 401
    assert refused.value.response.headers["www-authenticate"].startswith("Bearer")


async def test_upgrades_beyond_the_connection_limit_are_503() -> None:
    """Issue 20: "Bounded: connections (503 beyond)", for WebSockets too."""
    limits = ServerLimits(max_connections=1)
    async with running_server(limits=limits) as server, websocket(server) as ws:
        await start_session(ws)
        with pytest.raises(WebSocketUpgradeError) as refused:
            async with websocket(server):
                pass
    assert refused.value.response.status_code == 503


async def test_the_in_process_runtime_serves_a_turn_over_websocket() -> None:
    """Issue 20 backend (a), over the WebSocket profile: the runtime (offline model) served
    in process, one runtime per connection."""
    from subagents.harness.llm.offline import OfflineModel
    from subagents.harness.runtime import AgentRuntime
    from subagents.remote import runtime_agent

    backend = runtime_agent(lambda: AgentRuntime(OfflineModel(tick=0.001)))
    async with running_server(backend) as server, websocket(server) as ws:
        session_id = await start_session(ws)
        await ws.send_text(json.dumps(prompt_request(3, session_id, "slow 3")))
        before, answer = await until_answer(ws, 3)
    assert answer["result"]["stopReason"] == "end_turn"
    assert "".join(texts(before)).strip()


async def test_an_agent_that_exits_answers_what_was_in_flight_before_the_close(
    reference_server: RemoteServer,
) -> None:
    """As over Streamable HTTP: when the agent process dies mid-turn, the prompt in flight is
    answered on the socket with a JSON-RPC error naming the agent's end, then the socket
    closes (a turn failure for the client, not a lost connection)."""
    from httpx_ws import WebSocketDisconnect

    async with websocket(reference_server) as ws:
        session_id = await start_session(ws)
        await ws.send_text(json.dumps(prompt_request(3, session_id, "crash")))
        _, answer = await until_answer(ws, 3)
        with pytest.raises(WebSocketDisconnect):
            await receive(ws)
    assert answer["error"]["code"] == -32603
    assert "the agent stopped" in answer["error"]["message"]
    await wait_for_no_connection(reference_server)
