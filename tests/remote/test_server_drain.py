"""Issue 34 item 6, in one process: a draining ``serve --listen`` says so, to a load balancer
(``/health`` 503 ``draining`` for the notice, while the connections already made go on) and
to its clients (a new ``initialize`` answered 503 with a JSON-RPC error naming the drain; a
run still starting, or a turn cut by the drain, settles ``cancelled`` naming it). The
servers serve the reference agent in this process, on 127.0.0.1; HAProxy in front of real
processes: ``tests/remote/test_haproxy.py``."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Final

import anyio
import anyio.abc
import httpx
import pytest

from subagents.agents.reference import ReferenceAgent
from subagents.cancel import CancelSignal
from subagents.protocol import acp
from subagents.protocol.acp_remote import ServerDrainingError
from subagents.providers.acp import AcpProvider
from subagents.providers.contract import (
    SubagentError,
    SubagentErrorCode,
    SubagentRequest,
    SubagentRun,
)
from subagents.providers.spread import SpreadProvider
from subagents.remote import RemoteServer, connect_agent_url, in_process_agent, serve_acp_http
from subagents.transports.acp_agent import Agent, AgentTurn, ClientConnection
from tests.remote._server_helpers import WAIT, initialize_request

pytestmark = pytest.mark.anyio

NOTICE: Final = 3.0
"""The drain notice of the first test: long enough for its steps on a loaded machine."""


class SlowToOpen(Agent):
    """An agent whose ``session/new`` never answers (a run stays starting)."""

    agent_name = "slow-to-open"
    opening = anyio.Event()

    async def new_session(
        self, params: acp.NewSessionRequest, conn: ClientConnection
    ) -> acp.NewSessionResponse:
        type(self).opening.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def prompt(self, params: acp.PromptRequest, turn: AgentTurn) -> acp.StopReason:
        return "end_turn"


@asynccontextmanager
async def reference_server(
    agent: type[Agent] = ReferenceAgent,
) -> AsyncGenerator[RemoteServer, None]:
    @asynccontextmanager
    async def make() -> AsyncGenerator[Agent, None]:
        yield agent()

    async with serve_acp_http(in_process_agent(make)) as server:
        yield server


async def test_health_says_draining_for_the_notice_while_the_connections_go_on() -> None:
    """Issue 34: "a draining server reports it on /health for a configurable time before
    the listener closes ... while still serving existing connections": leaving the server's
    block (SIGTERM, for the command line) with ``drain_notice``: ``/health`` answers 503
    ``draining``, a turn on a connection made before still completes, a new ``initialize``
    is answered 503 with ``Retry-After`` and a JSON-RPC error naming the drain."""
    leave = anyio.Event()
    refused: httpx.Response | None = None
    made: list[RemoteServer] = []
    ready = anyio.Event()

    async def serve() -> None:
        @asynccontextmanager
        async def make() -> AsyncGenerator[ReferenceAgent, None]:
            yield ReferenceAgent()

        async with serve_acp_http(in_process_agent(make), drain_notice=NOTICE) as server:
            made.append(server)
            ready.set()
            await leave.wait()

    with anyio.fail_after(WAIT + NOTICE):
        async with anyio.create_task_group() as tg, httpx.AsyncClient(timeout=WAIT) as http:
            tg.start_soon(serve)
            await ready.wait()
            server = made[0]
            async with connect_agent_url(server.url) as agent:
                session = await agent.new_session(cwd="/tmp")
                assert (await http.get(server.health_url)).status_code == 200
                leave.set()
                while True:
                    health = await http.get(server.health_url)
                    if health.status_code != 200:
                        break
                    await anyio.sleep(0.02)
                assert (health.status_code, health.json()["status"]) == (503, "draining")
                assert (await session.run("echo still served")).stop_reason == "end_turn"
                refused = await http.post(server.url, json=initialize_request())
                assert server.connection_count == 1
    assert refused is not None
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "1"
    assert refused.json()["id"] == 1
    assert refused.json()["error"]["data"] == {"draining": True}
    assert "draining" in refused.json()["error"]["message"]


@pytest.mark.parametrize("transport", ["http", "ws"])
async def test_a_connection_cut_by_the_drain_raises_server_draining_error(transport: str) -> None:
    """Issue 34: a connection the drain ends fails naming the drain (never a bare 404 or an
    empty cause): the server's drain notification comes first, so what fails next in the
    block leaves it as ``ServerDrainingError``, over HTTP and WebSocket."""
    with anyio.fail_after(WAIT):
        async with reference_server() as server:
            url = server.websocket_url if transport == "ws" else server.url
            failure: BaseException | None = None
            try:
                async with connect_agent_url(url) as agent:
                    await server.drain()
                    await agent.new_session(cwd="/tmp")
            except ServerDrainingError as exc:
                failure = exc
    assert isinstance(failure, ServerDrainingError)
    assert "draining" in str(failure)


async def test_a_run_still_starting_on_a_draining_server_settles_cancelled_naming_it() -> None:
    """Issue 34: "a run still starting on a draining instance settles cancelled naming the
    drain (today: a misleading 404)": its ``session/new`` is in flight when the server
    drains; the start raises ``SubagentError`` ``CANCELLED`` naming the drain."""
    SlowToOpen.opening = anyio.Event()
    with anyio.fail_after(WAIT):
        async with reference_server(SlowToOpen) as server, AcpProvider(server.url) as provider:
            failure: list[SubagentError] = []

            async def start() -> None:
                with pytest.raises(SubagentError) as info:
                    await provider.start(SubagentRequest("echo hi"), cancel=CancelSignal())
                failure.append(info.value)

            async with anyio.create_task_group() as tg:
                tg.start_soon(start)
                await SlowToOpen.opening.wait()
                await server.drain()
    assert failure[0].code is SubagentErrorCode.CANCELLED, failure
    assert "draining" in str(failure[0])


@pytest.mark.parametrize("transport", ["http", "ws"])
async def test_a_turn_the_drain_cancels_settles_cancelled_naming_it(transport: str) -> None:
    """Issue 34: "runs in flight finish or are cancelled naming the drain": a turn in flight
    when the server drains settles ``cancelled``, its message naming the drain (the server
    notes it in the turn's answer), not a bare "cancelled"."""
    with anyio.fail_after(WAIT):
        async with reference_server() as server:
            url = server.websocket_url if transport == "ws" else server.url
            async with AcpProvider(url) as provider:
                run = await provider.start(SubagentRequest("slow 100000"), cancel=CancelSignal())
                async with run:
                    await server.drain()
                    outcome = await run.result()
    assert outcome.status == "cancelled", outcome
    assert "draining" in outcome.message, outcome


async def test_a_spread_start_cut_by_a_drain_goes_on_to_the_next_server() -> None:
    """Issue 34, with the spread provider ("a server that cannot start it (down, refusing the
    token, draining) is skipped for the next"): the first server drains while the start's
    ``session/new`` is in flight there; the start settles on the second server, which
    completes the run."""
    SlowToOpen.opening = anyio.Event()
    with anyio.fail_after(WAIT):
        async with reference_server(SlowToOpen) as draining, reference_server() as other:
            members = [AcpProvider(draining.url), AcpProvider(other.url)]
            async with SpreadProvider("fleet", members) as provider:
                runs: list[SubagentRun] = []

                async def start() -> None:
                    request = SubagentRequest("echo hi")
                    runs.append(await provider.start(request, cancel=CancelSignal()))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(start)
                    await SlowToOpen.opening.wait()
                    await draining.drain()
                async with runs[0] as run:
                    outcome = await run.result()
    assert outcome.status == "completed", outcome
