"""subagents client driver: the ``subagents.rpc`` peer talking to ``subagents_agent.py``.

Runs under anyio's asyncio backend. The agent is spawned with ``anyio.open_process`` on two
OS pipes; the peer's streams are the project's own pipe streams (``--transport project``, the
default), the portable fd streams (``--transport fd``) or anyio's process streams
(``--transport anyio``).

``--variant typed`` validates every ``session/update`` into the generated ACP models
(``subagents.protocol.acp``) through the router's ``params=`` type and parses lines with
``pydantic_core.from_json`` (``json_loads=``), as the typed ACP client endpoint does; the default
variant handles the raw JSON.

A prompt counts as done once its response has arrived *and* every chunk it asked for has been
handled. The peer itself returns a result only after the notifications received before it were
handled (acp-py's client likewise waits for its in-flight ``session_update`` handlers); the
adapter below also waits for the expected count, a no-op safety net with such a peer, so the
figures stay comparable with peers that do not order results after notifications.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import inspect
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from _common import (
    OVERSIZE_TEXT,
    RAISED_LIMIT,
    BenchClient,
    Counter,
    add_only_arg,
    parse_prompt,
    prompt_text,
    run_phases,
    spawn_phase,
    spawn_sample,
    want_messages,
    want_spawn,
    workload,
    write_result,
)

from subagents import transports
from subagents.protocol.jsonrpc import JsonValue
from subagents.rpc import Peer, Router, RPCError, open_peer

AGENT = Path(__file__).with_name("subagents_agent.py")

PEER_OPTIONS: dict[str, Any] = {}
"""Extra ``open_peer`` options of the variant (the typed one: the typed endpoints' JSON parser)."""


class Adapter:
    def __init__(self, counter: Counter, agent_pid: int) -> None:
        self.counter = counter
        self.agent_pid = agent_pid
        self.session_id = ""
        self.peer: Peer | None = None
        self._want = 0
        self._reached: anyio.Event | None = None

    def on_text(self, text: str) -> None:
        c = self.counter
        c.count += 1
        c.nbytes += len(text)
        c.last = text
        if self._reached is not None and c.count >= self._want:
            self._reached.set()

    async def prompt(self, text: str) -> str:
        assert self.peer is not None
        n, _, ack = parse_prompt(text)
        expected = self.counter.count + n + (1 if ack else 0)
        result: Any = await self.peer.request(
            "session/prompt",
            {"sessionId": self.session_id, "prompt": [{"type": "text", "text": text}]},
        )
        if self.counter.count < expected:
            self._want = expected
            self._reached = reached = anyio.Event()
            try:
                await reached.wait()
            finally:
                self._reached = None
        return result["stopReason"]


def make_router(adapter: Adapter, typed: bool) -> tuple[Router, str]:
    router = Router()
    on_text = adapter.on_text
    if typed:
        # imported here so the untyped rows never load the generated models
        acp_models = importlib.import_module("subagents.protocol.acp")
        model: Any = acp_models.SessionNotification
        chunk_type: Any = acp_models.AgentMessageChunkSessionUpdate
        text_type: Any = acp_models.TextContentBlock

        async def typed_update(note: Any) -> None:
            update = note.update
            if isinstance(update, chunk_type) and isinstance(update.content, text_type):
                on_text(update.content.text)

        router.on_notification("session/update", typed_update, params=model)
        if "json_loads" in inspect.signature(open_peer).parameters:
            PEER_OPTIONS["json_loads"] = importlib.import_module("pydantic_core").from_json
        return router, f"{model.__module__}.{model.__qualname__}"

    async def raw_update(params: Any) -> None:
        update = params["update"]
        if update.get("sessionUpdate") == "agent_message_chunk":
            on_text(update["content"]["text"])

    router.on_notification("session/update", raw_update)
    return router, "raw JSON"


async def oversize_probe(cli: BenchClient) -> dict[str, Any]:
    """A line over the limit each way, each followed by a normal round trip."""
    assert isinstance(cli, Adapter)
    peer = cli.peer
    assert peer is not None
    detail: list[str] = []
    ok = True
    size = OVERSIZE_TEXT

    # down: the agent sends one notification over the client's limit, then answers
    cli.counter.reset()
    try:
        res: Any = await peer.request(
            "session/prompt",
            {"sessionId": cli.session_id, "prompt": [{"type": "text", "text": f"1,{size},0|"}]},
            timeout=60,
        )
        dropped = cli.counter.count == 0
        detail.append(
            f"down: {size} B chunk {'dropped' if dropped else 'DELIVERED'}, "
            f"prompt answered {res.get('stopReason')!r}"
        )
        ok = ok and dropped and res.get("stopReason") == "end_turn"
    except (RPCError, TimeoutError, Exception) as exc:
        detail.append(f"down: prompt failed: {type(exc).__name__}: {exc}"[:200])
        ok = False
    ok = await _round_trip(cli, detail, "after down") and ok

    # up: the client sends one prompt over the agent's limit
    text = prompt_text(0, 0, ack=True, total_len=size)
    try:
        res = await peer.request(
            "session/prompt",
            {"sessionId": cli.session_id, "prompt": [{"type": "text", "text": text}]},
            timeout=60,
        )
        detail.append(f"up: oversized prompt unexpectedly answered {res!r}"[:200])
        ok = False
    except RPCError as exc:
        detail.append(f"up: oversized prompt answered with error {exc.code} ({exc.message[:160]})")
    except Exception as exc:
        detail.append(f"up: {type(exc).__name__}: {exc}"[:200])
        ok = False
    del text
    ok = await _round_trip(cli, detail, "after up") and ok
    return {"status": "ok" if ok else "broken", "detail": "; ".join(detail), "size": size}


async def _round_trip(cli: Adapter, detail: list[str], when: str) -> bool:
    try:
        with anyio.fail_after(10):
            stop = await cli.prompt(prompt_text(0, 0))
    except Exception as exc:
        detail.append(f"round trip {when}: {type(exc).__name__}: {exc}"[:200])
        return False
    if stop != "end_turn":
        detail.append(f"round trip {when}: {stop!r}")
        return False
    detail.append(f"round trip {when}: ok")
    return True


async def spawn(transport: str) -> tuple[anyio.abc.Process, Any, Any]:
    """Start the agent; return it with the client's (receive, send) streams.

    ``project``: the project's own pipe streams for the running backend
    (``subagents.transports.wrap_pipe_fds``; the portable fd streams where it does not exist);
    ``fd``: the portable ``FdReceiveStream``/``FdSendStream``; ``anyio``: anyio's process
    streams.
    """
    cmd = [sys.executable, str(AGENT)]
    if transport == "anyio":
        proc = await anyio.open_process(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        return proc, proc.stdout, proc.stdin
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()
    try:
        proc = await anyio.open_process(cmd, stdin=to_child_r, stdout=from_child_w, stderr=None)
    finally:
        os.close(to_child_r)
        os.close(from_child_w)
    wrap: Any = getattr(transports, "wrap_pipe_fds", None)
    if transport == "project" and wrap is not None:
        receive, send = await wrap(from_child_r, to_child_w)
        return proc, receive, send
    return proc, transports.FdReceiveStream(from_child_r), transports.FdSendStream(to_child_w)


def stream_kind(transport: str) -> str:
    if transport == "anyio":
        return "anyio process streams"
    if transport == "project" and hasattr(transports, "wrap_pipe_fds"):
        return "subagents.transports.wrap_pipe_fds"
    return "subagents.transports.FdReceiveStream/FdSendStream"


INIT_PARAMS: JsonValue = {
    "protocolVersion": 1,
    "clientCapabilities": {},
    "clientInfo": {"name": "bench", "version": "0"},
}


async def close_agent(proc: anyio.abc.Process, receive: Any) -> None:
    await receive.aclose()
    with anyio.move_on_after(5):
        await proc.wait()
    if proc.returncode is None:
        proc.kill()
        await proc.wait()


async def spawn_once(transport: str, router: Router) -> dict[str, Any]:
    t0 = time.perf_counter()
    proc, receive, send = await spawn(transport)
    try:
        async with open_peer(
            receive,
            send,
            router=router,
            max_message_bytes=RAISED_LIMIT,
            name="client",
            **PEER_OPTIONS,
        ) as peer:
            await peer.request("initialize", INIT_PARAMS)
            return spawn_sample(t0, proc.pid)
    finally:
        await close_agent(proc, receive)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", required=True)
    ap.add_argument("--variant", default="", choices=["", "typed"])
    ap.add_argument("--transport", default="project", choices=["project", "fd", "anyio"])
    add_only_arg(ap)
    args = ap.parse_args()
    w = workload(args.quick)
    typed = args.variant == "typed"

    counter = Counter()
    adapter = Adapter(counter, 0)
    # the typed variant's models load here, with the driver's other imports, before any timing
    router, validation = make_router(adapter, typed)
    spawn_result: dict[str, Any] | None = None
    if want_spawn(args.only):
        spawn_result = await spawn_phase(lambda: spawn_once(args.transport, router))
    if not want_messages(args.only):
        impl = "subagents+typed" if typed else "subagents"
        write_result(args.out, {"impl": impl, "phases": {"spawn": spawn_result}})
        return
    t0 = time.perf_counter()
    proc, receive, send = await spawn(args.transport)
    adapter.agent_pid = proc.pid
    try:
        async with open_peer(
            receive,
            send,
            router=router,
            max_message_bytes=RAISED_LIMIT,
            name="client",
            **PEER_OPTIONS,
        ) as peer:
            adapter.peer = peer
            await peer.request("initialize", INIT_PARAMS)
            new: Any = await peer.request("session/new", {"cwd": os.getcwd(), "mcpServers": []})
            adapter.session_id = new["sessionId"]
            init_s = time.perf_counter() - t0
            phases = await run_phases(
                adapter, w, extra=[("oversize", oversize_probe, w.big_timeout)], only=args.only
            )
            if spawn_result is not None:
                phases = {"spawn": spawn_result, **phases}
    finally:
        await close_agent(proc, receive)
    write_result(
        args.out,
        {
            "impl": "subagents+typed" if typed else "subagents",
            "python": sys.version.split()[0],
            "subagents_version": importlib.metadata.version("subagents"),
            "transport": stream_kind(args.transport),
            "validation": validation,
            "spawn_init_s": init_s,
            "limit": f"max_message_bytes={RAISED_LIMIT} both sides",
            "phases": phases,
        },
    )


if __name__ == "__main__":
    anyio.run(main)
