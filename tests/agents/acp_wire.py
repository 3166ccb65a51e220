"""Raw ACP lines for tests that play the client by hand (see `tests.rpc.wire.Wire`)."""

from __future__ import annotations

from typing import Any

from subagents.protocol import JsonValue
from tests.rpc.wire import Wire

Msg = dict[str, Any]

INIT: Msg = {"protocolVersion": 1, "clientInfo": {"name": "test", "version": "0"}}


def request(id_: int, method: str, params: JsonValue = None) -> Msg:
    msg: Msg = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def reply(id_: Any, result: JsonValue) -> Msg:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def notification(method: str, params: JsonValue) -> Msg:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def prompt(id_: int, session_id: str, text: str) -> Msg:
    params: Msg = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    return request(id_, "session/prompt", params)


def cancel(session_id: str) -> Msg:
    return notification("session/cancel", {"sessionId": session_id})


def chunk_text(msg: Msg) -> str:
    """The text of an `agent_message_chunk` update."""
    assert msg["method"] == "session/update", msg
    update = msg["params"]["update"]
    assert update["sessionUpdate"] == "agent_message_chunk", update
    return update["content"]["text"]


def update_kind(msg: Msg) -> str:
    assert msg["method"] == "session/update", msg
    return msg["params"]["update"]["sessionUpdate"]


async def call(wire: Wire, id_: int, method: str, params: JsonValue = None) -> Msg:
    """Send a request and return its answer (nothing else may come in between)."""
    await wire.write_json(request(id_, method, params))
    answer = await wire.read()
    assert answer.get("id") == id_, answer
    assert "method" not in answer, answer
    return answer


async def initialize(wire: Wire, capabilities: JsonValue = None) -> Msg:
    """`initialize` (version 1) with `capabilities`; the result."""
    params: Msg = dict(INIT)
    if capabilities is not None:
        params["clientCapabilities"] = capabilities
    answer = await call(wire, 0, "initialize", params)
    assert "result" in answer, answer
    return answer["result"]


async def new_session(wire: Wire, id_: int = 1, cwd: str = "/tmp") -> str:
    """`session/new`; the session id."""
    answer = await call(wire, id_, "session/new", {"cwd": cwd, "mcpServers": []})
    session_id = answer["result"]["sessionId"]
    assert isinstance(session_id, str)
    return session_id


async def read_until_answer(wire: Wire, id_: int) -> tuple[list[Msg], Msg]:
    """The messages before the answer to `id_`, and the answer."""
    before: list[Msg] = []
    while True:
        msg = await wire.read()
        if msg.get("id") == id_ and "method" not in msg:
            return before, msg
        before.append(msg)
