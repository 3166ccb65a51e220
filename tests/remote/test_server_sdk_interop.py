"""The official Python SDK's remote clients (``agent-client-protocol`` 0.12.1:
``acp.http.create_http_stream`` and ``acp.ws.create_websocket_stream``, with
``acp.connect_to_agent``) against our server fronting the reference agent: a full prompt
turn, a permission round trip and a cancellation, over Streamable HTTP and over WebSocket.

The SDK's clients are written on asyncio (tasks, ``asyncio.Queue``; the WebSocket one on
``websockets``' asyncio API), so they run in a subprocess (``sdk_client_script.py``, on its
own asyncio loop) while our server runs in the test's process, on asyncio and on trio.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from subagents.remote import RemoteServer
from tests.remote._server_helpers import WAIT

pytestmark = pytest.mark.anyio

SCRIPT = Path(__file__).with_name("sdk_client_script.py")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("profile", ["http", "websocket"])
async def test_the_sdk_client_runs_a_turn_a_permission_and_a_cancellation(
    reference_server: RemoteServer, profile: str
) -> None:
    """Issue 20 interop: "the official SDK's client (acp.http.create_http_stream, acp.ws
    client) against our server — a full prompt turn, a cancellation, a permission round
    trip"."""
    with anyio.fail_after(WAIT * 3):
        done = await anyio.run_process(
            [sys.executable, str(SCRIPT), reference_server.url, profile], cwd=ROOT, check=False
        )
    assert done.returncode == 0, done.stderr.decode()
    result = json.loads(done.stdout)
    assert result == {
        "protocol_version": 1,
        "turn": "end_turn",
        "streamed": ["1 ", "2 ", "3 "],
        "tool": "end_turn",
        "permissions": 1,
        "cancelled": "cancelled",
    }
