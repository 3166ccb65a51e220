"""subagents typed endpoints: ``connect_agent`` driving ``python -m subagents.agents.reference``.

Start-up only (the ``spawn`` phase: spawn → ``initialize`` answer, RSS of both sides after it):
the reference agent is a scripted conformance fixture, not an echo agent, so the message
phases do not apply. Timed from entering ``connect_agent(...)`` to the connection it yields,
which exists once ``initialize`` was answered and validated into the typed models; leaving the
block runs the endpoint's shutdown (close stdin, wait for the exit).

The client's own imports (``subagents.transports.acp_client``) are done before any timing. The
generated models are built on first use, so the client's share of that lands in the first
spawn (``first_ms``); the agent builds its models again in every fresh process.
"""

from __future__ import annotations

import importlib.metadata
import sys
import time
from typing import Any

import anyio
from _common import driver_args, spawn_phase, spawn_sample, want_spawn, write_result

from subagents.transports.acp_client import connect_agent

COMMAND = [sys.executable, "-m", "subagents.agents.reference"]


async def spawn_once() -> dict[str, Any]:
    t0 = time.perf_counter()
    async with connect_agent(COMMAND, start_timeout=20.0, initialize_timeout=20.0) as agent:
        assert agent.process is not None
        return spawn_sample(t0, agent.process.pid)


async def main() -> None:
    args = driver_args(__doc__ or "")
    phases: dict[str, Any] = {}
    if want_spawn(args.only):
        phases["spawn"] = await spawn_phase(spawn_once)
    write_result(
        args.out,
        {
            "impl": "subagents/reference-agent",
            "python": sys.version.split()[0],
            "subagents_version": importlib.metadata.version("subagents"),
            "command": " ".join(["python", *COMMAND[1:]]),
            "phases": phases,
        },
    )


if __name__ == "__main__":
    anyio.run(main)
