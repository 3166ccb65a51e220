"""What a plain ACP client session costs to start: imports plus first use, no agent process.

    .venv/bin/python bench/drivers/client_session_probe.py

Imports the client endpoint (``subagents.transports.acp_client``), then runs one whole session
through ``connect_agent_over`` — ``initialize``, ``session/new``, one ``session/prompt`` that
streams one ``agent_message_chunk`` — against a canned in-process agent on two OS pipes (stdlib
json, no agent process, so nothing but the client's own work is timed). The generated models
are built on first use, so that first session pays for them; a second, identical session shows
what is left once they are built. Prints one JSON object (milliseconds, ``perf_counter``)::

    {"import_ms": ..., "first_session_ms": ..., "second_session_ms": ...}

``bench/run.py`` times the whole process (interpreter start-up included) against
``python -c "import acp"`` in the acp-py venv.
"""

from __future__ import annotations

import time

t0 = time.perf_counter()
import subagents.transports.acp_client as acp_client  # noqa: E402

t_import = time.perf_counter() - t0

import json  # noqa: E402  (already loaded by the import above)
import os  # noqa: E402
from typing import Any  # noqa: E402

import anyio  # noqa: E402
import anyio.abc  # noqa: E402

from subagents.transports import wrap_pipe_fds  # noqa: E402


async def canned_agent(
    receive: anyio.abc.ByteReceiveStream, send: anyio.abc.ByteSendStream
) -> None:
    """Answer initialize, session/new and session/prompt (after one chunk) until EOF."""
    buf = b""
    while True:
        try:
            buf += await receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return
        *lines, buf = buf.split(b"\n")
        for line in lines:
            msg = json.loads(line)
            method, msg_id = msg.get("method"), msg.get("id")
            result: Any
            if method == "initialize":
                result = {
                    "protocolVersion": 1,
                    "agentCapabilities": {},
                    "agentInfo": {"name": "canned", "version": "0"},
                }
            elif method == "session/new":
                result = {"sessionId": "s1"}
            elif method == "session/prompt":
                chunk = {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {
                        "sessionId": "s1",
                        "update": {
                            "sessionUpdate": "agent_message_chunk",
                            "content": {"type": "text", "text": "hello"},
                        },
                    },
                }
                await send.send(json.dumps(chunk).encode() + b"\n")
                result = {"stopReason": "end_turn"}
            else:
                continue
            reply = {"jsonrpc": "2.0", "id": msg_id, "result": result}
            await send.send(json.dumps(reply).encode() + b"\n")


async def one_session() -> float:
    to_agent_r, to_agent_w = os.pipe()
    to_client_r, to_client_w = os.pipe()
    agent_receive, agent_send = await wrap_pipe_fds(to_agent_r, to_client_w)
    client_receive, client_send = await wrap_pipe_fds(to_client_r, to_agent_w)
    t = time.perf_counter()
    elapsed = float("nan")
    async with anyio.create_task_group() as tg:
        tg.start_soon(canned_agent, agent_receive, agent_send)
        async with acp_client.connect_agent_over(client_receive, client_send) as agent:
            session = await agent.new_session(cwd="/")
            texts: list[str] = []
            async with session.prompt("hi") as turn:
                async for update in turn:
                    content = getattr(update, "content", None)
                    texts.append(getattr(content, "text", ""))
            assert turn.stop_reason == "end_turn", turn.stop_reason
            assert texts == ["hello"], texts
        elapsed = time.perf_counter() - t
        await client_send.aclose()
        await client_receive.aclose()
    await agent_send.aclose()
    await agent_receive.aclose()
    return elapsed


async def main() -> None:
    first = await one_session()
    second = await one_session()
    out = {"import_ms": t_import * 1e3, "first_session_ms": first * 1e3}
    out["second_session_ms"] = second * 1e3
    print(json.dumps(out))


if __name__ == "__main__":
    anyio.run(main)
