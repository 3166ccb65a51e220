"""Codex bench driver: the official Python SDK ``openai-codex`` (sync API), in its own venv.

Runs with ``bench/.venvs/openai-codex/bin/python``. The SDK is pointed at the bench's codex
binary through ``CodexConfig.codex_bin`` (the argv it then builds is the same
``[codex, "app-server", "--listen", "stdio://"]``), so its bundled 0.163.0 binary is not used.
spawn→initialize is timed around ``Codex(config)``, which starts the process and returns once
``initialize`` is answered (and ``initialized`` sent). Threads start with
``ApprovalMode.deny_all`` (``approvalPolicy: "never"``, as the other drivers get from the
``config.toml``), not the SDK's default auto-review.

The SDK is imported through ``importlib`` so that the project's type checker, which does not
see this venv, has nothing to resolve.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import time
from typing import Any

from codex_common import DELTA_METHOD, PROMPT, Init, Turn, parse_args, plan, write_result

_T0 = time.perf_counter()
sdk: Any = importlib.import_module("openai_codex")
IMPORT_MS = (time.perf_counter() - _T0) * 1e3


def run_turn(thread: Any, turn: Turn) -> None:
    text = PROMPT.format(n=turn.asked)
    turn.started()
    handle = thread.turn(text)
    status: str | None = None
    for event in handle.stream():
        if event.method == DELTA_METHOD:
            turn.delta(event.payload.delta)
        elif event.method == "turn/completed":
            status = str(getattr(event.payload.turn.status, "value", event.payload.turn.status))
    turn.completed(status)


def main() -> None:
    args = parse_args()
    command: list[str] = json.loads(args.command)
    env: dict[str, str] = json.loads(args.env)
    config = sdk.CodexConfig(codex_bin=command[0], cwd=args.cwd, env=env)
    init = Init()
    codex = sdk.Codex(config)
    init_times = init.done()
    try:
        pid: int = codex._client._proc.pid
        t1 = time.perf_counter()
        thread = codex.thread_start(approval_mode=sdk.ApprovalMode.deny_all)
        thread_start_ms = (time.perf_counter() - t1) * 1e3
        turns: list[dict[str, Any]] = []
        for kind, asked in plan(args):
            turn = Turn(kind, asked, pid)
            run_turn(thread, turn)
            turns.append(turn.record)
        user_agent = codex.metadata.userAgent
    finally:
        codex.close()
    write_result(
        args.out,
        {
            "impl": "openai-codex",
            "sdk_version": importlib.metadata.version("openai-codex"),
            "user_agent": user_agent,
            "import_ms": IMPORT_MS,
            **init_times,
            "thread_start_ms": thread_start_ms,
            "turns": turns,
        },
    )


if __name__ == "__main__":
    main()
