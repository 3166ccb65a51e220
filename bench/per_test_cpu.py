"""Where the test command's CPU goes: each test's CPU time, its own and its reaped children's.

The test command is CPU-bound on a 2-core machine (see BENCHMARKS.md, "Issue 17, the test
command"), so what a test costs is its CPU, not its wall time. Loaded as a pytest plugin, this
module records, for every test, the CPU time of the process that ran it (an xdist worker) and
of the child processes reaped meanwhile (``RUSAGE_CHILDREN``: agents, CLI runs, fake servers;
a grandchild counts once its parent has reaped it), and its wall time, one JSON line per test
in ``bench/results/test-cpu/<worker>.jsonl`` (or ``$SUBAGENTS_TEST_CPU_DIR``). Run as a
script, it sums them per file and lists the costliest tests::

    PYTHONPATH=bench ./scripts/test -p per_test_cpu     # the whole command, recording
    .venv/bin/python bench/per_test_cpu.py [--top 25]   # the summary

A module-scoped fixture's work (say the mutants' runs, started in the background) is counted
in the tests during which its children were reaped. The directory is emptied when a run starts.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import shutil
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

OUT = Path(
    os.environ.get("SUBAGENTS_TEST_CPU_DIR")
    or Path(__file__).resolve().parent / "results" / "test-cpu"
)
"""Where the records go (``SUBAGENTS_TEST_CPU_DIR`` to choose another directory)."""


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True, exist_ok=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    own, children = _cpu()
    started = time.monotonic()
    yield
    wall = time.monotonic() - started
    own_after, children_after = _cpu()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    record = {
        "id": item.nodeid,
        "own": round(own_after - own, 4),
        "children": round(children_after - children, 4),
        "wall": round(wall, 4),
    }
    with (OUT / f"{worker}.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


def summary(directory: Path, top: int) -> str:
    rows: list[dict[str, Any]] = [
        json.loads(line)
        for path in sorted(directory.glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    if not rows:
        return f"no records in {directory}: run the tests with -p per_test_cpu first"

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


def main() -> None:
    parser = argparse.ArgumentParser(description="Per-test CPU of the last recorded run.")
    parser.add_argument("--top", type=int, default=25, help="files and tests listed (25)")
    parser.add_argument("--dir", type=Path, default=OUT, help=f"the records ({OUT})")
    args = parser.parse_args()
    print(summary(args.dir, args.top))


if __name__ == "__main__":
    main()
