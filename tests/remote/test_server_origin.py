"""The ``/acp`` endpoint against web pages and DNS rebinding (the ``Origin`` and ``Host``
checks, :mod:`subagents.remote._origin`), with plain httpx and httpx-ws (asyncio and trio)."""

from __future__ import annotations

import anyio
import pytest
from httpx_ws import WebSocketUpgradeError, aconnect_ws

from subagents.remote import RemoteServerConfigError, agent_command
from subagents.remote.client import connect_agent_url
from tests.remote._origin_helpers import CountingBackend, serving
from tests.remote._server_helpers import (
    REFERENCE,
    WAIT,
    http_client,
    initialize_request,
)

pytestmark = pytest.mark.anyio

EVIL = "https://evil.example"


def assert_json_rpc_error(body: object) -> None:
    assert isinstance(body, dict)
    assert body["jsonrpc"] == "2.0"  # pyright: ignore[reportUnknownMemberType]
    assert body["id"] is None  # pyright: ignore[reportUnknownMemberType]
    assert body["error"]["code"] == -32600  # pyright: ignore[reportUnknownMemberType]


async def test_a_post_from_a_web_page_is_refused_403_and_starts_no_agent() -> None:
    """Issue 34: "a browser origin is refused unless listed": an ``initialize`` POSTed with
    ``Origin: https://evil.example`` is answered 403 with a JSON-RPC error, and no agent is
    started for it."""
    backend = CountingBackend()
    async with serving(backend) as server, http_client() as http:
        response = await http.post(server.url, json=initialize_request(), headers={"Origin": EVIL})
        assert response.status_code == 403
        assert_json_rpc_error(response.json())
        assert "--allow-origin" in response.json()["error"]["message"]
        assert server.connection_count == 0
    assert backend.started == 0


async def test_a_websocket_upgrade_from_a_web_page_is_refused_403() -> None:
    """Issue 34: "a loopback serve --listen with no token accepts a WebSocket upgrade with
    Origin: https://evil.example": it is refused (403) before any agent starts."""
    backend = CountingBackend()
    async with serving(backend) as server, http_client(http2=False) as http:
        with pytest.raises(WebSocketUpgradeError) as refused:
            async with aconnect_ws(
                server.websocket_url.replace("ws://", "http://"),
                http,
                headers={"Origin": EVIL},
                keepalive_ping_interval_seconds=None,
            ):
                pass
        assert refused.value.response.status_code == 403
    assert backend.started == 0


async def test_a_listed_origin_is_served_over_http_and_websocket() -> None:
    """Issue 34: "unless listed (--allow-origin)": with ``allowed_origins`` naming the page's
    origin (written with its default port and in capitals: origins are compared normalized),
    its ``initialize`` is answered and its WebSocket opens; another origin is still refused."""
    allowed = "HTTPS://App.Example:443"
    async with (
        serving(CountingBackend(), allowed_origins=[allowed]) as server,
        http_client() as http,
    ):
        ok = await http.post(
            server.url, json=initialize_request(), headers={"Origin": "https://app.example"}
        )
        assert ok.status_code == 200, ok.text
        other = await http.post(
            server.url, json=initialize_request(), headers={"Origin": "https://app.example:8443"}
        )
        assert other.status_code == 403
        async with (
            http_client(http2=False) as http1,
            aconnect_ws(
                server.websocket_url.replace("ws://", "http://"),
                http1,
                headers={"Origin": "https://app.example"},
                keepalive_ping_interval_seconds=None,
            ) as ws,
        ):
            await ws.send_json(initialize_request(3))
            answer = await ws.receive_json(timeout=WAIT)
            assert answer["id"] == 3
            assert "result" in answer


@pytest.mark.parametrize("origin", ["*", "null", "https://app.example/path", "app.example"])
async def test_a_malformed_allowed_origin_refuses_to_start(origin: str) -> None:
    """Issue 34: ``--allow-origin`` takes origins as browsers send them; ``*`` and ``null``
    (sent by any sandboxed page) would let every page in: refused with a reason."""
    with pytest.raises(RemoteServerConfigError, match="--allow-origin"):
        async with serving(CountingBackend(), allowed_origins=[origin]):
            pass


async def test_a_dns_rebinding_host_is_refused_421_on_every_method() -> None:
    """Issue 34: "a Host that is not the bound address, a loopback name or the --public-url
    host is refused" (DNS rebinding: a page at evil.example:PORT whose name points at
    127.0.0.1): POST, GET and the WebSocket upgrade with ``Host: evil.example:PORT`` get 421
    with a JSON-RPC error, and no agent starts."""
    backend = CountingBackend()
    async with serving(backend) as server:
        host = {"Host": f"evil.example:{server.port}"}
        async with http_client(http2=False) as http:
            post = await http.post(server.url, json=initialize_request(), headers=host)
            get = await http.get(server.url, headers={**host, "Accept": "text/event-stream"})
            with pytest.raises(WebSocketUpgradeError) as refused:
                async with aconnect_ws(
                    server.url, http, headers=host, keepalive_ping_interval_seconds=None
                ):
                    pass
        assert post.status_code == 421
        assert_json_rpc_error(post.json())
        assert "--allow-host" in post.json()["error"]["message"]
        assert get.status_code == 421
        assert refused.value.response.status_code == 421
    assert backend.started == 0


async def test_loopback_names_ip_addresses_and_listed_hosts_are_served() -> None:
    """Issue 34: the loopback names and the bound address are served (any port: a port
    mapping changes it), and a name listed with ``allowed_hosts`` (a load balancer's) too."""
    async with (
        serving(CountingBackend(), allowed_hosts=["acp.example.com"]) as server,
        http_client(http2=False) as http,
    ):
        for host in ("localhost:9", "127.0.0.1", f"[::1]:{server.port}", "ACP.example.com."):
            response = await http.post(
                server.url, json=initialize_request(), headers={"Host": host}
            )
            assert response.status_code == 200, (host, response.text)
        refused = await http.post(
            server.url, json=initialize_request(), headers={"Host": "other.example.com"}
        )
        assert refused.status_code == 421


async def test_health_answers_any_host_but_not_a_web_page() -> None:
    """Issue 34: ``/health`` stays open to a load balancer's check whatever ``Host`` it sends
    (it carries only a status and two counts), and still refuses a browser ``Origin``."""
    async with serving(CountingBackend()) as server, http_client(http2=False) as http:
        health = f"http://127.0.0.1:{server.port}/health"
        checked = await http.get(health, headers={"Host": "backend-3.internal:8000"})
        from_page = await http.get(health, headers={"Origin": EVIL})
    assert checked.status_code == 200
    assert checked.json()["status"] == "ok"
    assert from_page.status_code == 403


@pytest.mark.parametrize("transport", ["http", "ws"])
async def test_the_url_client_still_works_without_an_origin(transport: str) -> None:
    """Issue 34: "a normal client still works": ``connect_agent_url`` (no ``Origin``, the
    server's own address or ``localhost`` as ``Host``) runs a turn over HTTP and WebSocket."""
    async with serving(agent_command(REFERENCE)) as server:
        url = server.websocket_url if transport == "ws" else server.url
        for base in (url, url.replace("127.0.0.1", "localhost")):
            with anyio.fail_after(WAIT):
                async with connect_agent_url(base) as agent:
                    session = await agent.new_session(cwd="/tmp")
                    result = await session.run("echo hello")
            assert result.stop_reason == "end_turn"


async def test_the_servers_own_origin_is_served_and_another_local_port_is_not() -> None:
    """Issue 34: a client library that sends the server's own origin (Python's
    websocket-client does: ``Origin: http://127.0.0.1:PORT``, the ``Host`` it connects to) is
    served, as no page can carry that origin (the server serves none); a page of another local
    server (``http://127.0.0.1:3000``, a dev server's) is refused."""
    async with serving(CountingBackend()) as server, http_client(http2=False) as http:
        own = f"http://127.0.0.1:{server.port}"
        async with aconnect_ws(
            server.url, http, headers={"Origin": own}, keepalive_ping_interval_seconds=None
        ) as ws:
            await ws.send_json(initialize_request(5))
            answer = await ws.receive_json(timeout=WAIT)
        other = await http.post(
            server.url, json=initialize_request(), headers={"Origin": "http://127.0.0.1:3000"}
        )
    assert answer["id"] == 5
    assert other.status_code == 403
