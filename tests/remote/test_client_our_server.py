"""Our URL client against our server (``subagents.remote.serve_acp_http``, in-process on the
test's own backend: asyncio and trio), fronting the reference agent, over Streamable HTTP and
WebSocket."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import anyio
import pytest

from subagents.protocol import acp
from subagents.remote import RemoteServer, _client_ws
from subagents.remote._client_http import open_http_link
from subagents.remote._client_ws import WsLink, open_ws_link
from subagents.remote.client import RemoteStartupError, connect_agent_url
from subagents.rpc import ConnectionClosedError, RPCError
from subagents.transports.acp_client import (
    PromptTurn,
    allow_policy,
    connect_agent,
    connect_agent_over,
    reject_policy,
)
from tests.remote._server_helpers import running_server

pytestmark = pytest.mark.anyio

BOUND = 30.0
TOKEN = "our-Yk3v9Qm7Xr2Lw8Tn5Bz1Hc6Jd4Fg0Ps-Ua_Re7Wi2Ko"


@pytest.fixture
async def server() -> AsyncGenerator[RemoteServer, None]:
    async with running_server() as running:
        yield running


@pytest.fixture(params=["http", "ws"])
def transport(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def url_of(server: RemoteServer, transport: str) -> str:
    return server.websocket_url if transport == "ws" else server.url


def texts(updates: list[acp.SessionUpdate]) -> list[str]:
    return [
        update.content.text
        for update in updates
        if isinstance(update, acp.AgentMessageChunkSessionUpdate)
        and isinstance(update.content, acp.TextContentBlock)
    ]


async def collect(turn: PromptTurn) -> list[acp.SessionUpdate]:
    return [update async for update in turn]


async def first_text(turn: PromptTurn) -> str:
    """The turn's first message chunk (updates of other kinds before it skipped)."""
    async for update in turn:
        said = texts([update])
        if said:
            return said[0]
    raise AssertionError("the turn ended without a message chunk")


async def test_a_turn_streams_through_our_server(server: RemoteServer, transport: str) -> None:
    """Issue 20 point 4: "the same turn against it (our client ↔ our server, HTTP and WS)":
    the chunks in order, then the answer."""
    with anyio.fail_after(BOUND):
        async with connect_agent(url_of(server, transport)) as agent:
            assert agent.agent_info is not None
            session = await agent.new_session(cwd="/tmp")
            async with session.prompt("stream 4") as turn:
                updates = await collect(turn)
            assert texts(updates) == ["1 ", "2 ", "3 ", "4 "]
            assert turn.stop_reason == "end_turn"


@pytest.mark.parametrize(("http2", "version"), [(True, "HTTP/2"), (None, "HTTP/1.1")])
async def test_http2_by_prior_knowledge_to_our_server_when_asked(
    server: RemoteServer, http2: bool | None, version: str
) -> None:
    """RFD "Requires HTTP/2": our server speaks h2c; the client uses it over ``http://`` when
    asked (``http2=True``), and speaks HTTP/1.1 otherwise (Issue 34: "the plain-http://
    client speaks HTTP/1.1 unless told otherwise")."""
    with anyio.fail_after(BOUND):
        async with (
            open_http_link(server.url, http2=http2) as link,
            connect_agent_over(link, link, eof_reason=link.reason) as agent,
        ):
            session = await agent.new_session(cwd="/tmp")
            assert (await session.run("echo hi")).stop_reason == "end_turn"
            assert link.http_version == version


@pytest.mark.parametrize(("policy", "said"), [("allow", "The tool ran."), ("reject", "denied")])
async def test_a_permission_round_trip_through_our_server(
    server: RemoteServer, transport: str, policy: str, said: str
) -> None:
    """RFD "Permission Flow": the agent's request on the session's stream, the client's answer
    POSTed with ``Acp-Session-Id`` (our server routes it back by that session)."""
    with anyio.fail_after(BOUND):
        async with connect_agent_url(
            url_of(server, transport),
            permission_policy=allow_policy if policy == "allow" else reject_policy,
        ) as agent:
            session = await agent.new_session(cwd="/tmp")
            async with session.prompt("tool") as turn:
                updates = await collect(turn)
            assert any(said in text for text in texts(updates))


async def test_cancel_through_our_server(server: RemoteServer, transport: str) -> None:
    """RFD "Cancel Flow": ``session/cancel`` while the turn runs; it ends ``cancelled``."""
    with anyio.fail_after(BOUND):
        async with connect_agent_url(url_of(server, transport)) as agent:
            session = await agent.new_session(cwd="/tmp")
            async with session.prompt("slow 100") as turn:
                assert await first_text(turn) == "tick 0"
                await session.cancel()
                result = await turn.result()
            assert result.stop_reason == "cancelled"


@pytest.mark.parametrize("method", ["load", "resume"])
async def test_a_session_comes_back_on_a_new_connection(
    server: RemoteServer, transport: str, method: str
) -> None:
    """RFD "Resume Session Flow" and v1 "Sessions survive disconnects": on a new connection
    the session's stream is opened before ``session/load`` (``session/resume``) is POSTed;
    ``session/load`` replays the history, and the session takes a new turn."""
    url = url_of(server, transport)
    with anyio.fail_after(BOUND):
        async with connect_agent_url(url) as first:
            session = await first.new_session(cwd="/tmp")
            assert (await session.run("echo remember me")).stop_reason == "end_turn"
            session_id = session.session_id
        async with connect_agent_url(url) as second:
            if method == "load":
                again = await second.load_session(session_id, cwd="/tmp")
            else:
                again = await second.resume_session(session_id, cwd="/tmp")
            async with again.prompt("echo again") as turn:
                said = texts(await collect(turn))
            assert said[-1] == "echo again"
            # session/load replays the history, resume does not. The whole replay comes before
            # the answer (ACP's session/load), over HTTP too: while the load is in flight our
            # server puts the session's messages on the connection's stream, the answer's.
            assert texts(list(again.idle_updates)) == (
                ["echo remember me"] if method == "load" else []
            )
            assert said == ["echo again"]


async def test_deleting_a_session_the_connection_does_not_have(
    server: RemoteServer, transport: str
) -> None:
    """``session/delete`` names a stored session, not necessarily one of the connection's (it
    is connection-scoped, like ``session/list``): deleting a session that never existed is
    answered by the agent (the reference agent: success), not refused 404 by the server."""
    with anyio.fail_after(BOUND):
        async with connect_agent_url(url_of(server, transport)) as agent:
            answer = await agent.peer.request("session/delete", {"sessionId": "never-existed"})
            assert answer == {}


async def test_our_server_refuses_a_missing_or_wrong_token(transport: str) -> None:
    """Issue 20 point 1 (auth): our server's 401 is a clear start-up error; the right token
    connects."""
    async with running_server(token=TOKEN) as server:
        url = url_of(server, transport)
        with anyio.fail_after(BOUND):
            with pytest.raises(RemoteStartupError, match="needs a token"):
                async with connect_agent_url(url):
                    pass
            with pytest.raises(RemoteStartupError, match="refused the token"):
                async with connect_agent_url(url, token="nope"):
                    pass
            async with connect_agent_url(url, token=TOKEN) as agent:
                session = await agent.new_session(cwd="/tmp")
                assert (await session.run("echo ok")).stop_reason == "end_turn"


async def test_our_server_draining_ends_the_turn_then_the_connection(transport: str) -> None:
    """Issue 20 point 1: the server going away (its drain: the turn in flight answered
    ``cancelled``, then the streams end) ends the connection: the next call fails with
    ConnectionClosedError naming the URL, bounded, without a reconnect."""
    with anyio.fail_after(BOUND):
        async with running_server() as server:
            url = url_of(server, transport)
            async with connect_agent_url(url) as agent:
                session = await agent.new_session(cwd="/tmp")
                async with session.prompt("slow 1000") as turn:
                    assert await first_text(turn) == "tick 0"
                    await server.drain()
                    assert (await turn.result()).stop_reason == "cancelled"
                with pytest.raises(ConnectionClosedError) as info:
                    await agent.new_session(cwd="/tmp")
                assert f":{server.port}" in str(info.value)


async def test_leaving_the_block_deletes_the_connection(server: RemoteServer) -> None:
    """RFD "Connection Termination": leaving the block DELETEs the connection (awaited,
    bounded): the server holds no connection of the client once the block is left. (The
    WebSocket's close: tests/remote/test_server_websocket.py, the agent reaped on close.)"""
    with anyio.fail_after(BOUND):
        async with connect_agent_url(server.url) as agent:
            await agent.new_session(cwd="/tmp")
            assert server.connection_count == 1
        assert server.connection_count == 0


async def test_a_refused_request_is_answered_with_an_error_and_the_connection_goes_on(
    server: RemoteServer,
) -> None:
    """Issue 20 (a refused POST of one request does not end the connection): a prompt for a
    session the connection does not have is refused 404 by the server; the call fails at once
    with a JSON-RPC error (-32002) naming the URL, the status and the method, and the next
    call works."""
    with anyio.fail_after(BOUND):
        async with connect_agent_url(server.url) as agent:
            params = {"sessionId": "no-such", "prompt": [{"type": "text", "text": "hi"}]}
            with pytest.raises(RPCError) as info:
                await agent.peer.request("session/prompt", params)
            assert info.value.code == -32002
            assert f"HTTP 404 from {server.url} for POST session/prompt" in str(info.value)
            session = await agent.new_session(cwd="/tmp")
            assert (await session.run("echo hi")).stop_reason == "end_turn"


async def test_a_websocket_link_whose_owner_is_cancelled_as_it_is_handed_over_is_closed(
    server: RemoteServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing leaks: an owner cancelled at the moment the WebSocket link is handed over
    (trio's ``start()`` then raises, so the owner never gets the link) leaves no open stream
    behind; the link's own task closes it (the scale-out test, cancelling runs at random
    moments, once failed on an unclosed memory stream found at garbage collection)."""
    made: list[WsLink] = []

    def cancels_its_owner(url: str, ws: Any, timeout: float) -> WsLink:
        made.append(WsLink(url, ws, timeout))
        owner.cancel()
        return made[-1]

    monkeypatch.setattr(_client_ws, "WsLink", cancels_its_owner)
    with anyio.fail_after(BOUND), anyio.CancelScope() as owner:
        async with open_ws_link(server.websocket_url):
            await anyio.sleep_forever()
    assert len(made) == 1
    with anyio.fail_after(BOUND), pytest.raises(anyio.ClosedResourceError):
        await made[0].receive()
