"""Issue 20 / point 6: the remote bench (``bench/remote.py``) measures round trip, stream and
connect time over loopback HTTP and WebSocket against stdio, ours against the official SDK's
client and server, paired in one run, and its section lands in BENCHMARKS.md.

A synthetic raw file checks the section ``bench/render.py`` renders (paired ratios vs the
stdio floor and vs the SDK pair of the same transport); a smoke run of the smallest workload
checks that every kind of configuration (stdio, our server over HTTP/2, the SDK's over
WebSocket, a crossing) measures without error."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
REMOTE = ROOT / "bench" / "remote.py"
RENDER = ROOT / "bench" / "render.py"
REPS = 3


def remote_run(rep: int, config: str, rtt: float, rate: float, connect: float) -> dict[str, Any]:
    phases = {
        "connect": {"median_ms": connect, "ms": [connect]},
        "rtt": {"n": 500, "p50_us": rtt, "p95_us": 2 * rtt, "cpu_us": rtt / 2},
        "stream": {
            "n": 10_000,
            "msgs_s": rate,
            "cpu_us": 1e6 / rate,
            "cpu_cli_us": 5e5 / rate,
            "cpu_srv_us": 3e5 / rate,
            "cpu_agent_us": 2e5 / rate,
        },
    }
    return {"kind": "remote", "rep": rep, "slot": 0, "config": config, "result": {"phases": phases}}


def test_the_remote_section_pairs_each_row_with_the_stdio_floor_and_the_sdk_pair(
    tmp_path: Path,
) -> None:
    """Issue 20 / point 6: BENCHMARKS.md (rendered from a raw file holding ``remote``
    records) has the remote section, its ratios per repetition against our client over stdio
    and against the SDK's client and server on the same transport, and names an error."""
    recs: list[dict[str, Any]] = [{"kind": "meta", "command": ".venv/bin/python bench/run.py"}]
    for rep in range(REPS):
        recs += [
            remote_run(rep, "ours/stdio", 200, 50_000, 100),
            remote_run(rep, "sdk/stdio", 300, 10_000, 200),
            remote_run(rep, "ours>ours/h2c", 1000, 10_000, 150),
            remote_run(rep, "sdk>sdk/http1", 2000, 5_000, 300),
            remote_run(rep, "ours>ours/ws", 600, 20_000, 120),
            remote_run(rep, "sdk>sdk/ws", 400, 8_000, 240),
        ]
    recs.append(
        {"kind": "remote", "rep": 0, "config": "sdk>ours/ws", "result": {"error": "exit 1: boom"}}
    )
    recs.append({"kind": "end", "total_s": 1.0})
    raw, out = tmp_path / "raw.jsonl", tmp_path / "summary.md"
    raw.write_text("".join(json.dumps(r) + "\n" for r in recs))
    subprocess.run(
        [sys.executable, str(RENDER), str(raw), "--out", str(out)],
        check=True,
        timeout=60,
        capture_output=True,
    )
    text = out.read_text(encoding="utf-8")
    start = text.index("## Remote: loopback HTTP and WebSocket vs stdio")
    section = text[start : text.index("\n## ", start + 1)]
    assert "| RTT p50 µs | 200 (200–200) | 300 (300–300) | 1000 (1000–1000) |" in section
    # vs the floor: connect, RTT p50, CPU per RT, msgs/s, CPU per message
    assert (
        "| `ours>ours/h2c` / `ours/stdio` | 1.50× (1.50–1.50) | 5.00× (5.00–5.00) "
        "| 5.00× (5.00–5.00) | 0.20× (0.20–0.20) | 5.00× (5.00–5.00) |"
    ) in section
    # vs the SDK pair: h2c against the SDK's HTTP/1.1 pair, WebSocket against its WebSocket
    assert (
        "| `ours>ours/h2c` / `sdk>sdk/http1` | 0.50× (0.50–0.50) | 0.50× (0.50–0.50) "
        "| 0.50× (0.50–0.50) | 2.00× (2.00–2.00) | 0.50× (0.50–0.50) |"
    ) in section
    assert "| `ours>ours/ws` / `sdk>sdk/ws` | 0.50× (0.50–0.50) | 1.50× (1.50–1.50) |" in section
    assert "* `sdk>ours/ws`, repetition 1: exit 1: boom" in section
    assert "Not measured" not in section


def test_a_raw_file_without_remote_records_says_not_measured(tmp_path: Path) -> None:
    raw, out = tmp_path / "raw.jsonl", tmp_path / "summary.md"
    recs = [{"kind": "meta", "command": "x"}, {"kind": "end", "total_s": 1.0}]
    raw.write_text("".join(json.dumps(r) + "\n" for r in recs))
    subprocess.run(
        [sys.executable, str(RENDER), str(raw), "--out", str(out)],
        check=True,
        timeout=60,
        capture_output=True,
    )
    text = out.read_text(encoding="utf-8")
    assert "## Remote: loopback HTTP and WebSocket vs stdio" in text
    assert "Not measured in this run (`bench/run.py --remote-reps 0`" in text


@pytest.mark.timeout(240)
def test_smoke_every_kind_of_configuration_measures(tmp_path: Path) -> None:
    """Issue 20 / point 6, smoke: stdio, our server over HTTP/2, the SDK's server over
    WebSocket and a crossing (the SDK's client to our server) each connect, round-trip and
    stream without error in the smallest workload; the section prints on stdout."""
    configs = "ours/stdio,ours>ours/h2c,sdk>sdk/ws,sdk>ours/http1"
    done = subprocess.run(
        [sys.executable, str(REMOTE), "--quick", "--reps", "1", "--configs", configs],
        capture_output=True,
        text=True,
        timeout=220,
        cwd=tmp_path,
        check=False,
    )
    match = re.search(r"raw (\S+/raw-remote-\d{8}-\d{6}\.jsonl)", done.stderr)
    assert match, done.stderr
    Path(match.group(1)).unlink(missing_ok=True)
    assert done.returncode == 0, done.stderr
    assert "ERROR" not in done.stderr, done.stderr
    assert done.stdout.startswith("## Remote: loopback HTTP and WebSocket vs stdio")
    assert "| `ours>ours/h2c` / `ours/stdio` |" in done.stdout
    assert "| `sdk>ours/http1` / `sdk>sdk/http1` |" not in done.stdout  # its pair did not run
    assert "repetition 1:" not in done.stdout
