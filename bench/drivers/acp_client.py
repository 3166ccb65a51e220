"""acp-py client driver: ``acp.spawn_agent_process`` + ``ClientSideConnection``.

Runs only inside bench/.venvs/acp-py. The agent's stderr is inherited (the orchestrator
sends it to a log file) instead of the SDK's default ``stderr=PIPE``, which nobody reads
and which deadlocks once the agent has logged 64 KiB.
"""
# pyright: reportMissingImports=false, reportMissingModuleSource=false

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any

import acp
from _common import (
    Counter,
    driver_args,
    run_phases,
    spawn_phase,
    spawn_sample,
    want_messages,
    want_spawn,
    workload,
    write_result,
)
from acp.schema import ClientCapabilities, Implementation

AGENT = Path(__file__).with_name("acp_agent.py")


class EchoClient:
    """The ``acp.Client`` side: counts agent_message_chunk texts."""

    def __init__(self, counter: Counter) -> None:
        self._on_text = counter.on_text

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if update.session_update == "agent_message_chunk":
            self._on_text(update.content.text)

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("session/request_permission")

    async def read_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("fs/read_text_file")

    async def write_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("fs/write_text_file")


class Adapter:
    def __init__(self, conn: Any, pid: int, counter: Counter) -> None:
        self._conn = conn
        self.agent_pid = pid
        self.counter = counter
        self.session_id = ""

    async def prompt(self, text: str) -> str:
        resp = await self._conn.prompt(session_id=self.session_id, prompt=[acp.text_block(text)])
        return resp.stop_reason


def telemetry_state() -> dict[str, Any]:
    """Make sure no optional telemetry sits on the hot path."""
    import acp.telemetry as tel

    return {
        "opentelemetry_importable": importlib.util.find_spec("opentelemetry") is not None,
        "logfire_importable": importlib.util.find_spec("logfire") is not None,
        "acp_tracer_active": getattr(tel, "TRACER", None) is not None
        or getattr(tel, "logfire_span", None) is not None,
    }


async def spawn_once() -> dict[str, Any]:
    t0 = time.perf_counter()
    async with acp.spawn_agent_process(
        EchoClient(Counter()),
        sys.executable,
        str(AGENT),
        transport_kwargs={"stderr": None},
    ) as (conn, proc):
        await conn.initialize(
            protocol_version=1,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="bench", version="0"),
        )
        return spawn_sample(t0, proc.pid)


async def main() -> None:
    args = driver_args(__doc__ or "")
    w = workload(args.quick)
    spawn = await spawn_phase(spawn_once) if want_spawn(args.only) else None
    if not want_messages(args.only):
        write_result(args.out, {"impl": "acp-py", "phases": {"spawn": spawn}})
        return
    counter = Counter()
    t0 = time.perf_counter()
    async with acp.spawn_agent_process(
        EchoClient(counter),
        sys.executable,
        str(AGENT),
        transport_kwargs={"stderr": None},
    ) as (conn, proc):
        await conn.initialize(
            protocol_version=1,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="bench", version="0"),
        )
        new = await conn.new_session(cwd=os.getcwd(), mcp_servers=[])
        init_s = time.perf_counter() - t0
        cli = Adapter(conn, proc.pid, counter)
        cli.session_id = new.session_id
        phases = await run_phases(cli, w, only=args.only)
    if spawn is not None:
        phases = {"spawn": spawn, **phases}
    write_result(
        args.out,
        {
            "impl": "acp-py",
            "python": sys.version.split()[0],
            "acp_version": importlib.metadata.version("agent-client-protocol"),
            "pydantic_version": importlib.metadata.version("pydantic"),
            "spawn_init_s": init_s,
            "telemetry": telemetry_state(),
            "limit": "client: asyncio default 64 KiB with reassembly; agent: 50 MB, reassembly",
            "phases": phases,
        },
    )


if __name__ == "__main__":
    asyncio.run(main())
