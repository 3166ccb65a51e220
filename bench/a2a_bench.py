"""A2A bench (issue 21): start → first output and a short turn through ``A2AProvider`` against
the official ``a2a-sdk``'s own client, on the same server, paired in one run. Run it as
``bench/a2a.py``; this module is ``a2a_bench`` because one named ``a2a`` in ``bench/`` would
shadow the SDK's package for ``bench/run.py`` and ``bench/render.py``, which import it.

The server is one process per repetition (``bench/drivers/a2a_server.py``: the SDK's server,
its JSON-RPC and agent-card routes under Hypercorn, around a minimal executor that answers
every message with a task streaming ``working``, one artifact text chunk and ``completed``,
no wait between them), warmed by one request before the clients. Against it, in a new random
order each repetition, each client runs as a fresh process (``bench/drivers/a2a_client.py``):
ours, ``A2AProvider.start`` + ``run.progress()`` + ``run.result()``; the SDK's,
``A2ACardResolver`` + ``ClientFactory(ClientConfig(streaming=True)).create(card)`` +
``Client.send_message``. Each process times its imports, its first turn (card discovery
included), a few later turns, and from its spawn to the first turn's first text and result.
Cells are medians over the repetitions; ratios ours / SDK are paired (same repetition).

``bench/run.py`` runs it after the remote bench (``--a2a-reps N``, ``0`` skips it), writes an
``a2a`` record per client and repetition into its raw JSON lines and renders the section into
BENCHMARKS.md. Alone::

    .venv/bin/python bench/a2a.py [--reps N] [--quick] [--out FILE]

prints the same section (to stdout, or to ``--out FILE``); raw lines go to
``bench/results/raw-a2a-<stamp>.jsonl``.
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
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TextIO

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DRIVERS = BENCH / "drivers"
RESULTS = BENCH / "results"
CLIENT = DRIVERS / "a2a_client.py"
SERVER = DRIVERS / "a2a_server.py"
EXPECT = "hello from the bench agent"
"""The answer of ``a2a_server.py`` with one chunk: each client checks it received it."""

CLIENTS = ("ours", "sdk")
LABELS = {"ours": "ours (`A2AProvider`)", "sdk": "the SDK's client (`a2a.client`)"}


@dataclass(frozen=True)
class Work:
    turns: int
    """Later turns per client process (after the first)."""
    timeout: float


FULL = Work(turns=10, timeout=60.0)
QUICK = Work(turns=3, timeout=60.0)
BUDGET_S = 300.0
"""The A2A bench's own bound within ``bench/run.py`` (repetitions past it are skipped)."""
QUICK_BUDGET_S = 120.0


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


def start_server(env: dict[str, str], log: IO[bytes]) -> tuple[subprocess.Popen[bytes], int]:
    """``a2a_server.py`` listening: its process and port."""
    proc = subprocess.Popen(
        [sys.executable, str(SERVER)],
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
        raise RuntimeError(f"the A2A server did not start: {line!r}")
    return proc, int(line.split()[1])


def warm_server(port: int) -> None:
    """One card fetch and one message (``SendMessage``, JSON-RPC, not streamed) before the
    clients, so neither pays the server's first request."""
    base = f"http://127.0.0.1:{port}"
    with urllib.request.urlopen(f"{base}/.well-known/agent-card.json", timeout=30) as r:
        r.read()
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {"messageId": "warm-up", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
        },
    }
    request = urllib.request.Request(
        f"{base}/a2a",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "A2A-Version": "1.0"},
    )
    with urllib.request.urlopen(request, timeout=30) as r:
        answer = json.loads(r.read())
    if "error" in answer:
        raise RuntimeError(f"the A2A server's warm-up request failed: {answer['error']}")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """Close its stdin (it stops), bounded; then its whole group goes."""
    with contextlib.suppress(OSError):
        if proc.stdin is not None:
            proc.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10.0)
    _kill_group(proc)
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def run_client(
    client: str, port: int, work: Work, env: dict[str, str], tmp: Path
) -> dict[str, Any]:
    """One client process against the server at ``port``: its result, or ``error``."""
    out = tmp / f"{client}.json"
    out.unlink(missing_ok=True)
    log_path = tmp / f"{client}.log"
    cmd = [sys.executable, str(CLIENT), "--client", client, "--url", f"http://127.0.0.1:{port}"]
    cmd += ["--out", str(out), "--turns", str(work.turns), "--expect", EXPECT]
    with open(log_path, "wb") as log:
        spawned = time.monotonic_ns()
        try:
            proc = subprocess.Popen(
                [*cmd, "--spawned-ns", str(spawned)],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            return {"error": str(exc)[:300]}
        try:
            rc = proc.wait(work.timeout)
        except subprocess.TimeoutExpired:
            rc = None
        _kill_group(proc)
        proc.wait()
    if rc != 0 or not out.exists():
        tail = log_path.read_bytes()[-2000:].decode("utf-8", "replace")
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
    gate: Callable[[], tuple[float, float]] | None = None,
    left_s: float = float("inf"),
    log: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """``reps`` repetitions, each a fresh server and both clients against it in a new random
    order; an ``a2a`` record per client run (written to ``raw`` and returned). ``gate`` (the
    quiet-machine wait) runs before each client and returns (seconds waited, load in cores)."""
    env = driver_env()
    records: list[dict[str, Any]] = []
    deadline = time.perf_counter() + left_s
    with tempfile.TemporaryDirectory(prefix="bench-a2a-") as name:
        tmp = Path(name)
        for rep in range(-1, reps):  # -1: the warm-up (bytecode caches, first imports), not kept
            order = list(CLIENTS)
            rng.shuffle(order)
            server: subprocess.Popen[bytes] | None = None
            port = 0
            failed = ""
            if time.perf_counter() > deadline:
                failed = "skipped: run budget spent"
            else:
                try:
                    with open(tmp / "server.log", "wb") as server_log:
                        server, port = start_server(env, server_log)
                    warm_server(port)
                except (OSError, RuntimeError) as exc:
                    failed = f"server: {exc}"[:300]
            try:
                for slot, client in enumerate(order):
                    rec: dict[str, Any] = {"kind": "a2a", "rep": rep, "slot": slot}
                    rec["client"] = client
                    if failed:
                        rec["result"] = {"error": failed}
                    else:
                        waited, load = gate() if gate is not None and rep >= 0 else (0.0, 0.0)
                        t0 = time.perf_counter()
                        rec["result"] = run_client(client, port, work, env, tmp)
                        rec.update(pre_load_cores=load, quiet_wait_s=waited)
                        rec["wall_s"] = time.perf_counter() - t0
                    if rep < 0:
                        continue
                    raw.write(json.dumps(rec) + "\n")
                    raw.flush()
                    records.append(rec)
                    if log is not None:
                        log(f"a2a {rep + 1}/{reps}: {client:<4} {_brief(rec['result'])}")
            finally:
                if server is not None:
                    stop_server(server)
    return records


def _brief(result: dict[str, Any]) -> str:
    if "error" in result:
        return f"ERROR {result['error']}"
    parts: list[str] = []
    for key, label in (
        ("cold_first_ms", "first turn → text"),
        ("warm_turn_ms", "later turn"),
        ("proc_first_ms", "spawn → text"),
    ):
        v = result.get(key)
        if isinstance(v, int | float):
            parts.append(f"{label} {v:.1f} ms")
    return ", ".join(parts)


# ---------------------------------------------------------------- rendering

METRICS: tuple[tuple[str, str, int], ...] = (
    # result field, label, digits
    ("cold_first_ms", "first turn: set-up → first text, ms (card discovery included)", 1),
    ("cold_turn_ms", "first turn: set-up → result, ms", 1),
    ("warm_first_ms", "later turns: send → first text, ms", 1),
    ("warm_turn_ms", "later turns: send → result, ms", 1),
    ("warm_cpu_ms", "later turns: client CPU per turn, ms", 1),
    ("import_ms", "client imports, ms", 0),
    ("proc_first_ms", "process spawn → first text, ms", 0),
    ("proc_turn_ms", "process spawn → first result, ms", 0),
)

NOTES = """\
**What dominates** (hand-written; the cells above are from the run this section names).

* **Later turns.** When this bench was introduced, a later turn through `A2AProvider` took
  4–9× the SDK client's time and 8–13× its CPU (about 43 ms against 4 ms a turn): every run
  opened a new `httpx.AsyncClient` (which loads the default SSL context and its CA bundle,
  even for `http://`: 30–40 ms of CPU on the event loop's thread) and fetched the agent card
  again. Since `305578b` a provider keeps one HTTP client, one card and one keep-alive
  connection for all its runs, and loads no CA bundle for `http://`: a later turn is one POST
  and its event stream, as the SDK client's is (1.3× its time and 1.5× its CPU in a trial
  run with `--reps 3` on a busy machine). What remains is the run contract's own work per
  turn (child id, progress feed, the outcome mapping) and the SDK transport's.
* **A first turn in a fresh process** pays the same in both (an HTTP client, the card, a
  connection, the lazy imports of the first request: `httpcore`, `h11`...); ours comes out
  faster because it loads no CA bundle for `http://` and the SDK's first turn also imports
  what `subagents.providers.a2a` imported up front: the imports row shows the other side of
  it. Process spawn → first text counts both."""


def _value(rec: dict[str, Any] | None, key: str) -> float | None:
    v = ((rec or {}).get("result") or {}).get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


class Records:
    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.by: dict[tuple[str, int], dict[str, Any]] = {}
        for r in records:
            if r.get("client"):
                self.by[(r["client"], int(r.get("rep", 0)))] = r
        seen = {k for k, _ in self.by}
        self.clients = [c for c in CLIENTS if c in seen]
        self.reps = sorted({rep for _, rep in self.by})

    def values(self, client: str, key: str) -> list[float]:
        out: list[float] = []
        for rep in self.reps:
            v = _value(self.by.get((client, rep)), key)
            if v is not None:
                out.append(v)
        return out

    def ratios(self, key: str) -> list[float]:
        """ours / SDK per repetition where both measured it."""
        out: list[float] = []
        for rep in self.reps:
            a = _value(self.by.get(("ours", rep)), key)
            b = _value(self.by.get(("sdk", rep)), key)
            if a is not None and b:
                out.append(a / b)
        return out

    def errors(self) -> list[str]:
        out: list[str] = []
        for (client, rep), rec in sorted(self.by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            res = rec.get("result") or {}
            if "error" in res:
                out.append(f"* `{client}`, repetition {rep + 1}: {str(res['error'])[:300]}")
        return out


def section(
    records: list[dict[str, Any]], *, standalone: bool = False, context: str = ""
) -> list[str]:
    """The A2A section (Markdown lines) from ``a2a`` records."""
    import render  # imported here: render imports this module

    L = ["## A2A: A2AProvider vs the a2a-sdk client", ""]
    skipped = [str(r["skipped"]) for r in records if r.get("skipped")]
    d = Records(records)
    if not d.clients:
        why = skipped[0] if skipped else "`bench/run.py --a2a-reps 0`, or an older raw file"
        return [*L, f"Not measured in this run ({why}).", ""]
    where = (
        "`bench/a2a.py` (run alone)"
        if standalone
        else "`bench/a2a.py`, run by `bench/run.py` after the remote bench "
        "(alone: `.venv/bin/python bench/a2a.py`)"
    )
    turns = next(
        (
            int(v)
            for r in d.by.values()
            if isinstance(v := (r.get("result") or {}).get("warm_n"), int)
        ),
        "?",
    )
    L.append(
        f"{where}: {len(d.reps)} repetition(s). Each repetition starts one A2A server "
        "(`bench/drivers/a2a_server.py`: the SDK's own server, its JSON-RPC and agent-card "
        "routes under Hypercorn, around a minimal executor that answers every message with a "
        "task streaming `working`, one artifact text chunk and `completed`, with no wait), "
        "sends it one warm-up message, then runs both clients against it in a new random "
        "order, **each as a fresh client process** (`bench/drivers/a2a_client.py`), so imports "
        "and first use count the same way for both. Ours: `A2AProvider(url)`, then "
        "`provider.start(SubagentRequest(...))`, its `run.progress()` and `run.result()`. The "
        "SDK's, as its tutorial does it: `A2ACardResolver(...).get_agent_card()`, "
        "`ClientFactory(ClientConfig(streaming=True)).create(card)`, `client.send_message(...)` "
        "read to the end of its stream. **First turn**: from the client's set-up (ours: "
        "`A2AProvider(url)` entered, then `start`, which opens its HTTP client and resolves the "
        "card itself; the SDK's: `httpx.AsyncClient()`, the card resolver, `create`, "
        "`send_message`) to the first text in hand (ours: the first `TextProgress`; the SDK's: "
        "the artifact update's text) and to the result (ours: `run.result()` returned; the SDK's: "
        f"its stream ended after `completed`). **Later turns**: {turns} more in the same process, "
        "each as that client's user does it (ours: `start` again; the SDK's: `send_message` on "
        "the same client), median per process; client CPU per turn from `process_time`. "
        "**Process spawn**: from the orchestrator's clock just before it spawned the client to "
        "the first turn's text and result (interpreter start, imports, card discovery, the "
        "turn). Cells are median (min–max) over the repetitions; the ratio is ours / SDK per "
        "repetition, median (min–max): below 1 is ours faster." + (f" {context}" if context else "")
    )
    L.append("")
    head = ["metric"] + [LABELS[c] for c in d.clients]
    paired = len(d.clients) == len(CLIENTS)
    if paired:
        head.append("ours / SDK (paired)")
    rows: list[list[str]] = []
    for key, label, digits in METRICS:
        row = [label] + [render.summary(d.values(c, key), digits) for c in d.clients]
        if paired:
            row.append(render.ratio_summary(d.ratios(key)))
        rows.append(row)
    L += render.table(head, rows)
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
        "Other load just before each client (the same quiet gate as the drivers): median "
        f"{statistics.median(loads):.2f} cores, max {max(loads):.2f}; {busy} of {len(loads)} "
        "started above 0.2 cores."
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--reps", type=int, default=None, help="repetitions (default 5, quick 1)")
    ap.add_argument("--quick", action="store_true", help="fewer later turns (a smoke test)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    reps: int = args.reps if args.reps is not None else (1 if args.quick else 5)
    seed: int = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    RESULTS.mkdir(parents=True, exist_ok=True)
    raw_path = RESULTS / f"raw-a2a-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    load = os.getloadavg()[0]

    def log(msg: str) -> None:
        print(f"[a2a {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    log(f"{reps} repetition(s) of {len(CLIENTS)} clients; seed {seed}; raw {raw_path}")
    with open(raw_path, "w") as raw:
        records = run_reps(raw, reps, random.Random(seed), QUICK if args.quick else FULL, log=log)
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
