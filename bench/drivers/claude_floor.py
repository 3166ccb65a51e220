"""Claude Code bench driver: the floor, a minimal asyncio stream-json client of the CLI.

The argv and environment are those ``connect_claude`` computes (given by the bench). The
driver writes the ``initialize`` control request, reads lines inline until its answer, then
per turn writes the user message and reads lines inline until the ``result``, parsing each
with stdlib ``json``. Control requests from the CLI (none are expected here) get an error.
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()
import asyncio  # noqa: E402
import json  # noqa: E402
from typing import Any  # noqa: E402

IMPORT_MS = (time.perf_counter() - _T0) * 1e3

from claude_common import (  # noqa: E402
    PROMPT,
    Init,
    Turn,
    from_spawn_ms,
    parse_args,
    plan,
    status_of,
    text_delta,
    write_result,
)


class Floor:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdin is not None
        assert proc.stdout is not None
        self.proc = proc
        self.stdin = proc.stdin
        self.stdout = proc.stdout

    def send(self, message: dict[str, Any]) -> None:
        self.stdin.write(json.dumps(message).encode() + b"\n")

    async def read(self) -> dict[str, Any]:
        while True:
            line = await self.stdout.readline()
            if not line:
                raise EOFError(f"claude closed stdout (exit {await self.proc.wait()})")
            if not line.startswith(b"{"):
                continue
            message: dict[str, Any] = json.loads(line)
            if message.get("type") == "control_request":  # from the CLI: refuse it
                answer = {
                    "subtype": "error",
                    "request_id": message.get("request_id"),
                    "error": "not handled",
                }
                self.send({"type": "control_response", "response": answer})
                continue
            return message

    async def initialize(self) -> dict[str, Any]:
        request = {"subtype": "initialize", "hooks": None}
        self.send({"type": "control_request", "request_id": "req_1", "request": request})
        while True:
            message = await self.read()
            if message.get("type") != "control_response":
                continue
            response = message.get("response") or {}
            if response.get("request_id") == "req_1":
                if response.get("subtype") == "error":
                    raise RuntimeError(f"initialize: {response.get('error')}")
                return response.get("response") or {}

    async def turn(self, turn: Turn) -> None:
        user = {"role": "user", "content": PROMPT.format(n=turn.asked)}
        turn.started()
        self.send(
            {"type": "user", "message": user, "parent_tool_use_id": None, "session_id": "default"}
        )
        while True:
            message = await self.read()
            turn.event()
            kind = message.get("type")
            if kind == "stream_event":
                text = text_delta(message.get("event"))
                if text is not None:
                    turn.delta(text)
            elif kind == "result":
                turn.completed(status_of(message.get("subtype"), message.get("is_error") is True))
                return


async def main() -> None:
    args = parse_args()
    command: list[str] = json.loads(args.command)
    env: dict[str, str] = json.loads(args.child_env)
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
    try:
        floor = Floor(proc)
        init = await floor.initialize()
        init_times = timer.done()
        turns: list[Turn] = []
        for kind, asked in plan(args):
            turn = Turn(kind, asked, proc.pid)
            await floor.turn(turn)
            turns.append(turn)
        floor.stdin.close()
        await asyncio.wait_for(proc.wait(), 10)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    write_result(
        args.out,
        {
            "impl": "floor",
            "cli_version": init.get("claude_code_version"),
            "import_ms": IMPORT_MS,
            **init_times,
            "first_delta_from_spawn_ms": from_spawn_ms(timer, turns[0]),
            "turns": [t.record for t in turns],
        },
    )


if __name__ == "__main__":
    asyncio.run(main())
