"""Claude Code bench driver: the official Python SDK ``claude-agent-sdk`` (``ClaudeSDKClient``),
in its own venv.

Runs with ``bench/.venvs/claude-agent-sdk/bin/python``. The SDK is pointed at the bench's CLI
through ``ClaudeAgentOptions(cli_path=...)`` (its bundled CLI is not used), with the same model,
``include_partial_messages=True`` (text deltas as ``StreamEvent``), ``setting_sources=[]`` and
``strict_mcp_config=True`` (so its argv carries the same flags as ``connect_claude``'s), and the
bench's environment as ``env`` (the SDK merges it over ``os.environ`` and adds its own
variables). spawn→initialize is timed around ``await client.connect()``, which starts the CLI
and returns once ``initialize`` is answered. A turn is ``client.query(prompt)`` then
``client.receive_response()`` up to its ``ResultMessage``.

The SDK is imported through ``importlib`` so that the project's type checker, which does not
see this venv, has nothing to resolve.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import time
from typing import Any

from claude_common import (
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

_T0 = time.perf_counter()
import anyio  # noqa: E402  (timed with the SDK, which needs it, as the subagents driver does)

sdk: Any = importlib.import_module("claude_agent_sdk")
IMPORT_MS = (time.perf_counter() - _T0) * 1e3


async def run_turn(client: Any, turn: Turn) -> None:
    text = PROMPT.format(n=turn.asked)
    turn.started()
    await client.query(text)
    status: str | None = None
    async for message in client.receive_response():
        turn.event()
        if isinstance(message, sdk.StreamEvent):
            delta = text_delta(message.event)
            if delta is not None:
                turn.delta(delta)
        elif isinstance(message, sdk.ResultMessage):
            status = status_of(message.subtype, message.is_error)
    turn.completed(status)


async def main() -> None:
    args = parse_args()
    env: dict[str, str] = json.loads(args.env)
    options = sdk.ClaudeAgentOptions(
        cli_path=args.cli,
        model=args.model,
        cwd=args.cwd,
        env=env,
        include_partial_messages=True,
        setting_sources=[],
        strict_mcp_config=True,
    )
    client = sdk.ClaudeSDKClient(options)
    init = Init()
    await client.connect()
    init_times = init.done()
    try:
        pid: int = client._transport._process.pid
        turns: list[Turn] = []
        for kind, asked in plan(args):
            turn = Turn(kind, asked, pid)
            await run_turn(client, turn)
            turns.append(turn)
        info = await client.get_server_info() or {}
    finally:
        await client.disconnect()
    write_result(
        args.out,
        {
            "impl": "claude-agent-sdk",
            "sdk_version": importlib.metadata.version("claude-agent-sdk"),
            "cli_version": info.get("claude_code_version"),
            "import_ms": IMPORT_MS,
            **init_times,
            "first_delta_from_spawn_ms": from_spawn_ms(init, turns[0]),
            "turns": [t.record for t in turns],
        },
    )


if __name__ == "__main__":
    anyio.run(main)
