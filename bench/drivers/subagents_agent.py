"""subagents echo agent: the ``subagents.rpc`` peer over ``open_stdio_streams()``.

Same echo behaviour as the other agents (see ``_common``), on the raw JSON-RPC peer with
untyped handlers; ``max_message_bytes`` is raised above 64 MiB.
"""

from __future__ import annotations

import uuid
from typing import Any

import anyio
from _wire import RAISED_LIMIT, parse_prompt

from subagents.protocol.jsonrpc import JsonValue
from subagents.rpc import Peer, Router, open_peer
from subagents.transports import open_stdio_streams


def _chunk(session_id: str, text: str) -> JsonValue:
    return {
        "sessionId": session_id,
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": text},
        },
    }


async def main() -> None:
    session_id = uuid.uuid4().hex
    peer: Peer | None = None
    router = Router()

    async def initialize(params: JsonValue) -> JsonValue:
        return {
            "protocolVersion": 1,
            "agentCapabilities": {},
            "agentInfo": {"name": "bench-subagents", "version": "0"},
        }

    async def new_session(params: JsonValue) -> JsonValue:
        return {"sessionId": session_id}

    async def prompt(params: Any) -> JsonValue:
        assert peer is not None
        text: str = params["prompt"][0]["text"]
        sid: str = params["sessionId"]
        n, size, ack = parse_prompt(text)
        notify = peer.notify
        if ack:
            await notify("session/update", _chunk(sid, f"len={len(text)}"))
        payload = "x" * size
        for _ in range(n):
            await notify("session/update", _chunk(sid, payload))
        return {"stopReason": "end_turn"}

    router.on_request("initialize", initialize)
    router.on_request("session/new", new_session)
    router.on_request("session/prompt", prompt)

    async with (
        open_stdio_streams() as (receive, send),
        open_peer(receive, send, router=router, max_message_bytes=RAISED_LIMIT, name="agent") as p,
    ):
        peer = p
        await p.wait_closed()


if __name__ == "__main__":
    anyio.run(main)
