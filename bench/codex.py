"""Codex app-server bench: what a client layer costs per turn over the bare binary.

    .venv/bin/python bench/codex.py [--reps N] [--quick]

Three clients drive the same ``codex app-server`` binary (the project's npm copy of
``@openai/codex``, see ``subagents.testing.fake_models.openai_responses.codex_command``) against
one fake Responses API served by this process on 127.0.0.1:

- ``floor``: a minimal asyncio JSONL client, requests one at a time, lines read inline
  (``bench/drivers/codex_floor.py``);
- ``subagents``: ``subagents.transports.connect_codex`` (``bench/drivers/codex_subagents.py``);
- ``openai-codex``: the official Python SDK, pinned, in its own clean venv
  ``bench/.venvs/openai-codex`` (created on first use, from the package index), pointed at the
  same binary through ``CodexConfig.codex_bin`` (``bench/drivers/codex_sdk.py``).

Each is a driver process that spawns codex, initializes, starts a thread, runs short turns
(a few deltas) then long turns (``--long-deltas`` deltas), and writes its timings as JSON
(``bench/drivers/codex_common.py``). After one warm-up round, every repetition runs the three
drivers once each, in a new random order, each after waiting (bounded) for a quiet machine.
Cells are median (min–max) over the repetitions; ratios and differences are paired with the
floor of the same repetition. Raw lines go to ``bench/results/raw-codex-<stamp>.jsonl`` (one per
driver run, then one ``{"meta": ...}``); the Markdown table is printed, and
``--render bench/results/raw-codex-<stamp>.jsonl`` prints it again from the raw file.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import run  # bench/run.py: driver runner, quiet-machine wait, environment
from subagents.testing.fake_models import openai_responses as fake
from subagents.testing.fake_models.openai_responses import (
    ResponsesHandler,
    codex_command,
    codex_home,
    last_user_text,
    serve,
)

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DRIVERS = BENCH / "drivers"
RESULTS = BENCH / "results"
SDK_VENV = BENCH / ".venvs" / "openai-codex"
SDK_PIN = "openai-codex==0.163.0"
#: The SDK and its runtime dependencies (the CLI wheel is installed, never run).
SDK_ALLOWED = {
    "openai-codex",
    "openai-codex-cli-bin",
    "pydantic",
    "pydantic-core",
    "annotated-types",
    "typing-inspection",
    "typing-extensions",
    "packaging",
}
IMPLS = ("floor", "subagents", "openai-codex")
DELTA_TEXT = "tok "
_BENCH_DELTAS = re.compile(r"\bbench-deltas (\d+)\b")


def log(msg: str) -> None:
    print(f"[codex-bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the fake model


class BenchHandler(ResponsesHandler):
    """``bench-deltas N`` in the last user message: one assistant message streamed as ``N``
    deltas of :data:`DELTA_TEXT`, written as fast as the socket takes them. Anything else:
    the scripted scenarios of :class:`ResponsesHandler`."""

    def handle_post(self, body: Any) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        found = _BENCH_DELTAS.search(last_user_text(body))
        if not path.endswith("/responses") or found is None:
            super().handle_post(body)
            return
        with self.fake.lock:
            number = int(self.fake.state.get("responses", 0)) + 1
            self.fake.state["responses"] = number
        response = fake._Response(number, fake.MODEL)  # pyright: ignore[reportPrivateUsage]
        deltas = [DELTA_TEXT] * int(found.group(1))
        self.send_sse(response.events(response.message(deltas)))


# ---------------------------------------------------------------- the SDK's venv


def sdk_python() -> Path:
    return SDK_VENV / "bin" / "python"


@functools.cache
def ensure_sdk_venv() -> list[str]:
    """Create the clean openai-codex venv if needed (pip, from the package index); return its
    ``pip freeze``."""
    return run.ensure_clean_venv(SDK_VENV, SDK_PIN, SDK_ALLOWED, "codex-bench")


# ---------------------------------------------------------------- running


def driver_command(impl: str, common: list[str]) -> list[str]:
    if impl == "floor":
        return [sys.executable, str(DRIVERS / "codex_floor.py"), *common]
    if impl == "subagents":
        return [sys.executable, str(DRIVERS / "codex_subagents.py"), *common]
    if impl == "openai-codex":
        return [str(sdk_python()), str(DRIVERS / "codex_sdk.py"), *common]
    raise ValueError(impl)


def summarize_run(result: dict[str, Any], long_deltas: int, short_deltas: int) -> dict[str, Any]:
    """One driver run's metrics (medians over its turns of each kind)."""
    turns: list[dict[str, Any]] = result["turns"]
    short = [t for t in turns if t["kind"] == "short"]
    long = [t for t in turns if t["kind"] == "long"]

    def med(rows: list[dict[str, Any]], key: str) -> float:
        return statistics.median(float(r[key]) for r in rows if r[key] is not None)

    span = long_deltas - short_deltas
    out: dict[str, Any] = {
        "init_ms": result["init_ms"],
        "init_cpu_ms": result["init_cpu_ms"],
        "import_ms": result["import_ms"],
        "import_init_ms": result["import_ms"] + result["init_ms"],
        "first_turn_cpu_ms": float(short[0]["client_cpu_ms"]),
        "thread_start_ms": result["thread_start_ms"],
        "first_delta_ms": med(short, "first_delta_ms"),
        "short_turn_ms": med(short, "turn_ms"),
        "short_cpu_ms": med(short, "client_cpu_ms"),
        "long_first_delta_ms": med(long, "first_delta_ms"),
        "long_turn_ms": med(long, "turn_ms"),
        "long_cpu_ms": med(long, "client_cpu_ms"),
        "codex_cpu_long_ms": med(long, "codex_cpu_ms"),
        "codex_cpu_short_ms": med(short, "codex_cpu_ms"),
        "per_delta_cpu_us": (med(long, "client_cpu_ms") - med(short, "client_cpu_ms")) / span * 1e3,
        "stream_us_per_delta": statistics.median(
            (t["last_delta_ms"] - t["first_delta_ms"]) / max(1, t["deltas"] - 1) * 1e3 for t in long
        ),
        "client_maxrss_mib": result.get("client_maxrss_mib"),
        "long_deltas_seen": min(t["deltas"] for t in long),
        "short_deltas_seen": min(t["deltas"] for t in short),
        "statuses": sorted({str(t["status"]) for t in turns}),
    }
    return out


def fmt(x: float) -> str:
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}".replace(",", " ")
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def cell(values: list[float], suffix: str = "", fmt_: Callable[[float], str] = fmt) -> str:
    if not values:
        return "–"
    m = statistics.median(values)
    if len(values) == 1:
        return f"{fmt_(m)}{suffix}"
    return f"{fmt_(m)}{suffix} ({fmt_(min(values))}–{fmt_(max(values))})"


def signed(x: float) -> str:
    return ("+" if x >= 0 else "−") + fmt(abs(x))


METRICS: list[tuple[str, str, str]] = [
    # key, label, how it pairs with the floor ("ratio" or "diff")
    ("import_ms", "importing the client library, ms", "ratio"),
    ("init_ms", "spawn → `initialize` answered, ms", "ratio"),
    ("import_init_ms", "import + spawn → `initialize`, ms", "ratio"),
    ("init_cpu_ms", "client CPU during spawn → `initialize`, ms", "ratio"),
    ("thread_start_ms", "`thread/start` round trip, ms", "ratio"),
    ("first_delta_ms", "`turn/start` → first delta, ms (short turns)", "ratio"),
    ("short_turn_ms", "`turn/start` → `turn/completed`, ms (short turns)", "ratio"),
    ("first_turn_cpu_ms", "client CPU of the first turn, ms (first use)", "ratio"),
    ("short_cpu_ms", "client CPU per short turn, ms", "ratio"),
    ("long_turn_ms", "`turn/start` → `turn/completed`, ms (long turn)", "ratio"),
    ("long_cpu_ms", "client CPU per long turn, ms", "ratio"),
    ("per_delta_cpu_us", "client CPU per delta, µs (long − short, per extra delta)", "diff"),
    ("stream_us_per_delta", "long turn, first → last delta, µs per delta (wall)", "ratio"),
    ("codex_cpu_long_ms", "codex CPU per long turn, ms (same work for all)", "ratio"),
    ("client_maxrss_mib", "client peak RSS, MiB", "ratio"),
]


def paired_table(
    by: dict[tuple[int, str], dict[str, Any]],
    reps: list[int],
    impls: tuple[str, ...],
    metrics: list[tuple[str, str, str]],
) -> list[str]:
    """The Markdown table: one row per metric, one column per implementation (median (min–max)
    over the repetitions), then each non-floor implementation paired with the floor of the
    same repetition (``impls[0]``): ratio or difference, as the metric says."""
    floor, others = impls[0], impls[1:]
    lines = ["| metric | " + " | ".join(f"`{i}`" for i in impls)]
    lines[0] += " | " + " | ".join(f"`{i}` vs floor" for i in others) + " |"
    lines.append("|---" * (1 + len(impls) + len(others)) + "|")
    for key, label, pairing in metrics:
        row = [label]
        for impl in impls:
            vals = [by[(r, impl)][key] for r in reps if (r, impl) in by]
            row.append(cell([float(v) for v in vals if v is not None]))
        for impl in others:
            pairs = [
                (float(by[(r, impl)][key]), float(by[(r, floor)][key]))
                for r in reps
                if (r, impl) in by
                and (r, floor) in by
                and by[(r, impl)][key] is not None
                and by[(r, floor)][key] is not None
            ]
            if pairing == "ratio":
                row.append(cell([a / b for a, b in pairs if b], "×"))
            else:
                diffs = [a - b for a, b in pairs]
                row.append(cell(diffs, "", signed) if diffs else "–")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def render(
    runs: list[dict[str, Any]],
    meta: dict[str, Any],
) -> str:
    by: dict[tuple[int, str], dict[str, Any]] = {
        (r["rep"], r["impl"]): r["metrics"] for r in runs if r.get("metrics")
    }
    reps = sorted({r["rep"] for r in runs})
    lines: list[str] = []
    add = lines.append
    add(
        f"Mode **{meta['mode']}**, {len(reps)} repetition(s) after one warm-up round; each runs "
        "the three drivers once, in a new random order. Per driver run: spawn, `initialize`, "
        f"`thread/start`, {meta['short_turns']} short turns ({meta['short_deltas']} deltas "
        f"each), then {meta['long_turns']} long turn(s) ({meta['long_deltas']} deltas of "
        f"{len(DELTA_TEXT)} B each); per-turn figures are the run's median per kind. Cells: "
        "**median (min–max) over the repetitions**; the last columns pair each repetition "
        "with its own floor."
    )
    add("")
    lines += paired_table(by, reps, IMPLS, METRICS)
    add("")
    seen = {
        impl: sorted(
            {
                (by[(r, impl)]["short_deltas_seen"], by[(r, impl)]["long_deltas_seen"])
                for r in reps
                if (r, impl) in by
            }
        )
        for impl in IMPLS
    }
    statuses = sorted({s for m in by.values() for s in m["statuses"]})
    add(
        "Deltas received per turn (min short, min long), by implementation: "
        + "; ".join(f"`{i}` {seen[i]}" for i in IMPLS)
        + f". Turn statuses seen: {statuses}."
    )
    bg = [r["background_pct"] for r in runs]
    failed = [f"rep {r['rep']} {r['impl']}: {r['status']}" for r in runs if r["status"] != "ok"]
    add(
        f"Other load on the machine while drivers ran: median {statistics.median(bg):.0f}% of "
        f"one core, max {max(bg):.0f}%; {sum(b > 20 for b in bg)} of {len(bg)} driver runs saw "
        f"more than 20%. Failed runs: {failed or 'none'}. The whole run took "
        f"{meta['elapsed_s']:.0f} s."
    )
    add("")
    add(
        f"Versions: codex `{meta['codex_version']}` (`{meta['codex_path']}`, user agents seen: "
        f"{meta['user_agents']}); `openai-codex` {meta['sdk_version']} in a clean venv "
        f"(`{' '.join(meta['sdk_freeze'])}`); Python {meta['python']}; subagents at "
        f"{meta['revision']}; {meta['cpu_count']} × {meta['cpu_model']}."
    )
    return "\n".join(lines)


RESULTS_MD = BENCH / "codex-results.md"
BEGIN = "<!-- generated by bench/codex.py: begin -->"
END = "<!-- generated by bench/codex.py: end -->"


def write_between_markers(path: Path, begin: str, end: str, generated: str) -> None:
    """Put ``generated`` between the markers of ``path`` (the hand-written text around them
    stays)."""
    text = path.read_text()
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    path.write_text(f"{head}{begin}\n{generated.rstrip()}\n{end}{tail}")


def publish(generated: str) -> None:
    """Put ``generated`` between the markers of bench/codex-results.md, then refresh the
    included sections at the end of BENCHMARKS.md (bench/render.py takes them from there
    too)."""
    write_between_markers(RESULTS_MD, BEGIN, END, generated)
    summary = ROOT / "BENCHMARKS.md"
    if summary.exists():
        run.render.republish(summary)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--reps", type=int, default=None, help="counted repetitions (default 15)")
    p.add_argument("--quick", action="store_true", help="smoke test: 2 reps, smaller turns")
    p.add_argument("--long-deltas", type=int, default=None, help="deltas of a long turn (500)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument(
        "--quiet-wait", type=float, default=None, help="max s to wait for a quiet machine (10)"
    )
    p.add_argument("--render", type=Path, default=None, help="re-render a raw-codex-*.jsonl")
    args = p.parse_args()
    if args.render is not None:
        lines = [json.loads(x) for x in args.render.read_text().splitlines() if x.strip()]
        meta_line = next(x["meta"] for x in lines if "meta" in x)
        print(render([x for x in lines if "meta" not in x and x["rep"] > 0], meta_line))
        return 0
    quick: bool = args.quick
    reps: int = args.reps if args.reps is not None else (2 if quick else 15)
    long_deltas: int = args.long_deltas or (200 if quick else 500)
    short_turns, short_deltas, long_turns = (3, 5, 1) if quick else (5, 5, 3)
    quiet_wait: float = args.quiet_wait if args.quiet_wait is not None else (2.0 if quick else 10.0)
    rng = random.Random(args.seed)

    command = codex_command()
    if command is None:
        raise SystemExit(
            "codex app-server not installed: run the e2e tests once (they install "
            "@openai/codex@0.171.0 into .cache/npm), then re-run"
        )
    version = subprocess.run(
        [command[0], "--version"], capture_output=True, text=True, timeout=30
    ).stdout.strip()
    freeze = ensure_sdk_venv()
    leaked = sorted(k for k in os.environ if k.startswith(("OPENAI_", "CODEX_")))
    if leaked:
        log(f"note: {leaked} set here; the SDK's codex inherits them (it merges os.environ)")

    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    raw_path = RESULTS / f"raw-codex-{stamp}.jsonl"
    scratch = ROOT / ".cache"  # codex warns about helper binaries under /tmp: stay out of it
    scratch.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="codex-bench-", dir=scratch))
    t_start = time.perf_counter()
    revision_at_start = run.project_revision()
    runs: list[dict[str, Any]] = []
    user_agents: set[str] = set()
    try:
        with serve(BenchHandler) as server, open(raw_path, "w") as raw:
            env = codex_home(work / "codex-home", server)
            cwd = work / "workspace"
            cwd.mkdir()
            common = [
                "--command",
                json.dumps(command),
                "--env",
                json.dumps(env),
                "--cwd",
                str(cwd),
                "--short-turns",
                str(short_turns),
                "--short-deltas",
                str(short_deltas),
                "--long-turns",
                str(long_turns),
                "--long-deltas",
                str(long_deltas),
            ]
            for rep in range(reps + 1):  # rep 0: warm-up, not counted
                order = list(IMPLS)
                rng.shuffle(order)
                for impl in order:
                    waited, load = run.wait_quiet(quiet_wait)
                    out = work / f"out-{rep}-{impl}.json"
                    logfile = work / f"log-{rep}-{impl}.txt"
                    cmd = driver_command(impl, [*common, "--out", str(out)])
                    status, rc, wall, bg, result, tail = run.run_driver(cmd, out, 180, logfile)
                    record: dict[str, Any] = {
                        "rep": rep,
                        "impl": impl,
                        "status": status,
                        "rc": rc,
                        "wall_s": wall,
                        "background_pct": bg,
                        "quiet_waited_s": waited,
                        "quiet_load": load,
                        "result": result,
                    }
                    if status == "ok" and result is not None:
                        record["metrics"] = summarize_run(result, long_deltas, short_deltas)
                        user_agents.add(str(result.get("user_agent")))
                    else:
                        record["tail"] = tail
                        log(f"rep {rep} {impl}: {status}\n{tail}")
                    raw.write(json.dumps(record) + "\n")
                    raw.flush()
                    m = record.get("metrics") or {}
                    log(
                        f"rep {rep}{' (warm-up)' if rep == 0 else ''} {impl}: {status}, "
                        f"init {m.get('init_ms', float('nan')):.0f} ms, first delta "
                        f"{m.get('first_delta_ms', float('nan')):.0f} ms, "
                        f"{m.get('per_delta_cpu_us', float('nan')):.1f} µs CPU/delta, "
                        f"bg {bg:.0f}%"
                    )
                    if rep > 0:
                        runs.append(record)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    facts = run.machine_facts()
    meta = {
        "mode": "quick" if quick else "full",
        "short_turns": short_turns,
        "short_deltas": short_deltas,
        "long_turns": long_turns,
        "long_deltas": long_deltas,
        "elapsed_s": time.perf_counter() - t_start,
        "codex_version": version,
        "codex_path": os.path.relpath(command[0], ROOT),
        "user_agents": ", ".join(f"`{u}`" for u in sorted(user_agents)),
        "sdk_version": SDK_PIN.split("==")[1],
        "sdk_freeze": freeze,
        "python": facts["python"],
        "revision": revision_at_start
        if (revision_at_end := run.project_revision()) == revision_at_start
        else f"{revision_at_start} at the start, {revision_at_end} at the end (changed mid-run)",
        "cpu_count": facts["cpu_count"],
        "cpu_model": facts["cpu_model"],
    }
    meta["quiet_wait_s"] = quiet_wait
    with open(raw_path, "a") as raw:
        raw.write(json.dumps({"meta": meta}) + "\n")
    generated = render(runs, meta)
    print(generated)
    publish(generated)
    log(f"raw results: {raw_path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
