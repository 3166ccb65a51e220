"""The URL client (Streamable HTTP and WebSocket) against the official ACP SDK's server.

The SDK's server runs under Hypercorn in a subprocess (``sdk_agent_server.py``: asyncio
only, so one process serves the tests of both anyio backends); every test runs on asyncio and
trio, most over both transports.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import httpx
import pytest

from subagents.protocol import acp
from subagents.remote._client_http import open_http_link
from subagents.remote.client import RemoteStartupError, connect_agent_url
from subagents.rpc import ConnectionClosedError
from subagents.transports.acp_client import (
    PromptTurn,
    allow_policy,
    connect_agent,
    connect_agent_over,
    reject_policy,
)
from tests._ports import closed_port

from ._sdk_server import SdkServer, sdk_server

pytestmark = pytest.mark.anyio

BOUND = 20.0
"""Seconds any one test may take (a hang fails instead of blocking the run)."""
TOKEN = "s3cret"


@pytest.fixture(scope="module")
def server() -> Iterator[SdkServer]:
    with sdk_server() as running:
        yield running


@pytest.fixture(scope="module")
def token_server() -> Iterator[SdkServer]:
    with sdk_server("--token", TOKEN) as running:
        yield running


@pytest.fixture(params=["http", "ws"])
def transport(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def texts(updates: list[acp.SessionUpdate]) -> list[str]:
    return [
        update.content.text
        for update in updates
        if isinstance(update, acp.AgentMessageChunkSessionUpdate)
        and isinstance(update.content, acp.TextContentBlock)
    ]


async def collect(turn: PromptTurn) -> list[acp.SessionUpdate]:
    return [update async for update in turn]


async def test_a_prompt_turn_streams_its_chunks_then_its_answer(
    server: SdkServer, transport: str
) -> None:
    """Issue 20 point 1, RFD "Prompt Flow": the updates of a turn arrive (on the session's
    stream, or the socket) in order, before the answer to ``session/prompt``."""
    with anyio.fail_after(BOUND):
        async with connect_agent(server.url(transport)) as agent:
            assert agent.agent_info is not None
            assert agent.agent_info.name == "sdk-script-agent"
            session = await agent.new_session(cwd="/tmp")
            async with session.prompt("one two three") as turn:
                updates = await collect(turn)
            assert texts(updates) == ["echo: ", "one", "two", "three"]
            assert turn.stop_reason == "end_turn"


async def test_two_sessions_on_one_connection_each_get_their_own_updates(
    server: SdkServer, transport: str
) -> None:
    """RFD "Can a client have multiple sessions on one connection?": each session has its own
    stream (opened when its ``session/new`` answer arrives), turns of both run at once."""
    with anyio.fail_after(BOUND):
        async with connect_agent_url(server.url(transport)) as agent:
            first = await agent.new_session(cwd="/tmp")
            second = await agent.new_session(cwd="/tmp")
            assert first.session_id != second.session_id
            async with first.prompt("wait") as waiting:
                assert texts([await waiting.__anext__()]) == ["waiting"]
                async with second.prompt("alpha beta") as turn:
                    assert texts(await collect(turn)) == ["echo: ", "alpha", "beta"]
                await first.cancel()
                assert (await waiting.result()).stop_reason == "cancelled"


async def test_cancel_ends_the_running_turn_cancelled(server: SdkServer, transport: str) -> None:
    """RFD "Cancel Flow": ``session/cancel`` (a session-scoped POST, or a frame) reaches the
    agent while its turn runs; the turn ends with ``stopReason: cancelled``."""
    with anyio.fail_after(BOUND):
        async with connect_agent_url(server.url(transport)) as agent:
            session = await agent.new_session(cwd="/tmp")
            async with session.prompt("wait") as turn:
                first = await turn.__anext__()
                assert texts([first]) == ["waiting"]
                await session.cancel()
                result = await turn.result()
            assert result.stop_reason == "cancelled"


@pytest.mark.parametrize(("allow", "outcome"), [(True, "yes"), (False, "no")])
async def test_a_permission_request_is_answered_on_its_session(
    server: SdkServer, transport: str, allow: bool, outcome: str
) -> None:
    """RFD "Permission Flow": the agent's ``session/request_permission`` arrives on the
    session's stream; the client's answer is POSTed with that session's ``Acp-Session-Id``
    (the SDK's server accepts it) and the agent goes on with the option chosen."""
    with anyio.fail_after(BOUND):
        async with connect_agent_url(
            server.url(transport), permission_policy=allow_policy if allow else reject_policy
        ) as agent:
            session = await agent.new_session(cwd="/tmp")
            async with session.prompt("permission") as turn:
                updates = await collect(turn)
            assert any(isinstance(u, acp.ToolCallSessionUpdate) for u in updates)
            assert texts(updates) == [f"outcome: {outcome}"]


async def test_streamable_http_speaks_http2_with_prior_knowledge_on_http_when_asked(
    server: SdkServer,
) -> None:
    """RFD "Requires HTTP/2": over ``http://`` the client speaks h2c (prior knowledge) to a
    server that does (Hypercorn) when asked (``http2=True``); by default, and with
    ``http2=False``, HTTP/1.1, which works too (Issue 34: "the plain-http:// client speaks
    HTTP/1.1 unless told otherwise")."""
    with anyio.fail_after(BOUND):
        for http2, version in ((True, "HTTP/2"), (None, "HTTP/1.1"), (False, "HTTP/1.1")):
            async with (
                open_http_link(server.http_url, http2=http2) as link,
                connect_agent_over(link, link, eof_reason=link.reason) as agent,
            ):
                session = await agent.new_session(cwd="/tmp")
                assert (await session.run("hi")).stop_reason == "end_turn"
                assert link.http_version == version
                assert link.connection_id
                assert link.session_streams == {session.session_id}


async def test_the_cookie_the_server_sets_comes_back(server: SdkServer) -> None:
    """RFD §5: "Clients MUST accept, store, and return cookies set by the server". The
    server answers 400 to a request naming a connection without its cookie: a plain request
    is refused, while a whole turn through the client goes through."""
    with anyio.fail_after(BOUND):
        async with httpx.AsyncClient() as plain:
            refused = await plain.get(
                server.http_url,
                headers={"Accept": "text/event-stream", "Acp-Connection-Id": "x"},
            )
        assert refused.status_code == 400
        assert "cookie missing" in refused.text
        async with connect_agent_url(server.http_url, http2=False) as agent:
            session = await agent.new_session(cwd="/tmp")
            assert (await session.run("cookie")).stop_reason == "end_turn"


async def test_a_url_without_a_path_gets_the_acp_endpoint(server: SdkServer) -> None:
    """Issue 20 point 2: "a bare host URL gets /acp appended only if its path is empty"."""
    with anyio.fail_after(BOUND):
        async with connect_agent(f"http://127.0.0.1:{server.port}") as agent:
            assert agent.agent_info is not None


async def test_a_missing_token_is_a_startup_error_that_says_so(
    token_server: SdkServer, transport: str
) -> None:
    """Issue 20 point 1 (auth): a 401 is a clear start-up error, "needs a token: set
    token_env", naming the URL."""
    with anyio.fail_after(BOUND), pytest.raises(RemoteStartupError) as info:
        async with connect_agent_url(token_server.url(transport)):
            pass
    assert info.value.status == 401
    assert "needs a token" in str(info.value)
    assert "token_env" in str(info.value)
    assert f"127.0.0.1:{token_server.port}" in str(info.value)


async def test_a_wrong_token_is_refused_and_the_right_one_accepted(
    token_server: SdkServer, transport: str
) -> None:
    """Issue 20 point 1 (auth): ``token=`` goes as ``Authorization: Bearer``; a wrong one is
    "the server refused the token" (401), the right one connects and runs a turn."""
    url = token_server.url(transport)
    with anyio.fail_after(BOUND):
        with pytest.raises(RemoteStartupError, match="refused the token") as info:
            async with connect_agent_url(url, token="wrong"):
                pass
        assert info.value.status == 401
        async with connect_agent(url, token=TOKEN) as agent:
            session = await agent.new_session(cwd="/tmp")
            assert (await session.run("hi")).stop_reason == "end_turn"


async def test_extra_headers_are_sent(token_server: SdkServer, transport: str) -> None:
    """Issue 20 point 1 (auth): ``headers=`` go on every request (here the token itself)."""
    with anyio.fail_after(BOUND):
        async with connect_agent_url(
            token_server.url(transport), headers={"Authorization": f"Bearer {TOKEN}"}
        ) as agent:
            session = await agent.new_session(cwd="/tmp")
            assert (await session.run("hi")).stop_reason == "end_turn"


async def test_a_refused_connection_is_an_unreachable_startup_error(transport: str) -> None:
    """Issue 20 point 1: a refused connection fails the start (never a hang) naming the URL
    and the cause."""
    port = closed_port()
    scheme = "ws" if transport == "ws" else "http"
    with anyio.fail_after(BOUND), pytest.raises(RemoteStartupError) as info:
        async with connect_agent_url(f"{scheme}://127.0.0.1:{port}/acp"):
            pass
    assert info.value.unreachable
    assert info.value.status is None
    assert f"127.0.0.1:{port}" in str(info.value)
    assert "connect" in str(info.value).lower()


async def test_a_server_killed_mid_turn_fails_the_turn_naming_the_cause(transport: str) -> None:
    """Issue 20 point 1/3: a dropped stream (the server killed while a turn runs) fails the
    pending calls with ConnectionClosedError naming the URL and the cause: never a hang,
    never a silent reconnect."""
    with sdk_server() as doomed, anyio.fail_after(BOUND):
        url = doomed.url(transport)
        async with connect_agent_url(url) as agent:
            session = await agent.new_session(cwd="/tmp")
            async with session.prompt("hang") as turn:
                assert texts([await turn.__anext__()]) == ["hanging"]
                doomed.kill()
                with pytest.raises(ConnectionClosedError) as info:
                    await turn.result()
            assert f"127.0.0.1:{doomed.port}" in str(info.value)
            with pytest.raises(ConnectionClosedError):
                await agent.new_session(cwd="/tmp")


async def test_a_str_that_is_no_url_is_refused() -> None:
    """Issue 20 point 2: ``connect_agent`` takes a URL as a ``str``; any other ``str`` is an
    error (not a command spelled letter by letter)."""
    with pytest.raises(ValueError, match="agent URL"):
        async with connect_agent("my-agent --acp"):
            pass
    with pytest.raises(ValueError, match="for an agent URL"):
        async with connect_agent(["true"], token="t"):
            pass
