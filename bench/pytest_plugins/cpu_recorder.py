"""The pytest plugin of ``bench/per_test_cpu.py`` (see there): each test's CPU time, its own
and its reaped children's, one JSON line per test in ``bench/results/test-cpu/<worker>.jsonl``
(or ``$SUBAGENTS_TEST_CPU_DIR``).

It lives alone in this directory, which is what goes on ``PYTHONPATH`` to load it
(``-p cpu_recorder``): with ``bench/`` itself there, ``bench/a2a.py`` would shadow the
``a2a`` package that the A2A tests import.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import time
from collections.abc import Generator
from pathlib import Path

import pytest

OUT = Path(
    os.environ.get("SUBAGENTS_TEST_CPU_DIR")
    or Path(__file__).resolve().parents[1] / "results" / "test-cpu"
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
