"""Issue 21: the A2A bench (``bench/a2a.py``) measures start → first output and a short turn
through ``A2AProvider`` against the official ``a2a-sdk``'s own client on the same server,
paired in one run, and its section lands in BENCHMARKS.md.

A synthetic raw file checks the section ``bench/render.py`` renders (medians per client and the
paired ratios ours / SDK); a smoke run of the smallest workload checks that both clients
measure against the bench's server without error."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
A2A = ROOT / "bench" / "a2a.py"
RENDER = ROOT / "bench" / "render.py"
SECTION = "## A2A: A2AProvider vs the a2a-sdk client"


def a2a_run(rep: int, client: str, first: float, turn: float, scale: float) -> dict[str, Any]:
    result = {
        "client": client,
        "text": "hello from the bench agent",
        "import_ms": 100 * scale,
        "cold_first_ms": first,
        "cold_turn_ms": first + 1,
        "warm_n": 10,
        "warm_first_ms": turn,
        "warm_turn_ms": turn + 1,
        "warm_cpu_ms": turn / 2,
        "proc_first_ms": 500 * scale,
        "proc_turn_ms": 500 * scale + 1,
    }
    return {"kind": "a2a", "rep": rep, "slot": 0, "client": client, "result": result}


def render(tmp_path: Path, recs: list[dict[str, Any]]) -> str:
    raw, out = tmp_path / "raw.jsonl", tmp_path / "summary.md"
    raw.write_text("".join(json.dumps(r) + "\n" for r in recs))
    subprocess.run(
        [sys.executable, str(RENDER), str(raw), "--out", str(out)],
        check=True,
        timeout=60,
        capture_output=True,
    )
    text = out.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def test_the_a2a_section_has_each_clients_medians_and_the_paired_ratios(tmp_path: Path) -> None:
    """Issue 21: BENCHMARKS.md (rendered from a raw file holding ``a2a`` records) has the A2A
    section: start → first output and a short turn per client, median (min–max) over the
    repetitions, and ours / the SDK's client paired within each repetition; an error is
    named."""
    recs: list[dict[str, Any]] = [{"kind": "meta", "command": ".venv/bin/python bench/run.py"}]
    for rep, (ours_first, sdk_first) in enumerate([(100, 200), (300, 200), (200, 400)]):
        recs.append(a2a_run(rep, "ours", ours_first, 30, 2))
        recs.append(a2a_run(rep, "sdk", sdk_first, 10, 1))
    recs.append({"kind": "a2a", "rep": 3, "client": "ours", "result": {"error": "exit 1: boom"}})
    recs.append({"kind": "end", "total_s": 1.0})
    section = render(tmp_path, recs)
    head = "| metric | ours (`A2AProvider`) | the SDK's client (`a2a.client`) | ours / SDK"
    assert head in section
    # medians over the repetitions; ratios per repetition: 0.5, 1.5, 0.5
    assert (
        "| first turn: set-up → first text, ms (card discovery included) | 200.0 (100.0–300.0) "
        "| 200.0 (200.0–400.0) | 0.50× (0.50–1.50) |"
    ) in section
    assert "| later turns: send → first text, ms | 30.0 (30.0–30.0) | 10.0 (10.0–10.0) " in section
    assert "| later turns: send → result, ms | 31.0 (31.0–31.0) | 11.0 (11.0–11.0) | 2.82×" in (
        section
    )
    assert "| client imports, ms | 200 (200–200) | 100 (100–100) | 2.00× (2.00–2.00) |" in section
    assert "| process spawn → first text, ms | 1000 (1000–1000) | 500 (500–500) | 2.00×" in section
    assert "**Later turns**: 10 more in the same process" in section
    assert "* `ours`, repetition 4: exit 1: boom" in section
    assert "Not measured" not in section


def test_a_raw_file_without_a2a_records_says_not_measured(tmp_path: Path) -> None:
    """Issue 21: a run with ``--a2a-reps 0`` (or a raw file from before this bench) renders
    the section saying it was not measured."""
    recs = [{"kind": "meta", "command": "x"}, {"kind": "end", "total_s": 1.0}]
    section = render(tmp_path, recs)
    assert "Not measured in this run (`bench/run.py --a2a-reps 0`" in section


@pytest.mark.timeout(180)
def test_smoke_both_clients_measure_against_the_bench_server(tmp_path: Path) -> None:
    """Issue 21, smoke: the smallest workload (``--quick --reps 1``) starts the server, runs
    ``A2AProvider`` and the SDK's client against it, each receives the agent's answer, and the
    section prints on stdout with the paired ratios."""
    done = subprocess.run(
        [sys.executable, str(A2A), "--quick", "--reps", "1"],
        capture_output=True,
        text=True,
        timeout=160,
        cwd=tmp_path,
        check=False,
    )
    match = re.search(r"raw (\S+/raw-a2a-\d{8}-\d{6}\.jsonl)", done.stderr)
    assert match, done.stderr
    raw = Path(match.group(1))
    lines = [json.loads(x) for x in raw.read_text().splitlines() if x.strip()]
    raw.unlink(missing_ok=True)
    assert done.returncode == 0, done.stderr
    assert "ERROR" not in done.stderr, done.stderr
    assert sorted(r["client"] for r in lines) == ["ours", "sdk"]
    for rec in lines:
        assert rec["result"]["text"] == "hello from the bench agent"
        assert rec["result"]["warm_n"] == 3
    assert done.stdout.startswith(SECTION)
    assert "| first turn: set-up → first text, ms (card discovery included) |" in done.stdout
    assert "| later turns: send → result, ms |" in done.stdout
    assert "repetition 1:" not in done.stdout
