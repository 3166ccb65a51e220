"""The fault table in ``fault-table.md`` is what the fault tests observed (issue 10, done
means: "a table lists each fault, the layer, and the observed behaviour, produced by the
tests"). Collected after the fault tests; rewrite it with ``SUBAGENTS_WRITE_FAULT_TABLE=1``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from .conftest import LAYERS, OBSERVED

TABLE = Path(__file__).with_name("fault-table.md")
BENCHMARKS = Path(__file__).parents[2] / "BENCHMARKS.md"
"""BENCHMARKS.md includes the table (``bench/render.py``); it must carry the same rows."""
_ROW = re.compile(r"^\| `([^`]+)` \| ([^|]+?) \| (.+) \|$")
_HEADER = (
    "## Faults of the chaos agent, by layer\n\n"
    "Written by the tests in `tests/reliability/` (`SUBAGENTS_WRITE_FAULT_TABLE=1`); each "
    "row is what a test observed, checked again on every run. The chaos agent is "
    "`tests/reliability/chaos_agent.py`; every test also checks that no process, zombie or "
    "file descriptor is left afterwards, and bounds every wait.\n\n"
    "| fault | layer | observed |\n|---|---|---|\n"
)


def _read() -> dict[tuple[str, str], str]:
    rows: dict[tuple[str, str], str] = {}
    if TABLE.exists():
        for line in TABLE.read_text(encoding="utf-8").splitlines():
            match = _ROW.match(line)
            if match:
                rows[(match.group(2), match.group(1))] = match.group(3).replace("\\|", "|")
    return rows


def _write(rows: dict[tuple[str, str], str]) -> None:
    ordered = sorted(rows.items(), key=lambda item: (item[0][1], LAYERS.index(item[0][0])))
    body = "".join(
        f"| `{fault}` | {layer} | {text.replace('|', chr(92) + '|')} |\n"
        for (layer, fault), text in ordered
    )
    TABLE.write_text(_HEADER + body, encoding="utf-8")


def test_the_fault_table_is_what_the_tests_observed() -> None:
    assert OBSERVED, "no fault test ran before this one (run tests/reliability as a whole)"
    if os.environ.get("SUBAGENTS_WRITE_FAULT_TABLE") == "1":
        _write({**_read(), **OBSERVED})
    table = _read()
    differing = {
        key: (table.get(key), seen) for key, seen in OBSERVED.items() if table.get(key) != seen
    }
    assert not differing, "fault-table.md is stale (SUBAGENTS_WRITE_FAULT_TABLE=1):\n" + "\n".join(
        f"  {layer} / {fault}:\n    table: {old}\n    seen:  {new}"
        for (layer, fault), (old, new) in differing.items()
    )


def test_benchmarks_md_carries_the_fault_table() -> None:
    """Issue 10, done means: the table is in BENCHMARKS.md (included from fault-table.md by
    ``bench/render.py --includes-only``, which the write mode above runs)."""
    if os.environ.get("SUBAGENTS_WRITE_FAULT_TABLE") == "1":
        subprocess.run(
            [sys.executable, str(BENCHMARKS.with_name("bench") / "render.py"), "--includes-only"],
            check=True,
            timeout=60,
        )
    rows = [line for line in TABLE.read_text(encoding="utf-8").splitlines() if _ROW.match(line)]
    assert rows
    benchmarks = BENCHMARKS.read_text(encoding="utf-8")
    missing = [row for row in rows if row not in benchmarks]
    assert not missing, "BENCHMARKS.md lacks rows (bench/render.py --includes-only):\n" + "\n".join(
        missing[:5]
    )
