"""Floor echo agent: framework-free asyncio JSON lines with the stdlib json module.

``connect_read_pipe``/``connect_write_pipe`` on the process's stdin/stdout, handlers run
inline in the read loop, one ``write()`` per message, and it waits for the pipe to drain
only when more than 64 KiB are buffered.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from typing import Any

from _wire import RAISED_LIMIT, parse_prompt

HIGH_WATER = 64 * 1024

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


class _Writer(asyncio.BaseProtocol):
    def __init__(self) -> None:
        self._resumed: asyncio.Future[None] | None = None
        self.closed = False

    def pause_writing(self) -> None:
        if self._resumed is None:
            self._resumed = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        fut, self._resumed = self._resumed, None
        if fut is not None and not fut.done():
            fut.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.resume_writing()

    async def drain(self) -> None:
        if self._resumed is not None:
            await self._resumed


async def main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=RAISED_LIMIT * 2)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    transport, proto = await loop.connect_write_pipe(_Writer, sys.stdout.buffer)
    write = transport.write
    buffered = transport.get_write_buffer_size
    session_id = uuid.uuid4().hex

    async def send(msg: dict[str, Any]) -> None:
        write((_encode(msg) + "\n").encode())
        if buffered() > HIGH_WATER:
            await proto.drain()

    async def prompt(params: dict[str, Any]) -> dict[str, Any]:
        text: str = params["prompt"][0]["text"]
        n, size, ack = parse_prompt(text)
        sid = params["sessionId"]
        if ack:
            await send(_chunk(sid, f"len={len(text)}"))
        payload = "x" * size
        for _ in range(n):
            await send(_chunk(sid, payload))
        return {"stopReason": "end_turn"}

    while True:
        line = await reader.readline()
        if not line:
            break
        msg = json.loads(line)
        method = msg.get("method")
        if "id" not in msg:
            continue  # notifications (session/cancel) need no answer here
        if method == "session/prompt":
            result: Any = await prompt(msg["params"])
        elif method == "initialize":
            result = {
                "protocolVersion": 1,
                "agentCapabilities": {},
                "agentInfo": {"name": "bench-floor", "version": "0"},
            }
        elif method == "session/new":
            result = {"sessionId": session_id}
        else:
            await send(
                {
                    "jsonrpc": "2.0",
                    "id": msg["id"],
                    "error": {"code": -32601, "message": "Method not found"},
                }
            )
            continue
        await send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    await proto.drain()
    transport.close()


def _chunk(session_id: str, text: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": session_id,
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text},
            },
        },
    }


if __name__ == "__main__":
    asyncio.run(main())
