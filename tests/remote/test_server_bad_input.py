"""Bad input to ``/acp`` answered at once (issue 34, item 5): a body that is not one JSON-RPC
message gets 400 with a JSON-RPC error, before any connection or agent is made, with nothing
logged as an error (asyncio and trio)."""

from __future__ import annotations

import json
import logging

import anyio
import pytest
from httpx_ws import aconnect_ws

from tests.remote._origin_helpers import CountingBackend, serving
from tests.remote._server_helpers import WAIT, http_client, initialize_request

pytestmark = pytest.mark.anyio


def initialize_with(**fields: object) -> bytes:
    message: dict[str, object] = {**initialize_request(), **fields}
    return json.dumps(message).encode()


BAD_BODIES = {
    "nested 100k deep": b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
    + b"[" * 100_000
    + b"]" * 100_000
    + b"}",
    "nested 200 deep": initialize_with(params={"a": json.loads("[" * 200 + "]" * 200)}),
    "id null": initialize_with(id=None),
    "id 1.5": initialize_with(id=1.5),
    "id {}": initialize_with(id={}),
    "id true": initialize_with(id=True),
    "params a list": initialize_with(params=[1]),
    "params a string": initialize_with(params="x"),
    "method a number": initialize_with(method=5),
    "jsonrpc 1.0": initialize_with(jsonrpc="1.0"),
    "a string": b'"initialize"',
    "an answer with a null id": b'{"jsonrpc":"2.0","id":null,"result":{}}',
    "an error that is a string": b'{"jsonrpc":"2.0","id":1,"error":"no"}',
}


@pytest.mark.parametrize("body", BAD_BODIES.values(), ids=BAD_BODIES.keys())
async def test_bad_input_is_400_with_a_json_rpc_error_and_starts_no_agent(
    body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 34: "deep nesting, odd ids, wrong types → 400 with a JSON-RPC error and no
    traceback, no agent spawned" (an ``initialize`` with an id of null, 1.5 or {} used to wait
    30 s for its answer with an agent started; 100k levels of nesting answered 500)."""
    backend = CountingBackend()
    caplog.set_level(logging.DEBUG)
    async with serving(backend) as server, http_client() as http:
        with anyio.fail_after(WAIT):
            response = await http.post(
                server.url, content=body, headers={"Content-Type": "application/json"}
            )
        assert server.connection_count == 0
    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["jsonrpc"] == "2.0"
    assert answer["error"]["code"] in (-32700, -32600)
    assert answer["id"] in (None, 1)
    assert backend.started == 0
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_bad_frames_over_websocket_are_answered_and_the_connection_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 34: the same checks over a WebSocket: each bad frame gets its JSON-RPC error
    (the request's id when that one is valid), nothing is forwarded to the agent, nothing is
    logged as an error, and a good ``initialize`` is answered after them."""
    caplog.set_level(logging.DEBUG)
    async with serving(CountingBackend()) as server, http_client(http2=False) as http:
        url = server.websocket_url.replace("ws://", "http://")
        async with aconnect_ws(url, http, keepalive_ping_interval_seconds=None) as ws:
            for body in BAD_BODIES.values():
                await ws.send_text(body.decode())
                refused = await ws.receive_json(timeout=WAIT)
                assert refused["error"]["code"] in (-32700, -32600), refused
            await ws.send_text(json.dumps(initialize_request(7)))
            answer = await ws.receive_json(timeout=WAIT)
    assert answer["id"] == 7
    assert "result" in answer
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
