"""A minimal ACP agent that ignores ``session/cancel``: a prompt ticks until it is killed.

Stdlib only; it stands for an agent that does not honour cancellation, so that the tests of
``subagents run`` can show that a second Ctrl-C stops such an agent outright. It also keeps
running after its stdin ends (only a signal, or a broken stdout, ends it).
"""

from __future__ import annotations

import json
import os
import select
import sys
import time


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    buffer = b""
    ticking: str | None = None  # the session id whose prompt runs
    stdin_open = True
    count = 0
    while True:
        readable = []
        if stdin_open:
            readable, _, _ = select.select([sys.stdin.fileno()], [], [], 0.1)
        else:
            time.sleep(0.1)
        if readable:
            chunk = os.read(sys.stdin.fileno(), 65536)
            if not chunk:
                stdin_open = False
            buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if not line.strip():
                continue
            message = json.loads(line)
            method = message.get("method")
            if method == "initialize":
                result: dict[str, object] = {
                    "protocolVersion": 1,
                    "agentCapabilities": {},
                    "authMethods": [],
                }
                send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            elif method == "session/new":
                send({"jsonrpc": "2.0", "id": message["id"], "result": {"sessionId": "s1"}})
            elif method == "session/prompt":
                ticking = message["params"]["sessionId"]
            # session/cancel and everything else: ignored
        if ticking is not None:
            count += 1
            update = {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": f"tick {count} "},
            }
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {"sessionId": ticking, "update": update},
                }
            )


if __name__ == "__main__":
    main()
