"""Remote bench (issue 20): round trip, stream throughput and connect time over loopback
HTTP and WebSocket against stdio, ours against the official SDK's, paired in one run.

Every configuration is a client (ours: ``subagents.transports.connect_agent`` /
``subagents.remote.connect_agent_url``; the SDK's: ``acp`` 0.12.1 with its experimental
``acp.http``/``acp.ws``) reaching the same agent process (``bench/drivers/subagents_agent.py``,
the raw echo agent) either over stdio (the client spawns it) or through a server
(``bench/drivers/remote_server.py``: ours, ``serve_acp_http`` with ``agent_command``; the SDK's
ASGI app under Hypercorn, its connections bound to the same agent command), one agent process
per connection. A repetition runs every configuration once, in a new random order, each as a
fresh server process (when it has one) and a fresh client driver process
(``bench/drivers/remote_client.py``); cells are medians over the repetitions and ratios are
paired (same repetition).

``bench/run.py`` runs it after its other repetitions (``--remote-reps N``, ``0`` skips it),
writes a ``remote`` record per configuration and repetition into its raw JSON lines and
renders the section into BENCHMARKS.md. Alone::

    .venv/bin/python bench/remote.py [--reps N] [--quick] [--configs A,B,...] [--out FILE]

prints the same section (to stdout, or to ``--out FILE``); raw lines go to
``bench/results/raw-remote-<stamp>.jsonl``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TextIO

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DRIVERS = BENCH / "drivers"
RESULTS = BENCH / "results"
CLIENT = DRIVERS / "remote_client.py"
SERVER = DRIVERS / "remote_server.py"


@dataclass(frozen=True)
class Config:
    key: str
    client: str  # "ours" | "sdk"
    server: str | None  # None: stdio; "ours" | "sdk" | "sdk-inproc"
    target: str  # "stdio" | "h2c" | "http1" | "ws"
    ref: str | None = None
    """The SDK pair this configuration is compared with (same transport, or the nearest)."""

    @property
    def label(self) -> str:
        names = {"ours": "ours", "sdk": "SDK", "sdk-inproc": "SDK (its agent in process)"}
        over = {"stdio": "stdio", "h2c": "HTTP/2 (h2c)", "http1": "HTTP/1.1", "ws": "WebSocket"}
        if self.server is None:
            return f"{names[self.client]} client, stdio"
        return f"{names[self.client]} → {names[self.server]} server, {over[self.target]}"


FLOOR = "ours/stdio"
CONFIGS = (
    Config(FLOOR, "ours", None, "stdio", "sdk/stdio"),
    Config("sdk/stdio", "sdk", None, "stdio", "sdk/stdio"),
    Config("ours>ours/h2c", "ours", "ours", "h2c", "sdk>sdk/http1"),
    Config("ours>ours/http1", "ours", "ours", "http1", "sdk>sdk/http1"),
    Config("ours>ours/ws", "ours", "ours", "ws", "sdk>sdk/ws"),
    Config("sdk>sdk/http1", "sdk", "sdk", "http1", "sdk>sdk/http1"),
    Config("sdk>sdk/ws", "sdk", "sdk", "ws", "sdk>sdk/ws"),
    Config("ours>sdk/h2c", "ours", "sdk", "h2c", "sdk>sdk/http1"),
    Config("ours>sdk/http1", "ours", "sdk", "http1", "sdk>sdk/http1"),
    Config("ours>sdk/ws", "ours", "sdk", "ws", "sdk>sdk/ws"),
    Config("sdk>ours/http1", "sdk", "ours", "http1", "sdk>sdk/http1"),
    Config("sdk>ours/ws", "sdk", "ours", "ws", "sdk>sdk/ws"),
)
#: Runnable with --configs, not run by default: the SDK's server with its native hosting (its
#: echo agent object in the server's process; a different agent, so not paired with the rest).
EXTRA_CONFIGS = (
    Config("sdk>sdk-inproc/http1", "sdk", "sdk-inproc", "http1"),
    Config("ours>sdk-inproc/h2c", "ours", "sdk-inproc", "h2c"),
)
BY_KEY = {c.key: c for c in CONFIGS + EXTRA_CONFIGS}


@dataclass(frozen=True)
class Work:
    connects: int
    rtt_warmup: int
    rtt_n: int
    stream_n: int
    timeout: float


FULL = Work(connects=5, rtt_warmup=50, rtt_n=500, stream_n=10_000, timeout=90.0)
QUICK = Work(connects=3, rtt_warmup=30, rtt_n=200, stream_n=3000, timeout=60.0)
BUDGET_S = 900.0
"""The remote bench's own bound within ``bench/run.py`` (configurations past it are skipped)."""
QUICK_BUDGET_S = 240.0


def driver_env() -> dict[str, str]:
    """As ``bench/run.py``'s: bytecode caches written and used, no ``PYTHONPATH``."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")
    }
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _start_server(
    impl: str, env: dict[str, str], log: IO[bytes]
) -> tuple[subprocess.Popen[bytes], int]:
    args = ["--impl", "sdk", "--agent", "sdk-inproc"] if impl == "sdk-inproc" else ["--impl", impl]
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        start_new_session=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 30.0
    line = b""
    while time.monotonic() < deadline and not line.endswith(b"\n"):
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            byte = os.read(proc.stdout.fileno(), 1)
            if not byte:
                break
            line += byte
    if not line.startswith(b"PORT "):
        _kill_group(proc)
        proc.wait()
        raise RuntimeError(f"the {impl} server did not start: {line!r}")
    return proc, int(line.split()[1])


def _stop_server(proc: subprocess.Popen[bytes]) -> None:
    """Close its stdin (it drains and exits), bounded; then its whole group goes."""
    with contextlib.suppress(OSError):
        if proc.stdin is not None:
            proc.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10.0)
    _kill_group(proc)
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def measure(config: Config, work: Work, env: dict[str, str] | None = None) -> dict[str, Any]:
    """One configuration in fresh processes: the client driver's result, or ``error``."""
    env = driver_env() if env is None else env
    with tempfile.TemporaryDirectory(prefix="bench-remote-") as tmp:
        out = Path(tmp) / "out.json"
        log_path = Path(tmp) / "log"
        with open(log_path, "wb") as log:
            server: subprocess.Popen[bytes] | None = None
            cmd = [
                sys.executable,
                str(CLIENT),
                "--client",
                config.client,
                "--target",
                config.target,
                "--out",
                str(out),
                "--connects",
                str(work.connects),
                "--rtt-warmup",
                str(work.rtt_warmup),
                "--rtt-n",
                str(work.rtt_n),
                "--stream-n",
                str(work.stream_n),
                "--timeout",
                str(work.timeout),
            ]
            try:
                if config.server is not None:
                    server, port = _start_server(config.server, env, log)
                    scheme = "ws" if config.target == "ws" else "http"
                    cmd += ["--url", f"{scheme}://127.0.0.1:{port}/acp"]
                    cmd += ["--server-pid", str(server.pid)]
                client = subprocess.Popen(
                    cmd,
                    cwd=ROOT,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
                try:
                    rc = client.wait(5 * work.timeout)
                except subprocess.TimeoutExpired:
                    rc = None
                _kill_group(client)
                client.wait()
            except (OSError, RuntimeError) as exc:
                return {"error": str(exc)[:300]}
            finally:
                if server is not None:
                    _stop_server(server)
        tail = log_path.read_bytes()[-2000:].decode("utf-8", "replace")
        if rc != 0 or not out.exists():
            last = [x for x in tail.strip().splitlines() if x.strip()]
            why = "timeout" if rc is None else f"exit {rc}"
            return {"error": f"{why}: {last[-1] if last else ''}"[:300]}
        result: dict[str, Any] = json.loads(out.read_text())
        return result


def run_reps(
    raw: TextIO,
    reps: int,
    rng: random.Random,
    work: Work,
    *,
    configs: tuple[Config, ...] = CONFIGS,
    gate: Callable[[], tuple[float, float]] | None = None,
    left_s: float = float("inf"),
    log: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """``reps`` repetitions of every configuration, each in a new random order; a ``remote``
    record per run (written to ``raw`` and returned). ``gate`` (the quiet-machine wait)
    runs before each and returns (seconds waited, load in cores)."""
    env = driver_env()
    records: list[dict[str, Any]] = []
    deadline = time.perf_counter() + left_s
    measure(configs[0], QUICK, env)  # warm-up (bytecode caches, first imports), not kept
    for rep in range(reps):
        order = list(configs)
        rng.shuffle(order)
        for slot, config in enumerate(order):
            rec: dict[str, Any] = {"kind": "remote", "rep": rep, "slot": slot, "config": config.key}
            if time.perf_counter() > deadline:
                rec["result"] = {"error": "skipped: run budget spent"}
            else:
                waited, load = gate() if gate is not None else (0.0, 0.0)
                t0 = time.perf_counter()
                rec["result"] = measure(config, work, env)
                rec.update(pre_load_cores=load, quiet_wait_s=waited)
                rec["wall_s"] = time.perf_counter() - t0
            raw.write(json.dumps(rec) + "\n")
            raw.flush()
            records.append(rec)
            if log is not None:
                log(f"remote {rep + 1}/{reps}: {config.key:<20} {_brief(rec['result'])}")
    return records


def _brief(result: dict[str, Any]) -> str:
    if "error" in result:
        return f"ERROR {result['error']}"
    ph = result.get("phases") or {}
    parts: list[str] = []
    with contextlib.suppress(KeyError, TypeError):
        parts.append(f"connect {ph['connect']['median_ms']:.0f} ms")
    with contextlib.suppress(KeyError, TypeError):
        parts.append(f"rtt p50 {ph['rtt']['p50_us']:.0f} µs")
    with contextlib.suppress(KeyError, TypeError):
        parts.append(f"stream {ph['stream']['msgs_s']:.0f} msg/s")
    errs = [f"{k}: {v['error']}" for k, v in ph.items() if isinstance(v, dict) and "error" in v]
    return ", ".join(parts) + ("; ERROR " + "; ".join(errs) if errs else "")


# ---------------------------------------------------------------- rendering

METRICS: tuple[tuple[str, str, tuple[str, str], int, bool], ...] = (
    # key, label, (phase, field), digits, higher is better
    ("connect", "connect → initialize, ms", ("connect", "median_ms"), 1, False),
    ("rtt_p50", "RTT p50 µs", ("rtt", "p50_us"), 0, False),
    ("rtt_p95", "RTT p95 µs", ("rtt", "p95_us"), 0, False),
    ("rtt_cpu", "CPU µs per RT (all processes)", ("rtt", "cpu_us"), 0, False),
    ("s_rate", "stream msgs/s", ("stream", "msgs_s"), 0, True),
    ("s_cpu", "stream CPU µs/msg (all processes)", ("stream", "cpu_us"), 1, False),
    ("s_cli", "  of which client", ("stream", "cpu_cli_us"), 1, False),
    ("s_srv", "  of which server", ("stream", "cpu_srv_us"), 1, False),
    ("s_agent", "  of which agent", ("stream", "cpu_agent_us"), 1, False),
)
RATIO_METRICS = ("connect", "rtt_p50", "rtt_cpu", "s_rate", "s_cpu")

NOTES = """\
**What dominates** (hand-written, from the two runs that introduced this bench, library
between `d0ae616` and `60ccef1` (with other work in progress in `src/`), on a busy 2-core
machine, load average 3–8: `bench/remote.py --reps 3`, raw file
`raw-remote-20261203-072819.jsonl`, and `--reps 5` with the two `sdk-inproc` rows,
`raw-remote-20261203-073855.jsonl`; and py-spy 0.4 at 250 Hz on client and server, one
profiled run per row with 900 round trips or 30 000 updates, start-up left out; shares are of
one process's samples). Re-profile with `py-spy record -f raw --subprocesses` around
`bench/drivers/remote_client.py` and `--pid` of `bench/drivers/remote_server.py`.

* **Loopback HTTP costs 6–17× stdio's round trip and streams at 1/5–1/16 of its rate, for
  both stacks**; WebSocket 2–5× the round trip. A 0-chunk turn over HTTP is a POST (202) plus
  the answer read from the session's SSE stream: in our HTTP/2 client, asyncio's socket writes
  are 15% of samples (httpcore's HTTP/2 sends headers, body and end of stream as three writes
  per POST), the HTTP stack (httpx, httpcore, h2, hpack, hyperframe) 24%, anyio 7%, our code
  5%; the server idles half its samples, hypercorn with h2 16%, our server code 5%. The SDK's
  HTTP/1.1 client has the same shape (asyncio 51%, socket writes 21%, HTTP stack 27%).
* **Our server is the cheaper one, our client the costlier.** The crossings separate them:
  our server's CPU per streamed update is 0.4–0.7× the SDK server's on the same transport in
  every pairing of both runs (HTTP/1.1 47–71 µs against 98–129, WebSocket 38–48 against
  67–102). Our client's is 1.1–1.5× the SDK client's over HTTP/1.1 and 1.9–3.1× over
  WebSocket (75–107 and 113–139 µs against 56–97 and 40–64), while over stdio ours is the
  cheaper (12–14 µs against 34–44). The round trips of the SDK's client through our server
  stay within the noise of the machine (medians 0.9–1.8× the SDK pair's, single repetitions
  0.6–3.9×).
* **Per update, our client's link crosses several anyio primitives**, each a pass of the event
  loop: over WebSocket httpx-ws's receiving task puts the frame in its memory-object stream,
  `WsLink.read` takes it under a `fail_after` of its own, `MessageLink.push_line` puts it in the
  link's memory-object stream, the peer's framer splits and decodes it again as an NDJSON line,
  then the turn's queue. On this machine a memory-object send and receive took 18 µs,
  `fail_after` 22 µs and `checkpoint` 9.5 µs (loops of 100 000 on asyncio); py-spy puts 36%
  of the WebSocket client's samples (23% over HTTP/1.1) under `asyncio.current_task`, which
  anyio reaches through sniffio for every such primitive. HTTP/2 adds httpcore's connection
  lock around each DATA frame read and the pure-Python h2 state machine: client 116–128
  against 75–88 µs per update over HTTP/1.1, server 72–89 against 47–50.
* **Connect is mostly the agent's start**: the SDK's server with its agent in process answers
  `initialize` in 41 ms, against 184 ms with the agent's process (run 2). Above that, our HTTP
  client makes an `httpx.AsyncClient` for its POSTs and another for each GET stream (the
  connection's, then one per session), and each built a default TLS context
  (`ssl.create_default_context`: 59 ms of CPU per client here, against 0.07 ms with a shared
  context, on the event loop's thread) even for `http://`: 5–7% of our client's samples in
  the profiles. Since `d380920` the clients of a connection share one (the SDK's HTTP client
  builds one per connection too).
* **Over stdio**, our typed client's turn (a `PromptTurn` with its task, events and update
  queue) costs more per round trip than the SDK's `prompt` call: 368–383 µs against 240–261
  (CPU 1.5–1.6× the SDK's, client and agent).
* A round trip's POSTs all go on one HTTP connection, and Hypercorn (both servers) ends an
  HTTP/2 connection after 1000 requests (`keep_alive_max_requests`), failing the request in
  flight: our client's link then closes. The bench keeps each connection under that (500
  round trips, 50 warm-up); over HTTP/1.1 the server's `Connection: close` is harmless."""


def _value(rec: dict[str, Any], path: tuple[str, str]) -> float | None:
    ph = ((rec.get("result") or {}).get("phases") or {}).get(path[0])
    v = ph.get(path[1]) if isinstance(ph, dict) else None
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


class Records:
    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.by: dict[tuple[str, int], dict[str, Any]] = {}
        for r in records:
            if r.get("config"):
                self.by[(r["config"], int(r.get("rep", 0)))] = r
        seen = {k for k, _ in self.by}
        self.configs = [c for c in CONFIGS + EXTRA_CONFIGS if c.key in seen]
        self.reps = sorted({rep for _, rep in self.by})

    def values(self, key: str, path: tuple[str, str]) -> list[float]:
        out: list[float] = []
        for rep in self.reps:
            rec = self.by.get((key, rep))
            v = _value(rec, path) if rec else None
            if v is not None:
                out.append(v)
        return out

    def ratios(self, key: str, ref: str, path: tuple[str, str]) -> list[float]:
        out: list[float] = []
        for rep in self.reps:
            a, b = self.by.get((key, rep)), self.by.get((ref, rep))
            va = _value(a, path) if a else None
            vb = _value(b, path) if b else None
            if va is not None and vb:
                out.append(va / vb)
        return out

    def errors(self) -> list[str]:
        out: list[str] = []
        for (key, rep), rec in sorted(self.by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            res = rec.get("result") or {}
            errs = [str(res["error"])] if "error" in res else []
            errs += [
                f"{k}: {v['error']}"
                for k, v in (res.get("phases") or {}).items()
                if isinstance(v, dict) and "error" in v
            ]
            if errs:
                out.append(f"* `{key}`, repetition {rep + 1}: {'; '.join(errs)[:300]}")
        return out


def section(
    records: list[dict[str, Any]], *, standalone: bool = False, context: str = ""
) -> list[str]:
    """The remote section (Markdown lines) from ``remote`` records."""
    import render  # imported here: render imports this module

    L = ["## Remote: loopback HTTP and WebSocket vs stdio, ours vs the official SDK", ""]
    skipped = [str(r["skipped"]) for r in records if r.get("skipped")]
    d = Records(records)
    if not d.configs:
        why = skipped[0] if skipped else "`bench/run.py --remote-reps 0`, or an older raw file"
        return [*L, f"Not measured in this run ({why}).", ""]
    where = (
        "`bench/remote.py` (run alone)"
        if standalone
        else "`bench/remote.py`, run by `bench/run.py` after the other repetitions "
        "(alone: `.venv/bin/python bench/remote.py`)"
    )
    first = next(iter(d.by.values()))
    phases = (first.get("result") or {}).get("phases") or {}
    rtt_n = (phases.get("rtt") or {}).get("n", "?")
    stream_n = (phases.get("stream") or {}).get("n", "?")
    L.append(
        f"{where}: {len(d.reps)} repetition(s); each runs every configuration once, in a new "
        "random order, as a fresh server process (when it has one) and a fresh client process. "
        "The agent is the same everywhere: `bench/drivers/subagents_agent.py` (the raw echo "
        "agent), one process per connection, spawned by the client (stdio) or by the server "
        "(ours: `serve_acp_http(agent_command([...]))`; the SDK's ASGI app "
        "(`acp.http.asgi.create_asgi_app`) under Hypercorn, each connection's in-memory "
        "transport bound to the same command by `bench/drivers/remote_server.py`: the SDK "
        "server hosts only in-process agent objects, its routing, SSE and WebSocket code runs "
        "unchanged). Clients: ours, the typed `connect_agent` (stdio) and "
        "`connect_agent_url` (`transport`, `http2` set per row); the SDK's, "
        "`acp.spawn_agent_process` (stdio) or `create_http_stream`/`create_websocket_stream` + "
        "`connect_to_agent` (its HTTP client speaks HTTP/1.1 over `http://`: no h2c). "
        "Connect: median of the fresh connections after a warm-up one, open → `initialize` "
        f"answered. RTT: {rtt_n} sequential 0-chunk prompt turns on one session (the prompt "
        "request and its `end_turn` answer; over HTTP a POST answered 202 and the answer on "
        f"the session's SSE stream). Stream: one turn of {stream_n} `agent_message_chunk` "
        "updates of 16 B, done when the answer is in and every update reached the client's "
        "code; CPU of client, server and agent processes (`/proc/*/schedstat`). Cells are "
        "median (min–max) over the repetitions." + (f" {context}" if context else "")
    )
    L.append("")
    head = ["metric"] + [f"`{c.key}`" for c in d.configs]
    rows = [
        [label] + [render.summary(d.values(c.key, path), digits) for c in d.configs]
        for _, label, path, digits, _ in METRICS
    ]
    L += render.table(head, rows)
    L.append("")
    L.append("Rows of the table above, by name:")
    L.append("")
    L += [f"* `{c.key}`: {c.label}" for c in d.configs]
    L.append("")
    metric = {m[0]: m for m in METRICS}
    present = {c.key for c in d.configs}
    pairs: list[tuple[str, list[tuple[Config, str]]]] = [
        (
            f"Paired ratios vs `{FLOOR}` (our client over stdio: the floor)",
            [(c, FLOOR) for c in d.configs if c.key != FLOOR and FLOOR in present and c.ref],
        ),
        (
            "Paired ratios vs the SDK pair (the SDK's client and server, same transport)",
            [(c, c.ref) for c in d.configs if c.ref and c.ref != c.key and c.ref in present],
        ),
    ]
    for title, against in pairs:
        if not against:
            continue
        L += [f"{title}:", ""]
        rows = []
        for c, ref in against:
            cells = [f"`{c.key}` / `{ref}`"]
            for key in RATIO_METRICS:
                cells.append(render.ratio_summary(d.ratios(c.key, ref, metric[key][2])))
            rows.append(cells)
        L += render.table(["pair"] + [metric[k][1].strip() for k in RATIO_METRICS], rows)
        L.append("")
    L.append(
        "Ratios are per repetition, median (min–max). Below 1 is faster for the times, CPU "
        "and connect; above 1 is faster for msgs/s. The HTTP/2 rows are compared with the SDK's "
        "HTTP/1.1 pair (its client has no h2c)."
    )
    L.append("")
    errors = d.errors()
    if errors:
        L += [*errors[:8], ""]
    L += [NOTES, ""]
    return L


def section_context(records: list[dict[str, Any]]) -> str:
    loads = [float(r["pre_load_cores"]) for r in records if r.get("pre_load_cores") is not None]
    if not loads:
        return ""
    busy = sum(1 for x in loads if x >= 0.2)
    return (
        "Other load just before each configuration (the same quiet gate as the drivers): median "
        f"{statistics.median(loads):.2f} cores, max {max(loads):.2f}; {busy} of {len(loads)} "
        "started above 0.2 cores."
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--reps", type=int, default=None, help="repetitions (default 5, quick 1)")
    ap.add_argument("--quick", action="store_true", help="fewer messages (a smoke test)")
    ap.add_argument(
        "--configs",
        default=None,
        help="comma-separated subset of: " + ", ".join(BY_KEY) + " (default: all but the "
        "sdk-inproc ones)",
    )
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    reps: int = args.reps if args.reps is not None else (1 if args.quick else 5)
    configs = CONFIGS
    if args.configs:
        try:
            configs = tuple(BY_KEY[k.strip()] for k in args.configs.split(",") if k.strip())
        except KeyError as exc:
            ap.error(f"unknown configuration {exc}")
    seed: int = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    RESULTS.mkdir(parents=True, exist_ok=True)
    raw_path = RESULTS / f"raw-remote-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    load = os.getloadavg()[0]

    def log(msg: str) -> None:
        print(f"[remote {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    log(f"{reps} repetition(s) of {len(configs)} configurations; seed {seed}; raw {raw_path}")
    with open(raw_path, "w") as raw:
        records = run_reps(
            raw, reps, random.Random(seed), QUICK if args.quick else FULL, configs=configs, log=log
        )
    after = os.getloadavg()[0]
    context = f"Load average {load:.1f} before, {after:.1f} after ({os.cpu_count()} cores)."
    text = "\n".join(section(records, standalone=True, context=context)).rstrip() + "\n"
    if args.out is None:
        print(text, end="")
    else:
        args.out.write_text(text)
        log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
