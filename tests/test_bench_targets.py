"""Issue 17 / the Targets section of BENCHMARKS.md checks the issue's figures.

``bench/render.py`` renders a synthetic raw file (no benchmark runs here): each figure is a
paired ratio against the floor of the same repetition (or the same start-up round), median
over the repetitions, with a met/MISSED verdict; the event-loop stall is checked in ms; a raw
file from before a figure was measured renders it as "not measured"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RENDER = ROOT / "bench" / "render.py"
REPS = 5


def spawn(init_ms: float, rss_cli: float, rss_agent: float) -> dict[str, Any]:
    return {"init_ms": init_ms, "rss_cli_kib": rss_cli, "rss_agent_kib": rss_agent}


def phases(rtt: float, conc_cpu: float, s16_cpu: float, s16_rate: float) -> dict[str, Any]:
    return {
        "rtt": {"p50_us": rtt},
        "conc": {"cpu_us": conc_cpu},
        "stream": {"cpu_us": s16_cpu, "msgs_s": s16_rate},
        "big": {"down_ms": 100.0, "up_ms": 100.0},
        "huge": {"down": "ok", "up": "ok"},
        "oversize": {"status": "ok"},
    }


def run(rep: int, impl: str, ph: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "run",
        "rep": rep,
        "slot": 0,
        "impl": impl,
        "status": "ok",
        "result": {"phases": ph},
    }


def write_raw(path: Path, *, new_kinds: bool) -> None:
    recs: list[dict[str, Any]] = [
        {
            "kind": "meta",
            "command": ".venv/bin/python bench/run.py",
            "import_cmds": (
                {
                    k: {"label": k, "command": f"python {k}"}
                    for k in ("pass", "floor", "acp_client", "session")
                }
                if new_kinds
                else {}
            ),
        }
    ]
    for rep in range(REPS):
        recs += [
            run(rep, "floor", {"spawn": spawn(60, 20_000, 15_000), **phases(100, 40, 10, 100_000)}),
            # raw peer: spawn 1.2× (met), RTT 1.1× (met); typed: stream CPU 1.5× (missed)
            run(
                rep,
                "subagents",
                {"spawn": spawn(72, 22_000, 16_000), **phases(110, 50, 12, 90_000)},
            ),
            run(
                rep,
                "subagents+typed",
                {"spawn": spawn(75, 25_000, 16_000), **phases(130, 56, 15, 85_000)},
            ),
            # typed reference agent: spawn 1.4× (met), agent RSS 1.4× (missed)
            run(rep, "subagents/reference-agent", {"spawn": spawn(84, 27_000, 21_000)}),
        ]
        if new_kinds:
            results = {
                "pass": {"wall_ms": 10.0},
                "floor": {"wall_ms": 40.0},
                "acp_client": {"wall_ms": 56.0},  # 1.4× (met)
                "session": {"wall_ms": 100.0},  # 2.5× (missed)
            }
            recs.append({"kind": "imports", "rep": rep, "slot": 1, "round": 0, "results": results})
    if new_kinds:
        for rep in range(REPS):
            for backend, gap in (("asyncio", 6.5), ("trio", 4.0)):
                result = {"idle_max_ms": 1.5, "start_max_ms": gap, "start_ms": 180.0}
                recs.append({"kind": "stall", "rep": rep, "backend": backend, "result": result})
    recs.append({"kind": "end", "total_s": 1.0})
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def render(tmp_path: Path, *, new_kinds: bool) -> str:
    raw, out = tmp_path / "raw.jsonl", tmp_path / "summary.md"
    write_raw(raw, new_kinds=new_kinds)
    subprocess.run(
        [sys.executable, str(RENDER), str(raw), "--out", str(out)],
        check=True,
        timeout=60,
        capture_output=True,
    )
    text = out.read_text(encoding="utf-8")
    return text[text.index("## Targets") : text.index("## All paired ratios")]


def test_the_targets_are_issue_17s_figures_with_their_verdicts(tmp_path: Path) -> None:
    """Issue 17 / Deliver: every figure of the table is a row with its bound and a verdict
    from the median paired ratio; the superseded bounds are gone."""
    targets = render(tmp_path, new_kinds=True)
    expected = [
        "| spawn→initialize, typed reference agent ≤ 1.5× floor | `subagents/reference-agent` "
        "| 1.400× (1.40–1.40) | met |",
        "| spawn→initialize, raw peer ≤ 1.3× floor | `subagents` | 1.200× (1.20–1.20) | met |",
        '| import of the client endpoint (wall) ≤ 1.5× `python -c "import asyncio, json"` '
        "| `acp_client` (whole process) | 1.400× (1.40–1.40) | met |",
        '| whole first typed session (process wall) ≤ 2× `python -c "import asyncio, json"` '
        "| `session` (whole process) | 2.500× (2.50–2.50) | **MISSED** |",
        "`asyncio` backend | 6.5 (6.5–6.5) ms; idle 1.5 (1.5–1.5) ms | **MISSED** |",
        "`trio` backend | 4.0 (4.0–4.0) ms; idle 1.5 (1.5–1.5) ms | met |",
        "| typed stream 16 B CPU/msg ≤ 1.3× floor | `subagents+typed` | 1.500× (1.50–1.50) "
        "| **MISSED** |",
        "| typed stream 16 B msgs/s ≥ 0.8× floor | `subagents+typed` | 0.850× (0.85–0.85) | met |",
        "| RTT p50 ≤ 1.2× floor | `subagents` | 1.100× (1.10–1.10) | met |",
        "| RTT p50 ≤ 1.2× floor | `subagents+typed` | 1.300× (1.30–1.30) | **MISSED** |",
        "| c=64 CPU/request, typed ≤ 1.5× floor | `subagents+typed` | 1.400× (1.40–1.40) | met |",
        "| RSS after initialize, typed client ≤ 1.3× floor | `subagents+typed` "
        "| 1.250× (1.25–1.25) | met |",
        "| RSS after initialize, typed agent ≤ 1.3× floor | `subagents/reference-agent` "
        "| 1.400× (1.40–1.40) | **MISSED** |",
        # held to the raw peer's bound beside the figure, not a figure itself
        "| spawn→initialize, raw peer ≤ 1.3× floor | `subagents+typed` | 1.250× (1.25–1.25) "
        "| alongside: met |",
    ]
    for line in expected:
        assert line in targets
    assert "≤ 5 ms (start window; idle window beside)" in targets
    for old in ("≥ 0.5×", "≤ 2× floor |", "acp-py `import acp`", "0.4× acp-py", "(perf.md)"):
        assert old not in targets


def test_an_old_raw_file_renders_the_missing_figures_as_not_measured(tmp_path: Path) -> None:
    """Issue 17 / bench: a raw file from before the stall bench and without start-up rounds
    still renders; those figures read "not measured"."""
    targets = render(tmp_path, new_kinds=False)
    assert "| `acp_client` (whole process) | – | not measured |" in targets
    assert "| `asyncio` backend | – | not measured |" in targets
    assert (
        "| spawn→initialize, raw peer ≤ 1.3× floor | `subagents` | 1.200× (1.20–1.20) | met |"
        in (targets)
    )
