"""Shared workload, CPU accounting and phase runner for every benchmark driver.

Stdlib only: this module is imported by drivers running in the project venv and by the
acp-py drivers running in their own clean venv, so it must never import ``subagents``.

Wire workload (identical for every implementation, ACP v1 messages):

* ``initialize``, then ``session/new``;
* ``session/prompt`` with one text block whose text starts ``n,size,ack|``. The echo agent
  first sends one ``agent_message_chunk`` with text ``len=<prompt text length>`` if ``ack``
  is ``1``, then ``n`` ``agent_message_chunk`` notifications of ``size`` bytes of text each,
  then answers ``{"stopReason": "end_turn"}``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

# re-exported for the clients
from _wire import RAISED_LIMIT as RAISED_LIMIT
from _wire import MiB as MiB
from _wire import parse_prompt as parse_prompt

#: Text size of the too-large message sent by the over-limit probe.
OVERSIZE_TEXT = RAISED_LIMIT + MiB

PAYLOAD_CHAR = "x"


@dataclass(frozen=True)
class Workload:
    rtt_warmup: int
    rtt_n: int
    conc: int
    conc_warmup: int
    conc_total: int
    stream_n: int
    stream_size: int
    big_size: int
    big_reps: int
    huge_size: int
    phase_timeout: float
    big_timeout: float


FULL = Workload(
    rtt_warmup=300,
    rtt_n=3000,
    conc=64,
    conc_warmup=640,
    conc_total=6400,
    stream_n=100_000,
    stream_size=16,
    big_size=16 * MiB,
    big_reps=3,
    huge_size=64 * MiB,
    phase_timeout=120.0,
    big_timeout=90.0,
)

QUICK = Workload(
    rtt_warmup=100,
    rtt_n=500,
    conc=64,
    conc_warmup=128,
    conc_total=1280,
    stream_n=20_000,
    stream_size=16,
    big_size=16 * MiB,
    big_reps=1,
    huge_size=64 * MiB,
    phase_timeout=40.0,
    big_timeout=40.0,
)


def workload(quick: bool) -> Workload:
    """The workload of a run; ``BENCH_SCALE`` (profiling only) multiplies the message counts."""
    w = QUICK if quick else FULL
    scale = float(os.environ.get("BENCH_SCALE", "1") or 1)
    if scale == 1:
        return w
    return dataclasses.replace(
        w,
        rtt_n=int(w.rtt_n * scale),
        conc_total=int(w.conc_total * scale),
        stream_n=int(w.stream_n * scale),
        phase_timeout=w.phase_timeout * max(1.0, scale),
    )


def prompt_text(n: int, size: int, ack: bool = False, total_len: int | None = None) -> str:
    """Build a prompt text ``n,size,ack|`` padded with payload to ``total_len`` characters."""
    head = f"{n},{size},{1 if ack else 0}|"
    if total_len is None or total_len <= len(head):
        return head
    return head + PAYLOAD_CHAR * (total_len - len(head))


class Counter:
    """Counts the ``agent_message_chunk`` texts a client receives."""

    __slots__ = ("count", "last", "nbytes")

    def __init__(self) -> None:
        self.count = 0
        self.nbytes = 0
        self.last = ""

    def reset(self) -> None:
        self.count = 0
        self.nbytes = 0
        self.last = ""

    def on_text(self, text: str) -> None:
        self.count += 1
        self.nbytes += len(text)
        self.last = text


class BenchClient(Protocol):
    """What a driver's client adapter provides to the shared phase runner."""

    counter: Counter
    agent_pid: int

    async def prompt(self, text: str) -> str:
        """Send ``session/prompt`` with one text block; return the stop reason."""
        ...


# --------------------------------------------------------------------------- CPU accounting


def agent_cpu_s(pid: int) -> float:
    """CPU seconds of every thread of ``pid`` (sum of /proc/PID/task/*/schedstat, ns)."""
    total = 0
    base = f"/proc/{pid}/task"
    try:
        tids = os.listdir(base)
    except OSError:
        return float("nan")
    for tid in tids:
        try:
            with open(f"{base}/{tid}/schedstat", "rb") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


class Meter:
    """Wall time plus client (process_time) and agent (schedstat) CPU over one phase."""

    def __init__(self, agent_pid: int) -> None:
        self.agent_pid = agent_pid
        self.wall = 0.0
        self.cli = 0.0
        self.agent = 0.0

    def __enter__(self) -> Meter:
        self._a0 = agent_cpu_s(self.agent_pid)
        self._c0 = time.process_time()
        self._w0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._w0
        self.cli = time.process_time() - self._c0
        self.agent = agent_cpu_s(self.agent_pid) - self._a0

    @property
    def cpu(self) -> float:
        return self.cli + self.agent


def pct(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[i]


def _status_kib(pid: int, field: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def vm_hwm_kib(pid: int) -> int | None:
    """Peak resident set size of ``pid`` (``VmHWM``, KiB)."""
    return _status_kib(pid, "VmHWM:")


def vm_rss_kib(pid: int) -> int | None:
    """Current resident set size of ``pid`` (``VmRSS``, KiB)."""
    return _status_kib(pid, "VmRSS:")


# --------------------------------------------------------------------------- spawn phase

#: Fresh agents spawned (and initialized, then closed) per driver run by the spawn phase.
SPAWNS = 5
SPAWN_TIMEOUT = 30.0


def spawn_sample(t0: float, agent_pid: int) -> dict[str, Any]:
    """Call right after the ``initialize`` answer: the time since ``t0`` and both RSS."""
    elapsed = time.perf_counter() - t0
    return {
        "init_ms": elapsed * 1e3,
        "rss_cli_kib": vm_rss_kib(os.getpid()),
        "rss_agent_kib": vm_rss_kib(agent_pid),
    }


async def spawn_phase(
    spawn_once: Callable[[], Awaitable[dict[str, Any]]], n: int = SPAWNS
) -> dict[str, Any]:
    """``n`` fresh spawns, one after the other: spawn → ``initialize`` answer → close.

    ``spawn_once`` starts an agent, initializes it, returns :func:`spawn_sample` (taken before
    it closes the agent) and closes the agent, waiting for it to exit. The driver's own imports
    are done before the first call, so they are not timed; anything loaded on first use (the
    typed client's models, say) lands in the first spawn, reported separately as ``first_ms``.
    """
    t_phase = time.perf_counter()
    samples: list[dict[str, Any]] = []
    for i in range(n):
        try:
            samples.append(await asyncio.wait_for(spawn_once(), SPAWN_TIMEOUT))
        except TimeoutError:
            return {"error": f"spawn {i + 1}: timeout after {SPAWN_TIMEOUT:.0f} s"}
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            return {"error": f"spawn {i + 1}: {type(exc).__name__}: {exc}"[:300]}
    times = [s["init_ms"] for s in samples]
    out: dict[str, Any] = {
        "n": n,
        "init_ms": statistics.median(times),
        "first_ms": times[0],
        "min_ms": min(times),
        "all_ms": times,
        "phase_s": time.perf_counter() - t_phase,
    }
    for key in ("rss_cli_kib", "rss_agent_kib"):
        vals = [s[key] for s in samples if s.get(key) is not None]
        out[key] = statistics.median(vals) if vals else None
        out[key.replace("_kib", "_first_kib")] = samples[0].get(key)
    return out


def want_spawn(only: str) -> bool:
    return not only or "spawn" in only.split(",")


def want_messages(only: str) -> bool:
    """Whether a phase other than ``spawn`` is wanted: ``--only spawn`` runs the spawns alone
    (the orchestrator does, so the message phases run in a process that spawned nothing else)."""
    return not only or any(p and p != "spawn" for p in only.split(","))


# --------------------------------------------------------------------------- phases


class PhaseError(Exception):
    pass


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise PhaseError(what)


async def _rtt(cli: BenchClient, w: Workload) -> dict[str, Any]:
    text = prompt_text(0, 0)
    for _ in range(w.rtt_warmup):
        await cli.prompt(text)
    lat: list[float] = []
    perf = time.perf_counter_ns
    with Meter(cli.agent_pid) as m:
        for _ in range(w.rtt_n):
            t0 = perf()
            await cli.prompt(text)
            lat.append((perf() - t0) / 1e3)
    lat.sort()
    return {
        "n": w.rtt_n,
        "p50_us": pct(lat, 0.5),
        "p99_us": pct(lat, 0.99),
        "cpu_us": m.cpu / w.rtt_n * 1e6,
        "cpu_cli_us": m.cli / w.rtt_n * 1e6,
        "cpu_agent_us": m.agent / w.rtt_n * 1e6,
    }


async def _concurrent(cli: BenchClient, w: Workload) -> dict[str, Any]:
    text = prompt_text(0, 0)
    perf = time.perf_counter_ns

    async def run(total: int, lat: list[float] | None) -> None:
        remaining = total

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                t0 = perf()
                await cli.prompt(text)
                if lat is not None:
                    lat.append((perf() - t0) / 1e3)

        await asyncio.gather(*(worker() for _ in range(w.conc)))

    await run(w.conc_warmup, None)
    lat: list[float] = []
    with Meter(cli.agent_pid) as m:
        await run(w.conc_total, lat)
    _check(len(lat) == w.conc_total, f"concurrency: {len(lat)} of {w.conc_total} done")
    lat.sort()
    return {
        "c": w.conc,
        "n": w.conc_total,
        "req_s": w.conc_total / m.wall,
        "cpu_us": m.cpu / w.conc_total * 1e6,
        "p50_ms": pct(lat, 0.5) / 1e3,
        "p99_ms": pct(lat, 0.99) / 1e3,
    }


async def _stream(cli: BenchClient, w: Workload) -> dict[str, Any]:
    n, size = w.stream_n, w.stream_size
    # a short warm-up stream so first-use costs are not counted
    cli.counter.reset()
    await cli.prompt(prompt_text(min(1000, n), size))
    cli.counter.reset()
    with Meter(cli.agent_pid) as m:
        stop = await cli.prompt(prompt_text(n, size))
    c = cli.counter
    _check(stop == "end_turn", f"stream: stopReason {stop!r}")
    _check(c.count == n, f"stream: received {c.count} of {n} notifications")
    _check(c.nbytes == n * size, f"stream: received {c.nbytes} of {n * size} text bytes")
    return {
        "n": n,
        "size": size,
        "msgs_s": n / m.wall,
        "cpu_us": m.cpu / n * 1e6,
        "cpu_cli_us": m.cli / n * 1e6,
        "cpu_agent_us": m.agent / n * 1e6,
        "checked": True,
    }


async def big_down(cli: BenchClient, size: int) -> tuple[float, float]:
    """One agent→client notification of ``size`` text bytes; returns (wall s, cpu s)."""
    cli.counter.reset()
    with Meter(cli.agent_pid) as m:
        stop = await cli.prompt(prompt_text(1, size))
    c = cli.counter
    _check(stop == "end_turn", f"down {size}: stopReason {stop!r}")
    _check(c.count == 1 and c.nbytes == size, f"down {size}: got {c.count} msgs/{c.nbytes} B")
    _check(c.last == PAYLOAD_CHAR * size, f"down {size}: content differs")
    cli.counter.reset()
    return m.wall, m.cpu


async def big_up(cli: BenchClient, size: int) -> tuple[float, float]:
    """One client→agent prompt of ``size`` text characters, checked by the ``len=`` ack."""
    text = prompt_text(0, 0, ack=True, total_len=size)
    cli.counter.reset()
    with Meter(cli.agent_pid) as m:
        stop = await cli.prompt(text)
    c = cli.counter
    _check(stop == "end_turn", f"up {size}: stopReason {stop!r}")
    _check(c.count == 1 and c.last == f"len={size}", f"up {size}: ack {c.last[:40]!r}")
    cli.counter.reset()
    return m.wall, m.cpu


async def _big(cli: BenchClient, w: Workload) -> dict[str, Any]:
    await big_down(cli, MiB)  # warm-up
    await big_up(cli, MiB)
    down: list[float] = []
    up: list[float] = []
    down_cpu: list[float] = []
    up_cpu: list[float] = []
    for _ in range(w.big_reps):
        t, c = await big_down(cli, w.big_size)
        down.append(t)
        down_cpu.append(c)
        t, c = await big_up(cli, w.big_size)
        up.append(t)
        up_cpu.append(c)
    return {
        "size": w.big_size,
        "reps": w.big_reps,
        "down_ms": statistics.median(down) * 1e3,
        "up_ms": statistics.median(up) * 1e3,
        "down_cpu_ms": statistics.median(down_cpu) * 1e3,
        "up_cpu_ms": statistics.median(up_cpu) * 1e3,
        "checked": True,
    }


async def _huge(cli: BenchClient, w: Workload) -> dict[str, Any]:
    out: dict[str, Any] = {"size": w.huge_size}
    t, _ = await big_down(cli, w.huge_size)
    out["down_ms"] = t * 1e3
    out["down"] = "ok"
    t, _ = await big_up(cli, w.huge_size)
    out["up_ms"] = t * 1e3
    out["up"] = "ok"
    return out


Probe = Callable[[BenchClient], Awaitable[dict[str, Any]]]


PHASES = ("spawn", "rtt", "conc", "stream", "big", "huge", "oversize")


async def run_phases(
    cli: BenchClient,
    w: Workload,
    extra: list[tuple[str, Probe, float]] | None = None,
    only: str = "",
) -> dict[str, Any]:
    """Run every phase in order, each under its own timeout; stop at the first failure.

    ``only`` (comma-separated phase names) restricts the run, for profiling.
    """
    phases: list[tuple[str, Callable[[], Awaitable[dict[str, Any]]], float]] = [
        ("rtt", lambda: _rtt(cli, w), w.phase_timeout),
        ("conc", lambda: _concurrent(cli, w), w.phase_timeout),
        ("stream", lambda: _stream(cli, w), w.phase_timeout),
        ("big", lambda: _big(cli, w), w.big_timeout),
        ("huge", lambda: _huge(cli, w), w.big_timeout),
    ]
    for name, probe, timeout in extra or []:
        phases.append((name, lambda probe=probe: probe(cli), timeout))
    if only:
        wanted = set(only.split(","))
        phases = [p for p in phases if p[0] in wanted]
    results: dict[str, Any] = {}
    for name, fn, timeout in phases:
        t0 = time.perf_counter()
        try:
            res = await asyncio.wait_for(fn(), timeout)
        except TimeoutError:
            results[name] = {"error": f"timeout after {timeout:.0f} s"}
            break
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            results[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            break
        res["phase_s"] = time.perf_counter() - t0
        results[name] = res
    results["agent_hwm_kib"] = vm_hwm_kib(cli.agent_pid)
    return results


# --------------------------------------------------------------------------- driver plumbing


def driver_args(description: str) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", required=True, help="where to write the JSON result")
    ap.add_argument("--variant", default="", help="driver-specific variant")
    add_only_arg(ap)
    return ap.parse_args()


def add_only_arg(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--only", default="", help=f"comma-separated phases to run (of {', '.join(PHASES)})"
    )


def write_result(path: str, result: dict[str, Any]) -> None:
    result.setdefault("client_hwm_kib", vm_hwm_kib(os.getpid()))
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, path)
