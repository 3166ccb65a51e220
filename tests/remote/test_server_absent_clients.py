"""Nothing held by the absent: a client that is gone has its turns cancelled and its agent
stopped within a grace, abandoned ``initialize``s are reaped quickly, and one client cannot
take every connection (asyncio and trio).

What the agent is sent and answers is read from a tap on its link (:class:`TappedBackend`),
since the client that would have read the answers is gone.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, final

import anyio
import anyio.abc
import httpx
import pytest
from httpx_ws import aconnect_ws

from subagents.agents.reference import ReferenceAgent
from subagents.remote import (
    AgentBackend,
    AgentLink,
    Principals,
    ServerLimits,
    agent_command,
    in_process_agent,
    serve_acp_http,
)
from tests.remote._serve_processes import serve_processes
from tests.remote._server_helpers import (
    REFERENCE,
    WAIT,
    Message,
    RawClient,
    http_client,
    initialize_request,
    prompt_request,
    running_server,
)

pytestmark = pytest.mark.anyio

SMALL_GRACE = 0.3
ALICE: Final = "alice-Yk3v9Qm7Xr2Lw8Tn5Bz1Hc6Jd4Fg0Ps-Ua_Re7Wi2Ko"
BOB: Final = "bob-Qz8Wx1Ec4Rv7Tb2Yn5Um9Ik3Ol6Pa0Sd-Fg_Hj1Kl4Zx"
"""The graces of these tests (seconds): small, so that a gone client is seen at once."""


def _lines(buffer: bytearray, data: bytes, into: list[Message]) -> None:
    buffer += data
    while (end := buffer.find(b"\n")) >= 0:
        line = bytes(buffer[:end]).strip()
        del buffer[: end + 1]
        if line:
            into.append(json.loads(line))


@final
class _TapSend(anyio.abc.ByteSendStream):
    def __init__(self, inner: anyio.abc.ByteSendStream, into: list[Message]) -> None:
        self._inner, self._into, self._buffer = inner, into, bytearray()

    async def send(self, item: bytes) -> None:
        await self._inner.send(item)
        _lines(self._buffer, item, self._into)

    async def aclose(self) -> None:
        await self._inner.aclose()


@final
class _TapReceive(anyio.abc.ByteReceiveStream):
    def __init__(self, inner: anyio.abc.ByteReceiveStream, into: list[Message]) -> None:
        self._inner, self._into, self._buffer = inner, into, bytearray()

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data = await self._inner.receive(max_bytes)
        _lines(self._buffer, data, self._into)
        return data

    async def aclose(self) -> None:
        await self._inner.aclose()


@final
@dataclass
class TappedBackend:
    """``inner``'s agents, with every message to and from them kept, in order."""

    inner: AgentBackend
    to_agent: list[Message] = field(default_factory=list[Message])
    from_agent: list[Message] = field(default_factory=list[Message])

    @asynccontextmanager
    async def open(self) -> AsyncIterator[AgentLink]:
        async with self.inner.open() as link:
            yield AgentLink(
                _TapSend(link.send, self.to_agent),
                _TapReceive(link.receive, self.from_agent),
                link.pid,
            )

    def describe(self) -> str:
        return self.inner.describe()

    def cancels(self) -> list[Message]:
        return [m for m in self.to_agent if m.get("method") == "session/cancel"]

    def answer(self, request_id: int) -> Message | None:
        return next(
            (m for m in self.from_agent if m.get("id") == request_id and "method" not in m), None
        )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def until(condition: Any) -> None:
    """Wait (bounded) until ``condition()`` holds: the server's state, seen from outside."""
    with anyio.fail_after(WAIT):
        while not condition():  # noqa: ASYNC110 - the server's state, polled
            await anyio.sleep(0.02)


def in_process_reference() -> AgentBackend:
    """The reference agent in this process, one per connection (cheap: many connections)."""

    @asynccontextmanager
    async def make() -> AsyncGenerator[ReferenceAgent, None]:
        yield ReferenceAgent()

    return in_process_agent(make)


async def test_a_client_killed_mid_turn_has_its_turn_cancelled_and_its_agent_reaped() -> None:
    """Issue 34: "an HTTP client whose streams are gone for a grace period (seconds,
    configurable) has its turns cancelled and its agent reaped": its streams closed abruptly
    mid-turn, the agent gets session/cancel, answers the turn cancelled, and is stopped."""
    backend = TappedBackend(agent_command(REFERENCE))
    limits = ServerLimits(client_grace=SMALL_GRACE)
    async with running_server(backend, limits=limits) as server:
        async with http_client() as http:
            client = RawClient(http, server.url)
            await client.initialize()
            async with client.stream() as events:
                session_id = await client.new_session(events)
                async with client.stream(session_id) as session_events:
                    response = await client.post(
                        prompt_request(3, session_id, "slow 600"), session_id
                    )
                    assert response.status_code == 202
                    await session_events.until_method("session/update")
                    [pid] = server.agent_pids()
        # The client is gone: its streams and TCP connections closed mid-turn.
        await until(lambda: backend.cancels() and backend.answer(3) is not None)
        await until(lambda: server.connection_count == 0 and not alive(pid))
    assert [m["params"]["sessionId"] for m in backend.cancels()] == [session_id]
    answer = backend.answer(3)
    assert answer is not None
    assert answer["result"]["stopReason"] == "cancelled"


async def test_a_killed_websocket_client_has_its_turn_cancelled_at_once() -> None:
    """Issue 34 ("nothing held by the absent"), over WebSocket: the socket's close ends the
    connection with no grace, and its turn is cancelled (session/cancel to the agent, the
    turn answered cancelled) before the agent is stopped."""
    backend = TappedBackend(agent_command(REFERENCE))
    limits = ServerLimits(client_grace=300.0)  # no grace applies to a WebSocket
    async with running_server(backend, limits=limits) as server:
        async with (
            http_client(http2=False) as http,
            aconnect_ws(server.url, http, keepalive_ping_interval_seconds=None) as ws,
        ):
            await ws.send_text(json.dumps(initialize_request(1)))
            await ws.send_text(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "session/new",
                        "params": {"cwd": "/tmp", "mcpServers": []},
                    }
                )
            )
            session_id = ""
            while not session_id:
                message = json.loads(await ws.receive_text(timeout=WAIT))
                if message.get("id") == 2:
                    session_id = message["result"]["sessionId"]
            await ws.send_text(json.dumps(prompt_request(3, session_id, "slow 600")))
            while json.loads(await ws.receive_text(timeout=WAIT)).get("method") != (
                "session/update"
            ):
                pass
            [pid] = server.agent_pids()
        await until(lambda: backend.cancels() and backend.answer(3) is not None)
        await until(lambda: server.connection_count == 0 and not alive(pid))
    assert [m["params"]["sessionId"] for m in backend.cancels()] == [session_id]
    answer = backend.answer(3)
    assert answer is not None
    assert answer["result"]["stopReason"] == "cancelled"


async def test_a_well_behaved_client_outlives_the_graces() -> None:
    """Issue 34: the grace "must not kill a well-behaved client between requests": with
    graces far shorter than the turn, a client that keeps its connection stream open, and
    drops and reopens its session stream mid-turn, gets the whole turn and its answer."""
    limits = ServerLimits(client_grace=SMALL_GRACE, handshake_grace=SMALL_GRACE)
    async with running_server(limits=limits) as server, http_client() as http:
        client = RawClient(http, server.url)
        await client.initialize()
        async with client.stream() as events:
            session_id = await client.new_session(events)
            async with client.stream(session_id) as session_events:
                await client.post(prompt_request(3, session_id, "stream 12 100"), session_id)
                await session_events.until_method("session/update")
            async with client.stream(session_id) as session_events:  # reconnected
                _, answer = await session_events.until_answer(3)
            await anyio.sleep(SMALL_GRACE * 3)  # a quiet moment, the connection stream open
            await client.post(prompt_request(4, session_id, "echo still here"), session_id)
            async with client.stream(session_id) as session_events:
                _, again = await session_events.until_answer(4)
        assert server.connection_count == 1
        await client.delete()
    assert answer["result"]["stopReason"] == "end_turn"
    assert again["result"]["stopReason"] == "end_turn"


async def test_abandoned_initializes_do_not_lock_out_another_client() -> None:
    """Issue 34: "80 abandoned initializes do not lock out a second client": connections
    whose initialize is followed by nothing end after the handshake grace (not the idle
    timeout), and a second client is served."""
    limits = ServerLimits(handshake_grace=SMALL_GRACE)
    statuses: set[int] = set()
    async with running_server(in_process_reference(), limits=limits) as server:
        async with http_client() as http:
            for request_id in range(80):
                response = await http.post(server.url, json=initialize_request(request_id))
                statuses.add(response.status_code)
        await until(lambda: server.connection_count == 0)
        async with http_client() as http:
            client = RawClient(http, server.url)
            await client.initialize()
            async with client.stream() as events:
                session_id = await client.new_session(events)
            await client.delete()
    assert 200 in statuses
    assert statuses <= {200, 503}
    assert session_id


@asynccontextmanager
async def client_from(address: str) -> AsyncGenerator[httpx.AsyncClient, None]:
    """An HTTP/2 client whose connections come from ``address`` (a loopback address)."""
    transport = httpx.AsyncHTTPTransport(http1=False, http2=True, local_address=address)
    async with httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(WAIT)) as client:
        yield client


async def test_one_client_cannot_take_every_connection() -> None:
    """Issue 34: "per-principal connection limits so one client cannot lock others out":
    without tokens a client is its address; the 81st connection of one address is refused
    (503) while another address is still served."""
    limits = ServerLimits(
        max_connections=100, max_connections_per_principal=80, handshake_grace=300.0
    )
    async with (
        running_server(in_process_reference(), limits=limits) as server,
        client_from("127.0.0.1") as first,
        client_from("127.0.0.2") as second,
    ):
        for request_id in range(80):
            response = await first.post(server.url, json=initialize_request(request_id))
            assert response.status_code == 200, response.text
        refused = await first.post(server.url, json=initialize_request(80))
        other = await second.post(server.url, json=initialize_request(81))
        count = server.connection_count
    assert refused.status_code == 503
    assert "too many connections" in refused.json()["error"]
    assert other.status_code == 200
    assert count == 81


async def test_the_command_line_sets_the_client_grace_and_the_per_principal_limit(
    tmp_path: Path,
) -> None:
    """Issue 34: ``serve --listen --client-grace S --max-connections-per-principal N``: with
    N connections of one client open (their streams read), one more is refused (503); once
    their streams are gone for S seconds they are ended, and the client is served again."""
    options = ("--client-grace", str(SMALL_GRACE), "--max-connections-per-principal", "2")
    async with (
        serve_processes(tmp_path, 1, *options, agent=REFERENCE) as [server],
        http_client() as http,
    ):
        async with AsyncExitStack() as streams:
            for _ in range(2):
                client = RawClient(http, server.url)
                await client.initialize()
                await streams.enter_async_context(client.stream())
            refused = await http.post(server.url, json=initialize_request(3))

        async def connections() -> int:
            count: int = (await http.get(server.health_url)).json()["connections"]
            return count

        with anyio.fail_after(WAIT):
            while await connections():  # noqa: ASYNC110 - the server's state, polled
                await anyio.sleep(0.05)
        again = await http.post(server.url, json=initialize_request(4))
    assert refused.status_code == 503
    assert "too many connections of one client" in refused.json()["error"]
    assert again.status_code == 200


async def test_the_limit_counts_each_principal_apart() -> None:
    """Issue 34: "per-principal connection limits": with named tokens a connection counts for
    its principal, whatever its address: alice's third connection is refused (503), bob on
    the same address is served; a WebSocket counts too."""
    limits = ServerLimits(max_connections=10, max_connections_per_principal=2)
    principals = Principals({"alice": ALICE, "bob": BOB})
    async with (
        serve_acp_http(in_process_reference(), port=0, token=principals, limits=limits) as server,
        http_client() as http,
    ):
        statuses: dict[str, list[int]] = {"alice": [], "bob": []}
        for name, token, count in (("alice", ALICE, 3), ("bob", BOB, 1)):
            for request_id in range(count):
                response = await http.post(
                    server.url,
                    json=initialize_request(request_id),
                    headers={"Authorization": f"Bearer {token}"},
                )
                statuses[name].append(response.status_code)
        async with (
            http_client(http2=False) as ws_http,
            aconnect_ws(
                server.url,
                ws_http,
                headers={"Authorization": f"Bearer {BOB}"},
                keepalive_ping_interval_seconds=None,
            ),
        ):
            refused = await http.post(
                server.url, json=initialize_request(9), headers={"Authorization": f"Bearer {BOB}"}
            )
    assert statuses == {"alice": [200, 200, 503], "bob": [200]}
    assert refused.status_code == 503  # bob's WebSocket was his second
