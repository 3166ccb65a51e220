"""Event-loop stalls while a typed ACP child starts (issue 17): a 1 ms heartbeat beside the start.

A harness runs its subagents on one event loop; starting an ACP child must not freeze the
others. Each repetition is a fresh Python process (the first ACP connection of a process is
the one that builds the models) that imports the client endpoint first, as a harness does at
its own start, then runs an event loop with a task ticking every 1 ms and measures the longest
gap between ticks in two windows of the same loop:

* **idle**: the heartbeat alone for 0.3 s (what the machine and the loop give anyway);
* **start**: ``connect_agent`` of the reference agent (spawn, ``initialize``), one
  ``session/new``, one prompt turn, close.

The figure is the start window's longest gap, beside the idle window's, median over the
repetitions (and the worst repetition); the target is ≤ 5 ms.

``bench/run.py`` runs this bench after its interleaved repetitions (both backends, the
backends interleaved, :func:`measure` per repetition), writes a ``stall`` record per
repetition into its raw JSON lines and renders the section and the target row into
BENCHMARKS.md (``--stall-reps N``, ``0`` skips it). Standalone, for a quick look::

    .venv/bin/python bench/stall.py [--reps N] [--backend asyncio|trio] [--out FILE]

prints the same section (to stdout, or to ``--out FILE``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = 5.0
BEFORE = (
    "Before (commit `6a79b3f`, the models imported and their schemas built on the event loop's "
    "thread at the first connection; the same driver, 5 repetitions): start window **24.9 ms** "
    "(asyncio), **13.9 ms** (trio), idle 3.1 / 1.6 ms."
)
LEFT = (
    "At commit `7a9df4b` what was left on asyncio was mostly its subprocess start on the loop's "
    "thread (the child watcher's thread start: a 4–5 ms gap with no ACP at all); since "
    "`6d857f0` agent processes are waited for through a pidfd (no thread), and what is left on "
    "both backends is the model preparation in a worker thread sharing the GIL with the loop "
    "while the agent process starts on the other core (see bench/notes.md)."
)

_DRIVER = r"""
import json, sys, time
import anyio
from subagents.transports.acp_client import connect_agent  # imported before the loop starts

async def main():
    gaps = {"idle": [], "start": []}
    window = ["idle"]
    stop = False

    async def beat():
        last = time.perf_counter()
        while not stop:
            await anyio.sleep(0.001)
            now = time.perf_counter()
            gaps[window[0]].append(now - last)
            last = now

    async with anyio.create_task_group() as tg:
        tg.start_soon(beat)
        await anyio.sleep(0.3)
        window[0] = "start"
        started = time.perf_counter()
        async with connect_agent([sys.executable, "-m", "subagents.agents.reference"]) as conn:
            session = await conn.new_session(cwd="/tmp")
            await session.run("hello")
        took = time.perf_counter() - started
        stop = True
    print(json.dumps({
        "idle_max_ms": max(gaps["idle"]) * 1e3,
        "start_max_ms": max(gaps["start"]) * 1e3,
        "start_ms": took * 1e3,
    }))

anyio.run(main, backend=sys.argv[1])
"""


BACKENDS = ("asyncio", "trio")


def driver_env() -> dict[str, str]:
    """The environment of a measured process: bytecode caches written and used, as a default
    Python runs (``bench/run.py`` passes its own, which also drops ``PYTHONPATH``)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def measure(
    backend: str, env: dict[str, str] | None = None, timeout: float = 120.0
) -> dict[str, Any]:
    """One repetition in a fresh process (in its own session, so a timeout kills the reference
    agent too): ``idle_max_ms``, ``start_max_ms``, ``start_ms`` and ``wall_ms``, or ``error``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, backend],
        cwd=ROOT,
        env=driver_env() if env is None else env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"error": f"timeout after {timeout:.0f} s"}
    finally:
        # whatever the driver left behind (an agent it failed to reap) goes too
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    wall_ms = (time.perf_counter() - t0) * 1e3
    lines = out.strip().splitlines()
    if proc.returncode != 0 or not lines:
        why = (err.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return {"error": why[:300]}
    try:
        res = json.loads(lines[-1])
    except json.JSONDecodeError:
        return {"error": f"unreadable output: {lines[-1][:200]}"}
    return {**res, "wall_ms": wall_ms}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--backend", choices=BACKENDS, default=None, help="default both")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    backends = [args.backend] if args.backend else list(BACKENDS)
    measure(backends[0])  # compiles what a fresh checkout has not compiled yet; not counted
    load = os.getloadavg()[0]
    records: list[dict[str, Any]] = []
    for rep in range(args.reps):
        for backend in backends:  # the backends interleaved, as bench/run.py runs them
            res = measure(backend)
            records.append({"kind": "stall", "rep": rep, "backend": backend, "result": res})
            if "error" in res:
                print(f"{backend}, repetition {rep + 1}: {res['error']}", file=sys.stderr)
    after = os.getloadavg()[0]

    import render  # imported here: render imports this module for its constants

    context = f"Load average {load:.1f} before, {after:.1f} after ({os.cpu_count()} cores)."
    lines = render.stall_section(records, standalone=True, context=context)
    text = "\n".join(lines).rstrip() + "\n"
    if args.out is None:
        print(text, end="")
    else:
        args.out.write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
