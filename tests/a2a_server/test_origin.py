"""``serve --a2a`` against web pages and DNS rebinding (the ``Origin`` and ``Host`` checks
shared with ``serve --listen``, :mod:`subagents.remote._origin`), and the SDK's client and
``A2AProvider`` still served (asyncio: the A2A server runs on hypercorn's asyncio loop)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

import anyio
import httpx
import pytest

pytest.importorskip("a2a.server")

from subagents.config import AgentSpec
from subagents.providers.a2a import A2AProvider
from subagents.providers.contract import CancelSignal, SubagentRequest
from subagents.providers.factory import build_provider
from subagents.remote.a2a_server import A2AServer, serve_a2a_http
from tests.a2a_server._client import a2a_client, send

SPAWN = AgentSpec("runtime", "spawn", description="the in-process runtime, offline model")
CARD = "/.well-known/agent-card.json"
EVIL = "https://evil.example"
SEND = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "SendMessage",
    "params": {
        "message": {
            "messageId": "m1",
            "role": "ROLE_USER",
            "parts": [{"text": "hello"}],
        }
    },
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def serving(
    *,
    public_url: str | None = None,
    allowed_origins: Iterable[str] = (),
    allowed_hosts: Iterable[str] = (),
) -> AsyncIterator[A2AServer]:
    async with (
        build_provider(SPAWN) as provider,
        serve_a2a_http(
            provider,
            SPAWN,
            port=0,
            public_url=public_url,
            allowed_origins=allowed_origins,
            allowed_hosts=allowed_hosts,
        ) as server,
    ):
        yield server


@pytest.mark.anyio
async def test_requests_from_a_web_page_are_refused_403() -> None:
    """Issue 34: "a browser origin is refused unless listed", on ``--a2a`` too: a message
    POSTed with ``Origin: https://evil.example`` gets 403 with a JSON-RPC error and starts no
    task; the card is refused to it as well."""
    async with serving() as server, httpx.AsyncClient(timeout=30) as http:
        posted = await http.post(server.url, json=SEND, headers={"Origin": EVIL})
        card = await http.get(server.card_url, headers={"Origin": EVIL})
        assert not server.executor.contexts
    assert posted.status_code == 403
    body = posted.json()
    assert body["error"]["code"] == -32600
    assert body["id"] is None
    assert card.status_code == 403


@pytest.mark.anyio
async def test_a_dns_rebinding_host_is_refused_421() -> None:
    """Issue 34: "a Host that is not the bound address, a loopback name or the --public-url
    host is refused": ``Host: evil.example:PORT`` gets 421 on the JSON-RPC endpoint and the
    card; the ``public_url``'s host and ``localhost`` are served."""
    async with (
        serving(public_url="https://agents.example.com/a2a") as s,
        httpx.AsyncClient(timeout=30) as http,
    ):
        posted = await http.post(s.url, json=SEND, headers={"Host": f"evil.example:{s.port}"})
        card = await http.get(s.card_url, headers={"Host": "evil.example"})
        served = [
            await http.get(s.card_url, headers={"Host": host})
            for host in ("agents.example.com", f"localhost:{s.port}")
        ]
        assert not s.executor.contexts
    assert posted.status_code == 421
    assert posted.json()["error"]["code"] == -32600
    assert card.status_code == 421
    assert [response.status_code for response in served] == [200, 200]


@pytest.mark.anyio
async def test_a_listed_host_is_served() -> None:
    """Issue 34: a name given with ``--allow-host`` (``allowed_hosts``; a load balancer's
    that passes the client's ``Host`` through) is served; others still are not."""
    async with (
        serving(allowed_hosts=["lb.internal"]) as server,
        httpx.AsyncClient(timeout=30) as http,
    ):
        listed = await http.get(server.card_url, headers={"Host": "lb.internal:8080"})
        other = await http.get(server.card_url, headers={"Host": "lb2.internal"})
    assert listed.status_code == 200
    assert other.status_code == 421


@pytest.mark.anyio
async def test_a_listed_origin_and_the_sdk_client_are_served() -> None:
    """Issue 34: a listed origin is served, and the SDK's client (no ``Origin``) runs a turn
    as before."""
    async with (
        serving(allowed_origins=["https://app.example"]) as server,
        httpx.AsyncClient(timeout=30) as http,
    ):
        card = await http.get(server.card_url, headers={"Origin": "https://app.example"})
        assert card.status_code == 200
        async with a2a_client(server.url) as client:
            with anyio.fail_after(30):
                turn = await send(client, "hello")
    assert turn.final == "TASK_STATE_COMPLETED"
    assert turn.text


@pytest.mark.anyio
async def test_a2a_provider_still_runs_a_turn() -> None:
    """Issue 34: "everything that worked still works": ``A2AProvider`` (no ``Origin``, the
    server's address as ``Host``) runs a turn to completion."""
    async with serving() as server, A2AProvider(server.url, name="remote") as provider:
        with anyio.fail_after(30):
            run = await provider.start(SubagentRequest("hello"), cancel=CancelSignal())
            async with run:
                outcome = await run.result()
    assert outcome.status == "completed"
    assert outcome.output
