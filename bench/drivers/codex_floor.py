"""Codex bench driver: the floor, a minimal asyncio JSONL client of ``codex app-server``.

No tasks, no routing: the requests go one at a time, and the driver reads lines inline until
the answer it waits for (or ``turn/completed``), parsing each with stdlib ``json``. Server
requests (none are expected with approval ``never``) get a JSON-RPC error.
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()
import asyncio  # noqa: E402
import json  # noqa: E402
from typing import Any  # noqa: E402

IMPORT_MS = (time.perf_counter() - _T0) * 1e3

from codex_common import DELTA_METHOD, PROMPT, Init, Turn, parse_args, plan, write_result  # noqa: E402


class Floor:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdin is not None
        assert proc.stdout is not None
        self.proc = proc
        self.stdin = proc.stdin
        self.stdout = proc.stdout
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        self.stdin.write(json.dumps(message).encode() + b"\n")

    async def read(self) -> dict[str, Any]:
        line = await self.stdout.readline()
        if not line:
            raise EOFError(f"codex closed stdout (exit {await self.proc.wait()})")
        message: dict[str, Any] = json.loads(line)
        if "id" in message and "method" in message:  # a server request: refuse it
            error = {"code": -32601, "message": "not handled"}
            self.send({"id": message["id"], "error": error})
        return message

    async def call(self, method: str, params: Any) -> Any:
        self.next_id += 1
        rid = self.next_id
        self.send({"id": rid, "method": method, "params": params})
        while True:
            message = await self.read()
            if message.get("id") == rid and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    async def turn(self, thread_id: str, turn: Turn) -> None:
        text = PROMPT.format(n=turn.asked)
        self.next_id += 1
        params = {"threadId": thread_id, "input": [{"type": "text", "text": text}]}
        turn.started()
        self.send({"id": self.next_id, "method": "turn/start", "params": params})
        while True:
            message = await self.read()
            method = message.get("method")
            if method == DELTA_METHOD:
                turn.delta(message["params"]["delta"])
            elif method == "turn/completed":
                turn.completed(message["params"]["turn"]["status"])
                return
            elif "error" in message:
                raise RuntimeError(f"turn/start: {message['error']}")


async def main() -> None:
    args = parse_args()
    command: list[str] = json.loads(args.command)
    env: dict[str, str] = json.loads(args.env)
    timer = Init()
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
        cwd=args.cwd,
        limit=1 << 24,
    )
    floor = Floor(proc)
    init = await floor.call(
        "initialize",
        {
            "clientInfo": {"name": "bench_floor", "version": "0"},
            "capabilities": {"experimentalApi": False},
        },
    )
    init_times = timer.done()
    floor.send({"method": "initialized"})
    t1 = time.perf_counter()
    started = await floor.call("thread/start", {})
    thread_start_ms = (time.perf_counter() - t1) * 1e3
    turns: list[dict[str, Any]] = []
    for kind, asked in plan(args):
        turn = Turn(kind, asked, proc.pid)
        await floor.turn(started["thread"]["id"], turn)
        turns.append(turn.record)
    floor.stdin.close()
    await proc.wait()
    write_result(
        args.out,
        {
            "impl": "floor",
            "user_agent": init.get("userAgent"),
            "import_ms": IMPORT_MS,
            **init_times,
            "thread_start_ms": thread_start_ms,
            "turns": turns,
        },
    )


if __name__ == "__main__":
    asyncio.run(main())
