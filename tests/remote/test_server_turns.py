"""Prompt turns over Streamable HTTP: the reference agent (a process per connection) and the
in-process runtime, with permissions, cancellation and the routing of every message to the
stream the RFD names (asyncio and trio)."""

from __future__ import annotations

import pytest

from subagents.harness.llm.offline import OfflineModel
from subagents.harness.runtime import AgentRuntime
from subagents.remote import RemoteServer, runtime_agent
from tests.remote._server_helpers import (
    Message,
    connected,
    new_session_request,
    prompt_request,
    running_server,
)

pytestmark = pytest.mark.anyio


def texts(messages: list[Message]) -> list[str]:
    """The text of each agent_message_chunk among ``messages``."""
    return [
        m["params"]["update"]["content"]["text"]
        for m in messages
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    ]


async def test_a_prompt_turn_streams_on_the_session_stream(
    reference_server: RemoteServer,
) -> None:
    """RFD prompt flow: "all events below arrive on the session-scoped stream": the updates,
    then the session/prompt answer; the session/new answer came on the connection stream."""
    async with connected(reference_server) as (client, events):
        session_id = await client.new_session(events)
        async with client.stream(session_id) as session_events:
            response = await client.post(prompt_request(3, session_id, "stream 3"), session_id)
            assert response.status_code == 202
            assert response.content == b""
            before, answer = await session_events.until_answer(3)
    assert answer["result"]["stopReason"] == "end_turn"
    assert texts(before) == ["1 ", "2 ", "3 "]
    assert all(m["params"]["sessionId"] == session_id for m in before)


async def test_messages_wait_for_a_stream_that_is_not_open_yet(
    reference_server: RemoteServer,
) -> None:
    """Issue 20: "Messages for a stream that is not open yet are buffered (bounded) until it
    opens": the session/new answer POSTed before the connection stream opened, and a whole
    turn before its session stream opened, all arrive once the streams open."""
    from tests.remote._server_helpers import RawClient, http_client

    async with http_client() as http:
        client = RawClient(http, reference_server.url)
        await client.initialize()
        assert (await client.post(new_session_request(2))).status_code == 202
        async with client.stream() as events:
            _, created = await events.until_answer(2)
            session_id = created["result"]["sessionId"]
            await client.post(prompt_request(3, session_id, "echo buffered"), session_id)
            async with client.stream(session_id) as session_events:
                before, answer = await session_events.until_answer(3)
        await client.delete()
    assert texts(before) == ["echo buffered"]
    assert answer["result"]["stopReason"] == "end_turn"


async def test_a_permission_round_trip(reference_server: RemoteServer) -> None:
    """RFD permission flow: the agent's request_permission comes on the session stream; the
    client's answer is a POST with Acp-Session-Id (202); the turn goes on and ends there."""
    async with connected(reference_server) as (client, events):
        session_id = await client.new_session(events)
        async with client.stream(session_id) as session_events:
            await client.post(prompt_request(3, session_id, "tool"), session_id)
            ask = await session_events.until_method("session/request_permission")
            assert ask["params"]["sessionId"] == session_id
            reply = {
                "jsonrpc": "2.0",
                "id": ask["id"],
                "result": {"outcome": {"outcome": "selected", "optionId": "allow"}},
            }
            wrong = await client.post(reply, "another-session")
            assert wrong.status_code == 400  # the request belongs to this session
            assert (await client.post(reply, session_id)).status_code == 202
            again = await client.post(reply, session_id)
            assert again.status_code == 400  # answered already
            before, answer = await session_events.until_answer(3)
    statuses = [
        m["params"]["update"].get("status")
        for m in before
        if m["params"]["update"]["sessionUpdate"] == "tool_call_update"
    ]
    assert statuses[-1] == "completed"
    assert answer["result"]["stopReason"] == "end_turn"


async def test_a_cancelled_turn_is_answered_cancelled(reference_server: RemoteServer) -> None:
    """RFD cancel flow: session/cancel is a POST (202, a notification), and the prompt's
    answer, stopReason cancelled, comes on the session stream."""
    async with connected(reference_server) as (client, events):
        session_id = await client.new_session(events)
        async with client.stream(session_id) as session_events:
            await client.post(prompt_request(3, session_id, "slow 600"), session_id)
            await session_events.until_method("session/update")  # the turn runs
            cancel = {
                "jsonrpc": "2.0",
                "method": "session/cancel",
                "params": {"sessionId": session_id},
            }
            assert (await client.post(cancel)).status_code == 400  # no Acp-Session-Id
            response = await client.post(cancel, session_id)
            assert response.status_code == 202
            before, answer = await session_events.until_answer(3)
    assert answer["result"]["stopReason"] == "cancelled"
    assert any(text.startswith("cancelled after") for text in texts(before))


async def test_two_sessions_have_their_own_streams(reference_server: RemoteServer) -> None:
    """RFD: "A single connection may host multiple sessions, each with its own sessionId and
    its own session-scoped GET stream"."""
    async with connected(reference_server) as (client, events):
        first = await client.new_session(events, 2)
        second = await client.new_session(events, 3)
        assert first != second
        async with client.stream(first) as one, client.stream(second) as two:
            await client.post(prompt_request(4, first, "echo one"), first)
            await client.post(prompt_request(5, second, "echo two"), second)
            before_one, _ = await one.until_answer(4)
            before_two, _ = await two.until_answer(5)
    assert texts(before_one) == ["echo one"]
    assert texts(before_two) == ["echo two"]


async def test_a_client_that_disappears_mid_stream_leaves_other_connections_untouched(
    reference_server: RemoteServer,
) -> None:
    """Issue 20: "a client that disappears mid-stream leaves other connections untouched":
    one client drops its stream during a turn; another connection's turn completes."""
    async with connected(reference_server) as (other, other_events):
        other_session = await other.new_session(other_events)
        async with connected(reference_server) as (client, events):
            session_id = await client.new_session(events)
            async with client.stream(session_id) as session_events:
                await client.post(prompt_request(3, session_id, "slow 600"), session_id)
                await session_events.until_method("session/update")
            # the streams and the HTTP client are gone, mid-turn
        async with other.stream(other_session) as session_events:
            await other.post(prompt_request(3, other_session, "echo still here"), other_session)
            before, answer = await session_events.until_answer(3)
    assert texts(before) == ["echo still here"]
    assert answer["result"]["stopReason"] == "end_turn"


async def test_an_agent_that_exits_answers_what_was_in_flight(
    reference_server: RemoteServer,
) -> None:
    """When the agent process dies mid-turn, the prompt in flight is answered with a JSON-RPC
    error on its stream, and the streams end (the connection is gone: 404 after)."""
    async with connected(reference_server) as (client, events):
        session_id = await client.new_session(events)
        async with client.stream(session_id) as session_events:
            await client.post(prompt_request(3, session_id, "crash"), session_id)
            _, answer = await session_events.until_answer(3)
            assert answer["error"]["code"] == -32603
            assert await session_events.rest() == []
        assert await events.rest() == []
        late = await client.post(prompt_request(4, session_id, "echo"), session_id)
    assert late.status_code == 404


async def test_the_in_process_runtime_serves_a_turn() -> None:
    """Issue 20 backend (a): "the in-process runtime served with serve_agent_over over an
    in-memory byte-stream pair, one runtime session space per connection"."""
    runtimes: list[AgentRuntime] = []

    def make_runtime() -> AgentRuntime:
        runtimes.append(AgentRuntime(OfflineModel(tick=0.001)))
        return runtimes[-1]

    async with running_server(runtime_agent(make_runtime)) as server:
        async with connected(server) as (client, events):
            session_id = await client.new_session(events)
            async with client.stream(session_id) as session_events:
                await client.post(prompt_request(3, session_id, "slow 3"), session_id)
                before, answer = await session_events.until_answer(3)
        async with connected(server) as (client, events):
            await client.new_session(events)
    assert answer["result"]["stopReason"] == "end_turn"
    assert "".join(texts(before)).strip()
    assert len(runtimes) == 2  # one runtime (session space) per connection


async def test_a_closed_session_ends_its_stream_and_frees_its_place() -> None:
    """RFD: "per-session streams have independent lifetimes": after a successful
    session/close (answered on the session's stream) that stream ends and the session is no
    longer the connection's (404), so it no longer counts against ``max_sessions``."""
    from subagents.remote import ServerLimits

    async with (
        running_server(limits=ServerLimits(max_sessions=1)) as server,
        connected(server) as (client, events),
    ):
        session_id = await client.new_session(events, 2)
        async with client.stream(session_id) as session_events:
            close = {"jsonrpc": "2.0", "id": 3, "method": "session/close"}
            close["params"] = {"sessionId": session_id}
            assert (await client.post(close, session_id)).status_code == 202
            _, answer = await session_events.until_answer(3)
            assert await session_events.rest() == []
        late = await client.post(prompt_request(4, session_id, "echo"), session_id)
        another = await client.new_session(events, 5)
    assert "result" in answer
    assert late.status_code == 404
    assert another != session_id
