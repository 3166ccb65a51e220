"""Where the test command's CPU goes: each test's CPU time, its own and its reaped children's.

The test command is CPU-bound on a 2-core machine (see BENCHMARKS.md, "Issue 17, the test
command"), so what a test costs is its CPU, not its wall time. The pytest plugin
``bench/pytest_plugins/cpu_recorder.py`` records, for every test, the CPU time of the process
that ran it (an xdist worker) and of the child processes reaped meanwhile (``RUSAGE_CHILDREN``:
agents, CLI runs, fake servers; a grandchild counts once its parent has reaped it), and its wall
time, one JSON line per test in ``bench/results/test-cpu/<worker>.jsonl`` (or
``$SUBAGENTS_TEST_CPU_DIR``). This script runs the test command with it, and sums the records
per file and lists the costliest tests::

    .venv/bin/python bench/per_test_cpu.py --record [pytest args]   # the whole test command
    .venv/bin/python bench/per_test_cpu.py [--top 25]                # the last run's summary

A module-scoped fixture's work (say the mutants' runs, started in the background) is counted
in the tests during which its children were reaped. The directory is emptied when a run starts.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from pytest_plugins.cpu_recorder import OUT  # bench/ is sys.path[0] for a script

BENCH = Path(__file__).resolve().parent
PLUGINS = BENCH / "pytest_plugins"


def summary(directory: Path, top: int) -> str:
    rows: list[dict[str, Any]] = [
        json.loads(line)
        for path in sorted(directory.glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    if not rows:
        return f"no records in {directory}: record a run first (--record)"

    def cpu(row: dict[str, Any]) -> float:
        return float(row["own"]) + float(row["children"])

    per_file: collections.defaultdict[str, float] = collections.defaultdict(float)
    tests: collections.Counter[str] = collections.Counter()
    for row in rows:
        per_file[str(row["id"]).split("::", 1)[0]] += cpu(row)
        tests[str(row["id"]).split("::", 1)[0]] += 1
    total = sum(cpu(row) for row in rows)
    own = sum(float(row["own"]) for row in rows)
    lines = [
        f"{len(rows)} tests: {total:.0f} core-seconds ({own:.0f} in the test processes, "
        f"{total - own:.0f} in their reaped children)",
        "",
        "core-s  tests  file",
    ]
    by_cost = sorted(per_file.items(), key=lambda item: item[1], reverse=True)[:top]
    lines += [f"{v:6.1f} {tests[k]:6d}  {k}" for k, v in by_cost]
    lines += ["", "core-s  wall s  test"]
    costliest = sorted(rows, key=cpu, reverse=True)[:top]
    lines += [f"{cpu(row):6.1f} {float(row['wall']):7.1f}  {row['id']}" for row in costliest]
    return "\n".join(lines)


def record(pytest_args: list[str]) -> int:
    """Run the README's test command (``scripts/test``) with the recorder loaded; its status."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(PLUGINS), os.environ.get("PYTHONPATH")])),
    }
    command = [str(BENCH.parent / "scripts" / "test"), "-p", "cpu_recorder", *pytest_args]
    return subprocess.run(command, env=env, check=False).returncode


def main() -> None:
    parser = argparse.ArgumentParser(description="Per-test CPU of the test command.")
    parser.add_argument(
        "--record",
        action="store_true",
        help="run the test command (scripts/test) recording each test's CPU, then summarize",
    )
    parser.add_argument("--top", type=int, default=25, help="files and tests listed (25)")
    parser.add_argument("--dir", type=Path, default=OUT, help=f"the records ({OUT})")
    args, pytest_args = parser.parse_known_args()
    if pytest_args and not args.record:
        parser.error(f"unrecognized arguments: {' '.join(pytest_args)}")
    status = record(pytest_args) if args.record else 0
    print(summary(args.dir, args.top))
    sys.exit(status)


if __name__ == "__main__":
    main()
