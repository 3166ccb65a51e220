"""Claude Code bench driver: ``subagents.transports.claude_code.connect_claude`` (typed
events, asyncio backend).

spawn→initialize is timed from entering ``connect_claude`` to the connection it yields
(``initialize`` answered). Text deltas are ``ClaudeStreamEvent.text_delta``; a turn ends at
its ``ClaudeResult``.
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()
import json  # noqa: E402

import anyio  # noqa: E402
from claude_common import (  # noqa: E402
    PROMPT,
    Init,
    Turn,
    from_spawn_ms,
    parse_args,
    plan,
    status_of,
    write_result,
)

from subagents.transports.claude_code import (  # noqa: E402
    ClaudeConnection,
    ClaudeOptions,
    ClaudeStreamEvent,
    connect_claude,
)

IMPORT_MS = (time.perf_counter() - _T0) * 1e3


async def run_turn(conn: ClaudeConnection, turn: Turn) -> None:
    text = PROMPT.format(n=turn.asked)
    turn.started()
    async with conn.turn(text) as handle:
        async for event in handle:
            turn.event()
            if isinstance(event, ClaudeStreamEvent):
                delta = event.text_delta
                if delta is not None:
                    turn.delta(delta)
        result = await handle.result()
    turn.completed(status_of(result.subtype, result.is_error))


async def main() -> None:
    args = parse_args()
    env: dict[str, str] = json.loads(args.env)
    options = ClaudeOptions(model=args.model, config_dir=env["CLAUDE_CONFIG_DIR"])
    init = Init()
    async with connect_claude(args.cli, options, env=env, cwd=args.cwd) as conn:
        init_times = init.done()
        assert conn.process is not None
        pid = conn.process.pid
        turns: list[Turn] = []
        for kind, asked in plan(args):
            turn = Turn(kind, asked, pid)
            await run_turn(conn, turn)
            turns.append(turn)
        cli_version = conn.init_response.get("claude_code_version")
    write_result(
        args.out,
        {
            "impl": "subagents",
            "cli_version": cli_version,
            "import_ms": IMPORT_MS,
            **init_times,
            "first_delta_from_spawn_ms": from_spawn_ms(init, turns[0]),
            "turns": [t.record for t in turns],
        },
    )


if __name__ == "__main__":
    anyio.run(main)
