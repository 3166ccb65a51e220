"""What the three Codex app-server bench drivers share (stdlib only: it also runs in the
official SDK's venv).

Every driver does the same: spawn ``codex app-server`` (the argv it is given), ``initialize``,
``thread/start`` (the ``config.toml`` defaults: approval ``never``), then ``--short-turns``
turns asking the fake Responses API for ``--short-deltas`` deltas and ``--long-turns`` turns
asking for ``--long-deltas``. For each turn it records the wall time from just before
``turn/start`` is sent to the first ``item/agentMessage/delta`` and to ``turn/completed``, the
number of deltas it saw, its own CPU (``time.process_time``: every thread of the driver) and
codex's CPU (``/proc/PID/task/*/schedstat``). The result goes to ``--out`` as one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

#: The prompt that makes the bench's fake Responses API stream ``n`` deltas (bench/codex.py).
PROMPT = "bench-deltas {n}"
DELTA_METHOD = "item/agentMessage/delta"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--command", required=True, help="JSON list: the codex app-server argv")
    p.add_argument("--env", required=True, help="JSON object: codex's environment")
    p.add_argument("--cwd", required=True)
    p.add_argument("--short-turns", type=int, default=5)
    p.add_argument("--short-deltas", type=int, default=5)
    p.add_argument("--long-turns", type=int, default=2)
    p.add_argument("--long-deltas", type=int, default=500)
    p.add_argument("--out", required=True)
    return p.parse_args()


def plan(args: argparse.Namespace) -> list[tuple[str, int]]:
    """The turns to run, in order: (kind, deltas asked for)."""
    return [("short", args.short_deltas)] * args.short_turns + [
        ("long", args.long_deltas)
    ] * args.long_turns


def codex_cpu_s(pid: int) -> float:
    """CPU seconds of process ``pid``, all its threads (schedstat: nanoseconds)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return float("nan")
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


class Turn:
    """Times one turn: call :meth:`started` right before ``turn/start`` goes out, :meth:`delta`
    per delta, :meth:`completed` at ``turn/completed``."""

    def __init__(self, kind: str, asked: int, codex_pid: int) -> None:
        self.kind = kind
        self.asked = asked
        self.codex_pid = codex_pid
        self.deltas = 0
        self.first: float | None = None
        self.last: float | None = None
        self.status: str | None = None
        self.text_len = 0
        self.t0 = self.c0 = self.k0 = 0.0
        self.record: dict[str, Any] = {}

    def started(self) -> None:
        self.k0 = codex_cpu_s(self.codex_pid)
        self.c0 = time.process_time()
        self.t0 = time.perf_counter()

    def delta(self, text: str) -> None:
        now = time.perf_counter()
        if self.first is None:
            self.first = now
        self.last = now
        self.deltas += 1
        self.text_len += len(text)

    def completed(self, status: str | None) -> dict[str, Any]:
        t1 = time.perf_counter()
        c1 = time.process_time()
        k1 = codex_cpu_s(self.codex_pid)
        self.status = status
        self.record = {
            "kind": self.kind,
            "asked": self.asked,
            "deltas": self.deltas,
            "text_len": self.text_len,
            "status": status,
            "first_delta_ms": None if self.first is None else (self.first - self.t0) * 1e3,
            "last_delta_ms": None if self.last is None else (self.last - self.t0) * 1e3,
            "turn_ms": (t1 - self.t0) * 1e3,
            "client_cpu_ms": (c1 - self.c0) * 1e3,
            "codex_cpu_ms": (k1 - self.k0) * 1e3,
        }
        return self.record


class Init:
    """Times spawn→``initialize``: wall and the driver's own CPU."""

    def __init__(self) -> None:
        self.c0 = time.process_time()
        self.t0 = time.perf_counter()

    def done(self) -> dict[str, float]:
        t1, c1 = time.perf_counter(), time.process_time()
        return {"init_ms": (t1 - self.t0) * 1e3, "init_cpu_ms": (c1 - self.c0) * 1e3}


def peak_rss_mib() -> float:
    """``VmHWM`` of this process (``ru_maxrss`` would carry the forking parent's peak across
    ``exec``)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def write_result(path: str, result: dict[str, Any]) -> None:
    result["client_maxrss_mib"] = peak_rss_mib()
    Path(path).write_text(json.dumps(result))
