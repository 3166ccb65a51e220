"""Render BENCHMARKS.md from the raw JSON lines of one benchmark run.

Usage: ``.venv/bin/python bench/render.py bench/results/raw-<stamp>.jsonl [--out FILE]``
(``bench/run.py`` calls it at the end of every run); ``bench/render.py --includes-only`` only
refreshes the sections included from ``bench/codex-results.md`` and ``bench/claude-results.md``
at the end of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import a2a_bench
import remote
import stall

IMPL_ORDER = [
    "subagents",
    "subagents+typed",
    "subagents/reference-agent",
    "floor",
    "acp-py",
    "subagents/fd-streams",
    "subagents/anyio-pipes",
]
NOTES = Path(__file__).with_name("notes.md")
CODEX_RESULTS = Path(__file__).with_name("codex-results.md")
"""The Codex app-server section, written by ``bench/codex.py`` (a separate run), included."""
CLAUDE_RESULTS = Path(__file__).with_name("claude-results.md")
"""The Claude Code CLI section, written by ``bench/claude.py`` (a separate run), included."""
IN_PROCESS_RESULTS = Path(__file__).with_name("in-process-results.md")
"""The in-process children section, written by ``bench/in_process.py``, included."""
SOAK_RESULTS = Path(__file__).with_name("soak-results.md")
"""The soak section, written by ``bench/soak.py``, included."""
CONFORMANCE_RESULTS = Path(__file__).with_name("conformance-results.md")
"""The conformance suite's wall time per agent, from ``bench/conformance_wall.py``, included."""
FAULT_TABLE = Path(__file__).parents[1] / "tests" / "reliability" / "fault-table.md"
"""The fault table, written by the reliability tests, included."""
#: Sections kept in their own files (each starts with its ``## `` heading), included in order
#: at the end of BENCHMARKS.md.
INCLUDED = (
    CODEX_RESULTS,
    CLAUDE_RESULTS,
    IN_PROCESS_RESULTS,
    SOAK_RESULTS,
    CONFORMANCE_RESULTS,
    FAULT_TABLE,
)
#: Implementations whose driver runs only the spawn phase (no echo workload).
STARTUP_ONLY = {"subagents/reference-agent"}


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    path: tuple[str, ...]
    digits: int = 0


METRICS = [
    Metric("rtt_p50", "RTT p50 µs (0-chunk prompt)", ("rtt", "p50_us")),
    Metric("rtt_p99", "RTT p99 µs", ("rtt", "p99_us")),
    Metric("rtt_cpu", "CPU µs per RT (client+agent)", ("rtt", "cpu_us")),
    Metric("conc_rps", "c=64 req/s", ("conc", "req_s")),
    Metric("conc_cpu", "c=64 CPU µs/req (client+agent)", ("conc", "cpu_us")),
    Metric("conc_p99", "c=64 latency p99 ms", ("conc", "p99_ms"), 2),
    Metric("s16_rate", "stream 16 B msgs/s", ("stream", "msgs_s")),
    Metric("s16_cpu", "stream 16 B CPU µs/msg (client+agent)", ("stream", "cpu_us"), 1),
    Metric("s16_cli", "  of which client", ("stream", "cpu_cli_us"), 1),
    Metric("s16_agent", "  of which agent", ("stream", "cpu_agent_us"), 1),
    Metric("d16", "16 MiB down ms (agent→client notification)", ("big", "down_ms")),
    Metric("u16", "16 MiB up ms (client→agent prompt, `len=` ack)", ("big", "up_ms")),
    Metric("d16_cpu", "16 MiB down CPU ms (client+agent)", ("big", "down_cpu_ms")),
    Metric("d64", "64 MiB down ms", ("huge", "down_ms")),
    Metric("u64", "64 MiB up ms", ("huge", "up_ms")),
]
STARTUP_METRICS = [
    Metric("spawn", "spawn→initialize ms (median of the spawns)", ("spawn", "init_ms")),
    Metric("spawn_first", "first of the spawns, ms", ("spawn", "first_ms")),
    Metric("rss_cli", "RSS after initialize, client", ("spawn", "rss_cli_kib")),
    Metric("rss_agent", "RSS after initialize, agent", ("spawn", "rss_agent_kib")),
]
METRIC = {m.key: m for m in METRICS + STARTUP_METRICS}


@dataclass(frozen=True)
class Target:
    """A figure of issue 17's table (or an older one kept): the paired ratio of ``impls`` to
    ``ref`` in the same repetition, median over the repetitions, against ``bound``.
    ``alongside`` are held to the same bound so their cost is visible; they are not the
    figure, and their verdict says so."""

    label: str
    key: str
    ref: str
    op: str  # "<=" or ">="
    bound: float
    impls: tuple[str, ...]
    alongside: tuple[str, ...] = ()


@dataclass(frozen=True)
class ImportTarget:
    """Whole-process start-up: the wall time of command ``key`` (``startup.IMPORT_CMDS``) over
    that of ``python -c "import asyncio, json"`` in the same round."""

    label: str
    key: str
    bound: float


@dataclass(frozen=True)
class StallTarget:
    """The event-loop stall bench's start window, per backend, in ms (``bench/stall.py``)."""

    label: str
    bound: float


#: The whole-process start-up command every import target is paired with (same round):
#: ``python -c "import asyncio, json"``, the floor client's imports.
IMPORT_FLOOR = "floor"
#: Issue 17's targets, in the order of its "Deliver" table, then the large-message bounds kept
#: from before it.
TARGETS: list[Target | ImportTarget | StallTarget] = [
    Target(
        "spawn→initialize, typed reference agent ≤ 1.5× floor",
        "spawn",
        "floor",
        "<=",
        1.5,
        ("subagents/reference-agent",),
    ),
    Target(
        "spawn→initialize, raw peer ≤ 1.3× floor",
        "spawn",
        "floor",
        "<=",
        1.3,
        ("subagents",),
        ("subagents+typed",),
    ),
    ImportTarget(
        'import of the client endpoint (wall) ≤ 1.5× `python -c "import asyncio, json"`',
        "acp_client",
        1.5,
    ),
    ImportTarget(
        'whole first typed session (process wall) ≤ 2× `python -c "import asyncio, json"`',
        "session",
        2.0,
    ),
    StallTarget(
        f"longest event-loop stall while a typed ACP child starts ≤ {stall.TARGET_MS:g} ms "
        "(start window; idle window beside)",
        stall.TARGET_MS,
    ),
    Target(
        "typed stream 16 B CPU/msg ≤ 1.3× floor",
        "s16_cpu",
        "floor",
        "<=",
        1.3,
        ("subagents+typed",),
        ("subagents",),
    ),
    Target(
        "typed stream 16 B msgs/s ≥ 0.8× floor",
        "s16_rate",
        "floor",
        ">=",
        0.8,
        ("subagents+typed",),
        ("subagents",),
    ),
    Target("RTT p50 ≤ 1.2× floor", "rtt_p50", "floor", "<=", 1.2, ("subagents", "subagents+typed")),
    Target(
        "c=64 CPU/request, typed ≤ 1.5× floor",
        "conc_cpu",
        "floor",
        "<=",
        1.5,
        ("subagents+typed",),
        ("subagents",),
    ),
    Target(
        "RSS after initialize, typed client ≤ 1.3× floor",
        "rss_cli",
        "floor",
        "<=",
        1.3,
        ("subagents+typed",),
        ("subagents", "subagents/reference-agent"),
    ),
    Target(
        "RSS after initialize, typed agent ≤ 1.3× floor",
        "rss_agent",
        "floor",
        "<=",
        1.3,
        ("subagents/reference-agent",),
        ("subagents",),
    ),
    Target("16 MiB down ≤ 1.2× floor", "d16", "floor", "<=", 1.2, ("subagents", "subagents+typed")),
    Target("16 MiB up ≤ 1.2× floor", "u16", "floor", "<=", 1.2, ("subagents", "subagents+typed")),
]
#: Implementations held to the 64 MiB and too-large-line checks (those that ran the phases).
TARGET_IMPLS = ["subagents", "subagents+typed", "subagents/reference-agent"]


def load(
    path: Path,
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """(meta, driver runs, end, extra: ``imports`` rounds, the ``importtime`` breakdown and
    the ``stall`` repetitions, the ``remote`` and ``a2a`` runs; a raw file from before a kind
    existed just lacks it)."""
    meta: dict[str, Any] = {}
    end: dict[str, Any] = {}
    runs: list[dict[str, Any]] = []
    extra: dict[str, Any] = {
        "imports": [],
        "importtime": {},
        "stall": [],
        "remote": [],
        "a2a": [],
    }
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        kind = rec.get("kind")
        if kind == "meta":
            meta = rec
        elif kind == "run":
            runs.append(rec)
        elif kind == "end":
            end = rec
        elif kind == "imports":
            extra["imports"].append(rec)
        elif kind == "importtime":
            extra["importtime"] = rec.get("results") or {}
        elif kind == "stall":
            extra["stall"].append(rec)
        elif kind == "remote":
            extra["remote"].append(rec)
        elif kind == "a2a":
            extra["a2a"].append(rec)
    return meta, runs, end, extra


def value(run: dict[str, Any], path: tuple[str, ...]) -> float | None:
    cur: Any = (run.get("result") or {}).get("phases") or {}
    for p in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(p)
    if isinstance(cur, bool) or not isinstance(cur, int | float):
        return None
    return float(cur) if math.isfinite(cur) else None


def fmt_num(x: float, digits: int) -> str:
    if digits == 0:
        if abs(x) >= 100:
            return f"{x:,.0f}".replace(",", " ") if abs(x) >= 10_000 else f"{x:.0f}"
        return f"{x:.1f}"
    return f"{x:.{digits}f}"


def summary(values: list[float], digits: int) -> str:
    if not values:
        return "–"
    med = statistics.median(values)
    if len(values) == 1:
        return fmt_num(med, digits)
    return f"{fmt_num(med, digits)} ({fmt_num(min(values), digits)}–{fmt_num(max(values), digits)})"


def ratio_summary(values: list[float], digits: int = 2) -> str:
    if not values:
        return "–"
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:.{digits}f}×"
    return f"{med:.{digits}f}× ({min(values):.2f}–{max(values):.2f})"


class Data:
    def __init__(self, runs: list[dict[str, Any]]) -> None:
        self.by: dict[tuple[str, int], dict[str, Any]] = {}
        for r in runs:
            self.by[(r["impl"], r["rep"])] = r
        present = {r["impl"] for r in runs}
        self.impls = [i for i in IMPL_ORDER if i in present] + sorted(present - set(IMPL_ORDER))
        #: the implementations that ran the message phases (columns of the main tables)
        self.phase_impls = [i for i in self.impls if i not in STARTUP_ONLY]
        self.reps = sorted({r["rep"] for r in runs})

    def values(self, impl: str, m: Metric) -> list[float]:
        out: list[float] = []
        for rep in self.reps:
            run = self.by.get((impl, rep))
            v = value(run, m.path) if run else None
            if v is not None:
                out.append(v)
        return out

    def ratios(self, impl: str, ref: str, m: Metric) -> list[float]:
        out: list[float] = []
        for rep in self.reps:
            a, b = self.by.get((impl, rep)), self.by.get((ref, rep))
            va = value(a, m.path) if a else None
            vb = value(b, m.path) if b else None
            if va is not None and vb:
                out.append(va / vb)
        return out

    def phase_field(self, impl: str, phase: str, field: str) -> list[Any]:
        out: list[Any] = []
        for rep in self.reps:
            run = self.by.get((impl, rep))
            phases = ((run or {}).get("result") or {}).get("phases") or {}
            ph = phases.get(phase)
            if run is None:
                continue
            if not isinstance(ph, dict):
                out.append(None)
            else:
                out.append(ph.get(field, ph.get("error")))
        return out


def verdict(values: list[float], op: str, bound: float) -> str:
    if not values:
        return "not measured"

    def within(x: float) -> bool:
        return x <= bound if op == "<=" else x >= bound

    word = "met" if within(statistics.median(values)) else "**MISSED**"
    inside = sum(1 for v in values if within(v))
    if 0 < inside < len(values):
        word += f" (borderline: {inside}/{len(values)} reps within)"
    return word


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def status_cell(items: list[Any]) -> str:
    if not items:
        return "–"
    oks = sum(1 for x in items if x == "ok")
    if oks == len(items):
        return f"ok ({oks}/{len(items)})"
    bad = [str(x) for x in items if x != "ok"]
    return f"**broken** ({oks}/{len(items)} ok; {bad[0][:120]})"


def import_values(imports: list[dict[str, Any]], key: str, field: str) -> list[float]:
    out: list[float] = []
    for rnd in imports:
        res = (rnd.get("results") or {}).get(key) or {}
        v = res.get(field)
        if isinstance(v, int | float) and not res.get("error"):
            out.append(float(v))
    return out


def import_inside(imports: list[dict[str, Any]], key: str, field: str) -> list[float]:
    out: list[float] = []
    for rnd in imports:
        inside = (((rnd.get("results") or {}).get(key) or {}).get("inside")) or {}
        v = inside.get(field)
        if isinstance(v, int | float):
            out.append(float(v))
    return out


def import_ratios(
    imports: list[dict[str, Any]], key: str, ref: str, field: str = "wall_ms"
) -> list[float]:
    out: list[float] = []
    for rnd in imports:
        res = rnd.get("results") or {}
        a, b = res.get(key) or {}, res.get(ref) or {}
        if a.get("error") or b.get("error"):
            continue
        va, vb = a.get(field), b.get(field)
        if isinstance(va, int | float) and isinstance(vb, int | float) and vb:
            out.append(va / vb)
    return out


def import_diffs(imports: list[dict[str, Any]], key: str, ref: str) -> list[float]:
    out: list[float] = []
    for rnd in imports:
        res = rnd.get("results") or {}
        a, b = res.get(key) or {}, res.get(ref) or {}
        if "wall_ms" in a and "wall_ms" in b and not (a.get("error") or b.get("error")):
            out.append(a["wall_ms"] - b["wall_ms"])
    return out


def mib(values: list[float]) -> list[float]:
    return [v / 1024 for v in values]


def startup_section(
    d: Data,
    meta: dict[str, Any],
    imports: list[dict[str, Any]],
    breakdown: dict[str, Any],
) -> list[str]:
    L: list[str] = []
    add = L.append
    add("## Start-up and memory")
    add("")
    spawns = meta.get("spawns", 5)
    add(
        f"**Spawn → initialize** ({spawns} fresh spawns per driver run, timed from the spawn "
        "call to the `initialize` answer, after the client's own imports) and **RSS after "
        "initialize** (`VmRSS`, MiB). Cells are median (min–max) over the repetitions of each "
        "run's median spawn; ratios are paired with the same repetition's floor / acp-py."
    )
    add("")
    rows: list[list[str]] = []
    sp, first = METRIC["spawn"], METRIC["spawn_first"]
    rc, ra = METRIC["rss_cli"], METRIC["rss_agent"]
    for i in d.impls:
        vals = d.values(i, sp)
        if not vals:
            continue
        rows.append(
            [
                f"`{i}`",
                summary(vals, 0),
                summary(d.values(i, first), 0),
                ratio_summary(d.ratios(i, "floor", sp)) if i != "floor" else "1",
                ratio_summary(d.ratios(i, "acp-py", sp)) if i != "acp-py" else "1",
                summary(mib(d.values(i, rc)), 1),
                summary(mib(d.values(i, ra)), 1),
                ratio_summary(d.ratios(i, "floor", rc)) if i != "floor" else "1",
                ratio_summary(d.ratios(i, "floor", ra)) if i != "floor" else "1",
            ]
        )
    head = [
        "implementation",
        "spawn→initialize ms",
        "first spawn ms",
        "/ floor",
        "/ acp-py",
        "RSS client MiB",
        "RSS agent MiB",
        "client / floor",
        "agent / floor",
    ]
    if rows:
        L.extend(table(head, rows))
    else:
        add("No spawn phase was measured.")
    add("")

    cmds: dict[str, dict[str, str]] = meta.get("import_cmds") or {}
    if not imports or not cmds:
        return L
    add(
        f"**Whole-process start-up**: {len(imports)} counted rounds after a warm-up, each "
        "running every command once as a fresh process, in a new random order (A/B "
        "interleaved). Wall and CPU (user+system, `wait4`) in ms, peak RSS (GNU time `%M`) "
        "in MiB; median (min–max) over the rounds; ratios and differences paired within a "
        "round."
    )
    add("")
    rows = []
    for key, c in cmds.items():
        wall = import_values(imports, key, "wall_ms")
        if not wall:
            errs = [
                ((r.get("results") or {}).get(key) or {}).get("error")
                for r in imports
                if ((r.get("results") or {}).get(key) or {}).get("error")
            ]
            rows.append([f"`{c['command']}`", c["label"], f"**failed**: {errs[:1]}"] + ["–"] * 5)
            continue
        rows.append(
            [
                f"`{c['command']}`",
                c["label"],
                summary(wall, 0),
                summary(import_values(imports, key, "cpu_ms"), 0),
                summary(mib(import_values(imports, key, "maxrss_kib")), 1),
                summary(import_diffs(imports, key, "pass"), 0) if key != "pass" else "–",
                (
                    ratio_summary(import_ratios(imports, key, IMPORT_FLOOR), 3)
                    if key != IMPORT_FLOOR
                    else "1"
                ),
                ratio_summary(import_ratios(imports, key, "acp"), 3) if key != "acp" else "1",
            ]
        )
    head = [
        "command",
        "what",
        "wall ms",
        "CPU ms",
        "peak RSS MiB",
        "wall − `python -c pass` ms",
        "wall / `import asyncio, json`",
        "wall / `import acp`",
    ]
    L.extend(table(head, rows))
    add("")
    imp = import_inside(imports, "session", "import_ms")
    s1 = import_inside(imports, "session", "first_session_ms")
    s2 = import_inside(imports, "session", "second_session_ms")
    if imp and s1:
        add(
            "Inside the `session` process (`perf_counter`, ms): importing "
            f"`subagents.transports.acp_client` {summary(imp, 0)}; the first session "
            f"(`initialize`, `session/new`, one prompt with one chunk, against a canned "
            f"in-process agent) {summary(s1, 0)}, nearly all of it the first use of the "
            "generated models (importing `subagents.protocol.acp._v1_generated`, whose models "
            "are created without their validators, then building the validators of the models "
            f"the session uses): an identical second session takes {summary(s2, 1)}. The rest "
            "of the wall time is the interpreter's start and exit."
        )
        add("")
    if breakdown:
        keys = list(breakdown)
        groups: list[str] = []
        for k in keys:
            for g in breakdown[k]["groups_ms"]:
                if g not in groups:
                    groups.append(g)
        first_key = keys[0]
        groups.sort(key=lambda g: -breakdown[first_key]["groups_ms"].get(g, 0.0))
        add(
            "**`python -X importtime`** (self time summed per package, ms, median per module "
            f"over {breakdown[first_key].get('runs', 3)} runs; importtime's own overhead "
            "inflates the totals, so read the shares). It times `import` statements only: "
            "validators built on first use do not appear, and neither do modules loaded "
            "through `importlib.import_module` (how `subagents.transports` and "
            "`subagents.protocol.acp` load their submodules lazily), so the client command "
            "imports the generated models module explicitly. Modules also loaded by "
            "`python -c pass` count as interpreter start-up."
        )
        add("")
        for k in keys:
            add(f"* `{k}`: `{breakdown[k]['command']}`")
        add("")
        rows = []
        for g in groups:
            rows.append(
                [g]
                + [
                    f"{breakdown[k]['groups_ms'][g]:.0f}" if g in breakdown[k]["groups_ms"] else "–"
                    for k in keys
                ]
            )
        rows.append(["**total**"] + [f"**{breakdown[k]['total_ms']:.0f}**" for k in keys])
        L.extend(table(["package"] + [f"`{k}`" for k in keys], rows))
        add("")
        for k in keys:
            top = ", ".join(f"`{m}` {ms:.0f}" for m, ms in breakdown[k]["top_ms"][:6])
            add(f"* `{k}` top modules by self time (ms): {top}")
        add("")
    return L


def stall_values(records: list[dict[str, Any]], backend: str, field: str) -> list[float]:
    out: list[float] = []
    for rec in records:
        res = rec.get("result") or {}
        v = res.get(field)
        if rec.get("backend") == backend and "error" not in res and isinstance(v, int | float):
            out.append(float(v))
    return out


def stall_backends(records: list[dict[str, Any]]) -> list[str]:
    seen = {r["backend"] for r in records if r.get("backend")}
    return [b for b in stall.BACKENDS if b in seen] + sorted(seen - set(stall.BACKENDS))


def stall_section(
    records: list[dict[str, Any]], *, standalone: bool = False, context: str = ""
) -> list[str]:
    """The event-loop stall section, from ``stall`` records (``bench/run.py``'s raw file, or
    ``bench/stall.py`` run alone); ``context`` is a sentence on the machine's load."""
    L = ["## Event-loop stalls while a typed ACP child starts", ""]
    skipped = [str(r["skipped"]) for r in records if r.get("skipped")]
    backends = stall_backends(records)
    if not backends:
        why = (
            skipped[0]
            if skipped
            else "`bench/run.py --stall-reps 0`, or a raw file from before `bench/run.py` ran "
            "the stall bench"
        )
        return [*L, f"Not measured in this run ({why}).", ""]
    reps = max(sum(1 for r in records if r.get("backend") == b) for b in backends)
    where = (
        "`bench/stall.py` (run alone: `.venv/bin/python bench/stall.py`)"
        if standalone
        else "`bench/stall.py`, run by `bench/run.py` after the interleaved repetitions "
        "(alone: `.venv/bin/python bench/stall.py`)"
    )
    L.append(
        f"{where}: a fresh process per repetition imports the client endpoint, then runs a "
        "task ticking every 1 ms beside `connect_agent` of the reference agent, `session/new` "
        "and one prompt turn (the first ACP connection of the process: the one that builds the "
        "models). Longest gap between two ticks, median (min–max) over "
        f"{reps} repetition(s) per backend, the backends interleaved, after one warm-up "
        "process; the idle column is the same loop with the heartbeat alone for 0.3 s just "
        "before (what the machine gives anyway)." + (f" {context}" if context else "")
    )
    L.append("")
    rows: list[list[str]] = []
    for b in backends:
        start = stall_values(records, b, "start_max_ms")
        n = sum(1 for r in records if r.get("backend") == b)
        rows.append(
            [
                b,
                summary(stall_values(records, b, "idle_max_ms"), 1),
                f"**{summary(start, 1)}**" if start else "–",
                summary(stall_values(records, b, "start_ms"), 0),
                f"{len(start)}/{n}",
                f"≤ {stall.TARGET_MS:g} ms: {verdict(start, '<=', stall.TARGET_MS)}",
            ]
        )
    head = [
        "backend",
        "idle: longest gap, ms",
        "start: longest gap, ms",
        "start to first answer and close, ms",
        "repetitions ok",
        "target",
    ]
    L.extend(table(head, rows))
    L.append("")
    errors = [
        f"* {r.get('backend')}, repetition {int(r.get('rep', 0)) + 1}: "
        f"{(r.get('result') or {})['error']}"
        for r in records
        if "error" in (r.get("result") or {})
    ]
    if errors:
        L += [*errors[:5], ""]
    L += [stall.BEFORE, "", stall.LEFT, ""]
    return L


def stall_context(records: list[dict[str, Any]]) -> str:
    loads = [float(r["pre_load_cores"]) for r in records if r.get("pre_load_cores") is not None]
    if not loads:
        return ""
    busy = sum(1 for x in loads if x >= 0.2)
    return (
        "Other load just before each repetition (the same quiet gate as the drivers): median "
        f"{statistics.median(loads):.2f} cores, max {max(loads):.2f}; {busy} of {len(loads)} "
        "started above 0.2 cores."
    )


def stall_target_rows(records: list[dict[str, Any]], t: StallTarget) -> list[list[str]]:
    rows: list[list[str]] = []
    for b in stall_backends(records) or list(stall.BACKENDS):
        start = stall_values(records, b, "start_max_ms")
        idle = stall_values(records, b, "idle_max_ms")
        cell = f"{summary(start, 1)} ms; idle {summary(idle, 1)} ms" if start else "–"
        rows.append([t.label, f"`{b}` backend", cell, verdict(start, "<=", t.bound)])
    return rows


def render(
    meta: dict[str, Any],
    runs: list[dict[str, Any]],
    end: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> str:
    extra = extra or {}
    imports: list[dict[str, Any]] = extra.get("imports") or []
    d = Data(runs)
    L: list[str] = []
    add = L.append
    nreps = len(d.reps)
    add("# Benchmarks: JSON-RPC over stdio for ACP")
    add("")
    add(
        "Generated by `bench/run.py` from `"
        + str(meta.get("raw_file", "?"))
        + "` (raw data, not committed). Do not edit by hand: re-run the command below."
    )
    add("")
    add("```")
    add(str(meta.get("command", "")))
    add("```")
    add("")
    mode = "quick" if meta.get("quick") else "full"
    add(
        f"Mode **{mode}**, {nreps} repetition(s); every repetition runs each implementation once, "
        "in a new random order, as two driver processes one after the other: the first spawns "
        f"and initializes {meta.get('spawns', 5)} fresh agents one after the other (start-up "
        "and memory), the second runs every message phase against one freshly spawned agent. "
        "The shuffled order also holds a slot of whole-process start-up rounds (imports). "
        "Cells are **median (min–max) over the repetitions**. Ratios are **paired**: each "
        "implementation divided by the reference measured in the same repetition (or, for "
        "whole-process start-up, the same round)."
    )
    if extra.get("stall"):
        add(
            "After the repetitions, the event-loop stall bench runs in fresh processes of its "
            "own (its section below)."
        )
    if extra.get("remote"):
        add(
            "Then the remote bench (loopback HTTP and WebSocket vs stdio, ours vs the official "
            "SDK) runs its own repetitions in fresh processes (its section below)."
        )
    if extra.get("a2a"):
        add(
            "Then the A2A bench (`A2AProvider` vs the `a2a-sdk`'s own client on one server) "
            "runs its own repetitions in fresh processes (its section below)."
        )
    total = end.get("total_s")
    if total is not None:
        add(f"The whole run took {total:.0f} s.")
    add("")
    fp0, fp1 = meta.get("src_fingerprint"), end.get("src_fingerprint")
    if fp0 and fp1 and fp0 != fp1:
        add(
            "> **Warning: the library's source (`src/`) changed while this run was going on**, "
            "so repetitions may have measured different code. Re-run on a quiet tree."
        )
        add("")
    bgs = [r["background_pct"] for r in runs if r.get("background_pct") is not None]
    if bgs:
        busy = sum(1 for b in bgs if b > 20)
        add(
            "Other load on the machine while drivers ran (busy CPU not used by the driver or "
            f"its agent): median {statistics.median(bgs):.0f}% of one core, max "
            f"{max(bgs):.0f}%; {busy} of {len(bgs)} driver runs saw more than 20%. "
            "Before each driver the bench waits (bounded) for the machine to go quiet."
        )
        add("")

    add("## Implementations")
    add("")
    impl_rows = [
        [
            "`subagents`",
            "`subagents.rpc` peer (`open_peer` + `Router`, raw JSON handlers) over the "
            "project's pipe streams (`subagents.transports.wrap_pipe_fds`) on two OS pipes to "
            "a child started with `anyio.open_process`; asyncio backend",
            "`subagents.rpc` peer on `subagents.transports.open_stdio_streams()`",
        ],
        [
            "`subagents+typed`",
            "as `subagents`, and every `session/update` is validated into the generated "
            "ACP models (`subagents.protocol.acp`)",
            "same agent as `subagents`",
        ],
        [
            "`subagents/reference-agent`",
            "start-up only: the typed client endpoint `subagents.transports.connect_agent` "
            '(`async with connect_agent([sys.executable, "-m", '
            '"subagents.agents.reference"]) as agent:`), timed from entering to the '
            "connection it yields (`initialize` answered and validated)",
            "the typed reference agent, `python -m subagents.agents.reference` "
            "(`subagents.transports.acp_agent` endpoint, generated models)",
        ],
        [
            "`subagents/fd-streams`",
            "as `subagents`, but the client's peer uses the portable fd streams "
            "(`FdReceiveStream`/`FdSendStream`, what trio gets) instead of the asyncio fast path",
            "same agent as `subagents`",
        ],
        [
            "`subagents/anyio-pipes`",
            "as `subagents`, but the peer reads and writes anyio's process streams "
            "(`Process.stdout`/`.stdin`) instead of the project's fd streams",
            "same agent as `subagents`",
        ],
        [
            "`floor`",
            "stdlib `json`, asyncio subprocess pipes, one reader task, dict of futures",
            "`connect_read_pipe`/`connect_write_pipe`, handlers inline, one `write()` per "
            "message, drain above 64 KiB",
        ],
        [
            "`acp-py`",
            "official SDK `agent-client-protocol` "
            + str(meta.get("acp_version", "0.12.1"))
            + ": `acp.spawn_agent_process` + `ClientSideConnection` (clean venv)",
            "`acp.run_agent` with an echo `Agent` (`update_agent_message_text` per chunk)",
        ],
    ]
    shown = set(d.impls) | set(meta.get("skipped") or {})
    impl_rows = [r for r in impl_rows if r[0].strip("`") in shown]
    add("\n".join(table(["name", "client", "agent"], impl_rows)))
    add("")
    skipped = meta.get("skipped") or {}
    for name, why in skipped.items():
        add(f"* **`{name}` was not run:** {why}")
    if skipped:
        add("")

    add("## Results side by side")
    add("")
    pi = d.phase_impls
    rows: list[list[str]] = []
    for m in METRICS:
        rows.append([m.label] + [summary(d.values(i, m), m.digits) for i in pi])
    for direction in ("down", "up"):
        rows.append(
            [f"64 MiB {direction} (limit raised)"]
            + [status_cell(d.phase_field(i, "huge", direction)) for i in pi]
        )
    over: list[str] = []
    for i in pi:
        items = d.phase_field(i, "oversize", "status")
        over.append(status_cell(items) if any(x is not None for x in items) else "n/a")
    rows.append(["too-large line, then a normal round trip", *over])
    add("\n".join(table(["metric"] + [f"`{i}`" for i in pi], rows)))
    add("")

    details = []
    for i in pi:
        items = [x for x in d.phase_field(i, "oversize", "detail") if x]
        if items:
            details.append(f"* `{i}` over-limit probe: {items[0]}")
    if details:
        add("\n".join(details))
        add("")

    L.extend(startup_section(d, meta, imports, extra.get("importtime") or {}))

    stall_records: list[dict[str, Any]] = extra.get("stall") or []
    L.extend(stall_section(stall_records, context=stall_context(stall_records)))

    remote_records: list[dict[str, Any]] = extra.get("remote") or []
    L.extend(remote.section(remote_records, context=remote.section_context(remote_records)))

    a2a_records: list[dict[str, Any]] = extra.get("a2a") or []
    L.extend(a2a_bench.section(a2a_records, context=a2a_bench.section_context(a2a_records)))

    add("## Targets (issue 17: paired ratios against the floor, same repetition; the stall in ms)")
    add("")
    rows = []
    for t in TARGETS:
        if isinstance(t, ImportTarget):
            r = import_ratios(imports, t.key, IMPORT_FLOOR)
            rows.append(
                [
                    t.label,
                    f"`{t.key}` (whole process)",
                    ratio_summary(r, 3),
                    verdict(r, "<=", t.bound),
                ]
            )
            continue
        if isinstance(t, StallTarget):
            rows.extend(stall_target_rows(stall_records, t))
            continue
        m = METRIC[t.key]
        for impl in t.impls + t.alongside:
            shown = impl in t.alongside
            if impl not in d.impls:
                if not shown:
                    rows.append([t.label, f"`{impl}`", "–", "not measured"])
                continue
            r = d.ratios(impl, t.ref, m)
            word = verdict(r, t.op, t.bound)
            if shown:
                word = "alongside: " + word.replace("**MISSED**", "missed")
            rows.append([t.label, f"`{impl}`", ratio_summary(r, 3), word])
    for impl in TARGET_IMPLS:
        if impl not in d.phase_impls:
            continue
        ok = [
            a == "ok" and b == "ok"
            for a, b in zip(
                d.phase_field(impl, "huge", "down"), d.phase_field(impl, "huge", "up"), strict=True
            )
        ]
        rows.append(
            [
                "64 MiB works, both directions, limit raised",
                f"`{impl}`",
                f"{sum(ok)}/{len(ok)} repetitions",
                "met" if ok and all(ok) else "**MISSED**",
            ]
        )
        ov = d.phase_field(impl, "oversize", "status")
        rows.append(
            [
                "too-large line leaves the connection usable",
                f"`{impl}`",
                f"{sum(1 for x in ov if x == 'ok')}/{len(ov)} repetitions",
                "met" if ov and all(x == "ok" for x in ov) else "**MISSED**",
            ]
        )
    head = ["target", "implementation", "measured: median (min–max)", "verdict"]
    add("\n".join(table(head, rows)))
    add("")
    add(
        "A verdict compares the **median** over the repetitions with the bound: for every row "
        "but the stall, the ratio to the floor measured in the same repetition (the start-up "
        "rows pair the median of each driver's spawns; the whole-process rows pair the "
        'commands of one interleaved round, against `python -c "import asyncio, json"`, the '
        "floor client's imports); for the stall, the start window's longest gap in ms, with "
        "the idle window's beside it. The min–max shows how far single repetitions strayed, "
        "and *borderline* says how many repetitions fell on the right side when they disagree "
        "(such a verdict can flip from one run to the next: re-run with more `--reps` before "
        "acting on it). *not measured* means the run (or an older raw file) lacks the figure. "
        "Rows whose verdict starts *alongside* are not figures of issue 17: another "
        "implementation held to the same bound so its cost is visible (`subagents+typed` at "
        "the raw peer's spawn bound, since its driver spawns the same raw agent with the "
        "models imported before the clock starts; `subagents` at the typed hot-path bounds; "
        "the other clients and agents at the RSS bounds). The 16 MiB, 64 MiB and too-large "
        "rows are bounds set before issue 17, held by both `subagents` and `subagents+typed`."
    )
    add("")

    for ref in ("floor", "acp-py"):
        if ref not in d.phase_impls:
            continue
        others = [i for i in d.phase_impls if i != ref]
        add(f"## All paired ratios vs `{ref}`")
        add("")
        rows = []
        for m in METRICS:
            rows.append([m.label.strip()] + [ratio_summary(d.ratios(i, ref, m)) for i in others])
        add("\n".join(table(["metric"] + [f"`{i}` / `{ref}`" for i in others], rows)))
        add("")

    add("## Runs")
    add("")
    rows = []
    for rep in d.reps:
        order = [r for r in runs if r["rep"] == rep]
        order.sort(key=lambda r: r.get("slot", 0))
        cells: list[tuple[int, str]] = []
        for r in order:
            st = r.get("status", "?")
            errs = [
                f"{k}: {v['error']}"
                for k, v in ((r.get("result") or {}).get("phases") or {}).items()
                if isinstance(v, dict) and "error" in v
            ]
            bad = "" if st == "ok" and not errs else f" **{st}** {'; '.join(errs)[:160]}"
            bg = r.get("background_pct")
            load = f", bg {bg:.0f}%" if bg is not None else ""
            cells.append((r.get("slot", 0), f"`{r['impl']}` {r.get('wall_s', 0):.1f} s{load}{bad}"))
        rounds = [x for x in imports if x.get("rep") == rep]
        if rounds:
            cells.append((rounds[0].get("slot", 0), f"imports: {len(rounds)} round(s)"))
        cells.sort(key=lambda c: c[0])
        rows.append([str(rep + 1), ", ".join(c[1] for c in cells)])
    head = ["rep", "order, driver wall time, background load (% of one core)"]
    add("\n".join(table(head, rows)))
    add("")

    add("## Machine and versions")
    add("")
    m = meta.get("machine", {})
    facts = [
        ("CPU", f"{m.get('cpu_count', '?')} × {m.get('cpu_model', '?')}"),
        ("kernel", str(m.get("kernel", "?"))),
        ("Python", str(m.get("python", "?"))),
        ("date (UTC)", str(meta.get("started_utc", "?"))),
        ("project", str(meta.get("project", "?"))),
        ("peak RSS of whole-process commands", str(meta.get("peak_rss_via") or "not measured")),
    ]
    for name, ver in (meta.get("versions") or {}).items():
        facts.append((name, str(ver)))
    add("\n".join(table(["fact", "value"], [[a, b] for a, b in facts])))
    add("")
    freeze = meta.get("acp_freeze") or []
    if freeze:
        add("`pip freeze` of the clean acp-py venv (`bench/.venvs/acp-py`, created by the bench):")
        add("")
        add("```")
        add("\n".join(freeze))
        add("```")
        add("")
    tels = [(r.get("result") or {}).get("telemetry") for r in runs]
    tel = next((t for t in tels if t), None)
    if tel:
        add(f"acp-py telemetry check (must be all false): `{json.dumps(tel)}`")
        add("")

    add("## Method")
    add("")
    w = meta.get("workload") or {}
    method = [
        "Spawn → initialize (a driver process of its own, `--only spawn`, right after its "
        f"imports): {meta.get('spawns', 5)} fresh agents one after the other, each timed from "
        "the spawn "
        "call to the `initialize` answer, then closed (stdin closed, exit awaited) before the "
        "next; the cell is the median of the spawns. RSS after initialize is `VmRSS` of the "
        "client (the driver process) and of the agent, from `/proc/PID/status`, read right "
        "after the answer (median over the spawns). The echo agents import only `_wire.py` "
        "(no bench machinery) besides their own stack.",
        "Whole-process start-up: each command in the table is one fresh process; a round runs "
        "every command once, in a new random order; one warm-up round first (it also writes "
        "the bytecode caches: `PYTHONDONTWRITEBYTECODE` is removed from the environment of "
        "everything the bench starts), then the counted rounds, spread over the repetitions' "
        "shuffled order. Wall = `perf_counter` around spawn and `wait4`; CPU = the `wait4` "
        "rusage (user+system); peak RSS = GNU time's `%M` (`/usr/bin/time -f %M`, which adds "
        "about 1 ms to every command alike; `wait4`'s own `ru_maxrss` would report the "
        "orchestrator's size, which Linux carries across `exec`).",
        "Wire workload, identical for all: `initialize`, `session/new`, then `session/prompt` with "
        "one text block whose text starts `n,size,ack|`; the echo agent sends `n` "
        "`session/update` `agent_message_chunk` notifications of `size` bytes of text (first "
        "one chunk `len=<prompt text length>` if `ack` is 1) and answers "
        '`{"stopReason":"end_turn"}`.',
        f"RTT: {w.get('rtt_warmup', '?')} warm-up then {w.get('rtt_n', '?')} sequential "
        "0-chunk prompts; p50/p99 of per-call latency.",
        f"Concurrency: {w.get('conc', '?')} workers in a closed loop, {w.get('conc_total', '?')} "
        f"requests after {w.get('conc_warmup', '?')} warm-up.",
        f"Stream: one prompt that makes the agent send {w.get('stream_n', '?')} chunks of "
        f"{w.get('stream_size', '?')} B; the client checks the count and the text bytes. "
        "msgs/s = chunks / wall time of the prompt.",
        f"Large: 16 MiB down (one notification) and up (one prompt, checked by the `len=` ack), "
        f"median of {w.get('big_reps', '?')} each after a 1 MiB warm-up; then 64 MiB down and "
        "up once. Times include the prompt round trip.",
        "Over-limit probe (`subagents` only, runs last): with `max_message_bytes` set to "
        f"{meta.get('raised_limit', '?')} B on both sides, the agent sends a notification and "
        "the client sends a prompt larger than that; then a normal 0-chunk round trip must "
        "succeed.",
        "CPU = client `time.process_time()` + agent `/proc/PID/task/*/schedstat` (all threads), "
        "before/after each phase. Client and agent share the machine's cores with the "
        "orchestrator, which idles while a driver runs.",
        "Limits: `floor` uses a StreamReader limit of 2 × 65 MiB; `acp-py` is unbounded (its "
        "reader re-assembles lines past the asyncio limit); `subagents` uses "
        "`max_message_bytes` = 65 MiB.",
        "Each driver has per-phase timeouts; the orchestrator kills a driver's whole process "
        "group (`start_new_session` + `os.killpg`) when it overruns its run-level timeout.",
    ]
    add("\n".join(f"* {x}" for x in method))
    add("")
    if NOTES.exists():
        add(NOTES.read_text().rstrip())
        add("")
    for included in INCLUDED:
        if included.exists():
            add(included.read_text().rstrip())
            add("")
    return "\n".join(L)


def republish(summary: Path) -> None:
    """Refresh the included sections at the end of ``summary`` (BENCHMARKS.md) from their
    files, without re-rendering the rest: everything from the first included heading on is
    replaced. (``bench/codex.py`` and ``bench/claude.py`` call this after their runs.)"""
    text = summary.read_text()
    sections = [f.read_text().rstrip() for f in INCLUDED if f.exists()]
    cut = len(text)
    for section in sections:
        heading = section.splitlines()[0] + "\n"
        at = text.find("\n" + heading)
        if at >= 0:
            cut = min(cut, at + 1)
    before = text[:cut].rstrip()
    summary.write_text(before + "\n\n" + "\n\n".join(sections) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("raw", type=Path, nargs="?")
    ap.add_argument("--out", type=Path, default=Path("BENCHMARKS.md"))
    ap.add_argument(
        "--includes-only",
        action="store_true",
        help="only refresh the included sections (codex-results.md, claude-results.md) in --out",
    )
    args = ap.parse_args()
    if args.includes_only:
        republish(args.out)
        return
    if args.raw is None:
        ap.error("a raw-*.jsonl file is needed (or --includes-only)")
    args.out.write_text(render(*load(args.raw)))


if __name__ == "__main__":
    main()
