"""Floor client driver: asyncio subprocess pipes, one reader task, a dict of futures.

Stdlib json, no framework. Runs every phase against one freshly spawned ``floor_agent.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from _common import (
    RAISED_LIMIT,
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

HIGH_WATER = 64 * 1024
AGENT = Path(__file__).with_name("floor_agent.py")

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


class RemoteError(Exception):
    pass


class FloorClient:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdin is not None
        assert proc.stdout is not None
        self.proc = proc
        self.agent_pid = proc.pid
        self.counter = Counter()
        self.session_id = ""
        self._stdin = proc.stdin
        self._stdout = proc.stdout
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())

    async def _read_loop(self) -> None:
        readline = self._stdout.readline
        loads = json.loads
        pending = self._pending
        on_text = self.counter.on_text
        try:
            while True:
                line = await readline()
                if not line:
                    break
                msg = loads(line)
                method = msg.get("method")
                if method is not None:
                    if method == "session/update":
                        update = msg["params"]["update"]
                        if update.get("sessionUpdate") == "agent_message_chunk":
                            on_text(update["content"]["text"])
                    continue
                fut = pending.pop(msg.get("id"), None)
                if fut is None or fut.done():
                    continue
                if "error" in msg:
                    fut.set_exception(RemoteError(msg["error"]))
                else:
                    fut.set_result(msg.get("result"))
        finally:
            for fut in pending.values():
                if not fut.done():
                    fut.set_exception(ConnectionError("agent closed its stdout"))
            pending.clear()

    async def request(self, method: str, params: Any) -> Any:
        msg_id = self._next_id
        self._next_id += 1
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = fut
        msg = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        self._stdin.write((_encode(msg) + "\n").encode())
        if self._stdin.transport.get_write_buffer_size() > HIGH_WATER:
            await self._stdin.drain()
        return await fut

    async def prompt(self, text: str) -> str:
        result = await self.request(
            "session/prompt",
            {"sessionId": self.session_id, "prompt": [{"type": "text", "text": text}]},
        )
        return result["stopReason"]

    async def aclose(self) -> None:
        self._stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 5)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        self._reader.cancel()


INIT_PARAMS = {
    "protocolVersion": 1,
    "clientCapabilities": {},
    "clientInfo": {"name": "bench", "version": "0"},
}


async def start_agent() -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(AGENT),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=None,  # inherited: the orchestrator sends it to a log file
        limit=RAISED_LIMIT * 2,
    )


async def spawn_once() -> dict[str, Any]:
    t0 = time.perf_counter()
    cli = FloorClient(await start_agent())
    try:
        await cli.request("initialize", INIT_PARAMS)
        return spawn_sample(t0, cli.agent_pid)
    finally:
        await cli.aclose()


async def main() -> None:
    args = driver_args(__doc__ or "")
    w = workload(args.quick)
    spawn = await spawn_phase(spawn_once) if want_spawn(args.only) else None
    if not want_messages(args.only):
        write_result(args.out, {"impl": "floor", "phases": {"spawn": spawn}})
        return
    t0 = time.perf_counter()
    cli = FloorClient(await start_agent())
    try:
        await cli.request("initialize", INIT_PARAMS)
        new = await cli.request("session/new", {"cwd": os.getcwd(), "mcpServers": []})
        cli.session_id = new["sessionId"]
        init_s = time.perf_counter() - t0
        phases = await run_phases(cli, w, only=args.only)
        if spawn is not None:
            phases = {"spawn": spawn, **phases}
    finally:
        await cli.aclose()
    write_result(
        args.out,
        {
            "impl": "floor",
            "python": sys.version.split()[0],
            "spawn_init_s": init_s,
            "limit": f"StreamReader limit {RAISED_LIMIT * 2} B both sides",
            "phases": phases,
        },
    )


if __name__ == "__main__":
    asyncio.run(main())
