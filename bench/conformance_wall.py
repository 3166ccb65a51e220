"""Wall time of ``subagents conformance`` per agent, default options (issue 16, point 3).

Runs the suite, as an agent author would (``subagents conformance --json ... -- AGENT``, no
other option), against the reference agent, the 20-line agent on the project's endpoint, the
official SDK's echo example, and the real agents from npm on the project's fake model servers
(127.0.0.1, a private HOME), one at a time, and prints per agent: wall time, the CPU time of
the run (the suite's process and every agent process it started), verdict, the load average
before and after, and the slowest checks. Usage::

    .venv/bin/python bench/conformance_wall.py [AGENT ...]   # default: all of them

The numbers go into BENCHMARKS.md ("The conformance suite: wall time per agent").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import run  # bench/run.py: children_cpu_s
from subagents.testing.fake_models import openai_responses
from subagents.testing.real_acp_agents import REAL_ACP_AGENTS

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable

LOCAL: dict[str, list[str]] = {
    "reference": [PYTHON, "-m", "subagents.agents.reference"],
    "tiny (20 lines)": [PYTHON, str(REPO / "src" / "subagents" / "examples" / "tiny_agent.py")],
    "SDK echo example": [
        PYTHON,
        str(REPO / ".cache" / "acp-sdk-0.12.1-examples" / "echo_agent.py"),
    ],
}


def _run(name: str, command: list[str], env: dict[str, str], work: Path) -> str:
    report = work / "report.json"
    load = os.getloadavg()[0]
    cpu_before = run.children_cpu_s()
    started = time.monotonic()
    subprocess.run(
        [PYTHON, "-m", "subagents.cli", "conformance", "--json", str(report), "--", *command],
        cwd=work,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=1800,
        check=False,
    )
    wall = time.monotonic() - started
    cpu = run.children_cpu_s() - cpu_before
    data = json.loads(report.read_text())
    slow = sorted(data["requirements"], key=lambda r: -r["duration"])[:3]
    slowest = ", ".join(f"{r['id']} {r['duration']:.1f}" for r in slow)
    after = os.getloadavg()[0]
    return (
        f"| {name} | {wall:.1f} s | {cpu:.1f} s | {data['verdict']} | {load:.1f} -> {after:.1f} "
        f"| {slowest} |"
    )


def main(wanted: list[str]) -> None:
    print("| agent | wall | CPU | verdict | load | slowest checks (s) |")
    print("|---|---|---|---|---|---|")
    for name, command in LOCAL.items():
        if not wanted or name.split()[0] in wanted:
            with tempfile.TemporaryDirectory() as work:
                print(_run(name, command, {}, Path(work)), flush=True)
    for name, agent in REAL_ACP_AGENTS.items():
        if wanted and name not in wanted:
            continue
        command = agent.find_command()
        if command is None:
            print(f"| {name} | not installed (./scripts/setup) | | | | |")
            continue
        with (
            tempfile.TemporaryDirectory() as work,
            openai_responses.serve(agent.handler) as server,
        ):
            env = agent.environment(Path(work) / "home", server)
            print(_run(name, command, env, Path(work)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
