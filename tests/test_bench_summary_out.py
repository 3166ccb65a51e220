"""Issue 19 / small cuts: ``bench/run.py`` writes its summary only when asked (``--out``)."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "BENCHMARKS.md"
QUICK = [
    "--quick",
    "--impls",
    "floor",
    "--import-rounds",
    "0",
    "--stall-reps",
    "0",
    "--remote-reps",
    "0",
    "--a2a-reps",
    "0",
    "--quiet-wait",
    "0",
]


def bench(cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run the smallest benchmark (the asyncio floor alone) from ``cwd``; the raw file it
    wrote under ``bench/results/`` is removed afterwards."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), *QUICK, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
    )
    match = re.search(r"raw data (?:in )?(\S+/raw-\d{8}-\d{6}\.jsonl)", done.stderr)
    assert match, done.stderr
    raw = Path(match.group(1))
    assert raw.parent == ROOT / "bench" / "results"
    raw.unlink(missing_ok=True)
    assert done.returncode == 0, done.stderr
    return done, raw


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.timeout(150)
def test_without_out_the_summary_goes_to_stdout_and_benchmarks_md_is_untouched(
    tmp_path: Path,
) -> None:
    """Issue 19 / the bench writes BENCHMARKS.md only when asked: run as the README writes
    it (no `--out`), it prints the summary on stdout, says where the raw data went, and
    leaves the tracked BENCHMARKS.md and the working directory alone."""
    before = digest(BENCHMARKS)
    done, raw = bench(tmp_path)
    assert digest(BENCHMARKS) == before
    assert list(tmp_path.iterdir()) == []
    assert done.stdout.startswith("# Benchmarks")
    assert f"raw data in {raw}" in done.stderr
    assert "the summary is on stdout" in done.stderr
    assert "\n.venv/bin/python bench/run.py --quick --impls floor" in done.stdout


@pytest.mark.timeout(150)
def test_with_out_the_summary_is_written_there_and_the_command_records_it(
    tmp_path: Path,
) -> None:
    """Issue 19 / the bench writes a summary file only with `--out FILE`: the file holds the
    summary (whose re-run command names that `--out`), stdout stays empty."""
    before = digest(BENCHMARKS)
    out = tmp_path / "summary.md"
    done, _ = bench(tmp_path, "--out", "summary.md")
    assert digest(BENCHMARKS) == before
    assert done.stdout == ""
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Benchmarks")
    assert f"--out {out}" in text
    assert f"wrote {Path('summary.md')}" in done.stderr
