"""Codex bench driver: ``subagents.transports.connect_codex`` (typed events, asyncio backend).

spawn→initialize is timed from entering ``connect_codex`` to the connection it yields
(``initialize`` answered and validated, ``initialized`` sent).
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()
import json  # noqa: E402
from typing import Any  # noqa: E402

import anyio  # noqa: E402
from codex_common import PROMPT, Init, Turn, parse_args, plan, write_result  # noqa: E402

from subagents.transports.codex_app_server import (  # noqa: E402
    AgentMessageDelta,
    CodexThread,
    connect_codex,
)

IMPORT_MS = (time.perf_counter() - _T0) * 1e3


async def run_turn(thread: CodexThread, turn: Turn) -> None:
    text = PROMPT.format(n=turn.asked)
    turn.started()
    async with thread.turn(text) as handle:
        async for event in handle:
            if isinstance(event, AgentMessageDelta):
                turn.delta(event.delta)
        result = await handle.result()
    turn.completed(result.status)


async def main() -> None:
    args = parse_args()
    command: list[str] = json.loads(args.command)
    env: dict[str, str] = json.loads(args.env)
    init = Init()
    async with connect_codex(command, env=env, cwd=args.cwd) as conn:
        init_times = init.done()
        assert conn.process is not None
        pid = conn.process.pid
        t1 = time.perf_counter()
        thread = await conn.start_thread()
        thread_start_ms = (time.perf_counter() - t1) * 1e3
        turns: list[dict[str, Any]] = []
        for kind, asked in plan(args):
            turn = Turn(kind, asked, pid)
            await run_turn(thread, turn)
            turns.append(turn.record)
        user_agent = conn.user_agent
    write_result(
        args.out,
        {
            "impl": "subagents",
            "user_agent": user_agent,
            "import_ms": IMPORT_MS,
            **init_times,
            "thread_start_ms": thread_start_ms,
            "turns": turns,
        },
    )


if __name__ == "__main__":
    anyio.run(main)
