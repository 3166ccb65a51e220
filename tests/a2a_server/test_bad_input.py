"""Bad input to ``serve --a2a`` answered at once (issue 34, item 5): a body that is not one
JSON-RPC message gets 400 with a JSON-RPC error before the SDK sees it (whose own checks log
tracebacks at ERROR), and starts no task (asyncio: the A2A server's loop)."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

pytest.importorskip("a2a.server")

from tests.a2a_server.test_origin import SEND, serving


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def send_with(**fields: object) -> bytes:
    return json.dumps({**SEND, **fields}).encode()


BAD_BODIES = {
    "nested 100k deep": b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":'
    + b"[" * 100_000
    + b"]" * 100_000
    + b"}",
    "id null": send_with(id=None),
    "id 1.5": send_with(id=1.5),
    "id {}": send_with(id={}),
    "params a list": send_with(params=[1]),
    "method a number": send_with(method=5),
    "not json": b"{nope",
}


@pytest.mark.anyio
@pytest.mark.parametrize("body", BAD_BODIES.values(), ids=BAD_BODIES.keys())
async def test_bad_input_is_400_with_a_json_rpc_error_and_nothing_logged(
    body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 34: "deep nesting, odd ids, wrong types → 400 with a JSON-RPC error and no
    traceback" on ``--a2a`` too (the SDK answered 100k levels of nesting with an internal
    error and logged a traceback for each odd id), and no task starts."""
    caplog.set_level(logging.DEBUG)
    async with serving() as server, httpx.AsyncClient(timeout=30) as http:
        response = await http.post(
            server.url, content=body, headers={"Content-Type": "application/json"}
        )
        assert not server.executor.contexts
    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["error"]["code"] in (-32700, -32600)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
