"""Remote bench client: our client (``subagents``) or the official SDK's, over stdio to the
bench's echo agent or to a server (``remote_server.py``) over Streamable HTTP or WebSocket.

    python remote_client.py --client ours|sdk --target stdio|h2c|http1|ws [--url URL]
                            [--server-pid PID] --out FILE [--connects K] [--rtt-n N]
                            [--stream-n N]

Phases, one after the other, each timed on the client:

* ``connect``: one warm-up connection, then ``K`` fresh connections one after the other, each
  timed from the call that opens it (our ``connect_agent``/``connect_agent_url``; the SDK's
  ``spawn_agent_process`` or ``create_http_stream``/``create_websocket_stream`` then
  ``connect_to_agent``) to the ``initialize`` answer in hand; then closed;
* on one more connection, ``session/new``, then ``rtt``: warm-up, then ``N`` sequential
  0-chunk prompt turns (``0,0,0|``: the agent answers ``end_turn`` at once), each a
  ``session/prompt`` request and its answer; p50/p95/p99 and CPU per round trip;
* ``stream``: one prompt turn whose agent sends ``N`` ``agent_message_chunk`` updates of 16 B;
  the turn counts as done when its answer is in and every update was handed to the client's
  code (our typed turn's iterator; the SDK's ``session_update`` handler). msgs/s and CPU per
  message.

CPU is the client's ``process_time`` and, from ``/proc/PID/task/*/schedstat``, the server
process's (``--server-pid``) and the agent processes' (the stdio agent is the client's child;
a served agent is the server's child), split into client / server / agent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

AGENT = Path(__file__).with_name("subagents_agent.py")
RTT_TEXT = "0,0,0|"


# ---------------------------------------------------------------- CPU of processes


def _schedstat_s(pid: int) -> float:
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            continue
    return out


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    todo = _children(pid)
    while todo:
        child = todo.pop()
        found.append(child)
        todo += _children(child)
    return found


class Meter:
    """Wall time and CPU (client / server / agents) over one phase."""

    def __init__(self, server_pid: int | None) -> None:
        self.server_pid = server_pid
        self.wall = self.cli = self.srv = self.agent = 0.0

    def _agents(self) -> float:
        roots = [os.getpid()] + ([self.server_pid] if self.server_pid else [])
        return sum(_schedstat_s(p) for r in roots for p in _descendants(r))

    def __enter__(self) -> Meter:
        self._s0 = _schedstat_s(self.server_pid) if self.server_pid else 0.0
        self._a0 = self._agents()
        self._c0 = time.process_time()
        self._w0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._w0
        self.cli = time.process_time() - self._c0
        self.agent = self._agents() - self._a0
        self.srv = (_schedstat_s(self.server_pid) if self.server_pid else 0.0) - self._s0

    def per(self, n: int, unit: float = 1e6) -> dict[str, float]:
        return {
            "cpu_us": (self.cli + self.srv + self.agent) / n * unit,
            "cpu_cli_us": self.cli / n * unit,
            "cpu_srv_us": self.srv / n * unit,
            "cpu_agent_us": self.agent / n * unit,
        }


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


# ---------------------------------------------------------------- the two clients


def _ours(target: str, url: str) -> Callable[[], AbstractAsyncContextManager[Any]]:
    from subagents.remote import connect_agent_url
    from subagents.transports import connect_agent

    if target == "stdio":
        return lambda: connect_agent([sys.executable, str(AGENT)])
    if target == "ws":
        return lambda: connect_agent_url(url, transport="websocket")
    return lambda: connect_agent_url(url, transport="http", http2=target == "h2c")


@asynccontextmanager
async def _ours_session(
    connect: Callable[[], AbstractAsyncContextManager[Any]],
) -> AsyncIterator[Callable[[str, int], Awaitable[int]]]:
    async with connect() as conn:
        session = await conn.new_session(cwd="/tmp")

        async def prompt(text: str, expect: int) -> int:
            seen = 0
            async with session.prompt(text, max_events=expect + 64) as turn:
                async for update in turn:
                    if update.session_update == "agent_message_chunk":
                        seen += 1
                result = await turn.result()
            if result.stop_reason != "end_turn":
                raise RuntimeError(f"stop reason {result.stop_reason!r}")
            return seen

        yield prompt


class _SdkHandler:
    """The SDK ``Client`` side: counts ``agent_message_chunk`` updates."""

    def __init__(self) -> None:
        self.count = 0
        self.want = 0
        self.reached = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if update.session_update == "agent_message_chunk":
            self.count += 1
            if self.count >= self.want:
                self.reached.set()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        import acp

        raise acp.RequestError.method_not_found("session/request_permission")


@asynccontextmanager
async def _sdk_connection(target: str, url: str, handler: _SdkHandler) -> AsyncIterator[Any]:
    """An initialized SDK connection (``initialize`` answered on entering)."""
    import acp
    from acp.schema import ClientCapabilities, Implementation

    async def init(conn: Any) -> None:
        await conn.initialize(
            protocol_version=1,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="bench", version="0"),
        )

    if target == "stdio":
        async with acp.spawn_agent_process(
            handler,  # pyright: ignore[reportArgumentType] - the SDK's Protocol, in part
            sys.executable,
            str(AGENT),
            transport_kwargs={"stderr": None},
        ) as (conn, _proc):
            await init(conn)
            yield conn
        return
    if target == "ws":
        from acp.ws import create_websocket_stream

        transport = await create_websocket_stream(url)
    else:
        from acp.http import create_http_stream

        transport = create_http_stream(url)
    async with acp.connect_to_agent(handler, transport) as conn:  # pyright: ignore[reportArgumentType]
        await init(conn)
        yield conn


def _sdk(target: str, url: str) -> Callable[[], AbstractAsyncContextManager[Any]]:
    return lambda: _sdk_connection(target, url, _SdkHandler())


@asynccontextmanager
async def _sdk_session(
    target: str, url: str
) -> AsyncIterator[Callable[[str, int], Awaitable[int]]]:
    import acp

    handler = _SdkHandler()
    async with _sdk_connection(target, url, handler) as conn:
        new = await conn.new_session(cwd="/tmp", mcp_servers=[])
        sid = new.session_id

        async def prompt(text: str, expect: int) -> int:
            handler.count, handler.want = 0, expect
            handler.reached.clear()
            result = await conn.prompt(session_id=sid, prompt=[acp.text_block(text)])
            if result.stop_reason != "end_turn":
                raise RuntimeError(f"stop reason {result.stop_reason!r}")
            if expect and handler.count < expect:  # the SDK may hand updates over after it
                await handler.reached.wait()
            return handler.count

        yield prompt


# ---------------------------------------------------------------- phases


async def connect_phase(connect: Callable[[], AbstractAsyncContextManager[Any]], k: int) -> Any:
    times: list[float] = []
    for i in range(k + 1):
        t0 = time.perf_counter()
        async with connect():
            took = time.perf_counter() - t0
        if i:  # the first is a warm-up (the server's first agent, first-use imports)
            times.append(took * 1e3)
    return {"ms": times, "median_ms": statistics.median(times), "min_ms": min(times)}


async def rtt_phase(
    prompt: Callable[[str, int], Awaitable[int]], warmup: int, n: int, server_pid: int | None
) -> Any:
    for _ in range(warmup):
        await prompt(RTT_TEXT, 0)
    lat: list[float] = []
    with Meter(server_pid) as m:
        for _ in range(n):
            t0 = time.perf_counter()
            await prompt(RTT_TEXT, 0)
            lat.append(time.perf_counter() - t0)
    return {
        "n": n,
        "p50_us": _pct(lat, 0.5) * 1e6,
        "p95_us": _pct(lat, 0.95) * 1e6,
        "p99_us": _pct(lat, 0.99) * 1e6,
        **m.per(n),
    }


async def stream_phase(
    prompt: Callable[[str, int], Awaitable[int]], n: int, size: int, server_pid: int | None
) -> Any:
    await prompt(f"{min(n, 200)},{size},0|", min(n, 200))  # warm-up
    with Meter(server_pid) as m:
        seen = await prompt(f"{n},{size},0|", n)
    if seen != n:
        raise RuntimeError(f"stream: {seen} chunks seen, {n} sent")
    return {"n": n, "size": size, "msgs_s": n / m.wall, "wall_s": m.wall, **m.per(n)}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    phases: dict[str, Any] = {}
    url: str = args.url or ""
    if args.client == "ours":
        connect = _ours(args.target, url)
        session_cm = _ours_session(connect)
    else:
        connect = _sdk(args.target, url)
        session_cm = _sdk_session(args.target, url)

    async def guarded(name: str, make: Callable[[], Awaitable[Any]]) -> None:
        try:
            phases[name] = await asyncio.wait_for(make(), args.timeout)
        except Exception as exc:
            phases[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}

    await guarded("connect", lambda: connect_phase(connect, args.connects))

    async def messages() -> None:
        async with session_cm as prompt:
            await guarded(
                "rtt", lambda: rtt_phase(prompt, args.rtt_warmup, args.rtt_n, args.server_pid)
            )
            await guarded(
                "stream",
                lambda: stream_phase(prompt, args.stream_n, args.stream_size, args.server_pid),
            )

    try:
        await asyncio.wait_for(messages(), 3 * args.timeout)
    except Exception as exc:
        phases.setdefault("rtt", {"error": f"{type(exc).__name__}: {exc}"[:300]})
        phases.setdefault("stream", {"error": f"{type(exc).__name__}: {exc}"[:300]})
    return {"client": args.client, "target": args.target, "phases": phases}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--client", choices=("ours", "sdk"), required=True)
    ap.add_argument("--target", choices=("stdio", "h2c", "http1", "ws"), required=True)
    ap.add_argument("--url", default=None)
    ap.add_argument("--server-pid", type=int, default=None)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--connects", type=int, default=5)
    ap.add_argument("--rtt-warmup", type=int, default=50)
    ap.add_argument("--rtt-n", type=int, default=500)
    ap.add_argument("--stream-n", type=int, default=5000)
    ap.add_argument("--stream-size", type=int, default=16)
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args()
    if args.target != "stdio" and not args.url:
        ap.error("--url is needed for a remote target")
    result = asyncio.run(run(args))
    args.out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
