"""Principals and ownership on ``serve --listen`` (issue 34 point 3): a live session is its
connection's, a closed one its principal's, and a connection id is not a credential, over
Streamable HTTP and WebSocket (asyncio and trio).

The agent is the in-process runtime with one sessions directory shared by every connection's
runtime: the set-up in which one connection's agent could load another's session, were the
server not to refuse it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import anyio
import pytest
from httpx_ws import AsyncWebSocketSession, aconnect_ws

from subagents.agents.reference import ReferenceAgent
from subagents.harness.llm.offline import OfflineModel
from subagents.harness.runtime import AgentRuntime
from subagents.harness.session import SessionStore
from subagents.remote import (
    AgentBackend,
    Principals,
    RemoteServer,
    in_process_agent,
    runtime_agent,
    serve_acp_http,
)
from tests.remote._server_helpers import (
    WAIT,
    Message,
    RawClient,
    connected,
    http_client,
    initialize_request,
    new_session_request,
    prompt_request,
    request,
)

pytestmark = pytest.mark.anyio

ALICE: Final = "alice-Yk3v9Qm7Xr2Lw8Tn5Bz1Hc6Jd4Fg0Ps-Ua_Re7Wi2Ko"
BOB: Final = "bob-Qz8Wx1Ec4Rv7Tb2Yn5Um9Ik3Ol6Pa0Sd-Fg_Hj1Kl4Zx"
TURN: Final = "slow 40"
"""A's turn: 40 ticks of 50 ms, running while B tries to reach its session."""


@asynccontextmanager
async def shared_store_server(
    tmp_path: Path, token: str | Principals | None = None, *, ownership: bool = False
) -> AsyncGenerator[RemoteServer, None]:
    """The runtime per connection, every runtime on ``tmp_path/sessions``."""

    def make_runtime() -> AgentRuntime:
        return AgentRuntime(OfflineModel(tick=0.05), sessions=SessionStore(tmp_path / "sessions"))

    async with serve_acp_http(
        runtime_agent(make_runtime),
        port=0,
        token=token,
        ownership_dir=tmp_path / "sessions" / ".principals" if ownership else None,
    ) as server:
        yield server


def load_request(request_id: int, session_id: str, method: str = "session/load") -> Message:
    return request(request_id, method, {"sessionId": session_id, "cwd": "/tmp", "mcpServers": []})


def last_text(updates: list[Message]) -> str:
    text: str = updates[-1]["params"]["update"]["content"]["text"]
    return text


def cancel_notification(session_id: str) -> Message:
    return {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}


async def test_over_http_b_cannot_load_prompt_or_cancel_a_live_session(tmp_path: Path) -> None:
    """Issue 34: a live session belongs to the connection that made it: another connection's
    session/load and session/resume are refused with a JSON-RPC error saying so (nothing
    replayed), its prompt and cancel are refused (404); A's turn runs on untouched."""
    async with (
        shared_store_server(tmp_path) as server,
        connected(server) as (a, a_events),
        connected(server) as (b, b_events),
    ):
        session_id = await a.new_session(a_events)
        async with a.stream(session_id) as a_session:
            await a.post(prompt_request(3, session_id, TURN), session_id)
            await a_session.until_method("session/update")  # A's turn runs
            loaded = await b.post(load_request(5, session_id))
            before, load_answer = await b_events.until_answer(5)
            await b.post(load_request(6, session_id, "session/resume"))
            _, resume_answer = await b_events.until_answer(6)
            prompted = await b.post(prompt_request(7, session_id, "hello"), session_id)
            cancelled = await b.post(cancel_notification(session_id), session_id)
            a_updates, a_answer = await a_session.until_answer(3)
    assert loaded.status_code == 202
    assert before == []  # no replay of A's conversation
    assert "open on another connection" in load_answer["error"]["message"]
    assert "open on another connection" in resume_answer["error"]["message"]
    assert (prompted.status_code, cancelled.status_code) == (404, 404)
    assert a_answer["result"]["stopReason"] == "end_turn"
    assert last_text(a_updates) == "tick 40 "  # every tick came


@asynccontextmanager
async def websocket(
    server: RemoteServer, token: str | None = None
) -> AsyncGenerator[AsyncWebSocketSession, None]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        http_client(http2=False) as http,
        aconnect_ws(server.url, http, headers=headers, keepalive_ping_interval_seconds=None) as ws,
    ):
        await send(ws, initialize_request(1))
        await until_answer(ws, 1)
        yield ws


async def send(ws: AsyncWebSocketSession, message: Message) -> None:
    await ws.send_text(json.dumps(message))


async def until_answer(ws: AsyncWebSocketSession, request_id: int) -> tuple[list[Message], Message]:
    before: list[Message] = []
    while True:
        message: Message = json.loads(await ws.receive_text(timeout=WAIT))
        if message.get("id") == request_id and "method" not in message:
            return before, message
        before.append(message)


async def test_over_websocket_b_cannot_prompt_cancel_or_load_a_live_session(
    tmp_path: Path,
) -> None:
    """Issue 34: over WebSocket, a prompt naming another connection's session is refused
    (-32002, the agent never sees it), its cancel dropped, its load refused; A's turn runs
    on untouched."""
    async with shared_store_server(tmp_path) as server, websocket(server) as a:
        await send(a, new_session_request(2))
        _, created = await until_answer(a, 2)
        session_id: str = created["result"]["sessionId"]
        await send(a, prompt_request(3, session_id, TURN))
        async with websocket(server) as b:
            await send(b, prompt_request(4, session_id, "hello"))
            _, prompted = await until_answer(b, 4)
            await send(b, cancel_notification(session_id))
            await send(b, load_request(5, session_id))
            replayed, loaded = await until_answer(b, 5)
        a_updates, a_answer = await until_answer(a, 3)
    assert prompted["error"]["code"] == -32002
    assert replayed == []
    assert "open on another connection" in loaded["error"]["message"]
    assert a_answer["result"]["stopReason"] == "end_turn"
    assert last_text(a_updates) == "tick 40 "  # every tick came


async def test_a_connection_id_with_another_principals_token_is_refused(tmp_path: Path) -> None:
    """Issue 34: connection ids are not credentials: with bob's token, alice's connection
    id is an unknown connection (404) for a POST, a GET stream and a DELETE; alice's
    connection is untouched and works on."""
    principals = Principals({"alice": ALICE, "bob": BOB})
    async with (
        shared_store_server(tmp_path, principals) as server,
        connected(server, token=ALICE) as (alice, events),
        http_client() as http,
    ):
        session_id = await alice.new_session(events)
        intruder = RawClient(http, server.url, BOB)
        intruder.connection_id = alice.connection_id
        posted = await intruder.post(prompt_request(3, session_id, "hello"), session_id)
        streamed = await http.get(
            server.url, headers={**intruder.headers(), "Accept": "text/event-stream"}
        )
        deleted = await intruder.delete()
        async with alice.stream(session_id) as alice_session:
            await alice.post(prompt_request(4, session_id, "hello"), session_id)
            _, answer = await alice_session.until_answer(4)
    assert (posted.status_code, streamed.status_code, deleted.status_code) == (404, 404, 404)
    assert answer["result"]["stopReason"] == "end_turn"


async def close_session(client: RawClient, session_id: str) -> None:
    async with client.stream(session_id) as session_events:
        await client.post(request(9, "session/close", {"sessionId": session_id}), session_id)
        _, closed = await session_events.until_answer(9)
    assert "result" in closed, closed


async def test_a_closed_session_is_loaded_again_only_by_its_principal(tmp_path: Path) -> None:
    """Issue 34: a closed session can be loaded again only by its principal: bob's load is
    "Resource not found" (-32002); alice's replays it; after a restart too, the principals
    recorded under the sessions directory."""
    principals = Principals({"alice": ALICE, "bob": BOB})
    async with shared_store_server(tmp_path, principals, ownership=True) as server:
        async with connected(server, token=ALICE) as (alice, events):
            session_id = await alice.new_session(events)
            async with alice.stream(session_id) as alice_session:
                await alice.post(prompt_request(3, session_id, "hello"), session_id)
                await alice_session.until_answer(3)
            await close_session(alice, session_id)
        async with connected(server, token=BOB) as (bob, events):
            await bob.post(load_request(5, session_id))
            _, refused = await events.until_answer(5)
        async with connected(server, token=ALICE) as (alice, events):
            await alice.post(load_request(5, session_id))
            replayed, loaded = await events.until_answer(5)
    async with shared_store_server(tmp_path, principals, ownership=True) as server:
        async with connected(server, token=BOB) as (bob, events):
            await bob.post(load_request(5, session_id))
            _, refused_later = await events.until_answer(5)
        async with connected(server, token=ALICE) as (alice, events):
            await alice.post(load_request(5, session_id))
            _, loaded_later = await events.until_answer(5)
    assert refused["error"]["code"] == -32002
    assert refused_later["error"]["code"] == -32002
    assert "result" in loaded
    assert "result" in loaded_later
    assert [m["params"]["update"]["sessionUpdate"] for m in replayed][:1] == ["user_message_chunk"]


async def test_with_no_token_a_closed_session_loads_on_another_connection(
    tmp_path: Path,
) -> None:
    """Issue 34: without tokens there is one (anonymous) principal: a session closed on one
    connection loads on another (what cold resume needs)."""
    async with shared_store_server(tmp_path) as server:
        async with connected(server) as (a, events):
            session_id = await a.new_session(events)
            await close_session(a, session_id)
        async with connected(server) as (b, events):
            await b.post(load_request(5, session_id))
            _, loaded = await events.until_answer(5)
    assert "result" in loaded, loaded


async def test_one_token_is_the_principal_default(tmp_path: Path) -> None:
    """Issue 34: a single token (``token="..."``) still works, as the principal "default"."""
    async with (
        shared_store_server(tmp_path, ALICE) as server,
        connected(server, token=ALICE) as (client, events),
    ):
        session_id = await client.new_session(events)
        conn = next(iter(server._hub.connections.values()))  # pyright: ignore[reportPrivateUsage]
    assert session_id
    assert conn.principal == "default"


async def test_a_load_waits_for_nothing_when_the_session_is_the_connections_own(
    tmp_path: Path,
) -> None:
    """Issue 34: loading a session live on the same connection is not refused."""
    async with shared_store_server(tmp_path) as server, connected(server) as (a, events):
        session_id = await a.new_session(events)
        await a.post(load_request(5, session_id))
        with anyio.fail_after(WAIT):
            _, loaded = await events.until_answer(5)
    assert "result" in loaded, loaded


def shared_reference_agents() -> AgentBackend:
    """The reference agent in this process per connection, every one on one session table
    (an agent whose session store every connection shares)."""
    shared: dict[str, Any] = {}

    @asynccontextmanager
    async def make() -> AsyncGenerator[ReferenceAgent, None]:
        agent = ReferenceAgent()
        agent.sessions = shared
        yield agent

    return in_process_agent(make)


async def test_session_list_shows_a_principal_only_its_own_sessions() -> None:
    """Issue 34: the agent's session/list answer names every session of its store; the
    server leaves out those of another principal (ids, titles and cwd are theirs)."""
    principals = Principals({"alice": ALICE, "bob": BOB})
    async with (
        serve_acp_http(shared_reference_agents(), port=0, token=principals) as server,
        connected(server, token=ALICE) as (alice, alice_events),
        connected(server, token=BOB) as (bob, bob_events),
    ):
        alices = await alice.new_session(alice_events)
        bobs = await bob.new_session(bob_events)
        listed: dict[str, list[str]] = {}
        for name, client, events in (("alice", alice, alice_events), ("bob", bob, bob_events)):
            await client.post(request(8, "session/list", {}))
            _, answer = await events.until_answer(8)
            listed[name] = [info["sessionId"] for info in answer["result"]["sessions"]]
    assert listed == {"alice": [alices], "bob": [bobs]}
