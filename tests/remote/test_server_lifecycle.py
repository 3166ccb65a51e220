"""Connections end (DELETE, idle, overflow, shutdown) with their agents stopped, and the
server's bounds hold (asyncio and trio)."""

from __future__ import annotations

import os
import sys

import anyio
import pytest

from subagents.protocol.acp_remote import DRAINING_METHOD
from subagents.remote import (
    RemoteServer,
    RemoteServerConfigError,
    ServerLimits,
    agent_command,
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
    running_server,
)

pytestmark = pytest.mark.anyio


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_delete_ends_the_connection_and_reaps_its_agent(
    reference_server: RemoteServer,
) -> None:
    """RFD: "DELETE /acp ... Terminate connection and all associated sessions, return 202"
    and "(GET stream closes)"; issue 20: "a stdio agent process reaped"."""
    async with connected(reference_server) as (client, events):
        session_id = await client.new_session(events)
        [pid] = reference_server.agent_pids()
        async with client.stream(session_id) as session_events:
            response = await client.delete()
            assert response.status_code == 202
            rest = await session_events.rest()  # ends (after what was buffered)
            assert {m.get("method") for m in rest} <= {"session/update"}
        assert await events.rest() == []
        assert not alive(pid)  # reaped before the 202
        again = await client.delete()
        late = await client.post(prompt_request(3, session_id, "echo"), session_id)
    assert again.status_code == 404
    assert late.status_code == 404
    assert reference_server.connection_count == 0


async def test_an_idle_connection_is_closed_and_its_agent_reaped() -> None:
    """Issue 20: "idle time (a connection with no request and no open stream for N seconds
    is closed, agent reaped)"; a connection with an open stream is not idle."""
    limits = ServerLimits(idle_timeout=1.0)
    async with running_server(limits=limits) as server, http_client() as http:
        busy = RawClient(http, server.url)
        await busy.initialize()
        async with busy.stream() as events:
            [busy_pid] = server.agent_pids()
            idle = RawClient(http, server.url)
            await idle.initialize()
            [idle_pid] = set(server.agent_pids()) - {busy_pid}
            with anyio.fail_after(WAIT):
                while server.connection_count == 2:  # noqa: ASYNC110 - no event to wait on
                    await anyio.sleep(0.05)
            pids_left = server.agent_pids()
            response = await idle.post(new_session_request(2))
            assert (await busy.post(new_session_request(2))).status_code == 202
            _, answer = await events.until_answer(2)
    assert response.status_code == 404
    assert answer["result"]["sessionId"]
    assert pids_left == [busy_pid]
    assert not alive(idle_pid)


async def test_connections_beyond_the_limit_are_503() -> None:
    """Issue 20: "Bounded: connections (503 beyond)"; a place frees when one ends."""
    limits = ServerLimits(max_connections=1)
    async with running_server(limits=limits) as server, http_client() as http:
        first = RawClient(http, server.url)
        await first.initialize()
        refused = await http.post(server.url, json=initialize_request())
        await first.delete()
        second = await http.post(server.url, json=initialize_request())
    assert refused.status_code == 503
    assert second.status_code == 200


async def test_sessions_beyond_the_limit_are_refused() -> None:
    """Issue 20: "Bounded: ... sessions per connection": a session/new beyond the limit is
    answered a JSON-RPC error (on the connection stream), never reaching the agent."""
    async with (
        running_server(limits=ServerLimits(max_sessions=1)) as server,
        connected(server) as (client, events),
    ):
        await client.new_session(events, 2)
        await client.post(new_session_request(3))
        _, refused = await events.until_answer(3)
    assert refused["error"]["code"] == -32600
    assert "too many sessions" in refused["error"]["message"]


async def test_a_stream_that_never_opens_does_not_buffer_without_bound() -> None:
    """Issue 20: "Messages for a stream that is not open yet are buffered (bounded)": past
    the bound the connection ends (its agent stopped) instead of holding more."""
    limits = ServerLimits(max_buffered_messages=4)
    async with running_server(limits=limits) as server, connected(server) as (client, events):
        session_id = await client.new_session(events)
        await client.post(prompt_request(3, session_id, "stream 50"), session_id)
        assert await events.rest() == []  # the connection ended: its stream too
        late = await client.post(prompt_request(4, session_id, "echo"), session_id)
    assert late.status_code == 404


async def test_leaving_the_server_cancels_turns_and_delivers_their_answers() -> None:
    """Issue 20: "Clean drain on shutdown: stop accepting, cancel in-flight turns so they are
    answered (session/cancel to the agent, bounded wait), close streams, reap agent
    processes"."""
    before: list[Message] = []
    answer: Message = {}
    async with http_client() as http, running_server() as server:
        client = RawClient(http, server.url)
        await client.initialize()
        async with client.stream() as events:
            session_id = await client.new_session(events)
            async with client.stream(session_id) as session_events:
                await client.post(prompt_request(3, session_id, "slow 600"), session_id)
                await session_events.until_method("session/update")
                [pid] = server.agent_pids()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(server.drain)
                    before, answer = await session_events.until_answer(3)
                    assert await session_events.rest() == []
                # Issue 34: the drain's notification (why the connection ends), then the end.
                drained = [message.get("method") for message in await events.rest()]
                assert drained == [DRAINING_METHOD]
    assert answer["result"]["stopReason"] == "cancelled"
    assert any("cancelled after" in str(m) for m in before)
    assert not alive(pid)


async def test_an_agent_that_cannot_start_is_502() -> None:
    """A command that cannot be spawned fails the initialize POST (502, the reason), and
    leaves no connection behind."""
    backend = agent_command([os.path.join(os.sep, "no", "such", "agent")])
    async with running_server(backend) as server, http_client() as http:
        response = await http.post(server.url, json=initialize_request())
        count = server.connection_count
    assert response.status_code == 502
    assert "could not be started" in response.json()["error"]
    assert count == 0


async def test_beyond_loopback_a_token_is_required() -> None:
    """Issue 20: the token is "REQUIRED unless bound to a loopback address (refuse to start
    otherwise with a clear error)"."""
    backend = agent_command([sys.executable, "-m", "subagents.agents.reference"])
    with pytest.raises(RemoteServerConfigError, match="needs a bearer token"):
        async with serve_acp_http(backend, host="0.0.0.0"):
            pass
    with pytest.raises(RemoteServerConfigError, match="empty"):
        async with serve_acp_http(backend, token="  "):
            pass


async def test_a_stream_that_is_not_read_ends_the_connection() -> None:
    """Every wait is bounded: a client that keeps its stream open but stops reading it
    blocks the agent (backpressure) at most ``write_timeout``; then the connection ends and
    its agent is stopped, instead of being held forever."""
    limits = ServerLimits(max_buffered_messages=4, write_timeout=0.5)
    async with running_server(limits=limits) as server, connected(server) as (client, events):
        session_id = await client.new_session(events)
        headers = {**client.headers(session_id), "Accept": "text/event-stream"}
        async with client.http.stream("GET", client.url, headers=headers) as unread:
            assert unread.status_code == 200
            [pid] = server.agent_pids()
            await client.post(prompt_request(3, session_id, "stream 20000"), session_id)
            assert await events.rest() == []  # the connection ended: its stream too
            with anyio.fail_after(WAIT):  # the unread stream is ended too, then the agent
                while server.connection_count:  # noqa: ASYNC110 - no event to wait on
                    await anyio.sleep(0.05)
    assert not alive(pid)
