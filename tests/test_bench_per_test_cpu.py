"""``bench/per_test_cpu.py`` and its plugin ``bench/pytest_plugins/cpu_recorder.py``: the
per-test CPU recorder behind BENCHMARKS.md's account of the test command's time (issue 17)."""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
PLUGINS = BENCH / "pytest_plugins"


def test_each_test_gets_its_own_and_its_childrens_cpu_and_the_summary_ranks_them(
    tmp_path: Path,
) -> None:
    """Issue 17: a test that burns CPU in a child process is charged for it (children), one
    that burns it itself is charged in its own column, an idle one for neither; the summary
    lists the files and the tests costliest first."""
    (tmp_path / "test_sample.py").write_text(
        "import subprocess, sys, time\n"
        "def burn():\n"
        "    end = time.process_time() + 0.3\n"
        "    while time.process_time() < end:\n"
        "        pass\n"
        "def test_child():\n"
        "    code = 'import time\\nend = time.process_time() + 0.4\\n'\n"
        "    code += 'while time.process_time() < end: pass\\n'\n"
        "    subprocess.run([sys.executable, '-c', code], check=True)\n"
        "def test_itself():\n"
        "    burn()\n"
        "def test_idle():\n"
        "    pass\n",
        encoding="utf-8",
    )
    records = tmp_path / "records"
    env = {**os.environ, "PYTHONPATH": str(PLUGINS), "SUBAGENTS_TEST_CPU_DIR": str(records)}
    env.pop("PYTEST_XDIST_WORKER", None)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "cpu_recorder"]
    command += ["-p", "no:cacheprovider", "-o", "addopts=", "test_sample.py"]
    run = subprocess.run(
        command,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    [recorded] = list(records.glob("*.jsonl"))
    rows = {
        row["id"].split("::")[1]: row
        for row in map(json.loads, recorded.read_text(encoding="utf-8").splitlines())
    }
    assert set(rows) == {"test_child", "test_itself", "test_idle"}
    assert rows["test_child"]["children"] >= 0.3
    assert rows["test_itself"]["own"] >= 0.25
    assert rows["test_itself"]["children"] < 0.1
    assert rows["test_idle"]["own"] + rows["test_idle"]["children"] < 0.2
    summary = subprocess.run(
        [sys.executable, str(BENCH / "per_test_cpu.py"), "--dir", str(records), "--top", "2"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert summary.startswith("3 tests: ")
    costliest = summary.split("core-s  wall s  test\n", 1)[1].splitlines()
    assert len(costliest) == 2
    assert costliest[0].endswith("test_sample.py::test_child")
    assert costliest[1].endswith("test_sample.py::test_itself")


def test_the_plugins_directory_shadows_no_importable_module() -> None:
    """Issue 17: what goes on ``PYTHONPATH`` to load the recorder holds no module that the
    tests import from elsewhere (with ``bench/`` there, ``bench/a2a.py`` shadowed the ``a2a``
    package and the A2A tests failed to import, in the recorded run only)."""
    modules = [path.stem for path in PLUGINS.glob("*.py")]
    assert modules == ["cpu_recorder"]
    elsewhere = [entry for entry in sys.path if Path(entry or ".").resolve() != PLUGINS]
    assert all(
        importlib.machinery.PathFinder.find_spec(name, elsewhere) is None for name in modules
    )
