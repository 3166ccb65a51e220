"""HTTPS: the server with a certificate and key serves ``https://.../acp`` (HTTP/2 by ALPN)
and ``wss://`` (asyncio and trio; the certificate is made by the ``openssl`` command)."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx
import pytest
from httpx_ws import aconnect_ws

from subagents.remote import RemoteServerConfigError, agent_command, serve_acp_http
from tests.remote._server_helpers import REFERENCE, WAIT, initialize_request

pytestmark = pytest.mark.anyio


async def test_https_serves_http2_and_wss(certificate: tuple[Path, Path]) -> None:
    """Beyond a trusted network the bearer token needs TLS: with a certificate the endpoint
    is https (HTTP/2 negotiated by ALPN, as the RFD requires HTTP/2) and the WebSocket wss."""
    cert, key = certificate
    trust = ssl.create_default_context(cafile=str(cert))
    backend = agent_command(REFERENCE)
    async with serve_acp_http(backend, tls_certfile=cert, tls_keyfile=key) as server:
        assert server.url.startswith("https://")
        async with httpx.AsyncClient(http2=True, verify=trust, timeout=WAIT) as http:
            response = await http.post(server.url, json=initialize_request())
            await http.delete(
                server.url, headers={"Acp-Connection-Id": response.headers["acp-connection-id"]}
            )
        async with (
            httpx.AsyncClient(verify=trust, timeout=WAIT) as http1,
            aconnect_ws(server.url, http1, keepalive_ping_interval_seconds=None) as ws,
        ):
            assert ws.response is not None
            assert ws.response.headers["acp-connection-id"]
    assert server.websocket_url.startswith("wss://")
    assert response.status_code == 200
    assert response.http_version == "HTTP/2"


async def test_tls_needs_both_files_and_readable_ones(tmp_path: Path) -> None:
    """A certificate without its key, or files that are not PEM, refuse to start (clearly)."""
    backend = agent_command(REFERENCE)
    with pytest.raises(RemoteServerConfigError, match="both"):
        async with serve_acp_http(backend, tls_certfile="c.pem"):
            pass
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate")
    with pytest.raises(RemoteServerConfigError, match="TLS"):
        async with serve_acp_http(backend, tls_certfile=bad, tls_keyfile=bad):
            pass
